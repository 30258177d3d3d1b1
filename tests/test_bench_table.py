"""`alkit bench`'s terminal table: the labels-to-target cell says how many seeds reached the target."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from rich.console import Console

from alkit.cli_tables import bench_table


def _render(df: pl.DataFrame) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(bench_table(df, "crps"))
    return out.getvalue()


def test_labels_to_target_names_the_seeds_that_reached_it() -> None:
    df = pl.DataFrame({"strategy": ["epistemic", "random", "margin"], "n_seeds": [2, 2, 2],
                       "crps@60_mean": [1.667, 1.614, 1.7], "crps@60_std": [0.124, 0.012, 0.1],
                       "aulc_mean": [1.715, 1.665, 1.7], "aulc_std": [0.193, 0.034, 0.1],
                       "labels_to_target_mean": [20.0, 55.0, None], "n_reached": [1, 2, 0],
                       "labels_to_target_curve": [None, 55, None]})
    rows = {line.split()[0]: line for line in _render(df).splitlines() if line.strip().startswith(("epi", "ran", "mar"))}
    # the mean curve never reached it, one seed of two did: not the "20" of that one seed (a black-box check)
    assert "— (1/2)" in rows["epistemic"] and "20" not in rows["epistemic"].split("±")[-1]
    assert "55" in rows["random"] and "(2/2)" not in rows["random"]  # every seed reached it
    assert "— (0/2)" in rows["margin"]  # none did


def test_labels_to_target_is_read_off_the_mean_curve() -> None:
    """Seeds reaching 0.9 at 30 and at 90 labels: the mean curve reaches it at 90, not at their mean of 60,
    and a strategy with one fast seed of two and a mean curve that never gets there has none."""
    from alkit.plots import summary_table

    df = pl.DataFrame({"strategy": ["a"] * 6 + ["b"] * 6, "seed": [0, 0, 0, 1, 1, 1] * 2,
                       "run_id": [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3],
                       "n_labeled": [30, 60, 90] * 4,
                       "accuracy": [0.90, 0.91, 0.92, 0.70, 0.80, 0.90, 0.95, 0.95, 0.95, 0.5, 0.6, 0.7]})
    table = {r["strategy"]: r for r in summary_table(df, "accuracy", target=0.9).iter_rows(named=True)}
    assert table["a"]["labels_to_target_curve"] == 90 and table["a"]["labels_to_target_mean"] == 60
    assert table["b"]["labels_to_target_curve"] is None and table["b"]["n_reached"] == 1
    # seeds on different grids (a partial last batch, a continued run): seed 0 reaches 0.9 at 40, seed 1 at 60;
    # the mean of their values at each count (each seed's model at the largest count <= n) reaches it at 60.
    # Only the counts both had were read, and the budget (70) was reported (a black-box check)
    df = pl.DataFrame({"strategy": ["c"] * 10, "seed": [0] * 5 + [1] * 5, "run_id": [4] * 5 + [5] * 5,
                       "n_labeled": [10, 20, 40, 50, 70, 10, 20, 30, 60, 70],
                       "accuracy": [0.5, 0.7, 0.92, 0.93, 0.95, 0.5, 0.6, 0.8, 0.9, 0.94]})
    row = summary_table(df, "accuracy", target=0.9).row(0, named=True)
    assert row["labels_to_target_curve"] == 60 and row["labels_to_target_mean"] == 50 and row["n_reached"] == 2
    # at 50: seed 0's 0.93 and seed 1's value at 30, 0.8: mean 0.865 < 0.9; at 60: (0.93 + 0.9) / 2 >= 0.9
    # a seed a stopping rule ended at 50 (0.908) counts with its last value past its end, as the @n columns take it:
    # the other reaching 0.933 at 80, the mean reaches 0.9125 there; the curve ended at 50 and said 'never'
    df = pl.DataFrame({"strategy": ["d"] * 9, "seed": [0] * 4 + [1] * 5, "run_id": [6] * 4 + [7] * 5,
                       "n_labeled": [20, 30, 40, 50, 20, 40, 60, 80, 100],
                       "accuracy": [0.7, 0.8, 0.88, 0.908, 0.6, 0.8, 0.9, 0.933, 0.94]})
    row = summary_table(df, "accuracy", target=0.9125, at=[100]).row(0, named=True)
    assert row["labels_to_target_curve"] == 80 and row["n_reached"] == 1
    assert row["accuracy@100_mean"] == pytest.approx((0.908 + 0.94) / 2)


def test_status_labels_are_the_runs_spend_and_name_shared_labels() -> None:
    """`alkit status` showed a human-labelled run's shared labels over its own budget (57/40): the
    cell is now the items the run selected over its budget, with the labels it learns from where
    people's labels for other runs' picks add to them."""
    from alkit.cli_tables import summary_table

    def row(name: str, n_labeled: int, n_spent: int) -> dict:
        return {"id": 1, "name": name, "strategy": "random", "scorer": "none", "seed": 0, "cycles": 3,
                "n_labeled": n_labeled, "n_spent": n_spent, "budget": 40, "status": "complete", "metrics": {}}

    out = io.StringIO()
    Console(file=out, width=200).print(summary_table([row("shared", 57, 40), row("own", 30, 30)], "runs"))
    lines = {ln.split()[0]: ln for ln in out.getvalue().splitlines() if ln.strip().startswith(("shared", "own"))}
    assert "40/40 (learns from 57)" in lines["shared"] and "57/40" not in lines["shared"]
    assert "30/40" in lines["own"] and "learns from" not in lines["own"]


def test_status_at_80_columns_keeps_run_names_whole_and_every_metric() -> None:
    """Run names are one token: at 80 columns one of up to 22 characters stays on one line (the
    status wraps between words instead) and both metric columns are shown; a longer one folds."""
    from alkit.cli_tables import summary_table

    def row(name: str, status: str) -> dict:
        return {"id": 1, "name": name, "strategy": "epistemic", "scorer": "vbll", "seed": 0, "cycles": 25,
                "n_labeled": 270, "budget": 270, "status": status, "metrics": {"accuracy": 0.912, "nll": 0.331}}

    names = ["random:vbll-b10-s3", "epistemic-acq-bald-s12", "epistemic-acq-decision-bald-cand-400-b10-s12"]
    out = io.StringIO()
    Console(file=out, width=80).print(summary_table([row(n, "interrupted") for n in names], "runs"))
    text = out.getvalue()
    assert "accuracy" in text and "nll" in text and max(map(len, text.splitlines())) <= 80
    lines = text.splitlines()
    assert any(ln.split()[0] == names[0] for ln in lines if ln.strip()) and any(
        ln.split()[0] == names[1] for ln in lines if ln.strip())
    assert names[2] not in text and names[2][:22] in text.replace("\n", "")  # folded, not cut


def test_bench_at_80_columns_keeps_every_column_and_strategy_name() -> None:
    """At 80 columns `balanced_accuracy@100 ↑` squeezed the strategy column to nothing ("see…") and cut
    AULC and "vs random" (a black-box check): every line fits, names up to 22 characters stay whole."""
    names = ["epistemic-initrandom", "random-vbll-initrandom", "margin"]
    for metric in ("balanced_accuracy", "accuracy", "macro_f1", "crps"):
        df = pl.DataFrame({"strategy": names, "n_seeds": [8, 8, 8],
                           f"{metric}@100_mean": [0.6431, 0.5, 0.61], f"{metric}@100_std": [0.1234, 0.1, 0.05],
                           "aulc_mean": [0.643, 0.426, 0.6], "aulc_std": [0.123, 0.1, 0.05],
                           "labels_to_target_mean": [100.0, 90.0, 80.0], "labels_to_target_curve": [100, 90, 80],
                           "n_reached": [7, 5, 8], "aulc_vs_ref_mean": [0.217, None, 0.1], "better_seeds": [6, None, 5],
                           "paired_seeds": [7, None, 8]})
        out = io.StringIO()
        Console(file=out, width=80).print(bench_table(df, metric))
        text = out.getvalue()
        assert max(map(len, text.splitlines())) <= 80, text
        rows = {ln.split()[0]: ln for ln in text.splitlines() if ln.strip().split() and ln.split()[0] in names}
        assert set(rows) == set(names), text
        assert "0.643 ± 0.123" in rows[names[0]] and "+0.217 6/7" in rows[names[0]]  # won 6 of 7 paired seeds
        assert "over 8 seeds each" in text


def test_values_over_fewer_seeds_and_the_worst_count_are_paired() -> None:
    """A value at a label count over 1 of 2 seeds is marked; the worst label count compares the seeds both
    strategies have there, from the AULC's first count on (it compared one seed with the mean of others)."""
    from alkit.plots import summary_table

    df = pl.DataFrame({"strategy": ["a"] * 5 + ["random"] * 6, "seed": [0, 0, 0, 1, 1] + [0, 0, 0, 1, 1, 1],
                       "run_id": [0, 0, 0, 1, 1, 2, 2, 2, 3, 3, 3],
                       "n_labeled": [10, 20, 30, 20, 30, 10, 20, 30, 10, 20, 30],
                       "accuracy": [0.30, 0.80, 0.90, 0.70, 0.85, 0.50, 0.60, 0.70, 0.60, 0.65, 0.75]})
    t = {r["strategy"]: r for r in summary_table(df, "accuracy", at=[10, 30], reference="random").iter_rows(named=True)}
    a = t["a"]
    assert a["accuracy@10_seeds"] == 1 and t["random"]["accuracy@10_seeds"] == 2 and a["paired_seeds"] == 2
    assert a["aulc_from"] == 20 and a["worst_vs_ref_at"] >= 20 and a["worst_vs_ref"] > 0  # better at 20 and 30
    out = io.StringIO()
    Console(file=out, width=80).print(bench_table(pl.DataFrame([a, t["random"]]).select(
        "strategy", "n_seeds", "accuracy@10_mean", "accuracy@10_std", "accuracy@10_seeds", "aulc_mean", "aulc_std"),
        "accuracy"))
    assert "0.300*" in out.getvalue() and "had a model" in out.getvalue()


