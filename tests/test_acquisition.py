"""The Acquisition stage: classic scores exact on hand-made probabilities, BALD and EPIG against
Monte Carlo and brute force on the same posterior, EPIG's Gaussian closed form against the joint
covariance, the batch (greedy) forms against explicit conditioning, and clear errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
import torch
from scipy.stats import spearmanr

from alkit.acquisition import ACQUISITIONS, AcquisitionError, EPIGTargets, get_acquisition
from alkit.acquisition.bald import bald_mc_n, gaussian_bald_n
from alkit.distributions import member_bald_n
from alkit.acquisition.epig import epig_mc_n, gaussian_epig_n, member_epig_n
from alkit.posterior import OutputCovariance
from alkit.registry import check_acquisition
from alkit.strategies import get_selector
from alkit.types import AcquisitionContext, Candidates, GaussianLastLayer, Prediction, SelectionContext


def _pred(probs: list[list[float]] | torch.Tensor, **kw: object) -> Prediction:
    p = torch.as_tensor(probs, dtype=torch.float64)
    n = p.shape[0]
    return Prediction(torch.zeros(n), torch.zeros(n), torch.zeros(n, 2), probs_n_C=p, **kw)  # type: ignore[arg-type]


def test_classic_scores_exact() -> None:
    p = [[0.7, 0.2, 0.1], [0.4, 0.35, 0.25], [1.0, 0.0, 0.0], [1 / 3, 1 / 3, 1 / 3]]
    ctx = AcquisitionContext()
    margin = get_acquisition("margin").score(_pred(p), ctx).scores_n.numpy()
    np.testing.assert_allclose(margin, [-0.5, -0.05, -1.0, 0.0], atol=1e-12)
    ent = get_acquisition("entropy").score(_pred(p), ctx).scores_n.numpy()
    ref = [-(0.7 * math.log(0.7) + 0.2 * math.log(0.2) + 0.1 * math.log(0.1)),
           -(0.4 * math.log(0.4) + 0.35 * math.log(0.35) + 0.25 * math.log(0.25)), 0.0, math.log(3)]
    np.testing.assert_allclose(ent, ref, atol=1e-12)
    lc = get_acquisition("least-confident").score(_pred(p), ctx).scores_n.numpy()
    np.testing.assert_allclose(lc, [0.3, 0.6, 0.0, 2 / 3], atol=1e-12)
    # the most ambiguous item ranks first under every classic score
    assert int(np.argmax(margin)) == int(np.argmax(ent)) == int(np.argmax(lc)) == 3


def test_classic_scores_refuse_regression() -> None:
    pred = Prediction(torch.zeros(3), torch.zeros(3), torch.zeros(3, 2), mean_n=torch.zeros(3))
    for name in ("margin", "entropy", "least-confident"):
        with pytest.raises(AcquisitionError, match="class probabilities"):
            get_acquisition(name).score(pred, AcquisitionContext())


def _posterior(d: int, K: int, seed: int, scale: float = 1.0) -> GaussianLastLayer:
    g = torch.Generator().manual_seed(seed)
    A = torch.randn(K, d, d, generator=g, dtype=torch.float64)
    cov = scale * (A @ A.transpose(1, 2) / d + 0.1 * torch.eye(d, dtype=torch.float64))
    return GaussianLastLayer(cov_K_d_d=cov, noise_var_K=torch.full((K,), 0.5, dtype=torch.float64))


def test_member_bald_exact() -> None:
    same = torch.tensor([[[0.2, 0.8], [0.2, 0.8]]])
    assert float(member_bald_n(same)) == 0.0
    split = torch.tensor([[[1.0, 0.0], [0.0, 1.0]]])  # two members certain of different classes
    assert float(member_bald_n(split)) == pytest.approx(math.log(2))


def test_gaussian_bald_matches_monte_carlo_for_small_variance() -> None:
    """Closed form 1/2 sum_k log(1 + p_k(1-p_k) v_k) agrees with MC BALD of the Gaussian logits to
    second order: within 10 % where v is small, and ranks like it."""
    g = torch.Generator().manual_seed(0)
    m = 2.0 * torch.randn(300, 4, generator=g, dtype=torch.float64)
    v = 0.05 * torch.rand(300, 4, generator=g, dtype=torch.float64)
    p = torch.softmax(m, 1)
    closed = gaussian_bald_n(v, 1.0 / (p * (1 - p)).clamp_min(1e-6))
    mc = bald_mc_n(m, v, n_samples=20_000, seed=1)
    big = mc > 1e-3
    rel = ((closed - mc).abs() / mc)[big]
    assert float(rel.median()) < 0.10
    assert spearmanr(closed.numpy(), mc.numpy()).statistic > 0.95


def _joint_gaussian_information(phi_x: np.ndarray, phi_t: np.ndarray, S: np.ndarray, r_x: float,
                                r_t: float) -> float:
    """I(y; y*) of two jointly Gaussian outputs from their 2x2 covariance: 1/2 log(s11 s22 / det)."""
    s11 = phi_x @ S @ phi_x + r_x
    s22 = phi_t @ S @ phi_t + r_t
    s12 = phi_x @ S @ phi_t
    return 0.5 * math.log(s11 * s22 / (s11 * s22 - s12**2))


def test_gaussian_epig_closed_form_on_linear_model() -> None:
    """Regression EPIG against the information of each (y, y*) pair computed from its joint
    covariance; zero for targets orthogonal under S."""
    d, n, M = 4, 6, 5
    post = _posterior(d, 1, seed=3)
    g = torch.Generator().manual_seed(4)
    phi = torch.randn(n, d, generator=g, dtype=torch.float64)
    phi_t = torch.randn(M, d, generator=g, dtype=torch.float64)
    cov = OutputCovariance.of(post, 1)
    targets = EPIGTargets(cov, cov.cross_G_d_m(phi_t), cov.variance_n_K(phi_t), torch.full((M, 1), 0.5, dtype=torch.float64))
    got = gaussian_epig_n(phi, cov.variance_n_K(phi), torch.full((n, 1), 0.5, dtype=torch.float64), targets).numpy()
    S = post.cov_K_d_d[0].numpy()
    ref = [np.mean([_joint_gaussian_information(phi[i].numpy(), phi_t[j].numpy(), S, 0.5, 0.5) for j in range(M)])
           for i in range(n)]
    np.testing.assert_allclose(got, ref, rtol=1e-10)
    # a target with zero covariance to the item contributes nothing (diagonal S, orthogonal features)
    diag = GaussianLastLayer(cov_K_d_d=torch.diag(torch.tensor([1.0, 2.0, 3.0, 4.0], dtype=torch.float64))[None],
                             noise_var_K=torch.tensor([0.5], dtype=torch.float64))
    cov_d = OutputCovariance.of(diag, 1)
    e = torch.eye(4, dtype=torch.float64)
    t0 = EPIGTargets(cov_d, cov_d.cross_G_d_m(e[1:2]), cov_d.variance_n_K(e[1:2]), torch.full((1, 1), 0.5, dtype=torch.float64))
    zero = gaussian_epig_n(e[0:1], cov_d.variance_n_K(e[0:1]), torch.full((1, 1), 0.5, dtype=torch.float64), t0)
    assert float(zero) == 0.0


def test_member_epig_equals_brute_force() -> None:
    g = torch.Generator().manual_seed(5)
    P = torch.softmax(torch.randn(4, 6, 3, generator=g, dtype=torch.float64), -1)  # 4 items, 6 members, 3 classes
    T = torch.softmax(torch.randn(5, 6, 3, generator=g, dtype=torch.float64), -1)  # 5 targets
    got = member_epig_n(P, T).numpy()
    ref = []
    for i in range(4):
        infos = []
        for j in range(5):
            joint = np.zeros((3, 3))
            for s in range(6):
                joint += np.outer(P[i, s].numpy(), T[j, s].numpy()) / 6
            px, pt = joint.sum(1), joint.sum(0)
            infos.append(sum(joint[a, b] * math.log(joint[a, b] / (px[a] * pt[b]))
                             for a, b in itertools.product(range(3), range(3))))
        ref.append(np.mean(infos))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)


def test_member_decision_epig_is_the_information_about_each_members_top_two_decision() -> None:
    """epig-decision on ensemble members gave the class EPIG (a black-box check): now it is the
    information about which of each target's top-two classes (under the mean) a member favours,
    brute force over the joint of the item's class and the members' decisions."""
    from alkit.acquisition.epig import member_decisions_M_S_2

    g = torch.Generator().manual_seed(9)
    P = torch.softmax(torch.randn(4, 6, 4, generator=g, dtype=torch.float64), -1)  # 4 items, 6 members, 4 classes
    T = torch.softmax(2 * torch.randn(5, 6, 4, generator=g, dtype=torch.float64), -1)  # 5 targets
    D = member_decisions_M_S_2(T)
    got = member_epig_n(P, D).numpy()
    ref = []
    for i in range(4):
        infos = []
        for j in range(5):
            a, b = np.argsort(-T[j].mean(0).numpy())[:2]
            joint = np.zeros((4, 2))
            for s in range(6):
                joint[:, 0 if T[j, s, a] >= T[j, s, b] else 1] += P[i, s].numpy() / 6
            px, pt = joint.sum(1), joint.sum(0)
            infos.append(sum(joint[c, e] * math.log(joint[c, e] / (px[c] * pt[e]))
                             for c in range(4) for e in range(2) if joint[c, e] > 0))
        ref.append(np.mean(infos))
    np.testing.assert_allclose(got, ref, rtol=1e-10, atol=1e-14)
    assert not np.allclose(got, member_epig_n(P, T).numpy())


def test_classification_epig_closed_form_tracks_monte_carlo() -> None:
    """The linearised EPIG against the Monte-Carlo EPIG of the same Gaussian-logit posterior
    (correlated weight samples, categorical labels): rank agreement and the same scale."""
    d, C, n, M = 5, 3, 120, 40
    post = _posterior(d, C, seed=6, scale=0.05)
    g = torch.Generator().manual_seed(7)
    W = torch.randn(C, d, generator=g, dtype=torch.float64)
    emb, emb_t = torch.randn(n, d, generator=g, dtype=torch.float64), torch.randn(M, d, generator=g, dtype=torch.float64)
    logits, logits_t = emb @ W.T, emb_t @ W.T
    cov = OutputCovariance.of(post, C)
    p, p_t = torch.softmax(logits, 1), torch.softmax(logits_t, 1)
    r, r_t = 1 / (p * (1 - p)), 1 / (p_t * (1 - p_t))
    targets = EPIGTargets(cov, cov.cross_G_d_m(emb_t), cov.variance_n_K(emb_t), r_t)
    closed = gaussian_epig_n(emb, cov.variance_n_K(emb), r, targets)
    mc = epig_mc_n(logits, emb, logits_t, emb_t, post, n_samples=8000, seed=8)
    assert spearmanr(closed.numpy(), mc.numpy()).statistic > 0.9
    ratio = float(closed.sum() / mc.sum())
    assert 0.5 < ratio < 2.0, ratio


def test_bald_and_epig_need_a_posterior_or_members() -> None:
    pred = _pred([[0.5, 0.5]])
    for name in ("bald", "epig"):
        with pytest.raises(AcquisitionError, match="posterior"):
            ctx = AcquisitionContext(targets=EPIGTargets(var_M_K=torch.zeros(1, 2))) if name == "epig" else AcquisitionContext()
            get_acquisition(name).score(pred, ctx)
    with pytest.raises(ValueError, match="posterior"):
        check_acquisition("bald", "none", "classification")
    with pytest.raises(ValueError, match="class probabilities"):
        check_acquisition("margin", "vbll", "regression")
    check_acquisition("epig", "ensemble", "classification")  # members feed it
    check_acquisition("epig", "vbll", "regression")
    with pytest.raises(ValueError):
        check_acquisition("bald", "ensemble", "regression")
    # regression advice names only what works there (it named the ensembles for BALD, then refused them, and the
    # posterior for decision-flip, whose vbll was then refused for lacking class probabilities; black-box checks)
    with pytest.raises(ValueError, match=r"'bald' needs a Gaussian last-layer posterior \(scorers vbll, laplace\); "
                                         r"scorer 'csd' on a regression project has none of it$"):
        check_acquisition("bald", "csd", "regression")
    with pytest.raises(ValueError, match=r"'decision-flip' needs class probabilities \(a classification project\)"):
        check_acquisition("decision-flip", "csd", "regression")
    # no score: classification is pointed to the scoreless acquisitions, regression (which refuses them) is not
    with pytest.raises(ValueError, match="use another --scorer, or --acquisition margin, entropy or least-confident"):
        check_acquisition("epistemic", "none", "classification")
    with pytest.raises(ValueError, match=r"use another --scorer$"):
        check_acquisition("epistemic", "none", "regression")


def test_every_acquisition_is_listed_with_needs() -> None:
    assert set(ACQUISITIONS) >= {"epistemic", "bald", "epig", "margin", "entropy", "least-confident"}
    for cls in ACQUISITIONS.values():
        assert isinstance(cls.needs, tuple) and cls.__doc__


def _candidates(n: int, d: int, C: int, seed: int) -> tuple[Candidates, GaussianLastLayer, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(n, d, generator=g, dtype=torch.float64)
    probs = torch.softmax(torch.randn(n, C, generator=g, dtype=torch.float64), 1)
    noise = 1 / (probs * (1 - probs))
    post = _posterior(d, C, seed=seed + 1, scale=0.5)
    cands = Candidates(keys_n=np.arange(n), scores_n=np.zeros(n), embedding_n_d=emb.numpy(), probs_n_C=probs.numpy(),
                       extras={"noise_n_K": noise.numpy()})
    return cands, post, noise


def test_diverse_heteroscedastic_gains_sum_to_batch_information() -> None:
    """Batch BALD with per-item noise: the greedy gains add up to
    sum_k 1/2 logdet(I + R_k^{-1/2} Phi_B S_k Phi_B^T R_k^{-1/2}) of the chosen batch."""
    cands, post, noise = _candidates(40, 5, 3, seed=10)
    sel = get_selector("diverse").select(cands, 6, SelectionContext(seed=0, posterior=post))
    phi = torch.as_tensor(cands.embedding_n_d)[sel.keys]
    total = 0.0
    for k in range(3):
        R = torch.diag(noise[sel.keys, k] ** -0.5)
        M = torch.eye(6, dtype=torch.float64) + R @ phi @ post.cov_K_d_d[k] @ phi.T @ R
        total += 0.5 * float(torch.logdet(M))
    assert float(sel.utilities.sum()) == pytest.approx(total, rel=1e-9)
    assert np.all(np.diff(sel.utilities) <= 1e-12)  # submodular: gains never grow


def test_diverse_with_targets_is_greedy_epig_under_conditioning() -> None:
    """First pick = the EPIG argmax; the second pick's gain = EPIG under the posterior explicitly
    conditioned on the first pick (noise r_j)."""
    n, d, C, M = 30, 4, 3, 12
    cands, post, noise = _candidates(n, d, C, seed=20)
    g = torch.Generator().manual_seed(21)
    emb_t = torch.randn(M, d, generator=g, dtype=torch.float64)
    r_t = torch.full((M, C), 4.0, dtype=torch.float64)
    cov = OutputCovariance.of(post, C)
    cands.targets = EPIGTargets(cov, cov.cross_G_d_m(emb_t), cov.variance_n_K(emb_t), r_t)
    phi = torch.as_tensor(cands.embedding_n_d)
    first = gaussian_epig_n(phi, cov.variance_n_K(phi), noise, cands.targets)
    sel = get_selector("diverse").select(cands, 2, SelectionContext(seed=0, posterior=post))
    j = int(sel.keys[0])
    assert j == int(torch.argmax(first))
    assert sel.utilities[0] == pytest.approx(float(first[j]), rel=1e-10)
    cond = []
    for k in range(C):
        S = post.cov_K_d_d[k]
        u = S @ phi[j]
        cond.append(S - torch.outer(u, u) / (phi[j] @ u + noise[j, k]))
    post2 = GaussianLastLayer(cov_K_d_d=torch.stack(cond), noise_var_K=post.noise_var_K)
    cov2 = OutputCovariance.of(post2, C)
    t2 = EPIGTargets(cov2, cov2.cross_G_d_m(emb_t), cov2.variance_n_K(emb_t), r_t)
    second = gaussian_epig_n(phi, cov2.variance_n_K(phi), noise, t2)
    second[j] = -1
    assert int(sel.keys[1]) == int(torch.argmax(second))
    assert sel.utilities[1] == pytest.approx(float(second.max()), rel=1e-8)


def test_decision_epig_greedy_is_exact_in_the_joint_weight_space() -> None:
    """epig-decision: scores from the per-class factors equal the brute-force information of the
    stacked linear model f = (s (x) phi)^T w; the second greedy pick maximises it after
    conditioning the joint (K d) Gaussian on the first pick's decision (which correlates classes)."""
    from alkit.acquisition.epig import decision_epig_n, decision_parts

    n, d, C, M = 25, 4, 3, 9
    cands, post, _ = _candidates(n, d, C, seed=30)
    g = torch.Generator().manual_seed(31)
    emb_t = torch.randn(M, d, generator=g, dtype=torch.float64)
    p_t = torch.softmax(torch.randn(M, C, generator=g, dtype=torch.float64), 1)
    cov = OutputCovariance.of(post, C)
    s_t, r_t = decision_parts(p_t)
    targets = EPIGTargets(cov, cov.cross_G_d_m(emb_t), cov.variance_n_K(emb_t), 1 / (p_t * (1 - p_t)), None, s_t, r_t)
    phi = torch.as_tensor(cands.embedding_n_d)
    s, r = decision_parts(torch.as_tensor(cands.probs_n_C))
    scores = decision_epig_n(phi, cov.variance_n_K(phi), s, r, targets)

    Sigma = torch.block_diag(*post.cov_K_d_d).numpy()
    G = (s[:, :, None] * phi[:, None, :]).reshape(n, -1).numpy()
    Gt = (s_t[:, :, None] * emb_t[:, None, :]).reshape(M, -1).numpy()

    def info(Sig: np.ndarray) -> np.ndarray:
        vf = np.einsum("nd,de,ne->n", G, Sig, G) + r.numpy()
        vt = np.einsum("md,de,me->m", Gt, Sig, Gt) + r_t.numpy()
        c = G @ Sig @ Gt.T
        return (-0.5 * np.log1p(-(c**2) / (vf[:, None] * vt[None]))).mean(1)

    np.testing.assert_allclose(scores.numpy(), info(Sigma), rtol=1e-9)
    cands.extras.update({"decision_sign_n_K": s.numpy(), "decision_noise_n": r.numpy()})
    cands.targets = targets
    sel = get_selector("diverse").select(cands, 2, SelectionContext(seed=0, posterior=post))
    j = int(sel.keys[0])
    assert j == int(np.argmax(info(Sigma)))
    u = Sigma @ G[j]
    cond = Sigma - np.outer(u, u) / (G[j] @ u + float(r[j]))
    second = info(cond)
    second[j] = -np.inf
    assert int(sel.keys[1]) == int(np.argmax(second))
    assert sel.utilities[1] == pytest.approx(float(second.max()), rel=1e-8)


