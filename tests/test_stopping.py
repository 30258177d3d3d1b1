"""Stopping rules: each fires on a constructed sequence of cycles where it must and not where it
must not; `alkit run --stop` ends a run, records which rule fired and why, and a larger budget
continues it."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from conftest import project_cli

from alkit.stopping import History, first_fired, forecast_at, get_rule


def _history(preds: list[list[int]] | None = None, scores: list[tuple[float, float]] | None = None,
             accs: list[float] | None = None, start: int = 20) -> History:
    n = len(preds or scores or accs or [])
    signals = [{} for _ in range(n)]
    for i in range(n):
        if preds:
            signals[i]["stop_preds"] = preds[i]
        if scores:
            signals[i]["score_max"], signals[i]["score_mean"] = scores[i]
    metrics = [{"accuracy": a} for a in accs] if accs else [{} for _ in range(n)]
    return History([start + 10 * i for i in range(n)], metrics, signals, 10, 300, "accuracy")


def test_kappa_fires_only_after_k_stable_pairs() -> None:
    rng = np.random.default_rng(0)
    base = rng.integers(0, 5, 400).tolist()
    noisy = [rng.integers(0, 5, 400).tolist() for _ in range(3)]
    rule = get_rule("kappa:threshold=0.99,k=3")
    assert not rule.check(_history(noisy + [base])).fired  # consecutive models disagree
    assert not rule.check(_history(noisy + [base, base, base])).fired  # 2 stable pairs of the 3 needed
    d = rule.check(_history(noisy + [base, base, base, base]))
    assert d.fired and "for 3 cycles" in d.why and d.details["kappa"] == pytest.approx(1.0)
    almost = list(base)
    almost[:40] = [(v + 1) % 5 for v in almost[:40]]  # 10 % of the stop set changes class
    assert not rule.check(_history(noisy + [base, almost, base, almost])).fired
    d = get_rule("kappa:threshold=0.8,k=1").check(_history([base, almost]))
    # Cohen's kappa by hand: (p_o - p_e) / (1 - p_e), p_e from the two models' class frequencies
    a, b = np.asarray(base), np.asarray(almost)
    p_o = float((a == b).mean())
    p_e = sum(float((a == c).mean()) * float((b == c).mean()) for c in range(5))
    assert p_o == pytest.approx(0.9)
    assert d.fired and d.details["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e), rel=1e-12)


def test_uncertainty_rules_follow_the_scores() -> None:
    seq = [(0.4, 0.1), (0.2, 0.05), (0.009, 0.004)]
    assert not get_rule("max-uncertainty").check(_history(scores=seq[:2])).fired
    assert get_rule("max-uncertainty").check(_history(scores=seq)).fired  # best candidate 0.009 < 0.01
    assert get_rule("overall-uncertainty").check(_history(scores=seq)).fired  # mean 0.004 < 0.005
    assert not get_rule("overall-uncertainty:threshold=0.001").check(_history(scores=seq)).fired
    assert not get_rule("max-uncertainty").check(_history(preds=[[0], [0]])).fired  # no score recorded


def test_forecast_fires_when_the_curve_flattens() -> None:
    curve = [0.97 - 1.5 * (20 + 10 * i) ** -0.7 for i in range(20)]  # a saturating learning curve
    rule = get_rule("forecast:gain=0.002,k=1")
    gains = [0.97 - 1.5 * (20 + 10 * (i + 1)) ** -0.7 - c for i, c in enumerate(curve)]
    first = next(i for i, g in enumerate(gains) if g < 0.002)
    assert not rule.check(_history(accs=curve[:4])).fired  # fewer points than min_points
    assert not rule.check(_history(accs=curve[: max(5, first - 1)])).fired
    assert rule.check(_history(accs=curve[: first + 2])).fired
    fc = forecast_at([20 + 10 * i for i in range(12)], curve[:12], 300)
    assert fc["lo"] <= fc["mean"] <= fc["hi"] <= 1.0
    assert fc["mean"] == pytest.approx(0.97 - 1.5 * 300 ** -0.7, abs=0.01)
    # on noisy curves the 5-95 % band has width and covers the true value at 300 labels on most noise draws
    ns, true = [20 + 10 * i for i in range(15)], 0.97 - 1.5 * 300 ** -0.7
    bands = []
    for s in range(30):
        noise = np.random.default_rng(s).normal(0, 0.01, len(ns))
        bands.append(forecast_at(ns, [0.97 - 1.5 * n ** -0.7 + e for n, e in zip(ns, noise)], 300))
    assert all(b["lo"] < b["mean"] < b["hi"] for b in bands)
    assert np.mean([b["lo"] <= true <= b["hi"] for b in bands]) >= 0.8
    assert np.median([b["hi"] - b["lo"] for b in bands]) < 0.15  # a band, not the whole scale


def test_rule_specs_are_checked() -> None:
    for spec, says in (("nosuch", "unknown stopping rule 'nosuch'"), ("kappa:k", "key=value"),
                       ("kappa:k=two", "'two' is not a number"), ("kappa:level=3", "unknown parameter 'level'"),
                       ("kappa:threshold=2", "threshold must be in"),
                       # these ran and failed mid-run (k=2.5: a float slice) or never meant anything (nan, inf)
                       ("kappa:k=2.5", "k=2.5 must be a whole number"), ("forecast:min_points=4.5", "whole number"),
                       ("max-uncertainty:threshold=nan", "not a finite number"),
                       ("overall-uncertainty:threshold=inf", "not a finite number"), ("forecast:gain=nan", "finite"),
                       ("kappa:threshold=0.5,threshold=0.9", "threshold is given twice"),
                       # a black-box check: a word for a name that is no parameter was "not a number", and
                       # thresholds or counts that can never fire were taken
                       ("forecast:metric=balanced_accuracy", "unknown parameter 'metric'"),
                       ("forecast:gain=small", "gain='small' is not a number"),
                       ("max-uncertainty:threshold=-1", "threshold must be positive"),
                       ("overall-uncertainty:threshold=0", "threshold must be positive"),
                       ("kappa:k=1e20", "k from 1 to 100000"), ("forecast:k=1e9", "at most 100000")):
        with pytest.raises(ValueError, match=says):
            get_rule(spec)
    rule = get_rule("kappa:k=2.0")  # a whole number written as a float is that number
    assert rule.k == 2 and isinstance(rule.k, int)
    assert get_rule("forecast:gain=0.01,k=2.0,min_points=5.0").min_points == 5
    assert first_fired([get_rule("max-uncertainty"), get_rule("overall-uncertainty")],
                       _history(scores=[(0.5, 0.001)])).rule == "overall-uncertainty"


def test_cli_stop_records_the_rule_and_a_larger_budget_continues(tmp_path: Path, digits_csv: Path) -> None:
    alkit = project_cli(tmp_path)

    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    run = ["run", "--strategy", "epistemic"]
    first = alkit(*run, "--budget", "30", "--stop", "max-uncertainty:threshold=1e9")  # fires at the first model
    assert first.returncode == 0 and "stopped by max-uncertainty at cycle 1 with 10 labels" in first.stdout, first.stdout
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "stopped" and st["n_labeled"] == 10 and st["stopped"]["rule"] == "max-uncertainty"
    assert "stopped by max-uncertainty" in alkit("status").stdout
    again = alkit(*run, "--budget", "30")  # same budget: stays stopped, says why
    assert again.returncode == 0 and "was stopped by max-uncertainty" in " ".join(again.stdout.split())
    # a larger budget: it goes on, from the cycle it stopped at (where no rule decides again: an uncertainty
    # rule read the same scores there and stopped it at once, for ever, a black-box check), and the same
    # command without --stop keeps the recorded rule (it ran without it, while --resume kept it), which
    # fires again at the next model
    more = alkit(*run, "--budget", "40")
    assert more.returncode == 0, more.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "stopped" and st["n_labeled"] == 20 and st["stopped"]["cycle"] == 2, st
    more = alkit(*run, "--budget", "40", "--stop", "none")  # --stop replaces the rules in this form too
    assert more.returncode == 0, more.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "complete" and st["n_labeled"] == 40
    assert st["stopped"] is None and st["last_stop"]["cycle"] == 2 and st["stop_rules"] == []  # on record
    assert alkit(*run, "--budget", "50").returncode == 0  # `none` was recorded: no rule from now on
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "complete" and st["n_labeled"] == 50
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        sig = json.loads(db.execute("select data from cycle_signals where cycle = 2").fetchone()[0])
    assert len(sig["stop_preds"]) == 320 and 0 <= sig["score_max"] and sig["score_mean"] <= sig["score_max"]
    bad = alkit(*run, "--budget", "80", "--stop", "kappa:k=0")
    assert bad.returncode == 2 and "k from 1 to" in bad.stderr
    # the stop hint's own command, `--resume NAME --budget N`, re-ran the recorded rule, which fired again at
    # once, and --resume refused any --stop (a black-box check): --stop replaces the rules, `none` drops them
    name = st["name"]
    alkit(*run, "--budget", "50", "--stop", "max-uncertainty:threshold=1e9", "--name", "w")
    hint = " ".join(alkit(*run, "--budget", "50", "--name", "w").stdout.split())
    assert "`alkit run --resume w --budget N`, whose rules watch the new cycles; add `--stop none`" in hint, hint
    refused = alkit("run", "--resume", "w", "--budget", "60", "--stop", "bogus")
    assert refused.returncode == 2 and "unknown stopping rule 'bogus'" in refused.stderr
    again = alkit("run", "--resume", "w", "--budget", "60")  # the recorded rule watches the new cycles: fires again
    w = json.loads(alkit("status", "--json").stdout)[1]
    assert w["status"] == "stopped" and w["n_labeled"] == 20, again.stdout  # after one more batch, not at once
    done = alkit("run", "--resume", "w", "--budget", "60", "--stop", "none")
    assert done.returncode == 0, done.stderr
    w = next(r for r in json.loads(alkit("status", "--json").stdout) if r["name"] == "w")
    assert w["status"] == "complete" and w["n_labeled"] == 60
    assert alkit("run", "--resume", "w", "--budget", "70").returncode == 0  # `none` was recorded: runs to 70
    w = next(r for r in json.loads(alkit("status", "--json").stdout) if r["name"] == "w")
    assert w["status"] == "complete" and w["n_labeled"] == 70 and name != "w"
    # margin's scores are <= 0: the uncertainty rules' thresholds stopped every margin run at its first model
    signed = alkit("run", "--strategy", "margin", "--budget", "50", "--stop", "max-uncertainty", "--name", "m")
    assert signed.returncode == 2 and "the margin acquisition's scores are <= 0" in signed.stderr, signed.stderr


def test_forecast_without_a_test_split_follows_the_cross_validated_curve(tmp_path: Path, digits_csv: Path) -> None:
    """No test split: each cycle's learning-curve point is 3-fold cross-validation on the labels,
    which tracks the held-out accuracy of a project that has a test split, and the forecast
    rule fires on it."""

    from alkit.config import load_project
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.ingest import InitOptions, init_project

    opts = dict(id_col="id", label_col="label", hide_labels=True)
    init_project(digits_csv, tmp_path / "none", InitOptions(**opts, test_frac=0.0, progress=False))
    loop = ActiveLoop(load_project(tmp_path / "none"))
    req = RunRequest(strategy="random", scorer="vbll", budget=120, batch_size=20,
                     stop=["forecast:gain=0.5,min_points=4,k=1"])
    res = loop.run(req)
    assert res[-1].stopped is not None and res[-1].stopped["rule"] == "forecast"
    assert "cv_accuracy" in res[-1].stopped["why"]
    cv = [r.metrics["cv_accuracy"] for r in res if r.metrics]
    assert len(cv) >= 4 and all(0.0 <= v <= 1.0 for v in cv) and cv[-1] > cv[0]
    # `alkit plot` draws that curve by default (it asked for a metric the runs do not log)
    from typer.testing import CliRunner

    from alkit.cli import app

    out = CliRunner().invoke(app, ["plot", "-p", str(tmp_path / "none"), "--out", str(tmp_path / "cv.png")])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "cv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # a run without --stop forecast has no such curve: said so, not 'no model fitted' (a black-box check)
    loop.run(RunRequest(strategy="random", scorer="vbll", budget=40, batch_size=20, seed=1))
    out = CliRunner().invoke(app, ["plot", "-p", str(tmp_path / "none"), "--out", str(tmp_path / "cv.png")])
    said = " ".join(out.output.split())
    assert out.exit_code == 0 and "without a test split only `--stop forecast` runs record cv_accuracy" in said
    assert "no model fitted" not in said
    # the estimate against the held-out accuracy of the same learner recipe on a test split
    init_project(digits_csv, tmp_path / "test", InitOptions(**opts, test_frac=0.25, progress=False))
    held = ActiveLoop(load_project(tmp_path / "test"))
    plan = held.resolve(RunRequest(strategy="random", scorer="vbll", budget=100))
    keys = held.store.pool_keys(("unlabeled",))[:100]
    hidden = held.store.hidden_labels(keys)
    X, y = held.features.take(keys), np.array([held.project.encode_label(hidden[int(k)]) for k in keys])
    learner = plan.make_learner(held.input_spec())
    learner.fit(X, y, seed=0)
    test_acc = held._evaluate(learner)["accuracy"]
    cv_acc = held._cross_validate(plan, X, y, seed=0)["cv_accuracy"]
    assert abs(cv_acc - test_acc) < 0.12, (cv_acc, test_acc)


def test_regression_stopping_does_not_depend_on_the_targets_units(tmp_path: Path) -> None:
    """A black-box check: sklearn's diabetes target in its units, x 1e-8 and x 1e7 stopped after 70 labels, ran
    to its budget, or could never stop, by the same rule.  forecast now reads a falling metric's gain as a share
    of it (the same cycle fires at every scale), and the uncertainty rules, whose regression scores are in the
    target's units, need a threshold given on a regression project."""
    from alkit.loop import ActiveLoop, LoopError, RunRequest
    from alkit.config import load_project
    from alkit.pools.ingest import InitOptions, init_project
    from sklearn.datasets import load_diabetes

    ns = [20 + 10 * i for i in range(40)]
    crps = [40.0 + 100.0 * n ** -0.9 for n in ns]  # a saturating, falling learning curve

    def first_firing(scale: float) -> int | None:
        rule = get_rule("forecast")
        for i in range(len(ns)):
            h = History(ns[: i + 1], [{"crps": c * scale} for c in crps[: i + 1]], [{} for _ in range(i + 1)], 10, 300,
                        "crps")
            if rule.check(h).fired:
                return i
        return None

    fired = [first_firing(s) for s in (1e-8, 1.0, 1e7)]
    assert fired[0] is not None and fired == [fired[0]] * 3
    h = History(ns[:8], [{"crps": c} for c in crps[:8]], [{} for _ in range(8)], 10, 300, "crps")
    assert "of its crps" in get_rule("forecast").check(h).why
    X, y = load_diabetes(return_X_y=True)
    import polars as pl

    pl.DataFrame({"id": [f"r{i}" for i in range(len(y))], **{f"x{j}": X[:, j] for j in range(X.shape[1])},
                  "target": y}).write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="target", hide_labels=True))
    loop = ActiveLoop(load_project(tmp_path / "p"))
    for spec in ("max-uncertainty", "overall-uncertainty"):
        with pytest.raises(LoopError, match=rf"--stop {spec}: on a regression project the candidates' scores depend "
                                            rf"on the target's units.*{spec}:threshold=VALUE"):
            loop.resolve(RunRequest(strategy="epistemic", budget=30, stop=[spec]))
        assert loop.resolve(RunRequest(strategy="epistemic", budget=30, stop=[f"{spec}:threshold=50"])).spec.budget == 30
    with pytest.raises(LoopError, match="--stop kappa compares predicted classes"):
        loop.resolve(RunRequest(strategy="epistemic", budget=30, stop=["kappa"]))


