"""The mission's command past 1,000 labels, through the CLI on the full Fashion-MNIST files.

Why: the label-efficiency protocols stop at 300 labels, and the schedule past 1,000 labels
(alkit/models/train.py, schedule rules L1-L1c) was chosen and reported on 10,000-image sets through
the library.  This runs what a user types on the 60,000 training images as the pool and the 10,000
test images as the test split (`alkit init --split-col split --image-shape 28,28 --hide-labels`),
`alkit run --strategy S --initial 1000 --initial-selector random --batch-size 100 --budget B`, for
the `epistemic` preset and random picks, each with the default schedule and with `-o
train.lr_decay=0` (the constant rate before rule L1), and prints accuracy by label count and the
seconds of fitting and scoring per cycle as the cycles logged them.  Resumable (runs continue).

    ALKIT_THREADS=1 .venv/bin/python benchmarks/large_n_cli.py --seed 0 --budget 3000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from alkit.config import load_project  # noqa: E402
from alkit.datasets import FASHION_CLASSES, load_fashion_mnist  # noqa: E402
from alkit.loop import ActiveLoop  # noqa: E402
from alkit.report import cycles_frame  # noqa: E402

WORK = HERE / "_work" / "large_n_cli"
ALKIT = [str(Path(sys.executable).parent / "alkit")]  # the console script beside this Python


def data_file() -> Path:
    """Both Fashion-MNIST files in one Parquet file: 'pool' rows (train file), 'test' rows (test file)."""
    path = WORK / "fashion70k.parquet"
    if path.exists():
        return path
    parts = []
    for split, tag in (("train", "pool"), ("test", "test")):
        X, y = load_fashion_mnist(split)
        df = pl.DataFrame(X.reshape(len(X), -1).astype(np.float32), schema=[f"px{j}" for j in range(784)])
        parts.append(df.with_columns(pl.Series("id", [f"{split}{i}" for i in range(len(y))]),
                                     pl.Series("label", np.array(FASHION_CLASSES, dtype=object)[y].tolist()),
                                     pl.Series("split", [tag] * len(y))))
    WORK.mkdir(parents=True, exist_ok=True)
    pl.concat(parts).write_parquet(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=3000)
    ap.add_argument("--at", default="1100,1500,2000,2500,3000")
    a = ap.parse_args()
    project = WORK / "project"
    if not (project / "alkit.toml").exists():
        subprocess.run([*ALKIT, "init", str(data_file()), "-p", str(project), "--id-col", "id", "--label-col", "label",
                        "--split-col", "split", "--hide-labels", "--image-shape", "28,28"], check=True)
    for strategy in ("epistemic", "random"):
        for extra in ([], ["-o", "train.lr_decay=0"]):
            t0 = time.perf_counter()
            subprocess.run([*ALKIT, "run", "-p", str(project), "--strategy", strategy, "--budget", str(a.budget),
                            "--initial", "1000", "--initial-selector", "random", "--batch-size", "100",
                            "--seed", str(a.seed), *extra], check=True, stdout=subprocess.DEVNULL)
            print(f"{strategy} {' '.join(extra)}: {time.perf_counter() - t0:.0f} s wall", flush=True)
    proj = load_project(project)
    df = cycles_frame(ActiveLoop(proj).store, proj.config).filter(pl.col("seed") == a.seed)
    at = [int(x) for x in a.at.split(",")]
    lines = ["| run | " + " | ".join(f"accuracy@{n}" for n in at) + " | fit s / cycle | score s / cycle |",
             "|---|" + "---|" * (len(at) + 2)]
    for run, g in df.group_by("run", maintain_order=True):
        acc = dict(zip(g["n_labeled"].to_list(), g["accuracy"].to_list()))
        lines.append(f"| {run[0]} | " + " | ".join(f"{acc[n]:.4f}" if n in acc else "–" for n in at)
                     + f" | {g['fit_s'].mean():.2f} | {g['score_s'].mean():.2f} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
