"""Strategies x seeds on the current project, and the label-efficiency tables (`alkit bench`).

Why a runner of its own: a label-efficiency claim needs every strategy run with the same seeds,
budget and batch size, and a table with the spread over seeds.  Each run goes through the
ActiveLoop library API, so a bench killed at any point is resumed by calling it again: runs
already complete at this budget are skipped, unfinished ones continue where they stopped.

Outputs (``out_dir``, default ``<project>/bench``):
- ``bench_summary.csv`` / ``bench_summary.md``: per strategy, over seeds (mean ± sample std):
  the metric at fixed label counts, the normalised area under the learning curve (AULC), the
  labels needed to reach a target value, the AULC against random picks' seed by seed and the
  worst label count against them (in their std units), the scoring seconds per 1,000 scored
  items and the selection seconds per run;
- ``bench_cycles.csv``: every evaluated cycle of the bench's runs (the raw curves).
"""

from __future__ import annotations

import dataclasses
import math
import os
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from alkit.config import Project, load_project
from alkit.errors import Note, StoreError
from alkit.loop import ActiveLoop, LoopError, RunRequest
from alkit.pools.labelfiles._common import atomic_write, escape_formulas
from alkit.pools.leases import RunBusy, live_runs
from alkit.pools.ownership import check_project_store
from alkit.plots import random_curve, summary_table, to_markdown
from alkit.choices import HIGHER_IS_BETTER, METRIC_RANGE, METRICS
from alkit.presets import PRESETS, get_preset, like_with_like
from alkit.registry import SCORERS
from alkit.acquisition import ACQUISITIONS
from alkit.report import cycles_frame
from alkit.runs import first_batch_refusal, recorded_rules, resolve_acquisition
from alkit.strategies import SELECTORS

BUSY_POLL_S = 2.0  # how often bench looks whether a run another process holds is free


@dataclass
class BenchResult:
    """What a bench call did and wrote."""

    table: pl.DataFrame
    summary_csv: Path
    summary_md: Path
    cycles_csv: Path
    metric: str
    target: float | None
    runs: list[str] = field(default_factory=list)  # every run of this bench (to filter plots by)
    ran: list[str] = field(default_factory=list)  # runs started or resumed by this call
    skipped: list[str] = field(default_factory=list)  # complete before this call
    failed: dict[str, str] = field(default_factory=dict)  # run name -> error message
    unavailable: dict[str, str] = field(default_factory=dict)  # strategy -> why it was left out
    notes: list[str] = field(default_factory=list)  # what the table alone does not say (shown under it)


def available_strategies(task: str, batch_size: int = 10) -> tuple[list[str], dict[str, str]]:
    """Presets whose scorer and selectors are installed (and fit the task), and why others are not.

    A preset whose score needs class probabilities (margin, entropy, decision-flip, ...) would rank
    a regression project by the epistemic score instead, and so would pick what another preset
    picks: such presets, and any other whose scorer, acquisition and selectors at this batch size
    equal an earlier one's, are left out with the reason (a bench on a regression project ran them
    all as identical rows at several times the cost)."""
    usable, why, seen = [], {}, {}
    for name, preset in PRESETS.items():
        missing = [s for s in (preset.selector, preset.single_selector, preset.initial_selector) if s not in SELECTORS]
        if preset.default_scorer not in SCORERS:
            why[name] = f"scorer {preset.default_scorer!r} is not registered"
            continue
        if missing:
            why[name] = f"selector {missing[0]!r} is not registered"
            continue
        if task == "regression" and preset.selector == "batchbald":
            why[name] = "BatchBALD needs class probabilities (classification only)"
            continue
        selector = preset.selector_for(task, batch_size)
        try:
            acquisition, notes = resolve_acquisition(name, None, preset.default_scorer, task, selector)
        except LoopError as exc:
            why[name] = str(exc)
            continue
        if notes:
            why[name] = (f"ranks by {preset.acquisition_for(task)}, which needs class probabilities: on a {task} "
                         f"project it would rank by the epistemic score")
            continue
        if task == "regression":
            acquisition = getattr(ACQUISITIONS[acquisition], "regression_same_as", acquisition)
        key = (preset.default_scorer, None if selector == "random" else acquisition, selector, preset.initial_selector)
        if key in seen:
            why[name] = f"picks as {seen[key]!r} does on a {task} project"
            continue
        seen[key] = name
        usable.append(name)
    return usable, why


