"""BayesVLM on dual encoders: closed forms against Monte Carlo / dense / autograd references."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from alkit.learners import dual_encoder as de
from alkit.learners.dual_encoder import (
    BayesVLM, DualEncoderLearner, KronFactors, LinearProjection, PreProjection,
    fit_kron_posterior, infonce_ggn, infonce_kfac, kron_log_evidence, mc_mutual_information,
    prob_cosine, prob_cosine_kron, probit_probs, siglip_ggn, siglip_kfac, tune_kron_prior_precision,
)

f64 = torch.float64


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _mc_cos(g_S_n_D: torch.Tensor, h_S_C_D: torch.Tensor) -> torch.Tensor:
    g = g_S_n_D / g_S_n_D.norm(dim=-1, keepdim=True)
    h = h_S_C_D / h_S_C_D.norm(dim=-1, keepdim=True)
    return torch.einsum("snd,scd->snc", g, h)


# --------------------------------------------------------------------------- ProbCosine


def test_prob_cosine_matches_monte_carlo() -> None:
    gen = _gen(0)
    n, C, D, S = 4, 5, 64, 40000
    mg, mh = torch.randn(n, D, generator=gen, dtype=f64), torch.randn(C, D, generator=gen, dtype=f64)
    vg = 0.3 * torch.rand(n, D, generator=gen, dtype=f64)
    vh = 0.3 * torch.rand(C, D, generator=gen, dtype=f64)
    mean, var = prob_cosine(mg, vg, mh, vh)
    g = mg + vg.sqrt() * torch.randn(S, n, D, generator=gen, dtype=f64)
    h = mh + vh.sqrt() * torch.randn(S, C, D, generator=gen, dtype=f64)
    cos = _mc_cos(g, h)
    assert (mean - cos.mean(0)).abs().max() < 0.004  # cos values spread ~0.15
    rel = (var - cos.var(0)).abs() / cos.var(0)
    assert rel.max() < 0.15 and rel.mean() < 0.08
    # no uncertainty: the plain cosine, variance 0
    m0, v0 = prob_cosine(mg, None, mh, None)
    torch.testing.assert_close(m0, _mc_cos(mg[None], mh[None])[0])
    assert v0.abs().max() == 0


def test_prob_cosine_kron_full_covariance_matches_monte_carlo() -> None:
    gen = _gen(1)
    n, C, D, S = 3, 4, 24, 40000
    mg, mh = torch.randn(n, D, generator=gen, dtype=f64), torch.randn(C, D, generator=gen, dtype=f64)
    M = torch.randn(D, D, generator=gen, dtype=f64)
    Bg = 0.3 * (M @ M.T / D + 0.1 * torch.eye(D, dtype=f64))  # correlated embedding covariance
    M2 = torch.randn(D, D, generator=gen, dtype=f64)
    Bh = 0.2 * (M2 @ M2.T / D + 0.1 * torch.eye(D, dtype=f64))
    kg, kh = torch.tensor([0.5, 1.0, 2.0], dtype=f64), torch.tensor([0.3, 1.0, 0.7, 1.5], dtype=f64)
    mean, var = prob_cosine_kron(mg, kg, Bg, mh, kh, Bh)
    Lg, Lh = torch.linalg.cholesky(Bg), torch.linalg.cholesky(Bh)
    g = mg + kg.sqrt()[:, None] * (torch.randn(S, n, D, generator=gen, dtype=f64) @ Lg.T)
    h = mh + kh.sqrt()[:, None] * (torch.randn(S, C, D, generator=gen, dtype=f64) @ Lh.T)
    cos = _mc_cos(g, h)
    assert (mean - cos.mean(0)).abs().max() < 0.01
    rel = (var - cos.var(0)).abs() / cos.var(0)
    assert rel.max() < 0.2 and rel.mean() < 0.1
    # with diagonal covariances it is the diagonal ProbCosine
    dg, dh = torch.rand(D, generator=gen, dtype=f64), torch.rand(D, generator=gen, dtype=f64)
    full = prob_cosine_kron(mg, kg, torch.diag(dg), mh, kh, torch.diag(dh))
    diag = prob_cosine(mg, kg[:, None] * dg, mh, kh[:, None] * dh)
    torch.testing.assert_close(full, diag)


def test_probit_predictive_matches_monte_carlo_and_beats_map() -> None:
    # the per-logit probit is accurate when the classes' logit variances are comparable, which is
    # BayesVLM's regime (fixed prompts, unit-norm targets); it is poor when they differ widely
    gen = _gen(2)
    n, C, S = 200, 10, 20000
    m = 2.0 * torch.randn(n, C, generator=gen, dtype=f64)
    v = torch.full((n, C), 1.0, dtype=f64) * (0.8 + 0.4 * torch.rand(n, 1, generator=gen, dtype=f64))
    z = m + v.sqrt() * torch.randn(S, n, C, generator=gen, dtype=f64)
    p_mc = z.softmax(-1).mean(0)
    err = (probit_probs(m, v) - p_mc).abs().sum(-1)
    err_map = (m.softmax(-1) - p_mc).abs().sum(-1)
    err_wrong = ((m / torch.sqrt(1 + math.pi / 3 * v)).softmax(-1) - p_mc).abs().sum(-1)
    assert err.mean() < 0.04 and err.max() < 0.12
    assert err.mean() < 0.5 * err_map.mean() and err.mean() < 0.5 * err_wrong.mean()
    # and the MC predictive returned alongside the MI is the same expectation
    _, p_mc2 = mc_mutual_information(m, v, n_samples=4000, seed=3)
    assert (p_mc2 - p_mc).abs().sum(-1).mean() < 0.03


def test_mutual_information_mc() -> None:
    gen = _gen(4)
    m = torch.randn(50, 6, generator=gen, dtype=f64)
    assert mc_mutual_information(m, torch.zeros_like(m))[0].abs().max() < 1e-12
    mis = [mc_mutual_information(m, torch.full_like(m, s), seed=0)[0].mean() for s in (0.1, 1.0, 10.0)]
    assert mis[0] < mis[1] < mis[2] <= math.log(6)
    # against an independent large-sample estimate
    v = torch.rand(50, 6, generator=gen, dtype=f64)
    mi, _ = mc_mutual_information(m, v, n_samples=2000, seed=1)
    p = (m + v.sqrt() * torch.randn(20000, 50, 6, generator=gen, dtype=f64)).softmax(-1)
    ent = lambda q: -(q * q.log()).sum(-1)  # noqa: E731
    ref = ent(p.mean(0)) - ent(p).mean(0)
    assert (mi - ref).abs().max() < 0.01


# ----------------------------------------------------------------------- Kronecker evidence


def _spd(n: int, gen: torch.Generator, scale: float = 1.0) -> torch.Tensor:
    M = torch.randn(n, n + 2, generator=gen, dtype=f64)
    return scale * M @ M.T / n


def test_kron_evidence_logdet_equals_dense_logdet() -> None:
    gen = _gen(5)
    q, D, lam, n_pseudo = 4, 3, 0.7, 10.0
    A, B = _spd(q, gen), _spd(D, gen, 2.0)
    theta_sq = 3.2
    At = math.sqrt(n_pseudo) * A + math.sqrt(lam) * torch.eye(q, dtype=f64)
    Bt = math.sqrt(n_pseudo) * B + math.sqrt(lam) * torch.eye(D, dtype=f64)
    dense = torch.logdet(torch.kron(At, Bt))
    assert torch.isclose(de.kron_logdet(At, Bt), dense)
    ev = kron_log_evidence(lam, torch.linalg.eigvalsh(A), torch.linalg.eigvalsh(B), theta_sq, n_pseudo)
    expected = -0.5 * lam * theta_sq + 0.5 * q * D * math.log(lam) - 0.5 * float(dense)
    assert ev == pytest.approx(expected, rel=1e-10)
    # the reference code's form (dim(A) logdet A, no 1/2) is a different function of lam
    wrong = -0.5 * lam * theta_sq + 0.5 * q * D * math.log(lam) - (q * torch.logdet(At) + D * torch.logdet(Bt))
    assert abs(float(wrong) - ev) > 1e-3


def test_tuned_prior_precision_maximises_the_evidence() -> None:
    gen = _gen(6)
    eA, eB = torch.linalg.eigvalsh(_spd(8, gen)), torch.linalg.eigvalsh(_spd(5, gen))
    lam = tune_kron_prior_precision(eA, eB, theta_sq=4.0, n_pseudo=2.0)
    best = kron_log_evidence(lam, eA, eB, 4.0, 2.0)
    for factor in (0.5, 0.99, 1.01, 2.0):
        assert kron_log_evidence(lam * factor, eA, eB, 4.0, 2.0) < best
    # stationary point: d evidence / d log lam = 0
    h = 1e-5
    fp = kron_log_evidence(lam * math.exp(h), eA, eB, 4.0, 2.0)
    fm = kron_log_evidence(lam * math.exp(-h), eA, eB, 4.0, 2.0)
    assert abs(fp - fm) / (2 * h) < 1e-4


def test_posterior_factors_and_embedding_covariance() -> None:
    gen = _gen(7)
    q, D = 5, 3
    A, B = _spd(q, gen), _spd(D, gen)
    fac = KronFactors(A * 2.0, B * 2.0, 4)  # sums; A = sum / sqrt(4)
    proj = LinearProjection(torch.randn(D, q, generator=gen, dtype=f64))
    post = fit_kron_posterior(fac, proj, n_pseudo=3.0, prior_precision=0.5)
    At = math.sqrt(3.0) * A + math.sqrt(0.5) * torch.eye(q, dtype=f64)
    Bt = math.sqrt(3.0) * B + math.sqrt(0.5) * torch.eye(D, dtype=f64)
    torch.testing.assert_close(post.A_inv_q_q, torch.linalg.inv(At))
    torch.testing.assert_close(post.B_inv_D_D, torch.linalg.inv(Bt))
    # Cov(g | a) = (a^T A~^-1 a) B~^-1: against samples of the projection weights
    a = torch.randn(2, q, generator=gen, dtype=f64)
    W = post.sample_weights(60000, seed=1)  # (S, D, q)
    g = torch.einsum("sdq,nq->snd", W, a)
    for i in range(2):
        emp = torch.cov(g[:, i].T)
        torch.testing.assert_close(emp, post.embedding_cov(a)[i], rtol=0.05, atol=0.02 * emp.diagonal().max().item())
    torch.testing.assert_close(post.embedding_var(a), post.embedding_cov(a).diagonal(dim1=1, dim2=2))


# ------------------------------------------------------------------------------ GGN / KFAC


def _autograd_output_ggn(loss: str, g: torch.Tensor, T: torch.Tensor, s: float, bias: float = 0.0) -> torch.Tensor:
    """J^T H_z J with J = d logits / d g by autograd and H_z the loss's Hessian in logit space."""
    that = T / T.norm(dim=-1, keepdim=True)
    logits = lambda gg: s * (gg / gg.norm()) @ that.T + bias  # noqa: E731
    J = torch.autograd.functional.jacobian(logits, g)  # (T, D)
    z = logits(g)
    if loss == "infonce":
        p = z.softmax(-1)
        Hz = torch.diag(p) - torch.outer(p, p)
    else:
        sg = torch.sigmoid(z)
        Hz = torch.diag(sg * (1 - sg))
    return J.T @ Hz @ J


