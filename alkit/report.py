"""Read-only views of a project's store: per-run summaries and the per-cycle log as a frame."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from alkit.choices import HIGHER_IS_BETTER
from alkit.pools.leases import live_runs
from alkit.pools.queue import n_waiting
from alkit.pools.store import Store, curve_cycles
from alkit.presets import get_preset
from alkit.runs import current_curve, rules_since

if TYPE_CHECKING:
    from alkit.config import ProjectConfig


def curve_label(run: Any, cfg: "ProjectConfig | None" = None) -> str:
    """The learning-curve group of a run: ``config['curve']``, written when the run was created
    (an earlier alkit's run named by its settings: the curve today's names give them,
    ``current_curve``; stores from before curves were recorded: the name without its batch and
    seed suffix).  ``cfg``: the project's config (its task and input kind, ``current_curve``)."""
    curve = current_curve(run, cfg.task, cfg.input_kind) if cfg is not None else current_curve(run)
    return curve if curve else re.sub(r"-b\d+-s\d+$", "", run.name)


def curve_groups(runs: list[Any], cfg: "ProjectConfig | None" = None) -> dict[int, str]:
    """run id -> its learning-curve group: ``curve_label``; where the runs of a group differ in
    batch size or first-batch size (--initial), each setting is its own curve ("margin b20",
    "margin i50"), and runs still sharing a seed then go by their names: every curve averages
    one run per seed, all started and batched alike."""
    def split_by(label_of: dict[int, str], attr: str, tag: str) -> dict[int, str]:
        values: dict[str, set] = {}
        for r in runs:
            values.setdefault(label_of[r.id], set()).add(getattr(r, attr))
        return {r.id: f"{label_of[r.id]} {tag}{getattr(r, attr)}" if len(values[label_of[r.id]]) > 1
                else label_of[r.id] for r in runs}

    label_of = split_by(split_by({r.id: curve_label(r, cfg) for r in runs}, "batch_size", "b"), "initial", "i")
    seen: dict[tuple[str, int], int] = {}
    for r in runs:
        seen[(label_of[r.id], r.seed)] = seen.get((label_of[r.id], r.seed), 0) + 1
    clash = {label for (label, _), k in seen.items() if k > 1}
    return {r.id: r.name if label_of[r.id] in clash else label_of[r.id] for r in runs}


def _status(store: Store, run: Any, live: set[str]) -> str:
    """The run's status as a user acts on it: 'interrupted' for a run left 'running' that no live process
    holds (killed or stopped mid-cycle), 'ready' for one left 'waiting' with nothing queued any more (people's
    labels are in, or it was stopped mid-cycle after they were): `alkit run --resume NAME` continues both."""
    if run.name in live:
        return "running" if run.status in ("running", "waiting") else run.status
    if run.status == "running":
        return "interrupted"
    if run.status == "waiting" and n_waiting(store, run.id) == 0:
        return "ready"
    return run.status


