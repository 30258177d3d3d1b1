"""Deep ensemble: M independently initialised and trained MLPLearners (the BALD baseline).

Why: the strongest classical epistemic baseline (uq-math.md §0: OOD AUROC 0.948 with M=5) and
the reference every analytic scorer's learning curve is compared with.  Each member is an ordinary
MLPLearner with the same backbone configuration, trained by the one shared loop on its own seed
derived from the run seed, so members differ only in initialisation, validation split and data
order.  Cost: M fits and M forward passes per chunk (an image stem's frozen convolution once).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alkit.learners.bald import classification_prediction, member_seeds, regression_from_outputs
from alkit.models.backbone import BackboneConfig, ConvBackbone, InputSpec
from alkit.models.capacity import CapacityHint, Mode, checked_mode
from alkit.models.learner import MLPLearner, training_arrays
from alkit.models.train import TrainConfig, to_tensor
from alkit.types import GaussianLastLayer, Prediction, Task


class DeepEnsembleLearner:
    """M MLPLearner members; ``Prediction.epistemic_n`` is BALD (classification) or the variance
    of member means (regression); ``extras`` holds ``member_probs_n_M_C`` or
    ``member_means_n_M``/``member_vars_n_M``.  The embedding is member 0's features (members'
    feature spaces are not aligned, so averaging them would mean nothing)."""

    def __init__(
        self,
        task: Task,
        n_classes: int | None = None,
        *,
        M: int = 5,
        backbone: BackboneConfig | None = None,
        train: TrainConfig | None = None,
        input: InputSpec | None = None,
        capacity: Mode = "fixed",
        **backbone_options: Any,
    ) -> None:
        """``capacity``: the members' capacity mode (alkit/models/capacity.py); where it chooses, member 0
        chooses and the others take its choice, so the members differ only in their seeds."""
        if M < 2:
            raise ValueError(f"an ensemble needs M >= 2 members, got {M}")
        self.task = task
        self.n_classes = n_classes
        self.M = M
        self.capacity = checked_mode(capacity)
        self.capacity_hint: CapacityHint | None = None  # an earlier cycle's choice, handed on by the loop
        self.members = [
            MLPLearner(task, n_classes, backbone=BackboneConfig.of(backbone, **backbone_options), train=train, input=input,
                       capacity=self.capacity, residual_choice=False)  # outputs read raw (regression_from_outputs)
            for _ in range(M)
        ]
        self._fitted = False

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        X_n_f, y_n = training_arrays(X_n_f, y_n, self.task, self.n_classes, seed=seed,
                                     names=getattr(self, "feature_names", None))
        seeds = member_seeds(seed, self.M)
        self.members[0].capacity_hint = self.capacity_hint
        reports = [self.members[0].fit(X_n_f, y_n, seed=seeds[0])]
        shared = CapacityHint.from_report(reports[0])  # None where nothing was chosen
        for member, s in zip(self.members[1:], seeds[1:]):
            member.capacity_hint = shared
            reports.append(member.fit(X_n_f, y_n, seed=s))
        self._fitted = True
        # the mean over the members that report a key (member 0 alone reports the choice's CV scores)
        keys = dict.fromkeys(k for r in reports for k in r)
        out = {k: float(np.mean([r[k] for r in reports if k in r])) for k in keys}
        out["members"] = float(self.M)
        return out

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if not self._fitted:
            raise RuntimeError("fit the learner before predicting")
        x = to_tensor(X_n_f)
        outs, embedding, z_n_f = [], None, None
        for member in self.members:  # head outputs only: per-member Predictions would cost ~20 %
            if isinstance(member.backbone, ConvBackbone):
                # the frozen stem (convolution and standardisation) is built from the pool's InputSpec
                # alone, so it is the same function in every member: computed once, not M times
                z_n_f = member.backbone.fixed(x) if z_n_f is None else z_n_f
                phi = member.backbone.trainable(z_n_f)
            else:
                phi = member.backbone(x)
            embedding = phi if embedding is None else embedding
            outs.append(member.head(phi))
        if self.task == "classification":
            return classification_prediction(torch.stack(outs, 1).softmax(-1), embedding)
        # every member standardised the same targets, so member 0's scaler is everyone's
        return regression_from_outputs(torch.stack(outs), self.members[0].scaler, embedding)

    def posterior(self) -> GaussianLastLayer | None:
        return None
