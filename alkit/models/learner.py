"""MLPLearner: the plain deterministic learner (backbone + linear head).

It is the model of the random baseline and the network the post-hoc scorers (Laplace, CSD,
gradient norms) wrap.  A plain network has no epistemic estimate of its own, so
``Prediction.epistemic_n`` is zero here; the post-hoc scorers fill it in.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, Literal

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from alkit.checks import check_columns, check_seed
from alkit.distributions import GaussianPredictive, entropy_n
from alkit.models.backbone import LINEAR_DEPTH, BackboneConfig, ConvBackbone, InputSpec, ResidualMLP, build_backbone
from alkit.models.capacity import (REGRESSION_DEPTH, REGRESSION_PRIOR_L2_SHALLOW, RIDGE_MODES, Capacity,
                                   CapacityHint, Mode, checked_mode, resolve_capacity)
from alkit.models.train import TrainConfig, to_tensor, train_module
from alkit.types import GaussianLastLayer, Prediction, Task


class TargetScaler:
    """Standardise regression targets for training; undo it on predictions."""

    def __init__(self, y_n: torch.Tensor) -> None:
        self.shift = float(y_n.mean())
        std = float(y_n.std()) if y_n.numel() > 1 else 1.0
        self.scale = std if std > 1e-6 * abs(self.shift) and std > 0 else 1.0  # constant: no scale (relative: 1e-9 units are a scale)

    def forward(self, y_n: torch.Tensor) -> torch.Tensor:
        return (y_n - self.shift) / self.scale


# Whether the weight prior covers the output layer, by task.  Classification: no.  The prior is a
# coupled decay prior_l2 / N, 0.5 at 20 labels; on the logits it shrank every class score towards
# the others, and the 20-label digits MLP fell to 0.46 accuracy against 0.61 for the unregularised
# recipe.  The backbone keeps the prior; the head is left free, like the VBLL head, which has its own
# prior on the logit scale.  Chosen on the development sets (benchmarks/results/learner_parity_head_prior_dev.md:
# synth +0.020 at 20 labels, tweets and Fashion dev ahead to 100 labels, hpc -0.004 / -0.010 at 20 / 50);
# reported in learner_parity_head_prior.md.  Regression keeps it (docvis, learner_parity_head_prior_docvis.md).
HEAD_PRIOR: dict[str, bool] = {"classification": False, "regression": True}

# The weight prior's precision of the regression MLP (mean and log-variance heads) with residual
# blocks, when none is set.  With the classification default (10) the heteroscedastic fit overfitted
# its variance: CRPS 0.73 at 20 labels on the docvis development set against 0.58 for a Bayesian
# ridge regression; 30 / 100 / 300 gave 0.584 / 0.564 / 0.565 (20 seeds,
# benchmarks/results/learner_parity_regression_prior_dev.md).  It applies when a depth >= 1 is asked
# for (``-o depth=1``); the default regression network has none (REGRESSION_DEPTH).
REGRESSION_PRIOR_L2 = 100.0

# The regression MLP's shape when none is set: no residual block (one hidden ReLU layer of
# ``width`` units before the mean and log-variance heads) under a prior of precision 30.  On three
# development sets (docvis, hours, friedman; benchmarks/results/learner_parity_regression_depth_dev.md,
# 10 seeds) it was at or above the one-block network under 100 at every label count from 20 to
# 300 for the plain MLP, the ensembles and SVE, by up to 0.05 CRPS on the zero-inflated hours and
# 0.17-0.34 on the nonlinear friedman, at half the fit time; the block's network trailed the
# Bayesian ridge at 50-100 labels there (regression_mlp_diag.md: the mean, not the noise model).
# The VBLL regression learner keeps its block and prior 10 (better for it on the same sets).  MC
# dropout uses this network too and drops out its features (ResidualMLP.feature_dropout):
# benchmarks/results/learner_parity_regression_mcd_dev.md.  (REGRESSION_DEPTH and
# REGRESSION_PRIOR_L2_SHALLOW live in alkit/models/capacity.py, whose regression choice starts from them.)


RESIDUAL_TARGETS = ("in-sample", "cross-fitted")
RESIDUAL_FOLDS = 5  # out-of-fold ridge predictions for 'cross-fitted' residual targets


# The full-batch learning rate of a linear model (depth LINEAR_DEPTH) where the config keeps the default:
# a convex fit from a small initialisation, which at the networks' 3e-3 stays far from its optimum in 100
# steps (learner rule 12: VBLL on the inputs 0.78 accuracy on 20-100 wine labels against logistic
# regression's 0.94-0.96, and a choice that took it lost 0.034 on the development sets); at 0.1 it is
# level with logistic regression (scikit-learn wine and breast cancer, 5 seeds; neither a development set).
LINEAR_LR = 0.1


def linear_lr(config: TrainConfig, depth: int) -> TrainConfig:
    """``config`` with LINEAR_LR for a linear model whose full-batch rate is left at the default."""
    if depth == LINEAR_DEPTH and config.full_batch_lr == TrainConfig.full_batch_lr:
        return dataclasses.replace(config, full_batch_lr=LINEAR_LR)
    return config


def mlp_train_config(config: TrainConfig, task: Task, input: InputSpec | None, depth: int) -> TrainConfig:
    """``config`` with an unset weight prior resolved for the MLP: for regression
    REGRESSION_PRIOR_L2_SHALLOW on a network of ``depth`` 0 and REGRESSION_PRIOR_L2 with blocks,
    else by input kind, and the learning rate's decay by task and input (TrainConfig.for_input); a
    linear model's rate as ``linear_lr``."""
    config = linear_lr(config, depth)
    if config.prior_l2 is None and task == "regression":
        config = dataclasses.replace(config, prior_l2=REGRESSION_PRIOR_L2_SHALLOW if depth == 0 else REGRESSION_PRIOR_L2)
    return config.for_input(input, task)