def run_summaries(store: Store, cfg: "ProjectConfig | None" = None) -> list[dict[str, Any]]:
    """One entry per run: identity, progress and the latest metrics by name (``cfg``: the
    project's config, for ``curve_label``)."""
    cycles = store.cycles()
    by_run: dict[int, list] = {}
    for c in cycles:
        by_run.setdefault(c.run_id, []).append(c)
    live = live_runs(store)
    out = []
    for run in store.runs():
        rows = by_run.get(run.id, [])
        latest = next((c for c in reversed(rows) if c.metrics), None)
        signals = store.signals(run.id)
        out.append({
            "id": run.id,
            "name": run.name,
            "curve": curve_label(run, cfg),  # the learning curve plot and bench put it on
            "strategy": run.strategy,
            "scorer": run.scorer,
            # what picked its batches: the settings a run's name abbreviates (the store keeps them)
            **_method(run, cfg, rows),
            "seed": run.seed,
            "batch_size": run.batch_size,
            "initial": run.initial,  # the first, model-free batch's size (--initial; it names the run's curve)
            "budget": run.budget,
            "status": _status(store, run, live),
            "cycles": len(rows),
            "n_labeled": len(labeled := store.labeled_set(run.id)[0]),
            "n_spent": len(picked := store.selected_keys(run.id)),  # of its budget: the items it selected
            # labels it learns from that are not answers to its own picks (given labels, other runs' answers):
            # with a skip among its picks the two counts can be equal while the labels differ (a black-box check)
            "n_not_picked": int(np.isin(labeled, picked, invert=True).sum()),
            "metrics_n_labeled": latest.n_labeled if latest else None,
            "metrics": dict(latest.metrics) if latest else {},
            "fit_s": sum(c.fit_s for c in rows),
            "score_s": sum(c.score_s for c in rows),
            "select_s": sum(c.select_s for c in rows),
            # the test evaluation's CPU seconds, recorded with each cycle's signals (in none of the above)
            "eval_s": sum(float(d.get("eval_s") or 0.0) for d in signals.values()),
            # what the latest fit chose by cross-validation (models/capacity.py), where it chose
            "capacity": next((signals[c]["capacity"] for c in sorted(signals, reverse=True) if "capacity" in signals[c]), None),
            "n_scored": sum(c.n_scored for c in rows),
            "stopped": run.config.get("stopped") if run.status == "stopped" else None,
            # what watches the run, and the last stop on record (kept once a larger budget continued it)
            "stop_rules": list(run.config.get("stop") or []),
            # the settings it was recorded with that a --name hides (only its name showed them; a black-box check)
            "options": dict(run.config.get("learner") or {}),
            "train": dict(run.config.get("train") or {}),
            "candidates": run.config.get("candidates"),
            "stratify_by": run.config.get("stratify_by"),
            "last_stop": run.config.get("stopped"),
        })
        out[-1]["forecast"] = _forecast(store, run, rows, out[-1]["n_labeled"], out[-1]["n_spent"])
    return out


def _method(run: Any, cfg: "ProjectConfig | None", rows: list[Any]) -> dict[str, Any]:
    """The run's acquisition, its selector once a model exists and its first batch's selector (the
    preset's, unless the run named another); None where unknown (a preset no longer listed) or where no batch
    was model-free: a run whose first cycle fitted a model on labels it already had (the first batch was
    said to be 'random' where it was the model's top k; a black-box check)."""
    try:
        preset = get_preset(run.strategy)
    except ValueError:  # get_preset's refusal of a name it does not list
        preset = None
    task = cfg.task if cfg is not None else None
    selector = preset.selector_for(task, run.batch_size) if preset is not None and task else None
    # a fit at cycle 0 picked the first batch (without a test split it records no metrics, but a fit time)
    fitted_first = bool(rows) and rows[0].cycle == 0 and (rows[0].fit_s > 0 or bool(rows[0].metrics))
    return {"acquisition": None if selector == "random" else run.config.get("acquisition"),  # random picks score nothing
            "selector": selector,
            "initial_selector": None if fitted_first else
            run.config.get("initial_selector") or (preset.initial_selector if preset else None)}


def _forecast(store: Store, run: Any, rows: list[Any], n_labeled: int, n_spent: int) -> dict[str, Any] | None:
    """For a run with the forecast stopping rule: its metric predicted at the budget, 5-95 % band.  The curve's
    axis is the labels a run learns from (``n_labeled`` now), not its picks: the budget is read there as the labels
    it will learn from once spent, now's plus its queued items' and the budget left (it was read as ``run.budget``
    labels, below every fitted point where the project gave labels beside the run's picks: 0.868 predicted beside
    0.992 measured; a waiting run's queued batch was left out: black-box checks).  A skip is spent, never learned."""
    if not any(str(r).startswith("forecast") for r in run.config.get("stop", [])):
        return None
    from alkit.stopping import forecast_at

    present = {k for c in rows for k in c.metrics}
    metric = next((m for m in ("accuracy", "crps", "cv_accuracy", "cv_crps") if m in present), "accuracy")
    # the fit the rule made: a stopped run's from the stop before (``since``), any other's from its last stop on
    # (a continued run's band was fitted to the whole curve, not to the points that decided: a black-box check)
    stopped = run.config.get("stopped") or {}
    since = int(stopped.get("since", -1)) if run.status == "stopped" else rules_since(run.config)
    pts = [(c.n_labeled, c.metrics[metric]) for c in curve_cycles(rows) if metric in c.metrics and c.cycle >= since]
    at = n_labeled + n_waiting(store, run.id) + max(run.budget - n_spent, 0)
    fc = forecast_at([n for n, _ in pts], [v for _, v in pts], at, metric in HIGHER_IS_BETTER)
    return None if fc is None else {"metric": metric, **fc}


