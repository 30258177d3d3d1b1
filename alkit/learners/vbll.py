"""VBLL: variational Bayesian last layers (Harrison et al. 2024), fitted for real.

Why a refit: trained by Adam alone, the last-layer covariance barely leaves its initialisation, so
phi^T S phi ~ ||phi||^2 and the "epistemic" score is inverted off-distribution (uq-math.md §0).
Here the head is trained jointly with the backbone by its closed-form ELBO (regularisation
weight 1/N), and afterwards S is set to the ELBO optimum for the final features:

- Gaussian head: the exact Bayesian-linear-regression posterior (dense) or its mean-field optimum
  (diagonal: exact mean, S_jj = 1 / P_jj), alternated with the closed-form noise optimum.
- Classification head (Jensen bound): for fixed mean, the stationarity condition of the ELBO in
  S_k is S_k^{-1} = I/s0 + sum_i ptilde_ik phi_i phi_i^T, ptilde = softmax(m + (v + sigma^2)/2);
  it is solved by a damped fixed-point iteration (the same routine refits QR/CR heads with their
  own weights).

The Gaussian head's refit is a stationary point of the loss it is trained with, mean and
covariance; the classification (and QR/CR) refit makes the covariance stationary for the trained
mean, which stays the optimiser's (its gradient after the refit is small, not zero; tests check
the covariance's).  ``refit_cov`` returns the iterations it used, so a refit that hit its cap shows.
Per item the head gives the epistemic variance v_k = phi^T S_k phi per output, the aleatoric
noise, and a ``GaussianLastLayer`` so a strategy can compute joint batch information.
"""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from typing import Any, Literal, Mapping

import numpy as np
import torch
from torch import nn

from alkit.distributions import GaussianPredictive
from alkit.learners.cr_vbll import BucketHead
from alkit.learners.qr_vbll import QuantileHead
from alkit.learners.vbll_heads import (  # noqa: F401 (re-exported: the heads' public names)
    ClassificationHead, ClassScore, Cov, GaussianHead, HeadKind, HeteroGaussianHead, VariationalLinear, _safe_cholesky, class_scores,
    laplace_bridge_mi, posterior_of,
)
from alkit.learners.csd import ridge_whitener
from alkit.models.capacity import HEADS, NOISE_MIN_N, Capacity, CapacityHint, Mode, checked_mode, resolve_capacity
from alkit.models.learner import TargetScaler, capacity_scorer, linear_lr, training_arrays
from alkit.models.backbone import (
    BackboneConfig, ConvBackbone, FeatureMap, InputSpec, LinearPath, ResidualMLP, build_backbone, linear_path_for,
)
from alkit.models.layers import zero_pad_columns
from alkit.models.train import TrainConfig, to_tensor, train_module
from alkit.types import GaussianLastLayer, Prediction, Task


# --------------------------------------------------------------------------- learner


# Regression heads, set by the user, whose weight prior is chosen per fit by cross-validated CRPS (learner rule 13:
# the quantile head; rule 13b: the heteroscedastic head)
PRIOR_CHOICE_HEADS: tuple[str, ...] = ("quantile", "hetero")

# A user ``--backbone``'s output is scaled at initialisation to this mean feature norm (BackboneConfig.module_norm)
# for this learner: its closed-form head stayed near-uniform on small features (the own_model example's CNN, norm
# 0.65: NLL 1.65 at 100 digit labels).  Backbone rules 1 / 1b (label_efficiency_dev/recheck_rule.md): on the 8 x 8
# image development sets, four user-style networks, 20-300 labels, fresh seeds 3-5: accuracy +0.037, NLL 1.52 ->
# 1.33, no network worse (the example's CNN +0.08 / +0.11); the plain MLP learner gained nothing and keeps 0.
MODULE_NORM = 2.5
PRIOR_SCALE_MAX = 1e12  # beyond ~1e15 the float32 refit's Cholesky failed (wine, 10-100 labels); 1e12 is no prior
# already; its inverse bounds the scale from below (1e-39 underflowed float32) and the KL weights from above


def _default_feature_map() -> FeatureMap:
    return "none"


# options that only the other task's heads read, with their defaults: given another value they would be
# accepted and ignored (`-o n_buckets=5` on a classification run named a run that was the default one)
_REGRESSION_ONLY = {"n_quantiles": 19, "n_buckets": 20, "buckets": "uniform", "cr_epistemic": "bald",
                    "noise_choice": False}
