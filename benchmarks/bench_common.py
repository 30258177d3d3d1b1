"""Pieces the benchmark scripts here share (they run as `python benchmarks/NAME.py`, so this
folder is on the import path): interleaved CPU timing and the markdown ending."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import numpy as np


def cpu_medians(fns: dict[str, Callable[[], object]], repeats: int = 3) -> dict[str, float]:
    """Median CPU seconds of this thread (time.thread_time) per function, the functions run
    interleaved ``repeats`` times, so a shared machine's load falls on all of them alike."""
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t = time.thread_time()
            fn()
            times[name].append(time.thread_time() - t)
    return {k: float(np.median(v)) for k, v in times.items()}


def mean_std(values: list[float], digits: int = 3) -> str:
    return f"{np.mean(values):.{digits}f} ± {np.std(values):.{digits}f}"


def emit(lines: list[str], out: Path | None) -> None:
    """The markdown lines written to ``out`` (if given) and printed."""
    text = "\n".join(lines) + "\n"
    if out:
        out.write_text(text)
    print(text)
