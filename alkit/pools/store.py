"""Store: every state change of a project is one transaction here.

SQLite (WAL mode, busy timeout) by default; any SQLAlchemy URL works, so PostgreSQL needs no
code change.  The store never holds features: those live in Parquet (alkit/pools/features.py).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import unicodedata
import uuid
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Iterator

import numpy as np
from sqlalchemy import create_engine, delete, event, func, insert, inspect, select, update
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, OperationalError, ProgrammingError
from sqlalchemy.orm import Session, sessionmaker

from alkit.choices import fold_case
from alkit.config import store_identity
from alkit.errors import StoreError  # noqa: F401 (re-exported: alkit.pools.store.StoreError)
from alkit.pools.schema import (SCHEMA_VERSION, Base, CycleRow, CycleSignals, Item, Label, Meta, Run, SelectionRow,
                                utcnow)


def write_lock(s: Session) -> None:
    """Take the write lock before reading, so validate-then-write cannot race another writer.

    SQLite: the first statement of the transaction is a write, so it waits on busy_timeout for
    the RESERVED lock instead of failing later on a stale read snapshot.  PostgreSQL: a row lock.
    """
    s.execute(update(Meta).where(Meta.key == "schema_version").values(value=Meta.value))


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA synchronous=NORMAL")  # durable across process kills in WAL mode
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA busy_timeout=60000")
    cur.close()


_NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def _encode_nonfinite(value: Any) -> Any:
    """NaN/inf -> "NaN"/"Infinity"/"-Infinity", recursively (PostgreSQL's json refuses the bare tokens)."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _encode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encode_nonfinite(v) for v in value]
    return value


def _decode_nonfinite(value: Any) -> Any:
    if isinstance(value, str):
        return _NONFINITE.get(value, value)
    if isinstance(value, dict):
        return {k: _decode_nonfinite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode_nonfinite(v) for v in value]
    return value


def _pg_json_dumps(value: Any) -> str:
    return json.dumps(_encode_nonfinite(value))


def _pg_json_loads(text_: str | Any) -> Any:
    return _decode_nonfinite(json.loads(text_) if isinstance(text_, (str, bytes)) else text_)


def _read_only_engine(uri: str) -> Engine:
    """An engine over a SQLite URI opened read-only (``_read_only_uri``), without the WAL pragmas."""
    import sqlite3

    return create_engine("sqlite://", creator=lambda: sqlite3.connect(uri, uri=True, timeout=60, check_same_thread=False))


_OPEN_ENGINES: "weakref.WeakSet[Engine]" = weakref.WeakSet()


@atexit.register
def _dispose_open_engines() -> None:
    """Close every store connection at exit.  Why: SQLite removes its -wal and -shm files when the last
    connection closes; a command refused after opening the store (``run --budget 0``) left them
    beside alkit.db, so a refusal did not leave the project folder as it found it."""
    for engine in list(_OPEN_ENGINES):
        engine.dispose()


def make_engine(url: str) -> Engine:
    """An engine for the store URL.  SQLite: WAL and a busy timeout so concurrent processes wait
    instead of failing.  PostgreSQL (``postgresql+psycopg://``): pre-ping so a restarted server
    is survived; NaN/inf in JSON (a metric can be undefined) round-trip through the strings
    "NaN"/"Infinity"/"-Infinity", which its json type accepts, so both backends read back floats."""
    if url.startswith("sqlite"):
        # a file path goes in as the database itself: in a URL string SQLAlchemy decodes %XX and reads '?' as
        # options, so a project under 'My%20Files' opened the store of 'My Files' (a black-box check)
        path = sqlite_file(url)
        target = URL.create("sqlite", database=str(path)) if path is not None else url
        engine = create_engine(target, connect_args={"timeout": 60})
        event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    if url.startswith("postgres://"):  # the DATABASE_URL spelling: SQLAlchemy has no dialect of that name
        raise StoreError("a postgres:// URL: write it postgresql+psycopg://... (the driver alkit[postgres] installs)")
    if url.startswith("postgresql"):
        import logging

        # psycopg logs a lost connection's pipeline ('error ignored terminating <psycopg.Pipeline [BAD]>') beside the
        # one line the outage gets (a PostgreSQL check)
        logging.getLogger("psycopg").setLevel(logging.CRITICAL)
        try:
            return create_engine(url, pool_pre_ping=True, json_serializer=_pg_json_dumps,
                                 json_deserializer=_pg_json_loads)
        except ModuleNotFoundError as exc:
            if exc.name == "psycopg2":  # alkit[postgres] installs psycopg 3: the hint changed nothing
                raise StoreError("postgresql+psycopg2:// needs psycopg2, which alkit does not install: write the URL "
                                 "postgresql+psycopg://... (psycopg 3, pip install 'alkit[postgres]')") from None
            raise StoreError(
                f"{exc.name} is needed for a PostgreSQL store: pip install 'alkit[postgres]'"
            ) from None
    try:
        return create_engine(url, pool_pre_ping=True)
    except ModuleNotFoundError as exc:  # e.g. mysql:// without mysqlclient
        backend = url.split(":", 1)[0]
        raise StoreError(f"the {backend} store needs the Python package that provides {exc.name!r} "
                         f"(install the driver SQLAlchemy names for {backend}, e.g. pip install mysqlclient "
                         "for mysql://, or use a SQLite or PostgreSQL store)") from None
    except (ArgumentError, NoSuchModuleError) as exc:  # malformed URL, unknown dialect (no URL in the message)
        raise StoreError(f"cannot use the store URL: {type(exc).__name__} (see --store's documented forms)") from None


_SERVER_AWAY = ("Connection refused", "No such file or directory", "connection is bad", "server closed the connection",
                "timeout expired", "the database system is starting up", "the database system is shutting down")


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL (None for other backends and in-memory databases)."""
    if not url.startswith("sqlite"):
        return None
    if url.startswith("sqlite:///"):  # the path as written: alkit writes paths, not URL-encoded text ('%20', '?')
        database = url[len("sqlite:///"):]
        return None if database in ("", ":memory:") or database.startswith("file:") else Path(database)
    database = make_url(url).database
    return None if database in (None, "", ":memory:") or database.startswith("file:") else Path(database)


def _check_lengths(rows: list[dict[str, Any]], columns: dict[str, Any]) -> None:
    """Refuse values longer than their VARCHAR: PostgreSQL enforces the length, SQLite does not,
    so checking here gives one clear error on every backend instead of a driver error on one."""
    for name, col in columns.items():
        limit = col.type.length
        for row in rows:
            v = row.get(name)
            if v is not None and len(str(v)) > limit:
                raise StoreError(f"{name} {str(v)[:40]!r}... is {len(str(v))} characters; the store allows {limit}")


@dataclass(frozen=True)
class RunSpec:
    """What identifies a run and how it is driven (stored in runs.config)."""

    name: str
    strategy: str
    scorer: str
    seed: int
    budget: int
    batch_size: int
    initial: int
    options: dict[str, Any]


SKIP = object()  # a person's decision "skip this item" (no label row; who skipped is kept in meta)
_CHUNK = 5_000


class ImportRefused(StoreError):
    """An import that would break an invariant; ``problems`` names every offending row."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(f"{len(problems)} problems")
        self.problems = problems


def _chunks(seq: Sequence[Any], n: int = _CHUNK) -> Iterable[Sequence[Any]]:
    for start in range(0, len(seq), n):
        yield seq[start : start + n]


def last_queued_cycles(s: Session, keys: Sequence[int]) -> dict[int, int]:
    """item key -> the last cycle any run queued it in (keys no run queued are absent), read in chunks
    of the store's IN-list size: import's record of a label's cycle (`queue labels` reads a skip's from queuing_runs,
    which it reads anyway)."""
    cycles: dict[int, int] = {}
    for chunk in _chunks(keys):
        cycles.update({int(k): int(c) for k, c in s.execute(
            select(SelectionRow.item_key, func.max(SelectionRow.cycle))
            .where(SelectionRow.item_key.in_(chunk)).group_by(SelectionRow.item_key))})
    return cycles


def queuing_runs(s: Session, keys: Sequence[int]) -> dict[tuple[int, int], list[str]]:
    """(item key, cycle) -> the names of the runs that queued the item in that cycle, in run order.  Why:
    each run counts its own cycles, so with several runs on a project a label's cycle alone does not say
    whose queue it answered (`queue labels`' run column)."""
    runs: dict[tuple[int, int], list[str]] = {}
    for chunk in _chunks(sorted(set(keys))):
        for k, c, name in s.execute(
                select(SelectionRow.item_key, SelectionRow.cycle, Run.name).join(Run, Run.id == SelectionRow.run_id)
                .where(SelectionRow.item_key.in_(chunk)).order_by(SelectionRow.run_id)):
            runs.setdefault((int(k), int(c)), []).append(name)
    return runs


def _batched(rows: Iterable[Any], n: int) -> Iterator[list[Any]]:
    """Consecutive lists of ``n`` rows (the last one shorter) from any iterable, a generator included."""
    it = iter(rows)
    while chunk := list(islice(it, n)):
        yield chunk


def show_decision(decision: Any) -> str:
    """A decision as the refusal messages name it."""
    return "skip" if decision is SKIP else repr(decision)


def curve_cycles(rows: Sequence[CycleRow], next_n_labeled: int | None = None) -> list[CycleRow]:
    """One run's cycles (in cycle order) as points of its learning curve: the last cycle of each
    label count.  Two cycles fit on the same labels where a run is extended after its budget was
    spent (the evaluation-only last cycle, then the first new cycle on the same labels) or where
    every item of a batch was skipped; the later fit supersedes the earlier one.
    ``next_n_labeled``: the label count of a cycle not yet committed, which supersedes the last
    row too.  A team's run can learn from fewer labels than before (an answer turned into a skip
    with --on-conflict replace, then a batch all skipped: 10, 18, 17 labels): a fit supersedes every
    earlier one on as many labels or more, so the curve stays in fit order and ends on the latest
    fit (sorted by label count it had ended on the older fit at 18)."""
    kept: list[CycleRow] = []
    fewest = float("inf") if next_n_labeled is None else next_n_labeled  # the fewest labels of a later fit
    for r in reversed(list(rows)):
        if r.n_labeled < fewest:
            kept.append(r)
        fewest = min(fewest, r.n_labeled)
    return kept[::-1]


# The run options that define its method (the acquisition, the learner's and the training loop's
# options, the candidates, strata and the first batch's selector): a run continued under its name
# with other values would change method mid-run while its record kept the old ones.  Where it runs
# (engine, ray_address) and its stopping rules may change.
METHOD_OPTIONS = ("acquisition", "learner", "train", "candidates", "stratify_by", "initial_selector", "code")


def as_json(value: Any) -> Any:
    """``value`` as the store's JSON column reads it back (tuples as lists), for comparison."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


def _show_option(value: Any) -> str:
    """An option value as a refusal names it: a dict of options as k=v pairs."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v!r}" for k, v in sorted(value.items())) + "}" if value else "{} (defaults)"
    return "the default" if value is None else repr(value)  # 'candidates=None' read as an internal value


