"""Wide tables (many more features than rows): alkit's learners against logistic regression on the same labels.

make_classification(300 rows, 5,000 features, 10 informative, class_sep 3); 90 test rows, the other 210 the
pool (its statistics standardise the inputs, as `alkit run` does); random labels, 2 seeds.

    python benchmarks/learner_wide.py --out benchmarks/results/learner_wide.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression

from alkit.query import pool_learner


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--features", type=int, default=5000)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    torch.set_num_threads(1)
    X, y = make_classification(300, args.features, n_informative=10, class_sep=3, random_state=0)
    X = X.astype(np.float32)
    perm = np.random.default_rng(0).permutation(len(y))
    test, pool = perm[:90], perm[90:]
    rows = []
    for n in (50, 100, 200):
        acc: dict[str, list[float]] = {}
        for seed in range(args.seeds):
            idx = np.random.default_rng(seed).permutation(pool)[:n]
            acc.setdefault("logistic regression", []).append(
                LogisticRegression(max_iter=2000).fit(X[idx], y[idx]).score(X[test], y[test]))
            for scorer in ("vbll", "none"):
                learner = pool_learner(X[pool], "classification", n_classes=2, scorer=scorer)
                learner.fit(X[idx], y[idx], seed=seed)
                p = learner.predict(X[test]).probs_n_C.numpy()
                acc.setdefault(scorer, []).append(float((p.argmax(1) == y[test]).mean()))
        rows.append(f"| {n} | " + " | ".join(f"{np.mean(acc[k]):.3f}" for k in ("logistic regression", "vbll", "none"))
                    + " |")
    args.out.write_text(
        "# Wide tables: accuracy on the same random labels\n\n"
        f"Command: `python benchmarks/learner_wide.py --features {args.features} --seeds {args.seeds} --out {args.out}`"
        f" (300 rows, {args.features} features, 10 informative; mean over seeds)\n\n"
        "| labels | logistic regression | vbll | none (plain MLP) |\n|---|---|---|---|\n" + "\n".join(rows) + "\n")


if __name__ == "__main__":
    main()
