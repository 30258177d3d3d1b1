import math

import numpy as np
import pytest
import torch

from alkit import metrics as M
from alkit.distributions import GaussianPredictive

PROBS = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.3, 0.3, 0.4]])
Y = np.array([0, 2, 2])


# ----------------------------------------------------------------- classification


def test_accuracy_and_nll_hand_computed():
    assert M.accuracy(PROBS, Y) == pytest.approx(2 / 3)
    expected = -(math.log(0.7) + math.log(0.1) + math.log(0.4)) / 3
    assert M.nll(PROBS, Y) == pytest.approx(expected, rel=1e-12)


def test_torch_inputs_give_the_same_floats():
    p, y = torch.tensor(PROBS, dtype=torch.float32), torch.tensor(Y)
    assert isinstance(M.nll(p, y), float)
    assert M.nll(p, y) == pytest.approx(M.nll(PROBS, Y), rel=1e-6)
    assert M.accuracy(p, y) == M.accuracy(PROBS, Y)


def test_nll_clamps_zero_probability():
    probs = np.array([[1.0, 0.0], [0.5, 0.5]])
    assert M.nll(probs, [1, 0]) == pytest.approx((-math.log(1e-12) - math.log(0.5)) / 2)


def test_ece_hand_computed():
    probs = np.array([[0.9, 0.1], [0.9, 0.1], [0.4, 0.6], [0.4, 0.6]])
    # bin ~0.9: acc 1/2 vs conf 0.9; bin 0.6: acc 1 vs conf 0.6 -> 0.5*0.4 + 0.5*0.4
    assert M.ece(probs, [0, 1, 1, 1]) == pytest.approx(0.4)
    # single bin: |mean acc - mean conf| = |3/4 - 0.75| = 0
    assert M.ece(probs, [0, 1, 1, 1], n_bins=1) == pytest.approx(0.0, abs=1e-12)


def _dirichlet_probs(rng: np.random.Generator, n: int, C: int) -> np.ndarray:
    return rng.dirichlet(np.full(C, 0.7), size=n)


def test_ece_small_for_calibrated_large_for_overconfident():
    rng = np.random.default_rng(0)
    probs = _dirichlet_probs(rng, 40_000, 4)
    y = (rng.random((len(probs), 1)) > probs.cumsum(1)[:, :-1]).sum(1)  # y ~ Categorical(probs)
    assert M.ece(probs, y) < 0.015
    sharp = probs**4 / (probs**4).sum(1, keepdims=True)  # same argmax, over-confident
    assert M.ece(sharp, y) > 0.1
    assert M.accuracy(sharp, y) == M.accuracy(probs, y)
    assert M.nll(sharp, y) > M.nll(probs, y)


def test_balanced_accuracy_and_macro_f1_hand_computed():
    # predictions 0, 1, 2 against labels 0, 2, 2: class 0 recall 1, class 2 recall 1/2;
    # F1 class 0 = 1, class 2 = 2 * 1 * 0.5 / 1.5 = 2/3; class 1 is not a label, so not averaged
    assert M.balanced_accuracy(PROBS, Y) == pytest.approx(0.75)
    assert M.macro_f1(PROBS, Y) == pytest.approx((1 + 2 / 3) / 2)


def test_majority_predictor_on_an_imbalanced_split():
    # 94 negatives, 6 positives, everything predicted negative: accuracy 0.94, balanced 0.5,
    # macro F1 = (F1_neg + 0) / 2 with F1_neg = 2 * 0.94 / 1.94
    y = np.array([0] * 94 + [1] * 6)
    probs = np.tile([0.9, 0.1], (100, 1))
    assert M.accuracy(probs, y) == pytest.approx(0.94)
    assert M.balanced_accuracy(probs, y) == pytest.approx(0.5)
    assert M.macro_f1(probs, y) == pytest.approx(0.94 / 1.94)
    # finding the positives moves balanced accuracy, not (much) accuracy
    found = probs.copy()
    found[94:] = [0.2, 0.8]
    found[:3] = [0.2, 0.8]
    assert M.accuracy(found, y) == pytest.approx(0.97)
    assert M.balanced_accuracy(found, y) == pytest.approx((91 / 94 + 1) / 2)


def test_classification_metrics_dict():
    out = M.classification_metrics(PROBS, Y)
    assert out == {"accuracy": M.accuracy(PROBS, Y), "balanced_accuracy": M.balanced_accuracy(PROBS, Y),
                   "macro_f1": M.macro_f1(PROBS, Y), "nll": M.nll(PROBS, Y), "ece": M.ece(PROBS, Y)}


def test_bad_shapes_raise():
    with pytest.raises(ValueError):
        M.accuracy(PROBS, [0, 1])
    with pytest.raises(ValueError):
        M.nll(PROBS, [0, 1, 3])


# ----------------------------------------------------------------- regression


