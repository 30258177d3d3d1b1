"""Predictive distributions: entropy of categorical ones, and regression ones with closed-form
NLL and CRPS."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_LOG_2PI = math.log(2 * math.pi)


def entropy_n(probs_n_C: torch.Tensor) -> torch.Tensor:
    """H[p] per row (last axis) in nats, in the input's dtype; 0 log 0 = 0 (xlogy).  The one
    entropy of the package: learners, acquisitions and BatchBALD all use it."""
    return -torch.special.xlogy(probs_n_C, probs_n_C).sum(-1)


def logit_entropy_n(logits_n_C: torch.Tensor) -> torch.Tensor:
    """H[softmax(z)] per row from the logits, = log sum e^u - sum e^u u / sum e^u with u = z - max z:
    one exponential per entry and one log per row (entropy_n(softmax(z)) takes a log per entry too)."""
    u = logits_n_C - logits_n_C.amax(-1, keepdim=True)
    e = u.exp()
    s = e.sum(-1)
    return s.log() - (e * u).sum(-1) / s


def member_parts(member_probs_n_M_C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(BALD, expected entropy), float64 (n,), from one pass over the member entropies."""
    p = torch.as_tensor(member_probs_n_M_C, dtype=torch.float64)
    if p.ndim != 3:
        raise ValueError(f"member_probs must have shape (n, M, C), got {tuple(p.shape)}")
    expected_n = entropy_n(p).mean(-1)
    return (entropy_n(p.mean(1)) - expected_n).clamp_min(0.0), expected_n


def member_bald_n(member_probs_n_M_C: torch.Tensor) -> torch.Tensor:
    """I(y; member) = H[mean_j p_j] - (1/M) sum_j H[p_j] of M equally weighted members, float64
    (n,), >= 0: zero exactly when all members agree (the clamp removes the ~1e-16 rounding)."""
    return member_parts(member_probs_n_M_C)[0]


def expected_entropy_n(member_probs_n_M_C: torch.Tensor) -> torch.Tensor:
    """Aleatoric part of the members' predictive: (1/M) sum_j H[p_j], float64 (n,)."""
    return member_parts(member_probs_n_M_C)[1]


def positive(var: torch.Tensor) -> torch.Tensor:
    """A variance kept above 0 by the dtype's smallest normal number, not by a floor in target units:
    1e-12 was a standard deviation of 1e-6 whatever the target's unit, so a target in 1e-7 units had
    its predictive spread, CRPS and NLL set by the floor (a black-box check)."""
    return var.clamp_min(torch.finfo(var.dtype).tiny)


@dataclass
class GaussianPredictive:
    """y ~ N(mean_n, var_n) per item."""

    mean_n: torch.Tensor
    var_n: torch.Tensor

    def mean(self) -> torch.Tensor:
        return self.mean_n

    def std(self) -> torch.Tensor:
        return positive(self.var_n).sqrt()

    def nll(self, y_n: torch.Tensor) -> torch.Tensor:
        var = positive(self.var_n)
        return 0.5 * (_LOG_2PI + var.log() + (y_n - self.mean_n) ** 2 / var)

    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:
        return torch.special.ndtr((y_n - self.mean_n) / self.std())

    def quantile(self, tau: float) -> torch.Tensor:
        """The tau-quantile of each item, (n,): mean + sd Phi^-1(tau) (every head answers quantile)."""
        if not 0.0 < float(tau) < 1.0:
            raise ValueError(f"quantile level must lie strictly between 0 and 1, got {tau!r}")
        z = torch.special.ndtri(torch.tensor(float(tau), dtype=torch.float64)).to(self.mean_n.dtype)
        return self.mean_n + self.std() * z

    def crps(self, y_n: torch.Tensor) -> torch.Tensor:
        """Closed form (Gneiting & Raftery 2007): s [z(2Phi(z)-1) + 2 pdf(z) - 1/sqrt(pi)]."""
        s = self.std()
        z = (y_n - self.mean_n) / s
        pdf = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
        return s * (z * (2 * torch.special.ndtr(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))

    def affine(self, shift: float, scale: float) -> "GaussianPredictive":
        """The distribution of shift + scale * Y (undo target standardisation)."""
        return GaussianPredictive(self.mean_n * scale + shift, self.var_n * scale**2)
