"""Distance-preserving MLP backbone: the feature map every last-layer scorer relies on.

Why: a last-layer variance phi^T S phi only means "far from the labeled data" when distances in
input space survive into phi (uq-math.md §0).  Residual blocks h + c*act(W h) with ||W||_2 <= 1
(spectral normalisation) and c < 1 are bi-Lipschitz, so distinct inputs keep distinct features;
an optional fixed random-Fourier or L2 feature map keeps ||phi|| from collapsing off-distribution.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from torch import nn
from torch.nn.utils.parametrizations import spectral_norm

FeatureMap = Literal["none", "rff", "l2"]


class _ResidualBlock(nn.Module):
    def __init__(self, width: int, coeff: float, use_sn: bool, dropout: float) -> None:
        super().__init__()
        linear = nn.Linear(width, width)
        self.linear = spectral_norm(linear) if use_sn else linear
        self.coeff = coeff if use_sn else 1.0
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, h_n_w: torch.Tensor) -> torch.Tensor:
        return h_n_w + self.coeff * self.dropout(torch.relu(self.linear(h_n_w)))


class ResidualMLP(nn.Module):
    """x (n, f) -> phi (n, out_dim).

    Inputs are standardised with statistics fixed at fit time (``set_input_stats``), projected to
    ``width``, passed through ``depth`` spectral-normalised residual blocks, then through the
    feature map: 'none' (identity), 'l2' (phi / ||phi|| * sqrt(width)), or 'rff'
    (sqrt(2/D) cos(Omega h + b), fixed random Omega ~ N(0, 1/ell^2), as in SNGP/DUE).
    """

    def __init__(
        self,
        n_features: int,
        width: int = 128,
        depth: int = 2,
        *,
        spectral: bool = True,
        sn_coeff: float = 0.95,
        feature_map: FeatureMap = "none",
        rff_dim: int = 256,
        rff_lengthscale: float = 2.0,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        if n_features < 1:
            raise ValueError("n_features must be positive")
        self.n_features = n_features
        self.register_buffer("x_mean", torch.zeros(n_features))
        self.register_buffer("x_std", torch.ones(n_features))
        self.stem = nn.Linear(n_features, width)
        self.blocks = nn.ModuleList(
            _ResidualBlock(width, sn_coeff, spectral, dropout) for _ in range(depth)
        )
        self.feature_map = feature_map
        if feature_map == "rff":
            gen = torch.Generator().manual_seed(0x5EED)
            self.register_buffer("rff_W", torch.randn(width, rff_dim, generator=gen) / rff_lengthscale)
            self.register_buffer("rff_b", torch.rand(rff_dim, generator=gen) * 2 * math.pi)
            self.out_dim = rff_dim
        elif feature_map in ("none", "l2"):
            self.out_dim = width
        else:
            raise ValueError(f"unknown feature_map {feature_map!r}; use none, rff or l2")

    @torch.no_grad()
    def set_input_stats(self, X_n_f: torch.Tensor) -> None:
        """Fix the input standardisation from the training inputs (constant columns keep std 1)."""
        self.x_mean.copy_(X_n_f.mean(0))
        std = X_n_f.std(0) if X_n_f.shape[0] > 1 else torch.ones_like(self.x_std)
        self.x_std.copy_(torch.where(std > 1e-8, std, torch.ones_like(std)))

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        h = self.stem((x_n_f - self.x_mean) / self.x_std)
        for block in self.blocks:
            h = block(h)
        if self.feature_map == "rff":
            return math.sqrt(2.0 / self.out_dim) * torch.cos(h @ self.rff_W + self.rff_b)
        if self.feature_map == "l2":
            return h / h.norm(dim=1, keepdim=True).clamp_min(1e-12) * math.sqrt(self.out_dim)
        return torch.relu(h)
