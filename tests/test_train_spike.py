"""The full-batch fit keeps its best weights when Adam spikes at the end (alkit/models/train.py, SPIKE_RISE).

A spike is simulated by kicking the weights inside the loss a few steps before the end: the loss then
reports the kicked weights' honest value, as it does after a real Adam spike.  The real case (Fashion-MNIST
images, 3 fit seeds of 40) is measured in benchmarks/adam_spike.py.
"""

from __future__ import annotations

import math

import pytest
import torch
from torch import nn

import alkit.models.train as train
from alkit.models.train import TrainConfig, train_module

STEPS = 60


class Tally(nn.Module):
    """A layer with a buffer every training forward moves (as a spectral norm's power iteration does)."""

    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("seen", torch.zeros(16))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.seen.mul_(0.9).add_(h.detach().mean(0))
        return h


def _problem(dropout: float = 0.0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    X = torch.randn(80, 4, generator=g)
    y = (X[:, 0] - X[:, 1] > 0).long()
    torch.manual_seed(0)
    layers: list[nn.Module] = [nn.Linear(4, 16), nn.ReLU(), Tally()]
    if dropout:
        layers.append(nn.Dropout(dropout))
    return nn.Sequential(*layers, nn.Linear(16, 2)), X, y


def _state(module: nn.Module) -> list[torch.Tensor]:
    return [t.clone() for t in module.state_dict().values()]


def _recording_loss(module: nn.Module, kick_at: int | None = None, nan_from: int | None = None, l2: float = 1 / 80):
    """The cross-entropy, recording (objective: the loss plus the prior l2/2 ||W||^2, state) of every call; at call ``kick_at`` the weights are
    pushed far away first (a spike), from call ``nan_from`` on the loss is NaN (a diverged fit)."""
    calls: list[tuple[float, list[torch.Tensor]]] = []

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if kick_at is not None and len(calls) == kick_at:
            with torch.no_grad():
                for p in module.parameters():
                    p.add_(3.0 * torch.sign(p) + 1.0)
        value = nn.functional.cross_entropy(module(x), y)
        if nan_from is not None and len(calls) >= nan_from:
            value = value * float("nan")
        prior = 0.5 * l2 * sum(float((p.detach() ** 2).sum()) for p in module.parameters() if p.ndim > 1)
        calls.append((float(value.detach()) + prior, _state(module)))  # after the forward: as the fit snapshots it
        return value

    return loss, calls


def _watched(steps: int = STEPS) -> list[int]:
    """The steps whose state the fit may keep (every SNAPSHOT_EVERY-th and the last SNAPSHOT_LAST)."""
    return [i for i in range(steps) if i % train.SNAPSHOT_EVERY == 0 or i >= steps - train.SNAPSHOT_LAST]


def _config() -> TrainConfig:
    return TrainConfig(steps=STEPS, full_batch_lr=1e-2, prior_l2=1.0)


def test_a_smooth_fit_keeps_its_last_weights_bit_for_bit() -> None:
    results = []
    for rise in (train.SPIKE_RISE, None):  # with the guard, and without it (the code before it)
        module, X, y = _problem()
        saved, train.SPIKE_RISE = train.SPIKE_RISE, rise
        try:
            report = train_module(module, lambda a, b: nn.functional.cross_entropy(module(a), b), X, y, seed=0,
                                  config=_config())
        finally:
            train.SPIKE_RISE = saved
        results.append((_state(module), report))
    (with_guard, report), (without, _) = results
    assert "spike_restored" not in report and report["best_epoch"] == STEPS  # the buffers too, untouched by the check
    assert all(torch.equal(a, b) for a, b in zip(with_guard, without))
    # the check's own forward moved the buffer and put it back: it holds what the last training forward left
    module, X, y = _problem()
    loss, calls = _recording_loss(module)
    train_module(module, loss, X, y, seed=0, config=_config())
    assert len(calls) == STEPS + 1 and torch.equal(module.state_dict()["2.seen"], calls[STEPS - 1][1][2])


def test_a_spike_at_the_end_restores_the_state_of_the_best_objective_seen() -> None:
    module, X, y = _problem()
    loss, calls = _recording_loss(module, kick_at=STEPS - 4)
    report = train_module(module, loss, X, y, seed=0, config=_config())
    best = min(_watched(), key=lambda i: calls[i][0])
    assert best < STEPS - 4 and calls[-1][0] > calls[best][0]  # the kick made the last objective worse
    assert report["spike_restored"] == 1.0 and report["best_epoch"] == best
    assert all(torch.equal(v, w) for v, w in zip(_state(module), calls[best][1]))  # weights and buffers
    assert report["spike_rise"] == pytest.approx(calls[-1][0] - calls[best][0], rel=1e-5)


def test_a_fit_whose_loss_turns_nan_keeps_the_best_finite_weights() -> None:
    module, X, y = _problem()
    loss, calls = _recording_loss(module, nan_from=STEPS - 3)
    report = train_module(module, loss, X, y, seed=0, config=_config())
    finite = [i for i in _watched() if math.isfinite(calls[i][0])]
    best = min(finite, key=lambda i: calls[i][0])
    assert report["spike_restored"] == 1.0
    assert all(torch.equal(v, w) for v, w in zip(_state(module), calls[best][1]))


def test_a_spike_on_the_last_update_alone_is_caught() -> None:
    """The loop's losses are those of the weights before each update; the last update's is read after it."""
    module, X, y = _problem()
    loss, calls = _recording_loss(module, kick_at=STEPS)  # the kick lands after the last update
    report = train_module(module, loss, X, y, seed=0, config=_config())
    assert len(calls) == STEPS + 1 and report["spike_restored"] == 1.0
    best = min(_watched(), key=lambda i: calls[i][0])
    assert all(torch.equal(v, w) for v, w in zip(_state(module), calls[best][1]))


def test_a_loss_with_dropout_in_it_keeps_its_last_weights() -> None:
    """A dropout loss is a sample of the objective: its minimum over steps is not the best weights."""
    results = []
    for rise in (train.SPIKE_RISE, None):
        module, X, y = _problem(dropout=0.5)
        loss, _ = _recording_loss(module, kick_at=STEPS - 4)
        saved, train.SPIKE_RISE = train.SPIKE_RISE, rise
        try:
            report = train_module(module, loss, X, y, seed=0, config=_config())
        finally:
            train.SPIKE_RISE = saved
        results.append((_state(module), report))
    (with_guard, report), (without, _) = results
    assert "spike_restored" not in report
    assert all(torch.equal(a, b) for a, b in zip(with_guard, without))
