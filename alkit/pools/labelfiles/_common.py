"""What every label-file format shares: the decision read from one row (``Row``), the refusal
that names every bad row, cell decoding, and the atomic write (labelers never see half a file)."""

from __future__ import annotations

import errno
import glob
import math
import re
import os
import shutil
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alkit.pools.tables import looks_utf16

HISTORY_ROW = "an answer a correction replaced"  # a `queue labels --history` row: no answer, and no work to keep
WHY_COLS = ("score", "rank", "cycle", "run", "strategy", "scorer", "selector")
# A spreadsheet runs a cell that starts with one of these as a formula (OWASP "CSV injection").
_FORMULA = re.compile(r"^'*[=+\-@\t\r]")
_ESCAPED = re.compile(r"^'+[=+\-@\t\r]")
# a plain number ('-2.5', '+3', '-1e5') is a number to a spreadsheet, not a formula: left as it is (a regression
# label '-2.646' came out as "'-2.646" in `queue labels`, a string to every reader)
_NUMBER = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$")
_NON_FINITE = re.compile(r"^[+-](inf|infinity|nan)$", re.IGNORECASE)  # a number column's -inf, as polars writes it
_TRUE = {"true", "t", "yes", "y", "1"}
_FALSE = {"false", "f", "no", "n", "0", ""}
_MAX_LISTED = 20


class QueueError(ValueError):
    """An export or import was refused; the message names the offending rows.  Nothing was written."""


# ---------------------------------------------------------------------------- typed results
def current_umask() -> int:
    """The process's umask (read by setting it, the only way POSIX offers, and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


STALE_TEMP_S = 600.0  # a temporary file this old was left by a writer that was killed (a write takes seconds)


TEMP_MARK = ".alkit-tmp-"  # in the name of every temporary file atomic_write makes: .queue.csv.alkit-tmp-XXXXXXXX


def _remove_stale_temps(path: Path) -> None:
    """Remove the temporary files of earlier writes of ``path`` that were killed mid-write (they piled up
    in the project folder, 0-byte and owner-only); a recent one may be another writer's, at work now."""
    now = time.time()
    # alkit's own temporaries only (TEMP_MARK): '.labels.csv.*' also took a user's backups and editor swap files
    for old in path.parent.glob(f".{glob.escape(path.name)}{TEMP_MARK}*"):
        try:
            if old.is_file() and now - old.stat().st_mtime > STALE_TEMP_S:
                old.unlink()
        except OSError:
            pass


def atomic_write(path: Path, write: Any) -> None:
    """Write through a temporary file in the same folder, so labelers never see half a file.  The file gets
    the permissions of any new file (0666 less the umask), not mkstemp's owner-only 0600: it is written to
    be handed to other people; a file rewritten keeps its own permissions (a labellers' shared, group-writable
    queue went from 664 to 644 through a link; a check)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_temps(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}{TEMP_MARK}", dir=path.parent)
    except OSError as exc:  # a read-only folder was named by the temporary file it could not make (a check)
        raise type(exc)(exc.errno, exc.strerror, str(path)) from exc
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.is_file() else 0o666 & ~current_umask())
        if path.is_file() and path.stat().st_nlink > 1:
            # a file with other hard links (a labellers' shared queue): a rename would split it from them, and
            # they kept the old queue without a word; its own inode is rewritten, from the finished temporary
            shutil.copyfile(tmp, path)
            Path(tmp).unlink()
        else:
            os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        errno_ = getattr(exc, "errno", None)
        if isinstance(exc, Exception) and errno_ is None and ("No space left on device" in str(exc)
                                                              or "os error 28" in str(exc)):
            # a writer's own words for a full disk, without errno (polars' ComputeError: a traceback, exit 1)
            raise OSError(errno.ENOSPC, "No space left on device", str(path)) from exc
        if isinstance(exc, OSError) and errno_ is not None and exc.filename in (None, tmp):
            # named by the file written, not the temporary one ('cannot use .queue.csv.3osf6sju: the path is a
            # folder' where queue.csv was one; a hostile-filesystem check)
            raise type(exc)(errno_, exc.strerror, str(path)) from exc
        raise


@dataclass(frozen=True)
class Row:
    """One decision read from a file: where it is, which item, the raw label or a skip."""

    where: str  # "line 3", "row 2", "task 5"
    item_id: str | None
    label: str | None
    skip: bool
    annotator: str | None
    # the row's cells of the project's data columns (payload, as the export wrote them), where the file has
    # them: what an import can check the id against
    data: dict[str, str | None] = field(default_factory=dict, compare=False, hash=False)

    def name(self) -> str:
        return f"{self.where} (id {self.item_id})" if self.item_id else self.where


_ROW_PROBLEM = re.compile(r"((?:line|row|task) \d+(?: \(id .*?\))?): (.+)", re.S)
_ROWS_LISTED = 5  # rows named for one problem met at many


def _brief(text: str) -> str:
    """A problem's text before its explanation (' (classes: ...; --add-class ...)', ': this project names ...')."""
    return text[:min((i for i in (text.find(" ("), text.find(": "), text.find("; ")) if i > 0), default=len(text))]