def test_a_hand_built_history_without_the_rules_signal_is_refused() -> None:
    """The README's own-loop example records kappa's stop_preds; with another rule swapped in ('any --stop
    RULE'), max-uncertainty, overall-uncertainty and forecast never fired and said only 'no acquisition score
    recorded yet' (a black-box check).  From 3 cycles on, a history none of whose cycles holds the rule's signal
    is refused by name; alkit run's own history (waits=True) still waits, as a run may go cycles without a model."""
    preds = _history(preds=[[0, 1]] * 3)
    for spec, signal in (("max-uncertainty", "'score_max'"), ("overall-uncertainty", "'score_mean'"),
                         ("forecast", "the test metric 'accuracy'")):
        assert not get_rule(spec).check(_history(preds=[[0, 1]] * 2)).fired  # two cycles: it waits
        with pytest.raises(ValueError, match=rf"the {spec} rule reads .*{signal}.*none of the 3 cycles"):
            get_rule(spec).check(preds)
        waits = History(preds.n_labeled, preds.metrics, preds.signals, 10, 300, "accuracy", waits=True)
        assert not get_rule(spec).check(waits).fired
    with pytest.raises(ValueError, match="the kappa rule reads the signal 'stop_preds'"):
        get_rule("kappa").check(_history(scores=[(0.5, 0.1)] * 3))


