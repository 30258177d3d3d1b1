"""A run's identity (alkit/runs.py): an option given at its default names no second run, training
settings are part of the name, and runs recorded under an earlier alkit's names are continued."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from alkit.config import load_project
from alkit.loop import ActiveLoop, LoopError, RunRequest
from alkit.models.train import TrainConfig
from alkit.pools.store import RunSpec, StoreError
from alkit.registry import SCORERS, learner_class, make_learner
from alkit.runs import current_curve, curve_name, request_for_run, run_name
from alkit.scorer_options import declared, parse


def _state(value: Any, depth: int = 0) -> Any:
    """A fresh learner's settings, compared as data (networks, built at fit time, by type)."""
    if depth > 5 or isinstance(value, torch.nn.Module):
        return type(value).__name__
    if isinstance(value, (list, tuple)):
        return [_state(v, depth + 1) for v in value]
    if dataclasses.is_dataclass(value) or not hasattr(value, "__dict__"):
        return repr(value)
    return {k: _state(v, depth + 1) for k, v in vars(value).items()}


def test_every_option_given_at_its_declared_default_makes_the_same_learner() -> None:
    """The property that lets a run drop such options from its name and record (without_defaults):
    for every scorer, task and declared option (a default of None included: `-o depth=none`), the
    learner made with it equals the one made without it."""
    checked = 0
    for scorer in SCORERS:
        if scorer in ("sklearn", "bayesvlm"):  # need the user's estimator / a model folder
            continue
        for task, n_classes in (("classification", 3), ("regression", None)):
            base = _state(make_learner(scorer, task, n_classes, train=TrainConfig()))
            for name, option in declared(learner_class(scorer)).items():
                given = make_learner(scorer, task, n_classes, train=TrainConfig(), **{name: option.default})
                assert _state(given) == base, (scorer, task, name, option.default)
                checked += 1
    assert checked > 100


def test_mc_dropout_takes_its_rate_as_p_not_the_backbones_dropout() -> None:
    """`-o dropout=` reached MCDropoutLearner beside its own rate and failed inside the backbone."""
    options = declared(learner_class("mc-dropout"))
    assert "p" in options and "dropout" not in options
    with pytest.raises(ValueError, match="not an option of scorer 'mc-dropout'"):
        parse(learner_class("mc-dropout"), "mc-dropout", ["dropout=0.2"])


def _loop(root: Path) -> ActiveLoop:
    return ActiveLoop(load_project(root))


def test_a_default_option_value_continues_the_default_run(digits_project: Path) -> None:
    loop = _loop(digits_project)
    loop.run(RunRequest(strategy="epistemic", scorer="laplace", budget=20, max_cycles=1))
    default = loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=20)).spec
    same = loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=20,
                                   learner_options={"mc_samples": 16, "width": 128},
                                   train={"steps": 100, "lr": 3e-3})).spec
    assert same.name == default.name == "epistemic-laplace-b10-s0"
    assert same.options["learner"] == {} and same.options["train"] == {}
    other = loop.resolve(RunRequest(strategy="topk", scorer="laplace", budget=20,
                                    learner_options={"mc_samples": 32})).spec
    assert other.name == "topk-laplace-mc_samples=32-b10-s0"
    # under the preset's decision-flip no epistemic score is read: a run of its own with the default's picks
    # (a black-box check); refused, naming the way to read it
    with pytest.raises(LoopError, match=r"^-o mc_samples=32 sets laplace's epistemic score, which the acquisition "
                                        r"'decision-flip' \(strategy 'epistemic'\) does not read: the picks would be "
                                        r"the default run's; rank by it with --acquisition epistemic, or leave it out$"):
        loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=20, learner_options={"mc_samples": 32}))
    for strategy, options in (("margin", {"class_score": "mi"}), ("bald", {"epistemic": "trace", "mi": "probit"})):
        with pytest.raises(LoopError, match="epistemic score, which the acquisition"):
            loop.resolve(RunRequest(strategy=strategy, scorer="vbll" if "class_score" in options else "laplace",
                                    budget=20, learner_options=options))
    # random picks read no score at all; residual_choice, like ridge, is a regression setting (black-box checks)
    with pytest.raises(LoopError, match=r"sets laplace's epistemic score, which strategy 'random' \(it picks without "
                                        r"a score\) does not read"):
        loop.resolve(RunRequest(strategy="random", scorer="laplace", budget=20, learner_options={"mc_samples": 32}))
    with pytest.raises(LoopError, match="option residual_choice applies to regression projects only"):
        loop.resolve(RunRequest(strategy="margin", scorer="none", budget=20, learner_options={"residual_choice": False}))
    read = loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=20, acquisition="epistemic",
                                   learner_options={"mc_samples": 32})).spec
    assert read.name == "epistemic-laplace-epistemic-mc_samples=32-b10-s0"
    unset = loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"depth": None},
                                    train={"prior_l2": None})).spec
    assert unset.name == "epistemic-b10-s0" and unset.options["learner"] == {} and unset.options["train"] == {}


