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
    for acquisition in ("bald", "epig"):
        code, out = _run(digits_project, "--strategy", "diverse", "--scorer", "ensemble", "--acquisition", acquisition)
        assert code == 0, out
    code, out = _run(digits_project, "--strategy", "topk", "--scorer", "none", "--acquisition", "epig")
    assert code == 2 and "a Gaussian last-layer posterior (scorers vbll, laplace)" in " ".join(out.split())
    code, out = _run(digits_project, "--strategy", "topk", "--acquisition", "bogus")
    assert code == 2 and "'bogus' is not one of 'epistemic'" in out
    code, out = _run(digits_project, "--strategy", "topk", "--initial-selector", "topk")
    assert code == 2 and "'topk' is not one of 'random', 'coldstart'" in out
    from alkit.config import load_project
    from alkit.loop import ActiveLoop, LoopError, RunRequest

    with pytest.raises(LoopError, match="needs a model"):  # the library refuses it too
        ActiveLoop(load_project(digits_project)).resolve(RunRequest(strategy="topk", budget=10, initial_selector="topk"))
