"""Capacity chosen per fit by cross-validation (alkit/models/capacity.py): where it applies, that the
folds hold out every label exactly once, that the choice is the argmin of the held-out NLLs it
reports, and that the final fit is exactly the fit of the chosen configuration."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.datasets import load_breast_cancer, make_moons

from alkit.learners.vbll import VBLLLearner
from alkit.models.backbone import BackboneConfig, pool_input_spec
from alkit.models.capacity import (
    CANDIDATES, CV_MAX_N, CV_MIN_N, EMBEDDING_CANDIDATES, FREE, PRIOR_CANDIDATES, PRIOR_MAX_N, PRIOR_FREE, PRIOR_TAME, TAME,
    Capacity, CapacityHint, candidates_for, capacity_applies, choose_capacity, cv_folds, resolve_capacity,
)
from alkit.models.learner import MLPLearner, capacity_scorer
from alkit.models.train import TrainConfig
from alkit.types import Prediction


def _cancer(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, object]:
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32)
    idx = np.random.default_rng(seed).choice(len(X), n, replace=False)
    return X[idx], y[idx], pool_input_spec(X)


def test_it_applies_to_flat_raw_classification_with_depth_and_prior_unset() -> None:
    X, _, spec = _cancer(100)
    free, fixed = BackboneConfig(), TrainConfig()
    assert capacity_applies("classification", spec, free, fixed, 100)
    assert capacity_applies("classification", None, free, fixed, 100)
    assert not capacity_applies("regression", spec, free, fixed, 100)  # only for a learner that takes it
    assert capacity_applies("regression", spec, free, fixed, 100, regression=True)
    assert not capacity_applies("regression", spec, BackboneConfig(depth=1), fixed, 100, regression=True)
    assert not capacity_applies("regression", spec, free, TrainConfig(prior_l2=30.0), 100, regression=True)
    assert not capacity_applies("classification", spec, BackboneConfig(depth=1), fixed, 100)
    assert not capacity_applies("classification", spec, free, TrainConfig(prior_l2=10.0), 100)
    assert capacity_applies("classification", pool_input_spec(X, embedding=True), free, fixed, 100)
    images = pool_input_spec(np.random.default_rng(0).random((50, 64), dtype=np.float32), (1, 8, 8))
    assert not capacity_applies("classification", images, free, fixed, 100)
    assert not capacity_applies("classification", spec, free, fixed, CV_MIN_N - 1)
    assert not capacity_applies("classification", spec, free, fixed, CV_MAX_N + 1)


@pytest.mark.parametrize("y", [np.repeat([0, 1, 2], [10, 10, 10]), np.array([0] * 12 + [1] * 2)])
def test_folds_hold_out_every_label_exactly_once(y: np.ndarray) -> None:
    folds = cv_folds(y, 3, seed=0)
    assert len(folds) == 3
    assert np.array_equal(np.sort(np.concatenate(folds)), np.arange(len(y)))
    if np.bincount(y).min() >= 3:  # stratified: every fold sees every class
        assert all(len(np.unique(y[f])) == 3 for f in folds)


class _Constant:
    """A scorer that predicts fixed class probabilities and records what it was fitted on."""

    def __init__(self, p: float, seen: list[np.ndarray]) -> None:
        self.p, self.seen = p, seen

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        self.seen.append(X_n_f[:, 0].copy())
        return {}

    def predict(self, X_n_f: np.ndarray) -> Prediction:
        n = X_n_f.shape[0]
        probs = torch.tensor([[self.p, 1 - self.p]]).repeat(n, 1)
        return Prediction(torch.zeros(n), torch.zeros(n), torch.zeros(n, 1), probs_n_C=probs)


def test_the_choice_is_the_lowest_held_out_nll_of_folds_that_never_train_on_their_held_out_labels() -> None:
    y = np.array([0] * 24 + [1] * 6)
    X = np.arange(30, dtype=np.float32)[:, None]
    seen: list[np.ndarray] = []
    good, bad = Capacity("good", 0, 1.0), Capacity("bad", 1, 1.0)
    p = {"good": 0.8, "bad": 0.5}  # the class shares are 0.8 / 0.2: 'good' has the lower NLL
    chosen, scores = choose_capacity(X, y, lambda c: _Constant(p[c.name], seen), seed=0, candidates=(bad, good))
    assert chosen == good
    expected = {k: -(0.8 * np.log(v) + 0.2 * np.log(1 - v)) for k, v in p.items()}
    assert scores == pytest.approx(expected, rel=1e-5)
    folds = cv_folds(y, 3, seed=0)
    for fitted, held in zip(seen, folds * 2):  # every fold of each candidate trained without its held-out rows
        assert not set(fitted.tolist()) & set(X[held, 0].tolist())
        assert len(fitted) == len(y) - len(held)


@pytest.mark.parametrize("make", [
    lambda spec, cap: MLPLearner("classification", 2, input=spec, **cap),
    lambda spec, cap: VBLLLearner("classification", 2, input=spec, **cap),
])
def test_the_fit_is_the_fit_of_the_chosen_configuration(make) -> None:
    X, y, spec = _cancer(60)
    auto = make(spec, {"capacity": "cv"})
    report = auto.fit(X, y, seed=3)
    chosen = next(c for c in CANDIDATES if c.depth == report["capacity_depth"])
    assert report["capacity_prior_l2"] == chosen.prior_l2
    assert report[f"cv_nll_{chosen.name}"] == min(report[f"cv_nll_{c.name}"] for c in CANDIDATES)
    explicit = make(spec, {"depth": chosen.depth, "train": TrainConfig(prior_l2=chosen.prior_l2)})
    explicit.fit(X, y, seed=3)
    assert len(auto.backbone.blocks) == chosen.depth
    a, b = auto.predict(X).probs_n_C, explicit.predict(X).probs_n_C
    assert torch.equal(a, b)  # the cross-validation leaves no trace in the final fit (RNG included)
    fixed = make(spec, {"capacity": "fixed"})
    assert "capacity_depth" not in fixed.fit(X, y, seed=3)
    assert len(fixed.backbone.blocks) == 1


def test_a_nonlinear_boundary_with_many_labels_gets_the_free_network_and_few_noisy_labels_the_tame() -> None:
    X, y = make_moons(1400, noise=0.05, random_state=0)
    X = np.hstack([X, 0.05 * np.random.default_rng(0).standard_normal((len(X), 2))]).astype(np.float32)
    spec = pool_input_spec(X)
    many, _ = choose_capacity(X[:400], y[:400], capacity_scorer(2, spec), seed=0)
    assert many == FREE
    Xc, yc, spec_c = _cancer(40)
    few, _ = choose_capacity(Xc, yc, capacity_scorer(2, spec_c), seed=0)
    assert few == TAME


def test_capacity_refuses_anything_but_fixed_cv_prior_auto_or_prior_linear() -> None:
    with pytest.raises(ValueError, match="capacity must be fixed, cv, prior, auto or prior-linear"):
        MLPLearner("classification", 2, capacity="maybe")
    with pytest.raises(ValueError, match="capacity must be fixed, cv, prior, auto or prior-linear"):
        VBLLLearner("classification", 2, capacity="CV")


def test_prior_mode_chooses_the_weight_prior_alone_and_is_the_vbll_default() -> None:
    """capacity=prior, the VBLL learner's default: on raw features the candidates keep the default
    residual block and differ in the prior only (10 or 1); the fit is the argmin-CV-NLL candidate's,
    exactly; on embeddings the candidates are those of cv (already prior-only)."""
    from alkit.models.capacity import effective_mode

    X, y, spec = _cancer(60)
    emb = pool_input_spec(X, embedding=True)
    assert candidates_for(spec, "prior") == PRIOR_CANDIDATES and candidates_for(emb, "prior") == EMBEDDING_CANDIDATES
    assert {c.depth for c in PRIOR_CANDIDATES} == {1} and (PRIOR_TAME.prior_l2, PRIOR_FREE.prior_l2) == (10.0, 1.0)
    assert effective_mode("prior", spec) == "prior" and effective_mode("prior", None) == "prior"
    learner = VBLLLearner("classification", 2, input=spec)
    assert learner.capacity == "prior" and MLPLearner("classification", 2, input=spec).capacity == "prior"
    report = learner.fit(X, y, seed=3)
    chosen = min(PRIOR_CANDIDATES, key=lambda c: report[f"cv_nll_{c.name}"])
    assert (report["capacity_depth"], report["capacity_prior_l2"]) == (chosen.depth, chosen.prior_l2)
    explicit = VBLLLearner("classification", 2, input=spec, capacity="fixed", train=TrainConfig(prior_l2=chosen.prior_l2))
    explicit.fit(X, y, seed=3)
    assert torch.equal(learner.predict(X).probs_n_C, explicit.predict(X).probs_n_C)
    tame_hint = CapacityHint(60, PRIOR_TAME.depth, PRIOR_TAME.prior_l2)  # cv's TAME has no block: not reused
    assert tame_hint.reusable(60, PRIOR_CANDIDATES) == PRIOR_TAME and tame_hint.reusable(60, CANDIDATES) is None


def test_the_raw_prior_choice_stops_above_prior_max_n_and_the_embedding_choice_does_not() -> None:
    """Above PRIOR_MAX_N labels a raw-feature fit in prior mode keeps the defaults (no choice, no
    hint reused); an encoder's embeddings still choose up to CV_MAX_N."""
    X, y = load_breast_cancer(return_X_y=True)
    X = X.astype(np.float32)[: PRIOR_MAX_N + 40]
    y = y[: PRIOR_MAX_N + 40]
    raw, emb = pool_input_spec(X), pool_input_spec(X, embedding=True)
    hint = CapacityHint(PRIOR_MAX_N - 100, PRIOR_FREE.depth, PRIOR_FREE.prior_l2)
    args = ("classification",)
    for n, chooses in ((PRIOR_MAX_N, True), (PRIOR_MAX_N + 1, False)):
        _, train, report = resolve_capacity("prior", *args, raw, BackboneConfig(), TrainConfig(), X[:n], y[:n],
                                            make_scorer=capacity_scorer(2, raw), seed=0, hint=hint)
        assert bool(report) == chooses and (train.prior_l2 == PRIOR_FREE.prior_l2) == chooses
    _, _, report = resolve_capacity("prior", *args, emb, BackboneConfig(), TrainConfig(), X, y,
                                    make_scorer=capacity_scorer(2, emb), seed=0)
    assert report["capacity_prior_l2"] in {c.prior_l2 for c in EMBEDDING_CANDIDATES}


