"""The VBLL regression head with input-dependent noise (HeteroGaussianHead, learner rule 11): its
refit is the exact Bayesian posterior under the per-item noise, its predictive noise follows the
inputs, and the default learner takes it only where cross-validation prefers it."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from alkit import metrics
from alkit.acquisition import get_acquisition
from alkit.learners.vbll import VBLLLearner
from alkit.learners.vbll_heads import GaussianHead, HeteroGaussianHead
from alkit.models.capacity import HEADS
from alkit.posterior import EPIGTargets
from alkit.types import AcquisitionContext


def _features(N: int = 60, d: int = 5, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    phi = torch.randn(N, d, generator=g, dtype=torch.float64)
    y = phi @ torch.randn(d, generator=g, dtype=torch.float64) + 0.3 * torch.randn(N, generator=g, dtype=torch.float64)
    return phi, y


def _grads(head: torch.nn.Module, loss: torch.Tensor) -> dict[str, float]:
    head.zero_grad()
    loss.backward()
    return {n: float(p.grad.abs().max()) for n, p in head.named_parameters() if p.grad is not None}


def test_refit_is_the_exact_posterior_under_the_per_item_noise() -> None:
    phi, y = _features()
    N, d = phi.shape
    s0, beta = 0.8, 0.05
    head = HeteroGaussianHead(d, cov="dense", prior_var=s0, reg_weight=1.0 / N).double()
    with torch.no_grad():
        head.noise_w.copy_(torch.tensor([0.4, -0.3, 0.0, 0.2, 0.1], dtype=torch.float64))
        head.noise_logvar.fill_(math.log(beta))
    head.refit(phi, y, refit_noise=False)
    s2 = (beta * torch.exp(phi @ head.noise_w.detach())).numpy()
    P = np.eye(d) / s0 + phi.numpy().T @ (phi.numpy() / s2[:, None])
    S_ref = np.linalg.inv(P)
    mean_ref = S_ref @ (phi.numpy().T @ (y.numpy() / s2))
    np.testing.assert_allclose(head.layer.W_mean.detach().numpy()[0], mean_ref, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(head.layer.cov_K_d_d().detach().numpy()[0], S_ref, rtol=1e-7, atol=1e-12)
    # a stationary point of the training loss for the fixed noise shape
    grads = _grads(head, head.loss(phi, y))
    for name in ("layer.W_mean", "layer.W_logdiag", "layer.W_offdiag"):
        assert grads[name] < 1e-7, (name, grads[name])
    # with the noise scale refitted too, its gradient vanishes as well
    head.refit(phi, y, refit_noise=True, n_iter=300)
    grads = _grads(head, head.loss(phi, y))
    for name in ("layer.W_mean", "layer.W_logdiag", "layer.W_offdiag", "noise_logvar"):
        assert grads[name] < 1e-7, (name, grads[name])


def test_with_zero_noise_weights_it_is_the_gaussian_head() -> None:
    phi, y = _features(N=80, d=4, seed=1)
    N, d = phi.shape
    plain = GaussianHead(d, 1, cov="dense", prior_var=1.0, reg_weight=1.0 / N).double()
    hetero = HeteroGaussianHead(d, cov="dense", prior_var=1.0, reg_weight=1.0 / N).double()
    plain.refit(phi, y, n_iter=50)
    hetero.refit(phi, y, n_iter=50)
    np.testing.assert_allclose(hetero.layer.W_mean.detach(), plain.layer.W_mean.detach(), rtol=1e-10)
    np.testing.assert_allclose(hetero.layer.cov_K_d_d().detach(), plain.layer.cov_K_d_d().detach(), rtol=1e-9)
    np.testing.assert_allclose(float(hetero.noise_var.detach()), float(plain.noise_var.detach()), rtol=1e-10)
    np.testing.assert_allclose(hetero.noise_var_n(phi).detach(), plain.noise_var.detach().expand(N), rtol=1e-10)
    np.testing.assert_allclose(float(hetero.loss(phi, y).detach()), float(plain.loss(phi, y).detach()), rtol=1e-12)


def _two_noise_levels(n: int, seed: int, noisy_sd: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """y = sin(3 x0) + x1 + noise, sd 0.05 where x2 < 0.6 and ``noisy_sd`` elsewhere."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, 4)).astype(np.float32)
    noisy = X[:, 2] >= 0.6
    y = np.sin(3 * X[:, 0]) + X[:, 1] + np.where(noisy, noisy_sd, 0.05) * rng.standard_normal(n)
    return X, y, noisy


