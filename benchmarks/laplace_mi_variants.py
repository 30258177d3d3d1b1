"""Laplace mutual information: three other estimators at the same sample counts (issue 15: within
5 % of a 20,000-sample reference at about a forward's cost, i.e. ~16 samples).

Same models, items and error measure as laplace_mi_error.py (aggregate relative error
sum |MI_S - MI_ref| / sum MI_ref, mean over 5 sample seeds; signed = sum (MI_S - MI_ref) / sum MI_ref):

- design: alkit's ``fixed_eps`` (antithetic, whitened), the default;
- sobol: scrambled Sobol points through the normal quantile, antithetic;
- gap GxP: per item, G Gauss-Hermite nodes along the direction (in the whitened space) that moves
  the top-two logit gap most, times P design draws in the orthogonal complement;
- jackknife / delta: the design's draws with the plug-in entropy of the mean de-biased, by a
  delete-one-pair jackknife or by the second-order term 1/2 sum_c Var(mean p_c) / mean p_c;
- pair CV (added 2026-12-04): the design's draws with a control variate per class pair (top class,
  class k): the two-class MI of sigmoid(z_top - z_k) on the same draws minus its exact value (a
  one-dimensional Gaussian integral, 64 Gauss-Hermite nodes), subtracted with coefficient 1; 'top
  two' the pair of the two largest logits only, 'all pairs' every k.  The design's draws already
  get every quadratic function right, so a control variate has to be non-quadratic; the pairs'
  binary MIs are the part of the MI carried by single decision flips.

    .venv/bin/python benchmarks/laplace_mi_variants.py
"""

from __future__ import annotations

import numpy as np
import torch
from scipy.stats import norm, qmc
from threadpoolctl import threadpool_limits

from alkit.learners.laplace import fixed_eps
from laplace_mi_error import setup  # benchmarks/laplace_mi_error.py

SEEDS = range(5)


def entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp_min(1e-300))).sum(-1)


def estimates(z0: torch.Tensor, r: torch.Tensor, Q: torch.Tensor, eps: torch.Tensor,
              w_S: torch.Tensor | None = None) -> dict[str, torch.Tensor]:
    """MI of logits z0 + Q diag(r) eps; ``eps`` (S, C) shared or (n, S, C) per item, weights w_S."""
    out: dict[str, list[torch.Tensor]] = {"plain": [], "jackknife": [], "delta": []}
    for lo in range(0, len(z0), 100):
        e = eps if eps.ndim == 2 else eps[lo:lo + 100]
        p = (z0[lo:lo + 100, None, :] + (r[lo:lo + 100, None, :] * e) @ Q.T).softmax(-1)
        if w_S is not None:
            pbar = (w_S[None, :, None] * p).sum(1)
            out["plain"].append(entropy(pbar) - (w_S[None] * entropy(p)).sum(1))
            continue
        J = p.shape[1] // 2
        q = 0.5 * (p[:, :J] + p[:, J:2 * J])  # antithetic pair means
        pbar, eh = q.mean(1), entropy(p).mean(1)
        loo = (pbar[:, None, :] * J - q) / (J - 1)
        out["plain"].append(entropy(pbar) - eh)
        out["jackknife"].append(J * entropy(pbar) - (J - 1) * entropy(loo).mean(1) - eh)
        out["delta"].append(entropy(pbar) + 0.5 * (q.var(1) / J / pbar.clamp_min(1e-300)).sum(-1) - eh)
    return {k: torch.cat(v) for k, v in out.items() if v}


GH_T, GH_W = (torch.tensor(a) for a in np.polynomial.hermite_e.hermegauss(64))
GH_W = GH_W / GH_W.sum()


def binary_entropy(q: torch.Tensor) -> torch.Tensor:
    return -(q * torch.log(q.clamp_min(1e-300)) + (1 - q) * torch.log((1 - q).clamp_min(1e-300)))


