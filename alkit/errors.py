"""Error types the command line turns into one-line refusals, in a module with no imports so the
CLI can name them without loading SQLAlchemy or torch.  Every other refusal alkit raises is a
ValueError subclass (InputError, LoopError, ConfigError, FeatureFileError, QueueError, ...)."""

from __future__ import annotations


class StoreError(RuntimeError):
    """A store operation was refused; the message names the problem.  Nothing was written."""


class Note(UserWarning):
    """Something the user should know that does not stop the command (an unreadable cache that is
    rebuilt, a cache folder that cannot be written); the CLI prints it as one 'note:' line."""


class MissingExtra(ImportError):
    """An optional package the command needs is not installed; the message names what installs it (an
    ImportError, so library code can catch it as one; the CLI prints it as one line, exit 2, where a
    traceback and exit 1 had hidden the same message)."""


class AcquisitionError(ValueError):
    """The learner's Prediction cannot feed this acquisition; the message names what is missing."""
