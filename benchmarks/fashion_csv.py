"""Write a Fashion-MNIST CSV for `alkit init` (id, 784 pixel columns scaled to [0, 1], label).

    .venv/bin/python benchmarks/fashion_csv.py OUT.csv [N]    # N seeded training images (default 3000)
"""

import sys
from pathlib import Path

import numpy as np
import polars as pl

from alkit.datasets import load_fashion_mnist

out, n = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 3000
X, y = load_fashion_mnist("train")
idx = np.random.default_rng(0).permutation(len(y))[:n]
pix = (X[idx].reshape(n, -1) / 255.0).astype(np.float32)
df = pl.DataFrame({"id": [f"f{i}" for i in idx]}).hstack(pl.DataFrame(pix, schema=[f"p{j}" for j in range(784)]))
df.with_columns(pl.Series("label", y[idx])).write_csv(out)
print(f"wrote {out}: {n} images")
