"""Label files: one module per format, each with one writer and one reader, chosen by an explicit
format name (``--format``), the file's suffix only as the default.  Add a format by one module
and one line in ``FORMATS``."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

from alkit.pools.labelfiles import csv_file, jsonl_file, label_studio, parquet_file
from alkit.pools.labelfiles._common import QueueError, Row, refuse  # noqa: F401 (the package's records)

FORMATS: dict[str, ModuleType] = {m.NAME: m for m in (csv_file, jsonl_file, parquet_file, label_studio)}


def get_format(name: str) -> ModuleType:
    """The format called ``name``; an unknown name is refused, listing the formats."""
    if name not in FORMATS:
        raise QueueError(f"unknown format {name!r}; formats: {', '.join(FORMATS)}")
    return FORMATS[name]


def format_for_suffix(path: Path) -> ModuleType | None:
    """The format whose suffix ``path`` has (by its name alone), or None."""
    return next((mod for mod in FORMATS.values() if path.suffix.lower() in mod.SUFFIXES), None)


def is_queue_file(path: Path, root: Path) -> bool:
    """Whether ``path`` is one of the labelers' queue files alkit writes in the project folder ``root``
    (queue.csv, queue-c3.jsonl, queue.unimported-*.csv, ...: a queue* name in any label file format).
    Why one predicate: init's refusal of such a data file and `queue labels`'s refusal to write over one
    must agree on which files they are."""
    try:
        path, root = path.resolve(), root.resolve()
    except OSError:
        return False
    return path.parent == root and path.name.startswith("queue") and format_for_suffix(path) is not None


def export_format(path: Path | None, name: str | None = None) -> str:
    """The format an export to ``path`` is written in: ``name`` if given, else the one its suffix
    names, else csv (no path: the project's queue file).  A suffix that names another format than
    ``name``, or no format when none is given, is refused: a CSV written to q.parquet reads back as
    a damaged Parquet file."""
    by_suffix = format_for_suffix(path) if path is not None else None
    if name is not None:
        get_format(name)
        if by_suffix is not None and by_suffix.NAME != name:
            raise QueueError(f"--out {path.name} names a {by_suffix.NAME} file but --format is {name}: "
                             f"drop --format or give the file a {get_format(name).SUFFIXES[0]} name")
        return name
    if path is None:
        return csv_file.NAME
    if by_suffix is None:
        raise _unsupported(f"--out {path.name}", path)
    return by_suffix.NAME


def _unsupported(where: str, path: Path) -> QueueError:
    """The refusal of a file whose suffix names no format, listing the suffixes and formats."""
    known = ", ".join(s for m in FORMATS.values() for s in m.SUFFIXES)
    return QueueError(f"{where}: unsupported file type {path.suffix.lower() or '(none)'!r}; use {known} or pass "
                      f"--format ({', '.join(FORMATS)})")


def format_of(path: Path, name: str | None = None) -> ModuleType:
    """The explicit format, else the one whose suffix the file has."""
    if name is not None:
        return get_format(name)
    suffix = path.suffix.lower()
    if suffix == ".csv" and _label_studio_csv(path):
        return label_studio
    mod = format_for_suffix(path)
    if mod is not None:
        return mod
    raise _unsupported(str(path), path)


def _label_studio_csv(path: Path) -> bool:
    """A .csv that is Label Studio's CSV export of alkit's tasks (its header says so)."""
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as f:
            header = next(csv.reader(f), [])
    except (OSError, csv.Error):
        return False
    return label_studio.is_export_csv([h.strip() for h in header])


def read(path: str | Path, problems: list[str], name: str | None = None, *, label_field: str | None = None,
         data_fields: Sequence[str] = (), read_fields: Sequence[str] | None = None) -> list[Row]:
    """Parse a labeled queue file; structural problems raise, row problems are appended.
    ``label_field`` / ``data_fields``: which Label Studio control holds the label (flat exports); ``read_fields``:
    the data columns a table's rows are read with (default ``data_fields``; a table's other columns are not read)."""
    path = Path(path)
    if not path.is_file():  # a device is read whole (/dev/zero until memory ran out), a pipe may never end
        what = ("a folder, not a file" if path.is_dir() else "no such file" if not path.exists()
                else "no regular file (a device or pipe): give a label file")
        raise QueueError(f"{path}: {what}")
    mod = format_of(path, name)
    data = path.read_bytes() if getattr(mod, "READS_BYTES", True) else None
    if mod is label_studio:
        return mod.read(path, data, problems, label_field=label_field, data_fields=data_fields)
    if label_field is not None:
        raise QueueError(f"--label-field names a Label Studio control; {path.name} is read as {mod.NAME}")
    return mod.read(path, data, problems, data_fields=data_fields if read_fields is None else read_fields)


def default_suffix(name: str) -> str:
    return get_format(name).SUFFIXES[0]
