"""Small checks shared by the strategies (kept out of the strategy modules so each stays one idea)."""

from __future__ import annotations

import numpy as np

from alkit.checks import is_whole_number
from alkit.types import Candidates, Selection


def check_batch(batch_size: int, candidates: Candidates) -> int:
    """Batch size actually served: at most the number of candidates."""
    if not is_whole_number(batch_size):
        raise ValueError(f"batch size must be a whole number, got {batch_size!r}")
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    return min(int(batch_size), len(candidates))


def no_picks() -> Selection:
    """The selection from no candidates (the greedy selectors indexed into an empty set)."""
    return Selection(keys=np.empty(0, dtype=np.int64), scores=np.empty(0), utilities=np.empty(0))


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
    require_finite(emb_n_d, candidates.keys_n, f"the {strategy} strategy", "embedding")
    return emb_n_d


def require_finite(values: np.ndarray, keys_n: np.ndarray, who: str, what: str) -> None:
    """Refuse NaN / inf rows by name: a distance or D^2 weight of NaN made argmax pick that row
    first and every later draw uniform (badge, kcenter; a selector audit)."""
    bad_n = ~np.isfinite(values.reshape(len(values), -1)).all(axis=1)
    if bad_n.any():
        raise ValueError(f"{who} cannot place items whose {what} holds NaN or inf: {int(bad_n.sum())} of "
                         f"{len(values)} candidates, e.g. item {keys_n[int(np.flatnonzero(bad_n)[0])]!r}")


def key_tied_gumbel(keys_n: np.ndarray, seed: int) -> np.ndarray:
    """Standard Gumbel noise (n,), seeded by ``seed`` and assigned to the items by sorted key, so a
    draw belongs to the items, not to the order the engine listed them in."""
    return KeyTiedGumbelRows(keys_n, seed, 1)[0]


class KeyTiedGumbelRows:
    """Rows of standard Gumbel noise, (rows, n) by index, each like key_tied_gumbel (the stream of
    ``seed`` row after row, assigned by sorted key), made when the batch reaches it: a sampled
    batch of b picks from n candidates needs one row per pick, and the (b, n) array at once took
    26 GB for b = 20,000 from 175,000 candidates (a black-box check).  Rows are read in order; the
    current one may be read again."""

    def __init__(self, keys_n: np.ndarray, seed: int, rows: int) -> None:
        self.shape = (int(rows), len(keys_n))
        self._order = np.argsort(keys_n, kind="stable")
        self._rng = np.random.default_rng(seed)
        self._t, self._row = -1, np.empty(0)

    def __getitem__(self, t: int) -> np.ndarray:
        if not 0 <= t < self.shape[0] or t < self._t:
            raise IndexError(f"row {t} of {self.shape[0]}, read in order (the current one is {self._t})")
        while self._t < t:
            row = np.empty(self.shape[1])
            row[self._order] = self._rng.gumbel(size=self.shape[1])
            self._t, self._row = self._t + 1, row
        return self._row


def log_weights(w_n: np.ndarray) -> np.ndarray:
    """log of non-negative sampling weights; a zero keeps a vanishing chance (the log of the
    smallest positive double), never -inf."""
    return np.log(np.maximum(w_n, np.finfo(np.float64).tiny))
