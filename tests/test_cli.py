"""The `alkit` command end to end, as a user types it, on real data (digits)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import numpy as np
import pytest

from conftest import folder_snapshot

ALKIT = [sys.executable, "-m", "alkit.cli"]


def alkit(*args: str, cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "COLUMNS": "200", "ALKIT_THREADS": "1"}
    proc = subprocess.run([*ALKIT, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    if check and proc.returncode != 0:
        raise AssertionError(f"alkit {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_init_run_status_plot(tmp_path: Path, digits_csv: Path) -> None:
    out = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", cwd=tmp_path)
    assert "300 pool items" in out.stdout or "320 pool items" in out.stdout
    first = alkit("run", "--strategy", "random", "--budget", "30", "--batch-size", "10", "--seed", "0", "--json",
                  cwd=tmp_path)
    assert json.loads(first.stdout)[0]["cycles_run"] == 4  # cycle 0 (no labels) and three batches of 10
    alkit("run", "--strategy", "random", "--budget", "30", "--batch-size", "10", "--seed", "1", cwd=tmp_path)
    again = alkit("run", "--strategy", "random", "--budget", "30", "--batch-size", "10", "--seed", "0",
                  "--json", cwd=tmp_path)
    rows = json.loads(again.stdout)
    assert rows[0]["cycles"] == 4 and rows[0]["n_labeled"] == 30 and rows[0]["cycles_run"] == 0  # idempotent rerun
    assert "run random-b10-s0 had nothing left to do: its budget of 30 labels is spent" in again.stderr
    st = json.loads(alkit("status", "--json", cwd=tmp_path).stdout)
    assert [r["seed"] for r in st] == [0, 1]
    for r in st:
        assert r["strategy"] == "random" and r["scorer"] == "none" and r["cycles"] == 4 and r["n_labeled"] == 30
        assert set(r["metrics"]) == {"accuracy", "balanced_accuracy", "macro_f1", "nll", "ece"} and 0.0 <= r["metrics"]["accuracy"] <= 1.0
    human = alkit("status", cwd=tmp_path).stdout
    assert "random-b10-s0" in human and "accuracy" in human
    alkit("plot", "--out", "curves.png", cwd=tmp_path)
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    alkit("plot", "--out", "curves.svg", cwd=tmp_path)
    ElementTree.parse(tmp_path / "curves.svg")
    elsewhere = tmp_path / "elsewhere"  # the default goes into the project, as bench/ and queue files do, not the cwd
    elsewhere.mkdir()
    alkit("plot", "-p", str(tmp_path), cwd=elsewhere)
    assert (tmp_path / "learning_curves.png").exists() and not any(elsewhere.iterdir())
    listing = alkit("strategies", cwd=tmp_path).stdout
    for name in ("random", "epistemic", "topk", "diverse", "kcenter", "badge", "coldstart"):
        assert name in listing


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--strategy", "bogus", "--budget", "10"], "Invalid value for '--strategy' / '-s': 'bogus' is not one of 'random', 'epistemic'"),
        (["run", "--bogus"], "No such option: --bogus (see alkit run -h)"),
        # after the command it was 'No such option: --threads (Possible options: --head)' (a black-box check)
        (["run", "--budget", "10", "--threads", "1"], "--threads is alkit's own option and goes before the command: "
                                                      "`alkit --threads N run ...` (or ALKIT_THREADS=N)"),
        (["run", "--strategy", "random", "--budget", "100000"], "larger than the unlabeled pool"),
        (["run", "--strategy", "random", "--budget", "10", "--batch-size", "0"], "batch-size must be at least 1"),
        (["plot", "--out", "x.pdf"], "no cycle has metrics yet"),
    ],
)
def test_bad_run_arguments(tmp_path: Path, digits_csv: Path, args: list[str], message: str) -> None:
    from alkit.pools.ingest import InitOptions, init_project

    init_project(digits_csv, tmp_path, InitOptions(id_col="id", label_col="label", hide_labels=True))
    before = folder_snapshot(tmp_path)
    proc = alkit(*args, cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert message in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert folder_snapshot(tmp_path) == before  # the store's rows and every file as they were
    status = json.loads(alkit("status", "--json", cwd=tmp_path).stdout)
    assert status == []


def test_bad_init_exits_nonzero_and_writes_nothing(tmp_path: Path, digits_csv: Path) -> None:
    proc = alkit("init", str(digits_csv), "--id-col", "nope", "--label-col", "label", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "id column 'nope' not found" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits.csv"]
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    proc = alkit("run", "--budget", "5", cwd=tmp_path, check=False)
    assert proc.returncode == 2 and "no alkit project" in proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["digits.csv"]


@pytest.mark.parametrize("url, message", [
    ("mysql://alice:s3cretPW@localhost/db", "mysql store needs the Python package that provides 'MySQLdb'"),
    ("nosuchdb://alice:s3cretPW@host/db", "cannot use the store URL: NoSuchModuleError"),
])
def test_store_url_without_its_driver_is_one_line(tmp_path: Path, digits_csv: Path, url: str, message: str) -> None:
    """A store URL whose driver is missing or whose dialect is unknown: exit 2, one line naming
    what to install, no traceback, the password never printed, no store written."""
    proc = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                 "--store", url, "-p", "proj", cwd=tmp_path, check=False)
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and message in err, proc.stderr
    assert "Traceback" not in proc.stderr and "s3cretPW" not in proc.stdout + proc.stderr
    assert not list(tmp_path.glob("proj/*"))


@pytest.mark.parametrize("damage", ["overwrite", "truncate", "other-table"])
def test_damaged_feature_file_is_refused_before_any_write(tmp_path: Path, digits_csv: Path, damage: str) -> None:
    """features.parquet overwritten in the middle, truncated, or replaced by another table:
    `alkit run` exits 2 with one line naming the file, no traceback, and no run row is created."""
    import sqlite3

    import polars as pl

    alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", "-p", "p", cwd=tmp_path)
    path = tmp_path / "p" / "features.parquet"
    data = bytearray(path.read_bytes())
    if damage == "overwrite":
        data[len(data) // 3: len(data) // 3 + 4096] = b"\xff" * 4096
        path.write_bytes(bytes(data))
    elif damage == "truncate":
        path.write_bytes(bytes(data[: len(data) // 2]))
    else:
        pl.DataFrame({"a": [1, 2, 3]}).write_parquet(path)
    before = folder_snapshot(tmp_path / "p")
    proc = alkit("run", "--strategy", "random", "--budget", "20", "-p", "p", cwd=tmp_path, check=False)
    assert proc.returncode == 2, proc.stderr
    assert "features.parquet is not a readable alkit feature file" in " ".join(proc.stderr.split())
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert folder_snapshot(tmp_path / "p") == before
    with sqlite3.connect(tmp_path / "p" / "alkit.db") as db:
        assert db.execute("select count(*) from runs").fetchone()[0] == 0


def test_init_hints_at_the_image_shape_of_pixel_columns(tmp_path: Path, digits_csv: Path) -> None:
    """Columns px0..px63 get a one-line hint to declare 8 x 8 images; a declared shape or tabular
    names get none.  The library rule: square counts of pixel-named columns only."""
    from alkit.pools.ingest import pixel_shape_hint

    out = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels", cwd=tmp_path / ".")
    assert "--image-shape 8,8" in out.stdout
    (tmp_path / "declared").mkdir()
    out = alkit("init", str(digits_csv), "--id-col", "id", "--label-col", "label", "--hide-labels",
                "--image-shape", "8,8", cwd=tmp_path / "declared")
    assert "hint:" not in out.stdout and "--image-shape" not in out.stdout
    assert pixel_shape_hint([f"pixel{j}" for j in range(1, 785)]) == (28, 28)
    assert pixel_shape_hint([f"pixel_{r}_{c}" for r in range(8) for c in range(8)]) == (8, 8)
    assert pixel_shape_hint([f"f{j}" for j in range(64)]) is None  # not pixel names
    assert pixel_shape_hint([f"px{j}" for j in range(63)]) is None  # not square
    assert pixel_shape_hint([f"px{j}" for j in (*range(62), 70, 71)]) is None  # not consecutive


def test_init_hints_at_regression_for_a_count_read_as_classes(tmp_path: Path) -> None:
    """Whole-number labels with a long-tailed spread get a one-line hint to pass --task regression;
    with --task given, or balanced class codes, none."""
    rng = np.random.default_rng(0)
    y = np.minimum(rng.geometric(0.3, 400) - 1, 15)
    rows = "\n".join(f"{i},{x:.4f},{v}" for i, (x, v) in enumerate(zip(rng.normal(size=400), y)))
    (tmp_path / "counts.csv").write_text("id,x,y\n" + rows + "\n")
    out = alkit("init", str(tmp_path / "counts.csv"), "--id-col", "id", "--label-col", "y", "--hide-labels", "-p", "a",
                cwd=tmp_path)
    assert "init again with --task regression" in out.stdout
    out = alkit("init", str(tmp_path / "counts.csv"), "--id-col", "id", "--label-col", "y", "--hide-labels",
                "--task", "regression", "-p", "b", cwd=tmp_path)
    assert "regression" in out.stdout and "hint:" not in out.stdout


def test_run_with_the_heteroscedastic_head_and_the_noise_choice(tmp_path: Path) -> None:
    """`--head hetero` and `-o noise_choice=true` reach the VBLL learner from the command line and
    both runs finish with a CRPS; a head alkit does not have is refused by name."""
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] + np.where(X[:, 2] > 0.6, 1.0, 0.05) * rng.standard_normal(300)
    rows = "\n".join(f"{i},{a:.5f},{b:.5f},{c:.5f},{v:.5f}" for i, ((a, b, c), v) in enumerate(zip(X, y)))
    (tmp_path / "noisy.csv").write_text("id,a,b,c,y\n" + rows + "\n")
    alkit("init", str(tmp_path / "noisy.csv"), "--id-col", "id", "--label-col", "y", "--hide-labels",
          "--task", "regression", "--test-frac", "0.2", cwd=tmp_path)
    for extra in (["--head", "hetero"], ["-o", "noise_choice=true"]):
        alkit("run", "--strategy", "epistemic", "--budget", "50", "--batch-size", "10", "--name", extra[1].split("=")[0], *extra, cwd=tmp_path)
    st = {r["name"]: r for r in json.loads(alkit("status", "--json", cwd=tmp_path).stdout)}
    assert set(st) == {"hetero", "noise_choice"}, st
    for r in st.values():
        assert r["n_labeled"] == 50 and np.isfinite(r["metrics"]["crps"]), r
    before = folder_snapshot(tmp_path)
    bad = alkit("run", "--strategy", "epistemic", "--budget", "50", "--head", "heteroskedastic", cwd=tmp_path, check=False)
    lines = bad.stderr.strip().splitlines()
    assert bad.returncode == 2 and len(lines) == 1 and "Traceback" not in bad.stderr, bad.stderr
    assert "Invalid value for '--head': 'heteroskedastic' is not one of 'gaussian', 'hetero'" in lines[0], bad.stderr
    assert folder_snapshot(tmp_path) == before