def _read_only_uri(db_file: Path) -> str | None:
    """The SQLite URI to read a store whose file or folder is read-only, or None where it is writable.

    Why: SQLite in WAL mode creates alkit.db-wal / -shm beside the file, so a project on a read-only
    share could not even show `alkit status`.  ``immutable=1`` reads the file alone, which is exact
    only when no write-ahead log holds pages the file lacks: with a non-empty -wal it stays refused."""
    if os.access(db_file, os.W_OK) and os.access(db_file.parent, os.W_OK):
        return None
    wal = db_file.with_name(db_file.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        raise StoreError(f"the store {db_file} is read-only (the file or its folder) and its write-ahead log "
                         f"{wal.name} holds changes not yet in it: open it once where it is writable")
    return f"{db_file.resolve().as_uri()}?mode=ro&immutable=1"



def _zeros_hint(s: Any, unknown: list[str]) -> str | None:
    """Unknown ids that are queued ids less their leading zeros: a spreadsheet read 00157 as the
    number 157 and saved it so; every such row was refused as an unknown id, with no why."""
    digits = {k.strip() for k in unknown if k.strip().isdigit()}
    if not digits:
        return None
    lost: dict[str, str] = {}
    for item_id in s.scalars(select(Item.item_id).where(Item.state == "queued", Item.item_id.like("0%"))):
        short = item_id.strip().lstrip("0") or "0"
        if short in digits and short != item_id.strip():
            lost[short] = item_id
    if not lost:
        return None
    shown = ", ".join(f"{k} (queued as {v})" for k, v in list(lost.items())[:3])
    return (f"ids {shown}{' ...' if len(lost) > 3 else ''} lost their leading zeros (a spreadsheet read them as "
            "numbers): format the id column as text before saving, or fill in the file alkit wrote in a text editor")

def _known_ids(s: Any, candidates: list[str]) -> list[str]:
    """Which of ``candidates`` are ids of the store's items (none asked: none)."""
    return list(s.scalars(select(Item.item_id).where(Item.item_id.in_(candidates)))) if candidates else []


def _float_id_hint(s: Any, unknown: list[str]) -> str | None:
    """Unknown ids that are whole-number ids written as floats: pandas writes 34007 as 34007.0 and a
    spreadsheet as 3.40E+04; every such row was a bare 'unknown id'."""
    whole: dict[str, str] = {}
    for k in unknown[:1000]:
        t = k.strip()
        if t.isdigit():
            continue
        try:
            x = float(t)
        except ValueError:
            continue
        if math.isfinite(x) and x == int(x) and abs(x) < 2**53:
            whole[str(int(x))] = k
    known = _known_ids(s, list(whole))
    if known:
        return (f"ids such as {whole[known[0]]!r} are the id {known[0]!r} written as a decimal number (pandas' 34007.0, "
                "a spreadsheet's 3.40E+04): write the id column as text or whole numbers")
    if not whole:
        return None
    # a queued 00157 read as a number and saved as 157.0: both its leading zeros and its form lost
    for item_id in s.scalars(select(Item.item_id).where(Item.state == "queued", Item.item_id.like("0%"))):
        short = item_id.strip().lstrip("0") or "0"
        if short in whole and short != item_id.strip():
            return (f"ids such as {whole[short]!r} are the queued id {item_id!r} written as a number (a spreadsheet "
                    "dropped its leading zeros and wrote it as a decimal): format the id column as text before "
                    "saving, or fill in the file alkit wrote in a text editor")
    return None


def _names_differ(given: list[str], made: list[str]) -> str:
    """Where two feature_cols lists part, in a few words (a list of 784 pixel names is no message)."""
    at = next((i for i, (a, b) in enumerate(zip(given, made)) if a != b), min(len(given), len(made)))
    return (f"feature_cols that differ from the store's record from position {at + 1} on ("
            f"{given[at] if at < len(given) else 'nothing'!r} where it recorded "
            f"{made[at] if at < len(made) else 'nothing'!r})")


def _respelt_hint(s: Any, unknown: list[str], respell: Callable[[str], list[str]], why: str) -> str | None:
    """Unknown ids that ``respell`` turns into known ids: 'ids such as <theirs> are <known> <why>', else None."""
    fixed: dict[str, str] = {}
    for k in unknown[:1000]:
        for back in respell(k):
            if back != k:
                fixed[back] = k
    known = _known_ids(s, list(fixed))
    return f"ids such as {fixed[known[0]]!r} are {known[0]!r} {why}" if known else None


def utf8_misread(text: str) -> str | None:
    """``text`` as it was before UTF-8 bytes were read as Windows-1252 or Latin-1 ('cafÃ©' -> 'café'), else None."""
    for wrong in ("cp1252", "latin-1"):
        try:
            back = text.encode(wrong).decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            continue
        return back if back != text else None
    return None


def _mojibake_hint(s: Any, unknown: list[str]) -> str | None:
    """Unknown ids that are known ids read through the wrong encoding: Excel opens a UTF-8 CSV as
    Windows-1252 ('é' becomes 'Ã©') and saves it so; every row was an unknown id, with no why."""
    def decoded(k: str) -> list[str]:
        back = utf8_misread(k)
        return [back] if back is not None else []

    return _respelt_hint(s, unknown, decoded, "read in the wrong text encoding (a spreadsheet opened the UTF-8 file "
                         "as Windows-1252): open it with UTF-8 (in Excel: Data > From Text/CSV, File origin 65001: "
                         "Unicode (UTF-8)), or fill in the file alkit wrote in a text editor")


def _unicode_form_hint(s: Any, unknown: list[str]) -> str | None:
    """Unknown ids that are known ids in another Unicode form: 'café' with a composed é beside the
    item's e + combining accent look alike and were a bare 'unknown id' (an untrusted-input check)."""
    return _respelt_hint(s, unknown, lambda k: [unicodedata.normalize(f, k) for f in ("NFC", "NFD")],
                         "in another Unicode form (the same letters, composed or with combining accents, as some "
                         "editors and file systems save them): write the ids as the file alkit wrote has them")


SQLITE_PATH_MAX = 511  # bytes of a database file's full path SQLite opens (its default SQLITE_MAX_PATHNAME 512)


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of ``path``, or None where it is gone."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino


class Store:
    def __init__(self, url: str, *, create: bool = False) -> None:
        self.url = url
        db_file = sqlite_file(url)
        if not create and db_file is not None and not db_file.exists():  # connecting would create an empty one
            raise StoreError(f"the store {db_file} does not exist; a store is only created by `alkit init` "
                             "(restore the file, or point alkit.toml's store at the right one)")
        if db_file is not None and db_file.is_dir():  # SQLite said 'disk I/O error' (a hostile-filesystem check)
            raise StoreError(f"the store {db_file} is a folder, not a file: restore alkit.db there (a store is only "
                             "created by `alkit init`)")
        self.read_only = _read_only_uri(db_file) if not create and db_file is not None else None
        if not create and db_file is not None:
            self._check_schema(db_file)  # before the engine's pragmas switch a foreign file to WAL
        self.engine = make_engine(url) if self.read_only is None else _read_only_engine(self.read_only)
        _OPEN_ENGINES.add(self.engine)
        if db_file is not None and self.read_only is None and not create:
            # the read-only schema check may leave -wal/-shm behind (a read-only connection cannot remove
            # them); one pooled writer connection, closed at exit, is the last to close and removes them
            with self.engine.connect():
                pass
        self.created_tables: list[str] = []  # create=True: the tables this call made (a failed init drops them)
        if create:
            try:
                existing = set(inspect(self.engine).get_table_names())
                clash = sorted(existing & set(Base.metadata.tables))
                if clash and "meta" not in existing:  # another application's tables of alkit's names: create_all
                    # skipped them and failed on their columns with a traceback (a PostgreSQL check)
                    self.engine.dispose()
                    raise StoreError(f"cannot create the store at {self._safe_url()}: the database holds tables named "
                                     f"as alkit's ({', '.join(clash)}); use an empty database")
                Base.metadata.create_all(self.engine)
                self.created_tables = [t for t in Base.metadata.tables if t not in existing]
            except (OperationalError, ProgrammingError) as exc:  # e.g. PostgreSQL's 'permission denied for schema
                # public' (a role without CREATE): a traceback before
                self.engine.dispose()
                if db_file is None and isinstance(exc, OperationalError) and any(m in str(exc) for m in _SERVER_AWAY):
                    raise  # the outage every command names (exit 1: run it again when the server is back); init
                    # said 'cannot create the store', exit 2, bad input to a retry script (a black-box check)
                reason = str(exc.orig or exc).strip().splitlines()[0]
                size = len(str(db_file.resolve()).encode()) if db_file is not None else 0
                if size > SQLITE_PATH_MAX:  # SQLite's own limit: it said only 'unable to open database file'
                    reason += (f" (its path is {size} bytes long, beyond the {SQLITE_PATH_MAX} SQLite takes: make the "
                               "project in a folder with a shorter path)")
                raise StoreError(f"cannot create the store at {self._safe_url()}: {reason}") from exc
        self._sessions = sessionmaker(self.engine, expire_on_commit=False)
        if not create and db_file is None:
            self._check_schema(None)
        self._db_file = db_file.resolve() if db_file is not None and db_file.exists() else None
        self._file_id = _file_id(self._db_file) if self._db_file is not None else None

    def check_file(self) -> None:
        """The SQLite file must still be the one this Store opened.  Deleted (or replaced) under a running command,
        SQLite goes on writing into the unlinked file: a run went on to 'complete' and every cycle since was lost
        with it.  A loop calls this before each cycle, so it stops at the next one with this line."""
        if self._db_file is None or self._file_id is None:
            return
        now = _file_id(self._db_file)
        if now is None:
            raise StoreError(f"the store {self._db_file} was moved or deleted while this command ran, which stopped: if "
                             "its folder was moved, the store there holds every cycle, so run the same command on the "
                             "new path; if it was deleted, what it wrote since went with it: restore alkit.db (a store "
                             "is only created by `alkit init`)")
        if now != self._file_id:  # SQLite's -wal and -shm beside it still belong to the file this command had open
            raise StoreError(f"the store {self._db_file} was replaced by another file while this command ran, which "
                             "stopped; its last writes may have reached the new file through alkit.db-wal: check it "
                             "with `alkit status`, and replace a store only while no alkit command uses it")

    @staticmethod
    def table_names() -> list[str]:
        """The tables of alkit's schema."""
        return list(Base.metadata.tables)

    @staticmethod
    def drop_created(url: str, tables: list[str], init_token: str | None = None) -> bool:
        """Drop the tables a failed ``alkit init`` created in an external store (and nothing else); with
        ``init_token``, only where the store is still the one that init filled (its ``init_token`` in meta):
        a killed init's empty tables may since have been taken by another project's init, whose labels a drop
        by table names alone erased (a black-box check).  True if dropped."""
        engine = make_engine(url)
        try:
            if init_token is not None:
                with engine.connect() as conn:
                    if "meta" not in inspect(conn).get_table_names():
                        return False
                    held = conn.execute(select(Meta.value).where(Meta.key == "init_token")).scalar()
                if held != init_token:
                    return False
            Base.metadata.drop_all(engine, tables=[Base.metadata.tables[t] for t in tables])
            return True
        finally:
            engine.dispose()

    def _safe_url(self) -> str:
        """The URL with any password masked, for messages (a SQLite URL has none, and is a path as written)."""
        return self.url if self.url.startswith("sqlite") else make_url(self.url).render_as_string(hide_password=True)

    def _check_schema(self, db_file: Path | None) -> None:
        """Refuse a store that is not an alkit store of this schema.  A SQLite file is read read-only
        and before the engine exists: the engine's connect pragmas (journal_mode=WAL) would rewrite
        someone else's database before it was refused."""
        sidecars = [] if db_file is None else [db_file.with_name(db_file.name + x) for x in ("-wal", "-shm")]
        made = [f for f in sidecars if not f.exists()]  # a refused store is left as it was found
        try:
            if db_file is not None:
                import sqlite3

                uri = self.read_only or f"{db_file.resolve().as_uri()}?mode=ro"
                journal = db_file.with_name(db_file.name + "-journal")
                if self.read_only is None and journal.exists():  # a rollback journal a killed writer left: only a
                    uri = str(db_file)  # writable open rolls it back, as any SQLite client does; read-only, every
                    # command was refused, 'attempt to write a readonly database' (a hostile-filesystem check)
                with closing(sqlite3.connect(uri, uri=uri != str(db_file), timeout=60)) as db:
                    row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
                version = None if row is None else row[0]
            else:
                with self.session() as s:
                    meta = s.get(Meta, "schema_version")
                version = None if meta is None else meta.value
        except Exception as exc:  # noqa: BLE001 - any driver error means "not an alkit store"
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            if db_file is None and isinstance(exc, OperationalError) and any(m in str(exc) for m in _SERVER_AWAY):
                raise  # a server down or out of reach: the outage the commands name (exit 1, run again when it is
                # back); 'is not an alkit store', exit 2, told a retry script it was bad input (a PostgreSQL check)
            if any(w in reason for w in ("malformed", "not a database", "no such table")):
                for f in made:  # the -wal/-shm the failed read opened beside a damaged file (an empty log, an index)
                    if f.exists() and (f.name.endswith("-shm") or f.stat().st_size == 0):
                        f.unlink(missing_ok=True)
            hint = ""
            if db_file is not None and "disk I/O error" in reason and shutil.disk_usage(db_file.parent).free < 1 << 20:
                # a full disk read as 'is not an alkit store' (exit 2) for a store that is whole (a check)
                raise StoreError(f"the store {db_file} cannot be opened: its disk is full ("
                                 f"{shutil.disk_usage(db_file.parent).free:,} bytes free): free space and run the same "
                                 "command again") from exc
            if db_file is None and any(w in reason.lower() for w in ("password", "authentication")):
                hint = ("; give the password as $ALKIT_STORE_URL (the full URL, with the same user, host, port "
                        "and database as alkit.toml's store) or with PGPASSWORD / ~/.pgpass")
                env = os.environ.get("ALKIT_STORE_URL")
                try:  # set, but for another store: it was not used, which the hint to set it did not say (a check)
                    other = bool(env) and store_identity(str(env)) != store_identity(self.url)
                except ArgumentError:
                    other = False
                if other:
                    hint = (f"; $ALKIT_STORE_URL is set but names another store "
                            f"({make_url(str(env)).render_as_string(hide_password=True)}), so it was not used: give "
                            "this store's URL there (the same user, host, port and database as alkit.toml's) "
                            "or the password with PGPASSWORD / ~/.pgpass")
            raise StoreError(f"{self._safe_url()} is not an alkit store (or cannot be opened): {reason}{hint}") from exc
        if version is None or str(version) != str(SCHEMA_VERSION):
            raise StoreError(f"{self._safe_url()} is not an alkit store of schema version {SCHEMA_VERSION}")

    @contextmanager
    def session(self) -> Iterator[Session]:
        """One transaction: committed on success, rolled back on any exception."""
        try:
            with self._sessions() as s, s.begin():
                yield s
        except OperationalError as exc:
            if self.read_only is None or "readonly" not in str(exc).replace("read-only", "readonly"):
                raise
            raise StoreError(f"the store {sqlite_file(self.url)} is read-only (the file or its folder): this command "
                             "writes to it; make both writable (SQLite keeps its -wal and -shm files beside the store)"
                             ) from None

    def dispose(self) -> None:
        self.engine.dispose()

    # ------------------------------------------------------------------ init
    def initialise(self, items: Iterable[dict[str, Any]], shared_labels: Iterable[dict[str, Any]],
                   classes: Sequence[str] = (), features_id: str | None = None,
                   made_as: dict[str, Any] | None = None, init_token: str | None = None) -> None:
        """Fill a new store in one transaction: items, then labels given at init.  Both are taken
        chunk by chunk, so a generator of rows keeps a large pool out of memory; a refused chunk
        rolls the whole transaction back.  ``classes``: the class order alkit.toml records, kept
        beside the items (``init_classes``); ``init_token``: the init's own random token, by which a later
        init knows the store a killed one filled (``drop_created``)."""
        with self.session() as s:
            if s.scalar(select(func.count()).select_from(Item)):
                raise StoreError("the store already holds items (a project's; or those of an init killed in another "
                                 "folder: a killed init's own folder clears them at the next init there); refusing to "
                                 "initialise it twice: use an empty database")
            s.add(Meta(key="schema_version", value=str(SCHEMA_VERSION)))
            if classes:
                s.add(Meta(key="classes", value=json.dumps(list(classes))))
            if features_id:  # the id in the metadata of the features.parquet made with this store
                s.add(Meta(key="features_id", value=features_id))
            if made_as:  # the settings of alkit.toml this store was made for (check_made_as)
                s.add(Meta(key="made_as", value=json.dumps(made_as, sort_keys=True)))
            if init_token:
                s.add(Meta(key="init_token", value=init_token))
            # Core inserts on the session's connection: the ORM's bulk path took twice as long
            # (500,000 items on SQLite: 4.8-5.3 CPU-s against 2.5-2.8)
            conn = s.connection()
            for chunk in _batched(items, 20_000):
                _check_lengths(chunk, {"item_id": Item.item_id, "stratum": Item.stratum})
                conn.execute(Item.__table__.insert(), chunk)
            for chunk in _batched(shared_labels, 20_000):
                _check_lengths(chunk, {"annotator": Label.annotator})
                conn.execute(Label.__table__.insert(), chunk)

    # ------------------------------------------------------------------ items
    def counts(self) -> dict[str, int]:
        with self.session() as s:
            rows = s.execute(select(Item.split, Item.state, func.count()).group_by(Item.split, Item.state))
            return {f"{split}:{state}": n for split, state, n in rows}

    def n_items(self) -> int:
        with self.session() as s:
            return int(s.scalar(select(func.count()).select_from(Item)) or 0)

    def test_set(self) -> tuple[np.ndarray, list[str]]:
        """Keys and labels of the test split, in key order."""
        with self.session() as s:
            rows = s.execute(
                select(Item.key, Item.label).where(Item.split == "test", Item.label.is_not(None)).order_by(Item.key)
            ).all()
        return np.array([r[0] for r in rows], dtype=np.int64), [r[1] for r in rows]

    def pool_keys(self, states: Sequence[str] = ("unlabeled",)) -> np.ndarray:
        """Pool keys in these states, in key order.  Read through the connection (Core rows, not
        ORM scalars) straight into an array: a 1M-item pool took ~2 CPU-s through the ORM, ~0.8 here."""
        stmt = select(Item.key).where(Item.split == "pool", Item.state.in_(states)).order_by(Item.key)
        with self.session() as s:
            return np.fromiter((row[0] for row in s.connection().execute(stmt)), dtype=np.int64)

    def hidden_labels(self, keys: Iterable[int]) -> dict[int, str | None]:
        """The simulated oracle's answers: the stored (hidden) label of each pool item."""
        keys = [int(k) for k in keys]
        out: dict[int, str | None] = {}
        with self.session() as s:
            for chunk in _chunks(keys):
                for k, v in s.execute(select(Item.key, Item.label).where(Item.key.in_(chunk))):
                    out[int(k)] = v
        return out

    def label_values(self) -> set[str]:
        """Every distinct label text the store holds (given, imported, hidden or test)."""
        with self.session() as s:
            given = s.scalars(select(Label.value).distinct()).all()
            held = s.scalars(select(Item.label).where(Item.label.is_not(None)).distinct()).all()
        return set(given) | set(held)

    def keys_for_ids(self, item_ids: Sequence[str]) -> dict[str, int]:
        out: dict[str, int] = {}
        with self.session() as s:
            for chunk in _chunks(list(item_ids)):
                out.update({i: int(k) for i, k in s.execute(select(Item.item_id, Item.key).where(Item.item_id.in_(chunk)))})
        return out

    def answers_for_ids(self, item_ids: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """(state, the shared label or None) of each of these ids the store holds: what people's answers
        for them already are (state unlabeled|queued|labeled|skipped)."""
        out: dict[str, tuple[str, str | None]] = {}
        with self.session() as s:
            for chunk in _chunks(list(item_ids)):
                rows = s.execute(select(Item.item_id, Item.state, Label.value)
                                 .outerjoin(Label, (Label.item_key == Item.key) & Label.run_id.is_(None))
                                 .where(Item.item_id.in_(chunk)))
                out.update({i: (st, v) for i, st, v in rows})
        return out

    def ids_for_keys(self, keys: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        keys = [int(k) for k in keys]
        with self.session() as s:
            for chunk in _chunks(keys):
                out.update({int(k): i for k, i in s.execute(select(Item.key, Item.item_id).where(Item.key.in_(chunk)))})
        return out

    # ------------------------------------------------------------------ runs
    def get_or_create_run(self, spec: RunSpec) -> Run:
        """The run named ``spec.name``; created on first use.  Its identity must not change."""
        with self.session() as s:
            run = s.scalar(select(Run).where(Run.name == spec.name))
            if run is None:
                run = Run(
                    name=spec.name, strategy=spec.strategy, scorer=spec.scorer, seed=spec.seed,
                    budget=spec.budget, batch_size=spec.batch_size, initial=spec.initial,
                    config=dict(spec.options), status="running",
                )
                s.add(run)
                s.flush()
                return run
            _check_identity(run, spec)
            if spec.budget != run.budget:
                spent = int(s.scalar(select(func.count()).select_from(SelectionRow)
                                     .where(SelectionRow.run_id == run.id)) or 0)
                if spec.budget < spent:  # a budget below what was spent would rewrite history
                    raise StoreError(
                        f"run {spec.name!r} has already spent {spent} labels (budget {run.budget}); "
                        f"--budget {spec.budget} would be below that: pass at least {spent}"
                    )
                extended = spec.budget > run.budget
                run.budget = spec.budget  # a larger budget extends the run (a stopped one too)
                if run.status == "complete" or (run.status == "stopped" and extended):
                    run.status = "running"
            return run

    def check_run(self, spec: RunSpec) -> None:
        """Refuse, as ``get_or_create_run`` would, a spec that changes what its stored run is; nothing is
        written.  For work before the run starts (bayesvlm encodes the pool's images): a refused run did it."""
        with self.session() as s:
            run = s.scalar(select(Run).where(Run.name == spec.name))
            if run is not None:
                _check_identity(run, spec)

    def features_id(self) -> str | None:
        """The digest of the features.parquet init made with this store (None for a store made before it was
        recorded): a project's file replaced by one of the same shape is refused by it (FILE_ID_KEY)."""
        with self.session() as s:
            return s.scalar(select(Meta.value).where(Meta.key == "features_id"))

    def check_features(self, file_id: str | None, name: str) -> None:
        """Refuse a features file whose digest (FILE_ID_KEY) is not the one init recorded: a file of the same
        shape with other values (another project's, or the data made again in another row order) was fitted,
        scored and exported row by row as this project's (a hostile-filesystem check)."""
        made_with = self.features_id()
        if made_with and file_id and made_with != file_id:
            raise StoreError(f"{name} is not the file this project was made with (its values differ: another "
                             "project's, or the data made again in another row order; or the store is another "
                             "project's, of the same items in another order); restore the project's own file (or its "
                             "own alkit.db)")

    def check_made_as(self, settings: dict[str, Any], config_name: str = "alkit.toml") -> None:
        """Refuse where alkit.toml's ``settings`` (task, hide_labels) are not those the store was made for (a
        store made before they were recorded is not checked): another project's store of the same items, or a
        hand edit, ran on (a team project's store took a --hide-labels project's runs, which died on 'the
        simulated oracle has no label for item key 33'; an options check)."""
        with self.session() as s:
            value = s.scalar(select(Meta.value).where(Meta.key == "made_as"))
        made = {} if value is None else json.loads(value)
        differ = [k for k in sorted(settings) if k in made and made[k] != settings[k]]
        if differ:
            said = ", ".join(f"{k} = {json.dumps(settings[k])} where the store was made with {json.dumps(made[k])}"
                             if k != "feature_cols" else _names_differ(settings[k], made[k]) for k in differ)
            raise StoreError(f"{config_name} has {said}: the store {self._safe_url()} is another project's, or "
                             f"{config_name} was edited; restore the project's own store or {config_name} (a "
                             "project's task, labels' source and feature columns are fixed at init)")

    def init_token(self) -> str | None:
        """The random token `alkit init` wrote with the items (None for a store made before it was)."""
        with self.session() as s:
            return s.scalar(select(Meta.value).where(Meta.key == "init_token"))

    def init_classes(self) -> list[str] | None:
        """The class order `alkit init` recorded (None for a store made before it was recorded): class
        indices are positions in it, so an alkit.toml whose classes were reordered by hand trained on
        other indices and changed a continued run's picks without a word."""
        with self.session() as s:
            value = s.scalar(select(Meta.value).where(Meta.key == "classes"))
        return None if value is None else list(json.loads(value))

    def ensure_signals_table(self) -> None:
        """cycle_signals exists (stores made before stopping rules lack it)."""
        CycleSignals.__table__.create(self.engine, checkfirst=True)

    def signals(self, run_id: int) -> dict[int, dict[str, Any]]:
        """cycle -> the signals recorded with it (empty for a store without the table)."""
        return {c: d for (r, c), d in self._signals(CycleSignals.run_id == run_id).items()}

    def latest_signal(self, run_id: int, key: str) -> Any | None:
        """``key`` of the run's latest cycle whose signals hold it, or None.  Reads rows newest first
        and stops at the first hit, so a long run costs one row, not every cycle's signals."""
        if not self._has_signals():
            return None
        q = (select(CycleSignals.data).where(CycleSignals.run_id == run_id)
             .order_by(CycleSignals.cycle.desc()))
        with self.session() as s:
            for (data,) in s.execute(q):
                if key in data:
                    return data[key]
        return None

    def all_signals(self) -> dict[tuple[int, int], dict[str, Any]]:
        """(run id, cycle) -> the signals recorded with it, every run in one query."""
        return self._signals(None)

    def _has_signals(self) -> bool:
        """Whether the store has the signals table (a store made before it existed has not)."""
        return inspect(self.engine).has_table(CycleSignals.__tablename__)

    def _signals(self, where: Any) -> dict[tuple[int, int], dict[str, Any]]:
        if not self._has_signals():
            return {}
        q = select(CycleSignals.run_id, CycleSignals.cycle, CycleSignals.data)
        with self.session() as s:
            rows = s.execute(q if where is None else q.where(where))
            return {(int(r), int(c)): dict(d) for r, c, d in rows}

    def set_stop_rules(self, name: str, rules: list[str]) -> None:
        """Record ``rules`` as the stopping rules of run ``name`` (if it exists), which its next --resume reads;
        a run a rule stopped goes on under the new ones (the stop stays on record).  They watch its cycles from its
        latest one on (``stop_since``, read by runs.rules_since), as a stopped run's rules do from the stop: a rule
        given to a run that had none fired at once on the cycles run before it (a black-box check)."""
        with self.session() as s:
            run = s.scalar(select(Run).where(Run.name == name))
            if run is not None and (run.config or {}).get("stop", []) != rules:
                last = s.scalar(select(func.max(CycleRow.cycle)).where(CycleRow.run_id == run.id))
                run.config = {**(run.config or {}), "stop": list(rules), "stop_since": -1 if last is None else int(last)}
                if run.status == "stopped":
                    run.status = "running"

    def stop_run(self, run_id: int, stopped: dict[str, Any]) -> None:
        """Mark a run stopped by a rule; ``stopped`` (rule, why, cycle) goes into its config."""
        with self.session() as s:
            run = s.get(Run, run_id)
            run.config = {**run.config, "stopped": stopped}
            run.status = "stopped"

    def runs(self) -> list[Run]:
        with self.session() as s:
            return list(s.scalars(select(Run).order_by(Run.id)))

    def set_run_status(self, run_id: int, status: str) -> None:
        with self.session() as s:
            s.execute(update(Run).where(Run.id == run_id).values(status=status))

    def cycles(self, run_id: int | None = None) -> list[CycleRow]:
        with self.session() as s:
            q = select(CycleRow).order_by(CycleRow.run_id, CycleRow.cycle)
            if run_id is not None:
                q = q.where(CycleRow.run_id == run_id)
            return list(s.scalars(q))

    def reopen_last_evaluation(self, run_id: int, n_labeled: int) -> bool:
        """Drop a run's last cycle where it only evaluated (no item selected: the cycle that found the
        budget spent, or the one a stopping rule ended the run at; the rule stays in the run's config),
        with its signals, in one transaction, where it was fitted on ``n_labeled`` labels, as many as the
        run learns from now; True if one was dropped.

        Why: a larger --budget continues the run from that cycle number, so the continued run fits,
        seeds and picks exactly as a run given the larger budget from the start (appending a cycle
        refitted the same labels under the next cycle's seed and shifted every later seed).  The
        dropped row holds no selection and no label: the refit at the same labels replaces it.  Where
        labels came in since (a team project's answers to other runs), the refit would not be that fit:
        dropping it erased a measured point of a finished run's curve (a black-box check), so it stays, and the
        run's stopping rules watch from the next cycle on (``stop_since``), which none decides, as none decides at a
        redone stop: they fired at once there, and a larger budget bought no label (a black-box check)."""
        with self.session() as s:
            write_lock(s)
            last = s.scalar(select(CycleRow).where(CycleRow.run_id == run_id).order_by(CycleRow.cycle.desc()).limit(1))
            if last is None or last.n_selected != 0 or last.cycle == 0:
                return False
            if last.n_labeled != n_labeled:
                run = s.get(Run, run_id)
                run.config = {**(run.config or {}), "stop_since": int(last.cycle) + 1}
                return False
            picked = s.scalar(select(func.count()).select_from(SelectionRow)
                              .where(SelectionRow.run_id == run_id, SelectionRow.cycle == last.cycle))
            if picked:
                return False
            s.execute(delete(CycleSignals).where(CycleSignals.run_id == run_id, CycleSignals.cycle == last.cycle))
            s.execute(delete(CycleRow).where(CycleRow.run_id == run_id, CycleRow.cycle == last.cycle))
            return True

    def next_cycle(self, run_id: int) -> int:
        with self.session() as s:
            last = s.scalar(select(func.max(CycleRow.cycle)).where(CycleRow.run_id == run_id))
        return 0 if last is None else int(last) + 1

    def labeled_set(self, run_id: int | None) -> tuple[np.ndarray, list[str]]:
        """Keys and values of every label a run may learn from: its own and the shared ones."""
        with self.session() as s:
            q = select(Label.item_key, Label.value).order_by(Label.item_key, Label.id)
            q = q.where(Label.run_id.is_(None) | (Label.run_id == run_id)) if run_id is not None else q.where(Label.run_id.is_(None))
            rows = s.execute(q).all()
        return np.array([r[0] for r in rows], dtype=np.int64), [r[1] for r in rows]

    def selected_keys(self, run_id: int) -> np.ndarray:
        """Keys a run selected, in pick order (cycle, rank): explicit, since row order without
        ORDER BY differs between backends (SQLite walks an index, PostgreSQL the heap)."""
        with self.session() as s:
            keys = s.scalars(
                select(SelectionRow.item_key).where(SelectionRow.run_id == run_id)
                .order_by(SelectionRow.cycle, SelectionRow.rank)
            ).all()
        return np.asarray(keys, dtype=np.int64)

    def n_spent(self, run_id: int) -> int:
        """Labels this run has spent: items it selected (whatever their label state)."""
        with self.session() as s:
            return int(s.scalar(select(func.count()).select_from(SelectionRow).where(SelectionRow.run_id == run_id)) or 0)

    def commit_cycle(
        self,
        run_id: int,
        cycle: int,
        *,
        selections: list[dict[str, Any]],
        oracle_labels: list[dict[str, Any]],
        cycle_row: dict[str, Any],
        run_status: str | None = None,
        queue_selected: bool = False,
    ) -> None:
        """Record one cycle atomically: its selections, the oracle's labels and its metrics.

        ``queue_selected`` (people answer): the selected items move from unlabeled to queued in the
        same transaction, refused (nothing written) if any of them stopped being unlabeled
        meanwhile, e.g. another run queued it first; the caller simply runs the cycle again.
        A kill before this returns leaves no trace of the cycle, so a resumed run redoes it.
        """
        with self.session() as s:
            if queue_selected:
                write_lock(s)
            expected = s.scalar(select(func.max(CycleRow.cycle)).where(CycleRow.run_id == run_id))
            expected = 0 if expected is None else int(expected) + 1
            if cycle != expected:
                raise StoreError(f"run {run_id}: cycle {cycle} out of order (next is {expected})")
            if queue_selected:
                keys = [int(r["item_key"]) for r in selections]
                n = 0
                for chunk in _chunks(keys):
                    res = s.execute(
                        update(Item)
                        .where(Item.key.in_(chunk), Item.split == "pool", Item.state == "unlabeled")
                        .values(state="queued")
                    )
                    n += int(res.rowcount)
                if n != len(keys):
                    raise StoreError(f"{len(keys) - n} selected items were queued or labeled by someone else "
                                     "meanwhile; nothing was recorded: run again")
            if selections:
                s.execute(insert(SelectionRow), [dict(r, run_id=run_id, cycle=cycle) for r in selections])
            if oracle_labels:
                s.execute(insert(Label), [dict(r, run_id=run_id, cycle=cycle, source="oracle") for r in oracle_labels])
            signals = cycle_row.pop("signals", None)
            s.execute(insert(CycleRow), [dict(cycle_row, run_id=run_id, cycle=cycle)])
            if signals:
                s.execute(insert(CycleSignals), [{"run_id": run_id, "cycle": cycle, "data": signals}])
            if run_status is not None:
                s.execute(update(Run).where(Run.id == run_id).values(status=run_status))

    # ------------------------------------------------------------------ people's labels
    def import_labels(self, decisions: dict[str, tuple[Any, str, str | None]], *, on_conflict: str = "error",
                      annotator: str | None = None, found: Sequence[str] = (),
                      refused_rows: dict[str, str] | None = None,
                      unqueued: bool = False, classes: Sequence[str] | None = None,
                      ) -> tuple[dict[str, int], int, list[str] | None, set[str]]:
        """Apply people's decisions (item id -> (label or SKIP, where in the file, the row's
        annotator)) in one transaction under the write lock, all or nothing.

        Every id must be a queued pool item, or already answered: the same answer is unchanged;
        a different one is a conflict, refused (``error``), ignored (``keep``) or overwritten
        (``replace``).  Any problem raises ImportRefused listing every one, nothing written;
        ``found`` are problems the caller already found in the file (bad labels), reported together
        with the store's (unknown or not-queued ids) so a file's problems come in one round;
        ``refused_rows`` (item id -> where) are rows with no decision (refused for their label, or with no
        answer yet) whose ids are checked too: a row with two problems names both, and an unknown id is
        refused whether or not its row was filled in.
        ``unqueued``: a pool item no run queued (state unlabeled) takes its answer too, as a shared label
        with no cycle (labels a team has from elsewhere).  ``classes``: the project's class order, grown
        by classes added with this import, recorded in the same transaction (``init_classes``).
        Returns the counts (labeled, skipped, replaced, unchanged, kept), the items still queued and the class
        record as written (``classes`` merged with any another import added meanwhile; None without ``classes``),
        and the runs that queued an item this import took out of the queue (read under the lock: an import that
        changed nothing, a retry or one that lost a race, answered no run's queue).
        """
        counts = {"labeled": 0, "skipped": 0, "replaced": 0, "unchanged": 0, "kept": 0}
        with self.session() as s:
            write_lock(s)
            refused_rows = {k: v for k, v in (refused_rows or {}).items() if k not in decisions}
            ids = [*decisions, *refused_rows]
            items: dict[str, Item] = {}
            for chunk in _chunks(ids):
                items.update({it.item_id: it for it in s.scalars(select(Item).where(Item.item_id.in_(chunk)))})
            # no exact match: the same id up to spaces around it (a person's edit, or an id init kept
            # with its spaces), where that names exactly one item
            trimmed = {k: k.strip() for k in ids if k not in items}
            for chunk in _chunks(list(set(trimmed.values()))):
                by_trim: dict[str, list[Item]] = {}
                for it in s.scalars(select(Item).where(func.trim(Item.item_id).in_(chunk))):
                    by_trim.setdefault(it.item_id.strip(), []).append(it)
                items.update({k: by_trim[t][0] for k, t in trimmed.items() if len(by_trim.get(t, ())) == 1})
            problems: list[str] = [f"{where}: unknown id" for k, where in refused_rows.items() if k not in items]
            keys = [it.key for it in items.values()]
            shared: dict[int, Label] = {}
            cycles = last_queued_cycles(s, keys)
            skip_keys: set[int] = set()
            for chunk in _chunks(keys):
                shared.update({lab.item_key: lab for lab in s.scalars(
                    select(Label).where(Label.item_key.in_(chunk), Label.run_id.is_(None)))})
                skip_keys.update(int(k[len("skip:"):]) for k in s.scalars(
                    select(Meta.key).where(Meta.key.in_([f"skip:{k}" for k in chunk]))))
            conflicts: list[str] = []
            plan: list[tuple[str, Item, Any, str | None]] = []  # (action, item, decision, row annotator)
            seen: dict[int, tuple[str, Any]] = {}  # item key -> (where, answer): two spellings of one id (a trimmed match)
            for item_id, (decision, where, row_annotator) in decisions.items():
                it = items.get(item_id)
                if it is None:
                    problems.append(f"{where}: unknown id")
                    continue
                if it.key in seen:  # the same answer twice is one answer, as for rows with the same spelling
                    first, answer = seen[it.key]
                    if not (answer is decision or answer == decision):
                        problems.append(f"{where}: the same item as {first} (ids differ only in spaces) with another "
                                        f"answer, {show_decision(decision)} against {show_decision(answer)}")
                    counts["unchanged"] += 1  # in no count before: the counts fell short of the rows (a check)
                    continue
                seen[it.key] = (where, decision)
                if it.split != "pool":
                    if decision is not SKIP and it.label is not None and it.label == decision:  # both canonical
                        counts["unchanged"] += 1  # the data file's own label read back (a team's master sheet):
                        continue  # unchanged, as a pool item's init label is (it refused the file; a black-box check)
                    problems.append(f"{where}: the item is in the {it.split} split, not the pool"
                                    + (f" (its label {it.label!r} is the data file's; no import changes it)"
                                       if it.label is not None else ""))
                    continue
                existing: Any = None
                if it.state == "labeled" and it.key in shared and shared[it.key].source == "init":
                    if shared[it.key].value == decision:  # the label it has (a labels export read back): no change
                        counts["unchanged"] += 1
                        continue
                    # 'it was never queued' sent a user who had passed --unqueued nowhere (a black-box check)
                    problems.append(f"{where}: {show_decision(decision)} conflicts with the label "
                                    f"{show_decision(shared[it.key].value)} the data file gave the item at init, which "
                                    "no import changes (--on-conflict and --unqueued do not apply to it)")
                    continue
                if it.state == "labeled" and it.key in shared:
                    existing = shared[it.key].value
                elif it.state == "skipped":
                    existing = SKIP
                elif it.state != "queued" and not (unqueued and it.state == "unlabeled"):
                    problems.append(f"{where}: the item is not queued (state {it.state}); only queued items take labels"
                                    + (" (--unqueued: also pool items no run queued)" if it.state == "unlabeled" else ""))
                    continue
                if existing is None:
                    plan.append(("new", it, decision, row_annotator))
                elif existing is decision or existing == decision or {existing, decision} == {"-0.0", "0.0"}:
                    counts["unchanged"] += 1  # (-0.0: an answer -0 stored before it was read as 0)
                elif on_conflict == "error":
                    conflicts.append(f"{where}: {show_decision(decision)} conflicts with the stored {show_decision(existing)}")
                elif on_conflict == "keep":
                    counts["kept"] += 1
                else:
                    plan.append(("replace", it, decision, row_annotator))
            if found or problems or conflicts:
                if conflicts:
                    conflicts[0] += " (use --on-conflict keep or replace)"
                unknown = [k for k in ids if k not in items]
                for hint in (_zeros_hint(s, unknown), _mojibake_hint(s, unknown), _float_id_hint(s, unknown),
                             _unicode_form_hint(s, unknown)):
                    if hint:
                        problems.insert(0, hint)
                raise ImportRefused(list(found) + problems + conflicts)
            now = utcnow()
            merged: list[str] | None = None
            if classes is not None:  # read again under the write lock: another --add-class import may have added
                # one since this import read the record, and writing this list over it lost that class while its
                # labels stayed (a black-box check); both are kept, in the order they were committed
                recorded = s.scalar(select(Meta).where(Meta.key == "classes"))
                current = [] if recorded is None else list(json.loads(recorded.value))
                folded = {fold_case(c): c for c in current}
                clash = [f"--add-class {c!r}: another import added {folded[fold_case(c)]!r} meanwhile (a class "
                         "differing only in case); import again" for c in classes
                         if c not in current and fold_case(c) in folded]
                if clash:
                    raise ImportRefused(clash)
                merged = current + [c for c in classes if c not in current]
                if recorded is None:
                    s.add(Meta(key="classes", value=json.dumps(merged)))
                else:
                    recorded.value = json.dumps(merged)
            dequeued = [it.key for action, it, _, _ in plan if it.state == "queued"]
            answered_runs = {n for names in queuing_runs(s, dequeued).values() for n in names}
            for action, it, decision, row_annotator in plan:
                who = annotator or row_annotator
                if action == "replace":  # the answer it replaces is kept as history (REPLACED), not lost
                    if it.key in shared:
                        old = shared[it.key]
                        s.add(Meta(key=f"{REPLACED}{it.key}:{uuid.uuid4().hex[:12]}", value=json.dumps(
                            {"label": old.value, "annotator": old.annotator, "source": old.source, "cycle": old.cycle,
                             "time": old.created_at.isoformat() if old.created_at else None,
                             "replaced": now.isoformat()})))
                        s.execute(delete(Label).where(Label.id == old.id))
                    if it.key in skip_keys:
                        skip = s.scalar(select(Meta).where(Meta.key == f"skip:{it.key}"))
                        was = json.loads(skip.value) if skip is not None else {}
                        s.add(Meta(key=f"{REPLACED}{it.key}:{uuid.uuid4().hex[:12]}", value=json.dumps(
                            {"label": None, "annotator": was.get("annotator"), "source": "import",
                             "cycle": cycles.get(it.key), "time": was.get("time"), "replaced": now.isoformat()})))
                        s.execute(delete(Meta).where(Meta.key == f"skip:{it.key}"))
                    counts["replaced"] += 1
                if decision is SKIP:
                    s.add(Meta(key=f"skip:{it.key}", value=json.dumps({"annotator": who, "time": now.isoformat()})))
                    it.state = "skipped"
                    counts["skipped"] += int(action == "new")
                else:
                    s.add(Label(item_key=it.key, run_id=None, value=decision, source="import", annotator=who,
                                cycle=cycles.get(it.key), created_at=now))
                    it.state = "labeled"
                    counts["labeled"] += int(action == "new")
            s.flush()
            still = int(s.scalar(select(func.count()).select_from(Item).where(Item.state == "queued")) or 0)
        return counts, still, merged, answered_runs


REPLACED = "replaced:"  # meta keys replaced:<item key>:<tag>: an answer `--on-conflict replace` overwrote


def _check_identity(run: Run, spec: RunSpec) -> None:
    """Refuse ``spec`` for the stored ``run`` of its name where it would change what the run is: its
    strategy, scorer, seed or batch sizes, or how it scores and picks (METHOD_OPTIONS, its code's hash)."""
    fixed = {"strategy": spec.strategy, "scorer": spec.scorer, "seed": spec.seed,
             "batch_size": spec.batch_size, "initial": spec.initial}
    for k, v in fixed.items():
        if getattr(run, k) != v:
            raise StoreError(
                f"run {spec.name!r} exists with {k}={getattr(run, k)!r}, not {v!r}; "
                "use another --name or the original arguments"
            )
    stored = run.config or {}
    for k in METHOD_OPTIONS:  # how items are scored and picked: a continued run keeps its method
        if k in stored and k in spec.options and as_json(spec.options[k]) != as_json(stored[k]):
            if k == "code":  # what a run recorded is compared (one recorded before a digest existed has none)
                flag = {"module": "--backbone", "estimator": "--learner", "model_dir": "--model-dir"}
                changed = [flag.get(c, c) for c in stored[k] if stored[k][c] != spec.options[k].get(c)]
                if not changed:
                    continue
                what = ("the model --model-dir names (its files have changed since)" if changed == ["--model-dir"]
                        else f"the code {' and '.join(changed)} names (its file has changed since)")
                raise StoreError(f"run {spec.name!r} was started with another version of {what}: restore it, or "
                                 "start a new run with another --name")
            raise StoreError(
                f"run {spec.name!r} exists with {k}={_show_option(stored[k])}, not "
                f"{_show_option(spec.options[k])}; use another --name or the original arguments"
            )
