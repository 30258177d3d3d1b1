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

import numpy as np

from alkit.choices import CAPABILITIES
from alkit.models.learner import MLPLearner
from alkit.types import Learner, Task

LearnerFactory = Callable[..., Learner]  # (task, n_classes, **options) -> Learner


@dataclass(frozen=True)
class ScorerInfo:
    name: str
    summary: str
    factory: LearnerFactory
    is_baseline: bool = False
    provides: frozenset[str] = frozenset()  # 'posterior' (Gaussian last layer) and/or 'members' (ensembles)
    zero_shot: bool = False  # predicts before any label (the loop uses the model from the first cycle)
    class_names: bool = False  # the learner is given the project's class names (class_names=...)
    epistemic: bool = True  # its Predictions carry an epistemic score (not the plain MLP's: all zeros)
    own_network: bool = True  # trains alkit's backbone (image projects: the frozen stem, alkit/stem_features.py)


def _lazy(module: str, cls: str) -> LearnerFactory:
    """A factory that imports its learner on first use, so `alkit --help` stays light."""

    def factory(task: Task, n_classes: int | None, **options: Any) -> Learner:
        return getattr(importlib.import_module(module), cls)(task, n_classes, **options)

    factory.target = (module, cls)  # type: ignore[attr-defined]  (learner_class reads it)
    return factory


def _mlp(task: Task, n_classes: int | None, **options: Any) -> Learner:
    return MLPLearner(task, n_classes, **options)


