"""Shared fixtures: small real data (scikit-learn digits) and ready-made projects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from sklearn.datasets import load_digits

torch.set_num_threads(1)

FAST_TRAIN = {"max_epochs": 30, "min_steps": 60, "patience": 5}


def digits_frame(n: int = 400, seed: int = 0) -> pl.DataFrame:
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(y))[:n]
    df = pl.DataFrame({"id": [f"d{i:04d}" for i in idx]})
    df = df.hstack(pl.DataFrame(X[idx].astype(np.float32), schema=[f"px{j}" for j in range(64)]))
    return df.with_columns(pl.Series("label", y[idx].astype(np.int64)))


@pytest.fixture
def digits_csv(tmp_path: Path) -> Path:
    path = tmp_path / "digits.csv"
    digits_frame().write_csv(path)
    return path


@pytest.fixture
def digits_project(tmp_path: Path, digits_csv: Path) -> Path:
    from alkit.pools.ingest import InitOptions, init_project

    root = tmp_path / "proj"
    init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True, test_frac=0.25))
    return root
