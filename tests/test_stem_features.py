"""The image stem's outputs, computed once per project (alkit/stem_features.py): learners on an
``--image-shape`` project read them instead of recomputing the frozen stem over the pool every
cycle, and pick exactly what they picked computing it themselves."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import digits_frame

import alkit.loop as loop_module
from alkit.config import load_project
from alkit.errors import Note
from alkit.loop import ActiveLoop, RunRequest
from alkit.models.backbone import PatchConv
from alkit.pools.ingest import InitOptions, init_project
from alkit.stem_features import FOLDER, ensure_stem_features


def _image_project(tmp_path: Path, name: str = "p") -> Path:
    data = tmp_path / f"{name}.parquet"
    digits_frame(300).write_parquet(data)
    root = tmp_path / name
    init_project(data, root, InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False,
                                         image_shape=(8, 8)))
    return root


def _files(folder: Path) -> list[Path]:
    """What a stem folder holds besides the lock file the writers share (procs.file_lock leaves it,
    as the embedding cache's: removing it after use would let two writers lock two files)."""
    return sorted(p for p in folder.iterdir() if not p.name.endswith(".npy.lock"))


def _picks(root: Path, scorer: str, **kw) -> list[int]:
    loop = ActiveLoop(load_project(root))
    loop.run(RunRequest(strategy="epistemic", scorer=scorer, budget=40, **kw))
    run = next(r for r in loop.store.runs())
    return loop.store.selected_keys(run.id).tolist()


@pytest.mark.parametrize("scorer", ["vbll", "mc-dropout", "csd", "sve", "ensemble", "laplace", "gradnorm", "none"])
def test_runs_read_the_stem_once_and_pick_what_computing_it_picks(tmp_path: Path, scorer: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Two projects from one file: a run reading the stem file picks the same items as a run
    whose learners compute the stem (the file unwritable: ensure_stem_features gives None), for
    every scorer that trains alkit's network."""
    cached, computed = _image_project(tmp_path, "a"), _image_project(tmp_path, "b")
    kw = {"acquisition": "margin"} if scorer == "none" else {}
    picks = _picks(cached, scorer, **kw)
    files = _files(cached / FOLDER)
    assert len(files) == 1 and files[0].suffix == ".npy"  # one file, no temporary left
    monkeypatch.setattr(loop_module, "ensure_stem_features", lambda *a, **k: None)
    assert _picks(computed, scorer, **kw) == picks
    assert not (computed / FOLDER).exists()


def test_the_file_holds_the_stem_of_every_item_and_is_written_once(tmp_path: Path) -> None:
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    spec = loop._pool_spec()
    path = ensure_stem_features(root, spec, loop.source)
    X = loop.source.take(np.arange(loop.source.n_items))
    with torch.no_grad():
        expect = PatchConv.of(spec)(torch.as_tensor(X)).numpy()
    from alkit.pools.features import ArrayFeatureReader

    got = ArrayFeatureReader(path, n_items=len(X)).take(np.arange(len(X)))
    np.testing.assert_allclose(got, expect, rtol=0, atol=1e-6)  # test split included
    before = path.stat().st_mtime_ns
    assert ensure_stem_features(root, spec, loop.source) == path and path.stat().st_mtime_ns == before
    dead = path.with_name(f".{path.name}.999999999.tmp")  # a killed writer's (no such process)
    dead.write_bytes(b"half")
    path.write_bytes(b"not an array")  # damaged: written again, the dead writer's file removed
    assert ensure_stem_features(root, spec, loop.source) == path
    np.testing.assert_array_equal(ArrayFeatureReader(path, n_items=len(X)).take(np.arange(len(X))), got)
    assert [p.name for p in _files(path.parent)] == [path.name]


def test_learners_get_the_stem_marked_precomputed(tmp_path: Path) -> None:
    """The learner's InputSpec says the inputs are stem outputs, and its pool sample (CSD's
    contexts) is under the stem too; the pool statistics stay those of the pixels."""
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    plan = loop.resolve(RunRequest(strategy="epistemic", scorer="csd", budget=20))
    assert plan.stem
    loop.use_features(plan)
    assert loop.features is loop.source  # the stem is computed only once the run is this process's
    events = []
    loop.on_event = lambda kind, p: events.append((kind, p))
    loop._use_stem(plan, None)
    assert sum(p["rows"] for kind, p in events if kind == "stem") == loop.source.n_items
    pixels, spec = loop._pool_spec(), loop.input_spec()
    assert spec.stem_precomputed and not pixels.stem_precomputed
    np.testing.assert_array_equal(spec.mean_f, pixels.mean_f)
    np.testing.assert_allclose(spec.pool_sample_n_f, PatchConv.of(pixels).outputs(pixels.pool_sample_n_f))
    assert loop.features.n_features == PatchConv.of(pixels).out_dim != loop.source.n_features


def test_learners_not_built_on_alkits_network_read_pixels(tmp_path: Path) -> None:
    """Your scikit-learn estimator and your own backbone see the images' pixels, as before."""
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    sk = loop.resolve(RunRequest(strategy="random", scorer="sklearn", budget=20,
                                 learner_options={"estimator": "sklearn.linear_model:LogisticRegression"}))
    net = tmp_path / "net.py"
    net.write_text("import torch\n\ndef net(shape):\n    return torch.nn.Sequential(torch.nn.Flatten(), "
                   "torch.nn.Linear(64, 16))\n")
    own = loop.resolve(RunRequest(strategy="random", scorer="vbll", budget=20, learner_options={"module": f"{net}:net"}))
    assert not sk.stem and not own.stem
    assert loop.resolve(RunRequest(strategy="random", scorer="vbll", budget=20)).stem


def test_an_unwritable_folder_is_a_note_and_the_stem_is_computed_in_the_model(tmp_path: Path) -> None:
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    (root / FOLDER).write_text("a file where the folder goes")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ensure_stem_features(root, loop._pool_spec(), loop.source) is None
    assert any(isinstance(w.message, Note) and "could not be written" in str(w.message)
               and "stem-features is a file, not a folder" in str(w.message) for w in caught)
    assert (root / FOLDER).read_text() == "a file where the folder goes"


def test_alkit_run_computes_the_stem_once_a_refused_run_nothing(tmp_path: Path) -> None:
    """Through the CLI: a run refused before it starts writes no stem file; a run writes one,
    which a second run (another seed) reuses as it is."""
    from typer.testing import CliRunner

    from alkit.cli import app

    root = _image_project(tmp_path)
    fast = ["-o", "train.max_epochs=30", "-o", "train.min_steps=60", "-o", "train.patience=5"]
    bad = CliRunner().invoke(app, ["run", "-p", str(root), "--budget", "20", "-o", "train.bogus=1"])
    assert bad.exit_code != 0 and not (root / FOLDER).exists()
    ok = CliRunner().invoke(app, ["run", "-p", str(root), "--budget", "30", *fast], catch_exceptions=False)
    assert ok.exit_code == 0, ok.output
    [stem] = _files(root / FOLDER)
    before = stem.stat().st_mtime_ns
    again = CliRunner().invoke(app, ["run", "-p", str(root), "--budget", "30", "--seed", "1", *fast],
                               catch_exceptions=False)
    assert again.exit_code == 0 and [p.name for p in _files(root / FOLDER)] == [stem.name]
    assert stem.stat().st_mtime_ns == before


def test_a_file_that_would_fill_the_disk_is_a_note(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    from collections import namedtuple

    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: usage(10**6, 10**6 - 100_000, 100_000))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert ensure_stem_features(root, loop._pool_spec(), loop.source) is None
    assert any("MB free in" in str(w.message) for w in caught) and not list((root / FOLDER).glob("*.npy"))


def test_a_busy_or_complete_run_computes_no_stem(tmp_path: Path) -> None:
    """The stem is computed only for a run with a cycle to do in this process: a run another
    process holds is refused as busy, and a complete one does nothing, without writing the file."""
    from alkit.pools import leases
    from alkit.pools.store import Store

    root = _image_project(tmp_path)
    store = Store(load_project(root).store_url)
    lease = leases.acquire(store, "epistemic-b10-s0")  # this live process holds it
    with pytest.raises(leases.RunBusy, match="busy"):
        ActiveLoop(load_project(root)).run(RunRequest(strategy="epistemic", budget=20))
    assert not (root / FOLDER).exists()
    leases.release(store, lease)
    ActiveLoop(load_project(root)).run(RunRequest(strategy="epistemic", budget=20))
    [stem] = _files(root / FOLDER)
    stem.unlink()
    ActiveLoop(load_project(root)).run(RunRequest(strategy="epistemic", budget=20))  # complete
    assert _files(root / FOLDER) == []


@pytest.mark.parametrize("damage", ["zeros", "nan"])
def test_a_file_of_the_right_shape_but_wrong_contents_is_written_again(tmp_path: Path, damage: str) -> None:
    """Zeros gave a run at chance accuracy, unsaid; NaN an error naming the labelled inputs."""
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    spec = loop._pool_spec()
    path = ensure_stem_features(root, spec, loop.source)
    good = np.load(path).copy()
    arr = np.load(path, mmap_mode="r+")
    arr[:] = 0.0 if damage == "zeros" else np.nan
    arr.flush()
    del arr
    assert ensure_stem_features(root, spec, loop.source) == path
    np.testing.assert_array_equal(np.load(path), good)


def test_a_stem_file_deleted_during_a_run_does_not_stop_it(tmp_path: Path) -> None:
    """Clearing stem-features/ (a cache) mid-run: the run reads the file it has open."""
    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))

    def clear(kind: str, payload: dict) -> None:
        if kind == "cycle_end" and payload["cycle"] == 1:
            for p in (root / FOLDER).iterdir():
                p.unlink()

    loop.on_event = clear
    res = loop.run(RunRequest(strategy="epistemic", budget=50))
    assert res[-1].n_labeled == 50 and sum(r.n_selected for r in res) == 50  # the last cycle evaluates only