def _default_at(df: pl.DataFrame, budget: int) -> list[int]:
    """Evaluated label counts nearest below 25/50/75/100 % of the budget (no empty columns)."""
    counts = np.unique(df["n_labeled"].to_numpy())
    counts = counts[counts > 0] if (counts > 0).any() else counts
    picks = {int(counts[max(0, np.searchsorted(counts, f * budget, side="right") - 1)]) for f in (0.25, 0.5, 0.75, 1.0)}
    return sorted(picks)


def _timings(df: pl.DataFrame) -> pl.DataFrame:
    """Per strategy, mean and sample std over its runs (seeds) of: scoring seconds per 1,000
    scored items (null for model-free strategies) and selection seconds per run (batch-aware
    selectors such as BatchBALD cost here, not in scoring).  Cycles without metrics (the first,
    model-free batch) are not in ``df`` and not counted."""
    per_run = df.group_by("strategy", "run").agg(pl.col("score_s").sum(), pl.col("n_scored").sum(),
                                                pl.col("select_s").sum())
    per_run = per_run.with_columns(
        pl.when(pl.col("n_scored") > 0).then(pl.col("score_s") / pl.col("n_scored") * 1000.0).alias("cost")
    )
    return per_run.group_by("strategy").agg(
        pl.col("cost").mean().alias("score_s_per_1k_mean"), pl.col("cost").std(ddof=1).alias("score_s_per_1k_std"),
        pl.col("select_s").mean().alias("select_s_per_run_mean"),
        pl.col("select_s").std(ddof=1).alias("select_s_per_run_std"),
    )


