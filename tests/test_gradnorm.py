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
    """Trained on digits 0-4; the last-layer gradient norm separates 5-9: the default (the expected
    gradient in the blr covariance) measured 0.945 at this budget and seed, the gradient of p_argmax
    in it 0.929, the paper's isotropic form 0.843."""
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
    assert auc > 0.88, auc
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


def _sn_backbone(depth: int, spectral: bool, feature_map: str) -> nn.Module:
    backbone = ResidualMLP(6, 16, depth, spectral=spectral, feature_map=feature_map, rff_dim=12).double()
    backbone.set_input_stats(torch.randn(50, 6, dtype=torch.float64))
    for block in backbone.blocks:  # a weight far from its init, so the spectral term matters
        with torch.no_grad():
            block.linear.weight.mul_(3.0).add_(torch.randn_like(block.linear.weight))
            if spectral:
                block.power_iterate(3)  # u, v deliberately not converged: sigma = u^T W v as stored
    return backbone


@pytest.mark.parametrize("depth,spectral,feature_map", [(0, True, "none"), (1, True, "none"), (2, True, "l2"),
                                                        (2, False, "none"), (1, True, "rff")])
def test_one_pass_whole_network_norm_equals_per_example_loop(depth: int, spectral: bool, feature_map: str):
    """The batched forward + backward (ghost norms, the residual blocks' spectral term) against a
    per-item autograd loop over every parameter, classification and regression, float64."""
    torch.manual_seed(depth + 10 * spectral)
    for task, n_out in (("classification", 4), ("regression", 2)):
        model = nn.Sequential(_sn_backbone(depth, spectral, feature_map), nn.Linear(
            12 if feature_map == "rff" else 16, n_out).double()).eval()
        X = torch.randn(9, 6, dtype=torch.float64) * 1.5
        got = G.ghost_gradnorm_sq(model, X, task=task, chunk=4)
        ref = _loop_gradnorm_sq(model, list(model.parameters()), X, regression=task == "regression")
        torch.testing.assert_close(got, ref.detach(), rtol=1e-9, atol=1e-14)
        if task == "classification":  # the scorer's layers='all' takes this path and agrees with torch.func
            epi, _ = G.GradNormScorer.from_model(model, layers="all").score(X)
            torch.testing.assert_close(epi, G.per_example_gradnorm_sq(model, X, layers="all"), rtol=1e-9, atol=1e-14)


