"""`alkit demo`: the README's first command builds the digits project, runs random vs epistemic and
draws the curves; bad options are refused before anything is created."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from alkit.cli import app
from alkit.config import load_project
from alkit.demo import run_demo
from alkit.pools.store import Store


def test_demo_runs_random_against_epistemic_and_draws_the_curves(tmp_path: Path) -> None:
    root = tmp_path / "demo"
    png = run_demo(root, budget=20, batch_size=10, seeds=1, strategies=["random", "epistemic"])
    assert png == root / "learning_curves.png" and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    project = load_project(root)
    assert project.config.image_shape == [1, 8, 8] and project.config.hide_labels
    store = Store(project.store_url)
    runs = {r.strategy: r for r in store.runs()}
    assert set(runs) == {"random", "epistemic"}
    assert runs["random"].scorer == runs["epistemic"].scorer == "vbll"  # like with like: selection differs only
    assert all(store.n_spent(r.id) == 20 for r in runs.values())
    run_demo(root, budget=20, batch_size=10, seeds=1, strategies=["random", "epistemic"])  # again: nothing to do
    assert len(store.runs()) == 2 and all(store.n_spent(r.id) == 20 for r in store.runs())


@pytest.mark.parametrize("args, says", [
    (["--budget", "100000"], "a budget of 100000 labels is larger than the unlabeled pool (1258 items)"),
    (["--seeds", "0"], "--seeds must be at least 1, got 0"),
    (["--strategies", "nosuch"], "unknown strategy 'nosuch'"),
])
def test_bad_demo_options_leave_nothing_behind(tmp_path: Path, args: list[str], says: str) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("kept\n")
    for root in (tmp_path / "new", mine):
        res = CliRunner().invoke(app, ["demo", "--project", str(root), *args])
        assert res.exit_code == 2 and says in " ".join(res.output.split()), res.output
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