_CLASSIFICATION_ONLY = {"class_score": "feature_var", "class_bias": False}


def _refuse_other_tasks_options(task: Task, **given: Any) -> None:
    """A ValueError naming an option set to a non-default value that this task's heads never read."""
    other = _REGRESSION_ONLY if task == "classification" else _CLASSIFICATION_ONLY
    for name, default in other.items():
        value = given[name]
        if not (isinstance(value, bool) == isinstance(default, bool) and value == default):
            kind = "regression" if task == "classification" else "classification"
            raise ValueError(f"option {name} applies to {kind} projects only; this is a {task} project")


def default_cov(task: Task, head: str) -> Cov:
    """The scored covariance when none is set.  Chosen on the development sets
    (label_efficiency_dev/cov_*.md; regression: label_efficiency_dev.md, "The regression
    covariance"): shared for classification and the bucket head, dense for the others."""
    return "shared" if task == "classification" or head == "buckets" else "dense"


# The share of the labels one target value must hold for the bucket head (see regression_head_for), and the
# counts below which equal values are read as chance ties: at the edge of the targets / inside them.
POINT_MASS_SHARE = 0.10
POINT_MASS_EDGE_COUNT, POINT_MASS_INNER_COUNT = 2, 3


def regression_head_for(y_N: np.ndarray) -> HeadKind:
    """The VBLL regression head for these labelled targets: 'buckets' (CR-VBLL) where they show a
    point mass, else 'gaussian'.  A point mass: the smallest or the largest target (zero inflation,
    a cap, censoring) held by at least POINT_MASS_EDGE_COUNT labels, or any value held by at least
    POINT_MASS_INNER_COUNT, and in both cases by at least POINT_MASS_SHARE of them.

    Why: a Gaussian cannot put mass on a point, a classification over target buckets can, and
    on the development sets with a point mass (docvis, 39 % zeros; hours, 26 %) the bucket head's
    CRPS was 0.01-0.30 below the Bayesian ridge's at 20-300 labels where the Gaussian head's was
    0.01-0.12 above it; on a smooth target (friedman, no repeated value) the bucket head, which
    ignores the order of its buckets, stayed near the marginal (1.07 above the ridge at 50 labels)
    where the Gaussian head was level with it at 50 and 0.09-0.49 below from 100
    (benchmarks/results/learner_parity_regression_head_dev.md).  Two equal values among 10-20
    labels of an integer target are a chance tie, not a point mass: on friedman_int (262 distinct
    values) "any value twice and 10 %" fired on 20 % / 68 % of the labelled sets at 10 / 20 labels,
    where the bucket head's CRPS was 31.3 / 29.4 against the Gaussian head's 27.4 / 20.9; the edge
    rule fires on 4 % / 7 % of them and still on 95-100 % of the point-mass sets' from 20 labels
    (point-mass rule P1, label_efficiency_dev/recheck_rule.md)."""
    y = np.asarray(y_N).ravel()
    if y.size == 0:
        return "buckets"
    _, counts = np.unique(y, return_counts=True)  # sorted values: counts[0] the smallest, counts[-1] the largest
    least = max(POINT_MASS_SHARE * y.size, 1.0)
    edge = max(int(counts[0]), int(counts[-1])) >= max(POINT_MASS_EDGE_COUNT, least)
    inner = int(counts.max()) >= max(POINT_MASS_INNER_COUNT, least)
    return "buckets" if edge or inner else "gaussian"


