"""Semi-supervised label spreading against logistic regression on the same random labels (a check,
not a default candidate).

Why: DESIGN.md allows semi-supervised use of the pool where it measures better.  scikit-learn's
LabelSpreading (kNN graph, k = 10, alpha 0.2) over the labelled items and a seeded sample of 2,000
pool items, on pool-standardised features, is compared with logistic regression on the labels alone
(columns ``lr``, ``ls``), and with logistic regression refitted on the labels plus the more
confident half of the spread pseudo-labels (``lr+pl``); test accuracy, mean over seeds.

    python benchmarks/ssl_label_spreading.py --data digits,reviews,fashion \
        --out benchmarks/results/ssl_label_spreading.md
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.semi_supervised import LabelSpreading

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learner_parity import load_set, standardise  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="digits,reviews,fashion")
    ap.add_argument("--ns", default="20,50,100,300")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    warnings.filterwarnings("ignore")  # LabelSpreading's division warnings on isolated graph nodes
    lines = [f"Command: `python benchmarks/ssl_label_spreading.py {' '.join(sys.argv[1:])}`", "",
             "| set | N | logistic regression | label spreading | LR + confident pseudo-labels |", "|---|---|---|---|---|"]
    for name in a.data.split(","):
        d = load_set(name)
        Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
        sample = np.random.default_rng(0).choice(len(Xp), min(2000, len(Xp)), replace=False)
        for N in (int(n) for n in a.ns.split(",")):
            acc: dict[str, list[float]] = {"lr": [], "ls": [], "lr+pl": []}
            for seed in range(a.seeds):
                idx = np.random.default_rng(seed).permutation(len(Xp))[:N]
                yl = d["y_pool"][idx]
                lr = LogisticRegression(max_iter=1000).fit(Xp[idx], yl)
                acc["lr"].append(float((lr.predict(Xt) == d["y_test"]).mean()))
                un = np.setdiff1d(sample, idx)
                ls = LabelSpreading(kernel="knn", n_neighbors=10, alpha=0.2, max_iter=100).fit(
                    np.concatenate([Xp[idx], Xp[un]]), np.concatenate([yl, -np.ones(len(un), int)]))
                acc["ls"].append(float((ls.predict(Xt) == d["y_test"]).mean()))
                dist = ls.label_distributions_[N:]
                keep = dist.max(1) >= np.quantile(dist.max(1), 0.5)
                pseudo = ls.classes_[dist.argmax(1)]
                lr2 = LogisticRegression(max_iter=1000).fit(np.concatenate([Xp[idx], Xp[un][keep]]),
                                                            np.concatenate([yl, pseudo[keep]]))
                acc["lr+pl"].append(float((lr2.predict(Xt) == d["y_test"]).mean()))
            lines.append(f"| {name} | {N} | " + " | ".join(f"{np.mean(acc[k]):.3f}" for k in ("lr", "ls", "lr+pl")) + " |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    if a.out:
        a.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
