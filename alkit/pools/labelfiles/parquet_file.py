"""Parquet queue files: the typed frame, columns id and label (skip, annotator optional)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import polars as pl

from alkit.pools.labelfiles._common import (QueueError, Row, atomic_write, canonical_columns, check_columns, read_column,
                                             records_to_rows, refuse)

NAME = "parquet"
SUFFIXES = (".parquet", ".pq")
READS_BYTES = False  # polars reads the file itself


def write(path: Path, frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:  # escape_formulas: CSV only
    atomic_write(path, lambda p: frame.write_parquet(p))
    return list(frame.columns)


def read(path: Path, data: bytes | None, problems: list[str], data_fields: Sequence[str] = ()) -> list[Row]:
    try:
        names = list(pl.read_parquet_schema(path))
        aliases = canonical_columns(names)
        check_columns(path, [aliases.get(c, c) for c in names], "columns")
        keep = [c for c in names if read_column(aliases.get(c, c), data_fields)]  # only these are read
        df = pl.read_parquet(path, columns=keep).rename({c: aliases[c] for c in keep if c in aliases})
        # a 32-bit float as its shortest text (0.1, not 0.10000000149011612, which the same answer typed in a CSV then
        # conflicted with; a black-box check); NaN stays a blank cell, as a 64-bit one's does
        # (the answer only: a float32 id or skip column is read as a 64-bit one's, the id as its whole number)
        df = df.with_columns(pl.when(pl.col(c).is_nan()).then(None).otherwise(pl.col(c).cast(pl.Utf8)).alias(c)
                             for c, t in df.schema.items() if t == pl.Float32 and c == "label")
        # a time of day as init writes it (12:00:42.500, where str() gave 12:00:42.500000: an unknown id)
        df = df.with_columns(pl.col(c).dt.to_string("%H:%M:%S%.f") for c, t in df.schema.items() if t == pl.Time)
    except QueueError:
        raise
    except Exception as exc:  # noqa: BLE001 - any reader failure is a bad file
        raise refuse(path, [f"not a readable Parquet file ({str(exc).splitlines()[0]}; truncated?)"]) from None
    return records_to_rows(path, ((f"row {i}", r) for i, r in enumerate(df.to_dicts(), start=1)), problems,
                           data_fields)
