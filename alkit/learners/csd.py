"""CSD: Contextual Similarity Distillation (Zanger et al., ICLR 2026), post-hoc on a trained module.

Why: the variance of an infinite ensemble in the NTK regime is
V(x) = Theta(x,x) - Theta(x,X) Theta(X,X)^-1 Theta(X,x), X the LABELED inputs.  A second network
g(x, c), started at g ~ 0 and regressed on labeled x with targets Theta(x, c) for contexts c,
converges to Theta(x,X) Theta(X,X)^-1 Theta(X,c), so V(x) ~ max(0, Theta(x,x) - g(x,x)): one small
forward pass per item and no matrix inverse (uq-math §6).

Here (documented choices, measured in benchmarks/results/posthoc_ood.md and tests/test_csd.py):
- Kernel: the last-layer NTK Theta(x,c) = varphi(x)^T varphi(c), varphi = the input of the model's
  last nn.Linear, rescaled so that the mean Theta(x,x) over the labeled set is 1.
  ``features='trained'`` (default) uses the fitted network, ``'init'`` a re-initialised copy (the
  seed's random-network kernel).  Trained features separated OOD digits better, both in the closed
  form (ridge 0.01: 0.928 / 0.915 vs 0.908 / 0.896 at init, seeds 0 / 1) and distilled (0.91-0.92
  vs 0.88-0.89, the latter at ridge 1/mean||varphi||^2): the trained backbone's features are where
  the head's uncertainty lives, and the spectral-normalised backbone keeps them distance-aware.
- g(x,c) = phi(x)^T psi(c).  The x tower ``x_tower='features'`` (default) is phi(x) = varphi(x):
  the tower whose NTK with respect to psi's output (the context's "last-layer weights") is exactly
  Theta, so g learns the labeled-set projection of the kernel; ``'mlp'`` is a trainable MLP tower on
  varphi(x).  The context tower psi is an MLP on varphi(c) plus a linear skip, both last layers
  zero-initialised (g_0 = 0, the small-init requirement).
- Loss per context c: mean_x (g(x,c) - Theta(x,c))^2 + (ridge/N) ||psi(c)||^2, x over the labeled
  set (N items).  With the 'features' tower its minimiser is psi(c) = (Phi^T Phi + ridge I)^-1
  Phi^T Phi varphi(c), so V(x) = ridge * varphi^T (Phi^T Phi + ridge I)^-1 varphi: the closed-form
  ridge / GP variance, which ``ridge_variance`` computes and the tests compare against.
  ``ridge`` is the noise variance of a unit-prior Bayesian linear model on the normalised kernel
  features (mean ||varphi||^2 = 1 on the labeled set).  Small ridges separate OOD digits best
  (closed form on trained features: 0.92-0.94 at 0.001-0.01, 0.70-0.75 at 1); below ~0.01 the
  regression for g gets too ill-conditioned to learn in a few thousand steps, hence 0.01.
  Without the ridge term the limit is the pseudo-inverse projection, ~0 everywhere once the
  labeled features span R^d (uq-math §6 caveat).
- Contexts: the labeled inputs and ``n_noise`` Gaussian-noise copies of them (CSD-Aug, noise
  ``noise_scale`` x per-feature std), plus optionally an unlabeled pool sample (CSD-OOD,
  ``contexts=``).  Measured on digits (0-4 vs 5-9, 1000 steps): CSD-Aug 0.91 AUROC, CSD-OOD with
  the evaluation items as contexts 0.79-0.81, although pool contexts track the closed-form ridge
  variance better on a small 2-D problem (Spearman 0.99 vs 0.95-0.99).  With d = 128 and a small
  ridge, g(x,x) must be accurate to ~1e-3 of Theta(x,x) on the contexts, and fitting the pool's
  off-distribution contexts imperfectly pulls their variance down; so pool contexts are opt-in.

Solver (``CSDConfig.solver``, ``-o csd.solver=``): on the 'features' tower the kernel is linear in
varphi, so the distillation target has a closed form exactly as cheap to score as g:
``'closed'`` (default) scores r varphi^T (Phi^T Phi + r I)^-1 varphi through one d x d triangular
factor and trains nothing; ``'distilled'`` trains g as the paper does.  Measured on the same models
(benchmarks/results/csd_fidelity.md, 3 seeds): the distilled score is 5.3-5.8x the closed form on
digits and ~23-25x on Fashion-MNIST (median ratio), Spearman 0.87 / 0.97, OOD AUROC 0.912 / 0.905
against 0.961 / 0.911 for the closed form, at 3.0 / 1.5x a plain forward against 1.8 / 1.2x.  The
distilled network stays for the 'mlp' x tower, whose kernel has no such closed form.

Library use on any module::

    csd = CSDScorer.from_model(model, X_labeled, contexts=X_pool_sample, last_layer="head")
    var_n = csd.score(X_pool)
"""

