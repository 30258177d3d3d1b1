"""Scoring engines: the Ray map/reduce returns exactly the single-process candidates and the loop
selects the same batch with either engine (topk, and diverse on the VBLL Gaussian posterior)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

from alkit.config import load_project
from alkit.engines import dumps_learner, get_engine, local_topm, prediction_arrays
from alkit.loop import ActiveLoop, LoopError, RunRequest
from alkit.models.train import TrainConfig
from alkit.pools import features as features_mod
from alkit.pools.ingest import InitOptions, init_project
from alkit.registry import make_learner



@pytest.fixture(scope="module")
def ray_local() -> Iterator[object]:
    """Ray in local mode, 2 CPUs, once for the module (starting it takes seconds)."""
    ray = pytest.importorskip("ray")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=200 * 1024**2)
    try:
        yield ray
    finally:
        ray.shutdown()


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray, object]:
    """A 3,000 x 12 pool in row groups of 256 rows, and a VBLL classifier fitted on 150 items."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 12)).astype(np.float32)
    y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(np.int64)
    path = tmp_path_factory.mktemp("engines") / "features.parquet"
    old = features_mod.ROW_GROUP
    features_mod.ROW_GROUP = 256
    try:
        features_mod.write_features(path, X)
    finally:
        features_mod.ROW_GROUP = old
    torch.set_num_threads(1)
    learner = make_learner("vbll", "classification", 2, train=TrainConfig(max_epochs=5, min_steps=20, patience=3))
    learner.fit(X[:150], y[:150], seed=0)
    return path, X, learner


def _mask(n: int) -> np.ndarray:
    mask = np.ones(n, dtype=bool)
    mask[:150] = False  # labeled
    mask[np.random.default_rng(1).choice(n, 400, replace=False)] = False  # selected earlier
    mask[512:768] = False  # a whole row group with nothing left to score
    return mask


def test_pickled_learner_predicts_bit_for_bit(pool: tuple) -> None:
    """A worker's copy of the fitted learner predicts the same bits as the original, both through
    dumps_learner (which freezes torch parametrizations) and plain pickle (the inline spectral
    norm is a pure function of the state dict in eval mode)."""
    _, X, learner = pool
    plain = pickle.loads(pickle.dumps(learner))
    clone = pickle.loads(dumps_learner(learner))
    with torch.no_grad():
        a, b = learner.predict(X[:500]), clone.predict(X[:500])
        c = plain.predict(X[:500])
    assert torch.equal(a.epistemic_n, b.epistemic_n) and torch.equal(a.embedding_n_d, b.embedding_n_d)
    assert torch.equal(a.epistemic_n, c.epistemic_n) and torch.equal(a.embedding_n_d, c.embedding_n_d)
    assert clone.posterior() is not None
    with torch.no_grad():  # the original still works (only a copy was frozen); same batch, same bits
        assert torch.equal(learner.predict(X[:500]).epistemic_n, a.epistemic_n)


