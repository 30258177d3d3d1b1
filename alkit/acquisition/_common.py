"""Checks shared by the acquisitions: what a Prediction must carry for a score."""

from __future__ import annotations

import torch

from alkit.checks import distribution_problem
from alkit.errors import AcquisitionError  # noqa: F401 (re-exported: raised by every acquisition)
from alkit.types import AcquisitionContext, GaussianLastLayer, Prediction




def require_probs(pred: Prediction, acquisition: str) -> torch.Tensor:
    """Class probabilities (n, C), float64; a clear error for regression learners."""
    if pred.probs_n_C is None:
        raise AcquisitionError(f"the {acquisition} acquisition needs class probabilities (classification); "
                               "this learner predicts none")
    p = pred.probs_n_C.double()
    if p.ndim != 2 or p.shape[1] < 2:
        raise AcquisitionError(f"the {acquisition} acquisition needs probabilities of shape (n, C) with C >= 2 "
                               f"classes, got shape {tuple(p.shape)}")
    # a learner of the user's own may hand over logits or a broken row: ranked as they were, margins fell
    # below -1 and NaN rows were never picked (a black-box check)
    problem = distribution_problem(p)
    if problem is not None:
        raise AcquisitionError(f"the {acquisition} acquisition needs class probabilities: {problem}")
    return p


def require_posterior(ctx: AcquisitionContext, acquisition: str) -> GaussianLastLayer:
    if ctx.posterior is None:
        raise AcquisitionError(f"the {acquisition} acquisition needs a Gaussian last-layer posterior "
                               "(scorers vbll or laplace); this learner has none")
    return ctx.posterior
