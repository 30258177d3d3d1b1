"""VBLL's confidence on the image path (alkit's own image backbone) against the plain MLP learner, on the
8 x 8 image development sets, 100 and 300 random labels, seeds 0 and 1: accuracy, mean top probability,
ECE (15 bins), NLL, for VBLL options given as a JSON list ("train.FIELD" keys set the training loop's
TrainConfig), an open question: VBLL is underconfident there.

    ALKIT_THREADS=1 PYTHONPATH=.:benchmarks .venv/bin/python benchmarks/vbll_image_calibration.py \\
        '[{}, {"posterior_temperature": 0.3}, {"prior_scale": 300.0}, {"learn_prior": true}, {"prior_scale": 3.0}]'
"""
import json
import sys

import numpy as np
import torch

import user_backbone_norm as data  # benchmarks/: the 8 x 8 image sets' loader
from alkit.metrics import classification_metrics
from alkit.models.train import TrainConfig
from alkit.query import pool_learner

if __name__ == "__main__":
    torch.set_num_threads(1)
    for name in ("mnist8_dev", "fashion8_dev"):
        Xp, yp, Xt, yt = data.load(name)
        for i, opts in enumerate(json.loads(sys.argv[1])):
            for scorer in ("vbll", "none") if i == 0 else ("vbll",):
                for n in (100, 300):
                    rows = []
                    for seed in (0, 1):
                        order = np.random.default_rng(seed).permutation(len(yp))
                        own = {k: v for k, v in opts.items() if not k.startswith("train.")}
                        train = TrainConfig(**{k[6:]: v for k, v in opts.items() if k.startswith("train.") and scorer == "vbll"})
                        learner = pool_learner(Xp, "classification", 10, scorer=scorer, image_shape=(1, 8, 8),
                                               train=train, **(own if scorer == "vbll" else {}))
                        learner.fit(Xp[order[:n]], yp[order[:n]], seed=seed)
                        p = learner.predict(Xt).probs_n_C.numpy()
                        m = classification_metrics(p, yt)
                        rows.append((m["accuracy"], p.max(1).mean(), m["ece"], m["nll"]))
                    acc, conf, ece, nll = np.mean(rows, 0)
                    print(f"| {name} | {scorer} | {json.dumps(opts) if scorer == 'vbll' else '-'} | {n} | {acc:.3f} | "
                          f"{conf:.3f} | {ece:.3f} | {nll:.3f} |", flush=True)
