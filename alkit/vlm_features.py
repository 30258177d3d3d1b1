"""The project's images under a dual encoder's image tower: the features the bayesvlm scorer reads.

Why a second feature file: BayesVLM puts its posterior on the model's own projection, so its
inputs are that model's pre-projection image features, not the features `alkit init` stored.
They are computed once per project and model (every item, pool and test split alike, from the
image-path column `init --image-col` recorded) and kept beside the project's own features as
``vlm-features/<kind>-<fingerprint>.parquet``, written under a temporary name and moved in, so
a killed encode leaves nothing half-written and a changed model directory gets its own file.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import polars as pl

from alkit.config import Project, payload_key
from alkit.embed import confine_paths
from alkit.models.dual_encoder_dir import DualEncoderDir, ModelDirError
from alkit.pools.features import write_features

FOLDER = "vlm-features"


def feature_path(project: Project, model: DualEncoderDir) -> Path:
    return project.root / FOLDER / f"{model.kind}-{model.fingerprint}.parquet"


def image_paths(project: Project) -> list[str]:
    """Every item's image file, in key order, resolved against the data file's folder."""
    col = project.config.image_col
    if not col:
        raise ModelDirError("--scorer bayesvlm reads images: this project has no image column (make it with "
                            "`alkit init DATA --image-col COL`)")
    key = payload_key(project.payload_path)
    payload = pl.read_parquet(project.payload_path, columns=list(dict.fromkeys([col, key, project.config.id_col]))).sort(key)
    base = Path(project.config.source).parent
    values, ids = payload[col].to_list(), payload[project.config.id_col].cast(pl.Utf8).to_list()
    paths = confine_paths(values, ids, base, allow_outside=True)  # init checked where they may lie
    missing = [(i, p) for i, p in zip(ids, paths) if not Path(p).is_file()]
    if missing:
        shown = ", ".join(f"{i!r} ({p})" for i, p in missing[:3])
        raise ModelDirError(f"{len(missing)} image files are missing, e.g. items {shown}; they are read from "
                            f"{col!r} relative to {base}")
    return paths


def ensure_features(project: Project, model: DualEncoderDir, *, progress: bool = True) -> Path:
    """The model's feature file for this project, encoded now if it is not there yet."""
    path = feature_path(project, model)
    if path.exists():
        return path
    paths = image_paths(project)
    from alkit.encoders import progress_bar

    with progress_bar(len(paths), f"encoding images with {model.path.name}", progress) as advance:
        X = model.image_features(paths, advance)
    if X.shape != (project.config.n_items, model.feature_dim) or not np.isfinite(X).all():
        raise ModelDirError(f"the model in {model.path} gave image features of shape {X.shape} "
                            f"(expected {(project.config.n_items, model.feature_dim)}, all finite)")
    path.parent.mkdir(exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    write_features(tmp, X.astype(np.float32))
    os.replace(tmp, path)
    return path
