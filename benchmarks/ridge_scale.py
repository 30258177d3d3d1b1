"""The regression MLP's ridge candidate at target scales 1 to 1e5: scikit-learn's BayesianRidge on the raw target
against the standardised one alkit fits since 2026-12-06, and the capacity choice the plain MLP learner makes.

    python benchmarks/ridge_scale.py --out benchmarks/results/ridge_scale.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_regression
from sklearn.linear_model import BayesianRidge

from alkit.models.learner import RidgePredictive
from alkit.query import pool_learner


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    X, y = make_regression(400, 8, n_informative=5, noise=5, random_state=0)
    X = X.astype(np.float32)
    lab = np.random.default_rng(0).permutation(320)[:40]
    rows = []
    for s in (1.0, 1e2, 1e3, 1e5):
        raw = BayesianRidge().fit(X[lab], y[lab] * s)
        ridge = RidgePredictive()
        ridge.fit(X[lab], y[lab] * s, seed=0)
        learner = pool_learner(X[:320], "regression", scorer="none")
        report = learner.fit(X[lab], y[lab] * s, seed=0)
        rows.append(f"| {s:g} | {np.abs(raw.predict(X[320:]) / s - y[320:]).mean():.3f} ({raw.n_iter_} iterations) | "
                    f"{np.abs(ridge.mean(X[320:]).numpy() / s - y[320:]).mean():.3f} | "
                    f"{report['cv_crps_plain'] / s:.3f} / {report['cv_crps_ridge-residual'] / s:.3f} | "
                    f"{'ridge-residual' if report['capacity_ridge'] else 'plain'} |")
    args.out.write_text(
        "# The ridge candidate at target scales\n\n"
        f"Command: `python benchmarks/ridge_scale.py --out {args.out}` (make_regression, 8 features, noise 5; 40 labels; "
        "80 test rows; errors divided by the scale)\n\n"
        "| target scale | BayesianRidge on the raw target: MAE | standardised (alkit): MAE | plain MLP's CV CRPS: plain / "
        "ridge-residual | chosen |\n|---|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
