"""Development runs behind the selectors of the `epistemic` preset: power sampling with p
proportional to score ** beta, for one beta, through the label-efficiency protocol.

    python benchmarks/power_beta_dev.py --beta 0.5 --data docvis --seeds 0-9        # regression
    python benchmarks/power_beta_dev.py --beta 2 --data chile --strategies epistemic  # classification

Runs the given entries (default `random:vbll,epistemic`) with the preset's selector for the
project's task (regression: `power-sqrt`; classification: `power`) set to this beta for this
process only, in their own work folder, benchmarks/_work/protocol_beta<beta>/, and prints the
protocol's table.  Development data only; the chosen beta is reported by benchmarks/protocol.py.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--beta", type=float, required=True)
    ap.add_argument("--data", default="docvis")
    ap.add_argument("--seeds", default="0-9")
    ap.add_argument("--out", default=None)
    ap.add_argument("--strategies", default="random:vbll,epistemic")
    a = ap.parse_args()
    here = Path(__file__).resolve().parent
    os.environ["ALKIT_PROTOCOL_WORK"] = str(here / "_work" / f"protocol_beta{a.beta}")
    sys.path.insert(0, str(here))
    from alkit.strategies.power import PowerStrategy, SqrtPowerStrategy

    SqrtPowerStrategy.beta = a.beta  # the preset's regression selector, for this process only
    PowerStrategy.beta = a.beta  # its classification selector (SqrtPowerStrategy keeps its own attribute)
    import protocol

    sys.argv = ["protocol.py", "--data", a.data, "--strategies", a.strategies, "--seeds", a.seeds,
                *(["--out", a.out] if a.out else [])]
    protocol.main()


if __name__ == "__main__":
    main()
