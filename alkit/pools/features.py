"""Features in Parquet, read in record-batch chunks so the pool never sits in memory whole.

Layout: one row per item in key order; column ``key`` (int64) and column ``x``, a fixed-size
list of float32 (the feature vector).  Keys are row positions, so a row is found without an index.
"""

from __future__ import annotations

import hashlib

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from alkit.errors import keep_labels_advice

ROW_GROUP = 65_536
# A digest of a features.parquet's values, kept in its metadata and in the store init made with it (``features_id``):
# a file of the same shape from another project, or the same data made again in another row order, passed the shape
# check, and every item was fitted and scored on another row's features (a hostile-filesystem check)
FILE_ID_KEY = b"alkit_values_digest"


class FeatureWriter:
    """Writes features.parquet from blocks of rows as they come (keys 0..n-1 in the order given),
    so a file larger than memory can be written; rows are grouped into ROW_GROUP-row groups
    whatever the block sizes, which keeps chunked reads cheap."""

    def __init__(self, path: Path, n_features: int) -> None:
        self.n_features = n_features
        self.schema = pa.schema([("key", pa.int64()), ("x", pa.list_(pa.float32(), n_features))])
        self.writer = pq.ParquetWriter(path, self.schema)
        self.n_rows = 0
        self._digest = hashlib.blake2b(digest_size=16)  # of the values in key order (FILE_ID_KEY)
        self._pending: list[np.ndarray] = []  # blocks not yet written, fewer than ROW_GROUP rows in all
        self._n_pending = 0

    def write(self, X_b_f: np.ndarray) -> None:
        X = np.ascontiguousarray(X_b_f, dtype=np.float32)
        if X.ndim != 2 or X.shape[1] != self.n_features:
            raise ValueError(f"expected blocks of {self.n_features} features, got shape {X.shape}")
        self._pending.append(X)
        self._n_pending += len(X)
        if self._n_pending >= ROW_GROUP:
            block = np.concatenate(self._pending) if len(self._pending) > 1 else self._pending[0]
            full = len(block) - len(block) % ROW_GROUP
            for start in range(0, full, ROW_GROUP):
                self._write_group(block[start : start + ROW_GROUP])
            self._pending = [block[full:]] if full < len(block) else []
            self._n_pending = len(block) - full

    def _write_group(self, X_g_f: np.ndarray) -> None:
        keys = pa.array(np.arange(self.n_rows, self.n_rows + len(X_g_f), dtype=np.int64))
        values = pa.FixedSizeListArray.from_arrays(pa.array(X_g_f.reshape(-1)), self.n_features)
        self._digest.update(np.ascontiguousarray(X_g_f).tobytes())
        self.writer.write_table(pa.Table.from_arrays([keys, values], schema=self.schema))
        self.n_rows += len(X_g_f)

    def close(self) -> None:
        """Write the last, partial row group and finish the file."""
        if self._n_pending:
            self._write_group(np.concatenate(self._pending))
            self._pending, self._n_pending = [], 0
        self.writer.add_key_value_metadata({FILE_ID_KEY: self._digest.hexdigest().encode()})
        self.writer.close()

    def __enter__(self) -> FeatureWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_features(path: Path, X_n_f: np.ndarray) -> None:
    """Write features with keys 0..n-1, in row groups so chunked reads stay cheap."""
    with FeatureWriter(path, X_n_f.shape[1]) as writer:
        for start in range(0, len(X_n_f), ROW_GROUP):
            writer.write(X_n_f[start : start + ROW_GROUP])


class FeatureFileError(ValueError):
    """features.parquet cannot be read as alkit wrote it (overwritten, truncated, another table)."""


