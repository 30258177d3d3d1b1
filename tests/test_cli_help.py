"""`alkit --help` is instant and honest: no torch, SQLAlchemy or polars imported to build the
app, choices listed from alkit.choices (checked here against the modules that implement them),
flags shown as flags, bracketed text kept, usage errors one line."""

from __future__ import annotations

import os
import subprocess
import sys
import typing

from alkit import choices

ALKIT = [sys.executable, "-m", "alkit.cli"]


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "100", **(env or {})}
    return subprocess.run([*ALKIT, *args], capture_output=True, text=True, env=env, timeout=120)


def test_building_the_app_imports_no_heavy_module() -> None:
    code = ("import sys, typer; from alkit.cli import app; typer.main.get_command(app); "
            "print(sorted(m for m in ('torch', 'sqlalchemy', 'polars', 'numpy', 'sklearn') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "[]", out.stdout + out.stderr


def test_help_version_and_short_help() -> None:
    import importlib.metadata

    version = _run("--version")
    assert version.returncode == 0 and version.stdout == f"alkit {importlib.metadata.version('alkit')}\n", version.stdout
    top = _run("-h")
    assert top.returncode == 0 and "Commands:" in top.stdout and "queue" in top.stdout
    init = _run("init", "-h").stdout
    assert init.startswith("Usage: alkit init [OPTIONS] {DATA}")  # typer's braces mark a required argument
    assert "alkit[text]" in init and "alkit[image]" in init  # [..] is text, not markup
    assert "<bool>" not in init and "--hide-labels " in init
    assert "<classification|regression>" in init
    run = _run("run", "-h").stdout
    for listed in ("<dense|diagonal|shared>", "<local|ray>", "decision-flip|decision-bald", "<random|coldstart>"):
        assert listed in run
    assert "<csv|jsonl|parquet|label-studio>" in _run("queue", "import", "-h").stdout
    assert "default 200" in _run("bench", "-h").stdout


def test_usage_errors_are_one_line() -> None:
    for args, says in ((["run", "--cov", "full", "--budget", "3"], "'full' is not one of 'dense', 'diagonal', 'shared'"),
                       (["queue", "import", "x.csv", "--on-conflict", "merge"], "'merge' is not one of 'error', 'keep', 'replace'"),
                       (["nosuch"], "No such command 'nosuch'"),
                       (["--threads", "0", "status"], "--threads must be at least 1, not 0"),
                       (["bench", "--budget", "20", "--at", "50,abc"], "--at: 'abc' is not a label count"),
                       (["bench", "--budget", "20", "--at", "0"], "--at: label counts must be at least 1, got 0")):
        proc = _run(*args)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2 and len(lines) == 1 and says in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr
    # the environment variable is blamed only where it gave the value (`--threads 0` named ALKIT_THREADS, unset)
    proc = _run("status", env={"ALKIT_THREADS": "0"})
    assert proc.returncode == 2 and "ALKIT_THREADS must be at least 1, not 0" in proc.stderr, proc.stderr


def test_choices_match_what_implements_them() -> None:
    from alkit.acquisition import ACQUISITIONS
    from alkit.engines import ENGINES
    from alkit.learners.vbll_heads import Cov, HeadKind
    from alkit.pools.labelfiles import FORMATS
    from alkit.registry import SCORERS
    from alkit.strategies import SELECTORS

    assert choices.QUEUE_FORMATS == tuple(FORMATS)
    assert set(choices.SCORERS) == set(SCORERS) and set(choices.ACQUISITIONS) == set(ACQUISITIONS)
    assert set(choices.ENGINES) == set(ENGINES)
    assert choices.HEADS == typing.get_args(HeadKind) and choices.COVARIANCES == typing.get_args(Cov)
    assert set(choices.INITIAL_SELECTORS) == {n for n, c in SELECTORS.items() if not c.needs_model}


def test_threads_govern_torch_and_blas_alike() -> None:
    """--threads (ALKIT_THREADS) is applied to torch and to numpy's BLAS pools (threadpoolctl), so
    the selectors' numpy work obeys it too."""
    import torch
    from threadpoolctl import threadpool_info, threadpool_limits

    from alkit import cli_common

    before, old_torch = cli_common.THREADS, torch.get_num_threads()
    with threadpool_limits(limits=None):  # restores the original BLAS limits afterwards
        try:
            for n in (1, 2):
                cli_common.THREADS = n
                cli_common.use_threads()
                blas = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
                assert torch.get_num_threads() == n and blas and all(t == n for t in blas), blas
        finally:
            cli_common.THREADS = before
            torch.set_num_threads(old_torch)
