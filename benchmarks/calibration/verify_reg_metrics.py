"""Check 3 (regression): alkit's metric functions vs independent computations on the same predictions."""
from common import *
from alkit.loop import ChunkedDistribution

X, y = reg_data("synth_homo")
te, pool, lab = split(len(y), 200, 0)
yte = y[te]
for name, sc, opts in [("gaussian", "vbll", {"head": "gaussian"}), ("hetero", "vbll", {"head": "hetero"}),
                       ("quantile", "vbll", {"head": "quantile"}), ("buckets", "vbll", {"head": "buckets"}),
                       ("ensemble", "ensemble", {}), ("none", "none", {})]:
    lr = fit_learner(sc, "regression", None, X[pool], X[lab], y[lab], seed=1, **opts)
    # as the loop does: chunked predictions
    preds = [lr.predict(X[te][s:s + 300]) for s in range(0, len(te), 300)]
    dist = ChunkedDistribution([p.dist for p in preds], [len(p.mean_n) for p in preds])
    mean_n = np.concatenate([p.mean_n.numpy() for p in preds])
    edges = M.bucket_edges(yte, 10)
    m = M.regression_metrics(dist, mean_n, yte, edges)
    # independent: CDF on a grid -> CRPS by quadrature; density by finite difference of the CDF
    lo, hi = yte.min() - 15, yte.max() + 15
    p1 = lr.predict(X[te])
    d1 = p1.dist
    cdf = lambda t: np.stack([d1.cdf(torch.full((len(te),), float(v), dtype=d1.mean().dtype)).double().numpy() for v in t], 1)
    crps_num = sample_crps(cdf, yte, lo, hi, n_grid=3000).mean()
    out = {"crps_alkit": m["crps"], "crps_quadrature": crps_num}
    if hasattr(d1, "var_n"):
        mu, sd = d1.mean().double().numpy(), np.sqrt(d1.var_n.double().numpy())
        if d1.var_n.dim() == 1:
            out["crps_closed_form"] = float(gauss_crps(mu, sd, yte).mean())
            out["nll_scipy"] = float(-stats.norm.logpdf(yte, mu, sd).mean())
    h = 1e-3
    yt = torch.as_tensor(yte, dtype=d1.mean().dtype)
    dens = (d1.cdf(yt + h) - d1.cdf(yt - h)).double().numpy() / (2 * h)
    out["nll_alkit"] = m["nll"]
    out["nll_fd_density"] = float(-np.log(np.clip(dens, 1e-12, None)).mean())
    # nll10 / ece10 by hand
    F = np.stack([d1.cdf(torch.full((len(te),), float(t), dtype=d1.mean().dtype)).double().numpy() for t in edges[1:-1]], 1)
    F = np.c_[np.zeros(len(te)), F, np.ones(len(te))]
    mass = np.clip(np.diff(F, axis=1), 0, None)
    b = np.digitize(yte, edges[1:-1], right=True)
    out["nll10_alkit"], out["nll10_mine"] = m["nll10"], float(-np.log(np.clip(mass[np.arange(len(b)), b], 1e-12, None)).mean())
    out["ece10_alkit"], out["ece10_mine"] = m["ece10"], my_ece(mass, b, 10)
    out["mae_of_mean_n"], out["mae_of_dist_mean"] = m["mae"], float(np.abs(d1.mean().double().numpy() - yte).mean())
    print(name, {k: round(float(v), 4) for k, v in out.items()})
