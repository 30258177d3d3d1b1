"""The shared training loop's schedule by N (alkit/models/train.py)."""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

import pytest

from alkit.models.train import AdamStep, TrainConfig, _optimizer, train_module


def _problem(n: int, seed: int = 0) -> tuple[nn.Module, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    X = torch.randn(n, 5, generator=g)
    y = (X[:, 0] + 0.5 * torch.randn(n, generator=g) > 0).long()  # label noise: the hold-out loss stalls
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(5, 32), nn.ReLU(), nn.Linear(32, 2)), X, y


def _loss(module: nn.Module):
    return lambda x, y: nn.functional.cross_entropy(module(x), y)


def test_small_n_spends_no_label_on_validation_and_takes_the_fixed_full_batch_steps() -> None:
    module, X, y = _problem(200)
    report = train_module(module, _loss(module), X, y, seed=0, config=TrainConfig(steps=37))
    assert report["n_train"] == 200 and report["epochs"] == 37


def test_large_n_fixed_budget_is_min_steps_and_ten_epochs_whatever_the_hold_out_says() -> None:
    module, X, y = _problem(2000)
    report = train_module(module, _loss(module), X, y, seed=0, config=TrainConfig(min_steps=300, batch_size=64))
    # 1,800 rows to train: 29 steps per epoch, ceil(300 / 29) = 11 epochs (>= 10), 200 held out
    assert report["n_train"] == 1800 and report["epochs"] == 11
    assert report["best_epoch"] <= 11


def test_early_stop_trains_until_the_hold_out_stalls_and_keeps_the_best_epoch() -> None:
    module, X, y = _problem(2000)
    cfg = TrainConfig(early_stop=True, patience=3, max_epochs=200, min_steps=1, batch_size=64, lr=1e-2)
    report = train_module(module, _loss(module), X, y, seed=0, config=cfg)
    assert report["epochs"] < 200  # stopped on the hold-out, not the cap
    assert report["epochs"] - report["best_epoch"] >= 3  # `patience` bad epochs after the best one
    module.eval()
    with torch.no_grad():  # the kept weights are the best epoch's: their hold-out loss is the recorded one
        perm = torch.randperm(2000, generator=torch.Generator().manual_seed(0))
        val = perm[:200]
        assert abs(float(_loss(module)(X[val], y[val])) - report["val_loss"]) < 1e-5


@pytest.mark.parametrize("decay", [0.0, 0.5, 1.0])
def test_lr_decay_takes_that_share_of_the_step_away_along_a_half_cosine(decay: float) -> None:
    """A loss of constant gradient: each Adam step moves the parameter by the learning rate of that
    step, so the recorded moves are the schedule itself."""
    p = nn.Parameter(torch.zeros(1))
    module = nn.Module()
    module.p = p
    seen: list[float] = []

    def loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        seen.append(float(p.detach()))
        return p.sum() + 0.0 * x.sum()

    X, y = torch.zeros(2000, 1), torch.zeros(2000)
    cfg = TrainConfig(lr=0.01, batch_size=100, min_steps=1, val_frac=0.0, grad_clip=None, lr_decay=decay)
    train_module(module, loss, X, y, seed=0, config=cfg)
    moves = -torch.diff(torch.tensor(seen + [float(p.detach())], dtype=torch.float64))
    assert len(moves) == 200  # 20 steps an epoch, 10 epochs
    assert moves[0] == pytest.approx(0.01, rel=1e-3)
    assert bool((torch.diff(moves) <= 1e-7).all())  # never rises (float32 steps)
    assert moves[100] == pytest.approx(0.01 * (1 - decay / 2), rel=2e-2)  # half way: half the decay
    assert moves[-1] == pytest.approx(0.01 * (1 - decay), abs=2e-5)


def test_lr_decay_and_min_steps_left_unset_are_chosen_by_task_and_input_kind() -> None:
    """Schedule rules L1 / L1b / L1c / L2: regression and raw features keep the constant rate and
    take 1,000 steps; an explicit value is kept."""
    from alkit.models.backbone import InputSpec
    from alkit.models.train import LR_DECAY

    image = InputSpec(mean_f=np.zeros(4), std_f=np.ones(4), image_shape=(1, 2, 2))
    embedding = InputSpec(mean_f=np.zeros(4), std_f=np.ones(4), embedding=True)
    assert TrainConfig().for_input(None, "regression").lr_decay == 0.0
    assert TrainConfig().for_input(image, "regression").lr_decay == 0.0
    assert TrainConfig().for_input(image, "classification").lr_decay == LR_DECAY["image"] == 1.0
    assert TrainConfig().for_input(embedding, "classification").lr_decay == LR_DECAY["embedding"] == 1.0
    assert TrainConfig().for_input(None, "classification").lr_decay == LR_DECAY["raw"]
    assert TrainConfig(lr_decay=0.3).for_input(image, "regression").lr_decay == 0.3
    # schedule rule L2: raw features and regression take 1,000 minibatch steps, images and embeddings 300
    assert TrainConfig().for_input(None, "classification").min_steps == 1000
    assert TrainConfig().for_input(image, "regression").min_steps == 1000
    assert TrainConfig().for_input(image, "classification").min_steps == 300
    assert TrainConfig().for_input(embedding, "classification").min_steps == 300
    assert TrainConfig(min_steps=50).for_input(None, "regression").min_steps == 50
    assert TrainConfig(prior_l2=5.0).for_input(embedding).prior_l2 == 5.0  # the prior as before


