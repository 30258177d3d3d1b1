"""Shared fixtures: small real data (scikit-learn digits) and ready-made projects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch
from sklearn.datasets import load_digits

torch.set_num_threads(1)

def digits_frame(n: int = 400, seed: int = 0) -> pl.DataFrame:
    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(seed).permutation(len(y))[:n]
    df = pl.DataFrame({"id": [f"d{i:04d}" for i in idx]})
    df = df.hstack(pl.DataFrame(X[idx].astype(np.float32), schema=[f"px{j}" for j in range(64)]))
    return df.with_columns(pl.Series("label", y[idx].astype(np.int64)))


@pytest.fixture
def digits_csv(tmp_path: Path) -> Path:
    path = tmp_path / "digits.csv"
    digits_frame().write_csv(path)
    return path


@pytest.fixture
def digits_project(tmp_path: Path, digits_csv: Path) -> Path:
    from alkit.pools.ingest import InitOptions, init_project

    root = tmp_path / "proj"
    init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True, test_frac=0.25))
    return root


# --------------------------------------------------------------------------- PostgreSQL
# A throwaway PostgreSQL server for the test session, from the distribution's binaries
# (Debian: apt-get install postgresql).  initdb into a private temp dir, listen on a unix socket
# only (no port to collide with other test sessions on the machine), trust auth, fsync off.
# Each test gets a fresh database.  Set ALKIT_TEST_PG_URL to use an existing server instead
# (a superuser URL; databases are created and dropped on it).  ALKIT_REQUIRE_POSTGRES=1 (CI)
# turns "no PostgreSQL found" into a failure instead of a skip.

import glob as _glob
import os as _os
import shutil as _shutil
import subprocess as _subprocess
import tempfile as _tempfile
import uuid as _uuid
from collections.abc import Callable, Iterator


def _pg_bindir() -> Path | None:
    """Directory holding initdb and pg_ctl: PATH first, then Debian's /usr/lib/postgresql/N/bin."""
    found = _shutil.which("initdb")
    if found and _shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(_glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                      key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0)
    return Path(versions[-1]).parent if versions else None


def _pg_unavailable(reason: str) -> None:
    if _os.environ.get("ALKIT_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"ALKIT_REQUIRE_POSTGRES=1 but {reason}")
    pytest.skip(reason)


class PgServer:
    """A running PostgreSQL server; ``database()`` creates an empty database and returns its URL."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url  # a URL of the server's maintenance database

    def _url(self, dbname: str) -> str:
        from sqlalchemy.engine import make_url

        return make_url(self.admin_url).set(database=dbname).render_as_string(hide_password=False)

    def _admin(self, sql: str) -> None:
        from sqlalchemy import create_engine, text

        eng = create_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            with eng.connect() as c:
                c.execute(text(sql))
        finally:
            eng.dispose()

    def database(self) -> str:
        name = f"alkit_test_{_uuid.uuid4().hex[:12]}"
        self._admin(f'CREATE DATABASE "{name}"')
        return self._url(name)

    def drop(self, url: str) -> None:
        from sqlalchemy.engine import make_url

        self._admin(f'DROP DATABASE IF EXISTS "{make_url(url).database}" WITH (FORCE)')


def _start_local_pg() -> tuple[PgServer, Callable[[], None]]:
    """initdb + pg_ctl start as a non-root user (PostgreSQL refuses to run as root)."""
    bindir = _pg_bindir()
    if bindir is None:
        _pg_unavailable("no PostgreSQL server binaries (initdb, pg_ctl) found; "
                        "install them with `apt-get install postgresql` to run the PostgreSQL store tests")
    try:
        import psycopg  # noqa: F401
    except ImportError:
        _pg_unavailable("psycopg is not installed; `pip install -e '.[postgres]'` to run the PostgreSQL store tests")
    base = Path(_tempfile.mkdtemp(prefix="alkit-pg-"))
    data, sock = base / "data", base / "sock"
    data.mkdir()
    sock.mkdir()
    prefix: list[str] = []
    if _os.geteuid() == 0:
        import pwd

        user = next((u for u in ("postgres", "nobody") if _has_user(u)), None)
        if user is None:
            _pg_unavailable("running as root and no 'postgres' or 'nobody' user to run PostgreSQL as")
        pw = pwd.getpwnam(user)
        for p in (base, data, sock):
            _os.chown(p, pw.pw_uid, pw.pw_gid)
        base.chmod(0o755)
        runner = _shutil.which("runuser")
        prefix = [runner, "-u", user, "--"] if runner else ["su", user, "-s", "/bin/sh", "-c"]
    env = {**_os.environ, "LC_ALL": "C", "LANG": "C"}

    def as_pg(args: list[str]) -> None:
        cmd = prefix + args if not prefix or prefix[0] != "su" else prefix + [" ".join(map(_shquote, args))]
        res = _subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, cwd=base)
        if res.returncode != 0:
            raise RuntimeError(f"{' '.join(args[:2])} failed ({res.returncode}): {res.stderr.strip() or res.stdout.strip()}")

    as_pg([str(bindir / "initdb"), "-D", str(data), "-U", "alkit", "--auth=trust", "-E", "UTF8",
           "--no-sync", "--no-instructions"])
    opts = (f"-c listen_addresses='' -c unix_socket_directories='{sock}' -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200 -c shared_buffers=32MB")
    as_pg([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(base / "log"), "-o", opts, "-w", "-t", "60", "start"])

    def stop() -> None:
        try:
            as_pg([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"])
        finally:
            _shutil.rmtree(base, ignore_errors=True)

    return PgServer(f"postgresql+psycopg://alkit@/postgres?host={sock}"), stop


def _has_user(name: str) -> bool:
    import pwd

    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


def _shquote(s: str) -> str:
    import shlex

    return shlex.quote(s)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """The session's PostgreSQL server (started on first use, stopped at the end)."""
    external = _os.environ.get("ALKIT_TEST_PG_URL")
    if external:
        yield PgServer(external)
        return
    server, stop = _start_local_pg()
    try:
        yield server
    finally:
        stop()


@pytest.fixture
def pg_database(pg_server: PgServer) -> Iterator[Callable[[], str]]:
    """Factory of fresh, empty PostgreSQL databases (URLs); all dropped after the test."""
    made: list[str] = []

    def make() -> str:
        made.append(pg_server.database())
        return made[-1]

    yield make
    for url in made:
        pg_server.drop(url)


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty store URL on each backend: a SQLite file in tmp_path, or a fresh PG database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'store.db'}"
    return request.getfixturevalue("pg_database")()


