"""Which items to label next: one stateless strategy per module, looked up by name.

``SELECTORS`` maps the CLI/config name to the strategy class; ``get_selector`` returns a ready
instance (strategies take no constructor arguments: every input is passed to ``select``).
"""

from __future__ import annotations

from alkit.strategies.badge import BadgeStrategy
from alkit.strategies.batchbald import BatchBALDStrategy
from alkit.strategies.coldstart import ColdStartStrategy
from alkit.strategies.diverse import DiverseStrategy, SampledDiverseStrategy
from alkit.strategies.kcenter import KCenterStrategy
from alkit.strategies.power import PowerStrategy, SqrtPowerStrategy
from alkit.strategies.random import RandomStrategy
from alkit.strategies.topk import TopKStrategy
from alkit.types import Strategy

SELECTORS: dict[str, type] = {
    "random": RandomStrategy,
    "topk": TopKStrategy,
    "diverse": DiverseStrategy,
    "power-diverse": SampledDiverseStrategy,
    "kcenter": KCenterStrategy,
    "badge": BadgeStrategy,
    "power": PowerStrategy,
    "power-sqrt": SqrtPowerStrategy,
    "coldstart": ColdStartStrategy,
    "batchbald": BatchBALDStrategy,
}


def get_selector(name: str) -> Strategy:
    """A strategy instance by name, with its default settings (a few take keyword settings of their own,
    e.g. ``DiverseStrategy(lazy=...)``: build those directly); an unknown name is a ValueError listing
    the known ones."""
    try:
        cls = SELECTORS[name]
    except KeyError:
        known = ", ".join(sorted(SELECTORS))
        from alkit.choices import peer_name_hint

        raise ValueError(f"unknown strategy {name!r}{peer_name_hint(name, SELECTORS)}; known strategies: {known}") from None
    return cls()


__all__ = [
    "SELECTORS",
    "BadgeStrategy",
    "BatchBALDStrategy",
    "ColdStartStrategy",
    "DiverseStrategy",
    "KCenterStrategy",
    "PowerStrategy",
    "SampledDiverseStrategy",
    "SqrtPowerStrategy",
    "RandomStrategy",
    "TopKStrategy",
    "get_selector",
]
