"""The output scale of a user `--backbone` (BackboneConfig.module_norm): test accuracy and NLL of
learners on four user-style networks, their output as written (module_norm 0) against scaled at
initialisation to a mean feature norm, at 20 / 50 / 100 / 300 random labels.

Why: a network in PyTorch's default initialisation ending in Linear + ReLU gives feature norms
near 0.6 where alkit's own backbones give 4-7, and VBLL on it stayed near-uniform
(benchmarks/results/user_backbone_scale.md).  Development sets only choose the default
(label_efficiency_dev/recheck_rule.md, "Backbone rule"); digits (8 x 8 images) reports it.

    ALKIT_THREADS=1 PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/user_backbone_norm.py \\
        --data mnist8_dev,fashion8_dev --norms 0,5,half_rms --seeds 0,1,2 --out FILE
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

import numpy as np
import polars as pl
import torch
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from threadpoolctl import threadpool_limits
from torch import nn

from alkit.metrics import classification_metrics
from alkit.query import pool_learner

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "own_model"))
from mynets import digits_cnn  # noqa: E402  (the own_model example's network, as users write it)
from user_backbone_scale import _Scale as _Times  # noqa: E402  (benchmarks/: output times a constant)


def cnn_relu(shape):  # noqa: ANN001, ANN201 - backbone functions as alkit calls them
    """The own_model example's CNN: two convolutions, max-pool, Linear(., 64) + ReLU."""
    return digits_cnn(shape)


def cnn_gap(shape):  # noqa: ANN001, ANN201
    """ResNet-style: convolutions with batch norm, global average pooling, 64 features."""
    c = shape[0]
    return nn.Sequential(nn.Conv2d(c, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.Conv2d(32, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten())


def mlp_linear(shape):  # noqa: ANN001, ANN201
    """An MLP on the flattened pixels ending in a Linear layer (no activation), 32 features."""
    f = int(np.prod(shape))
    return nn.Sequential(nn.Flatten(), nn.Linear(f, 256), nn.ReLU(), nn.Linear(256, 32))


def mlp_large(shape):  # noqa: ANN001, ANN201
    """The same MLP with its output multiplied by 20: features far larger than alkit's own."""
    return nn.Sequential(mlp_linear(shape), _Times(20.0))


NETWORKS = ("cnn_relu", "cnn_gap", "mlp_linear", "mlp_large")


def load(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_pool, y_pool, X_test, y_test) of an 8 x 8 image set: a development set of
    benchmarks/al_data.py, or digits (report) split as the label-efficiency protocol splits it."""
    if name == "digits":
        X, y = load_digits(return_X_y=True)
        Xp, Xt, yp, yt = train_test_split(X.astype(np.float32), y, test_size=0.3, stratify=y, random_state=0)
        return Xp, yp, Xt, yt
    df = pl.read_parquet(HERE / "_work" / "data" / f"{name}.parquet")
    cols = [c for c in df.columns if c not in ("id", "label", "split")]
    pool, test = df.filter(pl.col("split") == "pool"), df.filter(pl.col("split") == "test")
    classes = {c: i for i, c in enumerate(sorted(df["label"].unique().to_list()))}
    enc = lambda d: np.array([classes[v] for v in d["label"].to_list()])  # noqa: E731
    return (pool.select(cols).to_numpy().astype(np.float32), enc(pool),
            test.select(cols).to_numpy().astype(np.float32), enc(test))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="mnist8_dev,fashion8_dev")
    ap.add_argument("--norms", default="0,5", help="module_norm values; 0 = the network's own scale")
    ap.add_argument("--networks", default=",".join(NETWORKS))
    ap.add_argument("--scorers", default="vbll,none")
    ap.add_argument("--labels", default="20,50,100,300")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.data.split(","):
        Xp, yp, Xt, yt = load(name)
        k = int(max(yp.max(), yt.max())) + 1
        for net, scorer, norm, seed in itertools.product(args.networks.split(","), args.scorers.split(","),
                                                        [float(v) for v in args.norms.split(",")],
                                                        [int(s) for s in args.seeds.split(",")]):
            order = np.random.default_rng(seed).permutation(len(yp))
            for n in (int(v) for v in args.labels.split(",")):
                learner = pool_learner(Xp, "classification", k, scorer=scorer, image_shape=(1, 8, 8),
                                       module=f"user_backbone_norm:{net}", module_norm=norm)
                with threadpool_limits(1):
                    learner.fit(Xp[order[:n]], yp[order[:n]], seed=seed)
                    pred = learner.predict(Xt)
                m = classification_metrics(pred.probs_n_C.numpy(), yt)
                rows.append(dict(data=name, network=net, scorer=scorer, norm=norm, seed=seed, n=n,
                                 accuracy=m["accuracy"], nll=m["nll"],
                                 feature_norm=float(pred.embedding_n_d.norm(dim=1).mean())))
                print(rows[-1], flush=True)
    df = pl.DataFrame(rows)
    by = df.group_by(["data", "network", "scorer", "norm", "n"]).agg(
        pl.col("accuracy").mean(), pl.col("nll").mean(), pl.col("feature_norm").mean()).sort(
        ["data", "network", "scorer", "n", "norm"])
    lines = ["| data | network | scorer | labels | norm | accuracy | NLL | trained feature norm |", "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['data']} | {r['network']} | {r['scorer']} | {r['n']} | {r['norm']:g} | {r['accuracy']:.3f} | "
              f"{r['nll']:.3f} | {r['feature_norm']:.2f} |" for r in by.iter_rows(named=True)]
    summ = df.group_by(["scorer", "norm"]).agg(pl.col("accuracy").mean(), pl.col("nll").mean()).sort(["scorer", "norm"])
    lines += ["", "Mean over data sets, networks, label counts and seeds:", "",
              "| scorer | norm | accuracy | NLL |", "|---|---|---|---|"]
    lines += [f"| {r['scorer']} | {r['norm']:g} | {r['accuracy']:.4f} | {r['nll']:.4f} |" for r in summ.iter_rows(named=True)]
    per = df.group_by(["data", "network", "scorer", "norm"]).agg(pl.col("accuracy").mean(), pl.col("nll").mean()).sort(
        ["data", "network", "scorer", "norm"])
    lines += ["", "Per data set and network (mean over label counts and seeds):", "",
              "| data | network | scorer | norm | accuracy | NLL |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['data']} | {r['network']} | {r['scorer']} | {r['norm']:g} | {r['accuracy']:.4f} | {r['nll']:.4f} |"
              for r in per.iter_rows(named=True)]
    text = (f"Command: `ALKIT_THREADS=1 PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/user_backbone_norm.py "
            f"--data {args.data} --norms {args.norms} --networks {args.networks} --scorers {args.scorers} "
            f"--labels {args.labels} --seeds {args.seeds}`\n\n" + "\n".join(lines) + "\n")
    if args.out:
        args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
