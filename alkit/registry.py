"""Name -> learner factory: how `--scorer` (and the baseline strategies) choose the model.

Each entry builds a fresh, unfitted Learner (alkit/types.py) for a task.  The scorer decides
both how the network is trained (a VBLL head, an ensemble) and what ``Prediction.epistemic_n``
means; post-hoc scorers wrap the plain MLPLearner without retraining it differently.
Add a scorer by adding one entry here.
"""

from __future__ import annotations

import importlib
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


def _lazy(module: str, cls: str) -> LearnerFactory:
    """A factory that imports its learner on first use, so `alkit --help` stays light."""

    def factory(task: Task, n_classes: int | None, **options: Any) -> Learner:
        return getattr(importlib.import_module(module), cls)(task, n_classes, **options)

    return factory


def _mlp(task: Task, n_classes: int | None, **options: Any) -> Learner:
    return MLPLearner(task, n_classes, **options)


SCORERS: dict[str, ScorerInfo] = {
    "none": ScorerInfo("none", "plain MLP, no uncertainty (the random baseline's model)", _mlp, True),
    "vbll": ScorerInfo(
        "vbll",
        "VBLL last layer, posterior refitted in closed form (options: head=gaussian|quantile|buckets, "
        "cov=dense|diagonal|shared)",
        _lazy("alkit.learners.vbll", "VBLLLearner"),
    ),
    "laplace": ScorerInfo(
        "laplace",
        "post-hoc last-layer Laplace (KFAC GGN, marginal-likelihood prior), MC mutual information "
        "(options: epistemic=mi|trace, hessian=kfac|full)",
        _lazy("alkit.learners.laplace", "LaplaceLearner"),
    ),
    "csd": ScorerInfo(
        "csd",
        "post-hoc contextual similarity distillation of the last-layer kernel: Theta(x,x) - g(x,x)",
        _lazy("alkit.learners.csd", "CSDLearner"),
    ),
    "gradnorm": ScorerInfo(
        "gradnorm",
        "gradient norm of the predicted-class probability, closed form on the head (layers=last|all)",
        _lazy("alkit.learners.gradnorm", "GradNormLearner"),
    ),
    "ensemble": ScorerInfo(
        "ensemble",
        "deep ensemble of M=5 MLPs, BALD / variance of member means (baseline; M passes per item)",
        _lazy("alkit.learners.deep_ensemble", "DeepEnsembleLearner"),
        True,
    ),
    "mc-dropout": ScorerInfo(
        "mc-dropout",
        "MC dropout, T=20 passes with fixed seeded masks, BALD / variance of pass means (baseline)",
        _lazy("alkit.learners.mc_dropout", "MCDropoutLearner"),
        True,
    ),
    "sve": ScorerInfo(
        "sve",
        "singular value ensemble, M=4 members sharing frozen U/V, BALD / variance (baseline)",
        _lazy("alkit.learners.sve", "SVELearner"),
        True,
    ),
}


def get_scorer(name: str) -> ScorerInfo:
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORERS))}")
    return SCORERS[name]


def make_learner(scorer: str, task: Task, n_classes: int | None, **options: Any) -> Learner:
    return get_scorer(scorer).factory(task, n_classes, **options)
