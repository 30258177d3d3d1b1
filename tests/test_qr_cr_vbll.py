"""QR-VBLL and CR-VBLL: closed forms against Monte Carlo / brute force, reconstructions exact."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from alkit import metrics
from alkit.learners.cr_vbll import bucket_of, make_edges, restore
from alkit.learners.piecewise import PiecewiseLinearMixture
from alkit.learners.qr_vbll import QuantileHead, expected_pinball, pinball
from alkit.learners.vbll import VBLLLearner
from alkit.models.train import TrainConfig

torch.set_num_threads(1)
FAST = TrainConfig(max_epochs=40, min_steps=150, patience=10)


@pytest.mark.parametrize("m,v,tau", [(0.3, 0.5, 0.1), (-1.2, 2.0, 0.5), (0.0, 0.05, 0.9), (2.0, 0.01, 0.75)])
def test_expected_pinball_matches_monte_carlo(m: float, v: float, tau: float) -> None:
    g = torch.Generator().manual_seed(0)
    r = m + math.sqrt(v) * torch.randn(400_000, generator=g, dtype=torch.float64)
    mc = pinball(r, torch.tensor(tau, dtype=torch.float64))
    closed = expected_pinball(torch.tensor(m, dtype=torch.float64), torch.tensor(v, dtype=torch.float64),
                              torch.tensor(tau, dtype=torch.float64))
    assert abs(float(closed) - float(mc.mean())) < 4 * float(mc.std()) / math.sqrt(len(r)) + 1e-6


def test_expected_pinball_reduces_to_pinball_without_variance() -> None:
    m = torch.linspace(-2, 2, 9, dtype=torch.float64)
    tau = torch.tensor(0.3, dtype=torch.float64)
    torch.testing.assert_close(expected_pinball(m, torch.zeros_like(m), tau), pinball(m, tau), atol=1e-6, rtol=0)


@pytest.mark.parametrize("cov", ["dense", "diagonal"])
def test_quantile_refit_is_elbo_stationary(cov: str) -> None:
    g = torch.Generator().manual_seed(1)
    N, d = 200, 4
    phi = torch.randn(N, d, generator=g, dtype=torch.float64)
    y = phi[:, 0] + 0.5 * torch.randn(N, generator=g, dtype=torch.float64)
    head = QuantileHead(d, 5, cov=cov, prior_var=1.0, reg_weight=1.0 / N, y_N=y.float()).double()
    with torch.no_grad():
        head.layer.W_mean[:, 0] = 1.0
    head.refit(phi, y, n_iter=400, tol=1e-10)
    head.zero_grad()
    head.loss(phi, y).backward()
    assert float(head.layer.W_logdiag.grad.abs().max()) < 1e-6
    if cov == "dense":
        assert float(head.layer.W_offdiag.grad.abs().max()) < 1e-6


def _item_cdf(knots_J_P: torch.Tensor, levels: torch.Tensor, t_G: torch.Tensor) -> torch.Tensor:
    """CDF of one item's mixture at many points (the item replicated G times)."""
    return PiecewiseLinearMixture(knots_J_P[None].expand(len(t_G), -1, -1), levels).cdf(t_G)


