"""The shape every post-hoc scorer shares: train the plain MLPLearner as usual, then fit an
uncertainty model on the trained (backbone, head) and the labeled inputs, and let it rewrite the
Prediction's epistemic score.  Laplace, CSD and gradient norms differ only in those two steps
(``fit_scorer`` and ``rescore``); the training, the refusal before fitting and the plumbing are here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from alkit.models.capacity import DelegatedCapacity
from alkit.types import GaussianLastLayer, Prediction


class PostHocLearner(DelegatedCapacity):
    """MLPLearner + an uncertainty model fitted after training (subclasses: ``fit_scorer``, ``rescore``)."""

    @staticmethod
    def forwards_options_to() -> type:
        """The class the ``**mlp_options`` go to, whose options `--opt` also offers (capacity, ridge,
        head_prior, the backbone's fields): they shape the network these scores are fitted on."""
        from alkit.models.learner import MLPLearner

        return MLPLearner

    def __init__(self, task: str, n_classes: int | None = None, **mlp_options: Any) -> None:
        from alkit.models.learner import MLPLearner

        self.base = MLPLearner(task, n_classes, **mlp_options)  # type: ignore[arg-type]
        self.task = task
        self.scorer: Any = None

    def capacity_network(self) -> Any:
        """The base network, whose capacity choice (alkit/models/capacity.py) is this learner's."""
        return self.base

    def fit_scorer(self, model: nn.Sequential, X_n_f: np.ndarray, seed: int) -> dict[str, float]:
        """Fit ``self.scorer`` on the trained ``Sequential(backbone, head)``; extra report entries."""
        raise NotImplementedError

    def rescore(self, pred: Prediction, X_n_f: np.ndarray) -> Prediction:
        """The base learner's Prediction with the post-hoc scores written in."""
        raise NotImplementedError

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        report = self.base.fit(X_n_f, y_n, seed=seed)
        model = nn.Sequential(self.base.backbone, self.base.head).eval()
        report.update(self.fit_scorer(model, X_n_f, seed))
        return report

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if self.scorer is None:
            raise RuntimeError("fit the learner before predicting")
        return self.rescore(self.base.predict(X_n_f), X_n_f)

    def head_outputs(self, pred: Prediction) -> torch.Tensor:
        """The head's outputs for a Prediction: the logits (classification) or the head applied to
        the embedding (regression: mean and log-variance in standardised units)."""
        if self.task == "classification":
            return pred.extras["logits_n_C"]
        return self.base.head(pred.embedding_n_d)

    def posterior(self) -> GaussianLastLayer | None:
        return None