from __future__ import annotations

import copy
import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from alkit.models.layers import find_last_linear, layer_io
from alkit.learners.posthoc import PostHocLearner
from alkit.types import Prediction

FeatureSource = Literal["trained", "init"]
XTower = Literal["features", "mlp"]
Solver = Literal["closed", "distilled"]


def ridge_cholesky(phi_lab_N_d: torch.Tensor, ridge: float) -> torch.Tensor:
    """L with L L^T = Phi^T Phi + ridge I, float64 (d, d)."""
    P = phi_lab_N_d.double()
    return torch.linalg.cholesky(P.T @ P + ridge * torch.eye(P.shape[1], dtype=torch.float64))


def ridge_whitener(phi_lab_N_d: torch.Tensor, ridge: float) -> torch.Tensor:
    """L^-1 (d, d), float64, for L L^T = Phi^T Phi + ridge I: phi^T (Phi^T Phi + ridge I)^-1 phi is
    ||L^-1 phi||^2, one matrix product per chunk of queries (csd's closed form, vbll's feature_var)."""
    L = ridge_cholesky(phi_lab_N_d, ridge)
    return torch.linalg.solve_triangular(L, torch.eye(L.shape[0], dtype=L.dtype), upper=False)


def ridge_variance(phi_lab_N_d: torch.Tensor, phi_q_n_d: torch.Tensor, ridge: float) -> torch.Tensor:
    """ridge * phi^T (Phi^T Phi + ridge I)^-1 phi per query (n,), float64 via Cholesky."""
    Z = torch.linalg.solve_triangular(ridge_cholesky(phi_lab_N_d, ridge), phi_q_n_d.double().T, upper=False)
    return ridge * (Z**2).sum(0)


@torch.no_grad()
def reinitialised_copy(model: nn.Module, seed: int, X_warm: torch.Tensor) -> nn.Module:
    """A copy of ``model`` with every nn.Linear re-drawn from its default init (buffers such as
    input statistics kept); spectral-norm power iterations are re-run on ``X_warm``."""
    clone = copy.deepcopy(model)
    gen = torch.Generator().manual_seed(seed)
    for m in clone.modules():
        if not isinstance(m, nn.Linear):
            continue
        parametrized = hasattr(m, "parametrizations") and "weight" in m.parametrizations
        W = m.parametrizations.weight.original if parametrized else m.weight
        bound = 1.0 / math.sqrt(W.shape[1])
        W.copy_((torch.rand(W.shape, generator=gen, dtype=W.dtype) * 2 - 1) * bound)
        if m.bias is not None:
            m.bias.copy_((torch.rand(m.bias.shape, generator=gen, dtype=m.bias.dtype) * 2 - 1) * bound)
    clone.train()
    for _ in range(30):  # power iterations of spectral norms (no-op elsewhere)
        clone(X_warm[:256])
    return clone.eval()


class _Mlp(nn.Module):
    def __init__(self, d_in: int, hidden: int, d_out: int, zero_last: bool) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                                 nn.Linear(hidden, d_out))
        self.skip = nn.Linear(d_in, d_out, bias=False)
        if zero_last:
            nn.init.zeros_(self.net[-1].weight)
            nn.init.zeros_(self.net[-1].bias)
            nn.init.zeros_(self.skip.weight)

    def forward(self, v_n_d: torch.Tensor) -> torch.Tensor:
        return self.net(v_n_d) + self.skip(v_n_d)


