"""`alkit init` streams the feature columns: the project does not depend on the batch size or
on CSV vs Parquet, the features are the file's values, and a bad value in a late batch is still
refused with its named problem, leaving the folder as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from alkit.config import load_project
from alkit.pools import features as features_mod
from alkit.pools import tables as tables_mod
from alkit.pools.features import FeatureReader
from alkit.pools.ingest import INIT_PREFIX, InitOptions, InputError, init_project

from conftest import digits_frame, folder_snapshot


def _project(root: Path) -> dict[str, object]:
    """Everything init decided: features, items (split, state, label), labels, payload, config."""
    proj = load_project(root)
    with sqlite3.connect(root / "alkit.db") as db:
        items = db.execute("SELECT key, item_id, split, state, label FROM items ORDER BY key").fetchall()
        labels = db.execute("SELECT item_key, value, source FROM labels ORDER BY item_key").fetchall()
    reader = FeatureReader(proj.features_path)
    # (not the store's random token, which tells two inits of the same data apart)
    cfg = {k: v for k, v in proj.config.__dict__.items() if k not in ("source", "store_token")}
    return {"X": reader.take(np.arange(reader.n_items)), "items": items, "labels": labels,
            "payload": pl.read_parquet(proj.payload_path), "config": cfg}


def _assert_same(a: dict[str, object], b: dict[str, object]) -> None:
    assert np.array_equal(a["X"], b["X"])
    assert a["items"] == b["items"] and a["labels"] == b["labels"] and a["config"] == b["config"]
    assert a["payload"].equals(b["payload"])


@pytest.mark.parametrize("opts", [dict(hide_labels=True, test_frac=0.25), dict(initial_labeled=40)])
def test_streamed_init_same_project_for_any_batch_size_and_format(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  opts: dict[str, object]) -> None:
    df = digits_frame(400).with_columns(pl.Series("note", [f"n{i}" for i in range(400)]))
    df = df.with_columns(pl.when(pl.col("px1") > 3).then(None).otherwise(pl.col("label")).alias("label")) \
        if "initial_labeled" in opts else df  # some unlabeled rows when labels are visible
    df.write_csv(tmp_path / "d.csv")
    df.write_parquet(tmp_path / "d.parquet")
    init = InitOptions(id_col="id", label_col="label", exclude=["note"], progress=False, **opts)  # type: ignore[arg-type]
    built = {}
    for name, data, batch_rows, row_group in [("whole", "d.csv", 1_000_000, 65_536), ("csv", "d.csv", 7, 50),
                                               ("parquet", "d.parquet", 13, 64)]:
        monkeypatch.setattr(tables_mod.TableSource, "BATCH_ROWS", batch_rows)
        monkeypatch.setattr(features_mod, "ROW_GROUP", row_group)
        init_project(tmp_path / data, tmp_path / name, init)
        built[name] = _project(tmp_path / name)
        meta = features_mod.open_features(tmp_path / name / "features.parquet").metadata
        groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert groups[:-1] == [row_group] * (len(groups) - 1)  # whole row groups whatever the batches were
    src = pl.read_csv(tmp_path / "d.csv").select([f"px{j}" for j in range(64)]).to_numpy().astype(np.float32)
    assert np.array_equal(built["whole"]["X"], src)  # the file's values, in file order
    _assert_same(built["csv"], built["whole"])
    _assert_same(built["parquet"], built["whole"])


def _late_bad_csv(path: Path, n: int, bad_rows: list[int], cell: str, col: int = 3) -> list[str]:
    """A CSV of n rows (past polars' 10,000-row type inference) with ``cell`` in column px{col} of ``bad_rows``."""
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(n, 6)), 3)
    ids = [f"r{i}" for i in range(n)]
    lines = ["id," + ",".join(f"px{j}" for j in range(6)) + ",label"]
    for i in range(n):
        cells = [repr(float(v)) for v in X[i]]
        if i in bad_rows:
            cells[col] = cell
        lines.append(f"{ids[i]},{','.join(cells)},{i % 3}")
    path.write_text("\n".join(lines) + "\n")
    return [ids[i] for i in bad_rows]


