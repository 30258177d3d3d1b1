"""Paired differences of alkit rows to a reference learner and to the best comparator, from CSVs
of learner_parity.py / learner_parity_candidates.py (same seeds: same labelled subsets).

    python benchmarks/learner_parity_paired.py vbll a.csv b.csv ...
Cells: mean accuracy: paired mean ± SE vs the reference | vs the best comparator (by mean); < 0 worse.
"""
import sys, math
import numpy as np, polars as pl
ref = sys.argv[1]
df = pl.concat([pl.read_csv(p) for p in sys.argv[2:]]).unique(["data", "N", "seed", "learner"], keep="first")
B = ("logreg", "plain-mlp", "bayes-ridge")
for name in df["data"].unique(maintain_order=True):
    sub = df.filter(pl.col("data") == name)
    reg = "bayes-ridge" in sub["learner"].to_list(); sign = -1 if reg else 1
    ns = sorted(sub["N"].unique().to_list())
    print(f"## {name} (cells: vs {ref} | vs best comparator; mean±se, negative=worse)")
    print("| learner | " + " | ".join(f"N={n}" for n in ns) + " | fit s N=300 |")
    print("|---|" + "---|" * (len(ns) + 1))
    for L in [l for l in sub["learner"].unique(maintain_order=True).to_list() if l not in B]:
        cells = []
        for n in ns:
            at = sub.filter(pl.col("N") == n)
            a = at.filter(pl.col("learner") == L).sort("seed")
            if a.height == 0:
                cells.append("–")
                continue

            def pd(other: str) -> str:
                b = at.filter(pl.col("learner") == other).sort("seed")
                j = a.join(b, on="seed")
                if j.height < 2:
                    return "n/a"
                x = sign * (j["value"].to_numpy() - j["value_right"].to_numpy())
                return f"{x.mean():+.3f}±{x.std(ddof=1) / math.sqrt(len(x)):.3f}"
            means = {b: at.filter(pl.col("learner") == b)["value"].mean() for b in B if b in at["learner"].to_list()}
            best = (min if reg else max)(means, key=means.get) if means else None
            cells.append(f"{a['value'].mean():.3f}: {pd(ref)} \\| {pd(best) if best else 'n/a'}")
        t = sub.filter((pl.col("learner") == L) & (pl.col("N") == max(ns)))["fit_s"].mean()
        print(f"| {L} | " + " | ".join(cells) + (f" | {t:.3f} |" if t is not None else " | – |"))
    print()