def _kind(text: str) -> str:
    """What a problem is, its quoted values left out: 'unknown class' for 'sevn' and 'eigth' alike."""
    return re.sub(r"'[^']*'", "''", _brief(text))


def grouped_problems(problems: Sequence[str]) -> list[str]:
    """``problems`` with one text met at several rows as one entry naming its first rows ("line 2 (id a), line 3
    (id b) and 23 more rows: unknown class 'virginca' (...)"); the first entry of every kind of problem first, in
    the order met, and the later ones of a kind without the explanation the first gave.  Why: 25 rows of one typo
    filled the refusal with one hint 20 times, and so did 25 different typos; the file's unknown ids after them
    were never named (checks at scale and against the fix)."""
    rows: dict[str, list[str]] = {}
    for p in problems:
        m = _ROW_PROBLEM.fullmatch(p)
        rows.setdefault(m.group(2) if m else p, []).append(m.group(1) if m else "")
    first: list[str] = []
    rest: list[str] = []
    kinds: set[str] = set()
    for text, where in rows.items():
        named = [w for w in where if w]
        kind = _kind(text)
        again = kind in kinds
        kinds.add(kind)
        shown = _brief(text) if again else text
        more = f" and {len(named) - _ROWS_LISTED} more rows" if len(named) > _ROWS_LISTED else ""
        (rest if again else first).append(f"{', '.join(named[:_ROWS_LISTED])}{more}: {shown}" if named else shown)
    return first + rest


def refuse(path: Path, problems: list[str]) -> QueueError:
    """One line: the file, that nothing was imported, and the first problems (rows named, those of one text
    together: ``grouped_problems``)."""
    groups = grouped_problems(problems)
    shown = groups[:_MAX_LISTED]
    more = f"; ... and {len(groups) - _MAX_LISTED} more" if len(groups) > _MAX_LISTED else ""
    count = f"{len(problems)} problems: " if len(problems) > 1 else ""
    return QueueError(f"{path.name}: refused, nothing imported: {count}" + "; ".join(shown) + more)


def decode(path: Path, data: bytes) -> str:
    if looks_utf16(data):  # it read as 'not valid UTF-8 (byte 0)', or as a header of 'i\x00d\x00'-named columns
        raise refuse(path, ["the file is UTF-16 text (Excel's 'Unicode Text'; NUL bytes between its characters): "
                            "save it as UTF-8 (Excel: 'CSV UTF-8')"])
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise refuse(path, [f"line {line}: not valid UTF-8 (byte {exc.start}); save the file as UTF-8"]) from None


def as_text(v: Any) -> str | None:
    """A cell as label text: None/empty stay None; whole floats lose their '.0' only via class matching."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return None if math.isnan(v) else repr(v)
    s = str(v).strip()
    return s or None


def as_id(v: Any) -> str | None:
    """A cell as an item id: exactly as written (an id may begin or end with a space: `alkit init`
    keeps ids as the data file has them, and the store matches a trimmed id where no exact one
    exists); an empty or blank cell is None."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    s = v if isinstance(v, str) else as_text(v)
    return s if s and s.strip() else None


