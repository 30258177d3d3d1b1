"""Laplace scoring cost by epistemic mode: the trace mode no longer computes the MC mutual
information it does not use (issue 14).  Per-thread CPU seconds, one thread, interleaved, median
of 3, on a 20,000-item pool of digits rows (tiled), after fitting on 300 labels.

    python benchmarks/laplace_trace_time.py --out benchmarks/results/laplace_trace_time.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

from alkit.learners.laplace import LaplaceLearner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    pool = np.tile(X, (12, 1))[:20000]
    with threadpool_limits(1):
        learners = {e: LaplaceLearner("classification", 10, epistemic=e) for e in ("trace", "mi")}
        for learner in learners.values():
            learner.fit(X[:300], y[:300], seed=0)
        full: dict[str, list[float]] = {}
        part: dict[bool, list[float]] = {}
        pred = learners["trace"].base.predict(pool)
        h, z = pred.embedding_n_d, learners["trace"].head_outputs(pred)
        for _ in range(3):
            for e, learner in learners.items():
                t = time.thread_time()
                learner.predict(pool)
                full.setdefault(e, []).append(time.thread_time() - t)
            for with_mi in (True, False):
                t = time.thread_time()
                learners["trace"].scorer.predict_features(h, z, with_mi=with_mi)
                part.setdefault(with_mi, []).append(time.thread_time() - t)
    med = lambda v: float(np.median(v))  # noqa: E731
    text = ("| what | CPU s (20,000 items) |\n|---|---:|\n"
            f"| predict, epistemic=mi (default) | {med(full['mi']):.3f} |\n"
            f"| predict, epistemic=trace (now: no MI) | {med(full['trace']):.3f} |\n"
            f"| scoring part with the MC MI (trace mode before this change) | {med(part[True]):.4f} |\n"
            f"| scoring part without it (trace mode now) | {med(part[False]):.4f} |\n")
    print(text)
    if a.out:
        Path(a.out).write_text(f"Command: `python benchmarks/laplace_trace_time.py {' '.join(sys.argv[1:])}`\n\n"
                               f"{__doc__.split(chr(10) + chr(10))[0]}\n\n{text}")


if __name__ == "__main__":
    main()