def test_piecewise_mixture_cdf_crps_mean_density_exact() -> None:
    """Brute force on a grid that contains every knot and y: F is linear on each cell, so
    Simpson's rule on (F - H)^2 and the trapezoid on 1 - F are exact (left limits at cell ends)."""
    g = torch.Generator().manual_seed(2)
    knots = torch.randn(3, 4, 6, generator=g, dtype=torch.float64).sort(-1).values
    knots[0, 1, 2] = knots[0, 1, 1]  # a jump (point mass)
    levels = torch.tensor([0.0, 0.1, 0.3, 0.55, 0.9, 1.0], dtype=torch.float64)
    dist = PiecewiseLinearMixture(knots, levels)
    y = torch.tensor([-0.3, 0.4, 5.0], dtype=torch.float64)
    crps, mean = dist.crps(y), dist.mean()
    for i in range(3):
        lo, hi = float(knots[i].min()) - 1, 6.0
        grid = torch.cat([knots[i].reshape(-1), y[i : i + 1], torch.linspace(lo, hi, 50, dtype=torch.float64)])
        a, b = grid.unique()[:-1], grid.unique()[1:]
        Fa, Fb = _item_cdf(knots[i], levels, a), _item_cdf(knots[i], levels, b - 1e-13 * (1 + b.abs()))
        Fm = _item_cdf(knots[i], levels, 0.5 * (a + b))
        assert torch.all(Fb >= Fa - 1e-12) and torch.all(Fa[1:] >= Fb[:-1] - 1e-12)  # monotone
        H = lambda t: (t >= y[i]).double()  # noqa: E731
        h = b - a
        brute = (h / 6 * ((Fa - H(a)) ** 2 + 4 * (Fm - H(0.5 * (a + b))) ** 2 + (Fb - H(a)) ** 2)).sum()
        assert abs(float(crps[i]) - float(brute)) < 1e-9
        assert abs(float(mean[i]) - float(lo + (h * (2 - Fa - Fb) / 2).sum())) < 1e-9
        dens = PiecewiseLinearMixture(knots[i][None].expand(len(a), -1, -1), levels).density(0.5 * (a + b))
        torch.testing.assert_close(dens, (Fb - Fa) / h, atol=1e-6, rtol=1e-6)
    # a point mass at the jump: the continuous density integrates to less than one there
    cells = torch.linspace(-6, 6, 100001, dtype=torch.float64)
    cont = PiecewiseLinearMixture(knots[0][None].expand(len(cells), -1, -1), levels).density(cells).sum() * 12e-5
    assert float(cont) == pytest.approx(1 - 0.2 / 4, abs=2e-3)


def test_the_density_at_the_supports_ends_does_not_hang_on_round_off() -> None:
    """A bucket head's edges come back from standardised units with ~1e-9 of round-off: the lowest labelled
    target (a zero-inflated target's 0) fell outside the support on some fits and was charged the floor, 27.5
    nats, against -2.8 on the next (a black-box check); the top knot had no density at all.  Now the support
    is closed and a y within SNAP of its span of an end is read at that end; one further out keeps the floor."""
    from alkit.learners.piecewise import SNAP

    edges = torch.tensor([0.0, 0.5, 1.0, 2.0], dtype=torch.float64)
    probs = torch.tensor([[0.7, 0.2, 0.1]], dtype=torch.float64).expand(4, 3)
    for shift in (0.0, 1.4e-9, -5.7e-10):  # the lowest edge a little above or below the target 0
        dist = restore(probs, edges + torch.tensor([shift, 0, 0, 0], dtype=torch.float64))["dist"]
        at = dist.nll(torch.tensor([0.0, 2.0, 1e-4, 1.99], dtype=torch.float64))
        assert float(at[0]) == pytest.approx(float(at[2]), abs=1e-6) == pytest.approx(-math.log(1.4), abs=1e-6)
        assert float(at[1]) == pytest.approx(float(at[3])) == pytest.approx(-math.log(0.1), abs=1e-9)
    far = restore(probs[:2], edges)["dist"].nll(torch.tensor([-4 * SNAP * 2.0, 2.0 + 4 * SNAP * 2.0],
                                                               dtype=torch.float64))
    assert torch.allclose(far, torch.full((2,), -math.log(1e-12 / 2.0), dtype=torch.float64))


