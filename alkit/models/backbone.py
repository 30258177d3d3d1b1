"""Backbones: the feature map every last-layer scorer relies on, and what is known of the inputs.

Why distance-preserving: a last-layer variance phi^T S phi only means "far from the labeled data"
when distances in input space survive into phi (uq-math.md §0).  Residual blocks h + c*act(W h)
with ||W||_2 <= 1 (spectral normalisation) and c < 1 are bi-Lipschitz, so distinct inputs keep
distinct features; an optional fixed random-Fourier or L2 feature map keeps ||phi|| from
collapsing off-distribution.

Why ``InputSpec``: the pool is data.  Its items are known before any label, so the input
standardisation comes from every pool item (never from the test split, never from the handful
of labelled items alone), and image-shaped features (``alkit init --image-shape``) get a small
convolutional stem instead of a dense one.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

FeatureMap = Literal["none", "rff", "l2"]


@dataclass(frozen=True)
class InputSpec:
    """What is known about the inputs before any label is bought.

    ``mean_f`` / ``std_f``: per-feature statistics over the whole pool (labelled or not);
    ``image_shape``: (C, H, W) when the feature vector is an image in row-major order;
    ``pool_sample_n_f``: a seeded sample of pool inputs for learners that use unlabeled inputs;
    ``embedding``: the features are a pretrained encoder's vectors (a list column, --text-col,
    --image-col), which the default backbone treats as already-learnt features (``BackboneConfig.depth``);
    ``stem_precomputed``: the inputs are this spec's PatchConv outputs, computed once per project
    (alkit/stem_features.py), not pixels, so the image backbone skips its frozen stem.
    """

    mean_f: np.ndarray | None = None
    std_f: np.ndarray | None = None
    image_shape: tuple[int, int, int] | None = None
    patch_filters: np.ndarray | None = None  # (k, C, p, p) frozen first-layer filters (PatchConv)
    conv_mean_f: np.ndarray | None = None  # pool statistics of the PatchConv features
    conv_std_f: np.ndarray | None = None
    pool_sample_n_f: np.ndarray | None = None  # a seeded sample of pool inputs (CSD's unlabeled contexts)
    patch_pool: int | None = None  # PatchConv's average-pool size; None: by image size (PatchConv.pool_for)
    embedding: bool = False  # features from a pretrained encoder, not raw measurements
    stem_precomputed: bool = False  # the inputs are already PatchConv's outputs (alkit/stem_features.py)

    def __post_init__(self) -> None:
        if (self.mean_f is None) != (self.std_f is None):
            raise ValueError("give both mean_f and std_f, or neither")
        if self.image_shape is not None and (len(self.image_shape) != 3 or min(self.image_shape) < 1):
            raise ValueError(f"image_shape must be (C, H, W) with positive sizes, got {self.image_shape}")


def pool_input_spec(X_n_f: np.ndarray, image_shape: tuple[int, int, int] | None = None, *,
                    mean_f: np.ndarray | None = None, std_f: np.ndarray | None = None,
                    seed: int = 0, n_filters: int = 16, embedding: bool = False, pool: int | None = None,
                    patch: int | None = None) -> InputSpec:
    """An InputSpec from the pool: per-feature statistics (``mean_f``/``std_f`` when the caller
    streamed them over the whole pool, else those of ``X_n_f``, the pool or a sample of it);
    image-shaped pools also get their PatchConv filters and feature statistics from ``X_n_f``
    (``pool``: the convolution's average-pool size, ``patch`` the filters' side, both by image
    size unless given; at most ``n_filters`` filters)."""
    X = np.asarray(X_n_f, dtype=np.float64)
    spec = InputSpec(X.mean(0) if mean_f is None else np.asarray(mean_f, dtype=np.float64),
                     X.std(0) if std_f is None else np.asarray(std_f, dtype=np.float64), image_shape,
                     embedding=embedding)
    if image_shape is None:
        return spec
    conv = PatchConv.from_pool(X_n_f, image_shape, spec.mean_f, spec.std_f, n_filters=n_filters, patch=patch,
                               seed=seed, pool=pool)
    Z = conv.outputs(X_n_f).astype(np.float64)
    return InputSpec(spec.mean_f, spec.std_f, image_shape, conv.weight.numpy(), Z.mean(0), Z.std(0), patch_pool=pool)


# Images with a side below this count as small: 3 x 3 stem filters (PatchConv.patch_for) and no
# residual block on the stem's maps (BackboneConfig.depth_for).
SMALL_IMAGE_SIDE = 16


class PatchConv(nn.Module):
    """A frozen convolution whose filters are the whitened principal components of the pool's
    image patches (as PCANet / Coates & Ng), then ReLU of both signs and average pooling.

    Why frozen and from the pool: 20-300 labels cannot train convolution filters (a trained
    5x5/3x3 CNN fitted from scratch scored 0.74 at 300 Fashion-MNIST labels against 0.81 for a
    logistic regression on these features; benchmarks/results/learner_parity_dev.md), while the
    pool's patches are free and teach edges and strokes; the filters are fixed per run, so the
    backbone stays a deterministic function and each fit trains only the dense layers on top.
    Output: 2k maps average-pooled (``pool_for``: to about 7x7 maps), flattened.
    """

    def __init__(self, weight_k_C_p_p: torch.Tensor, image_shape: tuple[int, int, int],
                 pixel_mean_C: torch.Tensor, pixel_std_C: torch.Tensor, pool: int | None = None,
                 precomputed: bool = False) -> None:
        super().__init__()
        self.precomputed = precomputed  # inputs are already these outputs: forward passes them through
        self.image_shape = tuple(int(v) for v in image_shape)
        self.register_buffer("weight", torch.as_tensor(weight_k_C_p_p, dtype=torch.float32))
        self.register_buffer("pixel_mean", torch.as_tensor(pixel_mean_C, dtype=torch.float32))
        self.register_buffer("pixel_std", torch.as_tensor(pixel_std_C, dtype=torch.float32))
        self.pool = self.pool_for(self.image_shape) if pool is None else int(pool)
        k, p = self.weight.shape[0], self.weight.shape[-1]
        self.padding = p // 2
        h, w = self.image_shape[1] // self.pool, self.image_shape[2] // self.pool
        self.out_dim = 2 * k * h * w

    @classmethod
    def of(cls, spec: InputSpec, *, precomputed: bool = False) -> "PatchConv":
        """The stem an image spec describes (its pool filters and pixel statistics)."""
        pix_mean, pix_std = _channel_stats(spec.mean_f, spec.std_f, spec.image_shape[0])
        return cls(torch.as_tensor(spec.patch_filters), spec.image_shape, pix_mean, pix_std, spec.patch_pool,
                   precomputed=precomputed)

    @torch.no_grad()
    def outputs(self, X_n_f: np.ndarray, rows: int = 1024) -> np.ndarray:
        """The stem's outputs (n, out_dim) float32, ``rows`` images at a time (~100 KB of maps a
        28 x 28 image while it is computed)."""
        out = np.empty((len(X_n_f), self.out_dim), dtype=np.float32)
        for i in range(0, len(X_n_f), rows):
            out[i:i + rows] = self(torch.tensor(np.asarray(X_n_f[i:i + rows]), dtype=torch.float32)).numpy()
        return out

    @staticmethod
    def patch_for(image_shape: tuple[int, int, int]) -> int:
        """The filters' side for these images: 5 from 16 x 16 up, 3 below.

        Why: on Fashion-MNIST shrunk to 8 x 8 (a development set) 3 x 3 filters (9 of them, every
        principal component of a 3 x 3 patch) were 0.010-0.014 more accurate than 5 x 5 ones from 50
        labels on (within noise at 20) and the fit 17 % cheaper, the stem reading 288 features instead
        of 512 (benchmarks/results/learner_parity_image_pool_dev.md); 28 x 28 images keep 5 x 5."""
        return 5 if min(image_shape[1:]) >= SMALL_IMAGE_SIDE else 3

    @staticmethod
    def pool_for(image_shape: tuple[int, int, int]) -> int:
        """The average-pool size for these images: about 7 x 7 maps, and at least 2.

        Why at least 2: a pool of 1 leaves 2k features per pixel; at 8 x 8 that is 2,048 inputs to the
        stem, which on Fashion-MNIST shrunk to 8 x 8 (a development set) was less accurate than a pool
        of 2 at every label count (0.003-0.028 at 20-300 labels) at twice the fit time, and a pool of 4
        lost at 20-50 labels (benchmarks/results/learner_parity_image_pool_dev.md)."""
        h, w = image_shape[1:]
        return max(1, min(h, w, max(2, round(h / 7))))

    @classmethod
    def from_pool(cls, X_n_f: np.ndarray, image_shape: tuple[int, int, int], mean_f: np.ndarray,
                  std_f: np.ndarray, *, n_filters: int = 16, patch: int | None = None, n_patches: int = 20_000,
                  seed: int = 0, pool: int | None = None) -> "PatchConv":
        """Filters from a seeded sample of ``n_patches`` patches of the pool images (mean removed
        per patch), whitened by their eigenvalues (+1e-3 of the largest)."""
        c, h, w = image_shape
        patch = cls.patch_for(image_shape) if patch is None else int(patch)
        pix_mean, pix_std = _channel_stats(mean_f, std_f, c)
        x = (torch.as_tensor(np.asarray(X_n_f), dtype=torch.float32).reshape(-1, c, h, w)
             - pix_mean[None, :, None, None]) / pix_std[None, :, None, None]
        rng = np.random.default_rng(seed)
        imgs = x[torch.as_tensor(rng.choice(x.shape[0], min(x.shape[0], 2000), replace=False))]
        P = torch.nn.functional.unfold(imgs, patch).transpose(1, 2).reshape(-1, c * patch * patch).double()
        P = P[torch.as_tensor(rng.choice(P.shape[0], min(P.shape[0], n_patches), replace=False))]
        P = P - P.mean(1, keepdim=True)
        evals, evecs = torch.linalg.eigh(torch.cov(P.T))
        k = min(n_filters, P.shape[1])
        evals, evecs = evals.flip(0)[:k], evecs.flip(1)[:, :k]
        W = (evecs / (evals + 1e-3 * evals[0]).sqrt()).T.reshape(k, c, patch, patch)
        return cls(W.float(), image_shape, pix_mean.float(), pix_std.float(), pool)

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        if self.precomputed:
            return x_n_f
        c, h, w = self.image_shape
        if x_n_f.ndim != 2 or x_n_f.shape[1] != c * h * w:
            raise ValueError(f"the image network takes rows of {c} x {h} x {w} = {c * h * w} pixels, got inputs of "
                             f"shape {tuple(x_n_f.shape)}")
        x = (x_n_f.reshape(-1, c, h, w) - self.pixel_mean[None, :, None, None]) / self.pixel_std[None, :, None, None]
        z = torch.nn.functional.conv2d(x, self.weight, padding=self.padding)
        # pool(relu(-z)) = pool(relu(z)) - pool(z): both signs from one ReLU, in place, and no
        # concatenation of full-size maps (2.5x faster, 2/5 of the memory; benchmarks/stem_forward_time.py)
        pooled_z = torch.nn.functional.avg_pool2d(z, self.pool)
        pos = torch.nn.functional.avg_pool2d(z.relu_() if not z.requires_grad else torch.relu(z), self.pool)
        return torch.cat([pos, pos - pooled_z], 1).flatten(1)


def _channel_stats(mean_f: np.ndarray, std_f: np.ndarray, c: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-channel mean and std from per-pixel pool statistics (pooled variance over positions)."""
    m = torch.as_tensor(np.asarray(mean_f, dtype=np.float64).reshape(c, -1))
    v = torch.as_tensor(np.asarray(std_f, dtype=np.float64).reshape(c, -1)) ** 2
    mean_c = m.mean(1)
    var_c = (v + (m - mean_c[:, None]) ** 2).mean(1)
    return mean_c, var_c.sqrt().clamp_min(1e-8)


