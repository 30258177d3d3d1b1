"""The records that flow through one cycle (DESIGN.md vocabulary).

Learner.predict -> Prediction -> Acquisition.score -> Candidates -> Strategy.select -> Selection.
Tensors are float32 torch tensors on CPU unless a name says otherwise; shapes are in the names or
docstrings (n items, C classes, K outputs/heads, d last-layer features).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

import numpy as np
import torch

Task = Literal["classification", "regression"]


class PredictiveDistribution(Protocol):
    """A per-item predictive distribution for regression targets (Gaussian, quantile, buckets)."""

    def mean(self) -> torch.Tensor:  # (n,)
        ...

    def nll(self, y_n: torch.Tensor) -> torch.Tensor:  # (n,) negative log density at y
        ...

    def crps(self, y_n: torch.Tensor) -> torch.Tensor:  # (n,)
        ...

    def cdf(self, y_n: torch.Tensor) -> torch.Tensor:  # (n,) P(Y <= y)
        ...

    def quantile(self, tau: float) -> torch.Tensor:  # (n,) the tau-quantile, 0 < tau < 1
        ...


@dataclass
class GaussianLastLayer:
    """Gaussian posterior over last-layer weights, for joint (batch) information.

    Output k of an item with last-layer features phi (d,) is y_k = w_k^T phi + eps_k,
    w_k ~ N(mu_k, cov_k), eps_k ~ N(0, noise_var_K[k]).  ``cov_K_d_d`` is (K, d, d); a
    Kronecker (KFAC) posterior with shared input factor is expressed as cov_k = scale_K[k] * cov_d_d
    by passing cov_K_d_d of shape (1, d, d) and ``scale_K`` (K,).  ``phi`` for an item is
    ``Prediction.embedding`` (with a trailing 1 appended when ``bias_feature`` is True).
    """

    cov_K_d_d: torch.Tensor
    noise_var_K: torch.Tensor
    scale_K: torch.Tensor | None = None
    bias_feature: bool = False

    def features(self, embedding_n_d: torch.Tensor) -> torch.Tensor:
        """phi for each item, (n, d') with the bias 1 appended where the head has one."""
        if not self.bias_feature:
            return embedding_n_d
        ones = torch.ones(embedding_n_d.shape[0], 1, dtype=embedding_n_d.dtype)
        return torch.cat([embedding_n_d, ones], dim=1)


@dataclass
class Prediction:
    """What a Learner says about a chunk of n items.

    classification: ``probs_n_C`` is the predictive class distribution.
    regression: ``mean_n`` is the point prediction and ``dist`` the full predictive distribution.
    ``epistemic_n`` is the learner's epistemic score (higher = the model knows less; the
    quantity active learning ranks by), ``aleatoric_n`` the irreducible part,
    ``embedding_n_d`` the last-layer features (used by diverse/kcenter/badge/coldstart).
    ``extras`` carries method-specific tensors (e.g. ``logit_var_n_C``, ``member_probs_n_M_C``).
    """

    epistemic_n: torch.Tensor
    aleatoric_n: torch.Tensor
    embedding_n_d: torch.Tensor
    probs_n_C: torch.Tensor | None = None
    mean_n: torch.Tensor | None = None
    dist: PredictiveDistribution | None = None
    extras: dict[str, torch.Tensor] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # NumPy arrays from a learner of the user's own (scikit-learn hands them over) as tensors: every reader
        # calls tensor methods ("'numpy.ndarray' object has no attribute 'double'"; an extension check)
        for name in ("epistemic_n", "aleatoric_n", "embedding_n_d", "probs_n_C", "mean_n"):
            value = getattr(self, name)
            if isinstance(value, np.ndarray):
                setattr(self, name, torch.from_numpy(np.ascontiguousarray(value)))
        self.extras = {k: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
                       for k, v in self.extras.items()}

    def __len__(self) -> int:
        return int(self.epistemic_n.shape[0])


@dataclass
class AcquisitionContext:
    """What an acquisition may use besides the chunk's Prediction, fixed for one cycle.

    ``posterior``: the learner's Gaussian last layer (BALD, EPIG); ``targets``: the prepared
    target set of EPIG (a seeded sample of pool items standing for where predictions matter;
    alkit/acquisition/epig.py builds it); ``seed``: for acquisitions that sample.
    """

    posterior: GaussianLastLayer | None = None
    targets: object | None = None
    seed: int = 0


@dataclass
class Scores:
    """An acquisition's output for a chunk: one score per item (higher = more worth a label) and
    any per-item arrays a batch selector needs beyond the Prediction (e.g. ``noise_n_K``, the
    observation noise of the Gaussian surrogate the score was computed under)."""

    scores_n: torch.Tensor
    arrays: dict[str, torch.Tensor] = field(default_factory=dict)


class Acquisition(Protocol):
    """A function from a Prediction to one score per item, independent of the learner and of
    the selector.  ``needs`` names what it reads (Prediction fields, ``extras`` keys, or
    'posterior' / 'probs' / 'targets'), so a learner that cannot feed it is refused by name.
    An acquisition whose scores are not >= 0 says so with ``signed = True`` (margin)."""

    name: str
    needs: tuple[str, ...]

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        ...


@dataclass
class Candidates:
    """The items a Strategy may choose from, with what the cycle learned about them.

    ``keys_n`` are the store's integer item keys.  Every other array is aligned with them;
    arrays a strategy did not ask for are None.
    """

    keys_n: np.ndarray
    scores_n: np.ndarray | None = None
    embedding_n_d: np.ndarray | None = None
    probs_n_C: np.ndarray | None = None
    strata_n: np.ndarray | None = None  # metadata strata (e.g. --stratify-by), int codes
    extras: dict[str, np.ndarray] = field(default_factory=dict)
    targets: object | None = None  # the cycle's EPIG target set, for selectors that condition on picks
    # the lowest and highest score over every item scored, where the candidates are the top m of more (a score
    # tied across the candidates may still vary over the pool: no constant score then)
    score_range: tuple[float, float] | None = None

    def __len__(self) -> int:
        return int(self.keys_n.shape[0])


@dataclass
class SelectionContext:
    """Everything else a strategy may use, passed explicitly (no hidden state)."""

    seed: int
    posterior: GaussianLastLayer | None = None
    labeled_embedding_n_d: np.ndarray | None = None  # for k-center
    n_pool: int = 0  # unlabeled pool size the candidates were drawn from


@dataclass
class Selection:
    """The chosen batch: item keys in pick order, the score of each, and the utility (gain)
    of each pick at the moment it was made (for audit; stored in the selections table)."""

    keys: np.ndarray
    scores: np.ndarray
    utilities: np.ndarray

    def __post_init__(self) -> None:
        if not (len(self.keys) == len(self.scores) == len(self.utilities)):
            raise ValueError("keys, scores and utilities must have the same length")
        if len(np.unique(self.keys)) != len(self.keys):
            raise ValueError("a selection must not contain an item twice")


class Strategy(Protocol):
    """Stateless batch selection.  ``candidate_source`` tells the cycle what to hand it:
    'all'   - every unlabeled key (no model needed: random),
    'topm'  - the m best-scoring items with their arrays (topk, diverse; m = 20 x batch),
    'pool'  - every unlabeled item with its arrays, streamed (kcenter, badge; above 50,000 items
              the 50,000 best-scoring, or --candidates),
    'sample'- a seeded uniform sample of m items with their arrays (coldstart)."""

    name: str
    candidate_source: Literal["all", "topm", "pool", "sample"]
    needs_model: bool

    def select(self, candidates: Candidates, batch_size: int, ctx: SelectionContext) -> Selection:
        ...


class Learner(Protocol):
    """Fits on the labeled set and predicts chunks of the pool.  Deterministic for a seed."""

    task: Task

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        """Train from scratch; return a small report (epochs, final loss, ...)."""
        ...

    def predict(self, X_n_f: np.ndarray) -> Prediction:
        ...

    def posterior(self) -> GaussianLastLayer | None:
        """The Gaussian last-layer posterior where the learner has one, else None."""
        ...
