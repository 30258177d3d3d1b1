"""Label efficiency of the post-hoc scorers through the real loop (ActiveLoop), digits.

Arms (each one ``ActiveLoop.run`` per seed in one fresh hidden-label project, same seeds):
- random             : uniform batches, plain MLP (the baseline preset);
- topk + <scorer>    : the k highest epistemic scores of laplace (MC MI) / csd / gradnorm;
- epistemic + laplace: the headline preset (cold-start strata, then greedy batch mutual
                       information on the Laplace GaussianLastLayer over the top candidates).

    .venv/bin/python benchmarks/posthoc_label_efficiency.py --seeds 0 1 2 \
        --arms random topk-laplace epistemic-laplace topk-csd topk-gradnorm
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import torch

from alkit.config import load_project
from alkit.demo import write_digits_csv
from alkit.loop import ActiveLoop, RunRequest
from alkit.plots import summary_table, to_markdown
from alkit.pools.ingest import InitOptions, init_project
from alkit.report import cycles_frame

ARMS = {
    "random": ("random", None),
    "topk-laplace": ("topk", "laplace"),
    "epistemic-laplace": ("epistemic", "laplace"),
    "topk-csd": ("topk", "csd"),
    "topk-gradnorm": ("topk", "gradnorm"),
    "ensemble": ("ensemble", None),
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--arms", nargs="+", default=["random", "topk-laplace", "epistemic-laplace",
                                                  "topk-csd", "topk-gradnorm"])
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    work = Path(tempfile.mkdtemp(prefix="alkit-posthoc-le-"))
    try:
        data = write_digits_csv(work / "digits.csv")
        project = work / "project"
        init_project(data, project, InitOptions(id_col="id", label_col="label", task="classification",
                                                test_frac=0.3, seed=0, hide_labels=True, progress=False))
        loop = ActiveLoop(load_project(project))
        t0 = time.time()
        for arm in args.arms:
            strategy, scorer = ARMS[arm]
            for seed in args.seeds:
                loop.run(RunRequest(strategy=strategy, budget=args.budget, batch_size=args.batch, seed=seed,
                                    scorer=scorer, name=f"{arm}-b{args.batch}-s{seed}"))
                print(f"{arm} seed {seed} done ({time.time() - t0:.0f}s)", flush=True)
        df = cycles_frame(loop.store)
        at = [args.budget // 4, args.budget // 2, args.budget]
        table = summary_table(df, "accuracy", at=at, target=None)
        text = (f"### digits: test accuracy, budget {args.budget}, batch {args.batch}, seeds {args.seeds}, "
                f"arms {' '.join(args.arms)} ({time.time() - t0:.0f}s)\n\n" + to_markdown(table))
        print("\n" + text)
        if args.out:
            Path(args.out).write_text(text + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
