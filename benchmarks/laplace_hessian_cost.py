"""What laplace's `-o hessian=full` costs against the default `kfac`, by the number of classes: the full
last-layer GGN is (D*C) x (D*C) and its eigendecomposition grows as C^3, where KFAC's two factors stay
D x D and C x C.  Per-thread CPU seconds, one thread, a fit on N labels and a predict of the pool, the two
Hessians interleaved (cpu_medians, median of --repeats).  Digits for 10 classes; scikit-learn's
make_classification (64 features, as digits) for the other counts.

    python benchmarks/laplace_hessian_cost.py --classes 10,20,50 --out benchmarks/results/laplace_hessian_cost.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits, make_classification
from threadpoolctl import threadpool_limits

from alkit.learners.laplace import LaplaceLearner
from bench_common import cpu_medians, emit


def data(n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Digits at 10 classes, else 2,000 make_classification rows of 64 features; rows shuffled by ``seed``."""
    if n_classes == 10:
        X, y = load_digits(return_X_y=True)
    else:
        X, y = make_classification(n_samples=2000, n_features=64, n_informative=40, n_redundant=0,
                                   n_classes=n_classes, n_clusters_per_class=1, class_sep=2.0, random_state=seed)
    order = np.random.default_rng(seed).permutation(len(y))
    return X[order].astype(np.float32), y[order].astype(np.int64)


def one_size(n_classes: int, n_labels: int, repeats: int) -> dict[str, float]:
    """CPU seconds of fit and predict for each Hessian at one class count."""
    X, y = data(n_classes)
    X_lab, y_lab = X[:n_labels], y[:n_labels]
    learners = {h: LaplaceLearner("classification", n_classes, hessian=h) for h in ("kfac", "full")}
    fits = cpu_medians({h: (lambda lr=lr: lr.fit(X_lab, y_lab, seed=0)) for h, lr in learners.items()}, repeats)
    preds = cpu_medians({h: (lambda lr=lr: lr.predict(X)) for h, lr in learners.items()}, repeats)
    return {"fit kfac": fits["kfac"], "fit full": fits["full"], "predict kfac": preds["kfac"],
            "predict full": preds["full"], "pool": float(len(X))}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--classes", default="10,20,50")
    ap.add_argument("--labels", type=int, default=300)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    lines = [f"Command: `python benchmarks/laplace_hessian_cost.py {' '.join(sys.argv[1:])}`", "",
             __doc__.split("\n\n")[0].replace("\n", " "), "",
             f"CPU seconds, one thread, median of {a.repeats}; fit on {a.labels} labels, predict the pool.", "",
             "| classes | pool | fit kfac | fit full | full / kfac | predict kfac | predict full | full / kfac |",
             "|---|---|---|---|---|---|---|---|"]
    with threadpool_limits(1):
        for c in (int(v) for v in a.classes.split(",")):
            t = one_size(c, a.labels, a.repeats)
            lines.append(f"| {c} | {int(t['pool'])} | {t['fit kfac']:.2f} | {t['fit full']:.2f} | "
                         f"{t['fit full'] / t['fit kfac']:.1f} | {t['predict kfac']:.3f} | {t['predict full']:.2f} | "
                         f"{t['predict full'] / t['predict kfac']:.1f} |")
            print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
