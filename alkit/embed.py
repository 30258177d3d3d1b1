"""Raw text and images in: frozen-encoder features with a content-addressed cache.

Why a cache: encoding is the one expensive step of `alkit init` on raw data, and users re-run
init (new split, new project) on the same files.  Vectors are cached per encoder by the hash of
the text or of the image file's bytes, so a second init encodes nothing and a grown file encodes
only its new rows.  Everything is validated before the first item is encoded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

Kind = Literal["text", "image"]
CACHE_DIR_NAME = ".alkit-cache"


def _row_error(exc: ValueError, ids: Sequence[str], kind: str) -> ValueError:
    """Re-state an encoder's 'row i' error with the item id the user knows."""
    msg = str(exc)
    prefix = f"{kind} row "
    if msg.startswith(prefix):
        head, _, rest = msg[len(prefix):].partition(":")
        if head.isdigit() and int(head) < len(ids):
            return ValueError(f"{kind} of item {ids[int(head)]!r} (row {int(head) + 1}):{rest}")
    return ValueError(msg)


def _hashes(values: Sequence[str], kind: Kind) -> list[str]:
    out = []
    for v in values:
        h = hashlib.sha256(kind.encode())
        if kind == "text":
            h.update(v.encode("utf-8"))
        else:
            with open(v, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
        out.append(h.hexdigest())
    return out


def _cache_path(cache_dir: Path, kind: Kind) -> Path:
    return cache_dir / f"{kind}-{'minilm-l6-v2' if kind == 'text' else 'efficientnet-lite0'}.parquet"


def _read_cache(path: Path) -> dict[str, np.ndarray]:
    if not path.exists():
        return {}
    t = pq.read_table(path)
    d = t.schema.field("v").type.list_size
    vecs = t.column("v").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(-1, d)
    return dict(zip(t.column("h").to_pylist(), vecs))


def _write_cache(path: Path, cache: dict[str, np.ndarray]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    keys = list(cache)
    mat = np.stack([cache[k] for k in keys]).astype(np.float32)
    table = pa.table({"h": keys, "v": pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1)), mat.shape[1])})
    tmp = path.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, path)


def confine_paths(values: Sequence[object], ids: Sequence[str], base_dir: Path, *, allow_outside: bool) -> list[str]:
    """Image paths resolved against ``base_dir`` (symlinks and '..' included), each refused unless
    it lies inside that folder (or ``allow_outside``), before any file is opened: the message is
    the same whether or not the file exists, so it reveals nothing about the machine."""
    base = base_dir.resolve()
    out = []
    for i, v in enumerate(values):
        p = Path(str(v))
        full = (p if p.is_absolute() else base / p).resolve(strict=False)
        if not allow_outside and not full.is_relative_to(base):
            raise ValueError(f"image of item {ids[i]!r} (row {i + 1}): path {str(v)!r} is outside the data folder "
                             f"{base}; pass --allow-outside-paths to use it")
        out.append(str(full))
    return out


def embed_values(values: Sequence[object], ids: Sequence[str], kind: Kind, *, cache_dir: Path | None,
                 base_dir: Path | None = None, progress: bool = True,
                 allow_outside_paths: bool = False) -> tuple[np.ndarray, int]:
    """Encode a text or image-path column; returns (features (n, d), number actually encoded).

    Image paths are resolved against ``base_dir`` (the data file's folder) and must lie inside it
    unless ``allow_outside_paths`` (``confine_paths``).  Errors name the item.
    """
    from alkit import encoders

    if kind == "text":
        try:
            rows = encoders.validate_texts(["" if v is None else v for v in values])  # type: ignore[misc]
        except ValueError as exc:
            raise _row_error(exc, ids, "text") from None
        encode = lambda xs: encoders.encode_texts(xs, progress=progress)  # noqa: E731
    elif kind == "image":
        if any(v is None for v in values):
            i = next(i for i, v in enumerate(values) if v is None)
            raise ValueError(f"image of item {ids[i]!r} (row {i + 1}): missing image path")
        rows = (confine_paths(values, ids, base_dir, allow_outside=allow_outside_paths) if base_dir
                else [str(Path(str(v))) for v in values])
        try:
            encoders.validate_image_paths(rows)
        except ValueError as exc:
            raise _row_error(exc, ids, "image") from None
        encode = lambda xs: encoders.encode_images(xs, progress=progress)  # noqa: E731
    else:
        raise ValueError(f"unknown encoder kind {kind!r}; use text or image")
    hashes = _hashes(rows, kind)
    cache = _read_cache(_cache_path(cache_dir, kind)) if cache_dir else {}
    missing = sorted({h: i for i, h in enumerate(hashes) if h not in cache}.values())
    if missing:
        fresh = encode([rows[i] for i in missing])
        for i, vec in zip(missing, fresh):
            cache[hashes[i]] = vec
        if cache_dir:
            _write_cache(_cache_path(cache_dir, kind), cache)
    return np.stack([cache[h] for h in hashes]).astype(np.float32), len(missing)


def embed_file(data: Path, out: Path, *, text_col: str | None = None, image_col: str | None = None, id_col: str | None = None,
               cache_dir: Path | None = None, progress: bool = True, allow_outside_paths: bool = False) -> tuple[int, int]:
    """Write ``data`` plus an ``embedding`` list column to ``out`` (Parquet); (rows, newly encoded)."""
    import polars as pl

    from alkit.pools.tables import read_table

    if bool(text_col) == bool(image_col):
        raise ValueError("pass exactly one of --text-col or --image-col")
    if out.suffix.lower() not in (".parquet", ".pq"):
        raise ValueError(f"--out must be a .parquet file, got {out.name!r}")
    if not out.parent.is_dir():  # before the encoder runs, and without naming the temporary file it writes first
        raise ValueError(f"--out {out}: the folder {out.parent} does not exist")
    df = read_table(Path(data), text_cols=[id_col] if id_col else [])
    col, kind = (text_col, "text") if text_col else (image_col, "image")
    if col not in df.columns:
        raise ValueError(f"{kind} column {col!r} not found; columns: {', '.join(df.columns)}")
    if id_col and id_col not in df.columns:
        raise ValueError(f"id column {id_col!r} not found; columns: {', '.join(df.columns)}")
    ids = df[id_col].cast(pl.Utf8).to_list() if id_col else [str(i + 1) for i in range(df.height)]
    base = Path(data).resolve().parent
    X, n_new = embed_values(df[col].to_list(), ids, kind, cache_dir=cache_dir or base / CACHE_DIR_NAME,  # type: ignore[arg-type]
                            base_dir=base, progress=progress, allow_outside_paths=allow_outside_paths)
    table = df.to_arrow().append_column(
        "embedding", pa.FixedSizeListArray.from_arrays(pa.array(X.reshape(-1)), X.shape[1]))
    tmp = out.with_suffix(".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, out)
    return df.height, n_new
