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


def small_times(n_features, c=0.05):
    torch.manual_seed(5)  # the same weights as small_bn, whatever the caller seeded
    return nn.Sequential(nn.Linear(n_features, 48), nn.ReLU(), nn.Linear(48, 32), nn.ReLU(), Times(c))


def small_plain(n_features):
    return small_times(n_features, 1.0)


class Times(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x * self.c


def small_bn(n_features):
    return nn.Sequential(nn.Linear(n_features, 16), nn.BatchNorm1d(16), nn.ReLU())


def flat_only(shape):
    return nn.Linear(64, 8)  # takes (n, 64): given (n, 1, 8, 8) images it fails in its first matmul


class _FailsInTraining(nn.Linear):
    def forward(self, x):
        if self.training and len(x) > 8:
            raise RuntimeError("fails in training on a big batch")
        return super().forward(x)


def fails_in_training(n_features):
    return _FailsInTraining(n_features, 8)  # passes the eval-mode probe (2 rows), fails in training mode


class _NoBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        raise RuntimeError("no backward here")


class _FailsBackward(nn.Linear):
    def forward(self, x):
        return _NoBackward.apply(super().forward(x))


def fails_backward(n_features):
    return _FailsBackward(n_features, 8)  # every forward passes; the first gradient step fails
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
    theirs = VBLLLearner("classification", 10, module=f"{nets / 'mynets.py'}:same_as_alkit", module_norm=0)
    for learner in (ours, theirs):
        learner.fit(X[:80], y[:80], seed=3)
    a, b = ours.predict(X[500:700]), theirs.predict(X[500:700])
    np.testing.assert_allclose(a.probs_n_C.numpy(), b.probs_n_C.numpy(), atol=1e-5)
    np.testing.assert_allclose(a.epistemic_n.numpy(), b.epistemic_n.numpy(), rtol=1e-4, atol=1e-7)


def test_module_norm_scales_the_output_at_initialisation_only(nets: Path) -> None:
    """module_norm > 0: one number, fixed at initialisation, brings the mean feature norm on the pool
    sample (training mode) to module_norm; 0 leaves the user's output as it is; batch-norm running
    statistics are not moved by the measurement."""
    import torch

    from alkit.models.backbone import BackboneConfig, InputSpec, build_backbone

    X = load_digits().data.astype(np.float32)
    spec = InputSpec(mean_f=X.mean(0), std_f=X.std(0), pool_sample_n_f=X[:300])
    for norm in (2.5, 7.0):
        bb = build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'mynets.py'}:small_times",
                                                                              module_norm=norm))
        with torch.no_grad():
            phi = bb(torch.as_tensor(X[:300]))
        assert float(phi.norm(dim=1).mean()) == pytest.approx(norm, rel=1e-4)
    plain = build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'mynets.py'}:small_times"))
    with torch.no_grad():
        assert torch.equal(plain(torch.as_tensor(X[:5])), plain.net(plain.fixed(torch.as_tensor(X[:5]))))
    bn = build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'mynets.py'}:small_bn",
                                                                          module_norm=2.5))
    norm_layer = bn.net[1]
    assert int(norm_layer.num_batches_tracked) == 0 and float(norm_layer.running_mean.abs().max()) == 0.0
    with torch.no_grad():  # measured in training mode (batch statistics, of 64-row chunks), as the first steps see it
        assert float(bn.train()(torch.as_tensor(X[:300])).norm(dim=1).mean()) == pytest.approx(2.5, rel=0.02)
        assert float(bn.eval()(torch.as_tensor(X[:300])).norm(dim=1).mean()) < 2.0  # unnormalised at initialisation
    for bad in (-1.0, float("nan"), 1e-30, 1e30):  # 1e30 crashed mid-run (the head's log prior variance)
        with pytest.raises(ValueError, match="module_norm must be 0 .* or a number from 0.01 to 1000"):
            BackboneConfig(module="m:f", module_norm=bad)


def test_vbll_on_a_user_backbone_does_not_depend_on_its_output_scale(nets: Path) -> None:
    """The VBLL learner's default (module_norm 2.5): a network and the same network with its output
    times 0.05 give the same model; with the scale left as it is (module_norm 0) the small one is
    near-uniform.  The plain MLP learner keeps the network's own scale."""
    from alkit.learners.vbll import VBLLLearner
    from alkit.models.learner import MLPLearner

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    probs = {}
    for net, norm in (("small_plain", None), ("small_times", None), ("small_times", 0.0)):
        opts = {} if norm is None else {"module_norm": norm}
        learner = VBLLLearner("classification", 10, module=f"{nets / 'mynets.py'}:{net}", **opts)
        learner.fit(X[:100], y[:100], seed=1)
        probs[net, norm] = learner.predict(X[1000:1300]).probs_n_C.numpy()
    np.testing.assert_allclose(probs["small_plain", None], probs["small_times", None], atol=2e-4)
    scaled, small = probs["small_times", None].max(1).mean(), probs["small_times", 0.0].max(1).mean()
    assert scaled > small + 0.2, (scaled, small)
    assert MLPLearner("classification", 10, module="m:f").backbone_config.module_norm == 0.0


