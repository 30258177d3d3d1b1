"""The calibration audit's regression check (reg_exp.py) for the quantile head alone, with learner
rule 13's prior choice (the default) and without it (capacity=fixed), references included.
usage (from benchmarks/calibration/): PYTHONPATH=../.. ../../.venv/bin/python quantile_rule13.py DATASET [N ...]
-> results/reg_q13_DATASET.csv (the audit's own results/reg_DATASET.csv is left as it is)"""
import os
import sys
import tempfile

import reg_exp

reg_exp.LEARNERS = [("vbll-quantile", "vbll", {"head": "quantile"}),
                    ("vbll-quantile-fixed", "vbll", {"head": "quantile", "capacity": "fixed"})]

if __name__ == "__main__":
    ds, here = sys.argv[1], os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:  # reg_exp.run writes results/reg_DATASET.csv under the cwd
        os.chdir(scratch)
        df = reg_exp.run(ds, [int(a) for a in sys.argv[2:]] or [50, 200])
        os.chdir(here)
    df.to_csv(os.path.join("results", f"reg_q13_{ds}.csv"), index=False)
    print(df.groupby(["n", "learner"])[["cov50", "cov80", "cov90", "crps"]].mean().round(3).to_string())
