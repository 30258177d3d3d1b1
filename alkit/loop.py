"""ActiveLoop: the resumable cycle engine (DESIGN.md 'The cycle').

One cycle: fit on the labeled set -> evaluate on the test split -> stream the unlabeled pool
and score it -> select a batch -> ask the oracle -> record selections, labels and the cycle row
in ONE transaction.  Every random choice is seeded by (run seed, cycle), so a run killed at any
moment and started again redoes the unfinished cycle identically: no label lost, no item
selected twice, cycles contiguous.
"""

from __future__ import annotations

import dataclasses
import shlex

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import torch
from sqlalchemy.exc import SQLAlchemyError

from alkit import metrics
from alkit.choices import SCORERS as BUILT_IN_SCORERS
from alkit.acquisition import AcquisitionError
from alkit.errors import StoreError
from alkit.checks import distribution_problem
from alkit.config import Project, load_project
from alkit.engines import MAX_CHUNK_ROWS, AcquisitionScorer, acquisition_context, chunk_rows_for
from alkit.engines.candidates import CandidateRequest, candidate_count
from alkit.engines.candidates import produce as produce_candidates
from alkit.models.backbone import InputSpec, pool_input_spec
from alkit.models.capacity import CapacityHint, effective_mode
from alkit.models.user_backbone import search_project
from alkit.oracles import Oracle, OracleError, oracle_for
from alkit.pools import leases
from alkit.pools.features import ArrayFeatureReader, FeatureReader
from alkit.pools.queue import classes_ahead, kept_aside_note
from alkit.pools.store import RunSpec, Store, curve_cycles
from alkit.pools.ownership import check_project_store
from alkit.runs import LoopError, RunPlan, RunRequest, plan_run, rules_since  # noqa: F401 (RunRequest, LoopError re-exported)
from alkit.stem_features import ensure_stem_features, stem_input, stem_path
from alkit.stopping import Decision, History, first_fired
from alkit.strategies._common import check_selection, constant_score_refusal
from alkit.types import AcquisitionContext, Candidates, Learner, Prediction, Selection, SelectionContext

STOP_SET = 1000  # pool items whose predicted classes the kappa stopping rule compares across cycles
CV_FOLDS = 3  # folds of the cross-validated learning curve (forecast stopping without a test split)
CHUNK_PROBE = 64  # labeled rows whose Prediction sizes the cycle's chunks (chunk_rows_for)
STATS_SAMPLE = 4096  # pool items the image filters are learned from (and CSD's contexts)

EventFn = Callable[[str, dict[str, Any]], None]


@dataclass
class CycleResult:
    cycle: int
    n_labeled: int
    n_selected: int
    metrics: dict[str, float]
    fit_s: float
    score_s: float
    select_s: float
    stopped: dict[str, Any] | None = None  # the stopping rule that ended the run at this cycle


@dataclass
class TestSplit:
    keys: np.ndarray
    y: np.ndarray
    X: np.ndarray
    edges: np.ndarray | None


class ChunkedDistribution:
    """Per-chunk predictive distributions read as one (PredictiveDistribution, alkit/types.py):
    every method is per item, so the metrics equal those of a single prediction."""

    def __init__(self, parts: list[Any], sizes: list[int]) -> None:
        self.parts, self.bounds = parts, np.cumsum([0, *sizes])

    def _map(self, method: str, y_n: Any = None) -> Any:
        import torch

        if y_n is None:
            return torch.cat([getattr(d, method)() for d in self.parts])
        y = torch.as_tensor(y_n)
        return torch.cat([getattr(d, method)(y[a:b]) for d, a, b in zip(self.parts, self.bounds[:-1], self.bounds[1:])])

    def mean(self) -> Any:
        return self._map("mean")

    def nll(self, y_n: Any) -> Any:
        return self._map("nll", y_n)

    def crps(self, y_n: Any) -> Any:
        return self._map("crps", y_n)

    def cdf(self, y_n: Any) -> Any:
        return self._map("cdf", y_n)

    def quantile(self, tau: float) -> Any:
        import torch

        return torch.cat([d.quantile(tau) for d in self.parts])


def _seed(*parts: int) -> int:
    return int(np.random.SeedSequence([abs(int(p)) for p in parts]).generate_state(1)[0])


def _fit(learner: Learner, X_n_f: np.ndarray, y_n: np.ndarray, seed: int, spec: RunSpec) -> Any:
    """``learner.fit``, a linear-algebra failure (a posterior covariance that is not positive definite: an
    option at an extreme value) said in one line naming the run's options, not a traceback (a black-box check)."""
    import torch

    try:
        return learner.fit(X_n_f, y_n, seed=seed)
    except (torch.linalg.LinAlgError, RuntimeError) as exc:
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if not isinstance(exc, torch.linalg.LinAlgError) and "positive definite" not in text and "singular" not in text:
            raise
        options = spec.options.get("learner") or {}
        shown = " ".join(f"-o {k}={v}" for k, v in sorted(options.items()))
        raise LoopError(f"the {spec.scorer} fit on {len(y_n)} labels failed ({text[:160]})"
                        + (f"; with {shown}: try the defaults, or less extreme values" if shown else "")) from None


