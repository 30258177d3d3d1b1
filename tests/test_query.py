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


def test_the_readmes_stopping_rule_in_a_loop_of_ones_own_runs_and_stops() -> None:
    """The README's own-loop stopping example, after its Python API example (X, y, labeled): with a
    rule that fires at the first pair of models (any agreement), it stops after the second fit; with the
    default it runs on."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    setup = re.search(r"## Python API.*?```python\n(.*?)```", readme, re.S)
    loop = re.search(r"## When to stop.*?```python\n(.*?)```", readme, re.S)
    assert setup is not None and loop is not None, "README lacks an example"
    torch.manual_seed(0)
    for rule, fired in (('"kappa:threshold=0.01,k=1"', True), ('"kappa"', False)):
        scope: dict = {}
        exec(compile(setup.group(1).replace("CYCLES = 10", "CYCLES = 0"), "README.md", "exec"), scope)
        code = loop.group(1).replace('get_rule("kappa")', f"get_rule({rule})").replace("range(CYCLES)", "range(3)")
        exec(compile(code, "README.md", "exec"), scope)
        assert scope["decision"].fired is fired and len(scope["cycles"]) == (2 if fired else 3)
        assert len(scope["labeled"]) == (30 if fired else 50)
        assert 0.0 < scope["decision"].details["kappa"] <= 1.0


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
    with pytest.raises(ValueError, match=r"unknown acquisition 'BALD' \(did you mean 'bald'\?\); known: epistemic"):
        query(ok, X, 5, labeled=labeled, acquisition="BALD")
    with pytest.raises(ValueError, match="unknown selector 'kmeans'; known selectors"):
        query(ok, X, 5, labeled=labeled, selector="kmeans")
    with pytest.raises(ValueError, match="built for 64 features .* this pool has 10"):
        query(ok, X[:, :10], 5)
    for bad in (10.0, True, np.bool_(True), "10", None):  # one predicate (alkit.checks) behind every count check
        with pytest.raises(ValueError, match="batch_size must be a whole number"):
            query(ok, X, bad, labeled=labeled)
    assert len(query(ok, X, np.int32(4), labeled=labeled)) == 4
    with pytest.raises(ValueError, match=f"no unlabelled rows left: all {len(X)} rows of the pool are in labeled"):
        query(ok, X, 1, labeled=np.arange(len(X)))
    with pytest.raises(ValueError, match="BatchBALD over ensemble members: scorer 'vbll' has none .*or your learner\\)"):
        query(ok, X, 4, labeled=labeled, strategy="batchbald")


def test_scores_of_the_picks_come_back_on_request(digits) -> None:
    X, y = digits
    labeled = np.arange(0, 600, 15)
    learner = _fitted(X, y, labeled)
    picked, scores = query(learner, X, 8, labeled=labeled, strategy="topk", acquisition="margin", return_scores=True)
    p = learner.predict(X[picked]).probs_n_C.double().numpy()
    top2 = np.sort(p, axis=1)[:, -2:]
    assert np.allclose(scores, top2[:, 0] - top2[:, 1], atol=1e-6)  # margin's score: minus the top-two gap


def test_library_options_pools_and_calls_are_checked_as_the_cli_checks_them(digits) -> None:
    """Black-box checks of the library: option values passed as Python values ran on the default
    (epistemic='bogus') or failed in torch (width='64'); a pool float32 cannot hold (1e9 + x, 1e-20 x)
    trained at chance unsaid; a fit on no rows divided by zero; a predict of the wrong width failed in
    torch; seed=None drew other picks on every call, candidates=25.5 failed in a slice."""
    X, y = digits
    labeled = np.arange(0, 600, 15)
    with pytest.raises(ValueError, match="option epistemic='bogus': must be one of trace, mi"):
        pool_learner(X, "classification", n_classes=10, scorer="laplace", epistemic="bogus")
    with pytest.raises(ValueError, match="option width='64': must be an integer"):
        pool_learner(X, "classification", n_classes=10, width="64")
    with pytest.raises(ValueError, match="colour: not an option of scorer 'vbll'"):
        pool_learner(X, "classification", n_classes=10, colour=1)
    for bad, said in ((X.astype(np.float64) + 1e9, "vary too little for float32"),
                      (X.astype(np.float64) * 1e-20, "vary too little for float32"),
                      (X.astype(np.float64) * 1e39 + 1e39, "beyond float32's range"),
                      (X.astype(np.int64) + 10**18, "vary too little for float32")):  # one value in float64 too
        with pytest.raises(ValueError, match=said):
            pool_learner(bad, "classification", n_classes=10)
        with pytest.raises(ValueError, match=said):
            query(None, bad, 5)
    # the shapes `init --image-shape` refuses, refused alike (a channels-last shape or a side below 3 was a torch
    # RuntimeError from the stem's patch extraction; a black-box check); options the learner ignored are refused
    for shape, said in (((1, 8, 9), r"image_shape 1,8,9 holds 72 values but the data has 64 features"),
                        ((8, 8, 1), r"image_shape 8,8,1 looks channels-last \(H,W,C\).*pass 1,8,8"),
                        ((2, 32), "image_shape 2,32: an image side below 3 pixels")):
        with pytest.raises(ValueError, match=said):
            pool_learner(X, "classification", n_classes=10, image_shape=shape)
    with pytest.raises(ValueError, match="image_shape and embedding=True both given"):
        pool_learner(X, "classification", n_classes=10, image_shape=(8, 8), embedding=True)
    with pytest.raises(ValueError, match="n_classes=10 on a regression task"):
        pool_learner(X, "regression", n_classes=10)
    learner = _fitted(X, y, labeled)
    nan_row = np.vstack([X[:2], np.full((1, X.shape[1]), np.nan, np.float32)])
    with pytest.raises(ValueError, match=r"the inputs X hold NaN or inf \(rows 2\)"):  # NaN probabilities before
        learner.predict(nan_row)
    with pytest.raises(ValueError, match="fit needs at least one labelled row"):
        pool_learner(X, "classification", n_classes=10).fit(X[:0], y[:0], seed=0)
    with pytest.raises(ValueError, match=r"the network takes inputs of shape \(n, 64\), got \(5, 60\)"):
        learner.predict(X[:5, :60])
    with pytest.raises(ValueError, match="seed must be a whole number"):
        query(learner, X, 5, labeled=labeled, seed=None)
    with pytest.raises(ValueError, match="candidates must be a whole number"):
        query(learner, X, 5, labeled=labeled, candidates=25.5)


class _BrokenProbs:
    """A learner of the user's own whose every 7th probability row is NaN (or whose rows are logits)."""

    task = "classification"
    n_classes = 10

    def __init__(self, inner, logits: bool = False) -> None:
        self.inner, self.logits = inner, logits

    def fit(self, X, y, *, seed: int):
        return self.inner.fit(X, y, seed=seed)

    def posterior(self):
        return None

    def predict(self, X):
        from dataclasses import replace as dc_replace

        pred = self.inner.predict(X)
        p = pred.probs_n_C.clone()
        if self.logits:
            p = p * 3
        else:
            p[::7] = float("nan")
        return dc_replace(pred, probs_n_C=p)