def test_a_hand_built_history_is_checked_field_by_field() -> None:
    """Black-box checks of the library's own-loop use: accuracy in percent stopped a forecast at once ('gain
    0.0000'), stop_preds as a NumPy array or tensor failed as an 'ambiguous truth value', a stop set that changed
    size made kappa never fire, a cycle that was no triple was a bare IndexError, metric='acc' and batch_size=0
    were taken, and the uncertainty rules' default threshold fired on a regression history that `alkit run`
    refuses it for."""
    import torch

    ns = [20 + 10 * i for i in range(8)]
    with pytest.raises(ValueError, match=r"cycle 0: accuracy 50.0 lies outside \[0, 1\] \(a percentage\?"):
        History.of([(n, {"accuracy": 50.0 + i}, {}) for i, n in enumerate(ns)], 10, 300, "accuracy")
    with pytest.raises(ValueError, match="metric 'acc' is no metric alkit records"):
        History.of([], 10, 300, "acc")
    with pytest.raises(ValueError, match="batch_size and budget must be whole numbers of at least 1"):
        History.of([], 0, 300, "accuracy")
    with pytest.raises(ValueError, match="batch_size and budget must be whole numbers of at least 1"):
        History.of([], True, 300, "accuracy")  # a bool is no batch size
    assert History.of([], np.int64(10), np.int32(300), "accuracy").batch_size == 10  # NumPy integers are
    with pytest.raises(ValueError, match="cycle 0: accuracy is NaN"):  # it said 'a percentage?'
        History.of([(20, {"accuracy": float("nan")}, {})], 10, 300, "accuracy")
    with pytest.raises(ValueError, match="cycle 1: each cycle is a triple"):
        History.of([(20, {}, {}), (30, {})], 10, 300, "accuracy")
    same = np.arange(40) % 3
    for form in (same, torch.as_tensor(same)):
        h = History.of([(n, {}, {"stop_preds": form}) for n in ns[:4]], 10, 300, "accuracy")
        assert get_rule("kappa").check(h).fired  # four identical models: three stable pairs
    with pytest.raises(ValueError, match="one fixed stop set, but the cycles' stop_preds hold 30, 40 items"):
        get_rule("kappa").check(History.of([(20, {}, {"stop_preds": same}), (30, {}, {"stop_preds": same[:30]})],
                                           10, 300, "accuracy"))
    scores = [(n, {"crps": 40.0}, {"score_max": 1e-4, "score_mean": 1e-5}) for n in ns[:3]]
    for spec in ("max-uncertainty", "overall-uncertainty"):
        with pytest.raises(ValueError, match=f"the {spec} rule's default threshold .* give threshold=VALUE"):
            get_rule(spec).check(History.of(scores, 10, 300, "crps"))
        assert get_rule(f"{spec}:threshold=1e-3").check(History.of(scores, 10, 300, "crps")).fired


