"""Evaluation metrics logged per cycle, and the learning-curve summaries built from them.

Pure functions: numpy arrays or torch tensors in, python floats (or dicts of floats) out.
All arithmetic is float64, whatever the input dtype, so means of logs over large test sets
do not lose precision.

Regression follows the seed paper's protocol (10-bucket NLL and ECE so that continuous
Gaussian/quantile heads and discrete bucket heads are compared on the same footing, plus CRPS
from the full CDF and MAE from the predicted mean).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import torch

from alkit.types import PredictiveDistribution

ArrayLike = np.ndarray | torch.Tensor | Sequence[float]

PROB_FLOOR = 1e-12
_LOG_2PI = float(np.log(2 * np.pi))


def _f64(x: ArrayLike) -> np.ndarray:
    """Any array-like as a float64 numpy array (torch tensors are detached and moved to CPU)."""
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().to(torch.float64).numpy()
    return np.asarray(x, dtype=np.float64)


def _labels(y: ArrayLike) -> np.ndarray:
    """Class labels as an int64 numpy array."""
    if isinstance(y, torch.Tensor):
        return y.detach().cpu().to(torch.int64).numpy()
    return np.asarray(y).astype(np.int64)


def _check_probs(probs_n_C: np.ndarray, y_n: np.ndarray) -> None:
    if probs_n_C.ndim != 2 or y_n.ndim != 1 or probs_n_C.shape[0] != y_n.shape[0]:
        raise ValueError(
            f"expected probs (n, C) and labels (n,), got {probs_n_C.shape} and {y_n.shape}"
        )
    if y_n.shape[0] == 0:
        raise ValueError("metrics need at least one item")
    if y_n.min() < 0 or y_n.max() >= probs_n_C.shape[1]:
        raise ValueError(f"labels must lie in [0, {probs_n_C.shape[1]})")


def _check_same_length(*arrays: np.ndarray) -> None:
    n = arrays[0].shape[0]
    if any(a.ndim != 1 or a.shape[0] != n for a in arrays):
        raise ValueError(f"expected 1-d arrays of one length, got {[a.shape for a in arrays]}")
    if n == 0:
        raise ValueError("metrics need at least one item")


# --------------------------------------------------------------------------- classification


def accuracy(probs_n_C: ArrayLike, y_n: ArrayLike) -> float:
    """Fraction of items whose most probable class is the label."""
    p, y = _f64(probs_n_C), _labels(y_n)
    _check_probs(p, y)
    return float(np.mean(p.argmax(axis=1) == y))


def nll(probs_n_C: ArrayLike, y_n: ArrayLike) -> float:
    """Mean negative log probability of the label; probabilities are floored at 1e-12 so one
    confidently wrong item costs ~27.6 nats instead of infinity."""
    p, y = _f64(probs_n_C), _labels(y_n)
    _check_probs(p, y)
    p_y = np.clip(p[np.arange(len(y)), y], PROB_FLOOR, None)
    return float(-np.mean(np.log(p_y)))


def _binned_ece(conf_n: np.ndarray, correct_n: np.ndarray, n_bins: int) -> float:
    """sum_b |B_b|/n * |acc(B_b) - conf(B_b)| over equal-width confidence bins
    (k/n_bins, (k+1)/n_bins]; a confidence of exactly 0 goes into the first bin."""
    if n_bins < 1:
        raise ValueError("n_bins must be >= 1")
    bin_n = np.clip(np.ceil(conf_n * n_bins).astype(np.int64) - 1, 0, n_bins - 1)
    count_b = np.bincount(bin_n, minlength=n_bins).astype(np.float64)
    conf_sum_b = np.bincount(bin_n, weights=conf_n, minlength=n_bins)
    correct_sum_b = np.bincount(bin_n, weights=correct_n.astype(np.float64), minlength=n_bins)
    return float(np.sum(np.abs(correct_sum_b - conf_sum_b)) / conf_n.shape[0])


def ece(probs_n_C: ArrayLike, y_n: ArrayLike, n_bins: int = 15) -> float:
    """Top-label expected calibration error with equal-width confidence bins.

    Confidence is max_c p_c, "correct" is argmax == label; ECE = sum over bins of the bin's
    share of items times |accuracy - mean confidence| in the bin (Guo et al. 2017).
    """
    p, y = _f64(probs_n_C), _labels(y_n)
    _check_probs(p, y)
    return _binned_ece(p.max(axis=1), p.argmax(axis=1) == y, n_bins)


def balanced_accuracy(probs_n_C: ArrayLike, y_n: ArrayLike) -> float:
    """Mean over the classes present in ``y_n`` of the share of their items predicted right.

    Why: on an imbalanced test split accuracy rewards predicting the majority class (94 % of a
    split with 6 % positives); balanced accuracy gives every class the same weight (sklearn's
    ``balanced_accuracy_score``, whose classes are those of the labels)."""
    from sklearn.metrics import balanced_accuracy_score

    p, y = _f64(probs_n_C), _labels(y_n)
    _check_probs(p, y)
    with warnings.catch_warnings():  # a predicted class absent from y_n is not an error here
        warnings.simplefilter("ignore")
        return float(balanced_accuracy_score(y, p.argmax(axis=1)))


def macro_f1(probs_n_C: ArrayLike, y_n: ArrayLike) -> float:
    """Unweighted mean F1 over the classes present in ``y_n`` (a class never predicted scores 0)."""
    from sklearn.metrics import f1_score

    p, y = _f64(probs_n_C), _labels(y_n)
    _check_probs(p, y)
    return float(f1_score(y, p.argmax(axis=1), labels=np.unique(y), average="macro", zero_division=0))


def classification_metrics(probs_n_C: ArrayLike, y_n: ArrayLike) -> dict[str, float]:
    """The per-cycle classification record: accuracy, balanced accuracy, macro F1, nll, ece (15 bins)."""
    return {
        "accuracy": accuracy(probs_n_C, y_n),
        "balanced_accuracy": balanced_accuracy(probs_n_C, y_n),
        "macro_f1": macro_f1(probs_n_C, y_n),
        "nll": nll(probs_n_C, y_n),
        "ece": ece(probs_n_C, y_n),
    }


# --------------------------------------------------------------------------- regression


def mae(mean_n: ArrayLike, y_n: ArrayLike) -> float:
    """Mean absolute error of the point prediction."""
    m, y = _f64(mean_n), _f64(y_n)
    _check_same_length(m, y)
    return float(np.mean(np.abs(m - y)))


def rmse(mean_n: ArrayLike, y_n: ArrayLike) -> float:
    """Root mean squared error of the point prediction."""
    m, y = _f64(mean_n), _f64(y_n)
    _check_same_length(m, y)
    return float(np.sqrt(np.mean((m - y) ** 2)))


def gaussian_nll(mean_n: ArrayLike, var_n: ArrayLike, y_n: ArrayLike) -> float:
    """Mean negative log density of y under N(mean, var), var floored at 1e-12."""
    m, v, y = _f64(mean_n), _f64(var_n), _f64(y_n)
    _check_same_length(m, v, y)
    v = np.clip(v, PROB_FLOOR, None)
    return float(np.mean(0.5 * (_LOG_2PI + np.log(v) + (y - m) ** 2 / v)))


def _y_for(dist: PredictiveDistribution, y: ArrayLike) -> torch.Tensor:
    """y as a tensor with the distribution's dtype, so heads that searchsorted/compare never
    see a dtype mismatch."""
    ref = dist.mean()
    if isinstance(y, torch.Tensor):
        return y.detach().to(device=ref.device, dtype=ref.dtype)
    return torch.as_tensor(np.asarray(y, dtype=np.float64), dtype=ref.dtype, device=ref.device)


def crps(dist: PredictiveDistribution, y_n: ArrayLike) -> float:
    """Mean continuous ranked probability score, from the distribution's own (closed-form) CRPS."""
    return float(_f64(dist.crps(_y_for(dist, y_n))).mean())


