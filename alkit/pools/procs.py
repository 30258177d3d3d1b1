"""Whether a process still exists: how a lease or an init's temp folder left by a killed process is
told from one whose owner is still at work (same host only)."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True