def test_mae_rmse_hand_computed():
    assert M.mae([1.0, 2.0, 4.0], [1.0, 0.0, 1.0]) == pytest.approx(5 / 3)
    assert M.rmse([1.0, 2.0, 4.0], [1.0, 0.0, 1.0]) == pytest.approx(math.sqrt(13 / 3))


def test_gaussian_nll_matches_torch_normal():
    m, v, y = torch.tensor([0.0, 1.0, -2.0]), torch.tensor([1.0, 0.25, 4.0]), torch.tensor([0.5, 1.0, 1.0])
    ref = -torch.distributions.Normal(m, v.sqrt()).log_prob(y).double().mean().item()
    assert M.gaussian_nll(m, v, y) == pytest.approx(ref, rel=1e-6)
    assert M.gaussian_nll(m, v, y) == pytest.approx(M.predictive_nll(GaussianPredictive(m, v), y), rel=1e-6)


def test_gaussian_crps_closed_form_matches_monte_carlo():
    rng = np.random.default_rng(1)
    mean, std, y = np.array([0.0, 2.0, -1.0]), np.array([1.0, 0.5, 3.0]), np.array([0.3, 4.0, -1.0])
    dist = GaussianPredictive(torch.tensor(mean), torch.tensor(std**2))
    for i in range(3):
        x = rng.normal(mean[i], std[i], size=200_000)
        x2 = rng.normal(mean[i], std[i], size=200_000)
        mc = np.mean(np.abs(x - y[i])) - 0.5 * np.mean(np.abs(x - x2))
        assert M.crps(GaussianPredictive(dist.mean_n[i:i + 1], dist.var_n[i:i + 1]), y[i:i + 1]) \
            == pytest.approx(mc, rel=0.02)


def test_bucket_edges_uniform_and_quantile():
    y_train = np.linspace(0.0, 10.0, 101)
    e = M.bucket_edges(y_train)
    assert e.shape == (11,) and e[0] == -np.inf and e[-1] == np.inf
    np.testing.assert_allclose(e[1:-1], np.arange(1.0, 10.0))
    rng = np.random.default_rng(2)
    yq = rng.exponential(size=1000)
    eq = M.bucket_edges(yq, n_buckets=4, scheme="quantile")
    np.testing.assert_allclose(eq[1:-1], np.quantile(yq, [0.25, 0.5, 0.75]))
    # discrete targets: coinciding quantiles merge
    assert len(M.bucket_edges(np.r_[np.zeros(50), np.ones(50)], scheme="quantile")) < 11
    with pytest.raises(ValueError):
        M.bucket_edges(np.ones(5))


def test_bucket_index_convention_and_open_outer_buckets():
    e = M.bucket_edges(np.linspace(0.0, 10.0, 11))
    b = M.bucket_index([-50.0, 0.5, 1.0, 1.0001, 9.5, 50.0], e)
    np.testing.assert_array_equal(b, [0, 0, 0, 1, 9, 9])


def test_bucket_masses_sum_to_one_and_bucket_nll_is_direct():
    rng = np.random.default_rng(3)
    mean, var = rng.normal(size=50), rng.uniform(0.05, 3.0, size=50)
    y = mean + np.sqrt(var) * rng.normal(size=50) * 2  # some far outside the training range
    dist = GaussianPredictive(torch.tensor(mean), torch.tensor(var))
    edges = M.bucket_edges(rng.normal(size=200))
    mass = M.bucket_probs(dist, edges)
    assert mass.shape == (50, 10)
    np.testing.assert_allclose(mass.sum(1), 1.0, atol=1e-12)
    direct = []
    for i in range(50):
        t = edges[1:-1]
        b = int(np.sum(t < y[i]))
        lo = -np.inf if b == 0 else t[b - 1]
        hi = np.inf if b == len(t) else t[b]
        cdf = lambda x: 0.5 * (1 + math.erf((x - mean[i]) / math.sqrt(2 * var[i])))  # noqa: E731
        direct.append(-math.log(max(cdf(hi) - cdf(lo), 1e-12)))
    assert M.bucket_nll(dist, y, edges) == pytest.approx(np.mean(direct), rel=1e-9)


def test_bucket_ece_calibrated_vs_overconfident():
    rng = np.random.default_rng(4)
    mu = rng.uniform(-2, 2, size=20_000)
    y = mu + rng.normal(size=mu.size)
    edges = M.bucket_edges(rng.uniform(-3.5, 3.5, size=500))
    calibrated = GaussianPredictive(torch.tensor(mu), torch.ones(mu.size, dtype=torch.float64))
    overconf = GaussianPredictive(torch.tensor(mu), torch.full((mu.size,), 0.05**2, dtype=torch.float64))
    assert M.bucket_ece(calibrated, y, edges) < 0.02
    assert M.bucket_ece(overconf, y, edges) > 0.3
    # it is the top-label ECE of the bucket masses against the bucket of y
    assert M.bucket_ece(overconf, y, edges) == pytest.approx(
        M.ece(M.bucket_probs(overconf, edges), M.bucket_index(y, edges), n_bins=10))