def run_bench(
    project: Project | str | Path = ".",
    *,
    budget: int,
    strategies: Sequence[str] | None = None,
    seeds: int | Sequence[int] = 3,
    batch_size: int = 10,
    initial: int | None = None,
    initial_selector: str | None = None,
    train: dict[str, Any] | None = None,
    metric: str | None = None,
    at: Sequence[int] | None = None,
    target: float | None = None,
    out_dir: str | Path | None = None,
    progress: bool = True,
    console: Console | None = None,
    command: str | None = None,
) -> BenchResult:
    """Run every strategy x seed to ``budget`` labels (resumable), then write the tables.

    ``strategies``: preset names, or ``preset:scorer`` for a preset with another scorer (e.g.
    ``epistemic:laplace``, ``random:vbll``); default: every preset whose scorer and selectors are
    registered.  ``seeds``: a count (0..n-1) or explicit seeds.  ``train``: TrainConfig fields
    for every fit (e.g. ``{"max_epochs": 50}``).  ``metric``: default accuracy (classification) or
    crps (regression).  ``at``: label counts for the fixed-budget columns (default: the evaluated
    label counts nearest below 25/50/75/100 % of the budget).  ``target``: the value for labels-to-target (default: the random baseline's
    mean final value when random is benched, else 95 % of the best final mean, or 105 % for a
    lower-is-better metric).  ``command``: the command line to print in the Markdown.
    Bad arguments raise LoopError/ValueError before anything runs.
    """
    proj = project if isinstance(project, Project) else load_project(project)
    if not proj.config.hide_labels:  # before any run: each would queue a batch for people and wait
        raise LoopError("alkit bench answers every batch from the pool's own labels, and this project's pool is "
                        "labelled by people (alkit init without --hide-labels); bench a project made with "
                        "--hide-labels from a file whose pool rows hold their labels")
    task = proj.config.task
    usable, unavailable = available_strategies(task, batch_size)
    # deduplicated after like_with_like too: 'random,random:vbll' are one strategy (counted twice in the bar)
    names = list(dict.fromkeys(like_with_like(list(dict.fromkeys(strategies)) if strategies is not None else usable)))
    if not names:
        raise LoopError("no strategy to bench")
    seed_list = list(range(seeds)) if isinstance(seeds, int) else [int(s) for s in seeds]
    if not seed_list or len(set(seed_list)) != len(seed_list):
        raise LoopError(f"--seeds must be at least 1 (the number of seeds, 0 to N-1), got {seeds!r}"
                        if isinstance(seeds, int) else f"seeds must be distinct integers, got {seeds!r}")
    if target is not None and not math.isfinite(target):  # every row read '(0/3)' after the whole bench
        raise LoopError(f"--target must be a finite number, got {target}")
    metric = metric or ("accuracy" if task == "classification" else "crps")
    # a bench measures on the test split: the cross-validated curve of a project without one never comes here
    # (listed, then 'no evaluated cycle with metric cv_crps'; a black-box check)
    measured = [m for m in METRICS[task] if not m.startswith("cv_")]
    if metric not in measured:  # before the runs, not after them
        raise LoopError(f"unknown metric {metric!r} for a {task} project; metrics: {', '.join(measured)}")

    higher = metric in HIGHER_IS_BETTER
    # a class's predictive NLL is >= 0 (a regression density's can be negative)
    low, high = METRIC_RANGE.get(metric, (0.0, math.inf) if metric == "nll" and task == "classification"
                                 else (-math.inf, math.inf))
    if target is not None and not low <= target <= high:
        raise LoopError(f"--target {target:g} is outside what {metric} can be ({low:g} to {high:g}): "
                        "no run would reach it")

    if budget < 1:  # as `run` says it ('--batch-size 10 is larger than --budget 0' named the other option)
        raise LoopError(f"--budget must be at least 1, got {budget}")
    if at is not None and any(n > budget for n in at):  # the column held the budget's values under another count
        raise LoopError(f"--at {max(at)} is beyond --budget {budget}: the label counts of the table's columns must be "
                        "within the budget")
    if (initial if initial is not None else batch_size) > budget:  # resolve leaves it to a recorded run: a project
        raise first_batch_refusal(initial, batch_size, budget)   # holding a longer one read 'none fitted a model'
    default_out = proj.root / "bench"
    if out_dir is None and default_out.is_symlink():  # a received project's bench/ led its tables out of the folder
        raise LoopError(f"{default_out} is a symbolic link to {default_out.resolve()}: alkit writes the bench tables "
                        "into the project's own bench folder; remove the link, or name the folder with --out-dir")
    loop = ActiveLoop(proj)
    check_project_store(proj, loop.store)  # another project's store: refused once, not as every run's failure
    test_keys, test_labels = loop.store.test_set()
    if not len(test_keys):  # every run would be spent, then no test metric found (a black-box check)
        raise LoopError("bench compares strategies on the test split, and this project has none (every labelled row "
                        "is in the pool): make one with `alkit init --hide-labels --test-frac F` (or --split-col)")
    if task == "regression":  # before the runs: nll10 / ece10 on test targets of one value were never recorded
        from alkit.metrics import bucket_metrics_refusal

        why = bucket_metrics_refusal(metric, test_labels)
        if why:
            raise LoopError(why)
    plan: list[tuple[RunRequest, str]] = []
    for entry in names:
        name, _, scorer = entry.partition(":")  # "epistemic:laplace" = preset with another scorer
        get_preset(name)  # a clear error for an unknown name
        if name in unavailable and strategies is not None and not scorer:
            raise LoopError(f"strategy {name!r} cannot run here: {unavailable[name]}")
        for seed in seed_list:
            req = RunRequest(strategy=name, budget=budget, batch_size=batch_size, seed=seed,
                             initial=initial, initial_selector=initial_selector, train=dict(train or {}),
                             scorer=scorer or None)
            try:
                spec = loop.resolve(req).spec  # validates every run before any starts
            except LoopError as exc:  # its way out, another --name, is no option of bench's
                raise LoopError(str(exc).replace("or give this run another --name",
                                                 "and note that bench names its runs as `alkit run` does, so it "
                                                 "cannot run the default settings beside that run")) from None
            try:  # a run an earlier alkit named so with other settings was reused as this one, in another row
                loop.store.check_run(spec)
            except StoreError as exc:
                raise LoopError(str(exc).replace("use another --name or the original arguments",
                                                 "bench cannot run this strategy beside it under that name; "
                                                 "`alkit status` shows its settings")) from None
            plan.append((req, spec.name))
    _prepare_out_dir(Path(out_dir) if out_dir is not None else default_out)  # after every other check, before runs

    result_runs: dict[str, list[str]] = {"ran": [], "skipped": []}
    extended: list[str] = []  # runs of a smaller budget, continued after a last batch cut short
    failed: dict[str, str] = {}
    columns = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    # off a terminal (a pipe, a log file) no bar, as `run` does: rich drew it once at the end, into the output
    drawn = progress and (console is None or console.is_terminal)
    with Progress(*columns, console=console, disable=not drawn, transient=False) as bar:
        overall = bar.add_task(f"bench: {len(plan)} runs, labels", total=budget * len(plan))
        current = bar.add_task("", total=budget)
        now: dict[str, Any] = {"run": "", "done": 0}

        def on_event(kind: str, payload: dict[str, Any]) -> None:
            if kind == "run_start":  # a reused longer run counts its first `budget` labels only
                now["run"] = payload["run"]
                spent = min(payload["spent"], budget)
                now["done"] = spent
                bar.update(current, completed=spent, description=f"  {payload['run']}")
                bar.advance(overall, spent)
            elif kind == "phase":
                bar.update(current, description=f"  {now['run']}: cycle {payload['cycle']} {payload['phase']}")
            elif kind == "note":  # the loop's word on a run (another thread count than it started with): run's says it
                if console is not None:
                    bar.console.print(f"[yellow]note:[/] {escape(payload['message'])}", highlight=False)
                else:
                    warnings.warn(Note(payload["message"]))
            elif kind == "cycle_end":
                step = min(payload["n_selected"], budget - now["done"])
                now["done"] += step
                bar.advance(current, step)
                bar.advance(overall, step)

        loop.on_event = on_event

        def done_for_bench(prev: Any) -> bool:
            """Complete at this budget, or a longer run already past it (read up to the budget;
            continuing it with a smaller one would lower its budget).  A run of this budget that
            spent it but is not complete was killed before its last evaluation: it is resumed."""
            return prev is not None and ((prev.status == "complete" and prev.budget == budget)
                                         or (prev.budget > budget and loop.store.n_spent(prev.id) >= budget))

        def keep_longer(req: RunRequest, prev: Any) -> RunRequest:
            """A longer run short of this budget goes on under its own budget, for the cycles that reach this
            one (bench lowered it to its own budget, a black-box check).  A run that exists goes on under the
            stopping rules recorded with it, as `alkit run` continues it: bench took a stopped run past its rule."""
            recorded = recorded_rules(prev)
            if recorded:
                req = dataclasses.replace(req, stop=recorded)
            if prev is None or prev.budget <= budget:
                return req
            spent = loop.store.n_spent(prev.id)
            cycles = math.ceil((budget - spent) / req.batch_size) + 1 if spent else None
            return dataclasses.replace(req, budget=prev.budget, max_cycles=cycles)

        def run_one(req: RunRequest, run_name: str) -> bool:
            """Run (or resume) one; False when another process holds it (nothing was written)."""
            try:
                loop.run(req)
            except LoopError:
                raise
            except RunBusy:
                return False
            except Exception as exc:  # one broken strategy must not cost the other runs
                # a refusal (bad data) reads as its message; anything else names its type
                failed[run_name] = str(exc) if isinstance(exc, (ValueError, StoreError)) else f"{type(exc).__name__}: {exc}"
                if console is not None:
                    console.print(f"[red]failed[/] {run_name}: {failed[run_name]}")
            return True

        # a run another process holds (a second bench on this project) is left to it and come back
        # to once its lease is free: two benches share the work and both end with the full table
        deferred: list[tuple[RunRequest, str]] = []
        existing = {r.name: r for r in loop.store.runs()}  # as the bench starts; a held run is read again
        for req, run_name in plan:
            prev = existing.get(run_name)
            if prev is not None and prev.budget < budget and (loop.store.n_spent(prev.id) - prev.initial) % batch_size:
                extended.append(run_name)  # its last batch was cut to its budget: it goes on from there
            if done_for_bench(prev):
                result_runs["skipped"].append(run_name)
                bar.advance(overall, budget)
                continue
            if run_one(keep_longer(req, prev), run_name):
                result_runs["ran"].append(run_name)
            else:
                deferred.append((req, run_name))
                if console is not None:
                    console.print(f"[yellow]busy[/] {run_name}: another process is running it; bench comes back to it last")
        while deferred:
            req, run_name = deferred[0]
            if run_name in live_runs(loop.store):
                bar.update(current, description=f"  waiting for {run_name} (another process)")
                time.sleep(BUSY_POLL_S)
                continue
            prev = next((r for r in loop.store.runs() if r.name == run_name), None)
            if done_for_bench(prev):
                result_runs["skipped"].append(run_name)
                bar.advance(overall, budget)
                deferred.pop(0)
            elif run_one(keep_longer(req, prev), run_name):
                result_runs["ran"].append(run_name)
                deferred.pop(0)
        bar.remove_task(current)  # the per-run bar is done; the total stays

    bench_runs = {n for _, n in plan}
    df = cycles_frame(loop.store, loop.project.config)
    if df.height:
        df = df.filter(pl.col("run").is_in(list(bench_runs)) & (pl.col("n_labeled") <= budget))
    if df.height == 0 or metric not in df.columns:
        raise LoopError(f"no evaluated cycle with metric {metric!r} among the bench's runs"
                        + ("" if df.height else ": none fitted a model (a classification run needs labels of two "
                           "classes; try a larger --budget)"))
    at_list = list(at) if at is not None else _default_at(df, budget)
    if target is None:
        target = _default_target(df, metric, higher)
    reference = random_curve(df["strategy"].unique().to_list())
    table = summary_table(df, metric, at=at_list, target=target, higher_is_better=higher, reference=reference)
    table = table.join(_timings(df), on="strategy", how="left")
    start = table["aulc_from"][0] if table.height else None  # the same in every row (summary_table)
    span = _aulc_span(start)
    if start is None:  # every curve starts at the first batch: nothing to say
        table = table.drop("aulc_from")

    out = Path(out_dir) if out_dir is not None else proj.root / "bench"
    out.mkdir(parents=True, exist_ok=True)
    paths = out / "bench_summary.csv", out / "bench_summary.md", out / "bench_cycles.csv"
    # run names are the user's: no spreadsheet formulas; written through a temporary file, so a link a received
    # project left in bench/ is replaced, not written through (an untrusted-input check)
    atomic_write(paths[0], escape_formulas(table).write_csv)
    atomic_write(paths[2], escape_formulas(df.sort("run", "cycle")).write_csv)
    notes = [f"AULC{span}"] if span else []
    ends = df.group_by("run").agg(pl.col("n_labeled").max().alias("last")).filter(pl.col("last") < budget).sort("run")
    if ends.height:  # a run stopped by a rule, or reused from a smaller budget: its values were mixed in unsaid
        runs_now = {r.name: r for r in loop.store.runs()}

        def why(run: str) -> str:
            r = runs_now.get(run)
            if r is not None and r.budget > budget:  # 'run with a smaller budget' was said of a longer one
                return f"a run of budget {r.budget}, read up to {budget}: its batches end at other counts"
            if r is not None and r.status == "stopped":
                return "stopped by a --stop rule"
            return "run with a smaller budget"

        shown = ", ".join(f"{r} at {n} ({why(r)})" for r, n in ends.head(5).iter_rows()) + (" ..." if ends.height > 5 else "")
        notes.append(f"{ends.height} run{'s' if ends.height > 1 else ''} end{'' if ends.height > 1 else 's'} before "
                     f"{budget} labels ({shown}): in the columns past their end they count with their last value, "
                     "and their AULC covers their shorter curve; a fresh --out-dir and project give every run this "
                     "budget's batches")
    if extended:  # 10, 10, 5, then 5 more: not a fresh bench's 10, 10, 10 (a black-box check)
        shown = ", ".join(extended[:5]) + (" ..." if len(extended) > 5 else "")
        notes.append(f"{len(extended)} run{'s' if len(extended) > 1 else ''} of a smaller earlier budget went on from "
                     f"a last batch cut to that budget ({shown}): their batches, and so their picks, differ from a "
                     "fresh bench's at this budget")
    evaluated = set(df.filter(pl.col(metric).is_not_null())["run"].unique().to_list())
    unfitted = sorted(bench_runs - evaluated - set(failed))
    if unfitted:  # left out of the means without a word: a strategy's row read 1.000 over its one fitted seed
        shown = ", ".join(unfitted[:5]) + (" ..." if len(unfitted) > 5 else "")
        notes.append(f"{len(unfitted)} run{'s' if len(unfitted) > 1 else ''} never fitted a model and "
                     f"{'are' if len(unfitted) > 1 else 'is'} left out of the means ({shown}: a classification run "
                     "needs labels of two classes); the n seeds column counts the seeds each row averages")
    majority = _majority_share(loop.store) if proj.config.task == "classification" and metric == "accuracy" else None
    if majority is not None and majority[1] >= MAJORITY_NOTE:
        notes.append(f"the test split is {majority[1]:.0%} {majority[0]!r}: predicting that class alone scores "
                     f"{majority[1]:.3f} accuracy; compare with --metric balanced_accuracy or macro_f1 (the runs are reused)")
    markdown = _markdown(proj, table, metric, higher, target, budget, batch_size, seed_list, at_list, failed, command, span)
    text = markdown + "".join(f"\nNote: {n}.\n" for n in notes if not n.startswith("AULC"))
    atomic_write(paths[1], lambda p: p.write_text(text, encoding="utf-8"))
    return BenchResult(table, *paths, metric=metric, target=target, runs=[n for _, n in plan], notes=notes,
                       ran=result_runs["ran"],
                       skipped=result_runs["skipped"], failed=failed,
                       unavailable={k: v for k, v in unavailable.items() if strategies is None})


