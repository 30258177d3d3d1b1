"""Reading a user's data file (CSV or Parquet) into a frame, and the error for bad input data.

Its own module because both project creation (pools/ingest.py) and the embedding command
(embed.py, which ingest also uses to encode text or image columns) read the same files.
"""

from __future__ import annotations

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
        raise InputError(f"cannot read {path}: {exc}") from exc
    if df.height == 0:
        raise InputError(f"{path} has no rows")
    return df
