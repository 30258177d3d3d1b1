"""`alkit bench` library runner: strategies x seeds through the loop, resumable, tables written."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from alkit.bench import available_strategies, run_bench
from alkit.config import load_project
from alkit.loop import ActiveLoop, LoopError, RunRequest

ARGS = dict(budget=20, batch_size=10, seeds=2, progress=False)


def test_bench_runs_resumes_and_writes_tables(digits_project: Path) -> None:
    # one run half done beforehand: the bench must resume it, not restart or duplicate it
    loop = ActiveLoop(load_project(digits_project))
    loop.run(RunRequest(strategy="random", budget=20, batch_size=10, seed=1, max_cycles=1))
    res = run_bench(digits_project, strategies=["random:none", "mc-dropout"], **ARGS)
    assert sorted(res.ran) == ["mc-dropout-b10-s0", "mc-dropout-b10-s1", "random-b10-s0", "random-b10-s1"]
    assert not res.failed and res.metric == "accuracy" and sorted(res.runs) == sorted(res.ran)
    runs = {r.name: r for r in loop.store.runs()}
    assert len(runs) == 4 and all(r.status == "complete" for r in runs.values())
    assert all(loop.store.n_spent(r.id) == 20 for r in runs.values())

    table = pl.read_csv(res.summary_csv)
    assert table["strategy"].to_list() == res.table["strategy"].to_list()
    assert set(table["strategy"]) == {"random", "mc-dropout"}
    assert {"accuracy@20_mean", "accuracy@20_std", "aulc_mean", "labels_to_target_mean",
            "n_reached", "score_s_per_1k_mean", "score_s_per_1k_std"} <= set(table.columns)
    assert [c for c in table.columns if c.startswith("accuracy@")] == [
        "accuracy@10_mean", "accuracy@10_std", "accuracy@20_mean", "accuracy@20_std"]  # evaluated counts only
    assert table["accuracy@10_mean"].null_count() == 0
    row = {r["strategy"]: r for r in table.iter_rows(named=True)}
    assert row["random"]["score_s_per_1k_mean"] is None  # random scores nothing
    assert row["mc-dropout"]["score_s_per_1k_mean"] > 0
    assert row["random"]["select_s_per_run_mean"] >= 0 and "select_s_per_run_std" in table.columns
    assert row["random"]["n_seeds"] == 2
    # the target defaults to random's mean final accuracy, so the mean random seed reaches it
    cycles = pl.read_csv(res.cycles_csv)
    finals = cycles.filter(pl.col("strategy") == "random").sort("n_labeled").group_by("run").agg(pl.col("accuracy").last())
    assert res.target == pytest.approx(finals["accuracy"].mean())
    md = res.summary_md.read_text()
    assert "| strategy |" in md and "mc-dropout" in md and "±" in md

    again = run_bench(digits_project, strategies=["random:none", "mc-dropout"], **ARGS)
    assert again.ran == [] and len(again.skipped) == 4
    assert len(loop.store.cycles()) == len(ActiveLoop(load_project(digits_project)).store.cycles())


def test_bench_rejects_bad_arguments_before_running(digits_project: Path) -> None:
    from conftest import folder_snapshot

    before = folder_snapshot(digits_project)
    with pytest.raises(ValueError, match="unknown strategy"):
        run_bench(digits_project, strategies=["random", "nope"], **ARGS)
    with pytest.raises(LoopError, match="budget"):
        run_bench(digits_project, strategies=["random"], **{**ARGS, "budget": 10**6})
    with pytest.raises(LoopError, match="seeds"):
        run_bench(digits_project, strategies=["random"], **{**ARGS, "seeds": [1, 1]})
    with pytest.raises(LoopError, match="unknown metric 'crps' for a classification project; metrics: accuracy, "):
        run_bench(digits_project, strategies=["random"], **{**ARGS, "metric": "crps"})  # it failed after the runs
    # the cross-validated curve is no bench metric (listed, then 'no evaluated cycle'; a black-box check)
    with pytest.raises(LoopError, match=r"unknown metric 'cv_accuracy' .*metrics: accuracy, balanced_accuracy, "
                                        r"macro_f1, nll, ece$"):
        run_bench(digits_project, strategies=["random"], **{**ARGS, "metric": "cv_accuracy"})
    assert ActiveLoop(load_project(digits_project)).store.runs() == []
    assert folder_snapshot(digits_project) == before  # no bench/ tables either


def test_the_metric_names_are_those_the_cycles_record() -> None:
    """choices.METRICS (what bench and plot accept) against what the metric functions return."""
    import numpy as np
    import torch

    from alkit.choices import METRICS
    from alkit.distributions import GaussianPredictive
    from alkit.metrics import classification_metrics, regression_metrics

    probs = np.array([[0.7, 0.3], [0.2, 0.8], [0.6, 0.4]])
    assert set(classification_metrics(probs, np.array([0, 1, 1]))) | {"cv_accuracy"} == set(METRICS["classification"])
    dist = GaussianPredictive(torch.zeros(3, dtype=torch.float64), torch.ones(3, dtype=torch.float64))
    got = regression_metrics(dist, np.zeros(3), np.array([0.1, -0.2, 0.3]), edges=np.array([-1.0, 0.0, 1.0]))
    assert set(got) | {"cv_crps"} == set(METRICS["regression"])


def test_available_strategies_explains_what_is_left_out() -> None:
    """On a regression project the presets whose score needs class probabilities, and those that
    would pick as another preset does, are left out with the reason (a bench ran margin, entropy,
    least-confident, decision-flip and topk as five identical rows); a classification project
    keeps every preset."""
    usable, why = available_strategies("regression")
    assert "random" in usable and "batchbald" not in usable and "batchbald" in why
    for name in ("margin", "entropy", "least-confident", "decision-flip"):
        assert name not in usable and "needs class probabilities" in why[name]
    assert "epig" in usable and why["epig-decision"] == "picks as 'epig' does on a regression project"
    assert {"epistemic", "topk", "bald", "badge", "kcenter"} <= set(usable)
    from alkit.presets import PRESETS

    assert available_strategies("classification") == (list(PRESETS), {})


def test_bench_preset_with_another_scorer(digits_project: Path) -> None:
    from conftest import folder_snapshot

    res = run_bench(digits_project, strategies=["random:gradnorm"], **{**ARGS, "seeds": 1})
    assert res.ran == ["random-gradnorm-b10-s0"]
    run = ActiveLoop(load_project(digits_project)).store.runs()[0]
    assert (run.strategy, run.scorer) == ("random", "gradnorm")
    assert res.table["strategy"].to_list() == ["random-gradnorm"]
    before = folder_snapshot(digits_project)
    with pytest.raises(ValueError, match="unknown scorer 'nope'"):
        run_bench(digits_project, strategies=["epistemic:nope"], **ARGS)
    assert folder_snapshot(digits_project) == before


def test_bench_compares_like_with_like(digits_project: Path) -> None:
    """A bare `random` trains the model the other strategies train (curves differ by selection only);
    `random:none` keeps the plain MLP."""
    from alkit.presets import like_with_like

    assert like_with_like(["random", "epistemic", "margin"]) == ["random:vbll", "epistemic", "margin"]
    assert like_with_like(["random", "ensemble", "epistemic", "bald"]) == ["random:vbll", "ensemble", "epistemic", "bald"]
    assert like_with_like(["random:none", "epistemic"]) == ["random:none", "epistemic"]
    assert like_with_like(["random", "coldstart"]) == ["random", "coldstart"]
    # 'random' becomes 'random:gradnorm' here, so naming both is one strategy (the bar counted it twice)
    res = run_bench(digits_project, strategies=["random", "random:gradnorm", "topk:gradnorm"], **{**ARGS, "seeds": 1})
    assert sorted(res.ran) == ["random-gradnorm-b10-s0", "topk-gradnorm-b10-s0"] and res.skipped == []


def test_a_run_of_other_settings_under_the_benchs_name_is_refused_not_reused(digits_project: Path) -> None:
    """An earlier alkit named a margin run of scorer none `margin-b10-s0`; `alkit run --strategy margin` refuses it
    as another run, but bench reused it silently (the margin row was missing, a margin-none row in its place)."""
    from alkit.pools.store import RunSpec, Store

    # recorded as the earlier alkit did (today `--name margin-b10-s0` on such a run is refused: it would join the
    # preset's curve at other settings)
    Store(load_project(digits_project).store_url).get_or_create_run(RunSpec(
        "margin-b10-s0", "margin", "none", 0, 20, 10, 10,
        {"curve": "margin", "learner": {}, "train": {}, "acquisition": "margin", "initial_selector": "random"}))
    with pytest.raises(LoopError, match="run 'margin-b10-s0' exists with scorer='none', not 'vbll'.*bench cannot run"):
        run_bench(digits_project, strategies=["margin"], **{**ARGS, "seeds": 1})


def test_bench_compares_with_random_picks_of_the_same_learner(digits_project: Path) -> None:
    """A bare `random` beside a VBLL strategy runs as random picks with VBLL ('random-vbll'): the
    default target is that curve's mean final accuracy (it fell back to 95 % of the best before),
    and every other strategy gets its AULC minus random's, seed by seed, and the seeds it won."""
    from alkit.metrics import aulc

    res = run_bench(digits_project, strategies=["margin", "random"], **{**ARGS, "budget": 30})
    cycles = pl.read_csv(res.cycles_csv)
    assert set(cycles["strategy"]) == {"margin", "random-vbll"}
    finals = (cycles.filter(pl.col("strategy") == "random-vbll").sort("n_labeled").group_by("run")
              .agg(pl.col("accuracy").last()))
    assert res.target == pytest.approx(finals["accuracy"].mean())
    per_seed = {(s, seed): aulc(g["n_labeled"].to_numpy(), g["accuracy"].to_numpy())
                for (s, seed), g in cycles.sort("n_labeled").group_by("strategy", "seed")}
    diffs = [per_seed[("margin", seed)] - per_seed[("random-vbll", seed)] for seed in (0, 1)]
    row = res.table.row(by_predicate=pl.col("strategy") == "margin", named=True)
    assert row["aulc_vs_ref_mean"] == pytest.approx(sum(diffs) / 2)
    assert row["better_seeds"] == sum(d > 0 for d in diffs)
    assert "aulc vs ref" in res.summary_md.read_text() and "Against random picks (random-vbll" in res.summary_md.read_text()


