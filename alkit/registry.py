"""Name -> learner factory: how `--scorer` (and the baseline strategies) choose the model.

Each entry builds a fresh, unfitted Learner (alkit/types.py) for a task.  The scorer decides
both how the network is trained (a VBLL head, an ensemble) and what ``Prediction.epistemic_n``
means; post-hoc scorers wrap the plain MLPLearner without retraining it differently.
Add a scorer by adding one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from alkit.models.learner import MLPLearner
from alkit.types import Learner, Task

LearnerFactory = Callable[..., Learner]  # (task, n_classes, **options) -> Learner


@dataclass(frozen=True)
class ScorerInfo:
    name: str
    summary: str
    factory: LearnerFactory
    is_baseline: bool = False


def _mlp(task: Task, n_classes: int | None, **options: Any) -> Learner:
    return MLPLearner(task, n_classes, **options)


SCORERS: dict[str, ScorerInfo] = {
    "none": ScorerInfo("none", "plain MLP, no uncertainty (the random baseline's model)", _mlp, True),
    "vbll": ScorerInfo(
        "vbll",
        "VBLL last layer, posterior refitted in closed form (options: head=gaussian|quantile|buckets, "
        "cov=dense|diagonal|shared)",
        lambda task, n_classes, **options: __import__(
            "alkit.acquisition.vbll", fromlist=["VBLLLearner"]
        ).VBLLLearner(task, n_classes, **options),
    ),
    "ensemble": ScorerInfo(
        "ensemble",
        "deep ensemble of M=5 MLPs, BALD / variance of member means (baseline; M passes per item)",
        lambda task, n_classes, **options: __import__(
            "alkit.acquisition.deep_ensemble", fromlist=["DeepEnsembleLearner"]
        ).DeepEnsembleLearner(task, n_classes, **options),
        True,
    ),
    "mc-dropout": ScorerInfo(
        "mc-dropout",
        "MC dropout, T=20 passes with fixed seeded masks, BALD / variance of pass means (baseline)",
        lambda task, n_classes, **options: __import__(
            "alkit.acquisition.mc_dropout", fromlist=["MCDropoutLearner"]
        ).MCDropoutLearner(task, n_classes, **options),
        True,
    ),
    "sve": ScorerInfo(
        "sve",
        "singular value ensemble, M=4 members sharing frozen U/V, BALD / variance (baseline)",
        lambda task, n_classes, **options: __import__(
            "alkit.acquisition.sve", fromlist=["SVELearner"]
        ).SVELearner(task, n_classes, **options),
        True,
    ),
}


def get_scorer(name: str) -> ScorerInfo:
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORERS))}")
    return SCORERS[name]


def make_learner(scorer: str, task: Task, n_classes: int | None, **options: Any) -> Learner:
    return get_scorer(scorer).factory(task, n_classes, **options)