def _for_metrics(learner: Learner, pred: Prediction, task: str) -> Prediction:
    """A Prediction the test metrics can read, else a LoopError naming what it lacks: a learner of the user's
    own handing over log-probabilities got 'nll 27.6' every cycle and a complete run, and a regression one
    without a predictive distribution (``dist``) an AttributeError traceback (a check of the extension
    contracts)."""
    who = f"the learner {type(learner).__name__}'s Prediction"
    if task == "classification":
        if pred.probs_n_C is None:
            raise LoopError(f"{who} has no probs_n_C: the test metrics (accuracy, nll) need class probabilities")
        problem = distribution_problem(pred.probs_n_C.double())
        if problem is not None:
            raise LoopError(f"{who}: {problem}: hand over probabilities, not logits or log-probabilities")
    elif pred.dist is None or pred.mean_n is None:
        raise LoopError(f"{who} has no {'dist' if pred.dist is None else 'mean_n'}: the test metrics of a regression "
                        "project (CRPS, NLL) read its predictive distribution (alkit.distributions) and mean")
    return pred


def _classes_ahead(project: Project, store: Store) -> list[str] | None:
    """queue.classes_ahead, or None where the store cannot be read yet: the run's own checks name that problem."""
    try:
        return classes_ahead(project, store)
    except (SQLAlchemyError, StoreError, OSError):
        return None


STRATA_MAX = 50  # a --stratify-by column with more distinct values than this and than half the items forms no strata


