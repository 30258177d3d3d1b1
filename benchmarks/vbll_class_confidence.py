"""How confident VBLL classification is against its accuracy, and what its predictive is made of.

VBLL's class predictive is the probit approximation softmax(m / sqrt(1 + pi/8 (v + noise))) of the Gaussian
last-layer posterior (m: mean logits, v: the posterior variance phi^T S phi, shared by every class).  This
compares it on a test split with a Monte Carlo average over that posterior (is the approximation faithful?),
with softmax(m) (the mean logits alone) and with the plain MLP learner (scorer none), on random labels.

    python benchmarks/vbll_class_confidence.py --out benchmarks/results/vbll_class_confidence.md
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits, make_classification
from sklearn.model_selection import train_test_split

from alkit.query import pool_learner


def data(name: str) -> tuple[np.ndarray, np.ndarray, int]:
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        return X.astype(np.float32), y, 10
    C = int(name.split("-")[1])  # synthetic-50: 50 well separated classes
    X, y = make_classification(2000, 20, n_informative=15, n_classes=C, n_clusters_per_class=1, class_sep=3,
                               random_state=0)
    return X.astype(np.float32), y, C


def scores(p: np.ndarray, y: np.ndarray) -> tuple[float, float, float]:
    return (float((p.argmax(1) == y).mean()), float(p.max(1).mean()),
            float(-np.log(np.clip(p[np.arange(len(y)), y], 1e-12, 1)).mean()))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sets", default="digits,synthetic-50")
    ap.add_argument("--labels", default="30,100,300")
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.sets.split(","):
        X, y, C = data(name)
        Xp, Xt, yp, yt = train_test_split(X, y, test_size=0.3, stratify=y, random_state=0)
        for n in map(int, args.labels.split(",")):
            acc: dict[str, list[tuple[float, float, float]]] = {}
            for seed in range(args.seeds):
                idx = np.random.default_rng(seed).permutation(len(yp))[:n]
                vbll = pool_learner(Xp, "classification", n_classes=C, scorer="vbll")
                vbll.fit(Xp[idx], yp[idx], seed=seed)
                pred = vbll.predict(Xt)
                m = pred.extras["logits_n_C"].detach().float()
                v = pred.extras["logit_var_n_C"].detach().float()
                eps = torch.randn(256, *m.shape, generator=torch.Generator().manual_seed(seed))
                plain = pool_learner(Xp, "classification", n_classes=C, scorer="none")
                plain.fit(Xp[idx], yp[idx], seed=seed)
                for key, p in (("vbll predictive (default)", pred.probs_n_C.numpy()),
                               ("Monte Carlo over the posterior", torch.softmax(m[None] + v.sqrt()[None] * eps, -1)
                                .mean(0).numpy()),
                               ("softmax(m), the mean logits", torch.softmax(m, 1).numpy()),
                               ("plain MLP (scorer none)", plain.predict(Xt).probs_n_C.numpy())):
                    acc.setdefault(key, []).append(scores(p, yt))
                acc.setdefault("mean posterior variance v", []).append((float(v.mean()), math.nan, math.nan))
            for key, vals in acc.items():
                a = np.array(vals)
                rows.append(f"| {name} | {n} | {key} | " + (f"{a[:, 0].mean():.3f}" if "variance" not in key else
                            f"v = {a[:, 0].mean():.2f}") + (" | – | – |" if "variance" in key else
                            f" | {a[:, 1].mean():.3f} | {a[:, 2].mean():.3f} |"))
    args.out.write_text(
        "# VBLL classification: confidence against accuracy\n\n"
        f"Command: `python benchmarks/vbll_class_confidence.py --sets {args.sets} --labels {args.labels} --seeds "
        f"{args.seeds} --out {args.out}` (random labels, 30 % stratified test split, mean over seeds)\n\n"
        "| set | labels | predictive | accuracy | mean top-class probability | NLL |\n|---|---|---|---|---|---|\n"
        + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
