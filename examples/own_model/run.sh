#!/usr/bin/env bash
# Your own model in alkit: a torch CNN (--backbone) and a scikit-learn pipeline (--learner) on the
# bundled digits (8x8 images), 3 seeds, 20 random initial labels, batches of 10, to 200 labels.
set -euo pipefail
cd "$(dirname "$0")"
ALKIT=${ALKIT:-../../.venv/bin/alkit}
PY=${PY:-../../.venv/bin/python}
rm -rf project
$PY -c "from pathlib import Path; from alkit.demo import write_digits_csv; write_digits_csv(Path('digits.csv'))"
$ALKIT init digits.csv --id-col id --label-col label --hide-labels --test-frac 0.3 --image-shape 8,8 -p project
for seed in 0 1 2; do
  common=(--budget 200 --initial 20 --initial-selector random --seed "$seed" -p project)
  $ALKIT run --strategy epistemic --backbone mynets:digits_cnn "${common[@]}"           # VBLL on your CNN
  $ALKIT run --strategy random --scorer vbll --backbone mynets:digits_cnn "${common[@]}"   # same model, random picks
  $ALKIT run --strategy bald --learner mymodels:scaled_logreg -o members=5 "${common[@]}"  # your sklearn pipeline, BALD over bootstrap members
  $ALKIT run --strategy margin --learner mymodels:scaled_logreg -o members=1 "${common[@]}"
  $ALKIT run --strategy random --learner mymodels:scaled_logreg -o members=1 "${common[@]}"
done
$ALKIT status -p project
$ALKIT plot -p project --out learning_curves.png
