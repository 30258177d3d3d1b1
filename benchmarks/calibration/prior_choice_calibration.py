"""The calibration audit's regression check (reg_exp.py) for one VBLL head alone, with its weight prior
chosen per fit (learner rules 13 / 13b, the default) and without the choice (capacity=fixed),
references included.
usage (from benchmarks/calibration/):
    PYTHONPATH=../.. ../../.venv/bin/python prior_choice_calibration.py [--head quantile|hetero] DATASET [N ...]
-> results/reg_q13_DATASET.csv (quantile) or results/reg_h13_DATASET.csv (hetero); the audit's own
results/reg_DATASET.csv is left as it is"""
import argparse
import os
import tempfile

import reg_exp

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--head", default="quantile", choices=("quantile", "hetero"))
    ap.add_argument("dataset")
    ap.add_argument("ns", nargs="*", type=int, default=[50, 200])
    a = ap.parse_args()
    reg_exp.LEARNERS = [(f"vbll-{a.head}", "vbll", {"head": a.head}),
                        (f"vbll-{a.head}-fixed", "vbll", {"head": a.head, "capacity": "fixed"})]
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:  # reg_exp.run writes results/reg_DATASET.csv under the cwd
        os.chdir(scratch)
        df = reg_exp.run(a.dataset, a.ns)
        os.chdir(here)
    df.to_csv(os.path.join("results", f"reg_{a.head[0]}13_{a.dataset}.csv"), index=False)
    print(df.groupby(["n", "learner"])[["cov50", "cov80", "cov90", "crps"]].mean().round(3).to_string())
