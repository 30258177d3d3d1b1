#!/usr/bin/env bash
# Shared by the classification examples: random (VBLL model) vs epistemic on seeds 0-2 in an
# initialised project, then status and learning_curves.png.  Usage: compare_random_epistemic.sh PROJECT
# (BUDGET, BATCH and ALKIT from the environment, as the calling run.sh sets them).
set -euo pipefail
project=$1
for seed in 0 1 2; do
  "$ALKIT" run -p "$project" --strategy random --scorer vbll --budget "$BUDGET" --batch-size "$BATCH" --seed "$seed"
  "$ALKIT" run -p "$project" --strategy epistemic --budget "$BUDGET" --batch-size "$BATCH" --seed "$seed"
done
"$ALKIT" status -p "$project"
"$ALKIT" plot -p "$project" --out learning_curves.png
