"""Scoring time of the post-hoc scorers relative to a plain forward pass of the same network.

Pool: 200,000 items x 64 features, streamed in chunks of 10,000, one thread.  Network: the
MLPLearner default (ResidualMLP width 128, depth 2, 10-class head); its training quality does not
matter for timing, so it is fitted briefly on 2,000 random labeled items, and the post-hoc fits
use those.  Baseline: ``head(backbone(x))`` under no_grad.  Each time is the median of 3 passes,
in process CPU seconds (one thread; the shared machine makes wall-clock times swing by ±40%).
The whole-network gradient norm (torch.func) is timed on 2,000 items and scaled x100.

    .venv/bin/python benchmarks/posthoc_time.py [--out benchmarks/results/posthoc_time.md]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

from alkit.learners.csd import CSDConfig, CSDLearner
from alkit.learners.gradnorm import GradNormLearner, per_example_gradnorm_sq
from alkit.learners.laplace import LaplaceLearner
from alkit.models.layers import layer_io
from alkit.models.train import TrainConfig

TINY = TrainConfig(max_epochs=2, min_steps=1, val_frac=0.0)
N_POOL, F, C, CHUNK = 200_000, 64, 10, 10_000


def timed(fn: Callable[[], object], reps: int = 3) -> float:
    out = []
    for _ in range(reps):
        t = time.process_time()
        fn()
        out.append(time.process_time() - t)
    return statistics.median(out)


def over_pool(pool: np.ndarray, f: Callable[[np.ndarray], object]) -> Callable[[], None]:
    def go() -> None:
        with torch.no_grad():
            for s in range(0, len(pool), CHUNK):
                f(pool[s : s + CHUNK])
    return go


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="benchmarks/results/posthoc_time.md")
    args = ap.parse_args()
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X_lab = rng.normal(size=(2000, F)).astype(np.float32)
    y_lab = rng.integers(0, C, 2000)
    pool = rng.normal(size=(N_POOL, F)).astype(np.float32)

    lap = LaplaceLearner("classification", C, train=TINY, mi="mc")  # default S = 16
    lap.fit(X_lab, y_lab, seed=0)
    net, head = lap.base.backbone, lap.base.head
    csd = CSDLearner("classification", C, train=TINY, csd=CSDConfig(steps=200))
    csd.fit(X_lab, y_lab, seed=0)
    gn = GradNormLearner("classification", C, train=TINY)
    gn.fit(X_lab, y_lab, seed=0)
    L = lap.laplace
    model = torch.nn.Sequential(net, head).eval()

    rows: list[tuple[str, float]] = []
    base = timed(over_pool(pool, lambda x: head(net(torch.as_tensor(x)))))
    rows.append(("plain forward head(backbone(x)) (baseline)", base))
    rows.append(("MLPLearner.predict (probs, entropy)", timed(over_pool(pool, lap.base.predict))))

    def lap_trace(x: np.ndarray) -> None:
        h, z = layer_io(model, head, x, chunk=CHUNK)
        L.logit_var(h).sum(1)

    rows.append(("laplace: logit-covariance trace (hooked forward + quadratic form)", timed(over_pool(pool, lap_trace))))
    L.mi = "probit"
    rows.append(("laplace: LaplaceLearner.predict, MI probit proxy", timed(over_pool(pool, lap.predict))))
    L.mi = "mc"
    rows.append(("laplace: LaplaceLearner.predict, MI Monte Carlo S=16 (default)", timed(over_pool(pool, lap.predict))))
    L.mc_samples = 64
    rows.append(("laplace: LaplaceLearner.predict, MI Monte Carlo S=64", timed(over_pool(pool, lap.predict))))
    rows.append(("csd: CSDLearner.predict", timed(over_pool(pool, csd.predict))))
    rows.append(("gradnorm: GradNormLearner.predict (last layer, closed form)", timed(over_pool(pool, gn.predict))))
    sub = torch.as_tensor(pool[:2_000])
    t_all = timed(lambda: per_example_gradnorm_sq(model, sub, layers="all", chunk=1000), reps=1) * (N_POOL / 2_000)
    rows.append(("gradnorm: whole network, torch.func vmap(grad) (2k items x100)", t_all))

    lines = ["# Post-hoc scorers: scoring time relative to a plain forward pass", "",
             "Command: `.venv/bin/python benchmarks/posthoc_time.py`", "",
             f"Pool {N_POOL:,} x {F}, chunks of {CHUNK:,}, 1 thread, {C} classes, ResidualMLP width 128 "
             "depth 2 (the MLPLearner default); median of 3 passes in process CPU seconds (the machine is "
             "shared; CPU time is steadier than wall time); ratios are within this one run.", "",
             "| what | seconds | × plain forward |", "|---|---|---|"]
    for name, t in rows:
        lines.append(f"| {name} | {t:.2f} | {t / base:.2f} |")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