@pytest.mark.parametrize("logits", [False, True])
def test_query_refuses_probabilities_that_are_no_distribution(digits, logits: bool) -> None:
    """NaN rows were never picked (sorted last) by margin and picked first by BADGE, and return_scores
    turned NaN into 0; probabilities times 3 gave margins below -1: refused, as `alkit run` refuses NaN scores."""
    X, y = digits
    labeled = np.arange(0, 600, 15)
    learner = _BrokenProbs(_fitted(X, y, labeled), logits=logits)
    for acq in ("margin", "entropy", "least-confident"):
        with pytest.raises(ValueError, match=f"the {acq} acquisition needs class probabilities: row .* is not a distribution"):
            query(learner, X, 5, labeled=labeled, acquisition=acq, selector="topk")


def test_one_member_and_scoreless_selectors_are_refused_or_said(digits, tmp_path: Path) -> None:
    """query() skipped the members=1 check `alkit run` makes, so BALD ranked all-zero scores and took the
    pool's first rows; an acquisition given to the cold-start selector changed nothing unsaid."""
    X, y = digits
    labeled = np.arange(0, 600, 15)
    est = tmp_path / "mylr.py"
    est.write_text("from sklearn.linear_model import LogisticRegression\n\ndef lr():\n    return LogisticRegression(max_iter=500)\n")
    import sys

    sys.path.insert(0, str(tmp_path))
    try:
        one = pool_learner(X, "classification", n_classes=10, scorer="sklearn", estimator=f"{est}:lr", members=1)
        one.fit(X[labeled], y[labeled], seed=0)
        for strategy in ("bald", "epig"):
            with pytest.raises(ValueError, match="members=1 has no epistemic score") as caught:
                query(one, X, 5, labeled=labeled, strategy=strategy)
            said = str(caught.value)  # in the call's keywords: no `alkit run` option spelling
            assert "scorer 'sklearn' with members=1" in said and "use members=2 or more, or acquisition='margin'" in said
            assert "--" not in said and "-o " not in said, said
    finally:
        sys.path.remove(str(tmp_path))
    learner = _fitted(X, y, labeled)
    with pytest.warns(UserWarning, match="selector 'coldstart' draws a stratified sample, not by score: acquisition='bald' is "
                                         "recorded with the run but changes no pick"):
        query(learner, X, 5, labeled=labeled, selector="coldstart", acquisition="bald")
    with pytest.warns(UserWarning, match="only chooses its candidates, the pool.s best-scored items .candidates, default"):
        query(learner, X, 5, labeled=labeled, selector="kcenter", acquisition="margin")


