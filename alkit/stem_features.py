"""The pool under the image backbone's frozen stem, computed once per project.

Why: on an ``--image-shape`` project every learner alkit trains starts with the same frozen
PatchConv (filters from the pool, fixed per project; alkit/models/backbone.py), and computing it
over the whole pool was most of each cycle's scoring, recomputed every cycle of every run.  Its
outputs for every item (pool and test split) are written once as
``stem-features/<fingerprint>.npy`` beside the project's features (a float32 array, row = key,
memory-mapped when read: pages of dense floats that Parquet would only slow down), and the
loop hands learners that file with ``InputSpec.stem_precomputed`` set, so their stem passes the
rows through.  The fingerprint covers everything the outputs depend on (the filters, the pixel
statistics, the pooling, the source file's size), so a changed pool gets its own file.  The file
is written under a temporary name and moved in: a killed run leaves nothing half-written.
A folder that cannot be written, or a file that would take more than half the free disk, is a note,
and the run computes the stem in the model as before.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import shutil
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np

from alkit.errors import Note
from alkit.models.backbone import InputSpec, PatchConv
from alkit.pools.features import ArrayFeatureReader, FeatureFileError, FeatureReader

FOLDER = "stem-features"


def fingerprint(spec: InputSpec, source: FeatureReader) -> str:
    """A digest of what the stem's outputs depend on: the spec's filters, pixel and output
    statistics, image shape and pooling, and the source file's shape and size."""
    h = hashlib.blake2b(digest_size=8)
    for arr in (spec.patch_filters, spec.mean_f, spec.std_f, spec.conv_mean_f, spec.conv_std_f):
        h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    h.update(repr((spec.image_shape, spec.patch_pool, source.n_items, source.n_features,
                   Path(source.path).stat().st_size)).encode())
    return h.hexdigest()


def ensure_stem_features(root: Path, spec: InputSpec, source: FeatureReader,
                         advance: Callable[[int], None] | None = None) -> Path | None:
    """The stem feature file of ``source`` under ``spec``'s stem, written now if it is not there
    yet (a damaged one is written again; ``advance(rows)`` after each chunk written); None, with a
    note, when the folder cannot be written."""
    path = Path(root) / FOLDER / f"{fingerprint(spec, source)}.npy"
    stem = PatchConv.of(spec)
    try:
        ArrayFeatureReader(path, n_items=source.n_items, n_features=stem.out_dim)
        return path
    except (FeatureFileError, OSError):
        pass  # absent or damaged: (re)write it
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(exist_ok=True)
        _remove_dead_writers_files(path)
        needed, free = 4 * source.n_items * stem.out_dim, shutil.disk_usage(path.parent).free
        if needed > free // 2:  # a cache must not fill the disk the store and the queues live on
            warnings.warn(Note(f"the image stem's outputs would take {needed / 1e9:.1f} GB of the {free / 1e9:.1f} GB "
                               f"free in {path.parent}; each cycle computes them again"), stacklevel=2)
            return None
        header = {"descr": np.lib.format.dtype_to_descr(np.dtype("<f4")), "fortran_order": False,
                  "shape": (source.n_items, stem.out_dim)}
        # written, not memory-mapped: a full disk is then an OSError, not a SIGBUS
        with open(tmp, "wb") as f:
            np.lib.format.write_array_header_1_0(f, header)
            expected = 0
            for keys, X in source.iter_chunks(None):
                if keys[0] != expected or keys[-1] != expected + len(keys) - 1:  # rows must be the keys
                    raise FeatureFileError(f"{Path(source.path).name} does not hold its items in key order")
                f.write(stem.outputs(X).astype("<f4", copy=False).tobytes())
                expected += len(keys)
                if advance is not None:
                    advance(len(keys))
        os.replace(tmp, path)
    except OSError as exc:
        warnings.warn(Note(f"the image stem's outputs could not be written to {path.parent} "
                           f"({exc.strerror or exc}); each cycle computes them again"), stacklevel=2)
        return None
    finally:
        try:
            tmp.unlink(missing_ok=True)  # a failed or interrupted write leaves no temporary file
        except OSError:
            pass  # none was made (the folder is missing or not a folder)
    return path


def _remove_dead_writers_files(path: Path) -> None:
    """Temporary files a killed writer left for ``path`` (named by its process id)."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            os.kill(int(tmp.name.rsplit(".", 2)[-2]), 0)
        except ProcessLookupError:
            tmp.unlink(missing_ok=True)
        except (ValueError, PermissionError):  # not one of ours, or a live process of another user
            pass


def stem_input(spec: InputSpec) -> InputSpec:
    """``spec`` for learners that read the stem feature file: the stem marked precomputed and
    the pool sample (CSD's contexts) under the stem too."""
    sample = spec.pool_sample_n_f
    if sample is not None:
        sample = PatchConv.of(spec).outputs(sample)
    return dataclasses.replace(spec, stem_precomputed=True, pool_sample_n_f=sample)
