"""The `alkit` command's entry point: imports the CLI under a Ctrl-C guard.  Importing typer, rich and alkit's
modules takes a few tenths of a second, and a Ctrl-C there printed Python's KeyboardInterrupt traceback."""

from __future__ import annotations

import sys


def main() -> None:
    import os

    try:
        os.getcwd()
    except OSError:  # torch's math library died at import ('Intel oneMKL FATAL ERROR'), exit 2 (an environment check);
        # help, --version and the queue commands load no torch and work with an absolute --project as before
        light = len(sys.argv) < 2 or sys.argv[1] == "queue" or {"-h", "--help", "--version"} & set(sys.argv[1:])
        if not light:
            sys.stderr.write("error: the current folder no longer exists (deleted or moved away): cd to a folder that "
                             "exists and run the command again\n")
            sys.exit(2)
    try:
        from alkit.cli import process_main as cli_main
    except KeyboardInterrupt:
        sys.stderr.write("interrupted; run the same command again\n")
        sys.exit(130)
    cli_main()
