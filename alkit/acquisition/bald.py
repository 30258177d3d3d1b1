"""bald: mutual information between an item's label and the model (Houlsby et al. 2011).

Two sources, whichever the learner's Prediction has:

- members (deep ensemble, MC dropout, SVE: ``extras['member_probs_n_M_C']``): the exact BALD of
  the M equally weighted members, H[mean_j p_j] - mean_j H[p_j];
- a Gaussian last layer (``ctx.posterior``: VBLL, Laplace): the closed form under the Gaussian
  observation model of alkit/acquisition/gaussian.py,

      BALD(x) = sum_k 1/2 log(1 + v_k(x) / r_k(x)),   v_k = Var z_k,  r_k = 1 / (p_k (1 - p_k)),

  which is exact for Gaussian outputs (regression heads, r_k = sigma_k^2) and, for a class label,
  agrees with the Monte-Carlo BALD of the Gaussian logits to second order in v (both are
  1/2 sum_k p_k (1 - p_k) v_k there).  It does not saturate at log C where the logits are very
  uncertain, and its batch form (alkit/strategies/diverse.py) is exact for the same model.
  ``bald_mc_n`` is the Monte-Carlo reference the tests and benchmarks/results/acquisition_error.md
  compare it with.

The closed form also hands the selector ``noise_n_K`` (the r_k it used), so ``diverse`` conditions
the posterior on a batch under the same observation model.
"""

from __future__ import annotations

import torch

from alkit.acquisition._common import AcquisitionError, require_posterior
from alkit.distributions import entropy_n, member_bald_n
from alkit.posterior import OutputCovariance, label_probs, n_outputs_of, observation_noise_n_K
from alkit.types import AcquisitionContext, Prediction, Scores


def gaussian_bald_n(var_n_K: torch.Tensor, noise_n_K: torch.Tensor) -> torch.Tensor:
    """sum_k 1/2 log(1 + v_k / r_k), float64 (n,)."""
    return 0.5 * torch.log1p(var_n_K.double() / noise_n_K.double()).sum(1)


def bald_mc_n(logits_n_C: torch.Tensor, var_n_C: torch.Tensor, *, n_samples: int = 4096,
              seed: int = 0) -> torch.Tensor:
    """Monte-Carlo BALD of independent Gaussian logits z ~ N(m, diag(v)): H[E p] - E H[p] over
    ``n_samples`` draws (the same draws for every item), float64 (n,)."""
    m, v = logits_n_C.double(), var_n_C.double().clamp_min(0.0)
    gen = torch.Generator().manual_seed(seed)
    eps_S_C = torch.randn(n_samples, m.shape[1], generator=gen, dtype=torch.float64)
    p_n_S_C = torch.softmax(m[:, None, :] + v.sqrt()[:, None, :] * eps_S_C[None], dim=-1)
    return (entropy_n(p_n_S_C.mean(1)) - entropy_n(p_n_S_C).mean(1)).clamp_min(0.0)


class BALDAcquisition:
    """Mutual information I(y; model | x): exact over members, closed form on a Gaussian last layer."""

    name = "bald"
    needs: tuple[str, ...] = ("posterior|members",)

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        members = pred.extras.get("member_probs_n_M_C")
        if members is not None:
            return Scores(member_bald_n(members))
        if ctx.posterior is None:
            raise AcquisitionError("the bald acquisition needs a Gaussian last-layer posterior (scorers vbll, "
                                   "laplace) or ensemble members (ensemble, mc-dropout, sve); this learner has neither")
        post = require_posterior(ctx, self.name)
        probs = label_probs(pred)
        K = n_outputs_of(post, probs)
        cov = OutputCovariance.of(post, K)
        phi = cov.features(pred.embedding_n_d)
        noise = observation_noise_n_K(probs, post, phi.shape[0], K, pred.extras.get("noise_var_n"))
        return Scores(gaussian_bald_n(cov.variance_for(pred, phi), noise), {"noise_n_K": noise})
