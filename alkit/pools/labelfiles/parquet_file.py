"""Parquet queue files: the typed frame, columns id and label (skip, annotator optional)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from alkit.pools.labelfiles._common import Row, atomic_write, canonical_columns, check_columns, records_to_rows, refuse

NAME = "parquet"
SUFFIXES = (".parquet", ".pq")
READS_BYTES = False  # polars reads the file itself


def write(path: Path, records: list[dict], frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:  # escape_formulas: CSV only
    atomic_write(path, lambda p: frame.write_parquet(p))
    return list(frame.columns)


def read(path: Path, data: bytes | None, problems: list[str], data_fields: Sequence[str] = ()) -> list[Row]:
    try:
        df = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        raise refuse(path, [f"not a readable Parquet file ({str(exc).splitlines()[0]}; truncated?)"]) from None
    df = df.rename(canonical_columns(df.columns))
    check_columns(path, df.columns, "columns")
    # the answer columns, a --history file's replaced_at, and the project's data columns (what the ids are checked by)
    keep = [c for c in df.columns if c.strip().casefold() in ("id", "label", "skip", "annotator", "replaced_at")
            or c in data_fields]
    return records_to_rows(path, ((f"row {i}", r) for i, r in enumerate(df.select(keep).to_dicts(), start=1)), problems,
                           data_fields)
