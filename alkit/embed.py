"""Raw text and images in: frozen-encoder features with a content-addressed cache.

Why a cache: encoding is the one expensive step of `alkit init` on raw data, and users re-run
init (new split, new project) on the same files.  Vectors are cached per encoder by the hash of
the text or of the image file's bytes, so a second init encodes nothing and a grown file encodes
only its new rows.  Everything is validated before the first item is encoded.
"""

from __future__ import annotations

import hashlib
import os
import secrets
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute  # noqa: F401 (pa.compute)
import pyarrow.parquet as pq

from alkit.errors import Note
from alkit.pools.procs import file_lock

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
    # "-exif": image vectors since images are turned upright by their EXIF orientation first; the
    # cache of before holds some photos' vectors as stored (rotated), so it is not read
    return cache_dir / f"{kind}-{'minilm-l6-v2' if kind == 'text' else 'efficientnet-lite0-exif'}.parquet"


def _read_cache(path: Path, dim: int, *, quiet: bool = False) -> dict[str, np.ndarray]:
    """hash -> vector of the cache file; rows whose vector is not finite are left out (a vector is
    never trusted blindly: it becomes the features).  A file that cannot be read as alkit's cache
    (truncated, another table, vectors of another size) counts as empty, with a note: it is
    rewritten, and the items are encoded again."""
    if not path.is_file():
        return {}
    try:
        t = pq.read_table(path)
        v = t.column("v").combine_chunks()
        lengths = pa.compute.list_value_length(v).to_numpy(zero_copy_only=False)
        if v.null_count or len(lengths) and (lengths != dim).any():
            raise ValueError(f"vectors of {sorted(set(lengths.tolist()))[:3]} values, expected {dim}")
        vecs = pa.compute.list_flatten(v).to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dim)
        keys = t.column("h").to_pylist()
    except Exception as exc:  # noqa: BLE001 - any failure means the file is not a cache alkit can use
        if not quiet:
            warnings.warn(Note(f"the embedding cache {path} could not be read ({str(exc).splitlines()[0][:240]}); "
                               "its items are encoded again and it is rewritten"), stacklevel=3)
        return {}
    finite = np.isfinite(vecs).all(1)
    if not quiet and not finite.all():
        warnings.warn(Note(f"{int((~finite).sum())} vectors of the embedding cache {path} are not finite; their items "
                           "are encoded again and the cache rewritten"), stacklevel=3)
    return {k: vec for k, vec, ok in zip(keys, vecs, finite) if ok and isinstance(k, str)}


def _write_cache(path: Path, dim: int, new: dict[str, np.ndarray]) -> None:
    """Merge ``new`` into the cache file under a lock: read what is there now (another process may
    have added to it), add, write a temporary file of this process's own and move it in.  A cache
    that cannot be written (a read-only folder, --cache-dir naming a file) is a note, not a failure:
    the vectors were encoded and are used."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path.parent / f".{path.name}.lock"):
            cache = _read_cache(path, dim, quiet=True)
            cache.update(new)
            keys = list(cache)
            mat = np.stack([cache[k] for k in keys]).astype(np.float32)
            table = pa.table({"h": keys, "v": pa.FixedSizeListArray.from_arrays(pa.array(mat.reshape(-1)), dim)})
            tmp = path.with_name(f".{path.name}.{os.getpid()}-{secrets.token_hex(4)}.tmp")
            try:
                pq.write_table(table, tmp)
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError as exc:
        warnings.warn(Note(f"the embedding cache in {path.parent} could not be written ({exc.strerror or exc}); the "
                           "vectors are used but not cached: pass --cache-dir to a writable folder"), stacklevel=3)


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
        # the note counts the rows whatever the cache holds (encoded texts alone: it went once they were cached,
        # and counted repeated texts once; a black-box check)
        cut, pieces = encoders.texts_cut(rows)
        encoders.cut_texts_note(cut, len(rows), pieces)
        encode = lambda xs: encoders.encode_texts(xs, progress=progress, note_cut=False)  # noqa: E731
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
    dim = encoders.TEXT_DIM if kind == "text" else encoders.IMAGE_DIM
    cache = _read_cache(_cache_path(cache_dir, kind), dim) if cache_dir else {}
    missing = sorted({h: i for i, h in enumerate(hashes) if h not in cache}.values())
    if missing:
        try:
            fresh = encode([rows[i] for i in missing])
        except ValueError as exc:  # its 'row i' counts the items encoded now: name the file's row and item
            msg, prefix = str(exc), f"{kind} row "
            head, _, rest = msg[len(prefix):].partition(":") if msg.startswith(prefix) else ("", "", "")
            if head.isdigit() and int(head) < len(missing):
                raise _row_error(ValueError(f"{prefix}{missing[int(head)]}:{rest}"), ids, kind) from None
            raise
        new = {hashes[i]: vec for i, vec in zip(missing, fresh)}
        cache.update(new)
        if cache_dir:
            _write_cache(_cache_path(cache_dir, kind), dim, new)
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
    if out.resolve() == Path(data).resolve():  # the data file was overwritten by its own embedding
        raise ValueError(f"--out {out} is the input file; write the embedded copy to another file")
    df = read_table(Path(data), text_cols=[id_col] if id_col else [], codes_as_text=True,  # carried through as written
                    encoded=text_col or image_col)
    if "embedding" in df.columns:  # a second column of that name made a file nothing could read
        raise ValueError(f"{Path(data).name} already has a column 'embedding' (an earlier `alkit embed` output?): "
                         "embed the original file, or drop or rename that column")
    col, kind = (text_col, "text") if text_col else (image_col, "image")
    if col not in df.columns:
        raise ValueError(f"{kind} column {col!r} not found; columns: {', '.join(df.columns)}")
    if id_col and id_col not in df.columns:
        raise ValueError(f"id column {id_col!r} not found; columns: {', '.join(df.columns)}")
    if df[col].dtype not in (pl.Utf8, pl.Categorical) or (kind == "image" and df[col].dtype != pl.Utf8):
        raise ValueError(f"{kind} column {col!r} holds {str(df[col].dtype)[:40]}, not "
                         + ("text" if kind == "text" else "paths: --image-col reads image files named by a text column"))
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