def pair_control_variates(z0: torch.Tensor, r: torch.Tensor, Q: torch.Tensor, eps: torch.Tensor) -> torch.Tensor:
    """(n, C-1): for each item and each class k other than its top one (by the mean logits, in
    order), the binary MI of sigmoid(z_top - z_k) on the draws ``eps`` minus its exact Gaussian value."""
    n, C = z0.shape
    order = z0.argsort(-1, descending=True)
    out = []
    for k in range(1, C):
        d = torch.zeros(n, C, dtype=z0.dtype).scatter_(1, order[:, :1], 1.0).scatter_(1, order[:, k:k + 1], -1.0)
        mu, sd = (z0 * d).sum(1), ((d @ Q) * r).norm(dim=1)
        t = mu[:, None] + ((r[:, None, :] * eps[None]) @ Q.T * d[:, None, :]).sum(-1)  # (n, S) draws of the gap
        q = torch.sigmoid(t)
        mc = binary_entropy(q.mean(1)) - binary_entropy(q).mean(1)
        qq = torch.sigmoid(mu[:, None] + sd[:, None] * GH_T[None])
        exact = binary_entropy((qq * GH_W).sum(1)) - (binary_entropy(qq) * GH_W).sum(1)
        out.append(mc - exact)
    return torch.stack(out, 1)


def sobol_eps(S: int, C: int, seed: int) -> torch.Tensor:
    e = torch.tensor(norm.ppf(qmc.Sobol(C, scramble=True, seed=seed).random(S // 2)))
    return torch.cat([e, -e])


def gap_eps(z0: torch.Tensor, r: torch.Tensor, Q: torch.Tensor, G: int, P: int, seed: int):
    n, C = z0.shape
    top2 = z0.topk(2, -1).indices
    d = torch.zeros(n, C, dtype=z0.dtype).scatter_(1, top2[:, :1], 1.0).scatter_(1, top2[:, 1:], -1.0)
    v = r * (d @ Q)
    v = v / v.norm(dim=1, keepdim=True).clamp_min(1e-30)
    t, wt = np.polynomial.hermite_e.hermegauss(G)
    t, wt = torch.tensor(t), torch.tensor(wt / wt.sum())
    ep = fixed_eps(P, C, seed, z0.dtype) if P > 1 else torch.zeros(1, C, dtype=z0.dtype)
    ep_n = ep[None] - v[:, None, :] * (ep[None] * v[:, None, :]).sum(-1, keepdim=True)
    eps = (t[None, :, None, None] * v[:, None, None, :] + ep_n[:, None]).reshape(n, -1, C)
    return eps, (wt[:, None] / ep.shape[0]).expand(G, ep.shape[0]).reshape(-1)


def main() -> None:
    torch.set_num_threads(1)

    def err(e: torch.Tensor, ref: torch.Tensor) -> tuple[float, float]:
        return float((e - ref).abs().sum() / ref.sum()), float((e - ref).sum() / ref.sum())

    print("| classes | samples | design | sobol | gap 4xS/4 | design + jackknife | design + delta "
          "| design + top-two pair CV | design + all-pairs CV |")
    print("|---|---|---|---|---|---|---|---|---|")
    with threadpool_limits(1):
        for C in (10, 5):
            _, lap, _, h, z = setup(C)
            r, Q, z0 = lap.eigvar(h).double().clamp_min(0).sqrt(), lap.Q_G.double(), z.double()
            draw = torch.randn(20000, C, generator=torch.Generator().manual_seed(123), dtype=torch.float64)
            ref = estimates(z0, r, Q, draw)["plain"]
            for S in (16, 32, 64):
                cells: dict[str, list[tuple[float, float]]] = {}
                for seed in SEEDS:
                    eps = fixed_eps(S, C, seed, torch.float64)
                    d = estimates(z0, r, Q, eps)
                    cv = torch.cat([pair_control_variates(z0[lo:lo + 100], r[lo:lo + 100], Q, eps)
                                    for lo in range(0, len(z0), 100)])
                    for k, v in (("design", d["plain"]), ("jackknife", d["jackknife"]), ("delta", d["delta"]),
                                 ("sobol", estimates(z0, r, Q, sobol_eps(S, C, seed))["plain"]),
                                 ("gap", estimates(z0, r, Q, *gap_eps(z0, r, Q, 4, S // 4, seed))["plain"]),
                                 ("cv2", d["plain"] - cv[:, 0]), ("cvall", d["plain"] - cv.sum(1))):
                        cells.setdefault(k, []).append(err(v, ref))
                row = [f"{np.mean([a for a, _ in cells[k]]):.3f} ({np.mean([b for _, b in cells[k]]):+.3f})"
                       for k in ("design", "sobol", "gap", "jackknife", "delta", "cv2", "cvall")]
                print(f"| {C} | {S} | " + " | ".join(row) + " |", flush=True)


if __name__ == "__main__":
    main()
