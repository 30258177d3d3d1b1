"""ActiveLoop: the resumable cycle engine (DESIGN.md 'The cycle').

One cycle: fit on the labeled set -> evaluate on the test split -> stream the unlabeled pool
and score it -> select a batch -> ask the oracle -> record selections, labels and the cycle row
in ONE transaction.  Every random choice is seeded by (run seed, cycle), so a run killed at any
moment and started again redoes the unfinished cycle identically: no label lost, no item
selected twice, cycles contiguous.
"""

from __future__ import annotations

import dataclasses

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from alkit import metrics
from alkit.acquisition import ACQUISITIONS, AcquisitionError, EPIGTargets, get_acquisition
from alkit.config import Project
from alkit.engines import ENGINES, AcquisitionScorer
from alkit.engines.candidates import CandidateRequest, candidate_count
from alkit.engines.candidates import produce as produce_candidates
from alkit.models.backbone import InputSpec, pool_input_spec
from alkit.models.train import TrainConfig
from alkit.oracles import Oracle, OracleError, oracle_for
from alkit.pools.features import FeatureReader
from alkit.pools.store import RunSpec, Store
from alkit.presets import Preset, get_preset
from alkit.registry import check_acquisition, get_scorer, make_learner
from alkit.strategies import get_selector
from alkit.types import AcquisitionContext, Candidates, Learner, Prediction, Selection, SelectionContext

N_TARGETS = 256  # EPIG target sample per cycle (pool items standing for where predictions matter)
STATS_SAMPLE = 4096  # pool items the image filters are learned from (and CSD's contexts)

EventFn = Callable[[str, dict[str, Any]], None]


class LoopError(ValueError):
    """A run cannot start or continue; the message says why.  The store is unchanged."""


@dataclass
class RunRequest:
    """The arguments of `alkit run` (library form)."""

    strategy: str
    budget: int
    batch_size: int = 10
    seed: int = 0
    scorer: str | None = None
    initial: int | None = None  # size of the first (model-free) batch; default batch_size
    name: str | None = None
    candidates: int | None = None  # m for top-m / sampled candidates; default 20 x batch
    stratify_by: str | None = None
    learner_options: dict[str, Any] = field(default_factory=dict)
    train: dict[str, Any] = field(default_factory=dict)  # TrainConfig fields, e.g. max_epochs
    max_cycles: int | None = None  # stop after this many cycles in this call (resume later)
    queue_file: str | None = None  # human oracle: where the queue is written (default queue.csv in the project)
    engine: str = "local"  # where top-m scoring runs: 'local' or 'ray' (alkit/engines); same picks either way
    ray_address: str | None = None  # engine='ray': cluster address (None: reuse ray.init() or start a local one)
    acquisition: str | None = None  # score per item (alkit/acquisition); default: the preset's
    initial_selector: str | None = None  # model-free first-batch selector; default: the preset's


@dataclass
class CycleResult:
    cycle: int
    n_labeled: int
    n_selected: int
    metrics: dict[str, float]
    fit_s: float
    score_s: float
    select_s: float


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([abs(int(p)) for p in parts]).generate_state(1)[0])


def curve_name(req: RunRequest, scorer: str) -> str:
    """The learning-curve group of a run (stored in its config as data, never parsed back from
    its name): the strategy with whatever differs from its defaults, or the run's own --name."""
    if req.name:
        return req.name
    preset = get_preset(req.strategy)
    base = req.strategy if scorer in ("none", preset.default_scorer) else f"{req.strategy}-{scorer}"
    if req.acquisition and req.acquisition != preset.acquisition:
        base += f"-{req.acquisition}"
    if req.initial_selector and req.initial_selector != preset.initial_selector:
        base += f"-init{req.initial_selector}"
    opts = "".join(f"-{v}" for _, v in sorted(req.learner_options.items()))
    return f"{base}{opts}"


def run_name(req: RunRequest, scorer: str) -> str:
    """The run's unique name: its curve, batch size and seed (or the given --name)."""
    if req.name:
        return req.name
    return f"{curve_name(req, scorer)}-b{req.batch_size}-s{req.seed}"