def test_lr_decay_outside_zero_to_one_is_refused() -> None:
    with pytest.raises(ValueError, match="lr_decay"):
        TrainConfig(lr_decay=1.5)


def test_the_weight_prior_is_chosen_by_input_kind_unless_set() -> None:
    from alkit.models.train import PRIOR_L2, _l2

    from alkit.models.backbone import InputSpec

    embedding, raw = InputSpec(embedding=True), InputSpec()
    assert TrainConfig().for_input(embedding).prior_l2 == PRIOR_L2["embedding"] == 30.0
    assert TrainConfig().for_input(raw).prior_l2 == TrainConfig().for_input(None).prior_l2 == PRIOR_L2["raw"] == 10.0
    assert TrainConfig(prior_l2=3.0).for_input(embedding).prior_l2 == 3.0  # an explicit value wins
    assert _l2(TrainConfig(), 20) == 10.0 / 20  # unresolved: the raw-feature prior
    try:
        TrainConfig(prior_l2=-1.0)
    except ValueError as e:
        assert "prior_l2" in str(e)
    else:
        raise AssertionError("a negative prior precision must be refused")


def test_an_embedding_learner_trains_under_the_embedding_prior() -> None:
    """The prior reaches the optimiser: on encoder embeddings the fitted input layer is smaller."""
    import numpy as np

    from alkit.models.backbone import pool_input_spec
    from alkit.models.learner import MLPLearner

    rng = np.random.default_rng(0)
    X = rng.standard_normal((40, 384)).astype(np.float32)
    y = (X[:, :3].sum(1) > 0).astype(int)
    norms = {}
    for embedding in (False, True):
        spec = pool_input_spec(X, embedding=embedding)
        learner = MLPLearner("classification", 2, input=spec, depth=0)
        learner.fit(X, y, seed=0)
        norms[embedding] = float(learner.backbone.stem.weight.detach().norm())
    assert norms[True] < norms[False], norms


def _steps(lean: bool, decoupled: bool, fused: bool, drop_grad_at: int | None) -> list[torch.Tensor]:
    """30 steps of a two-group (prior / no prior) Adam on a small network; the first layer's bias gets no
    gradient on step ``drop_grad_at`` (the fallback path)."""
    module, X, y = _problem(64, seed=3)
    opt = _optimizer(module, 3e-3, 0.1, None, decoupled, 1e-3)
    if not fused:
        for g in opt.param_groups:
            g["fused"] = None
    step = AdamStep(opt)
    loss_fn = _loss(module)
    for i in range(30):
        loss = loss_fn(X, y)
        if lean:
            step.zero_grad()
        else:
            opt.zero_grad(set_to_none=True)
        loss.backward()
        if i == drop_grad_at:
            module[0].bias.grad = None
        (step if lean else opt.step)()
    return [p.detach().clone() for p in module.parameters()]


@pytest.mark.parametrize("decoupled", [False, True])
@pytest.mark.parametrize("fused", [True, False])
@pytest.mark.parametrize("drop_grad_at", [None, 0, 7])
def test_the_lean_adam_step_updates_bit_for_bit_as_the_optimizer_does(decoupled: bool, fused: bool,
                                                                       drop_grad_at: int | None) -> None:
    reference = _steps(False, decoupled, fused, drop_grad_at)
    lean = _steps(True, decoupled, fused, drop_grad_at)
    assert all(torch.equal(a, b) for a, b in zip(reference, lean))
    # and the steps moved the weights (a stepper that did nothing would fail here)
    module, _, _ = _problem(64, seed=3)
    assert not torch.equal(lean[0], module[0].weight.detach())


def test_the_lean_adam_step_takes_its_fast_path_only_after_the_state_exists() -> None:
    module, X, y = _problem(16)
    opt = _optimizer(module, 3e-3, 0.1, None)
    step = AdamStep(opt)
    assert step._plan is None
    _loss(module)(X, y).backward()
    step()
    assert step._plan is not None and len(step._plan) == len(opt.param_groups)
    sgd = AdamStep(torch.optim.SGD(module.parameters(), lr=0.1))
    assert not sgd._lean  # any other optimizer always goes through its own step
