"""The CLI's tables at 80 columns (issue 17): `alkit run`, `status` and `bench` on a classification
and a regression project, every value whole (no ellipsis), no line wider than the terminal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sklearn.datasets import load_diabetes

from alkit.cli_tables import number

ALKIT = [sys.executable, "-m", "alkit.cli"]


def _alkit(*args: str, cwd: Path) -> str:
    env = {**os.environ, "COLUMNS": "80", "ALKIT_THREADS": "1"}
    proc = subprocess.run([*ALKIT, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _fits(text: str) -> None:
    lines = text.splitlines()
    assert not any("…" in ln for ln in lines), text
    assert max(len(ln) for ln in lines) <= 80, text


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_tables_fit_80_columns(tmp_path: Path, digits_csv: Path, task: str) -> None:
    if task == "regression":
        X, y = load_diabetes(return_X_y=True)
        data = tmp_path / "diabetes.csv"
        pl.DataFrame(X.astype(np.float32), schema=[f"x{i}" for i in range(X.shape[1])]).with_columns(
            pl.Series("id", [f"patient-{i}" for i in range(len(y))]), pl.Series("label", y)).write_csv(data)
    else:
        data = digits_csv
    _alkit("init", str(data), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p", cwd=tmp_path)
    for strategy in ("random", "epistemic"):
        out = _alkit("run", "--strategy", strategy, "--budget", "30", "-p", "p", cwd=tmp_path)
        _fits(out)
    status = _alkit("status", "-p", "p", cwd=tmp_path)
    _fits(status)
    main = "crps ↓" if task == "regression" else "accuracy ↑"
    assert main in status and "epistemic-b10-s0" in status and "30/30" in status
    bench = _alkit("bench", "--strategies", "random,epistemic", "--seeds", "1", "--budget", "30", "-p", "p", cwd=tmp_path)
    table = bench[bench.index(" strategy"):bench.index("wrote ")]
    _fits(table)
    assert "AULC" in table
    wide = _alkit("status", "--wide", "-p", "p", cwd=tmp_path)
    assert "…" not in wide and "scorer" in wide and ("nll10" in wide if task == "regression" else "ece" in wide)
    # the settings a run's name abbreviates: acquisition and selectors (an audit found them only in the store)
    said = {r["strategy"]: r for r in json.loads(_alkit("status", "--json", "-p", "p", cwd=tmp_path))}
    picks = "power-sqrt" if task == "regression" else "power-diverse"
    assert (said["epistemic"]["selector"], said["epistemic"]["initial_selector"]) == (picks, "coldstart")
    assert said["epistemic"]["acquisition"] == ("epistemic" if task == "regression" else "decision-flip")
    assert said["random"]["selector"] == "random" and said["random"]["acquisition"] is None
    flat = "".join(wide.split())
    assert f"coldstart,then{picks}" in flat and "acquisition" in flat


def test_number_is_short() -> None:
    assert [number(v) for v in (0.91234, 12.345, 1234.5, 3e-5, 2.5e6, float("nan"))] == \
        ["0.912", "12.3", "1234", "3.0e-05", "2.5e+06", "nan"]


def test_status_shows_what_a_fit_chose_by_cross_validation(tmp_path: Path) -> None:
    """The quantile head's weight prior (learner rule 13) is chosen per fit: `status --json` carries
    the latest choice and `status --wide` says it in words; -o values of -0 and 0 are one option."""
    import json

    from alkit.registry import learner_class
    from alkit.scorer_options import parse

    assert parse(learner_class("vbll"), "vbll", ["module_norm=-0"]) == {"module_norm": 0.0}
    assert str(parse(learner_class("vbll"), "vbll", ["module_norm=-0"])["module_norm"]) == "0.0"
    X, y = load_diabetes(return_X_y=True)
    data = tmp_path / "diabetes.csv"
    pl.DataFrame(X.astype(np.float32), schema=[f"x{i}" for i in range(X.shape[1])]).with_columns(
        pl.Series("id", [f"patient-{i}" for i in range(len(y))]), pl.Series("label", y)).write_csv(data)
    _alkit("init", str(data), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p", cwd=tmp_path)
    _alkit("run", "--strategy", "random", "--scorer", "vbll", "--head", "quantile", "--budget", "30", "-p", "p",
           cwd=tmp_path)
    (row,) = json.loads(_alkit("status", "--json", "-p", "p", cwd=tmp_path))
    assert row["capacity"]["prior_l2"] in (10.0, 100.0, 1000.0) and row["capacity"]["n_labels"] >= 20
    wide = _alkit("status", "--wide", "-p", "p", cwd=tmp_path)
    n = row["capacity"]["n_labels"]
    assert (f"cross-validated choice in use: weight prior {row['capacity']['prior_l2']:g}, chosen at {n} labels "
            f"(next chosen at {2 * n} labels)") in " ".join(wide.split())


from hypothesis import given, strategies as st  # noqa: E402

from alkit.cli_tables import break_at_hyphens, summary_table  # noqa: E402

_part = st.text(alphabet="abcdefghij=_0123456789", min_size=1, max_size=12)


@given(st.lists(_part, min_size=1, max_size=8), st.integers(min_value=4, max_value=40))
def test_a_long_run_name_breaks_only_after_hyphens_within_the_limit(parts: list[str], limit: int) -> None:
    name = "-".join(parts)
    lines = break_at_hyphens(name, limit).split("\n")
    assert "".join(lines) == name  # nothing added or lost: the breaks sit after hyphens
    assert all(ln.endswith("-") for ln in lines[:-1])
    assert all(len(ln) <= limit or "-" not in ln[:-1] for ln in lines)  # over the limit: one part alone
    if len(name) <= limit:
        assert lines == [name]


def test_the_narrow_status_table_keeps_each_setting_of_a_long_name_whole() -> None:
    """At 80 columns 'epistemic-initrandom-lr_decay=0-b100-s0' was folded as '...-lr_d' / 'ecay=0-...'."""
    from rich.console import Console

    rows = [{"id": 1, "name": "epistemic-initrandom-lr_decay=0-b100-s0", "cycles": 22, "n_labeled": 3000,
             "n_spent": 3000, "budget": 3000, "status": "complete", "metrics": {"accuracy": 0.871, "nll": 0.387}}]
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    console.print(summary_table(rows, "runs", width=80))
    text = console.export_text()
    assert "lr_decay=0-" in text and "initrandom-" in text
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 80


def test_the_cycle_count_goes_before_a_run_name_breaks() -> None:
    """A waiting run's "200/300 (learns from 100)" broke 'epistemic-b100-s0' after its hyphen at 80 columns while the
    cycles column stayed (a check at scale): the name `alkit run --resume` needs is kept whole."""
    from rich.console import Console

    rows = [{"id": 1, "name": "epistemic-b100-s0", "cycles": 2, "n_labeled": 100, "n_spent": 200, "budget": 300,
             "status": "waiting", "metrics": {"accuracy": 0.605, "nll": 0.9}}]
    console = Console(width=80, record=True, file=open(os.devnull, "w"))
    console.print(summary_table(rows, "runs", width=80))
    text = console.export_text()
    assert "epistemic-b100-s0" in text and "cycles" not in text and "(learns from 100)" in text, text
    assert max(len(ln.rstrip()) for ln in text.splitlines()) <= 80
    wide = Console(width=120, record=True, file=open(os.devnull, "w"))
    wide.print(summary_table(rows, "runs", width=120))
    assert "cycles" in wide.export_text()  # where the name fits anyway, the count stays


def test_a_std_is_shown_at_its_means_precision() -> None:
    from alkit.cli_tables import mean_std

    assert mean_std(147.2, 4.642) == "147 ± 5" and mean_std(124.0, 3.198) == "124 ± 3"
    assert mean_std(0.966, 1.2e-16) == "0.966 ± 0.000" and mean_std(12.34, 0.456) == "12.3 ± 0.5"
    assert mean_std(2.5e6, 1.5e5) == "2.5e+06 ± 1.5e+05"


def test_the_capacity_line_promises_no_choice_the_run_has_passed() -> None:
    """`status --wide` read 'gaussian head, chosen at 20 labels (next chosen at 40 labels)' for a run at 60 labels
    (a black-box check); 'kept by the later fits' was no better where those fits used the default head."""
    from alkit.report import capacity_text

    choice = {"head": "gaussian", "n_labels": 20}
    assert capacity_text(choice, 30) == "gaussian head, chosen at 20 labels (next chosen at 40 labels)"
    assert capacity_text(choice, 60) == ("gaussian head, chosen at 20 labels (no later choice on record; the latest "
                                         "fit at 60 labels)")
    assert capacity_text(choice) == "gaussian head, chosen at 20 labels (next chosen at 40 labels)"