def folder_snapshot(root: Path) -> dict[str, str]:
    """Every file below ``root`` with the hash of its bytes, a SQLite database as the hash of its SQL
    dump (its bytes change on open even when no row does): equal snapshots = nothing changed."""
    import hashlib
    import sqlite3

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


def project_cli(cwd: Path, project: str = "p") -> Callable[..., "subprocess.CompletedProcess[str]"]:
    """`alkit ARGS -p PROJECT` run in ``cwd`` as a user types it (one torch thread, wide columns)."""
    import subprocess
    import sys

    env = {**_os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1"}

    def alkit(*args: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run([sys.executable, "-m", "alkit.cli", *args, "-p", project], cwd=cwd, capture_output=True,
                              text=True, env=env, timeout=600)

    return alkit


class DiabetesSplit:
    """scikit-learn's diabetes regression split into a 300-item pool and a test set, with the pool's
    input statistics (as the loop computes them) and a Bayesian ridge reference on any labels."""

    def __init__(self) -> None:
        from sklearn.datasets import load_diabetes

        from alkit.models.backbone import pool_input_spec

        X, y = load_diabetes(return_X_y=True)
        self.X, self.y = X.astype(np.float32), y
        order = np.random.default_rng(0).permutation(len(X))
        self.pool, self.test = order[:300], order[300:]
        self.spec = pool_input_spec(self.X[self.pool])
        self.sd = np.where(self.spec.std_f > 1e-8, self.spec.std_f, 1.0)

    def labels(self, n: int, seed: int) -> np.ndarray:
        """``n`` random pool indices for this seed."""
        return self.pool[np.random.default_rng(seed).choice(len(self.pool), n, replace=False)]

    def ridge_crps(self, idx: np.ndarray) -> float:
        """Test CRPS of sklearn's BayesianRidge (Gaussian predictive) fitted on pool items ``idx``."""
        import torch
        from sklearn.linear_model import BayesianRidge

        from alkit import metrics
        from alkit.distributions import GaussianPredictive

        z = lambda A: (A - self.spec.mean_f) / self.sd  # noqa: E731
        mu, s = BayesianRidge().fit(z(self.X[idx]), self.y[idx]).predict(z(self.X[self.test]), return_std=True)
        return metrics.crps(GaussianPredictive(torch.as_tensor(mu), torch.as_tensor(s**2)), self.y[self.test])
