"""Streaming candidate accumulators: the pool is scored chunk by chunk and never held in memory.

``TopM`` keeps the m best-scoring items (the 'topm' candidate source of topk and diverse, and
the 'pool' source of badge and kcenter with m = the pool, up to 50,000).  It holds at most m rows
plus the current chunk, so memory is O((m + chunk) * row width) whatever the pool size, and it is
mergeable (a chunk's survivors can be pushed into another TopM), which is the map/reduce of
DESIGN.md "Scale".  (A uniform sample, the 'sample' source of coldstart, needs no stream: the loop
draws its keys and reads those rows.)

Arrays pushed alongside the keys are carried through; ``embedding_n_d``, ``probs_n_C`` and
``strata_n`` land in the matching ``Candidates`` fields, any other name in ``Candidates.extras``.
"""

from __future__ import annotations

import numpy as np

from alkit.types import Candidates

_FIELDS = ("embedding_n_d", "probs_n_C", "strata_n")


def check_scores(scores_n: np.ndarray, n: int) -> np.ndarray:
    scores_n = np.asarray(scores_n)
    if scores_n.shape != (n,):
        raise ValueError(f"scores_n must have shape ({n},) like keys_n, got {scores_n.shape}")
    if np.issubdtype(scores_n.dtype, np.floating) and not np.isfinite(scores_n).all():
        # NaN is an undefined score; an infinite one an overflow, which top-k ranked first, the power
        # draws took or never took, and the greedy batches skipped: refused alike
        nan, inf = int(np.isnan(scores_n).sum()), int(np.isinf(scores_n).sum())
        what = " and ".join(f"{k} {w}" for k, w in ((nan, "NaN"), (inf, "infinite")) if k)
        raise ValueError(f"scores contain {what} value{'s' if nan + inf > 1 else ''} ({nan + inf} of {n} scored "
                         "together); the acquisition produced an undefined score, refusing to rank it")
    return scores_n


def _top_rows(prio_n: np.ndarray, keys_n: np.ndarray, m: int) -> np.ndarray:
    """Indices of the m rows with the largest priority, ties broken by smaller key.

    np.argpartition finds the m-th largest value in O(n); only rows tied at that threshold need
    the key tie-break, so the choice is the same as a full (score desc, key asc) sort would make.
    """
    n = prio_n.shape[0]
    if n <= m:
        return np.arange(n)
    part = np.argpartition(-prio_n, m - 1)
    thr = prio_n[part[m - 1]]
    above = np.flatnonzero(prio_n > thr)
    tied = np.flatnonzero(prio_n == thr)
    need = m - above.shape[0]
    if tied.shape[0] > need:
        tied = tied[np.argpartition(keys_n[tied], need - 1)[:need]] if need > 0 else tied[:0]
    return np.concatenate([above, tied])