def test_two_options_of_one_value_name_two_runs(digits_project: Path) -> None:
    """-o width=64 and -o rff_dim=64 were both 'epistemic-64', the second refused as a clash."""
    loop = _loop(digits_project)
    names = {loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options=opts,
                                     train=train)).spec.name
             for opts, train in (({"width": 64}, {}), ({"rff_dim": 64}, {}), ({"cov": "dense"}, {}),
                                 ({"train_cov": "dense"}, {}), ({}, {"prior_l2": 30.0}))}
    assert names == {"epistemic-width=64-b10-s0", "epistemic-rff_dim=64-b10-s0", "epistemic-dense-b10-s0",
                     "epistemic-train_cov=dense-b10-s0", "epistemic-prior_l2=30-b10-s0"}


def test_an_option_given_twice_with_two_values_is_refused() -> None:
    from alkit.scorer_options import parse_with_training

    vbll = learner_class("vbll")
    with pytest.raises(ValueError, match="--opt width is given twice, as 64 and 32: give it once"):
        parse_with_training(vbll, "vbll", ["width=64", "width=32"])
    with pytest.raises(ValueError, match="--opt train.steps is given twice, as 300 and 200"):
        parse_with_training(vbll, "vbll", ["train.steps=300", "train.steps=200"])
    assert parse_with_training(vbll, "vbll", ["train.lr=0.01", "train.lr=1e-2"]) == ({}, {"lr": 0.01})


def test_training_settings_name_their_own_run(digits_project: Path) -> None:
    """-o train.steps=300 was refused as a clash with the default run (or took its name)."""
    loop = _loop(digits_project)
    loop.run(RunRequest(strategy="random", budget=20))
    loop.run(RunRequest(strategy="random", budget=20, train={"steps": 30}))
    runs = {r.name: r for r in loop.store.runs()}
    assert set(runs) == {"random-b10-s0", "random-steps=30-b10-s0"}
    assert runs["random-steps=30-b10-s0"].config["train"] == {"steps": 30}
    assert runs["random-steps=30-b10-s0"].config["curve"] == "random-steps=30"
    assert runs["random-b10-s0"].config["train"] == {}


def _earlier_run(loop: ActiveLoop, name: str, curve: str, scorer: str = "vbll", seed: int = 0,
                 learner: dict | None = None, train: dict | None = None, naming: int | None = None) -> None:
    """A run as alkit recorded it before 2026-12-05 (3bb988d): option values alone in its name and
    curve, training settings in neither, options given at their defaults kept, no "naming" key
    (``naming`` 2: as recorded from then until 2026-12-05's sixth session)."""
    options = {"candidates": None, "stratify_by": None, "learner": learner or {}, "train": train or {},
               "engine": "local", "ray_address": None, "acquisition": "decision-flip", "initial_selector": "coldstart",
               "stop": [], "curve": curve, "code": {}, **({"naming": naming} if naming else {})}
    loop.store.get_or_create_run(RunSpec(name, "epistemic", scorer, seed, 30, 10, 10, options))


def test_runs_recorded_under_the_earlier_names_are_continued(digits_project: Path) -> None:
    """A store written by the earlier alkit: the same commands continue its runs; a setting at its
    default (lr 0.003) is the default run; a new seed of an old run's settings joins its curve."""
    from alkit.report import curve_groups

    loop = _loop(digits_project)
    _earlier_run(loop, "epistemic-b10-s0", "epistemic", train={"steps": 30})
    _earlier_run(loop, "epistemic-laplace-16-b10-s0", "epistemic-laplace-16", "laplace", learner={"mc_samples": 16})
    _earlier_run(loop, "epistemic-64-b10-s0", "epistemic-64", learner={"width": 64})
    _earlier_run(loop, "epistemic-b10-s1", "epistemic", seed=1, train={"lr": 0.003})
    _earlier_run(loop, "epistemic-128-b10-s3", "epistemic-128", seed=3, learner={"width": 128})  # the default width
    steps = RunRequest(strategy="epistemic", budget=30, train={"steps": 30})
    assert loop.resolve(steps).spec.name == "epistemic-b10-s0"
    mc16 = RunRequest(strategy="epistemic", scorer="laplace", budget=30, learner_options={"mc_samples": 16})
    assert loop.resolve(mc16).spec.name == "epistemic-laplace-16-b10-s0"
    assert loop.resolve(mc16).spec.options["learner"] == {"mc_samples": 16}  # as recorded: the store's check passes
    assert loop.resolve(RunRequest(strategy="epistemic", budget=30, learner_options={"width": 64})).spec.name == \
        "epistemic-64-b10-s0"
    assert loop.resolve(RunRequest(strategy="epistemic", budget=30, seed=1)).spec.name == "epistemic-b10-s1"
    plain = RunRequest(strategy="epistemic", budget=30, seed=3)  # the default run is the one that spelled it out
    assert loop.resolve(plain).spec.name == "epistemic-128-b10-s3"
    assert loop.resolve(plain).spec.options["learner"] == {"width": 128}
    assert loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=30)).spec.name == \
        "epistemic-laplace-16-b10-s0"
    # other settings are a run of their own
    assert loop.resolve(RunRequest(strategy="epistemic", budget=30, train={"steps": 40})).spec.name == \
        "epistemic-steps=40-b10-s0"
    # running continues the recorded run rather than starting one
    loop.run(RunRequest(strategy="epistemic", budget=30, train={"steps": 30}, max_cycles=1))
    names = [r.name for r in loop.store.runs()]
    assert names.count("epistemic-b10-s0") == 1 and "epistemic-steps=30-b10-s0" not in names
    # the default run, whose name the earlier run holds, is refused with the reason and the ways out
    with pytest.raises(LoopError, match=r"run 'epistemic-b10-s0' was recorded by an earlier alkit with the training "
                                        r"settings steps=30 .*run with those settings to continue it, or give this run "
                                        r"another --name"):
        loop.resolve(RunRequest(strategy="epistemic", budget=30))
    # curves: the earlier runs on today's curves of their settings, new seeds beside them
    loop.run(RunRequest(strategy="epistemic", budget=20, seed=2, learner_options={"width": 64}, max_cycles=1))
    loop.run(RunRequest(strategy="epistemic", budget=20, seed=2, train={"steps": 30}, max_cycles=1))
    runs = loop.store.runs()
    groups = {r.name: curve_groups(runs)[r.id] for r in runs}
    assert groups == {"epistemic-b10-s0": "epistemic-steps=30", "epistemic-laplace-16-b10-s0": "epistemic-laplace",
                      "epistemic-64-b10-s0": "epistemic-width=64", "epistemic-b10-s1": "epistemic",
                      "epistemic-128-b10-s3": "epistemic",
                      "epistemic-width=64-b10-s2": "epistemic-width=64", "epistemic-steps=30-b10-s2": "epistemic-steps=30"}


