"""What every `alkit` command module shares: the consoles, the refusal handler, option parsing."""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console

from alkit.config import ConfigError
from alkit.loop import LoopError
from alkit.pools.features import FeatureFileError
from alkit.pools.ingest import InputError
from alkit.pools.store import StoreError

console = Console()
err = Console(stderr=True)

USER_ERRORS = (InputError, LoopError, ConfigError, StoreError, FeatureFileError, ValueError, FileNotFoundError, KeyError)

ProjectOpt = typer.Option(Path("."), "--project", "-p", help="Project directory (default: current directory).")


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a refused operation into one red line and exit code 2 (never a traceback)."""
    try:
        yield
    except USER_ERRORS as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        err.print(f"[bold red]error:[/] {msg}", highlight=False)
        raise typer.Exit(code=2) from None


def parse_csv(value: Optional[str]) -> Optional[list[str]]:
    """'a, b,c' -> ['a', 'b', 'c']; None stays None; an empty list is refused."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise ValueError("an empty column list was given")
    return items
