"""The ending every benchmark here shares: its markdown lines written to --out (if given) and printed."""

from __future__ import annotations

from pathlib import Path


def emit(lines: list[str], out: Path | None) -> None:
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)