@pytest.mark.parametrize("loss", ["infonce", "siglip"])
def test_output_ggn_matches_autograd(loss: str) -> None:
    gen = _gen(8)
    g = 2.0 * torch.randn(4, 6, generator=gen, dtype=f64)
    T = torch.randn(7, 6, generator=gen, dtype=f64)
    fn = infonce_ggn if loss == "infonce" else (lambda gg, tt, s, reduce: siglip_ggn(gg, tt, s, -1.5, reduce=reduce))
    per_item = fn(g, T, 3.0, reduce=False)
    for i in range(4):
        ref = _autograd_output_ggn(loss, g[i], T, 3.0, bias=-1.5)
        torch.testing.assert_close(per_item[i], ref)
    torch.testing.assert_close(fn(g, T, 3.0, reduce=True), per_item.sum(0))


@pytest.mark.parametrize("loss", ["infonce", "siglip"])
def test_kfac_equals_exact_weight_ggn_for_one_item(loss: str) -> None:
    """For one item KFAC is exact: GGN over vec(theta) (row-major) = B (x) A."""
    gen = _gen(9)
    D, p, T = 3, 4, 5
    W = torch.randn(D, p, generator=gen, dtype=f64)
    b = torch.randn(D, generator=gen, dtype=f64) if loss == "siglip" else None
    proj = LinearProjection(W, b)
    a = torch.randn(1, p, generator=gen, dtype=f64)
    off = torch.randn(1, D, generator=gen, dtype=f64) if loss == "siglip" else None
    targets = torch.randn(T, D, generator=gen, dtype=f64)
    s, bias = 2.5, -0.5
    that = targets / targets.norm(dim=-1, keepdim=True)
    theta = proj.theta_D_q
    phi = proj.phi(a)[0]

    def logits(theta_flat: torch.Tensor) -> torch.Tensor:
        g = theta_flat.reshape(theta.shape) @ phi + (0 if off is None else off[0])
        return s * (g / g.norm()) @ that.T + (bias if loss == "siglip" else 0.0)

    J = torch.autograd.functional.jacobian(logits, theta.reshape(-1))
    z = logits(theta.reshape(-1))
    if loss == "infonce":
        p_ = z.softmax(-1)
        exact = J.T @ (torch.diag(p_) - torch.outer(p_, p_)) @ J
        fac = infonce_kfac(PreProjection(a, off), proj, targets, s)
    else:
        sg = torch.sigmoid(z)
        exact = J.T @ torch.diag(sg * (1 - sg)) @ J
        fac = siglip_kfac(PreProjection(a, off), proj, targets, s, bias)
    assert fac.n == 1
    torch.testing.assert_close(torch.kron(fac.B_D_D, fac.A_q_q), exact)


