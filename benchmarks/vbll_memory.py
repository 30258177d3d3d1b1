"""Peak memory of one VBLL prediction chunk at many classes: the dense-covariance variance in
output blocks (alkit/learners/vbll_heads.py VARIANCE_BLOCK) against one einsum over all outputs.

Each configuration runs in a fresh process (ru_maxrss only grows), predicting one 16,384-row
chunk of 128 features with a VBLL head fitted on 400 random items; CPU seconds of the prediction
(one thread) beside the growth of peak RSS.

    .venv/bin/python benchmarks/vbll_memory.py --out benchmarks/results/vbll_memory.md
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

from bench_common import emit  # benchmarks/bench_common.py

CHILD = r"""
import json, resource, sys, time
import numpy as np, torch
torch.set_num_threads(1)
import alkit.learners.vbll_heads as vh
from alkit.learners.vbll import VBLLLearner
C, block = int(sys.argv[1]), int(sys.argv[2])
if block: vh.VARIANCE_BLOCK = block
rng = np.random.default_rng(0)
learner = VBLLLearner("classification", C)
learner.fit(rng.normal(size=(400, 128)).astype(np.float32), rng.integers(0, C, 400), seed=0)
X = rng.normal(size=(16384, 128)).astype(np.float32)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.thread_time(); learner.predict(X); cpu = time.thread_time() - t
print(json.dumps({"rss_mb": (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024, "cpu_s": cpu}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default="10,100")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    lines = [f"Command: `.venv/bin/python benchmarks/vbll_memory.py --classes {args.classes}`", "",
             "| classes | variance | peak RSS growth, MB | predict CPU s |", "|---|---|---|---|"]
    for C in (int(c) for c in args.classes.split(",")):
        for label, block in (("one einsum", 1 << 60), ("output blocks (default)", 0)):
            out = subprocess.run([sys.executable, "-c", CHILD, str(C), str(block)], capture_output=True, text=True,
                                 check=True).stdout.strip().splitlines()[-1]
            r = json.loads(out)
            lines.append(f"| {C} | {label} | {r['rss_mb']:.0f} | {r['cpu_s']:.2f} |")
            print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
