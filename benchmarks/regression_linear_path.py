"""A linear path to the VBLL regression head: the standardised inputs beside the learnt features.

Candidate (not adopted): the last layer reads [phi(x), scale * x_std] instead of phi(x), so the
Bayesian last layer contains a Bayesian ridge on the raw inputs.  Prints the test CRPS (mean over 4
seeds of random labels) of a Bayesian ridge, the default VBLL learner, and the candidate at scale 1
and 0.3, per data set and label count.

    PYTHONPATH=. .venv/bin/python benchmarks/regression_linear_path.py friedman,hours,docvis,x_ames

Recorded: benchmarks/results/regression_linear_path.md.
"""
import sys, numpy as np, torch
from torch import nn
sys.path.insert(0, "benchmarks")
sys.path.insert(0, ".")
from learner_parity import load_set, standardise, gaussian_crps
import alkit.learners.vbll as V
from alkit.models.backbone import pool_input_spec
from sklearn.linear_model import BayesianRidge
from alkit import metrics
torch.set_num_threads(1)
orig = V.build_backbone
class Skip(nn.Module):
    def __init__(self, net, scale):
        super().__init__(); self.net = net; self.scale = scale
        self.out_dim = net.out_dim + net.n_features; self.blocks = net.blocks; self.n_features = net.n_features
        self.x_mean, self.x_std = net.x_mean, net.x_std
    def fixed(self, x): return self.net.fixed(x)
    def trainable(self, z): return torch.cat([self.net.trainable(z), z * self.scale], 1)
    def forward(self, x): return self.trainable(self.fixed(x))
mode = {"skip": None}
def patched(n, spec, X, cfg):
    net = orig(n, spec, X, cfg)
    return net if mode["skip"] is None else Skip(net, mode["skip"])
V.build_backbone = patched
for name in sys.argv[1].split(","):
    d = load_set(name); spec = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
    Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"]); yt = d["y_test"]
    for N in (20, 50, 100, 300):
        rows = []
        for seed in range(4):
            idx = np.random.default_rng(seed).choice(len(Xp), N, replace=False); yl = d["y_pool"][idx]
            mu, sd = BayesianRidge().fit(Xp[idx], yl).predict(Xt, return_std=True)
            r = [gaussian_crps(mu, sd, yt)]
            for sk in (None, 1.0, 0.3):
                mode["skip"] = sk
                L = V.VBLLLearner("regression", input=spec); L.fit(d["X_pool"][idx], yl, seed=seed)
                r.append(metrics.crps(L.predict(d["X_test"]).dist, yt))
            rows.append(r)
        r = np.array(rows); print(name, N, "ridge %.3f | default %.3f | skip1 %.3f | skip0.3 %.3f" % tuple(r.mean(0)), "head", L.head_kind, flush=True)
