"""Top-m scoring as a map/reduce on Ray (DESIGN.md 'Scale'; `alkit run --engine ray`).

map:    the Parquet file is cut into row-group ranges; one Ray task per range loads the fitted
        learner once (its pickled state, shared through the object store with ``ray.put``), scores
        its rows chunk by chunk and returns its local top-m with the arrays the strategy needs.
reduce: the driver merges the task results into one TopM as they finish (it holds at most
        m + one task's m rows), and the loop then runs the chosen strategy on the merged
        candidates exactly as for the local engine.

Range boundaries are row-group starts that are multiples of ``chunk_rows``, so every task predicts
exactly the chunks the single-process engine would: same inputs, same scores, same top-m, same
batch.  Workers read the file by path, so on a cluster it must be visible at that path on every
node (a shared filesystem) and alkit must be installed there; the driver never reads features.
"""

from __future__ import annotations

import logging
import math
import pickle
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq

from alkit.engines.common import (
    EngineError,
    candidate_arrays,
    dumps_learner,
    iter_masked_batches,
    open_features,
    score_batches,
)
from alkit.engines.streaming import TopM
from alkit.types import Candidates, Learner

_remote_score: Any = None


def ensure_ray(address: str | None = None, **init_options: Any) -> Any:
    """The ``ray`` module, connected: an existing ray.init() is reused; otherwise connect to
    ``address`` (a cluster: 'auto', 'ray://host:10001', 'host:6379') or start a local instance."""
    try:
        import ray
    except ImportError:
        raise EngineError("--engine ray needs Ray: pip install 'alkit[ray]'") from None
    if not ray.is_initialized():
        # Ray's own INFO and WARNING lines ('Started a local Ray instance', token authentication) went to the
        # command's stderr beside alkit's one-line messages (a documentation check); its errors still show
        opts = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.ERROR, **init_options}
        try:
            ray.init(address=address, **opts) if address else ray.init(**opts)
        except ConnectionError as exc:
            raise EngineError(f"cannot connect to the Ray cluster at {address!r}: {exc}") from None
    return ray


def _score_range(learner_blob: bytes, path: str, row_groups: list[int], pool_mask_n: np.ndarray,
                 m: int, chunk_rows: int, scorer: Any = None) -> tuple[Candidates, int]:
    """One map task: unpickle the learner once, score the rows of ``row_groups``, keep the top m."""
    import torch

    torch.set_num_threads(1)  # one task per CPU; more threads would oversubscribe the node
    learner = pickle.loads(learner_blob)
    file = open_features(path)
    return score_batches(learner, iter_masked_batches(file, chunk_rows, pool_mask_n, row_groups), m, scorer)


def plan_ranges(path: Path, chunk_rows: int, n_parts: int, pool_mask_n: np.ndarray | None = None) -> list[list[int]]:
    """Contiguous row-group ranges of about n_rows / n_parts rows, each starting at a multiple of
    chunk_rows (so its batches are the whole-file batches), skipping ranges with no pool item."""
    meta = pq.ParquetFile(path).metadata
    rows = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(rows)]).astype(np.int64)
    target = max(1, math.ceil(meta.num_rows / max(1, n_parts)))
    ranges: list[list[int]] = []
    cur: list[int] = []
    for i in range(len(rows)):
        if cur and starts[i] - starts[cur[0]] >= target and starts[i] % chunk_rows == 0:
            ranges.append(cur)
            cur = []
        cur.append(i)
    if cur:
        ranges.append(cur)
    if pool_mask_n is not None:
        ranges = [r for r in ranges if pool_mask_n[starts[r[0]] : starts[r[-1] + 1]].any()]
    return ranges


def ray_topm(
    learner: Learner,
    features_path: Path,
    pool_mask_n: np.ndarray,
    m: int,
    chunk_rows: int = 16_384,
    *,
    scorer: Any = None,
    address: str | None = None,
    tasks_per_cpu: int = 2,
) -> tuple[Candidates, int]:
    """Score the pool on Ray: map row-group ranges to local top-m, reduce with TopM.

    Returns the same (Candidates, n_scored) as alkit.engines.local_topm for the same inputs.
    ``tasks_per_cpu`` ranges per cluster CPU balance the load without re-sending the learner
    more often than that (each task unpickles it once).
    """
    global _remote_score
    ray = ensure_ray(address)
    if _remote_score is None:
        _remote_score = ray.remote(num_cpus=1)(_score_range)
    n_cpus = int(ray.cluster_resources().get("CPU", 1))
    path = str(Path(features_path).resolve())
    ranges = plan_ranges(Path(path), chunk_rows, n_cpus * tasks_per_cpu, pool_mask_n)
    top = TopM(m)
    if not ranges:
        return top.result(), 0
    learner_ref = ray.put(dumps_learner(learner))
    mask_ref = ray.put(np.ascontiguousarray(pool_mask_n, dtype=bool))
    scorer_ref = ray.put(scorer)
    pending = [_remote_score.remote(learner_ref, path, r, mask_ref, m, chunk_rows, scorer_ref) for r in ranges]
    n_scored = 0
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        cands, n_seen = ray.get(done[0])
        n_scored += n_seen
        if len(cands):
            top.push(cands.keys_n, cands.scores_n, **candidate_arrays(cands))
    return top.result(), n_scored
