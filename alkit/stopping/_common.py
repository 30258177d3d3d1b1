"""The inputs every stopping rule reads and the decision it returns."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alkit.checks import is_whole_number
from alkit.choices import HIGHER_IS_BETTER, METRIC_RANGE, METRICS


@dataclass(frozen=True)
class History:
    """The cycles of a run so far, oldest first (only those since it last stopped).

    ``n_labeled[i]`` labels were used by the model of cycle i, ``metrics[i]`` its test metrics
    (empty without a test split or a model), ``signals[i]`` what was recorded with it
    (``stop_preds``: predicted class per stop-set item; ``score_max`` / ``score_mean``: the
    acquisition scores of the cycle's candidates)."""

    n_labeled: list[int]
    metrics: list[dict[str, float]]
    signals: list[dict[str, Any]]
    batch_size: int
    budget: int
    metric: str  # the test metric the forecast follows: accuracy, or crps for regression
    # alkit run's own history: a cycle may lack a signal for a while (no model on one class yet, too few labels to
    # cross-validate), and a rule then waits; a history built by hand is checked (require_signal)
    waits: bool = False

    @property
    def higher_is_better(self) -> bool:
        return self.metric in HIGHER_IS_BETTER

    @classmethod
    def of(cls, cycles: list[tuple[int, dict[str, float], dict[str, Any]]], batch_size: int, budget: int,
           metric: str, *, waits: bool = False) -> "History":
        """From (labels, test metrics, signals) per cycle, oldest first: how the loop and the
        stopping benchmark both build what the rules read.  What a loop of one's own hands over is checked
        (black-box checks: a cycle that was no triple was a bare IndexError, accuracy in percent stopped a
        forecast at once, stop_preds as an array failed as an 'ambiguous truth value', metric='acc' was
        taken): a ValueError names the field."""
        known = {m for ms in METRICS.values() for m in ms}
        if metric not in known:
            raise ValueError(f"metric {metric!r} is no metric alkit records; one of {', '.join(sorted(known))}")
        if not is_whole_number(batch_size) or batch_size < 1 or not is_whole_number(budget) or budget < 1:
            raise ValueError(f"batch_size and budget must be whole numbers of at least 1, got {batch_size!r}, {budget!r}")
        low, high = METRIC_RANGE.get(metric, (-math.inf, math.inf))
        out: list[tuple[int, dict[str, float], dict[str, Any]]] = []
        for i, c in enumerate(cycles):
            if not isinstance(c, (tuple, list)) or len(c) != 3 or not isinstance(c[1], dict) or not isinstance(c[2], dict):
                raise ValueError(f"cycle {i}: each cycle is a triple (labels, test metrics dict, signals dict)")
            value = c[1].get(metric)
            if value is not None and math.isnan(float(value)):
                raise ValueError(f"cycle {i}: {metric} is NaN: leave it out of a cycle that has no value")
            if value is not None and not low <= float(value) <= high:
                raise ValueError(f"cycle {i}: {metric} {value!r} lies outside [{low:g}, {high:g}] (a percentage? give "
                                 "a fraction)")
            signals = dict(c[2])
            if signals.get("stop_preds") is not None:  # an array or tensor of the stop set's predicted classes
                signals["stop_preds"] = np.asarray(signals["stop_preds"]).reshape(-1).tolist()
            out.append((int(c[0]), dict(c[1]), signals))
        return cls([c[0] for c in out], [c[1] for c in out], [c[2] for c in out], int(batch_size), int(budget), metric,
                   waits)


SIGNAL_GRACE = 3  # cycles a rule waits for its signal before a history without any is refused


def require_signal(h: History, rule: str, found: list[bool], what: str) -> None:
    """A ValueError once ``SIGNAL_GRACE`` cycles have gone by and none carried what ``rule`` reads (``found``: per
    cycle).  Why: a loop of one's own that recorded only another rule's signal (the README's example with kappa's
    stop_preds, another rule swapped in) never stopped, without a word (a black-box check); `alkit run` records
    every rule's signal from the first model on."""
    if not h.waits and len(found) >= SIGNAL_GRACE and not any(found):
        raise ValueError(f"the {rule} rule reads {what}, which none of the {len(found)} cycles of the history holds: "
                         "record it with each cycle (alkit run does), use a rule whose signal you record, or build "
                         "the history with History.of(..., waits=True) where it comes later (no model yet)")


@dataclass(frozen=True)
class Decision:
    rule: str
    fired: bool
    why: str
    details: dict[str, Any] = field(default_factory=dict)


MAX_CYCLES = 100_000  # a rule counting more cycles than any run has can never fire (k=1e20 was taken)


def parse_rule(spec: str) -> tuple[str, dict[str, float | int | str]]:
    """'kappa:threshold=0.99,k=3' -> ('kappa', {'threshold': 0.99, 'k': 3}); a value that is no number is
    kept as text, for ``check_params`` to refuse once the name is known to be a parameter."""
    name, _, rest = spec.strip().partition(":")
    params: dict[str, float | int | str] = {}
    for kv in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, value = kv.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--stop {spec!r}: parameters are key=value, separated by commas")
        if key.strip() in params:
            raise ValueError(f"--stop {spec!r}: {key.strip()} is given twice")
        try:
            number = float(value)
        except ValueError:  # said by check_params, after an unknown name (`metric=accuracy` is no parameter)
            params[key.strip()] = value.strip()
            continue
        if not math.isfinite(number):
            raise ValueError(f"--stop {spec!r}: {key.strip()}={value.strip()} is not a finite number")
        params[key.strip()] = int(number) if number.is_integer() and "." not in value else number
    return name.strip(), params


def check_params(rule: str, given: dict[str, Any], cls: type) -> dict[str, Any]:
    """``given`` typed by the rule's fields: a whole-number field takes 3 or 3.0, never 2.5 (a count
    of cycles or points; a float there failed mid-run, after labels were spent)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(given) - set(fields))
    if unknown:
        raise ValueError(f"--stop {rule}: unknown parameter {unknown[0]!r}; parameters: {', '.join(sorted(fields))}")
    out = dict(given)
    for key, value in given.items():
        if isinstance(value, str):
            raise ValueError(f"--stop {rule}: {key}={value!r} is not a number")
        if fields[key].type in (int, "int"):
            if float(value) != int(value):
                raise ValueError(f"--stop {rule}: {key}={value} must be a whole number")
            out[key] = int(value)
    return out
