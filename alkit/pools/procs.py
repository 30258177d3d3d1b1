"""Whether a process still exists: how a lease or an init's temp folder left by a killed process is
told from one whose owner is still at work (same host only)."""

from __future__ import annotations

import os


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
