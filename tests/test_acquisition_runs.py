"""Every acquisition x selector pair runs end to end through `alkit run` (in-process CLI), on
digits, with the VBLL posterior and with ensemble members; refused pairs fail with one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from alkit.acquisition import ACQUISITIONS
from alkit.cli import app
from alkit.config import load_project
from alkit.pools.store import Store

SELECTOR_PRESETS = ("topk", "diverse", "power-diverse", "power", "badge", "kcenter", "coldstart")
RUN = ["--budget", "20", "--batch-size", "10", "--initial", "10", "--seed", "0"]


def _run(project: Path, *args: str) -> tuple[int, str]:
    res = CliRunner().invoke(app, ["run", "-p", str(project), *args, *RUN], catch_exceptions=False)
    return res.exit_code, res.output


@pytest.mark.slow
def test_every_acquisition_with_every_selector(digits_project: Path) -> None:
    # capacity=fixed: the 70 runs test how acquisitions and selectors compose; the capacity choice
    # (six cross-validation fits per fit, 70 % of these runs' time) has its own tests (test_capacity.py)
    failures = []
    for acquisition in ACQUISITIONS:
        for preset in SELECTOR_PRESETS:
            code, out = _run(digits_project, "--strategy", preset, "--scorer", "vbll", "--acquisition", acquisition,
                             "-o", "capacity=fixed")
            if code != 0:
                failures.append(f"{preset} + {acquisition}: exit {code}: {out[-300:]}")
    assert not failures, "\n".join(failures)
    store = Store(load_project(digits_project).store_url)
    runs = store.runs()
    assert len(runs) == len(ACQUISITIONS) * len(SELECTOR_PRESETS)
    for run in runs:
        assert store.n_spent(run.id) == 20 and run.config["acquisition"] in ACQUISITIONS


def test_member_acquisitions_and_refusals(digits_project: Path) -> None:
    from conftest import folder_snapshot

    for acquisition in ("bald", "epig"):
        code, out = _run(digits_project, "--strategy", "diverse", "--scorer", "ensemble", "--acquisition", acquisition)
        assert code == 0, out
    store = Store(load_project(digits_project).store_url)
    runs = store.runs()
    assert sorted(r.config["acquisition"] for r in runs) == ["bald", "epig"]
    assert all(r.scorer == "ensemble" and store.n_spent(r.id) == 20 for r in runs)
    store.dispose()
    before = folder_snapshot(digits_project)
    code, out = _run(digits_project, "--strategy", "topk", "--scorer", "none", "--acquisition", "epig")
    lines = out.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: acquisition 'epig' needs"), out
    assert "a Gaussian last-layer posterior (scorers vbll, laplace)" in lines[0], out
    assert folder_snapshot(digits_project) == before
    # usage errors (click's, in this in-process run; `alkit` itself makes them one line: test_cli_help)
    for args, says in ((["--acquisition", "bogus"], "'bogus' is not one of 'epistemic'"),
                       (["--initial-selector", "topk"], "'topk' is not one of 'random', 'coldstart'")):
        code, out = _run(digits_project, "--strategy", "topk", *args)
        assert code == 2 and says in out and "Traceback" not in out, out
        assert folder_snapshot(digits_project) == before, args
    from alkit.loop import ActiveLoop, LoopError, RunRequest

    with pytest.raises(LoopError, match="needs a model"):  # the library refuses it too
        ActiveLoop(load_project(digits_project)).resolve(RunRequest(strategy="topk", budget=10, initial_selector="topk"))
    assert folder_snapshot(digits_project) == before
