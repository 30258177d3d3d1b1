"""SVE: Singular Value Ensemble (Turkoglu et al., ICML 2026; uq-math.md §8).

Why: an implicit ensemble whose members share the frozen singular vectors of a trained network and
differ only in their singular values, biases and heads, so its trainable overhead per layer is
M*r + M*m scalars instead of M full copies.  It is the cheap-to-train ensemble baseline.

Choices (the paper fine-tunes a pretrained foundation model; alkit has no such model):
- The "pretrained" network is an MLPLearner fitted on the labeled set (``pretrain`` config).  Its
  stem and residual-block linear layers are factored by thin SVD, W = U diag(s) V^T; U, V are
  frozen buffers stored once per layer; member j gets s_j = s (1 + eps_j), eps_j ~ N(0, sigma^2),
  and b_j = b + eta_j with eta_j ~ N(0, (sigma |b|)^2) (the bias-noise scale is not published).
- Spectral normalisation: the base blocks are spectral-normalised, so their SVD is taken of the
  normalised weight (top singular value ~1).  With U, V orthonormal, ||W_j||_2 = max(s_j) exactly,
  so the member's Lipschitz bound is enforced without power iteration by
  s_j <- relu(s_j) / max(1, max relu(s_j)); the residual coefficient is kept.  Non-SN layers (the
  stem) only get the paper's clamp s_j >= 0.
- Heads: one freshly initialised linear head per member (seeded), as in the paper where the heads
  are new parameters for the downstream task; they are the main source of diversity here.
- Training: all members jointly, the mean member loss, by the shared loop; singular values are
  excluded from weight decay (decay would pull them towards 0, not towards the base network).
- Forward: y_j = U (s_j * (V^T x)) + b_j; V^T x is computed once when the input is shared by the
  members (the stem).  For full-rank square layers the factored product costs 2x a dense one, so
  ``forward_mode='auto'`` (the default) builds the dense W_j transiently per call where that needs
  fewer flops; nothing per member is stored beyond s_j and b_j.  'factored' forces the paper's form.
"""

from __future__ import annotations

import math
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from alkit.learners.bald import classification_prediction, member_seeds, regression_from_outputs
from alkit.models.backbone import BackboneConfig, ConvBackbone, InputSpec, ResidualMLP
from alkit.models.learner import MLPLearner, mlp_train_config, training_arrays
from alkit.models.train import TrainConfig, to_tensor, train_module
from alkit.types import GaussianLastLayer, Prediction, Task

ForwardMode = Literal["auto", "factored", "dense"]


class SVELinear(nn.Module):
    """M members of one linear layer (out m, in n, rank r) sharing frozen U (m, r) and V^T (r, n).

    Trainable: ``s_M_r`` and ``b_M_m``.  Input (n_items, n) shared by all members or
    (M, n_items, n) per member; output (M, n_items, m).
    """

    def __init__(
        self,
        weight_m_n: torch.Tensor,
        bias_m: torch.Tensor,
        n_members: int,
        sigma_init: float,
        gen: torch.Generator,
        *,
        lipschitz_cap: bool,
    ) -> None:
        super().__init__()
        U_m_r, s_r, Vh_r_n = torch.linalg.svd(weight_m_n.detach().double(), full_matrices=False)
        self.register_buffer("U_m_r", U_m_r.float())
        self.register_buffer("Vh_r_n", Vh_r_n.float())
        r, m = s_r.shape[0], bias_m.shape[0]
        eps_M_r = torch.randn(n_members, r, generator=gen, dtype=torch.float64) * sigma_init
        eta_M_m = torch.randn(n_members, m, generator=gen) * sigma_init * bias_m.detach().abs()
        self.s_M_r = nn.Parameter((s_r[None, :] * (1 + eps_M_r)).float())
        self.b_M_m = nn.Parameter(bias_m.detach()[None, :] + eta_M_m)
        self.lipschitz_cap = lipschitz_cap

    def singular_values(self) -> torch.Tensor:
        """The members' effective singular values (M, r): clamped >= 0, capped at 1 for SN layers."""
        s = torch.relu(self.s_M_r)
        if self.lipschitz_cap:
            s = s / s.amax(dim=1, keepdim=True).clamp_min(1.0)
        return s

    def forward(self, x: torch.Tensor, mode: ForwardMode = "factored") -> torch.Tensor:
        s_M_r = self.singular_values()
        m, r, n = self.U_m_r.shape[0], self.U_m_r.shape[1], self.Vh_r_n.shape[1]
        n_members = s_M_r.shape[0]
        shared = x.ndim == 2
        if mode == "auto":
            factored_flops = r * n * (1 if shared else n_members) + n_members * r * m
            mode = "factored" if factored_flops < n_members * m * n else "dense"
        bias_M_1_m = self.b_M_m[:, None, :]
        if mode == "dense":
            W_M_m_n = (self.U_m_r[None] * s_M_r[:, None, :]) @ self.Vh_r_n
            x_M = x.expand(n_members, -1, -1) if shared else x
            return torch.baddbmm(bias_M_1_m, x_M, W_M_m_n.transpose(1, 2))
        z = x @ self.Vh_r_n.T  # (n_items, r) shared, or (M, n_items, r)
        Ut_M_r_m = self.U_m_r.T.expand(n_members, -1, -1)
        return torch.baddbmm(bias_M_1_m, z * s_M_r[:, None, :], Ut_M_r_m)


