"""Selection at scale: stream a synthetic 1,000,000 x 128 pool through TopM and select a batch.

Each case runs in its own subprocess so its peak RSS (ru_maxrss) is its own; a second run of the
same case under tracemalloc reports the peak of traced (numpy + Python) allocations, which
excludes the interpreter/torch baseline.  The pool is generated chunk by chunk and never held.

    .venv/bin/python benchmarks/select_scale.py            # all cases, writes the results file
    .venv/bin/python benchmarks/select_scale.py --case diverse --json   # one case, JSON on stdout
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
import tracemalloc
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from alkit.strategies.diverse import DiverseStrategy  # noqa: E402
from alkit.engines.streaming import TopM  # noqa: E402
from alkit.strategies.topk import TopKStrategy  # noqa: E402
from alkit.types import GaussianLastLayer, SelectionContext  # noqa: E402

N_POOL, DIM, CHUNK, M, BATCH = 1_000_000, 128, 50_000, 20_000, 1_000
CASES = ("generate", "topk", "diverse")


def chunks(seed: int = 0):
    """The synthetic pool: (keys, scores, embeddings) per chunk, float32 embeddings."""
    rng = np.random.default_rng(seed)
    for lo in range(0, N_POOL, CHUNK):
        n = min(CHUNK, N_POOL - lo)
        yield (np.arange(lo, lo + n, dtype=np.int64), rng.random(n),
               rng.standard_normal((n, DIM), dtype=np.float32))


def random_posterior(seed: int = 1) -> GaussianLastLayer:
    """A random dense (128 + 1)-dim posterior with a bias feature and unit noise."""
    rng = np.random.default_rng(seed)
    d = DIM + 1
    A = rng.normal(size=(d, d)) / np.sqrt(d)
    cov = 0.1 * A @ A.T + 1e-3 * np.eye(d)
    return GaussianLastLayer(cov_K_d_d=torch.tensor(cov[None]), noise_var_K=torch.ones(1),
                             bias_feature=True)


def run_case(case: str) -> dict[str, float]:
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    if case == "generate":
        total = 0.0
        for keys, scores, emb in chunks():
            total += float(scores[0])
        out["stream_s"] = time.perf_counter() - t0
        return out
    m = BATCH if case == "topk" else M
    acc = TopM(m)
    for keys, scores, emb in chunks():
        acc.push(keys, scores, embedding_n_d=emb)
    cands = acc.result()
    out["stream_s"] = time.perf_counter() - t0
    t1 = time.perf_counter()
    if case == "topk":
        sel = TopKStrategy().select(cands, BATCH, SelectionContext(seed=0))
    else:
        sel = DiverseStrategy().select(cands, BATCH, SelectionContext(seed=0, posterior=random_posterior()))
    out["select_s"] = time.perf_counter() - t1
    out["n_selected"] = float(len(sel.keys))
    out["sum_utilities"] = float(sel.utilities.sum())
    return out


def child(case: str, trace: bool) -> dict[str, float]:
    torch.set_num_threads(2)
    base_rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trace:
        tracemalloc.start()
    t0 = time.perf_counter()
    res = run_case(case)
    res["total_s"] = time.perf_counter() - t0
    if trace:
        res["traced_peak_mb"] = tracemalloc.get_traced_memory()[1] / 2**20
        tracemalloc.stop()
    res["baseline_rss_mb"] = base_rss_kb / 1024
    res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return res


def spawn(case: str, trace: bool) -> dict[str, float]:
    cmd = [sys.executable, __file__, "--case", case, "--json"] + (["--trace"] if trace else [])
    proc = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", choices=CASES)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--trace", action="store_true")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "select_scale.md"))
    args = ap.parse_args()
    if args.case:
        print(json.dumps(child(args.case, args.trace)))
        return
    rows = []
    for case in CASES:
        timed = spawn(case, trace=False)
        traced = spawn(case, trace=True)
        rows.append((case, timed, traced))
        print(case, timed, traced["traced_peak_mb"], flush=True)
    write_report(Path(args.out), rows)


def write_report(path: Path, rows: list[tuple[str, dict, dict]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    desc = {
        "generate": "generate the pool only (the baseline)",
        "topk": f"TopM(m={BATCH}) stream, then TopKStrategy b={BATCH}",
        "diverse": f"TopM(m={M}) stream, then DiverseStrategy b={BATCH}",
    }
    lines = [
        "# Selection at scale",
        "",
        f"Synthetic pool of {N_POOL:,} x {DIM} float32 embeddings with uniform random scores, "
        f"generated {CHUNK:,} rows at a time (never held whole: it would be "
        f"{N_POOL * DIM * 4 / 2**20:.0f} MiB). Diverse uses a random dense (128+1)-dim posterior "
        "(bias feature, unit noise). torch.set_num_threads(2); numpy/OpenBLAS on the same 2 cores, "
        "shared with other work on the machine, so times are indicative.",
        "",
        "Command: `.venv/bin/python benchmarks/select_scale.py`",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
        f"torch {torch.__version__}, date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
        "",
        "| case | stream s | select s | total s | peak RSS MiB | RSS after imports MiB | "
        "traced peak MiB |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, t, tr in rows:
        sel = f"{t['select_s']:.2f}" if "select_s" in t else "-"
        lines.append(
            f"| {desc[case]} | {t['stream_s']:.2f} | {sel} | {t['total_s']:.2f} | "
            f"{t['peak_rss_mb']:.0f} | {t['baseline_rss_mb']:.0f} | {tr['traced_peak_mb']:.0f} |"
        )
    lines += [
        "",
        "stream s includes generating the synthetic chunks (see the 'generate' row for that "
        "share). Peak RSS is the whole process (interpreter, torch, numpy); 'traced peak' is the "
        "peak of allocations tracemalloc sees (numpy arrays included) in a second run of the same "
        "case, i.e. what the selection path itself held at its worst.",
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
