"""Choosing the stopping rules' defaults on development data (hpc, synth; 5 seeds each).

Replays a grid of parameters of every rule on the `stopping-epistemic-s*` runs that
benchmarks/stopping.py recorded in the development work folder, and keeps, per rule, the setting
that saves the most labels while giving up at most 0.01 mean accuracy on every development set.

    ALKIT_PROTOCOL_WORK=benchmarks/_work/protocol_eps python benchmarks/stopping.py --data hpc,synth --seeds 0-4
    ALKIT_PROTOCOL_WORK=benchmarks/_work/protocol_eps python benchmarks/stopping_dev.py --data hpc,synth \\
        --out benchmarks/results/stopping_dev.md
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol import BUDGET, project_for  # noqa: E402
from stopping import replay  # noqa: E402

from alkit.config import load_project  # noqa: E402
from alkit.loop import ActiveLoop  # noqa: E402

GRID = (
    [f"kappa:threshold={t},k={k}" for t in (0.9, 0.95, 0.97, 0.99) for k in (1, 2, 3)]
    + [f"max-uncertainty:threshold={t}" for t in (0.02, 0.05, 0.1, 0.2, 0.3)]
    + [f"overall-uncertainty:threshold={t}" for t in (0.01, 0.02, 0.05, 0.1, 0.2)]
    + [f"forecast:gain={g},min_points={m},k={k}" for g in (0.001, 0.002, 0.005) for m in (5, 8) for k in (1, 2, 3)]
)
MAX_GIVEN_UP = 0.01


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="hpc,synth")
    ap.add_argument("--seeds", default="0-4")
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lo, _, hi = a.seeds.partition("-")
    seeds = list(range(int(lo), int(hi or lo) + 1))
    sets = a.data.split(",")
    res: dict[str, dict[str, tuple[float, float]]] = {rule: {} for rule in GRID}
    for data in sets:
        loop = ActiveLoop(load_project(project_for(data)))
        budget = BUDGET.get(data, 300)
        for rule in GRID:
            per = [replay(loop, f"stopping-epistemic-s{s}", rule, budget) for s in seeds]
            res[rule][data] = (float(np.mean([p["saved"] for p in per])),
                               float(np.mean([p["acc_budget"] - p["acc_stop"] for p in per])))
    lines = ["| rule | " + " | ".join(f"{d} saved | {d} given up" for d in sets) + " | ok |",
             "|---|" + "---:|---:|" * len(sets) + "---|"]
    best: dict[str, tuple[float, str]] = {}
    for rule in GRID:
        ok = all(res[rule][d][1] <= MAX_GIVEN_UP for d in sets)
        saved = float(np.mean([res[rule][d][0] for d in sets]))
        family = rule.partition(":")[0]
        if ok and saved > best.get(family, (-1.0, ""))[0]:
            best[family] = (saved, rule)
        lines.append(f"| `{rule}` | " + " | ".join(f"{res[rule][d][0]:.0f} | {res[rule][d][1]:+.3f}" for d in sets)
                     + f" | {'yes' if ok else ''} |")
    chosen = "\n".join(f"- {fam}: `{rule}` (mean {saved:.0f} labels saved)" for fam, (saved, rule) in best.items())
    text = (f"Setting per rule that saves the most labels with at most {MAX_GIVEN_UP} mean accuracy given up on "
            f"every set ({', '.join(sets)}; {len(seeds)} seeds):\n\n{chosen or '- none qualifies'}\n\n" + "\n".join(lines))
    print(text)
    if a.out:
        cmd = "ALKIT_PROTOCOL_WORK=benchmarks/_work/protocol_eps python benchmarks/stopping_dev.py " + " ".join(sys.argv[1:])
        Path(a.out).write_text(f"Command: `{cmd}`\n\n{text}\n")


if __name__ == "__main__":
    main()
