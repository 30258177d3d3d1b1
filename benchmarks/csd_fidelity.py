"""CSD fidelity: the distilled variance against the closed form it distils, and both as OOD scores.

CSD's target on the linear last-layer kernel is V(x) = r varphi^T (Phi^T Phi + r I)^-1 varphi
(alkit/learners/csd.py).  The distilled score is Theta(x,x) - g(x,x), a small difference of two
O(1) numbers, so g's fitting error dominates it (issue 15).  This benchmark trains one MLP per
seed on the in-distribution classes, fits both solvers on the same model and labels, and reports
the median ratio distilled / closed and the Spearman correlation on in-distribution and OOD
items, the AUROC of each score, and the per-item scoring CPU time relative to a plain forward.

Splits: digits 0-4 vs 5-9 (70 % of 0-4 trained on) and Fashion-MNIST raw pixels, 2,000 training
images of classes 0-4, 1,000 test images of 0-4 and 1,000 of 5-9.

    .venv/bin/python benchmarks/csd_fidelity.py --seeds 0,1,2 --out benchmarks/results/csd_fidelity.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.metrics import roc_auc_score
from threadpoolctl import threadpool_limits
from torch import nn

from alkit.learners.csd import CSDConfig, CSDScorer
from alkit.models.learner import MLPLearner
from bench_common import cpu_medians, digits_split, emit, fashion_split, mean_std  # benchmarks/bench_common.py


def run(name: str, seed: int) -> dict[str, float]:
    s = (digits_split if name == "digits" else fashion_split)(seed)
    Xtr, ytr, Xin, Xood = s.X_tr, s.y_tr, s.X_in, s.X_ood
    base = MLPLearner("classification", 5)
    base.fit(Xtr, ytr, seed=seed)
    model = nn.Sequential(base.backbone, base.head).eval()
    pool = np.r_[Xin, Xood]
    lab = np.r_[np.zeros(len(Xin)), np.ones(len(Xood))]
    closed = CSDScorer.from_model(model, Xtr, last_layer=base.head, config=CSDConfig(seed=seed))
    distilled = CSDScorer.from_model(model, Xtr, last_layer=base.head, config=CSDConfig(seed=seed, solver="distilled"))
    X = torch.as_tensor(pool)
    with torch.no_grad():
        feats = closed.kernel_features(X)
        med = cpu_medians({"forward": lambda: model(X),
                           "closed": lambda: closed.score_features(closed.kernel_features(X)),
                           "distilled": lambda: distilled.score_features(distilled.kernel_features(X))})
    c, d = closed.score_features(feats).double().numpy(), distilled.score_features(feats).double().numpy()
    ratio = d / np.maximum(c, 1e-12)
    n_in = len(Xin)
    return {
        "ratio_in": float(np.median(ratio[:n_in])), "ratio_ood": float(np.median(ratio[n_in:])),
        "spearman": float(spearmanr(c, d)[0]),
        "auroc_closed": float(roc_auc_score(lab, c)), "auroc_distilled": float(roc_auc_score(lab, d)),
        "x_closed": med["closed"] / med["forward"], "x_distilled": med["distilled"] / med["forward"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--data", default="digits,fashion")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    lines = ["Command: `.venv/bin/python benchmarks/csd_fidelity.py --seeds " + args.seeds + f" --data {args.data}`", "",
             "| split | distilled / closed, median (in / OOD) | Spearman | AUROC closed | AUROC distilled "
             "| scoring x forward, closed / distilled |", "|---|---|---|---|---|---|"]
    with threadpool_limits(1):
        for name in args.data.split(","):
            rows = [run(name, s) for s in seeds]
            f = lambda k: mean_std([r[k] for r in rows])  # noqa: E731
            x = lambda k: f"{np.mean([r[k] for r in rows]):.2f}"  # noqa: E731
            lines.append(f"| {name} | {f('ratio_in')} / {f('ratio_ood')} | {f('spearman')} | {f('auroc_closed')} "
                         f"| {f('auroc_distilled')} | {x('x_closed')} / {x('x_distilled')} |")
            print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