def test_the_forecast_band_of_accuracy_stays_in_its_range() -> None:
    """`status` showed 'predicted cv_accuracy ... (5-95 %: -0.902-1.000)' on a noisy curve of five points (a
    black-box check): accuracy's band is clipped to [0, 1], as its top already was."""
    noisy = [0.17, 0.14, 0.50, 0.56, 0.20]
    bands = [forecast_at([3, 4, 5, 6, 7], noisy, 30, seed=s) for s in range(20)]
    assert all(b is None or 0.0 <= b["lo"] <= b["mean"] <= b["hi"] <= 1.0 for b in bands)


def test_a_regression_run_recorded_with_a_forecast_gain_before_the_share_reading_is_told(tmp_path: Path) -> None:
    """A regression run's `--stop forecast:gain=0.02` read the gain in CRPS units when it started; today the same
    number is a share of the CRPS, so the continued run stopped at once, unsaid (a check of upgraded projects)."""
    from datetime import datetime

    import polars as pl
    from sqlalchemy import update

    from alkit.config import load_project
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.ingest import InitOptions, init_project
    from alkit.pools.schema import Run

    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    pl.DataFrame({"id": np.arange(200), **{f"f{j}": X[:, j] for j in range(3)},
                  "y": 30 * X[:, 0] + rng.normal(size=200)}).write_csv(tmp_path / "r.csv")
    init_project(tmp_path / "r.csv", tmp_path / "p", InitOptions(id_col="id", label_col="y", hide_labels=True))
    loop = ActiveLoop(load_project(tmp_path / "p"))
    req = RunRequest(strategy="epistemic", budget=20, stop=["forecast:gain=0.02"], max_cycles=1)
    loop.run(req)
    assert not [n for n in loop.resolve(req).notes if "a share of the metric" in n]  # started today: no note
    with loop.store.session() as s:
        s.execute(update(Run).values(created_at=datetime(2026, 12, 6, 12, 0)))
    said = [n for n in loop.resolve(req).notes if "a share of the metric" in n]
    assert said and "started before 2026-12-07, when --stop forecast:gain=0.02 read a regression run's gain" in said[0]


