"""The `alkit` command's entry point: imports the CLI under a Ctrl-C guard.  Importing typer, rich and alkit's
modules takes a few tenths of a second, and a Ctrl-C there printed Python's KeyboardInterrupt traceback."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from alkit.cli import main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; run the same command again\n")
        sys.exit(130)
    cli_main()
