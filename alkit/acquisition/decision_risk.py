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

import math

import numpy as np
import torch

from alkit.acquisition._common import AcquisitionError, require_posterior, require_probs
from alkit.acquisition.epig import EPIGTargets, decision_parts
from alkit.acquisition.gaussian import OutputCovariance, label_probs
from alkit.types import AcquisitionContext, Prediction, Scores

_NODES = 24
_X, _W = np.polynomial.legendre.leggauss(_NODES)
_X_Q = torch.as_tensor(_X, dtype=torch.float64)
_W_Q = torch.as_tensor(_W, dtype=torch.float64)
_ROWS = 256
_NEGLIGIBLE = 1e-7  # targets whose decision risk is below this are left out (error <= 1e-7 per target)
_FAR = 40.0  # |standardised| thresholds beyond this are +-infinity for Phi in float64


def bivariate_normal_cdf(h: torch.Tensor, k: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """P(X < h, Y < k) for standard normals with correlation rho in [0, 1), elementwise, float64:
    Phi(h) Phi(k) + 1/(2 pi) int_0^asin(rho) exp(-(h^2 - 2 h k sin t + k^2) / (2 cos^2 t)) dt, the
    integrand smooth on the whole range, so Gauss-Legendre on ``_NODES`` nodes is exact to ~1e-12."""
    t_max = torch.asin(rho.clamp(0.0, 1.0 - 1e-15))
    t = t_max[..., None] * (_X_Q + 1) / 2
    sin, cos2 = torch.sin(t), torch.cos(t).square()
    hq, kq = h[..., None], k[..., None]
    f = torch.exp(-(hq * hq - 2 * hq * kq * sin + kq * kq) / (2 * cos2))
    integral = (f * _W_Q).sum(-1) * t_max / 2
    return torch.special.ndtr(h) * torch.special.ndtr(k) + integral / (2 * math.pi)


def expected_risk(margin_M: torch.Tensor, var_M: torch.Tensor, post_var_n_M: torch.Tensor) -> torch.Tensor:
    """R(m, s^2, s'^2) = E Phi(-|m'| / s'), m' ~ N(m, s^2 - s'^2), per (item, target), float64.

    In closed form, with t^2 = s^2 - s'^2, h = -m / s, k = -m / t and rho = t / s:
    R = Phi(h) + Phi(k) - 2 Phi_2(h, k; rho) (split on the sign of m' and write each half as a
    bivariate normal probability of (m' + s' Z, m'))."""
    s0 = var_M.clamp_min(1e-300).sqrt()[None].expand_as(post_var_n_M)
    t = (var_M[None] - post_var_n_M).clamp_min(0.0).sqrt()
    m = margin_M[None].expand_as(post_var_n_M)
    h = (-m / s0).clamp_min(-_FAR)
    k = torch.where(t > 0, -m / t.clamp_min(1e-300), torch.where(m > 0, -_FAR, 0.0)).clamp_min(-_FAR)
    rho = t / s0
    return (torch.special.ndtr(h) + torch.special.ndtr(k) - 2 * bivariate_normal_cdf(h, k, rho)).clamp_min(0.0)


def risk_reduction_n(c_n_M: torch.Tensor, total_var_n: torch.Tensor, margin_M: torch.Tensor,
                     var_M: torch.Tensor, base_var_M: torch.Tensor | None = None) -> torch.Tensor:
    """mean_j [R(m_j, s0_j^2, s_j^2) - R(m_j, s0_j^2, s_j^2 - c_nj^2 / total_var_n)]: the risk
    reduction of one more label at each of n items, when the targets' decisions already have
    variance ``var_M`` after a batch so far (``base_var_M``: their variance before it)."""
    base = var_M if base_var_M is None else base_var_M
    now = expected_risk(margin_M, base, var_M[None])[0]  # = Phi(-m / s) before any pick
    M = now.shape[0]
    live = now > _NEGLIGIBLE  # a target's reduction is at most its risk now: skip the settled ones
    c_n_M, margin_M, base, var_M, now = c_n_M[:, live], margin_M[live], base[live], var_M[live], now[live]
    out = torch.zeros(c_n_M.shape[0], dtype=torch.float64)
    for lo in range(0, c_n_M.shape[0], _ROWS):
        post = (var_M[None] - c_n_M[lo:lo + _ROWS].square() / total_var_n[lo:lo + _ROWS, None]).clamp_min(0.0)
        out[lo:lo + _ROWS] = (now[None] - expected_risk(margin_M, base, post)).sum(1) / M
    return out


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
        probs = label_probs(pred)
        cov = OutputCovariance.of(post, probs.shape[1])
        phi = cov.features(pred.embedding_n_d)
        sign, noise = decision_parts(probs)
        var_f = (sign.square() * cov.variance_n_K(phi)).sum(1)
        var_t = (t.decision_sign_M_K.square() * t.var_M_K).sum(1)
        c = torch.cat([torch.einsum("nk,nkm,mk->nm", sign[lo:lo + _ROWS],
                                    cov.covariance_n_K_m(phi[lo:lo + _ROWS], t.cross_G_d_M), t.decision_sign_M_K)
                       for lo in range(0, phi.shape[0], _ROWS)])
        return Scores(risk_reduction_n(c, var_f + noise, t.decision_margin_M, var_t),
                      {"decision_sign_n_K": sign, "decision_noise_n": noise})
