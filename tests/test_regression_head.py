"""The VBLL regression head follows the labelled targets: the bucket head (CR-VBLL) where one value
holds a point mass, the Gaussian head on a smooth target, where the buckets (blind to their order)
stay near the marginal at small N."""

from __future__ import annotations

import numpy as np
from conftest import DiabetesSplit
from hypothesis import given, settings
from hypothesis import strategies as st

from alkit import metrics
from alkit.learners.vbll import POINT_MASS_SHARE, VBLLLearner, regression_head_for


def test_point_mass_rule() -> None:
    rng = np.random.default_rng(0)
    assert regression_head_for(rng.normal(size=300)) == "gaussian"
    zero_inflated = np.where(rng.random(300) < 0.25, 0.0, rng.lognormal(size=300))
    assert regression_head_for(zero_inflated) == "buckets"
    assert regression_head_for(np.array([0.0, 0.0] + list(rng.normal(size=18)))) == "buckets"  # 2 of 20
    assert regression_head_for(np.array([0.0] + list(rng.normal(size=19)))) == "gaussian"  # one value once


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60), st.integers(0, 30))
def test_rule_is_the_share_of_the_most_frequent_value(values: list[float], repeats: int) -> None:
    y = np.array(values + [values[0]] * repeats)
    top = int(np.unique(y, return_counts=True)[1].max())
    expected = "buckets" if top >= 2 and top >= POINT_MASS_SHARE * len(y) else "gaussian"
    assert regression_head_for(y) == expected


def test_unset_head_is_chosen_per_fit_and_an_explicit_one_is_kept() -> None:
    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 5)).astype(np.float32)
    smooth = X @ rng.normal(size=5) + 0.1 * rng.normal(size=60)
    spiky = np.where(rng.random(60) < 0.3, 0.0, np.abs(smooth) + 1.0)
    learner = VBLLLearner("regression")
    learner.fit(X, smooth, seed=0)
    assert (learner.head_kind, learner.cov) == ("gaussian", "dense")
    learner.fit(X, spiky, seed=0)
    assert (learner.head_kind, learner.cov) == ("buckets", "shared")
    fixed = VBLLLearner("regression", head="buckets")
    fixed.fit(X, smooth, seed=0)
    assert fixed.head_kind == "buckets"


def test_smooth_target_at_fifty_labels_is_near_a_bayesian_ridge() -> None:
    """sklearn's diabetes (no repeated target among 50 labels): the default VBLL learner's CRPS is
    within 10 % of a Bayesian ridge's on the same labels, where the bucket head is far off."""
    d = DiabetesSplit()
    auto, buckets, ridge = [], [], []
    for seed in range(3):
        idx = d.labels(50, seed)
        for head, out in ((None, auto), ("buckets", buckets)):
            learner = VBLLLearner("regression", head=head, input=d.spec)
            learner.fit(d.X[idx], d.y[idx], seed=seed)
            out.append(metrics.crps(learner.predict(d.X[d.test]).dist, d.y[d.test]))
        ridge.append(d.ridge_crps(idx))
    assert np.mean(auto) <= 1.10 * np.mean(ridge), (auto, ridge)
    assert np.mean(auto) < np.mean(buckets), (auto, buckets)