def test_a_regression_run_recorded_with_an_untuned_uncertainty_rule_names_its_record(tmp_path: Path) -> None:
    """A regression run an earlier alkit recorded with `--stop max-uncertainty` (no threshold) is refused on resume
    in words naming --stop, which the command did not give; the refusal names the record and --stop none."""
    import polars as pl

    from alkit.config import load_project
    from alkit.loop import ActiveLoop, LoopError, RunRequest
    from alkit.pools.ingest import InitOptions, init_project
    from alkit.pools.store import RunSpec

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    pl.DataFrame({"id": np.arange(120), **{f"f{j}": X[:, j] for j in range(3)},
                  "y": X[:, 0] + rng.normal(size=120)}).write_csv(tmp_path / "r.csv")
    init_project(tmp_path / "r.csv", tmp_path / "p", InitOptions(id_col="id", label_col="y", hide_labels=True))
    loop = ActiveLoop(load_project(tmp_path / "p"))
    options = {"candidates": None, "stratify_by": None, "learner": {}, "train": {}, "engine": "local",
               "ray_address": None, "acquisition": "epistemic", "initial_selector": "coldstart",
               "stop": ["max-uncertainty"], "curve": "epistemic", "code": {}, "naming": 7}
    loop.store.get_or_create_run(RunSpec("epistemic-b10-s1", "epistemic", "vbll", 1, 40, 10, 10, options))
    with pytest.raises(LoopError, match=r"^run 'epistemic-b10-s1' was recorded with --stop max-uncertainty by an "
                                        r"earlier alkit: .*; --stop none continues the run without a rule$"):
        loop.resolve(RunRequest(strategy="epistemic", budget=60, seed=1, stop=["max-uncertainty"]))