def test_one_writer_at_a_time_and_a_killed_writers_lock_does_not_block(tmp_path: Path) -> None:
    """While another holder has the lock, ensure waits and then uses that holder's file (writing
    nothing); a holder killed with SIGKILL while it held the lock blocks no one."""
    import subprocess
    import sys
    import threading

    from alkit.pools.procs import file_lock
    from alkit.stem_features import fingerprint

    root = _image_project(tmp_path)
    loop = ActiveLoop(load_project(root))
    spec = loop._pool_spec()
    path = root / FOLDER / f"{fingerprint(spec, loop.source)}.npy"
    path.parent.mkdir()
    lock = path.with_name(f".{path.name}.lock")
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time\nfrom alkit.pools.procs import file_lock\n"
                               f"with file_lock({str(lock)!r}):\n    print('held', flush=True)\n    time.sleep(600)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    holder.kill()
    holder.wait()
    assert ensure_stem_features(root, spec, loop.source) == path
    good = np.load(path).copy()
    path.unlink()
    result: list = []
    with file_lock(lock):  # another writer (an open file of its own) holds it
        waiter = threading.Thread(target=lambda: result.append(ensure_stem_features(root, spec, loop.source)))
        waiter.start()
        waiter.join(timeout=1.5)
        assert waiter.is_alive() and not path.exists()  # waiting, not writing
        np.save(path, good)  # the holder's file arrives
        mtime = path.stat().st_mtime_ns
    waiter.join(timeout=60)
    assert result == [path] and path.stat().st_mtime_ns == mtime  # used as it was, not written again


def test_the_ray_engine_reads_pixels(tmp_path: Path) -> None:
    root = _image_project(tmp_path)
    plan = ActiveLoop(load_project(root)).resolve(RunRequest(strategy="epistemic", budget=20, engine="ray"))
    assert not plan.stem