def test_training_settings_as_a_dict_and_an_estimators_width_are_taken_and_checked(digits, tmp_path: Path) -> None:
    """pool_learner(train={"steps": 5}) failed at fit with an AttributeError; a scikit-learn learner
    predicting on the wrong width failed with numpy's broadcast error (black-box checks)."""
    X, y = digits
    learner = pool_learner(X, "classification", n_classes=10, train={"steps": 5})
    learner.fit(X[:40], y[:40], seed=0)
    est = tmp_path / "mylr2.py"
    est.write_text("from sklearn.linear_model import LogisticRegression\n\ndef lr():\n    return LogisticRegression(max_iter=300)\n")
    sk = pool_learner(X, "classification", n_classes=10, scorer="sklearn", estimator=f"{est}:lr", members=2)
    sk.fit(X[:60], y[:60], seed=0)
    with pytest.raises(ValueError, match=r"the estimator was fitted on inputs of shape \(n, 64\), got \(5, 60\)"):
        sk.predict(X[:5, :60])


@pytest.mark.parametrize("acquisition", ["epig", "epig-decision"])
def test_batch_epig_in_query_starts_from_the_top_epig_item(digits, acquisition: str) -> None:
    """query() left out EPIG's target set, which the loop hands its selectors, so `diverse` ran
    greedy batch BALD under an EPIG acquisition (a black-box audit): its first pick was not even the
    top-EPIG item.  The greedy's first gain is the item's own EPIG about the targets, so its first
    pick is top-k's."""
    X, y = digits
    labeled = np.arange(0, 600, 12)
    learner = _fitted(X, y, labeled)
    top = query(learner, X, 1, labeled=labeled, acquisition=acquisition, selector="topk", seed=3)
    batch = query(learner, X, 5, labeled=labeled, acquisition=acquisition, selector="diverse", seed=3, candidates=60)
    assert batch[0] == top[0], (batch.tolist(), top.tolist())
    assert len(set(batch.tolist())) == 5 and not set(batch.tolist()) & set(labeled.tolist())


def test_a_learner_of_ones_own_with_a_constant_score_is_refused_not_ranked(digits) -> None:
    """A user's learner that fills epistemic_n with zeros got the pool's first unlabelled rows from top-k,
    without a word (a peer-user check); margin from its probabilities still picks."""
    from alkit.types import Prediction

    X, y = digits

    class Constant:
        task = "classification"

        def predict(self, X_n_f):
            n = len(X_n_f)
            probs = torch.softmax(torch.as_tensor(np.asarray(X_n_f)[:, :10], dtype=torch.float32), 1)
            return Prediction(epistemic_n=torch.zeros(n), aleatoric_n=torch.zeros(n),
                              embedding_n_d=torch.as_tensor(np.asarray(X_n_f)), probs_n_C=probs)

        def posterior(self):
            return None

    labeled = np.arange(30)
    # diverse and power-diverse take the top-m by that score: the pool's first rows too (an extension check)
    for strategy in ("topk", "diverse", "power-diverse"):
        with pytest.raises(ValueError, match="every candidate's epistemic score is 0: the candidates would be the "
                                             "pool's first rows"):
            query(Constant(), X, 5, labeled=labeled, strategy=strategy)
    with pytest.raises(ValueError, match="every candidate's epistemic score is 0: the draw weighted by it would be a "
                                         "uniform one"):  # power draws over the whole pool: not its first rows
        query(Constant(), X, 5, labeled=labeled, strategy="power")
    picks = query(Constant(), X, 5, labeled=labeled, strategy="margin")
    assert len(picks) == 5 and not set(picks.tolist()) & set(labeled.tolist())


