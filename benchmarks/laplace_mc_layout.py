"""Laplace MC mutual information: class-major (S, C, rows) against row-major (rows, S, C) samples, by class count.

The same estimator (alkit.learners.laplace.mc_mutual_information_eig with ``layout='class'`` or
``'row'``), 16 samples, 20,000 random items with logits N(0, 3^2) and eigen-variances U(0, 2),
float32, one thread; median per-thread CPU of 5 interleaved calls.  Decides CLASS_MAJOR_BELOW.

    .venv/bin/python benchmarks/laplace_mc_layout.py --out benchmarks/results/laplace_mc_layout.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from alkit.learners.laplace import CLASS_MAJOR_BELOW, mc_mutual_information_eig  # noqa: E402
from bench_common import cpu_medians, emit  # noqa: E402  (benchmarks/bench_common.py)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--classes", default="2,5,10,20,32,50,100")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    lines = [f"Command: `python benchmarks/laplace_mc_layout.py {' '.join(sys.argv[1:])}`", "",
             f"16 samples, 20,000 items, float32, 1 thread; the default layout is class-major below {CLASS_MAJOR_BELOW} classes.", "",
             "| classes | row-major ms | class-major ms | class / row | max MI difference |", "|---|---|---|---|---|"]
    g = torch.Generator().manual_seed(0)
    with threadpool_limits(1):
        for C in (int(c) for c in a.classes.split(",")):
            logits = torch.randn(20_000, C, generator=g) * 3
            Q = torch.linalg.qr(torch.randn(C, C, generator=g, dtype=torch.float64))[0].float()
            eig = torch.rand(20_000, C, generator=g) * 2
            fns = {lay: (lambda lay=lay: mc_mutual_information_eig(logits, Q, eig, n_samples=16, layout=lay))
                   for lay in ("row", "class")}
            med = cpu_medians(fns, repeats=5)
            diff = float((fns["row"]()[0] - fns["class"]()[0]).abs().max())
            lines.append(f"| {C} | {med['row'] * 1e3:.1f} | {med['class'] * 1e3:.1f} | {med['class'] / med['row']:.2f} | {diff:.1e} |")
            print(lines[-1], flush=True)
    emit(lines, a.out)


if __name__ == "__main__":
    main()