def test_regression_metrics_dict():
    m, v, y = torch.tensor([0.0, 1.0]), torch.tensor([1.0, 2.0]), torch.tensor([0.5, -1.0])
    dist = GaussianPredictive(m, v)
    out = M.regression_metrics(dist, m, y)
    assert set(out) == {"mae", "rmse", "nll", "crps"}
    assert out["mae"] == pytest.approx(1.25) and out["nll"] == pytest.approx(M.gaussian_nll(m, v, y))
    assert out["rmse"] == pytest.approx(math.sqrt((0.5**2 + 2.0**2) / 2))
    # the Gaussian CRPS in closed form (Gneiting & Raftery 2007), by hand: s [z (2 Phi(z) - 1) + 2 phi(z) - 1/sqrt(pi)]
    from scipy.stats import norm

    s, z = np.sqrt(v.numpy().astype(np.float64)), (y.numpy() - m.numpy()) / np.sqrt(v.numpy())
    ref = np.mean(s * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / math.sqrt(math.pi)))
    assert out["crps"] == pytest.approx(ref, rel=1e-5)
    edges = M.bucket_edges(np.linspace(-2, 2, 9))
    out = M.regression_metrics(dist, m, y, edges=edges)
    assert set(out) == {"mae", "rmse", "nll", "crps", "nll10", "ece10"}
    assert all(isinstance(x, float) for x in out.values())
    # the bucket metrics are the seed protocol's, each under its own name
    assert out["nll10"] == pytest.approx(M.bucket_nll(dist, y, edges), rel=1e-12)
    assert out["ece10"] == pytest.approx(M.bucket_ece(dist, y, edges), rel=1e-12)
    assert out["nll10"] != pytest.approx(out["ece10"])


# ----------------------------------------------------------------- learning curves


def test_aulc_constant_linear_single_point():
    n = np.array([10, 20, 40, 80, 100])
    assert M.aulc(n, np.full(5, 0.7)) == pytest.approx(0.7)
    assert M.aulc(n, 0.1 + 0.002 * n) == pytest.approx(0.1 + 0.002 * 55)  # midpoint of [10, 100]
    assert M.aulc(n[::-1], (0.1 + 0.002 * n)[::-1]) == pytest.approx(0.21)  # order-free
    assert M.aulc([50], [0.3]) == 0.3
    assert M.aulc([0, 10], [0.0, 1.0]) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        M.aulc([10, 10], [0.1, 0.2])


def test_labels_to_target_and_value_at():
    n = [10, 20, 30, 40, 50]
    acc = [0.5, 0.7, 0.92, 0.88, 0.95]
    assert M.labels_to_target(n, acc, 0.9) == 30
    assert M.labels_to_target(n, acc, 0.93) == 50
    assert M.labels_to_target(n, acc, 0.99) is None
    loss = [2.0, 1.5, 1.1, 0.9, 1.0]
    assert M.labels_to_target(n, loss, 1.0, higher_is_better=False) == 40
    assert M.value_at(n, acc, 35) == 0.92
    assert M.value_at(n, acc, 30) == 0.92
    assert M.value_at(n, acc, 1000) == 0.95
    assert M.value_at(n, acc, 5) is None


def test_every_regression_predictive_answers_quantiles() -> None:
    """quantile(tau) inverts each distribution's own CDF (Gaussian: scipy's ppf), for the Gaussian,
    the ensemble's Gaussian mixture and the chunked union the loop evaluates with."""
    from scipy.stats import norm

    from alkit.distributions import GaussianPredictive
    from alkit.learners.bald import GaussianMixturePredictive
    from alkit.loop import ChunkedDistribution

    g = GaussianPredictive(torch.tensor([0.0, 3.0, -2.0], dtype=torch.float64), torch.tensor([1.0, 0.25, 9.0], dtype=torch.float64))
    for tau in (0.05, 0.5, 0.9):
        np.testing.assert_allclose(g.quantile(tau).numpy(), norm.ppf(tau, [0.0, 3.0, -2.0], [1.0, 0.5, 3.0]), rtol=1e-10)
    mix = GaussianMixturePredictive(torch.tensor([[0.0, 4.0], [1.0, 1.0]], dtype=torch.float64),
                                    torch.tensor([[1.0, 0.5], [2.0, 2.0]], dtype=torch.float64))
    for tau in (0.1, 0.5, 0.97):
        q = mix.quantile(tau)
        np.testing.assert_allclose(mix.cdf(q).numpy(), tau, atol=1e-9)
    np.testing.assert_allclose(mix.quantile(0.3)[1].item(), norm.ppf(0.3, 1.0, np.sqrt(2.0)), rtol=1e-9)
    both = ChunkedDistribution([g, mix], [3, 2])
    torch.testing.assert_close(both.quantile(0.8), torch.cat([g.quantile(0.8), mix.quantile(0.8)]))
    with pytest.raises(ValueError, match="strictly between 0 and 1"):
        g.quantile(1.0)
