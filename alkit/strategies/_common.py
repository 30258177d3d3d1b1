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
