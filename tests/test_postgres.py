"""The store on PostgreSQL through the same SQLAlchemy code: what differs from SQLite is pinned.

Each test runs on both backends (``store_url``), so a behaviour that only one of them has
(time zones, NaN in JSON, VARCHAR lengths, 64-bit keys, row order) is caught here.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from datetime import timezone
from pathlib import Path

import pytest

from alkit.pools.store import RunSpec, Store, StoreError
from alkit.report import cycles_frame

SPEC = RunSpec("r", "random", "none", 0, 6, 2, 2, {"note": "x"})


def _items(n: int, big: bool = False) -> list[dict]:
    base = 2**40 if big else 0
    return [{"key": base + k, "item_id": f"i{k}", "split": "pool", "state": "unlabeled", "label": str(k % 2)}
            for k in range(n)]


def test_datetimes_read_back_aware_utc(store_url: str) -> None:
    s = Store(store_url, create=True)
    s.initialise(_items(4), [])
    run = s.get_or_create_run(SPEC)
    s.commit_cycle(run.id, 0, selections=[], oracle_labels=[], cycle_row={"n_labeled": 0, "n_selected": 0})
    for value in (s.runs()[0].created_at, s.cycles(run.id)[0].created_at):
        assert value.tzinfo is not None and value.utcoffset() == timezone.utc.utcoffset(None)
    s.dispose()


def test_nonfinite_metrics_round_trip(store_url: str) -> None:
    """PostgreSQL's json refuses NaN/Infinity; an undefined metric must still be stored and read."""
    s = Store(store_url, create=True)
    s.initialise(_items(4), [])
    run = s.get_or_create_run(SPEC)
    metrics = {"accuracy": 0.5, "nll": math.inf, "ece": math.nan, "neg": -math.inf}
    s.commit_cycle(run.id, 0, selections=[], oracle_labels=[],
                   cycle_row={"n_labeled": 2, "n_selected": 0, "metrics": metrics})
    got = s.cycles(run.id)[0].metrics
    assert got["accuracy"] == 0.5 and got["nll"] == math.inf and got["neg"] == -math.inf and math.isnan(got["ece"])
    assert s.runs()[0].config == {"note": "x"}  # ordinary strings are left alone
    assert cycles_frame(s).height == 1
    s.dispose()


def test_64bit_keys_and_batched_insert(store_url: str) -> None:
    """Keys beyond 2**31 (BigInteger) and more items than one insert batch (20,000)."""
    s = Store(store_url, create=True)
    s.initialise(_items(25_000, big=True), [{"item_key": 2**40 + 7, "value": "1", "source": "init", "run_id": None}])
    assert s.n_items() == 25_000
    assert s.pool_keys()[[0, -1]].tolist() == [2**40, 2**40 + 24_999]
    assert s.labeled_set(None)[0].tolist() == [2**40 + 7]
    assert s.keys_for_ids(["i24999"]) == {"i24999": 2**40 + 24_999}
    s.dispose()


def test_too_long_id_refused_on_every_backend(store_url: str) -> None:
    """PostgreSQL enforces VARCHAR(512), SQLite does not: the store checks, so both refuse alike."""
    s = Store(store_url, create=True)
    items = _items(3)
    items[1]["item_id"] = "x" * 513
    with pytest.raises(StoreError, match="item_id .* 513 characters; the store allows 512"):
        s.initialise(items, [])
    assert s.n_items() == 0
    s.initialise(_items(3), [])  # nothing was written, so a corrected init succeeds
    assert s.n_items() == 3
    s.dispose()


def test_shared_label_unique_per_item(store_url: str) -> None:
    """The partial unique index (run_id IS NULL) exists on both backends."""
    from sqlalchemy.exc import IntegrityError

    s = Store(store_url, create=True)
    lab = {"item_key": 1, "value": "1", "source": "init", "run_id": None}
    with pytest.raises(IntegrityError):
        s.initialise(_items(3), [lab, dict(lab, value="0")])
    assert s.n_items() == 0
    s.dispose()


