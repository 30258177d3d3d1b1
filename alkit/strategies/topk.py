"""topk: the batch_size highest scores; the batch-unaware baseline of every scorer."""

from __future__ import annotations

import numpy as np

from alkit.strategies._common import check_batch
from alkit.types import Candidates, Selection, SelectionContext


class TopKStrategy:
    """Highest scores first, ties by key ascending.  Runs on the streamed top-m candidates, so
    the pool itself is never sorted; utilities are the scores (a pick's gain is its own score)."""

    name = "topk"
    candidate_source = "topm"
    # the batch's top k of the top m are the pool's top k for any m >= k: --candidates changes no pick, so it names
    # no run or curve of its own (alkit/runs.py: _read_picks; a black-box check found two curves of one run)
    reads_candidates = False
    needs_model = True

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        k = check_batch(batch_size, candidates)
        if candidates.scores_n is None:
            raise ValueError("the topk strategy needs candidates.scores_n, got None")
        scores_n = np.asarray(candidates.scores_n, dtype=np.float64)
        if np.isnan(scores_n).any():
            raise ValueError("scores contain NaN; refusing to rank them")
        order = np.lexsort((candidates.keys_n, -scores_n))[:k]
        picked = scores_n[order]
        return Selection(keys=candidates.keys_n[order], scores=picked, utilities=picked.copy())
