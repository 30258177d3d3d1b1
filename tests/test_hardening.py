"""Refusals that must leave everything as it was (issue 16): a run driven twice at once, a store
whose labels alkit.toml does not know, a deleted database, secrets, an init killed half-way."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from alkit.config import load_project
from alkit.pools import leases
from alkit.pools.ingest import InitOptions, init_project
from alkit.pools.store import Store

ALKIT = [sys.executable, "-m", "alkit.cli"]
RUN = ["run", "--strategy", "random", "--budget", "30", "--batch-size", "10", "--max-epochs", "5"]


def alkit(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1", **(env or {})}
    return subprocess.run([*ALKIT, *args], cwd=cwd, capture_output=True, text=True, env=full_env, timeout=600)


def snapshot(root: Path) -> dict[str, str]:
    """Every file of the project folder with the hash of its bytes, the database as its SQL dump
    (a SQLite file's bytes change on open even when no row does)."""
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.name.endswith(("-wal", "-shm")):
            if p.suffix == ".db":
                with sqlite3.connect(p) as db:
                    data = "\n".join(db.iterdump()).encode()
            else:
                data = p.read_bytes()
            out[str(p.relative_to(root))] = hashlib.sha256(data).hexdigest()
    return out


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
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
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


def test_two_identical_runs_started_together(project: Path) -> None:
    """One of them runs, the other (if it overlaps) says busy; never an IntegrityError or a gap."""
    args = [*ALKIT, *RUN, "--budget", "60", "-p", str(project)]
    env = {**os.environ, "ALKIT_THREADS": "1", "COLUMNS": "200"}
    procs = [subprocess.Popen(args, cwd=project.parent, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    outs = [(p.wait(timeout=600), p.stderr.read()) for p in procs]
    assert any(rc == 0 for rc, _ in outs), outs
    for rc, err in outs:
        assert "Traceback" not in err and (rc == 0 or (rc == 2 and "is busy" in err)), err
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