def as_skip(v: Any, where: str, problems: list[str]) -> bool:
    if v is None or isinstance(v, bool):
        return bool(v)
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    s = str(v).strip().lower()
    if s in _TRUE:
        return True
    if s in _FALSE:
        return False
    problems.append(f"{where}: skip must be true or false, not {v!r}")
    return False


def separator_hint(header: str) -> str:
    """'; the header is one column holding semicolons: ...' where a delimited file's header line is
    written with another separator than the file's (a spreadsheet's "id";"label"), else ''."""
    sep = next((w for c, w in ((";", "semicolons"), ("\t", "tabs"), ("|", "bars")) if c in header), None)
    return (f"; the header is one column holding {sep}: alkit reads the queue file's own format (write it "
            "back with commas, or as .tsv for tabs)") if sep else ""


QUEUE_COLUMNS = ("id", "label", "skip", "annotator")


def canonical_columns(columns: Sequence[str]) -> dict[str, str]:
    """Names alkit reads written in another case (`Skip`, `Annotator`, `ID`, as a spreadsheet user types
    them) -> the name alkit reads, where that name itself is absent and only one spelling of it is there.
    Why: `Skip` and `Annotator` columns were dropped without a word (every skip and name lost), while `ID`
    was refused; a data column `Label` beside alkit's `label` stays a data column."""
    present = set(columns)
    out: dict[str, str] = {}
    for name in QUEUE_COLUMNS:
        if name in present:
            continue
        variants = [c for c in columns if c.strip().casefold() == name]
        if len(variants) == 1:
            out[variants[0]] = name
    return out


def ambiguous_columns(columns: Sequence[str]) -> str | None:
    """Where a name alkit reads is absent and two or more other spellings of it are there ('Label' and
    'LABEL'), which one holds the answers is unknown: said, not guessed (neither was read, every answer
    lost without a word, a black-box check).  An answer in another spelling beside alkit's own column
    is ``misplaced_answer``'s, row by row."""
    present = set(columns)
    for name in QUEUE_COLUMNS:
        variants = [c for c in columns if c.strip().casefold() == name]
        if name not in present and len(variants) > 1:
            return (f"columns {', '.join(map(repr, variants))} could each be alkit's {name!r} column: name the one "
                    f"alkit should read {name!r}")
    return None


def misplaced_answer(rec: dict[str, Any], data_fields: Sequence[str] = ()) -> str | None:
    """Where alkit's ``label`` (or ``skip``) cell of a record is empty and another spelling of that column
    ('Label', 'SKIP'), none of the project's exported ``data_fields``, holds a value: that answer was read
    as nothing (exit 0, '0 labeled') and the next export overwrote the file (a black-box check).  A team's
    own 'Label' column beside alkit's filled-in 'label' stays a column of theirs."""
    data = set(data_fields)

    def filled(v: Any) -> bool:  # a label, or a skip that is not false
        text = as_text(v)
        return text is not None and text.lower() not in _FALSE

    for name in ("label", "skip"):
        if name not in rec or filled(rec[name]):
            continue
        for key, value in rec.items():
            if key != name and key not in data and key.strip().casefold() == name and filled(value):
                return (f"column {key!r} holds {as_text(value)!r} where alkit's {name!r} column is empty: alkit "
                        f"reads {name!r}; put the answers there (or rename {key!r})")
    return None


def check_columns(path: Path, columns: Sequence[str], where: str = "header") -> None:
    """The file's columns hold id and label (or skip), each of the columns alkit reads once: a
    header with two label columns would have one of them read silently."""
    ambiguous = ambiguous_columns(columns)
    if ambiguous:
        raise refuse(path, [f"{where}: {ambiguous}"])
    twice = sorted({c for c in columns if columns.count(c) > 1 and c in ("id", "label", "skip", "annotator")})
    if twice:
        raise refuse(path, [f"{where}: column {', '.join(twice)} given twice; which one holds the answer is ambiguous"])
    if "id" not in columns or not ({"label", "skip"} & set(columns)):
        need = [c for c in ("id", "label") if c not in columns]
        hint = separator_hint(columns[0]) if len(columns) == 1 else ""
        raise refuse(path, [f"{where}: missing column {', '.join(need)}; found: {', '.join(columns) or '(none)'} "
                             f"(a queue file needs id and label, optionally skip and annotator){hint}"])


