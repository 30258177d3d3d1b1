"""The network's capacity, chosen per fit by cross-validation on the labels themselves
(``capacity=cv``: depth and prior; ``capacity=prior``: the prior alone, the default of the VBLL and
plain MLP learners; ``auto`` is cv on an encoder's embeddings and fixed on raw features; the
ensembles, MC dropout and SVE default to ``fixed``).

Why: on flat tabular features no fixed depth and weight prior is right for every data set.  On
held-out tables the learners trailed the better of logistic regression and a plain MLP by 0.02-0.05
accuracy at 100-300 labels where the data wanted a freer network (x_weather, x_spam7) and by
0.01-0.02 where it wanted a tamer one (x_credit, and the development sets chile and hmda).  K-fold
cross-validation of the held-out log-likelihood on the N labels picks between a tame network (no
residual block, the default prior) and a free one (one block, a weak prior).

Measured (benchmarks/results/capacity_cv.md): with the VBLL learner it gained on every one of 7
development sets on average over 20-300 labels (+0.002 to +0.005; chile +0.016 at 100 labels,
down to -0.008 at 300), but on ten hold-out tables it gained on six (x_weather +0.014 on average,
+0.036 at 100 labels; x_movies +0.018) and lost on four (x_spam7 -0.010, x_storms -0.013), +0.002
on average: held-out NLL favours the tame network, which is better calibrated but not always more
accurate.  Hence an option on raw features, not the default there.

On an encoder's embeddings the choice is between prior 30 and 300 (no block).  Chosen on the
development sets tweets and fashion_emb_dev, it passed a bar set before the report and hold-out
sets were read (benchmarks/results/capacity_cv_embeddings.md): VBLL accuracy, cv minus fixed, mean
over 20-300 labels, +0.006 on the food reviews (report, 20 seeds; at least +0.003 at every N),
+0.007 on x_titles (worst -0.002 at 20 labels), 0.000 on x_fashion_emb (it kept prior 30).  So
``auto``, the default, is cv there.

Regression: the MLP learner chooses between the shallow network and the same network fitted to a
Bayesian ridge's residual (REGRESSION_CANDIDATES, learner rule 9); the VBLL learner, where the labels
hold a point mass, between its bucket and Gaussian heads (HEAD_CANDIDATES, learner rule 10b); with
the quantile or heteroscedastic head, between weight priors (QUANTILE_PRIOR_CANDIDATES, learner
rules 13 / 13b); all by cross-validated CRPS.

Scope: classification on flat features with depth and prior left unset, at N <= CV_MAX_N labels
(the full-batch regime; above it the default stays); not images, whose convolution stem fixes the
shape.  On raw features the candidates are TAME and FREE; on an encoder's embeddings (which run
without a block) the default prior 30 and a ten times stronger one (EMBEDDING_CANDIDATES).  The
candidates are scored with the plain MLP learner (the cheapest network of that shape), and the
choice is applied to whichever learner asked (VBLL, MLP, the post-hoc scorers' MLP).  In a run the
loop hands each cycle's choice on, and it is made again only when the labels have doubled
(CV_GROWTH), so it costs 6 extra fits at 20, 40, 80, ... labels, not at every cycle.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any, Callable, Literal, Protocol, get_args

import numpy as np
import torch

from alkit.models.backbone import LINEAR_DEPTH, BackboneConfig, InputSpec
from alkit.models.train import TrainConfig


@dataclass(frozen=True)
class Capacity:
    """One candidate: ``depth`` residual blocks under a weight prior of precision ``prior_l2``."""

    name: str
    depth: int
    prior_l2: float
    ridge: str = "off"  # regression: how a Bayesian ridge on the labels enters the prediction (RIDGE_MODES)
    head: str = ""  # VBLL regression: the head ('gaussian' or 'buckets'; '' where the choice is not the head)

    @property
    def residual(self) -> bool:
        """Whether the network learns what the ridge leaves (every ridge mode but 'off')."""
        return self.ridge != "off"


TAME = Capacity("tame", 0, 10.0)
FREE = Capacity("free", 1, 1.0)
CANDIDATES: tuple[Capacity, ...] = (TAME, FREE)
# On a pretrained encoder's embeddings (no residual block either way): the default prior 30 or a
# ten times stronger one.  The better one follows the task: 300 on the tweets development set
# (MiniLM, a hard task), 30 on fashion_emb_dev (EfficientNet-Lite0 vectors, an informative one);
# CV NLL picked 300 on 48 of 50 tweets subsets and 30 on all 50 of the other
# (benchmarks/results/capacity_cv_embeddings.md).
EMBEDDING_TAME = Capacity("tame", 0, 300.0)
EMBEDDING_FREE = Capacity("free", 0, 30.0)
EMBEDDING_CANDIDATES: tuple[Capacity, ...] = (EMBEDDING_TAME, EMBEDDING_FREE)
# ``capacity=prior`` on raw features (the VBLL learner's default): the weight prior alone, under the
# default one residual block: 10 (the fixed default) or 1.  A weak prior suits 20-50 labels of a
# clean task (blobs_dev +0.05, mnist8 as flat features +0.02 at 20 labels with prior 1) and costs on
# noisy tables at every N (chile -0.02); the fixed default cannot know which
# (label_efficiency_dev/prior_raw_rule.md), cross-validation on the labels can (learner rule 2,
# label_efficiency_dev/prior_cv_rule.md).  On embeddings ``prior`` is ``cv``: its candidates already
# differ in the prior alone.
#
# Only up to PRIOR_MAX_N labels: the choice is for the few-label regime, where the prior decides the
# fit (on the development sets its effect was +0.0065 / +0.0016 at 20 / 50 labels and within 0.0005
# of zero from 100 to 300).  With more labels cross-validated NLL still picks prior 1 on clean data,
# and the freer network's features flag unfamiliar inputs less well: on the OOD development split
# (digits 5-9 trained on 630 labels, 0-4 held out) the VBLL score's AUROC fell from 0.954 to 0.936.
# The label-efficiency evidence reaches 300 labels, so above it the default prior stays.
PRIOR_MAX_N = 300
# Regression (the MLP learner only): the default shallow network (no residual block, prior 30;
# alkit/models/learner.py) as it is, or fitted to the residual of a Bayesian ridge regression on the
# same labels (mean = ridge mean + network mean, variance the network's).  The ridge wins where the
# target is near-linear and the labels few (diamonds_price, RandHIE), the network where it is not
# (friedman, hours from 100 labels); cross-validated CRPS on the labels picks per fit (learner rule 9,
# label_efficiency_dev/recheck_rule.md).  Up to CV_MAX_N labels, made again when they have doubled.
REGRESSION_DEPTH = 0
REGRESSION_PRIOR_L2_SHALLOW = 30.0
REGRESSION_PLAIN = Capacity("plain", REGRESSION_DEPTH, REGRESSION_PRIOR_L2_SHALLOW)
# How a Bayesian ridge on the labels enters a regression fit: 'off' (the plain network), 'residual'
# (the network learns the ridge's residual; mean = ridge mean + network mean, the network's
# variance), 'predictive' (the network learns the residual, for the embedding and the post-hoc
# scores, but the prediction is the ridge's own: its mean and predictive variance).  As a third
# candidate of the choice, 'predictive' moved development CRPS by +0.03 % relative to the ridge's
# (learner rule 9c, bar +0.1 %: not adopted; label_efficiency_dev/regression_ridge_rule.md), so it is
# an option (``-o ridge=predictive -o capacity=fixed``), not a candidate.
RIDGE_MODES: tuple[str, ...] = ("off", "residual", "predictive")
REGRESSION_RESIDUAL = Capacity("ridge-residual", REGRESSION_DEPTH, REGRESSION_PRIOR_L2_SHALLOW, ridge="residual")
REGRESSION_RIDGE = Capacity("ridge", REGRESSION_DEPTH, REGRESSION_PRIOR_L2_SHALLOW, ridge="predictive")
REGRESSION_CANDIDATES: tuple[Capacity, ...] = (REGRESSION_PLAIN, REGRESSION_RESIDUAL)
REGRESSION_CHOICES: dict[str, Capacity] = {c.name: c for c in (REGRESSION_PLAIN, REGRESSION_RESIDUAL, REGRESSION_RIDGE)}
# The VBLL learner's regression head where the labels hold a point mass (one value >= 10 % of them,
# alkit/learners/vbll.py regression_head_for): the bucket head (CR-VBLL) or the Gaussian head, by
# cross-validated CRPS (learner rule 10).  The point-mass rule alone took the bucket head on a
# zero-inflated count whose non-zero part is a smooth function of the inputs, where the bucket
# head, which ignores the order of its buckets, stays near the marginal.  Depth and prior are the
# learner's own (regression choices leave the configs unchanged).
HEADS: tuple[str, ...] = ("", "gaussian", "buckets", "hetero")  # stored by index: append only
HEAD_BUCKETS = Capacity("buckets", -1, 0.0, head="buckets")
HEAD_GAUSSIAN = Capacity("gaussian", -1, 0.0, head="gaussian")
HEAD_CANDIDATES: tuple[Capacity, ...] = (HEAD_BUCKETS, HEAD_GAUSSIAN)
# Where no value holds a point mass, an option (VBLLLearner noise_choice=True, off by default): the
# Gaussian head, or the Gaussian head with input-dependent noise (HeteroGaussianHead), by the same
# cross-validated CRPS and margin, from NOISE_MIN_N labels on, and only by more than one standard
# error of the paired differences.  The heteroscedastic head alone overfits its noise on homoscedastic
# development sets (friedman, diamonds_price: CRPS 0.06-0.12 above the Gaussian head's at 300 labels)
# where it is 25 % lower on a target whose noise varies 40-fold (benchmarks/stress_data.py s_hetero).
# As a default the choice failed three times on diamonds_price at 20-100 labels (-1.4 % to -5.3 % of
# the ridge's CRPS at one count; learner rules 11, 11b, 11c, label_efficiency_dev/recheck_rule.md)
# while it gained 16 % on s_hetero.
HEAD_HETERO = Capacity("hetero", -1, 0.0, head="hetero")
NOISE_CANDIDATES: tuple[Capacity, ...] = (HEAD_GAUSSIAN, HEAD_HETERO)
NOISE_MIN_N = 40  # rule 11b: at 20 labels each fold trains on 13
NOISE_ONE_SE = True  # rule 11c
HEAD_MARGIN = 0.1  # the second head is taken only where its cross-validated CRPS is lower by this fraction
HEAD_ONE_SE = False  # also by one standard error of the paired differences: rule 10c, not adopted (vbll_head_se_rule.md)
# With the quantile head (QR-VBLL, ``head=quantile``) and the prior unset: the weight prior among 10 (the
# default), 100 and 1000 by the same cross-validated CRPS (ties keep 10).  Why: the quantile head overfits
# noisy near-linear targets under the default prior (docvis, hours: CRPS 0.738 / 2.266 at 20 labels against
# 0.534 / 1.703 with 1000) where a smooth non-linear one wants it (friedman: 0.893 against 1.267 at 300
# labels); benchmarks/results/quantile_prior_screen_dev.md, learner rule 13.  The heteroscedastic head
# (``head=hetero``) takes the same choice (learner rule 13b: +8.1 % of a ridge's CRPS over five development
# sets and s_hetero on fresh seeds, s_hetero -0.6 %; hetero_prior_rule.md).
QUANTILE_PRIOR_CANDIDATES: tuple[Capacity, ...] = tuple(Capacity(f"prior-{p:g}", -1, p) for p in (10.0, 100.0, 1000.0))
PRIOR_TAME = Capacity("tame", 1, 10.0)
PRIOR_FREE = Capacity("free", 1, 1.0)
PRIOR_CANDIDATES: tuple[Capacity, ...] = (PRIOR_TAME, PRIOR_FREE)
# ``capacity=prior-linear``: the same choice with a third candidate, a linear model on the standardised
# inputs (no hidden layer, LINEAR_DEPTH) under weight prior 1 (logistic regression's C = 1 under the
# classification head), last in order so ties keep a network.  Why: on several tables logistic regression
# beats every one-block network by 0.01-0.02 at 20-300 labels (development: chile; hold-out: x_credit,
# x_telco, x_attrition, x_cards), and cross-validated NLL can tell where.
PRIOR_LINEAR = Capacity("linear", LINEAR_DEPTH, 1.0)
PRIOR_LINEAR_CANDIDATES: tuple[Capacity, ...] = (PRIOR_TAME, PRIOR_FREE, PRIOR_LINEAR)
CV_FOLDS = 3
CV_MAX_N = 1024  # TrainConfig.full_batch_max: every fold is one full-batch fit
CV_MIN_N = 2 * CV_FOLDS
# In a run the choice is made again once the labels have grown by this factor since the last one
# (20, 40, 80, 160, ... labels); in between the loop hands the last choice on (CapacityHint).
CV_GROWTH = 2.0


@dataclass(frozen=True)
class CapacityHint:
    """The choice an earlier cycle of the run made: at ``n_labels`` labels, ``depth`` and ``prior_l2``."""

    n_labels: int
    depth: int
    prior_l2: float
    ridge: str = "off"
    head: str = ""

    @classmethod
    def from_report(cls, report: dict[str, float]) -> "CapacityHint | None":
        """The hint a fit report (``resolve_capacity``'s keys) carries, or None."""
        if "capacity_n" not in report:
            return None
        return cls(int(report["capacity_n"]), int(report["capacity_depth"]), float(report["capacity_prior_l2"]),
                   RIDGE_MODES[int(report.get("capacity_ridge", 0.0))], HEADS[int(report.get("capacity_head", 0.0))])

    @classmethod
    def from_signal(cls, signal: dict[str, Any]) -> "CapacityHint":
        """The hint a stored cycle signal holds (``dataclasses.asdict`` of one), also from runs
        recorded before a field was added or renamed (``residual`` -> ``ridge``)."""
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in signal.items() if k in known}
        if "residual" in signal and "ridge" not in signal:
            values["ridge"] = "residual" if signal["residual"] else "off"
        return cls(**values)

    def reusable(self, n_labels: int, candidates: tuple[Capacity, ...] = CANDIDATES) -> Capacity | None:
        """The candidate to reuse at ``n_labels`` labels, or None when it is time to choose again."""
        if not self.n_labels <= n_labels < CV_GROWTH * self.n_labels:
            return None
        return next((c for c in candidates if (c.depth, c.prior_l2, c.ridge, c.head) == (self.depth, self.prior_l2, self.ridge, self.head)),
                    None)


