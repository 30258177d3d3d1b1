"""Last-layer Laplace: Kronecker algebra, GGN against autograd, KFAC vs exact, predictive vs MC."""

import math

import numpy as np
import pytest
import torch
from torch import nn

from alkit.distributions import entropy_n
from alkit.learners import laplace as L

torch.set_num_threads(1)


def _spd(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    M = torch.randn(n, n, generator=g, dtype=torch.float64)
    return M @ M.T + 0.1 * torch.eye(n, dtype=torch.float64)


def _net(d_in: int, d_h: int, C: int, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(d_in, d_h), nn.Tanh(), nn.Linear(d_h, C))


def test_kron_logdet_equals_dense():
    A, B = _spd(4, 0), _spd(3, 1)
    dense = torch.linalg.slogdet(torch.kron(A, B))[1]
    assert float(L.kron_logdet(A, B)) == pytest.approx(float(dense), rel=1e-10)
    # the damped (exact-prior) form from the factors' eigenvalues
    delta = 0.37
    eA, eB = torch.linalg.eigvalsh(A), torch.linalg.eigvalsh(B)
    dense_damped = torch.linalg.slogdet(torch.kron(B, A) + delta * torch.eye(12, dtype=torch.float64))[1]
    assert float(L.kron_damped_logdet(eB, eA, delta)) == pytest.approx(float(dense_damped), rel=1e-10)


def test_tuned_prior_precision_is_the_marginal_likelihood_optimum():
    eig = torch.rand(50, dtype=torch.float64, generator=torch.Generator().manual_seed(0)) * 100
    theta_sq = 7.3
    delta = L.tune_prior_precision(eig, theta_sq)
    # MacKay's stationarity: delta * ||theta||^2 = effective number of parameters
    gamma = float((eig / (eig + delta)).sum())
    assert delta * theta_sq == pytest.approx(gamma, rel=1e-5)
    f0 = L.log_marglik(eig, theta_sq, delta)
    assert f0 > L.log_marglik(eig, theta_sq, delta * 1.05)
    assert f0 > L.log_marglik(eig, theta_sq, delta / 1.05)


def test_full_ggn_matches_autograd_jacobians():
    torch.set_default_dtype(torch.float64)
    try:
        net = _net(3, 5, 4).double()
        X = torch.randn(7, 3)
        lap = L.LastLayerLaplace.from_model(net, X, likelihood="classification", hessian="full",
                                            prior_precision=1.0)
        head = net[2]
        h = net[1](net[0](X))
        W0 = torch.cat([head.weight, head.bias[:, None]], 1).detach()

        def logits(W_flat: torch.Tensor, h_d: torch.Tensor) -> torch.Tensor:
            W = W_flat.reshape(W0.shape)
            return W[:, :-1] @ h_d + W[:, -1]

        GGN = torch.zeros(W0.numel(), W0.numel())
        for i in range(X.shape[0]):
            J = torch.func.jacrev(logits)(W0.reshape(-1), h[i].detach())  # (C, P)
            p = logits(W0.reshape(-1), h[i].detach()).softmax(-1)
            GGN += J.T @ (torch.diag(p) - torch.outer(p, p)) @ J
        torch.testing.assert_close(lap.H_full, GGN, rtol=1e-10, atol=1e-12)
    finally:
        torch.set_default_dtype(torch.float32)


@pytest.mark.parametrize("C", [1, 3])
def test_kfac_equals_full_ggn_for_homoscedastic_regression(C: int):
    net = _net(4, 6, C, seed=1)
    X = torch.randn(40, 4)
    y = torch.randn(40, C)
    kw = dict(likelihood="regression", sigma_noise=0.7)
    kfac = L.LastLayerLaplace.from_model(net, X, y, hessian="kfac", **kw)
    full = L.LastLayerLaplace.from_model(net, X, y, hessian="full", **kw)
    assert kfac.prior_precision == pytest.approx(full.prior_precision, rel=1e-5)
    assert kfac.log_marglik_value == pytest.approx(full.log_marglik_value, rel=1e-8)
    Xq = torch.randn(9, 4) * 3
    ok, of = kfac.predict(Xq), full.predict(Xq)
    torch.testing.assert_close(ok.logit_var_n_C, of.logit_var_n_C, rtol=1e-4, atol=1e-8)
    h, _ = L.layer_io(net, net[2], Xq)
    torch.testing.assert_close(kfac.logit_cov(h)[0], full.logit_cov(h)[0], rtol=1e-6, atol=1e-10)


def test_kfac_equals_full_for_one_classification_item():
    net = _net(4, 6, 3, seed=2)
    X = torch.randn(1, 4)
    kfac = L.LastLayerLaplace.from_model(net, X, hessian="kfac", prior_precision=0.5)
    full = L.LastLayerLaplace.from_model(net, X, hessian="full", prior_precision=0.5)
    Xq = torch.randn(5, 4)
    h, _ = L.layer_io(net, net[2], Xq)
    torch.testing.assert_close(kfac.logit_cov(h)[0], full.logit_cov(h)[0], rtol=1e-6, atol=1e-10)


def _kfac_weight_samples(lap: L.LastLayerLaplace, S: int, seed: int) -> torch.Tensor:
    """W ~ N(W*, (G (x) A + delta I)^-1) sampled in the Kronecker eigenbasis, (S, C, p)."""
    g = torch.Generator().manual_seed(seed)
    eps = torch.randn(S, lap.eig_G.numel(), lap.eig_A.numel(), generator=g, dtype=torch.float64)
    scale = 1.0 / torch.sqrt(torch.outer(lap.eig_G, lap.eig_A) + lap.prior_precision)
    return lap.W_C_p + lap.Q_G @ (eps * scale) @ lap.Q_A.T


def test_logit_covariance_probit_and_mi_match_weight_space_monte_carlo():
    net = _net(3, 8, 4, seed=3)
    X = torch.randn(30, 3)
    lap = L.LastLayerLaplace.from_model(net, X, hessian="kfac", prior_precision=2.0, mi="mc")
    lap.mc_samples = 4000
    Xq = torch.randn(6, 3)
    h, z = L.layer_io(net, net[2], Xq)
    a = L.with_bias(h.double(), True)
    Ws = _kfac_weight_samples(lap, 40000, seed=1)  # (S, C, p)
    zs = torch.einsum("scp,np->snc", Ws, a)
    emp_cov = torch.einsum("snc,snd->ncd", zs - zs.mean(0), zs - zs.mean(0)) / zs.shape[0]
    cov, _ = lap.logit_cov(h)
    assert torch.allclose(zs.mean(0), z.double(), atol=0.05)
    assert torch.allclose(emp_cov, cov, rtol=0.05, atol=0.02 * float(cov.abs().max()))
    out = lap.predict(Xq)
    torch.testing.assert_close(out.trace_n.double(), cov.diagonal(dim1=1, dim2=2).sum(1), rtol=1e-5, atol=0)
    p_mc = zs.softmax(-1)
    mean_p = p_mc.mean(0)
    assert torch.allclose(out.probs_n_C.double(), mean_p, atol=0.04)  # probit is an approximation
    mi_mc = entropy_n(mean_p) - entropy_n(p_mc).mean(0)
    assert torch.allclose(out.mi_n.double(), mi_mc, atol=0.02, rtol=0.1)


def test_last_layer_discovery():
    net = _net(3, 4, 2)
    assert L.find_last_linear(net)[0] == "2"
    assert L.find_last_linear(net, "0")[1] is net[0]
    assert L.find_last_linear(net, net[2])[0] == "2"
    with pytest.raises(TypeError):
        L.find_last_linear(net, "1")
    with pytest.raises(ValueError):
        L.find_last_linear(net, "nope")


def test_posterior_gives_each_class_its_own_logit_variance():
    """Output c of the posterior is class c: its variance phi^T S_c phi is the diagonal of the exact
    KFAC logit covariance (it was the variance of the c-th eigen-output, which the acquisitions then
    paired with class c's probability: wrong flip probabilities and BALD)."""
    net = _net(3, 5, 3, seed=4)
    X = torch.randn(20, 3)
    lap = L.fit_last_layer_laplace(net, None, X, hessian="kfac")
    assert not torch.allclose(lap.Q_G.abs(), torch.eye(3, dtype=lap.Q_G.dtype), atol=0.05)  # a rotation that matters
    post = lap.posterior()
    Xq = torch.randn(4, 3)
    h, _ = L.layer_io(net, net[2], Xq)
    phi = post.features(h).double()
    v_K = torch.einsum("ni,kij,nj->nk", phi, post.cov_K_d_d.double(), phi)
    cov, _ = lap.logit_cov(h)
    torch.testing.assert_close(v_K, cov.diagonal(dim1=1, dim2=2), rtol=1e-5, atol=1e-9)
    assert post.bias_feature and post.cov_K_d_d.shape == (3, 6, 6)
    # the covariance between two items' logits of one class as well: Monte Carlo over the weights
    W = torch.distributions.MultivariateNormal(torch.zeros(18, dtype=torch.float64), lap_weight_cov(lap))
    w = W.sample((40_000,)).reshape(-1, 3, 6)  # rows per class, centred
    z = torch.einsum("scd,nd->snc", w, phi)
    mc = torch.einsum("snc,smc->cnm", z, z) / z.shape[0]
    exact = torch.einsum("nd,cde,me->cnm", phi, post.cov_K_d_d.double(), phi)
    torch.testing.assert_close(mc, exact, rtol=0.05, atol=0.05 * float(exact.abs().max()))


def lap_weight_cov(lap) -> torch.Tensor:
    """The KFAC posterior's dense covariance over the (C, p) weights, row-major: (G (x) A + delta I)^-1."""
    G = (lap.Q_G * lap.eig_G) @ lap.Q_G.T
    A = (lap.Q_A * lap.eig_A) @ lap.Q_A.T
    n = G.shape[0] * A.shape[0]
    return torch.linalg.inv(torch.kron(G, A) + lap.prior_precision * torch.eye(n, dtype=torch.float64))


def _auroc(neg: np.ndarray, pos: np.ndarray) -> float:
    s = np.r_[neg, pos]
    ranks = s.argsort().argsort() + 1.0
    return float((ranks[len(neg):].sum() - len(pos) * (len(pos) + 1) / 2) / (len(neg) * len(pos)))


def test_ood_digits_mutual_information_alone():
    """Trained on digits 0-4; the MI alone separates 5-9 (measured 0.943 at this budget and seed
    with S = 16 MC samples; 0.873 with S = 64)."""
    from sklearn.datasets import load_digits

    from alkit.models.train import TrainConfig

    X, y = load_digits(return_X_y=True)
    rng = np.random.default_rng(0)
    idx = rng.permutation(len(X))
    X, y = X[idx], y[idx]
    ind = y < 5
    Xi, yi = X[ind], y[ind]
    n_tr = int(0.7 * len(Xi))
    learner = L.LaplaceLearner("classification", 5, epistemic="mi", train=TrainConfig(max_epochs=60))
    learner.fit(Xi[:n_tr], yi[:n_tr], seed=0)
    p_in, p_out = learner.predict(Xi[n_tr:]), learner.predict(X[~ind])
    auc = _auroc(p_in.epistemic_n.numpy(), p_out.epistemic_n.numpy())
    print("laplace MI OOD AUROC", auc)
    assert auc > 0.8, auc
    assert learner.posterior().cov_K_d_d.shape[0] == 5
    assert math.isfinite(float(p_in.extras["trace_n"].sum()))


def test_regression_learner_variance_grows_away_from_the_data():
    from alkit.models.train import TrainConfig

    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (200, 1))
    y = np.sin(3 * X[:, 0]) + 0.1 * rng.normal(size=200)
    learner = L.LaplaceLearner("regression", epistemic="trace", train=TrainConfig(max_epochs=30))
    learner.fit(X, y, seed=0)
    p_in, p_far = learner.predict(X[:50]), learner.predict(np.full((50, 1), 4.0))
    assert float(p_far.epistemic_n.mean()) > 3 * float(p_in.epistemic_n.mean())
    assert (p_in.epistemic_n > 0).all()
    post = learner.posterior()
    assert post.cov_K_d_d.shape == (1, 129, 129)
    # the posterior's variance of the mean output is the reported one (standardised units)
    phi = post.features(p_in.embedding_n_d).double()
    v = torch.einsum("ni,ij,nj->n", phi, post.cov_K_d_d[0].double(), phi)
    torch.testing.assert_close(v.float() * learner.base.scaler.scale**2, p_in.epistemic_n, rtol=1e-3, atol=1e-7)


