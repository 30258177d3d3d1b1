"""CR-VBLL: classification-restoration on the VBLL classification head (uq-math.md §4, variant A).

Why: a target with disjoint modes (zero-inflated costs, watch time at 0 or 1) is a histogram, not
a bell; classifying into buckets and restoring mean / median / density from the bucket
probabilities avoids the Gaussian head's ghost value, and the Gaussian-logit VBLL head keeps a
sample-free epistemic score.

Buckets: K buckets with edges over the training range, 'uniform' (equal width) or 'quantile'
(equal frequency; coinciding quantiles merged).  Training: the Jensen ELBO of
``ClassificationHead`` with label = bucket index, then the ELBO-optimal S refit.
Restoration from pbar (probit): mean = sum_k pbar_k c_k, median by linear interpolation of the
CDF inside the bucket where it crosses 1/2, density pbar_k / width_k (piecewise-uniform).
Epistemic: 'bald' = Laplace-bridge mutual information over buckets (sample-free), or 'delta' =
Var_w[yhat] ~ sum_k v_k pbar_k^2 (c_k - yhat)^2 (delta method, diagonal logit covariance).
"""

from __future__ import annotations

from typing import Literal

import torch

from alkit.learners.piecewise import PiecewiseLinearMixture
from alkit.learners.vbll_heads import ClassificationHead, Cov, VariationalLinear, class_scores, laplace_bridge_mi
from alkit.types import Prediction


def make_edges(y_N: torch.Tensor, n_buckets: int, scheme: Literal["uniform", "quantile"] = "uniform") -> torch.Tensor:
    """Bucket edges t_0 < ... < t_K over [min y, max y], float64 (K+1,).

    Targets that are all equal (a zero-inflated target's first labels, or a cross-validation fold of
    them) give [y - w, y + w], w = max(|y|, 1) / 2: the labels say nothing of the scale, and refusing
    left such a run unable to fit until a label of another value came."""
    y = y_N.double()
    lo, hi = float(y.min()), float(y.max())
    if not hi > lo:
        w = 0.5 * max(abs(lo), 1.0)
        lo, hi = lo - w, hi + w
    if scheme == "uniform":
        return torch.linspace(lo, hi, n_buckets + 1, dtype=torch.float64)
    if scheme == "quantile":
        inner = torch.quantile(y, torch.arange(1, n_buckets, dtype=torch.float64) / n_buckets)
        e = torch.unique(torch.cat([torch.tensor([lo, hi], dtype=torch.float64), inner]))
        return e
    raise ValueError(f"unknown bucket scheme {scheme!r}; use uniform or quantile")


def bucket_of(y_n: torch.Tensor, edges_K1: torch.Tensor) -> torch.Tensor:
    """Bucket index with t_{k-1} < y <= t_k (first bucket closed below), clamped to [0, K-1]."""
    K = edges_K1.shape[0] - 1
    return torch.searchsorted(edges_K1[1:-1].contiguous(), y_n.double().contiguous(), right=False).clamp(0, K - 1)


def restore(probs_n_K: torch.Tensor, edges_K1: torch.Tensor) -> dict[str, torch.Tensor]:
    """Mean, median, mode and the piecewise-uniform distribution from bucket probabilities."""
    p = probs_n_K.double()
    p = p / p.sum(1, keepdim=True)
    e = edges_K1.double()
    centres = 0.5 * (e[1:] + e[:-1])
    levels = torch.cat([torch.zeros(p.shape[0], 1, dtype=torch.float64), p.cumsum(1)], 1)
    levels[:, -1] = 1.0
    dist = PiecewiseLinearMixture(e.expand(p.shape[0], 1, -1).contiguous(), levels)
    k = torch.searchsorted(levels[:, 1:].contiguous(), torch.full((p.shape[0], 1), 0.5, dtype=torch.float64))
    k = k.clamp(0, p.shape[1] - 1)
    F0 = levels.gather(1, k)[:, 0]
    pk = p.gather(1, k)[:, 0]
    frac = torch.where(pk > 0, (0.5 - F0) / pk.clamp_min(1e-300), torch.zeros_like(pk)).clamp(0, 1)
    median = e[k[:, 0]] + frac * (e[k[:, 0] + 1] - e[k[:, 0]])
    return {"mean_n": p @ centres, "median_n": median, "mode_n": centres[p.argmax(1)], "dist": dist, "centres_K": centres}



def delta_method_var(m_n_K: torch.Tensor, v_n_K: torch.Tensor, centres_K: torch.Tensor) -> torch.Tensor:
    """Var_z[sum_k softmax(z)_k c_k] for z ~ N(m, diag v), by the delta method: linearised at the
    logit mean, d yhat / d z_k = p_k (c_k - yhat) with p = softmax(m) and yhat = p . c, so the
    variance is sum_k v_k p_k^2 (c_k - yhat)^2 (n,).  Exact as v -> 0."""
    p = torch.softmax(m_n_K.double(), -1)
    c = centres_K.double()
    yhat = p @ c
    return (v_n_K.double() * p**2 * (c[None, :] - yhat[:, None]) ** 2).sum(1)

class BucketHead(ClassificationHead):
    """VBLL classification over target buckets (standardised units); bias = bucket log-prior."""

    def __init__(
        self, d: int, y_N: torch.Tensor, *, n_buckets: int = 20, scheme: Literal["uniform", "quantile"] = "uniform",
        cov: Cov = "dense", prior_var: float = 1.0, reg_weight: float = 1.0,
    ) -> None:
        edges = make_edges(y_N, n_buckets, scheme)
        super().__init__(d, edges.shape[0] - 1, cov=cov, prior_var=prior_var, reg_weight=reg_weight)
        self.register_buffer("edges", edges)
        self.layer = VariationalLinear(d, edges.shape[0] - 1, cov, prior_var, bias=True)
        with torch.no_grad():
            counts = torch.bincount(bucket_of(y_N, edges), minlength=edges.shape[0] - 1).float()
            self.layer.bias.copy_((counts + 0.5).log() - (counts + 0.5).log().mean())

    def labels(self, y_n: torch.Tensor) -> torch.Tensor:
        return bucket_of(y_n, self.edges)

    def loss(self, phi_n_d: torch.Tensor, y_n: torch.Tensor) -> torch.Tensor:
        return super().loss(phi_n_d, self.labels(y_n))

    @torch.no_grad()
    def predict(
        self, phi_n_d: torch.Tensor, shift: float, scale: float, *, epistemic: Literal["bald", "delta"] = "bald",
        **_: object,
    ) -> Prediction:
        m, v = self(phi_n_d)
        sc = class_scores(m, v, self.noise_var, parts=())
        p = sc["probs_n_C"].double()
        edges = shift + scale * self.edges.double()
        r = restore(p, edges)
        yhat, c = r["mean_n"], r["centres_K"]
        # only the score asked for (the other one cost 0.1-0.6 of a forward pass per chunk, unread)
        if epistemic == "bald":
            epi, key = laplace_bridge_mi(m, v), "bucket_bald_n"
        else:
            epi, key = delta_method_var(m, v, c), "delta_var_n"
        width = torch.diff(edges)
        alea = (p * (c - yhat[:, None]) ** 2).sum(1) + (p * width**2 / 12).sum(1)
        extras = {
            "bucket_probs_n_K": p.float(), key: epi.float(),
            "median_n": r["median_n"].float(), "mode_n": r["mode_n"].float(), "logit_var_n_K": v,
            "bucket_logits_n_K": m,
        }
        return Prediction(epi.float(), alea.float(), phi_n_d, mean_n=yhat.float(), dist=r["dist"], extras=extras)
