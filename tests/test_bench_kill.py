"""`alkit bench` killed mid-way and started again finishes every run with the store intact."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from alkit.config import load_project
from alkit.loop import ActiveLoop
from alkit.pools.ingest import InitOptions, init_project

ARGS = ["bench", "--budget", "30", "--batch-size", "10", "--seeds", "2", "--strategies", "random,topk"]


@pytest.mark.parametrize("how", ["SIGKILL", "SIGTERM"])
def test_bench_resumes_after_kill(tmp_path: Path, digits_csv: Path, how: str) -> None:
    """SIGTERM also says so (it ended the bench without a word: a black-box check)."""
    init_project(digits_csv, tmp_path, InitOptions(id_col="id", label_col="label", hide_labels=True))
    env = {**os.environ, "ALKIT_THREADS": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "alkit.cli", *ARGS], cwd=tmp_path, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    loop = ActiveLoop(load_project(tmp_path))
    while time.time() < deadline and proc.poll() is None:  # kill once some cycles are committed
        if len(loop.store.cycles()) >= 3:
            break
        time.sleep(0.2)
    killed = proc.poll() is None
    if killed:
        os.kill(proc.pid, getattr(signal, how))
        _, err = proc.communicate(timeout=120)
        if how == "SIGTERM":
            assert proc.returncode == 130 and "interrupted: the bench's runs keep every finished cycle" in err, err
    done = subprocess.run([sys.executable, "-m", "alkit.cli", *ARGS], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert killed, "the bench finished before it could be killed"
    runs = loop.store.runs()
    assert sorted(r.name for r in runs) == ["random-vbll-b10-s0", "random-vbll-b10-s1", "topk-b10-s0", "topk-b10-s1"]
    for r in runs:
        cycles = loop.store.cycles(r.id)
        assert [c.cycle for c in cycles] == list(range(len(cycles)))
        sel = loop.store.selected_keys(r.id).tolist()
        assert len(sel) == len(set(sel)) == 30 and r.status == "complete"
    assert (tmp_path / "bench" / "bench_summary.md").exists()