def test_decision_flip_matches_monte_carlo_over_the_posterior() -> None:
    """decision-flip is P(a posterior draw ranks the runner-up above the top class): sample the
    last-layer weights from the posterior, count flips, compare with the closed form."""
    d, K, n = 4, 3, 40
    post = _posterior(d, K, seed=3, scale=0.3)
    g = torch.Generator().manual_seed(4)
    phi = torch.randn(n, d, generator=g, dtype=torch.float64)
    mu_K_d = torch.randn(K, d, generator=g, dtype=torch.float64) * 0.7
    logits = phi @ mu_K_d.T
    pred = Prediction(torch.zeros(n), torch.zeros(n), phi.float(), probs_n_C=torch.softmax(logits, 1),
                      extras={"logits_n_C": logits})
    flip = get_acquisition("decision-flip").score(pred, AcquisitionContext(posterior=post)).scores_n
    S = 40_000
    L = torch.linalg.cholesky(post.cov_K_d_d)
    W_S_K_d = mu_K_d + torch.einsum("kde,ske->skd", L, torch.randn(S, K, d, generator=g, dtype=torch.float64))
    z_S_n_K = torch.einsum("nd,skd->snk", phi, W_S_K_d)
    top = logits.topk(2, dim=1).indices
    rows = torch.arange(n)
    mc = (z_S_n_K[:, rows, top[:, 1]] > z_S_n_K[:, rows, top[:, 0]]).double().mean(0)
    assert float((flip - mc).abs().max()) < 4 * math.sqrt(0.25 / S) + 1e-3
    assert float(flip.min()) >= 0.0 and float(flip.max()) <= 0.5
    with pytest.raises(AcquisitionError, match="posterior"):
        get_acquisition("decision-flip").score(pred, AcquisitionContext())