class _ResidualBlock(nn.Module):
    """h + c * act(W h / sigma(W) + b): spectral normalisation by one power iteration per
    training step (as torch's spectral_norm, Miyato et al.), done inline so a small full-batch
    fit does not pay the parametrization machinery on every step; in eval mode sigma comes from
    the stored vectors, so predictions are a pure function of the state dict."""

    def __init__(self, width: int, coeff: float, use_sn: bool, dropout: float) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)
        self.use_sn = use_sn
        self.coeff = coeff if use_sn else 1.0
        self.dropout = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        if use_sn:
            gen = torch.Generator().manual_seed(width)
            self.register_buffer("sn_u", F.normalize(torch.randn(width, generator=gen), dim=0))
            self.register_buffer("sn_v", F.normalize(torch.randn(width, generator=gen), dim=0))
            self.power_iterate(15)

    @torch.no_grad()
    def power_iterate(self, n: int) -> None:
        """``n`` power iterations for the top singular vectors of W (at init, as torch does)."""
        W = self.linear.weight
        for _ in range(n):  # F.normalize(x, dim=0, eps=1e-12) without its Python wrappers (once per step)
            v = W.T @ self.sn_u
            self.sn_v.copy_(v.div_(torch.linalg.vector_norm(v).clamp_min_(1e-12)))
            u = W @ self.sn_v
            self.sn_u.copy_(u.div_(torch.linalg.vector_norm(u).clamp_min_(1e-12)))

    def sigma(self) -> torch.Tensor:
        """Spectral-norm estimate u^T W v (differentiable in W); updates u, v when training."""
        W = self.linear.weight
        if self.training:
            self.power_iterate(1)
        return torch.dot(self.sn_u, W @ self.sn_v)

    def normalised_weight(self) -> torch.Tensor:
        """W / sigma(W) (the weight the block applies), or W without spectral normalisation."""
        return self.linear.weight / self.sigma() if self.use_sn else self.linear.weight

    def forward(self, h_n_w: torch.Tensor) -> torch.Tensor:
        # W / sigma on the (w, w) weight, not on the (n, w) output: one addmm, fewer autograd nodes
        z = F.linear(h_n_w, self.normalised_weight(), self.linear.bias)
        return torch.add(h_n_w, self.dropout(torch.relu(z)), alpha=self.coeff)

    @torch.no_grad()
    def param_grad_sq(self, h_n_w: torch.Tensor, out_n_w: torch.Tensor, grad_out_n_w: torch.Tensor) -> torch.Tensor:
        """Squared norm of each item's gradient with respect to this block's weight and bias, (n,),
        from the block's input, its output and the gradient at its output (eval mode: no dropout,
        sigma from the stored u, v).

        Why: per-example gradient norms of the whole network from one batched backward pass
        (alkit/learners/gradnorm.py), without a per-item backward.  With z = W h / sigma + b,
        sigma = u^T W v and e = dL/dz, the weight's gradient is e h^T / sigma - s u v^T with
        s = e^T W h / sigma^2, so its squared norm is ||e||^2 ||h||^2 / sigma^2
        - 2 s (u.e)(v.h) / sigma + s^2 ||u||^2 ||v||^2; the bias's is ||e||^2.  relu(z) is read off
        the output, (out - h) / coeff, and e is zero where z <= 0, so no product with W is needed:
        e^T W h = sigma e^T (relu(z) - b)."""
        c, bias = self.coeff, self.linear.bias
        d = out_n_w - h_n_w  # c relu(z)
        gm = grad_out_n_w * (d > 0)  # e / c: the gradient at z, zero where the unit is off
        e_sq = c**2 * torch.einsum("nw,nw->n", gm, gm)
        h_sq = torch.einsum("nw,nw->n", h_n_w, h_n_w)
        bias_sq = e_sq if bias is not None else torch.zeros_like(e_sq)
        if not self.use_sn:
            return e_sq * h_sq + bias_sq
        W = self.linear.weight
        sigma = torch.dot(self.sn_u, W @ self.sn_v)
        # e^T (relu(z) - b) = e^T d / c - e^T b; both products with b and u in one (n, w) @ (w, 2)
        vecs = gm @ torch.stack([bias if bias is not None else torch.zeros_like(self.sn_u), self.sn_u], 1)
        s = (torch.einsum("nw,nw->n", grad_out_n_w, d) - c * vecs[:, 0]) / sigma
        cross = c * vecs[:, 1] * (h_n_w @ self.sn_v)
        uv_sq = (self.sn_u**2).sum() * (self.sn_v**2).sum()
        return e_sq * h_sq / sigma**2 - 2 * s * cross / sigma + s**2 * uv_sq + bias_sq