MAJORITY_NOTE = 0.8  # a test split this much one class: accuracy mostly measures predicting it


def _majority_share(store: Any) -> tuple[str, float] | None:
    """The test split's most common class and its share (None without a labelled test split)."""
    _, labels = store.test_set()
    if not labels:
        return None
    values, counts = np.unique(np.asarray(labels, dtype=object).astype(str), return_counts=True)
    return str(values[counts.argmax()]), float(counts.max() / counts.sum())


def _aulc_span(start: int | None) -> str:
    """Where every curve's AULC starts, when some run's curve starts later than the first batch."""
    return (f" from {start} labels, the first count at which every run had a model (a run whose first labels "
            "were all of one class has none before)") if start is not None else ""


def _prepare_out_dir(out: Path) -> None:
    """Make the folder the tables go to and try a write there before any run: an --out-dir they could not go to (a
    file, a file above it, /proc/x, a folder where a table's file goes) was refused after every strategy and seed
    had run into the store (black-box checks).  An OSError names the path in one line (exit 2)."""
    there = next((p for p in (out, *out.parents) if p.exists() or p.is_symlink()), None)
    if there is not None and there.is_symlink() and not there.exists():
        raise LoopError(f"--out-dir {out}: {there} is a link to {os.readlink(there)}, which does not exist")
    if there is not None and not there.is_dir():
        raise LoopError(f"--out-dir {out}: {there} is a file, not a folder; name a folder for the bench tables")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("bench_summary.csv", "bench_summary.md", "bench_cycles.csv", "bench_curves.png"):
        if (out / name).is_dir():
            raise LoopError(f"--out-dir {out}: {out / name} is a folder where bench writes its file {name}")
    import tempfile

    with tempfile.NamedTemporaryFile(dir=out, prefix=".alkit-probe-"):
        pass


