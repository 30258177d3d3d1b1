"""Laplace mutual information at few samples: is its error a bias that a correction removes?

The MC estimate H[mean_s p_s] - mean_s H[p_s] underestimates the MI (the entropy of a sample mean
is biased low; the second term is unbiased).  A second-order (Miller-Madow-type) correction adds
1/2 sum_c Var(pbar_c) / pbar_c, with Var(pbar) estimated from the samples as if iid (``+iid corr``)
or from the antithetic pair means (``+pair corr``).  Printed: aggregate error sum |MI_S - MI_ref| /
sum MI_ref and, in brackets, the signed error sum (MI_S - MI_ref) / sum MI_ref, mean over 3 design
seeds, for alkit's design (``fixed_eps``) and iid draws, against 20,000 iid draws; model and items as
in benchmarks/laplace_mi_error.py.

    PYTHONPATH=. .venv/bin/python benchmarks/laplace_mi_bias.py

Recorded: benchmarks/results/laplace_mi_bias.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import torch
from threadpoolctl import threadpool_limits

sys.path.insert(0, str(Path(__file__).resolve().parent))
from laplace_mi_error import setup  # noqa: E402

from alkit.learners.laplace import fixed_eps  # noqa: E402


def estimates(z_n_C: torch.Tensor, m_n_C: torch.Tensor, Q_C_C: torch.Tensor, eps_S_C: torch.Tensor) -> torch.Tensor:
    """(n, 3): the MC MI, with the iid-variance correction, with the pair-variance correction."""
    S = eps_S_C.shape[0]
    half = S // 2
    out = []
    for lo in range(0, len(z_n_C), 200):
        z = z_n_C[lo:lo + 200].double()[:, None, :] + (m_n_C[lo:lo + 200].sqrt()[:, None, :] * eps_S_C[None]) @ Q_C_C.T
        p = torch.softmax(z, -1)
        ent = -(p * torch.log_softmax(z, -1)).sum(-1)
        pbar = p.mean(1)
        mi = -(pbar * pbar.clamp_min(1e-300).log()).sum(-1) - ent.mean(1)
        c_iid = 0.5 * (p.var(1) / S / pbar.clamp_min(1e-12)).sum(-1)
        pair_means = 0.5 * (p[:, :half] + p[:, half:2 * half])
        c_pair = 0.5 * (pair_means.var(1) / half / pbar.clamp_min(1e-12)).sum(-1)
        out.append(torch.stack([mi, mi + c_iid, mi + c_pair], 1))
    return torch.cat(out)


def main() -> None:
    torch.set_num_threads(1)
    names = ("design", "design +iid corr", "design +pair corr", "iid", "iid +iid corr")
    print("| classes | samples | " + " | ".join(names) + " |")
    print("|---|---|" + "---|" * len(names))
    with threadpool_limits(1):
        for C in (10, 5):
            _, lap, _, h, z = setup(C)
            m, Q = lap.eigvar(h).double().clamp_min(0), lap.Q_G.double()
            ref = estimates(z, m, Q, torch.randn(20000, C, generator=torch.Generator().manual_seed(123),
                                                 dtype=torch.float64))[:, 0]
            for S in (8, 16, 32):
                err: dict[str, list[float]] = {k: [] for k in names}
                sgn: dict[str, list[float]] = {k: [] for k in names}
                for seed in range(3):
                    d = estimates(z, m, Q, fixed_eps(S, C, seed, torch.float64))
                    i = estimates(z, m, Q, torch.randn(S, C, generator=torch.Generator().manual_seed(seed),
                                                       dtype=torch.float64))
                    for k, v in zip(names, (d[:, 0], d[:, 1], d[:, 2], i[:, 0], i[:, 1])):
                        err[k].append(float((v - ref).abs().sum() / ref.sum()))
                        sgn[k].append(float((v - ref).sum() / ref.sum()))
                print(f"| {C} | {S} | " + " | ".join(f"{np.mean(err[k]):.3f} ({np.mean(sgn[k]):+.3f})" for k in names)
                      + " |", flush=True)


if __name__ == "__main__":
    main()