def test_kronecker_posterior_is_the_damped_kronecker_inverse():
    net = _net(3, 4, 3, seed=5)
    X = torch.randn(25, 3)
    lap = L.fit_last_layer_laplace(net, None, X, hessian="kfac")
    post = lap.posterior(kronecker=True)
    assert post.cov_K_d_d.shape == (1, 5, 5) and post.scale_K.shape == (3,)
    r = math.sqrt(lap.prior_precision)
    G = (lap.Q_G * lap.eig_G) @ lap.Q_G.T
    A = (lap.Q_A * lap.eig_A) @ lap.Q_A.T
    dense = torch.linalg.inv(torch.kron(G + r * torch.eye(3, dtype=torch.float64),
                                        A + r * torch.eye(5, dtype=torch.float64)))
    # class c's diagonal block of the dense inverse is scale_c * S
    for c in range(3):
        blk = dense[5 * c : 5 * c + 5, 5 * c : 5 * c + 5].contiguous()
        torch.testing.assert_close(blk.float(), post.scale_K[c] * post.cov_K_d_d[0], rtol=1e-4, atol=1e-7)


def test_scoring_leaves_every_module_in_its_mode():
    """A wrapper Sequential is in train mode by default; scoring must not flip the fitted
    backbone into train mode (spectral-norm power iterations would then change it per call)."""
    from alkit.models.backbone import ResidualMLP

    bb = ResidualMLP(3, 8, 1).eval()
    model = nn.Sequential(bb, nn.Linear(8, 2))  # wrapper left in train mode
    L.layer_io(model, model[1], torch.randn(5, 3))
    assert not bb.training and not bb.blocks[0].training and model.training


