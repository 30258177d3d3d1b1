"""One table, four file formats: `alkit init` reads CSV, TSV, JSON Lines and Parquet into the same
project (property-based, hypothesis): the same features in the same order, the same ids (text with
commas, quotes and leading zeros kept as written), the same split, and with --impute the same fill,
which is the median of each gappy column over the pool rows alone."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from alkit.config import load_project
from alkit.pools.features import FeatureReader
from alkit.pools.ingest import InitOptions, InputError, init_project
from alkit.pools.store import Store

FORMATS = {
    "csv": lambda df, p: df.write_csv(p),
    "tsv": lambda df, p: df.write_csv(p, separator="\t"),
    "jsonl": lambda df, p: df.write_ndjson(p),
    "parquet": lambda df, p: df.write_parquet(p),
}
SETTINGS = settings(max_examples=int(os.environ.get("ALKIT_FUZZ_EXAMPLES", "60")) // 3, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

id_text = st.text(alphabet="abc019,;'\" é-_", min_size=1, max_size=8).filter(lambda s: s.strip() == s)


@st.composite
def tables(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(8, 30))
    ids = draw(st.lists(id_text, min_size=n, max_size=n, unique=True))
    quarter = st.integers(-400, 400).map(lambda v: v / 4)  # exact in every format
    a = draw(st.lists(st.one_of(st.none(), quarter), min_size=n, max_size=n))
    a[draw(st.integers(0, n - 1))] = 1.25  # never all missing
    b = draw(st.lists(quarter, min_size=n, max_size=n))
    labels = ["x" if i % 2 else "y" for i in range(n)]
    return pl.DataFrame({"id": ids, "a": a, "b": b, "label": labels},
                        schema={"id": pl.Utf8, "a": pl.Float64, "b": pl.Float64, "label": pl.Utf8})


@SETTINGS
@given(df=tables())
def test_every_format_gives_the_same_project(tmp_path_factory, df: pl.DataFrame) -> None:  # noqa: ANN001
    tmp = tmp_path_factory.mktemp("formats")
    seen = {}
    for fmt, write in FORMATS.items():
        write(df, tmp / f"d.{fmt}")
        try:
            cfg = init_project(tmp / f"d.{fmt}", tmp / fmt, InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                        impute=True, test_frac=0.25, progress=False))
        except InputError as exc:  # every value of 'a' in the test split: refused alike by every format
            assert "feature column 'a' has no value in the pool" in str(exc)
            seen[fmt] = str(exc)
            continue
        project = load_project(tmp / fmt)
        store = Store(project.store_url)
        ids = store.ids_for_keys(list(range(df.height)))
        pool = np.zeros(df.height, dtype=bool)
        pool[store.pool_keys()] = True
        X = FeatureReader(project.features_path).take(np.arange(df.height))
        seen[fmt] = (cfg.feature_cols, cfg.imputed, [ids[k] for k in range(df.height)], pool.tolist(), X)
        store.dispose()
    first = seen["csv"]
    if isinstance(first, str):
        assert all(got == first for got in seen.values())
        return
    for fmt, got in seen.items():
        assert got[:4] == first[:4], fmt
        assert np.array_equal(got[4], first[4]), fmt
    cols, imputed, ids, pool, X = first
    assert ids == df["id"].to_list()
    a = df["a"].to_numpy()  # None -> nan
    gap = np.isnan(a)
    assert imputed == (["a"] if gap.any() else [])
    if gap.any():
        assert cols == ["a", "a=missing", "b"]
        in_pool = a[np.array(pool) & ~gap]
        assert np.array_equal(X[gap, 0], np.full(gap.sum(), np.median(in_pool), dtype=np.float32))
        assert np.array_equal(X[:, 1], gap.astype(np.float32))
    else:
        assert cols == ["a", "b"]
