"""Processes beside this one: whether one still exists (how a lease or an init's temp folder left by
a killed process is told from one whose owner is still at work; same host only), and a file lock
that one process holds at a time."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a running process.  A zombie (killed, not yet reaped by its parent: e.g. the
    child of a ``timeout -s KILL`` that killed itself too, until init reaps it) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return not _zombie(pid)
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Linux: the state field of /proc/PID/stat is Z; elsewhere (no /proc) False."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return False
    # "pid (comm) S ...": comm may hold spaces and parentheses, so the state follows the last ')'
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"


@contextlib.contextmanager
def file_lock(lock_path: Path) -> Iterator[None]:
    """An exclusive lock across processes (POSIX flock; elsewhere none): the others wait in the
    kernel, and a holder that dies, even by kill -9, releases it (no stale lock to take over).
    ``lock_path`` a folder: the lock is on the folder itself, so no lock file is left in it."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    lock_path = Path(lock_path)
    fd = os.open(lock_path, os.O_RDONLY) if lock_path.is_dir() else os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
