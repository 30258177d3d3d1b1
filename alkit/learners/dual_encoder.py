"""BayesVLM: post-hoc Laplace on the projections of a dual (image-text) encoder (uq-math §5).

Why: a CLIP/SigLIP-style model scores an image against class prompts by a cosine similarity of
two projected embeddings.  Making only the two final linear projections Gaussian (a KFAC/GGN
Laplace posterior around the trained weights) turns each embedding into a Gaussian whose
covariance grows where the encoder features are unlike those the projection was fitted on; the
cosine's mean and variance follow in closed form (ProbCosine), so one forward pass gives a
zero-shot prediction *and* an epistemic score for active learning.

Model.  Image embedding g = P a (+ b) (+ r): a (p,) the frozen encoder's pre-projection feature
(with a trailing 1 when the projection has a bias), P (D, p) the projection, r a deterministic
residual (SigLIP's attention-pooling head adds one).  Text embedding h = Q t likewise.
Logits z_c = s cos(g, h_c) (+ bias for SigLIP).

Curvature (GGN w.r.t. the unnormalised embedding, per item; J = (I - g^ g^T)/||g||, targets t_c
unit-normalised, p = softmax(z)):

    InfoNCE:  H = s^2 J (sum_c p_c t_c t_c^T - (T^T p)(T^T p)^T) J
    SigLIP:   H = s^2 J (sum_j sig(z_j)(1 - sig(z_j)) t_j t_j^T) J

Neither depends on the labels, so unlabeled pairs can be used.  KFAC factors
A = sum a a^T / sqrt(n), B = sum H / sqrt(n) (so A (x) B ~ (1/n) sum a a^T (x) sum H).
Posterior (damped Kronecker, as in BayesVLM):

    A~ = sqrt(n') A + sqrt(lam) I,  B~ = sqrt(n') B + sqrt(lam) I,  Cov(vec P) = A~^-1 (x) B~^-1
    Cov(g | a) = (a^T A~^-1 a) B~^-1            (diagonal kept by default, as the reference)

n' is a pseudo-data count (1 for zero-shot).  The prior precision lam maximises the Laplace
evidence with the *correct* Kronecker log-determinant (uq-math §5, DERIVED):

    -lam/2 ||P*||^2 + (pD/2) log lam - 1/2 [D logdet A~ + p logdet B~]

ProbCosine (expected norms, exact moments of the inner product of independent Gaussians):

    E[cos] ~ mu_g . mu_h / sqrt(E||g||^2 E||h||^2)
    Var[cos] ~ (mu_g^2 . v_h + v_g . mu_h^2 + v_g . v_h) / (E||g||^2 E||h||^2)       ('diag')
    Var[cos] ~ (k_g mu_h^T B_g^-1 mu_h + k_h mu_g^T B_h^-1 mu_g + k_g k_h tr(B_g^-1 B_h^-1)) / (..)
                                                                  ('full': the Kronecker covariance)

Predictive: probit softmax(m / sqrt(1 + pi/8 v)).  Epistemic scores: 'var' = sum_c v_c (the
reference's), 'mi' = mutual information between the label and the projections (fixed-seed Monte
Carlo in logit space, shared eps across items), 'embed' = tr Cov(g | a) = (a^T A~^-1 a) tr B~^-1
(the image embedding's own uncertainty; unlike the cosine scores it keeps the feature's scale,
which is what separated unseen classes best in examples/dual_encoder_fashion).  The per-logit
probit is accurate when the classes' logit variances are comparable (tested against Monte Carlo);
when they differ widely it is no better than the MAP softmax, so the Monte Carlo predictive is
returned alongside (``probs_mc_n_C``).  float64 for every inverse and log-determinant.

Entry points::

    feats = hf_dual_encoder(model)                     # CLIPModel / SiglipModel adapter
    img = feats.image_inputs(pixel_values)             # PreProjection(a, offset)
    txt = feats.text_inputs(input_ids, attention_mask)
    # or, from precomputed features: LinearProjection(W_D_p, b_D) + PreProjection(a_n_p)
    P, Q = feats.image_projection(), feats.text_projection()
    fac = infonce_kfac(img, P, Q(txt), feats.logit_scale)      # KronFactors (sums); siglip_kfac too
    post_img = fit_kron_posterior(fac, P, n_pseudo=1.0)         # tunes lam by the evidence
    vlm = feats.bayes_vlm(post_img, post_txt)                   # or BayesVLM(P, Q, post_img, post_txt, s)
    out = vlm.zero_shot(img, class_prompts)    # DualEncoderOutput: probit/MC probs, logit var, scores
    learner = DualEncoderLearner(vlm, class_prompts, fac)       # Learner: fine-tunes P on labels

``DualEncoderLearner`` is the Learner (alkit/types.py) for a pool of pre-projection image features
with fixed class prompts: ``fit`` fine-tunes the image projection from its pretrained value on the
labeled items (cross-entropy over the class prompts, Gaussian anchor at the pretrained weights
with precision ``finetune_prior_precision``; None takes the evidence-tuned zero-shot prior, which
is strong: pass a small value, e.g. 1, when a few labels should move the projection),
refits the Laplace posterior with the pretraining and labeled curvature, and ``predict`` returns
the probit predictive with the epistemic score.  Its ``Prediction.embedding_n_d`` is the
pre-projection feature a (the posterior's phi), the projected mean embedding is in ``extras``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from alkit.distributions import entropy_n
from alkit.learners.laplace import argmax_log10, eigh64, kron_logdet, probit_probs, sym
from alkit.types import GaussianLastLayer, Prediction

Loss = Literal["infonce", "siglip"]
Covariance = Literal["diag", "full"]
Score = Literal["var", "mi", "embed"]

__all__ = [
    "BayesVLM", "DualEncoderLearner", "DualEncoderOutput", "HFDualEncoder", "KronFactors",
    "KronPosterior", "LinearProjection", "PreProjection", "fit_kron_posterior", "hf_dual_encoder",
    "infonce_ggn", "infonce_kfac", "kron_log_evidence", "kron_logdet", "mc_mutual_information",
    "prob_cosine", "prob_cosine_kron", "probit_probs", "siglip_ggn", "siglip_kfac",
    "tune_kron_prior_precision",
]


# --------------------------------------------------------------------------- projections


@dataclass
class PreProjection:
    """What the frozen encoder hands the projection: a (n, p) and an optional residual (n, D)
    added after it (SigLIP's pooling head); ``offset_n_D`` is None for CLIP and plain heads."""

    a_n_p: torch.Tensor
    offset_n_D: torch.Tensor | None = None

    def __len__(self) -> int:
        return int(self.a_n_p.shape[0])

    def subset(self, idx: Any) -> "PreProjection":
        return PreProjection(self.a_n_p[idx], None if self.offset_n_D is None else self.offset_n_D[idx])

    def double(self) -> "PreProjection":
        return PreProjection(self.a_n_p.double(), None if self.offset_n_D is None else self.offset_n_D.double())


@dataclass
class LinearProjection:
    """g = W a + b (+ offset).  The bias is folded in as a trailing input 1, so the Laplace
    posterior is over theta = [W | b] (D, p+1) and ``phi`` is the input it multiplies."""

    weight_D_p: torch.Tensor
    bias_D: torch.Tensor | None = None

    @property
    def theta_D_q(self) -> torch.Tensor:
        """The weights the posterior is over, float64 (D, q); q = p (+1 with a bias)."""
        W = self.weight_D_p.double()
        return W if self.bias_D is None else torch.cat([W, self.bias_D.double()[:, None]], 1)

    def phi(self, a_n_p: torch.Tensor) -> torch.Tensor:
        """The posterior's input features (n, q): a with a trailing 1 where there is a bias."""
        if self.bias_D is None:
            return a_n_p
        return torch.cat([a_n_p, torch.ones(a_n_p.shape[0], 1, dtype=a_n_p.dtype)], 1)

    def __call__(self, x: PreProjection) -> torch.Tensor:
        g = x.a_n_p @ self.weight_D_p.to(x.a_n_p.dtype).T
        if self.bias_D is not None:
            g = g + self.bias_D.to(g.dtype)
        return g if x.offset_n_D is None else g + x.offset_n_D.to(g.dtype)


# --------------------------------------------------------------------- output-space GGNs


def _normalise(x_n_D: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    norm_n = x_n_D.norm(dim=-1).clamp_min(1e-12)
    return x_n_D / norm_n[:, None], norm_n


def _jt(g_n_D: torch.Tensor, targets_T_D: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(J t_c) for every item and target, (n, T, D), and cos(g, t_c) (n, T); J = (I - g^g^T)/||g||."""
    ghat, gnorm = _normalise(g_n_D)
    that, _ = _normalise(targets_T_D)
    cos_n_T = ghat @ that.T
    jt = (that[None] - cos_n_T[:, :, None] * ghat[:, None, :]) / gnorm[:, None, None]
    return jt, cos_n_T


def _chunk_size(per_item: int, budget: int = 2**22) -> int:
    """Items per chunk so that the (chunk, T, D) intermediate stays ~32 MB in float64."""
    return max(1, budget // max(per_item, 1))


def infonce_ggn(
    g_n_D: torch.Tensor, targets_T_D: torch.Tensor, scale: float, *, reduce: bool = True
) -> torch.Tensor:
    """GGN of the InfoNCE (softmax over targets) NLL w.r.t. the unnormalised embedding g.

    Label-free: diag(p) - p p^T does not depend on which target is the positive.  Returns the
    sum over items (D, D), or per item (n, D, D) with ``reduce=False``; float64.
    """
    g = g_n_D.double()
    T = targets_T_D.double()
    n, D = g.shape
    out = torch.zeros(D, D, dtype=torch.float64) if reduce else torch.empty(n, D, D, dtype=torch.float64)
    step = _chunk_size(T.shape[0] * D)
    for s0 in range(0, n, step):
        jt, cos = _jt(g[s0 : s0 + step], T)
        p = (scale * cos).softmax(-1)
        m = torch.einsum("nt,ntd->nd", p, jt)
        if reduce:
            out += scale**2 * (torch.einsum("nt,ntd,nte->de", p, jt, jt) - m.T @ m)
        else:
            out[s0 : s0 + jt.shape[0]] = scale**2 * (
                torch.einsum("nt,ntd,nte->nde", p, jt, jt) - m[:, :, None] * m[:, None, :]
            )
    return sym(out)


def siglip_ggn(
    g_n_D: torch.Tensor, targets_T_D: torch.Tensor, scale: float, bias: float = 0.0, *, reduce: bool = True
) -> torch.Tensor:
    """GGN of the SigLIP (independent sigmoid per target) NLL w.r.t. g; label-free as well,
    since sig(y z)(1 - sig(y z)) is the same for y = +1 and -1.  Sum (D, D) or (n, D, D)."""
    g = g_n_D.double()
    T = targets_T_D.double()
    n, D = g.shape
    out = torch.zeros(D, D, dtype=torch.float64) if reduce else torch.empty(n, D, D, dtype=torch.float64)
    step = _chunk_size(T.shape[0] * D)
    for s0 in range(0, n, step):
        jt, cos = _jt(g[s0 : s0 + step], T)
        sig = torch.sigmoid(scale * cos + bias)
        w = scale**2 * sig * (1 - sig)
        if reduce:
            out += torch.einsum("nt,ntd,nte->de", w, jt, jt)
        else:
            out[s0 : s0 + jt.shape[0]] = torch.einsum("nt,ntd,nte->nde", w, jt, jt)
    return sym(out)


# ------------------------------------------------------------------------------- KFAC


@dataclass
class KronFactors:
    """Running sums for A = sum phi phi^T / sqrt(n) and B = sum H / sqrt(n), float64.

    Sums (not means) are kept so factors from several sources (pretraining pairs, labeled
    items) merge by addition."""

    A_sum_q_q: torch.Tensor
    B_sum_D_D: torch.Tensor
    n: int

    @property
    def A_q_q(self) -> torch.Tensor:
        return self.A_sum_q_q / math.sqrt(max(self.n, 1))

    @property
    def B_D_D(self) -> torch.Tensor:
        return self.B_sum_D_D / math.sqrt(max(self.n, 1))

    def __add__(self, other: "KronFactors") -> "KronFactors":
        return KronFactors(self.A_sum_q_q + other.A_sum_q_q, self.B_sum_D_D + other.B_sum_D_D, self.n + other.n)

    @staticmethod
    def zeros(q: int, D: int) -> "KronFactors":
        z = torch.zeros
        return KronFactors(z(q, q, dtype=torch.float64), z(D, D, dtype=torch.float64), 0)


def _kfac(
    x: PreProjection, proj: LinearProjection, targets_T_D: torch.Tensor, ggn: Any, **kw: Any
) -> KronFactors:
    phi = proj.phi(x.a_n_p).double()
    g = proj(x.double())
    return KronFactors(sym(phi.T @ phi), ggn(g, targets_T_D, reduce=True, **kw), phi.shape[0])


def infonce_kfac(
    x: PreProjection, proj: LinearProjection, targets_T_D: torch.Tensor, scale: float
) -> KronFactors:
    """KFAC factors of ``proj`` under InfoNCE against ``targets_T_D`` (the other tower's
    embeddings: class prompts, or the paired texts/images of a batch)."""
    return _kfac(x, proj, targets_T_D, infonce_ggn, scale=scale)


def siglip_kfac(
    x: PreProjection, proj: LinearProjection, targets_T_D: torch.Tensor, scale: float, bias: float = 0.0
) -> KronFactors:
    """KFAC factors of ``proj`` under the SigLIP sigmoid loss against ``targets_T_D``."""
    return _kfac(x, proj, targets_T_D, siglip_ggn, scale=scale, bias=bias)


# -------------------------------------------------------------------------- posterior


def kron_log_evidence(
    prior_precision: float, eig_A_q: torch.Tensor, eig_B_D: torch.Tensor, theta_sq: float, n_pseudo: float = 1.0
) -> float:
    """Laplace log evidence (up to the lam-free likelihood term) of the damped Kronecker posterior:
    -lam/2 ||theta||^2 + (qD/2) log lam - 1/2 [D logdet A~ + q logdet B~] (uq-math §5, DERIVED)."""
    lam = float(prior_precision)
    q, D = eig_A_q.numel(), eig_B_D.numel()
    r, s = math.sqrt(n_pseudo), math.sqrt(lam)
    logdet_A = torch.log(r * eig_A_q.double() + s).sum()
    logdet_B = torch.log(r * eig_B_D.double() + s).sum()
    return float(-0.5 * lam * theta_sq + 0.5 * q * D * math.log(lam) - 0.5 * (D * logdet_A + q * logdet_B))


def tune_kron_prior_precision(
    eig_A_q: torch.Tensor, eig_B_D: torch.Tensor, theta_sq: float, n_pseudo: float = 1.0,
    *, log10_range: tuple[float, float] = (-8.0, 10.0),
) -> float:
    """argmax of ``kron_log_evidence`` over lam: a 361-point grid on log10 lam, then golden
    section inside the best cell (deterministic; the evidence is smooth and one-humped here)."""
    return argmax_log10(lambda t: kron_log_evidence(10.0**t, eig_A_q, eig_B_D, theta_sq, n_pseudo),
                        log10_range, 361, 1e-8)


@dataclass
class KronPosterior:
    """N(theta*, A~^-1 (x) B~^-1) over one projection (column-stacked vec), float64 factors."""

    theta_D_q: torch.Tensor
    A_inv_q_q: torch.Tensor
    B_inv_D_D: torch.Tensor
    prior_precision: float
    n_pseudo: float
    log_evidence: float = float("nan")

    def scale_n(self, phi_n_q: torch.Tensor) -> torch.Tensor:
        """k = phi^T A~^-1 phi per item (n,): how unlike the fitted inputs phi is."""
        phi = phi_n_q.double()
        return ((phi @ self.A_inv_q_q) * phi).sum(-1).clamp_min(0.0)

    def embedding_var(self, phi_n_q: torch.Tensor) -> torch.Tensor:
        """Diagonal of Cov(g | phi) = k B~^-1, (n, D)."""
        return self.scale_n(phi_n_q)[:, None] * self.B_inv_D_D.diagonal().clamp_min(0.0)[None, :]

    def embedding_cov(self, phi_n_q: torch.Tensor) -> torch.Tensor:
        """Full Cov(g | phi) = k B~^-1, (n, D, D)."""
        return self.scale_n(phi_n_q)[:, None, None] * self.B_inv_D_D[None]

    def sample_weights(self, n_samples: int, *, seed: int = 0) -> torch.Tensor:
        """theta samples (S, D, q): theta* + L_B Z L_A^T, so Cov(vec theta) = A~^-1 (x) B~^-1."""
        gen = torch.Generator().manual_seed(seed)
        L_A = torch.linalg.cholesky(sym(self.A_inv_q_q))
        L_B = torch.linalg.cholesky(sym(self.B_inv_D_D))
        D, q = self.theta_D_q.shape
        Z = torch.randn(n_samples, D, q, generator=gen, dtype=torch.float64)
        return self.theta_D_q[None] + L_B[None] @ Z @ L_A.T[None]


def _damped_inverse(eig: torch.Tensor, Q: torch.Tensor, r: float, s: float) -> torch.Tensor:
    return sym((Q / (r * eig + s)[None, :]) @ Q.T)


def fit_kron_posterior(
    factors: KronFactors,
    proj: LinearProjection,
    *,
    n_pseudo: float = 1.0,
    prior_precision: float | None = None,
    prior_mean: LinearProjection | None = None,
) -> KronPosterior:
    """Damped Kronecker Laplace posterior for ``proj``; the prior precision is tuned by the
    evidence (``kron_log_evidence``) unless given.  ``prior_mean``: where the Gaussian prior is
    centred (fine-tuning anchors it at the pretrained projection, so the evidence's fit term is
    ||theta* - theta_0||^2, the same penalty the fine-tuning minimised); default 0."""
    theta = proj.theta_D_q
    if factors.A_sum_q_q.shape[0] != theta.shape[1] or factors.B_sum_D_D.shape[0] != theta.shape[0]:
        raise ValueError(
            f"factor shapes {tuple(factors.A_sum_q_q.shape)}, {tuple(factors.B_sum_D_D.shape)} do not "
            f"match the projection's (D, q) = {tuple(theta.shape)}"
        )
    eig_A, Q_A = eigh64(factors.A_q_q)
    eig_B, Q_B = eigh64(factors.B_D_D)
    delta = theta if prior_mean is None else theta - prior_mean.theta_D_q.to(theta.dtype)
    theta_sq = float((delta**2).sum())
    if prior_precision is not None and prior_precision <= 0:
        raise ValueError(f"prior_precision must be positive, got {prior_precision}")
    lam = prior_precision if prior_precision is not None else tune_kron_prior_precision(eig_A, eig_B, theta_sq, n_pseudo)
    r, s = math.sqrt(n_pseudo), math.sqrt(lam)
    return KronPosterior(
        theta_D_q=theta,
        A_inv_q_q=_damped_inverse(eig_A, Q_A, r, s),
        B_inv_D_D=_damped_inverse(eig_B, Q_B, r, s),
        prior_precision=lam,
        n_pseudo=n_pseudo,
        log_evidence=kron_log_evidence(lam, eig_A, eig_B, theta_sq, n_pseudo),
    )


# ------------------------------------------------------------------------- ProbCosine


def prob_cosine(
    mu_g_n_D: torch.Tensor,
    var_g_n_D: torch.Tensor | None,
    mu_h_C_D: torch.Tensor,
    var_h_C_D: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean and variance of cos(g, h_c) for independent diagonal Gaussians, (n, C) each.

    Numerator moments are exact; the norms are replaced by the root expected squared norms."""
    mg, mh = mu_g_n_D.double(), mu_h_C_D.double()
    vg = torch.zeros_like(mg) if var_g_n_D is None else var_g_n_D.double().clamp_min(0)
    vh = torch.zeros_like(mh) if var_h_C_D is None else var_h_C_D.double().clamp_min(0)
    eg = (mg**2 + vg).sum(-1)
    eh = (mh**2 + vh).sum(-1)
    denom = eg[:, None] * eh[None, :]
    mean = (mg @ mh.T) / denom.sqrt()
    var = ((mg**2) @ vh.T + vg @ (mh**2).T + vg @ vh.T) / denom
    return mean, var.clamp_min(0)


def prob_cosine_kron(
    mu_g_n_D: torch.Tensor,
    k_g_n: torch.Tensor,
    B_inv_g_D_D: torch.Tensor,
    mu_h_C_D: torch.Tensor,
    k_h_C: torch.Tensor | None = None,
    B_inv_h_D_D: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """ProbCosine with the full Kronecker embedding covariances k_g B_g^-1 and k_h B_h^-1.

    Var(g^T h) = k_g mu_h^T B_g^-1 mu_h + k_h mu_g^T B_h^-1 mu_g + k_g k_h tr(B_g^-1 B_h^-1),
    exact for independent Gaussians, at O(n D^2 + C D^2) in all."""
    mg, mh, kg = mu_g_n_D.double(), mu_h_C_D.double(), k_g_n.double()
    Bg = B_inv_g_D_D.double()
    eg = (mg**2).sum(-1) + kg * Bg.diagonal().sum()
    qh_C = ((mh @ Bg) * mh).sum(-1)
    var_num = kg[:, None] * qh_C[None, :]
    eh = (mh**2).sum(-1)
    if k_h_C is not None and B_inv_h_D_D is not None:
        kh, Bh = k_h_C.double(), B_inv_h_D_D.double()
        eh = eh + kh * Bh.diagonal().sum()
        qg_n = ((mg @ Bh) * mg).sum(-1)
        var_num = var_num + qg_n[:, None] * kh[None, :] + torch.outer(kg, kh) * (Bg * Bh).sum()
    denom = eg[:, None] * eh[None, :]
    return (mg @ mh.T) / denom.sqrt(), (var_num / denom).clamp_min(0)


def mc_mutual_information(
    mean_n_C: torch.Tensor, var_n_C: torch.Tensor, *, n_samples: int = 256, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """I(y; projections) = H[E p] - E H[p] with z ~ N(m, diag v); the same fixed-seed eps for
    every item (so rankings do not jitter).  Returns (mi (n,), MC predictive (n, C)), float64."""
    gen = torch.Generator().manual_seed(seed)
    n, C = mean_n_C.shape
    eps_S_C = torch.randn(n_samples, C, generator=gen, dtype=torch.float64)
    mi, mean_p = torch.empty(n, dtype=torch.float64), torch.empty(n, C, dtype=torch.float64)
    for s0 in range(0, n, 4096):
        m, v = mean_n_C[s0 : s0 + 4096].double(), var_n_C[s0 : s0 + 4096].double().clamp_min(0)
        logp = (m[:, None, :] + v.sqrt()[:, None, :] * eps_S_C[None]).log_softmax(-1)
        p = logp.exp()
        mean_p[s0 : s0 + len(m)] = p.mean(1)
        mi[s0 : s0 + len(m)] = entropy_n(p.mean(1)) + (p * logp).sum(-1).mean(1)
    return mi.clamp_min(0), mean_p


# --------------------------------------------------------------------------- the model


@dataclass
class DualEncoderOutput:
    """Zero-shot result for n images against C class prompts."""

    logit_mean_n_C: torch.Tensor
    logit_var_n_C: torch.Tensor
    probs_n_C: torch.Tensor  # probit predictive
    probs_mc_n_C: torch.Tensor  # Monte Carlo predictive (the same samples as mi_n)
    var_n: torch.Tensor  # 'var' score: sum_c logit variance
    mi_n: torch.Tensor  # mutual information (MC)
    embedding_mean_n_D: torch.Tensor
    embedding_var_n_D: torch.Tensor

    @property
    def embed_n(self) -> torch.Tensor:
        """'embed' score: trace of the image embedding covariance, k tr(B~^-1) (representation
        uncertainty, before the cosine normalises the embedding's scale away)."""
        return self.embedding_var_n_D.sum(-1)

    def score(self, name: Score) -> torch.Tensor:
        if name not in ("var", "mi", "embed"):
            raise ValueError(f"unknown score {name!r}; expected 'var', 'mi' or 'embed'")
        return {"var": self.var_n, "mi": self.mi_n, "embed": self.embed_n}[name]


@dataclass
class BayesVLM:
    """Both projections with their Laplace posteriors (either may be None = deterministic).

    ``logit_scale`` is s itself (exp of the model's stored log scale); ``logit_bias`` is
    SigLIP's bias (it cancels in the softmax but enters the sigmoid GGN)."""

    image_proj: LinearProjection
    text_proj: LinearProjection
    image_post: KronPosterior | None
    text_post: KronPosterior | None
    logit_scale: float
    logit_bias: float = 0.0

    @staticmethod
    def _embed(
        x: PreProjection, proj: LinearProjection, post: KronPosterior | None
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Mean (n, D), diagonal variance (n, D) and the Kronecker scale k (n,), float64."""
        mu = proj(x.double())
        if post is None:
            return mu, torch.zeros_like(mu), torch.zeros(len(x), dtype=torch.float64)
        k = post.scale_n(proj.phi(x.a_n_p.double()))
        return mu, k[:, None] * post.B_inv_D_D.diagonal().clamp_min(0)[None], k

    def embed_images(self, x: PreProjection) -> tuple[torch.Tensor, torch.Tensor]:
        """Image embedding mean and diagonal variance, (n, D) each."""
        return self._embed(x, self.image_proj, self.image_post)[:2]

    def embed_texts(self, x: PreProjection) -> tuple[torch.Tensor, torch.Tensor]:
        return self._embed(x, self.text_proj, self.text_post)[:2]

    def logits(
        self, images: PreProjection, texts: PreProjection, *, covariance: Covariance = "diag"
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Logit mean and variance (n, C), and the image embedding mean and variance (n, D)."""
        mg, vg, kg = self._embed(images, self.image_proj, self.image_post)
        mh, vh, kh = self._embed(texts, self.text_proj, self.text_post)
        if covariance == "diag":
            mean, var = prob_cosine(mg, vg, mh, vh)
        elif covariance == "full":
            D = mg.shape[1]
            Bg = self.image_post.B_inv_D_D if self.image_post is not None else torch.zeros(D, D, dtype=torch.float64)
            Bh = self.text_post.B_inv_D_D if self.text_post is not None else None
            mean, var = prob_cosine_kron(mg, kg, Bg, mh, kh if Bh is not None else None, Bh)
        else:
            raise ValueError(f"covariance must be 'diag' or 'full', got {covariance!r}")
        s = self.logit_scale
        return s * mean + self.logit_bias, s**2 * var, mg, vg

    def zero_shot(
        self, images: PreProjection, class_prompts: PreProjection, *, covariance: Covariance = "diag",
        mi_samples: int = 256, seed: int = 0,
    ) -> DualEncoderOutput:
        """Classify each image among the C class prompts, with its epistemic scores."""
        m, v, mg, vg = self.logits(images, class_prompts, covariance=covariance)
        mi, p_mc = mc_mutual_information(m, v, n_samples=mi_samples, seed=seed)
        return DualEncoderOutput(m, v, probit_probs(m, v), p_mc, v.sum(-1), mi, mg, vg)


# ----------------------------------------------------------------------- HF adapter


class _Capture:
    """Forward pre-hook that keeps the first positional input of a module."""

    def __init__(self, module: nn.Module) -> None:
        self.value: torch.Tensor | None = None
        self.handle = module.register_forward_pre_hook(self._hook)

    def _hook(self, module: nn.Module, args: tuple) -> None:
        self.value = args[0].detach()

    def __enter__(self) -> "_Capture":
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.remove()


def _inner(module: nn.Module, name: str) -> nn.Module:
    """SiglipModel.vision_model is a SiglipVisionModel wrapping a SiglipVisionTransformer."""
    inner = getattr(module, name, None)
    return inner if inner is not None else module


def _pooled(out: Any) -> torch.Tensor:
    return out if isinstance(out, torch.Tensor) else out.pooler_output


@dataclass
class HFDualEncoder:
    """Reads BayesVLM's pre-projection features and projections from a Hugging Face model.

    CLIPModel:   a = the pooled vision/text output, P = visual_projection / text_projection (no bias).
    SiglipModel: image a = the hidden activation of the attention-pooling head's MLP, P = its fc2
                 (with bias), offset = the head's residual; text a = the last-token state, P = the
                 text head (with bias).
    Features are captured by forward pre-hooks during the model's own get_*_features call, so
    they are exactly what the real model computes."""

    model: nn.Module
    kind: Literal["clip", "siglip"]

    def _image_modules(self) -> tuple[nn.Module, nn.Module | None]:
        if self.kind == "clip":
            return self.model.visual_projection, None
        vt = _inner(self.model.vision_model, "vision_model")
        if not getattr(vt, "use_head", True) or not hasattr(vt, "head"):
            raise ValueError("this SigLIP vision model has no attention-pooling head (vision_use_head=False)")
        return vt.head.mlp.fc2, vt.head.layernorm

    def _text_module(self) -> nn.Module:
        if self.kind == "clip":
            return self.model.text_projection
        return _inner(self.model.text_model, "text_model").head

    @staticmethod
    def _linear(m: nn.Linear) -> LinearProjection:
        return LinearProjection(m.weight.detach().clone(), None if m.bias is None else m.bias.detach().clone())

    def image_projection(self) -> LinearProjection:
        return self._linear(self._image_modules()[0])

    def text_projection(self) -> LinearProjection:
        return self._linear(self._text_module())

    @property
    def logit_scale(self) -> float:
        return float(self.model.logit_scale.detach().exp())

    @property
    def logit_bias(self) -> float:
        bias = getattr(self.model, "logit_bias", None)
        return 0.0 if bias is None else float(bias.detach())

    @torch.no_grad()
    def image_inputs(self, pixel_values: torch.Tensor, **kw: Any) -> PreProjection:
        proj, resid = self._image_modules()
        with _Capture(proj) as a, (_Capture(resid) if resid is not None else _Null()) as r:
            self.model.get_image_features(pixel_values=pixel_values, **kw)
        a_n_p = a.value if a.value.dim() == 2 else a.value[:, 0]  # SigLIP: the probe token
        off = None if resid is None else r.value[:, 0]
        return PreProjection(a_n_p.clone(), None if off is None else off.clone())

    @torch.no_grad()
    def text_inputs(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None, **kw: Any) -> PreProjection:
        with _Capture(self._text_module()) as a:
            self.model.get_text_features(input_ids=input_ids, attention_mask=attention_mask, **kw)
        return PreProjection(a.value.clone())

    def bayes_vlm(self, image_post: KronPosterior | None = None, text_post: KronPosterior | None = None) -> BayesVLM:
        return BayesVLM(self.image_projection(), self.text_projection(), image_post, text_post,
                        self.logit_scale, self.logit_bias)


class _Null:
    value = None

    def __enter__(self) -> "_Null":
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def hf_dual_encoder(model: nn.Module) -> HFDualEncoder:
    """Adapter for transformers' CLIPModel or SiglipModel (detected by class name)."""
    name = type(model).__name__.lower()
    if "siglip" in name:
        return HFDualEncoder(model.eval(), "siglip")
    if "clip" in name:
        return HFDualEncoder(model.eval(), "clip")
    raise ValueError(f"unsupported dual encoder {type(model).__name__}; expected CLIPModel or SiglipModel")


# --------------------------------------------------------------------------- Learner


def finetune_projection(
    proj: LinearProjection,
    x: PreProjection,
    y_n: torch.Tensor,
    class_emb_C_D: torch.Tensor,
    scale: float,
    *,
    prior_precision: float,
    steps: int = 200,
    lr: float = 1e-2,
    seed: int = 0,
) -> LinearProjection:
    """MAP fine-tuning of the image projection on labeled items: mean cross-entropy over the
    class prompts plus prior_precision/2n ||theta - theta_0||^2 (a Gaussian prior at the
    pretrained weights), full-batch Adam.  Deterministic for a seed."""
    torch.manual_seed(seed)
    n = len(x)
    if n == 0 or steps == 0:
        return proj
    W0, b0 = proj.weight_D_p.detach().float(), None if proj.bias_D is None else proj.bias_D.detach().float()
    W = W0.clone().requires_grad_(True)
    b = None if b0 is None else b0.clone().requires_grad_(True)
    params = [W] + ([b] if b is not None else [])
    opt = torch.optim.Adam(params, lr=lr)
    a = x.a_n_p.float()
    off = None if x.offset_n_D is None else x.offset_n_D.float()
    t_hat = class_emb_C_D.float() / class_emb_C_D.float().norm(dim=-1, keepdim=True)
    for _ in range(steps):
        g = a @ W.T + (0 if b is None else b) + (0 if off is None else off)
        logits = scale * (g / g.norm(dim=-1, keepdim=True).clamp_min(1e-12)) @ t_hat.T
        loss = nn.functional.cross_entropy(logits, y_n.long())
        reg = ((W - W0) ** 2).sum() + (0 if b is None else ((b - b0) ** 2).sum())
        loss = loss + 0.5 * prior_precision / n * reg
        opt.zero_grad()
        loss.backward()
        opt.step()
    return LinearProjection(W.detach().clone(), None if b is None else b.detach().clone())


def split_inputs(X_n_f: np.ndarray, proj: LinearProjection) -> PreProjection:
    """Feature rows -> the projection's inputs (float32): ``a`` (p columns), or ``[a | offset]``
    (p + D columns) for a projection followed by a residual (SigLIP's pooling head)."""
    x = torch.as_tensor(np.asarray(X_n_f), dtype=torch.float32)
    D, p = proj.weight_D_p.shape
    if x.ndim == 2 and x.shape[1] == p:
        return PreProjection(x)
    if x.ndim == 2 and x.shape[1] == p + D:
        return PreProjection(x[:, :p], x[:, p:])
    raise ValueError(f"features have shape {tuple(x.shape)}; the image projection takes {p} columns "
                     f"(or {p + D} with its residual)")


@dataclass
class DualEncoderLearner:
    """Learner over pre-projection image features with fixed class prompts (alkit/types.py).

    ``base`` holds the pretrained projections and the text posterior; ``pretrain_factors`` the
    image projection's KFAC sums from its (unlabeled) pretraining pairs.  ``fit`` fine-tunes the
    image projection on the labeled items and refits its posterior from pretraining + labeled
    curvature (InfoNCE over the class prompts); with no labels it is the zero-shot model.
    """

    base: BayesVLM
    class_prompts: PreProjection
    pretrain_factors: KronFactors
    n_pseudo: float = 1.0
    score: Score = "var"
    covariance: Covariance = "diag"
    finetune_steps: int = 200
    finetune_lr: float = 1e-2
    finetune_prior_precision: float | None = None  # None: the evidence-tuned zero-shot prior
    task: str = "classification"
    model: BayesVLM | None = field(default=None, init=False)
    _zero_shot_lam: float | None = field(default=None, init=False, repr=False)

    def _class_emb(self) -> torch.Tensor:
        return self.base.text_proj(self.class_prompts).double()

    def _anchor(self) -> float:
        if self.finetune_prior_precision is not None:
            return self.finetune_prior_precision
        if self._zero_shot_lam is None:
            self._zero_shot_lam = fit_kron_posterior(
                self.pretrain_factors, self.base.image_proj, n_pseudo=self.n_pseudo
            ).prior_precision
        return self._zero_shot_lam

    def inputs(self, X_n_f: np.ndarray) -> PreProjection:
        return split_inputs(X_n_f, self.base.image_proj)

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        x = self.inputs(X_n_f)
        y = torch.as_tensor(np.asarray(y_n)).long()
        proj = finetune_projection(
            self.base.image_proj, x, y, self._class_emb(), self.base.logit_scale,
            prior_precision=self._anchor(), steps=self.finetune_steps, lr=self.finetune_lr, seed=seed,
        )
        factors = self.pretrain_factors
        if len(x):
            factors = factors + infonce_kfac(x, proj, self._class_emb(), self.base.logit_scale)
        # the fine-tuning prior is centred at the pretrained projection; so is the evidence's
        post = fit_kron_posterior(factors, proj, n_pseudo=self.n_pseudo,
                                  prior_mean=self.base.image_proj if len(x) else None)
        self.model = BayesVLM(proj, self.base.text_proj, post, self.base.text_post,
                              self.base.logit_scale, self.base.logit_bias)
        return {"n_labeled": float(len(x)), "prior_precision": post.prior_precision,
                "log_evidence": post.log_evidence}

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if self.model is None:
            raise RuntimeError("fit the learner before predicting (fit on zero items for zero-shot)")
        x = self.inputs(X_n_f)
        a = x.a_n_p
        out = self.model.zero_shot(x, self.class_prompts, covariance=self.covariance)
        probs = out.probs_n_C.float()
        return Prediction(
            epistemic_n=out.score(self.score).float(),
            aleatoric_n=entropy_n(probs),
            embedding_n_d=a,
            probs_n_C=probs,
            extras={"logits_n_C": out.logit_mean_n_C.float(), "logit_var_n_C": out.logit_var_n_C.float(),
                    "var_n": out.var_n.float(), "mi_n": out.mi_n.float(), "embed_n": out.embed_n.float(),
                    "image_embedding_n_D": out.embedding_mean_n_D.float()},
        )

    def posterior(self) -> GaussianLastLayer | None:
        """The image projection's posterior as a shared-input Gaussian: output k of phi = a has
        weight covariance diag(B~^-1)_k A~^-1 (the per-output marginal of the Kronecker form)."""
        if self.model is None or self.model.image_post is None:
            return None
        post = self.model.image_post
        return GaussianLastLayer(
            cov_K_d_d=post.A_inv_q_q.float()[None],
            noise_var_K=torch.ones(post.B_inv_D_D.shape[0]),
            scale_K=post.B_inv_D_D.diagonal().float(),
            bias_feature=self.model.image_proj.bias_D is not None,
        )