class _Bounded:
    """Keeps at most m rows of (keys, priority, carried arrays) with the largest priority."""

    def __init__(self, m: int) -> None:
        if m < 1:
            raise ValueError(f"m must be at least 1, got {m}")
        self.m = int(m)
        self.keys_n: np.ndarray | None = None
        self.prio_n: np.ndarray | None = None
        self.arrays: dict[str, np.ndarray | None] | None = None
        self.n_seen = 0

    def _check_arrays(self, n: int, arrays: dict[str, np.ndarray | None]) -> dict[str, np.ndarray | None]:
        out = {name: (None if a is None else np.asarray(a)) for name, a in arrays.items()}
        for name, a in out.items():
            if a is not None and a.shape[0] != n:
                raise ValueError(f"{name} has {a.shape[0]} rows but keys_n has {n}")
        if self.arrays is not None:
            before = {k for k, v in self.arrays.items() if v is not None}
            now = {k for k, v in out.items() if v is not None}
            if before != now:
                raise ValueError(
                    f"every chunk must carry the same arrays: first chunk had {sorted(before)}, "
                    f"this one has {sorted(now)}"
                )
        return out

    def push(self, keys_n: np.ndarray, prio_n: np.ndarray, arrays: dict[str, np.ndarray | None]) -> None:
        keys_n = np.asarray(keys_n)
        if keys_n.ndim != 1:
            raise ValueError(f"keys_n must be 1-D, got shape {keys_n.shape}")
        n = keys_n.shape[0]
        arrays = self._check_arrays(n, arrays)
        self.n_seen += n
        if n == 0:
            if self.arrays is None:
                self.arrays = arrays
            return
        if self.keys_n is not None and self.keys_n.shape[0] >= self.m:
            # Rows below the current m-th best can never enter; drop them before concatenating.
            floor = self.prio_n.min()  # type: ignore[union-attr]
            keep = np.flatnonzero(prio_n >= floor)
            if keep.shape[0] == 0:
                return
            if keep.shape[0] < n:
                keys_n, prio_n = keys_n[keep], prio_n[keep]
                arrays = {k: (None if a is None else a[keep]) for k, a in arrays.items()}
        if self.keys_n is None:
            all_keys, all_prio, all_arr = keys_n, prio_n, arrays
        else:
            all_keys = np.concatenate([self.keys_n, keys_n])
            all_prio = np.concatenate([self.prio_n, prio_n])  # type: ignore[list-item]
            all_arr = {
                k: (None if a is None else np.concatenate([self.arrays[k], a]))  # type: ignore[index]
                for k, a in arrays.items()
            }
        rows = _top_rows(all_prio, all_keys, self.m)
        if rows.shape[0] == all_keys.shape[0]:
            self.keys_n, self.prio_n, self.arrays = all_keys, all_prio, all_arr
        else:
            self.keys_n, self.prio_n = all_keys[rows], all_prio[rows]
            self.arrays = {k: (None if a is None else a[rows]) for k, a in all_arr.items()}
        # Copies decouple the kept rows from the caller's chunk buffers (which may be reused).
        if self.keys_n is keys_n:
            self.keys_n = keys_n.copy()
            self.arrays = {k: (None if a is None else a.copy()) for k, a in self.arrays.items()}

    def candidates(self, order_n: np.ndarray, scores_n: np.ndarray | None) -> Candidates:
        if self.keys_n is None:
            return Candidates(keys_n=np.zeros(0, dtype=np.int64), scores_n=scores_n)
        fields: dict[str, np.ndarray | None] = {f: None for f in _FIELDS}
        extras: dict[str, np.ndarray] = {}
        for name, a in (self.arrays or {}).items():
            if a is None:
                continue
            if name in fields:
                fields[name] = a[order_n]
            else:
                extras[name] = a[order_n]
        return Candidates(keys_n=self.keys_n[order_n], scores_n=scores_n, extras=extras, **fields)


class TopM:
    """The m highest-scoring items over a stream of chunks.

    ``result()`` is sorted by score descending, ties by key ascending, so it equals the first m
    rows of a full sort of the pool, independent of the chunking, without ever sorting the pool.
    """

    def __init__(self, m: int) -> None:
        self._keep = _Bounded(m)
        self.m = self._keep.m
        self.score_range: tuple[float, float] | None = None  # over every score pushed

    @property
    def n_seen(self) -> int:
        return self._keep.n_seen

    def push(self, keys_n: np.ndarray, scores_n: np.ndarray, **arrays_n: np.ndarray | None) -> None:
        """Offer one chunk: keys (n,), scores (n,), and any arrays aligned with them."""
        keys_n = np.asarray(keys_n)
        scores_n = check_scores(scores_n, keys_n.shape[0])
        if scores_n.size:
            low, high = float(scores_n.min()), float(scores_n.max())
            self.score_range = (low, high) if self.score_range is None else (
                min(low, self.score_range[0]), max(high, self.score_range[1]))
        self._keep.push(keys_n, scores_n, arrays_n)

    def result(self) -> Candidates:
        k = self._keep
        if k.keys_n is None:
            return k.candidates(np.zeros(0, dtype=np.int64), np.zeros(0))
        order = np.lexsort((k.keys_n, -k.prio_n))  # type: ignore[operator]
        cands = k.candidates(order, k.prio_n[order])  # type: ignore[index]
        cands.score_range = self.score_range
        return cands
