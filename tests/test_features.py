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


def test_array_reader_gives_the_parquet_readers_batches_and_takes(tmp_path: Path) -> None:
    """The .npy reader (derived files: the image stem's outputs) yields the same (keys, rows)
    batches as the Parquet reader of the same features, masked or not, and the same takes;
    a file of another shape, or not an array, is refused by name."""
    import pytest

    from alkit.pools.features import ArrayFeatureReader, FeatureFileError, open_reader

    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 7)).astype(np.float32)
    write_features(tmp_path / "f.parquet", X)
    np.save(tmp_path / "f.npy", X)
    pq_reader, arr = open_reader(tmp_path / "f.parquet", 128), open_reader(tmp_path / "f.npy", 128, n_items=1000)
    assert isinstance(arr, ArrayFeatureReader) and (arr.n_items, arr.n_features) == (1000, 7)
    for mask in (None, rng.random(1000) < 0.3, np.zeros(1000, dtype=bool)):
        a, b = list(pq_reader.iter_chunks(mask)), list(arr.iter_chunks(mask))
        assert len(a) == len(b) and all(np.array_equal(ka, kb) and np.array_equal(xa, xb)
                                        for (ka, xa), (kb, xb) in zip(a, b))
    keys = np.concatenate([rng.permutation(1000)[:300], [5, 5]])
    assert np.array_equal(arr.take(keys), X[keys]) and arr.take(np.array([], dtype=np.int64)).shape == (0, 7)
    assert arr.take(keys).flags.writeable  # a copy, not a view of the mapped file
    with pytest.raises(KeyError):
        arr.take(np.array([1000]))
    with pytest.raises(FeatureFileError, match="holds 1000 items x 7 features"):
        ArrayFeatureReader(tmp_path / "f.npy", n_features=8)
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    with pytest.raises(FeatureFileError, match="bad.npy is not a readable alkit feature file"):
        ArrayFeatureReader(tmp_path / "bad.npy")
    np.save(tmp_path / "int.npy", np.zeros((3, 2), dtype=np.int64))
    with pytest.raises(FeatureFileError, match="float32"):
        ArrayFeatureReader(tmp_path / "int.npy")