SCORERS: dict[str, ScorerInfo] = {
    "none": ScorerInfo("none", "plain MLP, no uncertainty (the random baseline's model; option "
                       "capacity=fixed|cv|prior|auto|prior-linear: cv chooses depth and weight prior on flat classification by 3-fold "
                       "cross-validation when the labels double, prior (default) the weight prior alone (raw features: 10 or 1, "
                       "up to 300 labels; encoder embeddings: 300 or 30), auto cv on embeddings and fixed on raw features; "
                       "regression: cv and prior (default) choose between the shallow network and the same network fitted to a "
                       "Bayesian ridge's residual by cross-validated CRPS, ridge=residual|predictive with capacity=fixed forces a "
                       "ridge mode (predictive: the ridge's own prediction, the network on its residual for the embedding); "
                       "residual_targets=cross-fitted (default, the ridge's out-of-fold residuals) or in-sample)",
                       _mlp, True, epistemic=False),
    "vbll": ScorerInfo(
        "vbll",
        "VBLL last layer, posterior refitted in closed form (options: head=gaussian|hetero|quantile|buckets, regression "
        "default gaussian, or where one target value holds >= 10 % of the labels buckets unless 3-fold cross-validated "
        "CRPS puts gaussian >= 10 % lower (capacity=fixed: buckets there); head=hetero: the Gaussian head with a noise "
        "variance that depends on the input; noise_choice=true: gaussian or hetero by cross-validated CRPS from 40 "
        "labels (off by default); linear_path=true puts "
        "the standardised inputs beside the features; "
        "capacity=prior|cv|fixed|auto|prior-linear: prior (default) chooses the weight prior on flat classification by 3-fold "
        "cross-validation when the labels double (raw features: 10 or 1, up to 300 labels; encoder embeddings: 300 or 30), cv depth "
        "and prior, auto cv on embeddings and fixed on raw features, prior-linear as prior with a third candidate, a "
        "linear model on the inputs (learner rule 12); depth=-1 is that linear model outright; "
        "cov=shared|dense|diagonal; classification and bucket regression default shared, ~1.2-1.3x a forward at 10 "
        "classes, ~1.5-1.8x at 100, ~2x for the 20 regression buckets; cov=dense ~6-7x at 10 classes, ~50x at 100, "
        "~14x for the buckets; head=quantile ~11x, head=gaussian ~1.4x)",
        _lazy("alkit.learners.vbll", "VBLLLearner"),
        provides=frozenset({"posterior"}),
    ),
    "laplace": ScorerInfo(
        "laplace",
        "post-hoc last-layer Laplace (KFAC GGN, marginal-likelihood prior), MC mutual information "
        "(options: epistemic=mi|trace, hessian=kfac|full, mc_samples=16; cost vs a forward at 10 classes: mi ~1.5-1.8x "
        "at 16 samples, ~2x at 32, ~2.9x at 64, trace ~1.5-1.8x; mi at 100 classes ~7x; hessian=full decomposes the "
        "whole (C x (width+1))^2 GGN, a cost growing as C^3: a fit on 300 labels ~1.8x kfac's at 10 classes, ~8x at 20, "
        "~126x at 50 (~74 CPU-s), and scoring the pool ~95x kfac's at 10 classes, ~1,500x at 50; "
        "benchmarks/results/laplace_hessian_cost.md)",
        _lazy("alkit.learners.laplace", "LaplaceLearner"),
        provides=frozenset({"posterior"}),
    ),
    "csd": ScorerInfo(
        "csd",
        "post-hoc contextual similarity distillation of the last-layer kernel, its target scored in closed "
        "form (~1.2-1.8x a forward; csd.solver=distilled trains g: ~1.5-3x)",
        _lazy("alkit.learners.csd", "CSDLearner"),
    ),
    "gradnorm": ScorerInfo(
        "gradnorm",
        "expected gradient norm of the log-likelihood over the predicted labels, closed form on the head, in the "
        "weight covariance a Bayesian linear regression on the labelled features gives (~1.4-1.5x a forward; "
        "target=auto|predicted|expected, weight_cov=auto|isotropic|blr: predicted + isotropic is the paper's "
        "gradient of p_argmax, ~1.3x; output_cov=fisher adds the labelled items' output Fisher at no extra cost; "
        "layers=last|all, all ~5x on digits)",
        _lazy("alkit.learners.gradnorm", "GradNormLearner"),
    ),
    "ensemble": ScorerInfo(
        "ensemble",
        "deep ensemble of M=5 MLPs, BALD / variance of member means (baseline; M passes per item)",
        _lazy("alkit.learners.deep_ensemble", "DeepEnsembleLearner"),
        True,
        frozenset({"members"}),
    ),
    "mc-dropout": ScorerInfo(
        "mc-dropout",
        "MC dropout, T=20 passes with fixed seeded masks, BALD / variance of pass means (baseline)",
        _lazy("alkit.learners.mc_dropout", "MCDropoutLearner"),
        True,
        frozenset({"members"}),
    ),
    "sve": ScorerInfo(
        "sve",
        "singular value ensemble, M=4 members sharing frozen U/V, BALD / variance (baseline)",
        _lazy("alkit.learners.sve", "SVELearner"),
        True,
        frozenset({"members"}),
    ),
    "sklearn": ScorerInfo(
        "sklearn",
        "your scikit-learn estimator (alkit run --learner MODULE:FUNCTION), bootstrap members for BALD / EPIG "
        "(options: members=5)",
        _lazy("alkit.learners.sklearn_adapter", "SklearnLearner"),
        provides=frozenset({"members"}),
        own_network=False,
    ),
    "bayesvlm": ScorerInfo(
        "bayesvlm",
        "BayesVLM on a local CLIP/SigLIP directory (--model-dir, --class-prompts): KFAC Laplace on the image "
        "and text projections, ProbCosine, probit predictive; zero-shot from the first cycle (options: "
        "score=var|mi|embed)",
        _lazy("alkit.learners.bayesvlm", "BayesVLMLearner"),
        zero_shot=True,
        class_names=True,
        own_network=False,
    ),
}


def get_scorer(name: str) -> ScorerInfo:
    if name not in SCORERS:
        raise ValueError(f"unknown scorer {name!r}; known scorers: {', '.join(sorted(SCORERS))}")
    return SCORERS[name]


@dataclass(frozen=True)
class Terms:
    """How a refusal or note names the caller's arguments: `alkit run`'s options (the default) or the
    keywords of a library call (``library=True``), whose user never typed ``--acquisition``.  ``who``
    names what picks: ``strategy 'epistemic'``, or ``selector 'random'`` where a call chose one."""

    who: str
    library: bool = False

    def acquisition(self, name: str) -> str:
        return f"acquisition={name!r}" if self.library else f"--acquisition {name}"

    def members(self, value: str) -> str:
        return f"members={value}" if self.library else f"-o members={value}"

    def option(self, name: str) -> str:
        """A plain option of the run (scorer, candidates) by the caller's spelling."""
        return name if self.library else f"--{name}"