def test_a_named_run_keeps_its_curve_whatever_its_training_settings(digits_project: Path) -> None:
    from alkit.report import curve_label

    loop = _loop(digits_project)
    for seed, name in ((0, "foo"), (1, "foo-b10-s1")):
        loop.run(RunRequest(strategy="random", budget=10, seed=seed, name=name, train={"steps": 50}))
    assert {r.name: curve_label(r) for r in loop.store.runs()} == {"foo": "foo", "foo-b10-s1": "foo"}
    from alkit.report import run_summaries

    assert {r["name"]: r["curve"] for r in run_summaries(loop.store)} == {"foo": "foo", "foo-b10-s1": "foo"}


def test_an_option_at_the_value_the_task_gives_it_makes_the_same_learner() -> None:
    """vbll's cov left unset is 'shared' on classification and follows a given regression head
    (task_defaults): the learner made with that value equals the one made without it."""
    vbll = learner_class("vbll")
    cases = [("classification", 3, {})] + [("regression", None, {"head": h})
                                           for h in ("gaussian", "hetero", "quantile", "buckets")]
    for task, n_classes, given in cases:
        implied = vbll.task_defaults(task, given)
        assert set(implied) == ({"cov", "head"} if task == "classification" else {"cov"})
        base = _state(make_learner("vbll", task, n_classes, train=TrainConfig(), **given))
        assert _state(make_learner("vbll", task, n_classes, train=TrainConfig(), **given, **implied)) == base
    # with the head unset a regression fit chooses it (and its covariance) from the labels
    assert vbll.task_defaults("regression", {}) == {}


def test_gradnorms_auto_values_make_the_same_learner_and_name_the_default_run(digits_project: Path) -> None:
    """gradnorm's 'auto' weight_cov / target / output_cov resolve by task and layers; `-o target=expected` on a
    classifier's last layer named a run of its own with the default's picks (a black-box check).  'auto' given
    outright is the default too; a value 'auto' does not take names its run."""
    gradnorm = learner_class("gradnorm")
    for task, n_classes, given in (("classification", 3, {}), ("classification", 3, {"layers": "all"}),
                                   ("regression", None, {})):
        implied = gradnorm.task_defaults(task, given)
        base = _state(make_learner("gradnorm", task, n_classes, train=TrainConfig(), **given))
        assert _state(make_learner("gradnorm", task, n_classes, train=TrainConfig(), **given, **implied)) == base
    loop = _loop(digits_project)
    for options in ({"target": "expected"}, {"weight_cov": "blr", "output_cov": "isotropic"}, {"target": "auto"}):
        spec = loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=20, learner_options=options)).spec
        assert spec.name == "topk-gradnorm-b10-s0" and spec.options["learner"] == {}, (options, spec.name)
    spec = loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=20,
                                   learner_options={"target": "predicted"})).spec
    assert spec.name == "topk-gradnorm-target=predicted-b10-s0"


