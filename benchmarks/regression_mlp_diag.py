"""Why the regression MLP trails a Bayesian ridge at 20-100 labels on RandHIE: mean or variance?

For each data set, label count and seed (random labels, as benchmarks/learner_parity.py draws them),
fits scikit-learn's BayesianRidge and alkit's regression MLP (``MLPLearner``, mean and log-variance
heads) in variants, and prints the CRPS of each against the ridge's (paired, mean ± s.e.):

- ``het``: the MLP's own loss (heteroscedastic Gaussian NLL) on the default network and prior;
- ``homo``: one noise variance for every item;
- ``betaB``: beta-NLL (each item's NLL weighted by its detached variance to the power B);
- ``#D``: ``D`` residual blocks instead of the default; ``@P``: weight prior precision ``P``.

    PYTHONPATH=. .venv/bin/python benchmarks/regression_mlp_diag.py --data docvis,randhie \
        --variants het,homo,beta0.5,het#0,het#0@30

Recorded: benchmarks/results/regression_mlp_diag.md.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.linear_model import BayesianRidge
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from learner_parity import gaussian_crps, load_set, standardise  # noqa: E402

from alkit.models.backbone import pool_input_spec  # noqa: E402
from alkit.models.learner import MLPLearner  # noqa: E402
from alkit.models.train import TrainConfig  # noqa: E402


class VariantMLP(MLPLearner):
    """The regression MLP with its noise model replaced (``mode``: het, homo, betaB)."""

    mode = "het"

    def _loss(self, z_b_f: torch.Tensor, y_b: torch.Tensor) -> torch.Tensor:
        out = self.head(self.backbone.trainable(z_b_f))
        var_b = out[:, 1].exp().clamp_min(1e-6)
        if self.mode == "homo":
            var_b = out[:, 1].mean().exp().clamp_min(1e-6).expand_as(var_b)
        if self.mode.startswith("beta"):
            nll_b = 0.5 * ((y_b - out[:, 0]) ** 2 / var_b + var_b.log())
            return (nll_b * var_b.detach() ** float(self.mode[4:])).mean()
        return F.gaussian_nll_loss(out[:, 0], y_b, var_b, full=True)


def variant(spec_text: str, spec) -> VariantMLP:
    """'het#0@30' -> heteroscedastic, depth 0, prior precision 30."""
    mode, _, prior = spec_text.partition("@")
    mode, _, depth = mode.partition("#")
    learner = VariantMLP("regression", input=spec, train=TrainConfig(prior_l2=float(prior)) if prior else None,
                         **({"depth": int(depth)} if depth else {}))
    learner.mode = mode
    return learner


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="docvis,randhie")
    ap.add_argument("--variants", default="het,homo,beta0.5")
    ap.add_argument("--ns", default="20,50,100,200")
    ap.add_argument("--seeds", type=int, default=8)
    args = ap.parse_args()
    torch.set_num_threads(1)
    variants = args.variants.split(",")
    with threadpool_limits(1):
        for name in args.data.split(","):
            d = load_set(name)
            spec = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
            Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
            yt = d["y_test"]
            for N in map(int, args.ns.split(",")):
                rows = []
                for seed in range(args.seeds):
                    idx = np.random.default_rng(seed).choice(len(Xp), N, replace=False)
                    yl = d["y_pool"][idx]
                    mu, sd = BayesianRidge().fit(Xp[idx], yl).predict(Xt, return_std=True)
                    row = [gaussian_crps(mu, sd, yt), float(np.sqrt(np.mean((mu - yt) ** 2)))]
                    for v in variants:
                        learner = variant(v, spec)
                        learner.fit(d["X_pool"][idx], yl, seed=seed)
                        p = learner.predict(d["X_test"])
                        m, s = p.mean_n.numpy().astype(float), p.dist.std().numpy().astype(float)
                        if learner.mode == "homo":
                            s = np.full_like(s, s.mean())
                        row += [gaussian_crps(m, s, yt), float(np.sqrt(np.mean((m - yt) ** 2)))]
                    rows.append(row)
                r = np.asarray(rows)
                cells = []
                for i, v in enumerate(variants):
                    diff = r[:, 0] - r[:, 2 + 2 * i]
                    cells.append(f"{v} {r[:, 2 + 2 * i].mean():.3f} ({diff.mean():+.3f} ± {diff.std(ddof=1) / np.sqrt(len(diff)):.3f}; "
                                 f"rmse {r[:, 3 + 2 * i].mean():.3f})")
                print(f"{name} N={N} ridge {r[:, 0].mean():.3f} (rmse {r[:, 1].mean():.3f}) | " + " | ".join(cells), flush=True)


if __name__ == "__main__":
    main()