def check_acquisition(acquisition: str, scorer: str, task: Task, *, ranks_by_score: bool = True,
                      single_member: bool = False, terms: Terms | None = None) -> None:
    """Refuse, by name, an acquisition the scorer's Predictions cannot feed (before a run starts).
    ``ranks_by_score`` False (a selector that never reads the scores: k-center, BADGE on classes):
    a scorer without an epistemic score may feed the score-based acquisitions, whose zeros go unread.
    ``single_member``: a members scorer asked for one member (the sklearn learner's ``-o members=1``),
    which has neither members to disagree nor an epistemic score (BALD, EPIG and its score were 0)."""
    from alkit.acquisition import ACQUISITIONS

    needs = ACQUISITIONS[acquisition].needs
    info = get_scorer(scorer)
    epistemic = info.epistemic and not single_member
    have = set(info.provides) | ({"epistemic_n"} if epistemic or not ranks_by_score else set())
    if single_member:
        have.discard("members")
    terms = terms or Terms(who="")
    who = f"scorer {scorer!r}" + (f" with {terms.members('1')}" if single_member else "")
    if task == "classification":
        have.add("probs")
    else:
        have.discard("members")  # regression members carry means, not label distributions
    # on regression a need of class probabilities first: naming the posterior sent users to vbll, then refused
    for need in sorted(needs, key=lambda n: task == "regression" and "probs" not in n):
        options = {alt.strip() for alt in need.split("|")}
        if not options <= CAPABILITIES:  # a Prediction field or an extras key: checked on the Prediction itself
            continue  # (engines.common.AcquisitionScorer); every learner was refused here as lacking it
        if not options & have:
            if options == {"epistemic_n"}:
                instead = f"{terms.members('2')} or more" if single_member else f"another {terms.option('scorer')}"
                scoreless = (f", or {terms.acquisition('margin')}, entropy or least-confident" if task == "classification"
                             else "")  # those need class probabilities: refused on a regression project
                raise ValueError(f"{who} has no epistemic score for the {acquisition} acquisition (every "
                                 f"score would be 0 and the batch the pool's first items): use {instead}{scoreless}")
            if task == "regression" and "members" in options and "members" in info.provides:
                raise ValueError(f"acquisition {acquisition!r} reads ensemble members' class probabilities; on a "
                                 f"regression project the members of {who} carry means only: use the epistemic "
                                 "acquisition (their variance), or this one with scorer vbll or laplace")
            what = {"probs": "class probabilities (a classification project)",
                    "posterior": "a Gaussian last-layer posterior (scorers vbll, laplace)",
                    "members": "ensemble members (scorers ensemble, mc-dropout, sve, sklearn)"}
            if task == "regression":  # members there carry means only, which the acquisition cannot read: the
                options = options - {"members"}  # advice named scorers that were then refused (a black-box check)
                if not options:
                    raise ValueError(f"acquisition {acquisition!r} reads ensemble members' class probabilities, which no "
                                     "learner of a regression project gives")
            missing = " or ".join(what.get(o, o) for o in sorted(options))
            raise ValueError(f"acquisition {acquisition!r} needs {missing}; {who} "
                             f"on a {task} project has none of it")


def learner_class(scorer: str) -> type:
    """The Learner class behind a scorer (its options are read from it: alkit/scorer_options.py)."""
    target = getattr(get_scorer(scorer).factory, "target", None)
    return MLPLearner if target is None else getattr(importlib.import_module(target[0]), target[1])


def make_learner(scorer: str, task: Task, n_classes: int | None, *, class_names: list[str] | None = None,
                 **options: Any) -> Learner:
    """A fresh learner; ``options`` as recorded with the run (``csd.steps`` style groups included);
    ``class_names`` reach only the scorers that read them (bayesvlm's prompts)."""
    from alkit.scorer_options import check_values, to_kwargs

    if task not in ("classification", "regression"):  # 'classifier' became a regression learner unsaid
        raise ValueError(f"task must be 'classification' or 'regression', got {task!r}")
    if task == "classification" and (not isinstance(n_classes, (int, np.integer)) or n_classes < 2):
        raise ValueError(f"classification needs n_classes >= 2 (the number of classes), got {n_classes!r}")
    info = get_scorer(scorer)
    check_values(learner_class(scorer), scorer, options)
    kwargs = to_kwargs(learner_class(scorer), options)
    if info.class_names:
        kwargs["class_names"] = list(class_names or [])
    return info.factory(task, n_classes, **kwargs)
