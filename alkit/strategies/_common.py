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
                         f"{len(values)} candidates, e.g. item {keys_n[int(np.flatnonzero(bad_n)[0])].item()!r}")


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


def check_selection(selection: object, candidates: Candidates, k: int, selector: str) -> None:
    """A ValueError naming the selector where its Selection is not k distinct candidates' keys: a selector of
    the user's own returning positions in the candidate array (already-labelled rows), keys outside the pool,
    -1, floats or too few picks came back from `query` as the batch (a check of the extension contracts)."""
    if not isinstance(selection, Selection):
        raise ValueError(f"selector {selector!r} returned {type(selection).__name__}, not an alkit.types.Selection")
    keys = np.asarray(selection.keys)
    if keys.size and keys.dtype.kind not in "iu":
        raise ValueError(f"selector {selector!r} returned keys of dtype {keys.dtype}: keys are integers taken from "
                         "candidates.keys_n")
    want = min(int(k), len(candidates))
    if len(keys) != want:
        raise ValueError(f"selector {selector!r} returned {len(keys)} items, expected {want}")
    outside = keys[~np.isin(keys, candidates.keys_n)]
    if outside.size:
        raise ValueError(f"selector {selector!r} returned items that are not candidates (e.g. key {int(outside[0])}): "
                         "keys come from candidates.keys_n, not positions in it")


def constant_score_refusal(candidates: Candidates, selector: object, acquisition: str, *,
                           own_acquisition: bool = False) -> str | None:
    """Why a batch must not be picked where every candidate has one score, for a selector that reads it: the
    top-m candidates are then the pool's first rows (topk, diverse, batchbald), and a draw weighted by the
    score is a uniform one (power); None otherwise.  A learner of the user's own that filled epistemic_n
    with zeros got the pool's first rows back as if ranked (a peer-user check); ``own_acquisition``: the score
    is an acquisition of the user's own, whose fix is there."""
    if candidates.scores_n is None or np.size(candidates.scores_n) < 2:
        return None
    scores = np.asarray(candidates.scores_n, dtype=np.float64)
    spread = candidates.score_range
    if not np.all(scores == scores[0]) or (spread is not None and spread[0] != spread[1]):
        return None  # tied at the top of a pool whose scores vary (many items at the highest margin) is a choice
    source, name = getattr(selector, "candidate_source", None), getattr(selector, "name", "?")
    if source == "topm":
        what = "the candidates would be the pool's first rows, not a choice"
    elif name in ("power", "power-sqrt"):
        what = "the draw weighted by it would be a uniform one (random picks)"
    else:
        return None
    if own_acquisition:
        fix = f"check your acquisition {acquisition!r}: its score must vary between items"
    elif acquisition in ("margin", "entropy", "least-confident"):  # it said 'or pick by margin' to a margin run
        fix = "hand over class probabilities that vary (not hard 0/1 ones), or pick by another acquisition"
    else:
        fix = (f"give your learner's Prediction a score that varies ("
               f"{'epistemic_n' if acquisition == 'epistemic' else acquisition + ' reads it'}), or pick by an "
               "acquisition from its probabilities (margin, entropy)")
    return f"every candidate's {acquisition} score is {scores[0]:g}: {what}; {fix}"
