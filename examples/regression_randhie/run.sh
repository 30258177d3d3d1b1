#!/usr/bin/env bash
# Multimodal regression: zero-inflated, heavy-tailed medical spending (RandHIE, log1p(meddol)).
# QR-VBLL (quantile head) with random vs epistemic selection, and the Gaussian head for reference.
# Run from the repository root after `bash scripts/setup.sh`:  bash examples/regression_randhie/run.sh
set -euo pipefail
cd "$(dirname "$0")"
ALKIT=${ALKIT:-../../.venv/bin/alkit}
PY=${PY:-../../.venv/bin/python}
BUDGET=${BUDGET:-400}
BATCH=${BATCH:-40}
SEEDS=${SEEDS:-3}
[ -f randhie.csv ] || "$PY" prepare.py
rm -rf project
"$ALKIT" init randhie.csv --id-col id --label-col y --task regression --hide-labels --test-frac 0.3 -p project
for seed in $(seq 0 $((SEEDS - 1))); do
  for head in quantile gaussian; do
    "$ALKIT" run -p project --strategy random --scorer vbll --head "$head" --budget "$BUDGET" --batch-size "$BATCH" --seed "$seed"
    "$ALKIT" run -p project --strategy epistemic --head "$head" --budget "$BUDGET" --batch-size "$BATCH" --seed "$seed"
  done
done
"$ALKIT" status -p project
"$ALKIT" plot -p project --metric crps --out crps.png
"$ALKIT" plot -p project --metric nll10 --out nll10.png
