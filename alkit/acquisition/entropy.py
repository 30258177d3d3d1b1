"""entropy: the predictive entropy H[p] first (a baseline; uq-math.md §9b).  It mixes aleatoric
and epistemic uncertainty and needs no posterior."""

from __future__ import annotations

from alkit.acquisition._common import require_probs
from alkit.distributions import entropy_n
from alkit.types import AcquisitionContext, Prediction, Scores


class EntropyAcquisition:
    """Score = -sum_c p_c log p_c in nats."""

    name = "entropy"
    needs: tuple[str, ...] = ("probs",)

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        return Scores(entropy_n(require_probs(pred, self.name)))
