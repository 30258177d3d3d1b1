"""Apply a written preset rule: mean AULC per candidate over the development sets, from runs
benchmark/protocol.py already made in several work folders.

    python benchmarks/preset_rule.py --out benchmarks/results/label_efficiency_dev/clean_recheck_rule.md

Each candidate is a list of (work folder, protocol entry) sources; for every set the first folder
that holds a finished run of the entry gives it.  Every candidate of a set is summarised together
(benchmarks/protocol.py's summarise: seeds compared on the label counts all seeds have), so a set
where one seed drew a single class first starts all candidates at the same count.  The rules
themselves are in benchmarks/results/label_efficiency_dev/recheck_rule.md.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEV_SETS = ["chile", "hpc", "synth", "diamonds", "tweets", "fashion_dev",  # power_flip.md
            "cells", "churn", "hmda", "fashion8_dev", "fashion_emb_dev",  # the first recheck
            "mnist_dev", "mnist8_dev", "blobs_dev"]  # the third rule: clean many-class sets
W = HERE / "_work"
CANDIDATES: dict[str, list[tuple[Path, str]]] = {
    "greedy": [(W / "protocol_noisy", "epistemic"), (W / "protocol_recheck", "diverse+decision-flip"),
               (W / "protocol_clean", "diverse+decision-flip")],
    "power": [(W / "protocol_noisy", "power+decision-flip"), (W / "protocol_recheck", "power+decision-flip"),
              (W / "protocol_clean", "power+decision-flip")],
    "power-diverse": [(W / "protocol_pdiv", "power-diverse+decision-flip")],
}


def set_frame(name: str) -> pl.DataFrame:
    """Cycles of every candidate on one set, the entry renamed to the candidate."""
    from alkit.config import load_project
    from alkit.loop import ActiveLoop
    from alkit.report import cycles_frame

    parts = []
    for cand, sources in CANDIDATES.items():
        for work, entry in sources:
            if not (work / name / "alkit.toml").exists():
                continue
            df = cycles_frame(ActiveLoop(load_project(work / name)).store)
            df = df.with_columns(pl.col("run").str.replace(r"-s\d+$", "").alias("entry"),
                                 pl.col("run").str.extract(r"-s(\d+)$").cast(pl.Int64).alias("seed"))
            df = df.filter(pl.col("entry") == entry)
            if df.height:
                parts.append(df.with_columns(pl.lit(cand).alias("entry"), pl.lit(str(work)).alias("work")))
                break
    return pl.concat(parts, how="diagonal_relaxed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import protocol

    rows = []
    for name in DEV_SETS:
        df = set_frame(name)
        protocol.WORK = Path(df["work"][0]).resolve()  # summarise reads the pool size from this folder
        t = protocol.summarise(name, df.drop("work"), 300, "accuracy", [300], None)
        row = {"set": name, "from": int(t["from"].max())}
        row.update({r["strategy"]: r["aulc"] for r in t.iter_rows(named=True)})
        row.update({f"{r['strategy']} seeds": r["seeds"] for r in t.iter_rows(named=True)})
        rows.append(row)
    cands = list(CANDIDATES)
    lines = ["| set | " + " | ".join(cands) + " | power - greedy | power-diverse - power |", "|---" * (len(cands) + 3) + "|"]
    for r in rows:
        cells = [f"{r.get(c, float('nan')):.3f}" for c in cands]
        lines.append(f"| {r['set']}{'' if r['from'] == 20 else ' (from n = ' + str(r['from']) + ')'} | "
                     + " | ".join(cells) + f" | {r['power'] - r['greedy']:+.3f} | {r['power-diverse'] - r['power']:+.3f} |")
    means = {c: float(np.mean([r[c] for r in rows])) for c in cands}
    lines.append("| mean (14 sets) | " + " | ".join(f"{means[c]:.4f}" for c in cands)
                 + f" | {means['power'] - means['greedy']:+.4f} | {means['power-diverse'] - means['power']:+.4f} |")
    third = "power" if means["power"] > means["greedy"] else "greedy"
    fourth = "power-diverse" if means["power-diverse"] > means[third] else third
    lines += ["", f"Third rule (greedy vs power, higher mean): {third}.",
              f"Fourth rule (power-diverse vs the third rule's winner, higher mean): {fourth}."]
    seeds = {r[f"{c} seeds"] for r in rows for c in cands}
    lines.append(f"Seeds per set and candidate: {sorted(seeds)}.")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(f"Command: `python benchmarks/preset_rule.py {' '.join(sys.argv[1:])}`\n\n{text}\n")


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    main()
