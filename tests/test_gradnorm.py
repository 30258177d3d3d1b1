"""Gradient norms: closed form vs per-example autograd, torch.func vs a loop, OOD sanity."""

import numpy as np
import pytest
import torch
from torch import nn

from alkit.learners import gradnorm as G
from alkit.models.backbone import ResidualMLP

torch.set_num_threads(1)


def _loop_gradnorm_sq(model: nn.Module, params: list[torch.Tensor], X: torch.Tensor, regression: bool = False):
    out = []
    for i in range(X.shape[0]):
        o = model(X[i : i + 1])[0]
        target = o[0] if regression else o.softmax(-1).max()
        grads = torch.autograd.grad(target, params)
        out.append(sum((g**2).sum() for g in grads))
    return torch.stack(out)


def test_last_layer_closed_form_equals_autograd_float64():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 7), nn.ReLU(), nn.Linear(7, 4)).double()
    X = torch.randn(12, 5, dtype=torch.float64) * 2
    head = model[2]
    ref = _loop_gradnorm_sq(model, [head.weight, head.bias], X)
    gn = G.GradNormScorer.from_model(model)
    epi, alea = gn.score(X)
    torch.testing.assert_close(epi, ref.detach(), rtol=1e-12, atol=1e-15)
    with torch.no_grad():
        p = model(X).softmax(-1).max(1).values
    torch.testing.assert_close(alea, p * (1 - p))


def test_closed_form_for_a_given_class_and_without_bias():
    torch.manual_seed(1)
    h = torch.randn(6, 3, dtype=torch.float64)
    W = torch.randn(4, 3, dtype=torch.float64, requires_grad=True)
    cls = torch.tensor([0, 1, 2, 3, 0, 1])
    ref = []
    for i in range(6):
        (g,) = torch.autograd.grad((W @ h[i]).softmax(-1)[cls[i]], [W])
        ref.append((g**2).sum())
    got = G.last_layer_gradnorm_sq((h @ W.T).softmax(-1).detach(), h, cls, bias=False)
    torch.testing.assert_close(got, torch.stack(ref), rtol=1e-12, atol=1e-15)


def test_regression_gradient_of_the_mean():
    torch.manual_seed(2)
    model = nn.Sequential(nn.Linear(3, 5), nn.Tanh(), nn.Linear(5, 2)).double()
    X = torch.randn(8, 3, dtype=torch.float64)
    ref = _loop_gradnorm_sq(model, [model[2].weight, model[2].bias], X, regression=True)
    epi, _ = G.GradNormScorer.from_model(model, task="regression").score(X)
    torch.testing.assert_close(epi, ref.detach(), rtol=1e-12, atol=1e-15)
    full = G.per_example_gradnorm_sq(model, X, layers="all", task="regression")
    ref_full = _loop_gradnorm_sq(model, list(model.parameters()), X, regression=True)
    torch.testing.assert_close(full, ref_full.detach(), rtol=1e-10, atol=1e-14)


def test_torch_func_full_network_equals_per_example_loop():
    """On the project's spectral-normalised residual backbone (eval mode), in float64."""
    torch.manual_seed(3)
    backbone = ResidualMLP(6, 16, 2).double()
    backbone.set_input_stats(torch.randn(50, 6, dtype=torch.float64))
    model = nn.Sequential(backbone, nn.Linear(16, 3).double()).eval()
    with torch.no_grad():
        model(torch.randn(4, 6, dtype=torch.float64))
    X = torch.randn(10, 6, dtype=torch.float64)
    got = G.per_example_gradnorm_sq(model, X, layers="all", chunk=4)
    ref = _loop_gradnorm_sq(model, list(model.parameters()), X)
    torch.testing.assert_close(got, ref.detach(), rtol=1e-9, atol=1e-14)
    # restricting to the head reproduces the closed form
    head_only = G.per_example_gradnorm_sq(model, X, layers="1")
    epi, _ = G.GradNormScorer.from_model(model).score(X)
    torch.testing.assert_close(head_only, epi, rtol=1e-10, atol=1e-14)
    with pytest.raises(ValueError):
        G.per_example_gradnorm_sq(model, X, layers="nope")


def _auroc(neg: np.ndarray, pos: np.ndarray) -> float:
    s = np.r_[neg, pos]
    ranks = s.argsort().argsort() + 1.0
    return float((ranks[len(neg):].sum() - len(pos) * (len(pos) + 1) / 2) / (len(neg) * len(pos)))


def test_ood_digits_gradient_norm_alone():
    """Trained on digits 0-4; the last-layer gradient norm separates 5-9 (measured 0.843 at this
    budget and seed; 0.88-0.90 fully trained)."""
    from sklearn.datasets import load_digits

    from alkit.models.train import TrainConfig

    X, y = load_digits(return_X_y=True)
    idx = np.random.default_rng(0).permutation(len(X))
    X, y = X[idx], y[idx]
    ind = y < 5
    Xi, yi = X[ind], y[ind]
    n_tr = int(0.7 * len(Xi))
    learner = G.GradNormLearner("classification", 5, train=TrainConfig(max_epochs=60))
    learner.fit(Xi[:n_tr], yi[:n_tr], seed=0)
    p_in, p_out = learner.predict(Xi[n_tr:]), learner.predict(X[~ind])
    auc = _auroc(p_in.epistemic_n.numpy(), p_out.epistemic_n.numpy())
    print("gradnorm OOD AUROC", auc)
    assert auc > 0.78, auc
    assert learner.posterior() is None


def test_post_hoc_learners_on_regression():
    from alkit.learners.csd import CSDConfig, CSDLearner
    from alkit.models.train import TrainConfig

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (120, 2))
    y = X[:, 0] - X[:, 1] ** 2
    far = np.full((10, 2), 5.0)
    for learner in (G.GradNormLearner("regression", train=TrainConfig(max_epochs=10)),
                    CSDLearner("regression", csd=CSDConfig(steps=100, hidden=32), train=TrainConfig(max_epochs=10))):
        learner.fit(X, y, seed=0)
        p_in, p_far = learner.predict(X[:20]), learner.predict(far)
        assert p_in.mean_n.shape == (20,) and (p_in.aleatoric_n > 0).all()
        assert float(p_far.epistemic_n.mean()) > float(p_in.epistemic_n.mean())