class VBLLLearner:
    """ResidualMLP backbone + a VBLL head, trained jointly by the shared loop, then refitted.

    classification: ``head`` must be 'gaussian' (the Gaussian-logit head); ``class_score`` picks
    what ``epistemic_n`` is: 'feature_var' (default), the posterior variance
    s2 phi^T (Phi^T Phi + (s2/s0) I)^-1 phi of one Bayesian linear model shared by every class on
    the head's trained features (prior variance s0, mean logit noise s2: exact, and what a shared
    covariance refit scores); 'mi' (Laplace-bridge mutual information of the class posterior) or
    'logit_var' (its summed logit variance).  Chosen on the development OOD splits
    (benchmarks/results/ood.md: digits 5-9 / 0-4, Fashion-MNIST 5-9 / 0-4 and -> digits, Fashion
    even / odd; mean AUROC 0.868 against 0.750 for 'mi', whose Laplace bridge saturates on image
    features).  The acquisitions that read the class posterior (decision-flip, BALD, EPIG) are
    unchanged by it.
    regression: 'buckets' (CR-VBLL), 'gaussian' (VBLL regression), 'hetero' (VBLL regression with
    input-dependent noise, HeteroGaussianHead) or 'quantile' (QR-VBLL); unset,
    the head follows the labelled targets at each fit (``regression_head_for``): Gaussian where no
    value holds a point mass; where one does (a zero-inflated spend or count) the bucket head,
    unless 3-fold cross-validated CRPS puts the Gaussian head at least 10 % lower (``capacity`` not
    'fixed'; made again when the labels have doubled; learner rule 10b,
    benchmarks/results/label_efficiency_dev/vbll_head_margin_rule.md: a zero-inflated count with a
    smooth non-zero part, where the bucket head stays near the marginal);
    targets are standardised as in MLPLearner.
    Feature map: 'none' by default since the label-efficiency work (the learner at 20-300 labels,
    benchmarks/results/learner_parity_dev.md): under 'l2' the backbone's output scale is free, so
    the Gaussian weight prior of the training loop cannot tame it and small-N accuracy drops
    (tweets, 20 labels: 0.43 vs 0.56).  'l2' keeps the posterior variance distance-aware
    (digits OOD, benchmarks/results/vbll_ood.md: with 'none' the Laplace-bridge MI is as good,
    the variance itself is inverted off-distribution); choose it where the variance alone must
    flag unfamiliar inputs.  'rff' is unstable across seeds with few labels.  ``prior_scale`` sets
    the prior predictive variance of the last layer on the training inputs at initialisation
    (s0 = prior_scale / mean ||phi||^2); default 1 for standardised regression targets and 30 for
    logits.  ``train_cov``: the covariance structure trained by the ELBO (diagonal: O(K d) per
    item); the scored structure ``cov`` is then refitted to its ELBO optimum for the trained mean.
    ``posterior_temperature`` T scales the data term of that refit by 1/T (T < 1: a colder,
    more contracted posterior; training is unchanged).  ``class_bias`` adds a deterministic
    intercept per class; ``kl_weight`` multiplies the 1/N KL weight of training.
    ``learn_prior`` fits s0 by the ELBO as well (empirical Bayes); off by default.
    ``refit_mean`` (classification): the refit sets the mean too, alternating L-BFGS on the mean
    with the covariance refit until both are stationary (``ClassificationHead.refit_joint``); off
    by default (the epistemic preset's acquisitions were chosen without it).
    ``cov`` (the scored posterior): 'shared' for classification by default, one covariance for
    every class (chosen on the development sets, label_efficiency_dev/cov_*.md: the epistemic
    preset's AULC 0.585 against 0.575 for 'dense', ahead on 4 of 5 sets), so that the mean logits,
    the class posterior's variance and 'feature_var' come from one d x (C + d) product per item
    (``_joint_map``).  The bucket head (CR-VBLL, a classification over 20 target buckets) shares
    one covariance as well: one per bucket scored a pool at 14x a forward against 2.0x
    (benchmarks/results/throughput_regression.md), for CRPS 0.001 worse on docvis and an active-
    learning run level with random either way (label_efficiency_dev.md, "The regression
    covariance").  'dense' (one per output, K d^2 per item: several times a forward) stays an
    option and the default of the Gaussian head (one output: the same thing) and of the quantile
    head (its outputs' noise differs, which one shared covariance cannot take; ~11x a forward).
    """

    SCORE_OPTIONS = ("class_score", "cr_epistemic")  # the epistemic score alone (runs._refuse_unread_score_options)

    # the backbone's fields this learner sets otherwise than BackboneConfig (`alkit strategies` lists these)
    backbone_defaults: dict[str, Any] = {"module_norm": MODULE_NORM}

    @classmethod
    def task_defaults(cls, task: Task, options: Mapping[str, Any]) -> dict[str, Any]:
        """The values of options left unset that the task decides, not the data: ``cov`` and ``head`` on
        classification, and ``cov`` on regression once ``head`` is given (``default_cov``); with the head
        unset a regression fit chooses it, and the covariance with it.  Why: `--cov shared` on
        classification named a run of its own, identical to the default one (alkit/runs.py)."""
        head = options.get("head")
        if task == "classification":  # the Gaussian-logit head, the only one (--head gaussian named a second run)
            return {"cov": default_cov(task, head or "gaussian"), "head": "gaussian"}
        if head is not None:
            return {"cov": default_cov(task, head)}
        return {}

    def __init__(
        self,
        task: Task,
        n_classes: int | None = None,
        *,
        head: HeadKind | None = None,
        cov: Cov | None = None,
        backbone: BackboneConfig | None = None,
        prior_scale: float | None = None,
        reg_weight: float | None = None,
        class_score: ClassScore = "feature_var",
        n_quantiles: int = 19,
        n_buckets: int = 20,
        buckets: Literal["uniform", "quantile"] = "uniform",
        cr_epistemic: Literal["bald", "delta"] = "bald",
        refit: bool = True,
        learn_prior: bool = False,
        train_cov: Cov = "diagonal",
        class_bias: bool = False,
        kl_weight: float = 1.0,
        posterior_temperature: float = 1.0,
        train: TrainConfig | None = None,
        input: InputSpec | None = None,
        linear_path: bool | None = None,
        capacity: Mode = "prior",
        noise_choice: bool = False,
        refit_mean: bool = False,
        **backbone_options: Any,
    ) -> None:
        """``backbone`` (or its fields as keywords: width, depth, feature_map, rff_dim) shapes the network.
        ``noise_choice``: regression with the head unset, where no value holds a point mass, chooses
        between the Gaussian head and its heteroscedastic form ('hetero') by 3-fold cross-validated
        CRPS from 40 labels on (alkit/models/capacity.py NOISE_CANDIDATES; off by default: learner
        rules 11-11c).
        ``linear_path``: the last layer also reads the standardised inputs (LinearPath; an option,
        off by default: see ``uses_linear_path``).  ``capacity``: 'prior' (default) chooses the weight
        prior per fit by cross-validation where depth and prior are unset (alkit/models/capacity.py:
        10 or 1 on raw features up to 300 labels, 300 or 30 on an encoder's embeddings; learner rule 2,
        benchmarks/results/label_efficiency_dev/prior_cv_rule.md), 'cv' depth and prior, 'fixed' keeps
        the defaults, 'auto' is cv on an encoder's embeddings and fixed elsewhere (the default before).
        With ``head='quantile'`` or ``'hetero'`` on raw features, any mode but 'fixed' chooses the weight
        prior among 10, 100 and 1000 by cross-validated CRPS (learner rules 13 / 13b,
        alkit/models/capacity.py)."""
        if task == "classification" and (n_classes is None or n_classes < 2):
            raise ValueError("classification needs n_classes >= 2")
        self.auto_head = head is None and task == "regression"  # resolved per fit: regression_head_for
        # the covariance a per-fit head choice pairs with; unread otherwise, so not kept (a learner made
        # with cov='shared' on classification is the default one: task_defaults)
        self.cov_choice, self.train_cov_choice = cov if self.auto_head else None, train_cov
        if head is None:
            head = "gaussian" if task == "classification" else "buckets"
        if task == "classification" and head != "gaussian":
            raise ValueError(f"head {head!r} is a regression head (--head is for regression projects); "
                             "classification uses the Gaussian-logit head (head='gaussian')")
        if head not in ("gaussian", "hetero", "quantile", "buckets"):
            raise ValueError(f"unknown head {head!r}; use gaussian, hetero, quantile or buckets")
        if cov is None:
            cov = default_cov(task, head)
        if cov not in ("dense", "diagonal", "shared"):
            raise ValueError(f"unknown cov {cov!r}; use dense, diagonal or shared")
        if train_cov not in ("dense", "diagonal", "shared"):
            raise ValueError(f"unknown train_cov {train_cov!r}; use dense, diagonal or shared")
        self.task, self.n_classes, self.head_kind, self.cov = task, n_classes, head, cov
        self.train_cov: Cov = train_cov if refit else cov
        if posterior_temperature <= 0:
            raise ValueError(f"posterior_temperature must be positive, got {posterior_temperature}")
        if prior_scale is not None and not 1 / PRIOR_SCALE_MAX <= prior_scale <= PRIOR_SCALE_MAX:
            raise ValueError(f"prior_scale must be in [{1 / PRIOR_SCALE_MAX:g}, {PRIOR_SCALE_MAX:g}], got {prior_scale}"
                             + (" (a prior this wide is no prior: the posterior covariance is singular at small N)"
                                if prior_scale > PRIOR_SCALE_MAX else ""))
        for name, value in (("kl_weight", kl_weight), ("reg_weight", reg_weight)):
            # 0 drops the prior from the refit: the covariance was singular and the first fit a traceback; 1e300
            # overflowed float32 in the refit (a traceback too)
            if value is not None and not 0 < value <= PRIOR_SCALE_MAX:
                raise ValueError(f"{name} must be positive and at most {PRIOR_SCALE_MAX:g}"
                                 + (" (0 leaves the posterior covariance without its prior term)" if value == 0 else "")
                                 + f", got {value}")
        self.class_bias, self.kl_weight, self.posterior_temperature = class_bias, kl_weight, posterior_temperature
        if backbone_options.get("feature_map") is None:
            backbone_options["feature_map"] = _default_feature_map()
        if backbone is None:
            for key, value in self.backbone_defaults.items():
                backbone_options.setdefault(key, value)
        self.backbone_config = BackboneConfig.of(backbone, **backbone_options)
        self.feature_map: FeatureMap = self.backbone_config.feature_map
        if prior_scale is None:  # measured on digits (benchmarks/results/vbll_ood.md)
            prior_scale = 30.0 if task == "classification" else 1.0
        self.prior_scale, self.reg_weight = prior_scale, reg_weight
        self.class_score, self.cr_epistemic = class_score, cr_epistemic
        for name, value in (("n_quantiles", n_quantiles), ("n_buckets", n_buckets)):  # 0 failed in the first fit
            if value < 2:
                raise ValueError(f"{name} must be at least 2, got {value}")
        self.n_quantiles, self.n_buckets, self.buckets = n_quantiles, n_buckets, buckets
        _refuse_other_tasks_options(task, n_quantiles=n_quantiles, n_buckets=n_buckets, buckets=buckets,
                                    cr_epistemic=cr_epistemic, noise_choice=noise_choice,
                                    class_score=class_score, class_bias=class_bias)
        # read by one head only: given for another, it named a run of the default's picks (a black-box check); the
        # per-fit head choice is between the Gaussian and bucket heads, never the quantile one
        if task == "regression" and n_quantiles != _REGRESSION_ONLY["n_quantiles"] and head != "quantile":
            raise ValueError("option n_quantiles applies to the quantile head: add --head quantile")
        if (task == "regression" and not self.auto_head and head != "buckets"
                and (n_buckets != _REGRESSION_ONLY["n_buckets"] or buckets != _REGRESSION_ONLY["buckets"])):
            raise ValueError(f"option {'n_buckets' if n_buckets != _REGRESSION_ONLY['n_buckets'] else 'buckets'} "
                             "applies to the bucket head: add --head buckets, or leave --head out")
        self.do_refit, self.learn_prior = refit, learn_prior
        if refit_mean and (task != "classification" or not refit):
            raise ValueError("refit_mean applies to a classification project with refit on (the Gaussian "
                             "regression head's refit sets its mean already)")
        self.refit_mean = refit_mean
        self.train_config = train or TrainConfig()
        self.input = input
        if linear_path is not None and not isinstance(linear_path, bool):
            raise ValueError(f"linear_path must be true or false, got {linear_path!r}")
        self.linear_path = linear_path
        self.capacity = checked_mode(capacity)
        self.noise_choice = noise_choice
        self.capacity_hint: CapacityHint | None = None  # an earlier cycle's choice, handed on by the loop
        self.backbone: ResidualMLP | ConvBackbone | LinearPath | None = None
        self.head: nn.Module | None = None
        self.shift, self.scale = 0.0, 1.0
        self.feature_whitener_d_d: torch.Tensor | None = None  # 'feature_var': L^-1, L L^T = Phi^T Phi + (s2/s0) I
        self.feature_noise = 1.0  # s2 of that model
        # cov 'shared' with 'feature_var': [mu^T | J] (d, C + d) and f (d,), so that one GEMM gives the mean
        # logits and z = J^T phi, with phi^T S phi = sum_j z_j^2 and phi^T F phi = sum_j f_j z_j^2 (_joint_map)
        self.joint_map_d_d: torch.Tensor | None = None
        self.joint_weights_d: torch.Tensor | None = None

    def uses_linear_path(self) -> bool:
        """Whether this fit's last layer reads the inputs too: ``linear_path``, on raw (not embedding)
        inputs.  Off by default.  On the development sets (benchmarks/results/regression_linear_path_dev.md)
        the Gaussian regression learner with it went from 0.028 / 0.018 CRPS behind a Bayesian ridge
        at 20 / 50 labels to 0.017 / 0.008 ahead on diamonds_price (friedman +0.095 at 20 labels,
        0.01-0.02 lower at 100-300), but the epistemic preset with it fell below random picks on
        diamonds_price (AULC 0.092 against 0.090, label_efficiency_dev/linear_path_*.md): the
        inputs' own directions pull the posterior variance towards rare one-hot columns."""
        if not self.linear_path:
            return False
        return not (self.input is not None and self.input.embedding)

    def _build_head(self, d: int, prior_var: float, lam: float, y_std_N: torch.Tensor, cov: Cov) -> nn.Module:
        if self.task == "classification":
            return ClassificationHead(d, self.n_classes, cov=cov, prior_var=prior_var, reg_weight=lam,
                                      bias=self.class_bias)
        if self.head_kind == "gaussian":
            return GaussianHead(d, 1, cov=cov, prior_var=prior_var, reg_weight=lam)
        if self.head_kind == "hetero":
            return HeteroGaussianHead(d, cov=cov, prior_var=prior_var, reg_weight=lam)
        if self.head_kind == "quantile":
            return QuantileHead(d, self.n_quantiles, cov=cov, prior_var=prior_var, reg_weight=lam, y_N=y_std_N)
        return BucketHead(
            d, y_std_N, n_buckets=self.n_buckets, scheme=self.buckets, cov=cov, prior_var=prior_var,
            reg_weight=lam,
        )

    def head_scorer(self, candidate: Capacity) -> "VBLLLearner":
        """The learner a regression head candidate is cross-validated with: this one's settings with
        that head fixed (alkit/models/capacity.py, HEAD_CANDIDATES)."""
        return VBLLLearner("regression", head=candidate.head, backbone=self.backbone_config, train=self.train_config,
                           input=self.input, prior_scale=self.prior_scale, n_buckets=self.n_buckets,
                           buckets=self.buckets, capacity="fixed")

    def prior_scorer(self, candidate: Capacity) -> "VBLLLearner":
        """The learner a weight-prior candidate of the quantile or hetero head is cross-validated with: this one's
        settings with that prior fixed (alkit/models/capacity.py, QUANTILE_PRIOR_CANDIDATES)."""
        clone = copy.copy(self)  # every setting of this learner (linear_path, kl_weight, refit, ...), unfitted
        clone.train_config = replace(self.train_config, prior_l2=candidate.prior_l2)
        clone.capacity, clone.capacity_hint, clone.backbone, clone.head = "fixed", None, None, None
        return clone

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        X_n_f, y_n = training_arrays(X_n_f, y_n, self.task, getattr(self, "n_classes", None), seed=seed,
                                     names=getattr(self, "feature_names", None))
        # regression, head unset: where the labels hold a point mass the bucket and Gaussian heads are
        # cross-validated (learner rule 10b); elsewhere the Gaussian head, or with noise_choice the
        # Gaussian head with a constant or an input-dependent noise (learner rule 11c, an option)
        rule_head = regression_head_for(np.asarray(y_n)) if self.auto_head else None
        noise = self.noise_choice and len(y_n) >= NOISE_MIN_N
        choice = "" if rule_head is None else ("head" if rule_head == "buckets" else "noise" if noise else "")
        if self.task == "regression" and self.head_kind in PRIOR_CHOICE_HEADS and not self.auto_head and not (
                self.input is not None and self.input.embedding):
            choice = "prior"  # the head's weight prior by cross-validated CRPS (learner rules 13 / 13b; raw features)
        scorer = (self.prior_scorer if choice == "prior" else self.head_scorer if choice
                  else capacity_scorer(self.n_classes, self.input))
        config, train_config, chosen = resolve_capacity(
            self.capacity, self.task, self.input, self.backbone_config, self.train_config, X_n_f, np.asarray(y_n),
            make_scorer=scorer, seed=seed,
            hint=self.capacity_hint, regression=choice)
        torch.manual_seed(seed)
        X = to_tensor(X_n_f)
        N = X.shape[0]
        self.backbone = build_backbone(X.shape[1], self.input, X, config)
        y = torch.as_tensor(np.asarray(y_n))
        if self.task == "regression":
            y = y.float()
            if self.auto_head:
                self.head_kind = HEADS[int(chosen["capacity_head"])] if "capacity_head" in chosen else rule_head
                self.cov = self.cov_choice or default_cov(self.task, self.head_kind)
                self.train_cov = self.train_cov_choice if self.do_refit else self.cov
            scaler = TargetScaler(y)  # the plain learner's standardisation, one rule for both
            self.shift, self.scale = scaler.shift, scaler.scale
            y = scaler.forward(y)
        else:
            y = y.long()
        if self.uses_linear_path() and isinstance(self.backbone, ResidualMLP):
            self.backbone = linear_path_for(self.backbone, self.input, X)
        backbone = self.backbone
        Z = backbone.fixed(X)  # the frozen part (input standardisation, the image convolution): once per fit
        with torch.no_grad():
            phi0 = backbone.trainable(Z)
            prior_var = self.prior_scale / float((phi0**2).sum(1).mean().clamp_min(1e-8))
        lam = self.reg_weight if self.reg_weight is not None else self.kl_weight / N
        self.head = self._build_head(self.backbone.out_dim, prior_var, lam, y, self.train_cov)
        self.head.layer.log_prior_var.requires_grad_(self.learn_prior)
        head = self.head

        def loss_fn(z_b_f: torch.Tensor, y_b: torch.Tensor) -> torch.Tensor:
            return head.loss(backbone.trainable(z_b_f), y_b)

        module = nn.ModuleDict({"backbone": backbone, "head": head})
        report = train_module(
            module, loss_fn, Z, y, seed=seed,
            config=linear_lr(train_config, config.depth_for(self.input)).for_input(self.input, self.task),
            no_decay=lambda n: n.startswith("head."),
        )
        report.update(chosen)
        scores_features = self.task == "classification" and self.class_score == "feature_var"
        if self.do_refit or scores_features:
            with torch.no_grad():
                phi = backbone.trainable(Z)  # the trained features of the labels, once
        if self.do_refit:
            if self.cov != self.train_cov:  # trained diagonal (cheap); refit what is scored
                head.layer = head.layer.with_cov(self.cov)
            head.reg_weight = head.reg_weight * self.posterior_temperature  # T < 1: a colder posterior
            out = head.refit(phi, y)
            if isinstance(out, int):
                report["refit_iters"] = float(out)
            if self.refit_mean:
                report["refit_mean_grad"] = head.refit_joint(phi, y)
        if scores_features:
            with torch.no_grad():
                s0 = float(head.layer.log_prior_var.exp())
                self.feature_noise = float(head.noise_var.mean())
                # L^-1 once per fit (float64), applied as one float32 GEMM per chunk: the variance is a
                # sum of squares, so float32 keeps its relative accuracy (one d x d product per item)
                whitener = ridge_whitener(phi, self.feature_noise / s0)
                self.feature_whitener_d_d = whitener.float()
                self.joint_map_d_d = self.joint_weights_d = None
                if self.cov == "shared" and self.do_refit:
                    J, f = _joint_map(head.layer.cov_K_d_d()[0].double(), whitener, self.feature_noise)
                    self.joint_map_d_d, self.joint_weights_d = _padded_joint_map(
                        head.layer.W_mean.detach().T.float(), J, f)
        return report

    @torch.no_grad()
    def features(self, X_n_f: np.ndarray) -> torch.Tensor:
        if self.backbone is None:
            raise RuntimeError("fit the learner before predicting")
        return self.backbone(to_tensor(X_n_f))

    def _feature_var(self, phi_n_d: torch.Tensor) -> torch.Tensor:
        """s2 phi^T (Phi^T Phi + (s2/s0) I)^-1 phi = s2 ||L^-1 phi||^2 per item (n,), float32."""
        if self.feature_whitener_d_d is None:
            raise RuntimeError("fit the learner before predicting")
        Z_n_d = phi_n_d.float() @ self.feature_whitener_d_d.T
        return self.feature_noise * Z_n_d.square().sum(1)

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        phi = self.features(X_n_f)
        if self.task == "classification":
            feature_var = None
            if self.joint_map_d_d is not None:  # mean logits, shared S and feature_var: one GEMM per chunk
                C = self.n_classes
                out_n_Cd = phi @ self.joint_map_d_d
                # contiguous: both softmaxes of class_scores read m (a strided slice costs them twice)
                m = out_n_Cd[:, :C].contiguous() if self.head.layer.bias is None else out_n_Cd[:, :C] + self.head.layer.bias
                z2_n_d = out_n_Cd[:, C:].square_()
                v = z2_n_d.sum(1, keepdim=True)  # (n, 1): the same for every class
                feature_var = torch.mv(z2_n_d, self.joint_weights_d)
            else:
                m, v = self.head(phi)
            sc = class_scores(m, v, self.head.noise_var, parts=("mi_n",) if self.class_score == "mi" else ())
            v = v.expand_as(m)
            # posterior_var_n_K: v is phi^T S_k phi of posterior(), so the acquisitions reuse it
            extras = {"logits_n_C": m, "logit_var_n_C": v, "posterior_var_n_K": v, "logit_var_n": sc["logit_var_n"]}
            if "mi_n" in sc:
                extras["mi_n"] = sc["mi_n"]
            if self.class_score == "feature_var":
                extras["feature_var_n"] = self._feature_var(phi) if feature_var is None else feature_var
            epi = extras[{"mi": "mi_n", "logit_var": "logit_var_n", "feature_var": "feature_var_n"}[self.class_score]]
            return Prediction(epi, sc["entropy_map_n"], phi, probs_n_C=sc["probs_n_C"], extras=extras)
        if self.head_kind in ("gaussian", "hetero"):
            m, v = self.head(phi)
            s2_n = self.head.noise_var_n(phi)
            dist = GaussianPredictive(m[:, 0], v[:, 0] + s2_n).affine(self.shift, self.scale)
            epi = v[:, 0] * self.scale**2
            extras = {"var_n_K": v * self.scale**2}
            if self.head_kind == "hetero":
                extras["noise_var_n"] = s2_n * self.scale**2
            return Prediction(epi, (s2_n * self.scale**2).clone(), phi, mean_n=dist.mean_n, dist=dist, extras=extras)
        return self.head.predict(phi, self.shift, self.scale, epistemic=self.cr_epistemic)

    def posterior(self) -> GaussianLastLayer | None:
        """The last layer's Gaussian posterior; the 'hetero' head's noise_var_K is its noise scale
        exp(b) (the noise at a^T phi = 0): BALD and EPIG read each item's own noise from the
        Prediction's ``noise_var_n``."""
        if self.head is None:
            return None
        noise = self.head.noise_var.detach()
        if self.task == "regression" and self.head_kind != "buckets":  # buckets: logit space, no units
            noise = noise * self.scale**2
            post = posterior_of(self.head.layer, noise)
            post.cov_K_d_d = post.cov_K_d_d * self.scale**2
            return post
        return posterior_of(self.head.layer, noise)


