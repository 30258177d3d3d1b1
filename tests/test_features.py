"""Parquet features: chunked reads with a mask, and ordered takes."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from alkit.pools.features import FeatureReader, write_features


def test_chunks_and_take(tmp_path: Path) -> None:
    X = np.random.default_rng(0).normal(size=(1000, 7)).astype(np.float32)
    write_features(tmp_path / "f.parquet", X)
    r = FeatureReader(tmp_path / "f.parquet", chunk_rows=128)
    assert (r.n_items, r.n_features) == (1000, 7)
    mask = np.zeros(1000, dtype=bool)
    mask[::3] = True
    got_keys, got_X = zip(*r.iter_chunks(mask))
    keys = np.concatenate(got_keys)
    assert np.array_equal(keys, np.arange(0, 1000, 3))
    assert np.array_equal(np.concatenate(got_X), X[keys])
    assert all(len(k) <= 128 for k in got_keys)
    order = np.array([999, 0, 512, 3])
    assert np.array_equal(r.take(order), X[order])
    assert r.take(np.array([], dtype=np.int64)).shape == (0, 7)
    shuffled = np.random.default_rng(1).permutation(1000)[:300]
    again = np.concatenate([shuffled, shuffled[:50]])  # a key asked twice gets its row both times
    assert np.array_equal(r.take(again), X[again])
