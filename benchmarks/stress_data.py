"""Stress sets: synthetic data built to break an acquisition, never used to choose a default.

Each set isolates one structure that real pools have and that uncertainty sampling is known to
mishandle; the protocol (benchmarks/protocol.py) then asks whether the ``epistemic`` preset still
stays at or above random picks with the same learner.  Written beside the other sets
(benchmarks/_work/data/s_<name>.parquet, columns id, label, split, f0..; 30 % test split, stratified
for classes, random_state=0) by holdout_data.write.

- ``s_noise``: make_classification (4 classes, 20 features, 8 informative) with 30 % of the labels
  replaced at random (flip_y): irreducible noise that margin and entropy chase.
- ``s_dupes``: 3 classes, 2,000 distinct items plus 1,500 near-copies of 30 of them (jitter 1e-3 of a
  feature's spread): a top-k batch can spend itself on one item's copies.
- ``s_redundant``: 3 classes, 100 features of which 4 informative (the rest pure noise), 2,500 items.
- ``s_scales``: 3 classes, 12 features multiplied by 1e-3 .. 1e6, two constant columns and one
  integer-coded 40-level categorical column (its codes as a number), 3,000 items.
- ``s_outliers``: regression, make_friedman1 (10 features, noise 1) where 4 % of the items have their
  features multiplied by 6 (far outside the bulk; their targets follow the same function).
- ``s_hetero``: regression, y = sin(3 x0) + x1 + (0.05 + 2 * 1[x2 > 0.7]) * noise: 30 % of the
  input space carries 41x the noise sd of the rest, aleatoric that a variance score must not chase
  and a single noise variance cannot describe.

Added after the first sweep (same day):

- ``s_zipf``: 12 classes with Zipf shares (32 % down to 2.8 %; make_classification weights), 3,000
  items, 15 features: rare classes that random picks meet late.
- ``s_xor``: two-dimensional XOR of the signs of x0 and x1 (4 quadrants, 2 classes) with 8 pure-noise
  columns and 10 % label noise, 3,000 items: no linear structure at all.
- ``s_bimodal``: regression whose target given the inputs is a two-component mixture
  (y = f(x) +- 3 with probability 1/2 each, plus noise 0.3), 3,000 items, 5 features: a
  predictive no single Gaussian describes.
- ``s_bow``: bag-of-words text without an encoder: 3,000 documents of 10-40 words drawn from one of 6
  topics (each a Dirichlet(0.5) distribution over a 1,500-word vocabulary, mixed 40 / 60 with a shared
  background distribution), as TF-IDF columns (sklearn TfidfTransformer): wide, sparse, non-negative.

    python benchmarks/stress_data.py
    ALKIT_PROTOCOL_WORK=benchmarks/_work/protocol_stress python benchmarks/protocol.py --data s_noise --strategies epistemic,margin,random:vbll --seeds 0-2
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.datasets import make_classification, make_friedman1

sys.path.insert(0, str(Path(__file__).resolve().parent))
from holdout_data import write  # noqa: E402  benchmarks/holdout_data.py


def frame(X: np.ndarray) -> pd.DataFrame:
    return pd.DataFrame(X, columns=[f"c{j}" for j in range(X.shape[1])])


def main() -> None:
    X, y = make_classification(3000, 20, n_informative=8, n_redundant=4, n_classes=4, flip_y=0.3, random_state=11)
    write("s_noise", frame(X), y, "classification")

    X, y = make_classification(2000, 10, n_informative=6, n_classes=3, random_state=12)
    rng = np.random.default_rng(12)
    src = rng.choice(len(X), 30, replace=False)
    pick = rng.choice(src, 1500)
    Xd = X[pick] + 1e-3 * X.std(0) * rng.standard_normal((1500, X.shape[1]))
    write("s_dupes", frame(np.vstack([X, Xd])), np.concatenate([y, y[pick]]), "classification")

    X, y = make_classification(2500, 100, n_informative=4, n_redundant=0, n_classes=3, n_clusters_per_class=2,
                               random_state=13)
    write("s_redundant", frame(X), y, "classification")

    X, y = make_classification(3000, 12, n_informative=6, n_classes=3, random_state=14)
    rng = np.random.default_rng(14)
    X = X * np.logspace(-3, 6, 12)
    cat = rng.integers(0, 40, len(X)).astype(float)
    X = np.column_stack([X, np.ones(len(X)), np.full(len(X), 7.5), cat])
    write("s_scales", frame(X), y, "classification")

    X, _ = make_friedman1(3000, n_features=10, noise=0.0, random_state=15)
    rng = np.random.default_rng(15)
    far = rng.random(len(X)) < 0.04
    X[far] *= 6.0
    y = (10 * np.sin(np.pi * X[:, 0] * X[:, 1]) + 20 * (X[:, 2] - 0.5) ** 2 + 10 * X[:, 3] + 5 * X[:, 4]
         + rng.standard_normal(len(X)))
    write("s_outliers", frame(X), y, "regression")

    rng = np.random.default_rng(16)
    X = rng.random((3000, 6))
    y = np.sin(3 * X[:, 0]) + X[:, 1] + (0.05 + 2.0 * (X[:, 2] > 0.7)) * rng.standard_normal(len(X))
    write("s_hetero", frame(X), y, "regression")

    shares = 1.0 / np.arange(1, 13)
    X, y = make_classification(3000, 15, n_informative=10, n_classes=12, n_clusters_per_class=1,
                               weights=list(shares / shares.sum()), random_state=17)
    write("s_zipf", frame(X), y, "classification")

    rng = np.random.default_rng(18)
    X = rng.uniform(-1, 1, (3000, 10))
    y = ((X[:, 0] > 0) ^ (X[:, 1] > 0)).astype(int)
    flip = rng.random(len(y)) < 0.1
    y[flip] = 1 - y[flip]
    write("s_xor", frame(X), y, "classification")

    rng = np.random.default_rng(19)
    X = rng.random((3000, 5))
    f = 4 * X[:, 0] + 2 * np.sin(6 * X[:, 1])
    y = f + np.where(rng.random(len(X)) < 0.5, 3.0, -3.0) + 0.3 * rng.standard_normal(len(X))
    write("s_bimodal", frame(X), y, "regression")

    from sklearn.feature_extraction.text import TfidfTransformer

    rng = np.random.default_rng(20)
    V, T, n = 1500, 6, 3000
    topics = rng.dirichlet(np.full(V, 0.5), T)
    background = rng.dirichlet(np.ones(V))
    y = rng.integers(0, T, n)
    counts = np.zeros((n, V))
    for i in range(n):
        length = rng.integers(10, 41)
        mix = 0.4 * topics[y[i]] + 0.6 * background
        counts[i] = rng.multinomial(length, mix / mix.sum())
    X = TfidfTransformer().fit_transform(counts).toarray()
    write("s_bow", frame(X), y, "classification")


if __name__ == "__main__":
    import argparse

    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help writes nothing
    main()
