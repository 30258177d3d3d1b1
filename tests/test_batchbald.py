"""BatchBALD: exact joint entropy vs brute force, greedy gains, duplicates, the sampled regime."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import torch

from alkit.learners.bald import bald_n
from alkit.strategies.batchbald import BatchBALDStrategy, _JointTable, joint_entropy
from alkit.types import Candidates, SelectionContext

CTX = SelectionContext(seed=0)


def _probs(m: int, K: int, C: int, seed: int = 0, alpha: float = 0.5) -> np.ndarray:
    return np.random.default_rng(seed).dirichlet(np.full(C, alpha), size=(m, K))


def _cands(p_m_K_C: np.ndarray, keys: np.ndarray | None = None, scores: np.ndarray | None = None) -> Candidates:
    keys = np.arange(100, 100 + len(p_m_K_C)) if keys is None else keys
    return Candidates(keys_n=keys, scores_n=scores, extras={"member_probs_n_M_C": p_m_K_C.astype(np.float32)})


def _brute_joint_entropy(p_n_K_C: np.ndarray) -> float:
    n, K, C = p_n_K_C.shape
    h = 0.0
    for ys in itertools.product(range(C), repeat=n):
        q = np.mean(np.prod([p_n_K_C[i, :, y] for i, y in enumerate(ys)], axis=0))
        h -= q * np.log(q) if q > 0 else 0.0
    return h


def _brute_mi(p_n_K_C: np.ndarray) -> float:
    ce = -(p_n_K_C * np.log(p_n_K_C)).sum(-1).mean(-1).sum()
    return _brute_joint_entropy(p_n_K_C) - ce


def test_joint_entropy_matches_brute_force_enumeration() -> None:
    p = _probs(4, 3, 3, seed=1)
    assert joint_entropy(p) == pytest.approx(_brute_joint_entropy(p), rel=1e-12)
    assert joint_entropy(p[:1]) == pytest.approx(_brute_joint_entropy(p[:1]), rel=1e-12)


def test_batch_of_one_is_the_bald_argmax() -> None:
    p = _probs(40, 5, 4, seed=2)
    sel = BatchBALDStrategy().select(_cands(p), 1, CTX)
    bald = bald_n(p).numpy()
    assert sel.keys[0] == 100 + int(np.argmax(bald))
    assert sel.utilities[0] == pytest.approx(bald.max(), rel=1e-6)
    assert sel.scores[0] == pytest.approx(bald.max(), rel=1e-6)  # no scores given: BALD


def test_greedy_gains_match_brute_force_and_sum_to_batch_mutual_information() -> None:
    p = _probs(8, 4, 3, seed=3).astype(np.float32).astype(np.float64)
    p /= p.sum(-1, keepdims=True)  # the strategy renormalises the float32 rows it is given
    sel = BatchBALDStrategy().select(_cands(p), 4, CTX)
    idx = list(sel.keys - 100)
    chosen: list[int] = []
    for step, pick in enumerate(idx):
        gains = [
            _brute_mi(p[chosen + [j]]) - (_brute_mi(p[chosen]) if chosen else 0.0) if j not in chosen else -np.inf
            for j in range(len(p))
        ]
        assert pick == int(np.argmax(gains))
        assert sel.utilities[step] == pytest.approx(gains[pick], abs=1e-9)
        chosen.append(pick)
    assert sel.utilities.sum() == pytest.approx(_brute_mi(p[idx]), abs=1e-9)
    assert np.all(np.diff(sel.utilities) <= 1e-12)  # submodular: gains never grow


def test_avoids_a_duplicate_when_a_similar_non_duplicate_exists() -> None:
    onehot = np.eye(2)
    a = onehot[[0, 0, 1, 1]]  # members split 2/2: BALD = log 2
    b = np.array([[0.97, 0.03], [0.03, 0.97], [0.97, 0.03], [0.03, 0.97]])  # other split, softer
    p = np.stack([a, a, b])
    bald = bald_n(p).numpy()
    assert bald[0] == bald[1] > bald[2] > 0.8 * bald[0]
    sel = BatchBALDStrategy().select(_cands(p, keys=np.array([1, 2, 3])), 2, CTX)
    assert list(sel.keys) == [1, 3]
    assert sel.utilities[1] > 0.5


def test_sampled_regime_tracks_the_exact_conditional_entropy() -> None:
    p = torch.as_tensor(_probs(12, 6, 3, seed=4, alpha=1.0))
    exact = _JointTable(6, max_configs=10**6, num_samples=1, rng=np.random.default_rng(0))
    sampled = _JointTable(6, max_configs=5, num_samples=30_000, rng=np.random.default_rng(0))
    for i in range(5):
        exact.add(p[i])
        sampled.add(p[i])
    assert sampled.sampled and not exact.sampled and exact.P_R_K.shape[0] == 3**5
    h_exact = exact.conditional_entropy_m(p[5:], 1 << 20)
    h_sampled = sampled.conditional_entropy_m(p[5:], 1 << 20)
    np.testing.assert_allclose(h_sampled.numpy(), h_exact.numpy(), atol=0.02)


def test_large_batches_stay_finite_seeded_and_chunk_independent() -> None:
    p = _probs(120, 8, 10, seed=5, alpha=0.3)
    small = BatchBALDStrategy(max_configs=100, num_samples=500)
    a = small.select(_cands(p), 40, SelectionContext(seed=1))
    b = small.select(_cands(p), 40, SelectionContext(seed=1))
    c = BatchBALDStrategy(max_configs=100, num_samples=500, chunk_elems=1000).select(
        _cands(p), 40, SelectionContext(seed=1)
    )
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.keys, c.keys)
    np.testing.assert_allclose(a.utilities, c.utilities, rtol=1e-10, atol=1e-12)
    assert np.isfinite(a.utilities).all() and len(set(a.keys)) == 40
    assert a.utilities.min() > -0.05


def test_passes_scores_through_and_rejects_bad_input() -> None:
    p = _probs(5, 3, 2, seed=6)
    scores = np.linspace(0, 1, 5)
    sel = BatchBALDStrategy().select(_cands(p, scores=scores), 2, CTX)
    np.testing.assert_allclose(sel.scores, scores[sel.keys - 100])
    strat = BatchBALDStrategy()
    assert (strat.name, strat.candidate_source, strat.needs_model) == ("batchbald", "topm", True)
    with pytest.raises(ValueError, match="member_probs_n_M_C"):
        strat.select(Candidates(keys_n=np.arange(5)), 2, CTX)
    with pytest.raises(ValueError, match="shape"):
        strat.select(_cands(p[:, :, :1]), 2, CTX)
    with pytest.raises(ValueError, match="non-negative"):
        strat.select(_cands(-p), 2, CTX)
    with pytest.raises(ValueError):
        strat.select(_cands(p), 0, CTX)
    assert len(strat.select(_cands(p), 50, CTX).keys) == 5


@pytest.mark.parametrize("members", [1, 4])
def test_members_that_agree_gain_nothing_and_ties_go_by_key(members: int) -> None:
    """Where every member predicts the same, each gain is 0 and the batch is the first keys; rounding
    noise of +-1e-16 in the entropy differences had decided the order (a selector audit)."""
    p = np.random.default_rng(0).dirichlet(np.ones(3), size=6)
    P = np.repeat(p[:, None, :], members, axis=1)
    s = BatchBALDStrategy().select(Candidates(keys_n=np.arange(15, 9, -1), extras={"member_probs_n_M_C": P}), 4,
                                   SelectionContext(seed=0))
    assert s.keys.tolist() == [10, 11, 12, 13]
    assert np.all(s.utilities == 0.0)