def test_a_gradnorm_run_named_with_an_auto_value_before_rules_8_is_continued(digits_project: Path) -> None:
    """A run recorded as topk-gradnorm-target=expected-b10-s0 (rules 7) is continued by the same command, which
    today names the default run, and drawn on today's curve; the fix without rules 8 started a second, identical
    run from scratch (a black-box check against the day's fixes)."""
    from alkit.presets import get_preset
    from alkit.report import curve_groups

    loop = _loop(digits_project)
    preset = get_preset("topk")
    options = {"candidates": None, "stratify_by": None, "learner": {"target": "expected"}, "train": {},
               "engine": "local", "ray_address": None, "acquisition": preset.acquisition,
               "initial_selector": preset.initial_selector, "stop": [], "curve": "topk-gradnorm-target=expected",
               "code": {}, "naming": 7}
    loop.store.get_or_create_run(RunSpec("topk-gradnorm-target=expected-b10-s0", "topk", "gradnorm", 0, 30, 10, 10,
                                         options))
    for given in ({"target": "expected"}, {}):
        spec = loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=40, learner_options=given)).spec
        assert spec.name == "topk-gradnorm-target=expected-b10-s0", spec.name
    runs = loop.store.runs()
    assert curve_groups(runs, loop.project.config)[runs[0].id] == "topk-gradnorm"
    spec = loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=40, seed=1,
                                   learner_options={"target": "expected"})).spec
    assert spec.name == "topk-gradnorm-b10-s1"


def test_cov_shared_on_classification_is_the_default_run(digits_project: Path) -> None:
    """--cov shared, the classification default, named a run of its own beside the default one."""
    from alkit.runs import without_defaults

    loop = _loop(digits_project)
    shared = loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"cov": "shared"})).spec
    assert shared.name == "epistemic-b10-s0" and shared.options["learner"] == {}
    dense = loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"cov": "dense"})).spec
    assert dense.name == "epistemic-dense-b10-s0"
    # --head gaussian, classification's one head, named 'epistemic-gaussian-b10-s0' beside it (a black-box check)
    head = loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"head": "gaussian"})).spec
    assert head.name == "epistemic-b10-s0" and head.options["learner"] == {}

    def kept(options: dict) -> dict:
        return without_defaults(RunRequest(strategy="epistemic", budget=20, learner_options=options), "vbll",
                                "regression").learner_options

    assert kept({"cov": "shared"}) == {"cov": "shared"}  # the head, and so the covariance, chosen per fit
    assert kept({"head": "buckets", "cov": "shared"}) == {"head": "buckets"}
    assert kept({"head": "gaussian", "cov": "dense"}) == {"head": "gaussian"}
    assert kept({"head": "gaussian", "cov": "shared"}) == {"head": "gaussian", "cov": "shared"}


def test_a_cov_shared_run_named_by_the_rules_before_is_continued(digits_project: Path) -> None:
    """A run recorded as 'epistemic-shared-b10-s0' (naming rules 2) is the default run today: the
    same command, and the plain one, continue it, and it is on the default runs' curve."""
    from alkit.report import curve_groups

    loop = _loop(digits_project)
    _earlier_run(loop, "epistemic-shared-b10-s0", "epistemic-shared", learner={"cov": "shared"}, naming=2)
    for options in ({"cov": "shared"}, {}):
        spec = loop.resolve(RunRequest(strategy="epistemic", budget=30, learner_options=options)).spec
        assert spec.name == "epistemic-shared-b10-s0" and spec.options["learner"] == {"cov": "shared"}
    # and so does --resume, with the options as recorded (it was refused: "exists with learner={cov='shared'}")
    stored = next(r for r in loop.store.runs() if r.name == "epistemic-shared-b10-s0")
    resumed = loop.resolve(request_for_run(stored, "classification", 40)).spec
    assert resumed.name == "epistemic-shared-b10-s0" and resumed.options["learner"] == {"cov": "shared"}
    loop.run(RunRequest(strategy="epistemic", budget=20, seed=1, max_cycles=1))
    runs = loop.store.runs()
    assert {r.name: curve_groups(runs, loop.project.config)[r.id] for r in runs} == {
        "epistemic-shared-b10-s0": "epistemic", "epistemic-b10-s1": "epistemic"}
    assert {r.name: curve_groups(runs)[r.id] for r in runs}["epistemic-shared-b10-s0"] == "epistemic-shared"


def test_the_learning_rate_decay_at_the_value_the_project_gives_it_is_the_default_run(digits_project: Path) -> None:
    """train.lr_decay and train.min_steps left unset are chosen by task and input kind (on raw
    features and regression 0 and 1,000, on classification of images and embeddings 1 and 300);
    given at that value they name no second run."""
    from alkit.runs import without_defaults

    loop = _loop(digits_project)  # classification on raw pixel columns
    assert loop.project.config.input_kind == "raw"
    same = loop.resolve(RunRequest(strategy="random", budget=20, train={"lr_decay": 0.0})).spec
    assert same.name == "random-b10-s0" and same.options["train"] == {}
    assert loop.resolve(RunRequest(strategy="random", budget=20, train={"lr_decay": 1.0})).spec.name == \
        "random-lr_decay=1-b10-s0"
    assert loop.resolve(RunRequest(strategy="random", budget=20, train={"min_steps": 1000})).spec.name == "random-b10-s0"
    assert loop.resolve(RunRequest(strategy="random", budget=20, train={"min_steps": 300})).spec.name == \
        "random-min_steps=300-b10-s0"

    def kept(task: str, kind: str, decay: float) -> dict:
        return without_defaults(RunRequest(strategy="random", budget=20, train={"lr_decay": decay}), "vbll", task,
                                kind).train

    assert kept("classification", "image", 1.0) == {} and kept("classification", "embedding", 1.0) == {}
    assert kept("classification", "image", 0.0) == {"lr_decay": 0.0}
    assert kept("regression", "image", 0.0) == {} and kept("regression", "raw", 1.0) == {"lr_decay": 1.0}


