"""A run's identity (alkit/runs.py): an option given at its default names no second run, training
settings are part of the name, and runs recorded under an earlier alkit's names are continued."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import torch

from alkit.config import load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.models.train import TrainConfig
from alkit.pools.store import RunSpec
from alkit.registry import SCORERS, learner_class, make_learner
from alkit.runs import curve_name, run_name
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
    for every scorer, task and declared option whose default is a value (not None = chosen by the
    data), the learner made with it equals the one made without it."""
    checked = 0
    for scorer in SCORERS:
        if scorer in ("sklearn", "bayesvlm"):  # need the user's estimator / a model folder
            continue
        for task, n_classes in (("classification", 3), ("regression", None)):
            base = _state(make_learner(scorer, task, n_classes, train=TrainConfig()))
            for name, option in declared(learner_class(scorer)).items():
                if option.default is None:
                    continue
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
    other = loop.resolve(RunRequest(strategy="epistemic", scorer="laplace", budget=20,
                                    learner_options={"mc_samples": 32})).spec
    assert other.name == "epistemic-laplace-32-b10-s0"


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


def test_runs_recorded_under_the_earlier_names_are_continued(digits_project: Path) -> None:
    """A store written before this change holds "epistemic-b10-s0" with train {"steps": 30} and
    "epistemic-laplace-16-b10-s0" with mc_samples 16: the same commands continue them."""
    loop = _loop(digits_project)
    legacy_train = RunRequest(strategy="epistemic", budget=30, train={"steps": 30})
    legacy_default = RunRequest(strategy="epistemic", scorer="laplace", budget=30, learner_options={"mc_samples": 16})
    for req, scorer in ((legacy_train, "vbll"), (legacy_default, "laplace")):
        name = run_name(req, scorer, legacy=True)
        options = {"learner": dict(req.learner_options), "train": dict(req.train),
                   "curve": curve_name(req, scorer, legacy=True)}
        loop.store.get_or_create_run(RunSpec(name, req.strategy, scorer, 0, 30, 10, 10, options))
    assert loop.resolve(legacy_train).spec.name == "epistemic-b10-s0"
    assert loop.resolve(legacy_default).spec.name == "epistemic-laplace-16-b10-s0"
    assert loop.resolve(legacy_default).spec.options["learner"] == {"mc_samples": 16}
    # a legacy run of other settings under that name is not taken: the new name is
    assert loop.resolve(RunRequest(strategy="epistemic", budget=30, train={"steps": 40})).spec.name == \
        "epistemic-steps=40-b10-s0"
    # and running continues the recorded run rather than starting one
    loop.run(RunRequest(strategy="epistemic", budget=30, train={"steps": 30}, max_cycles=1))
    names = [r.name for r in loop.store.runs()]
    assert names.count("epistemic-b10-s0") == 1 and "epistemic-steps=30-b10-s0" not in names
