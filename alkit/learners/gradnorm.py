"""Gradient-norm uncertainty (Grünefeld, Frellsen, Hardmeier, arXiv 2603.29466): no Hessian, no retraining.

Why: by the delta method Var_theta[p_c(x)] ~ g^T Cov[theta] g with g = grad_theta p_c(x, theta*);
with an isotropic Cov the epistemic score is ||g||^2 (uq-math §7).  c is the predicted class, and
the gradient is that of the PROBABILITY p_c (not of log p_c or of a loss).  Aleatoric: p_c(1 - p_c).

Last layer z = W h + b, p = softmax(z) has the closed form (O(C + d) per item, no backward pass)

    ||grad_{W,b} p_c||^2 = p_c^2 [(1 - p_c)^2 + sum_{k != c} p_k^2] (||h||^2 + 1).

The classification default changes two things and keeps the delta method.  (1) The covariance
(``weight_cov='blr'``): each row of the last layer gets the covariance a Bayesian linear regression
on the labelled items' layer inputs A = [h, 1] gives it (unit noise, unit prior precision),
Cov[W] = I_C (x) (A^T A + I)^-1, in place of the isotropic one: with Cov = I the score is a
confidence-weighted feature norm, and a feature direction the labels never spanned counts no more
than one they span densely.  (2) The gradient (``target='expected'``): the expected squared gradient
of log p_y over labels drawn from the prediction, E_{y~p} ||grad_W log p_y||^2, the trace of the
item's Fisher information (Settles et al.'s expected gradient length), which reads every class
where the gradient of p_argmax reads the top class's confidence alone:

    score = (1 - ||p||^2) a^T (A^T A + I)^-1 a,      a = [h, 1],

one (d x d) product per item and no Hessian.  Measured (OOD rules H and H2,
benchmarks/results/ood_gradnorm_blr.md, epistemic score alone, 3 seeds): report digits 0-4 vs 5-9
0.960, Fashion-MNIST 0-4 vs 5-9 0.892, far OOD 0.816 (the paper's form 0.911 / 0.823 / 0.740; a
5-member ensemble 0.919 / 0.904 / 0.844); 1.39x a plain forward on a 200,000-item pool (1.28x).

The whole network (``layers='all'``, isotropic) on alkit's own network: one batched forward and backward
per chunk (``ghost_pass``: per linear layer ||e||^2 (||a||^2 + 1) from its input a and output
gradient e, per residual block its ``param_grad_sq``), about 5x a forward on digits and 1.0-1.4x
on image models, where a per-item backward cost 123x.  Any other set of layers, or a network
this does not cover (a user's convolution), uses torch.func (vmap(grad(p_c)) over the items,
``per_example_gradnorm_sq``).  It missed its cost bar as a default (OOD rule G, 5.7x a forward on the
digits development models; benchmarks/results/ood_gradnorm_ghost.md).
Regression: the gradient of the predicted mean (output ``mean_index`` of the last layer), whose
last-layer norm is ||h||^2 + 1 (isotropic by default: the blr form is not measured there; with
``-o weight_cov=blr`` a^T (A^T A + I)^-1 a); aleatoric is the model's predicted variance.
``-o weight_cov=isotropic -o target=predicted`` is the paper's score.

Library use on any module whose last nn.Linear gives the logits::

    gn = GradNormScorer.from_model(model, last_layer="head", target="expected")  # or layers="all"
    gn.fit_weight_cov(X_train)                                      # optional: the 'blr' covariance
    epistemic_n, aleatoric_n = gn.score(X_pool)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Mapping, Sequence, get_args

import numpy as np
import torch
from torch import nn

from alkit.models.layers import eval_mode, find_last_linear, layer_io, restore_modes
from alkit.learners.posthoc import PostHocLearner
from alkit.types import Prediction

Target = Literal["classification", "regression"]
WeightCov = Literal["auto", "isotropic", "blr"]
OutputCov = Literal["auto", "isotropic", "fisher"]
FISHER_DAMPING = 0.01  # OOD rule H3's damping of the output Fisher (the best of 0.01 / 0.1 / 1 on development splits)
GradTarget = Literal["auto", "predicted", "expected"]
_CHUNK = 8192


@dataclass(frozen=True)
class FeatureMetric:
    """A metric M (d', d') on the last layer's inputs a = [h, 1], kept as the blocks a^T M a needs:
    h^T M_hh h + 2 m_b.h + m_bb (float32, contiguous; no concatenated copy of h per item)."""

    hh_d_d: torch.Tensor
    b2_d: torch.Tensor  # 2 m_b (zeros without a bias)
    bb: float

    @classmethod
    def of(cls, metric: torch.Tensor, *, bias: bool = True, dtype: torch.dtype = torch.float32) -> "FeatureMetric":
        d = metric.shape[0] - (1 if bias else 0)
        hh = metric[:d, :d].to(dtype).contiguous()
        if not bias:
            return cls(hh, torch.zeros(d, dtype=dtype), 0.0)
        return cls(hh, (2 * metric[:d, d]).to(dtype).contiguous(), float(metric[d, d]))


def feature_sq(h_n_d: torch.Tensor, *, bias: bool = True, metric: FeatureMetric | None = None) -> torch.Tensor:
    """a^T M a per item (n,) for the layer input a = [h, 1] (or h without a bias): M = I (the paper's
    isotropic weight covariance: ||h||^2 + 1), or a given ``metric`` (``blr_metric``), at one
    (d x d) product per item."""
    if metric is None:
        return (h_n_d**2).sum(1) + (1.0 if bias else 0.0)
    u = torch.addmm(metric.b2_d.to(h_n_d.dtype), h_n_d, metric.hh_d_d.to(h_n_d.dtype))
    return torch.einsum("nd,nd->n", u, h_n_d) + metric.bb


def input_gram(h_n_d: torch.Tensor, *, bias: bool = True) -> torch.Tensor:
    """A^T A for the layer inputs A = [h, 1] (h without a bias) of some items, (d', d'), float64:
    summed over chunks, the labelled set's Gram matrix without holding all of its features."""
    a = h_n_d.double()
    if bias:
        a = torch.cat([a, torch.ones(a.shape[0], 1, dtype=a.dtype)], 1)
    return a.T @ a