def test_plan_ranges_align_with_chunks(pool: tuple) -> None:
    from alkit.engines.ray_engine import plan_ranges

    path, X, _ = pool
    meta = pq.ParquetFile(path).metadata
    starts = np.cumsum([0] + [meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
    ranges = plan_ranges(path, 512, 4)
    assert [g for r in ranges for g in r] == list(range(meta.num_row_groups))  # contiguous, complete
    assert all(starts[r[0]] % 512 == 0 for r in ranges) and len(ranges) == 3  # cuts at 1024, 2048
    mask = np.zeros(len(X), dtype=bool)
    mask[2900] = True
    assert plan_ranges(path, 512, 4, mask) == [ranges[-1]]  # ranges with nothing to score are skipped


def test_a_pass_holds_one_chunk_not_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Arrow memory during a pass stays at a few row groups; pyarrow's default pre-buffering
    would keep every range read so far (the whole 16 MB file by the end)."""
    import pyarrow as pa

    from alkit.engines import iter_masked_batches, open_features

    monkeypatch.setattr(features_mod, "ROW_GROUP", 4096)
    path = tmp_path / "f.parquet"
    features_mod.write_features(path, np.random.default_rng(0).normal(size=(262_144, 16)).astype(np.float32))
    base, peak, n = pa.total_allocated_bytes(), 0, 0
    for keys, X in iter_masked_batches(open_features(path), 4096, np.ones(262_144, dtype=bool)):
        peak = max(peak, pa.total_allocated_bytes() - base)
        n += len(keys)
    assert n == 262_144 and peak < 2 * 2**20  # one row group is 256 KiB; the file is 16 MiB


def test_local_engine_matches_the_loop_arrays(pool: tuple) -> None:
    path, X, learner = pool
    with torch.no_grad():
        pred = learner.predict(X[:20])
    arrays = prediction_arrays(pred)
    assert set(arrays) == {"embedding_n_d", "probs_n_C"} and arrays["embedding_n_d"].shape[0] == 20
    mask = _mask(len(X))
    cands, n = local_topm(learner, path, mask, 100, 512)
    assert n == int(mask.sum()) and len(cands) == 100
    assert np.all(np.diff(cands.scores_n) <= 0)
    # against one prediction of every unmasked row: the 100 highest epistemic scores (ties by key),
    # each with its own row's embedding and class probabilities
    keys = np.flatnonzero(mask)
    with torch.no_grad():
        full = learner.predict(X[keys])
    scores = full.epistemic_n.double().numpy()
    order = np.lexsort((keys, -scores))[:100]
    assert np.array_equal(cands.keys_n, keys[order])
    np.testing.assert_allclose(cands.scores_n, scores[order], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(cands.embedding_n_d, full.embedding_n_d.numpy()[order], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(cands.probs_n_C, full.probs_n_C.numpy()[order], rtol=1e-5, atol=1e-6)


def test_ray_engine_equals_local(pool: tuple, ray_local: object) -> None:
    path, X, learner = pool
    mask = _mask(len(X))
    for m, chunk in ((100, 512), (3000, 256)):  # m larger than the pool: every item comes back
        want, n_want = local_topm(learner, path, mask, m, chunk)
        got, n_got = get_engine("ray")(learner, path, mask, m, chunk)
        assert n_got == n_want == int(mask.sum())
        assert np.array_equal(got.keys_n, want.keys_n)
        assert np.array_equal(got.scores_n, want.scores_n)
        assert np.array_equal(got.embedding_n_d, want.embedding_n_d)
        assert np.array_equal(got.probs_n_C, want.probs_n_C)
    empty, n = get_engine("ray")(learner, path, np.zeros(len(X), dtype=bool), 10, 512)
    assert len(empty) == 0 and n == 0


def test_unknown_engine_refused(digits_project: Path) -> None:
    loop = ActiveLoop(load_project(digits_project))
    with pytest.raises(LoopError, match="--engine must be one of local, ray"):
        loop.resolve(RunRequest(strategy="topk", budget=20, engine="spark"))
    assert loop.store.runs() == []


@pytest.mark.parametrize("strategy", ["topk", "diverse"])
def test_loop_selects_the_same_batch_on_ray(strategy: str, tmp_path: Path, digits_csv: Path,
                                            ray_local: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Same seed, same project: the Ray engine's cycles pick exactly the local engine's items.
    Row groups of 64 rows and chunks of 64 make the Ray map several tasks."""
    monkeypatch.setattr(features_mod, "ROW_GROUP", 64)
    picks = {}
    for engine in ("local", "ray"):
        root = tmp_path / engine
        init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True))
        loop = ActiveLoop(load_project(root))
        loop.features.chunk_rows = 64
        n_pool = loop.store.counts()["pool:unlabeled"]
        loop.run(RunRequest(strategy=strategy, budget=30, batch_size=10, seed=4,
                            candidates=40, max_cycles=3, engine=engine))
        run = loop.store.runs()[0]
        picks[engine] = loop.store.selected_keys(run.id).tolist()
        assert [c.n_scored for c in loop.store.cycles(run.id)][1:] == [n_pool - 10, n_pool - 20]
        loop.store.dispose()
    assert len(picks["local"]) == 30
    assert picks["ray"] == picks["local"]


