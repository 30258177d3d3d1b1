"""An image project's cycle with the frozen stem read from the project's stem feature file
(alkit/stem_features.py) against computed by the learners over the pool every cycle (the file
unwritable, as before it existed): CPU seconds of this process (Parquet decoding runs on Arrow's threads) per cycle, interleaved in one
process, and whether the two pick the same items.

Two projects from one Parquet file of Fashion-MNIST training images (28 x 28, ``--pool`` items,
10 % of them the test split), the `epistemic` preset, batch 10, one cycle per call, alternating.

    ALKIT_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/stem_cycle_time.py --pool 20000 --cycles 6 \
        --out benchmarks/results/stem_cycle_time.md
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

import alkit.loop as loop_module
from alkit.config import load_project
from alkit.datasets import load_fashion_mnist
from alkit.loop import ActiveLoop, RunRequest
from alkit.pools.ingest import InitOptions, init_project


def fashion_project(work: Path, name: str, n: int) -> Path:
    data = work / "fashion.parquet"
    if not data.exists():
        X, y = load_fashion_mnist("train")
        idx = np.random.default_rng(0).choice(len(y), n, replace=False)
        df = pl.DataFrame({"id": [f"f{i:05d}" for i in idx]})
        df = df.hstack(pl.DataFrame((X[idx].reshape(n, -1) / 255.0).astype(np.float32),
                                    schema=[f"px{j}" for j in range(784)]))
        df.with_columns(pl.Series("label", y[idx])).write_parquet(data)
    root = work / name
    init_project(data, root, InitOptions(id_col="id", label_col="label", hide_labels=True, test_frac=0.1,
                                         progress=False, image_shape=(28, 28)))
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pool", type=int, default=20_000)
    ap.add_argument("--cycles", type=int, default=6)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)
    real = loop_module.ensure_stem_features
    forms = {"stem file": real, "stem in the model": lambda *a, **k: None}
    times: dict[str, list[float]] = {f: [] for f in forms}
    parts: dict[str, list[tuple[float, float]]] = {f: [] for f in forms}
    with tempfile.TemporaryDirectory() as tmp, threadpool_limits(1):
        roots = {f: fashion_project(Path(tmp), f"p{i}", args.pool) for i, f in enumerate(forms)}
        loops = {f: ActiveLoop(load_project(r)) for f, r in roots.items()}
        for cycle in range(args.cycles):
            for form, ensure in forms.items():  # interleaved
                loop_module.ensure_stem_features = ensure
                t = time.process_time()
                res = loops[form].run(RunRequest(strategy="epistemic", budget=10 * (args.cycles + 1), max_cycles=1))
                times[form].append(time.process_time() - t)
                parts[form].append((res[-1].fit_s, res[-1].score_s))
                print(f"cycle {cycle} {form}: {times[form][-1]:.2f} CPU-s", flush=True)
        loop_module.ensure_stem_features = real
        picks = {f: lp.store.selected_keys(next(iter(lp.store.runs())).id).tolist() for f, lp in loops.items()}
    same = picks["stem file"] == picks["stem in the model"]
    lines = [f"Fashion-MNIST, {args.pool:,} images (28 x 28, 10 % test split), `epistemic`, batch 10, "
             f"{args.cycles} cycles; same picks: {same} ({len(picks['stem file'])} items)", "",
             "| form | first cycle CPU-s (model-free; the stem file written) | later cycles CPU-s, median "
             "| their fit / score wall s, median |", "|---|---|---|---|"]
    for form in forms:
        later = times[form][1:]
        fit = statistics.median(p[0] for p in parts[form][1:])
        score = statistics.median(p[1] for p in parts[form][1:])
        lines.append(f"| {form} | {times[form][0]:.2f} | {statistics.median(later):.2f} | {fit:.2f} / {score:.2f} |")
    ratio = statistics.median(times["stem in the model"][1:]) / statistics.median(times["stem file"][1:])
    lines.append(f"\nLater cycles: the stem file {ratio:.2f}x cheaper.")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text("# An image project's cycle: the stem file against the stem in the model\n\n"
                            f"Command: `{' '.join(['ALKIT_THREADS=1 PYTHONPATH=. .venv/bin/python', *__import__('sys').argv])}`"
                            "\n\n" + text + "\n")


if __name__ == "__main__":
    main()
