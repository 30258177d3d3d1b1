"""Repeated-digits (the Repeated-MNIST protocol on scikit-learn digits): a duplicated pool.

Every pool item appears three times with small Gaussian noise (std 0.1 on 0-16 pixel values), so
a top-k scorer that ignores redundancy spends a batch on copies of the same few items.  Compared,
all with the same VBLL model and seeds: random, topk (epistemic score), diverse (greedy batch
mutual information) and badge.  Reports accuracy at fixed label counts, AULC, and labels to
reach a target accuracy (default: random's final mean).

    .venv/bin/python benchmarks/repeated_digits.py --seeds 3 --budget 200 --batch-size 20
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from sklearn.datasets import load_digits

from alkit.config import load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.plots import plot_learning_curves, summary_table, to_markdown
from alkit.pools.ingest import InitOptions, init_project
from alkit.report import cycles_frame


def write_repeated_digits(path: Path, copies: int = 3, noise: float = 0.1, seed: int = 0) -> Path:
    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(seed)
    rows_X, rows_y, ids = [], [], []
    for c in range(copies):
        rows_X.append(X + noise * rng.normal(size=X.shape))
        rows_y.append(y)
        ids += [f"d{i:04d}c{c}" for i in range(len(y))]
    Xr, yr = np.concatenate(rows_X), np.concatenate(rows_y)
    df = pl.DataFrame({"id": ids}).hstack(pl.DataFrame(Xr.astype(np.float32), schema=[f"px{j}" for j in range(64)]))
    df.with_columns(pl.Series("label", yr)).write_csv(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--batch-size", type=int, default=20)
    ap.add_argument("--strategies", default="random,topk,diverse,badge")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/repeated_digits.md"))
    ap.add_argument("--workdir", type=Path, default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    work = args.workdir or Path(tempfile.mkdtemp(prefix="repdigits-"))
    work.mkdir(parents=True, exist_ok=True)
    if not (work / "alkit.toml").exists():
        data = write_repeated_digits(work / "repeated_digits.csv")
        # the test split is held out before duplication matters: ids differ, copies may land in test
        init_project(data, work, InitOptions(id_col="id", label_col="label", task="classification",
                                             hide_labels=True, test_frac=0.2, seed=0))
    loop = ActiveLoop(load_project(work))
    t0 = time.perf_counter()
    for strategy in args.strategies.split(","):
        for seed in range(args.seeds):
            req = RunRequest(strategy=strategy, scorer="vbll", budget=args.budget, batch_size=args.batch_size,
                             seed=seed)
            loop.run(req)
            print(f"{strategy} seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    df = cycles_frame(loop.store)
    final = df.filter((pl.col("strategy").str.starts_with("random")) & (pl.col("n_labeled") == args.budget))
    target = float(final["accuracy"].mean())
    at = [args.budget // 4, args.budget // 2, args.budget]
    table = summary_table(df, "accuracy", at=at, target=target)
    png = args.out.with_suffix(".png")
    plot_learning_curves(df, "accuracy", png, title="repeated digits (3 noisy copies per item)")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        "# Repeated digits: a duplicated pool (3 noisy copies of each item)\n\n"
        f"Command: `.venv/bin/python benchmarks/repeated_digits.py --seeds {args.seeds} --budget {args.budget} "
        f"--batch-size {args.batch_size}` ({time.perf_counter() - t0:.0f} s on the shared 2-core machine).\n\n"
        f"Pool {int(loop.store.counts().get('pool:unlabeled', 0))} items (5,391 rows = 1,797 digits x 3, 20 % test), "
        f"same VBLL model for every strategy, {args.seeds} seeds (mean ± sample std). Target for labels-to-target: "
        f"random's final mean accuracy, {target:.3f}.\n\n" + to_markdown(table) + f"\n\nCurves: `{png.name}`.\n")
    print(args.out.read_text())


if __name__ == "__main__":
    main()