def test_a_smaller_budget_reads_longer_runs_and_a_repeated_strategy_runs_once(digits_project: Path) -> None:
    """A bench at a smaller budget than runs already spent used to fail each of them ('would be below
    that') with exit 1 and rewrite the tables; the longer runs are read up to the budget instead."""
    first = run_bench(digits_project, strategies=["random"], **{**ARGS, "budget": 30, "seeds": 1})
    assert first.ran == ["random-b10-s0"] and not first.failed
    again = run_bench(digits_project, strategies=["random", "random"], **{**ARGS, "budget": 20, "seeds": 1})
    assert again.ran == [] and again.skipped == ["random-b10-s0"] and not again.failed
    table = pl.read_csv(again.summary_csv)
    assert table["strategy"].to_list() == ["random"] and "accuracy@20_mean" in table.columns
    assert "accuracy@30_mean" not in table.columns  # read up to the budget
    cycles = pl.read_csv(again.cycles_csv)
    assert cycles["n_labeled"].max() == 20


def test_a_run_killed_after_spending_its_budget_is_finished_not_skipped(digits_project: Path) -> None:
    """A bench killed between a run's last pick and its last evaluation left it 'running' with its
    budget spent; the next bench skipped it as done, so it never got its final fit or 'complete'."""
    loop = ActiveLoop(load_project(digits_project))
    loop.run(RunRequest(strategy="random", budget=20, batch_size=10, seed=0,
                        name="random-b10-s0", max_cycles=2))
    run = next(r for r in loop.store.runs() if r.name == "random-b10-s0")
    assert loop.store.n_spent(run.id) == 20 and run.status == "running"
    assert max(c.n_labeled for c in loop.store.cycles(run.id)) == 10  # the fit on 20 labels is missing
    res = run_bench(digits_project, strategies=["random"], **{**ARGS, "seeds": 1})
    assert res.ran == ["random-b10-s0"] and not res.failed
    run = next(r for r in loop.store.runs() if r.name == "random-b10-s0")
    cycles = loop.store.cycles(run.id)
    assert run.status == "complete" and loop.store.n_spent(run.id) == 20
    assert cycles[-1].n_labeled == 20 and cycles[-1].n_selected == 0
    assert [c.cycle for c in cycles] == list(range(len(cycles)))


