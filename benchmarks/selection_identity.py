"""Selections of a few runs on a fresh digits project, for a before/after comparison of a refactor.

    PYTHONPATH=<checkout A> python benchmarks/selection_identity.py a.json
    PYTHONPATH=<checkout B> python benchmarks/selection_identity.py b.json
    python benchmarks/selection_identity.py --compare a.json b.json

(PYTHONPATH makes the script import the checkout's alkit rather than the installed one.)"""
import json, sys, tempfile

if sys.argv[1] == "--compare":
    a, b = (json.load(open(p)) for p in sys.argv[2:4])
    for k in a:
        print(f"{k}: {'identical' if a[k] == b.get(k) else 'DIFFERENT'} ({len(a[k])} picks)")
    raise SystemExit(0)
from pathlib import Path
import numpy as np, polars as pl, torch
from sklearn.datasets import load_digits
torch.set_num_threads(1)
from alkit.pools.ingest import InitOptions, init_project
from alkit.config import load_project
from alkit.loop import ActiveLoop, RunRequest
X, y = load_digits(return_X_y=True)
df = pl.DataFrame({"id": [f"d{i}" for i in range(len(y))], "label": [str(v) for v in y], **{f"px{j}": X[:, j] for j in range(64)}})
tmp = Path(tempfile.mkdtemp()); data = tmp / "d.parquet"; df.write_parquet(data)
root = tmp / "p"
init_project(data, root, InitOptions(id_col="id", label_col="label", features=[f"px{j}" for j in range(64)], hide_labels=True, test_frac=0.3, progress=False))
loop = ActiveLoop(load_project(root))
out = {}
for strat, scorer in [("epistemic", None), ("margin", None), ("random", None), ("kcenter", None), ("badge", None), ("coldstart", None), ("topk", "laplace"), ("topk", "gradnorm"), ("topk", "csd"), ("batchbald", "mc-dropout")]:
    req = RunRequest(strategy=strat, scorer=scorer, budget=50, batch_size=10, seed=1, train={"max_epochs": 5})
    loop.run(req)
    spec = loop.resolve(req)
    spec = spec.spec if hasattr(spec, "spec") else spec[0]
    run = loop.store.get_or_create_run(spec)
    with loop.store.session() as s:
        from sqlalchemy import select
        from alkit.pools.schema import SelectionRow
        keys = [int(k) for k in s.scalars(select(SelectionRow.item_key).where(SelectionRow.run_id == run.id).order_by(SelectionRow.cycle, SelectionRow.rank))]
    out[f"{strat}:{scorer}"] = keys
json.dump(out, open(sys.argv[1], "w"))
print("done", len(out))
