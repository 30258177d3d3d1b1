"""The label files' atomic write (alkit/pools/labelfiles/_common.py)."""

from __future__ import annotations

from pathlib import Path


def test_a_killed_writes_temporary_file_is_removed_by_a_later_write(tmp_path: Path) -> None:
    """A queue export killed mid-write left 0-byte `.queue-c0.json.XXXX` files that piled up (a black-box
    check); a later write removes those older than STALE_TEMP_S, and keeps a recent one (a writer at work)."""
    import os
    import time

    from alkit.pools.labelfiles._common import STALE_TEMP_S, TEMP_MARK, atomic_write

    target = tmp_path / "queue-c0.json"
    old, fresh = tmp_path / f".queue-c0.json{TEMP_MARK}abc123", tmp_path / f".queue-c0.json{TEMP_MARK}def456"
    # a user's own files beside it, old as well: a backup and an editor's swap file were deleted (a check)
    theirs = [tmp_path / ".queue-c0.json.bak", tmp_path / ".queue-c0.json.swp", tmp_path / ".queue-c0.json.abcd1234"]
    past = time.time() - 2 * STALE_TEMP_S
    for f in (old, fresh, *theirs):
        f.write_bytes(b"")
        if f is not fresh:
            os.utime(f, (past, past))
    atomic_write(target, lambda p: p.write_text("[]"))
    assert target.read_text() == "[]" and not old.exists() and fresh.exists()
    assert all(f.exists() for f in theirs)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([target.name, fresh.name, *(f.name for f in theirs)])


def test_a_failed_write_names_the_file_and_leaves_nothing(tmp_path: Path) -> None:
    """A hostile-filesystem check: a folder where queue.csv goes was named by the temporary file ('cannot use
    .queue.csv.3osf6sju: the path is a folder'); polars' own error for a full disk (a ComputeError) was a
    traceback; a plot on a full disk left a 0-byte learning_curves.png.  Each failure now names the file as an
    OSError (one line in the CLI) and leaves no file behind."""
    import errno

    import polars as pl
    import pytest

    from alkit.pools.labelfiles._common import atomic_write

    folder = tmp_path / "queue.csv"
    folder.mkdir()
    with pytest.raises(IsADirectoryError) as taken:
        atomic_write(folder, lambda p: p.write_text("id,label\n"))
    assert taken.value.filename == str(folder) and taken.value.errno == errno.EISDIR

    def full_disk(p: Path) -> None:  # polars' words for ENOSPC, as a parquet write on a full disk raised them
        raise pl.exceptions.ComputeError("parquet: File out of specification: underlying IO error: No space left "
                                         "on device (os error 28)")

    target = tmp_path / "queue.parquet"
    with pytest.raises(OSError) as taken:
        atomic_write(target, full_disk)
    assert taken.value.errno == errno.ENOSPC and taken.value.filename == str(target)
    for words in (OSError("No space left on device (os error 28)"),  # polars' CSV writer: no errno, no file
                  OSError(errno.ENOSPC, "No space left on device")):  # Python's write(): no file
        def fails(p: Path, exc: OSError = words) -> None:
            raise exc

        with pytest.raises(OSError) as taken:
            atomic_write(target, fails)
        assert taken.value.errno == errno.ENOSPC and taken.value.filename == str(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["queue.csv"]  # no temporary file, no target


def test_a_tables_columns_beyond_those_read_are_not_kept(tmp_path: Path) -> None:
    """An import reads the answer columns (in any spelling) and ``read_fields``; a `queue labels --include` file's
    784 pixel columns were all read and kept per row (3 GB at 28,000 rows, a check at scale)."""
    import polars as pl

    from alkit.pools import labelfiles

    frame = pl.DataFrame({"id": ["a", "b"], "px0": [1, 2], "px1": [3, 4], "note": ["x", "y"], "label": ["1", None],
                          "Skip": [None, "true"]})
    for name in ("t.csv", "t.parquet", "t.jsonl"):
        path = tmp_path / name
        (frame.write_csv if name.endswith("csv") else frame.write_parquet if name.endswith("parquet")
         else frame.write_ndjson)(path)
        problems: list[str] = []
        rows = labelfiles.read(path, problems, data_fields=["note", "px0", "px1"], read_fields=["note"])
        assert not problems, (name, problems)
        assert [(r.item_id, r.label, r.skip, r.data) for r in rows] == [
            ("a", "1", False, {"note": "x"}), ("b", None, True, {"note": "y"})], name
