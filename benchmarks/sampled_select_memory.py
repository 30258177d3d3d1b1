"""Peak memory and CPU time of one power-diverse (sampled) selection of b picks from n candidates.

Why: its Gumbel noise was drawn as one (b, n) float64 array (26 GB for b = 20,000 from 175,000
candidates, a black-box check); now a row per pick.  Uses the decision-flip case of
tests/test_diverse_lazy.py (d = 16, 10 classes).

    python benchmarks/sampled_select_memory.py N B
"""
import sys, time, resource
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1] / "tests"))
from test_diverse_lazy import _case
from alkit.strategies.diverse import SampledDiverseStrategy
from alkit.types import SelectionContext
n, b = int(sys.argv[1]), int(sys.argv[2])
cands, post = _case("decision-flip", 2, n=n, d=16, K=10)
t = time.thread_time()
sel = SampledDiverseStrategy().select(cands, b, SelectionContext(seed=0, posterior=post))
print(n, b, len(sel.keys), f"{time.thread_time()-t:.1f} s", f"peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss/1e6:.2f} GB")