def test_predictive_noise_follows_the_inputs_and_lowers_the_crps() -> None:
    X, y, _ = _two_noise_levels(300, 0)
    Xt, yt, noisy = _two_noise_levels(600, 1)
    crps = {}
    for head in ("gaussian", "hetero"):
        learner = VBLLLearner("regression", head=head, capacity="fixed")
        learner.fit(X, y, seed=0)
        pred = learner.predict(Xt)
        crps[head] = metrics.crps(pred.dist, yt)
        if head == "hetero":
            alea = pred.aleatoric_n.numpy()
            np.testing.assert_allclose(alea, pred.extras["noise_var_n"].numpy())
            # true ratio 400; the head is a linear model of the features in log s^2
            assert alea[noisy].mean() > 20 * alea[~noisy].mean(), (alea[noisy].mean(), alea[~noisy].mean())
    assert crps["hetero"] < 0.85 * crps["gaussian"], crps


def test_noise_choice_takes_the_hetero_head_only_where_cross_validation_prefers_it() -> None:
    X, y, _ = _two_noise_levels(200, 2)
    assert VBLLLearner("regression").noise_choice is False  # an option (learner rules 11-11c)
    learner = VBLLLearner("regression", noise_choice=True)
    report = learner.fit(X, y, seed=0)
    assert learner.head_kind == "hetero" and report["capacity_head"] == HEADS.index("hetero"), report
    assert report["cv_crps_hetero"] <= 0.9 * report["cv_crps_gaussian"], report
    rng = np.random.default_rng(3)
    y_flat = np.sin(3 * X[:, 0]) + X[:, 1] + 0.3 * rng.standard_normal(len(X))  # one noise level
    report = learner.fit(X, y_flat, seed=0)
    assert learner.head_kind == "gaussian" and report["capacity_head"] == HEADS.index("gaussian"), report
    for other in (VBLLLearner("regression"), VBLLLearner("regression", capacity="fixed", noise_choice=True)):
        assert "capacity_head" not in other.fit(X, y, seed=0) and other.head_kind == "gaussian"
    few = VBLLLearner("regression", noise_choice=True)  # below NOISE_MIN_N labels: no choice
    assert "capacity_head" not in few.fit(X[:30], y[:30], seed=0) and few.head_kind == "gaussian"


@pytest.mark.parametrize("name", ["bald", "epig"])
def test_posterior_acquisitions_read_the_per_item_noise(name: str) -> None:
    """Gaussian BALD is 1/2 log(1 + v / s^2(x)): scaling one item's noise down raises its score,
    the others' stay; EPIG moves with it the same way."""
    X, y, _ = _two_noise_levels(120, 4)
    learner = VBLLLearner("regression", head="hetero", capacity="fixed")
    learner.fit(X, y, seed=0)
    pool = _two_noise_levels(40, 5)[0]
    pred = learner.predict(pool)
    post = learner.posterior()
    targets = EPIGTargets.from_prediction(learner.predict(_two_noise_levels(30, 6)[0]), post) if name == "epig" else None
    ctx = AcquisitionContext(posterior=post, targets=targets)
    acq = get_acquisition(name)
    base = acq.score(pred, ctx).scores_n.double()
    if name == "bald":
        s2 = pred.extras["noise_var_n"].double()
        np.testing.assert_allclose(base, 0.5 * torch.log1p(pred.epistemic_n.double() / s2), rtol=1e-5)
    quieter = pred.extras["noise_var_n"].clone()
    quieter[0] = quieter[0] / 100
    pred.extras["noise_var_n"] = quieter
    moved = acq.score(pred, ctx).scores_n.double()
    assert moved[0] > base[0]
    if name == "bald":
        np.testing.assert_allclose(moved[1:], base[1:], rtol=1e-9)
