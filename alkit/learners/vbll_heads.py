"""VBLL heads: the variational last layers (Harrison et al. 2024) and their ELBO-optimal refit.

``VariationalLinear`` holds the Gaussian posterior over the last-layer weights and refits its
covariance to the stationary point of the ELBO for fixed features (``refit_cov``); the Gaussian and
classification heads are built on it here, the quantile and bucket heads in qr_vbll.py and
cr_vbll.py.  The learner that trains a backbone with one of them is alkit/learners/vbll.py.
"""

from __future__ import annotations

import math
from typing import Callable, Literal

import torch
from torch import nn

from alkit.distributions import entropy_n, logit_entropy_n
from alkit.types import GaussianLastLayer

Cov = Literal["dense", "diagonal", "shared"]
HeadKind = Literal["gaussian", "hetero", "quantile", "buckets"]
ClassScore = Literal["mi", "logit_var", "feature_var"]

WeightFn = Callable[[torch.Tensor], torch.Tensor]  # v_N_K (float64) -> w_N_K (float64)

VARIANCE_BLOCK = 1 << 24  # elements of the per-block variance intermediate (64 MB in float32)


class VariationalLinear(nn.Module):
    """q(W) for a K-output last layer: rows w_k ~ N(mu_k, S_k), prior N(0, s0 I).

    ``cov``: 'dense' (one Cholesky factor per output, S_k = L_k L_k^T), 'diagonal'
    (S_k = diag(exp(2 logdiag_k))), or 'shared' (one dense S for every output: the cheapest
    dense option to score, O(d^2) per item instead of O(K d^2)).  ``bias`` adds a deterministic
    offset per output (used by the quantile and bucket heads).
    """

    def __init__(self, d: int, K: int, cov: Cov = "dense", prior_var: float = 1.0, bias: bool = False) -> None:
        super().__init__()
        if cov not in ("dense", "diagonal", "shared"):
            raise ValueError(f"unknown cov {cov!r}; use dense, diagonal or shared")
        self.d, self.K, self.cov = d, K, cov
        # log s0: a parameter so the prior scale can be fitted by the ELBO (empirical Bayes) when
        # requires_grad is switched on; fixed otherwise
        self.log_prior_var = nn.Parameter(torch.tensor(math.log(prior_var)), requires_grad=False)
        self.n_cov = 1 if cov == "shared" else K
        self.W_mean = nn.Parameter(torch.randn(K, d) * math.sqrt(2.0 / d))
        init_logdiag = 0.5 * math.log(prior_var) - 0.5 * math.log(d)
        self.W_logdiag = nn.Parameter(torch.full((self.n_cov, d), init_logdiag) + 1e-3 * torch.randn(self.n_cov, d))
        if cov != "diagonal":
            self.W_offdiag = nn.Parameter(1e-3 * torch.randn(self.n_cov, d, d) / d)
        else:
            self.register_parameter("W_offdiag", None)
        # optional point-estimate offset per output (quantile levels, bucket priors): no variance
        self.bias = nn.Parameter(torch.zeros(K)) if bias else None

    @property
    def prior_var(self) -> float:
        return float(self.log_prior_var.detach().exp())

    def chol(self) -> torch.Tensor:
        """L (n_cov, d, d) with S = L L^T (diagonal: the diagonal matrix of std devs)."""
        diag = torch.diag_embed(self.W_logdiag.exp())
        if self.W_offdiag is None:
            return diag
        return torch.tril(self.W_offdiag, diagonal=-1) + diag

    def cov_K_d_d(self) -> torch.Tensor:
        """S per output, (K, d, d) (or (1, d, d) for 'shared')."""
        L = self.chol()
        return L @ L.transpose(-1, -2)

    def variance(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """Epistemic variance v_nk = phi_n^T S_k phi_n, (n, K)."""
        if self.W_offdiag is None:
            return (phi_n_d**2) @ (2 * self.W_logdiag).exp().T
        L = self.chol()
        if self.n_cov == 1:
            return ((phi_n_d @ L[0]) ** 2).sum(-1, keepdim=True).expand(-1, self.K)
        # outputs in blocks, so the (n, block, d) intermediate stays under VARIANCE_BLOCK elements
        # at any class count (one einsum over all K outputs took +1.9 GB per 16k rows at K = 100)
        block = max(1, VARIANCE_BLOCK // max(1, phi_n_d.shape[0] * phi_n_d.shape[1]))
        return torch.cat([torch.einsum("nd,kde->nke", phi_n_d, L[k:k + block]).pow(2).sum(-1)
                          for k in range(0, L.shape[0], block)], dim=1)

    def mean(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        m = phi_n_d @ self.W_mean.T.to(phi_n_d.dtype)
        return m if self.bias is None else m + self.bias.to(phi_n_d.dtype)

    def kl(self) -> torch.Tensor:
        """KL(q || p) summed over the K rows (a shared S counts once per row)."""
        log_s0, d = self.log_prior_var.to(self.W_mean.dtype), self.d
        s0 = log_s0.exp()
        if self.W_offdiag is None:  # diagonal: no d x d matrix needed
            tr_S = (2 * self.W_logdiag).exp().sum(-1)
        else:
            tr_S = (self.chol() ** 2).sum((-1, -2))  # (n_cov,)
        logdet_S = 2 * self.W_logdiag.sum(-1)  # (n_cov,)
        rows = self.K // self.n_cov
        cov_part = rows * (tr_S / s0 - logdet_S + d * log_s0 - d).sum()
        return 0.5 * ((self.W_mean**2).sum() / s0 + cov_part)

    @torch.no_grad()
    def with_cov(self, cov: Cov) -> "VariationalLinear":
        """A copy with another covariance structure: same mean, bias and prior; the covariance
        starts at the diagonal of this one (averaged over outputs for 'shared').  Used to train
        with the cheap diagonal form and then refit the structure that is scored."""
        new = VariationalLinear(self.d, self.K, cov, self.prior_var, bias=self.bias is not None)
        new.log_prior_var.copy_(self.log_prior_var)
        new.log_prior_var.requires_grad_(self.log_prior_var.requires_grad)
        if self.bias is not None:
            new.bias.copy_(self.bias)
        if self.W_offdiag is None:
            var_K_d = (2 * self.W_logdiag.double()).exp()
        else:
            var_K_d = torch.diagonal(self.cov_K_d_d(), dim1=-2, dim2=-1).double()
        var_K_d = var_K_d.expand(self.K, -1)
        if cov == "diagonal":
            new.set_posterior(self.W_mean.detach(), var_K_d)
        else:  # S = diag(var): its Cholesky factor is diag(sqrt(var)), set without a factorisation
            var = var_K_d.mean(0, keepdim=True) if cov == "shared" else var_K_d
            new.W_mean.copy_(self.W_mean)
            new.W_logdiag.copy_((0.5 * var.clamp_min(1e-30).log()).to(new.W_logdiag))
            new.W_offdiag.zero_()
        return new

    @torch.no_grad()
    def set_posterior(self, mean_K_d: torch.Tensor, cov: torch.Tensor) -> None:
        """Load a posterior: cov is (n_cov, d, d) for dense/shared or (K, d) variances for diagonal."""
        self.W_mean.copy_(mean_K_d.to(self.W_mean))
        if self.W_offdiag is None:
            self.W_logdiag.copy_((0.5 * cov.clamp_min(1e-30).log()).to(self.W_logdiag))
            return
        L = _safe_cholesky(cov)
        self.W_logdiag.copy_(torch.diagonal(L, dim1=-2, dim2=-1).log().to(self.W_logdiag))
        self.W_offdiag.copy_(torch.tril(L, diagonal=-1).to(self.W_offdiag))

    @torch.no_grad()
    def refit_cov(
        self, phi_N_d: torch.Tensor, weight_fn: WeightFn, *, n_iter: int = 30, damping: float = 0.5,
        tol: float = 1e-4,
    ) -> int:
        """Set S to the ELBO-stationary covariance for the current mean and fixed features.

        For any head whose expected log-likelihood depends on S_k only through v_ik = phi_i^T S_k
        phi_i, stationarity gives S_k^{-1} = I/s0 + sum_i w_ik phi_i phi_i^T with
        w_ik = -2 d(ELL_i)/d(v_ik).  ``weight_fn`` maps v (N, K) to w (N, K); the fixed point is
        found by damped iteration on the precisions, until the largest change of v is below ``tol``
        relative to the largest v (the tests run it to 1e-10 and check the ELBO gradient).
        Returns the iterations used.
        """
        phi = phi_N_d.double()
        diagonal = self.cov == "diagonal"
        v = self.variance(phi.to(self.W_mean.dtype)).double()
        prec_prev = factor = None
        it = 0
        for it in range(1, n_iter + 1):
            w_N_K = weight_fn(v).clamp_min(0.0)
            if self.cov == "shared":
                w_N_K = w_N_K.mean(1, keepdim=True)
            prec = _precisions(phi, w_N_K, self.prior_var, diagonal)
            if prec_prev is not None:
                prec = torch.lerp(prec, prec_prev, damping)  # damping * prec_prev + (1 - damping) * prec
            factor = prec if diagonal else _safe_cholesky(prec)  # one factorisation per iteration
            v_new = _variances(phi, factor, diagonal, self.K)
            done = prec_prev is not None and float((v_new - v).abs().max()) <= tol * float(v.abs().max() + 1e-30)
            prec_prev, v = prec, v_new
            if done:
                break
        self.set_posterior(self.W_mean.detach(), _invert(factor, diagonal))
        return it


def _precisions(phi: torch.Tensor, w_N_K: torch.Tensor, s0: float, diagonal: bool) -> torch.Tensor:
    """Posterior precisions I/s0 + sum_i w_ik phi_i phi_i^T: (K', d, d) dense, or (K', d)
    diagonals (mean-field optimum)."""
    if diagonal:
        return 1.0 / s0 + w_N_K.T @ (phi**2)
    gram = torch.matmul(phi.T.contiguous(), w_N_K.T[:, :, None] * phi)  # (d, N) x (K', N, d)
    return gram + torch.eye(phi.shape[1], dtype=phi.dtype) / s0


def _invert(factor: torch.Tensor, diagonal: bool) -> torch.Tensor:
    """S from the precision's factor: 1 / P (diagonal) or P^{-1} from its Cholesky factor L."""
    if diagonal:
        return 1.0 / factor
    S = torch.cholesky_inverse(factor)
    return 0.5 * (S + S.transpose(-1, -2))


def _variances(phi: torch.Tensor, factor: torch.Tensor, diagonal: bool, K: int) -> torch.Tensor:
    """v_nk = phi^T P_k^{-1} phi (float64), (N, K): from the diagonal precisions, or from the
    precisions' Cholesky factors L (K', d, d) by one triangular solve."""
    if diagonal:
        return (phi**2) @ (1.0 / factor).T
    sol = torch.linalg.solve_triangular(factor, phi.T.unsqueeze(0).expand(factor.shape[0], -1, -1), upper=False)
    v = torch.linalg.vector_norm(sol, dim=1).square().T  # (N, K')
    return v.expand(-1, K) if v.shape[1] == 1 else v


def _safe_cholesky(M: torch.Tensor) -> torch.Tensor:
    """Cholesky in float64 with growing jitter (uq-math §10).  Only the lower triangle of M is
    read (LAPACK potrf), so a matrix symmetric up to rounding needs no symmetrising copy."""
    M = M.double()
    L, info = torch.linalg.cholesky_ex(M)
    if not bool((info > 0).any()):
        return L
    scale = torch.diagonal(M, dim1=-2, dim2=-1).mean(-1).abs().clamp_min(1e-12)[..., None, None]
    eye = torch.eye(M.shape[-1], dtype=M.dtype)
    eps = 1e-10
    while eps < 1.0:
        L, info = torch.linalg.cholesky_ex(M + eps * scale * eye)
        if not bool((info > 0).any()):
            return L
        eps *= 10
    raise RuntimeError("covariance is not positive definite even with jitter")


def posterior_of(layer: VariationalLinear, noise_var_K: torch.Tensor) -> GaussianLastLayer:
    """The head's posterior as the strategies' record (dense (K, d, d); shared: (1, d, d) + scale)."""
    with torch.no_grad():
        S = layer.cov_K_d_d().detach().double()
        scale = torch.ones(layer.K, dtype=torch.float64) if layer.cov == "shared" else None
        return GaussianLastLayer(cov_K_d_d=S, noise_var_K=noise_var_K.detach().double(), scale_K=scale)


# --------------------------------------------------------------------------- regression head


class GaussianHead(nn.Module):
    """VBLL regression head: y_k = w_k^T phi + eps_k, eps_k ~ N(0, sigma_k^2) (uq-math §1).

    The noise starts at the standardised target variance (log sigma^2 = 0), not at random
    (uq-math §0).  The loss is the per-output negative ELBO divided by N (reg weight = 1/N).
    """

    def __init__(
        self, d: int, K: int = 1, *, cov: Cov = "dense", prior_var: float = 1.0, reg_weight: float = 1.0,
        wishart_scale: float = 1e-2, dof: float = 1.0, noise_var_init: float = 1.0,
    ) -> None:
        super().__init__()
        self.layer = VariationalLinear(d, K, cov, prior_var)
        self.noise_logvar = nn.Parameter(torch.full((K,), math.log(noise_var_init)))
        self.reg_weight = reg_weight
        self.wishart_scale, self.nu = wishart_scale, (dof + K + 1) / 2

    @property
    def noise_var(self) -> torch.Tensor:
        return self.noise_logvar.exp()

    def forward(self, phi_n_d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean (n, K), epistemic variance (n, K))."""
        return self.layer.mean(phi_n_d), self.layer.variance(phi_n_d)

    def log_noise(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """log s^2, broadcastable to (n, K): one per output here (K,); per item in HeteroGaussianHead."""
        return self.noise_logvar

    def noise_var_n(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """Each item's noise variance of the first output (n,)."""
        return self.log_noise(phi_n_d).expand(phi_n_d.shape[0], -1)[:, 0].exp()

    def relative_noise_N(self, phi_N_d: torch.Tensor) -> torch.Tensor:
        """s^2(x_i) / exp(noise_logvar) per item (N, 1), float64, as the refit weighs the items: ones here."""
        return phi_N_d.new_ones(phi_N_d.shape[0], 1, dtype=torch.float64)

    def log_prior(self) -> torch.Tensor:
        """Log prior of the noise parameters (Wishart-type on s^2)."""
        return (self.nu * (-self.noise_logvar) - 0.5 * self.wishart_scale / self.noise_var).sum()

    def loss(self, phi_n_d: torch.Tensor, y_n_K: torch.Tensor) -> torch.Tensor:
        """-ELBO/N: E_q log N(y | w^T phi, s^2) = log N(y | mu^T phi, s^2) - v/(2 s^2), per output."""
        if y_n_K.dim() == 1:
            y_n_K = y_n_K[:, None]
        m, v = self(phi_n_d)
        log_s2 = self.log_noise(phi_n_d)
        ell = -0.5 * (math.log(2 * math.pi) + log_s2 + ((y_n_K - m) ** 2 + v) / log_s2.exp())
        return -ell.sum(1).mean() - self.reg_weight * (self.log_prior() - self.layer.kl())

    @torch.no_grad()
    def refit(self, phi_N_d: torch.Tensor, y_N_K: torch.Tensor, *, refit_noise: bool = True, n_iter: int = 20) -> None:
        """Exact ELBO optimum for fixed features (and, in HeteroGaussianHead, a fixed noise shape
        r_i = ``relative_noise_N``): BLR posterior given the noise, then the closed-form noise given
        q, alternated (coordinate ascent, each step exact).

        With reg weight lam the prior terms carry weight c = N lam against the summed data term, so
        q is the BLR posterior with item noise c sigma^2 r_i (exact Bayes for lam = 1/N).  Noise
        optimum: sigma_k^2 = (sum_i E_q r_ik^2 / r_i + c omega) / (N + 2 c nu).
        """
        if y_N_K.dim() == 1:
            y_N_K = y_N_K[:, None]
        phi, y = phi_N_d.double(), y_N_K.double()
        N, d = phi.shape
        c = N * self.reg_weight  # weight of the KL relative to the summed data term
        s0 = self.layer.prior_var
        diagonal = self.layer.cov == "diagonal"
        s2 = self.noise_var.double()
        rel_N_1 = self.relative_noise_N(phi)
        y_off = y if self.layer.bias is None else y - self.layer.bias.double()
        for _ in range(n_iter if refit_noise else 1):
            w = (1.0 / (c * s2)) / rel_N_1  # (N, K)
            if self.layer.cov == "shared":
                if not torch.allclose(s2, s2[:1].expand_as(s2)):
                    raise ValueError("a shared covariance needs equal noise across outputs")
                w = w[:, :1]
            full_prec = _precisions(phi, w, s0, False)
            Lp = _safe_cholesky(full_prec)
            rhs = (phi.T @ (y_off / rel_N_1) / (c * s2)).T  # (K, d)
            # exact mean, also mean-field
            mean = torch.cholesky_solve(rhs.unsqueeze(-1), Lp.expand(rhs.shape[0], -1, -1)).squeeze(-1)
            factor = torch.diagonal(full_prec, dim1=-2, dim2=-1) if diagonal else Lp
            v = _variances(phi, factor, diagonal, self.layer.K)
            if refit_noise:
                sq = (((y_off - phi @ mean.T) ** 2 + v) / rel_N_1).sum(0)
                s2 = (sq + c * self.wishart_scale) / (N + 2 * c * self.nu)
                if self.layer.cov == "shared":
                    s2 = s2.mean().expand_as(s2).clone()
        self.layer.set_posterior(mean, _invert(factor, diagonal))
        self.noise_logvar.copy_(s2.log().to(self.noise_logvar))


class HeteroGaussianHead(GaussianHead):
    """VBLL regression head with input-dependent noise: y = w^T phi + eps, eps ~ N(0, s^2(x)),
    log s^2(x) = a^T phi + b.

    Why: a single noise variance spreads the noisy region's variance over every item, so the
    predictive is too wide where the target is clean and too narrow where it is not (CRPS 0.57
    against 0.42 for a heteroscedastic MLP on benchmarks/stress_data.py's s_hetero at 300 labels).
    The weights keep GaussianHead's posterior; the noise is a MAP point estimate (prior N(0, s0 I)
    on a, the Wishart-type prior on b), so the epistemic variance phi^T S phi stays exact and costs
    what it did.  a starts at zero: the head starts homoscedastic.
    """

    LOG_NOISE_RANGE = (-12.0, 8.0)  # standardised targets: clamps log s^2(x) against overflow

    def __init__(self, d: int, *, cov: Cov = "dense", prior_var: float = 1.0, reg_weight: float = 1.0,
                 **kwargs: float) -> None:
        super().__init__(d, 1, cov=cov, prior_var=prior_var, reg_weight=reg_weight, **kwargs)
        self.noise_w = nn.Parameter(torch.zeros(d))

    def log_noise(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """log s^2(x) = a^T phi + b per item (n, 1)."""
        lo, hi = self.LOG_NOISE_RANGE
        return (phi_n_d @ self.noise_w.to(phi_n_d) + self.noise_logvar[0].to(phi_n_d)).clamp(lo, hi)[:, None]

    def relative_noise_N(self, phi_N_d: torch.Tensor) -> torch.Tensor:
        """r(x) = exp(a^T phi) (N, 1), float64: the noise shape the refit holds fixed."""
        lo, hi = self.LOG_NOISE_RANGE
        return (phi_N_d.double() @ self.noise_w.double()).clamp(lo - 8.0, hi + 8.0).exp()[:, None]

    def log_prior(self) -> torch.Tensor:
        """GaussianHead's prior on the noise scale and N(0, s0 I) on the noise weights a."""
        return super().log_prior() - 0.5 * self.noise_w.square().sum() / self.layer.prior_var


# --------------------------------------------------------------------------- classification head


class ClassificationHead(nn.Module):
    """VBLL discriminative classification: z = W phi + n, n_k ~ N(0, sigma_k^2) (uq-math §2).

    Trained by the Jensen bound E_q log softmax_y(z) >= m_y - logsumexp(m + (v + sigma^2)/2).
    """

    def __init__(
        self, d: int, C: int, *, cov: Cov = "dense", prior_var: float = 1.0, reg_weight: float = 1.0,
        wishart_scale: float = 1.0, dof: float = 1.0, bias: bool = False,
    ) -> None:
        super().__init__()
        self.layer = VariationalLinear(d, C, cov, prior_var, bias=bias)
        self.noise_logvar = nn.Parameter(torch.full((C,), -2.0))
        self.reg_weight = reg_weight
        self.wishart_scale, self.nu = wishart_scale, (dof + C + 1) / 2

    @property
    def noise_var(self) -> torch.Tensor:
        return self.noise_logvar.exp()

    def forward(self, phi_n_d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(mean logits m (n, C), epistemic logit variance v (n, C))."""
        return self.layer.mean(phi_n_d), self.layer.variance(phi_n_d)

    def jensen_bound(self, phi_n_d: torch.Tensor, y_n: torch.Tensor) -> torch.Tensor:
        """Lower bound on E_q[log softmax_y(z)] per item, (n,)."""
        m, v = self(phi_n_d)
        return m.gather(1, y_n.long()[:, None])[:, 0] - torch.logsumexp(m + 0.5 * (v + self.noise_var), dim=1)

    def loss(self, phi_n_d: torch.Tensor, y_n: torch.Tensor) -> torch.Tensor:
        """-ELBO/N: the mean negative Jensen bound plus reg_weight (KL - log prior of the noise).

        A diagonal S (the structure trained by default) takes ``_DiagonalJensenLoss``, one autograd
        node with its gradient written out: the training loop calls this every step and on 300
        items the two dozen small autograd nodes of the plain expression cost more than its
        arithmetic.  The plain expression (other structures) is the reference the tests hold it to.
        """
        layer = self.layer
        if layer.W_offdiag is None:
            bias = layer.bias if layer.bias is not None else torch.zeros((), dtype=phi_n_d.dtype)
            return _DiagonalJensenLoss.apply(
                phi_n_d, y_n.long(), layer.W_mean, layer.W_logdiag, bias, self.noise_logvar, layer.log_prior_var,
                (self.reg_weight, self.nu, self.wishart_scale),
            )
        return self.reference_loss(phi_n_d, y_n)

    def reference_loss(self, phi_n_d: torch.Tensor, y_n: torch.Tensor) -> torch.Tensor:
        """``loss`` as the plain autograd expression (any covariance structure)."""
        s2 = self.noise_var
        log_prior_noise = (self.nu * (-self.noise_logvar) - 0.5 * self.wishart_scale / s2).sum()
        return -self.jensen_bound(phi_n_d, y_n).mean() - self.reg_weight * (log_prior_noise - self.layer.kl())

    def refit_weights(self, phi_N_d: torch.Tensor) -> WeightFn:
        """w_ik = -2 d(bound_i)/d(v_ik) = ptilde_ik, ptilde = softmax(m + (v + sigma^2)/2)."""
        m = self.layer.mean(phi_N_d.to(self.layer.W_mean.dtype)).double().detach()
        s2 = self.noise_var.double().detach()
        return lambda v: torch.softmax(m + 0.5 * (v + s2), dim=1)

    @torch.no_grad()
    def refit(self, phi_N_d: torch.Tensor, y_N: torch.Tensor | None = None, n_iter: int = 30,
              tol: float = 1e-3) -> int:
        """ELBO-optimal S for the trained mean (labels enter only through the trained mean).

        ``tol`` 1e-3 (largest change of v relative to the largest v): on digits and Fashion-MNIST
        at 100-300 labels the pool's mutual information is then within 1e-4 (relative) of a
        1e-10 refit, with the same top-10 items and predicted classes, in 2-3 fewer iterations
        than at 1e-4 (each a Cholesky and a triangular solve per class); at 20 labels 1e-4 and
        1e-3 alike stop at the ``n_iter`` cap (MI within 4e-3)."""
        return _refit_scaled(self.layer, phi_N_d, self.refit_weights(phi_N_d), self.reg_weight, n_iter=n_iter,
                             tol=tol)

    def refit_joint(self, phi_N_d: torch.Tensor, y_N: torch.Tensor, rounds: int = 3, max_iter: int = 100) -> float:
        """The mean and the covariance both at a stationary point of the loss for the final features:
        ``rounds`` of L-BFGS on the mean (and the class intercepts, if any) under the current
        covariance, each followed by ``refit``.  Why: the 100 full-batch steps of a small-N fit leave
        the mean short of the optimum of its own loss (the head's logits too small: underconfident
        predictions on the image path, benchmarks/results/vbll_image_calibration_dev.md).  Returns the
        largest absolute entry of the loss's gradient in the mean after the last round."""
        layer = self.layer
        params = [layer.W_mean] + ([layer.bias] if layer.bias is not None else [])
        phi = phi_N_d.to(layer.W_mean.dtype).detach()
        for _ in range(rounds):
            opt = torch.optim.LBFGS(params, max_iter=max_iter, line_search_fn="strong_wolfe")

            def closure() -> torch.Tensor:
                opt.zero_grad()
                loss = self.reference_loss(phi, y_N)
                loss.backward()
                return loss

            with torch.enable_grad():
                opt.step(closure)
            self.refit(phi, y_N)
        with torch.enable_grad():
            (grad,) = torch.autograd.grad(self.reference_loss(phi, y_N), layer.W_mean)
        self.zero_grad(set_to_none=True)
        return float(grad.abs().max())


class _DiagonalJensenLoss(torch.autograd.Function):
    """ClassificationHead.loss for a diagonal S, forward and gradient in closed form.

    With var = exp(2 logdiag), s2 = exp(noise_logvar), s0 = exp(log_prior_var), lam = reg_weight:
      z = m + (phi^2 var^T + s2) / 2,  m = phi W^T + b,
      loss = mean_i [logsumexp(z_i) - m_iy] + lam (KL - log p(noise)),
      KL = (||W||^2 + sum var) / (2 s0) - sum logdiag + K d (log s0 - 1) / 2,
      -log p(noise) = sum_k nu lv_k + wishart_scale exp(-lv_k) / 2.
    Gradient, with P = softmax(z) / N and G = P - onehot(y) / N (the gradient in m):
      d phi = G W + phi * (P var),  d W = G^T phi + lam W / s0,  d b = sum_i G_i,
      d logdiag = var * (P^T phi^2 + lam / s0) - lam,
      d lv = s2 * sum_i P_i / 2 + lam (nu - wishart_scale exp(-lv) / 2),
      d log s0 = lam (K d - (||W||^2 + sum var) / s0) / 2.
    """

    @staticmethod
    def forward(ctx, phi, y, W, logdiag, bias, lv, log_s0, consts):  # type: ignore[override]
        lam, nu, wishart = consts
        N, Kd = phi.shape[0], W.numel()
        inv_s0 = math.exp(-float(log_s0))  # the parameter-only terms in Python floats: fewer tensor ops
        var, s2 = logdiag.mul(2.0).exp_(), lv.exp()
        phi2 = phi.square()
        m = torch.addmm(bias, phi, W.T) if bias.dim() else phi @ W.T
        z = torch.addmm(torch.add(m, s2, alpha=0.5), phi2, var.T, alpha=0.5)
        lse = torch.logsumexp(z, 1, keepdim=True)
        sq = float(W.square().sum() + var.sum())
        kl = 0.5 * inv_s0 * sq - float(logdiag.sum()) + 0.5 * Kd * (float(log_s0) - 1.0)
        neg_log_prior = float((nu * lv + (0.5 * wishart) / s2).sum())
        loss = (lse.sum() - m.gather(1, y[:, None]).sum()).div_(N).add_(lam * (kl + neg_log_prior))
        ctx.save_for_backward(phi, phi2, y, W, var, s2, (z - lse).exp_().div_(N))
        ctx.consts, ctx.has_bias, ctx.inv_s0, ctx.sq = consts, bias.dim() > 0, inv_s0, sq
        return loss

    @staticmethod
    def backward(ctx, g):  # type: ignore[override]
        phi, phi2, y, W, var, s2, P = ctx.saved_tensors
        lam, nu, wishart = ctx.consts
        N, need, lam_s0 = phi.shape[0], ctx.needs_input_grad, lam * ctx.inv_s0
        G = P.clone()
        G[torch.arange(N), y] -= 1.0 / N
        d_phi = torch.addmm(phi * (P @ var), G, W).mul_(g) if need[0] else None
        d_W = torch.addmm(W, G.T, phi, beta=lam_s0).mul_(g) if need[2] else None
        d_logdiag = (P.T @ phi2).add_(lam_s0).mul_(var).sub_(lam).mul_(g) if need[3] else None
        d_bias = G.sum(0).mul_(g) if need[4] and ctx.has_bias else None
        d_lv = (P.sum(0).mul_(0.5 * s2) - (0.5 * wishart * lam) / s2).add_(lam * nu).mul_(g) if need[5] else None
        d_log_s0 = g * (0.5 * lam * (W.numel() - ctx.sq * ctx.inv_s0)) if need[6] else None
        return d_phi, None, d_W, d_logdiag, d_bias, d_lv, d_log_s0, None


def _refit_scaled(
    layer: VariationalLinear, phi_N_d: torch.Tensor, weight_fn: WeightFn, reg_weight: float, n_iter: int = 30,
    tol: float = 1e-4,
) -> int:
    """refit_cov for a loss normalised per item with KL weight lam: relative to the summed data
    term the KL has weight c = N lam, so the stationary precision is I/s0 + sum_i (w_ik / c) phi phi^T
    (a tempered posterior; exact Bayes for lam = 1/N)."""
    c = phi_N_d.shape[0] * reg_weight
    return layer.refit_cov(phi_N_d, lambda v: weight_fn(v) / c, n_iter=n_iter, tol=tol)


def class_scores(m_n_C: torch.Tensor, v_n_C: torch.Tensor, noise_C: torch.Tensor,
                 parts: tuple[str, ...] = ("mi_n", "mi_probit_n")) -> dict[str, torch.Tensor]:
    """Sample-free classification quantities from Gaussian logits.

    Always: probs_n_C, the probit approximation with epistemic + noise variance (the predictive);
    entropy_map_n, H[softmax(m)]; logit_var_n, sum_k v_k.  ``parts`` adds the costlier scores:
    mi_n, the Laplace-bridge Dirichlet mutual information on the epistemic part (uq-math §2(c));
    mi_probit_n, H[probit(m, v)] - H[softmax(m)] clamped at 0 (§2(f)).  A learner asks only for
    the score it reports, so scoring does no unused work (a digamma pass and a softmax per item).
    """
    unknown = set(parts) - {"mi_n", "mi_probit_n"}
    if unknown:
        raise ValueError(f"unknown class score part(s) {sorted(unknown)}; use mi_n, mi_probit_n")
    # the predictive in float32 (what it is returned in: a softmax of C numbers loses nothing
    # that float64 would keep); the scores below, differences of entropies, in float64
    # v_n_C may be (n, 1) for a covariance shared by every class: broadcast, not materialised
    m32, v32 = m_n_C.float(), v_n_C.float().clamp_min(1e-12)
    scaled = (v32 + noise_C.float()).mul_(math.pi / 8).add_(1).rsqrt_().mul_(m32)  # kappa m, in place
    probs = torch.softmax(scaled, dim=1)
    logit_var = v32.sum(1) if v32.shape[1] == m32.shape[1] else v32[:, 0] * m32.shape[1]
    out = {"probs_n_C": probs, "logit_var_n": logit_var, "entropy_map_n": logit_entropy_n(m32)}
    if not parts:
        return out
    m, v = m_n_C.double(), v_n_C.double().clamp_min(1e-12).expand_as(m_n_C)
    if "mi_n" in parts:
        out["mi_n"] = laplace_bridge_mi(m, v).float()
    if "mi_probit_n" in parts:
        h_map = entropy_n(torch.softmax(m, dim=1))
        h_probit = entropy_n(torch.softmax((1 + math.pi / 8 * v).rsqrt() * m, dim=1))
        out["mi_probit_n"] = (h_probit - h_map).clamp_min(0).float()
    return out


def laplace_bridge_mi(m_n_C: torch.Tensor, v_n_C: torch.Tensor) -> torch.Tensor:
    """Mutual information of the Laplace-bridge Dirichlet for z ~ N(m, diag(v)), (n,), float64.

    Zero-mean correction, alpha_k = (1 - 2/C + e^{m_k} sum_l e^{-m_l} / C^2) / Sigma_kk, then
    MI = H[pbar] + sum_k pbar_k [psi(alpha_k + 1) - psi(alpha_0 + 1)], evaluated as
    log alpha_0 - psi(alpha_0 + 1) + sum_k pbar_k [psi(alpha_k + 1) - log alpha_k] (the same value,
    since H[pbar] = log alpha_0 - sum_k pbar_k log alpha_k, with fewer passes over (n, C) and no
    difference of two large digammas).  A variance that is the same for every class (a shared
    covariance: a (n, 1) column or an expanded view) is kept as one column.
    """
    m = m_n_C.double()
    C = m.shape[1]
    if v_n_C.shape[1] == 1 or v_n_C.stride(1) == 0:  # row-constant: vsum = C v, Sigma_kk = v (1 - 1/C)
        v = v_n_C[:, :1].double().clamp_min(1e-12)
        m = m - m.mean(1, keepdim=True)
        s_kk = (v * (1 - 1.0 / C)).clamp_min(1e-12)
    else:
        v = v_n_C.double().clamp_min(1e-12)
        vsum = v.sum(1, keepdim=True)
        m = m - v * m.sum(1, keepdim=True) / vsum
        s_kk = (v - v**2 / vsum).clamp_min(1e-12)
    log_term = m + (torch.logsumexp(-m, dim=1, keepdim=True) - 2 * math.log(C))
    alpha = log_term.clamp_(max=600).exp_().add_(1 - 2.0 / C).div_(s_kk).clamp_min_(1e-12)
    a0 = alpha.sum(1)
    gap = torch.digamma(alpha + 1).sub_(alpha.log())  # psi(a + 1) - log a > 0
    mi = a0.log() - torch.digamma(a0 + 1) + (alpha * gap).sum(1) / a0
    return mi.clamp_min(0.0)
