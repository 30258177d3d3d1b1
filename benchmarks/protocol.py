"""The label-efficiency protocol: fixed split, 20 random initial labels, batches of 10, 5 seeds.

The published digits protocol the peer libraries were measured on (scikit-activeml, modAL, baal):
load_digits, train_test_split(test_size=0.3, stratify=y, random_state=0) as the test split (540
items) for every seed, pool 1,257, 20 random initial labels (the same for every strategy of a
seed: the first batch is the `random` selector's, seeded by (seed, cycle 0)), 25 queries of 10 to
270 labels, seeds 0-4.  The same protocol runs on the other data sets of benchmarks/al_data.py
(budget 300 there).  Every run goes through the library's ActiveLoop on a project made by
`alkit init --split-col split --hide-labels`, exactly as `alkit run --initial 20
--initial-selector random --batch-size 10` would run it.

Metrics per strategy (mean ± std over seeds): accuracy (regression: CRPS) at fixed label counts,
AULC = trapezoid of the per-seed curve over [20, budget] divided by (budget - 20), labels to
target = first label count at which the mean curve reaches it, query seconds per 1,000 pool items
(scoring + selection, CPU-bound wall seconds of the loop), fit seconds per cycle.

    python benchmarks/protocol.py --data digits --strategies epistemic,random,margin --seeds 0-4
    python benchmarks/protocol.py --data digits --report-only      # tables from the stored runs

Strategy entries are `preset[:scorer][+acquisition]`, e.g. `random:vbll` (random batches, VBLL
model), `epistemic+bald`.  Projects live in benchmarks/_work/protocol/<data>/ (resumable: run the
same command again after a kill).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

from alkit.choices import HIGHER_IS_BETTER
from alkit.config import load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.pools.ingest import InitOptions, init_project
from alkit.report import cycles_frame
from bench_common import DATA_FILE, IMAGE_SHAPES, parse_options  # benchmarks/bench_common.py

HERE = Path(__file__).resolve().parent
DATA_DIR = HERE / "_work" / "data"
WORK = Path(__import__("os").environ.get("ALKIT_PROTOCOL_WORK", HERE / "_work" / "protocol"))
BUDGET = {"digits": 270, "digits8": 270}
AT = {"digits": [100, 200, 270], "digits8": [100, 200, 270]}
TARGET = {"digits": 0.90, "digits8": 0.90}


def project_for(name: str) -> Path:
    """The protocol project of a data set, created once from its file (fixed split)."""
    root = WORK / name
    if (root / "alkit.toml").exists():
        return root
    source = DATA_FILE.get(name, name)
    path = DATA_DIR / f"{source}.parquet"
    df = pl.read_parquet(path)
    manifest = DATA_DIR / "manifest.json"  # the set's declared task (an integer count is still regression)
    task = json.loads(manifest.read_text()).get(source, {}).get("task") if manifest.exists() else None
    opts = InitOptions(id_col="id", label_col="label", split_col="split", hide_labels=True, progress=False,
                       image_shape=IMAGE_SHAPES.get(name), task=task)
    if "embedding" in df.columns:
        opts.feature_col = "embedding"
    else:
        opts.features = [c for c in df.columns if c not in ("id", "label", "split")]
    root.parent.mkdir(parents=True, exist_ok=True)
    init_project(path, root, opts)
    return root


def parse_entry(entry: str) -> tuple[str, str | None, str | None, dict, dict]:
    """'preset[:scorer][+acquisition][@k=v;train.k=v]' -> (preset, scorer, acquisition,
    learner options, training options); option values are JSON or plain strings."""
    head, _, opts = entry.partition("@")
    head, _, acquisition = head.partition("+")
    preset, _, scorer = head.partition(":")
    learner, train = {}, {}
    for k, value in parse_options(opts).items():
        (train if k.startswith("train.") else learner)[k.removeprefix("train.")] = value
    return preset, scorer or None, acquisition or None, learner, train


def request(entry: str, seed: int, budget: int, batch_size: int = 10, initial: int = 20) -> RunRequest:
    """The run of one entry and seed (``@candidates=m`` sets RunRequest.candidates)."""
    preset, scorer, acquisition, learner, train = parse_entry(entry)
    candidates = learner.pop("candidates", None)
    return RunRequest(strategy=preset, scorer=scorer, acquisition=acquisition, budget=budget, batch_size=batch_size,
                      initial=initial, initial_selector="random", seed=seed, name=f"{entry}-s{seed}",
                      learner_options=learner, train=train, candidates=candidates)


def run_all(name: str, entries: list[str], seeds: list[int], budget: int, batch_size: int = 10,
            initial: int = 20) -> None:
    loop = ActiveLoop(load_project(project_for(name)))
    for entry in entries:
        for seed in seeds:
            t0 = time.perf_counter()
            loop.run(request(entry, seed, budget, batch_size, initial))
            print(f"{name} {entry} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)


def curves(name: str) -> pl.DataFrame:
    """Per run and cycle: strategy entry, seed, n_labeled, metrics and timings."""
    proj = load_project(project_for(name))
    df = cycles_frame(ActiveLoop(proj).store)
    df = df.with_columns(pl.col("run").str.replace(r"-s\d+$", "").alias("entry"),
                         pl.col("run").str.extract(r"-s(\d+)$").cast(pl.Int64).alias("seed"))
    return df


def summarise(name: str, df: pl.DataFrame, budget: int, metric: str, at: list[int],
              target: float | None, initial: int = 20) -> pl.DataFrame:
    higher = metric in HIGHER_IS_BETTER
    proj = load_project(project_for(name))
    n_pool = int(sum(v for k, v in ActiveLoop(proj).store.counts().items() if k.startswith("pool:")))
    rows = []
    for entry in df["entry"].unique(maintain_order=True).to_list():
        sub = df.filter(pl.col("entry") == entry)
        per_seed = []
        for seed in sorted(sub["seed"].unique().to_list()):
            s = sub.filter((pl.col("seed") == seed) & pl.col(metric).is_not_null()).sort("n_labeled")
            n, v = s["n_labeled"].to_numpy(), s[metric].to_numpy()
            keep = (n >= initial) & (n <= budget)
            if keep.sum() < 2 or n[keep].max() < budget:
                continue  # incomplete run
            per_seed.append((n[keep], v[keep], s))
        if not per_seed:
            continue
        # A seed whose initial labels hold one class has no model (and no metric) until random
        # batches bring a second one; every strategy of that seed shares those cycles, so the
        # curves are compared on the label counts all seeds have (the table says from where).
        grid = per_seed[0][0]
        for p in per_seed[1:]:
            grid = np.intersect1d(grid, p[0])
        if len(grid) < 2 or any(len(np.setdiff1d(p[0][p[0] >= grid[0]], grid)) for p in per_seed):
            raise ValueError(f"{entry}: runs evaluated at different label counts")
        V = np.stack([p[1][np.isin(p[0], grid)] for p in per_seed])
        aulc = np.trapezoid(V, grid, axis=1) / (grid[-1] - grid[0])
        mean = V.mean(0)
        reached = np.flatnonzero(mean >= target) if (target is not None and higher) else np.array([])
        all_cycles = pl.concat([p[2] for p in per_seed])
        query_s = (all_cycles["score_s"] + all_cycles["select_s"]).sum() / max(len(per_seed), 1)
        queries = all_cycles.filter(pl.col("n_scored") > 0).height / len(per_seed)
        row = {"strategy": entry, "seeds": len(per_seed), "from": int(grid[0]), "initial": initial, "aulc": float(aulc.mean()), "aulc_std": float(aulc.std(ddof=0)),
               f"labels_to_{target}": int(grid[reached[0]]) if len(reached) else None,
               "query_s_per_1k": float(query_s / max(queries, 1) / n_pool * 1000),
               "fit_s_per_cycle": float(all_cycles["fit_s"].mean())}
        for a in at:
            j = int(np.searchsorted(grid, a, side="right") - 1)
            row[f"{metric}@{a}"] = float(V[:, j].mean())
            row[f"{metric}@{a}_std"] = float(V[:, j].std(ddof=0))
        rows.append(row)
    return pl.DataFrame(rows)


def markdown(table: pl.DataFrame, metric: str, at: list[int], target: float | None) -> str:
    cols = ["strategy", f"labels to {target}" if target is not None else None, "AULC",
            *[f"{metric}@{a}" for a in at], "query s / 1k pool", "fit s / cycle", "seeds"]
    cols = [c for c in cols if c]
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for r in table.sort("aulc", descending=metric in HIGHER_IS_BETTER).iter_rows(named=True):
        cells = [r["strategy"]]
        if target is not None:
            v = r.get(f"labels_to_{target}")
            cells.append(str(v) if v is not None else "not reached")
        cells.append(f"{r['aulc']:.3f} ± {r['aulc_std']:.3f}")
        cells += [f"{r[f'{metric}@{a}']:.3f} ± {r[f'{metric}@{a}_std']:.3f}" for a in at]
        cells += [f"{r['query_s_per_1k']:.3f}", f"{r['fit_s_per_cycle']:.3f}", str(r["seeds"])]
        if r["from"] > r["initial"]:  # some seed had no model before this count: AULC and curves start here
            cells[0] += f" (from n = {r['from']})"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def checkpoint_gaps(df: pl.DataFrame, metric: str, budget: int, baseline: str, initial: int = 20) -> pl.DataFrame:
    """Per strategy, its worst label count against the baseline: (mean - baseline mean) in
    baseline std units, signed so that negative is worse (the bar: never below -1)."""
    sign = 1.0 if metric in HIGHER_IS_BETTER else -1.0
    agg = (df.filter(pl.col(metric).is_not_null() & (pl.col("n_labeled") >= initial) & (pl.col("n_labeled") <= budget))
           .group_by("entry", "n_labeled").agg(pl.col(metric).mean().alias("m"), pl.col(metric).std(ddof=0).alias("s")))
    base = agg.filter(pl.col("entry") == baseline).select("n_labeled", pl.col("m").alias("bm"), pl.col("s").alias("bs"))
    out = agg.join(base, on="n_labeled").with_columns((sign * (pl.col("m") - pl.col("bm")) / pl.col("bs").clip(1e-9)).alias("z"))
    return out.group_by("entry").agg(pl.col("z").min().alias("worst_z"), pl.col("n_labeled").sort_by("z").first().alias("at"))


def paired_aulc(df: pl.DataFrame, metric: str, budget: int, ref: str, initial: int = 20) -> list[str]:
    """Per strategy, its AULC minus ``ref``'s on the same seed (same split and initial labels):
    mean ± standard error over the seeds both finished, and on how many it is better (CRPS: lower)."""
    def per_seed(entry: str) -> dict[int, float]:
        out = {}
        for seed in df.filter(pl.col("entry") == entry)["seed"].unique().to_list():
            s = df.filter((pl.col("entry") == entry) & (pl.col("seed") == seed) & pl.col(metric).is_not_null()
                          & (pl.col("n_labeled") >= initial) & (pl.col("n_labeled") <= budget)).sort("n_labeled")
            n, v = s["n_labeled"].to_numpy(), s[metric].to_numpy()
            if len(n) >= 2 and n.max() == budget:
                out[seed] = float(np.trapezoid(v, n) / (n[-1] - n[0]))
        return out
    base, sign, lines = per_seed(ref), (1.0 if metric in HIGHER_IS_BETTER else -1.0), []
    for entry in df["entry"].unique(maintain_order=True).to_list():
        if entry == ref:
            continue
        mine = per_seed(entry)
        d = np.array([mine[s] - base[s] for s in sorted(set(mine) & set(base))])
        if len(d) >= 2:
            lines.append(f"- {entry}: {d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f} "
                         f"(better on {int((sign * d > 0).sum())} of {len(d)} seeds)")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="digits")
    ap.add_argument("--strategies", default="epistemic,random:vbll,margin,entropy,bald,epig,badge")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--budget", type=int, default=None)
    ap.add_argument("--batch-size", type=int, default=10,
                    help="labels per query (runs keep their names: give another batch size its own work folder)")
    ap.add_argument("--initial", type=int, default=20,
                    help="random labels of the first batch; curves and AULC start there (runs keep their names: "
                         "give another value its own work folder)")
    ap.add_argument("--report-only", action="store_true")
    ap.add_argument("--metric", default=None,
                    help="the cycles' metric to report (default accuracy, regression crps; e.g. balanced_accuracy)")
    ap.add_argument("--out", default=None, help="write the Markdown table here (and a .csv beside it)")
    ap.add_argument("--baseline", default="random:vbll", help="strategy for the per-checkpoint gap column")
    ap.add_argument("--paired", action="append", default=[],
                    help="also list each strategy's AULC minus this one's, seed by seed (repeatable)")
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    budget = a.budget or BUDGET.get(a.data, 300)
    torch.set_num_threads(1)
    with threadpool_limits(1):
        entries = a.strategies.split(",")
        if not a.report_only:
            run_all(a.data, entries, seeds, budget, a.batch_size, a.initial)
        df = curves(a.data)
        df = df.filter(pl.col("entry").is_in(entries) & pl.col("seed").is_in(seeds))  # only what was asked for
        task = load_project(project_for(a.data)).config.task
        metric = a.metric or ("accuracy" if task == "classification" else "crps")
        span = budget - a.initial
        at = AT.get(a.data, [100, 200, budget] if a.initial < 100 else [a.initial + span // 4, a.initial + span // 2, budget])
        target = TARGET.get(a.data) if task == "classification" else None
        table = summarise(a.data, df, budget, metric, at, target, a.initial)
        gaps = checkpoint_gaps(df, metric, budget, a.baseline, a.initial) if a.baseline in entries else None
        paired = {ref: paired_aulc(df, metric, budget, ref, a.initial) for ref in a.paired if ref in entries}
    if gaps is not None:
        table = table.join(gaps.rename({"entry": "strategy"}), on="strategy", how="left")
    text = markdown(table, metric, at, target)
    if gaps is not None:
        text += ("\n\nWorst checkpoint against " + a.baseline + " (mean difference in its std units; "
                 + "negative = worse):\n\n"
                 + "\n".join(f"- {r['strategy']}: {r['worst_z']:+.2f} at n = {r['at']}"
                             for r in table.iter_rows(named=True) if r.get("worst_z") is not None))
    for ref, lines in paired.items():
        text += f"\n\nAULC minus {ref}'s, paired by seed (mean ± standard error):\n\n" + "\n".join(lines)
    print(text)
    if a.out:
        cmd = "python benchmarks/protocol.py " + " ".join(sys.argv[1:])
        Path(a.out).write_text(f"Command: `{cmd}`\n\n{text}\n")
        table.write_csv(Path(a.out).with_suffix(".csv"))


if __name__ == "__main__":
    main()