def test_clean_separable_labels_get_the_weak_prior_and_noisy_ones_the_default() -> None:
    """What the prior choice is for: 20 labels of three well-separated Gaussian classes choose
    prior 1; the same inputs with labels drawn at random keep 10 (cross-validated NLL of a freer fit
    to noise is worse)."""
    rng = np.random.default_rng(0)
    centres = 4.0 * rng.standard_normal((3, 10))
    y = np.tile(np.arange(3), 10)[:24]
    X = (centres[y] + rng.standard_normal((24, 10))).astype(np.float32)
    spec = pool_input_spec(X)
    clean, _ = choose_capacity(X, y, capacity_scorer(3, spec), seed=0, candidates=PRIOR_CANDIDATES)
    noisy, _ = choose_capacity(X, rng.permutation(y), capacity_scorer(3, spec), seed=0, candidates=PRIOR_CANDIDATES)
    assert (clean, noisy) == (PRIOR_FREE, PRIOR_TAME)


def test_a_hint_is_reused_until_the_labels_double_then_chosen_again() -> None:
    from alkit.models.capacity import CapacityHint, resolve_capacity

    X, y, spec = _cancer(80)
    calls: list[int] = []

    def make(c: Capacity) -> MLPLearner:
        calls.append(c.depth)
        return capacity_scorer(2, spec)(c)

    hint = CapacityHint(n_labels=50, depth=FREE.depth, prior_l2=FREE.prior_l2)
    args = ("cv", "classification", spec, BackboneConfig(), TrainConfig())
    config, train, report = resolve_capacity(*args, X[:80], y[:80], make_scorer=make, seed=0, hint=hint)
    assert calls == [] and (config.depth, train.prior_l2) == (FREE.depth, FREE.prior_l2)
    assert report["capacity_n"] == 50 and "cv_nll_tame" not in report
    _, _, report = resolve_capacity(*args, X[:40], y[:40], make_scorer=make, seed=0, hint=hint)  # fewer labels: choose
    assert report["capacity_n"] == 40 and len(calls) == 2 * 3
    X2, y2, _ = _cancer(100)
    _, _, report = resolve_capacity(*args, X2, y2, make_scorer=make, seed=0, hint=hint)  # doubled: choose again
    assert report["capacity_n"] == 100 and len(calls) == 4 * 3
    assert CapacityHint.from_report(report) == CapacityHint(100, int(report["capacity_depth"]), report["capacity_prior_l2"])