def test_a_continued_runs_forecast_band_is_the_fit_that_stopped_it(tmp_path: Path, digits_csv: Path) -> None:
    """A run stopped by `forecast`, continued by a larger budget and stopped again: the rule decided on the
    cycles from the first stop on, while `status` showed a band fitted to the whole curve, tighter and another
    curve (docs/commands.md, "After a stop": "status's forecast band is that fit's"; a black-box check).  And
    the reason printed a gain of 0.004998 as '0.0050 (< 0.005)'."""
    from alkit.stopping.forecast import _beside

    assert [_beside(0.004998, 0.005), _beside(0.0023306, 0.005), _beside(0.00099999, 0.001)] == \
        ["0.004998", "0.002331", "0.00099999"]
    assert _beside(0.0051, 0.005) == "0.0051" and _beside(0.005, 0.005) == "0.005"  # 0.005 is not < 0.005
    alkit = project_cli(tmp_path)
    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    run = ["run", "--strategy", "margin", "--seed", "7"]
    first = alkit(*run, "--budget", "150", "--stop", "forecast:gain=0.005,k=1,min_points=4")
    assert first.returncode == 0, first.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "stopped", st
    stop1 = st["stopped"]["cycle"]
    assert st["stopped"]["since"] == -1  # the first stop's rule read every cycle
    more = alkit(*run, "--budget", "300")
    assert more.returncode == 0, more.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["stopped"]["since"] == stop1 and st["stopped"]["cycle"] >= stop1 + 3, st
    gain = float(st["stopped"]["why"].split("gain ")[1].split()[0])
    assert gain < 0.005
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        rows = db.execute("select cycle, n_labeled, metrics from cycles order by cycle").fetchall()
    pts = [(c, n, json.loads(m)["accuracy"]) for c, n, m in rows if "accuracy" in json.loads(m)]
    since = [(n, a) for c, n, a in pts if c >= stop1]
    decided = forecast_at([n for n, _ in since], [a for _, a in since], st["budget"])
    whole = forecast_at([n for _, n, _ in pts], [a for _, _, a in pts], st["budget"])
    fc = st["forecast"]
    assert decided is not None and whole is not None and fc is not None
    assert fc["mean"] == pytest.approx(decided["mean"]) and fc["lo"] == pytest.approx(decided["lo"])
    assert (fc["mean"], fc["lo"]) != pytest.approx((whole["mean"], whole["lo"]))  # the band shown before


