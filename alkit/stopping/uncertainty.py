"""max-uncertainty / overall-uncertainty: stop when the pool has little left to learn.

The acquisition score is what the run ranks the pool by; when even its best candidate (max) or the
candidates on average (overall: the mean over the cycle's candidates, the top of the pool for
top-m selectors) score below ``threshold``, further labels are expected to change little (Zhu et al.
2008's max- and overall-uncertainty rules, on whichever acquisition the run uses).  The default
thresholds suit probability-like scores such as the epistemic preset's decision-flip probability.
"""

from __future__ import annotations

from dataclasses import dataclass

from alkit.choices import METRICS
from alkit.stopping._common import Decision, History, require_signal


def _default_on_regression(h: History, name: str, threshold: float | None, default: float) -> float:
    """The threshold to use: the default (made for probability-like scores) is refused on a regression
    history, whose scores depend on the target's units, as `alkit run` refuses it (a black-box check)."""
    if threshold is not None:
        return threshold
    if not h.higher_is_better and h.metric in METRICS["regression"]:
        raise ValueError(f"the {name} rule's default threshold {default} is for probability-like scores; on a "
                         "regression project the scores depend on the target's units: give threshold=VALUE")
    return default


def _below(h: History, key: str, threshold: float, name: str) -> Decision:
    require_signal(h, name, [s.get(key) is not None for s in h.signals],
                   f"the signal {key!r} (the {'max' if key == 'score_max' else 'mean'} of the cycle's candidates' "
                   "acquisition scores)")
    value = h.signals[-1].get(key) if h.signals else None
    if value is None:
        return Decision(name, False, "no acquisition score recorded yet")
    fired = value < threshold
    what = "best" if key == "score_max" else "mean"
    return Decision(name, fired, f"{what} candidate score {value:.4g} {'<' if fired else '>='} {threshold}",
                    {key: value})


def _positive(name: str, threshold: float) -> None:
    """Scores are >= 0 (the signed ones are refused with these rules): a threshold <= 0 could never fire."""
    if not threshold > 0:
        raise ValueError(f"--stop {name}: threshold must be positive (scores are >= 0, so {threshold} never fires)")


@dataclass(frozen=True)
class MaxUncertaintyRule:
    threshold: float | None = None  # None: DEFAULT, on classification only

    name = "max-uncertainty"
    DEFAULT = 0.01

    def __post_init__(self) -> None:
        if self.threshold is not None:
            _positive(self.name, self.threshold)

    def check(self, h: History) -> Decision:
        return _below(h, "score_max", _default_on_regression(h, self.name, self.threshold, self.DEFAULT), self.name)


@dataclass(frozen=True)
class OverallUncertaintyRule:
    threshold: float | None = None  # None: DEFAULT, on classification only

    name = "overall-uncertainty"
    DEFAULT = 0.005

    def __post_init__(self) -> None:
        if self.threshold is not None:
            _positive(self.name, self.threshold)

    def check(self, h: History) -> Decision:
        return _below(h, "score_mean", _default_on_regression(h, self.name, self.threshold, self.DEFAULT), self.name)
