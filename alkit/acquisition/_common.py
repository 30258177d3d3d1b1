"""Checks shared by the acquisitions: what a Prediction must carry for a score."""

from __future__ import annotations

import torch

from alkit.types import AcquisitionContext, GaussianLastLayer, Prediction


class AcquisitionError(ValueError):
    """The learner's Prediction cannot feed this acquisition; the message names what is missing."""


def require_probs(pred: Prediction, acquisition: str) -> torch.Tensor:
    """Class probabilities (n, C), float64; a clear error for regression learners."""
    if pred.probs_n_C is None:
        raise AcquisitionError(f"the {acquisition} acquisition needs class probabilities (classification); "
                               "this learner predicts none")
    return pred.probs_n_C.double()


def require_posterior(ctx: AcquisitionContext, acquisition: str) -> GaussianLastLayer:
    if ctx.posterior is None:
        raise AcquisitionError(f"the {acquisition} acquisition needs a Gaussian last-layer posterior "
                               "(scorers vbll or laplace); this learner has none")
    return ctx.posterior