def test_the_scorer_none_is_named_where_the_preset_trains_another(digits_project: Path) -> None:
    """`--strategy margin --scorer none` took the default (vbll) run's name, so the two collided and a bench of
    margin beside margin:none read one run for both (a black-box check); a store named by the rules before
    is continued under its names."""
    from alkit.presets import get_preset
    from alkit.report import curve_groups

    loop = _loop(digits_project)
    assert loop.resolve(RunRequest(strategy="margin", budget=20, scorer="none")).spec.name == "margin-none-b10-s0"
    assert loop.resolve(RunRequest(strategy="kcenter", budget=20, scorer="none")).spec.name == "kcenter-none-b10-s0"
    assert loop.resolve(RunRequest(strategy="margin", budget=20)).spec.name == "margin-b10-s0"
    assert loop.resolve(RunRequest(strategy="random", budget=20)).spec.name == "random-b10-s0"  # its own scorer
    preset = get_preset("margin")
    options = {"candidates": None, "stratify_by": None, "learner": {}, "train": {}, "engine": "local",
               "ray_address": None, "acquisition": preset.acquisition, "initial_selector": preset.initial_selector,
               "stop": [], "curve": "margin", "code": {}, "naming": 4}
    loop.store.get_or_create_run(RunSpec("margin-b10-s0", "margin", "none", 0, 30, 10, 10, options))
    assert loop.resolve(RunRequest(strategy="margin", budget=30, scorer="none")).spec.name == "margin-b10-s0"
    runs = loop.store.runs()
    assert curve_groups(runs, loop.project.config)[runs[0].id] == "margin-none"
    with pytest.raises(Exception, match="exists with scorer='none', not 'vbll'"):  # the default run: refused, not mixed in
        loop.run(RunRequest(strategy="margin", budget=30, max_cycles=1))
    # a new default seed beside it starts: the curve check read the curve the old run recorded ('margin'), not the
    # one it is drawn on ('margin-none'), and refused every default seed (a check of upgraded projects)
    assert loop.resolve(RunRequest(strategy="margin", budget=30, seed=5)).spec.name == "margin-b10-s5"


def test_a_first_batch_of_another_size_is_named(digits_project: Path) -> None:
    """`--initial 20` beside the default first batch took one name, so the second run was refused and the
    README's curves `margin i10` / `margin i20` needed --name (a black-box check): rules 6 name it; a run
    an earlier alkit named without it is continued under its name, on the curve of its first batch."""
    from alkit.presets import get_preset
    from alkit.report import curve_groups

    loop = _loop(digits_project)
    assert loop.resolve(RunRequest(strategy="margin", budget=30, initial=20)).spec.name == "margin-i20-b10-s0"
    assert loop.resolve(RunRequest(strategy="margin", budget=30, initial=10)).spec.name == "margin-b10-s0"
    assert loop.resolve(RunRequest(strategy="margin", budget=30, initial=5, batch_size=5)).spec.name == "margin-b5-s0"
    loop.run(RunRequest(strategy="margin", budget=30, initial=20, max_cycles=1))
    loop.run(RunRequest(strategy="margin", budget=30, max_cycles=1))
    names = {r.name: r for r in loop.store.runs()}
    assert set(names) == {"margin-i20-b10-s0", "margin-b10-s0"} and names["margin-i20-b10-s0"].initial == 20
    groups = curve_groups(list(names.values()), loop.project.config)
    assert {groups[r.id] for r in names.values()} == {"margin-i20", "margin"}
    preset = get_preset("margin")
    options = {"candidates": None, "stratify_by": None, "learner": {}, "train": {}, "engine": "local",
               "ray_address": None, "acquisition": preset.acquisition, "initial_selector": preset.initial_selector,
               "stop": [], "curve": "margin", "code": {}, "naming": 5}
    loop.store.get_or_create_run(RunSpec("margin-b10-s1", "margin", "vbll", 1, 30, 10, 30, options))  # rules 5
    assert loop.resolve(RunRequest(strategy="margin", budget=30, initial=30, seed=1)).spec.name == "margin-b10-s1"
    old = next(r for r in loop.store.runs() if r.name == "margin-b10-s1")
    assert curve_groups(loop.store.runs(), loop.project.config)[old.id] == "margin-i30"


