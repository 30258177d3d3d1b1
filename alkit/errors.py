"""Error types the command line turns into one-line refusals, in a module with no imports so the
CLI can name them without loading SQLAlchemy or torch.  Every other refusal alkit raises is a
ValueError subclass (InputError, LoopError, ConfigError, FeatureFileError, QueueError, ...)."""

from __future__ import annotations


class StoreError(RuntimeError):
    """A store operation was refused; the message names the problem.  Nothing was written."""


class Note(UserWarning):
    """Something the user should know that does not stop the command (an unreadable cache that is
    rebuilt, a cache folder that cannot be written); the CLI prints it as one 'note:' line."""


def keep_labels_advice(flag: str = "") -> str:
    """How to start a damaged project over without losing people's labels (``flag``: the command's -p), for the
    messages about a missing or damaged project file: 're-create it with `alkit init`' led to a folder init
    refuses, or to one without the store's labels (hostile-filesystem checks)."""
    return (f"keep people's labels while starting over: `alkit queue labels{flag} -o labels.csv`, `alkit init` in a "
            "new folder, then `alkit queue import labels.csv --unqueued` there")


class MissingExtra(ImportError):
    """An optional package the command needs is not installed; the message names what installs it (an
    ImportError, so library code can catch it as one; the CLI prints it as one line, exit 2, where a
    traceback and exit 1 had hidden the same message)."""


class AcquisitionError(ValueError):
    """The learner's Prediction cannot feed this acquisition; the message names what is missing."""
