"""Memory of one scoring chunk by scorer and class count: a fixed 16,384 rows against the rows the
loop now chooses per fitted learner (alkit.engines.chunk_rows_for, budget 256 MB).

Each (scorer, classes, rows) case runs in its own subprocess: the learner is fitted briefly on
3,000 random 128-d items (cost and memory do not depend on the labels), then one chunk of random
rows is predicted and scored by the acquisition the ``epistemic`` preset would use with that
scorer (decision-flip for vbll, the scorer's own epistemic score otherwise); the figure is the
peak resident memory over that chunk above the resident memory before it (Linux: the peak is reset
through /proc/self/clear_refs before the chunk and read as VmHWM after), and the ratio of that peak
to the bytes of the chunk's Prediction (what WORKING_SET_FACTOR in alkit/engines/common.py bounds).

    .venv/bin/python benchmarks/chunk_memory.py --out benchmarks/results/chunk_memory.md
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SCORERS = ("vbll", "laplace", "csd", "gradnorm", "ensemble", "sve", "mc-dropout")


def _status_kb(key: str) -> int:
    return int(re.search(key + r":\s+(\d+)", Path("/proc/self/status").read_text()).group(1))


def child(scorer: str, C: int, rows: str) -> dict[str, float]:
    import numpy as np
    import torch

    from alkit.acquisition import get_acquisition
    from alkit.engines import AcquisitionScorer, chunk_rows_for, prediction_nbytes
    from alkit.models.train import TrainConfig
    from alkit.registry import make_learner
    from alkit.types import AcquisitionContext

    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3000, 128), dtype=np.float32)
    learner = make_learner(scorer, "classification", C, train=TrainConfig(max_epochs=1, min_steps=2, steps=2))
    learner.fit(X, rng.integers(0, C, 3000), seed=0)
    chosen = chunk_rows_for(learner, X[:64])
    n = chosen if rows == "chosen" else int(rows)
    acq = get_acquisition("decision-flip" if scorer == "vbll" else "epistemic")
    score = AcquisitionScorer(acq, AcquisitionContext(posterior=learner.posterior()))
    Xc = rng.standard_normal((n, 128), dtype=np.float32)
    Path("/proc/self/clear_refs").write_text("5")  # reset the peak (VmHWM) to the current RSS
    base = _status_kb("VmRSS") / 1024
    with torch.no_grad():
        pred = learner.predict(Xc)
        score(pred)
    peak = _status_kb("VmHWM") / 1024
    return {"rows": n, "chosen": chosen, "peak_mb": peak - base, "pred_mb": prediction_nbytes(pred) / 2**20}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--child", nargs=3, metavar=("SCORER", "C", "ROWS"))
    ap.add_argument("--scorers", default=",".join(SCORERS))
    ap.add_argument("--classes", default="10,100,1000")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), a.child[2])))
        return
    lines = ["| scorer | classes | rows chosen | peak MB, 16,384 rows | peak / Prediction bytes | peak MB, chosen rows |",
             "|---|---|---|---|---|---|"]
    for scorer in a.scorers.split(","):
        for C in (int(c) for c in a.classes.split(",")):
            res = {}
            for rows in ("16384", "chosen"):
                proc = subprocess.run([sys.executable, __file__, "--child", scorer, str(C), rows],
                                      capture_output=True, text=True)
                res[rows] = (json.loads(proc.stdout.strip().splitlines()[-1]) if proc.returncode == 0
                             else {"peak_mb": float("nan"), "pred_mb": float("nan"), "chosen": -1,
                                   "error": f"rc {proc.returncode}"})
            fixed, chosen = res["16384"], res["chosen"]
            ratio = fixed["peak_mb"] / fixed["pred_mb"] if fixed["pred_mb"] else float("nan")
            line = (f"| {scorer} | {C} | {chosen['chosen']} | {fixed['peak_mb']:.0f}{' (' + fixed['error'] + ')' if 'error' in fixed else ''} "
                    f"| {ratio:.1f} | {chosen['peak_mb']:.0f} |")
            print(line, flush=True)
            lines.append(line)
    text = (f"Command: `python benchmarks/chunk_memory.py {' '.join(sys.argv[1:])}`\n\n"
            "Peak resident memory over one chunk above that before it (predict + the preset's acquisition), "
            "128-d inputs, 1 thread; "
            "budget 256 MB (alkit.engines.CHUNK_BUDGET).\n\n" + "\n".join(lines) + "\n")
    if a.out:
        Path(a.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