def cycles_frame(store: Store, cfg: "ProjectConfig | None" = None) -> pl.DataFrame:
    """Every learning-curve point with metrics (``curve_cycles``: the last cycle of each label
    count): run_id, run, strategy (curve group), seed, n_labeled, cycle, timings, and one float
    column per metric."""
    runs = {r.id: r for r in store.runs()}
    signals = store.all_signals()
    by_run: dict[int, list[Any]] = {}
    for c in store.cycles():
        by_run.setdefault(c.run_id, []).append(c)
    cycles = [c for rows in by_run.values() for c in curve_cycles(rows) if c.metrics]
    groups = curve_groups([runs[i] for i in dict.fromkeys(c.run_id for c in cycles)], cfg)
    rows = []
    for c in cycles:
        r = runs[c.run_id]
        rows.append({"run_id": r.id, "run": r.name, "strategy": groups[r.id], "seed": r.seed,
                     "cycle": c.cycle, "n_labeled": c.n_labeled, "fit_s": c.fit_s,
                     "eval_s": float(signals.get((r.id, c.cycle), {}).get("eval_s", 0.0)), "score_s": c.score_s,
                     "select_s": c.select_s, "n_scored": c.n_scored,
                     **{k: float(v) for k, v in c.metrics.items()}})
    if not rows:
        return pl.DataFrame(schema={"run_id": pl.Int64, "run": pl.Utf8, "strategy": pl.Utf8, "seed": pl.Int64,
                                    "cycle": pl.Int64, "n_labeled": pl.Int64})
    return pl.DataFrame(rows)


def capacity_text(capacity: dict[str, Any], latest_n: int | None = None) -> str:
    """What a fit chose by cross-validation, in words: 'weight prior 1000, chosen at 40 labels'.  A
    choice is kept by later fits until the labels have grown by CV_GROWTH (and past CV_MAX_N for good),
    so the label count is when it was made, not the latest fit's.  ``latest_n``: the labels of the run's
    latest fit, past which no 'next chosen at' is promised (a run at 60 labels read 'next chosen at 40')."""
    parts = [f"weight prior {float(capacity['prior_l2']):g}"] if capacity.get("prior_l2") else []
    if int(capacity.get("depth", -1)) >= 0:
        parts.append(f"{int(capacity['depth'])} residual block{'s' if int(capacity['depth']) != 1 else ''}")
    if capacity.get("head"):
        parts.append(f"{capacity['head']} head")
    if capacity.get("ridge", "off") != "off":
        parts.append(f"ridge {capacity['ridge']}")
    from alkit.models.capacity import CV_GROWTH, CV_MAX_N

    n = int(capacity["n_labels"])
    nxt = math.ceil(n * CV_GROWTH)
    again = ("kept from here on" if n * CV_GROWTH > CV_MAX_N  # 'chosen again at 40' read as past for a run at 30
             # past the next choice point, what the later fits did is not on record (a regression head is chosen
             # only while the labels show a point mass): said as such, not as 'kept' (a black-box check)
             else f"no later choice on record; the latest fit at {latest_n} labels" if latest_n is not None
             and latest_n >= nxt
             else f"next chosen at {nxt} labels")
    return f"{', '.join(parts) or 'the defaults'}, chosen at {n} labels ({again})"