Mode = Literal["fixed", "cv", "prior", "auto", "prior-linear"]
MODES: tuple[str, ...] = get_args(Mode)


def checked_mode(mode: str) -> str:
    """``mode`` if it is one of MODES; a ValueError naming it otherwise (learners check at construction)."""
    if mode not in MODES:
        raise ValueError(f"capacity must be {', '.join(MODES[:-1])} or {MODES[-1]}, got {mode!r}")
    return mode


def effective_mode(mode: str, input: InputSpec | None) -> str:
    """'cv', 'prior' or 'fixed': ``mode``, with 'auto' read as cv on an encoder's embeddings and
    fixed on everything else.  Anything but 'fixed' chooses per fit (among ``candidates_for``)."""
    if checked_mode(mode) != "auto":
        return mode
    return "cv" if input is not None and input.embedding else "fixed"


def capacity_applies(task: str, input: InputSpec | None, backbone: BackboneConfig, train: TrainConfig,
                     n_labels: int, *, regression: bool | str = False) -> bool:
    """Whether this fit chooses its capacity: on flat features (raw or an encoder's embeddings, not
    images) with the prior unset, between CV_MIN_N and CV_MAX_N labels; classification with the
    depth unset, regression where the learner takes a regression choice (``regression``: the MLP
    learner's ridge, the VBLL learner's head, the VBLL quantile head's prior) with the depth unset (or
    the MLP's default)."""
    if train.prior_l2 is not None or backbone.module:
        return False
    if input is not None and (input.patch_filters is not None or input.image_shape is not None):
        return False
    if task == "regression":
        shallow = backbone.depth in (None, REGRESSION_DEPTH)
        return bool(regression) and shallow and CV_MIN_N <= n_labels <= CV_MAX_N
    if task != "classification" or backbone.depth is not None:
        return False
    return CV_MIN_N <= n_labels <= CV_MAX_N


