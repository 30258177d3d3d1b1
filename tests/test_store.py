"""The SQL store: schema, run identity, and one-transaction cycles, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from sqlalchemy.exc import IntegrityError

from alkit.pools.store import RunSpec, Store, StoreError


def _store(url: str, n: int = 10) -> Store:
    s = Store(url, create=True)
    items = [{"key": k, "item_id": f"i{k}", "split": "test" if k >= n - 2 else "pool",
              "state": "unlabeled", "label": str(k % 2)} for k in range(n)]
    s.initialise(items, [])
    return s


SPEC = RunSpec("r", "random", "none", 0, 6, 2, 2, {})


def test_wal_mode_and_reopen(store_url: str) -> None:
    s = _store(store_url)
    if store_url.startswith("sqlite"):
        with s.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
    s.dispose()
    again = Store(store_url)
    assert again.n_items() == 10
    assert again.counts() == {"pool:unlabeled": 8, "test:unlabeled": 2}


def test_not_an_alkit_store(store_url: str) -> None:
    if store_url.startswith("sqlite:///"):  # an existing SQLite file that is not a store (a missing one: test_hardening)
        Path(store_url[len("sqlite:///"):]).write_bytes(b"")
    with pytest.raises(StoreError, match="not an alkit store"):
        Store(store_url)


def test_a_foreign_sqlite_database_is_refused_unchanged(tmp_path: Path) -> None:
    """A store URL naming someone else's SQLite database (an alkit.db replaced, a hand-edited
    alkit.toml): refused, and the database is left byte for byte as it was, its journal mode too."""
    import hashlib
    import sqlite3

    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE notes (x TEXT)")
        db.execute("INSERT INTO notes VALUES ('mine')")
    db.close()
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(StoreError, match="not an alkit store"):
        Store(f"sqlite:///{path}")
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert db.execute("SELECT x FROM notes").fetchall() == [("mine",)]
    db.close()
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest


def test_a_damaged_store_is_refused_without_leaving_wal_files(tmp_path: Path) -> None:
    """A store whose pages were overwritten (a disk error, a bad copy): refused, and the folder is left as it was
    found (the read that found the damage left an empty -wal and a -shm beside it)."""
    url = f"sqlite:///{tmp_path / 'alkit.db'}"
    _store(url).dispose()
    path = tmp_path / "alkit.db"
    for f in tmp_path.glob("alkit.db-*"):
        f.unlink()
    data = bytearray(path.read_bytes())
    data[100:4000] = b"\xff" * 3900
    path.write_bytes(bytes(data))
    before = sorted(p.name for p in tmp_path.iterdir())
    with pytest.raises(StoreError, match="not an alkit store .*malformed"):
        Store(url)
    assert sorted(p.name for p in tmp_path.iterdir()) == before == ["alkit.db"]


def test_a_store_file_deleted_or_replaced_under_a_command_is_noticed(tmp_path: Path) -> None:
    """`rm alkit.db` during a run: SQLite went on writing into the unlinked file, the run said 'complete' and every
    cycle since was gone.  The loop asks check_file before each cycle."""
    import shutil

    path = tmp_path / "alkit.db"
    s = _store(f"sqlite:///{path}")
    s.check_file()  # the file it opened: nothing to say
    shutil.copy(path, tmp_path / "copy.db")
    path.unlink()
    with pytest.raises(StoreError, match="alkit.db was moved or deleted while this command ran"):
        s.check_file()
    shutil.copy(tmp_path / "copy.db", path)  # another file under the same name
    with pytest.raises(StoreError, match="alkit.db was replaced by another file while this command ran"):
        s.check_file()
    s.dispose()


def test_initialise_twice_refused(store_url: str) -> None:
    s = _store(store_url)
    with pytest.raises(StoreError, match="already holds items"):
        s.initialise([{"key": 99, "item_id": "x", "split": "pool", "state": "unlabeled", "label": None}], [])
    assert s.n_items() == 10


def test_run_identity(store_url: str) -> None:
    s = _store(store_url)
    a = s.get_or_create_run(SPEC)
    b = s.get_or_create_run(SPEC)
    assert a.id == b.id and len(s.runs()) == 1
    with pytest.raises(StoreError, match="seed"):
        s.get_or_create_run(RunSpec("r", "random", "none", 1, 6, 2, 2, {}))
    assert [(r.id, r.seed, r.budget) for r in s.runs()] == [(a.id, 0, 6)]  # the refused spec changed nothing
    bigger = s.get_or_create_run(RunSpec("r", "random", "none", 0, 8, 2, 2, {}))
    assert bigger.budget == 8


def test_a_continued_run_keeps_its_method(store_url: str) -> None:
    """A run continued under its name with another acquisition, learner or training option is
    refused (it used to switch method mid-run while its record kept the old options); where it runs
    (engine) may change, and a run recorded before an option existed is not refused over it."""
    s = _store(store_url)
    opts = {"acquisition": "decision-flip", "learner": {"width": 32}, "train": {}, "engine": "local"}
    run = s.get_or_create_run(RunSpec("m", "epistemic", "vbll", 0, 6, 2, 2, opts))
    for key, value, shown in (("acquisition", "margin", "acquisition='decision-flip', not 'margin'"),
                              ("learner", {"width": 16}, "learner={width=32}, not {width=16}"),
                              ("train", {"prior_l2": 3.0}, "train={} (defaults), not {prior_l2=3.0}")):
        with pytest.raises(StoreError, match=re.escape(shown)):
            s.get_or_create_run(RunSpec("m", "epistemic", "vbll", 0, 8, 2, 2, {**opts, key: value}))
    assert [(r.budget, r.config) for r in s.runs()] == [(6, opts)]  # refused: nothing changed
    assert s.get_or_create_run(RunSpec("m", "epistemic", "vbll", 0, 8, 2, 2, {**opts, "engine": "ray"})).id == run.id
    legacy = s.get_or_create_run(RunSpec("old", "random", "none", 0, 6, 2, 2, {}))  # no options recorded
    assert s.get_or_create_run(RunSpec("old", "random", "none", 0, 6, 2, 2, opts)).id == legacy.id


def test_cycle_commit_is_atomic(store_url: str) -> None:
    s = _store(store_url)
    run = s.get_or_create_run(SPEC)
    sel = [{"item_key": 0, "rank": 0, "score": 1.0, "utility": 1.0, "selector": "random"}]
    lab = [{"item_key": 0, "value": "0", "annotator": "oracle"}]
    row = {"n_labeled": 0, "n_selected": 1, "metrics": {}}
    s.commit_cycle(run.id, 0, selections=sel, oracle_labels=lab, cycle_row=row)
    # selecting item 0 again in the same run violates the invariant: nothing of cycle 1 is kept
    bad = sel + [{"item_key": 1, "rank": 1, "score": 0.5, "utility": 0.5, "selector": "random"}]
    with pytest.raises(IntegrityError):
        s.commit_cycle(run.id, 1, selections=bad, oracle_labels=[{"item_key": 1, "value": "1", "annotator": "o"}],
                       cycle_row=row)
    assert s.next_cycle(run.id) == 1
    assert sorted(s.selected_keys(run.id).tolist()) == [0]
    keys, values = s.labeled_set(run.id)
    assert keys.tolist() == [0] and values == ["0"]


def test_cycles_must_be_contiguous(store_url: str) -> None:
    s = _store(store_url)
    run = s.get_or_create_run(SPEC)
    with pytest.raises(StoreError, match="out of order"):
        s.commit_cycle(run.id, 1, selections=[], oracle_labels=[], cycle_row={"n_labeled": 0, "n_selected": 0})
    assert s.cycles(run.id) == [] and s.next_cycle(run.id) == 0  # nothing of the refused cycle was kept


def test_latest_signal_is_the_newest_cycle_that_holds_the_key(store_url: str) -> None:
    s = _store(store_url)
    run = s.get_or_create_run(SPEC)
    other = s.get_or_create_run(RunSpec("o", "random", "none", 0, 6, 2, 2, {}))
    assert s.latest_signal(run.id, "capacity") is None
    for cycle, data in enumerate([{"capacity": {"n": 1}}, {"capacity": {"n": 2}}, {"eval_s": 0.1}, {}]):
        s.commit_cycle(run.id, cycle, selections=[], oracle_labels=[],
                       cycle_row={"n_labeled": 0, "n_selected": 0, "signals": data})
    s.commit_cycle(other.id, 0, selections=[], oracle_labels=[],
                   cycle_row={"n_labeled": 0, "n_selected": 0, "signals": {"capacity": {"n": 9}}})
    assert s.latest_signal(run.id, "capacity") == {"n": 2}  # cycle 1: cycles 2-3 lack it, run "o" is another run
    assert s.latest_signal(run.id, "eval_s") == 0.1
    assert s.latest_signal(run.id, "missing") is None


def test_labeled_set_sees_shared_and_own_labels_only(store_url: str) -> None:
    s = Store(store_url, create=True)
    items = [{"key": k, "item_id": f"i{k}", "split": "pool", "state": "unlabeled", "label": "1"} for k in range(6)]
    s.initialise(items, [{"item_key": 5, "value": "1", "source": "init", "run_id": None}])
    r1 = s.get_or_create_run(SPEC)
    r2 = s.get_or_create_run(RunSpec("r2", "random", "none", 0, 6, 2, 2, {}))
    s.commit_cycle(r1.id, 0, selections=[{"item_key": 0, "rank": 0, "score": 0, "utility": 0, "selector": "x"}],
                   oracle_labels=[{"item_key": 0, "value": "1", "annotator": "o"}],
                   cycle_row={"n_labeled": 1, "n_selected": 1})
    assert s.labeled_set(r1.id)[0].tolist() == [0, 5]
    assert s.labeled_set(r2.id)[0].tolist() == [5]
    assert s.n_spent(r1.id) == 1 and s.n_spent(r2.id) == 0
    assert np.array_equal(s.labeled_set(None)[0], np.array([5]))


def test_a_store_is_named_without_its_password() -> None:
    """URL.set(password=None) keeps the password: what names a server store (the killed-init record's digest, the
    $ALKIT_STORE_URL comparison) is the URL with none."""
    from alkit.config import store_identity
    from alkit.pools.ingest import _store_digest

    assert store_identity("postgresql+psycopg://team:s%40cret@/tdb?host=/x") == \
        "postgresql://team@/tdb?host=%2Fx" == store_identity("postgresql://team@/tdb?host=/x")  # one database
    # connection options and a socket folder's last '/' name no other database (an init retried with one could not
    # clear a killed init's tables; a black-box check)
    assert store_identity("postgresql+psycopg://team@/tdb?host=/x/&connect_timeout=10&sslmode=prefer") == \
        store_identity("postgresql+psycopg://team@/tdb?host=/x") != store_identity("postgresql+psycopg://team@/tdb?host=/y")
    # libpq's default port written out is the same server; a schema named in options is another set of tables
    assert store_identity("postgresql://team@/tdb?host=/x&port=5432") == store_identity("postgresql://team@/tdb?host=/x")
    assert store_identity("postgresql://team@h:5432/tdb") == store_identity("postgresql://team@h/tdb") != \
        store_identity("postgresql://team@h:5433/tdb")
    assert store_identity("postgresql://team@/tdb?host=/x&options=-csearch_path%3Ds1") != \
        store_identity("postgresql://team@/tdb?host=/x&options=-csearch_path%3Ds3")
    assert _store_digest("postgresql+psycopg://team:s%40cret@/tdb?host=/x") == \
        _store_digest("postgresql+psycopg://team@/tdb?host=/x") != _store_digest("postgresql+psycopg://team@/tdb2?host=/x")