def test_a_run_another_process_holds_is_left_to_it_and_finished_after(digits_project: Path, monkeypatch) -> None:
    """Two benches on one project both exited 1: each failed on the runs the other was driving
    ('busy'), and neither wrote the full table.  A held run is now put off, the bench goes on with
    the others and comes back to it when its holder is gone (here: finished nothing, so resumed)."""
    import socket
    import subprocess
    import sys

    import alkit.bench as bench
    from alkit.pools.schema import RunLease

    monkeypatch.setattr(bench, "BUSY_POLL_S", 0.1)
    loop = ActiveLoop(load_project(digits_project))
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    try:
        RunLease.__table__.create(loop.store.engine, checkfirst=True)
        with loop.store.session() as s:
            s.add(RunLease(run_name="random-b10-s0", token="other", host=socket.gethostname(), pid=holder.pid))
        res = run_bench(digits_project, strategies=["random"], **ARGS)
        assert holder.poll() is not None  # the bench waited for the holder before running its run
    finally:
        holder.kill()
        holder.wait()
    assert res.ran == ["random-b10-s1", "random-b10-s0"] and not res.failed
    runs = {r.name: r for r in loop.store.runs()}
    assert all(r.status == "complete" and loop.store.n_spent(r.id) == 20 for r in runs.values())
    assert set(pl.read_csv(res.cycles_csv)["run"]) == {"random-b10-s0", "random-b10-s1"}


