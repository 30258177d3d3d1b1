"""The engines' shared parts: the acquisition scorer, the learner pickler, the streaming Parquet
pass and the local top-m.  Imported by the local path (engines/__init__.py) and by ray_engine.py
alike, so the two stay bit-identical."""


from __future__ import annotations

import copy
import io
import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.nn.utils import parametrize

from alkit.choices import CAPABILITIES
from alkit.engines.streaming import TopM
from alkit.errors import AcquisitionError
from alkit.posterior import N_TARGETS, EPIGTargets
from alkit.pools.features import (  # noqa: F401 (the engines' reader)
    ArrayFeatureReader,
    FeatureReader,
    iter_masked_batches,
    open_features,
    open_reader,
)
from alkit.types import Acquisition, AcquisitionContext, Candidates, Learner, Prediction, Scores

TopMEngine = Callable[..., tuple[Candidates, int]]
ENGINES = ("local", "ray")


class EngineError(ValueError):
    """An engine cannot run (not installed, cannot connect); the message says what to do."""


class AcquisitionScorer:
    """One cycle's acquisition bound to its context: Prediction -> (scores (n,), carried arrays).

    Picklable (the acquisition is a plain object, the context holds tensors), so the Ray engine
    ships it to its workers with the learner."""

    def __init__(self, acquisition: Acquisition, ctx: AcquisitionContext | None) -> None:
        self.acquisition = acquisition
        self.ctx = ctx or AcquisitionContext()

    def _has(self, capability: str, pred: Prediction) -> bool:
        """Whether this cycle holds what a capability word of ``needs`` names."""
        return {"probs": pred.probs_n_C is not None, "posterior": self.ctx.posterior is not None,
                "members": "member_probs_n_M_C" in pred.extras, "epistemic_n": pred.epistemic_n is not None}[capability]

    def __call__(self, pred: Prediction) -> tuple[np.ndarray, dict[str, np.ndarray | None]]:
        name = getattr(self.acquisition, "name", type(self.acquisition).__name__)
        for need in getattr(self.acquisition, "needs", ()):
            options = [alt.strip() for alt in need.split("|")]
            # checked by name before a run (registry.check_acquisition), and here on what the learner handed
            # over: query() with a learner or an acquisition of one's own has no such check (an extension check)
            if any(self._has(o, pred) for o in options if o in CAPABILITIES):
                continue
            if all(o in CAPABILITIES for o in options):
                raise AcquisitionError(f"acquisition {name!r} needs {' or '.join(options)} ("
                                       f"{'; '.join(_CAPABILITY_WORDS[o] for o in options)}); this learner has none")
            if "targets" in options and self.ctx.targets is None:
                raise AcquisitionError(f"acquisition {name!r} needs targets: set uses_targets = True on it, and the "
                                       "cycle draws the target sample it reads (ctx.targets)")
            if "targets" not in options and not any(getattr(pred, o, None) is not None or o in pred.extras
                                                    for o in options):
                raise AcquisitionError(f"acquisition {name!r} needs {' or '.join(options)}; the learner's Prediction "
                                       f"has no such field and no such extras key (extras: "
                                       f"{', '.join(pred.extras) or 'none'})")
        out = self.acquisition.score(pred, self.ctx)
        if isinstance(out, (torch.Tensor, np.ndarray)):  # the score alone, without its Scores wrapper
            out = Scores(torch.as_tensor(out))
        if not isinstance(out, Scores):
            raise AcquisitionError(f"acquisition {name!r} returned {type(out).__name__}, not an alkit.types.Scores")
        scores_n = as_numpy(out.scores_n).astype(np.float64)
        bad = ~np.isfinite(scores_n)
        if bad.any():  # named here, where the acquisition is known (the streamed check names none)
            raise AcquisitionError(f"acquisition {name!r} gave {int(bad.sum())} undefined score"
                                   f"{'s' if bad.sum() > 1 else ''} (NaN or infinite), the first at row "
                                   f"{int(np.flatnonzero(bad)[0])} of {len(scores_n)} scored together: refusing to rank")
        arrays = prediction_arrays(pred)
        arrays.update({k: as_numpy(v) for k, v in out.arrays.items()})
        return scores_n, arrays


_CAPABILITY_WORDS = {"probs": "class probabilities, probs_n_C",
                     "posterior": "a Gaussian last-layer posterior, learner.posterior()",
                     "members": "ensemble members' probabilities, extras['member_probs_n_M_C']",
                     "epistemic_n": "an epistemic score"}


