"""badge: k-means++ seeding on last-layer gradient embeddings (Ash et al., BADGE).

The gradient embedding of an item is g = a (x) h with a = e_yhat - p (C,) and h the embedding (d,),
so it mixes uncertainty (||a||) and diversity (h).  It has C*d entries; it is never built.
Distances use ||a(x)h - a'(x)h'||^2 = ||a||^2 ||h||^2 + ||a'||^2 ||h'||^2 - 2 (a.a')(h.h')
(uq-math.md section 9), so one pick costs O(N (C + d)).

Regression (no class probabilities): g = score * h, the same identity with a = (score,);
with neither probabilities nor scores, a = (1,) and this is plain k-means++ on the embeddings.
"""

from __future__ import annotations

import numpy as np

from alkit.checks import not_distribution_rows
from alkit.strategies._common import check_batch, require_embedding, require_finite, scores_or_zeros
from alkit.types import Candidates, Selection, SelectionContext

_REL_TOL = 1e-12  # squared distances below this fraction of the norms are cancellation noise


def gradient_factors(candidates: Candidates, emb_n_d: np.ndarray) -> np.ndarray:
    """The 'a' factor of g = a (x) h per item: (n, C) for classification, (n, 1) otherwise."""
    if candidates.probs_n_C is not None:
        probs_n_C = np.asarray(candidates.probs_n_C, dtype=np.float64)
        if probs_n_C.ndim != 2 or probs_n_C.shape[0] != emb_n_d.shape[0]:
            raise ValueError(f"probs_n_C must be ({emb_n_d.shape[0]}, C), got {probs_n_C.shape}")
        bad_n = not_distribution_rows(probs_n_C)
        if bad_n.any():  # a NaN row was picked first and every later D^2 draw was uniform
            raise ValueError(f"the badge strategy needs class probabilities: {int(bad_n.sum())} candidates' rows are "
                             f"not a distribution (finite values in [0, 1] summing to 1), e.g. item "
                             f"{candidates.keys_n[int(np.flatnonzero(bad_n)[0])].item()!r}")
        a_n_C = -probs_n_C
        a_n_C[np.arange(a_n_C.shape[0]), probs_n_C.argmax(axis=1)] += 1.0
        return a_n_C
    if candidates.scores_n is not None:
        scores_n = scores_or_zeros(candidates)
        require_finite(scores_n, candidates.keys_n, "the badge strategy", "score")
        return scores_n[:, None]
    return np.ones((emb_n_d.shape[0], 1))


class BadgeStrategy:
    """k-means++ seeding in gradient-embedding space: first pick argmax ||g||^2, then D^2 sampling
    seeded by ``ctx.seed``.  Utilities are D^2 at pick time (||g||^2 for the first pick)."""

    name = "badge"
    candidate_source = "pool"
    needs_model = True

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        b = check_batch(batch_size, candidates)
        h_n_d = require_embedding(candidates, self.name)
        a_n_C = gradient_factors(candidates, h_n_d)
        n = h_n_d.shape[0]
        a_sq_n = np.einsum("nc,nc->n", a_n_C, a_n_C)
        h_sq_n = np.einsum("nd,nd->n", h_n_d, h_n_d)
        g_sq_n = a_sq_n * h_sq_n
        rng = np.random.default_rng(ctx.seed)

        d2_n = g_sq_n.copy()  # distance to the origin before the first pick
        picked_n = np.zeros(n, dtype=bool)
        order = np.empty(b, dtype=np.int64)
        util = np.empty(b)
        for t in range(b):
            if t == 0:
                j = int(np.argmax(g_sq_n))
            else:
                w_n = np.where(picked_n, 0.0, d2_n)
                total = w_n.sum()
                if total > 0:
                    cdf_n = np.cumsum(w_n)
                    j = int(np.searchsorted(cdf_n, rng.random() * cdf_n[-1], side="right"))
                    j = min(j, n - 1)
                    while w_n[j] == 0.0:  # guard the float edge of searchsorted
                        j -= 1
                else:  # every remaining item coincides with a pick: uniform among them
                    j = int(rng.choice(np.flatnonzero(~picked_n)))
            order[t], util[t] = j, d2_n[j]
            picked_n[j] = True
            cross_n = (a_n_C @ a_n_C[j]) * (h_n_d @ h_n_d[j])
            dist_n = g_sq_n + g_sq_n[j] - 2.0 * cross_n
            dist_n[dist_n < _REL_TOL * (g_sq_n + g_sq_n[j])] = 0.0
            if t == 0:
                d2_n = dist_n  # the origin was only the first pick's reference, not a centre
            else:
                np.minimum(d2_n, dist_n, out=d2_n)
        scores_n = scores_or_zeros(candidates)
        return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=util)
