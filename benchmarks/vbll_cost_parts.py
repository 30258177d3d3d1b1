"""Where the default VBLL scorer's time goes, and what a low-rank variance would cost in accuracy (issue 14).

Part 1, cost: one 50,000 x 128 chunk, the default classification learner (shared covariance,
width 128, one residual block) fitted briefly on 500 random labels, each piece of its predict
timed as per-thread CPU, interleaved 15 times (median), as a fraction of the plain forward of the
same backbone (an MLPLearner's backbone + head).  Part 2, accuracy: on digits (N labels, VBLL
shared covariance S), phi^T S phi against a rank-r truncation that keeps the r smallest eigenvalues
of S exactly and the rest at their mean (the best cheap form: cost r*d per item instead of d^2),
relative error over the other digits.

    .venv/bin/python benchmarks/vbll_cost_parts.py --out benchmarks/results/vbll_cost_parts.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from alkit.learners.vbll_heads import class_scores  # noqa: E402
from alkit.models.train import TrainConfig  # noqa: E402
from alkit.registry import make_learner  # noqa: E402
from bench_common import cpu_medians, emit  # noqa: E402  (benchmarks/bench_common.py)

BRIEF = TrainConfig(max_epochs=2, min_steps=4, patience=1, batch_size=128)


def cost_rows() -> list[str]:
    rng = np.random.default_rng(1)
    X = rng.standard_normal((500, 128), dtype=np.float32)
    y = rng.integers(0, 10, 500)
    X_pool = rng.standard_normal((50_000, 128), dtype=np.float32)
    plain = make_learner("none", "classification", 10, train=BRIEF)
    plain.fit(X, y, seed=0)
    vbll = make_learner("vbll", "classification", 10, train=BRIEF)
    vbll.fit(X, y, seed=0)
    x_t = torch.as_tensor(X_pool)
    with torch.no_grad():
        phi = vbll.features(X_pool)
        out = phi @ vbll.joint_map_d_d
        m, z2 = out[:, :10], out[:, 10:].square()
        v = z2.sum(1, keepdim=True)
        fns = {
            "plain forward (backbone + head)": lambda: plain.head(plain.backbone(x_t)),
            "vbll backbone": lambda: vbll.features(X_pool),
            "fused product (mu^T and J, zero-padded to a multiple of 16 columns)": lambda: phi @ vbll.joint_map_d_d,
            "square, sum and feature-var GEMV": lambda: (out[:, 10:].square().sum(1), torch.mv(z2, vbll.joint_weights_d)),
            "predictive softmax + entropy (class_scores)": lambda: class_scores(m, v, vbll.head.noise_var, parts=()),
            "whole predict": lambda: vbll.predict(X_pool),
        }
        med = cpu_medians(fns, repeats=15)
    base = med["plain forward (backbone + head)"]
    rows = ["| piece | CPU s (median of 15) | x plain forward |", "|---|---:|---:|"]
    rows += [f"| {k} | {t:.4f} | {t / base:.2f} |" for k, t in med.items()]
    return rows


def truncation_rows(sizes: list[int], ranks: list[int]) -> list[str]:
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    idx = np.random.default_rng(0).permutation(len(y))
    rows = ["| N labels | rank r | median relative error | max relative error |", "|---:|---:|---:|---:|"]
    for N in sizes:
        tr, te = idx[:N], idx[N:]
        learner = make_learner("vbll", "classification", 10)
        learner.fit(X[tr], y[tr], seed=0)
        with torch.no_grad():
            S = learner.head.layer.cov_K_d_d()[0].double()
            phi = learner.features(X[te]).double()
        exact = (phi @ S * phi).sum(1)
        ev, U = torch.linalg.eigh(S)  # ascending: the data-constrained directions first
        z2 = (phi @ U) ** 2
        for r in ranks:
            rest = ev[r:].mean()
            approx = rest * (phi**2).sum(1) + ((ev[:r] - rest) * z2[:, :r]).sum(1)
            rel = ((approx - exact) / exact).abs()
            rows.append(f"| {N} | {r} | {float(rel.median()):.2g} | {float(rel.max()):.2g} |")
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    with threadpool_limits(1):
        lines = [f"Command: `.venv/bin/python benchmarks/vbll_cost_parts.py {' '.join(sys.argv[1:])}`", "",
                 "## Cost of the default VBLL predict, piece by piece (50,000 x 128, 10 classes, 1 thread)", "",
                 *cost_rows(), "",
                 "## A rank-r variance instead of the exact d x d form (digits, d = 128)", "",
                 *truncation_rows([50, 300, 1000], [16, 32, 64])]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
