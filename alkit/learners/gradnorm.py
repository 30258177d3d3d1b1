"""Gradient-norm uncertainty (Grünefeld, Frellsen, Hardmeier, arXiv 2603.29466): nothing to fit.

Why: by the delta method Var_theta[p_c(x)] ~ g^T Cov[theta] g with g = grad_theta p_c(x, theta*);
with an isotropic Cov the epistemic score is ||g||^2 (uq-math §7).  c is the predicted class, and
the gradient is that of the PROBABILITY p_c (not of log p_c or of a loss).  Aleatoric: p_c(1 - p_c).

Last layer z = W h + b, p = softmax(z) has the closed form (O(C + d) per item, no backward pass)

    ||grad_{W,b} p_c||^2 = p_c^2 [(1 - p_c)^2 + sum_{k != c} p_k^2] (||h||^2 + 1).

Any set of layers or the whole network: per-example gradients with torch.func
(vmap(grad(p_c)) over the items, ``per_example_gradnorm_sq``).
Measured (digits 0-4 vs 5-9, epistemic score alone, 3 seeds; benchmarks/results/posthoc_ood*.md):
last layer 0.889 ± 0.011, whole network 0.905 ± 0.021 (feature_map 'l2': 0.927 / 0.931), next
to a 5-member ensemble's MI 0.903 / 0.919; the whole network costs a vmap'd backward per item.
Regression: the gradient of the predicted mean (output ``mean_index`` of the last layer), whose
last-layer norm is ||h||^2 + 1; aleatoric is the model's predicted variance.

Library use on any module whose last nn.Linear gives the logits::

    gn = GradNormScorer.from_model(model, last_layer="head")       # or layers="all"
    epistemic_n, aleatoric_n = gn.score(X_pool)
"""

from __future__ import annotations

from typing import Literal, Sequence

import numpy as np
import torch
from torch import nn

from alkit.models.layers import eval_mode, find_last_linear, layer_io, restore_modes
from alkit.learners.posthoc import PostHocLearner
from alkit.types import Prediction

Target = Literal["classification", "regression"]
_CHUNK = 8192


def last_layer_gradnorm_sq(
    probs_n_C: torch.Tensor, h_n_d: torch.Tensor, cls_n: torch.Tensor | None = None, *, bias: bool = True
) -> torch.Tensor:
    """||grad_{W,b} p_c||^2 per item (n,), c = argmax p unless ``cls_n`` is given."""
    p = probs_n_C
    c = p.argmax(1) if cls_n is None else cls_n
    pc = p.gather(1, c[:, None]).squeeze(1)
    dz_sq = pc**2 * ((1 - pc) ** 2 + (p**2).sum(1) - pc**2)
    return dz_sq * ((h_n_d**2).sum(1) + (1.0 if bias else 0.0))


def regression_last_layer_gradnorm_sq(h_n_d: torch.Tensor, *, bias: bool = True) -> torch.Tensor:
    """||grad_{w_mean, b_mean} mu||^2 = ||h||^2 + 1 for the mean output of a linear layer."""
    return (h_n_d**2).sum(1) + (1.0 if bias else 0.0)


def _select(model: nn.Module, layers: str | Sequence[str]) -> dict[str, torch.Tensor]:
    """Parameters whose name is, or starts with '<prefix>.', one of ``layers`` ('all' = every one)."""
    named = dict(model.named_parameters())
    if layers == "all":
        return {k: v.detach() for k, v in named.items()}
    prefixes = [layers] if isinstance(layers, str) else list(layers)
    chosen = {k: v.detach() for k, v in named.items()
              if any(k == q or k.startswith(q + ".") for q in prefixes)}
    if not chosen:
        raise ValueError(f"no parameters match {prefixes}")
    return chosen