def test_eigenbasis_mc_equals_general_mc():
    g = torch.Generator().manual_seed(0)
    Q, _ = torch.linalg.qr(torch.randn(4, 4, generator=g, dtype=torch.float64))
    m = torch.rand(6, 4, generator=g, dtype=torch.float64) * 3
    logits = torch.randn(6, 4, generator=g, dtype=torch.float64)
    L_n = Q[None] * m.sqrt()[:, None, :]
    a, pa = L.mc_mutual_information(logits, L_n, n_samples=32)
    b, pb = L.mc_mutual_information_eig(logits, Q, m, n_samples=32)
    torch.testing.assert_close(a, b)
    torch.testing.assert_close(pa, pb)


def test_trace_mode_skips_the_mutual_information() -> None:
    """epistemic='trace' ranks by the logit-covariance trace and does not pay for the MC MI
    (issue 14: no unused work); its trace equals the MI mode's on the same fit."""
    from sklearn.datasets import load_digits

    from alkit.learners.laplace import LaplaceLearner

    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    trace, mi = LaplaceLearner("classification", 10, epistemic="trace"), LaplaceLearner("classification", 10)
    for learner in (trace, mi):
        learner.fit(X[:200], y[:200], seed=0)
    pt, pm = trace.predict(X[500:700]), mi.predict(X[500:700])
    assert "mi_n" not in pt.extras and "mi_n" in pm.extras
    torch.testing.assert_close(pt.epistemic_n, pm.extras["trace_n"])
    torch.testing.assert_close(pt.probs_n_C, pm.probs_n_C)