def test_a_run_chooses_at_doublings_hands_the_choice_on_and_resumes_the_same(tmp_path, digits_csv) -> None:

    from alkit.config import load_project
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.ingest import InitOptions, init_project

    def run(root, stops: tuple[int, ...]) -> tuple[list[int], list[int]]:
        init_project(digits_csv, root, InitOptions(id_col="id", label_col="label", hide_labels=True, test_frac=0.25))
        loop = ActiveLoop(load_project(root))
        for cycles in stops:  # stop and resume between cycles
            loop.run(RunRequest(strategy="epistemic", budget=60, batch_size=10, seed=0,
                                max_cycles=cycles, learner_options={"capacity": "cv"}))
        signals = loop.store.signals(1)
        return [signals[c]["capacity"]["n_labels"] for c in sorted(signals) if "capacity" in signals[c]], \
            loop.store.selected_keys(1).tolist()

    chosen_at, picks = run(tmp_path / "a", (99,))
    assert chosen_at == [10, 20, 20, 40, 40, 40]  # n = 10 ... 60: chosen anew at 10, 20 and 40 labels
    assert run(tmp_path / "b", (2, 2, 99)) == (chosen_at, picks)


def test_post_hoc_learners_take_the_option_and_the_hint_through_their_network() -> None:
    from alkit.models.capacity import CapacityHint
    from alkit.registry import make_learner

    X, y, spec = _cancer(40)
    lap = make_learner("laplace", "classification", 2, input=spec, capacity="cv")
    assert lap.capacity == "cv" and make_learner("laplace", "classification", 2, input=spec).capacity == "prior"
    lap.capacity_hint = CapacityHint(30, FREE.depth, FREE.prior_l2)
    report = lap.fit(X, y, seed=0)
    assert report["capacity_n"] == 30 and len(lap.base.backbone.blocks) == FREE.depth


