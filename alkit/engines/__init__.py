"""Scoring engines: where the top-m map/reduce of a cycle runs (DESIGN.md 'Scale').

An engine scores every pool item the mask allows with a fitted learner and an acquisition and
returns the m best-scoring items with the arrays a strategy needs (``Candidates``) and how many
items it scored.

    engine(learner, features_path, pool_mask_n, m, chunk_rows, scorer=None) -> (Candidates, n_scored)

``scorer`` (an ``AcquisitionScorer``: the run's acquisition and the cycle's context) turns each
chunk's Prediction into scores and carried arrays; None ranks by ``Prediction.epistemic_n``.

``local`` streams features.parquet through ``learner.predict`` in this process (what ActiveLoop
does itself); ``ray`` maps row-group ranges of the file over Ray tasks, each returning its local
top-m, and merges them (alkit/engines/ray_engine.py).  TopM's result is the first m rows of the
(score desc, key asc) order whatever the chunking, and both engines cut the file into the same
chunks, so for the same learner they return identical candidates and the strategy then picks the
same batch.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from alkit.engines.common import (  # noqa: F401 (the engines' public names)
    ENGINES,
    TopMEngine,
    EngineError,
    AcquisitionScorer,
    acquisition_context,
    epistemic_scores,
    prediction_arrays,
    dumps_learner,
    candidate_arrays,
    open_features,
    iter_masked_batches,
    score_batches,
    local_topm,
    chunk_rows_for,
    prediction_nbytes,
    MAX_CHUNK_ROWS,
    CHUNK_BUDGET,
)


def get_engine(name: str, **options: Any) -> TopMEngine:
    """The engine called ``name``; ``options`` go to it (ray: ``address``, ``tasks_per_cpu``)."""
    if name == "local":
        return local_topm
    if name == "ray":
        from alkit.engines.ray_engine import ray_topm

        return partial(ray_topm, **{k: v for k, v in options.items() if v is not None})
    raise ValueError(f"unknown engine {name!r}; known engines: {', '.join(ENGINES)}")
