"""Candidate learners for the small-N parity work, on the same labelled subsets as learner_parity.py.

Why a separate script: the candidates include an input transform (PCA/ZCA whitening from the whole
pool, shrunk by eps times the mean eigenvalue) that learner_parity.py has no option for; only the
alkit rows are fitted, the comparators come from a learner_parity.py CSV of the same seeds
(idx = default_rng(seed).choice(pool, N) in both), joined by learner_parity_paired.py.

    python benchmarks/learner_parity_candidates.py tweets,synth 20,50,100,200,300 0-9 \
        "d0|-|vbll:depth=0,,w-pca1|pca@1|vbll" out.csv      # MAP=1: also argmax-of-mean-logit rows
Candidate: 'label|transform|scorer:options'; transform '-' (none), 'pca@eps' or 'zca@eps'.
"""
import sys, time, json
import numpy as np, polars as pl, torch
from threadpoolctl import threadpool_limits
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
import learner_parity as lp
from alkit.models.backbone import pool_input_spec

def whiten(Xp, eps, kind):
    mu = Xp.mean(0); sd = Xp.std(0); sd = np.where(sd > 1e-8, sd, 1.0)
    Z = (Xp - mu) / sd
    C = np.cov(Z.T.astype(np.float64))
    lam, V = np.linalg.eigh(C)
    lam = np.maximum(lam, 0)
    W = V / np.sqrt(lam + eps * lam.mean())  # shrinkage relative to the mean eigenvalue (=1 after standardising)
    if kind == "zca":
        W = W @ V.T
    return lambda X: (((X - mu) / sd) @ W).astype(np.float32)

import os
MAP = int(os.environ.get("MAP", "0"))

def main(data, ns, seeds, cands, out):
    rows = []
    torch.set_num_threads(1)
    with threadpool_limits(1):
        for name in data:
            d0 = lp.load_set(name)
            for label, wspec, entry in cands:
                d = dict(d0)
                if wspec != "-":
                    kind, eps = wspec.split("@")
                    f = whiten(d0["X_pool"], float(eps), kind)
                    d["X_pool"], d["X_test"] = f(d0["X_pool"]), f(d0["X_test"])
                d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
                if wspec != "-":  # already centred and scaled: no per-feature restandardisation
                    from alkit.models.backbone import InputSpec
                    f = d["X_pool"].shape[1]
                    d["spec"] = InputSpec(np.zeros(f), np.ones(f))
                _, scorer, options = lp.parse_learners(entry)[0]
                for N in ns:
                    for seed in seeds:
                        idx = np.random.default_rng(seed).choice(len(d["X_pool"]), N, replace=False)
                        learner, t = lp.alkit_fit(scorer, dict(options), d, idx, seed)
                        v = lp.alkit_metric(learner, d)
                        rows.append({"data": name, "N": N, "seed": seed, "learner": label, "value": v, "fit_s": t})
                        if d["task"] == "classification" and MAP:
                            m = learner.predict(d["X_test"]).extras["logits_n_C"].argmax(1).numpy()
                            rows.append({"data": name, "N": N, "seed": seed, "learner": label + "+map",
                                         "value": float((m == d["y_test"]).mean()), "fit_s": t})
                    pl.DataFrame(rows).write_csv(out)
                    print(name, label, N, round(float(np.mean([r["value"] for r in rows[-len(seeds) * (1 + MAP):] if r["learner"] == label])), 4), flush=True)
    pl.DataFrame(rows).write_csv(out)

if __name__ == "__main__":
    data = sys.argv[1].split(","); ns = [int(x) for x in sys.argv[2].split(",")]
    lo, hi = sys.argv[3].split("-"); seeds = list(range(int(lo), int(hi) + 1))
    cands = [tuple(c.split("|")) for c in sys.argv[4].split(",,")]
    main(data, ns, seeds, cands, sys.argv[5])