def test_embeddings_choose_between_the_default_prior_and_a_stronger_one() -> None:
    """On an encoder's embeddings the candidates keep the network block-free and differ in the
    prior only; the choice is the lower CV NLL of the two, and a hint of the other kind of input
    (a raw-feature capacity) is not reused for them."""
    X, y, _ = _cancer(60)
    spec = pool_input_spec(X, embedding=True)
    assert candidates_for(spec) == EMBEDDING_CANDIDATES and candidates_for(pool_input_spec(X)) == CANDIDATES
    assert {c.depth for c in EMBEDDING_CANDIDATES} == {0} and len({c.prior_l2 for c in EMBEDDING_CANDIDATES}) == 2
    backbone, train, report = resolve_capacity("cv", "classification", spec, BackboneConfig(), TrainConfig(), X, y,
                                               make_scorer=capacity_scorer(2, spec), seed=0)
    chosen = min(EMBEDDING_CANDIDATES, key=lambda c: report[f"cv_nll_{c.name}"])
    assert (backbone.depth, train.prior_l2) == (chosen.depth, chosen.prior_l2)
    assert report["capacity_prior_l2"] == chosen.prior_l2
    raw_hint = CapacityHint(60, FREE.depth, FREE.prior_l2)
    assert raw_hint.reusable(60, EMBEDDING_CANDIDATES) is None and raw_hint.reusable(60) == FREE


def test_auto_is_cv_on_embeddings_and_fixed_elsewhere() -> None:
    from alkit.models.capacity import effective_mode

    X, y, raw = _cancer(60)
    emb = pool_input_spec(X, embedding=True)
    assert effective_mode("auto", emb) == "cv" and effective_mode("auto", raw) == "fixed"
    assert effective_mode("auto", None) == "fixed" and effective_mode("cv", raw) == "cv"
    _, _, on_raw = resolve_capacity("auto", "classification", raw, BackboneConfig(), TrainConfig(), X, y,
                                    make_scorer=capacity_scorer(2, raw), seed=0)
    _, _, on_emb = resolve_capacity("auto", "classification", emb, BackboneConfig(), TrainConfig(), X, y,
                                    make_scorer=capacity_scorer(2, emb), seed=0)
    assert on_raw == {} and on_emb["capacity_prior_l2"] in {c.prior_l2 for c in EMBEDDING_CANDIDATES}


def test_by_default_a_run_chooses_the_prior_on_embeddings_and_on_raw_features(tmp_path, digits_csv) -> None:
    """capacity=prior, the VBLL learner's default: a project of encoder-style vectors (a list column)
    records the embedding candidates' choice in its cycles (no block, prior 300 or 30); the same data
    as numeric columns records the raw candidates' (one block, prior 10 or 1); random batches with
    the plain MLP (capacity=prior since learner rule 3b) record the raw candidates' choice too, and with
    ``-o capacity=auto`` (fixed on raw features) none."""
    import polars as pl

    from alkit.config import load_project
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.ingest import InitOptions, init_project

    df = pl.read_csv(digits_csv)
    px = [c for c in df.columns if c.startswith("px")]
    df.select("id", "label", pl.concat_list(px).cast(pl.List(pl.Float32)).alias("vec")).write_parquet(tmp_path / "v.parquet")
    recorded = {}
    for name, data, extra in (("emb", tmp_path / "v.parquet", {"feature_col": "vec"}), ("raw", digits_csv, {})):
        init_project(data, tmp_path / name, InitOptions(id_col="id", label_col="label", hide_labels=True, **extra))
        loop = ActiveLoop(load_project(tmp_path / name))
        loop.run(RunRequest(strategy="epistemic", budget=30, batch_size=10, seed=0))
        recorded[name] = [s["capacity"] for s in loop.store.signals(1).values() if "capacity" in s]
    assert recorded["raw"] and {(r["depth"], r["prior_l2"]) for r in recorded["raw"]} <= \
        {(c.depth, c.prior_l2) for c in PRIOR_CANDIDATES}
    loop = ActiveLoop(load_project(tmp_path / "raw"))
    loop.run(RunRequest(strategy="random", budget=30, batch_size=10, seed=0, name="plain"))
    plain = next(r.id for r in loop.store.runs() if r.name == "plain")
    chosen = [s["capacity"] for s in loop.store.signals(plain).values() if "capacity" in s]
    assert chosen and {(r["depth"], r["prior_l2"]) for r in chosen} <= {(c.depth, c.prior_l2) for c in PRIOR_CANDIDATES}
    loop.run(RunRequest(strategy="random", budget=30, batch_size=10, seed=0, name="fixed",
                        learner_options={"capacity": "auto"}))
    fixed = next(r.id for r in loop.store.runs() if r.name == "fixed")
    assert loop.store.signals(fixed) and not any("capacity" in s for s in loop.store.signals(fixed).values())
    assert recorded["emb"] and {r["prior_l2"] for r in recorded["emb"]} <= {c.prior_l2 for c in EMBEDDING_CANDIDATES}
    assert all(r["depth"] == 0 for r in recorded["emb"])


