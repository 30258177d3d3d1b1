"""One query on arrays in memory: a cycle's Acquisition and Selection stages for a loop of your own.

`alkit run` keeps the pool in Parquet, streams it through the learner and records every cycle in
the store.  A team with its own training loop, or a pool that already sits in memory, wants the
same scoring and selection as a function call, the way scikit-activeml's and small-text's query
strategies are used: fit a learner on the labels, ask for the next batch, label it, repeat.

    learner = pool_learner(X_pool, "classification", n_classes=10)   # inputs standardised by the pool
    learner.fit(X_pool[labeled], y[labeled], seed=0)
    picked = query(learner, X_pool, 10, labeled=labeled, seed=cycle)   # indices into X_pool

The candidates, acquisition context and selector are the loop's (``engines.candidates``,
``engines.acquisition_context``, ``strategies``); only the pool comes from an array instead of a file.
"""

from __future__ import annotations

import functools
import numbers
import warnings
from dataclasses import replace
from collections.abc import Callable
from typing import Any

import numpy as np

from alkit.acquisition import get_acquisition
from alkit.checks import check_columns, check_seed, column_names, image_dims, is_whole_number
from alkit.engines import AcquisitionScorer, acquisition_context
from alkit.engines.candidates import candidate_count, in_memory_candidates
from alkit.models.backbone import pool_input_spec
from alkit.presets import get_preset
from alkit.errors import Note
from alkit.registry import Terms, make_learner
from alkit.runs import resolve_acquisition
from alkit.strategies import get_selector
from alkit.strategies._common import check_selection, constant_score_refusal
from alkit.types import Acquisition, Candidates, Learner, SelectionContext, Strategy

POOL_SAMPLE = 4096  # pool rows kept in the InputSpec (image filters, CSD's contexts), as the loop keeps


def pool_array(X_pool_n_f: Any) -> np.ndarray:
    """The pool as the (n, f) float32 array the learners read, refused as `alkit init` refuses a file
    where float32 would change it: NaN or inf, values beyond float32's range, and columns whose
    variation float32 loses (a large offset, 1e9 + x, or a spread of at most MIN_FEATURE_SPREAD the
    learners take for a constant).  Why: the library cast silently, so such a pool trained at chance
    and picked its first rows."""
    from alkit.pools.ingest import FLOAT32_MAX, MIN_FEATURE_SPREAD, float32_loses

    raw = X_pool_n_f.to_numpy() if hasattr(X_pool_n_f, "to_numpy") else np.asarray(X_pool_n_f)
    try:
        X64 = np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError) as exc:  # 'could not convert string to float' named no column (a black-box check)
        names = column_names(X_pool_n_f)
        bad = [] if names is None else [c for c, col in zip(names, np.asarray(raw, dtype=object).T)  # pd.NA: a gap
                                        if not all(isinstance(v, numbers.Real) or v is None or str(v) == "<NA>"
                                                   for v in col)]
        if names is not None and not bad:
            raise ValueError("X_pool_n_f holds missing values (NA): fill or drop them first") from None
        raise ValueError("X_pool_n_f must hold numbers only: " + (f"columns {bad[:5]} are not numeric (encode or "
                         "drop them)" if bad else str(exc))) from None
    if X64.ndim != 2 or not len(X64):
        raise ValueError(f"X_pool_n_f must be a non-empty (n, f) array, got shape {X64.shape}")
    if not np.isfinite(X64).all():
        cols = np.flatnonzero(~np.isfinite(X64).all(0))
        names = column_names(X_pool_n_f)  # a frame's columns by name (by position they were hard to find)
        shown = ", ".join(repr(names[c]) for c in cols[:5]) if names is not None else _listed(cols)
        raise ValueError(f"X_pool_n_f holds NaN or inf (columns {shown})")
    if (np.abs(X64) > FLOAT32_MAX).any():
        cols = np.flatnonzero((np.abs(X64) > FLOAT32_MAX).any(0))
        raise ValueError(f"X_pool_n_f has values beyond float32's range (|x| > {FLOAT32_MAX:.3g}) in columns "
                         f"{_listed(cols)}; rescale them (e.g. take logs)")
    X = X64.astype(np.float32)
    exact = raw.max(0) > raw.min(0) if np.issubdtype(raw.dtype, np.integer) else None  # 10**18 + i: one float64
    lost = float32_loses(X64.min(0), X64.max(0), X.min(0), X.max(0), exact)
    if lost.any():
        raise ValueError(f"X_pool_n_f columns {_listed(np.flatnonzero(lost))} vary too little for float32 (features "
                         f"are float32, and a spread of at most {MIN_FEATURE_SPREAD:g} counts as constant): centre or "
                         "rescale them")
    return X