def test_status_in_a_narrow_terminal_keeps_the_run_names() -> None:
    """At 40 columns the run column was squeezed out of the status table (a black-box check): the second
    metric and then the cycle count give way first."""
    from alkit.cli_tables import summary_table

    def row(name: str) -> dict:
        return {"id": 1, "name": name, "strategy": "epistemic", "scorer": "vbll", "seed": 0, "cycles": 25,
                "n_labeled": 270, "budget": 270, "status": "complete", "metrics": {"accuracy": 0.912, "nll": 0.331}}

    for width in (50, 60):
        out = io.StringIO()
        Console(file=out, width=width).print(summary_table([row("random-vbll-b10-s3"), row("epistemic-b10-s0")],
                                                           "runs", False, width))
        text = out.getvalue()
        assert max(map(len, text.splitlines())) <= width and "0.912" in text, text
        assert "random-vbll" in text and "epistemic" in text and "nll" not in text


def test_the_worst_count_keeps_a_shortfall_only_one_paired_seed_shows() -> None:
    """A run stopped by a rule at 10 labels left one paired seed at 20 and 30: those counts were dropped
    (no std over one seed), and the worst checkpoint read 0.0 at the model-free first batch (a black-box
    check).  The gap is the paired mean over random's std at that count over all its seeds."""
    from alkit.plots import summary_table

    rows = [("bald", 0, 10, 0.31), ("bald", 1, 10, 0.30), ("bald", 1, 20, 0.30), ("bald", 1, 30, 0.42),
            ("random", 0, 10, 0.31), ("random", 0, 20, 0.37), ("random", 0, 30, 0.43),
            ("random", 1, 10, 0.30), ("random", 1, 20, 0.32), ("random", 1, 30, 0.35)]
    df = pl.DataFrame({"strategy": [r[0] for r in rows], "seed": [r[1] for r in rows],
                       "run_id": [f"{r[0]}{r[1]}" for r in rows], "n_labeled": [r[2] for r in rows],
                       "accuracy": [r[3] for r in rows]})
    bald = next(r for r in summary_table(df, "accuracy", reference="random").iter_rows(named=True)
                if r["strategy"] == "bald")
    std20 = float(np.std([0.37, 0.32], ddof=1))
    assert bald["worst_vs_ref_at"] == 20 and bald["worst_vs_ref"] == pytest.approx((0.30 - 0.32) / std20)