class ActiveLoop:
    """Drives runs on one project.  UI-free: progress goes to ``on_event`` callbacks."""

    def __init__(self, project: Project, store: Store | None = None, on_event: EventFn | None = None) -> None:
        self.project = project
        self.cfg = project.config
        project.require(project.features_path, why="the pool's features, which every learner reads")
        if not self.cfg.hide_labels:  # the queue file is written from it after a batch is committed: checked first
            project.require(project.payload_path, why="the queue file is written from it", readable=True)
        search_project(project.root)  # --backbone / --learner modules kept in the project folder
        self.store = store or Store(project.store_url)
        ahead = _classes_ahead(project, self.store)
        if ahead is not None:  # an --add-class import stopped after its labels, before alkit.toml: the store's classes
            self.project = project = Project(project.root, dataclasses.replace(self.cfg, classes=ahead))
            self.cfg = project.config
        # source: the features init stored (bayesvlm: its model's), whose pool statistics every learner's
        # InputSpec holds and which the model-free cold start reads; features: what learners read, the
        # source or, on image projects, the frozen stem's outputs over it (use_features)
        self.source = FeatureReader(project.features_path, n_items=self.cfg.n_items, n_features=self.cfg.n_features)
        self.features = self.source
        self.on_event = on_event or (lambda kind, payload: None)
        self.oracle: Oracle = oracle_for(project, self.store)
        self._source_input: InputSpec | None = None
        self._input: InputSpec | None = None
        self._test: TestSplit | None = None
        self.last_eval_s = 0.0  # CPU seconds of the latest test evaluation
        self.chunk_rows = MAX_CHUNK_ROWS  # rows predicted at a time, sized per fitted learner (chunk_rows_for)
        self._stop_sets: dict[int, np.ndarray] = {}  # run seed -> features of its stop set (_signals)

    # ----------------------------------------------------------------- plan
    def resolve(self, req: RunRequest) -> RunPlan:
        """The run's plan (alkit/runs.py): names turned into objects and validated, nothing written."""
        return plan_run(req, self.cfg, lambda name: (int(self.store.counts().get("pool:unlabeled", 0)),
                                                     self.oracle.pool_held(name)), self.store.runs())

    # ----------------------------------------------------------------- run
    def run(self, req: RunRequest) -> list[CycleResult]:
        """Cycles until the budget is spent and answered, ``req.max_cycles`` cycles are done, or the
        oracle takes the selections away to be answered (people: one cycle per call)."""
        plan = self.resolve(req)
        spec = plan.spec
        self.use_features(plan)
        self.input_spec()  # one pass over the pool's features first: a damaged file is refused before any write
        self._check_labels()
        check_project_store(self.project, self.store)  # its features file too
        self._check_strata(spec.options.get("stratify_by"))
        if spec.options.get("engine") == "ray":  # no Ray, or no cluster at --ray-address: refused before the run
            from alkit.engines.ray_engine import ensure_ray  # was recorded (it failed after cycle 0's batch)

            ensure_ray(spec.options.get("ray_address"))
        lease = leases.acquire(self.store, spec.name)  # a second process on the same run is refused as busy
        self.store.ensure_signals_table()
        try:
            return self._drive(req, plan, lease)
        finally:
            leases.release(self.store, lease)

    def use_features(self, plan: RunPlan, *, progress: bool = False) -> None:
        """Read the plan's own feature file where its learner has one (bayesvlm: the model's image
        features, encoded on first use), else the project's; the pool statistics follow."""
        path = plan.features(self.project, progress) if plan.features is not None else self.project.features_path
        if Path(path) != Path(self.source.path):
            self.source = self.features = FeatureReader(Path(path), n_items=self.cfg.n_items)
            self._source_input, self._input, self._stop_sets, self._test = None, None, {}, None

    def _use_stem(self, plan: RunPlan, lease: leases.Lease) -> None:
        """On an image project whose learner trains alkit's network, learners read the frozen
        stem's outputs over the source features, computed once per project (alkit/stem_features.py;
        ``stem`` events report the rows written, and the run's lease is renewed meanwhile); other
        plans read the source.  Called before a run's first cycle of this call, so a refused, busy,
        complete or waiting run computes nothing."""
        path = None
        if plan.stem:
            if self.features.path == stem_path(self.project.root, self._pool_spec(), self.source):
                return  # checked and opened by an earlier run of this loop (a map outlives the file's name)
            total, renewed = self.source.n_items, [time.monotonic()]

            def advance(rows: int) -> None:
                self.on_event("stem", {"rows": rows, "total": total})
                if time.monotonic() - renewed[0] > 60:  # a long stem must not let the lease lapse
                    leases.renew(self.store, lease)
                    renewed[0] = time.monotonic()

            path = ensure_stem_features(self.project.root, self._pool_spec(), self.source, advance)
        if Path(path or self.source.path) != Path(self.features.path):
            self.features = self.source if path is None else ArrayFeatureReader(path, n_items=self.cfg.n_items)
            self._input, self._stop_sets, self._test = None, {}, None

    def _check_strata(self, column: str | None) -> None:
        """A --stratify-by column must form strata: one of a distinct value per item (ids, texts) formed none,
        and the run went on as if it had (a black-box check)."""
        if not column:
            return
        pool = self.store.pool_keys(("unlabeled", "queued", "labeled", "skipped"))  # the test split is never picked
        values = pl.read_parquet(self.project.payload_path, columns=[column])[column].gather(pool)
        distinct = values.n_unique()
        if len(values) >= 20 and distinct > max(STRATA_MAX, len(values) // 2):
            raise LoopError(f"--stratify-by {column!r} has {distinct} distinct values over the {len(values)} pool items: "
                            "no strata (each item nearly its own); give a column of groups (a source, a site, a month)")

    def _check_labels(self) -> None:
        """Every stored label must be one the project's alkit.toml knows, in the order init recorded,
        checked before any write."""
        recorded = self.store.init_classes()
        if recorded is not None and self.cfg.task == "classification" and recorded != list(self.cfg.classes) \
                and sorted(recorded) == sorted(self.cfg.classes):
            raise LoopError(f"alkit.toml lists the classes as [{', '.join(self.cfg.classes)}], init recorded "
                            f"[{', '.join(recorded)}]: a class is its position there, so restore that order")
        bad = []
        for value in sorted(self.store.label_values()):
            try:
                self.project.encode_label(value)
            except ValueError:
                bad.append(value)
        if bad:
            shown = ", ".join(repr(v) for v in bad[:5]) + (" ..." if len(bad) > 5 else "")
            what = (f"classes = [{', '.join(self.cfg.classes)}]" if self.cfg.task == "classification"
                    else "a regression project (numbers only)")
            grown = recorded is not None and self.cfg.task == "classification" and recorded != list(self.cfg.classes)
            try:  # the file now lists them: an --add-class import came between this run's read of it and its check
                now = load_project(self.project.root).config.classes
            except (ValueError, OSError):  # a damaged alkit.toml: the message below says what to restore
                now = None
            if grown and now == recorded:
                raise LoopError(f"classes were added ({', '.join(repr(c) for c in recorded[len(self.cfg.classes):])}, "
                                "`queue import --add-class`) while this run was starting: run the same command again")
            raise LoopError(f"the store holds labels that alkit.toml does not know ({shown}); it lists {what}. "
                            + (f"The store records the classes [{', '.join(recorded)}] (init's, and any a `queue "
                               "import --add-class` added): list them so in alkit.toml" if grown else
                               "Restore alkit.toml as `alkit init` wrote it"))

    def _drive(self, req: RunRequest, plan: RunPlan, lease: leases.Lease) -> list[CycleResult]:
        spec = plan.spec
        before = next((r.budget for r in self.store.runs() if r.name == spec.name), None)
        run = self.store.get_or_create_run(spec)  # refuses a budget below what was spent: nothing recorded before it
        if req.replace_stop and before is not None:  # `--stop` given to a run that exists: under the lease, accepted
            self.store.set_stop_rules(spec.name, list(req.stop))
            run = next(r for r in self.store.runs() if r.name == spec.name)
        if before is not None and spec.budget < before:  # it was cut short without a word
            self.on_event("note", {"run": run.name, "message": f"run {run.name}'s budget lowered from {before} to "
                                   f"{spec.budget} labels by --budget {spec.budget} (a larger --budget raises it again)"})
        if run.status == "stopped":  # a rule ended it; a larger --budget would have reopened it
            stopped = run.config.get("stopped", {})
            msg = (f"run {run.name} was stopped by {stopped.get('rule')} at cycle {stopped.get('cycle')}: "
                   f"{stopped.get('why')}; a larger --budget continues it (`alkit run --resume {shlex.quote(run.name)} --budget N`, "
                   "whose rules watch the new cycles; add `--stop none` to run to the budget)")
            self.on_event("stopped", {"run": run.name, **stopped, "message": msg})
            return []
        spent = self.store.n_spent(run.id)
        if spent < spec.budget:  # an extended budget (a stopped run's too) continues as if given at the start
            self.store.reopen_last_evaluation(run.id, len(self.store.labeled_set(run.id)[0]))
        self.on_event("run_start", {"run": run.name, "run_id": run.id, "budget": spec.budget, "spent": spent})
        results: list[CycleResult] = []
        while req.max_cycles is None or len(results) < req.max_cycles:
            cycle = self.store.next_cycle(run.id)
            waiting = self.oracle.waiting(run.id)
            if waiting:
                self.store.set_run_status(run.id, "waiting")
                again = self.oracle.hand_off_again(waiting, req.queue_file)
                if again is not None:
                    kept = "" if again.set_aside is None else f" (what it held kept as {again.set_aside.name})"
                    self.on_event("note", {"message": f"{again.path.name} {again.why}: the queue (every run's "
                                                      f"queued items) written to it again{kept}"})
                where = self._where()
                msg = (f"waiting: {waiting} item{'' if waiting == 1 else 's'} still queued; `alkit queue import FILE{where}`, "
                       f"then `alkit run --resume {shlex.quote(run.name)}{where}`")
                self.on_event("human_wait", {"run": run.name, "cycle": cycle - 1, "queued": waiting, "message": msg})
                self.on_event("phase", {"cycle": cycle - 1, "phase": msg})
                break
            self.store.check_file()  # deleted mid-run, the cycles went into an unlinked file
            leases.renew(self.store, lease)
            spent = self.store.n_spent(run.id)
            last = self.store.cycles(run.id)[-1:]
            if spent >= spec.budget and last and last[-1].n_selected == 0:
                self.store.set_run_status(run.id, "complete")
                break
            if not results:  # the run has a cycle to do: its learners' inputs first
                self._use_stem(plan, lease)
                self._note_threads(run)
            res = self._cycle(run.id, cycle, plan, spent)
            results.append(res)
            self.on_event("cycle_end", {"run": run.name, **res.__dict__})
            if res.stopped is not None:  # recorded after the cycle: a kill in between re-decides the same way
                self.store.stop_run(run.id, res.stopped)
                self.on_event("stopped", {"run": run.name, **res.stopped, "message":
                              f"stopped by {res.stopped['rule']} at cycle {cycle} with {res.n_labeled} labels: "
                              f"{res.stopped['why']}"})
                break
            if self.oracle.one_cycle_per_call:
                self._hand_off(run.name, cycle, res, req)
                break
        self.on_event("run_end", {"run": run.name, "run_id": run.id})
        return results

    def _note_unused_initial_selector(self, plan: RunPlan, n_labeled: int) -> None:
        """Tell a run given --initial-selector that no batch of it is model-free: labels it had at cycle 0 (given with
        the data, or answers to other runs' picks) fitted a model that picked the first batch, so the run's name
        (`-initrandom`) named a second run with the picks of the run without it (a black-box check)."""
        if not plan.initial_selector_named:
            return
        why = ("its learner predicts before any label (zero-shot)" if plan.zero_shot and not n_labeled else
               f"the {n_labeled} label{'s' * (n_labeled != 1)} it has at cycle 0 fitted a model")
        self.on_event("note", {"run": plan.spec.name, "message": (
            f"--initial-selector {plan.initial_selector_name} picks nothing in run {plan.spec.name}: {why}, which "
            f"picks its first batch ({plan.selector_name}) as in the run without --initial-selector")})

    def _note_threads(self, run: Any) -> None:
        """Tell a run that goes on at another thread count than it started with (recorded since 2026-12-07): its fits
        sum in another order from here (on a 28x28 image network 8 of 10 picks and 0.10 accuracy by 80 labels)."""
        started, now = (run.config or {}).get("threads"), torch.get_num_threads()
        if started is not None and started != now:
            self.on_event("note", {"run": run.name, "message": (
                f"run {run.name!r} was started with {started} thread{'s' * (started != 1)} and continues with {now}: "
                f"its fits sum in another order from here, so the run will not repeat one run at one count "
                f"(--threads {started} continues it as it began)")})

    def _where(self) -> str:
        """' --project DIR' for the hints' commands, unless the project is the current folder."""
        return self.project.cli_flag()

    def _hand_off(self, name: str, cycle: int, res: CycleResult, req: RunRequest) -> None:
        out = self.oracle.hand_off(res.n_selected, req.queue_file)
        if out is None:
            self.on_event("phase", {"cycle": cycle, "phase": "budget spent and labeled: run complete"})
            return
        where = self._where()
        kept = ("" if out.set_aside is None else
                f" ({out.path.name}, which was no label file alkit can read, was moved out of the way as {out.set_aside})"
                if out.set_aside_unreadable else
                f" ({kept_aside_note(out.path, out.set_aside, self._where())})")
        msg = (f"{out.n_items} item{'' if out.n_items == 1 else 's'} queued in {out.path}{kept}: fill in their 'label' "
               f"column (or export another format with `alkit queue export{where}`), then `alkit queue import "
               f"{shlex.quote(str(out.path))}{where}` and `alkit run --resume {shlex.quote(name)}{where}`")
        self.on_event("human_queue", {"run": name, "cycle": cycle, "queued": out.n_items,
                                      "path": str(out.path), "message": msg})
        self.on_event("phase", {"cycle": cycle, "phase": msg})

    def _labeled(self, run_id: int) -> tuple[np.ndarray, np.ndarray]:
        keys, values = self.store.labeled_set(run_id)
        y = np.array([self.project.encode_label(v) for v in values])
        return keys, y

    def _trainable(self, plan: RunPlan, y: np.ndarray) -> bool:
        """Whether the plan's learner can be fitted on labels ``y``: a zero-shot learner always,
        others on 2+ labels (of 2+ classes)."""
        if plan.zero_shot:
            return True
        if len(y) < 2:
            return False
        return self.cfg.task == "regression" or len(np.unique(y)) >= 2

    def _cycle(self, run_id: int, cycle: int, plan: RunPlan, spent: int) -> CycleResult:
        spec = plan.spec
        keys_lab, y_lab = self._labeled(run_id)
        remaining = spec.budget - spent
        k = min(spec.initial if cycle == 0 else spec.batch_size, remaining)
        if cycle == 0 and k == 0:
            k = min(spec.batch_size, remaining)
        learner: Learner | None = None
        fit_s = score_s = select_s = 0.0
        self.last_eval_s = 0.0
        n_scored = 0
        result_metrics: dict[str, float] = {}
        fit_report: dict[str, float] = {}
        self.on_event("phase", {"cycle": cycle, "phase": "fit", "n_labeled": len(y_lab)})
        if self._trainable(plan, y_lab):
            t0 = time.perf_counter()
            learner = plan.make_learner(self.input_spec())
            if effective_mode(getattr(learner, "capacity", "fixed"), self.input_spec()) != "fixed":
                # the capacity an earlier cycle chose (models/capacity.py); fixed-mode fits read nothing
                learner.capacity_hint = self._capacity_hint(run_id)
            X_lab = self.features.take(keys_lab)
            fit_report = _fit(learner, X_lab, y_lab, _seed(spec.seed, cycle, 1), spec) or {}
            fit_s = time.perf_counter() - t0
            self.chunk_rows = chunk_rows_for(learner, X_lab[:CHUNK_PROBE])
            result_metrics = self._evaluate(learner)
            if not result_metrics and any(r.name == "forecast" for r in plan.stop_rules):
                result_metrics = self._cross_validate(plan, X_lab, y_lab, _seed(spec.seed, cycle, 7))
        selection, cands, signals = None, None, None
        hint = CapacityHint.from_report(fit_report)
        if k > 0:
            selector, selector_name = ((plan.initial_selector, plan.initial_selector_name) if learner is None
                                       else (plan.selector, plan.selector_name))
            if cycle == 0 and learner is not None:
                self._note_unused_initial_selector(plan, len(y_lab))
            self.on_event("phase", {"cycle": cycle, "phase": "score", "selector": selector_name})
            t0 = time.perf_counter()
            mask = self._pool_mask(run_id, keys_lab)
            acq_ctx = self._acquisition_context(learner, plan, mask, cycle)
            cands, n_scored = self._candidates(mask, selector, learner, plan, k, cycle, acq_ctx)
            cands.targets = acq_ctx.targets if acq_ctx is not None else None
            score_s = time.perf_counter() - t0
            if learner is not None:
                signals = self._signals(learner, cands, spec, hint)
                decision = self._stop_decision(run_id, plan, cycle, (len(y_lab), result_metrics, signals))
                if decision is not None:  # stop before spending this cycle's batch
                    # since: the cycle the rules read from (an earlier stop's), whose fit `status` shows
                    stopped = {"rule": decision.rule, "why": decision.why, "cycle": cycle, "n_labeled": len(y_lab),
                               "since": self._rules_since(run_id)}
                    self._commit(run_id, cycle, spec, None, "", len(y_lab), result_metrics, fit_s, score_s, 0.0,
                                 n_scored=n_scored, signals=signals)
                    return CycleResult(cycle, len(y_lab), 0, result_metrics, fit_s, score_s, 0.0, stopped)
            self.on_event("phase", {"cycle": cycle, "phase": "select", "selector": selector_name})
            t0 = time.perf_counter()
            ctx = SelectionContext(
                seed=_seed(spec.seed, cycle, 2),
                posterior=learner.posterior() if learner is not None else None,
                labeled_embedding_n_d=(self._labeled_embedding(learner, keys_lab)
                                       if getattr(selector, "needs_labeled_embedding", False) else None),
                n_pool=int(mask.sum()),
            )
            if learner is not None and plan.spec.scorer not in BUILT_IN_SCORERS and int(mask.sum()) > k:
                # a scorer of the user's own (a batch that takes every item left is no choice to refuse)
                refusal = constant_score_refusal(cands, selector, plan.acquisition.name)
                if refusal:  # the run went on picking the pool's first rows, 'complete' (a check)
                    raise LoopError(f"scorer {plan.spec.scorer!r}: {refusal}")
            selection = selector.select(cands, k, ctx)
            select_s = time.perf_counter() - t0
            try:
                check_selection(selection, cands, k, selector_name)
            except ValueError as exc:  # a selector of the user's own (alkit's are tested against it)
                raise LoopError(str(exc)) from None
        if learner is not None and signals is None:
            signals = self._signals(learner, cands, spec, hint)
        self._commit(run_id, cycle, spec, selection, selector_name if selection else "", len(y_lab),
                     result_metrics, fit_s, score_s, select_s, n_scored=n_scored, signals=signals)
        return CycleResult(cycle, len(y_lab), 0 if selection is None else len(selection.keys),
                           result_metrics, fit_s, score_s, select_s)

    def _stop_decision(self, run_id: int, plan: RunPlan, cycle: int,
                       current: tuple[int, dict[str, float], dict[str, Any]]) -> Decision | None:
        """The first of the run's stopping rules that fires on its cycles from the one it last stopped at
        to the ``current`` one (labels, test metrics, signals), or None (also for a run without rules).

        The cycle a rule stopped the run at is where a larger budget picks up: no rule decides there (an
        uncertainty rule read the same scores again and stopped it at once, for ever: a black-box check), but
        its model is in the history the next cycles read (kappa compares the next model with it)."""
        if not plan.stop_rules:
            return None
        since = self._rules_since(run_id)
        if cycle <= since:
            return None
        rows = [c for c in self.store.cycles(run_id) if c.cycle >= since]
        signals = self.store.signals(run_id)
        metric = "accuracy" if self.cfg.task == "classification" else "crps"
        if not any(metric in c.metrics for c in rows) and metric not in current[1]:
            metric = f"cv_{metric}"  # no test split: the forecast follows the cross-validated estimate
        points = [(c.n_labeled, c.metrics, signals.get(c.cycle, {})) for c in curve_cycles(rows, current[0])]
        points.append(current)
        return first_fired(plan.stop_rules, History.of(points, plan.spec.batch_size, plan.spec.budget, metric,
                                                          waits=True))

    def _rules_since(self, run_id: int) -> int:
        """The cycle a run's stopping rules read from: the one a rule last stopped it at (-1: every cycle)."""
        run = next(r for r in self.store.runs() if r.id == run_id)
        return rules_since(run.config)

    def _capacity_hint(self, run_id: int) -> CapacityHint | None:
        """The capacity the run's latest committed cycle recorded in its signals, or None."""
        latest = self.store.latest_signal(run_id, "capacity")
        return None if latest is None else CapacityHint.from_signal(latest)

    def _signals(self, learner: Learner, cands: Candidates | None, spec: RunSpec,
                 capacity: CapacityHint | None = None) -> dict[str, Any]:
        """What the stopping rules read of this cycle: the model's classes on the run's fixed stop
        set (STOP_SET pool items, seeded by the run's seed) and the candidates' score summary; and
        the capacity the fit chose, handed on to the next cycle's learner."""
        out: dict[str, Any] = {"eval_s": self.last_eval_s}  # CPU seconds of this cycle's test evaluation
        if capacity is not None:
            out["capacity"] = dataclasses.asdict(capacity)
        if cands is not None and cands.scores_n is not None and len(cands.scores_n):
            scores = np.asarray(cands.scores_n, dtype=np.float64)
            out.update(score_max=float(np.max(scores)), score_mean=float(np.mean(scores)))
        if self.cfg.task == "classification":
            if spec.seed not in self._stop_sets:  # the pool never changes: one draw per run seed
                pool = self.store.pool_keys(("unlabeled", "queued", "labeled", "skipped"))
                rng = np.random.default_rng(_seed(spec.seed, 6))
                keys = np.sort(rng.choice(pool, size=min(STOP_SET, len(pool)), replace=False))
                self._stop_sets[spec.seed] = self.features.take(keys)
            probs = learner.predict(self._stop_sets[spec.seed]).probs_n_C
            out["stop_preds"] = probs.argmax(1).tolist()
        return out

    def _commit(self, run_id: int, cycle: int, spec: RunSpec, sel: Selection | None, selector: str,
                n_labeled: int, result_metrics: dict[str, float], fit_s: float, score_s: float,
                select_s: float, n_scored: int, signals: dict[str, Any] | None = None) -> None:
        """Record the cycle in one transaction, through the oracle: the simulated one writes its
        answers with it, with people the selected items become queued."""
        selections = [] if sel is None else [
            {"item_key": int(key), "rank": rank, "score": float(score), "utility": float(util), "selector": selector}
            for rank, (key, score, util) in enumerate(zip(sel.keys, sel.scores, sel.utilities))
        ]
        cycle_row = {"n_labeled": n_labeled, "n_selected": len(selections), "metrics": result_metrics,
                     "fit_s": fit_s, "score_s": score_s, "select_s": select_s, "n_scored": n_scored,
                     "signals": signals or None}
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

    def _test_split(self) -> TestSplit | None:
        """The test split, read once per loop (keys, labels and features; the features of the
        reader in use), or None for a project without one."""
        if self._test is None:
            keys, values = self.store.test_set()
            y = np.array([self.project.encode_label(v) for v in values])
            X = self.features.take(keys) if len(keys) else np.zeros((0, self.features.n_features), np.float32)
            # fixed per project (from the test targets) so nll10/ece10 compare across cycles and runs
            edges = (metrics.bucket_edges(y, 10) if self.cfg.task == "regression" and len(np.unique(y)) > 1
                     else None)
            self._test = TestSplit(keys, y, X, edges)
        return self._test if len(self._test.keys) else None

    def _evaluate(self, learner: Learner) -> dict[str, float]:
        """Test metrics of ``learner``, predicted in chunks of the cycle's ``chunk_rows`` (classification
        keeps only the (n, C) probabilities; regression the per-chunk distributions, which hold n-sized
        parameters) and timed as ``eval_s``."""
        test = self._test_split()
        if test is None:
            return {}
        t0 = time.thread_time()
        rows = self.chunk_rows
        preds = [_for_metrics(learner, learner.predict(test.X[s:s + rows]), self.cfg.task)
                 for s in range(0, len(test.keys), rows)]
        if self.cfg.task == "classification":
            out = metrics.classification_metrics(np.concatenate([p.probs_n_C.numpy() for p in preds]), test.y)
        else:
            dist = ChunkedDistribution([p.dist for p in preds], [len(p.mean_n) for p in preds])
            out = metrics.regression_metrics(dist, np.concatenate([p.mean_n.numpy() for p in preds]), test.y, test.edges)
        self.last_eval_s = time.thread_time() - t0
        return out

    def _cross_validate(self, plan: RunPlan, X_lab: np.ndarray, y_lab: np.ndarray, seed: int) -> dict[str, float]:
        """The learning curve where there is no test split (for ``--stop forecast``): the metric of
        CV_FOLDS-fold cross-validation on the labeled set, each fold a fresh learner (CV_FOLDS more
        fits per cycle), stratified by class where every class has that many labels; empty while
        the labeled set is too small to split."""
        from sklearn.model_selection import KFold, StratifiedKFold

        if len(y_lab) < 2 * CV_FOLDS:
            return {}
        classification = self.cfg.task == "classification"
        counts = np.unique(y_lab, return_counts=True)[1] if classification else np.zeros(0)
        splitter = (StratifiedKFold if classification and counts.min() >= CV_FOLDS else KFold)(
            CV_FOLDS, shuffle=True, random_state=seed % 2**32)
        hits, crps, n = 0.0, 0.0, 0
        for fold, (tr, va) in enumerate(splitter.split(X_lab, y_lab)):
            if not self._trainable(plan, y_lab[tr]):
                return {}
            learner = plan.make_learner(self.input_spec())
            _fit(learner, X_lab[tr], y_lab[tr], _seed(seed, fold), plan.spec)
            pred = learner.predict(X_lab[va])
            if classification:
                hits += metrics.accuracy(pred.probs_n_C.numpy(), y_lab[va]) * len(va)
            else:
                crps += metrics.crps(pred.dist, y_lab[va]) * len(va)
            n += len(va)
        return {"cv_accuracy": hits / n} if classification else {"cv_crps": crps / n}

    def _labeled_embedding(self, learner: Learner | None, keys_lab: np.ndarray) -> np.ndarray | None:
        if learner is None or len(keys_lab) == 0:
            return None
        return learner.predict(self.features.take(keys_lab)).embedding_n_d.numpy()

    def input_spec(self) -> InputSpec:
        """The InputSpec learners get: the pool's (``_pool_spec``), marked as read through the
        stem feature file when they read it (alkit/stem_features.py)."""
        if self._input is None:
            spec = self._pool_spec()
            self._input = spec if self.features is self.source else stem_input(spec)
        return self._input

    def _pool_spec(self) -> InputSpec:
        """The pool's input statistics (every pool item, never the test split), exact and
        streamed over the source features; for image projects also the PatchConv filters from a
        seeded pool sample.  Computed once per loop: the pool's items do not change."""
        if self._source_input is None:
            keys = self.store.pool_keys(("unlabeled", "queued", "labeled", "skipped"))
            mask = np.zeros(self.source.n_items, dtype=bool)
            mask[keys] = True
            rng = np.random.default_rng(0)
            in_sample = np.zeros(self.source.n_items, dtype=bool)
            in_sample[rng.choice(keys, min(len(keys), STATS_SAMPLE), replace=False)] = True
            n, s1, s2 = 0, np.zeros(self.source.n_features), np.zeros(self.source.n_features)
            rows: list[np.ndarray] = []
            for chunk_keys, X in self.source.iter_chunks(mask):  # one pass: statistics and the sample
                X64 = X.astype(np.float64)
                n, s1, s2 = n + len(X64), s1 + X64.sum(0), s2 + (X64 * X64).sum(0)
                rows.append(X[in_sample[chunk_keys]])
            mean = s1 / max(n, 1)
            std = np.sqrt(np.maximum(s2 / max(n, 1) - mean**2, 0.0))
            shape = tuple(self.cfg.image_shape) if self.cfg.image_shape else None
            sample = np.concatenate(rows) if rows else np.zeros((0, self.source.n_features), np.float32)
            embedding = self.cfg.input_kind == "embedding"  # a list column or an encoder's vectors
            spec = pool_input_spec(sample, shape, mean_f=mean, std_f=std, embedding=embedding)
            self._source_input = dataclasses.replace(spec, pool_sample_n_f=sample)
        return self._source_input

    def _acquisition_context(self, learner: Learner | None, plan: RunPlan, mask: np.ndarray,
                             cycle: int) -> AcquisitionContext | None:
        """The cycle's acquisition inputs: the posterior, and EPIG's target sample of the pool
        (``posterior.N_TARGETS`` items still in the pool, seeded by (seed, cycle)), predicted once."""
        if learner is None:
            return None
        seed = plan.spec.seed
        try:
            return acquisition_context(plan.acquisition, learner, np.flatnonzero(mask), self.features.take,
                                       _seed(seed, cycle, 4), _seed(seed, cycle, 5))
        except AcquisitionError as exc:
            raise LoopError(str(exc)) from None

    def _candidates(self, mask: np.ndarray, selector: Any, learner: Learner | None, plan: RunPlan, k: int,
                    cycle: int, acq_ctx: AcquisitionContext | None) -> tuple[Candidates, int]:
        """The candidates the selector asked for (alkit/engines/candidates.py), scored by the run's
        acquisition of each item's Prediction."""
        spec, source = plan.spec, selector.candidate_source
        req = CandidateRequest(
            source=source, m=candidate_count(source, k, spec.options.get("candidates")),
            seed=_seed(spec.seed, cycle, 3), engine=spec.options.get("engine", "local"),
            engine_options={"address": spec.options.get("ray_address")},
            stratify_by=spec.options.get("stratify_by"), payload_path=self.project.payload_path,
            chunk_rows=self.chunk_rows)
        scorer = None
        if learner is not None and source != "all":
            scorer = AcquisitionScorer(plan.acquisition, acq_ctx)
        return produce_candidates(req, self.features if learner is not None else self.source, mask, learner, scorer)
