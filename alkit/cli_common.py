"""What every `alkit` command module shares: the consoles, the refusal handler, option parsing."""

from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Iterator, Optional

import typer
from rich.console import Console
from rich.markup import escape

from alkit import choices
from alkit.errors import MissingExtra, StoreError
from alkit.presets import PRESETS

MIN_COLUMNS = 40  # the narrowest layout alkit's tables keep their run column in


def _usable_columns(text: str | None) -> bool:
    """Whether COLUMNS is a width rich can lay anything out in: COLUMNS=0 (a job's environment) printed nothing at
    all, errors included, and 1-5 only blank rows (environment checks); '²' passed isdigit and failed int()."""
    try:
        return text is None or int(text.strip()) >= MIN_COLUMNS
    except ValueError:
        return False


if not _usable_columns(os.environ.get("COLUMNS")):  # left out: the terminal's own width is read, else 80
    os.environ.pop("COLUMNS", None)
# soft_wrap: a message is one line however narrow the terminal (a log or a pipe gets it whole);
# tables are laid out to the width as before
console = Console(soft_wrap=True)
err = Console(stderr=True, soft_wrap=True)


def typer_app(help: str) -> typer.Typer:
    """A command group with alkit's settings: help on no arguments and on -h, no shell-completion
    commands, no rich tracebacks (errors are one line, ``user_errors``), plain click help text
    ([text] and --flags shown as written, no <bool> placeholders)."""
    return typer.Typer(help=help, no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False,
                       context_settings={"help_option_names": ["-h", "--help"]}, rich_markup_mode=None)


# every refusal alkit raises is one of these: InputError, LoopError, ConfigError, FeatureFileError,
# QueueError, AcquisitionError, ... are ValueErrors (named here would import torch before --help)
USER_ERRORS = (ValueError, StoreError, OSError, KeyError, MissingExtra)  # OSError: a path that is a file, unwritable, a full disk

def utf8_path(raw: str | Path | None) -> Path | None:
    """A path option or argument (typer's ``parser``: it sees the text as typed) whose name is UTF-8 text, else
    one line naming it: a name in another system's encoding (a Windows zip's 'out\xe9.csv') failed later in the
    writers' own words, a traceback (queue export -o, bench --out-dir) or a false 'features.parquet is not
    readable' (a black-box check).  An empty one is refused: Path('') is '.', so `bench --out-dir ''` (an unset
    shell variable) wrote its tables into the current folder, and `init -p ''` made the project there."""
    if isinstance(raw, str) and not raw.strip():
        raise typer.BadParameter("empty: give a path (an unset shell variable?)")
    path = None if raw is None else Path(raw)
    if path is not None:
        if str(path) == "~" or str(path).startswith("~/"):
            # `--out=~/a.parquet`: the shell leaves that ~ alone; the export made ./~/a.parquet and printed an import
            # hint that the Parquet reader expanded to $HOME/a.parquet, another file (an environment check)
            path = path.expanduser()
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:
            try:  # valid UTF-8 bytes that arrived undecoded: the locale is the cause, not the name (a check)
                name = os.fsencode(str(path)).decode("utf-8")
            except UnicodeDecodeError:
                raise typer.BadParameter(f"{str(path)!r} is not valid UTF-8 text (a name from another system's "
                                         "encoding): rename it") from None
            raise typer.BadParameter(f"{name!r}: this locale cannot encode the name's non-ASCII characters "
                                     "(a C/POSIX locale without Python's UTF-8 mode); set a UTF-8 locale "
                                     "(LANG=C.UTF-8) or PYTHONUTF8=1") from None
    return path


ProjectOpt = typer.Option(Path("."), "--project", "-p", help="Project directory (default: current directory).",
                          parser=utf8_path, metavar="<path>")  # `-p '~/x'`, `--project=~/x`:
# the shell leaves that ~ alone; init made ./~/x while the Parquet writer expanded it (a raw error, a stray ./~)


class _Choice(StrEnum):
    """A member is its string everywhere: in messages (repr too), JSON and the store."""

    def __repr__(self) -> str:
        return repr(self.value)


def _choices(name: str, values: tuple[str, ...] | list[str]) -> type[StrEnum]:
    """An option type whose values --help lists and shells complete; members are the strings themselves."""
    return _Choice(name, {v: v for v in values})