def test_missing_database_is_a_clear_error(pg_database) -> None:  # noqa: ANN001 - fixture factory
    url = pg_database()
    missing = url.replace("/alkit_test_", "/alkit_missing_", 1)
    with pytest.raises(StoreError, match="cannot create the store"):
        Store(missing, create=True)
    with pytest.raises(StoreError, match="not an alkit store"):
        Store(missing)


def test_a_database_with_tables_named_as_alkits_and_a_long_run_name_are_refused(tmp_path: Path, digits_csv: Path,
                                                                              pg_database) -> None:  # noqa: ANN001
    """Another application's 'labels' table made init a traceback (a foreign key on its columns), and a run name
    over the column's 256 characters one on PostgreSQL only, where SQLite ran it (a PostgreSQL check)."""
    from sqlalchemy import create_engine, text

    from alkit.loop import ActiveLoop, LoopError, RunRequest
    from alkit.pools.ingest import InitOptions, init_project

    url = pg_database()
    engine = create_engine(url)
    with engine.begin() as c:
        c.execute(text("create table labels (id int primary key, note text)"))
        c.execute(text("insert into labels values (1, 'precious')"))
    with pytest.raises(StoreError, match=r"the database holds tables named as alkit's \(labels\); use an empty"):
        Store(url, create=True)
    with engine.begin() as c:
        assert c.execute(text("select note from labels")).scalar() == "precious"
        c.execute(text("drop table labels"))
        # a role that may not create tables in the schema: a traceback ('permission denied for schema public')
        c.execute(text("drop role if exists alkit_reader; create role alkit_reader login"))
        c.execute(text("revoke create on schema public from public"))
    engine.dispose()
    reader = url.replace("alkit@", "alkit_reader@", 1)
    assert reader != url
    with pytest.raises(StoreError, match=r"cannot create the store at .*permission denied for schema public"):
        Store(reader, create=True)
    init_project(digits_csv, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, store=url))
    from alkit.config import load_project

    loop = ActiveLoop(load_project(tmp_path / "p"))
    with pytest.raises(LoopError, match=r"is 257 characters; the store allows 256: give a shorter --name"):
        loop.resolve(RunRequest(strategy="random", budget=10, name="n" * 257))
    loop.store.dispose()


def test_a_server_out_of_reach_is_an_outage_and_url_spellings_are_named() -> None:
    """A server down when a command starts was 'is not an alkit store' (exit 2, bad input to a retry script): it is
    the outage the commands name (exit 1, run again when it is back).  postgres:// (DATABASE_URL's spelling) got a
    bare 'NoSuchModuleError'."""
    from sqlalchemy.exc import OperationalError

    pytest.importorskip("psycopg")
    with pytest.raises(OperationalError, match="No such file or directory"):
        Store("postgresql+psycopg://alkit@/x?host=/nonexistent-alkit-socket-dir")
    with pytest.raises(OperationalError, match="No such file or directory"):  # init's too (exit 2 'cannot create')
        Store("postgresql+psycopg://alkit@/x?host=/nonexistent-alkit-socket-dir", create=True)
    with pytest.raises(StoreError, match=r"a postgres:// URL: write it postgresql\+psycopg://"):
        Store("postgres://alkit@/x", create=True)