def blr_metric(gram_d_d: torch.Tensor, *, prior_precision: float = 1.0) -> torch.Tensor:
    """(A^T A + prior_precision I)^-1 from the labelled items' ``input_gram``, (d', d'), float64: the
    covariance of each row of the last layer's weights under a Bayesian linear regression on its
    inputs (unit noise), in place of the isotropic one.  Its eigenvalues lie in
    (0, 1 / prior_precision], so a^T M a needs no care in float32."""
    eye = torch.eye(gram_d_d.shape[0], dtype=torch.float64)
    return torch.cholesky_inverse(torch.linalg.cholesky(gram_d_d.double() + prior_precision * eye))


def last_layer_gradnorm_sq(
    probs_n_C: torch.Tensor, h_n_d: torch.Tensor, cls_n: torch.Tensor | None = None, *, bias: bool = True,
    metric: FeatureMetric | None = None,
) -> torch.Tensor:
    """||grad_{W,b} p_c||^2 per item (n,), c = argmax p unless ``cls_n`` is given; with a ``metric``
    M the squared norm g^T (I_C (x) M) g (every weight row's covariance M)."""
    p = probs_n_C
    c = p.argmax(1) if cls_n is None else cls_n
    pc = p.gather(1, c[:, None]).squeeze(1)
    dz_sq = pc**2 * ((1 - pc) ** 2 + (p**2).sum(1) - pc**2)
    return dz_sq * feature_sq(h_n_d, bias=bias, metric=metric)


def expected_gradnorm_sq(probs_n_C: torch.Tensor, h_n_d: torch.Tensor, *, bias: bool = True,
                         metric: FeatureMetric | None = None, out_cov_C_C: torch.Tensor | None = None) -> torch.Tensor:
    """E_{y ~ p} ||grad_{W,b} log p_y||^2 per item (n,) in the weight covariance S (x) M (S over the
    logits, M over the layer inputs): tr(F S) (a^T M a) with F = diag(p) - p p^T, the item's Fisher
    information about its logits (the gradient of log p_y with respect to the logits is e_y - p, and
    E_y (e_y - p)(e_y - p)^T = F).  S = I (``out_cov_C_C`` None) gives 1 - ||p||^2; an ``out_cov_C_C``
    S gives sum_c p_c S_cc - p^T S p."""
    p = probs_n_C
    if out_cov_C_C is None:
        out = 1 - (p**2).sum(1)
    else:
        S = out_cov_C_C.to(p.dtype)
        out = p @ S.diagonal().contiguous() - torch.einsum("nc,nc->n", p @ S, p)
    return out * feature_sq(h_n_d, bias=bias, metric=metric)


