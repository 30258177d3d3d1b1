"""decision-risk: the expected reduction of the posterior's decision risk on the pool.

Each pool target x* (the seeded sample of ``EPIGTargets``) has a top-two decision: f* = z_a - z_b,
Gaussian under the last-layer posterior with mean m* >= 0 and variance s*^2.  The posterior's risk
on that decision is the probability that the truth under the posterior is the other class,
Phi(-m* / s*).  A label at x shrinks Var f* to s'^2 = s*^2 - c^2 / (Var f + 1/F) (c = Cov(f, f*),
F the label's Fisher information about its own decision, as for ``epig-decision``) and moves the
mean: before the label is seen, m' ~ N(m*, s*^2 - s'^2).  The expected risk after it is

    R(m*, s*^2, s'^2) = E_{m' ~ N(m*, s*^2 - s'^2)} Phi(-|m'| / s'),

and the score is the mean over targets of Phi(-m*/s*) - R(m*, s*^2, s'^2) >= 0 (the risk is a
minimum of two probabilities, concave, so information never raises it in expectation).

Why not EPIG about the same decisions: EPIG values information about every target equally, also
about decisions the posterior already makes with certainty; the risk weights each target by how
close its decision is, measured in posterior standard deviations, so labels go where they can still
change the pool's predictions.  The expectation has a closed form in the bivariate normal CDF
(``expected_risk``).
The batch form is exact in the same model: ``diverse`` conditions the joint posterior on each pick
and scores the next one by the risk after the whole batch (``EPIGTargets.objective = "risk"``).
"""

from __future__ import annotations

import torch

from alkit.acquisition._common import AcquisitionError, require_posterior, require_probs
from alkit.posterior import DecisionView, EPIGTargets, risk_reduction_n
from alkit.types import AcquisitionContext, Prediction, Scores

_ROWS = 256  # candidate rows per block of the cross-covariance

class DecisionRiskAcquisition:
    """Expected reduction of the posterior's decision risk on a pool sample (look-ahead by one label)."""

    name = "decision-risk"
    needs: tuple[str, ...] = ("posterior", "probs")
    uses_targets = True
    target_objective = "risk"

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        require_probs(pred, self.name)
        post = require_posterior(ctx, self.name)
        t = ctx.targets
        if not isinstance(t, EPIGTargets) or t.decision_margin_M is None or t.cov is None:
            raise AcquisitionError("the decision-risk acquisition needs the targets' decisions (EPIGTargets "
                                   "from a classification Prediction); the cycle prepared none")
        d = DecisionView.of(pred, post)
        cov, phi, sign, noise = d.cov, d.phi_n_d, d.sign_n_K, d.noise_n
        var_f = (sign.square() * d.var_n_K).sum(1)
        var_t = (t.decision_sign_M_K.square() * t.var_M_K).sum(1)
        c = torch.cat([torch.einsum("nk,nkm,mk->nm", sign[lo:lo + _ROWS],
                                    cov.covariance_n_K_m(phi[lo:lo + _ROWS], t.cross_G_d_M), t.decision_sign_M_K)
                       for lo in range(0, phi.shape[0], _ROWS)])
        return Scores(risk_reduction_n(c, var_f + noise, t.decision_margin_M, var_t),
                      {"decision_sign_n_K": sign, "decision_noise_n": noise})
