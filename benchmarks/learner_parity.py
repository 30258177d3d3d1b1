"""Learner parity at small N: alkit's learners against logistic regression / ridge and a plain MLP.

Why: active learning is decided at 20-300 labels, so each alkit learner must be at least as good
there as the simple models a user would try first (DESIGN.md "The learner at small N").  For each
data set, label count N and seed, one uniformly random labelled subset of the pool is drawn and
given to every model; all models see the same inputs, standardised with statistics of the whole
pool (never the test split).  Comparators:

- ``logreg``: scikit-learn LogisticRegression (C=1, lbfgs) on the standardised inputs;
- ``plain-mlp``: Linear(f, 128)-ReLU-Linear(128, C), 100 full-batch Adam steps at lr 1e-2 (the
  plain recipe of the label-efficiency issue);
- regression: ``bayes-ridge`` (scikit-learn BayesianRidge, Gaussian noise, predictive std), whose
  closed-form Gaussian CRPS is the bar.

Fit time is CPU seconds of this thread (time.thread_time) with torch and BLAS on one thread, and
the ratio to the plain recipe is taken within one process, interleaved, at the same N.

    python benchmarks/learner_parity.py --data digits,fashion --ns 20,50,100,200,300 --seeds 0-4 \
        --out benchmarks/results/learner_parity.md

Data sets come from benchmarks/al_data.py (benchmarks/_work/data/<name>.parquet).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np
import polars as pl
import torch
import torch.nn.functional as F
from threadpoolctl import threadpool_limits
from torch import nn

from alkit.models.backbone import pool_input_spec
from alkit.registry import make_learner
from bench_common import DATA_FILE, IMAGE_SHAPES, parse_options  # benchmarks/bench_common.py

DATA_DIR = Path(__import__("os").environ.get("AL_DATA_DIR", Path(__file__).resolve().parent / "_work" / "data"))


def load_set(name: str, data_dir: Path = DATA_DIR) -> dict[str, Any]:
    """Pool/test arrays of one data set file (features or an `embedding` list column)."""
    source = DATA_FILE.get(name, name)
    df = pl.read_parquet(data_dir / f"{source}.parquet")
    manifest = json.loads((data_dir / "manifest.json").read_text()).get(source, {})
    if "embedding" in df.columns:
        X = np.asarray(df["embedding"].to_list(), dtype=np.float32)
    else:
        cols = [c for c in df.columns if c not in ("id", "label", "split")]
        X = df.select(cols).to_numpy().astype(np.float32)
    task = manifest.get("task") or ("regression" if df["label"].dtype.is_float() else "classification")
    pool = (df["split"] == "pool").to_numpy()
    if task == "classification":
        classes = sorted(df["label"].cast(pl.Utf8).unique().to_list())
        y = np.array([classes.index(v) for v in df["label"].cast(pl.Utf8).to_list()])
    else:
        classes = []
        y = df["label"].to_numpy().astype(np.float64)
    return {"name": name, "task": task, "classes": classes, "X_pool": X[pool], "y_pool": y[pool],
            "X_test": X[~pool], "y_test": y[~pool], "image_shape": (1, *IMAGE_SHAPES[name]) if name in IMAGE_SHAPES else None,
            "embedding": "embedding" in df.columns}  # a list column: the loop's InputSpec.embedding


def standardise(X_pool: np.ndarray, *arrays: np.ndarray) -> list[np.ndarray]:
    mu, sd = X_pool.mean(0), X_pool.std(0)
    sd = np.where(sd > 1e-8, sd, 1.0)
    return [((a - mu) / sd).astype(np.float32) for a in arrays]


def gaussian_crps(mu: np.ndarray, sigma: np.ndarray, y: np.ndarray) -> float:
    from scipy.stats import norm

    z = (y - mu) / sigma
    return float(np.mean(sigma * (z * (2 * norm.cdf(z) - 1) + 2 * norm.pdf(z) - 1 / math.sqrt(math.pi))))


def logreg(Xl: np.ndarray, yl: np.ndarray, Xt: np.ndarray, yt: np.ndarray, n_classes: int) -> float:
    from sklearn.linear_model import LogisticRegression

    if len(np.unique(yl)) == 1:  # a random draw with one class (a rare class at 20 labels): predict it
        return float(np.mean(yt == yl[0]))
    return float(LogisticRegression(max_iter=3000).fit(Xl, yl).score(Xt, yt))


def plain_mlp(Xl: np.ndarray, yl: np.ndarray, Xt: np.ndarray, yt: np.ndarray, n_classes: int,
              seed: int) -> float:
    torch.manual_seed(seed)
    net = nn.Sequential(nn.Linear(Xl.shape[1], 128), nn.ReLU(), nn.Linear(128, n_classes))
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    x, y = torch.as_tensor(Xl), torch.as_tensor(yl).long()
    for _ in range(100):
        opt.zero_grad()
        F.cross_entropy(net(x), y).backward()
        opt.step()
    with torch.no_grad():
        return float((net(torch.as_tensor(Xt)).argmax(1).numpy() == yt).mean())


def bayes_ridge(Xl: np.ndarray, yl: np.ndarray, Xt: np.ndarray, yt: np.ndarray) -> float:
    from sklearn.linear_model import BayesianRidge

    mu, sd = BayesianRidge().fit(Xl, yl).predict(Xt, return_std=True)
    return gaussian_crps(mu, np.maximum(sd, 1e-6), yt)


def alkit_fit(scorer: str, options: dict[str, Any], d: dict[str, Any], idx: np.ndarray,
              seed: int) -> tuple[Any, float]:
    """An alkit learner fitted on the pool items ``idx``, and the CPU seconds of the fit alone."""
    from alkit.models.train import TrainConfig

    n_classes = len(d["classes"]) or None
    train = TrainConfig(**{k[6:]: v for k, v in options.items() if k.startswith("train.")})
    options = {k: v for k, v in options.items() if not k.startswith("train.")}
    learner = make_learner(scorer, d["task"], n_classes, input=d["spec"], train=train, **options)
    t0 = time.thread_time()
    learner.fit(d["X_pool"][idx], d["y_pool"][idx], seed=seed)
    return learner, time.thread_time() - t0


def alkit_metric(learner: Any, d: dict[str, Any], offset_test: np.ndarray | None = None) -> float:
    """Accuracy (classification) or CRPS (regression) of a fitted alkit learner on the test split
    (``offset_test``: added to a Gaussian regression predictive's mean, the harness option
    ``residual=ridge``)."""
    from alkit import metrics
    from alkit.distributions import GaussianPredictive

    pred = learner.predict(d["X_test"])
    if offset_test is not None:
        off = torch.as_tensor(offset_test, dtype=pred.mean_n.dtype)
        pred = dataclasses.replace(pred, mean_n=pred.mean_n + off,
                                   dist=GaussianPredictive(pred.dist.mean_n + off, pred.dist.var_n))
    if d["task"] == "classification":
        return float((pred.probs_n_C.argmax(1).numpy() == d["y_test"]).mean())
    return float(metrics.regression_metrics(pred.dist, pred.mean_n.numpy(), d["y_test"], None)["crps"])


def timed(fn: Callable[[], float]) -> tuple[float, float]:
    t0 = time.thread_time()
    value = fn()
    return value, time.thread_time() - t0


def parse_learners(spec: str) -> list[tuple[str, str, dict[str, Any]]]:
    """'vbll,none,vbll:head=quantile;train.steps=100' -> [(label, scorer, options)]; ``train.*``
    options are TrainConfig fields."""
    out = []
    for entry in spec.split(","):
        scorer, _, opts = entry.partition(":")
        out.append((entry, scorer, parse_options(opts)))
    return out


def quantile_inputs(d: dict[str, Any]) -> dict[str, Any]:
    """``d`` with its features mapped through the pool's marginal quantiles to a standard normal
    (scikit-learn QuantileTransformer fitted on the pool only): the harness option ``inputs=quantile``."""
    from sklearn.preprocessing import QuantileTransformer

    qt = QuantileTransformer(n_quantiles=min(1000, len(d["X_pool"])), output_distribution="normal",
                             subsample=10**9).fit(d["X_pool"])
    out = dict(d, X_pool=qt.transform(d["X_pool"]).astype(np.float32), X_test=qt.transform(d["X_test"]).astype(np.float32))
    out["spec"] = dataclasses.replace(d["spec"], mean_f=out["X_pool"].mean(0).astype(np.float64),
                                      std_f=out["X_pool"].std(0).astype(np.float64))
    if d["spec"].pool_sample_n_f is not None:
        out["spec"] = dataclasses.replace(out["spec"], pool_sample_n_f=out["X_pool"])
    return out


def self_trained(scorer: str, options: dict[str, Any], d: dict[str, Any], idx: np.ndarray, seed: int,
                 learner: Any, ratio: float, min_prob: float = 0.9) -> tuple[Any, float]:
    """The harness option ``self_train=r``: up to r x N pool items the first fit predicts with
    probability >= min_prob, per class in proportion to the labels' class counts (most confident
    first), added with their predicted class, and the learner fitted again on labels + these."""
    t0 = time.thread_time()
    rest = np.setdiff1d(np.arange(len(d["X_pool"])), idx)
    probs = learner.predict(d["X_pool"][rest]).probs_n_C.numpy()
    top, conf = probs.argmax(1), probs.max(1)
    y = d["y_pool"][idx]
    picked = []
    for c in range(probs.shape[1]):
        want = int(round(ratio * (y == c).sum()))
        cand = np.flatnonzero((top == c) & (conf >= min_prob))
        picked.append(cand[np.argsort(-conf[cand], kind="stable")][:want])
    extra = rest[np.concatenate(picked)] if picked else np.zeros(0, dtype=int)
    t_pick = time.thread_time() - t0
    view = dict(d, y_pool=d["y_pool"].copy())
    view["y_pool"][extra] = top[np.searchsorted(rest, extra)]
    refit, t = alkit_fit(scorer, options, view, np.concatenate([idx, extra]), seed)
    return refit, t_pick + t


def run(data: list[str], ns: list[int], seeds: list[int], learners: str,
        regression_learners: str | None = None, image_options: dict[str, int] | None = None) -> pl.DataFrame:
    image_options = image_options or {}
    rows = []
    for name in data:
        d = load_set(name)
        d["spec"] = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"],  # as the loop does
                                    **image_options)
        if d["task"] == "regression":  # the loop's pool sample (the linear path's principal directions)
            d["spec"] = dataclasses.replace(d["spec"], pool_sample_n_f=d["X_pool"])
        Xp, Xt = standardise(d["X_pool"], d["X_pool"], d["X_test"])
        C = len(d["classes"])
        entries = parse_learners(learners if d["task"] == "classification"
                                 else learners_regression(learners, regression_learners))
        views = {"raw": d}
        if any(o.get("inputs") == "quantile" for _, _, o in entries):
            views["quantile"] = quantile_inputs(d)
        for N in ns:
            for seed in seeds:
                idx = np.random.default_rng(seed).choice(len(Xp), N, replace=False)
                yl = d["y_pool"][idx]
                if d["task"] == "classification":
                    base = {"logreg": lambda: logreg(Xp[idx], yl, Xt, d["y_test"], C),
                            "plain-mlp": lambda: plain_mlp(Xp[idx], yl, Xt, d["y_test"], C, seed)}
                else:
                    base = {"bayes-ridge": lambda: bayes_ridge(Xp[idx], yl, Xt, d["y_test"])}
                for label, fn in base.items():
                    v, t = timed(fn)
                    rows.append({"data": name, "N": N, "seed": seed, "learner": label, "value": v, "fit_s": t})
                for label, scorer, options in entries:
                    view = views[options.get("inputs", "raw")]
                    opts = {k: v for k, v in options.items() if k not in ("inputs", "residual", "self_train")}
                    offset = None
                    if options.get("residual") == "ridge":  # the network learns what a Bayesian ridge leaves
                        from sklearn.linear_model import BayesianRidge

                        ridge = BayesianRidge().fit(Xp[idx], yl)
                        view = dict(view, y_pool=view["y_pool"].copy())
                        view["y_pool"][idx] = yl - ridge.predict(Xp[idx])
                        offset = ridge.predict(Xt)
                    learner, t = alkit_fit(scorer, opts, view, idx, seed)
                    if options.get("self_train"):  # refit once with confident pool predictions added
                        learner, t2 = self_trained(scorer, opts, view, idx, seed, learner, float(options["self_train"]))
                        t += t2
                    v = alkit_metric(learner, view, offset)
                    rows.append({"data": name, "N": N, "seed": seed, "learner": label, "value": v, "fit_s": t})
                print(name, N, seed, {r["learner"]: round(r["value"], 3) for r in rows[-len(base) - len(entries):]},
                      flush=True)
    return pl.DataFrame(rows)


REGRESSION_LEARNERS = "vbll,vbll:head=gaussian,vbll:head=quantile,none"


def learners_regression(classification_spec: str, regression_spec: str | None = None) -> str:
    """Regression rows: by default the default VBLL (bucket head, CR-VBLL), its other heads and the
    plain MLP, whatever the classification rows; ``regression_spec`` (--regression-learners) instead."""
    return regression_spec or REGRESSION_LEARNERS


def table(df: pl.DataFrame) -> str:
    agg = df.group_by("data", "learner", "N").agg(pl.col("value").mean().alias("m"), pl.col("value").std().alias("s"),
                                                  pl.col("fit_s").mean().alias("t"))
    lines = []
    for name in df["data"].unique(maintain_order=True):
        sub = agg.filter(pl.col("data") == name)
        ns = sorted(sub["N"].unique().to_list())
        base_t = sub.filter(pl.col("learner") == ("plain-mlp" if "plain-mlp" in sub["learner"].to_list()
                                                  else "bayes-ridge"))
        lines += [f"### {name}", "", "| learner | " + " | ".join(f"N={n}" for n in ns) + f" | fit s (N={ns[-1]}) | x plain |",
                  "|---|" + "---|" * (len(ns) + 2)]
        for learner in df.filter(pl.col("data") == name)["learner"].unique(maintain_order=True):
            r = sub.filter(pl.col("learner") == learner).sort("N")
            cells = [f"{m:.3f} ± {s:.3f}" for m, s in zip(r["m"], r["s"].fill_null(0.0))]
            t = float(r["t"][-1])
            bt = float(base_t.sort("N")["t"][-1]) if base_t.height else math.nan
            lines.append(f"| {learner} | " + " | ".join(cells) + f" | {t:.3f} | {t / bt:.1f} |")
        lines.append("")
    return "\n".join(lines)


BASELINES = ("logreg", "plain-mlp", "bayes-ridge")


def paired_table(df: pl.DataFrame) -> str:
    """Per data set, N and alkit learner: the mean +- standard error over seeds of the paired
    difference to the best comparator (the baseline with the better mean at that N), on the same
    labelled subsets.  Signed so that negative means the alkit learner is worse (accuracy:
    learner - best; CRPS: best - learner); t = mean / SE, and the number of seeds it lost.

    Why paired: the seed's labelled subset moves every model's score together (std ~0.07 at 20
    digits labels), so unpaired means over 5 seeds cannot tell a 0.01 gap from noise."""
    lines = []
    for name in df["data"].unique(maintain_order=True):
        sub = df.filter(pl.col("data") == name)
        regression = "bayes-ridge" in sub["learner"].to_list()
        sign = -1.0 if regression else 1.0
        ns = sorted(sub["N"].unique().to_list())
        learners = [x for x in sub["learner"].unique(maintain_order=True).to_list() if x not in BASELINES]
        lines += [f"### {name}: paired difference to the best comparator "
                  f"({'best - learner, CRPS' if regression else 'learner - best, accuracy'}; < 0: worse)", "",
                  "| learner | " + " | ".join(f"N={n}" for n in ns) + " |", "|---|" + "---|" * len(ns)]
        for learner in learners:
            cells = []
            for n in ns:
                at = sub.filter(pl.col("N") == n)
                means = {b: float(at.filter(pl.col("learner") == b)["value"].mean())
                         for b in BASELINES if b in at["learner"].to_list()}
                best = (min if regression else max)(means, key=means.get)
                pair = (at.filter(pl.col("learner") == learner).select("seed", pl.col("value").alias("a"))
                        .join(at.filter(pl.col("learner") == best).select("seed", pl.col("value").alias("b")), on="seed"))
                diff = sign * (pair["a"].to_numpy() - pair["b"].to_numpy())
                k = len(diff)
                se = float(diff.std(ddof=1) / math.sqrt(k)) if k > 1 else math.nan
                m = float(diff.mean())
                t = m / se if se > 0 else math.nan
                cells.append(f"{m:+.3f} ± {se:.3f} (t {t:+.1f}, vs {best}, lost {int((diff < 0).sum())}/{k})")
            lines.append(f"| {learner} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="digits")
    ap.add_argument("--ns", default="20,50,100,200,300")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--learners", default="none,vbll,ensemble,mc-dropout,sve")
    ap.add_argument("--regression-learners", default=None,
                    help=f"alkit rows on regression sets (default {REGRESSION_LEARNERS})")
    ap.add_argument("--regression-candidates", default=None,
                    help="the MLP learner's regression choice among these candidates (names of "
                         "alkit.models.capacity.REGRESSION_CHOICES; default: its REGRESSION_CANDIDATES)")
    ap.add_argument("--image-pool", type=int, default=None,
                    help="image sets: the PatchConv average-pool size (default: alkit's rule, PatchConv.pool_for)")
    ap.add_argument("--image-filters", type=int, default=None, help="image sets: PatchConv filters (default 16)")
    ap.add_argument("--image-patch", type=int, default=None, help="image sets: PatchConv patch side (default 5)")
    ap.add_argument("--paired", action="store_true",
                    help="also print (and write) the paired differences to the best comparator")
    ap.add_argument("--from-csv", default=None, help="re-render the tables from a CSV this script wrote")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    torch.set_num_threads(1)
    if a.regression_candidates:  # a study of the candidate set varies the module's constant for this process
        from alkit.models import capacity

        capacity.REGRESSION_CANDIDATES = tuple(capacity.REGRESSION_CHOICES[n] for n in a.regression_candidates.split(","))
    if a.from_csv:
        df = pl.read_csv(a.from_csv)
    else:
        with threadpool_limits(1):
            df = run(a.data.split(","), [int(n) for n in a.ns.split(",")], seeds, a.learners,
                     a.regression_learners, {k: v for k, v in (("pool", a.image_pool), ("n_filters", a.image_filters),
                                                               ("patch", a.image_patch)) if v is not None})
    text = table(df)
    if a.paired:
        text += "\n" + paired_table(df)
    print(text)
    if a.out:
        Path(a.out).write_text(f"Command: `python benchmarks/learner_parity.py {' '.join(sys.argv[1:])}`\n\n{text}\n")
        if not a.from_csv:
            df.write_csv(Path(a.out).with_suffix(".csv"))


if __name__ == "__main__":
    main()
