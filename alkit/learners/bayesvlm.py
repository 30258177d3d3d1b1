"""bayesvlm: BayesVLM on a local CLIP / SigLIP (or alkit) dual encoder, as `alkit run --scorer bayesvlm` runs it.

The learner of alkit/learners/dual_encoder.py (KFAC Laplace on the projections, ProbCosine, the
probit predictive; uq-math §5) built from what a project has: the model directory
(alkit/models/dual_encoder_dir.py), the project's class names put into a prompt template, and
the pool.  Where the seed paper estimates the projections' curvature on pretraining pairs, a
project has none; the GGN of the class-prompt cross-entropy needs no labels (dual_encoder.py),
so the pool's images stand in for the pretraining images:

- image projection: KFAC of the InfoNCE over the C class prompts on a seeded pool sample (the
  loop's ``InputSpec.pool_sample_n_f``, up to 4,096 items), evidence-tuned prior;
- text projection: KFAC of each class prompt against batches of 256 of those pool images'
  embeddings (text -> image InfoNCE), evidence-tuned prior.

With these the model predicts before any label (zero-shot), so the loop uses it from the first
cycle.  Each fit fine-tunes the image projection on the labels (cross-entropy over the prompts,
a Gaussian anchor of precision ``finetune_prior_precision`` at the model's projection) and
refits its posterior from pool + labeled curvature.

``finetune_prior_precision`` defaults to 1.0: the evidence-tuned zero-shot prior (~140 on the
aligned Fashion-MNIST encoder of examples/dual_encoder_fashion) held the projection so tightly
that 100 labels barely moved it (0.591 accuracy after 100 random labels against 0.670 at 1.0);
``none`` restores the evidence-tuned anchor.
"""

from __future__ import annotations

import hashlib
from typing import Any, Literal

import numpy as np
import torch

from alkit.learners.dual_encoder import (
    BayesVLM, DualEncoderLearner, KronFactors, KronPosterior, PreProjection, fit_kron_posterior, infonce_kfac,
    split_inputs,
)
from alkit.models.dual_encoder_dir import DualEncoderDir, open_model_dir
from alkit.types import GaussianLastLayer, Prediction

TEXT_BATCH = 256  # pool images per text-side InfoNCE batch
_CACHE: dict[tuple[int, tuple[str, ...], str], tuple[PreProjection, KronFactors, KronPosterior]] = {}


def prompts_for(template: str, class_names: list[str]) -> list[str]:
    """``"a photo of a {}"`` -> one prompt per class; a template without ``{}`` is refused."""
    if template.count("{}") != 1:
        raise ValueError(f"--class-prompts {template!r} must contain {{}} once, where the class name goes")
    return [template.replace("{}", name) for name in class_names]


def pool_curvature(model: DualEncoderDir, prompts: PreProjection, sample_n_f: np.ndarray | None
                   ) -> tuple[KronFactors, KronPosterior]:
    """The image projection's factors and the text projection's posterior from a pool sample
    (label-free GGNs; zero factors without a sample, i.e. the prior alone)."""
    P, Q, s = model.image_projection, model.text_projection, model.logit_scale
    D = P.weight_D_p.shape[0]
    if sample_n_f is None or len(sample_n_f) == 0:
        return KronFactors.zeros(P.theta_D_q.shape[1], D), fit_kron_posterior(
            KronFactors.zeros(Q.theta_D_q.shape[1], D), Q)
    x = split_inputs(sample_n_f, P)
    x = x.double()
    img = infonce_kfac(x, P, Q(prompts).double(), s)
    emb_n_D = P(x).detach()
    txt = KronFactors.zeros(Q.theta_D_q.shape[1], D)
    for i in range(0, len(emb_n_D), TEXT_BATCH):
        txt = txt + infonce_kfac(prompts, Q, emb_n_D[i:i + TEXT_BATCH], s)
    return img, fit_kron_posterior(txt, Q)


def _prepared(model: DualEncoderDir, prompts: tuple[str, ...], sample_n_f: np.ndarray | None
              ) -> tuple[PreProjection, KronFactors, KronPosterior]:
    """Prompt features and pool curvature, computed once per process for a model, prompts and
    sample (every cycle of a run sees the same pool sample)."""
    digest = "" if sample_n_f is None else hashlib.blake2b(np.ascontiguousarray(sample_n_f).tobytes(),
                                                            digest_size=16).hexdigest()
    key = (id(model), prompts, digest)
    if key not in _CACHE:
        text = model.text_inputs(list(prompts)).double()
        _CACHE.clear()  # one run at a time in a process: keep only the latest
        _CACHE[key] = (text, *pool_curvature(model, text, sample_n_f))
    return _CACHE[key]


class BayesVLMLearner:
    """Learner (alkit/types.py) over the model's pre-projection image features
    (alkit/vlm_features.py), predicting from zero labels on (``zero_shot``)."""

    zero_shot = True
    trains_network = False  # its fine-tuning has options of its own (finetune_steps, finetune_lr, ...)

    def __init__(
        self,
        task: str,
        n_classes: int | None,
        *,
        model_dir: str = "",
        class_prompts: str = "a photo of a {}",
        class_names: list[str] | None = None,
        score: Literal["var", "mi", "embed"] = "var",
        covariance: Literal["diag", "full"] = "diag",
        finetune_steps: int = 200,
        finetune_lr: float = 1e-2,
        finetune_prior_precision: float | None = 1.0,
        train: Any = None,
        input: Any = None,
    ) -> None:
        if task != "classification":
            raise ValueError("bayesvlm classifies among class prompts; this is a regression project")
        if not model_dir:
            raise ValueError("bayesvlm needs --model-dir DIR (a local CLIP or SigLIP model saved with "
                             "save_pretrained, or an alkit dual encoder)")
        names = list(class_names or [])
        if n_classes is not None and len(names) != n_classes:
            raise ValueError(f"bayesvlm needs the project's {n_classes} class names, got {len(names)}")
        prompts = prompts_for(class_prompts, names)
        m = open_model_dir(model_dir)
        sample = None if input is None else getattr(input, "pool_sample_n_f", None)
        text, img_factors, text_post = _prepared(m, tuple(prompts), sample)
        vlm = BayesVLM(m.image_projection, m.text_projection, None, text_post, m.logit_scale, m.logit_bias)
        self._learner = DualEncoderLearner(
            vlm, text, img_factors, score=score, covariance=covariance, finetune_steps=finetune_steps,
            finetune_lr=finetune_lr, finetune_prior_precision=finetune_prior_precision)

    def fit(self, X_n_f: np.ndarray, y_n: np.ndarray, *, seed: int) -> dict[str, float]:
        return self._learner.fit(X_n_f, y_n, seed=seed)

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        return self._learner.predict(X_n_f)

    def posterior(self) -> GaussianLastLayer | None:
        return self._learner.posterior()
