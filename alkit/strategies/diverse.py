"""diverse: greedy maximisation of the analytic batch mutual information of a Gaussian last layer.

For outputs k with weight posterior N(mu_k, S_k) and noise sigma_k^2, the information a batch B
of labels carries about the weights is (uq-math.md section 9)

    I(y_B; w) = sum_k 1/2 logdet(I + Phi_B S_k Phi_B^T / sigma_k^2),

which needs no labels.  By the chain rule the greedy gain of x after B is
sum_k 1/2 log(1 + v_{k,B}(x)/sigma_k^2), with v_{k,B} the variance conditioned on B, so the
picks' gains add up to the batch log-determinant exactly; the objective is monotone submodular,
so greedy is within (1 - 1/e) of the best batch.  One pick costs O(N d + d^2) per distinct output
(rank-1 update of the conditioned covariance and of every candidate's variance), in float64.

Kronecker posteriors (cov_k = scale_k * S) only differ per output through sigma_k^2 / scale_k,
so outputs sharing that ratio share one recursion (weighted by their count).

Per-item observation noise: when the acquisition stage put ``noise_n_K`` on the candidates
(BALD's and EPIG's closed forms, alkit/acquisition/gaussian.py: r_k = 1 / (p_k (1 - p_k)) for a
class label), item i's output k is observed with its own noise r_ik, and each output runs its own
recursion with den = r_jk + v_k(x_j).  When the candidates also carry the cycle's EPIG target set,
the gain is the EPIG of the item under the posterior conditioned on the picks so far, and every
candidate-target covariance is conditioned on each pick (rank-1, O(m K M) per pick): greedy batch
EPIG, label-free like the batch information.

Decision EPIG (``epig-decision``): the candidates carry each item's top-two decision s = e_a - e_b
and its noise; f = s^T z is linear in the stacked weights, so the greedy runs in the joint
(K d)-dimensional weight space, where conditioning on a decision correlates the classes it
involves (exact under the linearised model; used while K d <= 4,096, else per-class EPIG).

Exact duplicates: under the noisy model a second copy of a picked item still has positive gain
(an independent noisy label of the same x).  A labeller gives the same x the same label, so that
gain is not real; exact duplicates of picked items are held back until nothing else is left.
"""

from __future__ import annotations

import numpy as np

from alkit.strategies._common import check_batch, require_embedding, scores_or_zeros
from alkit.types import Candidates, GaussianLastLayer, Selection, SelectionContext

_ROWS = 8192  # row chunk for the initial variances: memory O(_ROWS * d) on top of Phi


def _as_np(x: object) -> np.ndarray:
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()  # type: ignore[union-attr]
    return np.asarray(x, dtype=np.float64)