def training_arrays(X_n_f: Any, y_n: Any, task: str, n_classes: int | None,
                    seed: object = 0, names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The labelled set as a learner fits it: X (n, f) float32 (a DataFrame or lists too), y (n,)
    class indices 0..C-1 (int64; whole-number floats accepted) or finite targets (float64).
    Anything else is refused by name: a label outside the classes, text labels, NaN or a y of
    another length failed deep inside torch or as a covariance 'not positive definite'."""
    check_columns(X_n_f, names, "X")  # a DataFrame of pool_learner's columns (``names``), in their order
    check_seed(seed, limit=2**32 - 1)  # fit(seed=-3) was numpy's 'Seed must be between 0 and 2**32 - 1', seed=None an int() error
    X = np.asarray(X_n_f, dtype=np.float32)
    y = np.asarray(y_n)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if X.ndim != 2 or y.ndim != 1 or len(X) != len(y):
        raise ValueError(f"fit needs X of shape (n, f) and one label per row: X {X.shape}, y {y.shape}")
    if not len(X):
        raise ValueError("fit needs at least one labelled row, got none")
    if not np.isfinite(X).all():
        raise ValueError("the labelled inputs X hold NaN or inf")
    if task == "classification":
        whole = y.dtype.kind in "iub" or (y.dtype.kind == "f" and np.isfinite(y).all() and (y == np.round(y)).all())
        if not whole:
            raise ValueError(f"classification labels must be class indices 0..C-1, got {y.dtype} values (encode "
                             "class names first, e.g. with scikit-learn's LabelEncoder)")
        y = y.astype(np.int64)
        if len(y) and (y.min() < 0 or (n_classes is not None and y.max() >= n_classes)):
            raise ValueError(f"classification labels must be in 0..{(n_classes or 0) - 1} (n_classes={n_classes}), "
                             f"got {y.min()}..{y.max()}")
        return X, y
    try:
        y = y.astype(np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"regression targets must be numbers, got {y.dtype} values") from None
    if not np.isfinite(y).all():
        raise ValueError("the regression targets y hold NaN or inf")
    return X, y


class RidgePredictive:
    """A Bayesian ridge's predictive (its mean and predictive variance, noise included) as a
    regression Prediction: how the 'predictive' ridge mode predicts, and what cross-validation scores
    for it (the residual network it also fits changes neither)."""

    def __init__(self) -> None:
        self.model: Any = None  # the fitted sklearn BayesianRidge, on standardised targets
        self.shift, self.scale = 0.0, 1.0

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        y = np.asarray(y_n, dtype=np.float64)
        self.shift, self.scale = standard_target(y)
        self.model = bayesian_ridge().fit(np.asarray(X_n_f, dtype=np.float64), (y - self.shift) / self.scale)
        return {}

    def mean(self, X_n_f: np.ndarray) -> torch.Tensor:
        """The posterior mean alone (n,), float64: what the 'residual' mode adds, without the
        per-item variance that ``distribution`` also computes."""
        return torch.as_tensor(self.model.predict(np.asarray(X_n_f, dtype=np.float64)) * self.scale + self.shift)

    def distribution(self, X_n_f: np.ndarray) -> GaussianPredictive:
        mean, std = self.model.predict(np.asarray(X_n_f, dtype=np.float64), return_std=True)
        return GaussianPredictive(torch.as_tensor(mean * self.scale + self.shift), torch.as_tensor(std * self.scale) ** 2)


def standard_target(y_n: np.ndarray) -> tuple[float, float]:
    """(mean, std) that standardise a regression target (std 1 for a constant one)."""
    sd = float(np.std(y_n)) if len(y_n) > 1 else 0.0
    return (float(np.mean(y_n)) if len(y_n) else 0.0), (sd if sd > 0 else 1.0)


def bayesian_ridge() -> Any:
    """scikit-learn's BayesianRidge, to be fitted on a standardised target: its fixed hyperpriors and absolute
    convergence tolerance are not scale-free, and on a target in the thousands it stopped after 2 iterations at
    w = 0 (the mean for every item: the ridge-residual candidate then lost the capacity choice it won on the
    same target in units, benchmarks/results/ridge_scale.md)."""
    from sklearn.linear_model import BayesianRidge

    return BayesianRidge()

    def predict(self, X_n_f: np.ndarray) -> Prediction:
        dist = self.distribution(X_n_f)
        n = len(dist.mean_n)
        return Prediction(torch.zeros(n), dist.var_n, torch.zeros(n, 0), mean_n=dist.mean_n, dist=dist)


def capacity_scorer(n_classes: int | None, input: InputSpec | None, task: Task = "classification",
                    residual_targets: str = "cross-fitted") -> Callable[[Capacity], Any]:
    """The network a capacity candidate is cross-validated with: the plain MLP learner of that
    depth and prior (the cheapest of that shape; alkit/models/capacity.py), for regression in the
    candidate's ridge mode (residual targets as ``residual_targets``; the 'predictive' mode's
    prediction is the ridge's alone, so it is scored without a network)."""
    if task == "regression":
        return lambda c: RidgePredictive() if c.ridge == "predictive" else MLPLearner(
            "regression", input=input, depth=c.depth, train=TrainConfig(prior_l2=c.prior_l2), capacity="fixed",
            ridge=c.ridge, residual_targets=residual_targets)
    return lambda c: MLPLearner("classification", n_classes, input=input, depth=c.depth,
                                train=TrainConfig(prior_l2=c.prior_l2), capacity="fixed")


class MLPLearner:
    """Backbone (ResidualMLP) + nn.Linear head, trained by the shared loop.

    classification: head gives C logits, cross-entropy.  regression: head gives (mean, log var),
    heteroscedastic Gaussian NLL on standardised targets.
    After ``fit``, ``self.backbone`` and ``self.head`` are the fitted modules (the last layer is
    ``self.head``), which is what post-hoc scorers need.  ``input`` carries the pool's input
    statistics and image shape (alkit/models/backbone.py); without it the labelled inputs'
    statistics are used.
    """

    def __init__(
        self,
        task: Task,
        n_classes: int | None = None,
        *,
        backbone: BackboneConfig | None = None,
        train: TrainConfig | None = None,
        input: InputSpec | None = None,
        head_prior: bool | None = None,
        capacity: Mode = "prior",
        ridge: str = "off",
        residual_choice: bool = True,
        residual_targets: Literal["in-sample", "cross-fitted"] = "cross-fitted",
        **backbone_options: Any,
    ) -> None:
        """``head_prior``: whether the training prior (``TrainConfig.prior_l2``) also covers the
        output layer; ``None`` chooses by task (see ``HEAD_PRIOR``).  ``capacity``: 'cv' chooses
        depth and weight prior per fit by cross-validation where they are unset
        (alkit/models/capacity.py), 'prior' (default) the weight prior alone (on raw features 10 or 1,
        up to 300 labels; on an encoder's embeddings the candidates of cv, 300 or 30), 'fixed' keeps the
        defaults, 'auto' is cv on an encoder's embeddings and fixed elsewhere (on raw tables cv's
        hold-out result was mixed).  'prior' became the default by learner rule 3b
        (benchmarks/results/label_efficiency_dev/recheck_rule.md, prior_cv_rule_mlp_fresh.md): on the
        nine raw-feature development sets +0.0010 mean accuracy at 20-300 labels, +0.0032 at 20;
        where it differs from 'auto' (flat raw features) it is the VBLL learner's choice.
        Regression: where ``capacity`` chooses, the choice is between the shallow network and the
        same network fitted to a Bayesian ridge's residual (alkit/models/capacity.py,
        REGRESSION_CANDIDATES), by cross-validated CRPS; ``ridge`` (one of RIDGE_MODES) is the mode
        used where nothing chooses (``capacity=fixed``); ``residual_choice=False`` keeps the ridge
        off for networks whose raw outputs another learner reads (the ensembles, MC dropout, SVE).
        ``residual_targets``: the residuals the network learns, the ridge's own on the labels
        ('in-sample') or its 5-fold out-of-fold ones ('cross-fitted', as large as its errors on new
        items); the ridge that predicts is fitted on every label either way."""
        self.capacity = checked_mode(capacity)
        if ridge not in RIDGE_MODES:
            raise ValueError(f"ridge must be {', '.join(RIDGE_MODES[:-1])} or {RIDGE_MODES[-1]}, got {ridge!r}")
        self.ridge_mode, self.residual_choice = ridge, bool(residual_choice)
        if residual_targets not in RESIDUAL_TARGETS:
            raise ValueError(f"residual_targets must be {' or '.join(RESIDUAL_TARGETS)}, got {residual_targets!r}")
        self.residual_targets = residual_targets
        if task == "classification" and (ridge != "off" or residual_targets != "cross-fitted"):
            # a regression setting: taken on classification, it named a run of its own with the default's picks
            # (a black-box check), as vbll's regression heads are refused there
            raise ValueError(f"option {'ridge' if ridge != 'off' else 'residual_targets'} applies to regression "
                             "projects only; this is a classification project")
        self.ridge: RidgePredictive | None = None  # the Bayesian ridge whose residual the network learned
        self.fitted_ridge_mode = "off"  # the ridge mode of the last fit (chosen or ``ridge``)
        self.capacity_hint: CapacityHint | None = None  # an earlier cycle's choice, handed on by the loop
        if task == "classification" and (n_classes is None or n_classes < 2):
            raise ValueError("classification needs n_classes >= 2")
        self.task = task
        self.head_prior = HEAD_PRIOR[task] if head_prior is None else head_prior
        self.n_classes = n_classes
        self.backbone_config = BackboneConfig.of(backbone, **backbone_options)  # width=, depth=, ... also accepted
        if task == "regression" and self.backbone_config.depth is None:
            self.backbone_config = BackboneConfig.of(self.backbone_config, depth=REGRESSION_DEPTH)
        self.train_config = train or TrainConfig()
        self.input = input
        self.backbone: ResidualMLP | ConvBackbone | None = None
        self.head: nn.Linear | None = None
        self.scaler: TargetScaler | None = None

    def _build(self, X_n_f: torch.Tensor, config: BackboneConfig) -> None:
        self.backbone = build_backbone(X_n_f.shape[1], self.input, X_n_f, config)
        n_out = self.n_classes if self.task == "classification" else 2
        self.head = nn.Linear(self.backbone.out_dim, n_out)

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        """Head outputs for a batch: logits (n, C) or (mean, log var) (n, 2)."""
        return self.head(self.backbone(x_n_f))

    def _loss(self, z_b_f: torch.Tensor, y_b: torch.Tensor) -> torch.Tensor:
        """Loss on the backbone's fixed features (``backbone.fixed``, computed once per fit)."""
        out = self.head(self.backbone.trainable(z_b_f))
        if self.task == "classification":
            return F.cross_entropy(out, y_b.long())
        return F.gaussian_nll_loss(out[:, 0], y_b, out[:, 1].exp().clamp_min(1e-6), full=True)

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        X_n_f, y_n = training_arrays(X_n_f, y_n, self.task, self.n_classes, seed=seed,
                                     names=getattr(self, "feature_names", None))
        config, train_config, chosen = resolve_capacity(
            self.capacity, self.task, self.input, self.backbone_config, self.train_config, X_n_f, np.asarray(y_n),
            make_scorer=capacity_scorer(self.n_classes, self.input, self.task, self.residual_targets), seed=seed,
            hint=self.capacity_hint, regression="ridge" if self.residual_choice else "")
        torch.manual_seed(seed)
        X = to_tensor(X_n_f)
        self._build(X, config)
        y = torch.as_tensor(y_n)
        self.ridge = None
        mode = RIDGE_MODES[int(chosen["capacity_ridge"])] if "capacity_ridge" in chosen else self.ridge_mode
        self.fitted_ridge_mode = mode if self.task == "regression" else "off"
        if self.task == "regression":
            if mode != "off":
                X64, y64 = np.asarray(X_n_f, dtype=np.float64), np.asarray(y_n, dtype=np.float64)
                self.ridge = RidgePredictive()
                self.ridge.fit(X64, y64, seed=seed)
                if self.residual_targets == "cross-fitted" and len(y64) >= 2 * RESIDUAL_FOLDS:
                    from sklearn.model_selection import KFold, cross_val_predict

                    folds = KFold(RESIDUAL_FOLDS, shuffle=True, random_state=seed)
                    shift, scale = standard_target(y64)
                    fitted = cross_val_predict(bayesian_ridge(), X64, (y64 - shift) / scale, cv=folds) * scale + shift
                else:
                    fitted = self.ridge.mean(X64)
                y = y.double() - torch.as_tensor(fitted)
            self.scaler = TargetScaler(y.float())
            y = self.scaler.forward(y.float())
        else:
            y = y.long()
        module = nn.ModuleDict({"backbone": self.backbone, "head": self.head})
        no_decay = None if self.head_prior else (lambda name: name.startswith("head."))
        report = train_module(module, self._loss, self.backbone.fixed(X), y, seed=seed,
                              config=self.resolved_train_config(train_config, config), no_decay=no_decay)
        report.update(chosen)
        return report

    def resolved_train_config(self, train: TrainConfig | None = None, config: BackboneConfig | None = None) -> TrainConfig:
        """The training config (default: this learner's) with its weight prior chosen for this
        task, input and backbone, unless set."""
        config = config or self.backbone_config
        return mlp_train_config(train or self.train_config, self.task, self.input, config.depth_for(self.input))

    def inputs(self, X_n_f: np.ndarray) -> torch.Tensor:
        """``X_n_f`` as the tensor the network takes (after fit)."""
        if self.backbone is None:
            raise RuntimeError("fit the learner before predicting")
        return to_tensor(X_n_f)

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        x = self.inputs(X_n_f)
        phi = self.backbone(x)
        return self.prediction_from(phi, self.head(phi), X_n_f)

    @torch.no_grad()
    def prediction_from(self, phi: torch.Tensor, out: torch.Tensor, X_n_f: np.ndarray) -> Prediction:
        """The Prediction from the features ``phi`` (n, d) and the head's outputs ``out`` (n, C or 2)
        for the inputs ``X_n_f`` (a scorer that ran the network itself, alkit/learners/gradnorm.py,
        needs no second forward); regression adds the ridge's mean where the network learned its residual
        (ridge mode 'residual'), or predicts with the ridge's own predictive ('predictive')."""
        zeros = torch.zeros(phi.shape[0])
        if self.task == "classification":
            probs = out.softmax(-1)
            return Prediction(zeros, entropy_n(probs), phi, probs_n_C=probs, extras={"logits_n_C": out})
        dist = GaussianPredictive(out[:, 0], out[:, 1].exp()).affine(self.scaler.shift, self.scaler.scale)
        if self.ridge is not None:
            if self.fitted_ridge_mode == "predictive":
                ridge = self.ridge.distribution(X_n_f)
                dist = GaussianPredictive(ridge.mean_n.to(dist.mean_n.dtype), ridge.var_n.to(dist.var_n.dtype))
            else:
                dist = GaussianPredictive(dist.mean_n + self.ridge.mean(X_n_f).to(dist.mean_n.dtype), dist.var_n)
        return Prediction(zeros, dist.var_n, phi, mean_n=dist.mean_n, dist=dist)

    def posterior(self) -> GaussianLastLayer | None:
        return None
