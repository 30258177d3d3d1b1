"""The one training loop shared by every learner: seeded AdamW with a schedule that depends on N.

Why one loop: learners differ only in their loss (cross-entropy, Gaussian NLL, a VBLL ELBO, an
ensemble's summed losses), so a comparison between scorers is never a comparison between
training procedures.

Why a schedule by N: active learning is decided at 20-300 labels, where a validation hold-out
costs a tenth of the labels and minibatch epochs cost time for nothing.  Below ``val_min_n``
labels no item is held out; up to ``full_batch_max`` labels the loop takes ``steps`` full-batch
steps (a fixed budget: the plain-MLP recipe's 100 full-batch Adam steps is the yardstick, DESIGN.md
"The learner at small N"); above, minibatch epochs on all but a 10 % hold-out.

Why a fixed budget at large N too (N >= ``val_min_n``): ``min_steps`` minibatch steps and at least
10 epochs, keeping the epoch with the best held-out loss, rather than training until the hold-out
stops improving.  Measured on development data (benchmarks/results/large_n_schedule_dev.md,
Fashion-MNIST test-file images, classes 5-9, CNN stem, VBLL): training on until the hold-out loss
stalls (``early_stop=True``, patience 5 or 10, up to 60 epochs) bought 0.01 accuracy at N = 1,000
and none at 3,000, while the test NLL rose at 3,000 (0.142 -> 0.176-0.178) and the OOD AUROC of the
epistemic score fell (N = 1,000: 0.898 -> 0.757-0.807; N = 3,000: 0.893 -> 0.729-0.858), at 1.4-3.4x
the fit time: the ELBO on the hold-out keeps improving while the features overfit what the
uncertainty needs.  The fixed budget grows with N through the 10-epoch floor (N = 10,000: ~1,400
steps).  ``early_stop`` stays an option for accuracy-only uses.

Why the learning rate decays over that budget on images and embeddings (``lr_decay`` 1: a half
cosine from lr to 0): at a constant rate the fit ends on a noisy minibatch iterate, 1-2 points of
accuracy short of the converged one.  Schedule rule L1 (benchmarks/results/label_efficiency_dev/recheck_rule.md): on 10,000
Fashion-MNIST test-file images, 1,000 random labels then batches of 100 to 3,000, 5 seeds, the decay
raised the `epistemic` preset's AULC by +0.027 (5 of 5 seeds) and random picks' by +0.027
(large_n_al_dev.md), at the same fit time.  On that development screen it lowered the OOD AUROC of the
VBLL score at 1,000-4,000 labels (large_n_schedule_dev.md: 0.04-0.07; any decay did, even to 0.3 lr),
so the rule read the learning curves: the converged model's picks kept their lead over random's.
Reported: +0.026 AULC on 10,000 Fashion-MNIST train-file images (large_n_al_report.md), and on the OOD
report splits the VBLL score rose (ood_report_L1.md).  ``-o train.lr_decay=0`` is the schedule before.
Rules L1b / L1c confined it to classification of images and encoder embeddings (LR_DECAY).

Why the budget is 1,000 steps on raw tabular features and regression (``min_steps``, MIN_STEPS; 300 on
images and embeddings): there the decay cost accuracy and CRPS, the sign of a fit left short rather
than a noisy one, and 1,000 constant-rate steps gained +0.006 accuracy and 4.9 % CRPS on fresh seeds
of nine development sets (schedule rule L2, large_n_steps_rule_dev.md).
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from alkit.models.backbone import InputSpec

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x_b_f, y_b) -> scalar


# The weight prior's precision by input kind.  Raw features: 10, chosen on the development sets
# (benchmarks/results/learner_parity_dev.md).  A pretrained encoder's embeddings: 30; the network on
# them has no residual block (BackboneConfig.depth_for), so the prior is on one 384 x 128 input
# layer, 3x the fan-in of a 128 x 128 block (the precision that keeps N(0, 1/prior) at the init
# scale grows with fan-in), and on the tweets development set it made the VBLL learner +0.012 /
# +0.007 / +0.005 / +0.005 / +0.002 more accurate at 20 / 50 / 100 / 200 / 300 labels, 20 seeds
# (benchmarks/results/learner_parity_embedding_prior_dev.md).  A fan-in rule for every input was
# tried too, in a scratch run not kept in benchmarks/, and lost on the tabular hpc set (-0.014 at
# 50 labels, 10 seeds).
PRIOR_L2: dict[str, float] = {"raw": 10.0, "embedding": 30.0}


# The learning rate's decay over the minibatch budget past 1,000 labels (``TrainConfig.lr_decay``), by
# task and input kind.  Schedule rule L1 (benchmarks/results/label_efficiency_dev/recheck_rule.md): a
# half cosine to 0 bought +0.027 AULC between 1,000 and 3,000 labels on Fashion-MNIST development
# images; rule L1b: on the regression development sets it cost 3.4 % CRPS (friedman +8 %), so
# regression keeps the constant rate; rule L1c: on raw tabular features it cost 0.005 accuracy
# (four development sets, fresh seeds) while images and encoder embeddings gained 0.021, so raw
# features keep the constant rate too (its minibatch noise regularises where the inputs are few
# and noisy).  benchmarks/results/large_n_schedule_other_dev(_fresh).md.
LR_DECAY: dict[str, float] = {"image": 1.0, "embedding": 1.0, "raw": 0.0, "regression": 0.0}

# The minibatch steps of a fit past 1,000 labels (``TrainConfig.min_steps``; at least 10 epochs), by task
# and input kind.  Schedule rule L2 (label_efficiency_dev/recheck_rule.md): where the rate stays
# constant, 300 steps left the fit short: 1,000 gained +0.006 accuracy on raw tabular classification
# and 4.9 % CRPS on regression (friedman 11 %), fresh seeds of nine development sets, at ~2-3x the fit
# time (benchmarks/results/large_n_steps_rule_dev.md); images and embeddings keep 300 with the decay.
MIN_STEPS: dict[str, int] = {"image": 300, "embedding": 300, "raw": 1000, "regression": 1000}


def _by_task(table: dict, task: str, kind: str):  # noqa: ANN202 - a value of LR_DECAY or MIN_STEPS
    return table["regression" if task == "regression" else kind]


def resolved_lr_decay(task: str, kind: str) -> float:
    """The decay an unset ``TrainConfig.lr_decay`` takes on a project of this task and input kind."""
    return _by_task(LR_DECAY, task, kind)


def resolved_min_steps(task: str, kind: str) -> int:
    """The steps an unset ``TrainConfig.min_steps`` takes on a project of this task and input kind."""
    return _by_task(MIN_STEPS, task, kind)


def input_kind(input: "InputSpec | None") -> str:
    """'image' (pixels or their stem features), 'embedding' (a pretrained encoder's vectors) or 'raw'."""
    if input is not None and input.embedding:
        return "embedding"
    return "image" if input is not None and input.image_shape is not None else "raw"


@dataclass
class TrainConfig:
    """Training budget and optimiser settings.

    Small N (``n <= full_batch_max``): ``steps`` full-batch steps at ``full_batch_lr``, no hold-out below
    ``val_min_n``.  Large N: minibatches of ``batch_size`` for ``min_steps`` steps and at least 10
    epochs (at most ``max_epochs``), the learning rate decaying to (1 - ``lr_decay``) x ``lr`` along a half
    cosine, keeping the epoch with the best loss on a ``val_frac`` hold-out;
    with ``early_stop`` up to ``max_epochs``, stopping after ``patience`` bad epochs past ``min_steps``.
    Both minimise the loss plus a Gaussian prior on the weight matrices, prior_l2 ||theta||^2 / (2N):
    the MAP of a network with prior N(0, 1/prior_l2), strong at 20 labels (where it keeps the fit
    as tame as a logistic regression's) and fading as labels come in; the prior is Adam's coupled
    weight decay (``prior_decoupled``: AdamW's decoupled decay instead, measured worse at small N).
    ``adam_eps`` 1e-3 instead of Adam's 1e-8: with the prior, weights whose data gradient is tiny
    were driven to zero by Adam's per-weight normalisation and a few fits in a hundred collapsed
    (a Fashion-MNIST fit on 40 labels: 0.32 test accuracy, 0.70 on its own labels, against 0.57-0.63
    for other seeds); 1e-3 removed it and lost nothing on the development sets.  The defaults
    (100 steps, lr 3e-3, prior 10 on raw features and 30 on embeddings (PRIOR_L2), eps 1e-3, and
    depth 1 in the learners on raw features) were chosen on the development sets of
    benchmarks/results/learner_parity_dev.md and learner_parity_embedding_prior_dev.md.
    """

    max_epochs: int = 200
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.0  # extra L2 on the weight matrices, added to prior_l2 / N
    val_frac: float = 0.1
    patience: int = 20
    min_steps: int | None = None  # None: by task and input kind, MIN_STEPS (``for_input``)
    grad_clip: float | None = 1.0
    steps: int = 100  # full-batch steps for small labeled sets
    full_batch_max: int = 1024
    val_min_n: int = 1000
    full_batch_lr: float = 3e-3
    full_batch_clip: float | None = None  # Adam steps are scale-free; clipping full batches buys nothing
    prior_decoupled: bool = False
    adam_eps: float = 1e-3  # damps Adam on weights whose data gradient is tiny next to the prior (1e-8: some fits collapse)
    # Gaussian prior N(0, 1/prior_l2) on the weight matrices (Adam's coupled decay prior_l2 / N);
    # None: by input kind, PRIOR_L2 (``for_input``)
    prior_l2: float | None = None
    early_stop: bool = False  # large N: up to max_epochs, stopping on the hold-out (measured worse for uncertainty)
    # large N: the share of ``lr`` a half cosine takes away over the budget (0: constant, 1: to 0);
    # None: by task and input kind, LR_DECAY (``for_input``)
    lr_decay: float | None = None

    def for_input(self, input: "InputSpec | None", task: str = "classification") -> "TrainConfig":
        """This config with what is unset resolved for the inputs and task: ``prior_l2`` by input
        kind (PRIOR_L2), ``lr_decay`` and ``min_steps`` by task and input kind (LR_DECAY, MIN_STEPS);
        no InputSpec: raw features."""
        kind = input_kind(input)
        prior = self.prior_l2 if self.prior_l2 is not None else PRIOR_L2["embedding" if kind == "embedding" else "raw"]
        decay = self.lr_decay if self.lr_decay is not None else resolved_lr_decay(task, kind)
        steps = self.min_steps if self.min_steps is not None else resolved_min_steps(task, kind)
        return dataclasses.replace(self, prior_l2=prior, lr_decay=decay, min_steps=steps)

    def __post_init__(self) -> None:
        for name in ("lr", "full_batch_lr", "weight_decay", "adam_eps", "prior_l2", "grad_clip", "full_batch_clip"):
            value = getattr(self, name)
            if value is not None and not math.isfinite(float(value)):  # nan or inf: a fit that fails mid-run
                raise ValueError(f"{name} must be a finite number, got {value}")
        if self.prior_l2 is not None and not self.prior_l2 >= 0:
            raise ValueError(f"prior_l2 must be >= 0, got {self.prior_l2}")
        if self.weight_decay < 0 or self.adam_eps <= 0:
            raise ValueError(f"weight_decay must be >= 0 and adam_eps > 0, got {self.weight_decay} and {self.adam_eps}")
        for name in ("grad_clip", "full_batch_clip"):
            if getattr(self, name) is not None and getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive (or unset), got {getattr(self, name)}")
        for name in ("max_epochs", "batch_size", "steps", "min_steps", "patience"):
            if getattr(self, name) is not None and int(getattr(self, name)) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("full_batch_max", "val_min_n"):  # label counts: -1 ran (full_batch_max=-1 made every fit a
            if int(getattr(self, name)) < 0:  # minibatch one, val_min_n=-5 held out labels at 10; an options check)
                raise ValueError(f"{name} must be at least 0 (a label count), got {getattr(self, name)}")
        if self.lr_decay is not None and not 0.0 <= self.lr_decay <= 1.0:
            raise ValueError(f"lr_decay must be in [0, 1] (the share of lr taken away by the end), got {self.lr_decay}")
        if not 0.0 <= self.val_frac < 1.0:
            raise ValueError(f"val_frac must be in [0, 1), got {self.val_frac}")
        if self.lr <= 0 or self.full_batch_lr <= 0:
            raise ValueError("learning rates must be positive")


def seed_everything(seed: int) -> torch.Generator:
    """Seed torch and return a generator for data order, so fits are reproducible (a NumPy integer seed, as
    SeedSequence draws them, as its int: torch's Generator refused it)."""
    torch.manual_seed(int(seed))
    return torch.Generator().manual_seed(int(seed))


def train_module(
    module: nn.Module,
    loss_fn: LossFn,
    X_n_f: torch.Tensor,
    y_n: torch.Tensor,
    *,
    seed: int,
    config: TrainConfig | None = None,
    no_decay: Callable[[str], bool] | None = None,
) -> dict[str, float]:
    """Minimise ``loss_fn`` over (X, y) with the schedule of ``config`` (see TrainConfig).

    With a hold-out (n >= ``val_min_n``) the weights with the best held-out loss are kept; without,
    the last.  Parameters whose name satisfies ``no_decay`` get no weight decay (variational heads).
    What a learner left unresolved (no ``for_input``) takes the values of raw classification features.
    """
    cfg = (config or TrainConfig()).for_input(None)
    gen = seed_everything(seed)
    n = X_n_f.shape[0]
    if n <= cfg.full_batch_max and n < cfg.val_min_n:
        return _train_full_batch(module, loss_fn, X_n_f, y_n, cfg, no_decay)
    perm = torch.randperm(n, generator=gen)
    n_val = max(1, int(round(cfg.val_frac * n))) if n >= cfg.val_min_n and cfg.val_frac > 0 else 0
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    X_tr, y_tr = X_n_f[tr_idx], y_n[tr_idx]
    X_val, y_val = X_n_f[val_idx], y_n[val_idx]

    opt = _optimizer(module, cfg.lr, _l2(cfg, len(tr_idx)), no_decay, cfg.prior_decoupled, cfg.adam_eps)
    step = AdamStep(opt)
    bs = max(1, min(cfg.batch_size, len(tr_idx)))
    steps_per_epoch = math.ceil(len(tr_idx) / bs)
    if cfg.early_stop and n_val:  # until the hold-out loss stops improving (at most max_epochs)
        epochs = cfg.max_epochs
    else:  # a fixed budget: min_steps steps, at least 10 epochs
        epochs = max(1, min(cfg.max_epochs, max(math.ceil(cfg.min_steps / steps_per_epoch), 1)))
        epochs = max(epochs, min(cfg.max_epochs, 10))
    best_val, best_state, best_epoch, bad = math.inf, None, 0, 0
    last_loss = math.nan
    epoch, t, total = 0, 0, epochs * steps_per_epoch
    for epoch in range(1, epochs + 1):
        module.train()
        order = torch.randperm(len(tr_idx), generator=gen)
        for start in range(0, len(order), bs):
            if cfg.lr_decay:
                for g in opt.param_groups:
                    g["lr"] = cfg.lr * (1.0 - cfg.lr_decay * 0.5 * (1.0 - math.cos(math.pi * t / total)))
                t += 1
            b = order[start : start + bs]
            loss = loss_fn(X_tr[b], y_tr[b])
            step.zero_grad()
            loss.backward()
            if cfg.grad_clip is not None:
                nn.utils.clip_grad_norm_(module.parameters(), cfg.grad_clip)
            step()
            last_loss = float(loss.detach())
        if n_val == 0:
            continue
        module.eval()
        with torch.no_grad():
            val = float(loss_fn(X_val, y_val))
        if val < best_val - 1e-6:
            best_val, best_epoch, bad = val, epoch, 0
            best_state = copy.deepcopy(module.state_dict())
        else:
            bad += 1
            if bad >= cfg.patience and epoch * steps_per_epoch >= cfg.min_steps:
                break
    if best_state is not None:
        module.load_state_dict(best_state)
    module.eval()
    return {
        "epochs": float(epoch),
        "best_epoch": float(best_epoch or epoch),
        "train_loss": last_loss,
        "val_loss": best_val if n_val else math.nan,
        "n_train": float(len(tr_idx)),
    }


def _optimizer(module: nn.Module, lr: float, l2: float, no_decay: Callable[[str], bool] | None,
               decoupled: bool = False, eps: float = 1e-8) -> torch.optim.Optimizer:
    """Adam whose (coupled) weight decay ``l2`` on the weight matrices is the gradient of the
    Gaussian prior l2/2 ||theta||^2: the MAP objective without an extra term in the graph.
    Biases and the ``no_decay`` parameters (variational heads, with priors of their own) get none."""
    prior, other = [], []
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        (prior if p.ndim > 1 and not (no_decay is not None and no_decay(name)) else other).append(p)
    groups = [{"params": prior, "weight_decay": l2}, {"params": other, "weight_decay": 0.0}]
    cls = torch.optim.AdamW if decoupled else torch.optim.Adam
    try:  # the fused kernel: ~20 % less time per step for small networks on the CPU
        return cls(groups, lr=lr, eps=eps, fused=True)
    except (RuntimeError, TypeError):
        return cls(groups, lr=lr, eps=eps)


class AdamStep:
    """``opt.step()`` and ``opt.zero_grad()`` of a torch Adam/AdamW, without their per-call wrappers.

    Why: a fit at 20-300 labels is 100 full-batch steps of a small network, and the optimizer's
    per-call machinery (profiler scopes, the grad-mode and compile guards, rebuilding the per-group
    lists from its state) cost about a tenth of a VBLL fit on digits.  After the first step has
    created the optimizer's state, each step calls torch's functional ``torch.optim.adam.adam``
    with the same tensors and hyper-parameters ``Adam.step`` passes it, so the updates are bit for
    bit those of ``opt.step()`` (tests/test_train_schedule.py).  Any step on which a parameter has
    no gradient, an optimizer whose groups this does not recognise, or a torch whose functional
    ``adam`` takes other arguments goes through ``opt.step()``.
    """

    _KEYS = ("betas", "lr", "weight_decay", "eps", "amsgrad", "maximize", "foreach", "capturable",
             "differentiable", "fused", "decoupled_weight_decay")

    def __init__(self, opt: torch.optim.Optimizer) -> None:
        self.opt = opt
        self.params = [p for g in opt.param_groups for p in g["params"]]
        self._plan: list[tuple[dict, list[torch.Tensor], list[torch.Tensor], list[torch.Tensor], list[torch.Tensor]]] | None = None
        self._lean = _functional_adam() is not None and isinstance(opt, torch.optim.Adam) and all(
            all(k in g for k in self._KEYS) and not g["amsgrad"] and not g["capturable"] and not g["differentiable"]
            for g in opt.param_groups) and not any(torch.is_complex(p) for p in self.params)

    def zero_grad(self) -> None:
        """``opt.zero_grad(set_to_none=True)``."""
        for p in self.params:
            p.grad = None

    def __call__(self) -> None:
        if self._plan is None or any(p.grad is None for p in self.params):
            self.opt.step()
            if self._lean and self._plan is None and all(p.grad is not None for p in self.params):
                self._plan = [(g, list(g["params"]), *([self.opt.state[p][k] for p in g["params"]]
                                                       for k in ("exp_avg", "exp_avg_sq", "step")))
                              for g in self.opt.param_groups]
            return
        adam = _functional_adam()
        with torch.no_grad():
            for g, ps, exp_avgs, exp_avg_sqs, steps in self._plan:
                beta1, beta2 = g["betas"]
                adam(ps, [p.grad for p in ps], exp_avgs, exp_avg_sqs, [], steps, foreach=g["foreach"],
                     capturable=False, differentiable=False, fused=g["fused"], grad_scale=None, found_inf=None,
                     has_complex=False, decoupled_weight_decay=g["decoupled_weight_decay"], amsgrad=False,
                     beta1=beta1, beta2=beta2, lr=g["lr"], weight_decay=g["weight_decay"], eps=g["eps"],
                     maximize=g["maximize"])


@functools.cache
def _functional_adam() -> Callable[..., None] | None:
    """torch's functional ``adam`` if it takes the arguments ``AdamStep`` passes (torch 2.x), else None."""
    try:
        from torch.optim.adam import adam
    except ImportError:
        return None
    wanted = {"foreach", "capturable", "differentiable", "fused", "grad_scale", "found_inf", "has_complex",
              "decoupled_weight_decay", "amsgrad", "beta1", "beta2", "lr", "weight_decay", "eps", "maximize"}
    return adam if wanted <= set(inspect.signature(adam).parameters) else None


def _l2(cfg: TrainConfig, n: int) -> float:
    """Per-item loss weight of the prior: prior_l2 / N (plus the optional extra ``weight_decay``);
    an unresolved prior (no ``for_input``) is that of raw features."""
    prior = PRIOR_L2["raw"] if cfg.prior_l2 is None else cfg.prior_l2
    return prior / max(n, 1) + cfg.weight_decay


# The full-batch fit keeps its last weights unless their objective is above the best seen by more than this
# share of the fall from the first step to the best: then the state of the best step.  Far above the
# plateau's wiggles (the last weights of a smooth fit are kept bit for bit), far below the spikes it is
# for (a tenth of the fall and more, benchmarks/results/adam_spike.md).
SPIKE_RISE: float | None = 0.01  # None: no guard, the fit as before it (benchmarks/adam_spike.py times both)
# The best state is looked for at every SNAPSHOT_EVERY-th step and at each of the last SNAPSHOT_LAST, where the
# spikes were: reading the objective and copying the state every step cost ~8 % of a fit on small networks.
SNAPSHOT_EVERY, SNAPSHOT_LAST = 4, 10


def _train_full_batch(module: nn.Module, loss_fn: LossFn, X_n_f: torch.Tensor, y_n: torch.Tensor,
                      cfg: TrainConfig, no_decay: Callable[[str], bool] | None) -> dict[str, float]:
    """``cfg.steps`` full-batch Adam steps, every label used for fitting; the last weights kept, unless the
    objective (``_objective``: the loss plus the weight prior) of the last weights is above the best seen
    (SPIKE_RISE): then the state (weights and buffers) of the best step.

    Why: full-batch Adam at a constant rate can spike near the end of its budget, as the second-moment
    estimates of some weights have shrunk; on 210 Fashion-MNIST image labels 3 fit seeds of 40 ended on a
    spike, at 0.53-0.67 test accuracy against 0.76 (benchmarks/results/adam_spike.md), and an active run
    picks its next batch with that model.  A loss with dropout in it is a sample, not the objective, so
    those fits (MC dropout) keep their last weights as before."""
    n = X_n_f.shape[0]
    l2 = _l2(cfg, n)
    opt = _optimizer(module, cfg.full_batch_lr, l2, no_decay, cfg.prior_decoupled, cfg.adam_eps)
    step = AdamStep(opt)
    params = step.params
    decayed = list(opt.param_groups[0]["params"]) if l2 > 0 else []  # the weights under the coupled prior
    watch = SPIKE_RISE is not None and cfg.steps > 1 and not any(
        isinstance(m, nn.Dropout) and m.p > 0 for m in module.modules())
    # the whole state, buffers too: a spectrally normalised block divides by the norm its power-iteration
    # buffers estimate, and the weights of one step beside the buffers of another left a broken network
    # (test accuracy 0.02 on 5 classes in a scratch check of the first version, which kept weights only)
    state = list(module.state_dict().values()) if watch else []  # the module's own tensors, detached
    best = [t.clone() for t in state]
    first = best_obj = math.inf
    best_step = cfg.steps
    module.train()
    loss = torch.tensor(math.nan)
    for t in range(cfg.steps):
        loss = loss_fn(X_n_f, y_n)
        if watch and (t % SNAPSHOT_EVERY == 0 or t >= cfg.steps - SNAPSHOT_LAST):
            obj = _objective(loss, decayed, l2)  # of the weights before this step's update
            first = obj if t == 0 else first
            if obj < best_obj:
                best_obj, best_step = obj, t
                _copy_all(best, state)
        # grads cleared + backward, not gradients assigned from torch.autograd.grad: the assigned
        # tensors keep whatever layout autograd produced (a transposed view for a weight used as W^T),
        # and the fused Adam kernel reads a gradient in its parameter's layout, so SVE's member heads
        # trained on scrambled gradients (digits test accuracy 0.28-0.39 against 0.88-0.90 at 100
        # labels) while every other learner's fit was bit for bit the same; backward's accumulation
        # matches the layout.
        step.zero_grad()
        loss.backward()
        if cfg.full_batch_clip is not None:
            nn.utils.clip_grad_norm_(params, cfg.full_batch_clip)
        step()
    report = {"epochs": float(cfg.steps), "best_epoch": float(cfg.steps), "train_loss": float(loss.detach()),
              "val_loss": math.nan, "n_train": float(n)}
    if watch and math.isfinite(best_obj):
        # the last update's objective too (a spike on the very last step), read without changing anything:
        # the buffers this forward moves (a power iteration, a batch norm's running statistics) are put back
        before = [v.clone() for v in state]
        with torch.no_grad():
            last = _objective(loss_fn(X_n_f, y_n), decayed, l2)
        spiked = not math.isfinite(last) or last - best_obj > SPIKE_RISE * max(first - best_obj, 0.0)
        with torch.no_grad():
            _copy_all(state, best if spiked else before)
        if spiked:
            report.update(best_epoch=float(best_step), spike_restored=1.0, spike_rise=last - best_obj)
    module.eval()
    return report


def _objective(loss: torch.Tensor, decayed: list[torch.Tensor], l2: float) -> float:
    """What the fit minimises: the loss plus the Gaussian prior l2/2 ||W||^2 that Adam's coupled decay is the
    gradient of.  The loss alone is not it: as the prior shrinks the weights late in a fit the loss creeps up
    while the objective still falls, and a check on the loss alone restored 158 of 400 development fits that
    had not spiked (46 of them to other test figures; benchmarks/results/adam_spike.md)."""
    with torch.no_grad():
        prior = 0.5 * l2 * float(torch.stack(torch._foreach_norm(decayed)).square().sum()) if decayed else 0.0
        return float(loss.detach()) + prior


def _copy_all(dst: list[torch.Tensor], src: list[torch.Tensor]) -> None:
    """dst[i] <- src[i] for every tensor, in one fused call where torch has it (a snapshot is taken at up to a
    third of a fit's steps, which take a fraction of a millisecond each on small networks)."""
    try:
        torch._foreach_copy_(dst, src)
    except (AttributeError, RuntimeError, TypeError):
        for d, s_ in zip(dst, src):
            d.copy_(s_)


def to_tensor(X: np.ndarray) -> torch.Tensor:
    """X (n, f) as float32, refused where it holds NaN or inf: a library user's predict on such rows returned NaN
    probabilities without a word, where fit and query refuse them (a black-box check)."""
    a = np.ascontiguousarray(X)
    if not a.flags.writeable:  # a pandas frame's read-only view: torch warned 'not writable' on a library predict
        a = a.copy()
    t = torch.as_tensor(a, dtype=torch.float32)
    bad = ~torch.isfinite(t)
    if bool(bad.any()):
        rows = bad.reshape(len(t), -1).any(1).nonzero().flatten().tolist()
        raise ValueError(f"the inputs X hold NaN or inf (rows {', '.join(map(str, rows[:5]))}"
                         f"{' ...' if len(rows) > 5 else ''}): fill or drop them first")
    return t