def _decision_problem(n: int = 12, M: int = 6, d: int = 3, K: int = 3, seed: int = 5):
    post = _posterior(d, K, seed=seed, scale=0.5)
    g = torch.Generator().manual_seed(seed + 1)
    mu_K_d = torch.randn(K, d, generator=g, dtype=torch.float64)
    phi = torch.randn(n, d, generator=g, dtype=torch.float64)
    phi_t = torch.randn(M, d, generator=g, dtype=torch.float64)
    logits, logits_t = phi @ mu_K_d.T, phi_t @ mu_K_d.T

    def pred(lg: torch.Tensor, ph: torch.Tensor) -> Prediction:
        k = lg.shape[0]
        return Prediction(torch.zeros(k), torch.zeros(k), ph.float(), probs_n_C=torch.softmax(lg, 1),
                          extras={"logits_n_C": lg})

    targets = EPIGTargets.from_prediction(pred(logits_t, phi_t), post, "risk")
    return post, pred(logits, phi), targets


def test_decision_risk_matches_monte_carlo_preposterior() -> None:
    """The expected risk after one label, by simulation: draw the label's decision observation from
    the model's prior predictive, condition the target decisions on it exactly, average the risk."""
    post, pred, targets = _decision_problem()
    score = get_acquisition("decision-risk").score(pred, AcquisitionContext(posterior=post, targets=targets))
    gain = score.scores_n
    sign, noise = score.arrays["decision_sign_n_K"], score.arrays["decision_noise_n"]
    cov = OutputCovariance.of(post, 3)
    phi = cov.features(pred.embedding_n_d)
    var_f = (sign.square() * cov.variance_n_K(phi)).sum(1)
    s_t, m_t = targets.decision_sign_M_K, targets.decision_margin_M
    var_t = (s_t.square() * targets.var_M_K).sum(1)
    c = torch.einsum("nk,nkm,mk->nm", sign, cov.covariance_n_K_m(phi, targets.cross_G_d_M), s_t)
    g = torch.Generator().manual_seed(9)
    S = 200_000
    for i in range(pred.embedding_n_d.shape[0]):
        total = var_f[i] + noise[i]
        y_S = torch.randn(S, generator=g, dtype=torch.float64) * total.sqrt()  # centred observation
        m_S_M = m_t[None] + y_S[:, None] * c[i][None] / total
        s_M = (var_t - c[i].square() / total).clamp_min(1e-300).sqrt()
        after = torch.special.ndtr(-m_S_M.abs() / s_M[None]).mean(0)
        ref = (torch.special.ndtr(-m_t / var_t.sqrt()) - after).mean()
        assert abs(float(gain[i]) - float(ref)) < 2e-3 + 0.02 * abs(float(ref)), (i, float(gain[i]), float(ref))
    assert float(gain.min()) >= -1e-12