def test_status_names_no_model_free_batch_where_the_first_fitted_a_model(tmp_path: Path) -> None:
    """A run whose first cycle fits a model on labels the project already has picks its first batch with the
    model (selector topk): `status --wide` said 'random, then topk' and --json 'initial_selector': 'random'
    (a black-box check).  A run that starts with nothing labelled keeps its model-free first batch."""
    from conftest import digits_frame, project_cli

    frame = digits_frame()
    frame.with_columns(pl.when(pl.int_range(pl.len()) < 150).then(pl.col("label")).alias("label")) \
        .write_csv(tmp_path / "part.csv")
    frame.write_csv(tmp_path / "all.csv")
    alkit = project_cli(tmp_path)
    assert alkit("init", "part.csv", "--id-col", "id", "--label-col", "label", "--initial-labeled", "30").returncode == 0
    assert alkit("run", "--strategy", "margin", "--budget", "10", "--seed", "0").returncode == 0
    row = json.loads(alkit("status", "--json").stdout)[0]
    assert row["initial_selector"] is None and row["selector"] == "topk", row
    wide = alkit("status", "--wide").stdout
    assert "random" not in wide and "topk" in wide, wide
    # a project with no test split records no metrics: the fit at cycle 0 still made the first batch the model's
    frame.with_columns(pl.when(pl.int_range(pl.len()) < 30).then(pl.col("label")).alias("label"),
                       pl.lit("pool").alias("split")).write_csv(tmp_path / "nosplit.csv")
    bare = project_cli(tmp_path, "n")
    assert bare("init", "nosplit.csv", "--id-col", "id", "--label-col", "label", "--split-col", "split").returncode == 0
    assert bare("run", "--strategy", "margin", "--budget", "10", "--seed", "0").returncode == 0
    row = json.loads(bare("status", "--json").stdout)[0]
    assert row["initial_selector"] is None and row["metrics"] == {} and row["n_labeled"] == 30, row
    other = project_cli(tmp_path, "q")
    assert other("init", "all.csv", "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    assert other("run", "--strategy", "margin", "--budget", "20", "--seed", "0").returncode == 0
    row = json.loads(other("status", "--json").stdout)[0]
    assert row["initial_selector"] == "random" and row["selector"] == "topk", row
    assert "random, then topk" in other("status", "--wide").stdout


def test_initial_selector_where_the_first_batch_is_the_models_is_said_to_pick_nothing(tmp_path: Path) -> None:
    """--initial-selector names a run of its own (`-initcoldstart`); where the project's labels fit a model at cycle 0
    no batch is model-free, and that run's picks were the default run's without a word (a black-box check's
    leftover).  A run starting with nothing labelled says nothing."""
    from conftest import digits_frame, project_cli

    frame = digits_frame()
    frame.with_columns(pl.when(pl.int_range(pl.len()) < 150).then(pl.col("label")).alias("label")) \
        .write_csv(tmp_path / "part.csv")
    alkit = project_cli(tmp_path)
    assert alkit("init", "part.csv", "--id-col", "id", "--label-col", "label", "--initial-labeled", "30").returncode == 0
    plain = alkit("run", "--strategy", "margin", "--budget", "10", "--seed", "0")
    cold = alkit("run", "--strategy", "margin", "--budget", "10", "--seed", "0", "--initial-selector", "coldstart")
    assert plain.returncode == 0 and cold.returncode == 0, cold.stderr
    said = " ".join((cold.stdout + cold.stderr).split())
    assert "--initial-selector coldstart picks nothing in run margin-initcoldstart-b10-s0" in said, said
    assert "the 30 labels it has at cycle 0 fitted a model" in said and "picks nothing" not in plain.stdout
    frame.write_csv(tmp_path / "all.csv")
    other = project_cli(tmp_path, "q")
    assert other("init", "all.csv", "--id-col", "id", "--label-col", "label", "--hide-labels").returncode == 0
    fresh = other("run", "--strategy", "margin", "--budget", "20", "--seed", "0", "--initial-selector", "coldstart")
    assert fresh.returncode == 0 and "picks nothing" not in fresh.stdout + fresh.stderr, fresh.stdout