def test_qr_learner_cdf_monotone_masses_sum_to_one_and_epistemic_far() -> None:
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, (300, 1))
    y = np.where(rng.random(300) < 0.5, 2.0, -2.0) + X[:, 0] + 0.3 * rng.normal(size=300)
    learner = VBLLLearner("regression", head="quantile", n_quantiles=9, train=FAST)
    learner.fit(X, y, seed=0)
    pred = learner.predict(np.array([[0.0], [1.0], [9.0]]))
    grid = np.linspace(y.min() - 1, y.max() + 1, 400)
    F = np.stack([pred.dist.cdf(torch.full((3,), g, dtype=torch.float64)).numpy() for g in grid], 1)
    assert np.all(np.diff(F, axis=1) >= -1e-12) and F[:, 0].max() == 0 and F[:, -1].min() == 1
    masses = metrics.bucket_probs(pred.dist, metrics.bucket_edges(y, 10))
    np.testing.assert_allclose(masses.sum(1), 1.0, atol=1e-9)
    q = pred.extras["quantiles_n_K"]
    assert bool((q.diff(dim=1) >= 0).all())  # quantiles never cross (the head's raw outputs may)
    torch.testing.assert_close(pred.extras["median_n"].double(), _at_level(q.double(), learner.head.tau_K, 0.5))
    assert pred.epistemic_n[2] > 3 * pred.epistemic_n[:2].max()
    assert torch.isfinite(pred.dist.crps(torch.zeros(3, dtype=torch.float64))).all()
    assert q.shape == (3, 9)
    post = learner.posterior()
    phi = post.features(pred.embedding_n_d).double()
    v_K = torch.einsum("nd,kde,ne->nk", phi, post.cov_K_d_d, phi)
    torch.testing.assert_close(v_K.mean(1), pred.epistemic_n.double(), rtol=1e-3, atol=1e-8)


def test_cr_restoration_exact_for_one_hot() -> None:
    edges = torch.tensor([0.0, 1.0, 3.0, 4.0, 10.0], dtype=torch.float64)
    probs = torch.eye(4, dtype=torch.float64)
    r = restore(probs, edges)
    centres = torch.tensor([0.5, 2.0, 3.5, 7.0], dtype=torch.float64)
    torch.testing.assert_close(r["mean_n"], centres)
    torch.testing.assert_close(r["median_n"], centres)
    torch.testing.assert_close(r["mode_n"], centres)
    torch.testing.assert_close(r["dist"].mean(), centres)
    torch.testing.assert_close(r["dist"].density(centres), 1.0 / torch.diff(edges))
    torch.testing.assert_close(r["dist"].cdf(edges[1:]), torch.ones(4, dtype=torch.float64))
    # the bucket of each centre is the hot one
    assert torch.equal(bucket_of(centres, edges), torch.arange(4))
    # mixed masses: the median is where the piecewise-uniform CDF reaches 1/2, by hand: [0.2, 0.5, 0.3, 0] on
    # [0, 1, 3, 4]: 0.2 below 1, then 0.25 per unit up to 3, so F(x) = 0.2 + 0.25 (x - 1) = 0.5 at x = 2.2;
    # [0.1, 0.1, 0.1, 0.7] reaches 0.3 at 4 and 1/2 at 4 + 0.2 / 0.7 * 6
    mixed = restore(torch.tensor([[0.2, 0.5, 0.3, 0.0], [0.1, 0.1, 0.1, 0.7]], dtype=torch.float64), edges)
    torch.testing.assert_close(mixed["median_n"], torch.tensor([2.2, 4 + 0.2 / 0.7 * 6], dtype=torch.float64))
    torch.testing.assert_close(mixed["dist"].cdf(mixed["median_n"]), torch.full((2,), 0.5, dtype=torch.float64))
    torch.testing.assert_close(mixed["mean_n"], torch.tensor([0.2 * 0.5 + 0.5 * 2 + 0.3 * 3.5,
                                                              0.1 * 0.5 + 0.1 * 2 + 0.1 * 3.5 + 0.7 * 7], dtype=torch.float64))


