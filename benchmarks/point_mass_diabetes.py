"""The default VBLL regression learner's test CRPS on sklearn's diabetes at 10 / 20 / 50 random labels, 10 seeds.

Why: diabetes (integer targets, ~200 distinct values) is where chance ties took the bucket head before
point-mass rule P1 (docs/learner.md).  Run it from a checkout of each version to compare, e.g.
    PYTHONPATH=. python benchmarks/point_mass_diabetes.py
    PYTHONPATH=/path/to/checkout-of-81d37fb python benchmarks/point_mass_diabetes.py
Uses the split of tests/conftest.py (DiabetesSplit: 300 pool / 142 test).
"""

import sys
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from conftest import DiabetesSplit  # noqa: E402

from alkit import metrics  # noqa: E402
from alkit.learners.vbll import VBLLLearner  # noqa: E402

torch.set_num_threads(1)
d = DiabetesSplit()
for n in (10, 20, 50):
    out = []
    for seed in range(10):
        idx = d.labels(n, seed)
        learner = VBLLLearner("regression", input=d.spec)
        learner.fit(d.X[idx], d.y[idx], seed=seed)
        out.append(metrics.crps(learner.predict(d.X[d.test]).dist, d.y[d.test]))
    print(n, f"{np.mean(out):.2f} ± {np.std(out, ddof=1):.2f}")
