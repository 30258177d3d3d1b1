"""Label efficiency of the VBLL epistemic strategy against random, through the real loop.

Arms (each one ``ActiveLoop.run`` per seed in a fresh hidden-label project):
- random            : uniform batches, plain MLP (the toolkit's baseline preset);
- random + vbll     : uniform batches, VBLL learner (isolates the effect of *selection*);
- epistemic (vbll)  : the headline preset: cold-start strata, then greedy batch mutual
                      information on the VBLL posterior over the top candidates.
Datasets: digits (1797 x 64, 30 % test) and a fixed 8000-image subset of Fashion-MNIST
(784 pixels / 255, 25 % test), from the Debian package at /usr/share/datasets/fashion-mnist.

    PYTHONPATH=. .venv/bin/python benchmarks/vbll_label_efficiency.py --dataset digits --seeds 0 1 2 3 4
"""

from __future__ import annotations

import argparse
import gzip
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch

from alkit.config import load_project
from alkit.demo import write_digits_csv
from alkit.loop import ActiveLoop, RunRequest
from alkit.plots import summary_table, to_markdown
from alkit.pools.ingest import InitOptions, init_project
from alkit.report import cycles_frame

FASHION = Path("/usr/share/datasets/fashion-mnist")


def write_fashion_csv(path: Path, n: int = 8000) -> Path:
    with gzip.open(FASHION / "train-images-idx3-ubyte.gz") as f:
        X = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 784)
    with gzip.open(FASHION / "train-labels-idx1-ubyte.gz") as f:
        y = np.frombuffer(f.read(), np.uint8, offset=8)
    idx = np.random.default_rng(0).choice(len(y), n, replace=False)
    df = pl.DataFrame({"id": [f"f{i:05d}" for i in idx]})
    df = df.hstack(pl.DataFrame((X[idx] / 255.0).astype(np.float32), schema=[f"px{j}" for j in range(784)]))
    df.with_columns(pl.Series("label", y[idx].astype(np.int64))).write_csv(path)
    return path


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dataset", choices=["digits", "fashion"], default="digits")
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--batch", type=int, default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--arms", nargs="+", default=["random", "random-vbll", "epistemic"])
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    budget = args.budget or (200 if args.dataset == "digits" else 400)
    batch = args.batch or (20 if args.dataset == "digits" else 40)
    work = Path(tempfile.mkdtemp(prefix=f"alkit-le-{args.dataset}-"))
    try:
        if args.dataset == "digits":
            data, test_frac = write_digits_csv(work / "digits.csv"), 0.3
        else:
            data, test_frac = write_fashion_csv(work / "fashion.csv"), 0.25
        project = work / "project"
        init_project(data, project, InitOptions(id_col="id", label_col="label", task="classification",
                                                test_frac=test_frac, seed=0, hide_labels=True, progress=False))
        loop = ActiveLoop(load_project(project))
        t0 = time.time()
        for arm in args.arms:
            strategy, scorer = {"random": ("random", None), "random-vbll": ("random", "vbll"),
                                "epistemic": ("epistemic", "vbll")}[arm]
            for seed in args.seeds:
                loop.run(RunRequest(strategy=strategy, budget=budget, batch_size=batch, seed=seed, scorer=scorer))
                print(f"{arm} seed {seed} done ({time.time() - t0:.0f}s)", flush=True)
        df = cycles_frame(loop.store)
        at = [budget // 4, budget // 2, budget]
        table = summary_table(df, "accuracy", at=at, target=None)
        print(f"\n### {args.dataset}: test accuracy, budget {budget}, batch {batch}, seeds {args.seeds}"
              f" ({time.time() - t0:.0f}s)\n")
        print(to_markdown(table))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
