"""`alkit init` and `alkit run` end to end at scale, through the real CLI, one subprocess per command.

Data (fixed seed, written in chunks to benchmarks/_work/scale_e2e/): 10 Gaussian classes
(means N(0, 0.5^2) per dimension, unit noise), features rounded to 4 decimals,
columns id, label, f0..f{d-1}:

    1,000,000 x 128 as CSV      2,000,000 x 64 as Parquet

Per data set: `alkit init DATA --id-col id --label-col label --hide-labels --test-frac 0.2`, then
`alkit run --strategy epistemic --budget 2000 --batch-size 1000` (the model-free first batch of
1,000, then one fit-score-select cycle over the whole pool), with --threads 1.  Each command runs
under /usr/bin/time -v, so its peak RSS and CPU (user + sys) are that process's own; the
per-phase seconds come from the store's cycles table: the CLI runs with time.perf_counter bound to
time.process_time (the loop times its fit/score/select phases with it and nothing else), so they
are CPU seconds of the process.

    .venv/bin/python benchmarks/scale_e2e.py                      # writes benchmarks/results/scale_e2e.md
    .venv/bin/python benchmarks/scale_e2e.py --sets 2m64csv --init-only --out benchmarks/results/scale_e2e_init_2m64csv.md
    PYTHONPATH=/path/to/other/checkout .venv/bin/python benchmarks/scale_e2e.py --label main --no-write
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from bench_common import emit

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / "benchmarks" / "_work" / "scale_e2e"
SETS = {"1m128": (1_000_000, 128, "csv"), "2m64": (2_000_000, 64, "parquet"), "2m64csv": (2_000_000, 64, "csv")}
CLASSES, CHUNK, SEED = 10, 100_000, 0
INIT_ARGS = ["--id-col", "id", "--label-col", "label", "--hide-labels", "--test-frac", "0.2"]
RUN_ARGS = ["--strategy", "epistemic", "--budget", "2000", "--batch-size", "1000"]


def make_data(n: int, d: int, fmt: str) -> Path:
    """The data file (made once; a stamp file says it is complete)."""
    WORK.mkdir(parents=True, exist_ok=True)
    path = WORK / f"data_{n}x{d}.{fmt}"
    stamp = path.with_suffix(".done")
    if stamp.exists() and path.exists():
        return path
    rng = np.random.default_rng(SEED)
    means_c_d = rng.normal(scale=0.5, size=(CLASSES, d))
    schema = pa.schema([("id", pa.string()), ("label", pa.int64()), *[(f"f{j}", pa.float32()) for j in range(d)]])
    writer = pacsv.CSVWriter(path, schema) if fmt == "csv" else pq.ParquetWriter(path, schema)
    with writer:
        for start in range(0, n, CHUNK):
            m = min(CHUNK, n - start)
            y_m = rng.integers(0, CLASSES, m)
            X_m_d = np.round(means_c_d[y_m] + rng.standard_normal((m, d)), 4).astype(np.float32)
            cols = [pa.array([f"r{i:07d}" for i in range(start, start + m)]), pa.array(y_m)]
            writer.write_table(pa.Table.from_arrays(cols + [pa.array(X_m_d[:, j]) for j in range(d)], schema=schema))
    stamp.write_text("ok\n")
    return path


# the CLI with the loop's phase timer (time.perf_counter, used only for the cycle log's fit/score/select
# seconds) bound to process CPU time, so the cycles table holds CPU seconds on a shared machine
CPU_CLI = "import sys, time; time.perf_counter = time.process_time; from alkit.cli import main; sys.argv[0] = 'alkit'; main()"


def timed(args: list[str], cwd: Path) -> dict[str, float]:
    """Run ``alkit ARGS`` under /usr/bin/time -v: peak RSS (GB) and user + sys CPU seconds."""
    env = {**os.environ, "ALKIT_THREADS": "1", "OMP_NUM_THREADS": "1", "COLUMNS": "200"}
    cmd = ["/usr/bin/time", "-v", sys.executable, "-c", CPU_CLI, *args]
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(args[:2])} failed ({res.returncode}):\n{res.stdout[-2000:]}\n{res.stderr[-3000:]}")

    def field(name: str) -> float:
        return float(re.search(rf"{re.escape(name)}: ([0-9.:]+)", res.stderr).group(1))  # type: ignore[union-attr]

    return {"rss_gb": field("Maximum resident set size (kbytes)") / 1024**2,
            "cpu_s": field("User time (seconds)") + field("System time (seconds)")}


def cycle_log(project: Path) -> list[dict[str, float]]:
    with sqlite3.connect(project / "alkit.db") as db:  # eval_s is a cycle signal (cycle_signals.data)
        rows = db.execute("SELECT c.cycle, c.n_labeled, c.fit_s, c.score_s, c.select_s, g.data FROM cycles c "
                          "LEFT JOIN cycle_signals g ON g.run_id = c.run_id AND g.cycle = c.cycle "
                          "ORDER BY c.cycle").fetchall()
    return [{"cycle": c, "n_labeled": n, "fit_s": f, "score_s": s, "select_s": sel,
             "eval_s": float(json.loads(g or "{}").get("eval_s", 0.0))} for c, n, f, s, sel, g in rows]


def bench(name: str, init_only: bool = False) -> dict[str, object]:
    n, d, fmt = SETS[name]
    data = make_data(n, d, fmt)
    project = WORK / f"proj_{name}"
    shutil.rmtree(project, ignore_errors=True)
    project.mkdir(parents=True)
    init = timed(["init", str(data), *INIT_ARGS, "-p", str(project)], WORK)  # cwd WORK: PYTHONPATH picks the code
    run = {} if init_only else timed(["run", *RUN_ARGS, "-p", str(project)], WORK)
    out = {"name": name, "n": n, "d": d, "fmt": fmt, "init": init, "run": run,
           "cycles": [] if init_only else cycle_log(project)}
    shutil.rmtree(project, ignore_errors=True)
    return out


def markdown(results: list[dict[str, object]], label: str, command: str, before: dict | None) -> list[str]:
    with_runs = any(r["cycles"] for r in results)  # not with --init-only
    what = "`alkit init DATA " + " ".join(INIT_ARGS) + "`" + (", then `alkit run " + " ".join(RUN_ARGS) + "`." if with_runs
                                                            else " only.")
    lines = ["# alkit init and run at scale (issue 14)", "",
             f"Command: `{command}`", "",
             f"Code: {label}; machine: {platform.machine()}, {os.cpu_count()} cores (shared), Python "
             f"{platform.python_version()}; every command with --threads 1 (ALKIT_THREADS=1; polars keeps its default threads).",
             "",
             what,
             "Peak RSS and CPU (user + sys) per command from /usr/bin/time -v.", "",
             "| data | command | peak RSS (GB) | CPU s |", "|---|---|---:|---:|"]
    for r in results:
        tag = f"{r['n']:,} x {r['d']} {r['fmt']}"
        for cmd in ("init", "run"):
            m = r[cmd]  # type: ignore[index]
            if not m:
                continue
            lines.append(f"| {tag} | {cmd} | {m['rss_gb']:.2f} | {m['cpu_s']:.1f} |")
    lines += [] if not with_runs else ["", "Cycles of the run (the store's cycles table, CPU seconds of the process; cycle 0 is the model-free "
              "first batch, cycle 2 the final fit on 2,000 labels):", "",
              "| data | cycle | labels | fit s | score s | select s | fit+score+select s | test eval s |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        for c in r["cycles"]:  # type: ignore[union-attr]
            total = c["fit_s"] + c["score_s"] + c["select_s"]
            lines.append(f"| {r['n']:,} x {r['d']} | {c['cycle']} | {c['n_labeled']} | {c['fit_s']:.1f} | "
                         f"{c['score_s']:.1f} | {c['select_s']:.1f} | {total:.1f} | {c.get('eval_s', 0.0):.1f} |")
    if before:
        lines += ["", f"Before, {before['label']} (`{before['command']}`):", "",
                  "| data | command | peak RSS before (GB) | after (GB) | CPU s before | after |", "|---|---|---:|---:|---:|---:|"]
        old = {r["name"]: r for r in before["results"]}
        for r in results:
            for cmd in ("init", "run"):
                if r["name"] in old and r[cmd] and old[r["name"]][cmd]:  # type: ignore[index]
                    a, b = old[r["name"]][cmd], r[cmd]  # type: ignore[index]
                    lines.append(f"| {r['n']:,} x {r['d']} {r['fmt']} | {cmd} | {a['rss_gb']:.2f} | {b['rss_gb']:.2f} | "
                                 f"{a['cpu_s']:.1f} | {b['cpu_s']:.1f} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma-separated subset of {', '.join(SETS)}")
    ap.add_argument("--label", default="this checkout", help="what code ran (shown in the results)")
    ap.add_argument("--no-write", action="store_true", help="print only; do not write benchmarks/results/scale_e2e.md")
    ap.add_argument("--init-only", action="store_true", help="only `alkit init` (no run)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks/results/scale_e2e.md", help="results file")
    ap.add_argument("--save", type=Path, help="also write the raw results (JSON) here")
    ap.add_argument("--before", type=Path, help="raw results of another checkout (JSON from --save) to compare with")
    args = ap.parse_args()
    results = []
    for name in args.sets.split(","):
        results.append(bench(name, args.init_only))
        print(json.dumps(results[-1]), flush=True)
    command = shlex.join(["python", "benchmarks/scale_e2e.py", *sys.argv[1:]])
    if args.save:
        args.save.write_text(json.dumps({"label": args.label, "command": command, "results": results}, indent=1))
    before = json.loads(args.before.read_text()) if args.before else None
    emit(markdown(results, args.label, command, before), None if args.no_write else args.out)


if __name__ == "__main__":
    main()
