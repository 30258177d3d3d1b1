"""Selection at scale: stream a synthetic 1,000,000 x 128 pool through TopM and select a batch.

Each case runs in its own subprocess so its peak RSS (ru_maxrss) is its own; a second run of the
same case under tracemalloc reports the peak of traced (numpy + Python) allocations, which
excludes the interpreter/torch baseline.  The pool is generated chunk by chunk and never held.

    .venv/bin/python benchmarks/select_scale.py            # all cases, writes the results file
    .venv/bin/python benchmarks/select_scale.py --case diverse --json   # one case, JSON on stdout

``--sampled`` times ``power-diverse`` (the greedy with each pick drawn, the `epistemic` preset's
classification selector; full update) against the lazy greedy on the decision-flip rows, into
benchmarks/results/select_scale_sampled.md.

A second table times the lazy greedy against the full-update greedy (``DiverseStrategy(lazy=False)``)
on the same candidates: per-thread CPU (time.thread_time), the two run interleaved, torch and the
numpy BLAS limited to 1 thread (threadpoolctl), and checks that both pick the same keys.
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

from bench_common import cpu_medians  # noqa: E402
from threadpoolctl import threadpool_limits  # noqa: E402

from alkit.posterior import decision_parts  # noqa: E402
from alkit.strategies.diverse import DiverseStrategy, SampledDiverseStrategy  # noqa: E402
from alkit.engines.streaming import TopM  # noqa: E402
from alkit.strategies.topk import TopKStrategy  # noqa: E402
from alkit.types import Candidates, GaussianLastLayer, SelectionContext  # noqa: E402

N_POOL, DIM, CHUNK, M, BATCH = 1_000_000, 128, 50_000, 20_000, 1_000
CASES = ("generate", "topk", "diverse", "diverse-full")
K_CLASSES = 10  # decision-flip rows: classes of the synthetic classifier


def chunks(seed: int = 0):
    """The synthetic pool: (keys, scores, embeddings) per chunk, float32 embeddings."""
    rng = np.random.default_rng(seed)
    for lo in range(0, N_POOL, CHUNK):
        n = min(CHUNK, N_POOL - lo)
        yield (np.arange(lo, lo + n, dtype=np.int64), rng.random(n),
               rng.standard_normal((n, DIM), dtype=np.float32))


def random_posterior(seed: int = 1, K: int = 1) -> GaussianLastLayer:
    """A random dense (128 + 1)-dim posterior with a bias feature and unit noise (K outputs share it)."""
    rng = np.random.default_rng(seed)
    d = DIM + 1
    A = rng.normal(size=(d, d)) / np.sqrt(d)
    cov = 0.1 * A @ A.T + 1e-3 * np.eye(d)
    return GaussianLastLayer(cov_K_d_d=torch.tensor(cov[None]), noise_var_K=torch.ones(K),
                             bias_feature=True)


def flip_candidates(n: int, seed: int = 2) -> Candidates:
    """n candidates of a random K-class linear classifier with decision-flip's extras (top-two
    decision sign, its noise and the logit margin), as alkit/acquisition/flip.py hands them on."""
    rng = np.random.default_rng(seed)
    emb = rng.standard_normal((n, DIM), dtype=np.float32)
    logits = torch.tensor(emb.astype(np.float64) @ rng.normal(size=(DIM, K_CLASSES)) / np.sqrt(DIM) * 3.0)
    probs = torch.softmax(logits, 1)
    sign, noise = decision_parts(probs)
    extras = {"decision_sign_n_K": sign.numpy(), "decision_noise_n": noise.numpy(),
              "decision_margin_n": (sign * logits).sum(1).clamp_min(0.0).numpy()}
    return Candidates(keys_n=np.arange(n), scores_n=rng.random(n), embedding_n_d=emb,
                      probs_n_C=probs.numpy(), extras=extras)


LAZY_ROWS = (  # (label, candidates, posterior K, batch, repeats)
    ("batch information, n=20,000, b=1,000", "homoscedastic", M, 1, BATCH, 3),
    ("decision-flip, K=10, n=200 (the preset's m = 20 b), b=10", "flip", 200, K_CLASSES, 10, 3),
    ("decision-flip, K=10, n=20,000, b=10", "flip", M, K_CLASSES, 10, 3),
    ("decision-flip, K=10, n=20,000 (the preset's m = 20 b), b=1,000", "flip", M, K_CLASSES, BATCH, 1),
)


def lazy_table() -> list[str]:
    """Full-update vs lazy greedy, per-thread CPU seconds, 1 thread, interleaved; same picks checked."""
    torch.set_num_threads(1)
    lines = ["| case | full update s | lazy s | speed-up | same keys |", "|---|---|---|---|---|"]
    with threadpool_limits(1):
        for label, kind, n, K, b, repeats in LAZY_ROWS:
            if kind == "flip":
                cands = flip_candidates(n)
            else:
                rng = np.random.default_rng(3)
                cands = Candidates(keys_n=np.arange(n), scores_n=rng.random(n),
                                   embedding_n_d=rng.standard_normal((n, DIM), dtype=np.float32))
            ctx = SelectionContext(seed=0, posterior=random_posterior(K=K))
            picks: dict[str, np.ndarray] = {}

            def run(lazy: bool) -> None:
                picks[str(lazy)] = DiverseStrategy(lazy=lazy).select(cands, b, ctx).keys

            t = cpu_medians({"full": lambda: run(False), "lazy": lambda: run(True)}, repeats=repeats)
            same = "yes" if np.array_equal(picks["False"], picks["True"]) else "NO"
            lines.append(f"| {label} | {t['full']:.2f} | {t['lazy']:.2f} | {t['full'] / t['lazy']:.1f}x | {same} |")
            print(lines[-1], flush=True)
    return lines


SAMPLED_ROWS = ((200, 10, 3), (2_000, 100, 3), (20_000, 1_000, 1))  # (m = 20 b candidates, b, repeats)


def sampled_table() -> list[str]:
    """power-diverse (lazy draw, and its full-update reference) vs the lazy greedy on decision-flip
    candidates, per-thread CPU, 1 thread, interleaved; the two power-diverse paths must draw alike."""
    torch.set_num_threads(1)
    lines = ["| decision-flip, K=10, m = 20 b candidates | power-diverse s | its full update s | diverse (lazy) s "
             "| power-diverse / diverse | same draws |", "|---|---|---|---|---|---|"]
    with threadpool_limits(1):
        for n, b, repeats in SAMPLED_ROWS:
            cands = flip_candidates(n)
            ctx = SelectionContext(seed=0, posterior=random_posterior(K=K_CLASSES))
            same = np.array_equal(SampledDiverseStrategy().select(cands, b, ctx).keys,
                                  SampledDiverseStrategy(lazy=False).select(cands, b, ctx).keys)
            t = cpu_medians({"sampled": lambda: SampledDiverseStrategy().select(cands, b, ctx),
                             "full": lambda: SampledDiverseStrategy(lazy=False).select(cands, b, ctx),
                             "lazy": lambda: DiverseStrategy().select(cands, b, ctx)}, repeats=repeats)
            lines.append(f"| m = {n:,}, b = {b:,} | {t['sampled']:.2f} | {t['full']:.2f} | {t['lazy']:.2f} "
                         f"| {t['sampled'] / t['lazy']:.1f}x | {'yes' if same else 'NO'} |")
            print(lines[-1], flush=True)
    return lines


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
        sel = DiverseStrategy(lazy=case == "diverse").select(cands, BATCH, SelectionContext(seed=0, posterior=random_posterior()))
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
    ap.add_argument("--sampled", action="store_true", help="only the power-diverse timing table")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "select_scale.md"))
    args = ap.parse_args()
    if args.case:
        print(json.dumps(child(args.case, args.trace)))
        return
    if args.sampled:
        lines = ["# power-diverse against the lazy greedy", "",
                 "Command: `.venv/bin/python benchmarks/select_scale.py --sampled`", "",
                 f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, per-thread CPU seconds (median of "
                 "the interleaved repeats: 3, 1 for the last row), torch and numpy BLAS at 1 thread; candidates "
                 "and posterior as in select_scale.md's decision-flip rows.", "", *sampled_table()]
        (ROOT / "benchmarks" / "results" / "select_scale_sampled.md").write_text("\n".join(lines) + "\n")
        return
    rows = []
    for case in CASES:
        timed = spawn(case, trace=False)
        traced = spawn(case, trace=True)
        rows.append((case, timed, traced))
        print(case, timed, traced["traced_peak_mb"], flush=True)
    write_report(Path(args.out), rows, lazy_table())


def write_report(path: Path, rows: list[tuple[str, dict, dict]], lazy_lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    desc = {
        "generate": "generate the pool only (the baseline)",
        "topk": f"TopM(m={BATCH}) stream, then TopKStrategy b={BATCH}",
        "diverse": f"TopM(m={M}) stream, then DiverseStrategy b={BATCH} (lazy greedy, the default)",
        "diverse-full": f"TopM(m={M}) stream, then DiverseStrategy(lazy=False) b={BATCH} (full update)",
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
        "",
        "## Lazy greedy vs the full-update greedy",
        "",
        "Same candidates for both, per-thread CPU seconds (median of the interleaved repeats: 3, "
        "1 for the last row), torch and numpy BLAS at 1 thread (threadpoolctl). Batch information: "
        f"{M:,} x {DIM} standard normal rows (what TopM keeps of the pool above) and the random "
        "posterior above. decision-flip: a random linear 10-class classifier on such rows (logits "
        "scaled so margins spread), its top-two decisions, the same posterior shared by the 10 classes "
        "(joint weight space K d = 1,290). 'same keys': both return identical keys in identical order.",
        "",
        *lazy_lines,
    ]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
