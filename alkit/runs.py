"""A run request turned into objects once: the preset, scorer, acquisition and selectors named
by `alkit run` are looked up and validated here, before anything is written, and handed to the
loop as a ``RunPlan``.  The run's name and learning-curve group are made here too, as data (the
store keeps both; nothing parses them back).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from alkit.acquisition import ACQUISITIONS, get_acquisition
from alkit.checks import is_whole_number
from alkit.choices import SEED_MAX
from alkit.config import Project, ProjectConfig
from alkit.engines import ENGINES
from alkit.engines.candidates import POOL_CANDIDATES, candidate_count
from alkit.models.backbone import InputSpec
from alkit.models.train import TrainConfig, resolved_lr_decay, resolved_min_steps
from alkit.pools.store import RunSpec, as_json
from alkit.presets import get_preset
from alkit.registry import Terms, check_acquisition, get_scorer, learner_class, make_learner
from alkit.stopping import get_rule
from alkit.strategies import get_selector
from alkit.types import Acquisition, Learner, Strategy


class LoopError(ValueError):
    """A run cannot start or continue; the message says why.  The store is unchanged."""


@dataclass
class RunRequest:
    """The arguments of `alkit run` (library form)."""

    strategy: str
    budget: int
    batch_size: int = 10
    seed: int = 0
    scorer: str | None = None
    initial: int | None = None  # size of the first (model-free) batch; default batch_size
    name: str | None = None
    candidates: int | None = None  # m for top-m / sampled candidates; default 20 x batch
    stratify_by: str | None = None
    learner_options: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields, e.g. max_epochs
    max_cycles: int | None = None  # stop after this many cycles in this call (resume later)
    queue_file: str | None = None  # human oracle: where the queue is written (default queue.csv in the project)
    engine: str = "local"  # where top-m scoring runs: 'local' or 'ray' (alkit/engines); same picks either way
    ray_address: str | None = None  # engine='ray': cluster address (None: reuse ray.init() or start a local one)
    acquisition: str | None = None  # score per item (alkit/acquisition); default: the preset's
    initial_selector: str | None = None  # model-free first-batch selector; default: the preset's
    stop: list[str] = field(default_factory=list)  # stopping rules, 'name[:param=value,...]' (alkit/stopping)
    replace_stop: bool = False  # record ``stop`` as the rules of a run that exists (`--stop` given), once it is accepted


@dataclass
class RunPlan:
    """Everything a run's cycles use, as objects: the stored identity (``spec``), a factory for
    the cycle's learner, the acquisition, the model-free selector of the cold start and the
    selector once a model exists (already chosen by batch size)."""

    spec: RunSpec
    make_learner: Callable[[InputSpec | None], Learner]
    acquisition: Acquisition
    initial_selector: Strategy
    initial_selector_name: str
    selector: Strategy
    selector_name: str
    stop_rules: list[Any] = field(default_factory=list)
    zero_shot: bool = False  # the learner predicts before any label: a model from the first cycle on
    features: Callable[[Project, bool], Path] | None = None  # the learner's own feature file (bayesvlm), else None
    stem: bool = False  # an image project whose learner reads the frozen stem's outputs (alkit/stem_features.py)
    notes: list[str] = field(default_factory=list)  # what the plan chose that the request did not say
    # the request named another first-batch selector than the preset's (its name says -init...): the loop says
    # where no batch is model-free, so that it picks nothing
    initial_selector_named: bool = False


# options with a command-line flag of their own that only one scorer takes: option -> (scorer, what it is)
_OWNED = {
    "head": ("vbll", "applies to the vbll scorer (its heads and covariance)"),
    "cov": ("vbll", "applies to the vbll scorer (its heads and covariance)"),
    "model_dir": ("bayesvlm", "is the bayesvlm scorer's model"),
    "class_prompts": ("bayesvlm", "is the bayesvlm scorer's prompt template"),
}


RUN_NAME_MAX = 256  # the store's runs.name column (schema.Run)


def _name_part(key: str, value: Any, legacy: bool = False, full_paths: bool = False) -> str:
    """An option as it appears in a curve name: KEY=VALUE (a number as short as it reads back:
    30, 0.003), except the options of flags of their own, by value: a model directory by its
    folder name, a prompt template by a short hash (names stay short and free of spaces and
    slashes), --head and --cov by their value.  ``legacy``: every option by its value alone, as
    runs were named before two options of one value (-o width=64, -o rff_dim=64) clashed.  A
    ``--learner`` / ``--backbone`` file by its name and function (mymodels.py:fit), not its full path
    (``full_paths``: as rules before 7 named it): the path made names of the machine's folders, four
    lines long in a table, and another name from another folder."""
    if key in _BY_PATH and not (legacy or full_paths) and "/" in str(value):
        return Path(str(value)).name
    if key == "model_dir":
        return Path(str(value)).name
    if key == "class_prompts":
        return "prompts" + hashlib.blake2b(str(value).encode(), digest_size=3).hexdigest()
    if legacy or key in _BY_VALUE:
        return str(value)
    return f"{key}={value_text(value)}"


_BY_VALUE = ("head", "cov", "module", "estimator")  # options of flags of their own: --head, --cov, --backbone, --learner
_BY_PATH = ("module", "estimator")  # a file.py:function of --backbone / --learner, as resolved to its full path


def value_text(value: Any) -> str:
    """An option value in a run or curve name: 30.0 as 30, 3e-3 as 0.003, booleans and None lower-case."""
    if value is None or isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e15 else repr(value)
    return str(value)


def training_parts(train: dict[str, Any]) -> str:
    """Training settings as they end a curve name: "-steps=300-lr=0.01" (sorted by name)."""
    return "".join(f"-{k}={value_text(v)}" for k, v in sorted(train.items()))


def _vlm_features(model_dir: str) -> Callable[[Project, bool], Path]:
    def features(project: Project, progress: bool) -> Path:
        from alkit.models.dual_encoder_dir import open_model_dir
        from alkit.vlm_features import ensure_features

        return ensure_features(project, open_model_dir(model_dir), progress=progress)

    return features


def curve_name(req: RunRequest, scorer: str, *, legacy: bool = False, hide_none: bool = False,
               with_initial: bool = True, full_paths: bool = False) -> str:
    """The learning-curve group of a run (stored in its config as data, never parsed back from
    its name): the strategy with whatever differs from its defaults (-o values, then training
    settings, each as KEY=VALUE); for a run given its own --name, that name less its
    "-b<batch>-s<seed>" ending when it has this run's one.  ``legacy``: the curves of runs started
    before training settings and option keys were part of them (``current_curve`` recognises
    those runs by it); ``hide_none``: the scorer ``none`` left out of the name whatever the preset's
    own scorer (naming rules before 5: `--strategy margin --scorer none` took the default run's name);
    ``with_initial`` False: a first batch of another size than --batch-size left out (rules before 6);
    ``full_paths``: a --learner / --backbone file by its full path (rules before 7)."""
    if req.name:
        ending = f"-b{req.batch_size}-s{req.seed}"
        return req.name[:-len(ending)] if req.name.endswith(ending) and len(req.name) > len(ending) else req.name
    preset = get_preset(req.strategy)
    hidden = (preset.default_scorer, "none") if hide_none or legacy else (preset.default_scorer,)
    base = req.strategy if scorer in hidden else f"{req.strategy}-{scorer}"
    if req.acquisition and req.acquisition != preset.acquisition:
        base += f"-{req.acquisition}"
    if req.initial_selector and req.initial_selector != preset.initial_selector:
        base += f"-init{req.initial_selector}"
    if with_initial and not legacy and req.initial is not None and req.initial != req.batch_size:
        base += f"-i{req.initial}"
    opts = "".join(f"-{_name_part(k, v, legacy, full_paths)}" for k, v in sorted(req.learner_options.items()))
    return f"{base}{opts}" if legacy else f"{base}{opts}{training_parts(req.train)}"


def settings_curve(strategy: str, scorer: str, acquisition: str | None, initial_selector: str | None,
                   learner: dict[str, Any], train: dict[str, Any], task: str | None, input_kind: str | None, *,
                   initial: int | None = None, batch_size: int = 10) -> str:
    """The curve a run of these settings gets without a --name: what a run must share with the runs already on
    its curve, so one curve never averages runs of other settings."""
    req = RunRequest(strategy=strategy, budget=1, batch_size=batch_size, initial=initial, acquisition=acquisition,
                     initial_selector=initial_selector, learner_options=dict(learner), train=dict(train))
    return curve_name(without_defaults(req, scorer, task, input_kind), scorer)


def _default_settings_curve(preset: Any, cfg: ProjectConfig, selector: str, batch_size: int) -> str:
    """``settings_curve`` of a preset's run at its defaults on this project (the acquisition its scorer resolves
    to on the task: regression's is not the classification one)."""
    acquisition, _ = resolve_acquisition(preset.name, None, preset.default_scorer, cfg.task, selector, False)
    return settings_curve(preset.name, preset.default_scorer, acquisition, preset.initial_selector, {}, {}, cfg.task,
                          cfg.input_kind, batch_size=batch_size)


def selection_text(candidates: int | None, stratify_by: str | None) -> str:
    """The settings of the picks that no run name holds, as they follow a curve's settings in messages:
    " --candidates 60 --stratify-by region" ("" at the defaults: candidates None)."""
    return (f" --candidates {candidates}" if candidates is not None else "") + (
        f" --stratify-by {stratify_by}" if stratify_by else "")


def _recorded_picks(run: Any, task: str) -> str:
    """``selection_text`` of a recorded run (a store row), its settings as its selectors read them."""
    config = run.config or {}
    try:
        return selection_text(*_effective_picks(run, task))
    except (KeyError, ValueError):  # a strategy this alkit no longer has
        return selection_text(config.get("candidates"), config.get("stratify_by"))


def _effective_picks(run: Any, task: str) -> tuple[int | None, str | None]:
    """(candidates, stratify_by) of a recorded run as its selectors read them (``_read_picks``); --candidates at its
    default as unset (runs before c109187 recorded a --candidates given at the default value as that number)."""
    config = run.config or {}
    candidates = config.get("candidates")
    preset = get_preset(run.strategy)
    selector = preset.selector_for(task, run.batch_size)
    if candidates == candidate_count(get_selector(selector).candidate_source, run.batch_size, None):
        candidates = None
    initial_selector = config.get("initial_selector") or preset.initial_selector
    return _read_picks(candidates, config.get("stratify_by"), initial_selector, selector)


def _read_picks(candidates: int | None, stratify_by: str | None, initial_selector: str,
                selector: str) -> tuple[int | None, str | None]:
    """(candidates, stratify_by) as the run's selectors read them: None where none does (random picks from the whole
    pool, top-k the top of any top m; only the cold start reads strata), so such a run is the default run's curve: a
    no-op --candidates 60 on random kept the default random seeds off their curve (a black-box round against the
    day's fixes), and on topk, margin or bald named a curve of picks identical to the default run's."""
    selectors = [get_selector(s) for s in (initial_selector, selector)]
    reads = any(getattr(s, "reads_candidates", True) and s.candidate_source != "all" for s in selectors)
    return (candidates if reads else None,
            stratify_by if "coldstart" in (initial_selector, selector) else None)


def run_settings_curve(run: Any, task: str | None, input_kind: str | None) -> str:
    """``settings_curve`` of a recorded run (a store row), from its config."""
    config = run.config or {}
    return settings_curve(run.strategy, run.scorer, config.get("acquisition"), config.get("initial_selector"),
                          config.get("learner") or {}, config.get("train") or {}, task, input_kind,
                          initial=getattr(run, "initial", None), batch_size=run.batch_size)


FORECAST_SHARE_SINCE = datetime(2026, 12, 7, 6, 42, 14)  # a6e0256: the forecast rule reads a regression gain as a share
# the plain network's regression setting refused here: MLPLearner refuses ridge / residual_targets on classification
# itself, but the ensembles and MC dropout hand it residual_choice=False on every task
REGRESSION_ONLY_OPTION = "residual_choice"


def _refuse_unread_score_options(scorer: str, learner: dict[str, Any], acquisition: str | None,
                                 strategy: str) -> None:
    """A LoopError for -o options that set only the scorer's epistemic score (its class's ``SCORE_OPTIONS``, names
    or ``prefix.``) where the run's acquisition reads no epistemic score: laplace's epistemic=trace, mc_samples or
    mi under the preset's decision-flip picked what the default run picked, as a run and a curve of its own (a
    black-box check); ``acquisition`` None: the selector reads no score (random, the cold start).  Runs recorded
    with them go on (checked for new runs only)."""
    if acquisition in ACQUISITIONS and "epistemic_n" in get_acquisition(acquisition).needs:
        return
    if acquisition not in ACQUISITIONS and acquisition is not None:  # one of the user's own: it may read anything
        return
    own = getattr(learner_class(scorer), "SCORE_OPTIONS", ())
    unread = [k for k in learner if k in own or any(p.endswith(".") and k.startswith(p) for p in own)]
    if unread:
        shown = " ".join(f"-o {k}={value_text(learner[k])}" for k in unread)
        reader = (f"the acquisition {acquisition!r} (strategy {strategy!r})" if acquisition is not None else
                  f"strategy {strategy!r} (it picks without a score)")
        raise LoopError(f"{shown} set{'s' if len(unread) == 1 else ''} {scorer}'s epistemic score, which {reader} does "
                        f"not read: the picks would be the default run's; rank by it with --acquisition epistemic, or "
                        f"leave {'it' if len(unread) == 1 else 'them'} out")


def first_batch_refusal(initial: int | None, batch_size: int, budget: int) -> LoopError:
    """The refusal of a first batch (``--initial``, else ``--batch-size``) larger than the budget."""
    return LoopError(f"--initial {initial} is larger than --budget {budget}" if initial is not None else
                     f"--batch-size {batch_size} is larger than --budget {budget} (the first batch is --batch-size "
                     "items unless --initial sets it)")


def run_name(req: RunRequest, scorer: str) -> str:
    """The run's unique name: its curve, batch size and seed (or the given --name)."""
    if req.name:
        return req.name
    return f"{curve_name(req, scorer)}-b{req.batch_size}-s{req.seed}"


def _without_defaults(scorer: str, learner: dict[str, Any], train: dict[str, Any], task: str | None = None,
                      input_kind: str | None = None, rules: int | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """(learner options, training settings) less those at the value they take anyway: the declared
    default, or, on a project of ``task``, the value the task gives an unset option (the learner
    class's ``task_defaults``: vbll's ``cov`` is 'shared' on classification), and with its
    ``input_kind`` too, the learning rate's decay and the minibatch steps (``train.lr_decay``,
    ``train.min_steps``: resolved_lr_decay, resolved_min_steps).  ``rules``: the naming rules of an earlier run
    (NAMING_VERSION's list; default today's): before 8 a learner class's task defaults from its
    ``TASK_DEFAULTS_SINCE`` on (gradnorm's) and a declared default given outright beside another task default
    were kept."""
    from alkit.scorer_options import declared, same_value

    rules = NAMING_VERSION if rules is None else rules
    cls = learner_class(scorer)
    declared_defaults = {k: o.default for k, o in declared(cls).items()}
    defaults = dict(declared_defaults)
    if task is not None and hasattr(cls, "task_defaults") and rules >= getattr(cls, "TASK_DEFAULTS_SINCE", 0):
        defaults.update(cls.task_defaults(task, learner))
    if rules < 8:
        declared_defaults = {}
    fields = {k: f.default for k, f in TrainConfig.__dataclass_fields__.items()}
    if task is not None and input_kind is not None:
        fields["lr_decay"], fields["min_steps"] = resolved_lr_decay(task, input_kind), resolved_min_steps(task, input_kind)
    return ({k: v for k, v in learner.items() if not (k in defaults and same_value(v, defaults[k]))
             and not (k in declared_defaults and same_value(v, declared_defaults[k]))},
            {k: v for k, v in train.items() if not (k in fields and same_value(v, fields[k]))})


def without_defaults(req: RunRequest, scorer: str, task: str | None = None, input_kind: str | None = None,
                     rules: int | None = None) -> RunRequest:
    """``req`` less every option given at the value it takes anyway: -o options equal to the
    scorer's declared default (``none`` where that is None: chosen by the data) and training
    settings equal to TrainConfig's.  Why: ``-o module_norm=2.5`` named a second run
    identical to the default one.  A learner made with such an option equals one made without it
    (tests/test_run_identity.py checks this for every scorer and option).  ``task`` / ``input_kind``:
    also the options given at the value the project gives them (``_without_defaults``)."""
    learner, train = _without_defaults(scorer, req.learner_options, req.train, task, input_kind, rules)
    acquisition = req.acquisition
    if acquisition is not None and task is not None and (NAMING_VERSION if rules is None else rules) >= 9:
        # the acquisition the preset takes anyway on this task (rules 9: regression `--acquisition epistemic` named
        # epistemic-epistemic-b10-s0 beside the identical default run)
        if acquisition == get_preset(req.strategy).acquisition_for(task):
            acquisition = None
    return replace(req, learner_options=learner, train=train, acquisition=acquisition)


NAMING = "naming"  # in a run's config: the naming rules it was named by (earlier runs lack it: 1)
# 2: KEY=VALUE options and training settings in names, options at their declared defaults left out;
# 3: also options at the value the project's task gives them (--cov shared on classification);
# 4: also train.lr_decay and train.min_steps at the value the task and input kind give them
# 5: the scorer none in the name where the preset's own scorer is another (margin-none-b10-s0: it was
#    margin-b10-s0, the name of the default run with vbll, so the two collided)
# 6: a first batch of another size than the batch in the name (margin-i20-b10-s0: the run of --initial 20
#    took the name margin-b10-s0, so the default run beside it was refused, and the README's two curves
#    `margin i10` / `margin i20` could not be made without --name)
# 7: a --learner / --backbone file by its name (mymodels.py:fit), not its full path
# 8: gradnorm's 'auto' values left out (`-o target=expected` on a classifier's last layer was
#    topk-gradnorm-target=expected-b10-s0 beside the identical default run), and an option given at its declared
#    default where the task gives another
# 9: an --acquisition given as the one the preset takes on the project's task left out (on regression
#    `--strategy epistemic --acquisition epistemic` was epistemic-epistemic-b10-s0 beside the identical default run)
NAMING_VERSION = 9


@dataclass(frozen=True)
class RunIdentity:
    """What a run is recorded under: its name, curve, and the options as recorded."""

    name: str
    curve: str
    learner: dict[str, Any]
    train: dict[str, Any]


def run_identity(req: RunRequest, scorer: str, runs: Sequence[Any] = (), task: str | None = None,
                 input_kind: str | None = None) -> RunIdentity:
    """The run ``req`` names among the recorded ``runs`` (store rows): today's (``without_defaults``,
    ``curve_name``) where it exists; else a run an earlier alkit recorded for these settings (option
    values alone in its name, training settings left out, options at their defaults kept) under
    the name it has, so that a command of the same settings continues it; else today's, new.
    Where an earlier run of other training settings holds today's name, the request is refused
    with the way to continue it.  ``task``, ``input_kind``: the project's (see ``without_defaults``)."""
    current = without_defaults(req, scorer, task, input_kind)
    wanted = as_json((current.learner_options, current.train))
    by_name = {r.name: r for r in runs}

    def settings(run: Any) -> Any:
        config = run.config or {}
        return as_json(_without_defaults(scorer, config.get("learner") or {}, config.get("train") or {}, task,
                                         input_kind))

    def earlier(run: Any) -> RunIdentity:
        config = run.config or {}
        return RunIdentity(run.name, str(config.get("curve") or ""), dict(config.get("learner") or {}),
                           dict(config.get("train") or {}))

    name, curve = run_name(current, scorer), curve_name(current, scorer)
    today = by_name.get(name)
    if today is not None and NAMING in (today.config or {}):
        # its options as recorded where they are these settings (a run named by earlier rules kept
        # an option today's leave out: `--resume epistemic-shared-b10-s0`)
        return earlier(today) if settings(today) == wanted else RunIdentity(name, curve, current.learner_options,
                                                                              current.train)
    if req.name:
        old = by_name.get(req.name)
        if old is not None and settings(old) == wanted:
            return earlier(old)
    else:
        for old in runs:  # an earlier alkit's run of these settings, whatever it was named
            if (_naming(old) < NAMING_VERSION and (old.strategy, old.scorer, old.seed, old.batch_size)
                    == (req.strategy, scorer, req.seed, req.batch_size) and current_curve(old, task, input_kind) == curve
                    and settings(old) == wanted):
                return earlier(old)
    if today is not None and not req.name:
        held = settings(today)
        if held != wanted and held[0] == wanted[0]:  # the training settings differ: today they would be in its name
            shown = ", ".join(f"{k}={value_text(v)}" for k, v in sorted(held[1].items())) or "the defaults"
            raise LoopError(f"run {name!r} was recorded by an earlier alkit with the training settings {shown} (run "
                            "names did not include them then): run with those settings to continue it, or give "
                            "this run another --name")
    return RunIdentity(name, curve, current.learner_options, current.train)


def _naming(run: Any) -> int:
    """The naming rules a recorded run was named by (NAMING_VERSION's list; 1 before they were recorded)."""
    return int((run.config or {}).get(NAMING, 1))


def recorded_rules(run: Any | None) -> list[str]:
    """The stopping rules recorded with a stored run (none for no run): what continues it, however it is continued
    (`alkit run` without --stop, bench)."""
    return list(((run.config or {}).get("stop") or []) if run is not None else [])


def rules_since(config: dict[str, Any] | None) -> int:
    """The cycle from which a run's stopping rules read its curve: the one a rule last stopped it at, where a
    larger budget picked up, or the latest cycle when its rules were last replaced (``stop_since``), whichever
    is later (-1: every cycle)."""
    config = config or {}
    return max(int((config.get("stopped") or {}).get("cycle", -1)), int(config.get("stop_since", -1)))


def current_curve(run: Any, task: str | None = None, input_kind: str | None = None) -> str:
    """``_named_curve`` with, for a run named by its settings (no --name), the pick settings no name holds
    (``picks_suffix``): a run of --candidates 40 or --stratify-by grp took the default runs' curve, averaged with
    them, and kept later default seeds off it (a black-box check of upgraded projects)."""
    curve = _named_curve(run, task, input_kind)
    config = run.config or {}
    recorded = str(config.get("curve") or "")
    ending = f"-b{run.batch_size}-s{run.seed}"
    raw = picks_suffix(config.get("candidates"), config.get("stratify_by"))
    # an unnamed run recorded with its pick settings' suffix, where its selectors may no longer count one as read
    # (topk's --candidates, from 2026-12-07): today's suffix of them
    suffixed = bool(raw) and recorded.endswith(raw) and run.name == recorded[:-len(raw)] + ending
    if task is None or not recorded or not (suffixed or run.name == f"{recorded}{ending}"):
        return curve  # given its own --name: kept
    try:
        suffix = picks_suffix(*_effective_picks(run, task))
    except (KeyError, ValueError):  # a strategy this alkit no longer has
        return curve
    if suffixed:
        return recorded[:-len(raw)] + suffix
    return curve if not suffix or curve.endswith(suffix) else curve + suffix


def picks_suffix(candidates: int | None, stratify_by: str | None) -> str:
    """How a curve shows the pick settings no run name holds: '-candidates=40-stratify_by=grp' ('' at the defaults)."""
    return (f"-candidates={candidates}" if candidates is not None else "") + (
        f"-stratify_by={stratify_by}" if stratify_by else "")


def _named_curve(run: Any, task: str | None = None, input_kind: str | None = None) -> str:
    """The curve a run belongs to today: its recorded one, except for a run an earlier alkit named
    by its settings, which gets the curve today's names give those settings, so that it and today's
    runs of the same settings are one curve (and a run of other training settings is not the
    default runs' curve): names of option values alone with training settings left out (rules 1),
    or, on a project of ``task`` and ``input_kind``, an option at the value the project gives it
    kept in the name (rules 2: `--cov shared` on classification; rules 3: `-o train.lr_decay=1` on
    images)."""
    config = run.config or {}
    curve = str(config.get("curve") or "")
    version = _naming(run)
    if version >= NAMING_VERSION or not curve or (version >= 2 and (task is None or input_kind is None)):
        return curve
    try:
        preset = get_preset(run.strategy)
        acquisition = config.get("acquisition")
        initial_selector = config.get("initial_selector")
        req = RunRequest(strategy=run.strategy, budget=run.budget, batch_size=run.batch_size, seed=run.seed,
                         scorer=run.scorer, initial=run.initial, learner_options=dict(config.get("learner") or {}),
                         train=dict(config.get("train") or {}),
                         acquisition=None if acquisition in (preset.acquisition, preset.regression_acquisition)
                         else acquisition,
                         initial_selector=None if initial_selector == preset.initial_selector else initial_selector)

        def named_by_its_rules(req: RunRequest) -> str:
            """The name the run's own rules gave ``req``, to tell an auto-named run from a --name one."""
            if version == 1:
                return curve_name(req, run.scorer, legacy=True)
            return curve_name(without_defaults(req, run.scorer, task if version >= 3 else None,
                                               input_kind if version >= 4 else None, rules=version), run.scorer,
                              hide_none=version < 5, with_initial=version >= 6, full_paths=version < 7)

        named = named_by_its_rules(req)
        if (curve != named and version < 9 and task == "regression" and acquisition == preset.regression_acquisition
                and acquisition != preset.acquisition):  # an --acquisition given as the task's own (rules before 9)
            req = replace(req, acquisition=acquisition)
            named = named_by_its_rules(req)
        if curve != named or run.name != f"{curve}-b{run.batch_size}-s{run.seed}":
            return curve  # given its own --name: kept
        return curve_name(without_defaults(req, run.scorer, task, input_kind), run.scorer)
    except (ValueError, KeyError):  # a strategy or scorer this alkit no longer has
        return curve


def resolve_acquisition(strategy: str, requested: str | None, scorer: str, task: str, selector: str,
                        single_member: bool = False, terms: Terms | None = None) -> tuple[str, list[str]]:
    """(acquisition, notes) of a run or a query: ``requested``, refused by name when the scorer cannot
    feed it; else the preset's, or the scorer's own epistemic score where the scorer cannot feed the
    preset's (a note says so).  Random picks read no score (a requested one is refused: it was taken,
    named and ignored); BatchBALD needs ensemble members of a classification project.  ``terms``: how
    the messages name the caller's arguments (default: `alkit run`'s options)."""
    preset = get_preset(strategy)
    terms = terms or Terms(who=f"strategy {strategy!r}")
    who = terms.who
    if requested and selector == "random":
        raise LoopError(f"{who} picks without a score: {terms.acquisition(requested)} would have "
                        "no effect; drop it, or use a strategy that ranks (e.g. topk, diverse)")
    acquisition = requested or preset.acquisition_for(task)
    if acquisition not in ACQUISITIONS:
        raise LoopError(f"unknown acquisition {acquisition!r}; known: {', '.join(ACQUISITIONS)}")
    if task == "regression" and not requested and "probs" in ACQUISITIONS[acquisition].needs:
        # it ran, ranking by the epistemic score under the preset's name: a curve called margin that was not
        raise LoopError(f"{who} ranks by {acquisition}, which needs class probabilities: classification "
                        "projects only (on a regression project every strategy that ranks by the epistemic score, BALD "
                        "or EPIG runs" + ("" if terms.library else "; an earlier run continues with `alkit run --resume "
                                          "NAME`") + ")")
    if selector == "batchbald" and task == "regression":  # found only after the first batch was spent
        raise LoopError(f"{who} selects by BatchBALD, which needs class probabilities: "
                        "classification projects only (regression: epistemic, bald, epig, badge, kcenter)")
    if selector == "batchbald" and "members" not in get_scorer(scorer).provides:  # found after scoring the pool
        raise LoopError(f"{who} selects by BatchBALD over ensemble members: scorer {scorer!r} has "
                        f"none (use scorer ensemble, mc-dropout, sve or your {terms.option('learner')})")
    notes: list[str] = []
    if selector == "random":
        return acquisition, notes
    # k-center reads only embeddings, BADGE (classification) embeddings and probabilities, cold start
    # strata: no score
    ranks = not (selector in ("kcenter", "coldstart") or (selector == "badge" and task == "classification"))
    if requested and selector == "coldstart":  # it composes (issue 12), and the note says what that means
        notes.append(f"{who} draws a stratified sample, not by score: {terms.acquisition(requested)} is "
                     "recorded with the run but changes no pick")
    elif requested and not ranks:  # the score only chooses which items are candidates, beyond --candidates
        notes.append(f"{who} picks from embeddings, not by score: {terms.acquisition(requested)} only "
                     f"chooses its candidates, the pool's best-scored items ({terms.option('candidates')}, default {POOL_CANDIDATES:,}); "
                     "a pool no larger than that is taken whole, and the acquisition changes nothing")
    try:
        check_acquisition(acquisition, scorer, task, ranks_by_score=ranks, single_member=single_member,
                          terms=terms)
    except ValueError as exc:
        if requested:
            raise LoopError(str(exc)) from None
        notes.append(f"{who} ranks by {acquisition}, which scorer {scorer!r} cannot feed; "
                     f"this run uses the scorer's own epistemic score ({terms.acquisition('epistemic')})")
        acquisition = "epistemic"
        try:
            check_acquisition(acquisition, scorer, task, ranks_by_score=ranks, single_member=single_member,
                              terms=terms)
        except ValueError as exc2:
            raise LoopError(f"{who} ranks by a score; {exc2}") from None
    return acquisition, notes


def _recorded_idle_options(cls: type, req: RunRequest, ident: RunIdentity, runs: Sequence[Any]) -> list[str]:
    """Options of ``req`` that its learner class now refuses as idle (``idle_options``: settings
    nothing reads), where ``req`` continues a recorded run that holds them: an earlier alkit
    accepted them, and refusing them now left the run impossible to resume."""
    from alkit.scorer_options import same_value

    idle_of = getattr(cls, "idle_options", None)
    recorded = next((r for r in runs if r.name == ident.name), None)
    if idle_of is None or recorded is None:
        return []
    held = dict((recorded.config or {}).get("learner") or {})
    return [k for k in idle_of(req.learner_options) if k in held and same_value(held[k], req.learner_options[k])]


def request_for_run(run: Any, task: str, budget: int | None = None) -> RunRequest:
    """The request that continues ``run`` (a store run row) as it was started: its identity and
    every option recorded with it (``budget`` None: its own).  Why: the options that name a run
    are many (strategy, scorer, seed, batch size, acquisition, -o ...), and continuing with one
    left out started a new run, or with a smaller --budget cut the old one short."""
    cfg = run.config or {}
    preset = get_preset(run.strategy)
    acquisition = cfg.get("acquisition")
    if preset.selector == "random" or acquisition == preset.acquisition_for(task):
        acquisition = None  # the preset's own (an explicit one is refused with random picks)
    initial_selector = cfg.get("initial_selector")
    return RunRequest(strategy=run.strategy, budget=run.budget if budget is None else budget,
                      batch_size=run.batch_size, seed=run.seed, scorer=run.scorer, initial=run.initial, name=run.name,
                      candidates=cfg.get("candidates"), stratify_by=cfg.get("stratify_by"),
                      learner_options=dict(cfg.get("learner") or {}), train=dict(cfg.get("train") or {}),
                      engine=cfg.get("engine") or "local", ray_address=cfg.get("ray_address"), acquisition=acquisition,
                      initial_selector=None if initial_selector == preset.initial_selector else initial_selector,
                      stop=list(cfg.get("stop") or []))


def _code_digests(learner_options: dict[str, Any]) -> dict[str, str]:
    """The source hash of the user's code a run uses (--backbone, --learner) and the fingerprint of the
    model directory it reads (--model-dir: a model replaced between cycles was taken on without a word),
    recorded with it."""
    out = {}
    refs = {key: str(learner_options[key]) for key in ("module", "estimator") if learner_options.get(key)}
    if refs:
        from alkit.models.user_backbone import source_digest

        out = {key: source_digest(ref) for key, ref in refs.items()}
    if learner_options.get("model_dir") and Path(str(learner_options["model_dir"])).is_dir():
        from alkit.models.dual_encoder_dir import fingerprint

        out["model_dir"] = fingerprint(Path(str(learner_options["model_dir"])))
    return out


def _default_members() -> int:
    """The sklearn learner's default member count (read from its signature, one source of truth)."""
    from alkit.scorer_options import declared

    return int(declared(learner_class("sklearn"))["members"].default)


def plan_run(req: RunRequest, cfg: ProjectConfig, n_pool_for: Callable[[str], tuple[int, int]],
             runs: Sequence[Any] = ()) -> RunPlan:
    """Validate ``req`` against the project and build its plan; ``n_pool_for(run_name)`` is the
    pool the run may still spend: (unlabeled items, items the run's own picks hold);
    ``runs`` the store's runs (run_identity).  Every refusal is a
    LoopError naming the bad argument."""
    preset = get_preset(req.strategy)
    scorer = req.scorer or preset.default_scorer
    get_scorer(scorer)
    if req.batch_size < 1:
        raise LoopError(f"--batch-size must be at least 1, got {req.batch_size}")
    if not 0 <= req.seed <= SEED_MAX:
        raise LoopError(f"--seed must be in 0..{SEED_MAX}, got {req.seed}")
    for field_, value in (("budget", req.budget), ("batch_size", req.batch_size), ("seed", req.seed),
                          ("candidates", req.candidates), ("initial", req.initial)):
        if value is not None and not is_whole_number(value):
            raise LoopError(f"--{field_.replace('_', '-')} must be a whole number, got {value!r}")
    if req.budget < 1:
        raise LoopError(f"--budget must be at least 1, got {req.budget}")
    if req.name is not None and not req.name.strip():  # a blank name was a blank row in status and plot legends
        raise LoopError("--name is blank: give the run a name, or leave --name out for one made from the arguments")
    if req.name is not None and (not req.name.isprintable() or req.name != req.name.strip()):
        # a line break in it drew two rows in status for one run (a black-box check)
        raise LoopError(f"--name {req.name!r} holds a line break, a tab or another control character, or spaces at "
                        "its ends: give a name of printable characters")
    # empty values (an unset shell variable): '' was recorded as a stratify column no data has, and locked the plain
    # command out of the run; --backbone '' ran the default network without a word (a black-box check)
    if req.stratify_by is not None and not str(req.stratify_by).strip():
        raise LoopError("--stratify-by is empty: give a metadata column (an unset shell variable?)")
    if "module" in req.learner_options and not str(req.learner_options["module"] or "").strip():
        raise LoopError("--backbone is empty: give a network as module:attr or file.py:attr (an unset shell variable?)")
    if req.candidates is not None and req.candidates < 1:
        raise LoopError(f"--candidates must be at least 1, got {req.candidates}")
    if req.candidates is not None and req.candidates < req.batch_size:  # it was raised to the batch silently
        raise LoopError(f"--candidates {req.candidates} is below --batch-size {req.batch_size}: a batch is picked "
                        "from at least as many candidates")
    initial = req.batch_size if req.initial is None else req.initial
    if initial < 1:  # 0 was taken as --batch-size: a first batch is always picked
        raise LoopError(f"--initial must be at least 1 (the first batch's size; leave it out for --batch-size), "
                        f"got {initial}")
    ident = run_identity(req, scorer, runs, cfg.task, cfg.input_kind)
    if len(ident.name) > RUN_NAME_MAX:  # PostgreSQL enforces the column's length (a traceback there), SQLite does not
        raise LoopError(f"the run name {ident.name[:40]!r}... is {len(ident.name)} characters; the store allows "
                        f"{RUN_NAME_MAX}: give a shorter --name")
    unlabeled, held = n_pool_for(ident.name)
    n_pool = unlabeled + held
    if req.budget > n_pool and held:  # people label for every run: other runs took the rest of the pool
        raise LoopError(f"a budget of {req.budget} labels is more than run {ident.name!r} can spend: it holds {held} "
                        f"pool items (its picks) and {unlabeled} are left unlabelled (labels from other runs count too); pass "
                        f"--budget {n_pool} or less")
    if req.budget > n_pool:
        raise LoopError(f"a budget of {req.budget} labels is larger than the unlabeled pool ({n_pool} items)"
                        + ("; every pool item is labelled or waits in the labelers' queue (another run's picks: "
                           "`alkit queue import FILE` brings their answers in; `alkit init --hide-labels` simulates "
                           "labelling)" if n_pool == 0 else ""))
    if initial > req.budget and ident.name not in {r.name for r in runs}:  # a recorded run spent its first
        # batch: a budget below that is below what it spent, which the store refuses naming the labels spent
        raise first_batch_refusal(req.initial, req.batch_size, req.budget)
    if req.stratify_by and req.stratify_by == cfg.label_col:  # was 'not a column of the data'
        raise LoopError(f"--stratify-by {req.stratify_by!r} is the label column: the picks may not read the answers "
                        "(they are what the labels buy); give a metadata column")
    if req.stratify_by and req.stratify_by not in cfg.payload_cols:
        feature = req.stratify_by in cfg.feature_cols
        raise LoopError(f"--stratify-by {req.stratify_by!r} is "
                        + ("a feature column; it stratifies by a column kept beside the features (payload)"
                           if feature else "not a column of the data")
                        + f"; those columns: {', '.join(cfg.payload_cols)}")
    initial_selector = req.initial_selector or preset.initial_selector
    for name in (preset.selector_for(cfg.task, req.batch_size), initial_selector):
        get_selector(name)
    if get_selector(initial_selector).needs_model:
        raise LoopError(f"--initial-selector {initial_selector!r} needs a model; the first batch is picked "
                        "without one (use random or coldstart)")
    selector = preset.selector_for(cfg.task, req.batch_size)
    single = scorer == "sklearn" and int(req.learner_options.get("members", _default_members())) == 1
    acquisition, notes = resolve_acquisition(req.strategy, req.acquisition, scorer, cfg.task, selector, single)
    if req.stratify_by and "coldstart" not in (initial_selector, selector):  # only the cold start reads strata
        notes.append(f"--stratify-by stratifies the cold-start batch, and strategy {req.strategy!r} picks its first "
                     f"batch by {initial_selector!r}: it changes nothing here (add --initial-selector coldstart to "
                     "stratify the first batch)")
    info = get_scorer(scorer)
    for option in sorted(set(req.learner_options) & set(_OWNED)):
        owner, what = _OWNED[option]
        if scorer != owner:
            raise LoopError(f"--{option.replace('_', '-')} {what}; scorer {scorer!r} has no such option: drop it "
                            f"or use --scorer {owner}")
    if req.learner_options.get("module") and scorer in ("mc-dropout", "sve", "bayesvlm", "sklearn"):  # before the
        # option check, which named the internal option ('module: not an option of scorer bayesvlm'), not --backbone
        raise LoopError(f"--backbone: scorer {scorer!r} " + (
            "reads its own model's image features (--model-dir); drop --backbone" if scorer == "bayesvlm" else
            "is your --learner's estimator, a model of its own; drop --backbone" if scorer == "sklearn" else
            "works on alkit's own residual blocks (dropout masks, their singular values); use vbll, laplace, csd, "
            "gradnorm, ensemble or none"))
    if scorer == "bayesvlm" and not cfg.image_col:  # the rest of its checks are the learner's own (below)
        raise LoopError("--scorer bayesvlm reads the images: this project has no image column (make it with "
                        "`alkit init DATA --image-col COL`)")
    idle = _recorded_idle_options(learner_class(scorer), req, ident, runs)
    if idle:  # accepted when the run started, refused since (they changed nothing): the run goes on without them
        notes.append(f"run {ident.name!r} was recorded with {', '.join(f'{k}={req.learner_options[k]}' for k in idle)}, "
                     "which changes nothing under the closed-form solver (refused for new runs since 2026-12-05); "
                     "it continues as it scored")
        req = replace(req, learner_options={k: v for k, v in req.learner_options.items() if k not in idle})
    try:  # the library's RunRequest carries Python values that no -o parsing checked
        from alkit.scorer_options import check_values

        check_values(learner_class(scorer), scorer, req.learner_options)
    except ValueError as exc:
        raise LoopError(f"invalid options for scorer {scorer!r}: {exc}") from None
    unknown = set(req.train) - set(TrainConfig.__dataclass_fields__)
    if unknown:
        raise LoopError(f"unknown training options {sorted(unknown)}; known: {', '.join(TrainConfig.__dataclass_fields__)}")
    if req.learner_options.get("module_norm") is not None and not req.learner_options.get("module"):
        raise LoopError("-o module_norm scales the output of a --backbone network; give --backbone or drop it")
    module_names = None
    if req.learner_options.get("module"):
        from alkit.models.user_backbone import BackboneImportError, build_user_backbone

        try:  # built and probed now: a backbone that cannot work is refused before a batch is spent
            shape = tuple(cfg.image_shape) if cfg.image_shape else None
            net = build_user_backbone(str(req.learner_options["module"]), cfg.n_features, shape,
                                      np.zeros(cfg.n_features, dtype=np.float32), np.ones(cfg.n_features, dtype=np.float32))
            module_names = [n for n, _ in net.named_parameters()]  # what gradnorm's -o layers may name
        except BackboneImportError as exc:
            raise LoopError(str(exc)) from None
    try:
        train_config = TrainConfig(**req.train)
    except (TypeError, ValueError) as exc:
        raise LoopError(f"invalid training option: {exc}") from None
    try:  # build one (unfitted) learner now, so a bad option is refused before anything is written
        make_learner(scorer, cfg.task, cfg.n_classes, class_names=cfg.classes, train=train_config,
                     **req.learner_options)
        check = getattr(learner_class(scorer), "check_for_project", None)
        if check is not None:  # options that name parts of the network this project's input builds
            check(req.learner_options, image=bool(cfg.image_shape), user_module=bool(req.learner_options.get("module")),
                  shallow=cfg.task == "regression" or cfg.input_kind == "embedding", module_names=module_names,
                  image_side=min(cfg.image_shape[-2:]) if cfg.image_shape else None,
                  prior_fixed=req.train.get("prior_l2") is not None)
    except (TypeError, ValueError) as exc:
        recorded = next((r for r in runs if r.name == ident.name), None)  # an earlier alkit took them, then failed
        after = (f"; run {ident.name!r} was recorded with them by an earlier alkit and cannot go on: start another "
                 "with other options (or under a --name)" if recorded is not None else "")
        raise LoopError(f"invalid options for scorer {scorer!r}: {exc}{after}") from None
    try:
        stop_rules = [get_rule(r) for r in req.stop]
    except ValueError as exc:
        raise LoopError(str(exc)) from None
    earlier = next((r for r in runs if r.name == ident.name), None)
    recorded_gain = [r for r in req.stop if r.startswith("forecast") and "gain=" in r]
    if (cfg.task == "regression" and recorded_gain and earlier is not None and earlier.created_at is not None
            and earlier.created_at.replace(tzinfo=None) < FORECAST_SHARE_SINCE):
        # its rule read the gain in the metric's units when it started; the same number is now a share of the
        # metric (30x looser at a CRPS of 32): it stopped at once, unsaid (a check of upgraded projects)
        notes.append(f"run {ident.name!r} started before 2026-12-07, when --stop {recorded_gain[0]} read a regression "
                     "run's gain in the metric's units; it is now a share of the metric (gain=0.02: 2 % of the "
                     "CRPS): restate the rule (--stop forecast:gain=SHARE) or drop it (--stop none)")
    on_scores = [r.name for r in stop_rules if r.name in ("max-uncertainty", "overall-uncertainty")]
    if on_scores and selector in ("random", "coldstart"):  # no score is read: the rule could never fire
        raise LoopError(f"--stop {on_scores[0]} reads the candidates' acquisition scores, and strategy {req.strategy!r} "
                        "picks without one: use --stop forecast or kappa, or a strategy that ranks")
    if on_scores and getattr(get_acquisition(acquisition), "signed", False):  # it fired at the first model
        raise LoopError(f"--stop {on_scores[0]} compares the candidates' scores with a positive threshold, but the "
                        f"{acquisition} acquisition's scores are <= 0 (minus the top-two gap), always below it: use it "
                        "with --acquisition least-confident or entropy, or --stop kappa or forecast")
    if cfg.task == "regression" and any(r.name == "kappa" for r in stop_rules):
        raise LoopError("--stop kappa compares predicted classes; on a regression project use forecast, or an "
                        "uncertainty rule with its threshold in the scores' units")
    untuned = [spec for spec, r in zip(req.stop, stop_rules)
               if r.name in ("max-uncertainty", "overall-uncertainty") and r.threshold is None]
    if cfg.task == "regression" and untuned:  # the same data in other units stopped after 10 labels, or never
        recorded = earlier is not None and untuned[0] in ((earlier.config or {}).get("stop") or [])
        raise LoopError((f"run {ident.name!r} was recorded with --stop {untuned[0]} by an earlier alkit: "
                         if recorded else f"--stop {untuned[0]}: ")
                        + "on a regression project the candidates' scores depend on the target's "
                        "units and the head (the Gaussian and quantile heads' epistemic variance is in the units "
                        "squared), so the default threshold, made for probability-like "
                        f"scores, depends on the units; give one, e.g. {untuned[0].split(':')[0]}:threshold=VALUE, or "
                        "use --stop forecast (scale-free on regression)"
                        + ("; --stop none continues the run without a rule" if recorded else ""))
    if req.ray_address is not None and req.engine != "ray":  # it ran on the local engine without a word
        raise LoopError("--ray-address is the Ray cluster of --engine ray: add --engine ray, or drop it")
    if req.engine not in ENGINES:
        raise LoopError(f"--engine must be one of {', '.join(ENGINES)}, not {req.engine!r}")
    # --candidates at its default is the default run's setting, not another (it was refused as "None, not 200")
    default_m = candidate_count(get_selector(selector).candidate_source, req.batch_size, None)
    candidates = None if req.candidates == default_m else req.candidates
    # recorded as the selectors read them: --candidates 60 on random picks was recorded, and the default command
    # that continues the run was then refused as "exists with candidates=60" (a run recorded so keeps its record)
    effective = _read_picks(candidates, req.stratify_by, initial_selector, selector)
    picked = effective
    if earlier is not None and _effective_picks(earlier, cfg.task) == effective:
        picked = ((earlier.config or {}).get("candidates"), (earlier.config or {}).get("stratify_by"))
    options = {"candidates": picked[0], "stratify_by": picked[1],
               "learner": dict(ident.learner), "train": dict(ident.train),
               "engine": req.engine, "ray_address": req.ray_address,
               "acquisition": acquisition, "initial_selector": initial_selector, "stop": list(req.stop),
               "curve": ident.curve, NAMING: NAMING_VERSION, "code": _code_digests(req.learner_options),
               "threads": torch.get_num_threads()}  # kept as started: a continuation at another count is told
    if earlier is None:  # a new run: on a curve of its own settings only (compared as recorded: the acquisition and
        # first-batch selector resolved, the options less their defaults), and of no option it never reads
        from alkit.presets import PRESETS

        _refuse_unread_score_options(scorer, ident.learner, None if selector in ("random", "coldstart") else acquisition,
                                     req.strategy)
        if cfg.task == "regression" and acquisition == "epig-decision":  # epig's picks under a name of their own
            raise LoopError(f"{'strategy' if req.strategy == 'epig-decision' else '--acquisition'} epig-decision reads "
                            "the top-two class decisions; on a regression project it picks as epig does: use "
                            "--acquisition epig (or --strategy epig)")
        if (cfg.task == "regression" and ident.learner.get("cov") == "shared"
                and ident.learner.get("head") in (None, "gaussian", "hetero")):  # one output: its covariance is dense
            what = (f"beside --head {ident.learner['head']}: a head of one output has one covariance, which is its "
                    "dense one, the default" if ident.learner.get("head") else
                    "without --head: each fit chooses a head of one output, whose one covariance is its dense one, "
                    "or the bucket head, whose default is shared; either way the default")
            raise LoopError(f"--cov shared {what}: drop --cov (it named a second run of the default's picks)")
        if (cfg.task == "regression" and ident.learner.get("train_cov") == "shared"
                and ident.learner.get("head") in ("gaussian", "hetero")):  # the same one output: shared is dense
            raise LoopError(f"-o train_cov=shared beside --head {ident.learner['head']}: a head of one output has one "
                            "covariance, so shared is dense: use -o train_cov=dense (it named a second run of its picks)")
        if cfg.task == "classification" and REGRESSION_ONLY_OPTION in ident.learner:  # the default's picks, renamed
            raise LoopError(f"option {REGRESSION_ONLY_OPTION} applies to regression projects only; this is a "
                            "classification project")

        # --candidates and --stratify-by are no part of a name: an unnamed --candidates 60 run on a new seed was
        # averaged into the default runs' curve (a review of the curve check); an unnamed run's curve shows them
        if not req.name and picks_suffix(*effective):
            ident = replace(ident, curve=ident.curve + picks_suffix(*effective))
            options["curve"] = ident.curve
        picks = selection_text(*effective)
        mine = settings_curve(req.strategy, scorer, acquisition, initial_selector, req.learner_options,
                              req.train, cfg.task, cfg.input_kind, initial=req.initial, batch_size=req.batch_size) + picks
        # the runs on this curve as status and plot draw them (an earlier alkit's run named by its settings: today's
        # curve of them, not the one it recorded; a check of upgraded projects)
        mixed = sorted({f"{r.strategy}/{r.scorer} at {theirs}"
                        for r in runs if current_curve(r, cfg.task, cfg.input_kind) == ident.curve
                        and (theirs := run_settings_curve(r, cfg.task, cfg.input_kind) + _recorded_picks(r, cfg.task))
                        != mine})
        # the preset's own curve: only runs of its default settings (a margin run named epistemic-b10-s2 was
        # averaged into the preset's curve; a black-box check)
        preset_curve = bool(req.name) and ident.curve in PRESETS and (
            ident.curve != req.strategy or mine != _default_settings_curve(preset, cfg, selector, req.batch_size))
        if mixed or preset_curve:  # an unnamed run meets a named run's curve too (either order; a black-box check)
            whose = f"runs of {', '.join(mixed)}" if mixed else f"strategy {ident.curve!r} at its defaults"
            what = f"--name {req.name!r}" if req.name else f"its name {ident.name!r}"
            raise LoopError(f"{what} would draw this run ({mine}) on the learning curve of {whose}, averaged with "
                            f"them: give it {'another' if req.name else 'a'} --name")
    spec = RunSpec(ident.name, req.strategy, scorer, req.seed, req.budget, req.batch_size, initial, options)
    train, learner_options = TrainConfig(**ident.train), {k: v for k, v in ident.learner.items() if k not in idle}

    def fresh_learner(input_spec: InputSpec | None) -> Learner:
        return make_learner(scorer, cfg.task, cfg.n_classes, class_names=cfg.classes, train=train,
                            input=input_spec, **learner_options)

    features = _vlm_features(str(learner_options["model_dir"])) if scorer == "bayesvlm" else None
    # the Ray engine's tasks read Parquet row groups of the project's own features
    stem = bool(cfg.image_shape) and info.own_network and not learner_options.get("module") and req.engine == "local"
    return RunPlan(spec, fresh_learner, get_acquisition(acquisition), get_selector(initial_selector),
                   initial_selector, get_selector(selector), selector, stop_rules, zero_shot=info.zero_shot,
                   initial_selector_named=initial_selector != preset.initial_selector,
                   features=features, stem=stem, notes=notes)