def test_one_pass_norm_on_the_image_backbone_and_its_fallbacks():
    """The convolution stem's filters are fixed buffers, so the image backbone is covered; a model
    with a trainable convolution, or a layer run twice, is refused (None) and the scorer falls back
    to torch.func with the same result."""
    from alkit.models.backbone import BackboneConfig, build_backbone, pool_input_spec

    rng = np.random.default_rng(0)
    X_pool = rng.uniform(0, 1, (80, 64))
    spec = pool_input_spec(X_pool, (1, 8, 8))
    torch.manual_seed(0)
    backbone = build_backbone(64, spec, torch.as_tensor(X_pool, dtype=torch.float32), BackboneConfig(depth=1)).double()
    model = nn.Sequential(backbone, nn.Linear(backbone.out_dim, 3).double()).eval()
    X = torch.as_tensor(X_pool[:7])
    ref = _loop_gradnorm_sq(model, list(model.parameters()), X.double())
    torch.testing.assert_close(G.ghost_gradnorm_sq(model, X), ref.detach(), rtol=1e-9, atol=1e-14)

    class Twice(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lin = nn.Linear(3, 3).double()

        def forward(self, x):
            return self.lin(torch.tanh(self.lin(x)))

    conv = nn.Sequential(nn.Unflatten(1, (1, 3)), nn.Conv1d(1, 2, 2).double(), nn.Flatten(), nn.Linear(4, 3).double())
    for odd in (Twice(), conv):
        Xo = torch.randn(5, 3, dtype=torch.float64)
        assert G.ghost_gradnorm_sq(odd, Xo) is None
        epi, _ = G.GradNormScorer.from_model(odd, layers="all").score(Xo)
        ref = _loop_gradnorm_sq(odd, list(odd.parameters()), Xo)
        torch.testing.assert_close(epi, ref.detach(), rtol=1e-9, atol=1e-14)


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_learner_whole_network_prediction_in_one_pass_equals_the_two_pass_one(task: str):
    """GradNormLearner(layers='all') predicts from one forward + backward; its Prediction equals the
    base network's prediction rescored with torch.func's per-example gradients."""
    from alkit.models.train import TrainConfig

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y = (X[:, 0] > 0).astype(int) + (X[:, 1] > 0) if task == "classification" else X[:, 0] - X[:, 1] ** 2
    learner = G.GradNormLearner(task, 3 if task == "classification" else None, layers="all",
                                train=TrainConfig(max_epochs=20))
    learner.fit(X, y, seed=0)
    Xq = rng.normal(size=(25, 5)) * 2
    got = learner.predict(Xq)
    base = learner.base.predict(Xq)
    ref = G.per_example_gradnorm_sq(learner.scorer.model, torch.as_tensor(Xq, dtype=torch.float32), layers="all",
                                    task=task)
    if task == "regression":
        ref = ref * learner.base.scaler.scale**2
        torch.testing.assert_close(got.mean_n, base.mean_n)
        torch.testing.assert_close(got.aleatoric_n, base.aleatoric_n)
    else:
        torch.testing.assert_close(got.probs_n_C, base.probs_n_C)
        p = base.probs_n_C.max(1).values
        torch.testing.assert_close(got.aleatoric_n, p * (1 - p))
    torch.testing.assert_close(got.embedding_n_d, base.embedding_n_d)
    torch.testing.assert_close(got.epistemic_n, ref, rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("regression,bias", [(False, True), (True, True), (False, False)])
def test_blr_weight_covariance_equals_the_delta_method_with_that_covariance(regression: bool, bias: bool):
    """weight_cov='blr': g^T Cov g per item with Cov = I_C (x) (A^T A + I)^-1 on the head's inputs
    A = [h, 1] (A = h without a bias) of the training items, against autograd gradients and an
    explicit matrix inverse."""
    torch.manual_seed(3)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3, bias=bias)).double()
    X_train, X = torch.randn(30, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64) * 3
    head = model[2]
    with torch.no_grad():
        a_train = model[:2](X_train)
    if bias:
        a_train = torch.cat([a_train, torch.ones(30, 1, dtype=torch.float64)], 1)
    cov = torch.linalg.inv(a_train.T @ a_train + torch.eye(a_train.shape[1], dtype=torch.float64))
    ref = []
    for i in range(X.shape[0]):
        o = model(X[i : i + 1])[0]
        target = o[0] if regression else o.softmax(-1).max()
        grads = torch.autograd.grad(target, [head.weight, head.bias] if bias else [head.weight])
        g_C_d = torch.cat([grads[0], grads[1][:, None]], 1) if bias else grads[0]  # a row per output
        ref.append(torch.einsum("cd,de,ce->", g_C_d, cov, g_C_d))
    gn = G.GradNormScorer.from_model(model, task="regression" if regression else "classification")
    gn.fit_weight_cov(X_train)
    epi, _ = gn.score(X)
    torch.testing.assert_close(epi, torch.stack(ref).detach(), rtol=1e-6, atol=1e-12)  # the metric is kept in float32