def test_bench_refuses_a_project_labelled_by_people_before_queueing_anything(tmp_path: Path) -> None:
    """It queued a batch per run for people and then refused for want of metrics (a black-box check)."""
    from conftest import folder_snapshot
    from test_queue import _digits_human, invoke

    project, _ = _digits_human(tmp_path)
    before = folder_snapshot(project.root)
    out = invoke("bench", "--budget", "20", "--strategies", "random,epistemic", "--seeds", "1", "-p", str(project.root))
    assert out.exit_code != 0 and "labelled by people" in out.text and "Traceback" not in out.text
    assert folder_snapshot(project.root) == before
    assert ActiveLoop(project).store.runs() == []


def test_an_imbalanced_test_split_gets_a_note_on_accuracy(tmp_path: Path) -> None:
    """On a 95 % majority table every strategy's accuracy sat at the majority rate while balanced accuracy
    showed the difference (a black-box check): bench says so under the table."""
    from alkit.pools.ingest import InitOptions, init_project

    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 4)).astype(np.float32)
    y = np.where(X[:, 0] > 1.0, "bad", "good")  # 84 % good
    pl.DataFrame({"id": [f"r{i}" for i in range(n)], **{f"x{j}": X[:, j] for j in range(4)}, "label": y}).write_csv(
        tmp_path / "imb.csv")
    init_project(tmp_path / "imb.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True))
    res = run_bench(tmp_path / "p", strategies=["random:none"], **{**ARGS, "seeds": 1, "budget": 30})
    assert any(re.match(r"the test split is 8\d% 'good': predicting that class alone scores 0\.8\d\d accuracy", note)
               and "balanced_accuracy" in note for note in res.notes), res.notes
    balanced = run_bench(tmp_path / "p", strategies=["random:none"],
                         **{**ARGS, "seeds": 1, "budget": 30, "metric": "balanced_accuracy"})
    assert not any("test split is" in note for note in balanced.notes)


def test_runs_that_never_fitted_a_model_are_named_under_the_table(tmp_path: Path) -> None:
    """A seed whose labels were all of one class has no model and no metric: it was left out of its strategy's
    mean without a word, so a row read 1.000 over its one fitted seed (a black-box check)."""
    from alkit.pools.ingest import InitOptions, init_project

    rng = np.random.default_rng(3)
    n = 400
    X = rng.normal(size=(n, 3)).astype(np.float32)
    y = np.where(np.arange(n) % 80 == 0, "rare", "common")  # 5 rare items in the pool and test split together
    pl.DataFrame({"id": [f"r{i}" for i in range(n)], **{f"x{j}": X[:, j] for j in range(3)}, "label": y}).write_csv(
        tmp_path / "rare.csv")
    init_project(tmp_path / "rare.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True))
    res = run_bench(tmp_path / "p", strategies=["random:none"], **{**ARGS, "seeds": 3, "budget": 20})
    unfitted = [note for note in res.notes if "never fitted a model" in note]
    assert len(unfitted) == 1 and "random-b10-s" in unfitted[0], res.notes
    assert "never fitted a model" in res.summary_md.read_text()


def test_bench_refuses_a_project_without_a_test_split_before_running(tmp_path: Path) -> None:
    """A regression project made with --test-frac 0 spent every run's labels, then failed saying no run
    had fitted a model, with a classification hint (a black-box check)."""
    from conftest import digits_frame, folder_snapshot

    from alkit.pools.ingest import InitOptions, init_project

    df = digits_frame(200).with_columns(pl.col("label").cast(pl.Float64) + pl.col("px10") / 17)
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                 test_frac=0.0, task="regression", progress=False))
    before = folder_snapshot(tmp_path / "p")
    with pytest.raises(LoopError, match="bench compares strategies on the test split, and this project has none"):
        run_bench(tmp_path / "p", strategies=["epistemic", "random"], **ARGS)
    assert ActiveLoop(load_project(tmp_path / "p")).store.runs() == []
    assert folder_snapshot(tmp_path / "p") == before


