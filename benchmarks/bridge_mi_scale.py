"""How large is the VBLL learner's `-o class_score=mi` score (the Laplace-bridge Dirichlet mutual
information) against the Monte-Carlo mutual information of the same Gaussian logits?

For each data set and label count N (one seeded random labelled set per seed), the VBLL learner with
``class_score="mi"`` is fitted; for 400 unlabelled pool items its ``epistemic_n`` is compared with
the Monte-Carlo BALD H[E p] - E H[p] over 4,096 draws of the logits z ~ N(m, diag(v)) (m the mean
logits, v the posterior variances the learner reports).  Reported: the median per-item ratio, its
10-90 % range, and the Spearman rank correlation.  Why: the README called the score "about 3 % of the
Monte-Carlo MI", a figure of an earlier bridge that a black-box check (2026-12-06) did not find.

    python benchmarks/bridge_mi_scale.py --data digits,fashion_dev --ns 20,100,300,1000 --seeds 0-2 \
        --out benchmarks/results/bridge_mi_scale.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
import learner_parity as lp  # noqa: E402

from alkit.acquisition.bald import bald_mc_n  # noqa: E402
from alkit.models.backbone import pool_input_spec  # noqa: E402


def measure(d: dict, N: int, seed: int) -> dict[str, float]:
    idx = np.random.default_rng(seed).choice(len(d["X_pool"]), N, replace=False)
    learner, _ = lp.alkit_fit("vbll", {"class_score": "mi"}, d, idx, seed)
    rest = np.setdiff1d(np.arange(len(d["X_pool"])), idx)
    cand = np.random.default_rng(seed + 1).choice(rest, 400, replace=False)
    pred = learner.predict(d["X_pool"][cand])
    mc = bald_mc_n(pred.extras["logits_n_C"], pred.extras["posterior_var_n_K"], n_samples=4096, seed=0).numpy()
    bridge = pred.epistemic_n.double().numpy()
    ratio = bridge / np.maximum(mc, 1e-12)
    return {"median": float(np.median(ratio)), "p10": float(np.quantile(ratio, 0.1)),
            "p90": float(np.quantile(ratio, 0.9)), "spearman": float(spearmanr(bridge, mc)[0]),
            "v": float(pred.extras["posterior_var_n_K"].double().median())}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="digits,fashion_dev")
    ap.add_argument("--ns", default="20,100,300,1000")
    ap.add_argument("--seeds", default="0-2")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    lines = [f"Command: `python benchmarks/bridge_mi_scale.py --data {a.data} --ns {a.ns} --seeds {a.seeds}`", "",
             "| data | N | bridge / MC MI: median (10-90 %) | Spearman | median logit variance v |", "|---|---|---|---|---|"]
    with threadpool_limits(1):
        for name in a.data.split(","):
            d = lp.load_set(name)
            d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"])
            for N in map(int, a.ns.split(",")):
                if N >= len(d["X_pool"]) - 400:
                    continue
                rows = [measure(d, N, s) for s in seeds]
                mean = {k: float(np.mean([r[k] for r in rows])) for k in rows[0]}
                line = (f"| {name} | {N} | {mean['median']:.2f} ({mean['p10']:.2f}-{mean['p90']:.2f}) | "
                        f"{mean['spearman']:.3f} | {mean['v']:.2f} |")
                print(line, flush=True)
                lines.append(line)
    lines += ["", f"Mean over seeds {a.seeds} of each seed's per-item figures (400 pool items a seed)."]
    if a.out:
        a.out.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
