"""Learner rule 2 (benchmarks/results/label_efficiency_dev/recheck_rule.md): the VBLL learner's weight
prior on flat raw features fixed at 10 (``capacity=fixed``, the default before) against chosen per
fit between 10 and 1 by cross-validation (``capacity=prior``, the default since), on the random
labelled subsets of benchmarks/learner_parity.py, development sets only.

    python benchmarks/prior_cv_rule.py --data hpc,synth,diamonds,cells,churn,chile,hmda,mnist8_flat_dev,blobs_dev \
        --out benchmarks/results/label_efficiency_dev/prior_cv_rule.csv
    python benchmarks/prior_cv_rule.py --scorer none ...   # learner rule 3: the plain MLP learner
    python benchmarks/prior_cv_rule.py --scorer none --first-seed 10 ...   # learner rule 3b: fresh seeds 10-19

The rule's runs were made before ``capacity=prior`` existed, with the same candidates put into
``capacity=cv`` (alkit.models.capacity.CANDIDATES replaced by PRIOR_CANDIDATES): the same folds,
scorer and choice, so the same fits; its CSV names the fixed rows `vbll` (now `vbll-fixed`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learner_parity as lp  # noqa: E402

from alkit.registry import make_learner  # noqa: E402

LEARNERS = (("fixed", {"capacity": "fixed"}), ("prior-cv", {"capacity": "prior"}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--scorer", default="vbll", help="the learner (vbll: learner rule 2; none: learner rule 3)")
    ap.add_argument("--ns", default="20,50,100,200,300")
    ap.add_argument("--seeds", type=int, default=10, help="how many seeds")
    ap.add_argument("--first-seed", type=int, default=0, help="the first of them (learner rule 3b: 10, fresh seeds)")
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    with threadpool_limits(1):
        for name in a.data.split(","):
            d = lp.load_set(name)
            d["spec"] = lp.pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
            for N in (int(n) for n in a.ns.split(",")):
                for seed in range(a.first_seed, a.first_seed + a.seeds):
                    idx = np.random.default_rng(seed).choice(len(d["X_pool"]), N, replace=False)
                    for label, opts in LEARNERS:
                        learner = make_learner(a.scorer, "classification", len(d["classes"]), input=d["spec"], **opts)
                        report = learner.fit(d["X_pool"][idx], d["y_pool"][idx], seed=seed) or {}
                        rows.append({"data": name, "N": N, "seed": seed, "learner": f"{a.scorer}-{label}",
                                     "value": lp.alkit_metric(learner, d), "prior": report.get("capacity_prior_l2", 10.0)})
                sub = pl.DataFrame(rows).filter((pl.col("data") == name) & (pl.col("N") == N))
                base, cand = (sub.filter(pl.col("learner") == f"{a.scorer}-{lab}")["value"].to_numpy() for lab, _ in LEARNERS)
                weak = (sub.filter(pl.col("learner") == f"{a.scorer}-{LEARNERS[1][0]}")["prior"] == 1.0).mean()
                print(f"{name} N={N}: {base.mean():.3f} -> {cand.mean():.3f} ({(cand - base).mean():+.3f}); "
                      f"prior 1 chosen {weak:.0%}", flush=True)
    pl.DataFrame(rows).write_csv(a.out)


if __name__ == "__main__":
    main()
