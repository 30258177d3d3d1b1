"""`--opt key=value`: every option a scorer's learner declares, typed and checked before a run.

A scorer's options are read from its learner class, not listed by hand, so a new keyword on a
learner is reachable from the command line the day it is added: the keyword-only parameters of
``__init__`` with simple types (int, float, bool, str, a Literal of choices); the backbone's
fields (width, depth, feature_map, ...), which every learner passes on to its network; and the
fields of a config dataclass parameter as ``param.field`` (``csd.steps=500``).  Values are parsed
by the declared type and refused with a message naming the option and what it accepts.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np

from alkit.checks import is_whole_number

INTERNAL = {"self", "task", "n_classes", "train", "input", "backbone", "contexts", "seed", "class_names"}  # set by the loop
SIMPLE = (bool, int, float, str)


@dataclass(frozen=True)
class Option:
    name: str
    kind: type  # bool, int, float or str
    choices: tuple[str, ...] | None
    default: Any
    optional: bool  # None is a value ("none" on the command line)

    def values(self) -> str:
        """What the option accepts, as `alkit strategies --scorer` lists it: 'trace|mi', 'float|none'."""
        what = "|".join(self.choices) if self.choices else self.kind.__name__
        return what + ("|none" if self.optional else "")

    def parse(self, text: str) -> Any:
        if self.optional and text.lower() in ("none", "null"):
            return None
        if self.choices is not None:
            if text not in self.choices:
                raise ValueError(f"option {self.name}={text!r}: must be one of {', '.join(self.choices)}")
            return text
        if self.kind is bool:
            if text.lower() not in ("true", "false", "1", "0", "yes", "no"):
                raise ValueError(f"option {self.name}={text!r}: must be true or false")
            return text.lower() in ("true", "1", "yes")
        try:
            value = self.kind(text)
        except ValueError:
            raise ValueError(f"option {self.name}={text!r}: must be {'an integer' if self.kind is int else 'a number'}") from None
        if self.kind is float and not math.isfinite(value):  # nan / inf: no option of alkit's means them
            raise ValueError(f"option {self.name}={text!r}: must be a finite number")
        return value + 0.0 if self.kind is float else value  # -0.0 is 0.0 (one run name, not two)


def same_value(given: Any, default: Any) -> bool:
    """An option's value is its default (a run given it is the default run): equal, and a bool
    only equal to a bool (``True == 1`` in Python)."""
    return isinstance(given, bool) == isinstance(default, bool) and given == default


def _simple(hint: Any) -> tuple[type, tuple[str, ...] | None, bool] | None:
    """(kind, choices, optional) of a type hint alkit can parse from text, else None."""
    optional = False
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        optional = len(args) < len(typing.get_args(hint))
        if len(args) != 1:
            return (str, None, optional) if str in args else None  # e.g. str | Sequence[str]: given as text
        hint, origin = args[0], typing.get_origin(args[0])
    if origin is Literal:
        values = typing.get_args(hint)
        return (str, tuple(str(v) for v in values), optional) if all(isinstance(v, str) for v in values) else None
    return (hint, None, optional) if hint in SIMPLE else None


def _from_dataclass(cls: type, prefix: str) -> dict[str, Option]:
    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        simple = _simple(hints[f.name])
        if simple is not None:
            name = f"{prefix}{f.name}"
            out[name] = Option(name, *simple[:2], f.default, simple[2])
    return out


def declared(learner_cls: type) -> dict[str, Option]:
    """Every option of a learner class, by the name `--opt` takes."""
    from alkit.models.backbone import BackboneConfig

    init = learner_cls.__init__
    hints = typing.get_type_hints(init)
    out: dict[str, Option] = {}
    takes_backbone = False
    forwarded = getattr(learner_cls, "forwards_options_to", None)  # **kwargs handed to a wrapped learner
    for p in inspect.signature(init).parameters.values():
        if p.kind is p.VAR_KEYWORD and forwarded is not None:
            out.update({k: v for k, v in declared(forwarded()).items() if k not in out})
            continue
        if p.kind is p.VAR_KEYWORD or p.name == "backbone":
            takes_backbone = True
            continue
        if p.name in INTERNAL or p.kind is not p.KEYWORD_ONLY:
            continue
        hint = hints.get(p.name)
        inner = [a for a in typing.get_args(hint) if a is not type(None)] or [hint]
        if len(inner) == 1 and dataclasses.is_dataclass(inner[0]):
            out.update(_from_dataclass(inner[0], f"{p.name}."))
            continue
        simple = _simple(hint)
        if simple is not None:
            out[p.name] = Option(p.name, simple[0], simple[1], p.default, simple[2])
    if takes_backbone:  # the backbone's fields, with the defaults the learner class sets for them
        own = getattr(learner_cls, "backbone_defaults", {})
        fixed = getattr(learner_cls, "backbone_fixed", ())  # fields the learner sets from its own options
        out.update({k: dataclasses.replace(v, default=own.get(k, v.default))
                    for k, v in _from_dataclass(BackboneConfig, "").items() if k not in out and k not in fixed})
    return out


def parse(learner_cls: type, scorer: str, pairs: list[str]) -> dict[str, Any]:
    """``["cov=shared", "csd.steps=500"]`` -> ``{"cov": "shared", "csd.steps": 500}`` (JSON-safe:
    what the run records); a malformed pair or an undeclared option is a ValueError."""
    options = declared(learner_cls)
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--opt {pair!r}: write it as key=value (`alkit strategies --scorer {scorer}` lists the keys)")
        if key not in options:
            raise ValueError(f"--opt {key}: not an option of scorer {scorer!r}; its options: {', '.join(options)}")
        _put(out, key, options[key].parse(value.strip()), key)
    check = getattr(learner_cls, "check_options", None)  # options that only matter beside another one
    if check is not None:
        check(out)
    return out


def check_values(learner_cls: type, scorer: str, options: dict[str, Any]) -> None:
    """Refuse options given as Python values (``pool_learner(..., epistemic="trace")``, a RunRequest's
    ``learner_options``) that ``parse`` would refuse as text: an undeclared name, a value outside an
    option's choices or of another type.  Why: the library passed them on unchecked, so a misspelt
    choice ran on the default and was recorded with the run, and a wrong type failed deep in torch."""
    known = declared(learner_cls)
    for key, value in options.items():
        if key in INTERNAL:  # set by alkit (the pool's InputSpec, the training settings), not a user's option
            continue
        option = known.get(key)
        if option is None:
            raise ValueError(f"{key}: not an option of scorer {scorer!r}; its options: {', '.join(known)}")
        if value is None and option.optional:
            continue
        if option.choices is not None:
            if value not in option.choices:
                raise ValueError(f"option {key}={value!r}: must be one of {', '.join(option.choices)}")
            continue
        kind = option.kind
        ok = (isinstance(value, bool) if kind is bool else
              is_whole_number(value) if kind is int else
              isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)
              and math.isfinite(value) if kind is float else isinstance(value, kind))
        if not ok:
            what = {bool: "True or False", int: "an integer", float: "a finite number", str: "text"}.get(kind, kind.__name__)
            raise ValueError(f"option {key}={value!r}: must be {what}")
    check = getattr(learner_cls, "check_options", None)
    if check is not None:
        check({k: v for k, v in options.items() if k not in INTERNAL})


def _put(out: dict[str, Any], key: str, value: Any, shown: str) -> None:
    """out[key] = value, refusing a second, different value (the later one won silently)."""
    if key in out and not same_value(value, out[key]):
        raise ValueError(f"--opt {shown} is given twice, as {out[key]!r} and {value!r}: give it once")
    out[key] = value


TRAIN_PREFIX = "train."


def training(learner_cls: type) -> dict[str, Option]:
    """The training loop's settings (TrainConfig fields) as ``train.FIELD`` options, for learners
    that train alkit's network (every one but those marking ``trains_network = False``: a user's
    scikit-learn estimator, BayesVLM's fine-tuning, which have settings of their own); the run
    records them apart from the learner's own options and passes them as its TrainConfig."""
    if not getattr(learner_cls, "trains_network", True):
        return {}
    from alkit.models.train import TrainConfig

    return _from_dataclass(TrainConfig, TRAIN_PREFIX)


