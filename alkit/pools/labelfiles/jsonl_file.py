"""JSON Lines queue files: one JSON object per line with id and label (skip, annotator optional)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from alkit.pools.labelfiles._common import (Row, ambiguous_columns, atomic_write, canonical_columns, decode,
                                           read_column, records_to_rows)

NAME = "jsonl"
SUFFIXES = (".jsonl", ".ndjson")


def write(path: Path, frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:  # escape_formulas: CSV only
    def lines(p: Path) -> None:  # a row at a time: a list of every row's dict took 2.8 GB at 28,000 x 784 features
        with p.open("w", encoding="utf-8") as out:
            for r in frame.iter_rows(named=True):
                out.write(json.dumps(r, default=str) + "\n")

    atomic_write(path, lines)
    return list(frame.columns)


def read(path: Path, data: bytes, problems: list[str], data_fields: Sequence[str] = ()) -> list[Row]:
    text = decode(path, data)
    records = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(f"line {i}: invalid JSON ({exc.msg}; truncated or malformed file)")
            continue
        if not isinstance(rec, dict):
            problems.append(f"line {i}: expected a JSON object, found {type(rec).__name__}")
            continue
        ambiguous = ambiguous_columns(list(rec))
        if ambiguous:
            problems.append(f"line {i}: {ambiguous}")
            continue
        aliases = canonical_columns(list(rec))  # 'Skip', 'Annotator', 'ID' as alkit's names
        rec = {aliases.get(k, k): v for k, v in rec.items()} if aliases else rec
        if "id" not in rec or not ({"label", "skip"} & set(rec)):
            problems.append(f"line {i}: missing key {', '.join(k for k in ('id', 'label') if k not in rec)}")
            continue
        records.append((f"line {i}", {k: v for k, v in rec.items() if read_column(k, data_fields)}))
    return records_to_rows(path, records, problems, data_fields)