def test_decision_risk_greedy_batch_equals_explicit_conditioning() -> None:
    """diverse under decision-risk: the second pick's gain is the risk reduction after the first
    pick is conditioned on, computed here by re-scoring with an explicitly conditioned posterior."""
    post, pred, targets = _decision_problem(n=10, M=5)
    acq = get_acquisition("decision-risk")
    sc = acq.score(pred, AcquisitionContext(posterior=post, targets=targets))
    n = pred.embedding_n_d.shape[0]
    cands = Candidates(keys_n=np.arange(n), scores_n=sc.scores_n.numpy(),
                       embedding_n_d=pred.embedding_n_d.numpy(), probs_n_C=pred.probs_n_C.numpy(),
                       extras={k: v.numpy() for k, v in sc.arrays.items()})
    cands.targets = targets
    sel = get_selector("diverse").select(cands, 2, SelectionContext(seed=0, posterior=post))
    first, second = int(sel.keys[0]), int(sel.keys[1])
    assert first == int(np.argmax(sc.scores_n.numpy()))
    np.testing.assert_allclose(sel.utilities[0], float(sc.scores_n[first]), rtol=1e-10)
    # the risk after {first, second} minus the risk after {first}, by brute force over both outcomes
    cov = OutputCovariance.of(post, 3)
    phi = cov.features(pred.embedding_n_d)
    sign, noise = sc.arrays["decision_sign_n_K"], sc.arrays["decision_noise_n"]
    S_big = torch.block_diag(*[cov.cov_G_d_d[cov.group_K[k]] * cov.scale_K[k] for k in range(3)])
    d = phi.shape[1]
    g_n = (sign[:, :, None] * phi[:, None, :]).reshape(n, 3 * d)
    s_t = targets.decision_sign_M_K
    # target decision vectors in the joint space, from the prepared cross factors: S g*_j
    U_M = (s_t.T[:, None, :] * targets.cross_G_d_M[cov.group_K] * cov.scale_K[:, None, None]).permute(2, 0, 1).reshape(-1, 3 * d)
    from alkit.posterior import expected_risk

    def risk_after(rows: list[int]) -> float:
        A = g_n[rows]  # (r, Kd)
        Sy = A @ S_big @ A.T + torch.diag(noise[rows])
        C_M_r = U_M @ A.T  # Cov(f*_j, f_rows)
        reduction = (C_M_r @ torch.linalg.solve(Sy, C_M_r.T)).diagonal()
        var_t0 = (s_t.square() * targets.var_M_K).sum(1)
        return float(expected_risk(targets.decision_margin_M, var_t0, (var_t0 - reduction)[None])[0].mean())

    np.testing.assert_allclose(sel.utilities[1], risk_after([first]) - risk_after([first, second]), rtol=1e-6, atol=1e-9)