def test_bench_gives_every_strategy_the_same_first_batch_on_request(digits_project: Path) -> None:
    """`alkit bench` had no --initial-selector, so the epistemic rows always carried their cold-start first
    batch against random's (a black-box check): with it, every run of a seed starts from the same batch."""
    res = run_bench(digits_project, strategies=["epistemic", "random"], initial_selector="random",
                    **{**ARGS, "budget": 20, "seeds": 1})
    assert any("initrandom" in name for name in res.runs)
    store = ActiveLoop(load_project(digits_project)).store
    first = {r.name: set(store.selected_keys(r.id)[:10].tolist()) for r in store.runs()}
    assert len({frozenset(v) for v in first.values()}) == 1, first


def test_bench_refuses_table_columns_beyond_its_budget(digits_project: Path) -> None:
    """--at 500 with a budget of 30 made a column 'accuracy@500' of the 30-label values (a black-box check)."""
    with pytest.raises(LoopError, match="--at 500 is beyond --budget 30"):
        run_bench(digits_project, strategies=["random"], at=[30, 500], **{**ARGS, "budget": 30})
    assert ActiveLoop(load_project(digits_project)).store.runs() == []


def test_bench_says_which_runs_end_before_its_budget(digits_project: Path) -> None:
    """A bench at 15 labels reusing runs given 20 (batches of 10) took their 10-label values for its
    15-label column without a word (a black-box check; so did a run a --stop rule ended early)."""
    run_bench(digits_project, strategies=["random:none"], **{**ARGS, "seeds": 1})
    res = run_bench(digits_project, strategies=["random:none"], **{**ARGS, "seeds": 1, "budget": 15})
    said = [n for n in res.notes if "end before 15 labels" in n or "ends before 15 labels" in n]
    assert said and "random-b10-s0 at 10 (a run of budget 20, read up to 15" in said[0], res.notes
    assert "run with a smaller budget" not in said[0]  # said of a longer run (a black-box check)
    assert "Note: 1 run ends before 15 labels" in res.summary_md.read_text()
    # continued from that bench's last batch cut to 15 (10, 5, then 5 more): said, not a fresh bench's batches
    fresh = run_bench(digits_project, strategies=["random:none"], **{**ARGS, "budget": 15, "seeds": [1]})
    assert not any("went on from" in n for n in fresh.notes)
    more = run_bench(digits_project, strategies=["random:none"], **{**ARGS, "budget": 25, "seeds": [1]})
    assert any("1 run of a smaller earlier budget went on from a last batch cut to that budget (random-b10-s1)" in n
               for n in more.notes), more.notes
    # below the first batch: refused before anything runs, not 'none fitted a model' (a black-box check)
    with pytest.raises(LoopError, match="--batch-size 10 is larger than --budget 5"):
        run_bench(digits_project, strategies=["random:none"], **{**ARGS, "seeds": 1, "budget": 5})