# ``depth`` of a network with no hidden layer: its features are the standardised inputs themselves, so
# the head on them is a linear model of the inputs (logistic regression under a classification head)
LINEAR_DEPTH = -1


def check_depth(depth: int, feature_map: str) -> None:
    """A ValueError unless ``depth`` is a number of blocks or LINEAR_DEPTH, whose features are the
    inputs and so take no feature map (checked by BackboneConfig before a run, and by the network)."""
    if depth < LINEAR_DEPTH:
        raise ValueError(f"depth must be >= {LINEAR_DEPTH} ({LINEAR_DEPTH}: a linear model on the inputs), got {depth}")
    if depth == LINEAR_DEPTH and feature_map != "none":
        raise ValueError(f"a linear backbone (depth {LINEAR_DEPTH}) takes feature_map 'none', got {feature_map!r}")


class ResidualMLP(nn.Module):
    """x (n, f) -> phi (n, out_dim).

    Inputs are standardised with statistics fixed at fit time (``set_input_stats``), projected to
    ``width``, passed through ``depth`` spectral-normalised residual blocks (``depth`` LINEAR_DEPTH: no
    projection and no block, the features are the standardised inputs), then through the
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
        check_depth(depth, feature_map)
        self.linear = depth == LINEAR_DEPTH
        self.stem = nn.Identity() if self.linear else nn.Linear(n_features, width)
        self.blocks = nn.ModuleList(
            _ResidualBlock(width, sn_coeff, spectral, dropout) for _ in range(max(depth, 0))
        )
        # a network without blocks drops out its features instead (MC dropout's place to drop in)
        self.feature_dropout = nn.Dropout(dropout) if depth <= 0 and dropout > 0 else nn.Identity()
        self.feature_map = feature_map
        if self.linear:
            self.out_dim = n_features
        elif feature_map == "rff":
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
        """Fix the input standardisation from ``X_n_f`` (constant columns keep std 1)."""
        std = X_n_f.std(0) if X_n_f.shape[0] > 1 else torch.ones_like(self.x_std)
        _set_stats(self.x_mean, self.x_std, X_n_f.mean(0), std)

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return self.trainable(self.fixed(x_n_f))

    def fixed(self, x_n_f: torch.Tensor) -> torch.Tensor:
        """The part with no trainable weights (input standardisation): computed once per fit."""
        if x_n_f.ndim != 2 or x_n_f.shape[1] != self.x_mean.shape[0]:  # broadcasting failed deep in torch, or not at all
            raise ValueError(f"the network takes inputs of shape (n, {self.x_mean.shape[0]}), got {tuple(x_n_f.shape)}")
        return (x_n_f - self.x_mean) / self.x_std

    def trainable(self, z_n_f: torch.Tensor) -> torch.Tensor:
        """The trained part, on ``fixed`` outputs: forward(x) == trainable(fixed(x))."""
        h = self.stem(z_n_f)
        for block in self.blocks:
            h = block(h)
        if self.linear:
            phi = h
        elif self.feature_map == "rff":
            phi = math.sqrt(2.0 / self.out_dim) * torch.cos(h @ self.rff_W + self.rff_b)
        elif self.feature_map == "l2":
            phi = h / h.norm(dim=1, keepdim=True).clamp_min(1e-12) * math.sqrt(self.out_dim)
        else:
            phi = torch.relu(h)
        return self.feature_dropout(phi)


@torch.no_grad()
def _set_stats(mean_buf: torch.Tensor, std_buf: torch.Tensor, mean: torch.Tensor, std: torch.Tensor) -> None:
    mean_buf.copy_(torch.as_tensor(mean, dtype=mean_buf.dtype))
    std = torch.as_tensor(std, dtype=std_buf.dtype)
    std_buf.copy_(torch.where(std > 1e-8, std, torch.ones_like(std)))


class ConvBackbone(nn.Module):
    """Image-shaped inputs: x (n, C*H*W) -> PatchConv (frozen, from the pool) -> standardised
    with the pool's feature statistics -> the ResidualMLP's trainable layers -> phi (n, width).

    Every last-layer scorer sees features of the same kind as on tabular data; a fit costs about
    a plain MLP's on the pooled maps plus one forward of the frozen convolution.
    """

    def __init__(self, conv: PatchConv, conv_mean_f: np.ndarray, conv_std_f: np.ndarray, width: int = 128,
                 depth: int = 2, *, feature_map: FeatureMap = "none", rff_dim: int = 256,
                 dropout: float = 0.0) -> None:
        super().__init__()
        self.conv = conv
        self.n_features = conv.out_dim if conv.precomputed else int(np.prod(conv.image_shape))
        self.mlp = ResidualMLP(conv.out_dim, width, depth, feature_map=feature_map, rff_dim=rff_dim,
                               dropout=dropout)
        _set_stats(self.mlp.x_mean, self.mlp.x_std, torch.as_tensor(conv_mean_f), torch.as_tensor(conv_std_f))
        self.blocks = self.mlp.blocks  # MC dropout masks the residual blocks by this name,
        self.feature_dropout = self.mlp.feature_dropout  # or the features when there are none
        self.out_dim = self.mlp.out_dim

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return self.trainable(self.fixed(x_n_f))

    @torch.no_grad()
    def fixed(self, x_n_f: torch.Tensor) -> torch.Tensor:
        """Frozen convolution and standardisation: computed once per fit, not once per step."""
        return self.mlp.fixed(self.conv(x_n_f))

    def trainable(self, z_n_f: torch.Tensor) -> torch.Tensor:
        return self.mlp.trainable(z_n_f)


# The most input directions a linear path carries (LinearPath): every column up to this many, else
# the pool's leading principal components, so the last layer widens by at most this much.
LINEAR_PATH_MAX = 32


class LinearPath(nn.Module):
    """phi(x) -> [phi(x), z(x) P]: a ResidualMLP's features with a linear map of its standardised
    inputs z(x) beside them, so that a Bayesian last layer on these features contains a Bayesian
    ridge regression on the inputs.

    Why: on near-linear regression targets over wide one-hot columns (the ``diamonds_price``
    development set) the VBLL learner trailed a Bayesian ridge by 0.02 CRPS at 20-50 labels and
    led it with this path (benchmarks/results/regression_linear_path_dev.md); an option of the
    VBLL learner (``linear_path``), off by default.  ``P_f_k`` is the
    identity up to LINEAR_PATH_MAX columns, else the leading principal directions of the pool's
    standardised inputs (``linear_path_for``), which bounds the last layer's width and so the
    cost of its posterior."""

    def __init__(self, net: ResidualMLP, P_f_k: torch.Tensor) -> None:
        super().__init__()
        self.net = net
        self.register_buffer("P_f_k", P_f_k.float())
        self.blocks = net.blocks
        self.n_features = net.n_features
        self.out_dim = net.out_dim + P_f_k.shape[1]

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return self.trainable(self.fixed(x_n_f))

    def fixed(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return self.net.fixed(x_n_f)

    def trainable(self, z_n_f: torch.Tensor) -> torch.Tensor:
        return torch.cat([self.net.trainable(z_n_f), z_n_f @ self.P_f_k], 1)


def linear_path_for(net: ResidualMLP, spec: InputSpec | None, X_fit_n_f: torch.Tensor) -> LinearPath:
    """``net`` with a LinearPath: every standardised column up to LINEAR_PATH_MAX of them, else the
    LINEAR_PATH_MAX leading principal directions of the pool sample (``spec.pool_sample_n_f``;
    without one, of the fitting inputs)."""
    f = net.n_features
    if f <= LINEAR_PATH_MAX:
        return LinearPath(net, torch.eye(f))
    sample = spec.pool_sample_n_f if spec is not None and spec.pool_sample_n_f is not None else None
    X = torch.as_tensor(np.asarray(sample if sample is not None else X_fit_n_f), dtype=torch.float32)
    with torch.no_grad():
        Z = net.fixed(X).double()
    Z = Z - Z.mean(0)
    k = min(LINEAR_PATH_MAX, Z.shape[0], f)
    V_f_k = torch.linalg.svd(Z, full_matrices=False)[2][:k].T
    return LinearPath(net, V_f_k)


# module_norm's accepted values besides 0: far outside, the head's prior variance (prior_scale / mean ||phi||^2)
# underflowed (1e30: a math domain error mid-run) or the features carried nothing (1e-30: uniform predictions).
MODULE_NORM_RANGE = (1e-2, 1e3)


@dataclass(frozen=True)
class BackboneConfig:
    """The backbone's shape, one record for every learner that trains one (MLP, VBLL, the
    post-hoc scorers' MLP, ensembles, MC dropout, SVE): ``width`` units, ``depth`` residual
    blocks, the last-layer ``feature_map`` ('none', 'l2', 'rff' with ``rff_dim`` features) and
    ``dropout`` in the blocks.

    ``depth=None`` (the default) chooses by input (``depth_for``): one residual block on raw
    features, none on a pretrained encoder's embeddings or on the image stem's pooled patch maps of
    images below 16 x 16.  Chosen on the development sets (benchmarks/results/learner_parity_small_n.md,
    label_efficiency_dev/depth0_tweets.md, learner_parity_image_depth_dev.md): on MiniLM tweet
    embeddings the block-free network is 0.008-0.022 more accurate from 50 labels on; on the stem of
    8 x 8 images (fashion8_dev, 10 seeds) VBLL gains 0.001-0.008 at every N with 0.6x the fit time and
    the OOD scores on digits8 5-9 are level or better; on 28 x 28 Fashion accuracy is level but the
    block-free stem lost OOD AUROC (VBLL 0.712 -> 0.639 on Fashion 5-9, csd, laplace and gradnorm
    down too: ood_image_depth_dev.md), so larger images keep the block; on tabular and synthetic
    features the block is as good or better from 100 labels on."""

    width: int = 128
    depth: int | None = None
    feature_map: FeatureMap = "none"
    rff_dim: int = 256
    dropout: float = 0.0
    module: str = ""  # a user's network, "package.module:function" or "file.py:function" (--backbone)
    module_norm: float = 0.0  # its output scaled to this mean norm at initialisation (0: as it is)

    def __post_init__(self) -> None:
        # checked where the options are read, before a run spends a label, not when the network is built
        for name in ("width", "rff_dim"):
            if int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        norm = float(self.module_norm)
        if not (norm == 0.0 or MODULE_NORM_RANGE[0] <= norm <= MODULE_NORM_RANGE[1]):  # nan fails both
            raise ValueError(f"module_norm must be 0 (the network's own scale) or a number from {MODULE_NORM_RANGE[0]:g} "
                             f"to {MODULE_NORM_RANGE[1]:g}, got {self.module_norm}")
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.depth is not None:
            check_depth(self.depth, self.feature_map)

    @classmethod
    def of(cls, config: "BackboneConfig | None" = None, **options: Any) -> "BackboneConfig":
        """``config`` (default: the defaults) with ``options`` (width=..., depth=...) replaced;
        an unknown option is a TypeError naming it and the known ones."""
        unknown = set(options) - set(cls.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown option(s) {', '.join(sorted(unknown))}; backbone options: "
                            f"{', '.join(cls.__dataclass_fields__)}")
        return dataclasses.replace(config or cls(), **options)

    def depth_for(self, spec: "InputSpec | None") -> int:
        """The number of residual blocks for these inputs: ``depth`` when set, else 0 on encoder
        embeddings (``spec.embedding``) and on the image stem's pooled maps of images below
        SMALL_IMAGE_SIDE (``spec.patch_filters``), 1 otherwise."""
        if self.depth is not None:
            return self.depth
        if spec is None:
            return 1
        small_stem = spec.patch_filters is not None and min(spec.image_shape[1:]) < SMALL_IMAGE_SIDE
        return 0 if spec.embedding or small_stem else 1


PROBE_ROWS = 512  # pool inputs a user backbone's output scale is measured on at initialisation


def build_backbone(n_features: int, spec: InputSpec | None, X_fit_n_f: torch.Tensor,
                   config: BackboneConfig) -> ResidualMLP | ConvBackbone:
    """The backbone for these inputs, with its input standardisation fixed.

    A ``config.module`` reference builds the user's network (alkit/models/user_backbone.py);
    otherwise image-shaped inputs with pool filters (``spec.patch_filters``) get the ConvBackbone,
    everything else the ResidualMLP.  Statistics come from ``spec`` (the pool) when it has them,
    else from the fitting inputs ``X_fit_n_f``.
    """
    if config.module:
        from alkit.models.user_backbone import build_user_backbone

        pooled = spec is not None and spec.mean_f is not None
        mean = spec.mean_f if pooled else X_fit_n_f.mean(0)
        std = spec.std_f if pooled else (X_fit_n_f.std(0) if len(X_fit_n_f) > 1 else torch.ones(n_features))
        probe = spec.pool_sample_n_f if spec is not None and spec.pool_sample_n_f is not None else X_fit_n_f
        rows = np.unique(np.linspace(0, len(probe) - 1, min(len(probe), PROBE_ROWS)).round().astype(np.int64))
        return build_user_backbone(config.module, n_features, spec.image_shape if spec is not None else None, mean, std,
                                   norm=float(config.module_norm), probe_n_f=probe[rows])  # spread over the sample
    if spec is not None and spec.patch_filters is not None:
        shape = spec.image_shape
        conv = PatchConv.of(spec, precomputed=spec.stem_precomputed)
        if (conv.out_dim if spec.stem_precomputed else int(np.prod(shape))) != n_features:
            what = f"the stem's {conv.out_dim} outputs" if spec.stem_precomputed else f"image shape {shape}"
            raise ValueError(f"{what} do not match {n_features} features")
        return ConvBackbone(conv, spec.conv_mean_f, spec.conv_std_f, config.width, config.depth_for(spec),
                            feature_map=config.feature_map, rff_dim=config.rff_dim, dropout=config.dropout)
    net = ResidualMLP(n_features, config.width, config.depth_for(spec), feature_map=config.feature_map,
                      rff_dim=config.rff_dim, dropout=config.dropout)
    if spec is not None and spec.mean_f is not None:
        if len(spec.mean_f) != n_features:
            raise ValueError(f"input statistics have {len(spec.mean_f)} features, the data {n_features}")
        _set_stats(net.x_mean, net.x_std, torch.as_tensor(spec.mean_f), torch.as_tensor(spec.std_f))
    else:
        net.set_input_stats(X_fit_n_f)
    return net
