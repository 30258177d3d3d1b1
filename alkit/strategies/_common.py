"""Small checks shared by the strategies (kept out of the strategy modules so each stays one idea)."""

from __future__ import annotations

import numpy as np

from alkit.types import Candidates


def check_batch(batch_size: int, candidates: Candidates) -> int:
    """Batch size actually served: at most the number of candidates."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    return min(int(batch_size), len(candidates))


def scores_or_zeros(candidates: Candidates) -> np.ndarray:
    """Scores as float64 (n,), zeros where the cycle had no model to score with."""
    if candidates.scores_n is None:
        return np.zeros(len(candidates), dtype=np.float64)
    return np.asarray(candidates.scores_n, dtype=np.float64)


def require_embedding(candidates: Candidates, strategy: str) -> np.ndarray:
    """Embeddings as float64 (n, d); a clear error when the cycle did not provide them."""
    if candidates.embedding_n_d is None:
        raise ValueError(f"the {strategy} strategy needs candidates.embedding_n_d, got None")
    emb_n_d = np.asarray(candidates.embedding_n_d, dtype=np.float64)
    if emb_n_d.ndim != 2 or emb_n_d.shape[0] != len(candidates):
        raise ValueError(
            f"embedding_n_d must have shape ({len(candidates)}, d), got {emb_n_d.shape}"
        )
    return emb_n_d


def key_tied_gumbel(keys_n: np.ndarray, seed: int, rows: int | None = None) -> np.ndarray:
    """Standard Gumbel noise, (n,) or (rows, n), seeded by ``seed`` and assigned to the items by
    sorted key, so a draw belongs to the items, not to the order the engine listed them in."""
    n = len(keys_n)
    shape = (n,) if rows is None else (rows, n)
    out = np.empty(shape)
    out[..., np.argsort(keys_n, kind="stable")] = np.random.default_rng(seed).gumbel(size=shape)
    return out


def log_weights(w_n: np.ndarray) -> np.ndarray:
    """log of non-negative sampling weights; a zero keeps a vanishing chance (the log of the
    smallest positive double), never -inf."""
    return np.log(np.maximum(w_n, np.finfo(np.float64).tiny))