def test_expected_decision_risk_closed_form_against_quadrature() -> None:
    """R(m, s^2, s'^2) = E Phi(-|m'|/s') over m' ~ N(m, s^2 - s'^2), against adaptive quadrature
    split at the kink m' = 0; the limits: no information leaves Phi(-m/s), a tie with rho gives
    1/2 - asin(rho)/pi."""
    from scipy.integrate import quad
    from scipy.stats import norm

    from alkit.posterior import expected_risk

    rng = np.random.default_rng(0)
    m = np.abs(rng.normal(size=60)) * 3
    s0 = rng.uniform(0.1, 4, size=60)
    s1 = s0 * np.r_[rng.uniform(0.001, 0.999, 40), rng.uniform(0.99, 0.99999, 20)]
    got = expected_risk(torch.as_tensor(m), torch.as_tensor(s0), torch.as_tensor(s1)[None])[0].numpy()
    for i in range(60):
        t = math.sqrt(s0[i] - s1[i])
        ref = quad(lambda e: norm.cdf(-abs(m[i] + t * e) / math.sqrt(s1[i])) * norm.pdf(e), -12, 12,
                   points=[-m[i] / t], limit=400, epsabs=1e-13)[0]
        assert abs(got[i] - ref) < 1e-9, (i, got[i], ref)
    one = torch.ones(1, dtype=torch.float64)
    assert float(expected_risk(one, one, one[None])) == pytest.approx(norm.cdf(-1.0), abs=1e-12)
    tie = float(expected_risk(0 * one, one, 0.5 * one[None]))
    assert tie == pytest.approx(0.5 - math.asin(math.sqrt(0.5)) / math.pi, abs=1e-12)