def test_a_run_recorded_with_a_setting_later_refused_as_idle_is_continued(digits_project: Path) -> None:
    """Before 2026-12-05 `-o csd.steps=500` under the closed-form solver was accepted and recorded
    (it changed nothing); from then on it is refused as idle, and `--resume` of such a run failed
    with that refusal for ever.  The recorded run continues, the idle setting noted; a new run that
    asks for it is still refused."""
    loop = _loop(digits_project)
    options = {"candidates": None, "stratify_by": None, "learner": {"csd.steps": 500}, "train": {},
               "engine": "local", "ray_address": None, "acquisition": "epistemic", "initial_selector": "coldstart",
               "stop": [], "curve": "epistemic-csd-csd.steps=500", "code": {}, "naming": 6}
    loop.store.get_or_create_run(RunSpec("epistemic-csd-csd.steps=500-b10-s0", "epistemic", "csd", 0, 30, 10, 10,
                                         options))
    run = next(r for r in loop.store.runs() if r.name == "epistemic-csd-csd.steps=500-b10-s0")
    req = request_for_run(run, "classification", budget=20)
    plan = loop.resolve(req)
    assert plan.spec.name == "epistemic-csd-csd.steps=500-b10-s0"
    assert any("csd.steps" in note and "closed" in note for note in plan.notes), plan.notes
    loop.run(dataclasses.replace(req, max_cycles=2))
    assert len(loop.store.labeled_set(run.id)[0]) == 20
    with pytest.raises(LoopError, match="csd.steps sets the distilled network"):
        loop.resolve(RunRequest(strategy="epistemic", scorer="csd", budget=30, seed=1,
                                learner_options={"csd.steps": 500}))


def test_a_learner_file_names_its_run_by_its_file_name_and_earlier_full_path_runs_continue() -> None:
    """`--learner /abs/folder/mymodels.py:fit` put the folder in the run's name (four lines in a table, a
    name of the machine's folders); it is named by the file's name now (naming rules 7), and a run an
    earlier alkit named by the full path is continued by the same settings, on today's curve."""
    from types import SimpleNamespace

    from alkit.runs import current_curve, run_identity

    path = "/home/team/models/mymodels.py:fit"
    req = RunRequest(strategy="margin", budget=30, scorer="sklearn", learner_options={"estimator": path})
    now = run_identity(req, "sklearn", [], "classification", "raw")
    assert now.name == "margin-sklearn-mymodels.py:fit-b10-s0" and now.learner == {"estimator": path}
    old = SimpleNamespace(name=f"margin-sklearn-{path}-b10-s0", strategy="margin", scorer="sklearn", seed=0,
                          batch_size=10, budget=30, initial=10,
                          config={"learner": {"estimator": path}, "train": {}, "curve": f"margin-sklearn-{path}",
                                  "acquisition": "margin", "initial_selector": "random", "naming": 6})
    assert current_curve(old, "classification", "raw") == "margin-sklearn-mymodels.py:fit"
    assert run_identity(req, "sklearn", [old], "classification", "raw").name == old.name
    named = SimpleNamespace(**{**vars(old), "name": "mine", "config": {**old.config, "curve": "mine"}})
    assert current_curve(named, "classification", "raw") == "mine"  # a --name of its own is kept


