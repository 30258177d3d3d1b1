"""Stopping rules (`alkit run --stop RULE[:param=value,...]`): when more labels stop paying.

Each rule is stateless: ``check(history) -> Decision``, reading only the cycles so far (their label
counts and test metrics) and the signals recorded with them (the model's predictions on a fixed
stop set of pool items, the acquisition scores' maximum and mean).  The loop checks every rule of
a run after each committed cycle and ends the run when one fires; the benchmark replays the same
rules on recorded runs (benchmarks/stopping.py), so both see exactly the same decisions.

- ``kappa``: stabilising predictions (Bloodgood & Vijay-Shanker 2009);
- ``max-uncertainty`` / ``overall-uncertainty``: the acquisition score left in the pool;
- ``forecast``: an inverse power law fitted to the learning curve, stopping when the next batch is
  predicted to gain less than a threshold.
"""

from __future__ import annotations

from alkit.stopping._common import Decision, History, check_params, parse_rule
from alkit.stopping.forecast import ForecastRule, forecast_at
from alkit.stopping.kappa import KappaRule
from alkit.stopping.uncertainty import MaxUncertaintyRule, OverallUncertaintyRule

RULES: dict[str, type] = {
    "kappa": KappaRule,
    "max-uncertainty": MaxUncertaintyRule,
    "overall-uncertainty": OverallUncertaintyRule,
    "forecast": ForecastRule,
}


def get_rule(spec: str) -> object:
    """A rule from its command-line form, ``name[:param=value,...]``; a ValueError names what is wrong."""
    name, params = parse_rule(spec)
    if name not in RULES:
        raise ValueError(f"unknown stopping rule {name!r}; rules: {', '.join(RULES)}")
    return RULES[name](**check_params(name, params, RULES[name]))


def first_fired(rules: list[object], history: History) -> Decision | None:
    """The first rule that fires on ``history`` (in the order given), else None."""
    for rule in rules:
        d = rule.check(history)  # type: ignore[attr-defined]
        if d.fired:
            return d
    return None


__all__ = ["RULES", "Decision", "ForecastRule", "History", "KappaRule", "MaxUncertaintyRule",
           "OverallUncertaintyRule", "first_fired", "forecast_at", "get_rule"]
