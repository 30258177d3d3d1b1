"""random: the seeded uniform baseline every learning curve is compared with."""

from __future__ import annotations

import numpy as np

from alkit.types import Candidates, Selection, SelectionContext


class RandomStrategy:
    """Uniform sample without replacement; needs no model, so the cycle skips scoring."""

    name = "random"
    candidate_source = "all"
    needs_model = False

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        if batch_size < 1:
            raise ValueError(f"batch size must be at least 1, got {batch_size}")
        n = len(candidates)
        k = min(batch_size, n)
        rng = np.random.default_rng(ctx.seed)
        picked = rng.choice(n, size=k, replace=False)
        keys = candidates.keys_n[picked]
        zeros = np.zeros(k, dtype=np.float64)
        return Selection(keys=keys, scores=zeros, utilities=zeros.copy())