def candidates_for(input: InputSpec | None, mode: str = "cv", task: str = "classification",
                   regression: str = "ridge") -> tuple[Capacity, ...]:
    """The capacities a fit on these inputs chooses between: for regression REGRESSION_CANDIDATES
    (``regression`` 'ridge', the MLP learner) or HEAD_CANDIDATES ('head', the VBLL learner);
    EMBEDDING_CANDIDATES on an encoder's embeddings; on raw features CANDIDATES (depth and prior) in
    mode 'cv', PRIOR_CANDIDATES (the prior alone) in mode 'prior', and those and a linear model in mode
    'prior-linear'."""
    if task == "regression":
        return {"head": HEAD_CANDIDATES, "noise": NOISE_CANDIDATES, "prior": QUANTILE_PRIOR_CANDIDATES}.get(
            regression, REGRESSION_CANDIDATES)
    if input is not None and input.embedding:
        return EMBEDDING_CANDIDATES
    return {"prior": PRIOR_CANDIDATES, "prior-linear": PRIOR_LINEAR_CANDIDATES}.get(effective_mode(mode, input), CANDIDATES)


def cv_folds(y_n: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """Held-out index sets of a k-fold split, stratified by class where every class holds k labels.
    Regression targets of few non-whole values (two levels, or one) are not classes to stratify by:
    StratifiedKFold refused them ('continuous') and every such run failed at its first fit."""
    from sklearn.model_selection import KFold, StratifiedKFold
    from sklearn.utils.multiclass import type_of_target

    _, counts = np.unique(y_n, return_counts=True)
    stratify = counts.min() >= k and type_of_target(y_n) in ("binary", "multiclass")
    splitter = StratifiedKFold(k, shuffle=True, random_state=seed) if stratify else KFold(k, shuffle=True, random_state=seed)
    return [held for _, held in splitter.split(np.zeros(len(y_n)), y_n)]


class DelegatedCapacity:
    """For a learner whose capacity is that of the MLP learner it wraps (``capacity_network``):
    the loop reads ``capacity`` and hands ``capacity_hint`` on through it."""

    def capacity_network(self) -> Any:
        """The wrapped learner that makes the choice (subclasses)."""
        raise NotImplementedError

    @property
    def capacity(self) -> str:
        """The wrapped network's capacity mode: the loop hands a hint on only where it chooses."""
        return self.capacity_network().capacity

    @property
    def capacity_hint(self) -> "CapacityHint | None":
        """The wrapped network's capacity hint (an earlier cycle's choice)."""
        return self.capacity_network().capacity_hint

    @capacity_hint.setter
    def capacity_hint(self, hint: "CapacityHint | None") -> None:
        self.capacity_network().capacity_hint = hint


class Scorer(Protocol):
    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]: ...
    def predict(self, X_n_f: np.ndarray) -> Any: ...


