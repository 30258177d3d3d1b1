"""TopM: exactness against a full sort, bounded memory, determinism, errors."""

from __future__ import annotations

import numpy as np
import pytest

from alkit.engines.streaming import TopM


def _stream(acc, keys_n, scores_n, chunk, **arrays):
    for lo in range(0, keys_n.shape[0], chunk):
        sl = slice(lo, lo + chunk)
        acc.push(keys_n[sl], None if scores_n is None else scores_n[sl],
                 **{k: v[sl] for k, v in arrays.items()})
    return acc.result()


@pytest.mark.parametrize("m", [1, 7, 50, 400])
@pytest.mark.parametrize("chunk", [1, 13, 100, 1000])
@pytest.mark.parametrize("ties", [False, True])
def test_topm_equals_full_sort(m: int, chunk: int, ties: bool) -> None:
    rng = np.random.default_rng(m * 31 + chunk)
    n = 300
    keys_n = rng.permutation(10 * n)[:n]
    scores_n = rng.integers(0, 4, n).astype(np.float32) if ties else rng.normal(size=n)
    emb_n_d = rng.normal(size=(n, 3)).astype(np.float32)
    probs_n_C = rng.dirichlet(np.ones(4), n)
    res = _stream(TopM(m), keys_n, scores_n, chunk, embedding_n_d=emb_n_d, probs_n_C=probs_n_C,
                  aleatoric_n=scores_n * 2)
    order = np.lexsort((keys_n, -scores_n))[:m]
    assert np.array_equal(res.keys_n, keys_n[order])
    assert np.array_equal(res.scores_n, scores_n[order])
    assert np.array_equal(res.embedding_n_d, emb_n_d[order])
    assert np.array_equal(res.probs_n_C, probs_n_C[order])
    assert np.array_equal(res.extras["aleatoric_n"], scores_n[order] * 2)
    assert res.strata_n is None


def test_topm_memory_is_bounded_and_buffers_are_not_aliased() -> None:
    acc = TopM(5)
    buf_keys, buf_scores = np.empty(20, dtype=np.int64), np.empty(20)
    rng = np.random.default_rng(0)
    all_k, all_s = [], []
    for c in range(10):
        buf_keys[:] = np.arange(c * 20, c * 20 + 20)
        buf_scores[:] = rng.normal(size=20)
        all_k.append(buf_keys.copy())
        all_s.append(buf_scores.copy())
        acc.push(buf_keys, buf_scores)  # the caller reuses the buffer for the next chunk
        assert acc._keep.keys_n.shape[0] <= 5
    k, s = np.concatenate(all_k), np.concatenate(all_s)
    assert np.array_equal(acc.result().keys_n, k[np.argsort(-s)[:5]])
    assert acc.n_seen == 200


def test_topm_rejects_nan_and_inconsistent_chunks() -> None:
    acc = TopM(3)
    with pytest.raises(ValueError, match=r"scores contain 1 NaN value \(1 of 3"):
        acc.push(np.arange(3), np.array([0.1, np.nan, 0.2]))
    for bad in (np.inf, -np.inf):  # an overflowed score: ranked first by top-k, skipped by the greedy batches
        with pytest.raises(ValueError, match=r"scores contain 1 infinite value \(1 of 3"):
            acc.push(np.arange(3), np.array([0.1, bad, 0.2]))
    acc.push(np.arange(3), np.zeros(3), embedding_n_d=np.zeros((3, 2)))
    with pytest.raises(ValueError, match="same arrays"):
        acc.push(np.arange(3, 6), np.zeros(3))
    with pytest.raises(ValueError, match="rows"):
        acc.push(np.arange(3), np.zeros(3), embedding_n_d=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="m must be at least 1, got 0"):
        TopM(0)
    assert len(TopM(4).result()) == 0


def test_topm_carries_absent_arrays_as_none() -> None:
    """The cycle passes probs_n_C=None for regression; it must stay None, not break the merge."""
    acc = TopM(3)
    for c in range(3):
        acc.push(np.arange(c * 4, c * 4 + 4), np.arange(4.0) + c, embedding_n_d=np.zeros((4, 2)),
                 probs_n_C=None, aleatoric_n=np.ones(4))
    res = acc.result()
    assert res.keys_n.tolist() == [11, 7, 10] and res.probs_n_C is None
    assert res.embedding_n_d.shape == (3, 2) and list(res.extras) == ["aleatoric_n"]