def _listed(cols: np.ndarray, most: int = 10) -> str:
    return ", ".join(map(str, cols[:most].tolist())) + (f" and {len(cols) - most} more" if len(cols) > most else "")


def pool_learner(X_pool_n_f: np.ndarray, task: str, n_classes: int | None = None, *, scorer: str = "vbll",
                 image_shape: tuple[int, ...] | None = None, embedding: bool = False, seed: int = 0,
                 **options: Any) -> Learner:
    """A fresh learner of ``scorer`` whose inputs are standardised with the statistics of the whole
    pool (labelled or not; never a test split), as `alkit run` builds it: the pool is known before
    any label is bought.  ``image_shape`` (C, H, W), or (H, W) for one channel: the rows are pixels (the image backbone);
    ``embedding``: the rows are a pretrained encoder's vectors; ``options``: the scorer's options
    (`alkit strategies --scorer NAME`)."""
    X = pool_array(X_pool_n_f)
    seed = check_seed(seed)
    if not isinstance(embedding, (bool, np.bool_)):  # 'yes' was taken as True
        raise ValueError(f"embedding must be True or False, got {embedding!r}")
    if isinstance(image_shape, str):  # '13,1' was read character by character
        raise ValueError(f"image_shape must be a tuple of integers, (H, W) or (C, H, W), got the text {image_shape!r}")
    if task == "regression" and n_classes is not None:  # taken and ignored: a classification meant?
        raise ValueError(f"n_classes={n_classes} on a regression task: a regression learner has no classes (leave "
                         "n_classes out, or pass task='classification')")
    if image_shape is not None and embedding:  # embedding=True was ignored beside image_shape
        raise ValueError("image_shape and embedding=True both given: the rows are either pixels (the image backbone) "
                         "or a pretrained encoder's vectors; pass one")
    if isinstance(options.get("train"), dict):  # train={"steps": 30} failed at fit with an AttributeError
        from alkit.models.train import TrainConfig

        unknown = sorted(set(options["train"]) - set(TrainConfig.__dataclass_fields__))
        if unknown:  # a TypeError from the dataclass, unlike every other bad option
            raise ValueError(f"train: unknown training option {unknown[0]!r}; known: "
                             f"{', '.join(TrainConfig.__dataclass_fields__)}")
        options["train"] = TrainConfig(**options["train"])
    if image_shape is not None:  # (H, W) as `init --image-shape H,W` takes it, or (C, H, W); checked as init does
        image_shape = tuple(image_dims(tuple(image_shape), X.shape[1], option="image_shape"))
    rng = np.random.default_rng(seed)
    sample = X[np.sort(rng.choice(len(X), min(len(X), POOL_SAMPLE), replace=False))]
    X64 = X.astype(np.float64)
    spec = pool_input_spec(sample, image_shape, mean_f=X64.mean(0), std_f=X64.std(0), embedding=embedding)
    learner = make_learner(scorer, task, n_classes, input=replace(spec, pool_sample_n_f=sample), **options)
    learner.feature_names = column_names(X_pool_n_f)  # a DataFrame's: fit and query check theirs against them
    if learner.feature_names is not None:  # and predict: a reordered frame got other items' probabilities
        learner.predict = _checking_columns(learner.predict, learner.feature_names)
    return learner


def _checking_columns(predict: Callable[..., Any], names: list[str]) -> Callable[..., Any]:
    """A learner's predict that first checks a DataFrame's columns against pool_learner's frame (on the instance:
    every learner class reads its inputs by position)."""
    @functools.wraps(predict)
    def checked(X_n_f: Any, *args: Any, **kwargs: Any) -> Any:
        check_columns(X_n_f, names, "X")
        return predict(X_n_f, *args, **kwargs)
    return checked