_READ_COLUMNS = ("id", "label", "skip", "annotator", "replaced_at")


def read_column(name: str, data_fields: Sequence[str] = ()) -> bool:
    """Whether an import reads a file's column: the answer's (in any spelling: ``misplaced_answer`` reads them),
    a --history file's replaced_at, and the project's data columns (what the ids are checked by).  Why: the 784
    pixel columns of a `queue labels --include` file were all read, 10x the memory of the answers alone (3 GB at
    28,000 rows; a check at scale)."""
    return name.strip().casefold() in _READ_COLUMNS or name in data_fields


def records_to_rows(path: Path, records: Iterable[tuple[str, dict[str, Any]]], problems: list[str],
                    data_fields: Sequence[str] = ()) -> list[Row]:
    rows = []
    for where, rec in records:
        misplaced = misplaced_answer(rec, data_fields)
        if misplaced:
            problems.append(f"{where}: {misplaced}")
            continue
        if as_text(rec.get("replaced_at")) is not None:  # read as a conflicting answer ('conflicting labels in the file')
            problems.append(f"{where}: {HISTORY_ROW} (`queue labels --history`'s replaced_at "
                            f"{as_text(rec.get('replaced_at'))}): no answer to import; import the file written without "
                            "--history")
            continue
        aliases = canonical_columns(list(rec))
        if aliases:
            rec = {aliases.get(k, k): v for k, v in rec.items()}
        item_id = as_id(rec.get("id"))
        if isinstance(rec.get("id"), float) and item_id is not None and float(item_id).is_integer():
            item_id = str(int(float(item_id)))
        named = f"{where} (id {item_id})" if item_id else where  # as every other refusal of a row names it
        rows.append(Row(where, item_id, as_text(rec.get("label")), as_skip(rec.get("skip"), named, problems),
                         as_text(rec.get("annotator")), {k: as_text(rec[k]) for k in data_fields if k in rec}))
    return rows


def escape_formula(value: str) -> str:
    """A text cell a spreadsheet will show, not run: a leading ' before =, +, -, @, tab or CR, unless the
    cell is a plain number (also before any quotes already there, so ``unescape_formula`` gives the value back exactly)."""
    return "'" + value if _FORMULA.match(value) and not _NUMBER.match(value) else value


def unescape_formula(value: str) -> str:
    """The inverse of ``escape_formula`` on what a CSV file holds."""
    return value[1:] if _ESCAPED.match(value) else value


def escape_formulas(frame: "pl.DataFrame") -> "pl.DataFrame":
    """Every text column of a frame with ``escape_formula`` applied (numbers stay numbers)."""
    import polars as pl

    # a categorical text column is text to a spreadsheet too (it was written raw: '=HYPERLINK(...)' from a
    # Parquet file's categorical payload column; an untrusted-input check), and so is a header cell
    frame = frame.with_columns(pl.col(c).cast(pl.Utf8) for c, t in frame.schema.items()
                               if isinstance(t, (pl.Categorical, pl.Enum)))
    text = [c for c, t in frame.schema.items() if t == pl.Utf8]
    frame = frame.with_columns(
        pl.when(pl.col(c).str.contains(_FORMULA.pattern) & ~pl.col(c).str.contains(_NUMBER.pattern))
        .then(pl.lit("'") + pl.col(c)).otherwise(pl.col(c)).alias(c)
        for c in text)
    renamed = {c: escape_formula(c) for c in frame.columns if escape_formula(c) != c}
    return frame.rename(renamed) if renamed else frame


def raw_formulas(cells: Iterable[str]) -> bool:
    """Whether these CSV cells (a file's ids) were written without formula escaping: one starts with a formula
    character and is no number, which an escaped file never holds.  Then no cell is unescaped (a leading ' was taken
    off every cell of every file: a label written beside id '=x in a file exported with --no-escape-formulas
    went to item =x; an untrusted-input check)."""
    return any(_FORMULA.match(c) and not c.startswith("'") and not _NUMBER.match(c) and not _NON_FINITE.match(c)
               for c in cells)
