"""The label files' atomic write (alkit/pools/labelfiles/_common.py)."""

from __future__ import annotations

from pathlib import Path


def test_a_killed_writes_temporary_file_is_removed_by_a_later_write(tmp_path: Path) -> None:
    """A queue export killed mid-write left 0-byte `.queue-c0.json.XXXX` files that piled up (a black-box
    check); a later write removes those older than STALE_TEMP_S, and keeps a recent one (a writer at work)."""
    import os
    import time

    from alkit.pools.labelfiles._common import STALE_TEMP_S, atomic_write

    target = tmp_path / "queue-c0.json"
    old, fresh = tmp_path / ".queue-c0.json.abc123", tmp_path / ".queue-c0.json.def456"
    old.write_bytes(b"")
    fresh.write_bytes(b"")
    past = time.time() - 2 * STALE_TEMP_S
    os.utime(old, (past, past))
    atomic_write(target, lambda p: p.write_text("[]"))
    assert target.read_text() == "[]" and not old.exists() and fresh.exists()
