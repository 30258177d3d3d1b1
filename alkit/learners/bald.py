"""What every member-based scorer shares: BALD, member variance, one Prediction from M members.

Deep ensembles, MC dropout and SVE all end with M "posterior samples" of the network's output per
item (uq-math.md §8-9).  Their epistemic score is the disagreement between the members: the mutual
information between the label and the sample (BALD) for classification, the variance of the member
means for regression.  Entropies are summed in float64 with xlogy (uq-math.md §10) because BALD is
a small difference of two entropies and float32 cancellation would reorder near-ties.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from alkit.distributions import GaussianPredictive, per_item, positive, quantile_level
from alkit.distributions import expected_entropy_n, member_bald_n, member_parts  # noqa: F401 (re-exported)
from alkit.models.learner import TargetScaler
from alkit.types import Prediction

_SQRT_2PI = math.sqrt(2 * math.pi)


def member_seeds(seed: int, n_members: int) -> list[int]:
    """Independent, reproducible seeds for the members of a run (SeedSequence spawning)."""
    children = np.random.SeedSequence(int(seed)).spawn(n_members)
    return [int(c.generate_state(1, dtype=np.uint32)[0] & 0x7FFFFFFF) for c in children]


bald_n = member_bald_n  # the member BALD the ensembles rank by (alkit/distributions.py)


def member_variance_n(member_means_n_M: torch.Tensor | np.ndarray) -> torch.Tensor:
    """Regression epistemic score: population variance (ddof 0) of the member means, float64 (n,)."""
    mu = torch.as_tensor(member_means_n_M, dtype=torch.float64)
    if mu.ndim != 2:
        raise ValueError(f"member_means must have shape (n, M), got {tuple(mu.shape)}")
    return mu.var(dim=1, unbiased=False)


def _abs_moment(m: torch.Tensor, var: torch.Tensor) -> torch.Tensor:
    """E|Z| for Z ~ N(m, var), elementwise (used by the mixture CRPS)."""
    s = positive(var).sqrt()
    z = m / s
    pdf = torch.exp(-0.5 * z**2) / _SQRT_2PI
    return 2 * s * pdf + m * (2 * torch.special.ndtr(z) - 1)


@dataclass
class GaussianMixturePredictive:
    """Equal-weight mixture of M Gaussians per item: the ensemble's predictive for regression.

    Kept as a mixture (not moment-matched) so a bimodal disagreement between members is scored
    as bimodal by NLL and CRPS.  ``means_n_M``, ``vars_n_M`` are the members' Gaussians.
    """

    means_n_M: torch.Tensor
    vars_n_M: torch.Tensor

    @property
    def mean_n(self) -> torch.Tensor:
        return self.means_n_M.mean(1)

    @property
    def var_n(self) -> torch.Tensor:
        """Total variance: mean member variance + variance of the member means."""
        return self.vars_n_M.mean(1) + self.means_n_M.var(dim=1, unbiased=False)

    def mean(self) -> torch.Tensor:
        return self.mean_n

    @per_item(lambda d: len(d.means_n_M))
    def nll(self, y_n: torch.Tensor) -> torch.Tensor:
        var = positive(self.vars_n_M)
        log_pdf = -0.5 * (math.log(2 * math.pi) + var.log() + (y_n[:, None] - self.means_n_M) ** 2 / var)
        return -(torch.logsumexp(log_pdf, dim=1) - math.log(self.means_n_M.shape[1]))

    @per_item(lambda d: len(d.means_n_M))
    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:
        s = positive(self.vars_n_M).sqrt()
        return torch.special.ndtr((y_n[:, None] - self.means_n_M) / s).mean(1)

    def quantile(self, tau: float) -> torch.Tensor:
        """The mixture's tau-quantile per item, (n,), by bisection on its CDF (to float64 resolution of
        the bracket mean +- 40 sd)."""
        tau = quantile_level(tau)
        mu, s = self.means_n_M.double(), positive(self.vars_n_M.double()).sqrt()
        lo, hi = (mu - 40 * s).min(1).values, (mu + 40 * s).max(1).values
        for _ in range(100):
            mid = 0.5 * (lo + hi)
            below = torch.special.ndtr((mid[:, None] - mu) / s).mean(1) < tau
            lo, hi = torch.where(below, mid, lo), torch.where(below, hi, mid)
        return (0.5 * (lo + hi)).to(self.means_n_M.dtype)

    @per_item(lambda d: len(d.means_n_M))
    def crps(self, y_n: torch.Tensor) -> torch.Tensor:
        """Closed form CRPS = E|X - y| - E|X - X'|/2 for a Gaussian mixture (Grimit et al. 2006)."""
        mu, var = self.means_n_M, self.vars_n_M
        term1 = _abs_moment(mu - y_n[:, None], var).mean(1)
        diff_n_M_M = mu[:, :, None] - mu[:, None, :]
        var_n_M_M = var[:, :, None] + var[:, None, :]
        term2 = _abs_moment(diff_n_M_M, var_n_M_M).mean((1, 2))
        return term1 - 0.5 * term2

    def affine(self, shift: float, scale: float) -> "GaussianMixturePredictive":
        return GaussianMixturePredictive(self.means_n_M * scale + shift, self.vars_n_M * scale**2)


def classification_prediction(member_probs_n_M_C: torch.Tensor, embedding_n_d: torch.Tensor) -> Prediction:
    """One Prediction from M members: mean probabilities, BALD as epistemic, expected entropy as
    aleatoric, and the member probabilities in extras (for BatchBALD)."""
    member_probs_n_M_C = member_probs_n_M_C.float()
    bald, expected = member_parts(member_probs_n_M_C)
    return Prediction(
        epistemic_n=bald.float(),
        aleatoric_n=expected.float(),
        embedding_n_d=embedding_n_d,
        probs_n_C=member_probs_n_M_C.mean(1),
        extras={"member_probs_n_M_C": member_probs_n_M_C},
    )


def regression_prediction(
    member_means_n_M: torch.Tensor, member_vars_n_M: torch.Tensor, embedding_n_d: torch.Tensor
) -> Prediction:
    """One Prediction from M Gaussian members: variance of the means as epistemic, the mean member
    variance as aleatoric, the equal-weight mixture as the predictive distribution."""
    dist = GaussianMixturePredictive(member_means_n_M.float(), member_vars_n_M.float())
    return Prediction(
        epistemic_n=member_variance_n(member_means_n_M).float(),
        aleatoric_n=dist.vars_n_M.mean(1),
        embedding_n_d=embedding_n_d,
        mean_n=dist.mean_n,
        dist=dist,
        extras={"member_means_n_M": dist.means_n_M, "member_vars_n_M": dist.vars_n_M},
    )


def regression_from_outputs(out_M_n_2: torch.Tensor, scaler: TargetScaler, embedding_n_d: torch.Tensor) -> Prediction:
    """Members' (mean, log variance) head outputs on standardised targets -> one Prediction in
    the original target units (as MLPLearner.predict undoes its scaling)."""
    dist_M_n = GaussianPredictive(out_M_n_2[..., 0], out_M_n_2[..., 1].exp()).affine(scaler.shift, scaler.scale)
    return regression_prediction(dist_M_n.mean_n.T, dist_M_n.var_n.T, embedding_n_d)