def _selected(db: Path) -> list[tuple[int, int]]:
    with sqlite3.connect(db) as c:
        return c.execute("select cycle, item_key from selections order by cycle, rank").fetchall()


def test_cli_backbone_end_to_end_and_resumed_after_a_kill(nets: Path, digits_csv: Path) -> None:
    for p in ("a", "b"):
        assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", p,
                      cwd=nets).returncode == 0
    run = ["run", "--strategy", "epistemic", "--backbone", "mynets:small_mlp", "--budget", "60"]
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
    ok = _alkit("run", "--strategy", "topk", "--backbone", "mynets:tiny_cnn", "--budget", "20", "-p", "img", cwd=nets)
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
    # gradnorm layers deeper than the network's top part were refused only after the first batch was spent
    for extra, says in ((["--backbone", "mynets:tiny_cnn", "-o", "layers=0.net.1"],
                         "'0.net.1' names no layer of this project's network: its layers are 0.net.0, 1 "),
                        (["-o", "layers=0.mlp.blocks.0"],  # 8x8 images: alkit's image network has no blocks
                         "'0.mlp.blocks.0' names no layer of this project's network: its layers are 0.mlp.stem, 1 ")):
        bad = _alkit("run", "--scorer", "gradnorm", *extra, "--budget", "20", "-p", "img", cwd=nets)
        assert bad.returncode == 2 and says in bad.stderr and "Traceback" not in bad.stderr, bad.stderr
        assert folder_snapshot(nets / "img") == before, bad.stderr
    moved = nets / "elsewhere"
    moved.mkdir()
    gone = _alkit("run", "--strategy", "topk", "--backbone", "mynets:tiny_cnn", "--budget", "30", "-p",
                  str(nets / "img"), cwd=moved)  # resumed where the module cannot be found
    assert gone.returncode == 2 and "--backbone 'mynets:tiny_cnn' cannot be imported" in gone.stderr, gone.stderr
    assert "Traceback" not in gone.stderr and len(gone.stderr.strip().splitlines()) == 1, gone.stderr
    assert folder_snapshot(nets / "img") == before  # the run's budget stays 20, nothing selected


def test_a_module_kept_in_the_project_folder_is_found_from_any_folder(nets: Path, digits_csv: Path) -> None:
    """The README says importable from the current folder or the project's; the project's was not searched,
    so a run started in the project could not be resumed from elsewhere (a black-box check)."""
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                  "-p", "proj", cwd=nets).returncode == 0
    (nets / "proj" / "projnets.py").write_text(NETS)
    away = nets / "away"
    away.mkdir()
    for name, ref in (("by-module", "projnets:small_mlp"), ("by-file", "projnets.py:small_mlp")):
        first = _alkit("run", "--strategy", "topk", "--backbone", ref, "--budget", "20", "--name", name,
                       "-p", str(nets / "proj"), cwd=away)
        assert first.returncode == 0, first.stderr
        more = _alkit("run", "--resume", name, "--budget", "30", "-p", str(nets / "proj"), cwd=nets)
        assert more.returncode == 0, more.stderr


def test_a_backbone_that_fails_in_training_is_named_in_one_line(nets: Path, digits_csv: Path) -> None:
    """It came out as a 59-line traceback of alkit's loop, exit 1 (a black-box check); a backward that
    fails is caught by the same probe, before the first batch is recorded."""
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                  "-p", "flat", cwd=nets).returncode == 0
    for ref, step, message in (("mynets:fails_in_training", "forward", "fails in training on a big batch"),
                               ("mynets:fails_backward", "backward", "no backward here")):
        bad = _alkit("run", "--backbone", ref, "--budget", "30", "-p", "flat", cwd=nets)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert f"the backbone failed in training mode ({step})" in bad.stderr and message in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1, bad.stderr
        assert "no runs yet" in _alkit("status", "-p", "flat", cwd=nets).stdout


