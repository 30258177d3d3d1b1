"""alkit: active learning with analytic, single-pass epistemic uncertainty."""

__version__ = "0.1.0"