def test_components_of_ones_own_are_held_to_the_contracts(digits) -> None:
    """Checks of the extension contracts: a selector of one's own returning positions in the candidate array (the
    labelled rows), keys outside the pool, floats or too few came back from query as the batch; an acquisition
    needing a Prediction field or extras key refused every learner as lacking it; an acquisition or selector
    object crashed in the 'did you mean' hint; a NumPy score from one's own acquisition was a traceback, and a
    NaN one was refused without its name; an acquisition with random picks was silently dropped."""
    from alkit.acquisition import ACQUISITIONS
    from alkit.strategies import SELECTORS
    from alkit.types import Prediction, Scores, Selection

    X, y = digits
    labeled = np.arange(0, 600, 20)
    learner = _fitted(X, y, labeled)

    def selector(name, pick):
        return type(name, (), {"name": name, "candidate_source": "topm", "needs_model": True,
                               "select": lambda self, c, k, ctx: pick(c, k)})

    positions = selector("positions", lambda c, k: Selection(np.argsort(-c.scores_n)[:k], np.zeros(k), np.zeros(k)))
    fewer = selector("fewer", lambda c, k: Selection(c.keys_n[:k - 2], np.zeros(k - 2), np.zeros(k - 2)))
    floats = selector("floats", lambda c, k: Selection(c.keys_n[:k] + 0.5, np.zeros(k), np.zeros(k)))
    for made, match in ((positions, "returned items that are not candidates .e.g. key 0."),
                        (fewer, "returned 3 items, expected 5"), (floats, "returned keys of dtype float64")):
        with pytest.raises(ValueError, match=f"selector '{made.__name__}' {match}"):
            query(learner, X, 5, labeled=labeled, strategy="topk", selector=made())
    assert len(query(learner, X, 5, labeled=labeled, selector=SELECTORS["topk"]())) == 5  # an object works

    def acquisition(name, needs, score):
        return type(name, (), {"name": name, "needs": needs, "score": lambda self, pred, ctx: score(pred)})

    var = acquisition("maxvar", ("logit_var_n_C",), lambda p: Scores(p.extras["logit_var_n_C"].max(1).values))
    ACQUISITIONS["maxvar"] = var
    try:
        by_name = query(learner, X, 5, labeled=labeled, strategy="topk", acquisition="maxvar", seed=1)
    finally:
        del ACQUISITIONS["maxvar"]
    by_object = query(learner, X, 5, labeled=labeled, strategy="topk", acquisition=var(), seed=1)
    want = np.setdiff1d(np.arange(600), labeled)[np.argsort(
        -learner.predict(X[np.setdiff1d(np.arange(600), labeled)]).extras["logit_var_n_C"].max(1).values.numpy(),
        kind="stable")[:5]]
    assert by_name.tolist() == by_object.tolist() and sorted(by_name.tolist()) == sorted(want.tolist())
    lacking = acquisition("lacking", ("no_such_key",), lambda p: Scores(p.epistemic_n))
    with pytest.raises(ValueError, match="acquisition 'lacking' needs no_such_key; the learner's Prediction has no"):
        query(learner, X, 5, labeled=labeled, strategy="topk", acquisition=lacking())
    as_numpy = acquisition("as_numpy", (), lambda p: p.epistemic_n.numpy() * 2)  # a bare NumPy array
    assert len(query(learner, X, 5, labeled=labeled, strategy="topk", acquisition=as_numpy())) == 5
    nan = acquisition("nan_one", (), lambda p: Scores(torch.where(torch.arange(len(p.epistemic_n)) == 3,
                                                                  float("nan"), p.epistemic_n.double())))
    with pytest.raises(ValueError, match="acquisition 'nan_one' gave 1 undefined score .NaN or infinite., the first "
                                         "at row 3"):
        query(learner, X, 5, labeled=labeled, strategy="topk", acquisition=nan())
    none = acquisition("gives_none", (), lambda p: None)
    with pytest.raises(ValueError, match="acquisition 'gives_none' returned NoneType, not an alkit.types.Scores"):
        query(learner, X, 5, labeled=labeled, strategy="topk", acquisition=none())
    posterior_needed = acquisition("needs_posterior", ("posterior",), lambda p: Scores(p.epistemic_n))

    class Plain:  # a learner of one's own handing over NumPy arrays, without a posterior
        task = "classification"

        def predict(self, X_n_f):
            top = 0.1 + 0.8 * np.asarray(X_n_f)[:, 30] / 16.0  # pixel values 0..16: a confidence that varies
            p = np.repeat(((1 - top) / 9)[:, None], 10, axis=1).astype(np.float32)
            p[np.arange(len(X_n_f)), np.asarray(X_n_f)[:, 20].astype(int) % 10] = top
            return Prediction(epistemic_n=np.asarray(X_n_f)[:, 30].astype(np.float32), aleatoric_n=np.zeros(len(X_n_f)),
                              embedding_n_d=np.asarray(X_n_f, dtype=np.float32), probs_n_C=p)

        def posterior(self):
            return None

    with pytest.raises(ValueError, match="acquisition 'needs_posterior' needs posterior .a Gaussian last-layer "
                                         "posterior, learner.posterior...; this learner has none"):
        query(Plain(), X, 5, labeled=labeled, strategy="topk", acquisition=posterior_needed())
    for kw in (dict(strategy="topk"), dict(strategy="margin"), dict(strategy="margin", selector="badge")):
        assert len(query(Plain(), X, 5, labeled=labeled, **kw)) == 5
    for bad in (dict(acquisition=object()), dict(selector=3.5)):
        with pytest.raises(ValueError, match="must be a name .str. or an object with"):
            query(learner, X, 5, labeled=labeled, **bad)
    with pytest.raises(ValueError, match="strategy must be a preset's name"):
        query(learner, X, 5, labeled=labeled, strategy=None)


