"""Features in Parquet, read in record-batch chunks so the pool never sits in memory whole.

Layout: one row per item in key order; column ``key`` (int64) and column ``x``, a fixed-size
list of float32 (the feature vector).  Keys are row positions, so a row is found without an index.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

ROW_GROUP = 65_536


def write_features(path: Path, X_n_f: np.ndarray) -> None:
    """Write features with keys 0..n-1, in row groups so chunked reads stay cheap."""
    X = np.ascontiguousarray(X_n_f, dtype=np.float32)
    n, f = X.shape
    schema = pa.schema([("key", pa.int64()), ("x", pa.list_(pa.float32(), f))])
    with pq.ParquetWriter(path, schema) as writer:
        for start in range(0, n, ROW_GROUP):
            block = X[start : start + ROW_GROUP]
            keys = pa.array(np.arange(start, start + len(block), dtype=np.int64))
            values = pa.FixedSizeListArray.from_arrays(pa.array(block.reshape(-1)), f)
            writer.write_table(pa.Table.from_arrays([keys, values], schema=schema))


class FeatureFileError(ValueError):
    """features.parquet cannot be read as alkit wrote it (overwritten, truncated, another table)."""


def _unreadable(path: Path | str, exc: BaseException) -> FeatureFileError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return FeatureFileError(f"{Path(path).name} is not a readable alkit feature file ({first}); "
                            "re-create the project with `alkit init`")


def open_features(path: Path | str) -> pq.ParquetFile:
    """The feature file for one streaming pass.  ``pre_buffer=False``: with pyarrow's default
    (True) the reader caches every range it has read until the pass ends, so a pass over the pool
    holds the whole decompressed file (memory grows with the pool, 2M x 64 -> +550 MB)."""
    return pq.ParquetFile(path, pre_buffer=False)


def iter_masked_batches(
    file: pq.ParquetFile, chunk_rows: int, mask_n: np.ndarray | None, row_groups: list[int] | None = None
) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(keys_m, X_m_f) per record batch of ``chunk_rows`` rows, keeping rows where mask_n[key]:
    the one Parquet reader of the package (the loop's passes and both engines).  With
    ``row_groups`` starting at a multiple of chunk_rows the batches are exactly the whole-file
    batches of that range, so a Ray task sees the chunks a local pass would."""
    n_features = file.schema_arrow.field("x").type.list_size
    batches = file.iter_batches(batch_size=chunk_rows, columns=["key", "x"], row_groups=row_groups)
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (OSError, pa.ArrowException) as exc:  # corrupt pages surface only when read
            raise _unreadable("features.parquet", exc) from None
        keys = batch.column(0).to_numpy()
        if mask_n is not None:
            sel = mask_n[keys]
            if not sel.any():
                continue
        X = batch.column(1).values.to_numpy(zero_copy_only=False).reshape(-1, n_features)
        if mask_n is not None and not sel.all():
            keys, X = keys[sel], X[sel]
        yield keys, X


class FeatureReader:
    """Chunked access to a features.parquet file."""

    def __init__(self, path: Path, chunk_rows: int = 16_384) -> None:
        self.path = Path(path)
        try:
            self.file = open_features(self.path)
            self.n_items = self.file.metadata.num_rows
            x_type = self.file.schema_arrow.field("x").type
            self.n_features = x_type.list_size
            if self.file.schema_arrow.names[:2] != ["key", "x"] or not isinstance(self.n_features, int):
                raise ValueError("columns key and x (a fixed-size list) expected")
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - any reader failure means a damaged file
            raise _unreadable(self.path, exc) from None
        self.chunk_rows = chunk_rows

    def iter_chunks(self, mask_n: np.ndarray | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (keys_m, X_m_f) per record batch, only rows where ``mask_n[key]`` is True."""
        return iter_masked_batches(self.file, self.chunk_rows, mask_n)

    def take(self, keys: np.ndarray) -> np.ndarray:
        """Rows for ``keys`` in the given order; streams the file once."""
        keys = np.asarray(keys, dtype=np.int64)
        out = np.empty((len(keys), self.n_features), dtype=np.float32)
        if len(keys) == 0:
            return out
        if keys.min() < 0 or keys.max() >= self.n_items:
            raise KeyError("item key out of range of the feature file")
        uniq, inverse = np.unique(keys, return_inverse=True)  # a key asked twice gets its row twice
        mask = np.zeros(self.n_items, dtype=bool)
        mask[uniq] = True
        slot = np.empty(self.n_items, dtype=np.int64)  # key -> row of ``rows``: one gather per chunk
        slot[uniq] = np.arange(len(uniq))
        rows = np.empty((len(uniq), self.n_features), dtype=np.float32)
        for chunk_keys, X in self.iter_chunks(mask):
            rows[slot[chunk_keys]] = X
        out[:] = rows[inverse]
        return out