def test_kfac_sums_merge_and_scale() -> None:
    gen = _gen(10)
    proj = LinearProjection(torch.randn(3, 4, generator=gen, dtype=f64))
    x = PreProjection(torch.randn(10, 4, generator=gen, dtype=f64))
    T = torch.randn(5, 3, generator=gen, dtype=f64)
    whole = infonce_kfac(x, proj, T, 2.0)
    merged = infonce_kfac(x.subset(slice(0, 4)), proj, T, 2.0) + infonce_kfac(x.subset(slice(4, 10)), proj, T, 2.0)
    torch.testing.assert_close(merged.A_q_q, whole.A_q_q)
    torch.testing.assert_close(merged.B_D_D, whole.B_D_D)
    torch.testing.assert_close(whole.A_q_q, x.a_n_p.T @ x.a_n_p / math.sqrt(10))


# --------------------------------------------------------------------------------- model


def _toy_vlm(gen: torch.Generator, p: int = 12, q: int = 8, D: int = 6, C: int = 4):
    """Pretraining features confined to a 4-dim subspace of the p image dims."""
    basis = torch.linalg.qr(torch.randn(p, p, generator=gen, dtype=f64))[0]
    img = PreProjection(torch.randn(300, 4, generator=gen, dtype=f64) @ basis[:, :4].T + 0.5 * basis[:, 0])
    img_proj = LinearProjection(torch.randn(D, p, generator=gen, dtype=f64) / math.sqrt(p))
    txt_proj = LinearProjection(torch.randn(D, q, generator=gen, dtype=f64) / math.sqrt(q),
                                torch.zeros(D, dtype=f64))
    prompts = PreProjection(torch.randn(C, q, generator=gen, dtype=f64))
    emb_C_D = txt_proj(prompts)
    s = 10.0
    img_fac = infonce_kfac(img, img_proj, emb_C_D, s)
    txt_fac = infonce_kfac(prompts, txt_proj, img_proj(img), s)
    vlm = BayesVLM(img_proj, txt_proj, fit_kron_posterior(img_fac, img_proj),
                   fit_kron_posterior(txt_fac, txt_proj), s)
    return vlm, img, prompts, basis, img_fac


