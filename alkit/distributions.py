"""Predictive distributions for regression targets, all with closed-form NLL and CRPS."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

_LOG_2PI = math.log(2 * math.pi)


@dataclass
class GaussianPredictive:
    """y ~ N(mean_n, var_n) per item."""

    mean_n: torch.Tensor
    var_n: torch.Tensor

    def mean(self) -> torch.Tensor:
        return self.mean_n

    def std(self) -> torch.Tensor:
        return self.var_n.clamp_min(1e-12).sqrt()

    def nll(self, y_n: torch.Tensor) -> torch.Tensor:
        var = self.var_n.clamp_min(1e-12)
        return 0.5 * (_LOG_2PI + var.log() + (y_n - self.mean_n) ** 2 / var)

    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:
        return torch.special.ndtr((y_n - self.mean_n) / self.std())

    def crps(self, y_n: torch.Tensor) -> torch.Tensor:
        """Closed form (Gneiting & Raftery 2007): s [z(2Phi(z)-1) + 2 pdf(z) - 1/sqrt(pi)]."""
        s = self.std()
        z = (y_n - self.mean_n) / s
        pdf = torch.exp(-0.5 * z**2) / math.sqrt(2 * math.pi)
        return s * (z * (2 * torch.special.ndtr(z) - 1) + 2 * pdf - 1 / math.sqrt(math.pi))

    def affine(self, shift: float, scale: float) -> "GaussianPredictive":
        """The distribution of shift + scale * Y (undo target standardisation)."""
        return GaussianPredictive(self.mean_n * scale + shift, self.var_n * scale**2)