def test_the_forecast_at_the_budget_counts_the_labels_a_run_learns_from(tmp_path: Path) -> None:
    """The curve is fitted on the labels a run learns from; `status` read its budget on that axis as its picks alone,
    so a team run beside the project's 100 given labels was predicted 'at the budget (40 labels)', below every point
    of its curve (a black-box check: 0.868 predicted beside 0.992 measured).  It predicts at now's labels plus the
    budget left."""
    import polars as pl
    from conftest import digits_frame

    df = digits_frame(400)
    truth = dict(zip(df["id"], df["label"].cast(pl.Utf8)))
    df.with_columns(pl.when(pl.int_range(pl.len()) < 200).then(pl.col("label")).otherwise(None)).write_csv(
        tmp_path / "d.csv")
    alkit = project_cli(tmp_path)
    assert alkit("init", "d.csv", "--id-col", "id", "--label-col", "label", "--initial-labeled", "100").returncode == 0
    run = ["run", "--strategy", "margin", "--budget", "40", "--stop", "forecast:gain=0.000001,k=1,min_points=4"]
    for _ in range(4):
        assert alkit(*run).returncode == 0
        st = json.loads(alkit("status", "--json").stdout)[0]
        if st["forecast"] and st["status"] == "waiting":  # its queued batch counts as labels to come (it was left out)
            assert st["forecast"]["at"] == 140 and st["n_labeled"] + 10 + 40 - st["n_spent"] == 140, st
        q = pl.read_csv(tmp_path / "p" / "queue.csv", infer_schema=False)
        q.with_columns(pl.Series("label", [truth[i] for i in q["id"]])).write_csv(tmp_path / "a.csv")
        assert alkit("queue", "import", "a.csv").returncode == 0
    last = alkit(*run)
    assert last.returncode == 0, last.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["n_labeled"] - st["n_spent"] == 100 and st["status"] in ("complete", "stopped"), st
    fc = st["forecast"]  # a stopped run's too: at the labels it would learn from with its budget spent
    assert fc["at"] == 140 and fc["lo"] <= fc["mean"] <= fc["hi"], fc
    assert abs(fc["mean"] - st["metrics"]["accuracy"]) < 0.05, (fc, st["metrics"])
    assert "predicted accuracy at the budget (learning from 140 labels)" in " ".join(alkit("status").stdout.split())


def test_a_rule_given_to_a_run_watches_its_cycles_from_then_on(tmp_path: Path, digits_csv: Path) -> None:
    """`--resume NAME --stop RULE` is documented to watch the cycles from then on; a forecast given to a run that had
    run to its budget without one fitted its curve to every earlier cycle and stopped it at once, the larger budget
    buying no label (a black-box check)."""
    alkit = project_cli(tmp_path)
    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    assert alkit("run", "--strategy", "margin", "--budget", "60").returncode == 0
    more = alkit("run", "--resume", "margin-b10-s0", "--budget", "120", "--stop", "forecast:gain=0.5,k=1,min_points=4")
    assert more.returncode == 0, more.stderr
    st = json.loads(alkit("status", "--json").stdout)[0]
    # gain 0.5 fires as soon as the rule may decide: on the redone cycle 6 and three more, at 90 labels
    assert st["status"] == "stopped" and st["stopped"]["cycle"] == 9 and st["n_spent"] == 90, st
    assert st["stopped"]["since"] == 6


def test_a_refused_run_keeps_the_runs_stopping_rules_and_stop(tmp_path: Path, digits_csv: Path) -> None:
    """`--resume NAME --budget 10 --stop none` (a budget below what was spent) was refused, but had already dropped
    the run's rule and turned the stopped run 'interrupted': the next plain --resume spent labels the rule had
    saved (a black-box check).  The rules are recorded once the run is accepted."""
    alkit = project_cli(tmp_path)
    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    first = alkit("run", "--strategy", "margin", "--budget", "100", "--stop", "forecast:gain=0.5,k=1,min_points=4")
    assert first.returncode == 0, first.stderr
    before = json.loads(alkit("status", "--json").stdout)[0]
    assert before["status"] == "stopped"
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        config = db.execute("select config, status from runs").fetchone()
    bad = alkit("run", "--resume", before["name"], "--budget", "10", "--stop", "none")
    assert bad.returncode == 2 and "would be below that" in bad.stderr, bad.stderr
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        assert db.execute("select config, status from runs").fetchone() == config
    again = alkit("run", "--resume", before["name"])  # the rule still holds it: nothing spent
    assert again.returncode == 0
    assert json.loads(alkit("status", "--json").stdout)[0]["n_spent"] == before["n_spent"]


