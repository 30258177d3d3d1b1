"""Reading a user's data file (CSV or Parquet) into a frame, and the error for bad input data.

Its own module because both project creation (pools/ingest.py) and the embedding command
(embed.py, which ingest also uses to encode text or image columns) read the same files.
"""

from __future__ import annotations

import csv
from pathlib import Path

import polars as pl


class InputError(ValueError):
    """The input data cannot become a project; the message names the column/row at fault."""


def read_table(path: Path) -> pl.DataFrame:
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            df = pl.read_csv(path, infer_schema_length=10_000)
        elif suffix in (".parquet", ".pq"):
            df = pl.read_parquet(path)
        else:
            raise InputError(f"{path}: unsupported file type {suffix!r}; use .csv or .parquet")
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - report any parser failure as bad input
        where = _ragged_line(path) if suffix == ".csv" else None
        if where:
            raise InputError(f"cannot read {path.name}: {where} (every row needs one value per header column)") from None
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        raise InputError(f"cannot read {path.name}: {first}") from None
    if df.height == 0:
        raise InputError(f"{path} has no rows")
    return df


def _ragged_line(path: Path) -> str | None:
    """Where a CSV file first has a row with another number of fields than its header."""
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            if header is None:
                return None
            for fields in reader:
                if fields and len(fields) != len(header):
                    return f"line {reader.line_num} has {len(fields)} fields, the header {len(header)}"
    except csv.Error as exc:
        return f"malformed CSV ({exc})"
    return None