def test_chunk_rows_keep_the_working_set_in_budget_at_any_class_count() -> None:
    """chunk_rows_for: at 10 classes the features file's 16,384 rows; with more classes fewer, each a
    power-of-two divisor of 16,384 (row-group aligned), the largest whose working set
    (WORKING_SET_FACTOR x the Prediction's bytes per row) fits the 256 MB budget; a learner whose
    Prediction is huge per row gets the floor."""
    from types import SimpleNamespace

    from alkit.engines import CHUNK_BUDGET, MAX_CHUNK_ROWS, chunk_rows_for, prediction_nbytes
    from alkit.engines.common import MIN_CHUNK_ROWS, WORKING_SET_FACTOR

    rng = np.random.default_rng(0)
    X = rng.standard_normal((600, 16), dtype=np.float32)
    rows = {}
    for C in (10, 100, 1000):
        learner = make_learner("vbll", "classification", C, train=TrainConfig())
        learner.fit(X, rng.integers(0, C, 600), seed=0)
        rows[C] = chunk_rows_for(learner, X[:64])
        per_row = WORKING_SET_FACTOR * prediction_nbytes(learner.predict(X[:64])) / 64 + 4 * X.shape[1]
        assert MAX_CHUNK_ROWS % rows[C] == 0 and rows[C] * per_row <= CHUNK_BUDGET
    assert rows[10] == MAX_CHUNK_ROWS and rows[1000] < rows[100] <= MAX_CHUNK_ROWS
    assert 2 * rows[1000] * per_row > CHUNK_BUDGET  # the largest power-of-two divisor that fits, not a smaller one

    class Huge:  # 40 MB of member probabilities per row
        def predict(self, X_n_f: np.ndarray):
            n = len(X_n_f)
            return SimpleNamespace(extras={"member_probs_n_M_C": torch.zeros(n, 1000, 10_000)}, dist=None)

    assert chunk_rows_for(Huge(), X[:2]) == MIN_CHUNK_ROWS


def test_chunk_rows_count_the_image_stems_maps() -> None:
    """A 28 x 28 image learner's Prediction is small, its stem's maps are not (~100 KB a row):
    chunks sized by the Prediction alone held 16,384 rows and took 5 GB in a long run."""
    from alkit.engines import CHUNK_BUDGET, MAX_CHUNK_ROWS, chunk_rows_for
    from alkit.engines.common import image_stem_bytes
    from alkit.models.backbone import pool_input_spec

    rng = np.random.default_rng(0)
    X = rng.random((300, 784), dtype=np.float32)
    spec = pool_input_spec(X, (1, 28, 28))
    learner = make_learner("vbll", "classification", 10, train=TrainConfig(), input=spec)
    learner.fit(X[:100], rng.integers(0, 10, 100), seed=0)
    stem = image_stem_bytes(learner)
    assert stem >= 4 * spec.patch_filters.shape[0] * 784  # at least the filter maps themselves
    rows = chunk_rows_for(learner, X[:64])
    assert rows < MAX_CHUNK_ROWS and rows * stem <= CHUNK_BUDGET
    flat = make_learner("vbll", "classification", 10, train=TrainConfig())
    flat.fit(X[:100], rng.integers(0, 10, 100), seed=0)
    assert image_stem_bytes(flat) == 0 and chunk_rows_for(flat, X[:64]) == MAX_CHUNK_ROWS


def test_chunked_scoring_picks_what_one_chunk_picks(pool: tuple) -> None:
    """The candidates of a pass in chunks of 64 rows are those of a pass in one chunk: what the
    chunk size may change is memory, never the selection."""
    path, X, learner = pool
    mask = _mask(len(X))
    whole, _ = local_topm(learner, path, mask, 40, chunk_rows=1 << 20)
    small, _ = local_topm(learner, path, mask, 40, chunk_rows=64)
    np.testing.assert_array_equal(whole.keys_n, small.keys_n)
    np.testing.assert_allclose(whole.scores_n, small.scores_n, rtol=1e-6)


def test_a_ray_run_prints_alkits_lines_not_rays(digits_project: Path) -> None:
    """Ray's own INFO and WARNING log lines ('Started a local Ray instance', token authentication) went to the
    command's stderr beside alkit's one-line messages (a documentation check)."""
    import os
    import subprocess
    import sys

    pytest.importorskip("ray")
    env = {**os.environ, "ALKIT_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "alkit.cli", "run", "--budget", "20", "--engine", "ray", "-p",
                           str(digits_project)], env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Started a local Ray instance" not in done.stderr and " INFO " not in done.stderr, done.stderr
    assert "complete" in done.stdout
