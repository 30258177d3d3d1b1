"""Peak memory and CPU of `alkit queue labels --include <784 pixels>` (every label with the Fashion-MNIST
features it was given for), in each format: the export builds columns, not one dict per row.

    python benchmarks/export_columns.py --rows 8000 --out benchmarks/results/export_columns.md

One project with ``--rows`` answers imported; each export runs in a fresh process (/usr/bin/time: user+sys CPU s,
peak RSS)."""

from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import polars as pl

from import_columns import TEST_ROWS, _alkit, rows_and_out, team_frame, timed, write_table


def main() -> None:
    args = rows_and_out(__doc__, "labelled pool rows")
    frame = team_frame(args.rows + TEST_ROWS)
    names = [f"px{i}" for i in range(784)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        frame.with_columns(pl.when(pl.int_range(pl.len()) < TEST_ROWS).then(pl.col("label")).alias("label")) \
            .write_parquet(work / "team.parquet")
        project = work / "p"
        subprocess.run(_alkit("init", str(work / "team.parquet"), "--id-col", "id", "--label-col", "label", "-p",
                              str(project)), check=True, capture_output=True)
        frame.slice(TEST_ROWS).select("id", "label").write_parquet(work / "answers.parquet")
        subprocess.run(_alkit("queue", "import", str(work / "answers.parquet"), "-p", str(project), "--unqueued"),
                       check=True, capture_output=True)
        for what, suffix, columns in (("id, label (Parquet)", "parquet", "id"),
                                      ("+ 784 pixels (Parquet)", "parquet", ",".join(names)),
                                      ("+ 784 pixels (CSV)", "csv", ",".join(names)),
                                      ("+ 784 pixels (JSON Lines)", "jsonl", ",".join(names))):
            out = work / f"out.{suffix}"
            cpu, mb = timed("queue", "labels", "-p", str(project), "-o", str(out), "--include", columns)
            written = pl.read_parquet(out) if suffix == "parquet" else None
            if written is not None and columns != "id":  # the file holds what was given: every pixel of every label
                got = written.sort("id").select(names).to_numpy()
                want = frame.slice(TEST_ROWS).sort("id").select(names).to_numpy()
                assert (got == want).all() and written.height == args.rows
            rows.append((what, cpu, mb))
    write_table(args.out, f"python benchmarks/export_columns.py --rows {args.rows} --out {args.out}",
                f"`queue labels --include` of {args.rows:,} labels in a Fashion-MNIST project", "labels file", rows)

if __name__ == "__main__":
    main()
