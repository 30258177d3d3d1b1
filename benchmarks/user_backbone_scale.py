"""VBLL on a user `--backbone` whose features are small: the `own_model` example's CNN as written,
and the same CNN with its output multiplied by 4 and by 12 (a wrapper on the user's side), on
digits declared 8 x 8 images, 100 and 300 labels, seed 0: test accuracy, NLL, ECE, mean top
probability and mean feature norm.

Why: the example's VBLL-on-CNN runs reached 0.94 accuracy with NLL 1.7 (near-flat probabilities),
and the question is whether the features' scale is the cause (open: no default changed).

    ALKIT_THREADS=1 PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/user_backbone_scale.py \
        --out benchmarks/results/user_backbone_scale.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn

from alkit.metrics import classification_metrics
from alkit.query import pool_learner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples" / "own_model"))
from mynets import digits_cnn  # noqa: E402


class _Scale(nn.Module):
    def __init__(self, c: float) -> None:
        super().__init__()
        self.c = c

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.c


def cnn_x4(shape):  # noqa: ANN001, ANN201 - backbone functions as alkit calls them
    return nn.Sequential(digits_cnn(shape), _Scale(4.0))


def cnn_x12(shape):  # noqa: ANN001, ANN201
    return nn.Sequential(digits_cnn(shape), _Scale(12.0))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    idx = np.random.default_rng(0).permutation(len(y))
    tr, te = idx[:1200], idx[1200:]
    lines = ["| labels | backbone | accuracy | NLL | ECE | mean top probability | mean feature norm |",
             "|---|---|---|---|---|---|---|"]
    for n in (100, 300):
        for ref in ("mynets:digits_cnn", "user_backbone_scale:cnn_x4", "user_backbone_scale:cnn_x12", None):
            opts = {"module": ref} if ref else {}
            learner = pool_learner(X[tr], "classification", 10, image_shape=(1, 8, 8), **opts)
            learner.fit(X[tr[:n]], y[tr[:n]], seed=0)
            pred = learner.predict(X[te])
            probs = pred.probs_n_C.numpy()
            m = classification_metrics(probs, y[te])
            lines.append(f"| {n} | {ref or 'alkit image backbone'} | {m['accuracy']:.3f} | {m['nll']:.3f} | "
                         f"{m['ece']:.3f} | {probs.max(1).mean():.3f} | {float(pred.embedding_n_d.norm(dim=1).mean()):.2f} |")
            print(lines[-1], flush=True)
    if args.out:
        args.out.write_text("# VBLL on a user backbone with small features\n\nCommand: `ALKIT_THREADS=1 PYTHONPATH=.:benchmarks "
                            ".venv/bin/python benchmarks/user_backbone_scale.py --out "
                            "benchmarks/results/user_backbone_scale.md` (digits as 8 x 8 images, 1,200 pool / 597 test, "
                            "seed 0)\n\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
