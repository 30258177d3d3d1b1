"""Reading a user's data file (CSV, TSV, JSON Lines or Parquet) into a frame, and the error for bad input data.

Its own module because both project creation (pools/ingest.py) and the embedding command
(embed.py, which ingest also uses to encode text or image columns) read the same files.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator, Sequence
from pathlib import Path

import polars as pl


class InputError(ValueError):
    """The input data cannot become a project; the message names the column/row at fault."""


def read_table(path: Path, text_cols: Sequence[str] = (), codes_as_text: bool = False,
               encoded: str | None = None) -> pl.DataFrame:
    """The whole file as a frame (the embedding command and init's encoder path); ``text_cols``
    and ``codes_as_text`` as in TableSource; ``encoded``: a column that must hold text (TableSource.require_text)."""
    source = TableSource(path, text_cols, codes_as_text)
    if encoded:
        source.require_text(encoded)
    return source.frame(source.columns)


# a delimited text file's suffix -> its field separator
SEPARATORS = {".csv": ",", ".tsv": "\t", ".tab": "\t"}
JSON_LINES = (".jsonl", ".ndjson")  # one JSON object per line
_SEPARATOR_WORDS = {",": "commas", ";": "semicolons", "\t": "tabs"}
_KNOWN = (*SEPARATORS, *JSON_LINES, ".parquet", ".pq")
# the csv module's default cap on one field is 128 KiB: a long document in a text column made a valid data file
# "malformed" at init, and alkit's own queue.csv unreadable by `queue import` (an untrusted-input check);
# every reader of a delimited file in alkit imports this module
csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))


def _suffix(path: Path) -> str:
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    if path.is_dir():
        raise InputError(f"{path} is a folder: give a data file ({', '.join(_KNOWN)})")
    suffix = path.suffix.lower()
    if suffix not in _KNOWN:
        raise InputError(f"{path}: unsupported file type {suffix!r}; use {', '.join(_KNOWN)}")
    return suffix


class TableSource:
    """A data file read lazily: its columns and their types from the file (a CSV's or JSON Lines'
    from every row), then chosen columns whole or in batches, so init never holds every column at
    once.  Any reader failure is an InputError naming the file (and a CSV's ragged line)."""

    BATCH_ROWS = 65_536

    def __init__(self, path: Path, text_cols: Sequence[str] = (), codes_as_text: bool | Sequence[str] = False) -> None:
        """``text_cols``: CSV columns read as the text they hold, not as the numbers they may look
        like (ids: '0057' stays '0057'; inferred as an integer it came back as '57', and neither the
        queue file nor the user's own data would match it).  ``codes_as_text``: also every CSV column
        of whole numbers with a zero-padded value ('02139', '0007'), a code rather than a number
        (the embedding command, which carries the data through: ids and zip codes lost their zeros); or the
        columns named (init's label column: classes '1', '01' and '001' were read as one number)."""
        path = Path(path).absolute()  # the readers take a relative 'file:x.csv' for a URL (a black-box check)
        self.path = path
        suffix = _suffix(path)
        self.sep = SEPARATORS.get(suffix)  # None: Parquet or JSON Lines
        self.is_csv = self.sep is not None
        header = _csv_header(path, self.sep) if self.sep else None
        problem = _header_problem(header, self.sep) if header and self.sep else None
        if problem:
            raise InputError(f"cannot read {path.name}: {problem}")
        as_text = {c: pl.Utf8 for c in text_cols if header and c in header}
        self.empty_rows = 0  # rows of a delimited file with no value at all, left out
        self.first_inner_empty: int | None = None  # the line of the first such row with data after it
        if self.sep and header:
            # a row with too few fields was read with empty cells (a labelled row came in unlabelled),
            # one with too many refused: both are refused, naming the line; empty rows are left out
            ragged, self.empty_rows, self.first_inner_empty = _scan_rows(path, self.sep)
            if ragged:  # bytes that are not UTF-8 first: they can make a row look ragged
                raise _utf8_error(path) or InputError(f"cannot read {path.name}: {ragged} (every row needs one "
                                                      "value per header column)")
        self.read_path = path  # what the reader scans: a copy without the empty rows where the file has some
        if self.sep and header and (self.empty_rows or _lone_cr(path)):
            # lone CR line ends (classic Mac OS, some exporters): the reader saw one line, a header without
            # rows; the csv module reads them, as `queue import` does, and the copy ends its lines in CRLF
            self.read_path = self._without_empty_rows()
        if suffix in JSON_LINES:
            problem = _json_lines_problem(path)
            if problem:
                raise InputError(problem)
            with path.open("rb") as f:
                bom = f.read(3) == b"\xef\xbb\xbf"
            if bom:  # the reader refused it ('decode using utf-8-sig'), while queue import reads it
                self.read_path = self._without_bom()
        try:
            if self.sep:
                # types from every row: inferred from the first 10,000, a column of whole numbers with
                # a '1.5' further down refused a valid file ("could not parse `1.5` as dtype `i64`");
                # the whole-file pass costs ~0.8 s on 113 MB (500,000 x 22), a tenth of that init
                self.lazy = pl.scan_csv(self.read_path, separator=self.sep, infer_schema_length=None,
                                        schema_overrides=as_text or None, quote_char='"')
                if codes_as_text:
                    as_text |= self._zero_padded(self.lazy.collect_schema(),
                                                 None if codes_as_text is True else list(codes_as_text))
                    self.lazy = pl.scan_csv(self.read_path, separator=self.sep, infer_schema_length=None,
                                            schema_overrides=as_text or None, quote_char='"')
            elif suffix in JSON_LINES:  # ids keep their JSON type: a string id stays the text it is
                lazy = pl.scan_ndjson(self.read_path, infer_schema_length=None)  # every line: a key seen late is kept
                names = lazy.collect_schema().names()
                first = _first_json_keys(path)  # the inferred schema's order is not the file's
                self.lazy = lazy.select([*(c for c in first if c in names), *(c for c in names if c not in first)])
            else:
                self.lazy = pl.scan_parquet(path)
            if self.sep:
                self.lazy = self._header_quotes_undoubled(self.lazy)
            self.schema = self.lazy.collect_schema()
        except Exception as exc:  # noqa: BLE001 - report any parser failure as bad input
            raise self._read_error(exc) from None
        self.columns: list[str] = self.schema.names()

    def _header_quotes_undoubled(self, lazy: pl.LazyFrame) -> pl.LazyFrame:
        """The columns named as the CSV header spells them: polars keeps a quoted name's doubled quotes
        (a header cell for the name  say "hi"  was read with both quotes doubled, so `--exclude` with the
        real name named no column; an untrusted-input check); the csv module reads the header as `queue
        import` does."""
        with self.read_path.open(newline="", encoding="utf-8-sig", errors="replace") as f:
            header = next(csv.reader(f, delimiter=self.sep), None)
        names = lazy.collect_schema().names()
        if header is None or len(header) != len(names):
            return lazy
        renamed = {old: new for old, new in zip(names, header)
                   if old != new and old == new.replace('"', '""') and new not in names}
        return lazy.rename(renamed) if renamed else lazy

    def _without_bom(self) -> Path:
        """A copy of this file without its UTF-8 byte-order mark, in a temporary folder that lives as long as
        this source."""
        import shutil
        import tempfile

        self._tmp = tempfile.TemporaryDirectory(prefix="alkit-read-")
        out = Path(self._tmp.name) / self.path.name
        with self.path.open("rb") as src, out.open("wb") as dst:
            src.read(3)
            shutil.copyfileobj(src, dst)
        return out

    def _without_empty_rows(self) -> Path:
        """A copy of this delimited file without its empty rows (blank, whitespace or separators only,
        quoted empties too) and with CRLF line ends (a file of lone CRs read as a header alone), in a
        temporary folder that lives as long as this source: read in place,
        a blank line was a row of an empty id, and a row of spaces made every column text."""
        import tempfile

        self._tmp = tempfile.TemporaryDirectory(prefix="alkit-read-")
        out = Path(self._tmp.name) / self.path.name
        with self.path.open(newline="", encoding="utf-8-sig", errors="replace") as src, \
                out.open("w", newline="", encoding="utf-8") as dst:
            writer = csv.writer(dst, delimiter=self.sep, quoting=csv.QUOTE_MINIMAL)
            for fields in csv.reader(src, delimiter=self.sep):
                if not _empty_row(fields):
                    writer.writerow(fields)
        return out

    def _zero_padded(self, schema: pl.Schema, among: list[str] | None = None) -> dict[str, type[pl.Utf8]]:
        """The whole-number columns of this CSV (``among`` these, if given) with a zero-padded value, as text
        overrides."""
        ints = [c for c, t in schema.items() if (t.is_integer() or (among is not None and t.is_float()))
                and (among is None or c in among)]  # a named column: '01' beside '1.0' made it floats
        if not ints:
            return {}
        raw = pl.scan_csv(self.read_path, separator=self.sep, infer_schema=False, quote_char='"').select(ints)
        padded = raw.select(pl.col(c).str.contains(r"^\s*[+-]?0[0-9]").any() for c in ints).collect().row(0)
        return {c: pl.Utf8 for c, hit in zip(ints, padded) if hit}

    def require_text(self, column: str) -> None:
        """Refuse a JSON Lines file that holds something other than a string (or null) in ``column``,
        naming the first such line ('line 2 holds a list'): the reader turns a list or a number into
        its JSON text, which would be embedded as if it were the item's text.  Other formats have
        typed columns, checked where they are read."""
        if self.path.suffix.lower() not in JSON_LINES:
            return
        with self.path.open(encoding="utf-8-sig", errors="replace") as f:
            for number, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    value = json.loads(line).get(column)
                except (json.JSONDecodeError, AttributeError):
                    return  # the reader names a bad line
                if value is not None and not isinstance(value, str):
                    kind = {list: "a list", dict: "an object", bool: "true/false"}.get(type(value), "a number")
                    raise InputError(f"{self.path.name}: line {number} holds {kind} in {column!r}, not text")

    def frame(self, columns: list[str | pl.Expr]) -> pl.DataFrame:
        """These columns (or expressions of them) of every row in file order; a file without rows is refused."""
        try:
            df = self.lazy.select(columns).collect()
        except Exception as exc:  # noqa: BLE001
            raise self._read_error(exc) from None
        if df.height == 0:
            raise InputError(f"{self.path} has no rows")
        return df

    def batches(self, columns: list[str]) -> Iterator[pl.DataFrame]:
        """These columns in consecutive blocks of rows, in file order (a streaming read).  A CSV's
        lines are parsed whole: reading only some columns would pass over a line with extra fields,
        which a whole-file read refuses."""
        query = self.lazy if self.is_csv else self.lazy.select(columns)
        batches = iter(query.collect_batches(chunk_size=self.BATCH_ROWS))
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except Exception as exc:  # noqa: BLE001 - a bad cell far down a CSV surfaces only here
                raise self._read_error(exc) from None
            yield batch.select(columns) if self.is_csv else batch

    def _read_error(self, exc: BaseException) -> InputError:
        path = self.path
        if "utf-8" in str(exc).lower() and path.suffix.lower() not in (".parquet", ".pq"):
            utf8 = _utf8_error(path)
            if utf8:
                return utf8
        if self.sep:  # ragged rows were refused before reading, but for a file whose first line is blank
            where = _ragged_line(path, self.sep)
            if where:
                return InputError(f"cannot read {path.name}: {where} (every row needs one value per header column)")
            where = _stray_quote(path, self.sep)
            if where:
                return InputError(f"cannot read {path.name}: {where}")
        elif path.suffix.lower() in JSON_LINES:
            where = _bad_json_line(path)
            if where:
                return InputError(f"cannot read {path.name}: {where}")
        first = next((ln for ln in str(exc).splitlines() if ln.strip()), type(exc).__name__)
        return InputError(f"cannot read {path.name}: {first}")


def _utf8_error(path: Path) -> InputError | None:
    where = _non_utf8_line(path)
    if where is None:
        return None
    return InputError(f"cannot read {path.name}: {where}; save the file as UTF-8 (e.g. from a spreadsheet: CSV UTF-8)")


def _csv_header(path: Path, sep: str) -> list[str] | None:
    """A delimited file's header fields (a byte-order mark dropped), or None where there is none
    to read (the reader then reports the file)."""
    try:
        with path.open(newline="", encoding="utf-8-sig", errors="replace") as f:
            return next(csv.reader(f, delimiter=sep), None)
    except (OSError, csv.Error):
        return None


def _header_problem(header: list[str], sep: str) -> str | None:
    """What is wrong with a delimited file's header, or None: a column name given twice (polars
    would rename the second 'a' to 'a_duplicated_0', and --features a could mean either), or one
    field that holds another separator (a file written with it: alkit reads commas from .csv,
    tabs from .tsv)."""
    if header and header[0].strip().lower().startswith("sep=") and all(not h.strip() for h in header[1:]):
        return (f"its first line {sep.join(header)!r} is Excel's separator hint, not a header: delete that line "
                "(the header is the line after it)")
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if name in seen and name != "":  # unnamed columns: ingest names the problem where it matters
            return f"the header names column {name!r} twice (fields {seen[name]} and {i}); every column needs its own name"
        seen.setdefault(name, i)
    if len(header) == 1:
        for other, word in _SEPARATOR_WORDS.items():
            if other != sep and other in header[0]:
                expected = "comma-separated CSV from .csv" if sep == "," else "tab-separated text from .tsv"
                hint = " (or name it .tsv)" if other == "\t" else " (or name it .csv)" if other == "," else ""
                return (f"the header is one field, {header[0]!r}, split by {word}: alkit reads {expected}; "
                        f"write the file with {_SEPARATOR_WORDS[sep]}{hint} or as Parquet")
    return None


def looks_utf16(data: bytes) -> bool:
    """UTF-16 (or UTF-32) text: a byte-order mark (FF FE / FE FF, which UTF-8 never starts with), or without
    one a NUL in every other byte of its start (the high bytes of ASCII characters).  A NUL character in
    UTF-8 text (a cell may hold one) has no such pattern; CJK or Cyrillic UTF-16 has it only after its
    BOM, which was therefore missed as 'not UTF-8 (byte 0xff)' (a black-box check)."""
    if data[:2] in (b"\xff\xfe", b"\xfe\xff") or data[:4] == b"\x00\x00\xfe\xff":
        return True
    head = data[:32]
    return len(head) >= 4 and (not any(head[1::2]) or not any(head[0::2]))


def _non_utf8_line(path: Path) -> str | None:
    """The first line of a text file that is not UTF-8, with the offending byte (a file saved as
    Latin-1 or Windows-1252: 'café' as b'caf\\xe9')."""
    with path.open("rb") as f:
        if looks_utf16(f.read(34)):  # it read as 'Latin-1 or Windows-1252?'
            return "it is UTF-16 text (Excel's 'Unicode Text')"
        f.seek(0)
        for number, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                return (f"line {number} is not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}; "
                        "Latin-1 or Windows-1252?)")
    return None


def _first_json_keys(path: Path) -> list[str]:
    """The keys of a JSON Lines file's first object, in the order the file writes them."""
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for line in f:
            if line.strip():
                try:
                    value = json.loads(line)
                except json.JSONDecodeError:
                    return []  # the reader names the line
                return list(value) if isinstance(value, dict) else []
    return []


def _bad_json_line(path: Path) -> str | None:
    """The first line of a JSON Lines file that is not one JSON object, and why."""
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                value = json.loads(line.rstrip(), parse_constant=_no_constant)
            except json.JSONDecodeError as exc:
                return f"line {number} is not valid JSON ({exc.msg} at column {exc.colno})"
            except ValueError as exc:  # NaN / Infinity: Python's json.dumps writes them, JSON has no such value
                return (f"line {number} holds {exc}, which is not JSON (Python's json.dumps writes it for a float "
                        "nan or inf): write null for a missing value")
            if not isinstance(value, dict):
                return f"line {number} is a JSON {type(value).__name__}, not an object of column values"
    return _mixed_json_types(path)


def _json_kind(value: object) -> str | None:
    """A JSON value's kind as the reader types a column (ints and floats alike: numbers), None for null."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    return {str: "text", dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


def first_inner_blank_line(path: Path) -> int | None:
    """The line of a text file's first blank line with content after it, else None (JSON Lines readers skip blank
    lines, so row numbers as ids would skip it: line 32 became item 31; a black-box check)."""
    blank = None
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                blank = blank or number
            elif blank is not None:
                return blank
    return None


def first_mixed_json(path: Path, keys: Sequence[str] | None = None) -> tuple[int, str, str, object, int, str] | None:
    """(line, key, kind, value, first line, first kind) of the first line of a JSON Lines file whose value of a key
    (of ``keys``, default any) is of another JSON kind than that key's earlier values, else None."""
    first: dict[str, tuple[str, int]] = {}
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            for key, value in record.items() if isinstance(record, dict) else ():
                kind = _json_kind(value)
                if kind is None or (keys is not None and key not in keys):
                    continue
                seen = first.setdefault(key, (kind, number))
                if seen[0] != kind:
                    return number, key, kind, value, seen[1], seen[0]
    return None


def _mixed_json_types(path: Path) -> str | None:
    """The first line whose value of a key is of another JSON kind than that key's earlier values (a number
    beside true, as a JSON export of a spreadsheet column writes them): the reader refused it naming neither the
    key nor the line ("cannot parse 'true' (bool) as Int64"; a black-box check)."""
    found = first_mixed_json(path)
    if found is None:
        return None
    number, key, kind, value, seen_line, seen_kind = found
    return (f"line {number}: {key!r} holds {kind} ({json.dumps(value)[:30]}) where line {seen_line} holds {seen_kind}: "
            "give each key values of one kind (e.g. true/false as 1/0, or every value as text in quotes)")


def _no_constant(name: str) -> float:
    raise ValueError(name)


def _lone_cr(path: Path) -> bool:
    """Whether a text file's lines end in a lone carriage return: its first line does (a quoted cell further
    down may hold an LF of its own)."""
    with path.open("rb") as f:
        head = f.read(65_536)
    ends = [i for i in (head.find(b"\r"), head.find(b"\n")) if i >= 0]
    first = min(ends) if ends else -1
    return first >= 0 and head[first:first + 1] == b"\r" and head[first + 1:first + 2] != b"\n"


def _json_lines_problem(path: Path) -> str | None:
    """What the reader would fail on, or take wrongly, in a JSON Lines file, in one pass over it: no line
    but blank ones (its message was about inferring types on an empty reader), lone CR line ends (an
    internal error about a tape), or half a UTF-16 surrogate pair ("\\ud83d": an emoji cut in two, as
    json.dumps writes a text cut inside one), which it turned into a NUL character without a word (two ids
    became one) or refused in words of its own."""
    if _lone_cr(path):
        return (f"cannot read {path.name}: its lines end in a lone carriage return (CR); save it with LF line "
                "ends, one JSON object per line")
    content = False
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            content = content or bool(line.strip())
            if "\\ud" not in line.lower():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                return None  # the reader names a bad line
            for key, value in record.items() if isinstance(record, dict) else ():
                if isinstance(value, str) and any("\ud800" <= ch <= "\udfff" for ch in value):
                    return (f"cannot read {path.name}: line {number}: {key!r} holds half of a UTF-16 surrogate pair "
                            "(an emoji or other character cut in two); repair or drop that character")
    return None if content else f"{path} has no rows"


def _stray_quote(path: Path, sep: str) -> str | None:
    """The first line with a quote inside a field that does not start with one (5" tall), which the
    reader refuses with a row count of an internal chunk; None where there is none."""
    with path.open(encoding="utf-8", errors="replace", newline="") as f:
        for number, line in enumerate(f, start=1):
            for field in line.rstrip("\r\n").split(sep):
                if '"' in field.strip()[1:] and not field.strip().startswith('"'):
                    return (f"line {number} has a quote inside an unquoted field ({field.strip()[:30]}): quote the "
                            'field and double the quote ("5"" tall"), as spreadsheets write it')
    return None


def _ragged_line(path: Path, sep: str) -> str | None:
    """Where a delimited file first has a row with another number of fields than its header."""
    return _scan_rows(path, sep)[0]


def _empty_row(fields: list[str]) -> bool:
    """A row with no value: a blank or whitespace line, separators only, quoted empties."""
    return not any(field.strip() for field in fields)


def _scan_rows(path: Path, sep: str) -> tuple[str | None, int, int | None]:
    """One pass over a delimited file's rows (the csv module: quotes and quoted newlines as the
    reader takes them): where it first has a row with another number of fields than its header,
    how many rows hold no value at all (a blank line, or only separators: an editor's or a
    spreadsheet's trailing line), and the line of the first such row that has data after it (row
    numbers as ids would skip it).  ~1.5 s on a 133 MB file whose init takes 32 s."""
    empty, pending, inner = 0, None, None
    try:
        with path.open(newline="", encoding="utf-8", errors="replace") as f:
            reader = csv.reader(f, delimiter=sep)
            header = next(reader, None)
            if header is None:
                return None, 0, None
            start = reader.line_num + 1
            for fields in reader:
                if _empty_row(fields) and len(fields) <= len(header):
                    empty += 1
                    pending = start if pending is None else pending
                elif len(fields) != len(header):
                    if reader.line_num > start:  # a quote left open runs the row on over the next lines
                        return (f"the row starting on line {start} has {len(fields)} fields, the header "
                                f"{len(header)}: a quote opened there is not closed before line {reader.line_num}"), empty, inner
                    return f"line {start} has {len(fields)} fields, the header {len(header)}", empty, inner
                elif pending is not None:
                    inner = pending if inner is None else inner
                    pending = None
                start = reader.line_num + 1
    except csv.Error as exc:
        return f"malformed CSV ({exc})", empty, inner
    return None, empty, inner
