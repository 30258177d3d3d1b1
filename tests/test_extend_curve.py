"""A run extended after its budget was spent: one learning-curve point per label count.

The evaluation-only last cycle (n_selected 0) and the first cycle of the extension are two fits on
the same labels; `alkit bench` and `alkit plot` refused such a project ("logs n_labeled twice")."""

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

TINY_TRAIN = {"max_epochs": 3, "min_steps": 5, "patience": 1}


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


def test_extended_run_has_one_point_per_label_count_in_plots_and_bench(digits_project: Path) -> None:
    loop = ActiveLoop(load_project(digits_project))
    req = dict(strategy="random", batch_size=10, seed=0, train=TINY_TRAIN)
    loop.run(RunRequest(budget=20, **req))
    loop.run(RunRequest(budget=30, **req))  # a larger budget continues the completed run
    run_id = loop.store.runs()[0].id
    stored = loop.store.cycles(run_id)
    assert [(c.n_labeled, c.n_selected) for c in stored] == [(0, 10), (10, 10), (20, 0), (20, 10), (30, 0)]

    df = cycles_frame(loop.store)
    assert df["n_labeled"].to_list() == [10, 20, 30]
    at20 = df.filter(pl.col("n_labeled") == 20)
    assert at20["cycle"].to_list() == [3]  # the extension's fit supersedes the evaluation-only cycle
    assert at20["accuracy"].to_list() == [stored[3].metrics["accuracy"]]
    assert curve_stats(df, "accuracy")["random"].n_seeds == 1  # `alkit plot` used to raise here
    assert run_summaries(loop.store)[0]["cycles"] == 5  # the summary still counts every stored cycle

    res = run_bench(digits_project, strategies=["random"], budget=30, batch_size=10, seeds=1, train=TINY_TRAIN,
                    progress=False)
    assert not res.failed and res.skipped == ["random-b10-s0"]  # complete: reused, not rerun
    table = pl.read_csv(res.summary_csv)
    assert table["accuracy@20_mean"].to_list() == [stored[3].metrics["accuracy"]]
