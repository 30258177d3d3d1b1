"""Laplace mutual information: Monte-Carlo error of the shared-sample estimate, by design and sample count.

The reference is the same estimator with 20,000 iid draws.  ``iid`` is plain torch.randn draws
(alkit before issue 15); ``design`` is alkit's ``fixed_eps`` (antithetic pairs along rotated
orthogonal directions, whitened to an exact identity covariance).  Error = sum |MI_S - MI_ref| /
sum MI_ref over the evaluated items (aggregate relative error), mean ± std over 3 sample seeds;
Spearman with the reference; and the CPU time of the whole Laplace MI scoring (quadratic forms +
MC) per item relative to a plain forward of the same network, one thread.

Model: alkit's MLPLearner on 300 digits (10 classes) or on digits 0-4 (5 classes), seed 0,
KFAC last-layer Laplace; items: 1,000 other digits.

    .venv/bin/python benchmarks/laplace_mi_error.py --out benchmarks/results/laplace_mi_error.md
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from sklearn.datasets import load_digits
from threadpoolctl import threadpool_limits
from torch import nn

from alkit.learners.laplace import LastLayerLaplace, _bald, fixed_eps
from alkit.models.layers import layer_io
from alkit.models.learner import MLPLearner
from bench_common import cpu_medians, emit, mean_std  # benchmarks/bench_common.py


def setup(n_classes: int):
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(X))
    X, y = X[idx].astype(np.float32), y[idx]
    keep = y < n_classes
    X, y = X[keep], y[keep]
    base = MLPLearner("classification", n_classes)
    base.fit(X[:300], y[:300], seed=0)
    model = nn.Sequential(base.backbone, base.head).eval()
    lap = LastLayerLaplace.from_model(model, X[:300], last_layer=base.head, hessian="kfac", mi="mc")
    Xev = torch.as_tensor(X[300:1300])
    h, z = layer_io(model, lap.layer, Xev)
    return model, lap, Xev, h, z


def mi_of(lap: LastLayerLaplace, h: torch.Tensor, z: torch.Tensor, eps_S_C: torch.Tensor) -> torch.Tensor:
    m = lap.eigvar(h).double().clamp_min(0)
    Q = lap.Q_G.double()
    out = []
    for s in range(0, len(z), 100):
        out.append(_bald(z[s:s + 100].double()[:, None, :] + (m[s:s + 100].sqrt()[:, None, :] * eps_S_C[None]) @ Q.T)[0])
    return torch.cat(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", default="16,20,32,64")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    lines = ["Command: `.venv/bin/python benchmarks/laplace_mi_error.py --samples " + args.samples + "`", "",
             "| classes | samples | error, iid | error, design | Spearman iid / design | MI scoring x forward |",
             "|---|---|---|---|---|---|"]
    with threadpool_limits(1):
        for C in (10, 5):
            model, lap, Xev, h, z = setup(C)
            ref = mi_of(lap, h, z, torch.randn(20000, C, generator=torch.Generator().manual_seed(123), dtype=torch.float64))
            for S in (int(s) for s in args.samples.split(",")):
                err: dict[str, list[float]] = {"iid": [], "design": []}
                rho: dict[str, float] = {}
                for seed in range(3):
                    draws = {"iid": torch.randn(S, C, generator=torch.Generator().manual_seed(seed), dtype=torch.float64),
                             "design": fixed_eps(S, C, seed, torch.float64)}
                    for k, eps in draws.items():
                        est = mi_of(lap, h, z, eps)
                        err[k].append(float((est - ref).abs().sum() / ref.sum()))
                        rho[k] = float(spearmanr(est.numpy(), ref.numpy())[0])
                lap.mc_samples = S
                with torch.no_grad():
                    med = cpu_medians({"forward": lambda: model(Xev), "scoring": lambda: lap.predict(Xev)})
                ratio = med["scoring"] / med["forward"]
                f = mean_std
                lines.append(f"| {C} | {S} | {f(err['iid'])} | {f(err['design'])} | {rho['iid']:.3f} / {rho['design']:.3f} "
                             f"| {ratio:.1f} |")
                print(lines[-1], flush=True)
    emit(lines, args.out)


if __name__ == "__main__":
    main()