def test_decision_bald_greedy_is_exact_conditional_information() -> None:
    """decision-bald under diverse: each pick's gain is I(y_j; f_j | labels of the earlier picks),
    computed here from the stacked linear model f = (s (x) phi)^T w by explicit conditioning; the
    first equals the acquisition's score."""
    from alkit.acquisition.epig import decision_parts

    n, d, C = 20, 4, 3
    cands, post, _ = _candidates(n, d, C, seed=40)
    pred = Prediction(torch.zeros(n), torch.zeros(n), torch.as_tensor(cands.embedding_n_d),
                      probs_n_C=torch.as_tensor(cands.probs_n_C))
    sc = get_acquisition("decision-bald").score(pred, AcquisitionContext(posterior=post))
    cands.scores_n = sc.scores_n.numpy()
    cands.extras = {k: v.numpy() for k, v in sc.arrays.items()}
    sel = get_selector("diverse").select(cands, 3, SelectionContext(seed=0, posterior=post))
    phi = torch.as_tensor(cands.embedding_n_d, dtype=torch.float64)
    s, r = decision_parts(torch.as_tensor(cands.probs_n_C))
    Sigma = torch.block_diag(*post.cov_K_d_d)
    G = (s[:, :, None] * phi[:, None, :]).reshape(n, -1)
    picks = [int(np.flatnonzero(cands.keys_n == k)[0]) for k in sel.keys]
    assert picks[0] == int(np.argmax(cands.scores_n))
    S = Sigma.clone()
    for t, j in enumerate(picks):
        v = float(G[j] @ S @ G[j])
        np.testing.assert_allclose(sel.utilities[t], 0.5 * math.log1p(v / float(r[j])), rtol=1e-9)
        u = S @ G[j]
        S = S - torch.outer(u, u) / (v + float(r[j]))
    # the first gain is the top-k score
    np.testing.assert_allclose(sel.utilities[0], float(sc.scores_n[picks[0]]), rtol=1e-9)


