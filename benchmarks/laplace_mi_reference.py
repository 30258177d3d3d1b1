"""How far can Monte Carlo take the Laplace mutual information?  Per-item error structure and the
reference's own error (issue 15: within 5 % of a 20,000-sample reference).

Same models and items as laplace_mi_error.py (MLPLearner on 300 digits, 10 classes, or on digits
0-4, KFAC last-layer Laplace, 1,000 other digits).  Prints, per class count: the aggregate error
(sum |MI_S - MI_ref| / sum MI_ref) of alkit's sample design at 16-256 samples; the reference
against a second 20,000-sample reference and against 100,000 samples; the share of the absolute
error held by the items of largest MI; the second-order (delta-method) approximation's error.

    .venv/bin/python benchmarks/laplace_mi_reference.py
"""

from __future__ import annotations

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from alkit.learners.laplace import fixed_eps
from laplace_mi_error import mi_of, setup  # benchmarks/laplace_mi_error.py


def agg(est: torch.Tensor, ref: torch.Tensor) -> float:
    return float((est - ref).abs().sum() / ref.sum())


def main() -> None:
    torch.set_num_threads(1)
    with threadpool_limits(1):
        for C in (10, 5):
            _, lap, _, h, z = setup(C)
            draw = lambda n, s: torch.randn(n, C, generator=torch.Generator().manual_seed(s), dtype=torch.float64)  # noqa: E731
            ref = mi_of(lap, h, z, draw(20000, 123))
            print(f"{C} classes: MI quantiles 10/50/90 % {np.quantile(ref.numpy(), [0.1, 0.5, 0.9]).round(3).tolist()}")
            print(f"  reference vs a second 20,000-sample reference {agg(mi_of(lap, h, z, draw(20000, 7)), ref):.3f}, "
                  f"vs 100,000 samples {agg(ref, mi_of(lap, h, z, draw(100000, 99))):.3f}")
            for S in (16, 32, 64, 128, 256):
                print(f"  design, {S} samples: error {agg(mi_of(lap, h, z, fixed_eps(S, C, 0, torch.float64)), ref):.3f}")
            est = mi_of(lap, h, z, fixed_eps(16, C, 0, torch.float64))
            err = (est - ref).abs()
            order = torch.argsort(ref, descending=True)
            share = err[order].cumsum(0) / err.sum()
            print("  share of the 16-sample error in the top 10 / 30 / 50 % of items by MI: "
                  + " / ".join(f"{float(share[int(q * len(ref)) - 1]):.2f}" for q in (0.1, 0.3, 0.5)))
            m = lap.eigvar(h).double().clamp_min(0)
            Q = lap.Q_G.double()
            p = z.double().softmax(-1)
            J = torch.diag_embed(p) - p[:, :, None] * p[:, None, :]
            mi2 = 0.5 * (m * torch.einsum("ck,nce,ek->nk", Q, J, Q)).sum(1)
            print(f"  second-order (delta-method) MI: error {agg(mi2, ref):.3f}, median ratio to the reference "
                  f"{float((mi2 / ref).median()):.2f}")


if __name__ == "__main__":
    main()