def _unreadable(path: Path | str, exc: BaseException) -> FeatureFileError:
    first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return FeatureFileError(f"{Path(path).name} is not a readable alkit feature file ({first[:200]}): restore it, "
                            f"or {keep_labels_advice()}")


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
    """Chunked access to a features.parquet file.  ``n_items`` / ``n_features``: what the project
    recorded; a file of another shape (replaced by another project's, or cut) is refused here,
    before a run fits on the wrong columns or reads keys past the end."""

    def __init__(self, path: Path, chunk_rows: int = 16_384, *, n_items: int | None = None,
                 n_features: int | None = None) -> None:
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
        _check_shape(self, n_items, n_features)
        self.file_id = ((self.file.metadata.metadata or {}).get(FILE_ID_KEY) or b"").decode() or None
        self.chunk_rows = chunk_rows

    def iter_chunks(self, mask_n: np.ndarray | None = None,
                    chunk_rows: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Yield (keys_m, X_m_f) per record batch of ``chunk_rows`` (default the reader's) rows,
        only rows where ``mask_n[key]`` is True."""
        return iter_masked_batches(self.file, chunk_rows or self.chunk_rows, mask_n)

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


def _check_shape(reader: "FeatureReader | ArrayFeatureReader", n_items: int | None, n_features: int | None) -> None:
    """Refuse a feature file of another shape than the project recorded."""
    if (n_items is not None and reader.n_items != n_items) or (n_features is not None and reader.n_features != n_features):
        want = (f"{n_items if n_items is not None else reader.n_items} items x "
                f"{n_features if n_features is not None else reader.n_features} features")
        raise FeatureFileError(f"{reader.path.name} holds {reader.n_items} items x {reader.n_features} features, but "
                               f"alkit.toml records {want}: it is not this project's file; restore it or "
                               "re-create the project with `alkit init`")


class ArrayFeatureReader:
    """FeatureReader's interface over a derived feature file stored as a float32 ``.npy`` array
    (keys are row numbers), memory-mapped.  Why not Parquet: the image stem's outputs
    (alkit/stem_features.py) are dense floats that compress to nothing, and decoding them cost as
    much as computing them; a mapped array is read at memory speed, and ``take`` touches only the
    rows it is asked for."""

    def __init__(self, path: Path, chunk_rows: int = 16_384, *, n_items: int | None = None,
                 n_features: int | None = None) -> None:
        self.path = Path(path)
        try:
            self.array = np.load(self.path, mmap_mode="r", allow_pickle=False)
            if self.array.ndim != 2 or self.array.dtype != np.float32:
                raise ValueError(f"a 2-d float32 array expected, got {self.array.dtype} of shape {self.array.shape}")
        except FileNotFoundError:
            raise
        except Exception as exc:  # noqa: BLE001 - any reader failure means a damaged file
            raise _unreadable(self.path, exc) from None
        self.n_items, self.n_features = (int(v) for v in self.array.shape)
        _check_shape(self, n_items, n_features)
        self.chunk_rows = chunk_rows

    def iter_chunks(self, mask_n: np.ndarray | None = None,
                    chunk_rows: int | None = None) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(keys_m, X_m_f) per ``chunk_rows`` (default the reader's) rows, only rows where
        ``mask_n[key]`` is True (the batches FeatureReader.iter_chunks gives for the same rows)."""
        rows = chunk_rows or self.chunk_rows
        for start in range(0, self.n_items, rows):
            keys = np.arange(start, min(start + rows, self.n_items), dtype=np.int64)
            if mask_n is not None:
                keys = keys[mask_n[keys]]
                if len(keys) == 0:
                    continue
            yield keys, np.asarray(self.array[keys[0]:keys[-1] + 1][keys - keys[0]])  # a copy: fancy index

    def take(self, keys: np.ndarray) -> np.ndarray:
        """Rows for ``keys`` in the given order (a key asked twice gets its row twice)."""
        keys = np.asarray(keys, dtype=np.int64)
        if len(keys) and (keys.min() < 0 or keys.max() >= self.n_items):
            raise KeyError("item key out of range of the feature file")
        return np.asarray(self.array[keys]).reshape(len(keys), self.n_features)  # a copy: fancy index


def open_reader(path: Path, chunk_rows: int = 16_384, *, n_items: int | None = None,
                n_features: int | None = None) -> "FeatureReader | ArrayFeatureReader":
    """The reader for a feature file: ``.npy`` arrays (derived files) or alkit's Parquet layout."""
    cls = ArrayFeatureReader if Path(path).suffix == ".npy" else FeatureReader
    return cls(path, chunk_rows, n_items=n_items, n_features=n_features)