def posterior_groups(
    posterior: GaussianLastLayer | None, d: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The distinct recursions to run: covariances (G, d, d), noise variances (G,), weights (G,).

    ``posterior=None`` is the documented fallback: one isotropic output, S = I, sigma^2 = 1
    (the greedy then maximises the plain feature-space log-determinant, a DPP-like spread).
    """
    if posterior is None:
        return np.eye(d)[None], np.ones(1), np.ones(1)
    cov_K_d_d = _as_np(posterior.cov_K_d_d)
    if cov_K_d_d.ndim != 3 or cov_K_d_d.shape[1:] != (d, d):
        raise ValueError(f"cov_K_d_d must be (K, {d}, {d}) for these features, got {cov_K_d_d.shape}")
    noise_K = _as_np(posterior.noise_var_K).reshape(-1)
    scale_K = np.ones(1) if posterior.scale_K is None else _as_np(posterior.scale_K).reshape(-1)
    K = max(cov_K_d_d.shape[0], noise_K.shape[0], scale_K.shape[0])
    for name, n in (("cov_K_d_d", cov_K_d_d.shape[0]), ("noise_var_K", noise_K.shape[0]),
                    ("scale_K", scale_K.shape[0])):
        if n not in (1, K):
            raise ValueError(f"{name} has {n} outputs, expected 1 or {K}")
    if (noise_K <= 0).any() or not np.isfinite(noise_K).all():
        raise ValueError(f"noise_var_K must be positive and finite, got {noise_K}")
    if (scale_K < 0).any() or not np.isfinite(scale_K).all():
        raise ValueError(f"scale_K must be non-negative and finite, got {scale_K}")
    cov_K_d_d = 0.5 * (cov_K_d_d + cov_K_d_d.transpose(0, 2, 1))
    groups: dict[tuple[int, float], int] = {}
    for k in range(K):
        c = k if cov_K_d_d.shape[0] == K else 0
        s = float(scale_K[k if scale_K.shape[0] == K else 0])
        if s == 0.0:
            continue  # an output with no weight uncertainty carries no information
        ratio = float(noise_K[k if noise_K.shape[0] == K else 0]) / s
        groups[(c, ratio)] = groups.get((c, ratio), 0) + 1
    if not groups:
        return np.zeros((0, d, d)), np.ones(0), np.ones(0)
    cov_G_d_d = np.stack([cov_K_d_d[c] for c, _ in groups])
    noise_G = np.array([r for _, r in groups])
    weight_G = np.array(list(groups.values()), dtype=np.float64)
    return cov_G_d_d, noise_G, weight_G


def batch_information(
    phi_b_d: np.ndarray, cov_G_d_d: np.ndarray, noise_G: np.ndarray, weight_G: np.ndarray
) -> float:
    """I(y_B; w) computed directly: sum_g w_g 1/2 logdet(I + Phi_B S_g Phi_B^T / sigma_g^2)."""
    total = 0.0
    b = phi_b_d.shape[0]
    for S, s2, w in zip(cov_G_d_d, noise_G, weight_G):
        M = np.eye(b) + phi_b_d @ S @ phi_b_d.T / s2
        sign, logdet = np.linalg.slogdet(0.5 * (M + M.T))
        total += w * 0.5 * logdet
    return float(total)


def _duplicate_groups(phi_n_d: np.ndarray) -> np.ndarray:
    """Group id per row, equal for exactly equal rows (byte-wise on the float64 features)."""
    rows = np.ascontiguousarray(phi_n_d + 0.0)  # + 0.0 folds -0.0 into 0.0
    void = rows.view(np.dtype((np.void, rows.dtype.itemsize * rows.shape[1]))).ravel()
    _, inverse = np.unique(void, return_inverse=True)
    return inverse.reshape(-1)


class DiverseStrategy:
    """Greedy batch mutual information on the top-m candidates (label-free, exact gains).

    Utilities are the gains (nats); they sum to I(y_B; w).  Without ``ctx.posterior`` the prior
    is isotropic (S = I, sigma^2 = 1, no bias feature): a pure feature-space diversity rule."""

    name = "diverse"
    candidate_source = "topm"
    needs_model = True

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        b = check_batch(batch_size, candidates)
        emb_n_d = require_embedding(candidates, self.name)
        post = ctx.posterior
        if post is not None and "decision_sign_n_K" in candidates.extras and _joint_fits(post, candidates):
            order, gains = _greedy_decision(candidates, emb_n_d, post, b)
            scores_n = scores_or_zeros(candidates)
            return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=gains)
        if post is not None and "noise_n_K" in candidates.extras:
            order, gains = _greedy_heteroscedastic(candidates, emb_n_d, post, b)
            scores_n = scores_or_zeros(candidates)
            return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=gains)
        if post is not None and post.bias_feature:
            phi_n_d = np.concatenate([emb_n_d, np.ones((emb_n_d.shape[0], 1))], axis=1)
        else:
            phi_n_d = emb_n_d
        n, d = phi_n_d.shape
        cov_G_d_d, noise_G, weight_G = posterior_groups(post, d)

        var_G_n = np.empty((cov_G_d_d.shape[0], n))
        for lo in range(0, n, _ROWS):
            blk = phi_n_d[lo : lo + _ROWS]
            var_G_n[:, lo : lo + _ROWS] = np.einsum("nd,gde,ne->gn", blk, cov_G_d_d, blk, optimize=True)
        np.maximum(var_G_n, 0.0, out=var_G_n)
        cond_G_d_d = cov_G_d_d.copy()
        half_w_G = 0.5 * weight_G

        dup_n = _duplicate_groups(phi_n_d)
        picked_n = np.zeros(n, dtype=bool)
        held_n = np.zeros(n, dtype=bool)  # exact duplicates of a picked item
        order = np.empty(b, dtype=np.int64)
        gains = np.empty(b, dtype=np.float64)
        for t in range(b):
            gain_n = half_w_G @ np.log1p(var_G_n / noise_G[:, None])
            gain_n[picked_n | held_n] = -np.inf
            j = int(np.argmax(gain_n))
            if gain_n[j] == -np.inf:  # only duplicates of picks remain: take their true gain
                gain_n = half_w_G @ np.log1p(var_G_n / noise_G[:, None])
                gain_n[picked_n] = -np.inf
                j = int(np.argmax(gain_n))
            order[t], gains[t] = j, gain_n[j]
            picked_n[j] = True
            held_n |= dup_n == dup_n[j]
            if t == b - 1 or cond_G_d_d.shape[0] == 0:
                continue
            u_G_d = cond_G_d_d @ phi_n_d[j]
            den_G = noise_G + var_G_n[:, j]
            c_n_G = phi_n_d @ u_G_d.T
            var_G_n -= (c_n_G.T ** 2) / den_G[:, None]
            np.maximum(var_G_n, 0.0, out=var_G_n)
            cond_G_d_d -= np.einsum("gd,ge->gde", u_G_d, u_G_d) / den_G[:, None, None]
        scores_n = scores_or_zeros(candidates)
        return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=gains)


def _pick(gain_n, picked, held, dup_n) -> int:  # noqa: ANN001 - torch tensors, imported lazily
    """The best unpicked item that is not an exact duplicate of a pick (if only duplicates remain,
    the best of them, at its true gain); marks it picked and its duplicates held, in place."""
    import torch

    masked = gain_n.masked_fill(picked | held, -torch.inf)
    if bool(torch.isinf(masked).all()):
        masked = gain_n.masked_fill(picked, -torch.inf)
    j = int(torch.argmax(masked))
    picked[j] = True
    held |= dup_n == dup_n[j]
    return j


def _greedy_heteroscedastic(candidates: Candidates, emb_n_d: np.ndarray, post: GaussianLastLayer,
                            b: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy batch BALD (or batch EPIG with a target set) with per-item noise r_ik, float64.

    Gains: BALD 1/2 sum_k log(1 + v_ik / r_ik); EPIG the closed form of alkit/acquisition/epig.py
    with every variance and candidate-target covariance conditioned on the picks so far.
    """
    from alkit.posterior import EPIGTargets, OutputCovariance, gaussian_information_n

    import torch

    noise_n_K = torch.as_tensor(np.asarray(candidates.extras["noise_n_K"]), dtype=torch.float64)
    n, K = noise_n_K.shape
    cov = OutputCovariance.of(post, K)
    phi = cov.features(torch.as_tensor(emb_n_d))
    S_K_d_d = cov.cov_G_d_d[cov.group_K] * cov.scale_K[:, None, None]  # each output conditions on its own
    var_n_K = cov.variance_n_K(phi)
    targets = candidates.targets
    epig = isinstance(targets, EPIGTargets) and targets.cross_G_d_M is not None
    if epig:
        c_n_K_M = targets.cov.covariance_n_K_m(phi, targets.cross_G_d_M)
        var_M_K = targets.var_M_K.clone()
        noise_M_K = targets.noise_M_K
    dup_n = torch.as_tensor(_duplicate_groups(phi.numpy()))
    picked = torch.zeros(n, dtype=torch.bool)
    held = torch.zeros(n, dtype=torch.bool)
    order = np.empty(b, dtype=np.int64)
    gains = np.empty(b, dtype=np.float64)
    for t in range(b):
        if epig:
            gain_n = gaussian_information_n(c_n_K_M, var_n_K + noise_n_K, var_M_K + noise_M_K)
        else:
            gain_n = 0.5 * torch.log1p(var_n_K / noise_n_K).sum(1)
        j = _pick(gain_n, picked, held, dup_n)
        order[t], gains[t] = j, float(gain_n[j])
        if t == b - 1:
            break
        u_K_d = torch.einsum("kde,e->kd", S_K_d_d, phi[j])
        den_K = var_n_K[j] + noise_n_K[j]
        c_n_K = phi @ u_K_d.T  # Cov(z_k(x_i), z_k(x_j)) under the current conditioning
        var_n_K = (var_n_K - c_n_K.square() / den_K).clamp_min(0.0)
        S_K_d_d = S_K_d_d - torch.einsum("kd,ke->kde", u_K_d, u_K_d) / den_K[:, None, None]
        if epig:
            c_j_K_M = c_n_K_M[j].clone()
            c_n_K_M = c_n_K_M - c_n_K[:, :, None] * c_j_K_M[None] / den_K[None, :, None]
            var_M_K = (var_M_K - (c_j_K_M.square() / den_K[:, None]).T).clamp_min(0.0)
    return order, gains


_JOINT_MAX = 4096  # K * d of the joint weight space the decision greedy holds as a dense matrix


def _joint_fits(post: GaussianLastLayer, candidates: Candidates) -> bool:
    sign = candidates.extras["decision_sign_n_K"]
    d = np.asarray(post.cov_K_d_d).shape[-1]
    return sign.shape[1] * d <= _JOINT_MAX


def _greedy_decision(candidates: Candidates, emb_n_d: np.ndarray, post: GaussianLastLayer,
                     b: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy batch EPIG about the targets' top-two decisions (for ``decision-risk``: the expected
    reduction of their decision risk after the whole batch; without targets, ``decision-bald``: the
    information about the picks' own decisions, ``decision-flip``: the probability that an item's
    decision flips, expected after the labels of the picks so far), exact in the joint weight space."""
    import torch

    from alkit.posterior import OutputCovariance, expected_risk, risk_reduction_n

    sign_n_K = torch.as_tensor(np.asarray(candidates.extras["decision_sign_n_K"]), dtype=torch.float64)
    noise_n = torch.as_tensor(np.asarray(candidates.extras["decision_noise_n"]), dtype=torch.float64)
    n, K = sign_n_K.shape
    t = candidates.targets
    cov = OutputCovariance.of(post, K)
    phi = cov.features(torch.as_tensor(emb_n_d))
    d = phi.shape[1]
    S_K_d_d = cov.cov_G_d_d[cov.group_K] * cov.scale_K[:, None, None]
    Sigma = torch.block_diag(*S_K_d_d)  # (K d, K d): classes independent before any pick
    G_n_Kd = (sign_n_K[:, :, None] * phi[:, None, :]).reshape(n, K * d)
    var_f = (G_n_Kd @ Sigma * G_n_Kd).sum(1)
    var_f0 = var_f.clone()
    own = t is None or t.decision_sign_M_K is None  # decision-bald / -flip: about the picks' own decisions
    margin_n = candidates.extras.get("decision_margin_n")
    margin_n = None if margin_n is None else torch.as_tensor(np.asarray(margin_n), dtype=torch.float64)
    if not own:
        s_t = t.decision_sign_M_K
        # Sigma g*_j from the prepared factors: block k is s*_jk scale_k S_g(k) phi*_j
        U_M_Kd = (s_t.T[:, None, :] * t.cross_G_d_M[cov.group_K] * cov.scale_K[:, None, None]).permute(2, 0, 1)
        U_M_Kd = U_M_Kd.reshape(-1, K * d)
        c_n_M = G_n_Kd @ U_M_Kd.T
        var_t = (s_t.square() * t.var_M_K).sum(1)
        noise_t = t.decision_noise_M
        risk = t.objective == "risk" and t.decision_margin_M is not None
        var_t0 = var_t.clone()
    dup_n = torch.as_tensor(_duplicate_groups(phi.numpy()))
    picked = torch.zeros(n, dtype=torch.bool)
    held = torch.zeros(n, dtype=torch.bool)
    order = np.empty(b, dtype=np.int64)
    gains = np.empty(b, dtype=np.float64)
    for step in range(b):
        if own and margin_n is not None:  # decision-flip: the flip probability left after the batch so far
            gain_n = expected_risk(margin_n, var_f0, var_f[None])[0]
        elif own:
            gain_n = 0.5 * torch.log1p(var_f / noise_n)
        elif risk:
            gain_n = risk_reduction_n(c_n_M, var_f + noise_n, t.decision_margin_M, var_t, base_var_M=var_t0)
        else:
            rho2 = c_n_M.square() / ((var_f + noise_n)[:, None] * (var_t + noise_t)[None])
            gain_n = (-0.5 * torch.log1p(-rho2.clamp(max=1.0 - 1e-12))).mean(1)
        j = _pick(gain_n, picked, held, dup_n)
        order[step], gains[step] = j, float(gain_n[j])
        if step == b - 1:
            break
        u = Sigma @ G_n_Kd[j]
        den = var_f[j] + noise_n[j]
        c_n = G_n_Kd @ u
        if not own:
            c_j_M = c_n_M[j].clone()
            c_n_M = c_n_M - c_n[:, None] * c_j_M[None] / den
            var_t = (var_t - c_j_M.square() / den).clamp_min(0.0)
        var_f = (var_f - c_n.square() / den).clamp_min(0.0)
        Sigma = Sigma - torch.outer(u, u) / den
    return order, gains