def test_decision_flip_greedy_uses_the_flip_left_after_earlier_picks() -> None:
    """decision-flip under diverse: the first pick is the top flip probability; each later gain is
    E Phi(-|m'|/s') for that item after conditioning the stacked model on the earlier picks'
    decisions (explicitly here), which is below its flip probability before the batch."""
    from alkit.posterior import expected_risk
    from alkit.acquisition.epig import decision_parts

    n, d, C = 20, 4, 3
    cands, post, _ = _candidates(n, d, C, seed=50)
    logits = torch.as_tensor(cands.probs_n_C).log()
    pred = Prediction(torch.zeros(n), torch.zeros(n), torch.as_tensor(cands.embedding_n_d),
                      probs_n_C=torch.as_tensor(cands.probs_n_C), extras={"logits_n_C": logits})
    sc = get_acquisition("decision-flip").score(pred, AcquisitionContext(posterior=post))
    cands.scores_n = sc.scores_n.numpy()
    cands.extras = {k: v.numpy() for k, v in sc.arrays.items()}
    sel = get_selector("diverse").select(cands, 3, SelectionContext(seed=0, posterior=post))
    picks = [int(np.flatnonzero(cands.keys_n == k)[0]) for k in sel.keys]
    np.testing.assert_allclose(sel.utilities[0], cands.scores_n.max(), rtol=1e-9)
    phi = torch.as_tensor(cands.embedding_n_d, dtype=torch.float64)
    s, r = decision_parts(torch.as_tensor(cands.probs_n_C))
    G = (s[:, :, None] * phi[:, None, :]).reshape(n, -1)
    S = torch.block_diag(*post.cov_K_d_d)
    v0 = (G @ S * G).sum(1)
    margin = torch.as_tensor(cands.extras["decision_margin_n"])
    for t, j in enumerate(picks):
        v = float(G[j] @ S @ G[j])
        ref = float(expected_risk(margin[j:j + 1], v0[j:j + 1], torch.tensor([[v]], dtype=torch.float64))[0, 0])
        np.testing.assert_allclose(sel.utilities[t], ref, rtol=1e-9, atol=1e-12)
        assert ref <= float(sc.scores_n[j]) + 1e-12
        u = S @ G[j]
        S = S - torch.outer(u, u) / (v + float(r[j]))


