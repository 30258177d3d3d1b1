"""epig: expected predictive information gain (Bickford-Smith et al., AISTATS 2023).

EPIG(x) = E_{x* ~ p*} I(y; y* | x, x*): how much a label at x tells about the predictions at
target inputs x* drawn from where predictions matter (here: a seeded sample of the pool), instead
of about the parameters (BALD).  BALD rewards items far from everything, outliers included; EPIG
rewards items whose label moves predictions where the pool has mass.

Sources, as for BALD (alkit/acquisition/bald.py):

- a Gaussian last layer: under the Gaussian observation model of alkit/acquisition/gaussian.py,
  the k-th outputs (y_k, y*_k) are jointly Gaussian with Var y_k = v_k + r_k,
  Var y*_k = v*_k + r*_k and Cov = c_k = Cov(z_k(x), z_k(x*)), so

      EPIG(x) = (1/M) sum_j sum_k -1/2 log(1 - rho_jk^2),   rho_jk^2 = c_jk^2 / ((v_k + r_k)(v*_jk + r*_jk)),

  exact for regression heads (uq-math.md §9b), the linearised (GGN) EPIG for class labels.
  ``epig_mc_n`` is the Monte-Carlo EPIG of the Gaussian logits (correlated samples through the
  weights, categorical labels), the reference its error is measured against.  Cost: O(K d M) per
  item from S_g Phi*^T, prepared once per cycle (``EPIGTargets``); no extra backbone pass.
- members (ensembles): the sample estimator of the paper with the M members as posterior samples,
  p(y, y*) = mean_j p_j(y | x) p_j(y* | x*).

Like BALD's closed form, the Gaussian EPIG hands ``noise_n_K`` to the selector; with the target
set on the candidates, ``diverse`` picks a batch by greedy EPIG, conditioning the posterior (and
every candidate-target covariance) on each pick.
"""

from __future__ import annotations


import torch

from alkit.acquisition._common import AcquisitionError
from alkit.distributions import entropy_n
from alkit.posterior import (  # noqa: F401 (EPIGTargets, decision_parts re-exported)
    EPIGTargets, OutputCovariance, decision_parts, gaussian_information_n, label_probs, n_outputs_of,
    observation_noise_n_K,
)
from alkit.types import AcquisitionContext, GaussianLastLayer, Prediction, Scores

_ROWS = 1024  # candidate rows per block: memory O(_ROWS * K * M)


def gaussian_epig_n(phi_n_d: torch.Tensor, var_n_K: torch.Tensor, noise_n_K: torch.Tensor,
                    targets: EPIGTargets) -> torch.Tensor:
    """The closed-form EPIG of n items (features phi, float64) against the prepared targets."""
    assert targets.cov is not None and targets.cross_G_d_M is not None
    total_M_K = targets.var_M_K + targets.noise_M_K
    total_n_K = var_n_K + noise_n_K
    out = torch.empty(phi_n_d.shape[0], dtype=torch.float64)
    for lo in range(0, phi_n_d.shape[0], _ROWS):
        c = targets.cov.covariance_n_K_m(phi_n_d[lo:lo + _ROWS], targets.cross_G_d_M)
        out[lo:lo + _ROWS] = gaussian_information_n(c, total_n_K[lo:lo + _ROWS], total_M_K)
    return out


def decision_epig_n(phi_n_d: torch.Tensor, var_n_K: torch.Tensor, sign_n_K: torch.Tensor,
                    noise_n: torch.Tensor, targets: EPIGTargets) -> torch.Tensor:
    """EPIG about the targets' top-two decisions: with f = s^T z (the logit difference of the top
    two classes), Var f = sum_k s_k^2 v_k, Cov(f, f*) = sum_k s_k s*_k c_k, observed with noise
    1/F, mean_j -1/2 log(1 - rho_j^2).  Float64 (n,)."""
    assert targets.decision_sign_M_K is not None and targets.cov is not None
    s_t = targets.decision_sign_M_K
    var_t = (s_t.square() * targets.var_M_K).sum(1) + targets.decision_noise_M
    var_f = (sign_n_K.square() * var_n_K).sum(1) + noise_n
    out = torch.empty(phi_n_d.shape[0], dtype=torch.float64)
    for lo in range(0, phi_n_d.shape[0], _ROWS):
        c = targets.cov.covariance_n_K_m(phi_n_d[lo:lo + _ROWS], targets.cross_G_d_M)
        cf = torch.einsum("nk,nkm,mk->nm", sign_n_K[lo:lo + _ROWS], c, s_t)
        rho2 = cf.square() / (var_f[lo:lo + _ROWS, None] * var_t[None])
        out[lo:lo + _ROWS] = (-0.5 * torch.log1p(-rho2.clamp(max=1.0 - 1e-12))).mean(1)
    return out


