"""Write randhie.csv: RAND Health Insurance Experiment covariates and y = log1p(medical dollars).

The target is zero-inflated (23 % zeros) and heavy-tailed: a Gaussian head fits it badly, which is
what the quantile (QR-VBLL) and bucket (CR-VBLL) heads are for.  A seeded 5,000-row sample keeps
the example quick.
"""

import os
from pathlib import Path

import numpy as np
import polars as pl

from alkit.datasets import load_randhie

n = int(os.environ.get("N", 5000))
X, y, names = load_randhie()
idx = np.random.default_rng(0).permutation(len(y))[:n]
df = pl.DataFrame({"id": [f"h{i}" for i in idx], **{c: X[idx, j] for j, c in enumerate(names)}, "y": y[idx]})
out = Path(__file__).with_name("randhie.csv")
df.write_csv(out)
print(f"wrote {out} ({n} rows, {len(names)} covariates, {float((y[idx] == 0).mean()):.0%} zeros)")