def _cv_losses(X_n_f: np.ndarray, y_n: np.ndarray, make: Callable[[], Scorer], folds: list[np.ndarray], seed: int,
               held_loss: Callable[[Any, np.ndarray], np.ndarray]) -> np.ndarray:
    """Each label's held-out loss (n,): ``held_loss(prediction, y_held)`` per item, one learner
    ``make()`` fitted per fold on the rest."""
    losses = np.empty(len(y_n), dtype=np.float64)
    for held in folds:
        keep = np.ones(len(y_n), dtype=bool)
        keep[held] = False
        learner = make()
        learner.fit(X_n_f[keep], y_n[keep], seed=seed)
        losses[held] = held_loss(learner.predict(X_n_f[held]), y_n[held])
    return losses


def _nll_items(pred: Any, y: np.ndarray) -> np.ndarray:
    p = pred.probs_n_C
    return (-torch.log(p[torch.arange(len(y)), torch.as_tensor(y)].clamp_min(1e-12))).double().numpy()


def _crps_items(pred: Any, y: np.ndarray) -> np.ndarray:
    return pred.dist.crps(torch.as_tensor(y)).double().numpy()


def cv_nll(X_n_f: np.ndarray, y_n: np.ndarray, make: Callable[[], Scorer], *, folds: list[np.ndarray],
           seed: int) -> float:
    """Mean held-out negative log-likelihood of the learners ``make()`` builds, one per fold."""
    return float(_cv_losses(X_n_f, y_n, make, folds, seed, _nll_items).mean())


