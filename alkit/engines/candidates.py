"""Candidate production for every source a selector can ask for (``Selector.candidate_source``):

- 'all': every allowed pool key, no scores (random);
- 'sample': a seeded uniform sample of m allowed items with their features (coldstart), scored
  when there is a model, and their strata when the run stratifies by a payload column;
- 'topm' / 'pool': the m best-scoring items of a streamed pass over the pool, by the named
  engine (local or Ray; 'pool' is the whole pool up to ``POOL_CANDIDATES``).

Without a model (the cold start) every source but 'all' is the sample, embedded by the
standardised features.  The loop calls ``produce`` once per cycle and hands the result on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from alkit.config import payload_key
from alkit.engines import AcquisitionScorer, get_engine
from alkit.engines.streaming import check_scores
from alkit.pools.features import ArrayFeatureReader, FeatureReader
from alkit.types import Candidates, Learner

POOL_CANDIDATES = 50_000  # 'pool' source (badge, kcenter): the whole pool up to this many, else the top by score


@dataclass
class CandidateRequest:
    """What one cycle asks for: the source, how many, and how to reach the pool."""

    source: str
    m: int
    seed: int  # the sample's seed
    engine: str = "local"
    engine_options: dict[str, Any] | None = None
    stratify_by: str | None = None
    payload_path: Path | None = None
    chunk_rows: int = 16_384  # rows the engine predicts at a time (the loop's chunk_rows_for)


def candidate_count(source: str, k: int, requested: int | None) -> int:
    """m for a cycle that picks k: the run's ``--candidates`` or the source's default, at least k."""
    m = requested or (POOL_CANDIDATES if source == "pool" else 20 * max(k, 1))
    return max(m, k)


def payload_codes(payload_path: Path, column: str, keys: np.ndarray) -> np.ndarray:
    """Integer codes of a payload column's values for ``keys`` (missing values share one code)."""
    df = pl.read_parquet(payload_path, columns=[payload_key(payload_path), column])
    codes = df[column].cast(pl.Utf8).fill_null("<missing>").cast(pl.Categorical).to_physical().to_numpy()
    return codes[keys].astype(np.int64)


def in_memory_candidates(keys_n: np.ndarray, X_n_f: np.ndarray, learner: Learner | None,
                         scorer: AcquisitionScorer | None) -> Candidates:
    """Candidates for items held in memory: scored by the learner's Prediction, or (no model:
    the cold start) unscored, embedded by their standardised features; their features ride along
    in ``extras['features']``."""
    if learner is None or scorer is None:
        X64 = np.asarray(X_n_f, dtype=np.float64)  # float32 squares overflow from |x| ~ 2e19 (std inf, then NaN)
        sd = X64.std(0)
        emb = ((X64 - X64.mean(0)) / np.where(sd > 1e-8, sd, 1.0)).astype(np.float32)
        cands = Candidates(keys_n=keys_n, scores_n=np.zeros(len(keys_n)), embedding_n_d=emb)
    else:
        scores, a = scorer(learner.predict(X_n_f))
        cands = Candidates(keys_n=keys_n, scores_n=check_scores(scores, len(keys_n)), embedding_n_d=a.pop("embedding_n_d"),
                           probs_n_C=a.pop("probs_n_C"), extras={k: v for k, v in a.items() if v is not None})
    cands.extras["features"] = X_n_f
    return cands


def produce(req: CandidateRequest, features: FeatureReader | ArrayFeatureReader, mask_n: np.ndarray, learner: Learner | None,
            scorer: AcquisitionScorer | None) -> tuple[Candidates, int]:
    """The candidates among the ``mask_n``ed pool items, and how many items the learner scored."""
    if req.source == "all":
        return Candidates(keys_n=np.flatnonzero(mask_n).astype(np.int64)), 0
    if req.source == "sample" or learner is None:
        rng = np.random.default_rng(req.seed)
        pool = np.flatnonzero(mask_n)
        keys = np.sort(rng.choice(pool, size=min(req.m, len(pool)), replace=False)).astype(np.int64)
        X = features.take(keys)
        cands = in_memory_candidates(keys, X, learner, scorer)
        if req.stratify_by and req.payload_path is not None:
            cands.strata_n = payload_codes(req.payload_path, req.stratify_by, keys)
        return cands, 0 if learner is None else len(keys)
    engine = get_engine(req.engine, **(req.engine_options or {}))
    source = features if req.engine == "local" else features.path  # local: the reader already open
    return engine(learner, source, mask_n, req.m, req.chunk_rows, scorer=scorer)
