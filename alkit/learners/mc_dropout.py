"""MC dropout: one network trained with dropout, T stochastic passes at predict time.

Why the masks are fixed: the pool is scored chunk by chunk, and BatchBALD needs the T passes to be
the same T "posterior samples" for every item (consistent dropout, as in batchbald_redux).  So the
T masks are drawn once per fit from a generator seeded by the run seed, one mask per pass and
dropout layer shared by all items; an item's score then depends neither on the chunking nor on
global RNG state.  Dropout sits in the ResidualMLP blocks (after the ReLU), or on the features of a
network without blocks (regression, an encoder's embeddings, small images' stem; ``ResidualMLP.feature_dropout``); the masks are applied
with forward hooks on those layers while the network is in eval mode (in place: under no_grad the
eval-mode dropout passes on the ReLU's fresh output), so the backbone is used as is.
Cost: T passes of the trained layers per chunk (the frozen part, an image stem's convolution, once).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from alkit.learners.bald import classification_prediction, member_seeds, regression_from_outputs
from alkit.models.backbone import BackboneConfig, InputSpec
from alkit.models.capacity import DelegatedCapacity, Mode
from alkit.models.learner import MLPLearner, training_arrays
from alkit.models.train import TrainConfig, to_tensor
from alkit.types import GaussianLastLayer, Prediction, Task


class MCDropoutLearner(DelegatedCapacity):
    """MLPLearner with dropout ``p`` in every residual block (or on the features of a network without
    blocks: regression, an encoder's embeddings, small images' stem); ``T`` passes with fixed masks.

    ``masks_T_B_w`` (T passes, B blocks or 1, width or the feature width) holds the scaled Bernoulli masks
    (0 or 1/(1-p)).  The embedding is the mean of the T passes' features.
    """

    backbone_fixed = ("dropout",)  # the rate is ``p`` (-o p=0.2); -o dropout is not an option of this scorer

    def __init__(
        self,
        task: Task,
        n_classes: int | None = None,
        *,
        T: int = 20,
        p: float = 0.1,
        backbone: BackboneConfig | None = None,
        train: TrainConfig | None = None,
        input: InputSpec | None = None,
        capacity: Mode = "fixed",
        **backbone_options: Any,
    ) -> None:
        """``capacity``: the network's capacity mode (alkit/models/capacity.py): where it chooses, the
        plain-MLP cross-validation of the other learners picks the prior, and the dropout network
        trains under it."""
        if T < 2:
            raise ValueError(f"MC dropout needs T >= 2 passes, got {T}")
        if not 0.0 < p < 1.0:
            raise ValueError(f"dropout rate must be in (0, 1), got {p}" + (" (at 0 every mask is the same network: no epistemic score)" if p == 0 else ""))
        config = BackboneConfig.of(backbone, **backbone_options, dropout=p)
        # The plain MLP's network (BackboneConfig.depth_for): dropout in its residual block where it has
        # one (raw features, 28 x 28 images), on its features where it has none (regression, an
        # encoder's embeddings, the stem of images below 16 x 16).  With a block added there (the rule
        # before) MC dropout was the one learner below both comparators on the reviews at 200 / 300
        # labels (0.670 / 0.683 against the plain recipe's 0.678 / 0.690).  Without it: +0.008 accuracy
        # on the four embedding development sets, ahead on every one (learner rule 5,
        # benchmarks/results/label_efficiency_dev/mcd_embedding_rule.md), and +0.003 on the two
        # small-image ones (learner rule 7, mcd_small_image_rule.md).
        self.task = task
        self.T, self.p = T, p
        self.net = MLPLearner(task, n_classes, backbone=config, train=train, input=input, capacity=capacity,
                              residual_choice=False)  # its outputs are read raw (regression_from_outputs)
        self.masks_T_B_w: torch.Tensor | None = None

    def capacity_network(self) -> MLPLearner:
        """The dropout network, whose capacity choice (alkit/models/capacity.py) is this learner's."""
        return self.net

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        X_n_f, y_n = training_arrays(X_n_f, y_n, self.task, getattr(self.net, "n_classes", None), seed=seed,
                                     names=getattr(self, "feature_names", None))
        report = self.net.fit(X_n_f, y_n, seed=seed)
        gen = torch.Generator().manual_seed(member_seeds(seed, 1)[0])
        backbone = self.net.backbone
        shape = ((self.T, len(backbone.blocks), self.net.backbone_config.width) if len(backbone.blocks)
                 else (self.T, 1, backbone.out_dim))
        keep = torch.full(shape, 1.0 - self.p)
        self.masks_T_B_w = torch.bernoulli(keep, generator=gen) / (1.0 - self.p)
        return report

    def _passes(self, x_n_f: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Head outputs (T, n, out) of the T masked passes and their mean features (n, d)."""
        backbone, head = self.net.backbone, self.net.head
        backbone.eval()
        t_now = [0]
        layers = [block.dropout for block in backbone.blocks] or [backbone.feature_dropout]
        hooks = [
            layer.register_forward_hook(lambda _m, _inp, out, b=b: out.mul_(self.masks_T_B_w[t_now[0], b]))
            for b, layer in enumerate(layers)
        ]
        outs, phi_sum = [], None
        z_n_f = backbone.fixed(x_n_f)  # the frozen part (an image stem's convolution) once, not T times
        try:
            for t in range(self.T):
                t_now[0] = t
                phi = backbone.trainable(z_n_f)
                phi_sum = phi if phi_sum is None else phi_sum.add_(phi)
                outs.append(head(phi))
        finally:
            for h in hooks:
                h.remove()
        return torch.stack(outs), phi_sum / self.T

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        if self.masks_T_B_w is None:
            raise RuntimeError("fit the learner before predicting")
        out_T_n_k, embedding = self._passes(to_tensor(X_n_f))
        if self.task == "classification":
            return classification_prediction(out_T_n_k.softmax(-1).transpose(0, 1), embedding)
        return regression_from_outputs(out_T_n_k, self.net.scaler, embedding)

    def posterior(self) -> GaussianLastLayer | None:
        return None
