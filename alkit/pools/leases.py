"""Run leases: at most one process drives a run at a time.

Two `alkit run` of the same run started together would both compute cycle c and race to commit
it.  Before touching a run, the loop takes its lease: a row in ``run_leases`` keyed by the run
name, inserted in one transaction, so of two concurrent starts exactly one inserts it and the
other is told the run is busy (and by whom).  A lease left behind by a killed process must not
block the resume the crash-safety promise is about, so a held lease is taken over when its
holder is provably gone: same host and its pid no longer exists, or (another host, where the pid
cannot be checked) no heartbeat for ``STALE_AFTER``.  The loop renews the heartbeat every cycle
and releases the lease when it returns.
"""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import delete, inspect, select, update
from sqlalchemy.exc import IntegrityError

from alkit.pools.procs import pid_alive
from alkit.pools.schema import RunLease, utcnow
from alkit.pools.store import Store, StoreError

STALE_AFTER = timedelta(minutes=30)  # another host's lease without a heartbeat this long is abandoned


class RunBusy(StoreError):
    """The run is being driven by another live process; nothing was written."""


@dataclass(frozen=True)
class Lease:
    run_name: str
    token: str


def _machine() -> str:
    """Where a process id means something: the host name, and the PID namespace where Linux shows one.  Two
    containers sharing a host name (--network host, cloned CI hosts) each read the other's pid as dead, took
    over a live run and both failed ('cycle 48 out of order'; an environment check): a lease from another
    namespace is judged by its heartbeat, as another host's is."""
    host = socket.gethostname()
    try:
        return f"{host}#pidns:{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return host


def _host_name(host: str) -> str:
    return host.split("#pidns:")[0]


def _abandoned(row: RunLease, host: str) -> bool:
    # a bare host name: a lease written before namespaces were recorded (or without /proc), judged as before
    if row.host == host or row.host == _host_name(host) and "#pidns:" not in row.host:
        return not pid_alive(row.pid)
    return utcnow() - row.heartbeat_at > STALE_AFTER


def acquire(store: Store, run_name: str) -> Lease:
    """Take the run's lease, or raise RunBusy naming the process that holds it."""
    RunLease.__table__.create(store.engine, checkfirst=True)  # stores made before leases existed
    host, pid, token = _machine(), os.getpid(), secrets.token_hex(16)
    try:
        with store.session() as s:
            row = s.get(RunLease, run_name)
            if row is None:
                s.add(RunLease(run_name=run_name, token=token, host=host, pid=pid))
                return Lease(run_name, token)
            if not _abandoned(row, host):
                raise RunBusy(f"run {run_name!r} is busy: process {row.pid} on {_host_name(row.host)} has been running it "
                              f"since {row.acquired_at:%Y-%m-%d %H:%M:%S} UTC; wait for it to finish or stop it")
            taken = s.execute(update(RunLease).where(RunLease.run_name == run_name, RunLease.token == row.token)
                              .values(token=token, host=host, pid=pid, acquired_at=utcnow(), heartbeat_at=utcnow()))
            if taken.rowcount != 1:  # another process took the abandoned lease first
                raise RunBusy(f"run {run_name!r} is busy: another process has just started it")
            return Lease(run_name, token)
    except IntegrityError:  # a concurrent start inserted the row between our read and our insert
        raise RunBusy(f"run {run_name!r} is busy: another process has just started it") from None


def live_runs(store: Store) -> set[str]:
    """Names of the runs a live process is driving now (read-only: a store without the table has none)."""
    if not inspect(store.engine).has_table(RunLease.__tablename__):
        return set()
    host = _machine()
    with store.session() as s:
        return {row.run_name for row in s.scalars(select(RunLease)) if not _abandoned(row, host)}


def renew(store: Store, lease: Lease) -> None:
    """Heartbeat; a lease taken over meanwhile (this process was presumed dead) is an error."""
    with store.session() as s:
        done = s.execute(update(RunLease).where(RunLease.run_name == lease.run_name, RunLease.token == lease.token)
                         .values(heartbeat_at=utcnow()))
        if done.rowcount != 1:
            raise RunBusy(f"run {lease.run_name!r} was taken over by another process; stopping this one")


def release(store: Store, lease: Lease) -> None:
    with store.session() as s:
        s.execute(delete(RunLease).where(RunLease.run_name == lease.run_name, RunLease.token == lease.token))
