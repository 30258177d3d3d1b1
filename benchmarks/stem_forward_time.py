"""The image stem's forward (PatchConv) as shipped against the form it replaced: CPU seconds of this
thread and peak memory per row, interleaved in one process, and the largest difference of outputs.

The old form concatenated ReLU(z) and ReLU(-z) at full map size and pooled both; the shipped one
pools z and ReLU(z) (rectified in place) and takes pool(ReLU(-z)) = pool(ReLU(z)) - pool(z).

    ALKIT_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/stem_forward_time.py \
        --out benchmarks/results/stem_forward_time.md
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from alkit.models.backbone import PatchConv, pool_input_spec

SHAPES = {"fashion 1x28x28": (1, 28, 28), "colour 3x32x32": (3, 32, 32), "digits 1x8x8": (1, 8, 8)}


def old_forward(conv: PatchConv, x_n_f: torch.Tensor) -> torch.Tensor:
    """The form replaced: both signs rectified and concatenated at full size, then pooled."""
    c, h, w = conv.image_shape
    x = (x_n_f.reshape(-1, c, h, w) - conv.pixel_mean[None, :, None, None]) / conv.pixel_std[None, :, None, None]
    z = torch.nn.functional.conv2d(x, conv.weight, padding=conv.padding)
    z = torch.cat([torch.relu(z), torch.relu(-z)], 1)
    return torch.nn.functional.avg_pool2d(z, conv.pool).flatten(1)


def stem(shape: tuple[int, int, int], n: int) -> tuple[PatchConv, torch.Tensor]:
    rng = np.random.default_rng(0)
    X = rng.random((n, int(np.prod(shape))), dtype=np.float32)
    spec = pool_input_spec(X[:256], shape)  # small: the measured forward, not this, sets the peak
    return PatchConv.of(spec), torch.as_tensor(X)


def peak_kb_per_row(shape_name: str, form: str, n: int) -> float:
    """Peak RSS growth of one forward of ``n`` rows, in a fresh process (KB a row; 0 when the
    forward stays under the peak the process had reached before it)."""
    code = (f"import resource, torch, sys; sys.path.insert(0, 'benchmarks'); torch.set_num_threads(1)\n"
            f"import stem_forward_time as b\nconv, x = b.stem(b.SHAPES[{shape_name!r}], {n})\n"
            f"r0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
            f"with torch.no_grad(): (b.old_forward(conv, x) if {form == 'old'} else conv(x))\n"
            f"print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - r0) / {n})")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=4096)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    torch.set_num_threads(1)
    # Memory first: a child's peak RSS starts at its parent's peak at fork, so the parent must not
    # have run a large forward yet.
    kb = {(name, form): peak_kb_per_row(name, form, args.rows) for name in SHAPES for form in ("old", "new")}
    lines = ["| images | old CPU-s | shipped CPU-s | ratio | old KB/row | shipped KB/row | max abs diff |",
             "|---|---|---|---|---|---|---|"]
    with threadpool_limits(1), torch.no_grad():
        for name, shape in SHAPES.items():
            conv, x = stem(shape, args.rows)
            times = {"old": [], "new": []}
            for _ in range(args.repeats):  # interleaved
                for form, f in (("old", lambda: old_forward(conv, x)), ("new", lambda: conv(x))):
                    t = time.thread_time()
                    f()
                    times[form].append(time.thread_time() - t)
            diff = float((old_forward(conv, x) - conv(x)).abs().max())
            old, new = np.median(times["old"]), np.median(times["new"])
            lines.append(f"| {name} ({args.rows} rows) | {old:.3f} | {new:.3f} | {old / new:.2f}x | "
                         f"{kb[name, 'old']:.0f} | {kb[name, 'new']:.0f} | {diff:.1e} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines)
    if args.out:
        args.out.write_text(
            "# The image stem's forward: shipped against the form it replaced\n\n"
            "Command: `ALKIT_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/stem_forward_time.py "
            "--out benchmarks/results/stem_forward_time.md` (medians of interleaved repeats, CPU seconds of "
            "one thread; peak RSS growth of one forward in a fresh process).\n\n" + text + "\n")


if __name__ == "__main__":
    main()
