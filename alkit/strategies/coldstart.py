"""coldstart: stratified sampling for the first cycles, when no model is trustworthy yet.

Strata come from a metadata column (``candidates.strata_n``, e.g. ``--stratify-by``) or from
k-means on L2-normalised embeddings (PCA to 50 dimensions first when wider); the batch is split
over strata in proportion to their size (largest remainders, at least one per stratum when the
batch allows) and sampled uniformly inside each stratum (uq-math.md section 9, cold start).
A stratified sample has no less variance than a uniform one for any stratum-level quantity and
never misses a large cluster, which is what a first labeled set needs.
"""

from __future__ import annotations

import math

import numpy as np

from alkit.strategies._common import check_batch
from alkit.types import Candidates, Selection, SelectionContext

_PCA_DIM = 50
_N_INIT = 3


def allocate(stratum_sizes: np.ndarray, batch_size: int, rng: np.random.Generator | None = None) -> np.ndarray:
    """Picks per stratum: n_h = floor(b N_h / N), remainder to the largest fractional parts
    (ties: larger stratum, then lower index, or a random order drawn from ``rng``), then at least
    one per non-empty stratum when b >= the number of non-empty strata.  b is capped at N; n_h
    never exceeds N_h.

    Why random ties in a run: with more strata than the batch (a --stratify-by column of many
    values) every remainder ties, and the lower index (the first values in sorted order) took the
    whole batch, cycle after cycle: on a column with one value per row, the pool's first rows.
    """
    sizes_h = np.asarray(stratum_sizes, dtype=np.int64)
    if sizes_h.ndim != 1 or (sizes_h < 0).any():
        raise ValueError(f"stratum sizes must be a 1-D array of non-negative ints, got {sizes_h}")
    if batch_size < 0:
        raise ValueError(f"batch size must be non-negative, got {batch_size}")
    N = int(sizes_h.sum())
    b = min(int(batch_size), N)
    alloc_h = np.zeros(sizes_h.shape[0], dtype=np.int64)
    if b == 0:
        return alloc_h
    # Integer arithmetic: floor and remainder of b*N_h/N are exact.
    alloc_h, rem_h = np.divmod(b * sizes_h, N)
    left = b - int(alloc_h.sum())
    if left > 0:
        order_h = np.arange(sizes_h.shape[0]) if rng is None else rng.permutation(sizes_h.shape[0])
        rank = np.lexsort((order_h, -sizes_h, -rem_h))
        alloc_h[rank[:left]] += 1
    nonempty = sizes_h > 0
    if b >= int(nonempty.sum()):
        quota_h = b * sizes_h / N
        for h in np.flatnonzero(nonempty & (alloc_h == 0)):
            # Take the seat from the stratum most over its quota that can spare one.
            spare = np.flatnonzero(alloc_h >= 2)
            donor = spare[np.argmax(alloc_h[spare] - quota_h[spare])]
            alloc_h[donor] -= 1
            alloc_h[h] += 1
    return alloc_h


def n_strata(batch_size: int, n_candidates: int) -> int:
    """k = min(b, clip(round(sqrt(N)), 10, 50), N): 10 to 50 strata as uq-math section 9 says,
    fewer for small candidate sets so a stratum is not a handful of points."""
    k_max = int(np.clip(round(math.sqrt(max(n_candidates, 1))), 10, 50))
    return max(1, min(batch_size, k_max, n_candidates))


def kmeans_strata(features_n_f: np.ndarray, k: int, seed: int) -> np.ndarray:
    """Stratum code per item from k-means on L2-normalised (and PCA-reduced) features."""
    from sklearn.cluster import KMeans
    from sklearn.decomposition import PCA

    x_n_f = np.asarray(features_n_f, dtype=np.float64)
    x_n_f = x_n_f / np.maximum(np.linalg.norm(x_n_f, axis=1, keepdims=True), 1e-12)
    if x_n_f.shape[1] > _PCA_DIM and x_n_f.shape[0] > _PCA_DIM:
        x_n_f = PCA(n_components=_PCA_DIM, random_state=seed).fit_transform(x_n_f)
    n_distinct = np.unique(x_n_f, axis=0).shape[0]
    k = max(1, min(k, n_distinct))
    if k == 1:
        return np.zeros(x_n_f.shape[0], dtype=np.int64)
    km = KMeans(n_clusters=k, n_init=_N_INIT, random_state=seed)
    return km.fit_predict(x_n_f).astype(np.int64)


class ColdStartStrategy:
    """Proportionally allocated stratified sample, seeded.  Picks are interleaved round-robin over
    strata so any prefix of the batch is spread too.  Utilities are each pick's stratum share
    N_h / N (the part of the pool it stands for); 0 on the uniform fallback."""

    name = "coldstart"
    candidate_source = "sample"
    needs_model = False

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        b = check_batch(batch_size, candidates)
        n = len(candidates)
        rng = np.random.default_rng(ctx.seed)
        strata_n = self._strata(candidates, b, ctx.seed)
        if strata_n is None:
            picked = rng.choice(n, size=b, replace=False)
            zeros = np.zeros(b)
            return Selection(keys=candidates.keys_n[picked], scores=self._scores(candidates, picked),
                             utilities=zeros)
        codes_h, strata_n = np.unique(strata_n, return_inverse=True)
        strata_n = strata_n.reshape(-1)
        sizes_h = np.bincount(strata_n, minlength=codes_h.shape[0])
        # more strata than picks: which strata get one is a draw (index order would take the first values)
        alloc_h = allocate(sizes_h, b, rng if sizes_h.shape[0] > b else None)
        per_stratum: list[np.ndarray] = []
        for h in range(codes_h.shape[0]):
            members = np.flatnonzero(strata_n == h)
            per_stratum.append(rng.choice(members, size=int(alloc_h[h]), replace=False))
        order: list[int] = []
        for r in range(int(alloc_h.max(initial=0))):
            order.extend(int(p[r]) for p in per_stratum if r < p.shape[0])
        picked = np.asarray(order, dtype=np.int64)
        share = sizes_h[strata_n[picked]] / n
        return Selection(keys=candidates.keys_n[picked], scores=self._scores(candidates, picked),
                         utilities=share.astype(np.float64))

    @staticmethod
    def _scores(candidates: Candidates, picked: np.ndarray) -> np.ndarray:
        if candidates.scores_n is None:
            return np.zeros(picked.shape[0])
        return np.asarray(candidates.scores_n, dtype=np.float64)[picked]

    @staticmethod
    def _strata(candidates: Candidates, b: int, seed: int) -> np.ndarray | None:
        """Metadata strata if given, else k-means strata on embeddings or raw features, else None."""
        if candidates.strata_n is not None:
            strata_n = np.asarray(candidates.strata_n)
            if strata_n.shape != (len(candidates),):
                raise ValueError(f"strata_n must be ({len(candidates)},), got {strata_n.shape}")
            return strata_n
        feats = candidates.embedding_n_d
        if feats is None:
            feats = candidates.extras.get("features")
        if feats is None:
            return None
        feats = np.asarray(feats)
        if feats.ndim == 1:
            feats = feats[:, None]
        return kmeans_strata(feats, n_strata(b, len(candidates)), seed)