def test_pool_learner_takes_an_image_shape_as_init_does(digits) -> None:
    """`init --image-shape 8,8` works and pool_learner(image_shape=(8, 8)) was refused for wanting (C, H, W)
    (a peer-user check): (H, W) is one channel, the same learner as (1, H, W)."""
    X, _ = digits
    two = pool_learner(X, "classification", 10, image_shape=(8, 8))
    three = pool_learner(X, "classification", 10, image_shape=(1, 8, 8))
    assert two.input.image_shape == three.input.image_shape == (1, 8, 8)
    with pytest.raises(ValueError, match="image_shape 7,7 holds 49 values but the data has 64 features"):
        pool_learner(X, "classification", 10, image_shape=(7, 7))


def test_seeds_and_arguments_are_named_when_wrong(digits) -> None:
    """Black-box checks of the library: query(seed=-1) said numpy's 'expected non-negative integer', fit(seed=-3)
    'Seed must be between 0 and 2**32 - 1', fit(seed=None) an int() error, pool_learner(seed='a') a SeedSequence
    TypeError, query('vbll', ...) an AttributeError, embedding='yes' was taken and image_shape='13,1' read
    character by character.  Each now names its argument; a fit takes the loop's derived seeds up to 2^32 - 1."""
    X, y = digits
    learner = pool_learner(X, "classification", 10)
    learner.fit(X[:20], y[:20], seed=2**32 - 1)
    for call, said in ((lambda: query(learner, X, 5, labeled=np.arange(20), seed=-1), r"seed must be a whole number"),
                       (lambda: learner.fit(X[:20], y[:20], seed=-3), r"seed must be a whole number in 0\.\.4294967295"),
                       (lambda: learner.fit(X[:20], y[:20], seed=None), "seed must be a whole number"),
                       (lambda: pool_learner(X, "classification", 10, seed="a"), r"seed must be a whole number in 0\.\."),
                       (lambda: pool_learner(X, "classification", 10, embedding="yes"), "embedding must be True or False"),
                       (lambda: pool_learner(X, "classification", 10, image_shape="8,8"), "got the text '8,8'")):
        with pytest.raises(ValueError, match=said):
            call()
    with pytest.raises(TypeError, match="learner must be a fitted learner .* got str 'vbll'"):
        query("vbll", X, 5)