def acquisition_context(acquisition: Acquisition, learner: Learner, pool_n: np.ndarray,
                        take: Callable[[np.ndarray], np.ndarray], target_seed: Any, seed: int) -> AcquisitionContext:
    """A cycle's acquisition inputs (the loop's and ``alkit.query``'s): the learner's posterior, and
    for EPIG its target sample, ``N_TARGETS`` of the pool's keys ``pool_n`` drawn with ``target_seed``,
    read by ``take(keys)`` and predicted once.  An AcquisitionError says what the learner lacks."""
    posterior = learner.posterior()
    targets = None
    if getattr(acquisition, "uses_targets", False):
        rng = np.random.default_rng(target_seed)
        keys = np.sort(rng.choice(pool_n, size=min(N_TARGETS, len(pool_n)), replace=False))
        targets = EPIGTargets.from_prediction(learner.predict(take(keys)), posterior,
                                              getattr(acquisition, "target_objective", "information"))
    return AcquisitionContext(posterior=posterior, targets=targets, seed=seed)


def epistemic_scores(pred: Prediction) -> tuple[np.ndarray, dict[str, np.ndarray | None]]:
    """The default scorer: ``Prediction.epistemic_n`` with the usual arrays."""
    return as_numpy(pred.epistemic_n).astype(np.float64), prediction_arrays(pred)


def as_numpy(x: Any) -> Any:
    """A tensor (detached, on the CPU) or an array as a NumPy array; None stays None.  A learner or
    acquisition of the user's own handing over NumPy arrays, or a tensor that requires grad, failed with
    "'numpy.ndarray' object has no attribute 'double'" (a check of the extension contracts)."""
    if x is None or isinstance(x, np.ndarray):
        return x
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def prediction_arrays(pred: Prediction) -> dict[str, np.ndarray | None]:
    """The arrays carried with each candidate (as ActiveLoop._arrays): embedding, class
    probabilities, and ensemble member probabilities where the learner has them."""
    arrays: dict[str, np.ndarray | None] = {
        "embedding_n_d": as_numpy(pred.embedding_n_d),
        "probs_n_C": as_numpy(pred.probs_n_C),
    }
    member = pred.extras.get("member_probs_n_M_C")
    if member is not None:
        arrays["member_probs_n_M_C"] = as_numpy(member)
    return arrays


CHUNK_BUDGET = 256 << 20  # bytes one chunk's prediction and scoring may hold, whatever C and d (issue 14)
MAX_CHUNK_ROWS = 16_384  # rows per chunk where the budget allows more (the features file's batch size)
MIN_CHUNK_ROWS = 64
# Peak memory of a chunk's predict and acquisition over the bytes of the Prediction it returns, 16,384
# rows (benchmarks/results/chunk_memory.md): 1.7-5.8 at 100 and 1,000 classes for every scorer (vbll
# 3.1-4.7, laplace 1.7-1.9, ensemble 5.2-5.8, mc-dropout 5.6-5.8), up to 8.7 at 10 classes, where
# the Prediction is small and the backbone's activations dominate.  The budget divides by 8; with it
# every scorer's chunk peaked at 18-133 MB, where 16,384 rows took up to 0.8 GB (vbll) and 7.7 GB
# (mc-dropout) at 1,000 classes.
WORKING_SET_FACTOR = 8.0


def prediction_nbytes(pred: Prediction) -> int:
    """Bytes of every tensor a Prediction holds: its fields, its extras and its distribution's parameters."""
    parts = [*vars(pred).values(), *pred.extras.values(), *getattr(pred.dist, "__dict__", {}).values()]
    return sum(v.numel() * v.element_size() for v in parts if torch.is_tensor(v))


def chunk_rows_for(learner: Learner, X_probe_m_f: np.ndarray, budget: int = CHUNK_BUDGET,
                   max_rows: int = MAX_CHUNK_ROWS) -> int:
    """Rows per scoring chunk for this fitted learner: the largest ``max_rows / 2^k`` (at least
    MIN_CHUNK_ROWS) whose working set, WORKING_SET_FACTOR times the Prediction's bytes per row
    (measured on the probe ``X_probe``) plus the input row, fits ``budget``.

    Why measured: what a chunk holds grows with the classes C, the members or passes of an
    ensemble, and the feature width d, and only the learner knows which; 16,384 rows at 1,000
    classes took 0.8 GB (vbll) to 7.7 GB (MC dropout's 20 passes).  Why a power-of-two divisor of
    ``max_rows``: chunk boundaries stay row-group aligned for the Ray engine.  The selections do
    not depend on the rows (the top-m is chunking-invariant); at 10 classes they stay 16,384."""
    with torch.no_grad():
        pred = learner.predict(X_probe_m_f)
    per_row = (WORKING_SET_FACTOR * prediction_nbytes(pred) / max(1, len(X_probe_m_f)) + 4 * X_probe_m_f.shape[1]
               + image_stem_bytes(learner))
    rows = max_rows
    while rows > MIN_CHUNK_ROWS and rows * per_row > budget:
        rows //= 2
    return rows


