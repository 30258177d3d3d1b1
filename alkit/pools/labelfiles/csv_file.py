"""CSV (and tab-separated .tsv / .tab) queue files: one row per item, a header with id and label (skip, annotator optional);
nested payload cells are written as JSON text.  Text cells that a spreadsheet would run as a
formula (starting with =, +, -, @, tab or CR) are written with a leading ' unless the caller
turns it off for machine consumers; reading strips that quote again, so a round trip is lossless."""

from __future__ import annotations

import csv
import io
import json
import warnings
from collections.abc import Sequence
from pathlib import Path

import polars as pl

from alkit.pools.labelfiles._common import (Row, atomic_write, canonical_columns, check_columns, decode, raw_formulas, read_column,
                                           records_to_rows, refuse, separator_hint, unescape_formula)
from alkit.pools.labelfiles._common import escape_formulas as escape_text

NAME = "csv"
SUFFIXES = (".csv", ".tsv", ".tab")  # tab-separated for .tsv / .tab, as `alkit init` reads them


def _separator(path: Path) -> str:
    return "\t" if path.suffix.lower() in (".tsv", ".tab") else ","


def write(path: Path, frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:
    """The typed frame as CSV (list/struct payload cells as JSON text); the columns written."""
    nested = [c for c in cols if isinstance(frame.schema[c], (pl.List, pl.Array, pl.Struct))]
    # a list cell comes to map_elements as a Series (it was written as its debug print; a check)
    frame = frame.with_columns(pl.col(c).map_elements(
        lambda v: json.dumps(v.to_list() if isinstance(v, pl.Series) else v, default=str), return_dtype=pl.Utf8)
        for c in nested)
    # types CSV has no text for (a Parquet file's durations, times, binary): their text form, not a traceback after
    # the run had recorded its batch (a check)
    with warnings.catch_warnings():  # polars suggests an expression for str, and has none for a duration's text
        warnings.simplefilter("ignore")
        frame = frame.with_columns(pl.col(c).map_elements(str, return_dtype=pl.Utf8) for c in cols
                                   if isinstance(frame.schema[c], (pl.Duration, pl.Time, pl.Binary, pl.Decimal)))
    if escape_formulas:
        frame = escape_text(frame)
    atomic_write(path, lambda p: frame.write_csv(p, separator=_separator(path)))
    return list(frame.columns)


def read(path: Path, data: bytes, problems: list[str], data_fields: Sequence[str] = ()) -> list[Row]:
    text = decode(path, data)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True, delimiter=_separator(path))
    try:
        header = next(reader, None)
        if header is None:
            raise refuse(path, ["the file is empty (no header line)"])
        header = [unescape_formula(h.strip()) for h in header]
        if header and header[0].lower().startswith("sep=") and all(not h for h in header[1:]):
            raise refuse(path, [f"line 1 {_separator(path).join(header)!r} is Excel's separator hint, not the header: "
                                "delete that line"])
        aliases = canonical_columns(header)
        header = [aliases.get(h, h) for h in header]
        check_columns(path, header)
        read = [i for i, h in enumerate(header) if read_column(h, data_fields)]  # the others are not kept
        rows: list[tuple[str, list[str]]] = []
        for fields in reader:
            if not fields or all(not f.strip() for f in fields):
                continue
            where = f"line {reader.line_num}"
            if len(fields) != len(header):
                first = fields[header.index("id")] if len(fields) > header.index("id") else None
                problems.append(f"{where}{f' (id {first})' if first else ''}: {len(fields)} fields, expected "
                                f"{len(header)} (truncated or malformed file)")
                continue
            rows.append((where, [fields[i] for i in read]))
    except csv.Error as exc:
        head = text.lstrip("\ufeff").splitlines()[0] if text.strip() else ""
        hint = separator_hint(head) if reader.line_num <= 1 and _separator(path) not in head else ""
        raise refuse(path, [f"line {reader.line_num}: {exc} (truncated or malformed file){hint}"]) from None
    # the id column alone tells: alkit wrote it, where a person may type '@bob' as annotator or '-check' as a note
    # into an escaped file (that read the whole file raw, and the label of id '=x went to item '=x; a check)
    kept = [header[i] for i in read]
    at = kept.index("id") if "id" in kept else None
    raw = at is not None and raw_formulas(fields[at] for _, fields in rows)
    records = [(where, dict(zip(kept, fields if raw else map(unescape_formula, fields)))) for where, fields in rows]
    _note_cut_label(path, text, header, records)
    return records_to_rows(path, records, problems, data_fields)


def _note_cut_label(path: Path, text: str, header: list[str], records: list[tuple[str, dict[str, str]]]) -> None:
    """A file cut short inside its last label ('21.5' -> '21' of an id,label file) reads as a whole row:
    where the label is the last column and the file does not end with a line break, say so beside the
    import (a file a person saved without a final line break reads the same, so it is a note, not a
    refusal)."""
    if not records or header[-1] != "label" or text.endswith(("\n", "\r")):
        return
    where, last = records[-1]
    from alkit.errors import Note

    if last.get("label", "").strip():
        warnings.warn(Note(f"{path.name} does not end with a line break: if the file was cut short, the label of its "
                           f"last row ({where}, id {last.get('id')}: {last['label']!r}) may be cut too; check it"),
                      stacklevel=2)
    elif not (last.get("skip") or "").strip():  # 'i27,' at the very end: its answer may be what was cut off
        warnings.warn(Note(f"{path.name} does not end with a line break and its last row ({where}, id "
                           f"{last.get('id')}) has no label: if the file was cut short, that answer was cut off; "
                           "check it"), stacklevel=2)
