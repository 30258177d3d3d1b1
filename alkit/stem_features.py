"""The pool under the image backbone's frozen stem, computed once per project.

Why: on an ``--image-shape`` project every learner alkit trains starts with the same frozen
PatchConv (filters from the pool, fixed per project; alkit/models/backbone.py), and computing it
over the whole pool was most of each cycle's scoring, recomputed every cycle of every run.  Its
outputs for every item (pool and test split) are written once as
``stem-features/<fingerprint>.npy`` beside the project's features (a float32 array, row = key,
memory-mapped when read: pages of dense floats that Parquet would only slow down), and the
loop hands learners that file with ``InputSpec.stem_precomputed`` set, so their stem passes the
rows through.  The fingerprint covers everything the outputs depend on (the filters, the pixel
statistics, the pooling, the source file's size and time), so a changed pool gets its own file,
and a file is used only if a seeded sample of its rows equals the stem recomputed on their pixels
(a file of the right shape holding zeros or NaN is written again).  One process writes it at a
time (``procs.file_lock``, as the embedding cache: the others wait, and a killed holder's lock is
released by the kernel), under a temporary name, synced and moved in: a killed or crashed run
leaves nothing half-written.  A
folder that cannot be written, or a file that would take more than half the free disk, is a note,
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
from alkit.pools.procs import file_lock, pid_alive

FOLDER = "stem-features"


def fingerprint(spec: InputSpec, source: FeatureReader) -> str:
    """A digest of what the stem's outputs depend on: the spec's filters, pixel and output
    statistics, image shape and pooling, and the source file's shape, size and time."""
    h = hashlib.blake2b(digest_size=8)
    for arr in (spec.patch_filters, spec.mean_f, spec.std_f, spec.conv_mean_f, spec.conv_std_f):
        h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
    st = Path(source.path).stat()
    h.update(repr((spec.image_shape, spec.patch_pool, source.n_items, source.n_features, st.st_size,
                   st.st_mtime_ns)).encode())
    return h.hexdigest()


def stem_path(root: Path, spec: InputSpec, source: FeatureReader) -> Path:
    """Where the stem feature file of ``source`` under ``spec``'s stem lives in project ``root``."""
    return Path(root) / FOLDER / f"{fingerprint(spec, source)}.npy"


CHECK_ROWS = 32  # rows of a stem file compared with the stem recomputed on their pixels before it is used


def ensure_stem_features(root: Path, spec: InputSpec, source: FeatureReader,
                         advance: Callable[[int], None] | None = None) -> Path | None:
    """The stem feature file of ``source`` under ``spec``'s stem, written now if it is not there
    yet, or is damaged (``advance(rows)`` after each chunk written); while another process writes
    it, this one waits for its file.  None, with a note, when the folder cannot be written, the disk
    is short, or what was written does not read back."""
    path = stem_path(root, spec, source)
    stem = PatchConv.of(spec)
    try:
        if not _usable(path, stem, source):
            if path.parent.exists() and not path.parent.is_dir():
                raise NotADirectoryError(f"{path.parent.name} is a file, not a folder")
            path.parent.mkdir(exist_ok=True)
            with file_lock(path.with_name(f".{path.name}.lock")):
                if not _usable(path, stem, source):  # another process may have written it while this one waited
                    _remove_dead_writers_files(path)
                    if not _write(path, stem, source, advance):
                        return None
                    if not _usable(path, stem, source):
                        warnings.warn(Note(f"the image stem's outputs in {path} do not read back as they were "
                                           "written; each cycle computes them again"), stacklevel=2)
                        return None
    except OSError as exc:
        warnings.warn(Note(f"the image stem's outputs could not be written to {path.parent} "
                           f"({exc.strerror or exc}); each cycle computes them again"), stacklevel=2)
        return None
    _remove_dead_writers_files(path)
    return path


def _usable(path: Path, stem: PatchConv, source: FeatureReader) -> bool:
    """Whether ``path`` holds the stem's outputs: its shape, and a seeded sample of rows equal to
    the stem recomputed on their pixels (one pass over the source)."""
    try:
        reader = ArrayFeatureReader(path, n_items=source.n_items, n_features=stem.out_dim)
    except (FeatureFileError, OSError):
        return False
    keys = np.sort(np.random.default_rng(0).choice(source.n_items, min(CHECK_ROWS, source.n_items), replace=False))
    want, got = stem.outputs(source.take(keys)), reader.take(keys)
    return bool(np.isfinite(got).all() and np.allclose(got, want, rtol=1e-4, atol=1e-4 * (1 + np.abs(want).max())))


def _write(path: Path, stem: PatchConv, source: FeatureReader, advance: Callable[[int], None] | None) -> bool:
    """Write the stem's outputs for every item of ``source`` to ``path`` (False, with a note, when
    the disk is short)."""
    needed, free = 4 * source.n_items * stem.out_dim, shutil.disk_usage(path.parent).free
    if needed > free // 2:  # a cache must not fill the disk the store and the queues live on
        warnings.warn(Note(f"the image stem's outputs would take {_size(needed)} of the {_size(free)} free in "
                           f"{path.parent}; each cycle computes them again"), stacklevel=3)
        return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
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
            if expected != source.n_items:
                raise FeatureFileError(f"{Path(source.path).name} gave {expected} of its {source.n_items} items")
            f.flush()
            os.fsync(f.fileno())  # the data is on disk before the name is
        os.replace(tmp, path)
    finally:
        try:
            tmp.unlink(missing_ok=True)  # a failed or interrupted write leaves no temporary file
        except OSError:
            pass
    return True


def _size(n_bytes: int) -> str:
    return f"{n_bytes / 1e9:.1f} GB" if n_bytes >= 1e9 else f"{n_bytes / 1e6:.0f} MB"


def _remove_dead_writers_files(path: Path) -> None:
    """Temporary files killed writers left for ``path`` (named by their process ids)."""
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            if not pid_alive(int(tmp.name.rsplit(".", 2)[-2])):
                tmp.unlink(missing_ok=True)
        except (ValueError, OSError):  # not one of ours, or not ours to remove
            pass


def stem_input(spec: InputSpec) -> InputSpec:
    """``spec`` for learners that read the stem feature file: the stem marked precomputed and
    the pool sample (CSD's contexts) under the stem too."""
    sample = spec.pool_sample_n_f
    if sample is not None:
        sample = PatchConv.of(spec).outputs(sample)
    return dataclasses.replace(spec, stem_precomputed=True, pool_sample_n_f=sample)