@pytest.mark.parametrize("cell, says", [
    # types come from every row: a word or a 'nan' among whole numbers makes the column text, named at its row
    ("abc", "feature column 'px3' is not numeric: row 10501 (id {first}) holds 'abc', text; features must be numbers"),
    ("", "feature column 'px3' has missing values (ids: {ids})"),
    # a 'nan' token is a missing value, every such row named (e7dcd66)
    ("nan", "feature column 'px3' has missing values (ids: {ids}); --impute fills them"),
    ("-inf", "NaN or infinite feature values in px3 (ids: {ids})"),
    ("1e39", "feature values beyond float32's range (|x| > 3.4e+38) in px3 (ids: {ids}); rescale those columns"),
    ("1,2", "cannot read d.csv: line {line} has 9 fields, the header 8"),
])
def test_bad_value_in_a_late_batch_is_refused_and_nothing_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  cell: str, says: str) -> None:
    monkeypatch.setattr(tables_mod.TableSource, "BATCH_ROWS", 1_000)
    bad_rows = [10_500, 11_200] if cell != "1,2" else [11_200]
    ids = _late_bad_csv(tmp_path / "d.csv", 12_000, bad_rows, cell)
    root = tmp_path / "p"
    root.mkdir()
    (root / "notes.txt").write_text("mine\n")
    before = folder_snapshot(root)
    message = says.format(ids=", ".join(ids), first=ids[0], line=bad_rows[0] + 2)
    with pytest.raises(InputError) as info:
        init_project(tmp_path / "d.csv", root, InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                           progress=False))
    assert str(info.value).startswith(message), str(info.value)
    assert folder_snapshot(root) == before and not list(root.glob(f"{INIT_PREFIX}*"))
    with pytest.raises(InputError):  # a project folder that did not exist is not left behind
        init_project(tmp_path / "d.csv", tmp_path / "new", InitOptions(id_col="id", label_col="label", progress=False))
    assert not (tmp_path / "new").exists()


def test_short_rows_are_refused_and_empty_rows_left_out(tmp_path: Path) -> None:
    """A row with too few fields was read with empty cells (a labelled row became an unlabelled pool
    item) and a trailing blank line became an item with no id (black-box checks)."""
    from alkit.pools.ingest import InitOptions, InputError, init_project

    rows = [f"r{i},{i % 3},{(i * 7) % 5},{'xy'[i % 2]}" for i in range(40)]
    short = tmp_path / "short.csv"
    short.write_text("\n".join(["id,a,b,label", *rows[:4], "r4,1,2", *rows[5:]]) + "\n")
    with pytest.raises(InputError, match="line 6 has 3 fields, the header 4"):
        init_project(short, tmp_path / "p", InitOptions(id_col="id", label_col="label"))
    assert not (tmp_path / "p").exists()
    blank = tmp_path / "blank.csv"  # blank, whitespace, separators, spaced separators, quoted empties
    blank.write_text("\n".join(["id,a,b,label", *rows[:20], "", "   ", " , , , ", *rows[20:], ",,,", '"","","",""',
                                "\t", ""]) + "\n\n")
    notes: list[str] = []
    cfg = init_project(blank, tmp_path / "q", InitOptions(id_col="id", label_col="label", hide_labels=True), notes)
    assert cfg.n_items == 40 and cfg.feature_cols == ["a", "b"]  # the spaced row made every column text
    assert any("8 empty rows of blank.csv left out" in n for n in notes), notes
    long = tmp_path / "long.csv"  # separators only, more of them than the header: named like a long row
    long.write_text("\n".join(["id,a,b,label", *rows, ",,,,,,"]) + "\n")
    with pytest.raises(InputError, match="line 42 has 7 fields, the header 4"):
        init_project(long, tmp_path / "r", InitOptions(id_col="id", label_col="label", hide_labels=True))
