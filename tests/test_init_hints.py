"""`alkit init`'s hints: a column that looks like a row id, used as a feature without --id-col."""

from __future__ import annotations

from pathlib import Path

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