def test_shared_mc_design_is_antithetic_whitened_and_closer_to_a_long_monte_carlo() -> None:
    """fixed_eps: mean 0 and (with >= C pairs) covariance exactly I; the MI from 64 design samples
    is within 6 % (aggregate) of an independent 20,000-draw Monte Carlo on a KFAC-shaped logit
    posterior, and closer than 64 iid draws."""
    from alkit.learners.laplace import fixed_eps, mc_mutual_information_eig

    for S, C in ((64, 10), (16, 10), (17, 5), (2, 3)):
        eps = fixed_eps(S, C, 0, torch.float64)
        assert eps.shape == (S, C)
        torch.testing.assert_close(eps.mean(0), torch.zeros(C, dtype=torch.float64), atol=1e-12, rtol=0)
        if S // 2 >= C:
            torch.testing.assert_close(eps.T @ eps / S, torch.eye(C, dtype=torch.float64), atol=1e-10, rtol=0)
    gen = torch.Generator().manual_seed(0)
    n, C = 400, 10
    logits = torch.randn(n, C, generator=gen, dtype=torch.float64) * 2
    Q = torch.linalg.qr(torch.randn(C, C, generator=gen, dtype=torch.float64))[0]
    eig = torch.rand(n, C, generator=gen, dtype=torch.float64) * 2
    ref_eps = torch.randn(20000, C, generator=torch.Generator().manual_seed(99), dtype=torch.float64)
    z = logits[:, None, :] + (eig.sqrt()[:, None, :] * ref_eps[None]) @ Q.T
    p = z.softmax(-1)
    ent = lambda q: -(q * q.clamp_min(1e-300).log()).sum(-1)  # noqa: E731
    ref = ent(p.mean(1)) - ent(p).mean(1)
    design, _ = mc_mutual_information_eig(logits, Q, eig, n_samples=64)
    iid_eps = torch.randn(64, C, generator=torch.Generator().manual_seed(5), dtype=torch.float64)
    zi = logits[:, None, :] + (eig.sqrt()[:, None, :] * iid_eps[None]) @ Q.T
    pi = zi.softmax(-1)
    iid = ent(pi.mean(1)) - ent(pi).mean(1)
    err = lambda est: float((est - ref).abs().sum() / ref.sum())  # noqa: E731
    assert err(design) < 0.06 and err(design) < err(iid), (err(design), err(iid))