def output_fisher(probs_n_C: torch.Tensor) -> torch.Tensor:
    """sum_i (diag(p_i) - p_i p_i^T) over some items, (C, C), float64: summed over chunks and divided by
    their count, the labelled items' mean output Fisher (KFAC's output factor G)."""
    p = probs_n_C.double()
    return torch.diag(p.sum(0)) - p.T @ p


def output_cov(fisher_sum_C_C: torch.Tensor, n: int, *, damping: float = FISHER_DAMPING) -> torch.Tensor:
    """(G + damping I)^-1 for the mean output Fisher G = ``fisher_sum_C_C`` / n, (C, C), float64: a
    covariance over the logits that is wide along the class contrasts the labelled items leave
    unpinned (G is singular along the all-ones direction, which softmax ignores; the damping keeps
    it finite)."""
    G = fisher_sum_C_C.double() / max(n, 1)
    return torch.linalg.inv(G + damping * torch.eye(G.shape[0], dtype=torch.float64))


def regression_last_layer_gradnorm_sq(h_n_d: torch.Tensor, *, bias: bool = True,
                                      metric: FeatureMetric | None = None) -> torch.Tensor:
    """||grad_{w_mean, b_mean} mu||^2 = ||h||^2 + 1 for the mean output of a linear layer (with a
    ``metric`` M: a^T M a)."""
    return feature_sq(h_n_d, bias=bias, metric=metric)


def _select(model: nn.Module, layers: str | Sequence[str]) -> dict[str, torch.Tensor]:
    """Parameters whose name is, or starts with '<prefix>.', one of ``layers`` ('all' = every one)."""
    named = dict(model.named_parameters())
    if layers == "all":
        return {k: v.detach() for k, v in named.items()}
    prefixes = [layers] if isinstance(layers, str) else list(layers)
    # every prefix must name some: one that named none was dropped while another matched, and the message
    # named neither the option nor what there is (a black-box check)
    unmatched = [q for q in prefixes if not any(k == q or k.startswith(q + ".") for k in named)]
    if unmatched:
        there = sorted({k.rsplit(".", 1)[0] for k in named})
        raise ValueError(f"layers: no parameters under {unmatched[0]!r} in this network; its layers: {', '.join(there)}")
    return {k: v.detach() for k, v in named.items() if any(k == q or k.startswith(q + ".") for q in prefixes)}


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


def _ghost_units(model: nn.Module) -> list[nn.Module] | None:
    """The modules whose per-example parameter gradients one backward pass gives in closed form:
    nn.Linear layers and modules with a ``param_grad_sq(input, output, grad_out)`` method (the residual
    blocks, whose weight is spectrally normalised), covering every parameter of ``model`` once;
    None when some parameter lives elsewhere (a convolution of a user's backbone, say)."""
    units: list[nn.Module] = []
    covered: set[int] = set()
    seen: set[int] = set()

    def visit(m: nn.Module) -> bool:
        if id(m) in seen:  # a module reachable twice (an alias such as ConvBackbone.blocks) counts once
            return True
        seen.add(id(m))
        if hasattr(m, "param_grad_sq"):
            units.append(m)
            covered.update(id(p) for p in m.parameters())
            return True
        if isinstance(m, nn.Linear):
            units.append(m)
            covered.update(id(p) for p in m.parameters())
            return True
        if any(True for _ in m.parameters(recurse=False)):
            return False
        return all(visit(c) for c in m.children())

    if not visit(model) or covered != {id(p) for p in model.parameters()}:
        return None
    return units