def per_example_gradnorm_sq(
    model: nn.Module,
    X: torch.Tensor | np.ndarray,
    *,
    layers: str | Sequence[str] = "all",
    task: Target = "classification",
    mean_index: int = 0,
    chunk: int = 512,
) -> torch.Tensor:
    """Squared norm of the per-example gradient of p_argmax (classification) or of the mean output
    (regression) with respect to the chosen parameters, by torch.func vmap(grad); (n,).

    The model must map a batch (b, f) to outputs (b, C) and be free of cross-item coupling
    (eval mode: dropout off, batch-norm statistics frozen)."""
    params = _select(model, layers)
    frozen = {k: v.detach() for k, v in model.named_parameters() if k not in params}
    buffers = {k: v.detach() for k, v in model.named_buffers()}
    dtype = next(iter(params.values())).dtype
    x = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X, dtype=dtype)

    def target(p: dict[str, torch.Tensor], x_f: torch.Tensor) -> torch.Tensor:
        out = torch.func.functional_call(model, ({**frozen, **p}, buffers), (x_f[None],))[0]
        if task == "classification":
            probs = out.softmax(-1)
            return probs.max()  # p of the predicted class (vmap-safe argmax)
        return out[mean_index]

    per_example = torch.func.vmap(torch.func.grad(target), in_dims=(None, 0))
    modes = eval_mode(model)
    parts = []
    try:
        for s in range(0, x.shape[0], chunk):
            g = per_example(params, x[s : s + chunk])
            parts.append(sum(v.reshape(v.shape[0], -1).pow(2).sum(1) for v in g.values()))
    finally:
        restore_modes(modes)
    return torch.cat(parts)


class GradNormScorer:
    """Gradient-norm scores for a trained module: closed form for its last layer, or torch.func
    per-example gradients of the chosen parameters (``layers='all'`` or name prefixes)."""

    def __init__(self, model: nn.Module, layer: nn.Linear, *, task: Target = "classification",
                 layers: str | Sequence[str] = "last", mean_index: int = 0) -> None:
        self.model, self.layer, self.task, self.layers, self.mean_index = model, layer, task, layers, mean_index

    @classmethod
    def from_model(cls, model: nn.Module, *, last_layer: str | nn.Module | None = None,
                   task: Target = "classification", layers: str | Sequence[str] = "last",
                   mean_index: int = 0) -> "GradNormScorer":
        _, layer = find_last_linear(model, last_layer)
        return cls(model, layer, task=task, layers=layers, mean_index=mean_index)

    def score_outputs(self, h_n_d: torch.Tensor, out_n_C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(epistemic, aleatoric) from the last layer's input and output (closed form only)."""
        bias = self.layer.bias is not None
        if self.task == "classification":
            probs = out_n_C.softmax(-1)
            pc = probs.max(1).values
            return last_layer_gradnorm_sq(probs, h_n_d, bias=bias), pc * (1 - pc)
        return regression_last_layer_gradnorm_sq(h_n_d, bias=bias), torch.zeros(h_n_d.shape[0])

    @torch.no_grad()
    def score(self, X: torch.Tensor | np.ndarray, *, chunk: int = _CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
        """(epistemic (n,), aleatoric (n,)); regression aleatoric is 0 here (the learner fills it)."""
        eps, alea = [], []
        x = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
        for s in range(0, x.shape[0], chunk):
            h, z = layer_io(self.model, self.layer, x[s : s + chunk], chunk=chunk)
            e, a = self.score_outputs(h, z)
            if self.layers != "last":
                with torch.enable_grad():
                    e = per_example_gradnorm_sq(self.model, x[s : s + chunk], layers=self.layers,
                                                task=self.task, mean_index=self.mean_index)
            eps.append(e)
            alea.append(a)
        return torch.cat(eps), torch.cat(alea)


class GradNormLearner(PostHocLearner):
    """MLPLearner whose epistemic score is the gradient norm of p_argmax (regression: of the mean).

    ``layers='last'`` uses the closed form on the head; 'all' or name prefixes of the
    ``nn.Sequential(backbone, head)`` wrapper ('0' = backbone, '1' = head) use torch.func."""

    def __init__(self, task: str, n_classes: int | None = None, *,
                 layers: str | Sequence[str] = "last", **mlp_options: object) -> None:
        super().__init__(task, n_classes, **mlp_options)
        self.layers = layers

    def fit_scorer(self, model: nn.Sequential, X_n_f: np.ndarray, seed: int) -> dict[str, float]:
        self.scorer = GradNormScorer.from_model(model, last_layer=self.base.head, task=self.task,  # type: ignore[arg-type]
                                                layers=self.layers)
        return {}

    def rescore(self, pred: Prediction, X_n_f: np.ndarray) -> Prediction:
        if self.layers == "last":
            epi, alea = self.scorer.score_outputs(pred.embedding_n_d, self.head_outputs(pred))
        else:
            epi, alea = self.scorer.score(X_n_f)
        if self.task == "regression":
            pred.epistemic_n = epi * self.base.scaler.scale**2  # gradient of the mean in target units
            return pred  # aleatoric: the predicted variance from the base learner
        pred.epistemic_n, pred.aleatoric_n = epi, alea
        return pred