def test_cr_bucket_edges_and_delta_method_variance() -> None:
    y = torch.tensor([0.0] * 50 + list(np.linspace(0.1, 5, 50)), dtype=torch.float64)
    e_q = make_edges(y, 10, "quantile")
    assert e_q[0] == 0 and e_q[-1] == 5 and torch.all(torch.diff(e_q) > 0) and len(e_q) < 11
    # equal-frequency edges: the targets' quantiles at k / 10 (numpy's), the coinciding ones (the zeros) merged
    q_ref = np.unique(np.r_[0.0, 5.0, np.quantile(y.numpy(), np.arange(1, 10) / 10)])
    np.testing.assert_allclose(e_q.numpy(), q_ref, rtol=1e-12, atol=1e-12)
    e_u = make_edges(y, 10, "uniform")
    assert len(e_u) == 11
    np.testing.assert_allclose(e_u.numpy(), np.arange(11) * 0.5, rtol=1e-12, atol=1e-12)  # equal widths over [0, 5]
    # the library's delta method against Monte Carlo of Var[softmax(z) . c], z ~ N(m, diag v)
    from alkit.learners.cr_vbll import delta_method_var

    g = torch.Generator().manual_seed(3)
    m = 2 * torch.randn(3, 4, generator=g, dtype=torch.float64)
    c = torch.tensor([0.0, 1.0, 2.5, 4.0], dtype=torch.float64)
    for scale in (1e-4, 1e-3):
        v = scale * (0.5 + torch.rand(3, 4, generator=g, dtype=torch.float64))
        z = m[:, None] + v.sqrt()[:, None] * torch.randn(3, 200_000, 4, generator=g, dtype=torch.float64)
        mc = (torch.softmax(z, -1) @ c).var(1)
        torch.testing.assert_close(delta_method_var(m, v, c), mc, rtol=0.05, atol=0)


def test_cr_learner_predicts_a_distribution_and_flags_far_inputs() -> None:
    rng = np.random.default_rng(1)
    X = rng.uniform(-2, 2, (300, 1))
    y = np.where(rng.random(300) < 0.4, 0.0, np.exp(X[:, 0] + 0.3 * rng.normal(size=300)))
    for epi, cov in (("bald", None), ("delta", None), ("bald", "dense")):  # None: the default, shared
        learner = VBLLLearner("regression", head="buckets", n_buckets=10, cr_epistemic=epi, train=FAST, cov=cov,
                              feature_map="l2")  # far inputs are flagged with distance-aware features
        assert learner.cov == (cov or "shared")
        learner.fit(X, y, seed=0)
        pred = learner.predict(np.array([[0.0], [1.0], [9.0]]))
        masses = pred.extras["bucket_probs_n_K"]
        np.testing.assert_allclose(masses.sum(1).numpy(), 1.0, atol=1e-5)
        assert torch.isfinite(pred.dist.crps(torch.ones(3, dtype=torch.float64))).all()
        assert pred.epistemic_n[2] > pred.epistemic_n[:2].max()
        assert float(pred.mean_n[0]) == pytest.approx(float(pred.dist.mean()[0]), rel=1e-5)
        post = learner.posterior()
        K = masses.shape[1]
        assert post.cov_K_d_d.shape[0] == (1 if learner.cov == "shared" else K) and post.noise_var_K.shape == (K,)
        phi = post.features(pred.embedding_n_d).double()
        v_K = torch.einsum("nd,kde,ne->nk", phi, post.cov_K_d_d, phi).expand(-1, K)
        torch.testing.assert_close(v_K, pred.extras["logit_var_n_K"].double(), rtol=1e-3, atol=1e-8)


def _at_level(q_n_K: torch.Tensor, tau_K: torch.Tensor, level: float) -> torch.Tensor:
    """Linear interpolation of sorted quantiles at one level (numpy's, as an independent reference)."""
    taus = tau_K.double().numpy()
    return torch.as_tensor(np.array([np.interp(level, taus, row) for row in q_n_K.numpy()]))