def ghost_pass(model: nn.Module, X: torch.Tensor | np.ndarray, *, task: Target = "classification",
               mean_index: int = 0, capture: nn.Module | None = None, chunk: int = 2048
               ) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor | None] | None:
    """Squared norm of every item's gradient of p_argmax (classification) or of the mean output
    (regression) with respect to all of ``model``'s parameters, (n,), from one batched forward and
    backward pass per chunk, with the input and output of the layer ``capture`` (one of the model's
    linear layers, e.g. the head, so a caller needs no second forward); None where the model is not
    made of the layers this covers (``_ghost_units``) or a layer runs more than once per forward.

    Why: the whole-network score of the gradient-norm paper at a few forwards, where a per-item
    backward (torch.func, ``per_example_gradnorm_sq``) costs ~120x.  Each layer's per-item
    gradient follows from its input a and the gradient e at its output: for a linear layer
    ||e||^2 (||a||^2 + 1) (the "ghost norm"), for a residual block its ``param_grad_sq``.
    Exact when items do not interact (eval mode), which the models here satisfy."""
    units = _ghost_units(model)
    if units is None or (capture is not None and capture not in units):
        return None
    dtype = next(model.parameters()).dtype
    x = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X, dtype=dtype)
    records: dict[int, list[tuple[torch.Tensor, torch.Tensor]]] = {}

    def hook(m: nn.Module, inputs: tuple[torch.Tensor, ...], out: torch.Tensor) -> None:
        records.setdefault(id(m), []).append((inputs[0].detach(), out))  # out: differentiated against

    modes = eval_mode(model)
    handles = [u.register_forward_hook(hook) for u in units]
    scores, ins, outs = [], [], []
    try:
        with torch.enable_grad():
            for s in range(0, x.shape[0], chunk):
                records.clear()
                out = model(x[s : s + chunk])
                if any(len(records.get(id(u), ())) != 1 for u in units):
                    return None  # a layer skipped or run twice: the per-layer rule does not hold
                target = out.softmax(-1).max(1).values if task == "classification" else out[:, mean_index]
                grads = torch.autograd.grad(target.sum(), [records[id(u)][0][1] for u in units])
                total = torch.zeros(out.shape[0], dtype=dtype)
                for u, g in zip(units, grads):
                    a, o = records[id(u)][0][0], records[id(u)][0][1].detach()
                    if isinstance(u, nn.Linear):
                        if a.dim() != 2:
                            return None  # positions share the weight: the rank-one rule does not hold
                        bias = 1.0 if u.bias is not None else 0.0
                        total += torch.einsum("nc,nc->n", g, g) * (torch.einsum("nd,nd->n", a, a) + bias)
                    else:
                        total += u.param_grad_sq(a, o, g)
                scores.append(total)
                if capture is not None:
                    ins.append(records[id(capture)][0][0])
                    outs.append(records[id(capture)][0][1].detach())
    finally:
        for h in handles:
            h.remove()
        restore_modes(modes)
    if capture is None:
        return torch.cat(scores), None, None
    return torch.cat(scores), torch.cat(ins), torch.cat(outs)


def ghost_gradnorm_sq(model: nn.Module, X: torch.Tensor | np.ndarray, *, task: Target = "classification",
                      mean_index: int = 0, chunk: int = 2048) -> torch.Tensor | None:
    """The whole-network score of ``ghost_pass`` alone, (n,), or None where it does not apply."""
    got = ghost_pass(model, X, task=task, mean_index=mean_index, chunk=chunk)
    return None if got is None else got[0]