def test_an_init_killed_after_its_store_committed_does_not_block_the_next(tmp_path: Path, digits_csv: Path,
                                                                          pg_database) -> None:  # noqa: ANN001
    """A kill -9 between the store's commit and alkit.toml left a full store no project claimed, and every later init
    was refused with 'the store already holds items' (a PostgreSQL check).  The dead init's folder records the
    tables it created in which store, with the token its store holds; the next init into that folder drops them.
    Another store's are kept, as is a store that holds another init's token: a killed init's empty tables that
    another project's init took were dropped by their names, with that project's labels (a black-box check)."""
    import json as _json

    from sqlalchemy import create_engine, text

    from alkit.pools.ingest import InitOptions, InputError, _store_digest, init_project

    url, other = pg_database(), pg_database()
    opts = InitOptions(id_col="id", label_col="label", hide_labels=True, store=url)
    root = tmp_path / "p"
    init_project(digits_csv, root, opts)
    for name in ("alkit.toml", "features.parquet", "payload.parquet"):  # killed before its files were moved in
        (root / name).unlink()
    engine = create_engine(url)
    with engine.connect() as c:
        token = c.execute(text("select value from meta where key = 'init_token'")).scalar()
    engine.dispose()
    assert isinstance(token, str) and len(token) == 32

    def plant(store: str, tok: str) -> Path:
        dead = root / ".alkit-init-999999999-dead"
        dead.mkdir(exist_ok=True)
        (dead / "store-tables.json").write_text(_json.dumps({"store": _store_digest(store), "tables": Store.table_names(),
                                                             "token": tok}))
        return dead

    dead = plant(other, token)
    with pytest.raises(StoreError, match="already holds items"):  # a record of another store drops nothing here
        init_project(digits_csv, root, opts)
    assert (dead / "store-tables.json").exists()  # and stays for an init on that store
    plant(url, "f" * 32)  # the tables are another init's now: a project's store, whatever the record's names
    with pytest.raises(StoreError, match="already holds items"):
        init_project(digits_csv, root, opts)
    assert Store(url).n_items() == 400 and not dead.exists()
    plant(url, token)
    (dead / "features.parquet").write_bytes(b"half written")
    # an init refused before it reaches the store (bad input) had deleted the record, the only note of the tables
    with pytest.raises(InputError, match="--test-frac"):
        init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True, store=url,
                                                   test_frac=1.5))
    assert [p.name for p in dead.iterdir()] == ["store-tables.json"]
    cfg = init_project(digits_csv, root, opts)
    assert (root / "alkit.toml").exists() and not dead.exists()
    s = Store(url)
    assert s.counts()["pool:unlabeled"] + s.counts().get("test:labeled", 0) > 0 and cfg.n_items == 400
    s.dispose()


def _alkit(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "alkit.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600)
    assert proc.returncode == 0, f"alkit {' '.join(args)}:\n{proc.stdout}\n{proc.stderr}"
    return proc


def test_cli_init_and_run_on_postgres(tmp_path: Path, digits_csv: Path, pg_database) -> None:  # noqa: ANN001
    url = pg_database()
    out = _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                 "--store", url, cwd=tmp_path)
    assert "pool items" in out.stdout
    assert not (tmp_path / "alkit.db").exists()
    rows = json.loads(_alkit("run", "--strategy", "random", "--budget", "20", "--batch-size", "10",
                             "--json", cwd=tmp_path).stdout)
    assert len(rows) == 1 and rows[0]["n_labeled"] == 20 and rows[0]["cycles"] == 3
    assert set(rows[0]["metrics"]) == {"accuracy", "balanced_accuracy", "macro_f1", "nll", "ece"}
    s = Store(url)
    assert s.counts()["pool:unlabeled"] > 0 and len(s.selected_keys(rows[0]["id"])) == 20
    s.dispose()


def test_two_cli_queue_imports_at_once_on_postgres(tmp_path: Path, pg_database) -> None:  # noqa: ANN001
    """Two `alkit queue import` processes against one PostgreSQL store at once: every label of
    both files lands, with its annotator; the same file twice labels once."""
    import polars as pl
    from test_queue import _digits_human, queue_batch, shared_labels

    project, truth = _digits_human(tmp_path, store=pg_database())
    ids = queue_batch(project, 60)
    more = ids[40:]
    files = []
    for n, part in enumerate((ids[:40:2], ids[1:40:2], more, more)):
        files.append(tmp_path / f"part{n}.csv")
        pl.DataFrame({"id": part, "label": [truth[i] for i in part]}).write_csv(files[-1])
    env = {**os.environ, "ALKIT_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "alkit.cli", "queue", "import", str(f), "--annotator", f"p{n}",
                               "--json", "--project", str(project.root)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for n, f in enumerate(files)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert [r["labeled"] for r in results[:2]] == [20, 20]
    assert sorted((r["labeled"], r["unchanged"]) for r in results[2:]) == [(0, 20), (20, 0)]
    got = shared_labels(project)
    assert {i: v[0] for i, v in got.items()} == {i: truth[i] for i in ids}
    assert {got[i][2] for i in ids[:40:2]} == {"p0"} and {got[i][2] for i in ids[1:40:2]} == {"p1"}
