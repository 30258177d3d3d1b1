"""The training schedule at N >= 1,000 labels (issue 15): what the shared loop should do once the
labeled set is large enough to hold out a validation slice.

Today's rule (alkit/models/train.py) takes at least ``min_steps`` minibatch steps and at least 10
epochs, then stops on a held-out slice after ``patience`` bad epochs; with patience 20 the stop can
never fire inside those epochs, so the loop trains a fixed ~max(300 steps, 10 epochs) whatever the
data.  This benchmark compares schedules on development data only (Fashion-MNIST *test-file*
images, the classes 5-9 / 0-4 OOD split of benchmarks/ood.py's development family, and the
digits 5-9 / 0-4 split) at N = 1,000-4,000 labels: in-distribution accuracy and NLL, OOD AUROC of
the learner's epistemic score, and fit CPU seconds (one thread).

    .venv/bin/python benchmarks/large_n_schedule.py --seeds 0,1,2 --out benchmarks/results/large_n_schedule_dev.md
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from alkit import metrics  # noqa: E402
from alkit.datasets import load_fashion_mnist  # noqa: E402
from alkit.models.backbone import pool_input_spec  # noqa: E402
from alkit.models.train import TrainConfig  # noqa: E402
from alkit.registry import make_learner  # noqa: E402
from bench_common import emit, mean_std, ood_auroc_aupr, renumber  # noqa: E402

_CONSTANT = replace(TrainConfig(), lr_decay=0.0)  # the schedule before schedule rule L1 (2026-12-05)
SCHEDULES = {
    "current (>= 300 steps, >= 10 epochs, cosine decay to 0)": TrainConfig(),
    "constant lr (>= 300 steps, >= 10 epochs, patience 20; before rule L1)": _CONSTANT,
    "early stop, patience 5, <= 60 epochs": replace(_CONSTANT, early_stop=True, patience=5, max_epochs=60),
    "early stop, patience 10, <= 60 epochs": replace(_CONSTANT, early_stop=True, patience=10, max_epochs=60),
    "30 epochs, best hold-out epoch kept": replace(_CONSTANT, early_stop=True, patience=10_000, max_epochs=30),
    # 2026-12-05: the small-N recipe kept at any N (a long-run test found +2-4 points at 1,000-5,000 labels)
    "full batch, no hold-out (the small-N recipe at any N)": replace(_CONSTANT, full_batch_max=10**9, val_min_n=10**9),
    # 2026-12-05 (sixth session): what in the minibatch schedule costs the accuracy
    "minibatch, no hold-out": replace(_CONSTANT, val_min_n=10**9),
    "minibatch, no clip": replace(_CONSTANT, grad_clip=None),
    "minibatch, no hold-out, no clip": replace(_CONSTANT, val_min_n=10**9, grad_clip=None),
    "full batch, 300 steps, no hold-out": replace(_CONSTANT, full_batch_max=10**9, val_min_n=10**9, steps=300),
    "B0 minibatch at any N, no hold-out, no clip": replace(_CONSTANT, full_batch_max=0, val_min_n=10**9, grad_clip=None),
    "B1 B0 + cosine decay": replace(_CONSTANT, full_batch_max=0, val_min_n=10**9, grad_clip=None, lr_decay=1.0),
    "B2 B1, >= 20 epochs": replace(_CONSTANT, full_batch_max=0, val_min_n=10**9, grad_clip=None, lr_decay=1.0,
                                   min_steps=10**9, max_epochs=20),
    "B3 B1 + hold-out kept": replace(_CONSTANT, full_batch_max=0, grad_clip=None, lr_decay=1.0),
    "B4 cosine decay alone (rule L1's candidate)": replace(_CONSTANT, lr_decay=1.0),
    "B5 B0 + cosine decay to 0.3 lr": replace(_CONSTANT, full_batch_max=0, val_min_n=10**9, grad_clip=None,
                                            lr_decay=0.7),
    "B6 B0 + cosine decay to 0.1 lr": replace(_CONSTANT, full_batch_max=0, val_min_n=10**9, grad_clip=None,
                                            lr_decay=0.9),
}


def dev_fashion(seed: int, n: int, seen: tuple[int, ...] = (5, 6, 7, 8, 9)):
    """Fashion-MNIST test-file images (development rows): n of the seen classes to train on, 1,000
    other seen-class images to evaluate, 1,000 of the other classes as OOD."""
    X, y = load_fashion_mnist("test")
    X = X.reshape(len(X), -1).astype(np.float32)
    rng = np.random.default_rng(100 + seed)
    ins = rng.permutation(np.flatnonzero(np.isin(y, seen)))
    out = rng.permutation(np.flatnonzero(~np.isin(y, seen)))[:1000]
    y_r = renumber(y, seen)
    tr, te = ins[:n], ins[n:n + 1000]
    return X[tr], y_r[tr], X[te], y_r[te], X[out]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--n", default="1000,2000,4000")
    ap.add_argument("--scorers", default="vbll,none")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--schedules", default="", help="comma-separated substrings: run only the schedules named so")
    args = ap.parse_args()
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    sizes = [int(s) for s in args.n.split(",")]
    rows: dict[tuple[str, int, str], dict[str, list[float]]] = {}
    t0 = time.perf_counter()
    with threadpool_limits(1):
        for n in sizes:
            for seed in seeds:
                X_tr, y_tr, X_te, y_te, X_ood = dev_fashion(seed, n)
                spec = pool_input_spec(np.concatenate([X_tr, X_te, X_ood]), (1, 28, 28))  # the pool: every item, labeled or not
                for scorer in args.scorers.split(","):
                    for name, cfg in SCHEDULES.items():
                        if args.schedules and not any(k in name for k in args.schedules.split(",")):
                            continue
                        learner = make_learner(scorer, "classification", 5, train=cfg, input=spec)
                        c0 = time.thread_time()
                        report = learner.fit(X_tr, y_tr, seed=seed)
                        fit_s = time.thread_time() - c0
                        p_in, p_ood = learner.predict(X_te), learner.predict(X_ood)
                        probs = p_in.probs_n_C.numpy()
                        r = rows.setdefault((scorer, n, name), {})
                        r.setdefault("accuracy", []).append(metrics.accuracy(probs, y_te))
                        r.setdefault("nll", []).append(metrics.nll(probs, y_te))
                        r.setdefault("fit_s", []).append(fit_s)
                        r.setdefault("epochs", []).append(float(report.get("epochs", np.nan)))
                        if scorer != "none":
                            r.setdefault("auroc", []).append(ood_auroc_aupr(p_in.epistemic_n, p_ood.epistemic_n)[0])
                        print(f"n {n} seed {seed} {scorer} {name}: acc {r['accuracy'][-1]:.3f} "
                              f"fit {fit_s:.1f} s epochs {r['epochs'][-1]:.0f} ({time.perf_counter() - t0:.0f} s)",
                              flush=True)
    lines = [f"Command: `.venv/bin/python benchmarks/large_n_schedule.py {' '.join(sys.argv[1:])}` "
             f"({time.perf_counter() - t0:.0f} s wall, 1 thread)", "",
             "Development data: Fashion-MNIST test-file images, classes 5-9 seen (28x28 CNN stem), 0-4 OOD; "
             "mean ± std over seeds.", "",
             "| scorer | N | schedule | accuracy | NLL | OOD AUROC (epistemic) | fit CPU-s | epochs |",
             "|---|---:|---|---|---|---|---|---|"]
    for (scorer, n, name), r in rows.items():
        auc = mean_std(r["auroc"]) if "auroc" in r else "–"
        lines.append(f"| {scorer} | {n} | {name} | {mean_std(r['accuracy'])} | {mean_std(r['nll'])} | {auc} | "
                     f"{mean_std(r['fit_s'], 1)} | {mean_std(r['epochs'], 0)} |")
    emit(lines, args.out)


if __name__ == "__main__":
    main()
