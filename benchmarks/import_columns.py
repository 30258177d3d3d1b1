"""Peak memory and CPU of `alkit queue import` for answers files with and without the feature columns
`queue labels --include` writes (784 Fashion-MNIST pixels): an import reads only the columns it uses.

    python benchmarks/import_columns.py --rows 8000 --out benchmarks/results/import_columns.md

Each import runs in a fresh process on a fresh copy of one project (/usr/bin/time: user+sys CPU s, peak RSS)."""

from __future__ import annotations

import argparse
import gzip
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import polars as pl

FASHION = Path("/usr/share/datasets/fashion-mnist")
TEST_ROWS = 2000


def _fashion(n: int) -> tuple[np.ndarray, np.ndarray]:
    X = np.frombuffer(gzip.open(FASHION / "train-images-idx3-ubyte.gz").read(), np.uint8, offset=16).reshape(-1, 784)
    y = np.frombuffer(gzip.open(FASHION / "train-labels-idx1-ubyte.gz").read(), np.uint8, offset=8)
    return X[:n], y[:n]


def team_frame(n: int) -> pl.DataFrame:
    """The first ``n`` Fashion-MNIST training images as a team's table: px0..px783, id t0.., label c0..c9."""
    X, y = _fashion(n)
    return pl.DataFrame(X, schema=[f"px{i}" for i in range(784)]).with_columns(
        pl.Series("id", [f"t{i}" for i in range(len(y))]), pl.Series("label", [f"c{k}" for k in y]))


def rows_and_out(doc: str | None, rows: str) -> argparse.Namespace:
    """The command line of these benchmarks: --rows (of the pool) and --out (the results file)."""
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument("--rows", type=int, default=8000, help=f"{rows} (plus {TEST_ROWS:,} test rows)")
    ap.add_argument("--out", type=Path, required=True)
    return ap.parse_args()


def _alkit(*args: str) -> list[str]:
    return [sys.executable, "-c", "import sys; from alkit.entry import main; sys.argv[0] = 'alkit'; sys.exit(main())",
            *args]


def timed(*args: str) -> tuple[float, float]:
    """`alkit ARGS` in a fresh process: its user+sys CPU seconds and peak RSS in MB (/usr/bin/time)."""
    done = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", *_alkit(*args)], capture_output=True, text=True,
                          check=True)
    user, system, peak_kb = done.stderr.strip().splitlines()[-1].split()
    return float(user) + float(system), int(peak_kb) / 1024


def _measure(project: Path, answers: Path, work: Path) -> tuple[float, float]:
    copy = work / "p"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(project, copy)
    return timed("queue", "import", str(answers), "-p", str(copy), "--unqueued")


def main() -> None:
    args = rows_and_out(__doc__, "answered pool rows")
    frame = team_frame(args.rows + TEST_ROWS)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        frame.with_columns(pl.when(pl.int_range(pl.len()) < TEST_ROWS).then(pl.col("label")).alias("label")) \
            .write_parquet(work / "team.parquet")
        subprocess.run(_alkit("init", str(work / "team.parquet"), "--id-col", "id", "--label-col", "label", "-p",
                              str(work / "base")), check=True, capture_output=True)
        answers = frame.slice(TEST_ROWS)
        files = {"id, label (Parquet)": work / "plain.parquet", "id, label + 784 pixels (Parquet)": work / "px.parquet",
                 "id, label + 784 pixels (CSV)": work / "px.csv"}
        answers.select("id", "label").write_parquet(files["id, label (Parquet)"])
        answers.write_parquet(files["id, label + 784 pixels (Parquet)"])
        answers.write_csv(files["id, label + 784 pixels (CSV)"])
        rows = [(what, *_measure(work / "base", path, work)) for what, path in files.items()]
    write_table(args.out, f"python benchmarks/import_columns.py --rows {args.rows} --out {args.out}",
                f"`queue import --unqueued` of {args.rows:,} answers into a Fashion-MNIST project", "answers file", rows)


def write_table(out: Path, command: str, what: str, first: str, rows: list[tuple[str, float, float]]) -> None:
    """The results file: the command, what was measured, a row per file (CPU s, peak RSS MB); printed too."""
    lines = [f"Command: `{command}`", "", f"{what} ({TEST_ROWS:,} test rows); one fresh process each.", "",
             f"| {first} | CPU s | peak RSS MB |", "|---|---|---|"]
    lines += [f"| {name} | {cpu:.2f} | {mb:.0f} |" for name, cpu, mb in rows]
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
