"""kcenter: core-set greedy furthest-first (Sener & Savarese), the label-free geometric baseline.

Each pick is the candidate furthest from everything labeled or already picked, which greedily
minimises the covering radius of the batch (a 2-approximation of k-center).  Distances to the
labeled set are computed in row chunks, so memory is O(N + chunk * n_labeled), never N x n_labeled.
"""

from __future__ import annotations

import numpy as np

from alkit.strategies._common import check_batch, require_embedding, scores_or_zeros
from alkit.types import Candidates, Selection, SelectionContext

_CELLS = 1 << 22  # entries of one (chunk, n_labeled) distance block, ~32 MB in float64


def min_sq_dist_n(emb_n_d: np.ndarray, ref_m_d: np.ndarray, cells: int = _CELLS) -> np.ndarray:
    """Squared distance from each row to its nearest reference row, (n,), chunked over rows."""
    n, m = emb_n_d.shape[0], ref_m_d.shape[0]
    ref_sq_m = np.einsum("md,md->m", ref_m_d, ref_m_d)
    out_n = np.empty(n)
    rows = max(1, cells // max(m, 1))
    for lo in range(0, n, rows):
        blk = emb_n_d[lo : lo + rows]
        d2 = np.einsum("nd,nd->n", blk, blk)[:, None] + ref_sq_m[None, :] - 2.0 * (blk @ ref_m_d.T)
        out_n[lo : lo + rows] = np.maximum(d2.min(axis=1), 0.0)
    return out_n


def _sq_dist_to_n(emb_n_d: np.ndarray, x_d: np.ndarray, cells: int = _CELLS) -> np.ndarray:
    """Exact squared distances to one point (difference, not the expanded form, so near points
    keep their precision), in row blocks so the temporary is O(chunk * d), not O(N * d)."""
    n, d = emb_n_d.shape
    out_n = np.empty(n)
    rows = max(1, cells // max(d, 1))
    for lo in range(0, n, rows):
        diff = emb_n_d[lo : lo + rows] - x_d
        out_n[lo : lo + rows] = np.einsum("nd,nd->n", diff, diff)
    return out_n


class KCenterStrategy:
    """Furthest-first traversal from the labeled set; utilities = distance at pick time.

    With no labeled embeddings the first pick is the candidate of largest norm (its utility is
    that norm: the distance to the origin), which is deterministic and lands on the hull.
    """

    name = "kcenter"
    candidate_source = "pool"
    needs_model = True
    needs_labeled_embedding = True  # distances to the labeled set (SelectionContext)

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        b = check_batch(batch_size, candidates)
        emb_n_d = require_embedding(candidates, self.name)
        n = emb_n_d.shape[0]
        lab = ctx.labeled_embedding_n_d
        if lab is not None and len(lab) > 0:
            lab_m_d = np.asarray(lab, dtype=np.float64)
            if lab_m_d.ndim != 2 or lab_m_d.shape[1] != emb_n_d.shape[1]:
                raise ValueError(
                    f"labeled_embedding_n_d must be (m, {emb_n_d.shape[1]}), got {lab_m_d.shape}"
                )
            if not np.isfinite(lab_m_d).all():  # a NaN centre made every distance NaN
                raise ValueError(f"the kcenter strategy cannot measure distances to the labelled set: "
                                 f"{int((~np.isfinite(lab_m_d).all(1)).sum())} labelled items' embeddings hold NaN or inf")
            dmin_n = min_sq_dist_n(emb_n_d, lab_m_d)
        else:
            dmin_n = np.einsum("nd,nd->n", emb_n_d, emb_n_d)
        no_centre = lab is None or len(lab) == 0
        picked_n = np.zeros(n, dtype=bool)
        order = np.empty(b, dtype=np.int64)
        util = np.empty(b)
        for t in range(b):
            d_n = np.where(picked_n, -np.inf, dmin_n)
            j = int(np.argmax(d_n))
            order[t], util[t] = j, np.sqrt(max(dmin_n[j], 0.0))
            picked_n[j] = True
            d2_n = _sq_dist_to_n(emb_n_d, emb_n_d[j])
            if no_centre and t == 0:
                dmin_n = d2_n  # the origin only chose the first pick; it is not a centre
            else:
                np.minimum(dmin_n, d2_n, out=dmin_n)
        scores_n = scores_or_zeros(candidates)
        return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=util)
