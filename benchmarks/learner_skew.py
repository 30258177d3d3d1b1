"""The VBLL learner against logistic regression on class-skewed labelled sets (development sets).

A third of the classes drawn at a tenth of their share, N random pool labels, 4 seeds; uniform draws beside.
Why: an unseen-table check saw alkit's learner fall far behind logistic regression on entropy's skewed picks.
    ALKIT_THREADS=1 python benchmarks/learner_skew.py hpc 200
"""
import sys, dataclasses, numpy as np, torch
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))
from learner_parity import load_set, alkit_fit, alkit_metric, standardise
from alkit.models.backbone import pool_input_spec
from sklearn.linear_model import LogisticRegression
torch.set_num_threads(1)
name = sys.argv[1]; n = int(sys.argv[2])
d = load_set(name)
d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
if d["image_shape"] is None and not d["embedding"]:
    d["spec"] = dataclasses.replace(d["spec"], pool_sample_n_f=d["X_pool"])
C = len(d["classes"])
Zp, Zt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
for skew in (False, True):
    res = {"alkit": [], "logreg": []}
    for seed in range(4):
        rng = np.random.default_rng(seed)
        # skewed: the last third of the classes get a tenth of their share
        w = np.ones(C); 
        if skew: w[-(C // 3):] = 0.1
        p = w[d["y_pool"]]; p = p / p.sum()
        idx = rng.choice(len(d["y_pool"]), n, replace=False, p=p)
        learner, _ = alkit_fit("vbll", {}, d, idx, seed)
        res["alkit"].append(alkit_metric(learner, d))
        lr = LogisticRegression(C=1.0, max_iter=2000).fit(Zp[idx], d["y_pool"][idx])
        res["logreg"].append(float((lr.predict(Zt) == d["y_test"]).mean()))
    print(name, n, "skewed" if skew else "uniform", {k: round(float(np.mean(v)), 3) for k, v in res.items()})
