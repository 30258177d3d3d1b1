"""Error of the closed-form BALD and EPIG against Monte Carlo on the same VBLL posterior.

For each data set and label count N (one seeded random labelled set), the default VBLL learner is
fitted; for 400 unlabelled pool items and 64 pool targets the closed forms of alkit/acquisition
(``bald``: 1/2 sum_k log(1 + v_k p_k (1 - p_k)); ``epig``: the linearised Gaussian EPIG;
``epig-decision``: EPIG about the targets' top-two decisions) are compared with the Monte-Carlo
quantities of the same Gaussian-logit posterior (BALD from 4,096 logit draws; EPIG from 4,096
consistent weight draws with categorical labels).  Reported: Spearman rank correlation with the
Monte-Carlo value (what a top-k or greedy selection depends on) and the ratio of means (scale).

    python benchmarks/acquisition_error.py --data tweets,hpc,fashion_dev --ns 30,100,250 \
        --out benchmarks/results/acquisition_error.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learner_parity as lp  # noqa: E402

from alkit.acquisition.bald import bald_mc_n, gaussian_bald_n  # noqa: E402
from alkit.acquisition.epig import (  # noqa: E402
    EPIGTargets, decision_epig_n, decision_parts, epig_mc_n, gaussian_epig_n)
from alkit.posterior import OutputCovariance, label_probs, observation_noise_n_K  # noqa: E402
from alkit.models.backbone import pool_input_spec  # noqa: E402


def measure(name: str, N: int, seed: int = 0) -> dict[str, float]:
    d = lp.load_set(name)
    d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"])
    idx = np.random.default_rng(seed).choice(len(d["X_pool"]), N, replace=False)
    learner, _ = lp.alkit_fit("vbll", {}, d, idx, seed)
    post = learner.posterior()
    rest = np.setdiff1d(np.arange(len(d["X_pool"])), idx)
    rng = np.random.default_rng(seed + 1)
    cand, tgt = rng.choice(rest, 400, replace=False), rng.choice(rest, 64, replace=False)
    pc, pt = learner.predict(d["X_pool"][cand]), learner.predict(d["X_pool"][tgt])
    m, mt = pc.extras["logits_n_C"], pt.extras["logits_n_C"]
    C = m.shape[1]
    cov = OutputCovariance.of(post, C)
    phi, phi_t = cov.features(pc.embedding_n_d), cov.features(pt.embedding_n_d)
    p, p_t = label_probs(pc), label_probs(pt)
    r, r_t = observation_noise_n_K(p, post, len(cand), C), observation_noise_n_K(p_t, post, len(tgt), C)
    v = cov.variance_n_K(phi)
    bald = gaussian_bald_n(v, r)
    bald_mc = bald_mc_n(m, v, n_samples=4096, seed=0)
    s_t, dn_t = decision_parts(p_t)
    targets = EPIGTargets(cov, cov.cross_G_d_m(phi_t), cov.variance_n_K(phi_t), r_t, None, s_t, dn_t)
    epig = gaussian_epig_n(phi, v, r, targets)
    s, dn = decision_parts(p)
    dec = decision_epig_n(phi, v, s, dn, targets)
    epig_mc = epig_mc_n(m, pc.embedding_n_d, mt, pt.embedding_n_d, post, n_samples=4096, seed=0)
    rho = lambda a, b: float(spearmanr(a.numpy(), b.numpy()).statistic)  # noqa: E731
    return {"bald_rho": rho(bald, bald_mc), "bald_ratio": float(bald.mean() / bald_mc.mean()),
            "epig_rho": rho(epig, epig_mc), "epig_ratio": float(epig.mean() / epig_mc.mean()),
            "dec_rho": rho(dec, epig_mc), "dec_ratio": float(dec.mean() / epig_mc.mean())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="tweets,hpc,fashion_dev")
    ap.add_argument("--ns", default="30,100,250")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    torch.set_num_threads(1)
    lines = ["| data | N | bald: Spearman / mean ratio | epig: Spearman / mean ratio | epig-decision vs MC EPIG: Spearman / mean ratio |",
             "|---|---|---|---|---|"]
    with threadpool_limits(1):
        for name in a.data.split(","):
            for N in [int(n) for n in a.ns.split(",")]:
                r = measure(name, N)
                lines.append(f"| {name} | {N} | {r['bald_rho']:.3f} / {r['bald_ratio']:.2f} | "
                             f"{r['epig_rho']:.3f} / {r['epig_ratio']:.2f} | {r['dec_rho']:.3f} / {r['dec_ratio']:.2f} |")
                print(lines[-1], flush=True)
    text = "\n".join(lines)
    if a.out:
        Path(a.out).write_text(f"Command: `python benchmarks/acquisition_error.py {' '.join(sys.argv[1:])}`\n\n{text}\n")


if __name__ == "__main__":
    main()
