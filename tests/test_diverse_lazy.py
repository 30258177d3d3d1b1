"""Lazy greedy (alkit/strategies/diverse.py) picks exactly what the full-update greedy picks.

Both runs are the library's own (``DiverseStrategy(lazy=False)`` is the reference full-update
recursion), on random posteriors of every lazily served path: homoscedastic groups (dense and
Kronecker), per-item noise (batch BALD), and the top-two decision (decision-flip with margins,
decision-bald without), each with exact duplicates and with sign-mirrored rows (exact ties of the
gain, which the lazy path has to settle as the reference does)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from alkit.posterior import decision_parts
from alkit.strategies.diverse import DiverseStrategy, SampledDiverseStrategy
from alkit.types import Candidates, GaussianLastLayer, SelectionContext


def _spd(rng: np.random.Generator, d: int) -> np.ndarray:
    A = rng.normal(size=(d, d))
    return A @ A.T / d + 0.05 * np.eye(d)


def _embedding(rng: np.random.Generator, n: int, d: int, mirror: bool) -> np.ndarray:
    """n rows with clusters (so gains compete), ~10% exact duplicates, optionally mirrored pairs."""
    centres = rng.normal(size=(6, d)) * 2.0
    emb = centres[rng.integers(0, 6, n)] + rng.normal(size=(n, d))
    copies = rng.choice(n, size=n // 10, replace=False)
    emb[copies] = emb[rng.integers(0, n, n // 10)]
    if mirror:  # without a bias feature x and -x have bitwise-equal variances: exact gain ties
        emb[n // 2 : n // 2 + 8] = -emb[:8]
    return emb.astype(np.float32)


def _posterior(rng: np.random.Generator, d: int, K: int, kind: str, bias: bool) -> GaussianLastLayer:
    dd = d + int(bias)
    noise = torch.tensor(rng.uniform(0.05, 1.0, K))
    if kind == "dense":
        return GaussianLastLayer(cov_K_d_d=torch.tensor(np.stack([_spd(rng, dd) for _ in range(K)])),
                                 noise_var_K=noise, bias_feature=bias)
    return GaussianLastLayer(cov_K_d_d=torch.tensor(_spd(rng, dd)[None]), noise_var_K=noise,
                             scale_K=torch.tensor(rng.uniform(0.3, 3.0, K)), bias_feature=bias)


def _case(path: str, seed: int, n: int = 240, d: int = 5, K: int = 4) -> tuple[Candidates, GaussianLastLayer]:
    rng = np.random.default_rng(seed)
    bias = seed % 2 == 1
    emb = _embedding(rng, n, d, mirror=not bias)
    post = _posterior(rng, d, K, "dense" if seed % 3 else "kron", bias)
    cands = Candidates(keys_n=np.arange(5000, 5000 + n), scores_n=rng.random(n), embedding_n_d=emb)
    if path == "homoscedastic":
        return cands, post
    logits = torch.tensor(emb.astype(np.float64) @ rng.normal(size=(d, K)))
    probs = torch.softmax(logits, 1)
    cands.probs_n_C = probs.numpy()
    if path == "heteroscedastic":
        cands.extras["noise_n_K"] = (1.0 / (probs * (1 - probs))).numpy()
        return cands, post
    sign, noise = decision_parts(probs)
    cands.extras.update({"decision_sign_n_K": sign.numpy(), "decision_noise_n": noise.numpy()})
    if path == "decision-flip":
        cands.extras["decision_margin_n"] = (sign * logits).sum(1).clamp_min(0.0).numpy()
    return cands, post


PATHS = ["homoscedastic", "heteroscedastic", "decision-flip", "decision-bald"]


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("seed", range(6))
def test_lazy_greedy_picks_exactly_what_the_full_update_picks(path: str, seed: int) -> None:
    cands, post = _case(path, seed)
    ctx = SelectionContext(seed=0, posterior=post)
    b = 60 if seed < 5 else len(cands)  # the last seed runs to the end: every duplicate is taken
    ref = DiverseStrategy(lazy=False).select(cands, b, ctx)
    lazy = DiverseStrategy(lazy=True).select(cands, b, ctx)
    np.testing.assert_array_equal(lazy.keys, ref.keys)
    np.testing.assert_allclose(lazy.utilities, ref.utilities, rtol=1e-9, atol=1e-14)
    np.testing.assert_array_equal(lazy.scores, ref.scores)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("seed", range(6))
def test_lazy_draws_of_power_diverse_are_the_full_updates_draws(path: str, seed: int) -> None:
    """power-diverse's lazy path (perturbed keys log gain + gumbel) against its full update, the same
    Gumbel noise: the same draws, also to the end of the pool (duplicates, near-zero gains)."""
    cands, post = _case(path, seed)
    b = 60 if seed < 5 else len(cands)
    for draw_seed in (0, 1, 2):
        ctx = SelectionContext(seed=draw_seed, posterior=post)
        ref = SampledDiverseStrategy(lazy=False).select(cands, b, ctx)
        lazy = SampledDiverseStrategy().select(cands, b, ctx)
        np.testing.assert_array_equal(lazy.keys, ref.keys)
        np.testing.assert_allclose(lazy.utilities, ref.utilities, rtol=1e-9, atol=1e-14)


def test_lazy_power_diverse_refreshes_few_candidates() -> None:
    """The point of the lazy draw: far fewer candidates brought up to date than n per pick."""
    from alkit.strategies.diverse import _decision_paths

    cands, post = _case("decision-flip", 2, n=1000)
    make_full, lazy = _decision_paths(cands, np.asarray(cands.embedding_n_d, dtype=np.float64), post)
    from alkit.strategies._common import KeyTiedGumbelRows

    order, _ = lazy.run(100, make_full, KeyTiedGumbelRows(cands.keys_n, 0, 100))
    assert lazy.n_refreshed < 0.5 * 1000 * 100
    ref = SampledDiverseStrategy(lazy=False).select(cands, 100, SelectionContext(seed=0, posterior=post))
    np.testing.assert_array_equal(cands.keys_n[order], ref.keys)


def test_lazy_greedy_without_a_posterior_and_with_a_single_candidate() -> None:
    cands, _ = _case("homoscedastic", 2)
    ref = DiverseStrategy(lazy=False).select(cands, 30, SelectionContext(seed=0))
    lazy = DiverseStrategy().select(cands, 30, SelectionContext(seed=0))
    np.testing.assert_array_equal(lazy.keys, ref.keys)
    one = Candidates(keys_n=np.array([7]), embedding_n_d=np.ones((1, 3), dtype=np.float32))
    assert DiverseStrategy().select(one, 1, SelectionContext(seed=0)).keys.tolist() == [7]


def test_lazy_greedy_is_the_default_and_gains_never_grow() -> None:
    """Lazy greedy is only valid because these gains are monotone: the pick sequence's gains
    must not increase (the decision-flip gain included, up to rounding)."""
    assert DiverseStrategy().lazy
    for path in PATHS:
        cands, post = _case(path, 4)
        sel = DiverseStrategy().select(cands, 80, SelectionContext(seed=0, posterior=post))
        assert np.all(np.diff(sel.utilities) <= 1e-12 * np.abs(sel.utilities[:-1]) + 1e-15)


def test_lazy_greedy_refreshes_few_candidates_and_settles_ties_by_a_full_rescore() -> None:
    """The point of the lazy path (far fewer candidates brought up to date than n per pick), and
    the tie rule in use: the mirrored rows and duplicates of this pool give exact ties."""
    from alkit.strategies.diverse import _homoscedastic_paths

    cands, post = _case("homoscedastic", 0, n=400)
    make_full, lazy = _homoscedastic_paths(np.asarray(cands.embedding_n_d, dtype=np.float64), post)
    order, _ = lazy.run(100, make_full)
    assert lazy.n_refreshed < 0.25 * 400 * 100
    assert lazy.n_rescored >= 1
    ref = DiverseStrategy(lazy=False).select(cands, 100, SelectionContext(seed=0, posterior=post))
    np.testing.assert_array_equal(cands.keys_n[order], ref.keys)


def test_gumbel_rows_are_the_seeded_matrix_row_by_row() -> None:
    """The rows a sampled batch reads one pick at a time are those of the whole (b, n) matrix drawn
    at once and assigned by sorted key (what the runs before recorded), without holding it."""
    from alkit.strategies._common import KeyTiedGumbelRows, key_tied_gumbel

    keys_n = np.random.default_rng(1).permutation(50) * 7
    full_b_n = np.empty((6, 50))
    full_b_n[:, np.argsort(keys_n, kind="stable")] = np.random.default_rng(3).gumbel(size=(6, 50))
    rows = KeyTiedGumbelRows(keys_n, 3, 6)
    for t in (0, 0, 2, 3, 5):  # in order; the current row again; a skipped row
        np.testing.assert_array_equal(rows[t], full_b_n[t])
    np.testing.assert_array_equal(key_tied_gumbel(keys_n, 3), full_b_n[0])
    with pytest.raises(IndexError):
        rows[4]  # behind the current row
    with pytest.raises(IndexError):
        KeyTiedGumbelRows(keys_n, 3, 6)[6]