def _auroc(neg: torch.Tensor, pos: torch.Tensor) -> float:
    """P(score of a positive > score of a negative)."""
    return float((pos[:, None] > neg[None, :]).double().mean())


def test_epistemic_scores_grow_off_the_fitted_subspace() -> None:
    gen = _gen(11)
    vlm, img, prompts, basis, _ = _toy_vlm(gen)
    z_in = torch.randn(100, 4, generator=gen, dtype=f64) @ basis[:, :4].T + 0.5 * basis[:, 0]
    z_out = torch.randn(100, 8, generator=gen, dtype=f64) @ basis[:, 4:].T + 0.5 * basis[:, 0]
    z_in, z_out = z_in / z_in.norm(dim=1, keepdim=True), z_out / z_out.norm(dim=1, keepdim=True)
    vlm = dataclasses.replace(vlm, text_post=None)  # image uncertainty only (fixed prompts)
    for cov in ("diag", "full"):
        o_in = vlm.zero_shot(PreProjection(z_in), prompts, covariance=cov)
        o_out = vlm.zero_shot(PreProjection(z_out), prompts, covariance=cov)
        assert _auroc(o_in.var_n, o_out.var_n) > 0.9
        assert _auroc(o_in.mi_n, o_out.mi_n) > 0.8
        assert _auroc(o_in.score("embed"), o_out.score("embed")) > 0.95
        k = vlm.image_post.scale_n(z_in)
        torch.testing.assert_close(o_in.embed_n, k * vlm.image_post.B_inv_D_D.diagonal().sum())
        torch.testing.assert_close(o_in.probs_n_C.sum(-1), torch.ones(100, dtype=f64))
    assert vlm.image_post.prior_precision > 0 and math.isfinite(vlm.image_post.log_evidence)


