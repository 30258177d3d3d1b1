"""QR-VBLL: K quantile heads on a VBLL last layer, trained by the closed-form expected pinball loss.

Why: a Gaussian head puts its mode between the modes of a multimodal target (the seed's "ghost
value"); quantile heads rebuild any shape of conditional distribution while keeping the analytic
last-layer epistemic variance (uq-math.md §3, DERIVED there and checked against Monte Carlo in
tests/test_qr_cr_vbll.py).

Head k: q_k = b_k + w_k^T phi, w_k ~ N(mu_k, S_k).  With r = y - q_k ~ N(m, s^2):
    E[rho_tau(r)] = m (tau - 1 + Phi(m/s)) + s pdf(m/s).
Likelihood: asymmetric Laplace with learned scale beta_k (initialised from the data), so the loss
per item is sum_k E[rho]/beta_k + log beta_k; KL weight 1/N.  After training, S is refitted to the
ELBO-stationary point for the final features (weights w_ik = pdf(m/s) / (s beta_k)).
Predictive CDF: J posterior draws of the quantile vector (fixed seed), each sorted (monotone
rearrangement) and interpolated linearly, with linear tails to the training support; the draws'
CDFs are averaged.  Epistemic = mean_k v_k; aleatoric = spread of the mean quantiles.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from alkit.learners.piecewise import PiecewiseLinearMixture
from alkit.learners.vbll_heads import Cov, VariationalLinear, _refit_scaled
from alkit.types import Prediction

_SQRT_2PI = math.sqrt(2 * math.pi)


def pinball(r: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """rho_tau(r) = max(tau r, (tau - 1) r)."""
    return torch.maximum(tau * r, (tau - 1) * r)


def expected_pinball(m: torch.Tensor, v: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
    """E[rho_tau(r)] for r ~ N(m, v), elementwise (uq-math §3)."""
    s = v.clamp_min(1e-12).sqrt()
    u = m / s
    pdf = torch.exp(-0.5 * u * u) / _SQRT_2PI
    return m * (tau - 1 + torch.special.ndtr(u)) + s * pdf


def _interp_levels(q_sorted_n_K: torch.Tensor, tau_K: torch.Tensor, level: float) -> torch.Tensor:
    """The level-quantile of the (rearranged) mean quantile curve by linear interpolation, (n,)."""
    k = int(torch.searchsorted(tau_K, torch.tensor([level], dtype=tau_K.dtype)).clamp(1, len(tau_K) - 1))
    w = float((level - tau_K[k - 1]) / (tau_K[k] - tau_K[k - 1]))
    return q_sorted_n_K[:, k - 1] + w * (q_sorted_n_K[:, k] - q_sorted_n_K[:, k - 1])


class QuantileHead(nn.Module):
    """K VBLL quantile heads at levels tau_k = (k - 1/2)/K on standardised targets."""

    def __init__(
        self, d: int, K: int = 19, *, cov: Cov = "dense", prior_var: float = 1.0, reg_weight: float = 1.0,
        y_N: torch.Tensor | None = None, n_draws: int = 32,
    ) -> None:
        super().__init__()
        self.K = K
        self.register_buffer("tau_K", (torch.arange(K, dtype=torch.float32) + 0.5) / K)
        self.layer = VariationalLinear(d, K, cov, prior_var, bias=True)
        self.reg_weight = reg_weight
        self.n_draws = n_draws
        y = y_N.float() if y_N is not None else torch.randn(1000)
        with torch.no_grad():
            q = torch.quantile(y, self.tau_K)
            self.layer.bias.copy_(q)
            beta = pinball(y[:, None] - q, self.tau_K).mean(0).clamp_min(1e-3)
        # ALD scale initialised at the pinball loss of the unconditional quantiles (uq-math §0)
        self.log_beta = nn.Parameter(beta.log())
        self.register_buffer("support", torch.stack([y.min(), y.max()]))

    def forward(self, phi_n_d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean quantiles (n, K), epistemic variances (n, K)), standardised units."""
        return self.layer.mean(phi_n_d), self.layer.variance(phi_n_d)

    def loss(self, phi_n_d: torch.Tensor, y_n: torch.Tensor) -> torch.Tensor:
        q, v = self(phi_n_d)
        e = expected_pinball(y_n[:, None] - q, v, self.tau_K)
        beta = self.log_beta.exp()
        nll = (e / beta + self.log_beta).sum(1).mean()
        return nll + self.reg_weight * self.layer.kl()

    @torch.no_grad()
    def refit(self, phi_N_d: torch.Tensor, y_N: torch.Tensor, n_iter: int = 30, tol: float = 1e-4) -> int:
        """ELBO-stationary S for fixed features and mean: w_ik = -2 d(ELL)/dv = pdf(m/s)/(s beta_k)."""
        m = (y_N.double()[:, None] - self.layer.mean(phi_N_d.to(self.layer.W_mean.dtype)).double())
        beta = self.log_beta.exp().double()

        def weights(v: torch.Tensor) -> torch.Tensor:
            s = v.clamp_min(1e-12).sqrt()
            return torch.exp(-0.5 * (m / s) ** 2) / (_SQRT_2PI * s * beta)

        return _refit_scaled(self.layer, phi_N_d, weights, self.reg_weight, n_iter=n_iter, tol=tol)

    @property
    def noise_var(self) -> torch.Tensor:
        """ALD variance 2 beta^2 (1 - 2 tau + 2 tau^2)/(tau^2 (1 - tau)^2) would blow up at the
        extreme levels; for batch information the strategies use the pinball scale beta^2."""
        return self.log_beta.exp() ** 2

    @torch.no_grad()
    def distribution(
        self, q_n_K: torch.Tensor, v_n_K: torch.Tensor, shift: float, scale: float, n_draws: int | None = None
    ) -> PiecewiseLinearMixture:
        """Average of J piecewise-linear CDFs through sorted posterior draws of the quantiles
        (J = 0: the rearranged mean quantiles only)."""
        n, K = q_n_K.shape
        J = self.n_draws if n_draws is None else n_draws
        if J > 0:
            gen = torch.Generator().manual_seed(0)
            eps_J_K = torch.randn(J, K, generator=gen, dtype=torch.float64)
            draws = q_n_K.double()[:, None, :] + v_n_K.double().clamp_min(0).sqrt()[:, None, :] * eps_J_K
        else:
            draws = q_n_K.double()[:, None, :]
        lo, hi = float(self.support[0]), float(self.support[1])
        draws = draws.sort(-1).values.clamp(lo, hi)
        ends = torch.tensor([lo, hi], dtype=torch.float64)
        knots = torch.cat([ends[0].expand(n, draws.shape[1], 1), draws, ends[1].expand(n, draws.shape[1], 1)], -1)
        levels = torch.cat([torch.zeros(1), self.tau_K.double().cpu(), torch.ones(1)]).double()
        return PiecewiseLinearMixture(shift + scale * knots, levels)

    @torch.no_grad()
    def predict(self, phi_n_d: torch.Tensor, shift: float, scale: float, **_: object) -> Prediction:
        q, v = self(phi_n_d)
        dist = QuantilePredictive(self, q, v, shift, scale)
        q_mean = q.mean(1, keepdim=True)
        epi = v.mean(1) * scale**2
        alea = ((q - q_mean) ** 2).mean(1) * scale**2
        q_sorted, order = q.sort(1)
        q_sorted = q_sorted.double()
        median = _interp_levels(q_sorted, self.tau_K.double(), 0.5)
        # the head's quantiles rearranged (sorted), as the distribution and the median read them: the raw
        # outputs can cross at small N (206 of 342 items on a black-box check), which no quantile may;
        # var_n_K in the same order, so column k of both is the k-th quantile (level tau_K[k])
        extras = {
            "quantiles_n_K": (shift + scale * q_sorted).float(), "var_n_K": v.gather(1, order) * scale**2,
            "median_n": (shift + scale * median).float(),
        }
        mean_n = self.distribution(q, v, shift, scale, n_draws=0).mean()
        return Prediction(epi.float(), alea.float(), phi_n_d, mean_n=mean_n.float(), dist=dist, extras=extras)


