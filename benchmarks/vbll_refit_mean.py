"""VBLL classification with and without the mean refit (``-o refit_mean=true``): accuracy, NLL and
ECE of the predictive on the test split, random labels at N = 20..300, on development sets.

Why: on the image path VBLL is underconfident (vbll_image_calibration_dev.md); the mean the 100
full-batch steps leave is short of the optimum of its own loss, and the refit sets it.  Evidence
for a later rule on the epistemic preset (whose acquisitions read the mean), not a default.

    ALKIT_THREADS=1 PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/vbll_refit_mean.py \\
        --data mnist8_dev,fashion8_dev,hpc,synth --seeds 0,1,2 --out benchmarks/results/vbll_refit_mean_dev.md
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import polars as pl
import torch

from alkit.metrics import classification_metrics
from alkit.models.backbone import pool_input_spec
from alkit.registry import make_learner
from learner_parity import load_set  # benchmarks/


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--ns", default="20,50,100,200,300")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name in args.data.split(","):
        d = load_set(name)
        assert d["task"] == "classification", name
        spec = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
        C = len(d["classes"])
        for n in [int(x) for x in args.ns.split(",")]:
            for seed in [int(s) for s in args.seeds.split(",")]:
                idx = np.random.default_rng(seed).choice(len(d["X_pool"]), n, replace=False)
                for refit_mean in (False, True):
                    learner = make_learner("vbll", "classification", C, input=spec, refit_mean=refit_mean)
                    t0 = time.thread_time()
                    learner.fit(d["X_pool"][idx], d["y_pool"][idx], seed=seed)
                    fit_s = time.thread_time() - t0
                    probs = learner.predict(d["X_test"]).probs_n_C.numpy()
                    m = classification_metrics(probs, d["y_test"])
                    rows.append({"data": name, "N": n, "seed": seed, "refit_mean": refit_mean,
                                 "accuracy": m["accuracy"], "nll": m["nll"], "ece": m["ece"],
                                 "confidence": float(probs.max(1).mean()), "fit_s": fit_s})
                print(name, n, seed, [(r["refit_mean"], round(r["accuracy"], 3), round(r["nll"], 3), round(r["ece"], 3))
                                      for r in rows[-2:]], flush=True)
    df = pl.DataFrame(rows)
    agg = (df.group_by("data", "N", "refit_mean")
             .agg(pl.col("accuracy", "nll", "ece", "confidence", "fit_s").mean()).sort("data", "N", "refit_mean"))
    lines = ["| data | N | refit_mean | accuracy | mean top probability | ECE | NLL | fit CPU-s |",
             "|---|---:|---|---|---|---|---|---|"]
    for r in agg.iter_rows(named=True):
        lines.append(f"| {r['data']} | {r['N']} | {r['refit_mean']} | {r['accuracy']:.3f} | {r['confidence']:.3f} | "
                     f"{r['ece']:.3f} | {r['nll']:.3f} | {r['fit_s']:.2f} |")
    mean = df.group_by("refit_mean").agg(pl.col("accuracy", "nll", "ece", "fit_s").mean()).sort("refit_mean")
    lines += ["", "Mean over every set, N and seed:", "",
              "| refit_mean | accuracy | ECE | NLL | fit CPU-s |", "|---|---|---|---|---|"]
    for r in mean.iter_rows(named=True):
        lines.append(f"| {r['refit_mean']} | {r['accuracy']:.4f} | {r['ece']:.4f} | {r['nll']:.4f} | {r['fit_s']:.2f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "a") as f:
            f.write(text)


if __name__ == "__main__":
    main()
