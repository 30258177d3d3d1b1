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
import sys
from pathlib import Path

import numpy as np
import polars as pl

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

DEV_SETS = ["chile", "hpc", "synth", "diamonds", "tweets", "fashion_dev",  # power_flip.md
            "cells", "churn", "hmda", "fashion8_dev", "fashion_emb_dev",  # the first recheck
            "mnist_dev", "mnist8_dev", "blobs_dev"]  # the third rule: clean many-class sets
TEXT_SETS = ["ucla_dev", "pets_dev"]  # the seventh rule: MiniLM text sets beside tweets
W = HERE / "_work"
CANDIDATES: dict[str, list[tuple[Path, str]]] = {
    "greedy": [(W / "protocol_noisy", "epistemic"), (W / "protocol_recheck", "diverse+decision-flip"),
               (W / "protocol_clean", "diverse+decision-flip"), (W / "protocol_text7", "diverse+decision-flip")],
    "power": [(W / "protocol_noisy", "power+decision-flip"), (W / "protocol_recheck", "power+decision-flip"),
              (W / "protocol_clean", "power+decision-flip"), (W / "protocol_text7", "power+decision-flip")],
    "power-diverse": [(W / "protocol_pdiv", "power-diverse+decision-flip"),
                      (W / "protocol_text7", "power-diverse+decision-flip")],
    "power-diverse m=10000": [(W / "protocol_pdiv", "power-diverse+decision-flip@candidates=10000")],
    "power-diverse epig-decision": [(W / "protocol_rule8", "power-diverse+epig-decision"),
                                    (W / "protocol_text7", "power-diverse+epig-decision")],
}
# (rule, challenger, holder): each rule's challenger against the holder of the rule before, on DEV_SETS
RULES = [("third", "power", "greedy"), ("fourth", "power-diverse", None), ("fifth", "power-diverse m=10000", None)]
# the seventh rule: the best of these on DEV_SETS + TEXT_SETS, the holder kept unless beaten by more than TIE
SEVENTH = (["greedy", "power", "power-diverse"], "power-diverse", 0.0005)
# the eighth rule: (challenger, holder, margin) on DEV_SETS + TEXT_SETS
EIGHTH = ("power-diverse epig-decision", "power-diverse", 0.001)


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


REG_SETS = ["docvis", "hours", "diamonds_price", "friedman"]  # the sixth rule: regression development sets
SIXTH = (["epistemic", "epistemic+epig", "diverse+epig"], "epistemic", 0.002)


def sixth_rule() -> list[str]:
    """The regression rule from the protocol tables it names: AULC (CRPS) over random:vbll's, per set."""
    cands, keep, margin = SIXTH
    res = HERE / "results" / "label_efficiency_dev"
    ratios: dict[str, list[float]] = {c: [] for c in cands}
    for name in REG_SETS:
        t = pl.read_csv(res / f"regrule_{name}.csv")
        aulc = dict(zip(t["strategy"], t["aulc"]))
        for c in cands:
            ratios[c].append(aulc[c] / aulc["random:vbll"])
    lines = ["| set | " + " | ".join(cands) + " |", "|---" * (len(cands) + 1) + "|"]
    for i, name in enumerate(REG_SETS):
        lines.append(f"| {name} | " + " | ".join(f"{ratios[c][i]:.4f}" for c in cands) + " |")
    means = {c: float(np.mean(v)) for c, v in ratios.items()}
    lines.append(f"| mean ({len(REG_SETS)} sets) | " + " | ".join(f"{means[c]:.4f}" for c in cands) + " |")
    best = min(cands, key=lambda c: means[c])
    winner = best if means[keep] - means[best] >= margin else keep
    lines += ["", f"Sixth rule (CRPS AULC / random:vbll's, lowest mean; {keep} kept unless beaten by {margin} or more): "
              f"{winner}.", ""]
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    import protocol

    rows = []
    for name in DEV_SETS + TEXT_SETS:
        df = set_frame(name)
        protocol.WORK = Path(df["work"][0]).resolve()  # summarise reads the pool size from this folder
        t = protocol.summarise(name, df.drop("work"), 300, "accuracy", [300], None)
        row = {"set": name, "from": int(t["from"].max())}
        row.update({r["strategy"]: r["aulc"] for r in t.iter_rows(named=True)})
        row.update({f"{r['strategy']} seeds": r["seeds"] for r in t.iter_rows(named=True)})
        rows.append(row)
    cands = [c for c in CANDIDATES if all(c in r for r in rows[:len(DEV_SETS)])]
    lines = ["| set | " + " | ".join(cands) + " |", "|---" * (len(cands) + 1) + "|"]
    lines = sixth_rule() + ["Classification (AULC, accuracy):", ""] + lines
    for r in rows:
        label = r["set"] + ("" if r["from"] == 20 else f" (from n = {r['from']})")
        lines.append(f"| {label} | " + " | ".join(f"{r[c]:.3f}" if c in r else "-" for c in cands) + " |")

    def mean_over(n_sets: int) -> dict[str, float]:
        return {c: float(np.mean([r[c] for r in rows[:n_sets]])) for c in cands if all(c in r for r in rows[:n_sets])}

    means = mean_over(len(DEV_SETS))
    means_all = mean_over(len(rows))
    for n, m in ((len(DEV_SETS), means), (len(rows), means_all)):
        lines.append(f"| mean ({n} sets) | " + " | ".join(f"{m[c]:.4f}" if c in m else "-" for c in cands) + " |")
    lines.append("")
    holder = None
    for rule, challenger, against in RULES:
        if challenger not in means:
            break
        holder = against or holder  # the first rule names both; later ones meet the winner so far
        winner = challenger if means[challenger] > means[holder] else holder
        lines.append(f"{rule.capitalize()} rule ({challenger} against {holder}, higher mean AULC): "
                     f"{winner} ({means[challenger] - means[holder]:+.4f}).")
        holder = winner
    pool, keep, tie = SEVENTH
    if all(c in means_all for c in pool):
        best = max(pool, key=lambda c: means_all[c])
        winner = best if means_all[best] - means_all[keep] > tie else keep
        lines.append(f"Seventh rule (best of {', '.join(pool)} over {len(rows)} sets, {keep} kept unless beaten by "
                     f"more than {tie}): {winner} (" + ", ".join(f"{c} {means_all[c]:.4f}" for c in pool) + ").")
    challenger, keep, need = EIGHTH
    if challenger in means_all:
        winner = challenger if means_all[challenger] - means_all[keep] >= need else keep
        lines.append(f"Eighth rule ({challenger} against {keep} over {len(rows)} sets, adopted if ahead by {need} or "
                     f"more): {winner} ({means_all[challenger] - means_all[keep]:+.4f}).")
    seeds = {r[f"{c} seeds"] for r in rows for c in cands if c in r}
    lines.append(f"Seeds per set and candidate: {sorted(seeds)}.")
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(f"Command: `python benchmarks/preset_rule.py {' '.join(sys.argv[1:])}`\n\n{text}\n")


if __name__ == "__main__":
    main()