def member_epig_n(member_probs_n_S_C: torch.Tensor, target_probs_M_S_C: torch.Tensor) -> torch.Tensor:
    """mean_j I(y; y*_j) with p(y, y*) = mean_s p_s(y) p_s(y*): the paper's sample estimator,
    float64 (n,).  Uses H[y] + H[y*] - H[y, y*] with the joint as one (C, M C') product per item.  The
    targets' outcomes need not be the items' classes (C' columns: two for the top-two decisions)."""
    P = member_probs_n_S_C.double()
    T = target_probs_M_S_C.double()
    n, S, C = P.shape
    M, Ct = T.shape[0], T.shape[2]
    T_S_MC = T.permute(1, 0, 2).reshape(S, M * Ct)
    h_targets = entropy_n(T.mean(1)).mean()
    out = torch.empty(n, dtype=torch.float64)
    rows = max(1, _ROWS * 16 // max(M * Ct, 1))
    for lo in range(0, n, rows):
        blk = P[lo:lo + rows]  # (b, S, C)
        joint = torch.einsum("bsc,sm->bcm", blk, T_S_MC) / S  # (b, C, M*C)
        joint = joint.reshape(blk.shape[0], C, M, Ct)
        h_joint = -torch.special.xlogy(joint, joint).sum((1, 3)).mean(1)
        out[lo:lo + rows] = entropy_n(blk.mean(1)) + h_targets - h_joint
    return out.clamp_min(0.0)


def member_decisions_M_S_2(target_probs_M_S_C: torch.Tensor) -> torch.Tensor:
    """Each member's decision between each target's two most probable classes under the members'
    mean (a, b), one-hot (M, S, 2): [1, 0] where member s puts at least as much on a as on b.  The
    members' analogue of the Gaussian head's decision variable: ``epig-decision`` on ensembles is
    the information a label gives about these decisions (it was the class EPIG, unsaid)."""
    T = target_probs_M_S_C.double()
    top2 = T.mean(1).topk(2, dim=1).indices  # (M, 2): a, b
    p_a = T.gather(2, top2[:, None, :1].expand(-1, T.shape[1], 1))[..., 0]
    p_b = T.gather(2, top2[:, None, 1:].expand(-1, T.shape[1], 1))[..., 0]
    a = (p_a >= p_b).double()
    return torch.stack([a, 1.0 - a], dim=-1)


def epig_mc_n(logits_n_C: torch.Tensor, embedding_n_d: torch.Tensor, target_logits_M_C: torch.Tensor,
              target_embedding_M_d: torch.Tensor, posterior: GaussianLastLayer, *, n_samples: int = 2048,
              seed: int = 0) -> torch.Tensor:
    """Monte-Carlo EPIG of the Gaussian logits: consistent samples z^s_k(x) = m_k(x) +
    sqrt(scale_k) phi(x)^T L_g eps^s_k (the same weight draw for every item and target), categorical
    labels, then the member estimator over the draws.  The reference for the closed form."""
    C = logits_n_C.shape[1]
    cov = OutputCovariance.of(posterior, C)
    gen = torch.Generator().manual_seed(seed)
    L_G = torch.linalg.cholesky(cov.cov_G_d_d + 1e-12 * torch.eye(cov.cov_G_d_d.shape[-1], dtype=torch.float64))
    eps_S_K_d = torch.randn(n_samples, C, L_G.shape[-1], generator=gen, dtype=torch.float64)
    # weight perturbations per sample and output: (S, K, d) = sqrt(scale_k) L_g(k) eps
    dW = torch.einsum("kde,ske->skd", L_G[cov.group_K], eps_S_K_d) * cov.scale_K.sqrt()[None, :, None]

    def probs(logits: torch.Tensor, emb: torch.Tensor) -> torch.Tensor:
        phi = cov.features(emb)
        z = logits.double()[:, None, :] + torch.einsum("nd,skd->nsk", phi, dW)
        return torch.softmax(z, dim=-1)

    return member_epig_n(probs(logits_n_C, embedding_n_d), probs(target_logits_M_C, target_embedding_M_d))


class EPIGAcquisition:
    """Expected predictive information gain about a seeded sample of the pool (``ctx.targets``)."""

    name = "epig"
    decision = False  # True: information about the targets' top-two decisions (DecisionEPIGAcquisition)
    needs: tuple[str, ...] = ("posterior|members",)
    uses_targets = True  # the loop prepares EPIGTargets for the cycle

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        targets = ctx.targets
        if not isinstance(targets, EPIGTargets) or targets.n_targets == 0:
            raise AcquisitionError("the epig acquisition needs a target sample of the pool (EPIGTargets in "
                                   "the context); the cycle prepared none")
        members = pred.extras.get("member_probs_n_M_C")
        if targets.member_probs_M_S_C is not None:
            if members is None:
                raise AcquisitionError("the epig targets are ensemble members but this Prediction has none")
            if self.decision and targets.member_probs_M_S_C.shape[-1] > 2:
                return Scores(member_epig_n(members, member_decisions_M_S_2(targets.member_probs_M_S_C)))
            return Scores(member_epig_n(members, targets.member_probs_M_S_C))
        if ctx.posterior is None:
            raise AcquisitionError("the epig acquisition needs a Gaussian last-layer posterior (scorers vbll, "
                                   "laplace) or ensemble members (ensemble, mc-dropout, sve); this learner has neither")
        probs = label_probs(pred)
        K = n_outputs_of(ctx.posterior, probs)
        cov = targets.cov
        phi = cov.features(pred.embedding_n_d)
        noise = observation_noise_n_K(probs, ctx.posterior, phi.shape[0], K, pred.extras.get("noise_var_n"))
        var = cov.variance_for(pred, phi)
        if self.decision and targets.decision_sign_M_K is not None and pred.probs_n_C is not None:
            sign, dnoise = decision_parts(probs)
            return Scores(decision_epig_n(phi, var, sign, dnoise, targets),
                          {"noise_n_K": noise, "decision_sign_n_K": sign, "decision_noise_n": dnoise})
        return Scores(gaussian_epig_n(phi, var, noise, targets), {"noise_n_K": noise})


class DecisionEPIGAcquisition(EPIGAcquisition):
    """EPIG about the targets' decisions: information a label gives about which of its two most
    probable classes each pool target falls in (classification; other tasks as ``epig``)."""

    name = "epig-decision"
    decision = True
    regression_same_as = "epig"  # what it computes on a regression project (alkit bench leaves one out)