class ActiveLoop:
    """Drives runs on one project.  UI-free: progress goes to ``on_event`` callbacks."""

    def __init__(self, project: Project, store: Store | None = None, on_event: EventFn | None = None) -> None:
        self.project = project
        self.cfg = project.config
        self.store = store or Store(project.store_url)
        self.features = FeatureReader(project.features_path)
        self.on_event = on_event or (lambda kind, payload: None)
        self.oracle: Oracle = oracle_for(project, self.store)
        self._input: InputSpec | None = None

    # ----------------------------------------------------------------- spec
    def resolve(self, req: RunRequest) -> tuple[RunSpec, Preset]:
        preset = get_preset(req.strategy)
        scorer = req.scorer or preset.default_scorer
        get_scorer(scorer)
        if req.batch_size < 1:
            raise LoopError(f"--batch-size must be at least 1, got {req.batch_size}")
        if req.budget < 1:
            raise LoopError(f"--budget must be at least 1, got {req.budget}")
        initial = req.batch_size if req.initial is None else req.initial
        if initial < 0:
            raise LoopError(f"--initial must be >= 0, got {initial}")
        n_pool = int(self.store.counts().get("pool:unlabeled", 0)) + self.oracle.pool_held(run_name(req, scorer))
        if req.budget > n_pool:
            raise LoopError(f"--budget {req.budget} is larger than the unlabeled pool ({n_pool} items)")
        if initial > req.budget:
            raise LoopError(f"--initial {initial} is larger than --budget {req.budget}")
        if req.stratify_by and req.stratify_by not in self.cfg.payload_cols:
            raise LoopError(f"--stratify-by {req.stratify_by!r} is not a column of the data; columns: {', '.join(self.cfg.payload_cols)}")
        initial_selector = req.initial_selector or preset.initial_selector
        for name in (preset.selector, preset.single_selector, initial_selector):
            get_selector(name)
        if get_selector(initial_selector).needs_model:
            raise LoopError(f"--initial-selector {initial_selector!r} needs a model; the first batch is picked "
                            "without one (use random or coldstart)")
        acquisition = req.acquisition or preset.acquisition_for(self.cfg.task)
        if acquisition not in ACQUISITIONS:
            raise LoopError(f"unknown acquisition {acquisition!r}; known: {', '.join(ACQUISITIONS)}")
        if preset.selector != "random":
            try:
                check_acquisition(acquisition, scorer, self.cfg.task)
            except ValueError as exc:
                raise LoopError(str(exc)) from None
        unknown = set(req.train) - set(TrainConfig.__dataclass_fields__)
        if unknown:
            raise LoopError(f"unknown training options {sorted(unknown)}; known: {', '.join(TrainConfig.__dataclass_fields__)}")
        try:  # build one (unfitted) learner now, so a bad option is refused before anything is written
            make_learner(scorer, self.cfg.task, self.cfg.n_classes, train=TrainConfig(**req.train),
                         **req.learner_options)
        except (TypeError, ValueError) as exc:
            raise LoopError(f"invalid options for scorer {scorer!r}: {exc}") from None
        if req.engine not in ENGINES:
            raise LoopError(f"--engine must be one of {', '.join(ENGINES)}, not {req.engine!r}")
        options = {"candidates": req.candidates, "stratify_by": req.stratify_by,
                   "learner": dict(req.learner_options), "train": dict(req.train),
                   "engine": req.engine, "ray_address": req.ray_address,
                   "acquisition": acquisition, "initial_selector": initial_selector,
                   "curve": curve_name(req, scorer)}
        spec = RunSpec(run_name(req, scorer), req.strategy, scorer, req.seed, req.budget, req.batch_size, initial, options)
        return spec, preset

    # ----------------------------------------------------------------- run
    def run(self, req: RunRequest) -> list[CycleResult]:
        """Cycles until the budget is spent and answered, ``req.max_cycles`` cycles are done, or the
        oracle takes the selections away to be answered (people: one cycle per call)."""
        spec, preset = self.resolve(req)
        run = self.store.get_or_create_run(spec)
        self.on_event("run_start", {"run": run.name, "run_id": run.id, "budget": spec.budget,
                                    "spent": self.store.n_spent(run.id)})
        results: list[CycleResult] = []
        while req.max_cycles is None or len(results) < req.max_cycles:
            cycle = self.store.next_cycle(run.id)
            waiting = self.oracle.waiting(run.id)
            if waiting:
                self.store.set_run_status(run.id, "waiting")
                msg = f"waiting: {waiting} items still queued; `alkit queue import FILE`, then `alkit run`"
                self.on_event("human_wait", {"run": run.name, "cycle": cycle - 1, "queued": waiting, "message": msg})
                self.on_event("phase", {"cycle": cycle - 1, "phase": msg})
                break
            spent = self.store.n_spent(run.id)
            last = self.store.cycles(run.id)[-1:]
            if spent >= spec.budget and last and last[-1].n_selected == 0:
                self.store.set_run_status(run.id, "complete")
                break
            res = self._cycle(run.id, cycle, spec, preset, spent)
            results.append(res)
            self.on_event("cycle_end", {"run": run.name, **res.__dict__})
            if self.oracle.one_cycle_per_call:
                self._hand_off(run.name, cycle, res, req)
                break
        self.on_event("run_end", {"run": run.name, "run_id": run.id})
        return results

    def _hand_off(self, name: str, cycle: int, res: CycleResult, req: RunRequest) -> None:
        out = self.oracle.hand_off(res.n_selected, req.queue_file)
        if out is None:
            self.on_event("phase", {"cycle": cycle, "phase": "budget spent and labeled: run complete"})
            return
        msg = (f"{out.n_items} items queued in {out.path}: fill in their 'label' column (or export another "
               f"format with `alkit queue export`), then `alkit queue import {out.path.name}` and `alkit run` again")
        self.on_event("human_queue", {"run": name, "cycle": cycle, "queued": out.n_items,
                                      "path": str(out.path), "message": msg})
        self.on_event("phase", {"cycle": cycle, "phase": msg})

    def _labeled(self, run_id: int) -> tuple[np.ndarray, np.ndarray]:
        keys, values = self.store.labeled_set(run_id)
        y = np.array([self.project.encode_label(v) for v in values])
        return keys, y

    def _trainable(self, y: np.ndarray) -> bool:
        if len(y) < 2:
            return False
        return self.cfg.task == "regression" or len(np.unique(y)) >= 2

    def _cycle(self, run_id: int, cycle: int, spec: RunSpec, preset: Preset, spent: int) -> CycleResult:
        keys_lab, y_lab = self._labeled(run_id)
        remaining = spec.budget - spent
        k = min(spec.initial if cycle == 0 else spec.batch_size, remaining)
        if cycle == 0 and k == 0:
            k = min(spec.batch_size, remaining)
        learner: Learner | None = None
        fit_s = score_s = select_s = 0.0
        n_scored = 0
        result_metrics: dict[str, float] = {}
        self.on_event("phase", {"cycle": cycle, "phase": "fit", "n_labeled": len(y_lab)})
        if self._trainable(y_lab):
            t0 = time.perf_counter()
            learner = make_learner(spec.scorer, self.cfg.task, self.cfg.n_classes,
                                   train=TrainConfig(**spec.options.get("train", {})), input=self.input_spec(),
                                   **spec.options.get("learner", {}))
            X_lab = self.features.take(keys_lab)
            learner.fit(X_lab, y_lab, seed=_seed(spec.seed, cycle, 1))
            fit_s = time.perf_counter() - t0
            result_metrics = self._evaluate(learner)
        selection = None
        if k > 0:
            selector_name = (
                spec.options.get("initial_selector") or preset.initial_selector if learner is None
                else preset.single_selector if spec.batch_size == 1 else preset.selector
            )
            self.on_event("phase", {"cycle": cycle, "phase": "score", "selector": selector_name})
            selector = get_selector(selector_name)
            t0 = time.perf_counter()
            mask = self._pool_mask(run_id, keys_lab)
            acq_ctx = self._acquisition_context(learner, spec, mask, cycle)
            cands, n_scored = self._candidates(mask, selector, learner, spec, k, cycle, acq_ctx)
            cands.targets = acq_ctx.targets if acq_ctx is not None else None
            score_s = time.perf_counter() - t0
            self.on_event("phase", {"cycle": cycle, "phase": "select", "selector": selector_name})
            t0 = time.perf_counter()
            ctx = SelectionContext(
                seed=_seed(spec.seed, cycle, 2),
                posterior=learner.posterior() if learner is not None else None,
                labeled_embedding_n_d=(self._labeled_embedding(learner, keys_lab)
                                       if getattr(selector, "needs_labeled_embedding", False) else None),
                n_pool=int(mask.sum()),
            )
            selection = selector.select(cands, k, ctx)
            select_s = time.perf_counter() - t0
            self._check_selection(selection, cands, k)
        self._commit(run_id, cycle, spec, selection, selector_name if selection else "", len(y_lab),
                     result_metrics, fit_s, score_s, select_s, n_scored=n_scored)
        return CycleResult(cycle, len(y_lab), 0 if selection is None else len(selection.keys),
                           result_metrics, fit_s, score_s, select_s)

    def _check_selection(self, sel: Selection, cands: Candidates, k: int) -> None:
        if len(sel.keys) != min(k, len(cands)):
            raise RuntimeError(f"strategy returned {len(sel.keys)} items, expected {min(k, len(cands))}")
        if not np.isin(sel.keys, cands.keys_n).all():
            raise RuntimeError("strategy returned items that were not candidates")

    def _commit(self, run_id: int, cycle: int, spec: RunSpec, sel: Selection | None, selector: str,
                n_labeled: int, result_metrics: dict[str, float], fit_s: float, score_s: float,
                select_s: float, n_scored: int) -> None:
        """Record the cycle in one transaction, through the oracle: the simulated one writes its
        answers with it, with people the selected items become queued."""
        selections = [] if sel is None else [
            {"item_key": int(key), "rank": rank, "score": float(score), "utility": float(util), "selector": selector}
            for rank, (key, score, util) in enumerate(zip(sel.keys, sel.scores, sel.utilities))
        ]
        cycle_row = {"n_labeled": n_labeled, "n_selected": len(selections), "metrics": result_metrics,
                     "fit_s": fit_s, "score_s": score_s, "select_s": select_s, "n_scored": n_scored}
        try:
            self.oracle.commit(run_id, cycle, selections, cycle_row, final=sel is None)
        except OracleError as exc:
            raise LoopError(str(exc)) from None

    # ----------------------------------------------------------------- pieces
    def _pool_mask(self, run_id: int, keys_lab: np.ndarray) -> np.ndarray:
        """True for pool items this run may still select."""
        mask = np.zeros(self.features.n_items, dtype=bool)
        mask[self.store.pool_keys(("unlabeled",))] = True
        mask[keys_lab] = False
        mask[self.store.selected_keys(run_id)] = False
        return mask

    def _evaluate(self, learner: Learner) -> dict[str, float]:
        keys_test, values = self.store.test_set()
        if len(keys_test) == 0:
            return {}
        y_test = np.array([self.project.encode_label(v) for v in values])
        pred = learner.predict(self.features.take(keys_test))
        if self.cfg.task == "classification":
            return metrics.classification_metrics(pred.probs_n_C.numpy(), y_test)
        # Fixed per project (from the test targets) so nll10/ece10 compare across cycles and runs.
        edges = metrics.bucket_edges(y_test, 10) if len(np.unique(y_test)) > 1 else None
        return metrics.regression_metrics(pred.dist, pred.mean_n.numpy(), y_test, edges)

    def _labeled_embedding(self, learner: Learner | None, keys_lab: np.ndarray) -> np.ndarray | None:
        if learner is None or len(keys_lab) == 0:
            return None
        return learner.predict(self.features.take(keys_lab)).embedding_n_d.numpy()

    def input_spec(self) -> InputSpec:
        """The pool's input statistics (every pool item, never the test split), exact and
        streamed; for image projects also the PatchConv filters from a seeded pool sample.
        Computed once per loop: the pool's items do not change."""
        if self._input is None:
            keys = self.store.pool_keys(("unlabeled", "queued", "labeled", "skipped"))
            mask = np.zeros(self.features.n_items, dtype=bool)
            mask[keys] = True
            rng = np.random.default_rng(0)
            in_sample = np.zeros(self.features.n_items, dtype=bool)
            in_sample[rng.choice(keys, min(len(keys), STATS_SAMPLE), replace=False)] = True
            n, s1, s2 = 0, np.zeros(self.features.n_features), np.zeros(self.features.n_features)
            rows: list[np.ndarray] = []
            for chunk_keys, X in self.features.iter_chunks(mask):  # one pass: statistics and the sample
                X64 = X.astype(np.float64)
                n, s1, s2 = n + len(X64), s1 + X64.sum(0), s2 + (X64 * X64).sum(0)
                rows.append(X[in_sample[chunk_keys]])
            mean = s1 / max(n, 1)
            std = np.sqrt(np.maximum(s2 / max(n, 1) - mean**2, 0.0))
            shape = tuple(self.cfg.image_shape) if self.cfg.image_shape else None
            sample = np.concatenate(rows) if rows else np.zeros((0, self.features.n_features), np.float32)
            spec = pool_input_spec(sample, shape, mean_f=mean, std_f=std) if shape else InputSpec(mean, std)
            self._input = dataclasses.replace(spec, pool_sample_n_f=sample)
        return self._input

    def _acquisition_context(self, learner: Learner | None, spec: RunSpec, mask: np.ndarray,
                             cycle: int) -> AcquisitionContext | None:
        """The cycle's acquisition inputs: the posterior, and EPIG's target sample of the pool
        (``N_TARGETS`` items still in the pool, seeded by (seed, cycle)), predicted once."""
        if learner is None:
            return None
        acquisition = get_acquisition(spec.options.get("acquisition") or "epistemic")
        posterior = learner.posterior()
        targets = None
        if getattr(acquisition, "uses_targets", False):
            pool = np.flatnonzero(mask)
            rng = np.random.default_rng(_seed(spec.seed, cycle, 4))
            keys = np.sort(rng.choice(pool, size=min(N_TARGETS, len(pool)), replace=False))
            try:
                targets = EPIGTargets.from_prediction(learner.predict(self.features.take(keys)), posterior,
                                                      getattr(acquisition, "target_objective", "information"))
            except AcquisitionError as exc:
                raise LoopError(str(exc)) from None
        return AcquisitionContext(posterior=posterior, targets=targets, seed=_seed(spec.seed, cycle, 5))

    def _candidates(self, mask: np.ndarray, selector: Any, learner: Learner | None, spec: RunSpec, k: int,
                    cycle: int, acq_ctx: AcquisitionContext | None) -> tuple[Candidates, int]:
        """The candidates the selector asked for (alkit/engines/candidates.py), scored by the run's
        acquisition of each item's Prediction."""
        source = selector.candidate_source
        req = CandidateRequest(
            source=source, m=candidate_count(source, k, spec.options.get("candidates")),
            seed=_seed(spec.seed, cycle, 3), engine=spec.options.get("engine", "local"),
            engine_options={"address": spec.options.get("ray_address")},
            stratify_by=spec.options.get("stratify_by"), payload_path=self.project.payload_path)
        scorer = None
        if learner is not None and source != "all":
            scorer = AcquisitionScorer(get_acquisition(spec.options.get("acquisition") or "epistemic"), acq_ctx)
        return produce_candidates(req, self.features, mask, learner, scorer)
