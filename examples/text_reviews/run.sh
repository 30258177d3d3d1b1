#!/usr/bin/env bash
# Text classification from raw reviews: MiniLM features, random vs epistemic (VBLL), 3 seeds.
# Run from the repository root after `bash scripts/setup.sh`:  bash examples/text_reviews/run.sh
set -euo pipefail
cd "$(dirname "$0")"
ALKIT=${ALKIT:-../../.venv/bin/alkit}
PY=${PY:-../../.venv/bin/python}
BUDGET=${BUDGET:-300}
BATCH=${BATCH:-30}
[ -f reviews.csv ] || "$PY" prepare.py
rm -rf project
"$ALKIT" init reviews.csv --id-col id --label-col label --text-col review --hide-labels --test-frac 0.25 -p project
BUDGET=$BUDGET BATCH=$BATCH ALKIT=$ALKIT bash ../compare_random_epistemic.sh project
