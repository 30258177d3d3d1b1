"""Helpers on fitted torch modules that the last-layer scorers share (Laplace, CSD, gradient
norms, VBLL): find the last linear layer, read a layer's inputs and outputs, switch to eval and
back, pad a scoring map for the GEMM kernel."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

_CHUNK = 8192
GEMM_COLUMNS = 16  # scoring maps are padded to a multiple of this width (benchmarks/results/vbll_cost_parts.md)


def zero_pad_columns(M_r_k: torch.Tensor, multiple: int = GEMM_COLUMNS) -> torch.Tensor:
    """``M`` with zero columns appended up to a multiple of ``multiple``, contiguous.

    Why: an (n, r) x (r, k) product whose width k is a multiple of 16 runs the blocked GEMM kernel
    (at r = 128, 10 classes: 144 columns cost less than 138; VBLL's fused map went 1.50x -> 1.19x a
    forward, throughput_vbll_padded.md); zero columns add nothing to the sums of squares the scorers
    take of the product."""
    pad = -M_r_k.shape[1] % multiple
    return torch.cat([M_r_k, M_r_k.new_zeros(M_r_k.shape[0], pad)], 1).contiguous()


def find_last_linear(model: nn.Module, last_layer: str | nn.Module | None = None) -> tuple[str, nn.Linear]:
    """The layer to make Bayesian: by name, by object, or the last nn.Linear in module order."""
    named = dict(model.named_modules())
    if isinstance(last_layer, str):
        if last_layer not in named:
            raise ValueError(f"model has no submodule {last_layer!r}")
        layer = named[last_layer]
        name = last_layer
    elif isinstance(last_layer, nn.Module):
        name = next((k for k, m in named.items() if m is last_layer), "")
        layer = last_layer
    else:
        linears = [(k, m) for k, m in named.items() if isinstance(m, nn.Linear)]
        if not linears:
            raise ValueError("model has no nn.Linear layer")
        name, layer = linears[-1]
    if not isinstance(layer, nn.Linear):
        raise TypeError(f"last layer {name!r} must be an nn.Linear, got {type(layer).__name__}")
    return name, layer


def eval_mode(model: nn.Module) -> list[tuple[nn.Module, bool]]:
    """Put every submodule in eval mode; return their previous modes (a wrapper built around
    fitted modules is in train mode by default, so only per-module restoring is safe)."""
    modes = [(m, m.training) for m in model.modules()]
    model.eval()
    return modes


def restore_modes(modes: list[tuple[nn.Module, bool]]) -> None:
    for m, training in modes:
        m.training = training


@torch.no_grad()
def layer_io(
    model: nn.Module, layer: nn.Linear, X: torch.Tensor | np.ndarray, *, chunk: int = _CHUNK
) -> tuple[torch.Tensor, torch.Tensor]:
    """(a (n, d) layer inputs, z (n, C) layer outputs) from ordinary forward passes (layer dtype)."""
    x = torch.as_tensor(np.asarray(X) if not torch.is_tensor(X) else X, dtype=layer.weight.dtype)
    ins: list[torch.Tensor] = []
    outs: list[torch.Tensor] = []
    def record(m: nn.Module, i: tuple[torch.Tensor, ...], o: torch.Tensor) -> None:
        ins.append(i[0].detach())  # returns None: a hook's return value would replace the output
        outs.append(o.detach())

    hook = layer.register_forward_hook(record)
    modes = eval_mode(model)
    try:
        for s in range(0, x.shape[0], chunk):
            model(x[s : s + chunk])
    finally:
        hook.remove()
        restore_modes(modes)
    return torch.cat(ins).reshape(x.shape[0], -1), torch.cat(outs).reshape(x.shape[0], -1)
