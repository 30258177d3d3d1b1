"""Shared algebra of the Gaussian last layer, for the posterior-driven acquisitions and selectors.

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

from dataclasses import dataclass

import numpy as np
import torch

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
                          n: int, n_outputs: int) -> torch.Tensor:
    """r_k per item (n, K), float64: 1 / (p_k (1 - p_k)) from class probabilities, else the
    posterior's noise variance (regression heads)."""
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