def cv_crps(X_n_f: np.ndarray, y_n: np.ndarray, make: Callable[[], Scorer], *, folds: list[np.ndarray],
            seed: int) -> float:
    """Mean held-out CRPS of the regression learners ``make()`` builds, one per fold (the measure
    regression results are reported in; a heteroscedastic fit can buy held-out likelihood with a
    poor mean, which CRPS does not reward)."""
    return float(_cv_losses(X_n_f, y_n, make, folds, seed, _crps_items).mean())


def choose_capacity(X_n_f: np.ndarray, y_n: np.ndarray, make_scorer: Callable[[Capacity], Scorer], *, seed: int,
                    candidates: tuple[Capacity, ...] = CANDIDATES, task: str = "classification",
                    margin: float = 0.0, one_se: bool = False) -> tuple[Capacity, dict[str, float]]:
    """The candidate whose network (``make_scorer(candidate)``) has the lowest cross-validated NLL
    (regression: CRPS; ties: the first, the tamer or plainer), and every candidate's score.  With a
    ``margin`` the first candidate is kept unless the best is lower than its score by that fraction;
    with ``one_se`` also unless the best is lower by more than one standard error of the paired
    per-label differences (the one-standard-error rule of model selection: with few labels the
    held-out scores of two models differ by noise as large as their gap).  Deterministic for a seed."""
    y = np.asarray(y_n)
    folds = cv_folds(y, CV_FOLDS, seed)
    items = _crps_items if task == "regression" else _nll_items
    losses = {c.name: _cv_losses(X_n_f, y, lambda c=c: make_scorer(c), folds, seed, items) for c in candidates}
    scores = {name: float(v.mean()) for name, v in losses.items()}
    best, first = min(candidates, key=lambda c: scores[c.name]), candidates[0]
    diff = losses[first.name] - losses[best.name]
    gain = float(diff.mean())
    se = float(diff.std(ddof=1) / np.sqrt(len(diff))) if len(diff) > 1 else 0.0
    switch = gain > margin * scores[first.name] and (not one_se or gain > se)
    return (best if switch else first), scores