def test_a_longer_run_short_of_the_budget_is_continued_not_lowered(digits_project: Path) -> None:
    """A run of budget 40 that had spent 10 labels was lowered to the bench's budget of 20 (a black-box
    check: a user's run of 200 became 150): it goes on under its own budget, as far as the bench needs."""
    loop = ActiveLoop(load_project(digits_project))
    loop.run(RunRequest(strategy="random", budget=40, batch_size=10, seed=0, name="random-b10-s0", max_cycles=1))
    run = next(r for r in loop.store.runs() if r.name == "random-b10-s0")
    assert loop.store.n_spent(run.id) == 10
    res = run_bench(digits_project, strategies=["random"], **{**ARGS, "seeds": 1})
    assert res.ran == ["random-b10-s0"] and not res.failed
    run = next(r for r in loop.store.runs() if r.name == "random-b10-s0")
    assert run.budget == 40 and run.status == "running"  # its own budget, not done
    assert max(c.n_labeled for c in loop.store.cycles(run.id)) == 20  # evaluated at the bench's budget
    assert pl.read_csv(res.cycles_csv)["n_labeled"].max() == 20
    assert run_bench(digits_project, strategies=["random"], **{**ARGS, "seeds": 1}).skipped == ["random-b10-s0"]


def test_an_out_dir_the_tables_cannot_go_to_is_refused_before_any_run(digits_project: Path) -> None:
    """`bench --out-dir FILE` ran every strategy and seed into the store, then was refused ('a file is in the way'),
    exit 2 after hours of CPU (a black-box check): refused first, the store without a run."""
    (digits_project / "notadir").write_text("x")
    (digits_project / "outd" / "bench_summary.csv").mkdir(parents=True)
    for out, error, says in ((digits_project / "notadir", LoopError, "notadir is a file, not a folder"),
                             (digits_project / "notadir" / "sub", LoopError, "notadir is a file, not a folder"),
                             (digits_project / "alkit.db", LoopError, "alkit.db is a file, not a folder"),
                             (digits_project / "outd", LoopError, "bench_summary.csv is a folder where bench writes"),
                             (Path("/proc/alkit-bench-x"), OSError, "alkit-bench-x")):
        with pytest.raises(error, match=says):
            run_bench(digits_project, strategies=["random"], out_dir=out, **ARGS)
    assert ActiveLoop(load_project(digits_project)).store.runs() == []