Task = _choices("Task", choices.TASKS)
Strategy = _choices("Strategy", list(PRESETS))
Scorer = _choices("Scorer", choices.SCORERS)
Head = _choices("Head", choices.HEADS)
Covariance = _choices("Covariance", choices.COVARIANCES)
Engine = _choices("Engine", choices.ENGINES)
Acquisition = _choices("Acquisition", choices.ACQUISITIONS)
InitialSelector = _choices("InitialSelector", choices.INITIAL_SELECTORS)
QueueFormat = _choices("QueueFormat", choices.QUEUE_FORMATS)
LabelsFormat = _choices("LabelsFormat", choices.LABELS_FORMATS)
OnConflict = _choices("OnConflict", choices.ON_CONFLICT)

THREADS = 1  # torch CPU threads, from `alkit --threads` / ALKIT_THREADS


_BLAS_LIMITS: list[object] = []  # the active threadpoolctl limit (kept referenced for the process)


def use_threads() -> None:
    """Apply --threads to torch and to the BLAS / OpenMP pools numpy and scikit-learn use
    (threadpoolctl); called by the commands that train or embed (importing torch is what makes
    a command slow to start, so --help and status never do)."""
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(THREADS)
    _BLAS_LIMITS[:] = [threadpool_limits(limits=THREADS)]


# a Ctrl-C no command reported in words of its own: every command writes all or nothing, or continues where it
# stopped (a bare 'interrupted' said neither, a black-box check)
INTERRUPTED = "interrupted; run the same command again"
_INTERRUPT_SAID: list[str] = []  # what a handler said of a Ctrl-C, for main() to leave the line to it


def say_interrupted(message: str) -> None:
    """Ctrl-C (or SIGTERM) reported in one line by the command it stopped; exit with 130 after it.  A Ctrl-C
    anywhere else (reading the project, parsing options) ended with exit 130 and no word: main() says it."""
    err.print(message, highlight=False)
    _INTERRUPT_SAID.append(message)


_INTERRUPTED: list[int] = []  # the signals (SIGINT, SIGTERM) this command received


def on_interrupt(signum: int, frame: object) -> None:
    """Ctrl-C / SIGTERM: remembered, then raised as KeyboardInterrupt.  Why remembered: one landing inside a
    lazy NumPy/SciPy import leaves the module half-loaded, and what surfaces is a RecursionError or an
    AttributeError with no KeyboardInterrupt behind it (a traceback, exit 1); the handlers ask was_interrupted."""
    _INTERRUPTED.append(signum)
    # what the interrupt leaves half-done is reported by the garbage collector as 'Exception ignored in ...'
    # (SQLAlchemy's identity map: thousands of tracebacks after a Ctrl-C in a large import, a black-box check);
    # the command is ending on the interrupt, which is the one line worth saying
    sys.unraisablehook = _quiet
    raise KeyboardInterrupt


def _quiet(unraisable: object) -> None:
    """sys.unraisablehook once a command is interrupted: nothing printed."""


def was_interrupted() -> bool:
    return bool(_INTERRUPTED)


def interrupt_said(clear: bool = False) -> bool:
    """Whether a handler has said a Ctrl-C since the last ``clear`` (main() clears it as a command starts)."""
    said = bool(_INTERRUPT_SAID)
    if clear:
        _INTERRUPT_SAID.clear()
        _INTERRUPTED.clear()
    return said


def one_line(text: str) -> str:
    """Newlines, tabs and other control characters (from a message or a user's value quoted in it)
    shown as escapes, so a refusal is always exactly one line."""
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)


_OS_HINTS = {errno.EACCES: "the file or its folder is not writable (or readable) for this user",
             errno.EPERM: "the file or its folder is not writable (or readable) for this user",
             errno.EROFS: "the file system is read-only", errno.ENOSPC: "the disk is full: free space and run it again",
             errno.ENOENT: "no such file or folder", errno.ENOTDIR: "a part of the path is a file, not a folder",
             errno.EISDIR: "the path is a folder, not a file",
             errno.EEXIST: "a file is in the way where a folder is needed"}


def os_error_line(exc: BaseException) -> str | None:
    """An OSError about a path in words ('cannot use /p/x.png: the file system is read-only'), not Python's
    '[Errno 30] Read-only file system: ...'; None for other errors (their own message is the line)."""
    if not isinstance(exc, OSError) or exc.filename is None or exc.errno not in _OS_HINTS:
        return None
    return f"cannot use {exc.filename}: {_OS_HINTS[exc.errno]} ({exc.strerror})"