def query(learner: Learner | None, X_pool_n_f: np.ndarray, batch_size: int, *, labeled: np.ndarray | None = None,
          strategy: str = "epistemic", acquisition: str | Acquisition | None = None,
          selector: str | Strategy | None = None,
          candidates: int | None = None, seed: int = 0,
          return_scores: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    """Indices into ``X_pool_n_f`` of the next ``batch_size`` items to label, (batch_size,) int64.

    ``learner``: fitted on the labels so far (None: the model-free first batch, the preset's
    initial selector); ``labeled``: indices (or a boolean mask) of rows already labelled, never
    picked; ``strategy``: a preset (`alkit strategies`) whose acquisition and selector are used
    unless ``acquisition`` / ``selector`` name others (or are objects of your own following the
    Acquisition / Strategy protocols of alkit.types); ``candidates``: m for top-m selectors
    (default 20 x batch); ``seed``: vary it per cycle (sampling selectors draw with it);
    ``return_scores``: also return the picks' acquisition scores (batch_size,) float64 (0 for
    random picks and for a first batch picked without a model)."""
    check_columns(X_pool_n_f, getattr(learner, "feature_names", None), "X_pool_n_f")
    X = pool_array(X_pool_n_f)
    mask = np.ones(len(X), dtype=bool)
    if labeled is not None:
        lab = np.asarray(labeled)
        if lab.dtype == bool:
            if lab.shape != mask.shape:
                raise ValueError(f"labeled mask has shape {lab.shape}, the pool {mask.shape}")
            mask &= ~lab
        else:
            if lab.size == len(X) > 2 and np.issubdtype(lab.dtype, np.integer) and set(np.unique(lab)) <= {0, 1}:
                raise ValueError("labeled looks like a 0/1 mask given as integers (read as the row indices 0 and 1): "
                                 "pass it as booleans, labeled.astype(bool)")
            if lab.size and (not np.issubdtype(lab.dtype, np.integer) or lab.min() < 0 or lab.max() >= len(X)):
                raise ValueError(f"labeled must be row indices in 0..{len(X) - 1} (or a boolean mask of {len(X)} rows)")
            mask[lab.astype(np.int64)] = False
    pool = np.flatnonzero(mask)
    if not is_whole_number(batch_size):
        raise ValueError(f"batch_size must be a whole number, got {batch_size!r}")
    if len(pool) == 0:  # it said 'batch_size must be in 1..0'
        raise ValueError(f"no unlabelled rows left: all {len(X)} rows of the pool are in labeled")
    if batch_size < 1 or batch_size > len(pool):
        raise ValueError(f"batch_size must be in 1..{len(pool)} (the unlabelled rows), got {batch_size}")
    if not is_whole_number(seed):  # None drew other picks each call
        raise ValueError(f"seed must be a whole number (vary it per cycle), got {seed!r}")
    check_seed(seed)
    if learner is not None and not callable(getattr(learner, "predict", None)):  # query reads only its predict
        raise TypeError(f"learner must be a fitted learner (pool_learner(...), then .fit; one of your own with a "
                        f"predict) or None, got "
                        f"{type(learner).__name__} {learner!r:.40}")
    if candidates is not None and not is_whole_number(candidates):
        raise ValueError(f"candidates must be a whole number, got {candidates!r}")
    if candidates is not None and (candidates < 1 or candidates < batch_size):
        raise ValueError(f"candidates must be at least batch_size ({batch_size}), got {candidates}")
    if not isinstance(strategy, str):
        raise ValueError(f"strategy must be a preset's name (str; `alkit strategies` lists them), got "
                         f"{type(strategy).__name__}")
    preset = get_preset(strategy)
    own_acquisition = _own(acquisition, "acquisition", ("score", "needs"))
    if own_acquisition is not None:
        acquisition = getattr(own_acquisition, "name", type(own_acquisition).__name__)
    task = learner.task if learner is not None else "classification"
    spec = getattr(learner, "input", None)
    width = None if spec is None or spec.mean_f is None else len(spec.mean_f)
    if width is not None and width != X.shape[1]:
        raise ValueError(f"the learner was built for {width} features (pool_learner's pool), this pool has {X.shape[1]}")
    if learner is None:
        chosen = _selector(selector or preset.initial_selector)
        if chosen.needs_model:
            raise ValueError(f"selector {chosen.name!r} needs a model: pass a fitted learner, or a model-free "
                             "selector (random, coldstart) for the first batch")
        if acquisition is not None:
            raise ValueError("the first batch is picked without a model, so an acquisition has no effect: drop it")
        scorer, posterior, targets, registered, name = None, None, None, None, None
    else:
        chosen = _selector(selector or preset.selector_for(task, batch_size))
        if acquisition is not None and own_acquisition is None:
            get_acquisition(acquisition)  # an unknown name is refused listing the known ones
        registered = _scorer_of(learner)
        if registered is None or own_acquisition is not None:  # its Prediction names what it lacks
            if acquisition is not None and chosen.candidate_source == "all":  # as resolve_acquisition refuses it
                raise ValueError(f"selector {chosen.name!r} picks without a score: acquisition={acquisition!r} "
                                 "would have no effect; drop it, or use a selector that reads scores")
            name = acquisition or preset.acquisition_for(task)
        else:  # as `alkit run` decides it: the preset's acquisition, or the scorer's own score where it cannot feed it
            single = registered == "sklearn" and getattr(learner, "M", None) == 1  # -o members=1: no epistemic part
            terms = Terms(who=f"selector {selector!r}" if selector is not None else f"strategy {strategy!r}",
                          library=True)  # 'strategy epistemic picks without a score' read wrong after selector='random'
            name, notes = resolve_acquisition(strategy, acquisition, registered, task, chosen.name, single, terms)
            if preset.default_scorer not in ("none", "vbll", registered):
                notes.append(f"strategy {strategy!r} is meant for scorer {preset.default_scorer!r} "
                             f"(pool_learner(..., scorer={preset.default_scorer!r})); this learner is {registered!r}")
            for note in notes:
                warnings.warn(Note(note), stacklevel=2)
        acq = own_acquisition if own_acquisition is not None else get_acquisition(name)
        acq_ctx = acquisition_context(acq, learner, pool, X.__getitem__, [seed, 4], seed)
        posterior, targets = acq_ctx.posterior, acq_ctx.targets
        scorer = AcquisitionScorer(acq, acq_ctx)
    m = candidate_count(chosen.candidate_source, batch_size, candidates)
    if chosen.candidate_source in ("sample",) or (learner is None and chosen.candidate_source != "all"):
        keys = np.sort(np.random.default_rng([seed, 3]).choice(pool, size=min(m, len(pool)), replace=False))
        cands = in_memory_candidates(keys.astype(np.int64), X[keys], learner, scorer)
    elif chosen.candidate_source == "all":  # random picks read the keys alone, as the loop's 'all' source
        cands = Candidates(keys_n=pool.astype(np.int64))
    else:  # top-m by score (ties by row), as the streamed pass keeps them
        full = in_memory_candidates(pool.astype(np.int64), X[pool], learner, scorer)
        top = np.lexsort((full.keys_n, -np.asarray(full.scores_n)))[:m]
        cands = _subset(full, top)
        if full.scores_n is not None and len(full):
            cands.score_range = (float(np.min(full.scores_n)), float(np.max(full.scores_n)))
    cands.targets = targets  # EPIG's target set, as the loop hands it on: batch-EPIG and risk greedies read it
    scores_n = None if cands.scores_n is None else np.asarray(cands.scores_n, dtype=np.float64)
    # a learner of the user's own (alkit's own one-member estimator is refused by resolve_acquisition)
    # an acquisition of one's own too: a constant score picked the pool's first rows as if ranked (a black-box check)
    refusal = (constant_score_refusal(cands, chosen, name, own_acquisition=own_acquisition is not None)
               if learner is not None and (registered is None or own_acquisition is not None)
               and len(pool) > batch_size else None)
    if refusal:
        raise ValueError(refusal)
    ctx = SelectionContext(seed=seed, posterior=posterior,
                           labeled_embedding_n_d=(learner.predict(X[~mask]).embedding_n_d.numpy()
                                                  if learner is not None and getattr(chosen, "needs_labeled_embedding", False)
                                                  and (~mask).any() else None),
                           n_pool=len(pool))
    picked = chosen.select(cands, batch_size, ctx)
    check_selection(picked, cands, batch_size, chosen.name)
    keys = np.asarray(picked.keys, dtype=np.int64)
    if not return_scores:
        return keys
    return keys, np.asarray(picked.scores, dtype=np.float64)


def _own(value: Any, what: str, methods: tuple[str, ...]) -> Any:
    """An acquisition or selector object of the user's own given for ``what`` (it has ``methods``), else None
    for a name; anything else is refused (an object crashed in the 'did you mean' hint with "'MyAcq' object has
    no attribute 'strip'"; a check of the extension contracts)."""
    if value is None or isinstance(value, str):
        return None
    if all(hasattr(value, m) for m in methods):
        return value
    raise ValueError(f"{what} must be a name (str) or an object with {' and '.join(methods)} (the {what.capitalize()} "
                     f"protocol of alkit.types), got {type(value).__name__}")


def _selector(name: Any) -> Any:
    own = _own(name, "selector", ("select", "candidate_source", "needs_model"))
    if own is not None:
        return own
    try:
        return get_selector(name)
    except ValueError as exc:
        raise ValueError(str(exc).replace("unknown strategy", "unknown selector").replace("known strategies",
                                                                                          "known selectors")) from None


def _subset(cands: Any, rows: np.ndarray) -> Any:
    """The candidates at ``rows`` (every aligned array cut alike)."""
    def cut(a: Any) -> Any:
        return None if a is None else np.asarray(a)[rows]

    return replace(cands, keys_n=cands.keys_n[rows], scores_n=cut(cands.scores_n), embedding_n_d=cut(cands.embedding_n_d),
                   probs_n_C=cut(cands.probs_n_C), strata_n=cut(cands.strata_n),
                   extras={k: cut(v) for k, v in cands.extras.items()})


def _scorer_of(learner: Learner) -> str | None:
    """The registry name of a learner's scorer (its exact class), for the acquisition check; None
    for a learner of the user's own (the acquisition then names what its Prediction lacks)."""
    from alkit.registry import SCORERS, learner_class

    return next((name for name in SCORERS if type(learner) is learner_class(name)), None)