def predictive_nll(dist: PredictiveDistribution, y_n: ArrayLike) -> float:
    """Mean negative log predictive density at y (the distribution's own nll)."""
    return float(_f64(dist.nll(_y_for(dist, y_n))).mean())


# --------------------------------------------------------------------------- bucket metrics


BUCKET_METRICS = ("nll10", "ece10")  # recorded where the test targets hold more than one value (bucket_edges)


def bucket_metrics_refusal(metric: str, test_labels: list[str]) -> str | None:
    """Why ``metric`` (nll10 / ece10) is recorded by no run of a regression project whose test targets all hold
    one value, or None: its 10 buckets are cut from those targets, and `plot` called it an unknown metric."""
    if metric not in BUCKET_METRICS or len(set(test_labels)) > 1 or not test_labels:
        return None
    return (f"{metric} is recorded by no run of this project: its 10 buckets are cut from the test targets, which "
            f"all hold one value ({test_labels[0]}); use nll or crps")


def bucket_edges(
    y_train_n: ArrayLike,
    n_buckets: int = 10,
    scheme: Literal["uniform", "quantile"] = "uniform",
) -> np.ndarray:
    """Bucket edges t_0 < t_1 < ... < t_B for the seed protocol's bucket NLL/ECE, from the
    targets given: in the paper the training targets; the loop passes the test split's, so the
    edges are fixed per project and nll10/ece10 compare across cycles and runs (a run's labelled
    targets change every cycle).

    The seed paper divides the target space into 10 *uniform* (equal-width) buckets, so the
    default splits [min, max] of the training targets into equal widths.  ``scheme="quantile"``
    puts the interior edges at training quantiles instead (equal-frequency buckets); coinciding
    quantiles (discrete targets) are merged, so fewer buckets may come back.  The outer edges
    are -inf and +inf: the first and last buckets are open, so every test target, even one
    outside the training range, falls in a bucket and the masses sum to one.
    Returns float64 (B + 1,).
    """
    y = _f64(y_train_n).ravel()
    y = y[np.isfinite(y)]
    if y.size == 0:
        raise ValueError("bucket_edges needs at least one finite training target")
    if n_buckets < 2:
        raise ValueError("n_buckets must be >= 2")
    if scheme == "uniform":
        lo, hi = float(y.min()), float(y.max())
        if not hi > lo:
            raise ValueError("training targets are all equal; equal-width buckets are undefined")
        interior = np.linspace(lo, hi, n_buckets + 1)[1:-1]
    elif scheme == "quantile":
        interior = np.unique(np.quantile(y, np.arange(1, n_buckets) / n_buckets))
    else:
        raise ValueError(f"scheme must be 'uniform' or 'quantile', got {scheme!r}")
    return np.concatenate([[-np.inf], interior, [np.inf]])


