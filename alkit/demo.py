"""The bundled demo: scikit-learn's digits (8 x 8 images) as a hidden-label project, random vs epistemic."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl
from sklearn.datasets import load_digits

from alkit.config import CONFIG_NAME, load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.pools.ingest import InitOptions, init_project
from alkit.presets import get_preset, like_with_like
from alkit.registry import SCORERS


def write_digits_csv(path: Path) -> Path:
    """digits as CSV: id, 64 pixel columns, label."""
    X, y = load_digits(return_X_y=True)
    df = pl.DataFrame({"id": [f"d{i:04d}" for i in range(len(y))]})
    df = df.hstack(pl.DataFrame(X.astype(np.float32), schema=[f"px{j}" for j in range(X.shape[1])]))
    df = df.with_columns(pl.Series("label", y.astype(np.int64)))
    df.write_csv(path)
    return path


def run_demo(project: Path, *, budget: int, batch_size: int, seeds: int, strategies: list[str],
             runner: Callable[..., Any] | None = None, console: Any = None) -> Path:
    """Create (or reuse) the demo project, run every strategy x seed, write the PNG."""
    from alkit.plots import plot_learning_curves
    from alkit.report import cycles_frame

    project = Path(project)
    if seeds < 1:
        raise ValueError(f"--seeds must be at least 1, got {seeds}")
    usable = [s for s in strategies if get_preset(s).default_scorer in SCORERS]  # an unknown name is refused here
    creating = not (project / CONFIG_NAME).exists()
    had = set(project.iterdir()) if project.is_dir() else None  # what is there already (None: no folder)
    if creating:
        project.mkdir(parents=True, exist_ok=True)
        data = write_digits_csv(project / "digits.csv")
        # the 64 columns are the pixels of 8 x 8 images: declared, so learners use the image backbone
        # (as `alkit init --image-shape 8,8`; benchmarks/results/protocol_digits8.md)
        init_project(data, project, InitOptions(id_col="id", label_col="label", task="classification",
                                                test_frac=0.3, seed=0, hide_labels=True, image_shape=(8, 8)))
    loop = ActiveLoop(load_project(project))
    reqs = [RunRequest(strategy=strategy, budget=budget, batch_size=batch_size, seed=seed, scorer=scorer or None)
            for entry in like_with_like(usable)  # random trains the strategies' model: curves differ by selection only
            for strategy, _, scorer in [entry.partition(":")] for seed in range(seeds)]
    try:
        for req in reqs:  # every request checked before any runs: a bad --budget leaves nothing behind
            loop.resolve(req)
    except Exception:
        loop.store.dispose()
        if creating:  # remove what this call created, and nothing else
            for path in [project] if had is None else set(project.iterdir()) - had:
                if path.is_dir():
                    shutil.rmtree(path)
                else:
                    path.unlink()
        raise
    skipped = sorted(set(strategies) - set(usable))
    if skipped and console is not None:
        console.print(f"[yellow]skipping[/] {', '.join(skipped)}: scorer not installed")
    for req in reqs:
        (runner or (lambda lp, rq: lp.run(rq)))(loop, req)
    png = project / "learning_curves.png"
    plot_learning_curves(cycles_frame(loop.store, loop.project.config), "accuracy", png, title="digits: accuracy vs labels")
    return png
