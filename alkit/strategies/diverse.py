"""diverse: greedy maximisation of the analytic batch mutual information of a Gaussian last layer.

For outputs k with weight posterior N(mu_k, S_k) and noise sigma_k^2, the information a batch B
of labels carries about the weights is (uq-math.md section 9)

    I(y_B; w) = sum_k 1/2 logdet(I + Phi_B S_k Phi_B^T / sigma_k^2),

which needs no labels.  By the chain rule the greedy gain of x after B is
sum_k 1/2 log(1 + v_{k,B}(x)/sigma_k^2), with v_{k,B} the variance conditioned on B, so the
picks' gains add up to the batch log-determinant exactly; the objective is monotone submodular,
so greedy is within (1 - 1/e) of the best batch.  The full update costs O(N d + d^2) per pick and
distinct output (rank-1 update of the conditioned covariance and of every candidate's variance), in
float64.  Since these gains only shrink as picks are added, the default is lazy greedy (Minoux):
only the candidates whose stale gain could still be the best are brought up to date, with the
same picks (see _LazyGreedy; benchmarks/results/select_scale.md for the saving).

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
The same joint greedy serves ``decision-bald`` and ``decision-flip``; past K d = 4,096 (e.g. more
than 31 classes on 129 features) those fall back to the batch information of the candidates'
embeddings, still over their top m by the score.

Exact duplicates: under the noisy model a second copy of a picked item still has positive gain
(an independent noisy label of the same x).  A labeller gives the same x the same label, so that
gain is not real; exact duplicates of picked items are held back until nothing else is left.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch
from threadpoolctl import ThreadpoolController

from alkit.strategies._common import KeyTiedGumbelRows, check_batch, log_weights, no_picks, require_embedding, scores_or_zeros
from alkit.types import Candidates, GaussianLastLayer, Selection, SelectionContext

_ROWS = 8192  # row chunk for the initial variances: memory O(_ROWS * d) on top of Phi


@functools.cache
def _blas() -> ThreadpoolController:
    """threadpoolctl's handle on the BLAS libraries loaded (numpy's and torch's, loaded before any
    selection), made once: ``threadpool_limits`` finds them afresh on every call by reading each
    loaded library, ~3 ms, which was three quarters of a small selection's time."""
    return ThreadpoolController()


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


_TIE_REL = 1e-9  # lazy top-two gains closer than this (relative) are settled in the reference arithmetic
_TIE_ABS = 1e-15  # ... or closer than this (absolute): the decision-flip gain's own rounding is ~1e-16
_REFRESH = 32  # stale candidates the lazy greedy first brings up to date per matrix product


def _tie(g: float | np.ndarray) -> float | np.ndarray:
    """How close two gains near g may be before the reference's own arithmetic has to decide."""
    return _TIE_REL * abs(g) + _TIE_ABS


class DiverseStrategy:
    """Greedy batch mutual information on the top-m candidates (label-free, exact gains).

    Utilities are the gains (nats); they sum to I(y_B; w).  Without ``ctx.posterior`` the prior
    is isotropic (S = I, sigma^2 = 1, no bias feature): a pure feature-space diversity rule.

    ``lazy`` (default): lazy greedy (Minoux) wherever the gains can only shrink as picks are added
    (batch information, batch BALD, decision-bald, decision-flip), with the same picks as the
    full-update greedy (``lazy=False``, kept as the reference); EPIG and decision-risk gains are not
    monotone and always take the full update."""

    name = "diverse"
    candidate_source = "topm"
    needs_model = True

    def __init__(self, lazy: bool = True) -> None:
        self.lazy = lazy

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        b = check_batch(batch_size, candidates)
        if b == 0:
            return no_picks()
        make_full, lazy = _paths(candidates, require_embedding(candidates, self.name), ctx.posterior)
        order, gains = self._picks(make_full, lazy, b, candidates, ctx)
        scores_n = scores_or_zeros(candidates)
        return Selection(keys=candidates.keys_n[order], scores=scores_n[order], utilities=gains)

    def _picks(self, make_full: Callable[[], _FullUpdate], lazy: _LazyGreedy | None, b: int,
               candidates: Candidates, ctx: SelectionContext) -> tuple[np.ndarray, np.ndarray]:
        """The picks (candidate indices) and their gains: taken, or drawn where ``_noise`` gives keys."""
        gumbel_b_n = self._noise(b, candidates, ctx)
        if self.lazy and lazy is not None:
            with _blas().limit(limits=1, user_api="blas"):  # many small products: BLAS threads only cost
                return lazy.run(b, make_full, gumbel_b_n)
        return _full_greedy(make_full(), b, gumbel_b_n)

    def _noise(self, b: int, candidates: Candidates, ctx: SelectionContext) -> KeyTiedGumbelRows | None:
        """Gumbel noise, a row of n per step, that turns each step's argmax into a draw; None: the greedy takes."""
        return None