def test_mc_mutual_information_in_row_blocks_equals_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """The MC mutual information is computed in row blocks bounded by MC_WORKING_SET (so a chunk
    at C = 100 does not hold gigabytes of samples); the blocks must give one block's result (up to GEMM rounding)."""
    import alkit.learners.laplace as lp

    g = torch.Generator().manual_seed(0)
    n, C = 37, 6
    logits = torch.randn(n, C, generator=g, dtype=torch.float64)
    eig = torch.rand(n, C, generator=g, dtype=torch.float64) * 4
    Q = torch.linalg.qr(torch.randn(C, C, generator=g, dtype=torch.float64))[0]
    A = torch.randn(n, C, C, generator=g, dtype=torch.float64)
    whole_eig = lp.mc_mutual_information_eig(logits, Q, eig, n_samples=16)
    whole_full = lp.mc_mutual_information(logits, A, n_samples=16)
    monkeypatch.setattr(lp, "MC_WORKING_SET", 5 * 16 * C * 8)  # 5 rows a block, a ragged last one
    for whole, blocked in ((whole_eig, lp.mc_mutual_information_eig(logits, Q, eig, n_samples=16)),
                           (whole_full, lp.mc_mutual_information(logits, A, n_samples=16))):
        torch.testing.assert_close(blocked[0], whole[0], rtol=1e-12, atol=1e-15)  # GEMM rounding only
        torch.testing.assert_close(blocked[1], whole[1], rtol=1e-12, atol=1e-15)


def test_sample_bald_matches_the_float64_log_softmax_route() -> None:
    """_bald's one-exponential entropy (logsumexp - sum p z) against -sum p log p in float64."""
    from alkit.learners.laplace import _bald

    g = torch.Generator().manual_seed(3)
    for scale in (0.5, 5.0, 50.0):
        z = torch.randn(500, 16, 7, generator=g) * scale
        logp = z.double().log_softmax(-1)
        p = logp.exp()
        mean_p = p.mean(1)
        ref = -(mean_p * mean_p.log()).sum(-1) + (p * logp).sum(-1).mean(1)
        mi, got_mean = _bald(z)
        assert torch.allclose(got_mean.double(), mean_p, atol=1e-6)
        assert float((mi.double() - ref.clamp_min(0)).abs().max()) < 1e-5 * max(1.0, scale)