def test_a_pick_setting_no_selector_reads_keeps_the_default_runs_curve(digits_project: Path) -> None:
    """--candidates on random (it picks from the whole pool) or --stratify-by without the cold start changes no
    pick: after such a run the default random seeds were refused as joining a curve of other settings (a black-box
    round against the day's fixes).  Where a selector reads it, a new seed is still refused."""
    loop = _loop(digits_project)
    for seed, kw in ((0, {"candidates": 60}), (1, {}), (2, {"candidates": 30}), (3, {})):
        loop.run(RunRequest(strategy="random", budget=10, seed=seed, max_cycles=1, **kw))
    assert {current_curve(r, "classification", "raw") for r in loop.store.runs()} == {"random"}
    # recorded as read (none), and the default command continues such a run: it was refused as "exists with
    # candidates=60, not the default"; one recorded so by an earlier alkit keeps its record
    runs = {r.name: r for r in loop.store.runs()}
    assert runs["random-b10-s2"].config["candidates"] is None
    loop.store.get_or_create_run(RunSpec("random-b10-s4", "random", "none", 4, 10, 10, 10,
                                      dict(runs["random-b10-s0"].config, candidates=60)))
    for seed in (0, 4):
        loop.run(RunRequest(strategy="random", budget=20, seed=seed, max_cycles=1))
        loop.run(RunRequest(strategy="random", budget=30, seed=seed, max_cycles=1, candidates=45))
    assert {r.name: r.config["candidates"] for r in loop.store.runs() if r.seed in (0, 4)} == {
        "random-b10-s0": None, "random-b10-s4": 60}
    # so does top-k's (the top k of any top m are the pool's top k): on margin it named a curve of the default
    # run's picks; one recorded so this morning is drawn on the default curve
    loop.run(RunRequest(strategy="margin", budget=20, seed=5, candidates=60, max_cycles=1))
    topk_run = next(r for r in loop.store.runs() if r.name == "margin-b10-s5")
    assert topk_run.config["candidates"] is None and current_curve(topk_run, "classification", "raw") == "margin"
    loop.store.get_or_create_run(RunSpec("margin-b10-s6", "margin", "vbll", 6, 20, 10, 10,
                                         dict(topk_run.config, candidates=60, curve="margin-candidates=60")))
    morning = next(r for r in loop.store.runs() if r.name == "margin-b10-s6")
    assert current_curve(morning, "classification", "raw") == "margin"
    # where a selector reads it, the run's curve shows it, beside the default runs' (it took theirs, averaged in)
    loop.run(RunRequest(strategy="diverse", budget=20, seed=0, candidates=60, max_cycles=1))
    loop.run(RunRequest(strategy="diverse", budget=20, seed=1, max_cycles=1))
    curves = {r.name: current_curve(r, "classification", "raw") for r in loop.store.runs()}
    assert curves["diverse-b10-s0"] == "diverse-candidates=60" and curves["diverse-b10-s1"] == "diverse"
    # an earlier alkit's run of --candidates 40 on the default curve: drawn apart today, and a default seed starts
    old = dict(loop.store.runs()[-1].config, curve="diverse", candidates=40, naming=7)
    loop.store.get_or_create_run(RunSpec("diverse-b10-s2", "diverse", "vbll", 2, 20, 10, 10, old))
    runs = {r.name: r for r in loop.store.runs()}
    assert current_curve(runs["diverse-b10-s2"], "classification", "raw") == "diverse-candidates=40"
    loop.resolve(RunRequest(strategy="diverse", budget=20, seed=3))
    with pytest.raises(StoreError, match="exists with candidates=60"):  # where it is read, the setting is the run's
        loop.run(RunRequest(strategy="diverse", budget=30, seed=0, max_cycles=1))


def test_the_acquisition_the_preset_takes_on_regression_names_the_default_run(tmp_path: Path) -> None:
    """On a regression project `--strategy epistemic --acquisition epistemic` (the preset's own there) named
    epistemic-epistemic-b10-s0 beside the identical default run (naming rules 9); a run recorded so before is
    continued by either command and drawn on the default runs' curve."""
    import numpy as np
    import polars as pl
    from sklearn.datasets import load_diabetes

    from alkit.pools.ingest import InitOptions, init_project
    from alkit.presets import get_preset
    from alkit.report import curve_groups

    X, y = load_diabetes(return_X_y=True)
    frame = pl.DataFrame(X[:200].astype(np.float32), schema=[f"x{j}" for j in range(X.shape[1])])
    csv = tmp_path / "diabetes.csv"
    frame.with_columns(pl.Series("y", y[:200])).write_csv(csv)
    root = tmp_path / "reg"
    init_project(csv, root, InitOptions(id_col="", label_col="y", hide_labels=True, test_frac=0.25,
                                        progress=False))
    loop = _loop(root)
    assert get_preset("epistemic").acquisition_for("regression") == "epistemic"
    given = loop.resolve(RunRequest(strategy="epistemic", budget=20, acquisition="epistemic")).spec
    default = loop.resolve(RunRequest(strategy="epistemic", budget=20)).spec
    assert given.name == default.name == "epistemic-b10-s0" and given.options["curve"] == "epistemic"
    other = loop.resolve(RunRequest(strategy="epistemic", budget=20, acquisition="bald")).spec
    assert other.name == "epistemic-bald-b10-s0"
    # epig-decision picks as epig on regression: it named a run and curve of epig's picks (a black-box round)
    for req in (RunRequest(strategy="epistemic", budget=20, acquisition="epig-decision"),
                RunRequest(strategy="epig-decision", budget=20)):
        with pytest.raises(LoopError, match="on a regression project it picks as epig does: use --acquisition epig"):
            loop.resolve(req)
    # a run the rules before named by the acquisition it was given
    options = {**default.options, "naming": 8, "curve": "epistemic-epistemic"}
    loop.store.get_or_create_run(RunSpec("epistemic-epistemic-b10-s0", "epistemic", "vbll", 0, 30, 10, 10, options))
    for acquisition in ("epistemic", None):
        spec = loop.resolve(RunRequest(strategy="epistemic", budget=40, acquisition=acquisition)).spec
        assert spec.name == "epistemic-epistemic-b10-s0", spec.name
    loop.store.get_or_create_run(RunSpec("epistemic-b10-s1", "epistemic", "vbll", 1, 30, 10, 10,
                                         {**default.options, "naming": 8}))
    runs = loop.store.runs()
    assert set(curve_groups(runs, loop.project.config).values()) == {"epistemic"}


