"""random: the seeded uniform baseline every learning curve is compared with."""

from __future__ import annotations

import numpy as np

from alkit.strategies._common import check_batch
from alkit.types import Candidates, Selection, SelectionContext


class RandomStrategy:
    """Uniform sample without replacement; needs no model, so the cycle skips scoring."""

    name = "random"
    candidate_source = "all"
    needs_model = False

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        k = check_batch(batch_size, candidates)
        rng = np.random.default_rng(ctx.seed)
        picked = rng.choice(len(candidates), size=k, replace=False)
        keys = candidates.keys_n[picked]
        zeros = np.zeros(k, dtype=np.float64)
        return Selection(keys=keys, scores=zeros, utilities=zeros.copy())