def test_a_larger_budget_buys_a_batch_where_labels_came_in_since_the_stop(tmp_path: Path) -> None:
    """A team run stopped by its rule, continued with a larger budget after other runs' answers came in: its last
    evaluation is kept (the labels differ), and the rule fired again at once on the first continued cycle, buying no
    label (a black-box check); as at a redone stop, no rule decides that cycle."""
    import polars as pl
    from conftest import digits_frame

    df = digits_frame(400)
    truth = dict(zip(df["id"], df["label"].cast(pl.Utf8)))
    df.with_columns(pl.when(pl.int_range(pl.len()) < 150).then(pl.col("label")).otherwise(None)).write_csv(
        tmp_path / "d.csv")
    alkit = project_cli(tmp_path)
    assert alkit("init", "d.csv", "--id-col", "id", "--label-col", "label").returncode == 0

    def answer() -> None:
        q = pl.read_csv(tmp_path / "p" / "queue.csv", infer_schema=False)
        q.with_columns(pl.Series("label", [truth[i] for i in q["id"]])).write_csv(tmp_path / "a.csv")
        assert alkit("queue", "import", "a.csv").returncode == 0

    run = ["run", "--strategy", "margin", "--budget", "100", "--stop", "kappa:threshold=0.05,k=1"]
    for _ in range(4):  # kappa >= 0.05 fires as soon as two models agree a little
        assert alkit(*run).returncode == 0
        if json.loads(alkit("status", "--json").stdout)[0]["status"] == "stopped":
            break
        answer()
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "stopped", st
    assert alkit("run", "--strategy", "random", "--seed", "5", "--budget", "10").returncode == 0
    answer()  # another run's answers: the stopped run learns from more labels now
    more = alkit("run", "--resume", st["name"], "--budget", "110")
    assert more.returncode == 0, more.stderr
    after = [r for r in json.loads(alkit("status", "--json").stdout) if r["name"] == st["name"]][0]
    assert after["n_spent"] == st["n_spent"] + 10, (st, after)  # it bought a batch (queued for people now)


def test_bench_continues_a_run_under_its_recorded_rules(tmp_path: Path, digits_csv: Path) -> None:
    """Rules recorded with a run watch it however it is continued: bench built its requests without them and took a
    stopped run 70 labels past its rule, to 'complete', where `alkit run` with the same budget stopped it again."""
    alkit = project_cli(tmp_path)
    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    rule = "forecast:gain=0.5,k=1,min_points=4"
    assert alkit("run", "--strategy", "margin", "--budget", "60", "--stop", rule).returncode == 0
    st = json.loads(alkit("status", "--json").stdout)[0]
    assert st["status"] == "stopped", st
    bench = alkit("bench", "--budget", "120", "--strategies", "margin", "--seeds", "1")
    assert bench.returncode == 0, bench.stderr
    after = json.loads(alkit("status", "--json").stdout)[0]
    assert after["status"] == "stopped" and after["n_spent"] < 120 and after["stop_rules"] == [rule], after


def test_the_forecast_band_of_a_flat_curve_is_near_its_points() -> None:
    """`status` said 'predicted accuracy at the budget 0.983 (5-95 %: 0.000-1.000)' of five points between 0.975 and
    0.983 (a black-box check): the power law is not identified on a flat curve, and draws from its parameter
    covariance filled the whole range.  The band is then refitted to the resampled residuals."""
    flat = forecast_at([170, 180, 190, 200, 210], [0.9833, 0.975, 0.975, 0.9833, 0.9833], 250)
    assert flat is not None and 0.96 < flat["lo"] <= flat["mean"] <= flat["hi"] <= 1.0, flat
    assert flat["hi"] - flat["lo"] < 0.05, flat
    falling = forecast_at([170, 180, 190, 200, 210], [0.21, 0.2, 0.205, 0.2, 0.199], 250, higher_is_better=False)
    assert falling is not None and 0.15 < falling["lo"] <= falling["mean"] <= falling["hi"] < 0.25, falling
    # CRPS read at a count already measured: '31.512 (5-95 %: 9.290-394.835)' of four points within 37.6-31.1 (a
    # black-box check); a band no wider than the points' span there
    for ns, crps in (([20, 80, 140, 200], [37.614, 34.489, 32.400, 31.137]),
                     ([10, 20, 30, 40, 50, 60], [286.218, 278.624, 276.125, 275.595, 271.147, 270.264])):
        band = forecast_at(ns, crps, ns[-1], higher_is_better=False)
        assert band is not None and band["hi"] - band["lo"] < max(crps) - min(crps), band
        assert band["lo"] <= crps[-1] + 0.5 and band["hi"] >= crps[-1] - 0.5, band
