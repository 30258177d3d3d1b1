"""`--strategy` presets: which scorer trains the model and which selector picks each batch.

A preset composes three stateless parts: the scorer (the learner and its epistemic score,
alkit/registry.py), the selector used once a model can be trained, and the model-free selector
used while the labeled set is too small to train one (the cold start).
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


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in [
        Preset("random", "uniform random batches (the baseline every curve is compared with)", "none", "random", "random", "random", True),
        Preset("epistemic", "analytic epistemic score of --scorer; batch-diverse selection; cold-start strata first", "vbll", "diverse", "topk", "coldstart"),
        Preset("topk", "the k items with the highest epistemic score of --scorer", "vbll", "topk", "topk", "random"),
        Preset("diverse", "greedy joint mutual information of the batch (log-det) over the top candidates", "vbll", "diverse", "diverse", "random"),
        Preset("kcenter", "core-set: furthest-first in the last-layer embedding", "vbll", "kcenter", "kcenter", "random"),
        Preset("badge", "k-means++ on gradient embeddings (BADGE)", "vbll", "badge", "badge", "random"),
        Preset("coldstart", "stratified sampling (k-means strata or --stratify-by) on every cycle", "none", "coldstart", "coldstart", "coldstart"),
        Preset("ensemble", "deep ensemble (M=5) BALD, top-k", "ensemble", "topk", "topk", "random", True),
        Preset("mc-dropout", "MC dropout (T=20, fixed masks) BALD, top-k", "mc-dropout", "topk", "topk", "random", True),
        Preset("sve", "singular value ensemble BALD, top-k", "sve", "topk", "topk", "random", True),
        Preset("batchbald", "BatchBALD on ensemble members (--scorer ensemble|mc-dropout|sve)", "ensemble", "batchbald", "batchbald", "random", True),
    ]
}


def get_preset(name: str) -> Preset:
    if name not in PRESETS:
        raise ValueError(f"unknown strategy {name!r}; known strategies: {', '.join(PRESETS)}")
    return PRESETS[name]