class QuantilePredictive:
    """QR-VBLL's predictive distribution, built on first use: scoring a pool needs only the
    epistemic variances, so the O(J K log K) per-item CDF reconstruction is paid only by callers
    that evaluate the distribution (metrics).  ``Prediction.mean_n`` is the mean of the rearranged
    mean-quantile CDF (J = 0), ``mean()`` that of the posterior-averaged one."""

    def __init__(self, head: QuantileHead, q_n_K: torch.Tensor, v_n_K: torch.Tensor, shift: float, scale: float):
        self._args = (head, q_n_K, v_n_K, shift, scale)
        self._mix: PiecewiseLinearMixture | None = None

    @property
    def mixture(self) -> PiecewiseLinearMixture:
        if self._mix is None:
            head, q, v, shift, scale = self._args
            self._mix = head.distribution(q, v, shift, scale)
        return self._mix

    def mean(self) -> torch.Tensor:
        return self.mixture.mean()

    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:
        return self.mixture.cdf(y_n)

    def nll(self, y_n: torch.Tensor) -> torch.Tensor:
        return self.mixture.nll(y_n)

    def crps(self, y_n: torch.Tensor) -> torch.Tensor:
        return self.mixture.crps(y_n)

    def density(self, y_n: torch.Tensor) -> torch.Tensor:
        return self.mixture.density(y_n)

    def quantile(self, tau: float) -> torch.Tensor:
        return self.mixture.quantile(tau)