def bucket_index(y_n: ArrayLike, edges: ArrayLike) -> np.ndarray:
    """The bucket b of each target, with t_{b-1} < y <= t_b (the convention that makes the mass
    of b equal F(t_b) - F(t_{b-1})).  The outer edges are treated as open.  int64 (n,)."""
    e = _f64(edges)
    return np.searchsorted(e[1:-1], _f64(y_n), side="left").astype(np.int64)


def bucket_probs(dist: PredictiveDistribution, edges: ArrayLike) -> np.ndarray:
    """Predicted probability mass of every bucket, (n, B) float64: F(t_b) - F(t_{b-1}).

    The CDF is evaluated only at the interior edges; F(t_0) = 0 and F(t_B) = 1, so the masses
    telescope to exactly one and heads need not handle infinite arguments.  Small negative
    masses from a numerically non-monotone CDF are clipped to 0.
    """
    e = _f64(edges)
    if e.ndim != 1 or e.shape[0] < 3 or np.any(np.diff(e[1:-1]) <= 0):
        raise ValueError("edges must be 1-d, increasing, with at least one interior edge")
    n = int(dist.mean().shape[0])
    cdf_n_E = np.stack(
        [_f64(dist.cdf(_y_for(dist, np.full(n, t)))) for t in e[1:-1]], axis=1
    )
    cdf_n_E = np.concatenate([np.zeros((n, 1)), cdf_n_E, np.ones((n, 1))], axis=1)
    return np.clip(np.diff(cdf_n_E, axis=1), 0.0, None)


