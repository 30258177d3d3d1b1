"""Label files: one module per format, each with one writer and one reader, chosen by an explicit
format name (``--format``), the file's suffix only as the default.  Add a format by one module
and one line in ``FORMATS``."""

from __future__ import annotations

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


def format_of(path: Path, name: str | None = None) -> ModuleType:
    """The explicit format, else the one whose suffix the file has."""
    if name is not None:
        return get_format(name)
    suffix = path.suffix.lower()
    for mod in FORMATS.values():
        if suffix in mod.SUFFIXES:
            return mod
    known = ", ".join(s for m in FORMATS.values() for s in m.SUFFIXES)
    raise QueueError(f"{path}: unsupported file type {suffix!r}; use {known} or pass --format "
                     f"({', '.join(FORMATS)})")


def read(path: str | Path, problems: list[str], name: str | None = None) -> list[Row]:
    """Parse a labeled queue file; structural problems raise, row problems are appended."""
    path = Path(path)
    if not path.is_file():
        raise QueueError(f"{path}: no such file")
    mod = format_of(path, name)
    data = path.read_bytes() if getattr(mod, "READS_BYTES", True) else None
    return mod.read(path, data, problems)


def default_suffix(name: str) -> str:
    return get_format(name).SUFFIXES[0]