def test_learner_zero_shot_and_finetune() -> None:
    gen = _gen(12)
    vlm, img, prompts, basis, fac = _toy_vlm(gen)
    learner = DualEncoderLearner(vlm, prompts, fac, finetune_steps=150)
    Z = torch.randn(40, 4, generator=gen, dtype=f64)
    X = (Z @ basis[:, 4:8].T).float().numpy()  # off the pretraining subspace
    y = Z.argmax(1).numpy()  # a rule the projection can learn
    report = learner.fit(X[:0], y[:0], seed=0)
    assert report["n_labeled"] == 0
    zs = learner.predict(X)
    ref = vlm.zero_shot(PreProjection(torch.as_tensor(X)), prompts)
    torch.testing.assert_close(zs.probs_n_C, ref.probs_n_C.float())
    learner.fit(X, y, seed=0)
    pred = learner.predict(X)
    assert pred.probs_n_C.shape == (40, 4) and pred.epistemic_n.shape == (40,)
    assert pred.embedding_n_d.shape == (40, 12)
    acc = (pred.probs_n_C.argmax(1).numpy() == y).mean()
    assert acc > (zs.probs_n_C.argmax(1).numpy() == y).mean() and acc > 0.6
    # labeled curvature shrinks the image-embedding variance on the labeled inputs
    k_zs = vlm.image_post.scale_n(torch.as_tensor(X, dtype=f64))
    k_ft = learner.model.image_post.scale_n(torch.as_tensor(X, dtype=f64))
    assert (k_ft < 0.75 * k_zs).all()
    post = learner.posterior()
    assert post is not None and post.cov_K_d_d.shape == (1, 12, 12) and post.scale_K.shape == (6,)
    learner2 = DualEncoderLearner(vlm, prompts, fac, finetune_steps=150)
    learner2.fit(X, y, seed=0)
    torch.testing.assert_close(learner2.predict(X).probs_n_C, pred.probs_n_C)