def bucket_nll(dist: PredictiveDistribution, y_n: ArrayLike, edges: ArrayLike) -> float:
    """Mean -log of the predicted mass of the bucket containing y (mass floored at 1e-12).

    The seed's NLL10: continuous and bucket heads scored on the same discretised target.
    """
    mass_n_B = bucket_probs(dist, edges)
    b_n = bucket_index(y_n, edges)
    if b_n.shape[0] != mass_n_B.shape[0]:
        raise ValueError("y_n and the distribution must have the same number of items")
    mass_n = np.clip(mass_n_B[np.arange(b_n.shape[0]), b_n], PROB_FLOOR, None)
    return float(-np.mean(np.log(mass_n)))


def bucket_ece(
    dist: PredictiveDistribution, y_n: ArrayLike, edges: ArrayLike, n_bins: int = 10
) -> float:
    """The seed's ECE10: top-bucket calibration of the predicted bucket distribution.

    Precisely: each item's bucket masses (``bucket_probs``) are treated as a B-class prediction;
    confidence = the largest mass, correct = (its bucket is the bucket of y, ``bucket_index``).
    ECE = sum_k |B_k|/n * |accuracy(B_k) - mean confidence(B_k)| over ``n_bins`` equal-width
    confidence bins (k/n_bins, (k+1)/n_bins] on [0, 1] — the same estimator as ``ece``.
    """
    mass_n_B = bucket_probs(dist, edges)
    b_n = bucket_index(y_n, edges)
    if b_n.shape[0] != mass_n_B.shape[0]:
        raise ValueError("y_n and the distribution must have the same number of items")
    return _binned_ece(mass_n_B.max(axis=1), mass_n_B.argmax(axis=1) == b_n, n_bins)


def regression_metrics(
    prediction_dist: PredictiveDistribution,
    mean_n: ArrayLike,
    y_n: ArrayLike,
    edges: ArrayLike | None = None,
) -> dict[str, float]:
    """The per-cycle regression record: mae, rmse (of ``mean_n``), nll (the distribution's
    density), crps; plus nll10 and ece10 (seed protocol) when bucket ``edges`` are given."""
    out = {
        "mae": mae(mean_n, y_n),
        "rmse": rmse(mean_n, y_n),
        "nll": predictive_nll(prediction_dist, y_n),
        "crps": crps(prediction_dist, y_n),
    }
    if edges is not None:
        out["nll10"] = bucket_nll(prediction_dist, y_n, edges)
        out["ece10"] = bucket_ece(prediction_dist, y_n, edges)
    return out


# --------------------------------------------------------------------------- learning curves


def _curve(n_labeled: ArrayLike, values: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """The curve sorted by label count; duplicated label counts are an error, not averaged."""
    n, v = _f64(n_labeled).ravel(), _f64(values).ravel()
    if n.shape != v.shape:
        raise ValueError(f"n_labeled and values differ in length: {n.shape} vs {v.shape}")
    if n.size == 0:
        raise ValueError("a learning curve needs at least one point")
    order = np.argsort(n, kind="stable")
    n, v = n[order], v[order]
    if np.any(np.diff(n) == 0):
        raise ValueError("n_labeled has duplicate label counts")
    return n, v


def aulc(n_labeled: ArrayLike, values: ArrayLike) -> float:
    """Normalised area under the learning curve: trapezoid area over [min n, max n] divided by
    that range, i.e. the curve's average metric value (a single point returns its value)."""
    n, v = _curve(n_labeled, values)
    if n.size == 1:
        return float(v[0])
    area = float(np.sum(0.5 * (v[1:] + v[:-1]) * np.diff(n)))
    return area / float(n[-1] - n[0])


def labels_to_target(
    n_labeled: ArrayLike,
    values: ArrayLike,
    target: float,
    higher_is_better: bool = True,
) -> int | None:
    """The smallest label count at which the metric first reaches ``target`` (>= it, or <= it
    when lower is better); None when the curve never does."""
    n, v = _curve(n_labeled, values)
    hit = v >= target if higher_is_better else v <= target
    idx = np.flatnonzero(hit)
    return int(round(n[idx[0]])) if idx.size else None


def value_at(n_labeled: ArrayLike, values: ArrayLike, n: float) -> float | None:
    """The metric at the largest label count <= n (what the model had achieved with a budget
    of n labels); None when the curve starts above n."""
    ns, v = _curve(n_labeled, values)
    idx = np.searchsorted(ns, n, side="right") - 1
    return float(v[idx]) if idx >= 0 else None
