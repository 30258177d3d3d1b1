"""Digits OOD benchmark for the VBLL epistemic score (uq-math.md §0 protocol).

Train on digits 0-4 (70 % of them), score the held-out 30 % of 0-4 (in-distribution) and all of
5-9 (OOD); report the AUROC of each *epistemic score alone* for OOD detection, mean ± std over
seeds.  Compared: VBLL (dense / diagonal / shared covariance x feature map none / rff / l2; MI by
Laplace bridge, summed logit variance, probit-MI proxy), a deep ensemble (M=5 MLPLearners, same
backbone, different seeds) by mutual information, and the plain MLP's predictive entropy.

    PYTHONPATH=. .venv/bin/python benchmarks/vbll_ood.py --seeds 0 1 2
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import roc_auc_score

from alkit.distributions import entropy_n
from alkit.learners.vbll import VBLLLearner, class_scores
from alkit.models.learner import MLPLearner


def digits_split(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(X_train, y_train) from classes 0-4; X_in (held-out 0-4), X_ood (5-9)."""
    X, y = load_digits(return_X_y=True)
    X = X.astype(np.float32)
    rng = np.random.default_rng(seed)
    idx_in = np.flatnonzero(y < 5)
    rng.shuffle(idx_in)
    n_tr = int(0.7 * len(idx_in))
    tr, te = idx_in[:n_tr], idx_in[n_tr:]
    return X[tr], y[tr], X[te], X[y >= 5]


def auroc(score_in: torch.Tensor, score_ood: torch.Tensor) -> float:
    s = np.concatenate([score_in.numpy(), score_ood.numpy()])
    lab = np.concatenate([np.zeros(len(score_in)), np.ones(len(score_ood))])
    return float(roc_auc_score(lab, s))


def ensemble_mi(X_tr, y_tr, X_in, X_ood, seed: int, M: int = 5) -> tuple[float, float]:
    """(ensemble MI AUROC, member-0 predictive-entropy AUROC); members are MLPLearners."""
    probs_in, probs_ood = [], []
    for j in range(M):
        member = MLPLearner("classification", 5)
        member.fit(X_tr, y_tr, seed=1000 * seed + j)
        probs_in.append(member.predict(X_in).probs_n_C)
        probs_ood.append(member.predict(X_ood).probs_n_C)

    def mi(ps: list[torch.Tensor]) -> torch.Tensor:
        p = torch.stack(ps).double()  # (M, n, C)
        return entropy_n(p.mean(0)) - entropy_n(p).mean(0)

    return auroc(mi(probs_in), mi(probs_ood)), auroc(entropy_n(probs_in[0]), entropy_n(probs_ood[0]))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--covs", nargs="+", default=["dense", "diagonal", "shared"])
    ap.add_argument("--maps", nargs="+", default=["none", "rff", "l2"])
    ap.add_argument("--no-ensemble", action="store_true")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rows: dict[str, list[float]] = {}
    t0 = time.time()
    for seed in args.seeds:
        X_tr, y_tr, X_in, X_ood = digits_split(seed)
        for cov, fmap in itertools.product(args.covs, args.maps):
            learner = VBLLLearner("classification", 5, cov=cov, feature_map=fmap)
            learner.fit(X_tr, y_tr, seed=seed)
            p_in, p_ood = learner.predict(X_in), learner.predict(X_ood)
            s_in, s_ood = (class_scores(p.extras["logits_n_C"], p.extras["logit_var_n_C"], learner.head.noise_var)
                           for p in (p_in, p_ood))
            for key in ("mi_n", "logit_var_n", "mi_probit_n"):
                rows.setdefault(f"VBLL {cov:8s} {fmap:4s} {key}", []).append(auroc(s_in[key], s_ood[key]))
            rows.setdefault(f"VBLL {cov:8s} {fmap:4s} entropy (ref.)", []).append(
                auroc(entropy_n(p_in.probs_n_C), entropy_n(p_ood.probs_n_C)))
            print(f"seed {seed} {cov} {fmap} done ({time.time() - t0:.0f}s)", flush=True)
        if not args.no_ensemble:
            ens, ent = ensemble_mi(X_tr, y_tr, X_in, X_ood, seed)
            rows.setdefault("deep ensemble M=5 MI (MLPLearner, none)", []).append(ens)
            rows.setdefault("MLP predictive entropy (member 0)", []).append(ent)
            print(f"seed {seed} ensemble done ({time.time() - t0:.0f}s)", flush=True)
    print(f"\nseeds {args.seeds}, total {time.time() - t0:.0f}s\n")
    print("| score | OOD AUROC mean ± std | per seed |\n|---|---|---|")
    for name, vals in rows.items():
        print(f"| {name} | {np.mean(vals):.3f} ± {np.std(vals):.3f} | {' '.join(f'{v:.3f}' for v in vals)} |")


if __name__ == "__main__":
    main()
