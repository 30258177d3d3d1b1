#!/usr/bin/env bash
# BayesVLM from the command line on the dual encoder run.py aligns (alkit layout, EfficientNet-Lite0
# images + MiniLM texts): the aligned model is saved, the 2,000 pool + 1,000 test images become a
# project, and `alkit run --model-dir` runs the epistemic preset against random and margin with
# the same model, 3 seeds, batches of 20 to 100 labels (the run.py protocol).
set -euo pipefail
cd "$(dirname "$0")"
PY=${PY:-../../.venv/bin/python}
ALKIT=${ALKIT:-../../.venv/bin/alkit}
export ALKIT_THREADS=${ALKIT_THREADS:-1}
$PY run.py --seeds 1 --strategies random --cycles 0 --save-model .cache/aligned --export-csv
rm -rf .cache/project
$ALKIT init .cache/fashion_images.csv --id-col id --label-col label --image-col path --split-col split \
    --hide-labels -p .cache/project
for seed in 0 1 2; do
    for strategy in epistemic random margin; do
        $ALKIT run --strategy "$strategy" --model-dir .cache/aligned --class-prompts "a photo of a {}" \
            --budget 100 --batch-size 20 --initial 20 --seed "$seed" -p .cache/project --json > /dev/null
    done
done
$PY - <<'PY'
"""Test accuracy per strategy at 0, 20, ..., 100 labels and AULC, mean +- std over the seeds."""
import numpy as np
from alkit.config import load_project
from alkit.metrics import aulc
from alkit.pools.store import Store
from alkit.report import cycles_frame

df = cycles_frame(Store(load_project(".cache/project").store_url))
for strategy in sorted(set(df["strategy"])):
    runs = df.filter(df["strategy"] == strategy).sort("seed", "n_labeled")
    curves = [r.sort("n_labeled") for r in runs.partition_by("seed")]
    n = curves[0]["n_labeled"].to_numpy()
    acc = np.stack([c["accuracy"].to_numpy() for c in curves])
    areas = [aulc(n, a) for a in acc]
    print(f"| {strategy} | " + " | ".join(f"{m:.3f} ± {s:.3f}" for m, s in zip(acc.mean(0), acc.std(0)))
          + f" | {np.mean(areas):.3f} ± {np.std(areas):.3f} |   (n = {n.tolist()}, {len(curves)} seeds)")
PY
