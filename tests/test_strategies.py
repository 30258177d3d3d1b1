"""Selection strategies: each checked against a direct or brute-force computation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from alkit.strategies import SELECTORS, get_selector
from alkit.strategies.badge import BadgeStrategy
from alkit.strategies.coldstart import ColdStartStrategy, allocate, n_strata
from alkit.strategies.diverse import DiverseStrategy
from alkit.strategies.kcenter import KCenterStrategy, min_sq_dist_n
from alkit.strategies.topk import TopKStrategy
from alkit.types import Candidates, GaussianLastLayer, SelectionContext


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    A = rng.normal(size=(d, d))
    return A @ A.T / d + 0.05 * np.eye(d)


def _pool(n: int = 40, d: int = 4, C: int = 3, seed: int = 0) -> Candidates:
    rng = np.random.default_rng(seed)
    return Candidates(
        keys_n=np.arange(1000, 1000 + n),
        scores_n=rng.random(n),
        embedding_n_d=rng.normal(size=(n, d)).astype(np.float32),
        probs_n_C=rng.dirichlet(np.ones(C), n),
    )


# ---------------------------------------------------------------- diverse

def _posterior(kind: str, d: int, bias: bool, rng: np.random.Generator) -> GaussianLastLayer | None:
    dd = d + int(bias)
    K = 3
    if kind == "none":
        return None
    noise = torch.tensor(rng.uniform(0.05, 1.0, K))
    if kind == "dense":
        cov = torch.tensor(np.stack([_spd(rng, dd) for _ in range(K)]))
        return GaussianLastLayer(cov_K_d_d=cov, noise_var_K=noise, bias_feature=bias)
    cov = torch.tensor(_spd(rng, dd)[None])
    scale = torch.tensor(rng.uniform(0.3, 3.0, K))
    return GaussianLastLayer(cov_K_d_d=cov, noise_var_K=noise, scale_K=scale, bias_feature=bias)


def _direct_mi(phi_b_d: np.ndarray, post: GaussianLastLayer | None) -> float:
    """sum_k 1/2 logdet(I + Phi_B S_k Phi_B^T / sigma_k^2), straight from the definition."""
    if post is None:
        return 0.5 * np.linalg.slogdet(np.eye(len(phi_b_d)) + phi_b_d @ phi_b_d.T)[1]
    if post.bias_feature:
        phi_b_d = np.concatenate([phi_b_d, np.ones((len(phi_b_d), 1))], axis=1)
    cov = post.cov_K_d_d.numpy()
    noise = post.noise_var_K.numpy()
    total = 0.0
    for k in range(len(noise)):
        S = cov[k] if cov.shape[0] > 1 else cov[0] * (1.0 if post.scale_K is None else float(post.scale_K[k]))
        M = np.eye(len(phi_b_d)) + phi_b_d @ S @ phi_b_d.T / noise[k]
        total += 0.5 * np.linalg.slogdet(M)[1]
    return total


@pytest.mark.parametrize("kind", ["dense", "kron", "none"])
@pytest.mark.parametrize("bias", [False, True])
def test_diverse_gains_sum_to_logdet_and_are_greedy(kind: str, bias: bool) -> None:
    rng = np.random.default_rng(7)
    cands = _pool(n=30, d=4)
    post = _posterior(kind, 4, bias, rng)
    sel = DiverseStrategy().select(cands, 8, SelectionContext(seed=0, posterior=post))
    emb = cands.embedding_n_d.astype(np.float64)
    idx = sel.keys - 1000
    assert sel.utilities.sum() == pytest.approx(_direct_mi(emb[idx], post), rel=1e-9, abs=1e-9)
    # each pick is the argmax of the exact marginal gain (brute force over the pool)
    for t in range(len(idx)):
        base = _direct_mi(emb[idx[:t]], post) if t else 0.0
        rest = [i for i in range(len(emb)) if i not in idx[:t]]
        gains = [_direct_mi(emb[np.r_[idx[:t], i]], post) - base for i in rest]
        assert sel.utilities[t] == pytest.approx(max(gains), rel=1e-8, abs=1e-10)
        assert rest[int(np.argmax(gains))] == idx[t]
    assert np.array_equal(sel.scores, cands.scores_n[idx])


def test_diverse_skips_exact_duplicates_that_topk_takes() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(size=(12, 3))
    emb = np.repeat(base, 3, axis=0).astype(np.float32)  # every item three times
    scores = np.repeat(rng.random(12), 3)
    cands = Candidates(keys_n=np.arange(36), scores_n=scores, embedding_n_d=emb)
    post = GaussianLastLayer(cov_K_d_d=torch.eye(4)[None] * 5.0, noise_var_K=torch.tensor([0.01]),
                             bias_feature=True)
    ctx = SelectionContext(seed=0, posterior=post)
    top = TopKStrategy().select(cands, 9, ctx)
    assert len(np.unique(emb[top.keys], axis=0)) < 9  # topk takes the copies
    for ctx_ in (ctx, SelectionContext(seed=0)):
        sel = DiverseStrategy().select(cands, 9, ctx_)
        assert len(np.unique(emb[sel.keys], axis=0)) == 9
    # past the distinct items the copies come last, and the gains still add up exactly
    sel = DiverseStrategy().select(cands, 15, ctx)
    assert len(np.unique(emb[sel.keys[:12]], axis=0)) == 12
    assert sel.utilities.sum() == pytest.approx(_direct_mi(emb[sel.keys].astype(np.float64), post),
                                                rel=1e-9)


def test_diverse_rejects_bad_posterior() -> None:
    cands = _pool(n=5, d=4)
    bad = GaussianLastLayer(cov_K_d_d=torch.eye(3)[None], noise_var_K=torch.ones(1))
    with pytest.raises(ValueError, match="cov_K_d_d"):
        DiverseStrategy().select(cands, 2, SelectionContext(seed=0, posterior=bad))
    bad = GaussianLastLayer(cov_K_d_d=torch.eye(4)[None], noise_var_K=torch.zeros(1))
    with pytest.raises(ValueError, match="noise_var_K"):
        DiverseStrategy().select(cands, 2, SelectionContext(seed=0, posterior=bad))
    with pytest.raises(ValueError, match="embedding_n_d"):
        DiverseStrategy().select(Candidates(keys_n=np.arange(3)), 2, SelectionContext(seed=0))



def test_power_diverse_draws_each_pick_in_proportion_to_its_conditioned_gain() -> None:
    """power-diverse: a single pick has P(item i) = g_i / sum g (g = its batch-information gain,
    checked over 10,000 seeds); any drawn batch's utilities are its exact conditioned gains (they add
    up to the batch log-determinant); exact duplicates of a pick wait; the draw belongs to the keys."""
    from alkit.strategies import SampledDiverseStrategy

    rng = np.random.default_rng(3)
    cands = _pool(n=5, d=3)
    post = _posterior("kron", 3, True, rng)
    emb = cands.embedding_n_d.astype(np.float64)
    gain = np.array([_direct_mi(emb[[i]], post) for i in range(5)])
    picks = np.array([SampledDiverseStrategy().select(cands, 1, SelectionContext(seed=s, posterior=post)).keys[0]
                      for s in range(10_000)])
    np.testing.assert_allclose([(picks == k).mean() for k in cands.keys_n], gain / gain.sum(), atol=0.015)

    big = _pool(n=30, d=4)
    post4 = _posterior("dense", 4, False, np.random.default_rng(9))
    for seed in range(3):
        sel = SampledDiverseStrategy().select(big, 8, SelectionContext(seed=seed, posterior=post4))
        idx = sel.keys - 1000
        assert sel.utilities.sum() == pytest.approx(_direct_mi(big.embedding_n_d.astype(np.float64)[idx], post4), rel=1e-9)
    draws = {tuple(SampledDiverseStrategy().select(big, 8, SelectionContext(seed=s, posterior=post4)).keys) for s in range(5)}
    assert len(draws) > 1  # a draw, not the greedy batch every time
    rev = Candidates(keys_n=big.keys_n[::-1].copy(), scores_n=big.scores_n[::-1].copy(),
                     embedding_n_d=big.embedding_n_d[::-1].copy(), probs_n_C=big.probs_n_C[::-1].copy())
    assert sorted(SampledDiverseStrategy().select(big, 8, SelectionContext(seed=4, posterior=post4)).keys) == \
        sorted(SampledDiverseStrategy().select(rev, 8, SelectionContext(seed=4, posterior=post4)).keys)

    base = np.random.default_rng(1).normal(size=(6, 3))
    dup = Candidates(keys_n=np.arange(18), scores_n=np.ones(18), embedding_n_d=np.repeat(base, 3, axis=0).astype(np.float32))
    for seed in range(10):
        sel = SampledDiverseStrategy().select(dup, 6, SelectionContext(seed=seed, posterior=post))
        assert len(np.unique(dup.embedding_n_d[sel.keys], axis=0)) == 6


# ---------------------------------------------------------------- kcenter

def _brute_kcenter(emb: np.ndarray, lab: np.ndarray | None, b: int) -> tuple[list[int], list[float]]:
    picks: list[int] = []
    utils: list[float] = []
    for _ in range(b):
        best, best_d = -1, -1.0
        for i in range(len(emb)):
            if i in picks:
                continue
            centres = [emb[j] for j in picks] + ([] if lab is None else list(lab))
            d = min(np.linalg.norm(emb[i] - c) for c in centres) if centres else np.linalg.norm(emb[i])
            if d > best_d:
                best, best_d = i, d
        picks.append(best)
        utils.append(best_d)
    return picks, utils


@pytest.mark.parametrize("n_lab", [0, 1, 7])
def test_kcenter_matches_brute_force(n_lab: int) -> None:
    rng = np.random.default_rng(n_lab)
    cands = _pool(n=25, d=3, seed=n_lab)
    emb = cands.embedding_n_d.astype(np.float64)
    lab = rng.normal(size=(n_lab, 3)) if n_lab else None
    sel = KCenterStrategy().select(cands, 6, SelectionContext(seed=0, labeled_embedding_n_d=lab))
    picks, utils = _brute_kcenter(emb, lab, 6)
    assert (sel.keys - 1000).tolist() == picks
    np.testing.assert_allclose(sel.utilities, utils, rtol=1e-9)


def test_kcenter_chunked_distances_equal_full() -> None:
    rng = np.random.default_rng(0)
    x, ref = rng.normal(size=(50, 5)), rng.normal(size=(9, 5))
    full = ((x[:, None, :] - ref[None]) ** 2).sum(-1).min(1)
    np.testing.assert_allclose(min_sq_dist_n(x, ref, cells=20), full, rtol=1e-9, atol=1e-12)
    pool = _pool(n=6)
    empty = KCenterStrategy().select(pool, 3, SelectionContext(seed=0, labeled_embedding_n_d=np.zeros((0, 4))))
    picks, utils = _brute_kcenter(pool.embedding_n_d.astype(np.float64), None, 3)  # an empty labeled set is none
    assert (empty.keys - 1000).tolist() == picks
    np.testing.assert_allclose(empty.utilities, utils, rtol=1e-6)


# ---------------------------------------------------------------- badge

def _explicit_g(cands: Candidates) -> np.ndarray:
    h = cands.embedding_n_d.astype(np.float64)
    if cands.probs_n_C is None:
        return cands.scores_n[:, None] * h
    p = cands.probs_n_C
    a = np.eye(p.shape[1])[p.argmax(1)] - p
    return np.einsum("nc,nd->ncd", a, h).reshape(len(h), -1)  # the C*d vector, built for the test


@pytest.mark.parametrize("regression", [False, True])
def test_badge_implicit_distances_equal_explicit(regression: bool) -> None:
    cands = _pool(n=20, d=3, C=4, seed=2)
    if regression:
        cands.probs_n_C = None
    g = _explicit_g(cands)
    sel = BadgeStrategy().select(cands, 7, SelectionContext(seed=5))
    idx = sel.keys - 1000
    assert idx[0] == int(np.argmax((g ** 2).sum(1)))
    assert sel.utilities[0] == pytest.approx((g[idx[0]] ** 2).sum())
    for t in range(1, len(idx)):
        d2 = min(((g[idx[t]] - g[j]) ** 2).sum() for j in idx[:t])
        assert sel.utilities[t] == pytest.approx(d2, rel=1e-9, abs=1e-12)


def test_badge_second_pick_follows_d2() -> None:
    """Second pick frequencies over seeds match D^2 / sum D^2 from the first pick (chi-square)."""
    cands = _pool(n=6, d=2, C=3, seed=4)
    g = _explicit_g(cands)
    first = int(np.argmax((g ** 2).sum(1)))
    d2 = ((g - g[first]) ** 2).sum(1)
    p = d2 / d2.sum()
    trials = 1500
    counts = np.zeros(6)
    for seed in range(trials):
        counts[BadgeStrategy().select(cands, 2, SelectionContext(seed=seed)).keys[1] - 1000] += 1
    assert counts[first] == 0
    mask = p > 0
    chi2 = (((counts - trials * p) ** 2)[mask] / (trials * p[mask])).sum()
    assert chi2 < 25, (counts, trials * p)  # 4 dof: 25 is far in the tail


def test_badge_exhausted_distinct_items_falls_back_to_uniform() -> None:
    cands = Candidates(keys_n=np.arange(4), scores_n=np.ones(4),
                       embedding_n_d=np.ones((4, 2), dtype=np.float32))
    sel = BadgeStrategy().select(cands, 4, SelectionContext(seed=0))
    assert sorted(sel.keys.tolist()) == [0, 1, 2, 3]
    assert np.all(sel.utilities[1:] == 0)
    # the fallback is uniform: the second of 2 picks from 4 identical items is each of the other 3 about
    # equally often (the first is argmax, the lowest key on ties); a rule taking the first remaining fails
    seconds = [int(BadgeStrategy().select(cands, 2, SelectionContext(seed=s)).keys[1]) for s in range(600)]
    counts = np.bincount(seconds, minlength=4)
    assert counts[0] == 0 and counts[1:].min() > 150, counts  # 200 expected each; P(any < 150) ~ 1e-4


# ---------------------------------------------------------------- coldstart

def test_allocate_properties() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        k = int(rng.integers(1, 12))
        sizes = rng.integers(0, 40, k)
        sizes[rng.integers(0, k)] += 1  # at least one item
        b = int(rng.integers(0, sizes.sum() + 5))
        alloc = allocate(sizes, b)
        bb = min(b, int(sizes.sum()))
        assert alloc.sum() == bb
        assert np.all(alloc >= 0) and np.all(alloc <= sizes)
        assert np.all(alloc[sizes == 0] == 0)
        nonempty = int((sizes > 0).sum())
        if bb >= nonempty:
            assert np.all(alloc[sizes > 0] >= 1)
        quota = bb * sizes / sizes.sum()
        if bb < nonempty or np.all(quota[sizes > 0] >= 1):
            assert np.all(np.abs(alloc - quota) < 1), (sizes, b, alloc)


def test_allocate_examples() -> None:
    assert allocate(np.array([50, 30, 20]), 10).tolist() == [5, 3, 2]
    assert allocate(np.array([5, 3, 2]), 7).tolist() == [4, 2, 1]  # 3.5, 2.1, 1.4
    assert allocate(np.array([1000, 1, 1, 1]), 4).tolist() == [1, 1, 1, 1]
    assert allocate(np.array([1000, 1, 1, 1]), 3).tolist() == [3, 0, 0, 0]
    assert allocate(np.array([2, 2]), 9).tolist() == [2, 2]
    assert n_strata(100, 10_000) == 50 and n_strata(100, 50) == 10 and n_strata(3, 500) == 3


def test_coldstart_metadata_strata_follow_allocation() -> None:
    rng = np.random.default_rng(0)
    strata = np.repeat([7, 3, 9, 1], [60, 25, 10, 5])
    rng.shuffle(strata)
    cands = Candidates(keys_n=np.arange(100), strata_n=strata)
    sel = ColdStartStrategy().select(cands, 20, SelectionContext(seed=3))
    got = np.array([(strata[sel.keys] == c).sum() for c in (1, 3, 7, 9)])
    assert got.tolist() == allocate(np.array([5, 25, 60, 10]), 20).tolist()
    assert set(strata[sel.keys[:4]].tolist()) == {1, 3, 7, 9}  # round-robin prefix spans strata


def test_coldstart_with_more_strata_than_picks_draws_which_strata() -> None:
    """A --stratify-by column with one value per row: every remainder ties, and lower index took the
    batch, so the first rows (in sorted value order) were picked cycle after cycle.  The strata that
    get a pick are now a seeded draw: every item about equally often over seeds, not the first ten."""
    n, b = 200, 10
    cands = Candidates(keys_n=np.arange(n), strata_n=np.array([f"t{i:03d}" for i in range(n)]))
    counts = np.zeros(n)
    for seed in range(200):
        sel = ColdStartStrategy().select(cands, b, SelectionContext(seed=seed))
        assert len(set(sel.keys.tolist())) == b
        counts[sel.keys] += 1
    assert counts[:b].sum() < 3 * b * 200 * b / n  # the first ten rows: about their share, not every pick
    assert (counts > 0).mean() > 0.95  # nearly every row drawn at least once in 200 seeds (expected 10 each)
    # deterministic per seed
    a = ColdStartStrategy().select(cands, b, SelectionContext(seed=5)).keys
    assert a.tolist() == ColdStartStrategy().select(cands, b, SelectionContext(seed=5)).keys.tolist()


def test_coldstart_kmeans_covers_every_blob() -> None:
    rng = np.random.default_rng(0)
    centres = np.eye(6) * 10
    sizes = [80, 40, 20, 10, 6, 4]
    emb = np.concatenate([c + rng.normal(size=(s, 6)) for c, s in zip(centres, sizes)])
    blob = np.repeat(np.arange(6), sizes)
    cands = Candidates(keys_n=np.arange(len(emb)), embedding_n_d=emb.astype(np.float32))
    sel = ColdStartStrategy().select(cands, 6, SelectionContext(seed=1))
    assert sorted(blob[sel.keys].tolist()) == [0, 1, 2, 3, 4, 5]
    # raw features in extras are the fallback when there is no embedding
    cands2 = Candidates(keys_n=np.arange(len(emb)), extras={"features": emb})
    sel2 = ColdStartStrategy().select(cands2, 6, SelectionContext(seed=1))
    assert sorted(blob[sel2.keys].tolist()) == [0, 1, 2, 3, 4, 5]


# ---------------------------------------------------------------- shared contract

def test_registry() -> None:
    assert set(SELECTORS) == {"random", "topk", "diverse", "power-diverse", "power", "power-sqrt", "kcenter", "badge",
                              "coldstart", "batchbald"}
    for name, cls in SELECTORS.items():
        s = get_selector(name)
        assert isinstance(s, cls) and s.name == name
        assert s.candidate_source in ("all", "topm", "pool", "sample")
        assert isinstance(s.needs_model, bool)
    with pytest.raises(ValueError, match="badge, batchbald, coldstart, diverse, kcenter, power, power-diverse, power-sqrt, random, topk"):
        get_selector("bald")


def test_topk_order_ties_and_errors() -> None:
    cands = Candidates(keys_n=np.array([5, 3, 9, 1]), scores_n=np.array([0.2, 0.9, 0.9, 0.1]))
    sel = TopKStrategy().select(cands, 3, SelectionContext(seed=0))
    assert sel.keys.tolist() == [3, 9, 5]
    np.testing.assert_array_equal(sel.utilities, [0.9, 0.9, 0.2])
    with pytest.raises(ValueError, match="NaN"):
        TopKStrategy().select(Candidates(keys_n=np.arange(2), scores_n=np.array([np.nan, 1.0])), 1,
                              SelectionContext(seed=0))
    with pytest.raises(ValueError, match="batch size"):
        TopKStrategy().select(cands, 0, SelectionContext(seed=0))


@pytest.mark.parametrize("name", sorted(SELECTORS))
def test_deterministic_for_seed_and_seed_dependent_where_random(name: str) -> None:
    cands = _pool(n=60, d=4)
    cands.extras["member_probs_n_M_C"] = np.random.default_rng(7).dirichlet(np.ones(3), size=(60, 5))
    strat = get_selector(name)
    post = GaussianLastLayer(cov_K_d_d=torch.eye(4)[None], noise_var_K=torch.tensor([0.5]))
    run = lambda seed: strat.select(cands, 12, SelectionContext(seed=seed, posterior=post))  # noqa: E731
    a, b = run(0), run(0)
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.utilities, b.utilities)
    assert len(a.keys) == 12 and len(np.unique(a.keys)) == 12
    others = [run(s).keys for s in (1, 2, 3)]
    if name in ("random", "badge", "coldstart", "batchbald", "power", "power-sqrt", "power-diverse"):  # batchbald samples joint configurations here
        assert any(not np.array_equal(a.keys, o) for o in others)
    else:
        assert all(np.array_equal(a.keys, o) for o in others)
    big = strat.select(cands, 500, SelectionContext(seed=0, posterior=post))
    assert sorted(big.keys.tolist()) == cands.keys_n.tolist()  # a batch larger than the pool


def test_power_draws_in_proportion_to_the_score() -> None:
    """One pick: P(item i) = s_i / sum s (Gumbel-max is exact sampling), checked over 20,000 seeds;
    a batch is sampling without replacement (a zero score only once every positive one is gone)."""
    from alkit.strategies import PowerStrategy

    scores = np.array([4.0, 2.0, 1.0, 1.0, 0.0])
    cands = Candidates(keys_n=np.array([10, 11, 12, 13, 14]), scores_n=scores)
    picks = np.array([PowerStrategy().select(cands, 1, SelectionContext(seed=s)).keys[0] for s in range(20_000)])
    freq = np.array([(picks == k).mean() for k in cands.keys_n])
    np.testing.assert_allclose(freq, scores / scores.sum(), atol=0.012)  # ~3.5 binomial std at p = 0.5
    four = PowerStrategy().select(cands, 4, SelectionContext(seed=3))
    assert sorted(four.keys.tolist()) == [10, 11, 12, 13]
    shuffled = Candidates(keys_n=cands.keys_n[::-1].copy(), scores_n=scores[::-1].copy())
    for seed in range(5):  # the draw belongs to the items, not to the order the engine listed them in
        assert PowerStrategy().select(cands, 2, SelectionContext(seed=seed)).keys.tolist() == \
            PowerStrategy().select(shuffled, 2, SelectionContext(seed=seed)).keys.tolist()

    # a signed score (margin: p_(2) - p_(1) <= 0) is drawn by rank: P(rank r) = r^-1 / sum_r r^-1
    margin = np.array([-0.9, -0.05, -0.5, -0.2])  # ranks 4, 1, 3, 2
    signed = Candidates(keys_n=np.array([20, 21, 22, 23]), scores_n=margin)
    picks = np.array([PowerStrategy().select(signed, 1, SelectionContext(seed=s)).keys[0] for s in range(20_000)])
    inv = 1.0 / np.array([4, 1, 3, 2])
    np.testing.assert_allclose([(picks == k).mean() for k in signed.keys_n], inv / inv.sum(), atol=0.012)


def test_power_sqrt_draws_in_proportion_to_the_root_of_the_score() -> None:
    """power-sqrt: one pick has P(item i) = sqrt(s_i) / sum sqrt(s), over 20,000 seeds."""
    from alkit.strategies import SqrtPowerStrategy

    scores = np.array([9.0, 4.0, 1.0, 0.0])
    cands = Candidates(keys_n=np.array([3, 4, 5, 6]), scores_n=scores)
    picks = np.array([SqrtPowerStrategy().select(cands, 1, SelectionContext(seed=s)).keys[0] for s in range(20_000)])
    freq = np.array([(picks == k).mean() for k in cands.keys_n])
    np.testing.assert_allclose(freq, [0.5, 1 / 3, 1 / 6, 0.0], atol=0.012)


@pytest.mark.parametrize("field", ["embedding", "probs", "labelled"])
def test_badge_and_kcenter_refuse_nan_rows_rather_than_pick_them_first(field: str) -> None:
    """A NaN embedding or probability row was picked first (argmax of NaN) and made every later
    BADGE draw uniform (a selector audit); a NaN labelled embedding made every k-center distance NaN."""
    c = _pool(20)
    if field == "embedding":
        c.embedding_n_d[7, 1] = np.nan
    elif field == "probs":
        c.probs_n_C[7] = np.nan
    lab = np.random.default_rng(1).normal(size=(3, 4))
    if field == "labelled":
        lab[1, 0] = np.inf
    selectors = [KCenterStrategy()] if field == "labelled" else [BadgeStrategy(), KCenterStrategy()]
    if field == "probs":
        selectors = [BadgeStrategy()]
    for selector in selectors:
        with pytest.raises(ValueError, match=r"NaN or inf|not a distribution") as err:
            selector.select(c, 3, SelectionContext(seed=0, labeled_embedding_n_d=lab))
        assert "1007" in str(err.value) or field == "labelled", str(err.value)
    # the same pool without the bad row is served
    ok = _pool(20)
    assert len(BadgeStrategy().select(ok, 3, SelectionContext(seed=0)).keys) == 3


def test_random_picks_every_candidate_with_the_same_chance() -> None:
    """Inclusion frequencies of 2 picks from 6 candidates over 1,200 seeds: each 1/3 (400 expected;
    a selector that favoured low keys or the listed order would be far off)."""
    cands = Candidates(keys_n=np.array([50, 10, 40, 20, 60, 30]))
    counts = dict.fromkeys(cands.keys_n.tolist(), 0)
    for s in range(1200):
        for k in get_selector("random").select(cands, 2, SelectionContext(seed=s)).keys.tolist():
            counts[k] += 1
    assert all(330 < c < 470 for c in counts.values()), counts  # ~4.3 std either side