class SVENetwork(nn.Module):
    """The SVE version of a fitted ResidualMLP (or ConvBackbone) + head: x (n, f) -> outputs
    (M, n, k), features (M, n, d).  An image backbone's frozen convolution has no weights to
    decompose: it is kept as it is and the members differ in the MLP on its pooled maps."""

    def __init__(
        self, backbone: ResidualMLP | ConvBackbone, head: nn.Linear, n_members: int, sigma_init: float, seed: int
    ) -> None:
        super().__init__()
        backbone.eval()
        self.conv: nn.Module | None = None
        if isinstance(backbone, ConvBackbone):
            self.conv, backbone = backbone.conv, backbone.mlp
        gen = torch.Generator().manual_seed(seed)
        self.register_buffer("x_mean", backbone.x_mean.clone())
        self.register_buffer("x_std", backbone.x_std.clone())
        self.stem = SVELinear(
            backbone.stem.weight, backbone.stem.bias, n_members, sigma_init, gen, lipschitz_cap=False
        )
        self.blocks = nn.ModuleList()
        self.coeffs: list[float] = []
        with torch.no_grad():
            for block in backbone.blocks:
                lin = block.linear
                self.blocks.append(
                    SVELinear(
                        block.normalised_weight(), lin.bias, n_members, sigma_init, gen,
                        lipschitz_cap=block.use_sn,
                    )
                )
                self.coeffs.append(float(block.coeff))
        self.feature_map = backbone.feature_map
        if self.feature_map == "rff":
            self.register_buffer("rff_W", backbone.rff_W.clone())
            self.register_buffer("rff_b", backbone.rff_b.clone())
        d, k = head.in_features, head.out_features
        bound = 1.0 / math.sqrt(d)  # nn.Linear's default init, drawn from the seeded generator
        self.head_W_M_k_d = nn.Parameter((torch.rand(n_members, k, d, generator=gen) * 2 - 1) * bound)
        self.head_b_M_k = nn.Parameter((torch.rand(n_members, k, generator=gen) * 2 - 1) * bound)
        self.mode: ForwardMode = "factored"

    @torch.no_grad()
    def fixed(self, x_n_f: torch.Tensor) -> torch.Tensor:
        """The part without trained weights, shared by the members: an image backbone's frozen
        convolution (identity otherwise).  The training loop computes it once per fit, not per step."""
        return x_n_f if self.conv is None else self.conv(x_n_f)

    def features(self, x_n_f: torch.Tensor) -> torch.Tensor:
        """Per-member last-layer features (M, n, d); mirrors ResidualMLP.forward per member."""
        return self.trainable_features(self.fixed(x_n_f))

    def trainable_features(self, z_n_f: torch.Tensor) -> torch.Tensor:
        """``features`` from ``fixed``'s output.

        Without autograd the (M, n, width) activations are updated in place: scoring a chunk is
        memory-bound, and every fresh M-times-larger temporary costs as much as a matmul."""
        inplace = not torch.is_grad_enabled()
        h = self.stem((z_n_f - self.x_mean) / self.x_std, self.mode)
        for block, coeff in zip(self.blocks, self.coeffs):
            if inplace:
                h.add_(torch.relu_(block(h, self.mode)), alpha=coeff)
            else:
                h = torch.add(h, torch.relu(block(h, self.mode)), alpha=coeff)
        if self.feature_map == "rff":
            return math.sqrt(2.0 / self.rff_W.shape[1]) * torch.cos(h @ self.rff_W + self.rff_b)
        if self.feature_map == "l2":
            return h / h.norm(dim=-1, keepdim=True).clamp_min(1e-12) * math.sqrt(h.shape[-1])
        return torch.relu_(h) if inplace else torch.relu(h)

    def forward(self, x_n_f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return self.from_fixed(self.fixed(x_n_f))

    def from_fixed(self, z_n_f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``forward`` from ``fixed``'s output: outputs (M, n, k) and features (M, n, d)."""
        phi_M_n_d = self.trainable_features(z_n_f)
        out_M_n_k = phi_M_n_d @ self.head_W_M_k_d.transpose(1, 2) + self.head_b_M_k[:, None, :]
        return out_M_n_k, phi_M_n_d


def sve_no_decay(name: str, *, head_prior: bool) -> bool:
    """The SVE parameters the weight prior leaves alone: the singular values (decay would pull them
    towards 0, not towards the base network) and every bias.  The members' biases are stacked
    (M, m) matrices, so the training loop's rule (decay what has more than one axis) would take
    them for weights: on 20 tweet labels that decay cost 0.07 accuracy against the base network.
    With ``head_prior`` False the member heads' weights go free as well, as in MLPLearner."""
    if name.endswith(("s_M_r", "b_M_m", "head_b_M_k")):
        return True
    return not head_prior and name.startswith("head_")


class SVELearner:
    """Pretrain an MLPLearner, convert it to an M-member SVE, train the members jointly.

    ``Prediction.epistemic_n`` is BALD (classification) or the variance of member means
    (regression); ``extras`` as in the deep ensemble.  The embedding is the members' mean feature
    (members share U and V, so their feature spaces are aligned).
    """

    def __init__(
        self,
        task: Task,
        n_classes: int | None = None,
        *,
        M: int = 4,
        sigma_init: float = 0.01,
        backbone: BackboneConfig | None = None,
        train: TrainConfig | None = None,
        input: InputSpec | None = None,
        pretrain: TrainConfig | None = None,
        forward_mode: ForwardMode = "auto",
        **backbone_options: Any,
    ) -> None:
        if M < 2:
            raise ValueError(f"an ensemble needs M >= 2 members, got {M}")
        if sigma_init < 0:
            raise ValueError(f"sigma_init must be >= 0, got {sigma_init}")
        config = BackboneConfig.of(backbone, **backbone_options)
        if config.depth is not None and config.depth < 0:
            raise ValueError(f"SVE scales the singular values of the network's hidden layers; depth {config.depth} "
                             "(a linear model) has none")
        self.task = task
        self.M, self.sigma_init, self.forward_mode = M, sigma_init, forward_mode
        self.train_config = train or TrainConfig()
        self.base = MLPLearner(task, n_classes, backbone=config,
                               train=pretrain or train, input=input, capacity="fixed", residual_choice=False)
        self.net: SVENetwork | None = None

    def _loss(self, z_b_f: torch.Tensor, y_b: torch.Tensor) -> torch.Tensor:
        """Mean member loss on ``SVENetwork.fixed`` outputs: every member sees the same minibatch
        (uq-math.md §8)."""
        out_M_b_k, _ = self.net.from_fixed(z_b_f)
        M, b, k = out_M_b_k.shape
        if self.task == "classification":
            return F.cross_entropy(out_M_b_k.reshape(M * b, k), y_b.long().repeat(M))
        y_Mb = y_b.repeat(M)
        flat = out_M_b_k.reshape(M * b, k)
        return F.gaussian_nll_loss(flat[:, 0], y_Mb, flat[:, 1].exp().clamp_min(1e-6), full=True)

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        X_n_f, y_n = training_arrays(X_n_f, y_n, self.task, getattr(self.base, "n_classes", None), seed=seed,
                                     names=getattr(self, "feature_names", None))
        pre_seed, init_seed, train_seed = member_seeds(seed, 3)
        pre = self.base.fit(X_n_f, y_n, seed=pre_seed)
        self.net = SVENetwork(self.base.backbone, self.base.head, self.M, self.sigma_init, init_seed)
        self.net.mode = "factored"
        X = to_tensor(X_n_f)
        y = torch.as_tensor(y_n)
        y = self.base.scaler.forward(y.float()) if self.task == "regression" else y.long()
        report = train_module(
            self.net, self._loss, self.net.fixed(X), y, seed=train_seed,
            config=mlp_train_config(self.train_config, self.task, self.base.input,
                                    self.base.backbone_config.depth_for(self.base.input)),
            no_decay=lambda name: sve_no_decay(name, head_prior=self.base.head_prior),
        )
        self.net.mode = self.forward_mode
        report["pretrain_epochs"] = pre["epochs"]
        report["members"] = float(self.M)
        return report

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if self.net is None:
            raise RuntimeError("fit the learner before predicting")
        self.net.eval()
        out_M_n_k, phi_M_n_d = self.net(to_tensor(X_n_f))
        embedding = phi_M_n_d.mean(0)
        if self.task == "classification":
            return classification_prediction(out_M_n_k.softmax(-1).transpose(0, 1), embedding)
        return regression_from_outputs(out_M_n_k, self.base.scaler, embedding)

    def posterior(self) -> GaussianLastLayer | None:
        return None
