"""`--opt KEY=VALUE`: a scorer's options are read from its learner, parsed by their declared type,
refused by name, recorded with the run, and reach the learner."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from alkit.learners.csd import CSDConfig, CSDLearner
from alkit.learners.laplace import LaplaceLearner
from alkit.registry import SCORERS, learner_class, make_learner
from alkit.scorer_options import declared, parse, to_kwargs


def test_every_scorer_declares_its_options() -> None:
    laplace = declared(LaplaceLearner)
    assert laplace["epistemic"].choices == ("trace", "mi") and laplace["hessian"].choices == ("kfac", "full")
    assert laplace["prior_precision"].kind is float and laplace["prior_precision"].optional
    assert {"width", "depth", "feature_map"} <= set(laplace)  # the backbone's fields, for every learner
    assert "layers" in declared(learner_class("gradnorm")) and "M" in declared(learner_class("ensemble"))
    assert declared(CSDLearner)["csd.steps"].default == CSDConfig().steps
    for name in SCORERS:
        assert declared(learner_class(name)), name


def test_values_are_parsed_by_type_and_refused_by_name() -> None:
    got = parse(LaplaceLearner, "laplace", ["epistemic=trace", "prior_precision=none", "width=64", "dropout=0.1"])
    assert got == {"epistemic": "trace", "prior_precision": None, "width": 64, "dropout": 0.1}
    assert parse(learner_class("vbll"), "vbll", ["refit=false", "learn_prior=yes"]) == {"refit": False, "learn_prior": True}
    for pairs, says in ((["epistemic=sample"], "must be one of trace, mi"), (["width=wide"], "must be an integer"),
                        (["dropout=x"], "must be a number"), (["nokey=1"], "not an option of scorer 'laplace'"),
                        (["epistemic"], "write it as key=value"), (["=3"], "write it as key=value")):
        with pytest.raises(ValueError, match=says):
            parse(LaplaceLearner, "laplace", pairs)


def test_options_reach_the_learner() -> None:
    kwargs = to_kwargs(CSDLearner, {"csd.steps": 50, "csd.hidden": 16, "width": 32})
    assert kwargs["csd"] == CSDConfig(steps=50, hidden=16) and kwargs["width"] == 32
    learner = make_learner("csd", "classification", 3, **{"csd.steps": 50, "csd.solver": "distilled"})
    assert learner.config.steps == 50
    lap = make_learner("laplace", "classification", 3, epistemic="trace", width=32)
    assert lap.epistemic == "trace" and lap.base.backbone_config.width == 32


@pytest.mark.parametrize("scorer", ["laplace", "csd", "gradnorm"])
def test_post_hoc_scorers_offer_the_options_of_the_network_they_are_fitted_on(scorer: str) -> None:
    """laplace, csd and gradnorm train the plain MLP learner; its capacity, ridge and head_prior were
    documented for them but refused by `--opt` (only their own keywords were read)."""
    import numpy as np
    from sklearn.datasets import load_digits

    assert {"capacity", "ridge", "head_prior", "width"} <= set(declared(learner_class(scorer)))
    opts = parse(learner_class(scorer), scorer, ["capacity=fixed", "head_prior=true"])
    X, y = load_digits(return_X_y=True)
    X, y = X[:40].astype(np.float32), y[:40]
    reports = {}
    for mode, kwargs in (("fixed", to_kwargs(learner_class(scorer), opts)), ("default", {})):
        learner = make_learner(scorer, "classification", 10, **kwargs)
        assert learner.base.capacity == ("fixed" if mode == "fixed" else "prior")
        assert learner.base.head_prior is (True if mode == "fixed" else False)
        reports[mode] = learner.fit(X, y, seed=0)
    assert not any(k.startswith("cv_nll_") for k in reports["fixed"])  # no cross-validated choice was made
    assert any(k.startswith("cv_nll_") for k in reports["default"])


_ENV = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1"}


def _cli_project(tmp_path: Path, digits_csv: Path):
    """A digits project in tmp_path/p and a function running `alkit ARGS -p p` there."""
    subprocess.run([sys.executable, "-m", "alkit.cli", "init", str(digits_csv), "--id-col", "id", "--label-col", "label",
                    "--hide-labels", "-p", "p"], cwd=tmp_path, check=True, capture_output=True, env=_ENV)

    def alkit(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "alkit.cli", *args, "-p", "p"], cwd=tmp_path, capture_output=True,
                              text=True, env=_ENV, timeout=600)

    return alkit


def _refused_then_recorded(tmp_path: Path, digits_csv: Path, bad: list[str], message: str,
                           ok: list[str]) -> tuple[dict, str]:
    """A run with ``bad`` options is refused with ``message`` and writes nothing; one with ``ok``
    runs: (its recorded config, the `alkit strategies --scorer` listing of its scorer)."""
    import sqlite3

    from conftest import folder_snapshot

    alkit = _cli_project(tmp_path, digits_csv)
    before = folder_snapshot(tmp_path / "p")
    refused = alkit("run", *bad, "--budget", "20")
    assert refused.returncode == 2 and message in refused.stderr, refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert folder_snapshot(tmp_path / "p") == before
    assert "Traceback" not in refused.stderr and json.loads(alkit("status", "--json").stdout) == []
    done = alkit("run", *ok, "--budget", "20", "--json")
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        (config,) = db.execute("select config from runs").fetchone()
    (status,) = json.loads(alkit("status", "--json").stdout)  # status shows them too (a --name hides the name's)
    assert (status["options"], status["train"]) == (json.loads(config)["learner"], json.loads(config)["train"])
    assert (status["candidates"], status["stratify_by"]) == (None, None)
    scorer = ok[ok.index("--scorer") + 1] if "--scorer" in ok else "vbll"
    listing = subprocess.run([sys.executable, "-m", "alkit.cli", "strategies", "--scorer", scorer], capture_output=True,
                             text=True, env=_ENV, timeout=120).stdout
    return json.loads(config), listing


def test_cli_opt_is_recorded_with_the_run(tmp_path: Path, digits_csv: Path) -> None:
    config, listing = _refused_then_recorded(
        tmp_path, digits_csv, ["--scorer", "laplace", "-o", "epistemic=sample"],
        "option epistemic='sample': must be one of trace, mi",
        ["--strategy", "topk", "--scorer", "laplace", "-o", "epistemic=trace", "-o", "width=32", "--max-epochs", "5"])
    assert config["learner"] == {"epistemic": "trace", "width": 32} and config["train"] == {"max_epochs": 5}
    assert "epistemic" in listing and "trace|mi" in listing and "prior_precision" in listing
    assert "None" not in listing and "'" not in listing.split("options of scorer")[1]  # defaults as -o takes them


@pytest.mark.parametrize("pair", ["prior_scale=inf", "prior_scale=nan", "train.lr=nan", "train.prior_l2=inf",
                                  "train.full_batch_lr=-inf"])
def test_non_finite_numbers_are_refused_before_a_run(pair: str) -> None:
    """nan / inf passed the type check and failed mid-run (a traceback at the first fit, a run left
    half done): refused when parsed, naming the option."""
    from alkit.scorer_options import parse_with_training

    with pytest.raises(ValueError, match=f"option {pair.split('=')[0]}=.*must be a finite number"):
        parse_with_training(learner_class("vbll"), "vbll", [pair])


def test_training_config_refuses_values_that_would_fail_a_fit() -> None:
    from alkit.models.train import TrainConfig

    for kwargs, says in (({"lr": float("nan")}, "lr must be a finite number"),
                         ({"prior_l2": float("inf")}, "prior_l2 must be a finite number"),
                         ({"adam_eps": 0.0}, "adam_eps > 0"), ({"grad_clip": -1.0}, "grad_clip must be positive")):
        with pytest.raises(ValueError, match=says):
            TrainConfig(**kwargs)
    assert TrainConfig(grad_clip=None, prior_l2=0.0).prior_l2 == 0.0  # unset clipping and a flat prior stay allowed


def test_training_options_are_split_off_typed_and_refused_by_name() -> None:
    from alkit.scorer_options import parse_with_training, training

    own, train = parse_with_training(learner_class("vbll"), "vbll",
                                     ["cov=dense", "train.prior_l2=30", "train.steps=200", "train.grad_clip=none"])
    assert own == {"cov": "dense"} and train == {"prior_l2": 30.0, "steps": 200, "grad_clip": None}
    with pytest.raises(ValueError, match="not a training option of scorer 'vbll'"):
        parse_with_training(learner_class("vbll"), "vbll", ["train.bogus=1"])
    with pytest.raises(ValueError, match="train.steps='many': must be an integer"):
        parse_with_training(learner_class("vbll"), "vbll", ["train.steps=many"])
    assert "train.prior_l2" in training(learner_class("none"))
    assert training(learner_class("sklearn")) == {} and training(learner_class("bayesvlm")) == {}
    assert "train.steps" in training(learner_class("laplace"))  # the post-hoc scorers train the MLP under them


def test_cli_training_option_is_recorded_and_a_bad_one_refused(tmp_path: Path, digits_csv: Path) -> None:
    config, listing = _refused_then_recorded(
        tmp_path, digits_csv, ["--strategy", "topk", "-o", "train.prior=3"], "--opt train.prior: not a training option",
        ["--strategy", "topk", "-o", "train.prior_l2=3"])
    assert config["train"] == {"prior_l2": 3.0}
    assert "train.prior_l2" in listing and "float|none" in listing


def test_a_flag_and_an_opt_setting_one_option_twice_are_refused(tmp_path: Path, digits_csv: Path) -> None:
    """--max-epochs 50 -o train.max_epochs=60 ran with 50 and said nothing of the 60."""
    config, _ = _refused_then_recorded(
        tmp_path, digits_csv, ["--max-epochs", "50", "-o", "train.max_epochs=60"],
        "--max-epochs 50 and -o train.max_epochs=60 set one option twice: give it once",
        ["--max-epochs", "50", "-o", "train.max_epochs=50", "--cov", "dense", "-o", "cov=dense"])
    assert config["train"] == {"max_epochs": 50} and config["learner"] == {"cov": "dense"}


def test_a_flag_and_its_own_opt_of_another_value_are_refused(tmp_path: Path, digits_csv: Path) -> None:
    """-o module=a:f --backbone b:g ran with b:g; -o cov=dense --cov diagonal with diagonal."""
    alkit = _cli_project(tmp_path, digits_csv)
    for args, message in ((["--backbone", "b.py:g", "-o", "module=a.py:f"], "--backbone b.py:g and -o module=a.py:f"),
                          (["--cov", "diagonal", "-o", "cov=dense"], "--cov diagonal and -o cov=dense")):
        out = alkit("run", "--strategy", "epistemic", "--budget", "20", *args)
        assert out.returncode == 2 and f"{message} set one option twice: give it once" in out.stderr, out.stderr


def test_a_distillation_setting_needs_the_distilled_solver() -> None:
    """`-o csd.steps=500` under the default closed form named a second run that scored exactly like the
    first (a black-box check)."""
    with pytest.raises(ValueError, match="csd.steps sets the distilled network.*-o csd.solver=distilled"):
        parse(CSDLearner, "csd", ["csd.steps=500"])
    assert parse(CSDLearner, "csd", ["csd.solver=distilled", "csd.steps=500"]) == {"csd.solver": "distilled",
                                                                                  "csd.steps": 500}
    assert parse(CSDLearner, "csd", ["csd.x_tower=mlp", "csd.hidden=16"])["csd.hidden"] == 16
    assert parse(CSDLearner, "csd", ["csd.ridge=0.1"]) == {"csd.ridge": 0.1}  # the closed form reads it