class SampledDiverseStrategy(DiverseStrategy):
    """``diverse`` with each pick drawn instead of taken: p proportional to its gain given the picks
    so far (for decision-flip, the flip probability left after them), over the same top-m candidates.

    A hybrid of ``diverse`` and ``power``: the conditioning keeps two picks off one open decision,
    the draw keeps a batch from piling onto near-ties the fitted posterior ranks by noise.  Each
    step is a Gumbel-max draw with fresh noise tied to the candidates' keys (seeded per cycle), so a
    run is reproducible and resumable.  ``lazy`` (default) draws through the lazy greedy with the
    perturbed keys log gain + gumbel (a stale gain still bounds its key), with the same picks as the
    full update (``lazy=False``, the reference); benchmarks/results/select_scale_sampled.md has the
    cost.  The `epistemic` preset's classification selector (with decision-flip), chosen on 14
    development sets (label_efficiency_dev/clean_recheck.md) and kept on 16 (text_recheck.md)."""

    name = "power-diverse"

    def _noise(self, b: int, candidates: Candidates, ctx: SelectionContext) -> KeyTiedGumbelRows | None:
        return KeyTiedGumbelRows(candidates.keys_n, ctx.seed, b)


def _paths(candidates: Candidates, emb_n_d: np.ndarray, post: GaussianLastLayer | None
           ) -> tuple[Callable[[], _FullUpdate], _LazyGreedy | None]:
    """The recursion the candidates call for: decision gains where the acquisition handed on
    top-two decisions (and the joint weight space fits), per-item noise where it handed on noise,
    else the batch information; as (full-update factory, lazy greedy or None)."""
    if post is not None and "decision_sign_n_K" in candidates.extras and _joint_fits(post, candidates):
        return _decision_paths(candidates, emb_n_d, post)
    if post is not None and "noise_n_K" in candidates.extras:
        return _heteroscedastic_paths(candidates, emb_n_d, post)
    return _homoscedastic_paths(emb_n_d, post)


# ---------------------------------------------------------------- the full-update greedy (reference)

class _FullUpdate(Protocol):
    """One code path's exact recursion: every candidate's gain is updated after every pick."""

    dup_n: np.ndarray

    def gains(self) -> np.ndarray: ...  # (n,) float64 under the picks applied so far

    def update(self, j: int) -> None: ...  # condition every candidate on pick j

    def variances_n_G(self) -> np.ndarray: ...  # the conditioned variances, (n, G)


def _best(gain_n: np.ndarray, picked_n: np.ndarray, held_n: np.ndarray) -> int:
    """The best unpicked item that is not an exact duplicate of a pick (if only duplicates remain,
    the best of them, at its true gain); argmax takes the first index of a tie."""
    masked = np.where(picked_n | held_n, -np.inf, gain_n)
    if np.isneginf(masked).all():
        masked = np.where(picked_n, -np.inf, gain_n)
    return int(np.argmax(masked))