def test_an_ensemble_shares_member_zeros_choice_and_takes_the_loops_hint() -> None:
    """With a capacity mode that chooses, member 0 makes the choice (its report keeps the CV scores)
    and every other member fits the same depth and prior (the report's prior is the members' mean,
    so one member on the other candidate would move it); a hint from the loop reaches member 0, so
    nothing is cross-validated again before the labels double; ``fixed`` (the option's default)
    reports no choice."""
    from alkit.learners.deep_ensemble import DeepEnsembleLearner

    X, y, _ = _cancer(60)
    spec = pool_input_spec(X, embedding=True)
    ens = DeepEnsembleLearner("classification", 2, M=3, input=spec, capacity="cv")
    report = ens.fit(X, y, seed=0)
    chosen = min(EMBEDDING_CANDIDATES, key=lambda c: report[f"cv_nll_{c.name}"])
    assert report["capacity_prior_l2"] == chosen.prior_l2 and report["capacity_n"] == 60
    assert all(m.capacity_hint == CapacityHint(60, chosen.depth, chosen.prior_l2) for m in ens.members[1:])
    assert all(len(m.backbone.blocks) == chosen.depth for m in ens.members)
    other = next(c for c in EMBEDDING_CANDIDATES if c != chosen)
    ens.capacity_hint = CapacityHint(50, other.depth, other.prior_l2)  # what the loop hands on
    again = ens.fit(X, y, seed=0)
    assert again["capacity_prior_l2"] == other.prior_l2 and again["capacity_n"] == 50
    assert not any(k.startswith("cv_nll_") for k in again)
    assert not any(k.startswith("capacity") for k in
                   DeepEnsembleLearner("classification", 2, M=2, input=spec).fit(X, y, seed=0))


def test_mc_dropout_chooses_its_prior_like_the_plain_mlp_and_takes_the_loops_hint() -> None:
    """capacity=prior on MC dropout: the plain-MLP cross-validation picks the prior (the report keeps
    the CV scores, and the choice is the argmin), the dropout network trains under it (the same
    weights as a fit told that prior outright), and a hint from the loop is reused without a new
    cross-validation; the default (fixed) reports no choice."""
    from alkit.learners.mc_dropout import MCDropoutLearner

    X, y, spec = _cancer(60)
    mcd = MCDropoutLearner("classification", 2, input=spec, capacity="prior")
    report = mcd.fit(X, y, seed=0)
    chosen = min(PRIOR_CANDIDATES, key=lambda c: report[f"cv_nll_{c.name}"])
    assert (report["capacity_prior_l2"], report["capacity_n"]) == (chosen.prior_l2, 60)
    told = MCDropoutLearner("classification", 2, input=spec, train=TrainConfig(prior_l2=chosen.prior_l2))
    told.fit(X, y, seed=0)
    assert all(torch.equal(a, b) for a, b in zip(mcd.net.backbone.parameters(), told.net.backbone.parameters()))
    other = next(c for c in PRIOR_CANDIDATES if c != chosen)
    mcd.capacity_hint = CapacityHint(50, other.depth, other.prior_l2)  # what the loop hands on
    again = mcd.fit(X, y, seed=0)
    assert again["capacity_prior_l2"] == other.prior_l2 and not any(k.startswith("cv_nll_") for k in again)
    assert MCDropoutLearner("classification", 2, input=spec).capacity == "fixed"
    assert not any(k.startswith("capacity") for k in MCDropoutLearner("classification", 2, input=spec).fit(X, y, seed=0))


