"""Scoring time of each VBLL head relative to a plain forward pass of the same backbone.

Pool: 200,000 items x 64 features, streamed in chunks of 10,000 (as the loop scores a pool),
one thread.  Baseline: ResidualMLP (width 128, depth 2, the VBLL default feature map) + an
nn.Linear head, i.e. MLPLearner's deterministic forward.  For each head two times are reported:
'score' = backbone + the head's mean and epistemic score (what a strategy ranks by), and
'Prediction' = the learner's full ``predict`` (probabilities / predictive distribution, extras).
Times are CPU seconds of this (single-threaded) process (``time.process_time``), so other jobs on
a shared machine do not inflate them; every scorer is timed on each chunk in turn (interleaved);
times are summed over the pool, median over ``--reps`` passes; ratios are taken within this run.

    PYTHONPATH=. .venv/bin/python benchmarks/score_time.py
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import numpy as np
import torch

from alkit.learners.vbll import VBLLLearner, laplace_bridge_mi
from alkit.models.learner import MLPLearner
from alkit.models.train import TrainConfig

TINY = TrainConfig(max_epochs=1, min_steps=1, val_frac=0.0)


def timed(fn: Callable[[np.ndarray], object], pool: np.ndarray, chunk: int, reps: int) -> float:
    times = []
    for _ in range(reps):
        t = time.process_time()
        for s in range(0, len(pool), chunk):
            fn(pool[s : s + chunk])
        times.append(time.process_time() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200_000)
    ap.add_argument("--features", type=int, default=64)
    ap.add_argument("--chunk", type=int, default=10_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = np.random.default_rng(0)
    pool = rng.normal(size=(args.n, args.features)).astype(np.float32)
    X = rng.normal(size=(256, args.features)).astype(np.float32)
    y_cls, y_reg = rng.integers(0, 10, 256), rng.normal(size=256)

    mlp = MLPLearner("classification", 10, feature_map="l2", train=TINY)
    mlp.fit(X, y_cls, seed=0)

    @torch.no_grad()
    def plain(x: np.ndarray) -> object:
        return mlp.forward(torch.from_numpy(x))

    learners: dict[str, tuple[Callable[[np.ndarray], object], Callable[[np.ndarray], object]]] = {
        "plain forward (MLP, 10 logits)": (plain, plain)
    }
    configs = [("classification C=10", "classification", "gaussian", cov) for cov in ("dense", "diagonal", "shared")]
    configs += [("regression gaussian", "regression", "gaussian", cov) for cov in ("dense", "diagonal")]
    configs += [("QR-VBLL K=19", "regression", "quantile", cov) for cov in ("dense", "diagonal", "shared")]
    configs += [("CR-VBLL K=20", "regression", "buckets", cov) for cov in ("dense", "diagonal", "shared")]
    for label, task, head, cov in configs:
        learner = VBLLLearner(task, 10 if task == "classification" else None, head=head, cov=cov, train=TINY)
        learner.fit(X, y_cls if task == "classification" else y_reg, seed=0)

        @torch.no_grad()
        def score(x: np.ndarray, learner: VBLLLearner = learner, task: str = task, head: str = head) -> object:
            phi = learner.backbone(torch.from_numpy(x))
            m, v = learner.head(phi)
            if task == "classification" or head == "buckets":
                return laplace_bridge_mi(m, v)
            return v.mean(1)

        learners[f"{label}, cov={cov}"] = (score, learner.predict)

    # interleaved per chunk, so load drift on a shared machine hits every scorer alike
    for fns in learners.values():
        fns[0](pool[: args.chunk]), fns[1](pool[: args.chunk])  # warm-up
    t_score = {k: [0.0] * args.reps for k in learners}
    t_pred = {k: [0.0] * args.reps for k in learners}
    for r in range(args.reps):
        for s in range(0, len(pool), args.chunk):
            x = pool[s : s + args.chunk]
            for name, (fs, fp) in learners.items():
                t = time.process_time()
                fs(x)
                t_score[name][r] += time.process_time() - t
                t = time.process_time()
                fp(x)
                t_pred[name][r] += time.process_time() - t
    base_name = "plain forward (MLP, 10 logits)"
    base = statistics.median(t_score[base_name] + t_pred[base_name])
    rows = [(k, statistics.median(t_score[k]), statistics.median(t_pred[k])) for k in learners]
    rows[0] = (base_name, base, base)
    print(f"\npool {args.n} x {args.features}, chunk {args.chunk}, threads {args.threads}, median of {args.reps}\n")
    print("| scorer | score s | score / forward | Prediction s | Prediction / forward |\n|---|---|---|---|---|")
    for name, ts, tp in rows:
        print(f"| {name} | {ts:.2f} | {ts / base:.2f}x | {tp:.2f} | {tp / base:.2f}x |")


if __name__ == "__main__":
    main()
