"""Backbones and the one shared training loop."""

from alkit.models.backbone import ResidualMLP
from alkit.models.train import TrainConfig, train_module

__all__ = ["ResidualMLP", "TrainConfig", "train_module"]
