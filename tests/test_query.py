"""alkit.query: a cycle's Acquisition and Selection stages on arrays in memory, for a loop of the
user's own.  Picks checked against an independent computation (margin ranking), determinism,
labelled rows never picked, the cold start, refusals by name; and the README's example runs."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from alkit.query import pool_learner, query

FAST = {"steps": 30}


@pytest.fixture(scope="module")
def digits() -> tuple[np.ndarray, np.ndarray]:
    X, y = load_digits(return_X_y=True)
    return X[:600].astype(np.float32), y[:600]


def _fitted(X: np.ndarray, y: np.ndarray, labeled: np.ndarray, scorer: str = "vbll"):
    from alkit.models.train import TrainConfig

    learner = pool_learner(X, "classification", n_classes=10, scorer=scorer, train=TrainConfig(**FAST))
    learner.fit(X[labeled], y[labeled], seed=0)
    return learner


def test_topk_margin_picks_the_smallest_top_two_gaps(digits) -> None:
    X, y = digits
    labeled = np.arange(0, 600, 15)
    learner = _fitted(X, y, labeled)
    picked = query(learner, X, 12, labeled=labeled, strategy="topk", acquisition="margin", seed=0)
    p = learner.predict(X).probs_n_C.double().numpy()  # independent: numpy on the predictive
    top2 = np.sort(p, axis=1)[:, -2:]
    gap = top2[:, 1] - top2[:, 0]
    gap[labeled] = np.inf
    expected = np.lexsort((np.arange(len(X)), gap))[:12]
    assert picked.tolist() == expected.tolist()


def test_the_preset_picks_unlabelled_rows_deterministically(digits) -> None:
    X, y = digits
    mask = np.zeros(len(X), dtype=bool)
    mask[::20] = True
    learner = _fitted(X, y, np.flatnonzero(mask))
    a = query(learner, X, 10, labeled=mask, seed=3)
    b = query(learner, X, 10, labeled=np.flatnonzero(mask), seed=3)
    assert a.tolist() == b.tolist() and len(set(a.tolist())) == 10 and not mask[a].any()
    assert query(learner, X, 10, labeled=mask, seed=4).tolist() != a.tolist()  # a drawn batch: the seed matters
    for strategy in ("badge", "kcenter", "bald", "diverse"):  # other selectors and acquisitions run too
        got = query(learner, X, 5, labeled=mask, strategy=strategy, seed=0)
        assert len(set(got.tolist())) == 5 and not mask[got].any()


def test_the_cold_start_needs_no_model(digits) -> None:
    X, _ = digits
    first = query(None, X, 10, seed=0)  # the preset's model-free selector (cold-start strata)
    assert len(set(first.tolist())) == 10 and first.tolist() == query(None, X, 10, seed=0).tolist()
    with pytest.raises(ValueError, match="selector 'topk' needs a model"):
        query(None, X, 10, selector="topk")


def test_bad_input_is_refused_by_name(digits) -> None:
    X, y = digits
    bad = X.copy()
    bad[3, 5] = np.nan
    with pytest.raises(ValueError, match="X_pool_n_f holds NaN or inf"):
        pool_learner(bad, "classification", n_classes=10)
    plain = _fitted(X, y, np.arange(0, 600, 15), scorer="none")
    with pytest.raises(ValueError, match="bald"):
        query(plain, X, 5, strategy="topk", acquisition="bald")
    with pytest.raises(ValueError, match=r"batch_size must be in 1..560"):
        query(plain, X, 561, labeled=np.arange(40), strategy="random")


def test_the_readme_example_runs() -> None:
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    code = re.search(r"## Python API.*?```python\n(.*?)```", readme, re.S)
    assert code is not None, "README has no Python API example"
    torch.manual_seed(0)
    scope: dict = {}
    exec(compile(code.group(1).replace("CYCLES = 10", "CYCLES = 2"), "README.md", "exec"), scope)
    assert len(scope["labeled"]) == 40


def test_query_decides_acquisitions_as_alkit_run_does(digits) -> None:
    """query refused what `alkit run` accepts: random picks with the plain MLP, a preset whose
    acquisition the learner cannot feed (run falls back to the scorer's own score, with a note)."""
    import warnings

    from alkit.errors import Note

    X, y = digits
    labeled = np.arange(0, 600, 15)
    plain = _fitted(X, y, labeled, scorer="none")
    assert len(query(plain, X, 5, labeled=labeled, strategy="random", seed=0)) == 5
    with pytest.raises(ValueError, match="ranks by a score"):  # as run: the plain MLP has no score to rank by
        query(plain, X, 5, labeled=labeled)
    from alkit.models.train import TrainConfig

    reg = pool_learner(X, "regression", train=TrainConfig(**FAST))
    reg.fit(X[labeled], y[labeled].astype(float), seed=0)
    with pytest.raises(ValueError, match="ranks by margin, which needs class probabilities"):  # as run: refused
        query(reg, X, 5, labeled=labeled, strategy="margin", seed=0)
    grad = _fitted(X, y, labeled, scorer="gradnorm")  # no Gaussian posterior for the flip probability
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = query(grad, X, 5, labeled=labeled, strategy="decision-flip", seed=0)
    assert len(got) == 5
    assert any(issubclass(w.category, Note) and "uses the scorer's own epistemic score" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="picks without a score"):
        query(plain, X, 5, labeled=labeled, strategy="random", acquisition="bald")


def test_api_misuse_is_refused_by_name(digits) -> None:
    import pandas as pd

    X, y = digits
    labeled = np.arange(0, 600, 15)
    with pytest.raises(ValueError, match="task must be 'classification' or 'regression', got 'classifier'"):
        pool_learner(X, "classifier", n_classes=10)
    with pytest.raises(ValueError, match="classification needs n_classes >= 2"):
        pool_learner(X, "classification")
    learner = pool_learner(X, "classification", n_classes=10)
    with pytest.raises(ValueError, match="classification labels must be class indices 0..C-1.*LabelEncoder"):
        learner.fit(X[labeled], np.array([f"c{v}" for v in y[labeled]]), seed=0)
    with pytest.raises(ValueError, match=r"classification labels must be in 0..9 \(n_classes=10\), got 1..10"):
        learner.fit(X[labeled], y[labeled] + 1, seed=0)
    with pytest.raises(ValueError, match="one label per row"):
        learner.fit(X[labeled], y[labeled][:-1], seed=0)
    from alkit.models.train import TrainConfig

    ok = pool_learner(X, "classification", n_classes=10, train=TrainConfig(**FAST))
    ok.fit(pd.DataFrame(X[labeled]), pd.Series(y[labeled].astype(float)), seed=0)  # a DataFrame, whole floats
    mask = np.zeros(len(X), dtype=int)
    mask[labeled] = 1
    with pytest.raises(ValueError, match="0/1 mask given as integers"):
        query(ok, X, 5, labeled=mask)
    with pytest.raises(ValueError, match=r"candidates must be at least batch_size \(10\), got 3"):
        query(ok, X, 10, labeled=labeled, candidates=3)
    with pytest.raises(ValueError, match="unknown acquisition 'BALD'; known: epistemic"):
        query(ok, X, 5, labeled=labeled, acquisition="BALD")
    with pytest.raises(ValueError, match="unknown selector 'kmeans'; known selectors"):
        query(ok, X, 5, labeled=labeled, selector="kmeans")
    with pytest.raises(ValueError, match="built for 64 features .* this pool has 10"):
        query(ok, X[:, :10], 5)
    with pytest.raises(ValueError, match="batch_size must be a whole number"):
        query(ok, X, 10.0, labeled=labeled)


def test_scores_of_the_picks_come_back_on_request(digits) -> None:
    X, y = digits
    labeled = np.arange(0, 600, 15)
    learner = _fitted(X, y, labeled)
    picked, scores = query(learner, X, 8, labeled=labeled, strategy="topk", acquisition="margin", return_scores=True)
    p = learner.predict(X[picked]).probs_n_C.double().numpy()
    top2 = np.sort(p, axis=1)[:, -2:]
    assert np.allclose(scores, top2[:, 0] - top2[:, 1], atol=1e-6)  # margin's score: minus the top-two gap
