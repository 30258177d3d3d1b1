"""kappa: stop when consecutive models agree on a fixed stop set (stabilising predictions).

Bloodgood & Vijay-Shanker (2009): once the labels a new model learns from no longer change its
predictions on a fixed set of unlabelled items, more labels mostly buy nothing.  The agreement is
Cohen's kappa between the predicted classes of consecutive models; the rule fires when it has been
at least ``threshold`` for ``k`` consecutive pairs (their defaults: 0.99 and 3).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from alkit.stopping._common import MAX_CYCLES, Decision, History, require_signal


@dataclass(frozen=True)
class KappaRule:
    threshold: float = 0.99
    k: int = 3

    name = "kappa"

    def __post_init__(self) -> None:
        if not 0.0 < self.threshold <= 1.0 or not 1 <= self.k <= MAX_CYCLES:
            raise ValueError(f"--stop kappa: threshold must be in (0, 1] and k from 1 to {MAX_CYCLES} (cycles)")

    def check(self, h: History) -> Decision:
        from sklearn.metrics import cohen_kappa_score  # here, not at import: every `alkit run` imports this module

        preds = [s.get("stop_preds") for s in h.signals]
        require_signal(h, self.name, [p is not None for p in preds],
                       "the signal 'stop_preds' (the predicted class of each item of a fixed stop set)")
        sizes = sorted({len(p) for p in preds if p is not None})
        if len(sizes) > 1:  # every pair was skipped as incomparable: the rule never fired (a black-box check)
            raise ValueError(f"the kappa rule compares predictions on one fixed stop set, but the cycles' stop_preds "
                             f"hold {', '.join(map(str, sizes))} items: draw the stop set once")
        kappas: list[float] = []
        for a, b in zip(preds[:-1], preds[1:]):
            if a is None or b is None or len(a) != len(b) or not a:
                kappas.append(float("nan"))
                continue
            a_, b_ = np.asarray(a), np.asarray(b)
            # both models predict one class everywhere: identical predictions agree fully
            kappas.append(1.0 if np.array_equal(a_, b_) else float(cohen_kappa_score(a_, b_)))
        recent = kappas[-self.k:]
        fired = len(recent) == self.k and all(np.isfinite(recent)) and min(recent) >= self.threshold
        last = kappas[-1] if kappas else float("nan")
        why = (f"kappa of consecutive models >= {self.threshold} for {self.k} cycles (last {last:.4f})" if fired
               else f"last kappa {last:.4f}")
        return Decision(self.name, fired, why, {"kappa": last})