def _default_target(df: pl.DataFrame, metric: str, higher: bool) -> float | None:
    """random's mean final value if benched, else 95 % (105 %) of the best strategy's final mean."""
    last = df.sort("n_labeled").group_by("strategy", "run").agg(pl.col(metric).last())
    finals = last.group_by("strategy").agg(pl.col(metric).mean())
    by_strategy = dict(zip(finals["strategy"].to_list(), finals[metric].to_list()))
    reference = random_curve(list(by_strategy))  # 'random-vbll' as like_with_like names it, or 'random'
    if reference is not None and by_strategy[reference] is not None:
        return float(by_strategy[reference])
    values = [v for v in by_strategy.values() if v is not None and np.isfinite(v)]
    if not values:
        return None
    return float(max(values) * 0.95) if higher else float(min(values) * 1.05)


def _markdown(proj: Project, table: pl.DataFrame, metric: str, higher: bool, target: float | None,
              budget: int, batch_size: int, seeds: list[int], at: list[int], failed: dict[str, str],
              command: str | None, span: str = "") -> str:
    direction = "higher" if higher else "lower"
    lines = [
        f"# Label efficiency: {proj.root.name}",
        "",
        f"Task {proj.config.task}; budget {budget} labels in batches of {batch_size}; seeds "
        f"{', '.join(map(str, seeds))}; metric {metric} on the held-out test split ({direction} is better). "
        f"Columns: {metric} at {', '.join(map(str, at))} labels (the value at the largest evaluated "
        f"label count not above it); AULC = area under each seed's learning curve{span} (trapezoids) divided by "
        f"its label span; labels to target curve = first label count where the mean curve over seeds reaches "
        f"{target if target is None else f'{target:.4g}'} (labels to target = the mean over the seeds whose own "
        "curve reaches it, n reached of n seeds); score s per 1k = scoring seconds per "
        "1,000 scored pool items; select s per run = selection seconds per run after the first, "
        "model-free batch. Values are mean ± sample std over seeds.",
        "",
    ]
    reference = random_curve(table["strategy"].to_list())
    if reference is not None and "aulc_vs_ref_mean" in table.columns:
        lines += [f"Against random picks ({reference}, the reference): aulc vs ref = each seed's AULC minus "
                  f"{reference}'s on the same seed (positive: better, also for a lower-is-better metric); "
                  "better seeds = on how many seeds it was better; worst vs ref = the label count where its mean "
                  f"is furthest below (or least above) {reference}'s, in {reference}'s standard deviations over "
                  "seeds there (below -1: more than one standard deviation worse), at the label count in the "
                  "next column.", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"Written {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", "", to_markdown(table)]
    if failed:
        lines += ["", "Failed runs (rerun to retry):", ""] + [f"- {k}: {v}" for k, v in failed.items()]
    return "\n".join(lines) + "\n"