def parse_with_training(learner_cls: type, scorer: str, pairs: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``parse``, with ``train.FIELD=VALUE`` pairs split off: (learner options, TrainConfig fields)."""
    train_options = training(learner_cls)
    own: list[str] = []
    train: dict[str, Any] = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        key = key.strip()
        if not key.startswith(TRAIN_PREFIX):
            own.append(pair)
            continue
        if key not in train_options:
            known = ", ".join(train_options) or "none (it trains no network)"
            raise ValueError(f"--opt {key}: not a training option of scorer {scorer!r}; its training options: {known}")
        _put(train, key.removeprefix(TRAIN_PREFIX), train_options[key].parse(value.strip()), key)
    return parse(learner_cls, scorer, own), train


def to_kwargs(learner_cls: type, options: dict[str, Any]) -> dict[str, Any]:
    """Recorded options -> the learner's keyword arguments: ``param.field`` entries become the
    config dataclass of ``param``; everything else is passed as it is."""
    hints = typing.get_type_hints(learner_cls.__init__)
    kwargs: dict[str, Any] = {}
    groups: dict[str, dict[str, Any]] = {}
    for key, value in options.items():
        head, dot, field = key.partition(".")
        if dot:
            groups.setdefault(head, {})[field] = value
        else:
            kwargs[key] = value
    for head, fields in groups.items():
        inner = [a for a in typing.get_args(hints.get(head)) if a is not type(None)] or [hints.get(head)]
        if head not in hints or not dataclasses.is_dataclass(inner[0]):
            raise TypeError(f"{head}.{next(iter(fields))}: {head} is not an option group of this scorer")
        base = kwargs.get(head) or inner[0]()
        kwargs[head] = dataclasses.replace(base, **fields)
    return kwargs
