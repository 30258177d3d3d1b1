"""Stopping rules on the label-efficiency protocol: labels saved and accuracy given up.

For each data set, runs the `epistemic` preset to the budget for seeds 0-4 on the protocol project
(benchmarks/protocol.py: fixed test split, 20 random initial labels, batches of 10), recording the
stopping signals every cycle (stop-set predictions, acquisition scores).  Each rule is then replayed
on every run with the same code the loop uses (``alkit.stopping.first_fired`` on the cycles so far
plus the current one): the first cycle at which it fires is where `alkit run --stop RULE` would
have stopped, before spending that cycle's batch.

    python benchmarks/stopping.py --data digits,fashion --seeds 0-4 --out benchmarks/results/stopping.md

Columns (mean over seeds): labels at the stop, labels saved against the budget, test accuracy at
the stop and at the budget, accuracy given up, and how many seeds stopped at all.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol import BUDGET, project_for  # noqa: E402

from alkit.config import load_project  # noqa: E402
from alkit.loop import ActiveLoop, RunRequest  # noqa: E402
from alkit.stopping import History, first_fired, get_rule  # noqa: E402

RULES = ["kappa", "kappa:threshold=0.95,k=2", "max-uncertainty", "overall-uncertainty", "forecast",
         "forecast:gain=0.002,k=1"]


def run_seed(loop: ActiveLoop, seed: int, budget: int) -> str:
    name = f"stopping-epistemic-s{seed}"
    loop.run(RunRequest(strategy="epistemic", budget=budget, batch_size=10, initial=20, initial_selector="random",
                        seed=seed, name=name))
    return name


def replay(loop: ActiveLoop, name: str, rule: str | None, budget: int) -> dict[str, float]:
    """Where ``rule`` would have stopped run ``name`` (None: no rule, the run to its budget)."""
    run = next(r for r in loop.store.runs() if r.name == name)
    cycles = [c for c in loop.store.cycles(run.id) if c.metrics]
    signals = loop.store.signals(run.id)
    final = cycles[-1]
    stop_at = final
    points = [(c.n_labeled, c.metrics, signals.get(c.cycle, {})) for c in cycles]
    for i in range(len(cycles) if rule is not None else 0):
        if first_fired([get_rule(rule)], History.of(points[: i + 1], 10, budget, "accuracy", waits=True)) is not None:
            stop_at = cycles[i]
            break
    return {"labels": stop_at.n_labeled, "saved": final.n_labeled - stop_at.n_labeled,
            "acc_stop": stop_at.metrics["accuracy"], "acc_budget": final.metrics["accuracy"],
            "stopped": float(stop_at is not final)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="digits,fashion")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    torch.set_num_threads(1)
    sections = []
    with threadpool_limits(1):
        for data in a.data.split(","):
            budget = BUDGET.get(data, 300)
            loop = ActiveLoop(load_project(project_for(data)))
            names = []
            for seed in seeds:
                t0 = time.perf_counter()
                names.append(run_seed(loop, seed, budget))
                print(f"{data} seed {seed}: {time.perf_counter() - t0:.1f} s", flush=True)
            rows = []
            for rule in ["(none: run to the budget)", *RULES]:
                per = [replay(loop, n, None if rule.startswith("(") else rule, budget) for n in names]
                df = pl.DataFrame(per)
                rows.append({"rule": rule, "labels": df["labels"].mean(), "saved": df["saved"].mean(),
                             "acc_stop": df["acc_stop"].mean(), "acc_stop_std": df["acc_stop"].std(ddof=0),
                             "acc_budget": df["acc_budget"].mean(),
                             "given_up": (df["acc_budget"] - df["acc_stop"]).mean(),
                             "stopped": int(df["stopped"].sum())})
            lines = [f"### {data} (budget {budget}, {len(seeds)} seeds)", "",
                     "| rule | labels at stop | labels saved | accuracy at stop | accuracy at budget | "
                     "accuracy given up | seeds stopped |", "|---|---:|---:|---:|---:|---:|---:|"]
            for r in rows:
                lines.append(f"| `{r['rule']}` | {r['labels']:.0f} | {r['saved']:.0f} | {r['acc_stop']:.3f} ± "
                             f"{r['acc_stop_std']:.3f} | {r['acc_budget']:.3f} | {r['given_up']:+.3f} | "
                             f"{r['stopped']}/{len(seeds)} |")
            sections.append("\n".join(lines))
            print(sections[-1], flush=True)
    text = "\n\n".join(sections)
    if a.out:
        cmd = "python benchmarks/stopping.py " + " ".join(sys.argv[1:])
        Path(a.out).write_text(f"Command: `{cmd}`\n\n{__doc__.split(chr(10) + chr(10), 1)[1].strip()}\n\n{text}\n")


if __name__ == "__main__":
    main()