def _full_greedy(full: _FullUpdate, b: int, gumbel_b_n: KeyTiedGumbelRows | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The greedy with every candidate's gain recomputed after every pick: O(n d) per pick and output.
    With ``gumbel_b_n`` step t draws its pick with p proportional to the gains (argmax of log gain +
    gumbel_b_n[t]) instead of taking the largest."""
    n = full.dup_n.shape[0]
    picked_n = np.zeros(n, dtype=bool)
    held_n = np.zeros(n, dtype=bool)  # exact duplicates of a picked item
    order = np.empty(b, dtype=np.int64)
    gains = np.empty(b, dtype=np.float64)
    for t in range(b):
        gain_n = full.gains()
        if gumbel_b_n is None:
            j = _best(gain_n, picked_n, held_n)
        else:
            j = _best(log_weights(gain_n) + gumbel_b_n[t], picked_n, held_n)
        order[t], gains[t] = j, gain_n[j]
        picked_n[j] = True
        held_n |= full.dup_n == full.dup_n[j]
        if t < b - 1:
            full.update(j)
    return order, gains


def _initial_var_G_n(phi_n_d: np.ndarray, cov_G_d_d: np.ndarray) -> np.ndarray:
    var_G_n = np.empty((cov_G_d_d.shape[0], phi_n_d.shape[0]))
    for lo in range(0, phi_n_d.shape[0], _ROWS):
        blk = phi_n_d[lo : lo + _ROWS]
        var_G_n[:, lo : lo + _ROWS] = np.einsum("nd,gde,ne->gn", blk, cov_G_d_d, blk, optimize=True)
    return np.maximum(var_G_n, 0.0)


class _HomoscedasticFull:
    """Batch information with shared noise per group: rank-1 update of each group's covariance."""

    def __init__(self, phi_n_d: np.ndarray, cov_G_d_d: np.ndarray, noise_G: np.ndarray,
                 weight_G: np.ndarray, dup_n: np.ndarray) -> None:
        self.phi_n_d, self.noise_G, self.dup_n = phi_n_d, noise_G, dup_n
        self.var_G_n = _initial_var_G_n(phi_n_d, cov_G_d_d)
        self.cond_G_d_d = cov_G_d_d.copy()
        self.half_w_G = 0.5 * weight_G

    def gains(self) -> np.ndarray:
        return self.half_w_G @ np.log1p(self.var_G_n / self.noise_G[:, None])

    def update(self, j: int) -> None:
        if self.cond_G_d_d.shape[0] == 0:
            return
        u_G_d = self.cond_G_d_d @ self.phi_n_d[j]
        den_G = self.noise_G + self.var_G_n[:, j]
        c_n_G = self.phi_n_d @ u_G_d.T
        self.var_G_n -= (c_n_G.T ** 2) / den_G[:, None]
        np.maximum(self.var_G_n, 0.0, out=self.var_G_n)
        self.cond_G_d_d -= np.einsum("gd,ge->gde", u_G_d, u_G_d) / den_G[:, None, None]

    def variances_n_G(self) -> np.ndarray:
        return self.var_G_n.T.copy()


def _homoscedastic_paths(emb_n_d: np.ndarray, post: GaussianLastLayer | None
                         ) -> tuple[Callable[[], _FullUpdate], _LazyGreedy | None]:
    if post is not None and post.bias_feature:
        phi_n_d = np.concatenate([emb_n_d, np.ones((emb_n_d.shape[0], 1))], axis=1)
    else:
        phi_n_d = emb_n_d
    cov_G_d_d, noise_G, weight_G = posterior_groups(post, phi_n_d.shape[1])
    dup_n = _duplicate_groups(phi_n_d)

    def make_full() -> _FullUpdate:
        return _HomoscedasticFull(phi_n_d, cov_G_d_d, noise_G, weight_G, dup_n)

    if cov_G_d_d.shape[0] == 0:  # no output carries information: every gain is 0
        return make_full, None
    half_w_G = 0.5 * weight_G
    return make_full, _LazyGreedy(
        rows=lambda idx: phi_n_d[idx],
        var_n_G=_initial_var_G_n(phi_n_d, cov_G_d_d).T.copy(),
        prior_times=lambda x_p: cov_G_d_d @ x_p,
        pick_noise=lambda j: noise_G,
        gain=lambda var_r_G, idx: np.log1p(var_r_G / noise_G) @ half_w_G,
        dup_n=dup_n,
    )


class _HeteroscedasticFull:
    """Batch BALD (or batch EPIG with a target set) with per-item noise r_ik, float64.

    Gains: BALD 1/2 sum_k log(1 + v_ik / r_ik); EPIG the closed form of alkit/acquisition/epig.py
    with every variance and candidate-target covariance conditioned on the picks so far."""

    def __init__(self, noise_n_K: torch.Tensor, phi: torch.Tensor, S_K_d_d: torch.Tensor,
                 var_n_K: torch.Tensor, targets: object, dup_n: np.ndarray) -> None:
        from alkit.posterior import EPIGTargets

        self.noise_n_K, self.phi, self.S_K_d_d, self.var_n_K, self.dup_n = noise_n_K, phi, S_K_d_d, var_n_K, dup_n
        self.epig = isinstance(targets, EPIGTargets) and targets.cross_G_d_M is not None
        if self.epig:
            self.c_n_K_M = targets.cov.covariance_n_K_m(phi, targets.cross_G_d_M)
            self.var_M_K = targets.var_M_K.clone()
            self.noise_M_K = targets.noise_M_K

    def gains(self) -> np.ndarray:
        from alkit.posterior import gaussian_information_n

        if self.epig:
            gain_n = gaussian_information_n(self.c_n_K_M, self.var_n_K + self.noise_n_K, self.var_M_K + self.noise_M_K)
        else:
            gain_n = 0.5 * torch.log1p(self.var_n_K / self.noise_n_K).sum(1)
        return gain_n.numpy()

    def update(self, j: int) -> None:
        phi, noise_n_K = self.phi, self.noise_n_K
        u_K_d = torch.einsum("kde,e->kd", self.S_K_d_d, phi[j])
        den_K = self.var_n_K[j] + noise_n_K[j]
        c_n_K = phi @ u_K_d.T  # Cov(z_k(x_i), z_k(x_j)) under the current conditioning
        self.var_n_K = (self.var_n_K - c_n_K.square() / den_K).clamp_min(0.0)
        self.S_K_d_d = self.S_K_d_d - torch.einsum("kd,ke->kde", u_K_d, u_K_d) / den_K[:, None, None]
        if self.epig:
            c_j_K_M = self.c_n_K_M[j].clone()
            self.c_n_K_M = self.c_n_K_M - c_n_K[:, :, None] * c_j_K_M[None] / den_K[None, :, None]
            self.var_M_K = (self.var_M_K - (c_j_K_M.square() / den_K[:, None]).T).clamp_min(0.0)

    def variances_n_G(self) -> np.ndarray:
        return self.var_n_K.numpy().copy()


def _heteroscedastic_paths(candidates: Candidates, emb_n_d: np.ndarray, post: GaussianLastLayer
                           ) -> tuple[Callable[[], _FullUpdate], _LazyGreedy | None]:
    from alkit.posterior import EPIGTargets, OutputCovariance

    noise_n_K = torch.as_tensor(np.asarray(candidates.extras["noise_n_K"]), dtype=torch.float64)
    cov = OutputCovariance.of(post, noise_n_K.shape[1])
    phi = cov.features(torch.as_tensor(emb_n_d))
    S_K_d_d = cov.cov_G_d_d[cov.group_K] * cov.scale_K[:, None, None]  # each output conditions on its own
    var_n_K = cov.variance_n_K(phi)
    targets = candidates.targets
    dup_n = _duplicate_groups(phi.numpy())

    def make_full() -> _FullUpdate:
        return _HeteroscedasticFull(noise_n_K, phi, S_K_d_d, var_n_K, targets, dup_n)

    if isinstance(targets, EPIGTargets) and targets.cross_G_d_M is not None:
        return make_full, None  # greedy EPIG: a gain can grow as picks are added
    phi_n_d, S_np, noise_np = phi.numpy(), S_K_d_d.numpy(), noise_n_K.numpy()
    return make_full, _LazyGreedy(
        rows=lambda idx: phi_n_d[idx],
        var_n_G=var_n_K.numpy().copy(),
        prior_times=lambda x_p: S_np @ x_p,
        pick_noise=lambda j: noise_np[j],
        gain=lambda var_r_K, idx: 0.5 * np.log1p(var_r_K / noise_np[idx]).sum(1),
        dup_n=dup_n,
    )


_JOINT_MAX = 4096  # K * d of the joint weight space the decision greedy works in: (m, K d) float64 rows, one K d factor per pick


def _joint_fits(post: GaussianLastLayer, candidates: Candidates) -> bool:
    sign = candidates.extras["decision_sign_n_K"]
    d = np.asarray(post.cov_K_d_d).shape[-1]
    return sign.shape[1] * d <= _JOINT_MAX


class _DecisionFull:
    """Greedy batch EPIG about the targets' top-two decisions (for ``decision-risk``: the expected
    reduction of their decision risk after the whole batch; without targets, ``decision-bald``: the
    information about the picks' own decisions, ``decision-flip``: the probability that an item's
    decision flips, expected after the labels of the picks so far), exact in the joint weight space."""

    def __init__(self, sign_n_K: torch.Tensor, noise_n: torch.Tensor, margin_n: torch.Tensor | None,
                 phi: torch.Tensor, S_K_d_d: torch.Tensor, cov: object, targets: object, dup_n: np.ndarray) -> None:
        n, K = sign_n_K.shape
        d = phi.shape[1]
        t = targets
        self.noise_n, self.margin_n, self.dup_n = noise_n, margin_n, dup_n
        # The joint covariance is Sigma_0 = blockdiag(S_k) (classes independent before any pick) less
        # one rank-1 term per pick, kept as factors: Sigma_t = Sigma_0 - sum_s u_s u_s^T / den_s, so a
        # pick costs O(n K d + t K d), never a (K d)^2 matrix.
        self.S_K_d_d = S_K_d_d
        self._U_T_Kd = torch.empty((8, K * d), dtype=torch.float64)  # factor rows, grown by doubling
        self._den_T = torch.empty(8, dtype=torch.float64)
        self._n_picks = 0
        G_n_K_d = sign_n_K[:, :, None] * phi[:, None, :]
        self.G_n_Kd = G_n_K_d.reshape(n, K * d)
        self.var_f = torch.einsum("nkd,kde,nke->n", G_n_K_d, S_K_d_d, G_n_K_d)
        self.var_f0 = self.var_f.clone()
        self.own = t is None or t.decision_sign_M_K is None  # decision-bald / -flip: about the picks' own decisions
        self.t = t
        if not self.own:
            s_t = t.decision_sign_M_K
            # Sigma g*_j from the prepared factors: block k is s*_jk scale_k S_g(k) phi*_j
            U_M_Kd = (s_t.T[:, None, :] * t.cross_G_d_M[cov.group_K] * cov.scale_K[:, None, None]).permute(2, 0, 1)
            U_M_Kd = U_M_Kd.reshape(-1, K * d)
            self.c_n_M = self.G_n_Kd @ U_M_Kd.T
            self.var_t = (s_t.square() * t.var_M_K).sum(1)
            self.risk = t.objective == "risk" and t.decision_margin_M is not None
            self.var_t0 = self.var_t.clone()

    def gains(self) -> np.ndarray:
        from alkit.posterior import expected_risk, risk_reduction_n

        var_f, noise_n, t = self.var_f, self.noise_n, self.t
        if self.own and self.margin_n is not None:  # decision-flip: the flip probability left after the batch so far
            gain_n = expected_risk(self.margin_n, self.var_f0, var_f[None])[0]
        elif self.own:
            gain_n = 0.5 * torch.log1p(var_f / noise_n)
        elif self.risk:
            gain_n = risk_reduction_n(self.c_n_M, var_f + noise_n, t.decision_margin_M, self.var_t,
                                      base_var_M=self.var_t0)
        else:
            rho2 = self.c_n_M.square() / ((var_f + noise_n)[:, None] * (self.var_t + t.decision_noise_M)[None])
            gain_n = (-0.5 * torch.log1p(-rho2.clamp(max=1.0 - 1e-12))).mean(1)
        return gain_n.numpy()

    def update(self, j: int) -> None:
        g = self.G_n_Kd[j]
        K, d = self.S_K_d_d.shape[:2]
        u = torch.einsum("kde,ke->kd", self.S_K_d_d, g.reshape(K, d)).reshape(-1)  # Sigma_0 g
        t = self._n_picks
        if t:
            U, den_T = self._U_T_Kd[:t], self._den_T[:t]
            u = u - ((U @ g) / den_T) @ U  # Sigma_t g
        den = self.var_f[j] + self.noise_n[j]
        c_n = self.G_n_Kd @ u
        if not self.own:
            c_j_M = self.c_n_M[j].clone()
            self.c_n_M = self.c_n_M - c_n[:, None] * c_j_M[None] / den
            self.var_t = (self.var_t - c_j_M.square() / den).clamp_min(0.0)
        self.var_f = (self.var_f - c_n.square() / den).clamp_min(0.0)
        if t == len(self._den_T):
            self._U_T_Kd = torch.cat([self._U_T_Kd, torch.empty_like(self._U_T_Kd)])
            self._den_T = torch.cat([self._den_T, torch.empty_like(self._den_T)])
        self._U_T_Kd[t], self._den_T[t] = u, den
        self._n_picks = t + 1

    def variances_n_G(self) -> np.ndarray:
        return self.var_f.numpy()[:, None].copy()


def _decision_paths(candidates: Candidates, emb_n_d: np.ndarray, post: GaussianLastLayer
                    ) -> tuple[Callable[[], _FullUpdate], _LazyGreedy | None]:
    from alkit.posterior import OutputCovariance, expected_risk

    sign_n_K = torch.as_tensor(np.asarray(candidates.extras["decision_sign_n_K"]), dtype=torch.float64)
    noise_n = torch.as_tensor(np.asarray(candidates.extras["decision_noise_n"]), dtype=torch.float64)
    n, K = sign_n_K.shape
    t = candidates.targets
    cov = OutputCovariance.of(post, K)
    phi = cov.features(torch.as_tensor(emb_n_d))
    S_K_d_d = cov.cov_G_d_d[cov.group_K] * cov.scale_K[:, None, None]
    margin_n = candidates.extras.get("decision_margin_n")
    margin_n = None if margin_n is None else torch.as_tensor(np.asarray(margin_n), dtype=torch.float64)
    dup_n = _duplicate_groups(phi.numpy())

    def make_full() -> _FullUpdate:
        return _DecisionFull(sign_n_K, noise_n, margin_n, phi, S_K_d_d, cov, t, dup_n)

    if not (t is None or t.decision_sign_M_K is None):
        return make_full, None  # decision-risk / decision EPIG about targets: not monotone
    d = phi.shape[1]
    sign_np, phi_np, S_np, noise_np = sign_n_K.numpy(), phi.numpy(), S_K_d_d.numpy(), noise_n.numpy()
    # Var f before any pick: the classes are independent, so sum_k s_k^2 Var z_k (no (K d)^2 product)
    var0_n = (sign_np ** 2 * cov.variance_n_K(phi).numpy()).sum(1)

    def gain(var_r_1: np.ndarray, idx: np.ndarray) -> np.ndarray:
        if margin_n is None:  # decision-bald
            return 0.5 * np.log1p(var_r_1[:, 0] / noise_np[idx])
        v0 = torch.as_tensor(var0_n[idx])  # decision-flip: monotone in Var f (the Bayes risk of a finer posterior)
        return expected_risk(margin_n[idx], v0, torch.as_tensor(var_r_1[:, 0])[None])[0].numpy()

    return make_full, _LazyGreedy(
        rows=lambda idx: (sign_np[idx, :, None] * phi_np[idx, None, :]).reshape(len(idx), K * d),
        var_n_G=var0_n[:, None].copy(),
        prior_times=lambda x_p: np.einsum("kde,ke->kd", S_np, x_p.reshape(K, d)).reshape(1, K * d),
        pick_noise=lambda j: noise_np[j : j + 1],
        gain=gain,
        dup_n=dup_n,
    )


# ---------------------------------------------------------------- lazy greedy

@dataclass
class _LazyGreedy:
    """Lazy greedy (Minoux) for gains that only shrink as picks are added, same picks as the full update.

    Each candidate keeps its variances as of the pick it was last brought up to date at (its stamp)
    and its gain then, an upper bound on its gain now.  A step brings the highest stale bounds up to
    date (``_REFRESH`` at first, doubling; one product with the picks' factors u_s = S_s x_s since
    the oldest stamp, Var_t(x) = Var_s(x) - sum (x^T u_s)^2 / den_s) until no stale bound reaches
    the best current gain and every other current gain is below it by more than ``_tie``; so the pick is the full
    update's argmax, whose arithmetic differs from this one only in the last bits.  Where the top two
    current gains are closer than that, the step is a full re-score in the reference's own
    arithmetic (``_FullUpdate``, replayed over the picks since the last re-score), and its argmax is
    taken.  Exact duplicates are no exception: the reference's products can round two copies of a
    row differently (torch's GEMM does), so an unpicked copy level with the leader is a near tie
    too; picks' duplicates are held back as in the reference.

    ``rows(idx)`` are the candidates' rows x (r, p) in the space the picks condition, ``prior_times(x)``
    S_0 x (G, p) per output group, ``pick_noise(j)`` the noise of observing pick j (G,), ``gain(var
    (r, G), idx)`` the gains (r,) from the conditioned variances."""

    rows: Callable[[np.ndarray], np.ndarray]
    var_n_G: np.ndarray
    prior_times: Callable[[np.ndarray], np.ndarray]
    pick_noise: Callable[[int], np.ndarray]
    gain: Callable[[np.ndarray, np.ndarray], np.ndarray]
    dup_n: np.ndarray
    n_refreshed: int = 0  # candidates brought up to date (what the lazy path computed instead of n per pick)
    n_rescored: int = 0  # near ties settled by a full re-score

    def run(self, b: int, make_full: Callable[[], _FullUpdate], gumbel_b_n: KeyTiedGumbelRows | None = None
            ) -> tuple[np.ndarray, np.ndarray]:
        """b picks and their gains; with ``gumbel_b_n`` the draws of ``_full_greedy`` with that noise."""
        n, G = self.var_n_G.shape
        self._gumbel_b_n = gumbel_b_n
        self._var_n_G = self.var_n_G.copy()
        self._stamp_n = np.zeros(n, dtype=np.int64)
        self._bound_n = self.gain(self._var_n_G, np.arange(n))
        p = self.rows(np.zeros(1, dtype=np.int64)).shape[1]
        self._u_T_G_p = np.empty((b, G, p))
        self._den_T_G = np.empty((b, G))
        self._picked_n = np.zeros(n, dtype=bool)
        self._held_n = np.zeros(n, dtype=bool)
        self._release = False  # True once only duplicates of picks are left: they compete too
        self._make_full, self._full, self._applied = make_full, None, 0
        order = np.empty(b, dtype=np.int64)
        gains = np.empty(b, dtype=np.float64)
        for t in range(b):
            j, g = self._choose(t, order)
            order[t], gains[t] = j, g
            self._picked_n[j] = True
            self._held_n |= self.dup_n == self.dup_n[j]
            if t < b - 1:
                self._condition(t, j)
        return order, gains

    def _refresh(self, idx: np.ndarray, t: int) -> None:
        if idx.size == 0:
            return
        stamp_r = self._stamp_n[idx]
        lo = int(stamp_r.min())
        if lo < t:
            G, p = self._u_T_G_p.shape[1:]
            c_r_T_G = (self.rows(idx) @ self._u_T_G_p[lo:t].reshape(-1, p).T).reshape(len(idx), t - lo, G)
            live_r_T = np.arange(lo, t)[None, :] >= stamp_r[:, None]
            drop_r_G = np.einsum("rtg,tg,rt->rg", c_r_T_G ** 2, 1.0 / self._den_T_G[lo:t], live_r_T)
            self._var_n_G[idx] = np.maximum(self._var_n_G[idx] - drop_r_G, 0.0)
        self._stamp_n[idx] = t
        self._bound_n[idx] = self.gain(self._var_n_G[idx], idx)
        self.n_refreshed += idx.size

    def _choose(self, t: int, order: np.ndarray) -> tuple[int, float]:
        """Step t's pick and its gain."""
        if not self._release and (self._picked_n | self._held_n).all():
            self._release = True  # only duplicates of picks are left: they compete now
        avail_n = ~self._picked_n if self._release else ~(self._picked_n | self._held_n)
        if self._gumbel_b_n is not None:
            return self._draw(t, order, avail_n)
        r = _REFRESH
        while True:  # bring up to date every stale bound that could reach the best current gain
            fresh_n = self._stamp_n == t
            best = float(np.max(self._bound_n, where=avail_n & fresh_n, initial=-np.inf))
            level = best - _tie(best) if np.isfinite(best) else -np.inf
            stale = np.flatnonzero(avail_n & ~fresh_n & (self._bound_n >= level))
            if stale.size == 0:
                break
            if stale.size > r:  # the highest r bounds first; r doubles while many remain
                stale = stale[np.argpartition(-self._bound_n[stale], r - 1)[:r]]
            self._refresh(stale, t)
            r *= 2
        key_n = np.where(avail_n, self._bound_n, -np.inf)
        lead = int(np.argmax(key_n))
        g = float(key_n[lead])
        key_n[lead] = -np.inf
        if float(key_n.max()) >= g - _tie(g):  # a near tie of current gains: the reference decides
            return self._rescore(t, order)
        return lead, g

    def _draw(self, t: int, order: np.ndarray, avail_n: np.ndarray) -> tuple[int, float]:
        """Step t's draw: the argmax of log gain + gumbel_t that the full update takes.  A key's
        arithmetic can differ from the reference's by the gain's ``_tie``, so the lead is certain
        once its lowest possible key is above every other item's highest one, log(bound + tie) +
        gumbel (a stale bound only over-states its gain); stale items that reach the lead's lowest
        key are brought up to date first, and a fresh one that still reaches it is a near tie the
        reference's own arithmetic settles."""
        gumbel_n = self._gumbel_b_n[t]
        r = _REFRESH
        while True:
            fresh_n = avail_n & (self._stamp_n == t)
            key_n = np.where(fresh_n, log_weights(self._bound_n) + gumbel_n, -np.inf)
            lead = int(np.argmax(key_n))
            g = float(self._bound_n[lead])
            low = float(np.log(g - _tie(g))) + gumbel_n[lead] if fresh_n[lead] and g > _tie(g) else -np.inf
            high_n = log_weights(self._bound_n + _tie(self._bound_n)) + gumbel_n
            stale = np.flatnonzero(avail_n & ~fresh_n & (high_n >= low))
            if stale.size == 0:
                break
            if stale.size > r:  # the highest r first; r doubles while many remain
                stale = stale[np.argpartition(-high_n[stale], r - 1)[:r]]
            self._refresh(stale, t)
            r *= 2
        high_n[lead] = -np.inf
        if not np.isfinite(low) or bool((high_n[fresh_n] >= low).any()):
            return self._rescore(t, order)
        return lead, g

    def _rescore(self, t: int, order: np.ndarray) -> tuple[int, float]:
        """The full update's pick at step t: its recursion replayed over the picks since the last
        re-score (bitwise the reference's state, as those picks are the reference's), then its argmax;
        every candidate's bound restarts from the reference's variances."""
        if self._full is None:
            self._full = self._make_full()
        while self._applied < t:
            self._full.update(int(order[self._applied]))
            self._applied += 1
        gain_n = self._full.gains()
        key_n = gain_n if self._gumbel_b_n is None else log_weights(gain_n) + self._gumbel_b_n[t]
        j = _best(key_n, self._picked_n, self._held_n)
        self._var_n_G = self._full.variances_n_G()
        self._stamp_n[:] = t
        self._bound_n = gain_n.copy()
        self.n_rescored += 1
        return j, float(gain_n[j])

    def _condition(self, t: int, j: int) -> None:
        """Record pick j's factor u_t = S_t x_j = S_0 x_j - sum_s u_s (u_s^T x_j) / den_s (and den_t)."""
        x_p = self.rows(np.array([j]))[0]
        u_G_p = self.prior_times(x_p)
        if t:
            coef_T_G = (self._u_T_G_p[:t] @ x_p) / self._den_T_G[:t]
            u_G_p = u_G_p - np.einsum("tg,tgp->gp", coef_T_G, self._u_T_G_p[:t])
        self._u_T_G_p[t] = u_G_p
        self._den_T_G[t] = self.pick_noise(j) + self._var_n_G[j]
