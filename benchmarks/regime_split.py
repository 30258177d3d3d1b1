"""Which development sets favour which flip selector: each candidate's AULC minus power-diverse's
against how learnable the set is (random:vbll's AULC, chance-normalised: (a - 1/C) / (1 - 1/C)).

    python benchmarks/regime_split.py     # reads label_efficiency_dev/text_recheck.md and the protocol tables
    python benchmarks/regime_split.py --signals   # what the learner could see: its pool confidence
    python benchmarks/regime_split.py --classes   # the ninth rule (recheck_rule.md): EPIG by class count

Why: the eighth rule (EPIG about the pool's decisions under power-diverse) lost on the mean but won
on the near-chance sets; a per-cycle choice would need a signal the learner has without test labels.
This is the evidence for that lead, on development data only.
"""

from __future__ import annotations

import glob
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

HERE = Path(__file__).resolve().parent
RES = HERE / "results"


def table_rows() -> list[tuple[str, list[str], list[float]]]:
    """(set, candidate names, AULCs) from the classification table of text_recheck.md."""
    names: list[str] = []
    out = []
    for line in (RES / "label_efficiency_dev" / "text_recheck.md").read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "set" and len(cells) > 4:
            names = cells[1:]
        elif names and len(cells) == len(names) + 1 and not cells[0].startswith(("mean", "---")):
            out.append((cells[0].split(" ")[0], names, [float(c) if c != "-" else np.nan for c in cells[1:]]))
    return out


def random_aulc(name: str) -> float:
    """random:vbll's AULC from the first results table (alphabetical path) that names the set and has
    that row; on some sets an earlier learner version's run, so the learnability axis is approximate."""
    for f in sorted(glob.glob(str(RES / "**" / f"*{name}*.md"), recursive=True)):
        for line in Path(f).read_text().splitlines():
            if line.startswith("| random:vbll |"):
                return float(line.split("|")[2].split("±")[0])
    return float("nan")


SIGNAL_SETS = ["chile", "hpc", "synth", "diamonds", "tweets", "fashion_dev", "cells", "churn", "hmda", "fashion8_dev",
               "fashion_emb_dev", "mnist_dev", "mnist8_dev", "blobs_dev", "ucla_dev", "pets_dev"]


def signals() -> None:
    """Per set, vbll on N = 50 and 150 random labels (seeds 0-2): the label-free pool confidence
    (mean top probability, chance-normalised) beside the test accuracy (chance-normalised)."""
    import torch
    from threadpoolctl import threadpool_limits

    sys.path.insert(0, str(HERE))
    import learner_parity as lp

    torch.set_num_threads(1)
    print("| set | classes | confidence N=50 | N=150 | accuracy N=50 | N=150 |\n|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for name in SIGNAL_SETS:
            d = lp.load_set(name)
            d["spec"] = lp.pool_input_spec(d["X_pool"], d["image_shape"], embedding=d["embedding"])
            C = len(d["classes"])
            res = []
            for N in (50, 150):
                for seed in (0, 1, 2):
                    idx = np.random.default_rng(seed).choice(len(d["X_pool"]), N, replace=False)
                    learner, _ = lp.alkit_fit("vbll", {}, d, idx, seed)
                    p = learner.predict(d["X_pool"]).probs_n_C.numpy()
                    res.append(((p.max(1).mean() - 1 / C) / (1 - 1 / C), (lp.alkit_metric(learner, d) - 1 / C) / (1 - 1 / C)))
            r = np.array(res)
            print(f"| {name} | {C} | {r[:3, 0].mean():.3f} | {r[3:, 0].mean():.3f} | {r[:3, 1].mean():.3f} | {r[3:, 1].mean():.3f} |",
                  flush=True)


MAX_CLASSES = 4  # the ninth rule's threshold (withdrawn after its hold-out check: class_rule.md)
RULE9_MEAN, RULE9_WORST = 0.002, -0.005


def class_rule(manifest: dict) -> None:
    """The ninth rule: on the development sets of at most MAX_CLASSES classes, power-diverse
    epig-decision against power-diverse (mean gain >= RULE9_MEAN, none below RULE9_WORST)."""
    rows = table_rows()
    names = rows[0][1]
    a, b = names.index("power-diverse epig-decision"), names.index("power-diverse")
    print("| set | classes | power-diverse | power-diverse epig-decision | difference |\n|---|---|---|---|---|")
    diffs = []
    for name, _, vals in rows:
        k = manifest[name]["n_classes"]
        if k <= MAX_CLASSES:
            diffs.append(vals[a] - vals[b])
            print(f"| {name} | {k} | {vals[b]:.3f} | {vals[a]:.3f} | {diffs[-1]:+.3f} |")
    mean, worst = float(np.mean(diffs)), float(np.min(diffs))
    adopted = mean >= RULE9_MEAN and worst >= RULE9_WORST
    print(f"\nNinth rule over {len(diffs)} sets of at most {MAX_CLASSES} classes: mean {mean:+.4f} (needs >= {RULE9_MEAN}), "
          f"worst {worst:+.3f} (needs >= {RULE9_WORST}): {'adopted' if adopted else 'not adopted'}.")


def main() -> None:
    if "--signals" in sys.argv:
        signals()
        return
    manifest = json.loads((HERE / "_work" / "data" / "manifest.json").read_text())
    if "--classes" in sys.argv:
        class_rule(manifest)
        return
    rows = table_rows()
    names = rows[0][1]
    ref = names.index("power-diverse")
    others = [n for n in names if n != "power-diverse" and "m=10000" not in n]
    print("| set | classes | random, chance-normalised | " + " | ".join(f"{n} - power-diverse" for n in others) + " |")
    print("|---" * (3 + len(others)) + "|")
    z_all, d_all = [], {n: [] for n in others}
    for name, _, vals in rows:
        k = manifest[name]["n_classes"]
        z = (random_aulc(name) - 1 / k) / (1 - 1 / k)
        diffs = {n: vals[names.index(n)] - vals[ref] for n in others}
        print(f"| {name} | {k} | {z:.3f} | " + " | ".join(f"{diffs[n]:+.3f}" for n in others) + " |")
        if np.isfinite(z):
            z_all.append(z)
            for n in others:
                d_all[n].append(diffs[n])
    print()
    for n in others:
        r = spearmanr(z_all, d_all[n])
        print(f"Spearman (learnability, {n} - power-diverse) over {len(z_all)} sets: {r.statistic:+.2f} (p = {r.pvalue:.3f})")


if __name__ == "__main__":
    main()
