"""EPIG rule E1 (label_efficiency_dev/recheck_rule.md): top-k EPIG, the closed form against the
Monte-Carlo EPIG of the same VBLL posterior, on development sets.

The closed form (alkit/acquisition/epig.py) reads each class logit as a Gaussian output with its own
observation noise; ``epig_mc_n`` draws consistent last-layer weights (``S`` draws, the same for every
item and target) and uses categorical labels, the paper's sample estimator.  This script registers
that Monte-Carlo score as an acquisition for the screen only (``topk+epig-mc``; the loop's 256 EPIG
targets, seeded per cycle) and runs both through the protocol of benchmarks/protocol.py (20 random
initial labels, batches of 10 to the budget).  Runs are cached in ALKIT_PROTOCOL_WORK (default
benchmarks/_work/epig_mc_screen) and resumed; a second call only prints the table.

    .venv/bin/python benchmarks/epig_mc_screen.py fashion_dev 120,121,122 300
    .venv/bin/python benchmarks/epig_mc_screen.py mnist_dev 120,121,122 300
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("ALKIT_PROTOCOL_WORK", str(Path(__file__).resolve().parent / "_work" / "epig_mc_screen"))

import alkit.acquisition as acquisitions  # noqa: E402
import protocol  # noqa: E402  (benchmarks/protocol.py)
from alkit.acquisition.epig import EPIGAcquisition, EPIGTargets, epig_mc_n  # noqa: E402
from alkit.types import AcquisitionContext, Prediction, Scores  # noqa: E402

S = int(os.environ.get("EPIG_MC_S", "128"))  # weight draws per cycle
_from_prediction = EPIGTargets.from_prediction.__func__


def _keep_target_prediction(cls, pred, posterior, objective="information"):  # noqa: ANN001, ANN202
    """EPIGTargets as the loop builds them, also holding the targets' Prediction (the Monte-Carlo
    score needs their logits and features)."""
    targets = _from_prediction(cls, pred, posterior, objective)
    object.__setattr__(targets, "_pred", pred)
    return targets


class MonteCarloEPIG(EPIGAcquisition):
    """EPIG from S consistent last-layer weight draws and categorical labels (``epig_mc_n``)."""

    name = "epig-mc"

    def score(self, pred: Prediction, ctx: AcquisitionContext) -> Scores:
        t = ctx.targets._pred  # type: ignore[union-attr]
        return Scores(epig_mc_n(pred.extras["logits_n_C"], pred.embedding_n_d, t.extras["logits_n_C"],
                                t.embedding_n_d, ctx.posterior, n_samples=S, seed=ctx.seed))


def main() -> None:
    data, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    budget = int(sys.argv[3]) if len(sys.argv) > 3 else 300
    EPIGTargets.from_prediction = classmethod(_keep_target_prediction)  # type: ignore[method-assign]
    acquisitions.ACQUISITIONS["epig-mc"] = MonteCarloEPIG
    entries = ["epig", "topk+epig-mc"]
    protocol.run_all(data, entries, seeds, budget)
    table = protocol.summarise(data, protocol.curves(data), budget, "accuracy", [100, 200, budget], None)
    print(f"{data}, seeds {seeds}, S = {S}")
    print(protocol.markdown(table, "accuracy", [100, 200, budget], None))


if __name__ == "__main__":
    main()
