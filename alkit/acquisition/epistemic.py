"""epistemic: the learner's own epistemic score, ``Prediction.epistemic_n`` (what alkit ranked by
before the Acquisition stage: on classification VBLL's feature variance phi^T S phi by default
(``class_score``: mi, the Laplace-bridge mutual information, or logit_var), Laplace's MI, CSD's
variance, the gradient norm, an ensemble's BALD)."""

from __future__ import annotations

from alkit.types import AcquisitionContext, Prediction, Scores


class EpistemicAcquisition:
    """Score = ``pred.epistemic_n`` (higher = the model knows less)."""

    name = "epistemic"
    needs: tuple[str, ...] = ("epistemic_n",)

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        return Scores(pred.epistemic_n.double())