def test_blr_weight_covariance_through_the_learner_and_its_refusals():
    """The option is declared for `alkit run -o weight_cov=blr`; the prediction is the network's own;
    the score is below the isotropic one item by item (the posterior covariance (A^T A + I)^-1 lies
    below the prior's I); a whole-network request and an unknown covariance are refused."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    iso = G.GradNormLearner("classification", 10, weight_cov="isotropic", target="predicted")
    blr = G.GradNormLearner("classification", 10, target="predicted")  # OOD rule H's covariance
    default = G.GradNormLearner("classification", 10)
    assert (default.weight_cov, default.target, default.output_cov) == ("blr", "expected", "isotropic")  # rules H, H2, H3
    assert (G.GradNormLearner("regression").weight_cov, G.GradNormLearner("regression").target) == ("isotropic", "predicted")
    whole = G.GradNormLearner("classification", 10, layers="all")
    assert (whole.weight_cov, whole.target) == ("isotropic", "predicted")
    iso.fit(X[:200], y[:200], seed=0)
    blr.fit(X[:200], y[:200], seed=0)
    p_iso, p_blr = iso.predict(X[200:]), blr.predict(X[200:])
    torch.testing.assert_close(p_iso.probs_n_C, p_blr.probs_n_C)  # same network, same prediction
    moved = p_iso.epistemic_n > 0  # a float32 softmax of 1.0 has no gradient under either covariance
    assert moved.sum() > 1000 and torch.all(p_blr.epistemic_n[~moved] == 0)
    assert torch.all(p_blr.epistemic_n[moved] > 0) and torch.all(p_blr.epistemic_n[moved] < p_iso.epistemic_n[moved])
    with pytest.raises(ValueError, match="last layer only"):
        G.GradNormLearner("classification", 10, weight_cov="blr", layers="all")
    with pytest.raises(ValueError, match="weight_cov must be"):
        G.GradNormLearner("classification", 10, weight_cov="fisher")
    with pytest.raises(ValueError, match="target=expected is for classification"):
        G.GradNormLearner("regression", target="expected")
    with pytest.raises(ValueError, match="target must be"):
        G.GradNormLearner("classification", 10, target="loss")
    from alkit.scorer_options import declared

    assert declared(G.GradNormLearner)["weight_cov"].choices == ("auto", "isotropic", "blr")
    assert declared(G.GradNormLearner)["target"].choices == ("auto", "predicted", "expected")


def _small_classifier(seed: int):
    """A float64 3-class network, 30 training and 9 query inputs, and the training items' head inputs [h, 1]."""
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3)).double()
    X_train, X = torch.randn(30, 4, dtype=torch.float64), torch.randn(9, 4, dtype=torch.float64) * 2
    with torch.no_grad():
        a_train = torch.cat([model[:2](X_train), torch.ones(30, 1, dtype=torch.float64)], 1)
    return model, X_train, X, a_train


def _expected_reference(model: nn.Module, X: torch.Tensor, S_C_C: torch.Tensor, M_d_d: torch.Tensor) -> torch.Tensor:
    """sum_y p_y vec(g_y)^T (S (x) M) vec(g_y) per item, g_y the (C, d') autograd gradient of log p_y
    with respect to the head's weights and bias."""
    head, ref = model[2], []
    for i in range(X.shape[0]):
        logp = model(X[i : i + 1])[0].log_softmax(-1)
        total = torch.zeros((), dtype=torch.float64)
        for y in range(logp.shape[0]):
            gW, gb = torch.autograd.grad(logp[y], [head.weight, head.bias], retain_graph=True)
            g = torch.cat([gW, gb[:, None]], 1)
            total = total + logp[y].exp().detach() * torch.einsum("cd,ck,de,ke->", g, S_C_C, M_d_d, g)
        ref.append(total)
    return torch.stack(ref).detach()


@pytest.mark.parametrize("blr", [False, True])
def test_expected_gradient_equals_the_label_weighted_autograd_norms(blr: bool):
    """target='expected': sum_y p_y ||grad_{W,b} log p_y||^2_M per item, from autograd for every label
    y and weighted by the prediction, with M = I or the blr covariance."""
    model, X_train, X, a_train = _small_classifier(4)
    eye = torch.eye(7, dtype=torch.float64)
    cov = torch.linalg.inv(a_train.T @ a_train + eye) if blr else eye
    gn = G.GradNormScorer.from_model(model, target="expected")
    if blr:
        gn.fit_weight_cov(X_train)
    epi, _ = gn.score(X)
    torch.testing.assert_close(epi, _expected_reference(model, X, torch.eye(3, dtype=torch.float64), cov),
                               rtol=1e-6, atol=1e-12)