def test_a_run_resumed_with_an_edited_backbone_file_is_refused(nets: Path, digits_csv: Path) -> None:
    """An edited network file was picked up silently by a resumed run (a layer of width 32 became 7):
    the run's record now holds the source's hash, and a changed file is refused until restored."""
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p",
                  cwd=nets).returncode == 0
    run = ["run", "--strategy", "topk", "--backbone", "mynets:small_mlp", "-p", "p"]
    assert _alkit(*run, "--budget", "20", cwd=nets).returncode == 0
    original = (nets / "mynets.py").read_text()
    (nets / "mynets.py").write_text(original.replace("nn.Linear(48, 32)", "nn.Linear(48, 7)"))
    before = folder_snapshot(nets / "p")
    edited = _alkit(*run, "--budget", "30", cwd=nets)
    assert edited.returncode == 2 and "another version of the code --backbone names" in edited.stderr, edited.stderr
    assert len(edited.stderr.strip().splitlines()) == 1 and folder_snapshot(nets / "p") == before
    (nets / "mynets.py").write_text(original)
    assert _alkit(*run, "--budget", "30", cwd=nets).returncode == 0


def test_module_norm_edge_cases(nets: Path) -> None:
    """A batch-norm network on a probe whose last 64-row chunk would hold one row (65 rows) is
    measured; NaN only in training mode is refused by name; the probe leaves the global random state
    as it was (dropout draws from it)."""
    import torch

    from alkit.models.backbone import BackboneConfig, InputSpec, build_backbone
    from alkit.models.user_backbone import BackboneImportError

    (nets / "edgenets.py").write_text(NETS + '''

class NanInTraining(nn.Module):
    def __init__(self, n_features):
        super().__init__()
        self.lin = nn.Linear(n_features, 8)

    def forward(self, x):
        h = self.lin(x)
        return h * float("nan") if self.training else h


def nan_in_training(n_features):
    return NanInTraining(n_features)


def with_dropout(n_features):
    return nn.Sequential(nn.Linear(n_features, 16), nn.Dropout(0.5), nn.ReLU())


class Casting(nn.Module):  # float64 inside and out: failed in the heads' first fit, after a batch was spent
    def __init__(self, n_features):
        super().__init__()
        self.lin = nn.Linear(n_features, 16).double()

    def forward(self, x):
        return torch.relu(self.lin(x.double()))


def casting(n_features):
    return Casting(n_features)
''')
    X = load_digits().data.astype(np.float32)
    spec = InputSpec(mean_f=X.mean(0), std_f=X.std(0), pool_sample_n_f=X[:65])
    bn = build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'edgenets.py'}:small_bn",
                                                                          module_norm=2.5))
    assert float(bn.out_scale) != 1.0
    with pytest.raises(BackboneImportError, match="NaN or infinite features in training mode on 65 inputs"):
        build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'edgenets.py'}:nan_in_training",
                                                                         module_norm=2.5))
    with pytest.raises(BackboneImportError, match="the backbone returned float64 features; alkit's heads are float32"):
        build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'edgenets.py'}:casting"))
    states = []
    for norm in (0.0, 2.5):  # the network's initialisation draws the same; the probe draws nothing
        torch.manual_seed(11)
        build_backbone(64, spec, torch.as_tensor(X[:40]), BackboneConfig(module=f"{nets / 'edgenets.py'}:with_dropout",
                                                                         module_norm=norm))
        states.append(torch.random.get_rng_state())
    assert torch.equal(*states)


def test_module_norm_refusals_on_the_command_line(nets: Path, digits_csv: Path) -> None:
    """-o module_norm without --backbone, out of range, or a network whose outputs are all zero (a
    dead ReLU: it can never learn; whatever the scale and the scorer) is refused in one line before
    anything is written."""
    (nets / "deadnets.py").write_text("from torch import nn\n\n\ndef dead(n):\n"
                                      "    return nn.Sequential(nn.Linear(n, 8), nn.ReLU(), nn.Linear(8, 4), "
                                      "nn.Hardtanh(-1.0, -0.5), nn.ReLU())\n")
    assert _alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p",
                  cwd=nets).returncode == 0
    before = folder_snapshot(nets / "p")
    for args, says in ((["-o", "module_norm=3"], "-o module_norm scales the output of a --backbone network"),
                       (["--backbone", "mynets:small_mlp", "-o", "module_norm=1e30"], "module_norm must be 0"),
                       (["--backbone", "deadnets:dead"], "all-zero features on 64 inputs at initialisation"),
                       (["--backbone", "deadnets:dead", "-o", "module_norm=0"], "all-zero features on 64 inputs"),
                       (["--strategy", "random", "--backbone", "deadnets:dead"], "all-zero features on 64 inputs")):
        bad = _alkit("run", "--budget", "20", *args, "-p", "p", cwd=nets)
        assert bad.returncode == 2 and says in bad.stderr, bad.stderr
        assert len(bad.stderr.strip().splitlines()) == 1 and folder_snapshot(nets / "p") == before, bad.stderr
