"""margin: the smallest gap between the two most probable classes first (a baseline).

margin(x) = -(p_(1) - p_(2)) on the predictive p (uq-math.md §9b).  It uses no posterior: it is the
strongest classic baseline (scikit-activeml's margin sampling is the bar of the digits protocol),
which the posterior-driven ``epistemic`` preset has to beat.
"""

from __future__ import annotations

from alkit.acquisition._common import require_probs
from alkit.types import AcquisitionContext, Prediction, Scores


class MarginAcquisition:
    """Score = p_(2) - p_(1) in [-1, 0]; higher = closer to the decision boundary."""

    name = "margin"
    needs: tuple[str, ...] = ("probs",)
    signed = True  # scores are <= 0: the uncertainty stopping rules' thresholds (> 0) would fire at once

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        p = require_probs(pred, self.name)
        top2 = p.topk(2, dim=1).values if p.shape[1] >= 2 else p.new_zeros(p.shape[0], 2)
        return Scores(top2[:, 1] - top2[:, 0])
