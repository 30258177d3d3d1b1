"""The one training loop shared by every learner: seeded, minibatch AdamW, early stopping.

Why one loop: learners differ only in their loss (cross-entropy, Gaussian NLL, a VBLL ELBO, an
ensemble's summed losses), so a comparison between scorers is never a comparison between
training procedures.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import torch
from torch import nn

LossFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]  # (x_b_f, y_b) -> scalar


@dataclass
class TrainConfig:
    """Training budget and optimiser settings; the defaults suit pools of 10^2-10^4 labels."""

    max_epochs: int = 200
    batch_size: int = 64
    lr: float = 3e-3
    weight_decay: float = 1e-4
    val_frac: float = 0.1
    patience: int = 20
    min_steps: int = 300  # small labeled sets need more than a few epochs of steps
    grad_clip: float | None = 1.0


def seed_everything(seed: int) -> torch.Generator:
    """Seed torch and return a generator for data order, so fits are reproducible."""
    torch.manual_seed(seed)
    return torch.Generator().manual_seed(seed)


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
    """Minimise ``loss_fn`` over (X, y); keep the weights with the best held-out loss.

    A ``val_frac`` slice of the labeled set (at least 1 item, only when there are >= 10) drives
    early stopping; with fewer items the loop runs ``min_steps`` steps and keeps the last weights.
    Parameters whose name satisfies ``no_decay`` get no weight decay (variational heads).
    """
    cfg = config or TrainConfig()
    gen = seed_everything(seed)
    n = X_n_f.shape[0]
    perm = torch.randperm(n, generator=gen)
    n_val = int(round(cfg.val_frac * n)) if n >= 10 else 0
    val_idx, tr_idx = perm[:n_val], perm[n_val:]
    X_tr, y_tr = X_n_f[tr_idx], y_n[tr_idx]
    X_val, y_val = X_n_f[val_idx], y_n[val_idx]

    decay, plain = [], []
    for name, p in module.named_parameters():
        if not p.requires_grad:
            continue
        (plain if no_decay is not None and no_decay(name) else decay).append(p)
    opt = torch.optim.AdamW(
        [{"params": decay, "weight_decay": cfg.weight_decay}, {"params": plain, "weight_decay": 0.0}],
        lr=cfg.lr,
    )
    bs = max(1, min(cfg.batch_size, len(tr_idx)))
    steps_per_epoch = math.ceil(len(tr_idx) / bs)
    epochs = max(1, min(cfg.max_epochs, max(math.ceil(cfg.min_steps / steps_per_epoch), 1)))
    epochs = max(epochs, min(cfg.max_epochs, 10))
    best_val, best_state, best_epoch, bad = math.inf, None, 0, 0
    last_loss = math.nan
    epoch = 0
    for epoch in range(1, epochs + 1):
        module.train()
        order = torch.randperm(len(tr_idx), generator=gen)
        for start in range(0, len(order), bs):
            b = order[start : start + bs]
            loss = loss_fn(X_tr[b], y_tr[b])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            if cfg.grad_clip is not None:
                nn.utils.clip_grad_norm_(module.parameters(), cfg.grad_clip)
            opt.step()
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


def to_tensor(X: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(np.ascontiguousarray(X), dtype=torch.float32)
