"""A run extended after its budget was spent: it continues as if given the larger budget at the start,
and learning curves hold one point per label count.

Before, the evaluation-only last cycle and the extension's first cycle were two fits on the same
labels: `alkit bench` and `alkit plot` refused the project ("logs n_labeled twice"), and every later
pick differed from a run given the larger budget from the start.  ``curve_cycles`` still keeps the
last fit of each label count where two remain (a batch whose items were all skipped)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import polars as pl

from alkit.bench import run_bench
from alkit.config import load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.plots import curve_stats
from alkit.pools.store import curve_cycles
from alkit.report import cycles_frame, run_summaries


def _row(cycle: int, n_labeled: int, n_selected: int) -> SimpleNamespace:
    return SimpleNamespace(cycle=cycle, n_labeled=n_labeled, n_selected=n_selected)


def test_curve_cycles_keeps_the_last_fit_of_each_label_count() -> None:
    rows = [_row(0, 0, 10), _row(1, 10, 10), _row(2, 20, 0),  # budget 20 spent: evaluation only
            _row(3, 20, 10),  # extended: the same labels fitted again
            _row(4, 30, 10), _row(5, 30, 10),  # every item of cycle 4's batch skipped by the labelers
            _row(6, 40, 0)]
    assert [r.cycle for r in curve_cycles(rows)] == [0, 1, 3, 5, 6]
    assert [r.cycle for r in curve_cycles(rows, next_n_labeled=40)] == [0, 1, 3, 5]  # a cycle being decided
    assert [r.cycle for r in curve_cycles(rows, next_n_labeled=50)] == [0, 1, 3, 5, 6]
    assert curve_cycles([]) == []
    # a team's run learning from fewer labels than before (an answer made a skip, then a batch all skipped; a
    # metrics check): the older fit on more labels is superseded, so the curve ends on the latest fit
    fewer = [_row(0, 10, 10), _row(1, 18, 10), _row(2, 17, 10)]
    assert [r.cycle for r in curve_cycles(fewer)] == [0, 2]
    assert [r.cycle for r in curve_cycles(fewer, next_n_labeled=16)] == [0]


def test_an_extended_run_equals_a_run_given_the_larger_budget_from_the_start(digits_project: Path) -> None:
    """A larger --budget on a complete run drops its evaluation-only last cycle and continues from that
    cycle number: the same fits, seeds and picks as one run to the larger budget (appending a cycle
    refitted the same labels under another seed and shifted every later pick), one point per label
    count in the curves, and bench reads it like any run."""
    loop = ActiveLoop(load_project(digits_project))
    req = dict(strategy="epistemic", batch_size=10, seed=0)
    loop.run(RunRequest(budget=20, name="extended", **req))
    assert [c.n_selected for c in loop.store.cycles(1)] == [10, 10, 0]
    loop.run(RunRequest(budget=30, name="extended", **req))  # a larger budget continues the completed run
    loop.run(RunRequest(budget=30, name="direct", **req))
    ext, direct = (loop.store.runs()[i].id for i in (0, 1))
    rows = {r: [(c.cycle, c.n_labeled, c.n_selected, c.metrics) for c in loop.store.cycles(r)] for r in (ext, direct)}
    assert rows[ext] == rows[direct]
    assert [(n, k) for _, n, k, _ in rows[ext]] == [(0, 10), (10, 10), (20, 10), (30, 0)]
    picks = {r: [(c, k) for c, k in zip(*_selections(loop, r))] for r in (ext, direct)}
    assert picks[ext] == picks[direct] and len(picks[ext]) == 30

    df = cycles_frame(loop.store)
    assert df.filter(pl.col("run") == "extended")["n_labeled"].to_list() == [10, 20, 30]
    assert curve_stats(df, "accuracy")["extended"].n_seeds == 1
    assert run_summaries(loop.store)[0]["cycles"] == 4


def test_a_stopped_run_given_a_larger_budget_equals_a_run_never_stopped(digits_project: Path) -> None:
    """A stopped run continued with a larger --budget appended a refit at the stop's label count: two curve
    points at 10 labels, a cycle count one too high, and every later pick different from a run never stopped."""
    loop = ActiveLoop(load_project(digits_project))
    req = dict(strategy="epistemic", batch_size=10, seed=3)
    res = loop.run(RunRequest(budget=30, name="stopped", stop=["max-uncertainty:threshold=1e9"], **req))
    assert res[-1].stopped is not None and res[-1].n_labeled == 10
    loop.run(RunRequest(budget=40, name="stopped", **req))  # continued without the rule
    loop.run(RunRequest(budget=40, name="fresh", **req))
    stopped, fresh = (next(r for r in loop.store.runs() if r.name == n) for n in ("stopped", "fresh"))
    assert stopped.status == "complete" and stopped.config["stopped"]["rule"] == "max-uncertainty"  # the record stays
    rows = {r.id: [(c.cycle, c.n_labeled, c.n_selected, c.metrics) for c in loop.store.cycles(r.id)] for r in (stopped, fresh)}
    assert rows[stopped.id] == rows[fresh.id]
    assert _selections(loop, stopped.id) == _selections(loop, fresh.id)


def _selections(loop: ActiveLoop, run_id: int) -> tuple[list[int], list[int]]:
    from sqlalchemy import select

    from alkit.pools.schema import SelectionRow

    with loop.store.session() as s:
        rows = s.execute(select(SelectionRow.cycle, SelectionRow.item_key).where(SelectionRow.run_id == run_id)
                         .order_by(SelectionRow.cycle, SelectionRow.rank)).all()
    return [int(c) for c, _ in rows], [int(k) for _, k in rows]


def test_bench_reads_an_extended_run(digits_project: Path) -> None:
    loop = ActiveLoop(load_project(digits_project))
    req = dict(strategy="random", batch_size=10, seed=0)
    loop.run(RunRequest(budget=20, **req))
    loop.run(RunRequest(budget=30, **req))
    stored = loop.store.cycles(loop.store.runs()[0].id)
    res = run_bench(digits_project, strategies=["random"], budget=30, batch_size=10, seeds=1,
                    progress=False)
    assert not res.failed and res.skipped == ["random-b10-s0"]  # complete: reused, not rerun
    table = pl.read_csv(res.summary_csv)
    assert table["accuracy@20_mean"].to_list() == [next(c.metrics["accuracy"] for c in stored if c.n_labeled == 20)]