def test_blr_weight_covariance_streams_the_labelled_set(monkeypatch: pytest.MonkeyPatch):
    """The Gram matrix is summed chunk by chunk (bounded memory on a large labelled set): the metric
    with 7-row chunks equals the one from a single chunk; an empty labelled set is refused."""
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 3))
    X_train = torch.randn(40, 4)
    whole = G.GradNormScorer.from_model(model)
    whole.fit_weight_cov(X_train)
    monkeypatch.setattr(G, "_CHUNK", 7)
    chunked = G.GradNormScorer.from_model(model)
    chunked.fit_weight_cov(X_train)
    torch.testing.assert_close(chunked.metric.hh_d_d, whole.metric.hh_d_d, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(chunked.metric.b2_d, whole.metric.b2_d, rtol=1e-6, atol=1e-9)
    with pytest.raises(ValueError, match="at least one labelled item"):
        chunked.fit_weight_cov(X_train[:0])


def test_output_fisher_covariance_equals_the_label_weighted_autograd_norms():
    """output_cov='fisher': sum_y p_y g_y^T (S (x) M) g_y with g_y the (C, d') gradient of log p_y,
    S = (G + 0.01 I)^-1 for the labelled items' mean output Fisher G and M the blr covariance, against
    autograd and explicit inverses; the learner refuses the option where it has no meaning."""
    model, X_train, X, a_train = _small_classifier(6)
    with torch.no_grad():
        p_train = model(X_train).softmax(-1)
    M = torch.linalg.inv(a_train.T @ a_train + torch.eye(7, dtype=torch.float64))
    fisher = torch.stack([torch.diag(q) - torch.outer(q, q) for q in p_train]).mean(0)
    S = torch.linalg.inv(fisher + 0.01 * torch.eye(3, dtype=torch.float64))
    gn = G.GradNormScorer.from_model(model, target="expected")
    gn.fit_weight_cov(X_train, outputs=True)
    epi, _ = gn.score(X)
    torch.testing.assert_close(epi, _expected_reference(model, X, S, M), rtol=1e-5, atol=1e-12)  # S kept in float32
    for bad in ({"task": "regression"}, {"target": "predicted"}, {"layers": "all"}):
        task = bad.pop("task", "classification")
        with pytest.raises(ValueError, match="output_cov=fisher is for"):
            G.GradNormLearner(task, 3 if task == "classification" else None, output_cov="fisher", **bad)


def test_layers_prefixes_are_checked_before_a_run_and_each_must_name_parameters():
    """`-o layers=0.nothere` was refused only after the run's first batch was spent, naming neither the option
    nor what there is, and a list with one wrong prefix beside a right one dropped it (a black-box check); so were
    names deeper than an image or --backbone network's top part (`0.mlp.blocks.0` on 8x8 images, which have no
    blocks).  check_for_project, asked before a run, accepts exactly the names and dotted prefixes of the
    parameters the fitted network has (checked here against the networks themselves)."""
    from sklearn.datasets import load_digits

    from alkit.query import pool_learner

    check = G.GradNormLearner.check_for_project
    with pytest.raises(ValueError, match=r"layers: '0\.nothere' names no layer of this project's network: its layers are "
                                         r"0\.stem, 0\.blocks\.0\.linear, 1 \(0 is the backbone, 1 the head"):
        check({"layers": "0.nothere"}, image=False, user_module=False)
    with pytest.raises(ValueError, match=r"'1\.bias\.x' names no layer"):
        check({"layers": ["1", "1.bias.x"]}, image=False, user_module=False)
    with pytest.raises(ValueError, match=r"'0\.blocks' names no layer.*its layers are 0\.stem, 1 "):
        check({"layers": "0.blocks", "depth": 0}, image=False, user_module=False)
    with pytest.raises(ValueError, match=r"'0\.stem' names no layer.*its layers are 1 "):
        check({"layers": "0.stem", "depth": -1}, image=False, user_module=False)
    # a --backbone network: its own parameters' names, where runs.py built it; unchecked where not
    check({"layers": ["0.net.0", "0.net.2.weight"]}, image=False, user_module=True,
          module_names=["net.0.weight", "net.0.bias", "net.2.weight"])
    with pytest.raises(ValueError, match=r"'0\.net\.5' names no layer.*its layers are 0\.net\.0, 0\.net\.2, 1 "):
        check({"layers": "0.net.5"}, image=False, user_module=True, module_names=["net.0.weight", "net.2.weight"])
    check({"layers": "0.net.5"}, image=False, user_module=True)
    # -o capacity chooses the network per fit: a name must be in every one it may choose (a name only some had
    # failed at the fit that chose another, after batches were spent; a black-box check)
    for capacity, bad, good in (("cv", "0.blocks.0", "0.stem"), ("prior-linear", "0.stem", "1"),
                                ("prior", "0.nothere", "0.blocks.0")):
        with pytest.raises(ValueError, match=rf"'{bad}' names no layer of this project's network"):
            check({"layers": bad, "capacity": capacity}, image=False, user_module=False)
        check({"layers": good, "capacity": capacity}, image=False, user_module=False)
    with pytest.raises(ValueError, match=r"in every network -o capacity may choose\): its layers are 1 "):
        check({"layers": "0.stem", "capacity": "prior-linear"}, image=False, user_module=False)
    check({"layers": "0.blocks.0", "capacity": "cv", "depth": 1}, image=False, user_module=False)  # depth fixed
    check({"layers": "0.blocks.0", "capacity": "cv"}, image=False, user_module=False, prior_fixed=True)  # no choice
    X, y = load_digits(return_X_y=True)
    X28 = torch.nn.functional.interpolate(torch.as_tensor(X[:60], dtype=torch.float32).reshape(-1, 1, 8, 8),
                                          size=(16, 16)).reshape(60, -1).numpy()
    cases = [(X, None, {}, False), (X, None, {"depth": 2}, False), (X, None, {"depth": 0}, False),
             (X, (8, 8), {}, False), (X28, (16, 16), {}, False), (X, (8, 8), {"depth": 2}, False),
             (X, (8, 8), {"depth": -1}, False), (X, None, {"depth": -1}, False),
             (X, None, {}, True)]
    for data, shape, options, shallow in cases:
        learner = pool_learner(data, "regression" if shallow else "classification", n_classes=None if shallow else 10,
                               scorer="gradnorm", image_shape=shape, layers="all", **options)
        learner.fit(data[:40], (y[:40].astype(float) if shallow else y[:40]), seed=0)
        real = [n for n, _ in learner.scorer.model.named_parameters()]
        kw = dict(image=shape is not None, user_module=False, shallow=shallow,
                  image_side=min(shape) if shape else None)
        prefixes = {".".join(n.split(".")[:k]) for n in real for k in range(1, n.count(".") + 2)}
        for q in prefixes:  # every name and prefix of a parameter the network has is taken
            check({"layers": q, **options}, **kw)
        for q in [n + ".x" for n in real] + ["0.blocks.3", "0.mlp.blocks.0", "0.mlp.blocks.2", "0.stem.foo", "0.mlp.x"]:
            if q not in prefixes:  # and nothing else: these were refused only after a batch was spent
                with pytest.raises(ValueError, match="names no layer of this project's network"):
                    check({"layers": q, **options}, **kw)
        with pytest.raises(ValueError, match=r"layers: no parameters under '0\.blocks\.7' in this network; its layers: "):
            G._select(learner.scorer.model, ["1", "0.blocks.7"])
    # the library's fit refuses such a name (it was taken, and refused at the first query after it)
    learner = pool_learner(X, "classification", n_classes=10, scorer="gradnorm", layers="0.blocks.5")
    with pytest.raises(ValueError, match=r"layers: no parameters under '0\.blocks\.5' in this network"):
        learner.fit(X[:40], y[:40], seed=0)
