"""`--strategy` presets: which scorer trains the model, which acquisition scores the pool and which
selector picks each batch.

A preset composes four stateless parts: the scorer (the learner, alkit/registry.py), the
acquisition (a score per item from the learner's Prediction, alkit/acquisition/), the selector
used once a model can be trained, and the model-free selector used while the labeled set is too
small to train one (the cold start).  ``--acquisition`` and ``--initial-selector`` override a
preset's choices for one run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    default_scorer: str
    selector: str  # used when batch_size > 1
    single_selector: str  # used when batch_size == 1
    initial_selector: str  # model-free, for the first batch when nothing is labeled
    is_baseline: bool = False
    acquisition: str = "epistemic"  # the score the selectors rank or diversify
    regression_acquisition: str | None = None  # on regression projects, where ``acquisition`` needs classes
    regression_selector: str | None = None  # on regression projects, at any batch size

    def acquisition_for(self, task: str) -> str:
        """The preset's acquisition on a project of this task."""
        if task == "regression" and self.regression_acquisition is not None:
            return self.regression_acquisition
        return self.acquisition

    def selector_for(self, task: str, batch_size: int) -> str:
        """The selector once a model exists, on a project of this task and batch size."""
        if task == "regression" and self.regression_selector is not None:
            return self.regression_selector
        return self.single_selector if batch_size == 1 else self.selector


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("random", "uniform random batches (the baseline every curve is compared with)", "none", "random", "random", "random", True),
        Preset("epistemic", "posterior-driven: the VBLL posterior's probability that an item's top-two decision flips; each pick drawn in proportion to the flip probability left after the picks so far (regression: items drawn in proportion to the square root of the epistemic score); cold-start strata first", "vbll", "power-diverse", "power-diverse", "coldstart", acquisition="decision-flip", regression_acquisition="epistemic", regression_selector="power-sqrt"),
        Preset("decision-flip", "posterior probability that the top-two decision flips, of --scorer, top-k", "vbll", "topk", "topk", "random", acquisition="decision-flip"),
        Preset("topk", "the k items with the highest epistemic score of --scorer", "vbll", "topk", "topk", "random"),
        Preset("diverse", "greedy joint mutual information of the batch (log-det) over the top candidates", "vbll", "diverse", "diverse", "random"),
        Preset("power-diverse", "the diverse greedy batch with each pick drawn in proportion to its gain given the picks so far (a hybrid of diverse and power)", "vbll", "power-diverse", "power-diverse", "random"),
        Preset("power", "stochastic power sampling: each item drawn with probability proportional to its epistemic score of --scorer", "vbll", "power", "power", "random"),
        Preset("kcenter", "core-set: furthest-first in the last-layer embedding", "vbll", "kcenter", "kcenter", "random"),
        Preset("badge", "k-means++ on gradient embeddings (BADGE)", "vbll", "badge", "badge", "random"),
        Preset("bald", "BALD (mutual information with the model) of --scorer, top-k", "vbll", "topk", "topk", "random", acquisition="bald"),
        Preset("epig", "EPIG (predictive information about a pool sample) of --scorer, top-k", "vbll", "topk", "topk", "random", acquisition="epig"),
        Preset("epig-decision", "EPIG about the pool's top-two decisions of --scorer, top-k", "vbll", "topk", "topk", "random", acquisition="epig-decision"),
        Preset("margin", "smallest top-2 probability margin first (baseline; no posterior)", "vbll", "topk", "topk", "random", True, "margin"),
        Preset("entropy", "highest predictive entropy first (baseline; no posterior)", "vbll", "topk", "topk", "random", True, "entropy"),
        Preset("least-confident", "lowest top-class probability first (baseline; no posterior)", "vbll", "topk", "topk", "random", True, "least-confident"),
        Preset("coldstart", "stratified sampling (k-means strata or --stratify-by) on every cycle", "none", "coldstart", "coldstart", "coldstart"),
        Preset("ensemble", "deep ensemble (M=5) BALD, top-k", "ensemble", "topk", "topk", "random", True),
        Preset("mc-dropout", "MC dropout (T=20, fixed masks) BALD, top-k", "mc-dropout", "topk", "topk", "random", True),
        Preset("sve", "singular value ensemble BALD, top-k", "sve", "topk", "topk", "random", True),
        Preset("batchbald", "BatchBALD on ensemble members (--scorer ensemble|mc-dropout|sve)", "ensemble", "batchbald", "batchbald", "random", True),
    ]
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        from alkit.choices import peer_name_hint

        hint = peer_name_hint(name, PRESETS)
        raise ValueError(f"unknown strategy {name!r}{hint}; known strategies: {', '.join(PRESETS)}")
    return PRESETS[name]


def like_with_like(entries: list[str]) -> list[str]:
    """Compare strategies with the same learner: a bare ``random`` becomes ``random:<scorer>`` with
    the scorer most of the other strategies train (ties: the first listed), so the curves differ by
    the selection alone (a plain-MLP random against a VBLL strategy measures the model too).
    ``random:none`` keeps the plain MLP; entries with a scorer (``preset:scorer``) count with theirs."""
    scorers = [e.partition(":")[2] or get_preset(e).default_scorer
               for e in entries if e.partition(":")[0] != "random"]
    scorers = [s for s in scorers if s != "none"]
    if not scorers:
        return list(entries)
    shared = max(dict.fromkeys(scorers), key=scorers.count)
    return [f"random:{shared}" if e == "random" else e for e in entries]