BUSY_EXIT = 3  # the run is busy: another process drives it (README, docs/commands.md)


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn a refused operation into one red line and exit code 2, 3 for a busy run (never a traceback)."""
    try:
        yield
    except USER_ERRORS as exc:
        if was_interrupted():  # an error an interrupt caused (a half-loaded module): the interrupt is the news
            say_interrupted(INTERRUPTED)
            raise typer.Exit(code=130) from None
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else os_error_line(exc) or str(exc)
        err.print(f"[bold red]error:[/] {escape(one_line(str(msg)))}", highlight=False)
        # a run another live process drives: the same command works once it is done (exit 2, bad input, left a
        # scheduler grepping for 'is busy'; an automation check); told by name so that --help imports no store
        raise typer.Exit(code=BUSY_EXIT if type(exc).__name__ == "RunBusy" else 2) from None
    except Exception as exc:  # noqa: BLE001 - only the store going away or damaged mid-command is turned into a line
        damaged = _store_damaged(exc)  # a corrupt page met mid-command: an 88-line SQLAlchemy traceback, exit 1
        if not damaged and not _store_outage(exc):
            raise
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        if damaged:
            err.print(f"[bold red]error:[/] the store is damaged ({escape(one_line(reason))}): restore it from a backup "
                      "(for SQLite, `sqlite3 alkit.db .recover` may save its rows into a new file)", highlight=False)
            raise typer.Exit(code=2) from None
        if "disk is full" in reason or "No space left" in reason:  # not an outage: init said 'every committed cycle'
            err.print(f"[bold red]error:[/] the store's disk is full ({escape(one_line(reason))}); what was written "
                      "before this command's last step is kept: free space and run the same command again",
                      highlight=False)
        else:
            err.print(f"[bold red]error:[/] the store stopped answering ({escape(one_line(reason))}); every committed "
                      "cycle and label is kept: run the same command again when it is back", highlight=False)
        raise typer.Exit(code=1) from None


def _store_damaged(exc: BaseException) -> bool:
    """SQLite's 'database disk image is malformed' (a damaged page), told by name as _store_outage is."""
    return (type(exc).__module__.startswith("sqlalchemy") and type(exc).__name__ == "DatabaseError"
            and "malformed" in str(getattr(exc, "orig", "")))


def _store_outage(exc: BaseException) -> bool:
    """A database connection lost or refused mid-command (a PostgreSQL server stopped, a network gone):
    SQLAlchemy's OperationalError / InterfaceError, told by name so that --help never imports SQLAlchemy.
    A ~250-line driver traceback said nothing more than this line does."""
    return type(exc).__module__.startswith("sqlalchemy") and type(exc).__name__ in ("OperationalError", "InterfaceError")


def parse_counts(value: str, option: str) -> list[int]:
    """'50, 100' -> [50, 100] for an option of label counts; anything but whole numbers >= 1 is
    refused naming the option and the value."""
    counts = []
    for item in parse_csv(value) or []:
        try:
            count = int(item)
        except ValueError:
            raise ValueError(f"{option}: {item!r} is not a label count; give whole numbers, e.g. {option} 50,100") from None
        if count < 1:
            raise ValueError(f"{option}: label counts must be at least 1, got {count}")
        counts.append(count)
    return counts


def parse_csv(value: Optional[str], what: str = "column", keep_empty: bool = False) -> Optional[list[str]]:
    """'a, b,c' -> ['a', 'b', 'c']; None stays None; an empty list is refused, naming ``what`` it lists.
    Comma-separated; a name in double quotes is taken as written, commas and spaces at its ends included
    ('"comment, free text"', '" d "'; a quote inside it doubled, as in CSV): a column so named could not be
    given at all (black-box checks).  Unquoted names lose the spaces around them."""
    if value is None:
        return None
    items: list[str] = []
    for raw in _split_outside_quotes(value, what):
        text = raw.strip()
        if text.startswith('"'):
            if len(text) < 2 or not text.endswith('"'):
                raise ValueError(f"the {what} list {value!r} has text beside a double-quoted name: {text!r}")
            inner = text[1:-1]
            if inner.replace('""', "").count('"'):
                raise ValueError(f"the {what} list {value!r}: a double quote inside a quoted name is written twice")
            items.append(inner.replace('""', '"'))
        elif '"' in text:
            raise ValueError(f"the {what} list {value!r}: a name with a double quote goes in double quotes, the quote "
                             'doubled ("say ""hi""")')
        elif text or keep_empty:  # keep_empty: '' for the caller to refuse ('yes,,no': a name left out?)
            items.append(text)
    if not items or not any(items):
        raise ValueError(f"an empty {what} list was given")
    return items


def _split_outside_quotes(value: str, what: str) -> list[str]:
    """``value`` split at the commas outside double quotes."""
    parts, start, quoted = [], 0, False
    for i, ch in enumerate(value):
        if ch == '"':
            quoted = not quoted
        elif ch == "," and not quoted:
            parts.append(value[start:i])
            start = i + 1
    if quoted:
        raise ValueError(f"the {what} list {value!r} has an unclosed double quote")
    return [*parts, value[start:]]