class GradNormScorer:
    """Gradient-norm scores for a trained module: closed form for its last layer, or torch.func
    per-example gradients of the chosen parameters (``layers='all'`` or name prefixes)."""

    def __init__(self, model: nn.Module, layer: nn.Linear, *, task: Target = "classification",
                 layers: str | Sequence[str] = "last", mean_index: int = 0, target: GradTarget = "predicted") -> None:
        self.model, self.layer, self.task, self.layers, self.mean_index = model, layer, task, layers, mean_index
        self.target = target  # classification: the gradient of p_argmax, or the expected one of log p_y
        self.metric: FeatureMetric | None = None  # set by ``fit_weight_cov``; None: isotropic
        self.out_cov: torch.Tensor | None = None  # (C, C) over the logits, set by ``fit_weight_cov``; None: I

    @torch.no_grad()
    def fit_weight_cov(self, X_train: torch.Tensor | np.ndarray, *, inputs: bool = True, outputs: bool = False,
                       prior_precision: float = 1.0, damping: float = FISHER_DAMPING) -> None:
        """Score the last layer's gradient in a weight covariance S (x) M fitted on the labelled items
        ``X_train`` in one streamed pass: M = (A^T A + prior_precision I)^-1 over the layer inputs
        (``inputs``: a Bayesian linear regression, ``blr_metric``; else I) and S = (G + damping I)^-1
        over the logits (``outputs``: the mean output Fisher, ``output_cov``, for the expected
        gradient; else I)."""
        if self.layers != "last":
            raise ValueError("a fitted weight covariance is for the last layer only (layers='last')")
        if outputs and self.task != "classification":
            raise ValueError("an output-side Fisher covariance is for classification")
        bias = self.layer.bias is not None
        gram = fisher = None
        n = 0
        for lo in range(0, len(X_train), _CHUNK):  # chunk by chunk: memory O(chunk d + d^2)
            h, z = layer_io(self.model, self.layer, X_train[lo : lo + _CHUNK])
            n += len(h)
            if inputs:
                gram = input_gram(h, bias=bias) if gram is None else gram + input_gram(h, bias=bias)
            if outputs:
                part = output_fisher(z.softmax(-1))
                fisher = part if fisher is None else fisher + part
        if n == 0:
            raise ValueError("the weight covariance needs at least one labelled item")
        self.metric = FeatureMetric.of(blr_metric(gram, prior_precision=prior_precision), bias=bias) if inputs else None
        self.out_cov = output_cov(fisher, n, damping=damping).float().contiguous() if outputs else None

    @classmethod
    def from_model(cls, model: nn.Module, *, last_layer: str | nn.Module | None = None,
                   task: Target = "classification", layers: str | Sequence[str] = "last",
                   mean_index: int = 0, target: GradTarget = "predicted") -> "GradNormScorer":
        _, layer = find_last_linear(model, last_layer)
        if layers not in ("last", "all"):  # names no layer: refused at the fit, not at the first score after it
            _select(model, layers)  # (the library's fit took it; a black-box check)
        return cls(model, layer, task=task, layers=layers, mean_index=mean_index, target=target)

    def score_outputs(self, h_n_d: torch.Tensor, out_n_C: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(epistemic, aleatoric) from the last layer's input and output (closed form only)."""
        bias = self.layer.bias is not None
        if self.task == "classification":
            probs = out_n_C.softmax(-1)
            pc = probs.max(1).values
            if self.target == "expected":
                return expected_gradnorm_sq(probs, h_n_d, bias=bias, metric=self.metric,
                                            out_cov_C_C=self.out_cov), pc * (1 - pc)
            return last_layer_gradnorm_sq(probs, h_n_d, bias=bias, metric=self.metric), pc * (1 - pc)
        return regression_last_layer_gradnorm_sq(h_n_d, bias=bias, metric=self.metric), torch.zeros(h_n_d.shape[0])

    def network_gradnorm_sq(self, X: torch.Tensor | np.ndarray) -> torch.Tensor:
        """The epistemic score of ``layers`` beyond the last layer, (n,): for 'all' one batched
        backward per chunk (``ghost_gradnorm_sq``), else (or where that does not cover the model)
        torch.func per-example gradients."""
        x = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
        fast = ghost_gradnorm_sq(self.model, x, task=self.task, mean_index=self.mean_index) \
            if self.layers == "all" else None
        if fast is not None:
            return fast
        with torch.enable_grad():
            return per_example_gradnorm_sq(self.model, x, layers=self.layers, task=self.task,
                                           mean_index=self.mean_index)

    @torch.no_grad()
    def score(self, X: torch.Tensor | np.ndarray, *, chunk: int = _CHUNK) -> tuple[torch.Tensor, torch.Tensor]:
        """(epistemic (n,), aleatoric (n,)); regression aleatoric is 0 here (the learner fills it)."""
        eps, alea = [], []
        x = X if torch.is_tensor(X) else torch.as_tensor(np.asarray(X), dtype=torch.float32)
        for s in range(0, x.shape[0], chunk):
            h, z = layer_io(self.model, self.layer, x[s : s + chunk], chunk=chunk)
            e, a = self.score_outputs(h, z)
            if self.layers != "last":
                e = self.network_gradnorm_sq(x[s : s + chunk])
            eps.append(e)
            alea.append(a)
        return torch.cat(eps), torch.cat(alea)


class GradNormLearner(PostHocLearner):
    """MLPLearner whose epistemic score is the gradient norm of p_argmax (regression: of the mean).

    ``layers='last'`` uses the closed form on the head; 'all' the one-pass whole-network norm
    (``ghost_pass``, torch.func where it does not apply); name prefixes of the
    ``nn.Sequential(backbone, head)`` wrapper ('0' = backbone, '1' = head) use torch.func.
    ``weight_cov='blr'`` (last layer only) measures the gradient in the covariance a Bayesian linear
    regression on the labelled items' features gives each weight row (``blr_metric``, prior precision
    1); 'isotropic' is the paper's form; 'auto' (the default) is blr for classification on the last
    layer, where OOD rule H measured it, and isotropic otherwise (regression, the whole network).
    ``target='expected'`` (classification, last layer) scores the expected squared gradient of
    log p_y over labels drawn from the prediction (``expected_gradnorm_sq``), 'predicted' the
    gradient of p_argmax (the paper's); 'auto' (the default) is expected where OOD rule H2 measured
    it (classification on the last layer) and predicted otherwise.  ``output_cov='fisher'`` (with the
    expected gradient) also measures it over the logits in (G + 0.01 I)^-1, G the labelled items' mean
    output Fisher (``output_cov``): +0.015 AUROC on the development splits and +0.024 far OOD, but its
    cost bar went unmet in a noisy measurement (OOD rule H3), so 'auto' is 'isotropic'."""

    SCORE_OPTIONS = ("layers", "weight_cov", "target", "output_cov")  # the epistemic score alone (see runs.py)
    TASK_DEFAULTS_SINCE = 8  # naming rules from which task_defaults name no run (runs.NAMING_VERSION)

    def __init__(self, task: str, n_classes: int | None = None, *,
                 layers: str | Sequence[str] = "last", weight_cov: WeightCov = "auto",
                 target: GradTarget = "auto", output_cov: OutputCov = "auto", **mlp_options: object) -> None:
        if weight_cov not in get_args(WeightCov):
            raise ValueError(f"weight_cov must be {', '.join(get_args(WeightCov))}, got {weight_cov!r}")
        if weight_cov == "blr" and layers != "last":
            raise ValueError("weight_cov=blr is for the last layer only: use layers=last")
        if target not in get_args(GradTarget):
            raise ValueError(f"target must be {', '.join(get_args(GradTarget))}, got {target!r}")
        if target == "expected" and (task != "classification" or layers != "last"):
            raise ValueError("target=expected is for classification on the last layer (layers=last)")
        if output_cov not in get_args(OutputCov):
            raise ValueError(f"output_cov must be {', '.join(get_args(OutputCov))}, got {output_cov!r}")
        if output_cov == "fisher" and (task != "classification" or layers != "last" or target == "predicted"):
            raise ValueError("output_cov=fisher is for the expected gradient (target=expected) of a classifier's last layer")
        super().__init__(task, n_classes, **mlp_options)
        measured = task == "classification" and layers == "last"  # where OOD rules H and H2 measured
        if weight_cov == "auto":
            weight_cov = "blr" if measured else "isotropic"
        if target == "auto":
            target = "expected" if measured else "predicted"
        if output_cov == "auto":
            output_cov = "isotropic"
        self.weight_cov, self.target, self.output_cov = weight_cov, target, output_cov
        prefixes = [layers] if isinstance(layers, str) else list(layers)
        if layers not in ("last", "all") and (not prefixes or any(str(q).split(".")[0] not in ("0", "1") for q in prefixes)):
            raise ValueError(f"layers must be 'last', 'all' or name prefixes of the (backbone, head) network, "
                             f"'0' or '0.<name>' for the backbone and '1' for the head, got {layers!r}")
        self.layers = layers

    @classmethod
    def check_for_project(cls, options: Mapping[str, Any], *, image: bool, user_module: bool,
                          shallow: bool = False, image_side: int | None = None,
                          module_names: Sequence[str] | None = None, prior_fixed: bool = False) -> None:
        """A ValueError for ``layers`` prefixes no network of this project's input has (alkit/runs.py asks before a
        run starts): one was refused after the run's first batch was spent (a black-box check).  Each prefix must
        name a parameter of the (backbone, head) network, or a dotted prefix of one: the backbone's trained
        parts are a --backbone network's ``0.net`` (``module_names``: its parameters' names, where built), an
        image backbone's ``0.mlp`` (its convolution is fixed) and flat features' ``0.stem`` and ``0.blocks``;
        the head is ``1``.  The residual blocks: none at ``depth=0``, nor by default where ``shallow``
        (regression, an encoder's embeddings) or on images of side under SMALL_IMAGE_SIDE (``image_side``)."""
        layers = options.get("layers", "last")
        if layers in ("last", "all"):
            return
        from alkit.models.backbone import SMALL_IMAGE_SIDE, ResidualMLP
        from alkit.models.capacity import candidates_for, effective_mode

        depth = options.get("depth")
        small = image_side is not None and image_side < SMALL_IMAGE_SIDE
        depths = {(0 if (shallow if not image else small) else 1) if depth is None else int(depth)}
        mode = options.get("capacity")
        if (depth is None and mode is not None and not (image or user_module or shallow or prior_fixed)
                and effective_mode(str(mode), None) != "fixed"):
            # the depths -o capacity may choose per fit (cv: no block or one; prior-linear: also the linear model,
            # LINEAR_DEPTH -1; nothing where the training prior is given): a name only some networks have failed at
            # the fit that chose another, after batches were spent (a black-box check)
            depths |= {c.depth for c in candidates_for(None, str(mode))}
        if user_module:
            names = list(module_names) if module_names is not None else None
        else:  # alkit's own network: the names of a ResidualMLP of each depth (none for -1, the linear model), those
            # every one of them has
            each = [[] if d == -1 else [n for n, _ in ResidualMLP(2, 2, max(d, 0)).named_parameters()]
                    for d in sorted(depths)]
            names = [("mlp." if image else "") + n for n in each[0] if all(n in other for other in each)]
        network = (["0." + n for n in names] if names is not None else []) + ["1.weight", "1.bias"]
        for q in ([layers] if isinstance(layers, str) else list(layers)):
            q = str(q)
            if user_module and names is None and q.startswith("0.net"):
                continue  # a --backbone network not built here: its names are checked when it is
            if not any(n == q or n.startswith(q + ".") for n in network):
                there = list(dict.fromkeys(n.rsplit(".", 1)[0] for n in network))
                shown = ", ".join(there[:12]) + (f", ... ({len(there) - 12} more)" if len(there) > 12 else "")
                every = " (in every network -o capacity may choose)" if len(depths) > 1 else ""
                raise ValueError(f"layers: {q!r} names no layer of this project's network{every}: its layers are "
                                 f"{shown} (0 is the backbone, 1 the head; a dotted prefix names every layer under it)")

    @classmethod
    def task_defaults(cls, task: str, options: Mapping[str, Any]) -> dict[str, Any]:
        """The values 'auto' takes on this task (and layers): `-o target=expected` on a classifier's last layer
        named a run of its own, identical to the default one (a black-box check; alkit/runs.py)."""
        measured = task == "classification" and options.get("layers", "last") == "last"
        return {"weight_cov": "blr" if measured else "isotropic", "target": "expected" if measured else "predicted",
                "output_cov": "isotropic"}

    def fit_scorer(self, model: nn.Sequential, X_n_f: np.ndarray, seed: int) -> dict[str, float]:
        self.scorer = GradNormScorer.from_model(model, last_layer=self.base.head, task=self.task,  # type: ignore[arg-type]
                                                layers=self.layers, target=self.target)
        if self.weight_cov == "blr" or self.output_cov == "fisher":
            self.scorer.fit_weight_cov(self.base.inputs(X_n_f), inputs=self.weight_cov == "blr",
                                       outputs=self.output_cov == "fisher")
        return {}

    @torch.no_grad()
    def predict(self, X_n_f: np.ndarray) -> Prediction:
        """With ``layers='all'`` on alkit's own network, one forward and one backward pass give the
        prediction and the score together (``ghost_pass``); otherwise the base prediction, rescored."""
        if self.scorer is not None and self.layers == "all":
            got = ghost_pass(self.scorer.model, self.base.inputs(X_n_f), task=self.task, capture=self.base.head)
            if got is not None:
                epi, phi, out = got
                pred = self.base.prediction_from(phi, out, X_n_f)
                return self._write(pred, epi, self.scorer.score_outputs(phi, out)[1])
        return super().predict(X_n_f)

    def rescore(self, pred: Prediction, X_n_f: np.ndarray) -> Prediction:
        epi, alea = self.scorer.score_outputs(pred.embedding_n_d, self.head_outputs(pred))
        if self.layers != "last":
            epi = self.scorer.network_gradnorm_sq(X_n_f)
        return self._write(pred, epi, alea)

    def _write(self, pred: Prediction, epi: torch.Tensor, alea: torch.Tensor) -> Prediction:
        if self.task == "regression":
            pred.epistemic_n = epi * self.base.scaler.scale**2  # gradient of the mean in target units
            return pred  # aleatoric: the predicted variance from the base learner
        pred.epistemic_n, pred.aleatoric_n = epi, alea
        return pred