@pytest.mark.parametrize("name", ["decision-flip", "bald", "epig"])
def test_reusing_the_learners_posterior_variance_keeps_the_scores_and_the_ranking(name: str) -> None:
    """VBLL's Prediction carries the output variance it computed (extras['posterior_var_n_K'],
    float32); the acquisitions take it instead of recomputing phi^T S_k phi in float64.  On a real
    fit the scores must agree to float32 rounding and the top 50 items must be the same ones."""
    from sklearn.datasets import load_digits

    from alkit.learners.vbll import VBLLLearner

    X, y = load_digits(return_X_y=True)
    learner = VBLLLearner("classification", 10)
    learner.fit(X[:120], y[:120], seed=0)
    pred = learner.predict(X[120:1120])
    assert "posterior_var_n_K" in pred.extras
    stripped = Prediction(pred.epistemic_n, pred.aleatoric_n, pred.embedding_n_d, probs_n_C=pred.probs_n_C,
                          extras={k: v for k, v in pred.extras.items() if k != "posterior_var_n_K"})
    acq = get_acquisition(name)
    post = learner.posterior()
    ctx = AcquisitionContext(posterior=post)
    if name == "epig":
        ctx.targets = EPIGTargets.from_prediction(learner.predict(X[1120:1320]), post)
    reused, computed = acq.score(pred, ctx).scores_n.numpy(), acq.score(stripped, ctx).scores_n.numpy()
    np.testing.assert_allclose(reused, computed, rtol=1e-4, atol=1e-9)
    top = lambda s: set(np.argsort(-s, kind="stable")[:50].tolist())  # noqa: E731
    assert top(reused) == top(computed)


@pytest.mark.parametrize("strategy", ["margin", "entropy", "least-confident", "decision-flip"])
def test_a_class_probability_strategy_is_refused_on_a_regression_project(strategy: str) -> None:
    """`alkit run --strategy margin` on a regression project ranked by the epistemic score and was
    named and plotted as margin."""
    from alkit.runs import LoopError, resolve_acquisition

    with pytest.raises(LoopError, match=f"strategy '{strategy}' ranks by {strategy}, which needs class probabilities"):
        resolve_acquisition(strategy, None, "vbll", "regression", "topk")
    assert resolve_acquisition("epistemic", None, "vbll", "regression", "power-sqrt")[0] == "epistemic"


@pytest.mark.parametrize("head", ["gaussian", "hetero"])
def test_regression_bald_reads_the_noise_the_learner_predicts_with(head: str) -> None:
    """BALD on a regression head is 1/2 log(1 + v / s2) with v the epistemic variance and s2 the noise
    of the learner's own predictive (dist.var_n = v + s2): a posterior whose noise differed from the
    predictive's (x10) passed every test before (a test audit)."""
    from sklearn.datasets import load_diabetes

    from alkit.engines.common import acquisition_context
    from alkit.models.train import TrainConfig
    from alkit.registry import make_learner

    X, y = load_diabetes(return_X_y=True)
    X = X.astype(np.float32)
    learner = make_learner("vbll", "regression", None, train=TrainConfig(steps=60), head=head)
    learner.fit(X[:120], y[:120], seed=0)
    pred = learner.predict(X[300:340])
    acq = get_acquisition("bald")
    ctx = acquisition_context(acq, learner, np.arange(300, 340), X.__getitem__, [0, 4], 0)
    v = pred.epistemic_n.double()
    s2 = pred.dist.var_n.double() - v
    assert (s2 > 0).all() and (v > 0).all()
    if head == "hetero":
        assert s2.std() > 1e-3 * s2.mean()  # per item
    torch.testing.assert_close(acq.score(pred, ctx).scores_n.double(), 0.5 * torch.log1p(v / s2), rtol=1e-3, atol=1e-6)
