"""decision-bald: the information a label carries about the item's own top-two decision.

With f = z_a - z_b the logit difference of the item's two most probable classes (Gaussian under
the last-layer posterior, Var f = v_a + v_b) and the label observing f with noise 1/F (F its
Fisher information about f, ``decision_parts``), the mutual information is

    I(y; f) = 1/2 log(1 + F Var f).

F is largest where the two classes tie and vanishes for a confident item, Var f is largest where
the posterior knows least: the product asks for both, so a far-away item the model classifies
decisively scores low (BALD's outlier failure) and a boundary item the posterior has already pinned
down scores low too (what margin cannot see).  It is BALD restricted to the one direction of the
logits that decides the prediction.  ``diverse`` picks its batch greedily, conditioning the joint
(K d) posterior on each pick's decision.
"""

from __future__ import annotations

import torch

from alkit.acquisition._common import require_posterior, require_probs
from alkit.posterior import DecisionView
from alkit.types import AcquisitionContext, Prediction, Scores


def decision_bald_n(var_n_K: torch.Tensor, sign_n_K: torch.Tensor, noise_n: torch.Tensor) -> torch.Tensor:
    """1/2 log(1 + Var f / noise) with Var f = sum_k s_k^2 v_k, float64 (n,)."""
    var_f = (sign_n_K.double().square() * var_n_K.double()).sum(1)
    return 0.5 * torch.log1p(var_f / noise_n.double())


class DecisionBALDAcquisition:
    """Information a label gives about the item's own top-two decision: 1/2 log(1 + F Var f)."""

    name = "decision-bald"
    needs: tuple[str, ...] = ("posterior", "probs")

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        require_probs(pred, self.name)
        d = DecisionView.of(pred, require_posterior(ctx, self.name))
        return Scores(decision_bald_n(d.var_n_K, d.sign_n_K, d.noise_n),
                      {"decision_sign_n_K": d.sign_n_K, "decision_noise_n": d.noise_n})
