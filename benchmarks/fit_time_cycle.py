"""Fit time per cycle of a run: alkit's learners against the plain recipe, cycle by cycle.

Why: the label-efficiency issue's bar is "fit time per cycle <= 3x the plain recipe at the same N".
benchmarks/learner_parity.py times one cold fit per N, which for a learner that chooses its
capacity by cross-validation (``capacity=cv``, the default on an encoder's embeddings,
alkit/models/capacity.py) includes the six cross-validation fits every time.  In a run the loop
hands each cycle's choice on (``CapacityHint``) and chooses again only when the labels have
doubled, so the cost of a cycle is that of a fit with the hint, plus the choice at 20, 40, 80, ...
labels.  This harness replays that: one seeded random order of the pool, labels growing by
``--batch`` from ``--start`` to ``--stop``, each cycle's learner built fresh and given the
previous cycle's hint exactly as alkit/loop.py does, and the plain recipe (Linear-ReLU-Linear,
100 full-batch Adam steps, learner_parity.plain_mlp) fitted on the same labels, interleaved.

CPU seconds of this thread (time.thread_time), torch and BLAS on one thread, one process.

    python benchmarks/fit_time_cycle.py --data digits,fashion,reviews --seeds 0-2 \
        --out benchmarks/results/fit_time_cycle.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

from alkit.models.backbone import pool_input_spec
from alkit.models.capacity import CapacityHint
from alkit.registry import make_learner
from learner_parity import load_set, plain_mlp, standardise


def replay(name: str, learners: list[str], seeds: list[int], start: int, stop: int, batch: int) -> pl.DataFrame:
    """One row per (seed, cycle, learner): CPU seconds of the fit, whether it chose its capacity."""
    d = load_set(name)
    spec = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
    Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
    C = len(d["classes"])
    rows = []
    for seed in seeds:
        order = np.random.default_rng(seed).permutation(len(Xp))
        hints: dict[str, CapacityHint | None] = {s: None for s in learners}
        for N in range(start, stop + 1, batch):
            idx = order[:N]
            yl = d["y_pool"][idx]
            t0 = time.thread_time()
            plain_mlp(Xp[idx], yl, Xt[:1], d["y_test"][:1], C, seed)
            rows.append({"data": name, "seed": seed, "N": N, "learner": "plain-mlp",
                         "fit_s": time.thread_time() - t0, "chose": False})
            for scorer in learners:
                learner = make_learner(scorer, d["task"], C or None, input=spec)
                learner.capacity_hint = hints[scorer]  # what the loop reads from the last cycle's signals
                t0 = time.thread_time()
                report = learner.fit(d["X_pool"][idx], yl, seed=seed) or {}
                t = time.thread_time() - t0
                chose = any(k.startswith("cv_nll_") for k in report)
                # the loop keeps the latest recorded choice: a fit that reports none leaves it in place
                hints[scorer] = CapacityHint.from_report(report) or hints[scorer]
                rows.append({"data": name, "seed": seed, "N": N, "learner": scorer, "fit_s": t, "chose": chose})
        print(name, seed, flush=True)
    return pl.DataFrame(rows)


def table(df: pl.DataFrame) -> list[str]:
    lines = []
    for name in df["data"].unique(maintain_order=True).to_list():
        sub = df.filter(pl.col("data") == name)
        plain = sub.filter(pl.col("learner") == "plain-mlp")["fit_s"].mean()
        n_cycles = sub.filter(pl.col("learner") == "plain-mlp").group_by("N").len().height
        lines += [f"### {name} ({n_cycles} cycles, N = {sub['N'].min()}..{sub['N'].max()})", "",
                  "| learner | CPU s / cycle | x plain | x plain, worst N | cycles that chose the capacity | "
                  "CPU s / cycle without them |",
                  "|---|---|---|---|---|---|"]
        plain_at = dict(sub.filter(pl.col("learner") == "plain-mlp").group_by("N").agg(pl.col("fit_s").mean()).iter_rows())
        for learner in sub["learner"].unique(maintain_order=True).to_list():
            part = sub.filter(pl.col("learner") == learner)
            chose = part.filter(pl.col("chose"))
            rest = part.filter(~pl.col("chose"))
            n_seeds = part["seed"].n_unique()
            by_n = part.group_by("N").agg(pl.col("fit_s").mean())
            worst_n, worst = max(((n, t / plain_at[n]) for n, t in by_n.iter_rows()), key=lambda r: r[1])
            lines.append(f"| {learner} | {part['fit_s'].mean():.3f} | {part['fit_s'].mean() / plain:.2f} | "
                         f"{worst:.2f} (N={worst_n}) | {chose.height / n_seeds:.0f} per run | {rest['fit_s'].mean():.3f} |")
        lines.append("")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="digits,fashion,reviews")
    ap.add_argument("--learners", default="vbll")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--start", type=int, default=20)
    ap.add_argument("--stop", type=int, default=300)
    ap.add_argument("--batch", type=int, default=10)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    lo, _, hi = args.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    torch.set_num_threads(1)
    with threadpool_limits(1):
        df = pl.concat([replay(n, args.learners.split(","), seeds, args.start, args.stop, args.batch)
                        for n in args.data.split(",")])
    cmd = "python benchmarks/fit_time_cycle.py " + " ".join(sys.argv[1:])
    text = "\n".join([f"Command: `{cmd}`", "", *table(df)])
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
        df.write_csv(args.out.with_suffix(".csv"))


if __name__ == "__main__":
    main()
