"""Would cross-validated capacity selection close the small-N learner gaps?  (study, not a default)

For each data set, N and seed (the labelled subsets of learner_parity.py), every candidate backbone
configuration is scored by K-fold cross-validation on the N labels alone (held-out NLL and
accuracy of the `none` learner), and fitted on all N labels for its test accuracy.  Rows: each
candidate alone, the candidate chosen by CV NLL / CV accuracy, and the oracle (best test accuracy,
not reachable: an upper bound), each as a paired difference to the better of logistic regression
and the plain MLP recipe.

    python benchmarks/capacity_cv_study.py --data cells,chile --seeds 0-4 --out results.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import torch
from sklearn.model_selection import KFold, StratifiedKFold
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import parse_options  # noqa: E402
from learner_parity import load_set, logreg, plain_mlp, standardise  # noqa: E402

from alkit.models.backbone import pool_input_spec  # noqa: E402
from alkit.models.train import TrainConfig  # noqa: E402
from alkit.registry import make_learner  # noqa: E402

CANDIDATES = {"d0": "depth=0", "d1": "", "d1p1": "train.prior_l2=1"}


def fit(scorer: str, opts: dict, d: dict, X, y, seed: int):
    train = TrainConfig(**{k[6:]: v for k, v in opts.items() if k.startswith("train.")})
    rest = {k: v for k, v in opts.items() if not k.startswith("train.")}
    learner = make_learner(scorer, "classification", len(d["classes"]), input=d["spec"], train=train, **rest)
    learner.fit(X, y, seed=seed)
    return learner


def probs(learner, X) -> np.ndarray:
    return learner.predict(X).probs_n_C.numpy()


def temperature_nll(logp_n_C: np.ndarray, y_n: np.ndarray) -> float:
    """Held-out NLL after the best single temperature (log-probabilities divided by T, renormalised):
    compares how well candidates separate the classes, not how calibrated they are."""
    from scipy.optimize import minimize_scalar

    def nll(log_t: float) -> float:
        z = logp_n_C / np.exp(log_t)
        z = z - z.max(1, keepdims=True)
        lse = np.log(np.exp(z).sum(1))
        return float(np.mean(lse - z[np.arange(len(y_n)), y_n]))

    return float(minimize_scalar(nll, bounds=(-3.0, 3.0), method="bounded").fun)


def folds(y: np.ndarray, k: int, seed: int):
    counts = np.bincount(y)
    counts = counts[counts > 0]
    if counts.min() >= k:
        return list(StratifiedKFold(k, shuffle=True, random_state=seed).split(y, y))
    return list(KFold(k, shuffle=True, random_state=seed).split(y))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--ns", default="20,50,100,200,300")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--k", type=int, default=3)
    ap.add_argument("--scorer", default="none")
    ap.add_argument("--candidates", default=None, help="label=opts;opts,label2=... (default: CANDIDATES)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    a, _, b = args.seeds.partition("-")
    seeds = list(range(int(a), int(b or a) + 1))
    ns = [int(n) for n in args.ns.split(",")]
    if args.candidates:
        CANDIDATES.clear()
        CANDIDATES.update(dict(c.split("=", 1) for c in args.candidates.split(",")))
    torch.set_num_threads(1)
    lines = [f"Command: `python benchmarks/capacity_cv_study.py --data {args.data} --ns {args.ns} --seeds {args.seeds} "
             f"--k {args.k} --scorer {args.scorer}`", "",
             f"Candidates: {CANDIDATES}. Cells: paired difference to the best comparator (accuracy), mean ± se.", ""]
    with threadpool_limits(1):
        for name in args.data.split(","):
            d = load_set(name)
            d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
            Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
            C = len(d["classes"])
            rows: dict[str, dict[int, list[float]]] = {}
            picks: dict[str, dict[int, list[str]]] = {"cv-nll": {}, "cv-acc": {}, "cv-tnll": {}}
            for N in ns:
                for seed in seeds:
                    idx = np.random.default_rng(seed).choice(len(Xp), N, replace=False)
                    Xl, yl = d["X_pool"][idx], d["y_pool"][idx]
                    best = max(logreg(Xp[idx], yl, Xt, d["y_test"], C), plain_mlp(Xp[idx], yl, Xt, d["y_test"], C, seed))
                    test, nll, acc, tnll = {}, {}, {}, {}
                    for cand, spec in CANDIDATES.items():
                        opts = parse_options(spec) if spec else {}
                        learner = fit(args.scorer, opts, d, Xl, yl, seed)
                        test[cand] = float((probs(learner, d["X_test"]).argmax(1) == d["y_test"]).mean())
                        ll, hit, held_logp, held_y = [], [], [], []
                        for tr, va in folds(yl, args.k, seed):
                            p = probs(fit(args.scorer, opts, d, Xl[tr], yl[tr], seed), Xl[va])
                            ll.extend(-np.log(np.clip(p[np.arange(len(va)), yl[va]], 1e-12, None)))
                            hit.extend(p.argmax(1) == yl[va])
                            held_logp.append(np.log(np.clip(p, 1e-12, None)))
                            held_y.append(yl[va])
                        nll[cand], acc[cand] = float(np.mean(ll)), float(np.mean(hit))
                        tnll[cand] = temperature_nll(np.concatenate(held_logp), np.concatenate(held_y))
                    chosen = {"cv-nll": min(nll, key=nll.get),
                              "cv-acc": max(acc, key=lambda c: (acc[c], -nll[c])),
                              "cv-tnll": min(tnll, key=tnll.get)}
                    vals = {**test, **{k: test[c] for k, c in chosen.items()}, "oracle": max(test.values())}
                    for k, v in vals.items():
                        rows.setdefault(k, {}).setdefault(N, []).append(v - best)
                    for k, c in chosen.items():
                        picks[k].setdefault(N, []).append(c)
                    print(name, N, seed, {k: round(v, 3) for k, v in test.items()}, chosen, round(best, 3), flush=True)
            lines += [f"### {name}", "", "| row | " + " | ".join(f"N={n}" for n in ns) + " |",
                      "|---|" + "---|" * len(ns)]
            for k, by_n in rows.items():
                cells = []
                for n in ns:
                    v = np.array(by_n[n])
                    cells.append(f"{v.mean():+.3f} ± {v.std(ddof=1) / np.sqrt(len(v)):.3f}")
                lines.append(f"| {k} | " + " | ".join(cells) + " |")
            for k, by_n in picks.items():
                lines.append(f"| picks {k} | " + " | ".join(",".join(by_n[n]) for n in ns) + " |")
            lines.append("")
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