def resolve_capacity(mode: str, task: str, input: InputSpec | None, backbone: BackboneConfig,
                     train: TrainConfig, X_n_f: np.ndarray, y_n: np.ndarray, *,
                     make_scorer: Callable[[Capacity], Scorer], seed: int, hint: CapacityHint | None = None,
                     regression: str = "") -> tuple[BackboneConfig, TrainConfig, dict[str, float]]:
    """The backbone and training configs of this fit: with ``mode`` 'cv', where
    ``capacity_applies``, the chosen candidate's depth and prior, and a report of the choice
    (``capacity_n`` labels it was made at, ``capacity_depth``, ``capacity_prior_l2``, each
    candidate's ``cv_nll_<name>`` when chosen now); else unchanged.  A ``hint`` from an earlier
    cycle is reused until the labels have grown CV_GROWTH-fold.  ``regression``: the regression
    choice the learner takes, '' none, 'ridge' (the MLP learner), 'head' / 'noise' (the VBLL learner's
    head) or 'prior' (the VBLL quantile head's weight prior); its report then holds ``capacity_ridge``
    and ``capacity_head``, the indices of the chosen RIDGE_MODES and HEADS entries, and the configs
    come back unchanged but for 'prior', whose training config carries the chosen prior."""
    if effective_mode(mode, input) == "fixed" or not capacity_applies(task, input, backbone, train, len(y_n),
                                                                      regression=regression):
        return backbone, train, {}
    candidates = candidates_for(input, mode, task, regression)
    if candidates in (PRIOR_CANDIDATES, PRIOR_LINEAR_CANDIDATES) and len(y_n) > PRIOR_MAX_N:
        return backbone, train, {}  # the raw-feature prior choice is for few labels (PRIOR_MAX_N)
    reused = hint.reusable(len(y_n), candidates) if hint is not None else None
    if reused is not None:
        chosen, n_chosen, scores = reused, hint.n_labels, {}
    else:
        margin, one_se = {"head": (HEAD_MARGIN, HEAD_ONE_SE), "noise": (HEAD_MARGIN, NOISE_ONE_SE)}.get(
            regression, (0.0, False))
        chosen, scores = choose_capacity(X_n_f, y_n, make_scorer, seed=seed, candidates=candidates, task=task,
                                         margin=margin, one_se=one_se)
        n_chosen = len(y_n)
    measure = "crps" if task == "regression" else "nll"
    report = {"capacity_n": float(n_chosen), "capacity_depth": float(chosen.depth),
              "capacity_prior_l2": chosen.prior_l2, **{f"cv_{measure}_{k}": v for k, v in scores.items()}}
    if task == "regression":
        out = replace(train, prior_l2=chosen.prior_l2) if regression == "prior" else train
        return backbone, out, {**report, "capacity_ridge": float(RIDGE_MODES.index(chosen.ridge)),
                               "capacity_head": float(HEADS.index(chosen.head))}
    return BackboneConfig.of(backbone, depth=chosen.depth), replace(train, prior_l2=chosen.prior_l2), report
