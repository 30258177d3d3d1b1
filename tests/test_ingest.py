"""`alkit init` from CSV/Parquet: the happy paths and every bad input (named, nothing written)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from alkit.config import load_project
from alkit.pools.features import FeatureReader
from alkit.pools.ingest import InitOptions, InputError, init_project
from alkit.pools.store import Store

from conftest import digits_frame

OPTS = dict(id_col="id", label_col="label")


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_csv_hidden_labels(tmp_path: Path, digits_csv: Path) -> None:
    root = tmp_path / "p"
    cfg = init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True, test_frac=0.25))
    assert cfg.task == "classification" and cfg.classes == [str(i) for i in range(10)]
    proj = load_project(root)
    store = Store(proj.store_url)
    assert store.counts() == {"pool:unlabeled": 300, "test:unlabeled": 100}
    assert store.labeled_set(None)[0].size == 0  # nothing visible to the learner
    X = FeatureReader(proj.features_path).take(np.arange(400))
    src = digits_frame().select([f"px{j}" for j in range(64)]).to_numpy()
    assert np.allclose(X, src)
    names = {p.name for p in root.iterdir()} - {"alkit.db-wal", "alkit.db-shm"}
    assert names == {"alkit.db", "alkit.toml", "features.parquet", "payload.parquet"}


def test_parquet_list_column_and_regression(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)
    labels = [None if i < 20 else float(v) for i, v in enumerate(y)]
    df = pl.DataFrame({"k": list(range(50)), "vec": X.tolist(), "y": labels, "text": [f"t{i}" for i in range(50)]})
    df.write_parquet(tmp_path / "d.parquet")
    cfg = init_project(tmp_path / "d.parquet", tmp_path / "p",
                       InitOptions(id_col="k", label_col="y", feature_col="vec", initial_labeled=5))
    assert cfg.task == "regression" and cfg.n_features == 3
    assert "text" in cfg.payload_cols and "vec" not in cfg.payload_cols
    store = Store(load_project(tmp_path / "p").store_url)
    assert store.counts() == {"pool:unlabeled": 20, "test:unlabeled": 25, "pool:labeled": 5}
    keys, values = store.labeled_set(None)
    assert len(keys) == 5 and all(abs(float(v) - y[k]) < 1e-9 for k, v in zip(keys, values))


def _bad(tmp_path: Path, df: pl.DataFrame | None, match: str, *, raw: str | None = None, **kw: object) -> None:
    path = tmp_path / "bad.csv"
    if raw is not None:
        path.write_text(raw)
    else:
        df.write_csv(path)
    root = tmp_path / "p"
    root.mkdir(exist_ok=True)
    before = _listing(root)
    opts = {**OPTS, "hide_labels": True, **kw}
    with pytest.raises(InputError, match=match):
        init_project(path, root, InitOptions(**opts))
    assert _listing(root) == before, "a failed init must leave nothing behind"


def test_bad_inputs(tmp_path: Path) -> None:
    df = digits_frame(30)
    _bad(tmp_path, df.drop("id"), "id column 'id' not found")
    _bad(tmp_path, df, "label column 'nope' not found", label_col="nope")
    _bad(tmp_path, df.with_columns(pl.lit("same").alias("id")), "duplicate ids")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("px3") > 5).then(None).otherwise(pl.col("id")).alias("id")), "missing ids")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("id") == df["id"][3]).then(float("nan")).otherwise(pl.col("px5")).alias("px5")),
         r"NaN or infinite feature values in px5")
    _bad(tmp_path, df.with_columns(pl.lit(float("inf")).alias("px7")), r"NaN or infinite.*px7")
    _bad(tmp_path, df.with_columns(pl.lit("abc").alias("px2")), "non-numeric feature columns: px2")
    _bad(tmp_path, df, "feature columns not found: zz", features=["px1", "zz"])
    _bad(tmp_path, None, "no rows", raw="id,px1,label\n")
    _bad(tmp_path, None, "cannot read|no rows", raw="")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("px3") > 5).then(None).otherwise(pl.col("label")).alias("label")),
         "needs a label for every row")
    _bad(tmp_path, df.with_columns(pl.lit(1).alias("label")), "at least 2 classes")
    _bad(tmp_path, df.with_columns(pl.lit("x").alias("label")), "regression labels must be numbers", task="regression")
    _bad(tmp_path, df, r"test-frac must be in \[0, 1\)", test_frac=1.5)
    with pytest.raises(InputError, match="does not exist"):
        init_project(tmp_path / "missing.csv", tmp_path / "q", InitOptions(**OPTS))


def test_existing_project_refused(tmp_path: Path, digits_csv: Path) -> None:
    root = tmp_path / "p"
    init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True))
    before = (root / "alkit.db").stat().st_size
    with pytest.raises(InputError, match="already holds a project"):
        init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True))
    assert (root / "alkit.db").stat().st_size == before