def _regression_sets(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, object]:
    """Six standardised-ish inputs; a noisy linear target and a smooth nonlinear one (no linear part)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(600, 6)).astype(np.float32)
    linear = X @ np.array([1.0, -0.7, 0.5, 0.3, 0.0, 0.2]) + rng.normal(scale=0.8, size=600)
    nonlinear = np.sin(2.0 * X[:, 0]) * 2.0 + np.abs(X[:, 1]) * 1.5 + rng.normal(scale=0.1, size=600)
    return X, linear, nonlinear, pool_input_spec(X)


def test_regression_choice_takes_the_ridge_residual_on_few_linear_labels_and_the_plain_network_on_a_curve() -> None:
    """The MLP learner's regression choice (learner rule 9): cross-validated CRPS, reported; the
    choice is the lower of the two, and it follows the target's shape."""
    X, linear, nonlinear, spec = _regression_sets()
    lin = MLPLearner("regression", input=spec)
    report = lin.fit(X[:40], linear[:40], seed=0)
    assert report["capacity_ridge"] == 1.0 and lin.ridge is not None
    assert report["cv_crps_ridge-residual"] < report["cv_crps_plain"]
    curve = MLPLearner("regression", input=spec)
    report = curve.fit(X[:300], nonlinear[:300], seed=0)
    assert report["capacity_ridge"] == 0.0 and curve.ridge is None
    assert report["cv_crps_plain"] <= report["cv_crps_ridge-residual"]