def test_kfac_eig_map_is_zero_padded_to_the_gemm_width_and_changes_no_variance() -> None:
    """kfac_eig_map pads Q_A's columns and the weights' rows with zeros to a multiple of 16 (the
    blocked GEMM kernel); the eigen-variances are the logit variances in the G eigenbasis of the
    damped KFAC posterior (G (x) A + delta I)^-1: a^T (g_c A + delta I)^-1 a for each eigenvalue g_c
    of G, against an explicit matrix inverse in float64, with and without the bias row."""
    from alkit.models.layers import GEMM_COLUMNS

    g = torch.Generator().manual_seed(4)
    d, C, delta = 11, 3, 0.7
    Q_A = torch.linalg.qr(torch.randn(d + 1, d + 1, generator=g, dtype=torch.float64))[0]
    eig_A, eig_G = torch.rand(d + 1, generator=g, dtype=torch.float64) * 5, torch.rand(C, generator=g, dtype=torch.float64)
    h = torch.randn(7, d, generator=g, dtype=torch.float64)
    b, R, V = L.kfac_eig_map(Q_A, eig_A, eig_G, delta, True, torch.float64)
    assert R.shape == (d, GEMM_COLUMNS) and b.shape == (GEMM_COLUMNS,) and V.shape == (GEMM_COLUMNS, C)
    assert not R[:, d + 1:].any() and not b[d + 1:].any() and not V[d + 1:].any()
    A = (Q_A * eig_A) @ Q_A.T  # the input factor over [h, 1]

    def explicit(a_n_p: torch.Tensor, A_p_p: torch.Tensor) -> torch.Tensor:
        eye = torch.eye(A_p_p.shape[0], dtype=torch.float64)
        return torch.stack([torch.einsum("np,pq,nq->n", a_n_p, torch.linalg.inv(g * A_p_p + delta * eye), a_n_p)
                            for g in eig_G], 1)

    a = torch.cat([h, torch.ones(7, 1, dtype=torch.float64)], 1)
    unpadded = (a @ Q_A) ** 2 @ (1.0 / (torch.outer(eig_G, eig_A) + delta)).T  # the padding changes no sum
    torch.testing.assert_close(L.kfac_logit_eigvar(h, Q_A, eig_A, eig_G, delta, True), unpadded, rtol=1e-12, atol=0)
    torch.testing.assert_close(L.kfac_logit_eigvar(h, Q_A, eig_A, eig_G, delta, True), explicit(a, A),
                               rtol=1e-10, atol=1e-14)
    # without a bias the factor is over h alone (its own eigenbasis)
    Q_h = torch.linalg.qr(torch.randn(d, d, generator=g, dtype=torch.float64))[0]
    eig_h = torch.rand(d, generator=g, dtype=torch.float64) * 5
    torch.testing.assert_close(L.kfac_logit_eigvar(h, Q_h, eig_h, eig_G, delta, False),
                               explicit(h, (Q_h * eig_h) @ Q_h.T), rtol=1e-10, atol=1e-14)


@pytest.mark.parametrize("likelihood", ["classification", "regression", "heteroscedastic"])
def test_mean_output_ggn_is_the_mean_of_the_per_item_stack(likelihood: str) -> None:
    """The KFAC factor G is built without the (n, C, C) stack (24 GB at 1,000 classes and 3,000
    labels); it must equal that stack's mean."""
    out = torch.randn(50, 2 if likelihood == "heteroscedastic" else 7, generator=torch.Generator().manual_seed(1))
    want = L.output_ggn_n_C_C(out, likelihood, 0.6).mean(0)
    torch.testing.assert_close(L.mean_output_ggn_C_C(out, likelihood, 0.6), want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("C", [3, 25])
def test_class_major_and_row_major_samples_give_the_same_mutual_information(C: int) -> None:
    """The two sample layouts of mc_mutual_information_eig (chosen by class count for speed) are the
    same estimator: equal MI and mean probabilities in float64."""
    g = torch.Generator().manual_seed(C)
    logits = torch.randn(40, C, generator=g, dtype=torch.float64) * 3
    Q = torch.linalg.qr(torch.randn(C, C, generator=g, dtype=torch.float64))[0]
    eig = torch.rand(40, C, generator=g, dtype=torch.float64) * 2
    a = L.mc_mutual_information_eig(logits, Q, eig, n_samples=16, layout="class")
    b = L.mc_mutual_information_eig(logits, Q, eig, n_samples=16, layout="row")
    torch.testing.assert_close(a[0], b[0], rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(a[1], b[1], rtol=1e-10, atol=1e-12)



def test_classification_only_and_extreme_options_are_refused_before_a_run() -> None:
    """mi / mc_samples on regression (its score is the Gaussian closed form) named runs of the default's picks, and
    a prior precision of 1e-300 gave undefined scores after the first batch (black-box checks)."""
    from alkit.learners.laplace import LaplaceLearner

    for options in ({"mi": "probit"}, {"mc_samples": 32}):
        with pytest.raises(ValueError, match="applies to classification projects only"):
            LaplaceLearner("regression", **options)
    for value in (1e-300, 1e-45, 1e31):
        with pytest.raises(ValueError, match="prior_precision must be positive, in"):
            LaplaceLearner("classification", 3, prior_precision=value)
    LaplaceLearner("regression", mc_samples=16, prior_precision=1e-12)