def image_stem_bytes(learner: Learner) -> int:
    """Bytes per row the image stem's activations take while a chunk is predicted: k filter maps of
    H x W, kept about twice over (the convolution's output, rectified in place, and its buffers;
    measured peak 100 KB a 28 x 28 row at 16 filters, benchmarks/stem_forward_time.py); 0 without
    an image stem or with its outputs read precomputed.  Why: the Prediction is small, the stem's
    maps are not, and chunks sized by the Prediction alone took 5 GB."""
    owners = [learner, getattr(learner, "base", None), getattr(learner, "net", None),
              *(getattr(learner, "members", None) or [])[:1]]
    spec = next((getattr(o, "input", None) for o in owners if getattr(o, "input", None) is not None), None)
    if spec is None or spec.image_shape is None or spec.patch_filters is None or spec.stem_precomputed:
        return 0
    _, h, w = spec.image_shape
    return 4 * 2 * int(spec.patch_filters.shape[0]) * h * w


class _LearnerPickler(pickle.Pickler):
    """Pickles a fitted learner whole, including parametrized modules (spectral norm), which
    torch refuses to pickle: a copy of such a module with each parametrization replaced by the
    weight it computes now is pickled instead.  A fitted learner only predicts, and in eval mode
    the parametrization is a pure function of stored tensors, so the copy computes the same
    outputs bit for bit."""

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, torch.nn.Module) and parametrize.is_parametrized(obj):
            return _same, (_frozen_copy(obj),)
        return NotImplemented


def _frozen_copy(module: torch.nn.Module) -> torch.nn.Module:
    """A copy of a parametrized module, of its original class, holding each parametrized tensor
    as a plain parameter with the value the parametrization gives now.  (torch's
    remove_parametrizations cannot be used on a copy: the copy shares the injected class, whose
    properties it would delete from the original too.)"""
    clone = copy.deepcopy(module)
    with torch.no_grad():
        values = {name: getattr(clone, name).detach().clone() for name in clone.parametrizations}
    grads = {name: plist.original.requires_grad for name, plist in clone.parametrizations.items()}
    del clone._modules["parametrizations"]
    clone.__class__ = type(module).__bases__[0]
    for name, value in values.items():
        clone.register_parameter(name, torch.nn.Parameter(value, requires_grad=grads[name]))
    return clone


def _same(obj: Any) -> Any:
    return obj


def dumps_learner(learner: Learner) -> bytes:
    """The fitted learner's state as bytes, to ship to worker processes (``pickle.loads`` it)."""
    buf = io.BytesIO()
    _LearnerPickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(learner)
    return buf.getvalue()


def candidate_arrays(c: Candidates) -> dict[str, np.ndarray | None]:
    """A TopM result's arrays in the form ``TopM.push`` takes, so results can be merged."""
    return {"embedding_n_d": c.embedding_n_d, "probs_n_C": c.probs_n_C, **c.extras}


def score_batches(learner: Learner, batches: Iterator[tuple[np.ndarray, np.ndarray]], m: int,
                  scorer: Callable[[Prediction], tuple[np.ndarray, dict[str, np.ndarray | None]]] | None = None,
                  ) -> tuple[Candidates, int]:
    """Predict each batch, score it, and keep the m best scores with their arrays."""
    score = scorer or epistemic_scores
    top = TopM(m)
    with torch.no_grad():
        for keys, X in batches:
            scores_n, arrays = score(learner.predict(X))
            top.push(keys, scores_n, **arrays)
    return top.result(), top.n_seen


def local_topm(
    learner: Learner, features: Path | FeatureReader | ArrayFeatureReader, pool_mask_n: np.ndarray, m: int,
    chunk_rows: int = 16_384, scorer: AcquisitionScorer | None = None,
) -> tuple[Candidates, int]:
    """Single-process engine: stream the features once in this process.  ``features``: a file, or
    a reader already open (the loop's: a memory-mapped stem file stays readable after its name is
    gone, where opening it again by name would fail)."""
    reader = open_reader(features) if isinstance(features, (str, Path)) else features
    return score_batches(learner, reader.iter_chunks(pool_mask_n, chunk_rows), m, scorer)
