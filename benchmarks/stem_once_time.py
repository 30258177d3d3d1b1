"""Scoring time of the member baselines on images: the frozen stem once per chunk against once per
member or pass.

Why: MC dropout (T = 20 passes) and the deep ensemble (M = 5 members) on an `--image-shape` project
ran the frozen PatchConv stem in every pass or member; they now run it once per chunk
(alkit/learners/mc_dropout.py, deep_ensemble.py).  This harness times ``predict`` (the learner as
shipped) against the whole-backbone computation it replaced (each pass or member through
``backbone(x)``), interleaved, CPU seconds of this thread, torch and BLAS on one thread, and checks the
two give the same member probabilities.

    python benchmarks/stem_once_time.py --data fashion --out benchmarks/results/stem_once_time.md
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from alkit.models.backbone import pool_input_spec
from alkit.registry import make_learner
from learner_parity import load_set


@torch.no_grad()
def whole_backbone(learner, scorer: str, x: torch.Tensor) -> torch.Tensor:
    """Member probabilities (n, M, C) with every pass or member running its whole backbone."""
    if scorer == "ensemble":
        return torch.stack([m.head(m.backbone(x)).softmax(-1) for m in learner.members], 1)
    net, masks = learner.net, learner.masks_T_B_w
    layers = [b.dropout for b in net.backbone.blocks] or [net.backbone.feature_dropout]
    outs = []
    for t in range(learner.T):
        hooks = [layer.register_forward_hook(lambda _m, _i, out, b=b, t=t: out.mul_(masks[t, b]))
                 for b, layer in enumerate(layers)]
        outs.append(net.head(net.backbone(x)).softmax(-1))
        for h in hooks:
            h.remove()
    return torch.stack(outs, 1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default="fashion")
    ap.add_argument("--labels", type=int, default=150)
    ap.add_argument("--items", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    torch.set_num_threads(1)
    d = load_set(a.data)
    spec = pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
    idx = np.random.default_rng(0).permutation(len(d["X_pool"]))[: a.labels]
    X = d["X_pool"][: a.items]
    lines = [f"Command: `python benchmarks/stem_once_time.py --data {a.data} --labels {a.labels} --items {a.items}`", "",
             f"{a.data}: {a.labels} labels, {a.items} items scored; CPU s of this thread, median of {a.repeats} interleaved repeats.",
             "", "| learner | predict (stem once) | whole backbone per pass/member | ratio | max abs. difference of the probabilities |",
             "|---|---|---|---|---|"]
    with threadpool_limits(1):
        for scorer in ("mc-dropout", "ensemble"):
            learner = make_learner(scorer, "classification", len(d["classes"]), input=spec)
            learner.fit(d["X_pool"][idx], d["y_pool"][idx], seed=0)
            new, old = [], []
            for _ in range(a.repeats):
                t0 = time.thread_time()
                probs = learner.predict(X).extras["member_probs_n_M_C"]
                new.append(time.thread_time() - t0)
                t0 = time.thread_time()
                ref = whole_backbone(learner, scorer, torch.as_tensor(X))
                old.append(time.thread_time() - t0)
            n, o = float(np.median(new)), float(np.median(old))
            diff = float((probs - ref).abs().max())
            lines.append(f"| {scorer} | {n:.3f} | {o:.3f} | {o / n:.1f}x | {diff:.1e} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        a.out.write_text(text)


if __name__ == "__main__":
    main()
