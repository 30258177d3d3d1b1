"""Predictive distributions: entropy of categorical ones, and regression ones with closed-form
NLL and CRPS."""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import torch

_LOG_2PI = math.log(2 * math.pi)

_Method = TypeVar("_Method", bound=Callable[..., torch.Tensor])


def as_targets(y_n: Any, n: int) -> torch.Tensor:
    """``y_n`` as an (n,) floating tensor: a tensor (its dtype kept), a NumPy array, a list or one number for every
    item; an (n, 1) column is read as (n,).  A ValueError names y otherwise: an (n, 1) target was broadcast to an
    (n, n) result and averaged without a word, and NumPy targets failed inside torch (black-box checks)."""
    if not torch.is_tensor(y_n):
        try:
            y_n = torch.as_tensor(np.asarray(y_n, dtype=np.float64))
        except (TypeError, ValueError):
            raise ValueError(f"y must be numbers, one per item; got {type(y_n).__name__}") from None
    y = y_n if y_n.is_floating_point() else y_n.double()
    if y.ndim == 0:
        return y.expand(n)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"y must hold one value per item, shape ({n},) (or ({n}, 1)), got shape {tuple(y.shape)}")
    return y


def per_item(count: Callable[[Any], int]) -> Callable[[_Method], _Method]:
    """A method of y (nll, cdf, crps, density) that takes any target ``as_targets`` reads and answers NaN where y
    is NaN, whatever the head (the quantile and bucket heads gave a finite NLL and a CDF of 1 for a NaN target
    where the Gaussian head gave NaN).  ``count``: the distribution's number of items."""
    def wrap(method: _Method) -> _Method:
        @functools.wraps(method)
        def checked(self: Any, y_n: Any) -> torch.Tensor:
            y = as_targets(y_n, count(self))
            out = method(self, y)
            missing = torch.isnan(y)
            return torch.where(missing, torch.full_like(out, float("nan")), out) if bool(missing.any()) else out
        return checked  # type: ignore[return-value]
    return wrap


def quantile_level(tau: Any) -> float:
    """One quantile level strictly between 0 and 1, else a ValueError (every head alike: the quantile and bucket
    heads returned their support's bounds for 1.5, -0.1 or NaN)."""
    try:
        value = float(tau)
    except (TypeError, ValueError):
        raise ValueError(f"the quantile level must be one number strictly between 0 and 1, got {tau!r}") from None
    if not 0.0 < value < 1.0:  # NaN fails here too
        raise ValueError(f"quantile level must lie strictly between 0 and 1, got {tau!r}")
    return value


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

    @per_item(lambda d: len(d.mean_n))
    def nll(self, y_n: torch.Tensor) -> torch.Tensor:
        var = positive(self.var_n)
        return 0.5 * (_LOG_2PI + var.log() + (y_n - self.mean_n) ** 2 / var)

    @per_item(lambda d: len(d.mean_n))
    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:
        return torch.special.ndtr((y_n - self.mean_n) / self.std())

    def quantile(self, tau: float) -> torch.Tensor:
        """The tau-quantile of each item, (n,): mean + sd Phi^-1(tau) (every head answers quantile)."""
        z = torch.special.ndtri(torch.tensor(quantile_level(tau), dtype=torch.float64)).to(self.mean_n.dtype)
        return self.mean_n + self.std() * z

    @per_item(lambda d: len(d.mean_n))
    def crps(self, y_n: torch.Tensor) -> torch.Tensor:
        """Closed form (Gneiting & Raftery 2007): s [z(2Phi(z)-1) + 2 pdf(z) - 1/sqrt(pi)]."""
        s = self.std()
        z = (y_n - self.mean_n) / s
        pdf = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
        return s * (z * (2 * torch.special.ndtr(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))

    def affine(self, shift: float, scale: float) -> "GaussianPredictive":
        """The distribution of shift + scale * Y (undo target standardisation)."""
        return GaussianPredictive(self.mean_n * scale + shift, self.var_n * scale**2)