# --------------------------------------------------------------------------- HF adapter


@pytest.fixture(scope="module")
def transformers_mod():
    return pytest.importorskip("transformers")


def _tiny_configs(tf):
    text = dict(vocab_size=50, hidden_size=16, intermediate_size=24, num_hidden_layers=1,
                num_attention_heads=2, max_position_embeddings=12)
    vision = dict(hidden_size=16, intermediate_size=20, num_hidden_layers=1, num_attention_heads=2,
                  image_size=16, patch_size=8, num_channels=3)
    clip = tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=8)
    siglip = tf.SiglipConfig(text_config={**text, "projection_size": 16}, vision_config=vision)
    return clip, siglip


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_hf_adapter_reproduces_model_features(transformers_mod, kind: str) -> None:
    tf = transformers_mod
    torch.manual_seed(0)
    clip_cfg, siglip_cfg = _tiny_configs(tf)
    model = tf.CLIPModel(clip_cfg) if kind == "clip" else tf.SiglipModel(siglip_cfg)
    model.eval()
    adapter = de.hf_dual_encoder(model)
    assert adapter.kind == kind
    pixels = torch.randn(5, 3, 16, 16)
    ids = torch.randint(3, 50, (4, 7))
    with torch.no_grad():
        ref_img = model.get_image_features(pixel_values=pixels)
        ref_txt = model.get_text_features(input_ids=ids)
    ref_img = ref_img if isinstance(ref_img, torch.Tensor) else ref_img.pooler_output
    ref_txt = ref_txt if isinstance(ref_txt, torch.Tensor) else ref_txt.pooler_output
    img, txt = adapter.image_inputs(pixels), adapter.text_inputs(ids)
    torch.testing.assert_close(adapter.image_projection()(img), ref_img, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(adapter.text_projection()(txt), ref_txt, rtol=1e-5, atol=1e-5)
    if kind == "siglip":
        assert img.offset_n_D is not None and adapter.image_projection().bias_D is not None
    else:
        assert img.offset_n_D is None and adapter.image_projection().bias_D is None
    # end to end: factors from the model's own features, posterior, zero-shot output
    ip, tp = adapter.image_projection(), adapter.text_projection()
    ggn = infonce_kfac if kind == "clip" else (lambda x, pr, t, s: siglip_kfac(x, pr, t, s, adapter.logit_bias))
    post_i = fit_kron_posterior(ggn(img, ip, tp(txt).detach(), adapter.logit_scale), ip)
    post_t = fit_kron_posterior(ggn(txt, tp, ip(img).detach(), adapter.logit_scale), tp)
    out = adapter.bayes_vlm(post_i, post_t).zero_shot(img, txt)
    assert out.probs_n_C.shape == (5, 4) and (out.var_n > 0).all()
    # without posteriors the logits are the model's own
    with torch.no_grad():
        logits = model(input_ids=ids, pixel_values=pixels).logits_per_image
    det = adapter.bayes_vlm().zero_shot(img, txt)
    torch.testing.assert_close(det.logit_mean_n_C.float(), logits, rtol=1e-4, atol=1e-4)
    assert det.var_n.abs().max() == 0


def test_hf_adapter_rejects_other_models() -> None:
    with pytest.raises(ValueError, match="CLIPModel or SiglipModel"):
        de.hf_dual_encoder(torch.nn.Linear(2, 2))


def test_learner_posterior_feeds_the_diverse_strategy() -> None:
    from alkit.strategies import get_selector
    from alkit.types import Candidates, SelectionContext

    gen = _gen(13)
    vlm, img, prompts, basis, fac = _toy_vlm(gen)
    learner = DualEncoderLearner(vlm, prompts, fac, finetune_steps=20)
    learner.fit(np.zeros((0, 12), np.float32), np.zeros(0, np.int64), seed=0)
    X = torch.randn(30, 12, generator=gen).numpy()
    pred = learner.predict(X)
    cands = Candidates(keys_n=np.arange(30), scores_n=pred.epistemic_n.numpy(), embedding_n_d=pred.embedding_n_d.numpy())
    post = learner.posterior()
    sel = get_selector("diverse").select(cands, 5, SelectionContext(seed=0, posterior=post))
    assert len(sel.keys) == 5 and np.all(np.diff(sel.utilities) <= 1e-9)  # gains shrink greedily
    # the posterior is the image projection's Kronecker marginal, and the batch's gains add up to the joint
    # information under it: sum_k 1/2 logdet(I + b_k Phi_B A^-1 Phi_B^T), A^-1 and b = diag(B^-1) read off the model
    image_post = learner.model.image_post
    A_inv = image_post.A_inv_q_q.double().numpy()
    b_D = image_post.B_inv_D_D.diagonal().double().numpy()
    torch.testing.assert_close(post.cov_K_d_d[0].double(), torch.as_tensor(A_inv), rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(post.scale_K.double(), torch.as_tensor(b_D), rtol=1e-5, atol=1e-7)
    phi = pred.embedding_n_d.double().numpy()[sel.keys]
    if learner.model.image_proj.bias_D is not None:
        phi = np.concatenate([phi, np.ones((len(phi), 1))], axis=1)
    gram = phi @ A_inv @ phi.T
    joint = sum(0.5 * np.linalg.slogdet(np.eye(len(phi)) + b * gram)[1] for b in b_D)
    assert sel.utilities.sum() == pytest.approx(joint, rel=1e-4)
    assert joint > 1e-3  # a posterior with something to say (the prior alone would be another number)


def test_finetuned_posterior_tunes_its_prior_around_the_pretrained_projection() -> None:
    """Fine-tuning penalises ||theta - theta_0||^2, so the evidence that tunes the fine-tuned
    posterior's prior precision must read the same distance (not ||theta||^2): the learner's
    lambda equals the evidence optimum at that distance and differs from the 0-centred one."""
    gen = _gen(12)
    vlm, img, prompts, basis, fac = _toy_vlm(gen)
    learner = DualEncoderLearner(vlm, prompts, fac, finetune_steps=150)
    Z = torch.randn(40, 4, generator=gen, dtype=f64)
    X = (Z @ basis[:, 4:8].T).float().numpy()
    learner.fit(X, Z.argmax(1).numpy(), seed=0)
    proj = learner.model.image_proj
    factors = fac + infonce_kfac(PreProjection(torch.as_tensor(X)), proj, vlm.text_proj(prompts).double(), vlm.logit_scale)
    eig_A, eig_B = torch.linalg.eigvalsh(factors.A_q_q), torch.linalg.eigvalsh(factors.B_D_D)
    dist_sq = float(((proj.theta_D_q - vlm.image_proj.theta_D_q) ** 2).sum())
    around_theta0 = tune_kron_prior_precision(eig_A, eig_B, dist_sq, learner.n_pseudo)
    around_zero = tune_kron_prior_precision(eig_A, eig_B, float((proj.theta_D_q**2).sum()), learner.n_pseudo)
    assert learner.model.image_post.prior_precision == pytest.approx(around_theta0, rel=1e-6)
    assert abs(math.log(around_theta0 / around_zero)) > 0.1  # the fix changes the answer here
