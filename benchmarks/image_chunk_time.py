"""Scoring 16,384 28x28 images through a fitted VBLL image learner in chunks of 16,384 and 1,024 rows:
CPU and peak memory (the image stem's maps set the working set; engines.common.image_stem_bytes).

Command: ALKIT_THREADS=1 PYTHONPATH=. .venv/bin/python benchmarks/image_chunk_time.py
"""

from __future__ import annotations

import resource
import time

import numpy as np
import torch

from alkit.models.backbone import pool_input_spec
from alkit.models.train import TrainConfig
from alkit.registry import make_learner


def main() -> None:
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    X = rng.random((16384, 784), dtype=np.float32)
    spec = pool_input_spec(X[:4096], (1, 28, 28))
    learner = make_learner("vbll", "classification", 10, train=TrainConfig(steps=20), input=spec)
    learner.fit(X[:200], rng.integers(0, 10, 200), seed=0)
    for rows in (16384, 1024, 16384, 1024):  # interleaved, one process
        t, c = time.perf_counter(), time.process_time()
        with torch.no_grad():
            for s in range(0, len(X), rows):
                learner.predict(X[s:s + rows])
        print(rows, f"wall {time.perf_counter() - t:.1f} s, cpu {time.process_time() - c:.1f} s", flush=True)
    print("peak RSS MB", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)


if __name__ == "__main__":
    main()
