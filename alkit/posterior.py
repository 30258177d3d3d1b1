"""The algebra of the Gaussian last-layer posterior, shared by the posterior-driven acquisitions
(alkit/acquisition/) and the batch selectors (alkit/strategies/diverse.py): output covariances,
the observation model of a label, the cycle's EPIG targets, the top-two decision, and the
expected decision risk.  A leaf beside types.py and distributions.py: it imports only those (and errors.py).

Every learner with ``posterior()`` (VBLL, Laplace, the dual encoder) describes output k of an item
with last-layer features phi as z_k = w_k^T phi (+ noise), w_k ~ N(mu_k, scale_k S_g(k)), outputs
independent (types.GaussianLastLayer).  So for any two items the k-th outputs are jointly Gaussian
with covariance scale_k phi^T S_g(k) phi', which is all BALD and EPIG need from the model.

The label enters through a Gaussian observation model (the Laplace / GGN linearisation): output k
of an item is observed with noise variance r_k.  Regression heads observe with their noise
variance sigma_k^2; a class label carries Fisher information p_k (1 - p_k) about logit k under the
predictive p, so r_k = 1 / (p_k (1 - p_k)): confidently predicted items are barely informative
however uncertain their logits, which is what keeps posterior-driven scores off outliers the
model already classifies (uq-math.md §9b; DESIGN.md "Strategies").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from alkit.errors import AcquisitionError
from alkit.types import GaussianLastLayer, Prediction

MIN_FISHER = 1e-6  # p(1-p) floor: an r_k of at most 1e6 keeps the algebra finite at p = 0 or 1


@dataclass
class OutputCovariance:
    """The posterior's covariances grouped by distinct matrix: ``cov_G_d_d`` (float64),
    ``group_K`` (which matrix output k uses) and ``scale_K`` (its multiplier)."""

    cov_G_d_d: torch.Tensor
    group_K: torch.Tensor
    scale_K: torch.Tensor
    bias_feature: bool

    @classmethod
    def of(cls, posterior: GaussianLastLayer, n_outputs: int) -> "OutputCovariance":
        cov = torch.as_tensor(posterior.cov_K_d_d, dtype=torch.float64)
        cov = 0.5 * (cov + cov.transpose(-1, -2))
        G = cov.shape[0]
        if G not in (1, n_outputs):
            raise ValueError(f"the posterior has {G} covariances for {n_outputs} outputs")
        scale = (torch.ones(n_outputs, dtype=torch.float64) if posterior.scale_K is None
                 else torch.as_tensor(posterior.scale_K, dtype=torch.float64).reshape(-1).expand(n_outputs))
        group = torch.arange(n_outputs) if G == n_outputs else torch.zeros(n_outputs, dtype=torch.long)
        return cls(cov, group, scale.clone(), bool(posterior.bias_feature))

    def features(self, embedding_n_d: torch.Tensor) -> torch.Tensor:
        """phi (n, d') in float64, with the bias 1 appended where the head has one."""
        phi = torch.as_tensor(embedding_n_d).double()
        if self.bias_feature:
            phi = torch.cat([phi, torch.ones(phi.shape[0], 1, dtype=phi.dtype)], 1)
        if phi.shape[1] != self.cov_G_d_d.shape[-1]:
            raise ValueError(f"embedding has {phi.shape[1]} features, the posterior {self.cov_G_d_d.shape[-1]}")
        return phi

    def variance_n_K(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """Var z_k per item: scale_k phi^T S_g(k) phi, (n, K)."""
        quad_n_G = torch.einsum("nd,gde,ne->ng", phi_n_d, self.cov_G_d_d, phi_n_d)
        return (quad_n_G[:, self.group_K] * self.scale_K).clamp_min(0.0)

    def variance_for(self, pred: Prediction, phi_n_d: torch.Tensor) -> torch.Tensor:
        """``variance_n_K`` of the Prediction's items, taken from ``extras['posterior_var_n_K']``
        where the learner reports it (VBLL computes that very quadratic form in its predict; doing it
        again here in float64 was the dearest step of a dense cycle), else computed."""
        var = pred.extras.get("posterior_var_n_K")
        if var is not None and tuple(var.shape) == (phi_n_d.shape[0], int(self.group_K.shape[0])):
            return var.double().clamp_min(0.0)
        return self.variance_n_K(phi_n_d)

    def cross_G_d_m(self, phi_m_d: torch.Tensor) -> torch.Tensor:
        """S_g phi_j for m items, (G, d, m): one factor of every cross-covariance with them."""
        return torch.einsum("gde,me->gdm", self.cov_G_d_d, phi_m_d)

    def covariance_n_K_m(self, phi_n_d: torch.Tensor, cross_G_d_m: torch.Tensor) -> torch.Tensor:
        """Cov(z_k(x_i), z_k(x_j)) for n items against the m items of ``cross_G_d_m``, (n, K, m)."""
        c_n_G_m = torch.einsum("nd,gdm->ngm", phi_n_d, cross_G_d_m)
        return c_n_G_m[:, self.group_K, :] * self.scale_K[None, :, None]


def label_probs(pred: Prediction) -> torch.Tensor | None:
    """The categorical label distribution at the linearisation point: softmax of the mean logits
    (``extras['logits_n_C']``, a bucket head's ``extras['bucket_logits_n_K']``) where the
    learner reports them, else its class probabilities; None for Gaussian outputs.

    Why the mean logits and not the predictive: the Fisher information of the label about the
    logits is taken where the model is linearised (the posterior mean, as in the GGN/Laplace
    approximation); the predictive is already flattened by the epistemic variance, which would
    make every uncertain item look like a boundary item and count that variance twice."""
    for key in ("logits_n_C", "bucket_logits_n_K"):
        logits = pred.extras.get(key)
        if logits is not None:
            return torch.softmax(logits.double(), dim=-1)
    if pred.probs_n_C is not None:
        return pred.probs_n_C
    return pred.extras.get("bucket_probs_n_K")


def observation_noise_n_K(probs_n_C: torch.Tensor | np.ndarray | None, posterior: GaussianLastLayer,
                          n: int, n_outputs: int, noise_n: torch.Tensor | None = None) -> torch.Tensor:
    """r_k per item (n, K), float64: 1 / (p_k (1 - p_k)) from class probabilities, else the item's
    own noise variance where the head predicts one (``noise_n``, the Prediction's ``noise_var_n``:
    the heteroscedastic head), else the posterior's noise variance (regression heads)."""
    if probs_n_C is None and noise_n is not None:
        noise = torch.as_tensor(noise_n, dtype=torch.float64).reshape(-1)
        if noise.shape[0] != n or not bool((noise > 0).all()):
            raise ValueError(f"noise_var_n must hold one positive variance per item ({n}), got shape {tuple(noise.shape)}")
        return noise[:, None].expand(n, n_outputs).clone()
    if probs_n_C is not None:
        p = torch.as_tensor(probs_n_C, dtype=torch.float64)
        if p.shape != (n, n_outputs):
            raise ValueError(f"probs_n_C must be ({n}, {n_outputs}), got {tuple(p.shape)}")
        return 1.0 / (p * (1.0 - p)).clamp_min(MIN_FISHER)
    noise = torch.as_tensor(posterior.noise_var_K, dtype=torch.float64).reshape(-1)
    if noise.shape[0] not in (1, n_outputs) or not bool((noise > 0).all()):
        raise ValueError(f"the posterior's noise_var_K must be positive, one per output; got {noise.tolist()}")
    return noise.expand(n_outputs).expand(n, -1).clone()


def n_outputs_of(posterior: GaussianLastLayer, probs_n_C: torch.Tensor | None) -> int:
    """K: the classes when there are class probabilities, else the posterior's outputs."""
    if probs_n_C is not None:
        return int(probs_n_C.shape[1])
    K = max(int(torch.as_tensor(posterior.cov_K_d_d).shape[0]), int(torch.as_tensor(posterior.noise_var_K).numel()))
    if posterior.scale_K is not None:
        K = max(K, int(torch.as_tensor(posterior.scale_K).numel()))
    return K


def decision_parts(probs_n_C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The top-two decision of each item: sign vector s = e_a - e_b (n, C) of its two most
    probable classes a, b, and the noise 1/F of observing it, F = (p_a + p_b) q (1 - q) with
    q = p_a / (p_a + p_b): the Fisher information a label carries about the logit difference
    z_a - z_b (it is one of the two with probability p_a + p_b, then Bernoulli(q))."""
    p = probs_n_C.double()
    n = p.shape[0]
    top = p.topk(2, dim=1)
    rows = torch.arange(n)
    sign = torch.zeros_like(p)
    sign[rows, top.indices[:, 0]] = 1.0
    sign[rows, top.indices[:, 1]] = -1.0
    pair = top.values.sum(1)
    q = top.values[:, 0] / pair.clamp_min(1e-12)
    fisher = (pair * q * (1.0 - q)).clamp_min(MIN_FISHER)
    return sign, 1.0 / fisher


@dataclass
class DecisionView:
    """What every top-two-decision score reads from a Prediction and the posterior: the label
    distribution at the linearisation point, the output covariance, the features, the output
    variances, each item's decision (sign, noise) and its mean logit margin m_a - m_b >= 0."""

    probs_n_C: torch.Tensor
    cov: OutputCovariance
    phi_n_d: torch.Tensor
    var_n_K: torch.Tensor
    sign_n_K: torch.Tensor
    noise_n: torch.Tensor
    margin_n: torch.Tensor

    @classmethod
    def of(cls, pred: Prediction, posterior: GaussianLastLayer) -> "DecisionView":
        probs = label_probs(pred)
        cov = OutputCovariance.of(posterior, probs.shape[1])
        phi = cov.features(pred.embedding_n_d)
        sign, noise = decision_parts(probs)
        return cls(probs, cov, phi, cov.variance_for(pred, phi), sign, noise, decision_margin_n(pred, probs, sign))


def decision_margin_n(pred: Prediction, probs_n_C: torch.Tensor, sign_n_K: torch.Tensor) -> torch.Tensor:
    """m_a - m_b >= 0 of each item's top-two decision from the mean logits (or log-probabilities)."""
    logits = pred.extras.get("logits_n_C")
    logits = probs_n_C.clamp_min(1e-300).log() if logits is None else logits.double()
    return (sign_n_K * logits).sum(1).clamp_min(0.0)


def gaussian_information_n(cov_n_K_M: torch.Tensor, total_var_n_K: torch.Tensor,
                           total_var_M_K: torch.Tensor) -> torch.Tensor:
    """mean_j sum_k -1/2 log(1 - c^2 / (Var y_k Var y*_jk)) for a block of rows, float64 (n,)."""
    rho2 = cov_n_K_M.square() / (total_var_n_K[:, :, None] * total_var_M_K.T[None])
    return (-0.5 * torch.log1p(-rho2.clamp(max=1.0 - 1e-12))).sum(1).mean(1)

N_TARGETS = 256  # EPIG's target sample per cycle: pool items standing for where predictions matter


@dataclass
class EPIGTargets:
    """The cycle's target sample, prepared once: for the Gaussian form the factors S_g phi*_j,
    the target variances v*_jk and noises r*_jk; for members their probabilities."""

    cov: OutputCovariance | None = None
    cross_G_d_M: torch.Tensor | None = None
    var_M_K: torch.Tensor | None = None
    noise_M_K: torch.Tensor | None = None
    member_probs_M_S_C: torch.Tensor | None = None
    decision_sign_M_K: torch.Tensor | None = None  # classification: e_a - e_b of each target's top two classes
    decision_noise_M: torch.Tensor | None = None  # 1 / Fisher of that decision
    decision_margin_M: torch.Tensor | None = None  # mean logit margin m_a - m_b >= 0 of that decision
    objective: str = "information"  # what a batch is greedy in: "information" (EPIG) or "risk" (decision-risk)

    @property
    def n_targets(self) -> int:
        ref = self.var_M_K if self.var_M_K is not None else self.member_probs_M_S_C
        return 0 if ref is None else int(ref.shape[0])

    @classmethod
    def from_prediction(cls, pred: Prediction, posterior: GaussianLastLayer | None,
                        objective: str = "information") -> "EPIGTargets":
        """Targets from the learner's Prediction for the target items (and its posterior)."""
        members = pred.extras.get("member_probs_n_M_C")
        if posterior is None:
            if members is None:
                raise AcquisitionError("the epig acquisition needs a Gaussian last-layer posterior (scorers "
                                       "vbll, laplace) or ensemble members (ensemble, mc-dropout, sve)")
            return cls(member_probs_M_S_C=members.double())
        probs = label_probs(pred)
        K = n_outputs_of(posterior, probs)
        cov = OutputCovariance.of(posterior, K)
        phi = cov.features(pred.embedding_n_d)
        sign = noise = margin = None
        if probs is not None and pred.probs_n_C is not None:
            sign, noise = decision_parts(probs)
            margin = decision_margin_n(pred, probs, sign)
        return cls(cov, cov.cross_G_d_m(phi), cov.variance_for(pred, phi),
                   observation_noise_n_K(probs, posterior, phi.shape[0], K, pred.extras.get("noise_var_n")),
                   None, sign, noise, margin, objective)


_NODES = 24
_X, _W = np.polynomial.legendre.leggauss(_NODES)
_X_Q = torch.as_tensor(_X, dtype=torch.float64)
_W_Q = torch.as_tensor(_W, dtype=torch.float64)
_ROWS = 256
_NEGLIGIBLE = 1e-7  # targets whose decision risk is below this are left out (error <= 1e-7 per target)
_FAR = 40.0  # |standardised| thresholds beyond this are +-infinity for Phi in float64


def bivariate_normal_cdf(h: torch.Tensor, k: torch.Tensor, rho: torch.Tensor) -> torch.Tensor:
    """P(X < h, Y < k) for standard normals with correlation rho in [0, 1), elementwise, float64:
    Phi(h) Phi(k) + 1/(2 pi) int_0^asin(rho) exp(-(h^2 - 2 h k sin t + k^2) / (2 cos^2 t)) dt, the
    integrand smooth on the whole range, so Gauss-Legendre on ``_NODES`` nodes is exact to ~1e-12."""
    t_max = torch.asin(rho.clamp(0.0, 1.0 - 1e-15))
    t = t_max[..., None] * (_X_Q + 1) / 2
    sin, cos2 = torch.sin(t), torch.cos(t).square()
    hq, kq = h[..., None], k[..., None]
    f = torch.exp(-(hq * hq - 2 * hq * kq * sin + kq * kq) / (2 * cos2))
    integral = (f * _W_Q).sum(-1) * t_max / 2
    return torch.special.ndtr(h) * torch.special.ndtr(k) + integral / (2 * math.pi)


def expected_risk(margin_M: torch.Tensor, var_M: torch.Tensor, post_var_n_M: torch.Tensor) -> torch.Tensor:
    """R(m, s^2, s'^2) = E Phi(-|m'| / s'), m' ~ N(m, s^2 - s'^2), per (item, target), float64.

    In closed form, with t^2 = s^2 - s'^2, h = -m / s, k = -m / t and rho = t / s:
    R = Phi(h) + Phi(k) - 2 Phi_2(h, k; rho) (split on the sign of m' and write each half as a
    bivariate normal probability of (m' + s' Z, m'))."""
    s0 = var_M.clamp_min(1e-300).sqrt()[None].expand_as(post_var_n_M)
    t = (var_M[None] - post_var_n_M).clamp_min(0.0).sqrt()
    m = margin_M[None].expand_as(post_var_n_M)
    h = (-m / s0).clamp_min(-_FAR)
    k = torch.where(t > 0, -m / t.clamp_min(1e-300), torch.where(m > 0, -_FAR, 0.0)).clamp_min(-_FAR)
    rho = t / s0
    return (torch.special.ndtr(h) + torch.special.ndtr(k) - 2 * bivariate_normal_cdf(h, k, rho)).clamp_min(0.0)


def risk_reduction_n(c_n_M: torch.Tensor, total_var_n: torch.Tensor, margin_M: torch.Tensor,
                     var_M: torch.Tensor, base_var_M: torch.Tensor | None = None) -> torch.Tensor:
    """mean_j [R(m_j, s0_j^2, s_j^2) - R(m_j, s0_j^2, s_j^2 - c_nj^2 / total_var_n)]: the risk
    reduction of one more label at each of n items, when the targets' decisions already have
    variance ``var_M`` after a batch so far (``base_var_M``: their variance before it)."""
    base = var_M if base_var_M is None else base_var_M
    now = expected_risk(margin_M, base, var_M[None])[0]  # = Phi(-m / s) before any pick
    M = now.shape[0]
    live = now > _NEGLIGIBLE  # a target's reduction is at most its risk now: skip the settled ones
    c_n_M, margin_M, base, var_M, now = c_n_M[:, live], margin_M[live], base[live], var_M[live], now[live]
    out = torch.zeros(c_n_M.shape[0], dtype=torch.float64)
    for lo in range(0, c_n_M.shape[0], _ROWS):
        post = (var_M[None] - c_n_M[lo:lo + _ROWS].square() / total_var_n[lo:lo + _ROWS, None]).clamp_min(0.0)
        out[lo:lo + _ROWS] = (now[None] - expected_risk(margin_M, base, post)).sum(1) / M
    return out
