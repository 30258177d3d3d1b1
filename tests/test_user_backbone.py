"""`--backbone MODULE:FUNCTION`: a user's torch module as the feature extractor of every last-layer
scorer, end to end through `alkit run`, resumable after a kill, identical to the in-tree backbone
when it builds the same network, and refused by name when it cannot be imported."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

from conftest import folder_snapshot

NETS = '''
import torch
from torch import nn
from alkit.models.backbone import ResidualMLP


def small_mlp(n_features):
    return nn.Sequential(nn.Linear(n_features, 48), nn.ReLU(), nn.Linear(48, 32), nn.ReLU())


def same_as_alkit(n_features):
    return ResidualMLP(n_features, 128, 1)  # alkit's default backbone; its own standardisation is the identity


def tiny_cnn(shape):
    c, h, w = shape
    return nn.Sequential(nn.Conv2d(c, 4, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten())


class _Pair(nn.Module):
    def __init__(self, shape):
        super().__init__()
        self.conv = nn.Conv2d(shape[0], 4, 3)

    def forward(self, x):
        h = self.conv(x).flatten(1)
        return h, h


def returns_a_pair(shape):
    return _Pair(shape)


def nan_features(shape):
    return nn.Sequential(nn.Flatten(), nn.Linear(shape[0] * shape[1] * shape[2], 8), nn.Dropout(1.0), nn.Softmax(-1),
                         nn.Hardtanh(float("nan"), float("nan")))


def flat_only(shape):
    return nn.Linear(64, 8)  # takes (n, 64): given (n, 1, 8, 8) images it fails in its first matmul
'''


@pytest.fixture
def nets(tmp_path: Path) -> Path:
    (tmp_path / "mynets.py").write_text(NETS)
    return tmp_path


def _alkit(*args: str, cwd: Path, **kw) -> subprocess.CompletedProcess:  # noqa: ANN003
    env = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1"}
    return subprocess.run([sys.executable, "-m", "alkit.cli", *args], cwd=cwd, capture_output=True, text=True,
                          env=env, timeout=600, **kw)


def test_same_network_as_the_in_tree_backbone_gives_the_same_model(nets: Path) -> None:
    from alkit.learners.vbll import VBLLLearner

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    ours = VBLLLearner("classification", 10, capacity="fixed")  # a user network takes no per-fit prior choice
    theirs = VBLLLearner("classification", 10, module=f"{nets / 'mynets.py'}:same_as_alkit")
    for learner in (ours, theirs):
        learner.fit(X[:80], y[:80], seed=3)
    a, b = ours.predict(X[500:700]), theirs.predict(X[500:700])
    np.testing.assert_allclose(a.probs_n_C.numpy(), b.probs_n_C.numpy(), atol=1e-5)
    np.testing.assert_allclose(a.epistemic_n.numpy(), b.epistemic_n.numpy(), rtol=1e-4, atol=1e-7)


def _selected(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as c:
        return c.execute("select cycle, item_key from selections order by cycle, rank").fetchall()


def test_cli_backbone_end_to_end_and_resumed_after_a_kill(nets: Path, digits_csv: Path) -> None:
    for p in ("a", "b"):
        assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", p,
                      cwd=nets).returncode == 0
    run = ["run", "--strategy", "epistemic", "--backbone", "mynets:small_mlp", "--budget", "60", "--max-epochs", "10"]
    whole = _alkit(*run, "-p", "a", cwd=nets)
    assert whole.returncode == 0, whole.stderr
    proc = subprocess.Popen([sys.executable, "-m", "alkit.cli", *run, "-p", "b"], cwd=nets, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env={**os.environ, "ALKIT_THREADS": "1"})
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None:
        with sqlite3.connect(nets / "b" / "alkit.db") as c:
            if c.execute("select count(*) from cycles").fetchone()[0] >= 2:
                break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = _alkit(*run, "-p", "b", cwd=nets)
    assert resumed.returncode == 0, resumed.stderr
    assert _selected(nets / "a" / "alkit.db") == _selected(nets / "b" / "alkit.db")
    with sqlite3.connect(nets / "a" / "alkit.db") as c:
        (config,) = c.execute("select config from runs").fetchone()
    assert '"module": "mynets:small_mlp"' in config  # recorded with the run


def test_image_projects_pass_the_shape_and_bad_references_are_refused(nets: Path, digits_csv: Path) -> None:
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                  "--image-shape", "8,8", "-p", "img", cwd=nets).returncode == 0
    ok = _alkit("run", "--strategy", "topk", "--backbone", "mynets:tiny_cnn", "--budget", "20", "--max-epochs", "5",
                "-p", "img", cwd=nets)
    assert ok.returncode == 0, ok.stderr
    before = folder_snapshot(nets / "img")
    for ref, says in (("mynets:nosuch", "mynets has no function 'nosuch'"),
                      ("nomodule:f", "cannot be imported: ModuleNotFoundError"),
                      ("justaname", "write it as module:function"),
                      # these ran, spent the first batch, then failed at the first fit with a traceback
                      ("mynets:returns_a_pair", "--backbone 'mynets:returns_a_pair': the backbone must return a tensor"),
                      ("mynets:nan_features", "returned NaN or infinite features"),
                      ("mynets:flat_only", "the backbone failed on a probe batch: RuntimeError")):
        bad = _alkit("run", "--backbone", ref, "--budget", "20", "-p", "img", cwd=nets)
        assert bad.returncode == 2 and says in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and folder_snapshot(nets / "img") == before, bad.stderr
    moved = nets / "elsewhere"
    moved.mkdir()
    gone = _alkit("run", "--strategy", "topk", "--backbone", "mynets:tiny_cnn", "--budget", "30", "-p",
                  str(nets / "img"), cwd=moved)  # resumed where the module cannot be found
    assert gone.returncode == 2 and "--backbone 'mynets:tiny_cnn' cannot be imported" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr and len(gone.stderr.strip().splitlines()) == 1, gone.stderr
    assert folder_snapshot(nets / "img") == before  # the run's budget stays 20, nothing selected


def test_a_run_resumed_with_an_edited_backbone_file_is_refused(nets: Path, digits_csv: Path) -> None:
    """An edited network file was picked up silently by a resumed run (a layer of width 32 became 7):
    the run's record now holds the source's hash, and a changed file is refused until restored."""
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p",
                  cwd=nets).returncode == 0
    run = ["run", "--strategy", "topk", "--backbone", "mynets:small_mlp", "--max-epochs", "5", "-p", "p"]
    assert _alkit(*run, "--budget", "20", cwd=nets).returncode == 0
    original = (nets / "mynets.py").read_text()
    (nets / "mynets.py").write_text(original.replace("nn.Linear(48, 32)", "nn.Linear(48, 7)"))
    before = folder_snapshot(nets / "p")
    edited = _alkit(*run, "--budget", "30", cwd=nets)
    assert edited.returncode == 2 and "another version of the code --backbone names" in edited.stderr, edited.stderr
    assert len(edited.stderr.strip().splitlines()) == 1 and folder_snapshot(nets / "p") == before
    (nets / "mynets.py").write_text(original)
    assert _alkit(*run, "--budget", "30", cwd=nets).returncode == 0
