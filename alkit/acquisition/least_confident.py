"""least-confident: the lowest top-class probability first (a baseline; uq-math.md §9b)."""

from __future__ import annotations

from alkit.acquisition._common import require_probs
from alkit.types import AcquisitionContext, Prediction, Scores


class LeastConfidentAcquisition:
    """Score = 1 - max_c p_c."""

    name = "least-confident"
    needs: tuple[str, ...] = ("probs",)

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        return Scores(1.0 - require_probs(pred, self.name).max(dim=1).values)