class CSDNet(nn.Module):
    """g(x, c) = phi(x)^T psi(c) on kernel features; ``pairwise`` gives the (B, B') matrix.

    ``whiten_d_d`` (symmetric, fixed) preconditions the 'features' x tower: phi(x) = P varphi(x)
    with P = (Phi^T Phi / N + ridge/N I)^-1/2, which makes the regression for psi(c) perfectly
    conditioned (Hessian = I) without changing its minimiser g; ``context_weights`` returns the
    context's last-layer weights u(c) = P psi(c) that the ridge penalty acts on."""

    def __init__(self, d: int, hidden: int = 256, x_tower: XTower = "features", width: int = 128) -> None:
        super().__init__()
        self.x_tower = x_tower
        d_out = d if x_tower == "features" else width
        self.phi = None if x_tower == "features" else _Mlp(d, hidden, width, zero_last=False)
        self.psi = _Mlp(d, hidden, d_out, zero_last=True)
        self.register_buffer("whiten_d_d", torch.eye(d_out) if x_tower == "features" else torch.empty(0))

    def embed_x(self, v_n_d: torch.Tensor) -> torch.Tensor:
        return v_n_d @ self.whiten_d_d if self.phi is None else self.phi(v_n_d)

    def context_weights(self, v_n_d: torch.Tensor) -> torch.Tensor:
        psi = self.psi(v_n_d)
        return psi @ self.whiten_d_d if self.phi is None else psi

    def pairwise(self, vx_B_d: torch.Tensor, vc_Bc_d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(g (B, B'), u(c) (B', .)): with the 'features' tower g = varphi(x)^T u(c)."""
        if self.phi is None:
            u = self.context_weights(vc_Bc_d)
            return vx_B_d @ u.T, u
        psi = self.psi(vc_Bc_d)
        return self.phi(vx_B_d) @ psi.T, psi

    def diag(self, v_n_d: torch.Tensor) -> torch.Tensor:
        if self.phi is None:
            return (v_n_d * self.context_weights(v_n_d)).sum(1)
        return (self.phi(v_n_d) * self.psi(v_n_d)).sum(1)


@dataclass
class CSDConfig:
    """Training budget of g: Adam on random (labeled x, context c) minibatch grids."""

    steps: int = 1000
    batch_x: int = 256
    batch_c: int = 256
    lr: float = 1e-3
    hidden: int = 64
    ridge: float = 0.01
    x_tower: XTower = "features"
    features: FeatureSource = "trained"
    n_noise: int = 1
    whiten: bool = True
    noise_scale: float = 0.5
    seed: int = 0
    # 'closed': with the 'features' tower (the linear last-layer kernel) the distillation target
    # ridge * varphi^T (Phi^T Phi + ridge I)^-1 varphi is scored exactly, as cheaply as g would be
    # (one d x d triangular factor, d^2 per item); 'distilled' trains g as the paper does (its
    # fitting error dominates the small difference Theta(x,x) - g(x,x): benchmarks/results/csd_fidelity.md)
    solver: Solver = "closed"

    def __post_init__(self) -> None:
        # a ridge of 0 failed the first fit's Cholesky with a traceback; lr=0 or batch_x=0 trained nothing without
        # a word (a black-box check).  steps=0 is g = 0, the prior variance (tests/test_csd.py); n_noise=0 no noise
        for name in ("batch_x", "batch_c", "hidden"):
            if getattr(self, name) < 1:
                raise ValueError(f"csd.{name} must be at least 1, got {getattr(self, name)}")
        for name in ("steps", "n_noise"):
            if getattr(self, name) < 0:
                raise ValueError(f"csd.{name} must be >= 0, got {getattr(self, name)}")
        for name, most in (("lr", 10.0), ("ridge", 1e12)):  # 1e300 gave undefined scores after the first batch
            if not 0 < getattr(self, name) <= most:
                raise ValueError(f"csd.{name} must be positive and at most {most:g}, got {getattr(self, name)}"
                                 + (" (csd.steps=0 leaves g untrained)" if name == "lr" else ""))
        if not self.noise_scale >= 0:
            raise ValueError(f"csd.noise_scale must be >= 0, got {self.noise_scale}")
        if self.seed < 0:
            raise ValueError(f"csd.seed must be >= 0, got {self.seed}")


class CSDScorer:
    """Fitted CSD variance for one trained module (see the module docstring)."""

    def __init__(self, feature_model: nn.Module, layer: nn.Linear, net: CSDNet, scale: float) -> None:
        self.feature_model, self.layer, self.net, self.scale = feature_model, layer, net, scale
        self.train_loss = math.nan
        self.ridge = 0.01  # in the normalised kernel's units (set by from_model)
        self.closed_factor_d_d: torch.Tensor | None = None  # L^-1, (Phi^T Phi + ridge I) = L L^T (solver 'closed')

    @classmethod
    def from_model(
        cls,
        model: nn.Module,
        X_labeled: torch.Tensor | np.ndarray,
        *,
        contexts: torch.Tensor | np.ndarray | None = None,
        last_layer: str | nn.Module | None = None,
        config: CSDConfig | None = None,
    ) -> "CSDScorer":
        cfg = config or CSDConfig()
        name, layer = find_last_linear(model, last_layer)
        dtype = layer.weight.dtype
        X = torch.as_tensor(np.asarray(X_labeled) if not torch.is_tensor(X_labeled) else X_labeled, dtype=dtype)
        feature_model = model
        if cfg.features == "init":
            feature_model = reinitialised_copy(model, cfg.seed, X)
            layer = dict(feature_model.named_modules())[name] if name else find_last_linear(feature_model)[1]
        v_lab = layer_io(feature_model, layer, X)[0]
        scale = float((v_lab.double() ** 2).sum(1).mean().clamp_min(1e-12))
        if cfg.solver == "closed" and cfg.x_tower == "features":
            self = cls(feature_model, layer, CSDNet(v_lab.shape[1], cfg.hidden, cfg.x_tower).to(dtype), scale)
            self.ridge = cfg.ridge
            self.closed_factor_d_d = ridge_whitener(v_lab.double() / math.sqrt(scale), cfg.ridge).to(dtype)
            self.train_loss = 0.0
            return self
        ctx = [X]
        if contexts is not None:
            ctx.append(torch.as_tensor(np.asarray(contexts) if not torch.is_tensor(contexts) else contexts, dtype=dtype))
        gen = torch.Generator().manual_seed(cfg.seed)
        std = X.std(0) if X.shape[0] > 1 else torch.ones(X.shape[1], dtype=dtype)
        for _ in range(cfg.n_noise):
            ctx.append(X + cfg.noise_scale * std * torch.randn(X.shape, generator=gen, dtype=dtype))
        v_ctx = layer_io(feature_model, layer, torch.cat(ctx))[0]
        self = cls(feature_model, layer, CSDNet(v_lab.shape[1], cfg.hidden, cfg.x_tower).to(dtype), scale)
        self.ridge = cfg.ridge
        if cfg.whiten and cfg.x_tower == "features":
            v = v_lab.double() / math.sqrt(scale)
            evals, Q = torch.linalg.eigh(v.T @ v / v.shape[0])
            P = (Q * (evals.clamp_min(0) + self.ridge / v.shape[0]).rsqrt()) @ Q.T
            self.net.whiten_d_d.copy_(P.to(dtype))
        self.train_loss = self._train(v_lab / math.sqrt(scale), v_ctx / math.sqrt(scale), cfg)
        return self

    def _train(self, v_lab: torch.Tensor, v_ctx: torch.Tensor, cfg: CSDConfig) -> float:
        torch.manual_seed(cfg.seed)
        gen = torch.Generator().manual_seed(cfg.seed + 1)
        opt = torch.optim.Adam(self.net.parameters(), lr=cfg.lr)
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, cfg.steps)
        N, M = v_lab.shape[0], v_ctx.shape[0]
        loss_val = math.nan
        self.net.train()
        for _ in range(cfg.steps):
            ix = torch.randint(N, (min(cfg.batch_x, N),), generator=gen)
            ic = torch.randint(M, (min(cfg.batch_c, M),), generator=gen)
            vx, vc = v_lab[ix], v_ctx[ic]
            g, psi = self.net.pairwise(vx, vc)
            target = vx @ vc.T
            loss = ((g - target) ** 2).mean() + self.ridge / N * (psi**2).sum(1).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_val = float(loss.detach())
        self.net.eval()
        return loss_val

    @torch.no_grad()
    def score_features(self, varphi_n_d: torch.Tensor) -> torch.Tensor:
        """V = max(0, Theta(x,x) - g(x,x)) in the normalised kernel's units, (n,)."""
        v = varphi_n_d.to(self.layer.weight.dtype) / math.sqrt(self.scale)
        if self.closed_factor_d_d is not None:
            return self.ridge * ((v @ self.closed_factor_d_d.T) ** 2).sum(1)
        return ((v**2).sum(1) - self.net.diag(v)).clamp_min(0)

    @torch.no_grad()
    def kernel_features(self, X: torch.Tensor | np.ndarray) -> torch.Tensor:
        return layer_io(self.feature_model, self.layer, X)[0]

    @torch.no_grad()
    def score(self, X: torch.Tensor | np.ndarray, *, chunk: int = 8192) -> torch.Tensor:
        x = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
        return torch.cat([self.score_features(self.kernel_features(x[s : s + chunk]))
                          for s in range(0, x.shape[0], chunk)])


class CSDLearner(PostHocLearner):
    """MLPLearner + CSD variance fitted post-hoc on the labeled set.

    The Learner protocol's ``fit`` sees only the labeled set, so pool contexts (CSD-OOD) come from
    the ``input`` InputSpec's pool sample (what the loop passes every learner), ``contexts=`` or
    ``set_pool(X_sample)``; without any, the contexts are the labeled inputs and their
    Gaussian-noise copies (CSD-Aug)."""

    SCORE_OPTIONS = ("csd.", "max_contexts")  # set the epistemic score alone (runs._refuse_unread_score_options)

    # the distillation network's settings: they act only where g is trained (solver 'distilled', or a
    # tower other than 'features'); under the default closed form a run of them named a second run
    # that scored exactly like the first (a black-box check)
    DISTILL_ONLY = ("steps", "batch_x", "batch_c", "lr", "hidden", "n_noise", "noise_scale", "whiten")

    @classmethod
    def idle_options(cls, options: dict[str, Any]) -> list[str]:
        """The distillation settings in ``options`` that nothing reads (solver 'closed' on the
        'features' tower), as their option names."""
        defaults = CSDConfig()
        if options.get("csd.solver", defaults.solver) != "closed" or options.get("csd.x_tower", defaults.x_tower) != "features":
            return []
        return [f"csd.{k}" for k in cls.DISTILL_ONLY if f"csd.{k}" in options and options[f"csd.{k}"] != getattr(defaults, k)]

    @classmethod
    def check_options(cls, options: dict[str, Any]) -> None:
        """Refuse a distillation setting where nothing is distilled."""
        idle = cls.idle_options(options)
        if idle:
            raise ValueError(f"--opt {idle[0]} sets the distilled network, and the default solver scores its target "
                             "in closed form (nothing is distilled): add -o csd.solver=distilled, or leave it out")

    def __init__(self, task: str, n_classes: int | None = None, *, csd: CSDConfig | None = None,
                 contexts: np.ndarray | None = None, max_contexts: int = 4096, **mlp_options: object) -> None:
        super().__init__(task, n_classes, **mlp_options)
        self.config, self.contexts, self.max_contexts = csd or CSDConfig(), contexts, max_contexts
        spec = mlp_options.get("input")
        if contexts is None and getattr(spec, "pool_sample_n_f", None) is not None:
            self.set_pool(spec.pool_sample_n_f)  # CSD-OOD: the loop's pool sample as contexts

    def set_pool(self, X_pool_n_f: np.ndarray) -> None:
        """Use (a seeded sample of at most ``max_contexts`` rows of) the unlabeled pool as contexts."""
        X = np.asarray(X_pool_n_f)
        if X.shape[0] > self.max_contexts:
            X = X[np.random.default_rng(self.config.seed).choice(X.shape[0], self.max_contexts, replace=False)]
        self.contexts = X

    def fit_scorer(self, model: nn.Sequential, X_n_f: np.ndarray, seed: int) -> dict[str, float]:
        cfg = dataclasses.replace(self.config, seed=seed)
        self.scorer = CSDScorer.from_model(model, X_n_f, contexts=self.contexts, last_layer=self.base.head, config=cfg)
        return {"csd_loss": self.scorer.train_loss}

    def rescore(self, pred: Prediction, X_n_f: np.ndarray) -> Prediction:
        if self.config.features == "trained":
            pred.epistemic_n = self.scorer.score_features(pred.embedding_n_d).float()
        else:
            pred.epistemic_n = self.scorer.score(X_n_f).float()
        return pred