def test_a_run_continued_at_another_thread_count_is_told(tmp_path: Path, digits_csv: Path) -> None:
    """Another thread count sums in another order: on a 28x28 image network it changed most of a batch and 0.10
    of accuracy by 80 labels, and nothing said a run was continued so (a black-box check).  The count a run
    started with is recorded; a continuation at another is told, at the same count it is not."""
    import json
    import sqlite3

    from conftest import project_cli

    alkit = project_cli(tmp_path)
    assert alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    assert alkit("run", "--strategy", "random", "--budget", "10").returncode == 0
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        assert json.loads(db.execute("select config from runs").fetchone()[0])["threads"] == 1
    more = alkit("--threads", "2", "run", "--strategy", "random", "--budget", "20")
    said = " ".join((more.stdout + more.stderr).split())
    assert more.returncode == 0 and "was started with 1 thread and continues with 2" in said, said
    done = alkit("--threads", "2", "run", "--strategy", "random", "--budget", "20")  # nothing left to continue
    assert done.returncode == 0 and "thread" not in " ".join((done.stdout + done.stderr).split()), done.stderr
    same = alkit("run", "--strategy", "random", "--budget", "30")
    assert same.returncode == 0 and "thread" not in " ".join((same.stdout + same.stderr).split()), same.stdout
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:  # the count it started with stays on record
        assert json.loads(db.execute("select config from runs").fetchone()[0])["threads"] == 1
    # bench continues runs too: it dropped the loop's notes
    bench = alkit("--threads", "2", "bench", "--budget", "40", "--strategies", "random", "--seeds", "1")
    said = " ".join((bench.stdout + bench.stderr).split())
    assert bench.returncode == 0 and "was started with 1 thread and continues with 2" in said, said


def test_cov_shared_beside_a_one_output_regression_head_is_refused(tmp_path: Path) -> None:
    """`--cov shared --head gaussian` (or hetero) on regression named a second run whose picks, scores and
    metrics were the default's: a head of one output has one covariance, its dense one (a black-box check).
    The bucket head's shared covariance, and shared with the head chosen per fit, stay runs of their own."""
    import numpy as np
    import polars as pl

    from alkit.pools.ingest import InitOptions, init_project

    rng = np.random.default_rng(0)
    X = rng.normal(size=(120, 3))
    pl.DataFrame({"id": [f"r{i}" for i in range(120)], **{f"x{j}": X[:, j] for j in range(3)},
                  "y": X @ [1.0, -2.0, 0.5] + rng.normal(size=120)}).write_csv(tmp_path / "r.csv")
    init_project(tmp_path / "r.csv", tmp_path / "p", InitOptions(id_col="id", label_col="y", hide_labels=True))
    loop = _loop(tmp_path / "p")
    for head in ("gaussian", "hetero"):
        with pytest.raises(LoopError, match=rf"^--cov shared beside --head {head}: a head of one output has one "
                                            "covariance, which is its dense one, the default: drop --cov"):
            loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"head": head, "cov": "shared"}))
        plain = loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"head": head})).spec
        assert plain.name == f"epistemic-{head}-b10-s0"
        # the trained covariance too: shared and dense named two runs of identical figures (a black-box check)
        with pytest.raises(LoopError, match=rf"^-o train_cov=shared beside --head {head}: .* use -o train_cov=dense"):
            loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"head": head, "train_cov": "shared"}))
        loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"head": head, "train_cov": "dense"}))
    # empty values (an unset shell variable): '' was recorded as a stratify column, and --backbone '' ran the default
    with pytest.raises(LoopError, match="^--stratify-by is empty"):
        loop.resolve(RunRequest(strategy="epistemic", budget=20, stratify_by=" "))
    with pytest.raises(LoopError, match="^--backbone is empty"):
        loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"module": ""}))
    with pytest.raises(LoopError, match=r"^--cov shared without --head: each fit chooses a head of one output, "
                                        r".* or the bucket head, whose default is shared; either way the default"):
        loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options={"cov": "shared"}))
    for options in ({"head": "quantile", "cov": "shared"}, {"head": "buckets", "cov": "dense"}, {"cov": "dense"}):
        loop.resolve(RunRequest(strategy="epistemic", budget=20, learner_options=options))  # taken


def test_options_an_earlier_alkit_took_and_cannot_go_on_name_the_recorded_run(digits_project: Path) -> None:
    """gradnorm -o layers=0.blocks.0 -o capacity=cv was taken by an earlier alkit and failed at the fit that chose
    no block; today's check refuses it, and the refusal said nothing of the recorded run that cannot go on (a
    check of upgraded projects).  A new run's refusal is as before."""
    loop = _loop(digits_project)
    options = {"layers": "0.blocks.0", "capacity": "cv"}
    with pytest.raises(LoopError, match=r"names no layer of this project's network.*the head; a dotted prefix names "
                                        r"every layer under it\)$"):
        loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=30, learner_options=options, name="g"))
    loop.store.get_or_create_run(RunSpec("g", "topk", "gradnorm", 0, 30, 10, 10, {"learner": options}))
    with pytest.raises(LoopError, match=r"; run 'g' was recorded with them by an earlier alkit and cannot go on: start "
                                        r"another with other options \(or under a --name\)$"):
        loop.resolve(RunRequest(strategy="topk", scorer="gradnorm", budget=30, learner_options=options, name="g"))
