"""Scoring throughput: every registered scorer on a synthetic 1,000,000 x 128 pool, chunk by chunk.

What is measured is cost, not accuracy: each learner is fitted briefly on a small random labeled
set (so every network has its fitted shapes and statistics) and then scores the pool with
``predict``, 50,000 rows at a time.  Each scorer runs in its own subprocess, so its peak RSS
(ru_maxrss) is its own, and that subprocess also times the plain deterministic forward pass
(backbone + head of an MLPLearner of the same width) on the same chunks, interleaved with the
scorer, so the ratio "scorer / plain forward" is measured under the same machine load.
The pool is generated chunk by chunk from a seeded generator and never held whole; generation is
not timed.

    .venv/bin/python benchmarks/throughput.py                   # all scorers, writes the results
    .venv/bin/python benchmarks/throughput.py --scorer sve --json --n-pool 200000   # one, JSON
    .venv/bin/python benchmarks/throughput.py --pair "gradnorm,gradnorm@output_cov=fisher" --n-pool 200000
                                                 # two in one process, interleaved: B / A per chunk
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alkit.models.train import TrainConfig  # noqa: E402
from alkit.registry import SCORERS, make_learner  # noqa: E402
from bench_common import cpu_medians, parse_options  # noqa: E402  (benchmarks/bench_common.py)

DIM, CHUNK, N_CLASSES, N_LABELED, THREADS, REPEATS = 128, 50_000, 10, 500, 1, 5
TASK = "classification"  # --task regression: standard-normal targets, each scorer's regression default
BRIEF = TrainConfig(max_epochs=2, min_steps=4, patience=1, batch_size=128)


def chunks(n_pool: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    for lo in range(0, n_pool, CHUNK):
        yield rng.standard_normal((min(CHUNK, n_pool - lo), DIM), dtype=np.float32)


def parse_entry(entry: str) -> tuple[str, dict[str, Any]]:
    """'vbll@cov=dense;class_score=mi' -> ('vbll', {'cov': 'dense', 'class_score': 'mi'})."""
    name, _, opts = entry.partition("@")
    return name, parse_options(opts)


def fitted(entry: str):
    """The scorer's learner (with the entry's options), fitted briefly on random labels (its cost
    does not depend on them)."""
    scorer, options = parse_entry(entry)
    rng = np.random.default_rng(1)
    X = rng.standard_normal((N_LABELED, DIM), dtype=np.float32)
    regression = TASK == "regression"
    y = rng.standard_normal(N_LABELED).astype(np.float32) if regression else rng.integers(0, N_CLASSES, N_LABELED)
    n_classes = None if regression else N_CLASSES
    try:
        learner = make_learner(scorer, TASK, n_classes, train=BRIEF, **options)
    except TypeError:  # a scorer without a training budget option
        learner = make_learner(scorer, TASK, n_classes, **options)
    learner.fit(X, y, seed=0)
    return learner


def child(scorer: str, n_pool: int) -> dict[str, float]:
    torch.set_num_threads(THREADS)
    t0 = time.perf_counter()
    plain = fitted("none")
    learner = plain if scorer == "plain" else fitted(scorer)
    fit_s = time.perf_counter() - t0
    rss_after_fit = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    plain_c, method_c = [], []
    checksum = 0.0

    def plain_forward(x_t: torch.Tensor) -> float:
        t = time.thread_time()
        with torch.no_grad():
            out = plain.head(plain.backbone(x_t))
        nonlocal checksum
        checksum += float(out[0, 0])
        return time.thread_time() - t

    def method(x: np.ndarray, x_t: torch.Tensor) -> float:
        if scorer == "plain":  # the plain forward against itself: the benchmark's noise floor
            return plain_forward(x_t)
        t = time.thread_time()
        pred = learner.predict(x)
        elapsed = time.thread_time() - t
        nonlocal checksum
        checksum += float(pred.epistemic_n[0])
        return elapsed

    for x in chunks(n_pool):
        x_t = torch.from_numpy(x)
        # per-thread CPU, interleaved REPEATS times on the same chunk; the medians count
        p_r, m_r = [], []
        for _ in range(REPEATS):
            p_r.append(plain_forward(x_t))
            m_r.append(method(x, x_t))
        plain_c.append(float(np.median(p_r)))
        method_c.append(float(np.median(m_r)))
    plain_a, method_a = np.array(plain_c), np.array(method_c)
    return {
        "n_pool": float(n_pool),
        "fit_s": fit_s,
        "plain_s": float(plain_a.sum()),
        "method_s": float(method_a.sum()),
        "items_per_s": n_pool / float(method_a.sum()),
        "plain_items_per_s": n_pool / float(plain_a.sum()),
        "ratio_total": float(method_a.sum() / plain_a.sum()),
        "ratio_median": float(np.median(method_a / plain_a)),
        "ratio_min": float(method_a.min() / plain_a.min()),
        "rss_after_fit_mb": rss_after_fit,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "checksum": checksum,
    }


def pair(entries: list[str], n_pool: int, rounds: int = 3) -> dict[str, float]:
    """Two scorers (and the plain forward) in this one process, timed on every chunk in turn,
    REPEATS times per round and ``rounds`` passes over the pool with the order of the two reversed
    every pass; the result is the median over chunks and passes of (B / A) per chunk and each one's
    median ratio to the plain forward.  Why: separate subprocesses (``spawn``) differ in machine
    load and memory layout by about +-0.15x on a shared 2-core machine, more than a cheap option
    costs; timing both on the same chunks, interleaved, cancels what they share."""
    torch.set_num_threads(THREADS)
    plain = fitted("none")
    a, b = (fitted(e) for e in entries)
    ratio_ba, ratio_a, ratio_b = [], [], []
    for r in range(rounds):
        for x in chunks(n_pool):
            x_t = torch.from_numpy(x)
            fns = {"plain": torch.no_grad()(lambda: plain.head(plain.backbone(x_t))),
                   "a": lambda: a.predict(x), "b": lambda: b.predict(x)}
            if r % 2:  # the order of the two reversed every pass (the plain forward first throughout)
                fns = {k: fns[k] for k in ("plain", "b", "a")}
            med = cpu_medians(fns, repeats=REPEATS)  # interleaved on this chunk, per-thread CPU
            ratio_ba.append(med["b"] / med["a"])
            ratio_a.append(med["a"] / med["plain"])
            ratio_b.append(med["b"] / med["plain"])
    q = lambda v: [float(x) for x in np.quantile(v, [0.25, 0.5, 0.75])]  # noqa: E731
    return {"b_over_a": q(ratio_ba), "a_over_plain": q(ratio_a), "b_over_plain": q(ratio_b),
            "chunks": float(len(ratio_ba))}


def spawn(scorer: str, n_pool: int) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--scorer", scorer, "--json", "--n-pool", str(n_pool), "--classes", str(N_CLASSES),
           "--task", TASK]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"rc {proc.returncode}"}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    global N_CLASSES, TASK
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scorer", help="one scorer name (or 'plain'); default: plain + every registered scorer")
    ap.add_argument("--n-pool", type=int, default=1_000_000)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--classes", type=int, default=N_CLASSES, help="class count of the synthetic task (default 10)")
    ap.add_argument("--task", choices=("classification", "regression"), default=TASK,
                    help="regression: standard-normal targets, each scorer's regression defaults")
    ap.add_argument("--scorers", default="", help="comma list of scorers for the report, each NAME or "
                    "NAME@key=value;key=value (default: every registered one with its defaults)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "throughput.md"))
    ap.add_argument("--pair", default="", help="'A,B': two scorer entries timed in one process on the same chunks, "
                    "interleaved (``pair``); prints B / A and each against the plain forward, as quartiles over chunks")
    args = ap.parse_args()
    N_CLASSES, TASK = args.classes, args.task
    if args.pair:
        entries = args.pair.split(",")
        if len(entries) != 2:
            ap.error("--pair takes two scorer entries, A,B")
        res = pair(entries, args.n_pool)
        print(json.dumps(res) if args.json else
              f"B / A {res['b_over_a'][1]:.3f} (quartiles {res['b_over_a'][0]:.3f}-{res['b_over_a'][2]:.3f}); "
              f"A / plain {res['a_over_plain'][1]:.2f}; B / plain {res['b_over_plain'][1]:.2f}; "
              f"{res['chunks']:.0f} chunk timings (A = {entries[0]}, B = {entries[1]})")
        return
    if args.scorer:
        res = child(args.scorer, args.n_pool)
        print(json.dumps(res) if args.json else res)
        return
    rows = []
    for scorer in ["plain", *(args.scorers.split(",") if args.scorers else SCORERS)]:
        res = spawn(scorer, args.n_pool)
        rows.append((scorer, res))
        print(scorer, res, flush=True)
    write_report(Path(args.out), rows, args.n_pool)


def write_report(path: Path, rows: list[tuple[str, dict]], n_pool: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = "`" + " ".join([".venv/bin/python benchmarks/throughput.py", *sys.argv[1:]]) + "`"
    lines = [
        "# Scoring throughput",
        "",
        f"Synthetic pool of {n_pool:,} x {DIM} float32 rows, scored {CHUNK:,} rows at a time by "
        f"`Learner.predict` ({'regression' if TASK == 'regression' else f'{N_CLASSES}-class classification'}, default options of each scorer: "
        "width 128, one residual block, as on raw features). Each learner was fitted for a couple of epochs on "
        f"{N_LABELED} random labeled rows: the cost is measured, not the accuracy. Each scorer runs "
        "in its own subprocess, which also times the plain forward (backbone + head of an "
        f"MLPLearner, no softmax) on each chunk: per-thread CPU seconds (time.thread_time), the plain "
        f"forward and the scorer interleaved {REPEATS} times on the same chunk, the median of each "
        "counting. 'x plain' columns: the median over chunks of (scorer time / plain "
        "time) of the same chunk, the ratio of the fastest chunks, "
        f"and the ratio of the totals. torch.set_num_threads({THREADS}) on a machine shared with "
        "other work, so absolute times are indicative and the per-chunk ratios are the result.",
        "",
        f"Command: {cmd}",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"torch {torch.__version__}, date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
        "",
        "| scorer | summary | items/s | x plain (median chunk) | x plain (fastest chunks) | "
        "x plain (totals) | scoring s | plain s (same process) | peak RSS MiB | RSS after fit MiB |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for scorer, r in rows:
        name, options = parse_entry(scorer)
        summary = "plain forward: backbone + head, no_grad" if scorer == "plain" else SCORERS[name].summary
        if options:
            summary = "with " + ", ".join(f"{k}={v}" for k, v in options.items()) + ": " + summary
        summary = summary.replace("|", "\\|")
        if "error" in r:
            lines.append(f"| {scorer} | {summary} | failed: {r['error']} | | | | | | | |")
            continue
        lines.append(
            f"| {scorer} | {summary} | {r['items_per_s']:,.0f} | {r['ratio_median']:.2f} | {r['ratio_min']:.2f} | "
            f"{r['ratio_total']:.2f} | {r['method_s']:.1f} | {r['plain_s']:.1f} | {r['peak_rss_mb']:.0f} | "
            f"{r['rss_after_fit_mb']:.0f} |"
        )
    lines += [
        "",
        "'none' is MLPLearner.predict (forward + softmax + entropy + Prediction), the model of the "
        "random baseline. Peak RSS is the whole subprocess (interpreter, torch, the fitted "
        "networks, one chunk and its Prediction); the pool itself is never held.",
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