def _padded_joint_map(mean_d_C: torch.Tensor, J_d_d: torch.Tensor, f_d: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[mu^T | J | 0] (d, C + d + pad) and f with zeros for the pad (``zero_pad_columns``: the zero
    columns change neither sum of squares, and the product runs the blocked GEMM kernel)."""
    joint = zero_pad_columns(torch.cat([mean_d_C, J_d_d], 1))
    return joint, torch.cat([f_d, f_d.new_zeros(joint.shape[1] - mean_d_C.shape[1] - f_d.shape[0])])


def _joint_map(S_d_d: torch.Tensor, whitener_d_d: torch.Tensor, s2: float) -> tuple[torch.Tensor, torch.Tensor]:
    """J (d, d) and f (d,), float32, with phi^T S phi = ||J^T phi||^2 and phi^T F phi = sum_j f_j (J^T phi)_j^2
    for F = s2 W^T W (W the ridge whitener): S = L L^T, L^-1 F L^-T = V diag(f) V^T, J = L V.
    Both quadratic forms of an item then cost one d x d product instead of two (exact, float64 here)."""
    L = _safe_cholesky(S_d_d)
    B_t = torch.linalg.solve_triangular(L, whitener_d_d.T.double(), upper=False)  # L^-1 W^T = (W L^-T)^T
    f, V = torch.linalg.eigh(s2 * (B_t @ B_t.T))
    return (L @ V).float(), f.clamp_min(0.0).float()