def test_the_ridge_residual_network_predicts_the_ridge_plus_its_own_mean() -> None:
    from sklearn.linear_model import BayesianRidge

    X, linear, _, spec = _regression_sets(1)
    res = MLPLearner("regression", input=spec, capacity="fixed", ridge="residual")
    res.fit(X[:30], linear[:30], seed=0)
    pred = res.predict(X[300:])
    with torch.no_grad():
        out = res.head(res.backbone(torch.as_tensor(X[300:])))
    network_mean = out[:, 0].double() * res.scaler.scale + res.scaler.shift
    ridge = BayesianRidge().fit(X[:30].astype(np.float64), linear[:30])  # the same ridge, on the raw target
    ridge_mean = torch.as_tensor(ridge.predict(X[300:].astype(np.float64)))
    torch.testing.assert_close(pred.mean_n.double(), network_mean + ridge_mean, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(pred.dist.mean_n, pred.mean_n)


def test_learners_that_read_their_networks_raw_never_take_the_residual() -> None:
    from alkit.learners.deep_ensemble import DeepEnsembleLearner
    from alkit.learners.mc_dropout import MCDropoutLearner

    X, linear, _, spec = _regression_sets(2)
    for learner, nets in ((MCDropoutLearner("regression", input=spec, T=2, capacity="prior"), lambda l: [l.net]),
                          (DeepEnsembleLearner("regression", input=spec, M=2, capacity="prior"), lambda l: l.members)):
        report = learner.fit(X[:40], linear[:40], seed=0) or {}
        assert "capacity_ridge" not in report
        assert all(net.ridge is None for net in nets(learner))


def test_a_regression_hint_carries_the_residual_choice() -> None:
    X, linear, _, spec = _regression_sets(3)
    first = MLPLearner("regression", input=spec)
    hint = CapacityHint.from_report(first.fit(X[:40], linear[:40], seed=0))
    assert hint is not None and hint.ridge == "residual"
    again = MLPLearner("regression", input=spec)
    again.capacity_hint = hint
    report = again.fit(X[:60], linear[:60], seed=1)  # fewer than twice the labels: reused, not chosen again
    assert report["capacity_ridge"] == 1.0 and report["capacity_n"] == 40.0 and "cv_crps_plain" not in report


def test_cross_fitted_residual_targets_are_out_of_fold_and_larger_than_in_sample_ones() -> None:
    """'cross-fitted' trains the network on the ridge's out-of-fold residuals, whose spread is that of
    its errors on new items (larger than its in-sample residuals'); the predicting ridge is the same."""
    X, linear, _, spec = _regression_sets(4)
    fits = {t: MLPLearner("regression", input=spec, capacity="fixed", ridge="residual", residual_targets=t)
            for t in ("in-sample", "cross-fitted")}
    for learner in fits.values():
        learner.fit(X[:30], linear[:30], seed=0)
    assert fits["cross-fitted"].scaler.scale > 1.1 * fits["in-sample"].scaler.scale
    np.testing.assert_allclose(fits["cross-fitted"].ridge.model.coef_, fits["in-sample"].ridge.model.coef_)
    with pytest.raises(ValueError, match="residual_targets"):
        MLPLearner("regression", residual_targets="oof")


def test_the_predictive_ridge_mode_predicts_the_bayesian_ridge_and_keeps_the_residual_network() -> None:
    """ridge='predictive': the Prediction is sklearn's BayesianRidge (mean, predictive std with the
    noise) on the same labels; the network still learns the residual and gives the embedding."""
    from sklearn.linear_model import BayesianRidge

    X, linear, _, spec = _regression_sets(5)
    learner = MLPLearner("regression", input=spec, capacity="fixed", ridge="predictive")
    learner.fit(X[:50], linear[:50], seed=0)
    pred = learner.predict(X[300:])
    mean, std = BayesianRidge().fit(X[:50].astype(np.float64), linear[:50]).predict(X[300:].astype(np.float64),
                                                                                    return_std=True)
    np.testing.assert_allclose(pred.mean_n.double().numpy(), mean, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(pred.dist.var_n.double().numpy(), std**2, rtol=1e-4)
    assert pred.embedding_n_d.shape == (300, learner.backbone.out_dim) and learner.scaler is not None
    with pytest.raises(ValueError, match="ridge must be"):
        MLPLearner("regression", ridge="mean")


def test_the_ridge_is_the_same_model_in_any_unit_of_the_target() -> None:
    """scikit-learn's BayesianRidge on a target in the thousands stopped after 2 iterations at w = 0 (the mean for
    every item), so the plain MLP's capacity choice flipped with the target's unit (a black-box check); alkit fits
    it on the standardised target: predictions scale with the target, the choice does not move."""
    from alkit.models.learner import RidgePredictive

    X, linear, _, spec = _regression_sets(5)
    at = {}
    for scale in (1.0, 1e4):
        ridge = RidgePredictive()
        ridge.fit(X[:40], linear[:40] * scale, seed=0)
        dist = ridge.distribution(X[300:])
        learner = MLPLearner("regression", input=spec)
        report = learner.fit(X[:40], linear[:40] * scale, seed=0)
        at[scale] = (dist.mean_n.numpy() / scale, dist.var_n.numpy() / scale**2, report["capacity_ridge"],
                     report["cv_crps_ridge-residual"] / scale)
    np.testing.assert_allclose(at[1e4][0], at[1.0][0], rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(at[1e4][1], at[1.0][1], rtol=1e-6)
    assert at[1e4][2] == at[1.0][2] and at[1e4][3] == pytest.approx(at[1.0][3], rel=1e-3)


def test_the_ridge_candidate_is_cross_validated_without_a_network() -> None:
    from alkit.models.capacity import REGRESSION_CHOICES
    from alkit.models.learner import RidgePredictive, capacity_scorer

    make = capacity_scorer(None, None, "regression")
    assert isinstance(make(REGRESSION_CHOICES["ridge"]), RidgePredictive)
    assert make(REGRESSION_CHOICES["ridge-residual"]).ridge_mode == "residual"


def test_a_hint_reads_signals_recorded_before_the_ridge_modes_and_heads() -> None:
    """Runs recorded with the earlier ``residual`` flag (and without ``head``) resume with the same choice."""
    old = {"n_labels": 40, "depth": 0, "prior_l2": 30.0, "residual": True}
    assert CapacityHint.from_signal(old) == CapacityHint(40, 0, 30.0, "residual", "")
    assert CapacityHint.from_signal({**old, "residual": False}).ridge == "off"
    assert CapacityHint.from_signal({"n_labels": 40, "depth": 1, "prior_l2": 10.0}).head == ""


class _FixedProbs:
    """A fake scorer for choose_capacity: the probability it gives the true class (column 1 of X
    holds the label) is ``p_good`` on items flagged in column 0 and ``p_bad`` elsewhere."""

    def __init__(self, p_good: float, p_bad: float) -> None:
        self.p_good, self.p_bad = p_good, p_bad

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        return {}

    def predict(self, X_n_f: np.ndarray) -> Prediction:
        p_true = np.where(X_n_f[:, 0] > 0, self.p_good, self.p_bad)
        y = X_n_f[:, 1].astype(int)
        probs = np.empty((len(y), 2))
        probs[np.arange(len(y)), y] = p_true
        probs[np.arange(len(y)), 1 - y] = 1 - p_true
        n = len(y)
        return Prediction(torch.zeros(n), torch.zeros(n), torch.zeros(n, 0), probs_n_C=torch.as_tensor(probs))


def test_the_one_standard_error_rule_keeps_the_first_candidate_until_the_gap_outgrows_its_noise() -> None:
    """The second candidate is better on average (NLL 0.607 against log 2) but by a gap that is noise
    at 12 labels and not at 600: without ``one_se`` it wins at both, with it only at 600."""
    first, second = Capacity("first", 0, 1.0), Capacity("second", 0, 2.0)
    make = {"first": _FixedProbs(0.5, 0.5), "second": _FixedProbs(0.99, 0.3)}
    for n, wins_with_se in ((12, False), (600, True)):
        y = np.arange(n) % 2
        X = np.stack([(np.arange(n) // 2) % 2, y], 1).astype(np.float32)
        for one_se, expected in ((False, "second"), (True, "second" if wins_with_se else "first")):
            chosen, scores = choose_capacity(X, y, lambda c: make[c.name], seed=0, candidates=(first, second),
                                             one_se=one_se)
            assert chosen.name == expected, (n, one_se)
        assert scores["second"] < scores["first"] == pytest.approx(np.log(2))


def test_a_linear_backbone_passes_the_standardised_inputs_on_and_trains_nothing() -> None:
    from alkit.models.backbone import LINEAR_DEPTH, ResidualMLP

    X = torch.as_tensor(np.random.default_rng(0).normal(3.0, 2.0, (40, 5)), dtype=torch.float32)
    net = ResidualMLP(5, depth=LINEAR_DEPTH)
    net.set_input_stats(X)
    assert net.out_dim == 5 and not list(net.parameters())
    torch.testing.assert_close(net(X), (X - X.mean(0)) / X.std(0))
    with pytest.raises(ValueError, match="depth must be >= -1"):
        ResidualMLP(5, depth=-2)
    with pytest.raises(ValueError, match="feature_map 'none'"):
        ResidualMLP(5, depth=LINEAR_DEPTH, feature_map="l2")


def test_prior_linear_mode_adds_a_linear_model_to_the_choice_and_its_hint_carries_it() -> None:
    from alkit.models.capacity import PRIOR_LINEAR, PRIOR_LINEAR_CANDIDATES

    assert PRIOR_LINEAR_CANDIDATES == (*PRIOR_CANDIDATES, PRIOR_LINEAR) and PRIOR_LINEAR.depth == -1
    X, y, spec = _cancer(20, seed=1)
    assert candidates_for(spec, "prior-linear") == PRIOR_LINEAR_CANDIDATES
    learner = VBLLLearner("classification", 2, input=spec, capacity="prior-linear")
    report = learner.fit(X, y, seed=0)
    scores = {c.name: report[f"cv_nll_{c.name}"] for c in PRIOR_LINEAR_CANDIDATES}
    best = min(PRIOR_LINEAR_CANDIDATES, key=lambda c: scores[c.name])
    assert (report["capacity_depth"], report["capacity_prior_l2"]) == (best.depth, best.prior_l2)
    if best is PRIOR_LINEAR:  # the head sits on the inputs themselves
        assert learner.backbone.out_dim == X.shape[1] and not list(learner.backbone.parameters())
    hint = CapacityHint.from_report(report)
    assert hint.reusable(30, PRIOR_LINEAR_CANDIDATES) == best
    assert candidates_for(spec, "prior") == PRIOR_CANDIDATES  # the default mode is unchanged
    # a linear VBLL and MLP can also be asked for outright: the head sits on the inputs, and from these
    # 20 labels they classify the rest of the data set well (measured 0.93-0.96 over label draws)
    X_all, y_all = load_breast_cancer(return_X_y=True)
    X_all = X_all.astype(np.float32)
    rest = np.flatnonzero(~(X_all[:, None, :] == X[None]).all(-1).any(1))
    assert len(rest) == len(X_all) - 20
    for make in (lambda: VBLLLearner("classification", 2, input=spec, depth=-1),
                 lambda: MLPLearner("classification", 2, input=spec, depth=-1)):
        m = make()
        m.fit(X, y, seed=0)
        assert m.backbone.out_dim == X.shape[1] and not list(m.backbone.parameters())
        pred = m.predict(X_all[rest])
        assert pred.probs_n_C.shape == (len(rest), 2) and bool(torch.isfinite(pred.epistemic_n).all())
        torch.testing.assert_close(pred.probs_n_C.sum(1), torch.ones(len(rest)), rtol=0, atol=1e-5)
        acc = float((pred.probs_n_C.argmax(1).numpy() == y_all[rest]).mean())
        assert acc > 0.85, (type(m).__name__, acc)


def test_cv_folds_take_regression_targets_of_two_or_one_value() -> None:
    """A regression target of two non-whole values (0.5 / 2.5), or a constant one, failed every run at its
    first fit: StratifiedKFold refused it as 'continuous'.  Such targets get plain k-fold; classes and
    whole-number values are still stratified."""
    from alkit.models.capacity import cv_folds

    for y in (np.array([0.5, 2.5] * 10), np.full(20, 3.5)):
        folds = cv_folds(y, 3, seed=0)
        assert sorted(np.concatenate(folds).tolist()) == list(range(20)) and len(folds) == 3
    y = np.array([0] * 12 + [1] * 6)
    for held in cv_folds(y, 3, seed=0):  # stratified: each fold holds a third of each class
        assert (y[held] == 1).sum() == 2 and (y[held] == 0).sum() == 4