def test_an_acquisition_of_ones_own_with_a_constant_score_is_refused(digits) -> None:
    """With alkit's own learner, a constant score from the user's acquisition picked the pool's first rows as if
    ranked (a black-box check; a learner of one's own was already held to it)."""
    from alkit.types import Scores

    X, y = digits
    learner = _fitted(X, y, np.arange(20))

    class Constant:
        name, needs = "mine", ()

        def score(self, pred, ctx):  # noqa: ANN001, ANN202
            return Scores(torch.ones(len(pred.probs_n_C), dtype=torch.float64))

    with pytest.raises(ValueError, match="every candidate's mine score is 1: .*check your acquisition 'mine'"):
        query(learner, X, 5, labeled=np.arange(20), acquisition=Constant(), selector="topk")


def test_a_read_only_array_is_copied_before_torch_sees_it() -> None:
    """A pandas frame's values are a read-only view (copy-on-write): torch.as_tensor wrapped it and warned 'The given
    NumPy array is not writable' on a library user's predict (seen in the CI log).  to_tensor copies such an array;
    a writable float32 one is still wrapped without a copy."""
    from alkit.models.train import to_tensor

    arr = np.arange(12, dtype=np.float32).reshape(4, 3)
    assert to_tensor(arr).data_ptr() == arr.ctypes.data
    arr.flags.writeable = False
    t = to_tensor(arr)
    assert t.data_ptr() != arr.ctypes.data and torch.equal(t, torch.arange(12, dtype=torch.float32).reshape(4, 3))


def test_a_dataframes_columns_are_checked_by_name() -> None:
    """Columns were read by position: iris with its columns reordered got [0.154, 0.029, 0.817] for [0.865,
    0.095, 0.04] and other picks, without a word (a black-box check).  A frame of other or reordered columns is
    refused by name in fit and query; arrays are taken as they are."""
    from sklearn.datasets import load_iris

    X, y = load_iris(return_X_y=True, as_frame=True)
    learner = pool_learner(X, "classification", n_classes=3)
    learner.fit(X.iloc[:20], y.iloc[:20].to_numpy(), seed=0)
    flipped = X[X.columns[::-1]]
    with pytest.raises(ValueError, match="X_pool_n_f's columns are the learner's in another order"):
        query(learner, flipped, 5, labeled=np.arange(20))
    with pytest.raises(ValueError, match="X's columns are the learner's in another order"):
        learner.fit(flipped.iloc[:20], y.iloc[:20].to_numpy(), seed=0)
    with pytest.raises(ValueError, match="X's columns are the learner's in another order"):
        learner.predict(flipped)
    assert learner.predict(X).probs_n_C.shape == (150, 3)
    learner.fit(X.iloc[:20], y.iloc[:20].to_numpy(), seed=np.uint32(4_000_000_000))  # SeedSequence's kind of seed
    with pytest.raises(ValueError, match=r"missing \['sepal length \(cm\)'\], not known \['x'\]"):
        query(learner, X.rename(columns={"sepal length (cm)": "x"}), 5, labeled=np.arange(20))
    assert (query(learner, X, 5, labeled=np.arange(20)) == query(learner, X.to_numpy(), 5, labeled=np.arange(20))).all()
    with pytest.raises(ValueError, match=r"X_pool_n_f must hold numbers only: columns \['kind'\] are not numeric"):
        pool_learner(X.assign(kind="a"), "classification", n_classes=3)  # 'could not convert string to float'
    gappy = X.copy()
    gappy["sepal length (cm)"] = gappy["sepal length (cm)"].round().astype("Int64")
    gappy.loc[3, "sepal length (cm)"] = None  # a nullable column's NA: missing, not 'not numeric'
    with pytest.raises(ValueError, match=r"X_pool_n_f holds missing values \(NA\)"):
        pool_learner(gappy, "classification", n_classes=3)
    nan = X.copy()
    nan.loc[5, "petal width (cm)"] = np.nan
    with pytest.raises(ValueError, match=r"X_pool_n_f holds NaN or inf \(columns 'petal width \(cm\)'\)"):
        pool_learner(nan, "classification", n_classes=3)
    assert pool_learner(X, "classification", n_classes=3, embedding=np.False_) is not None
