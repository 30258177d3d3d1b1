"""Check 1: regression coverage / PIT / CRPS of every VBLL head and the other scorers vs references.
usage: reg_exp.py DATASET [N ...]  -> results/reg_DATASET.csv"""
import sys, time, json
import pandas as pd
from common import *
from sklearn.linear_model import BayesianRidge
from sklearn.ensemble import GradientBoostingRegressor

LEARNERS = [("vbll-gaussian", "vbll", {"head": "gaussian"}), ("vbll-hetero", "vbll", {"head": "hetero"}),
            ("vbll-quantile", "vbll", {"head": "quantile"}), ("vbll-buckets", "vbll", {"head": "buckets"}),
            ("vbll-default", "vbll", {}), ("none", "none", {}), ("laplace", "laplace", {}),
            ("ensemble", "ensemble", {}), ("mc-dropout", "mc-dropout", {})]
LEVELS = (0.5, 0.8, 0.9)
TAUS = np.arange(1, 20) / 20


def summarise(pit, crps, nll, y_te, y_lab, extra):
    out = dict(extra)
    for a in LEVELS:
        lo, hi = (1 - a) / 2, (1 + a) / 2
        out[f"cov{int(a*100)}"] = float(np.mean((pit >= lo) & (pit <= hi)))
    out["ks"] = float(stats.kstest(pit, "uniform").statistic)
    out["pit_lo"] = float(np.mean(pit <= 0.0)); out["pit_hi"] = float(np.mean(pit >= 1.0))
    out["crps"] = crps; out["nll"] = nll
    out["out_of_range"] = float(np.mean((y_te < y_lab.min()) | (y_te > y_lab.max())))
    return out


def run(ds, Ns, seeds=(0, 1, 2)):
    X, y = reg_data(ds)
    rows = []
    for n in Ns:
        for seed in seeds:
            te, pool, lab = split(len(y), n, seed)
            Xte, yte, Xl, yl = X[te], y[te], X[lab], y[lab]
            base = dict(dataset=ds, n=n, seed=seed)
            for name, sc, opts in LEARNERS:
                t = time.process_time()
                lr = fit_learner(sc, "regression", None, X[pool], Xl, yl, seed=seed * 100 + 1, **opts)
                p = lr.predict(Xte)
                d = p.dist
                pit = d.cdf(torch.as_tensor(yte, dtype=d.mean().dtype)).double().numpy()
                m = M.regression_metrics(d, p.mean_n.numpy(), yte, M.bucket_edges(yte, 10))
                head = getattr(lr, "head_kind", "")
                rows.append(summarise(pit, m["crps"], m["nll"], yte, yl,
                                      {**base, "learner": name, "head": head, "rmse": m["rmse"],
                                       "nll10": m["nll10"], "ece10": m["ece10"], "cpu_s": time.process_time() - t}))
            # references
            Xm, Xs = X[pool].mean(0), X[pool].std(0) + 1e-8
            Zl, Zte = (Xl - Xm) / Xs, (Xte - Xm) / Xs
            br = BayesianRidge().fit(Zl, yl)
            mu, sd = br.predict(Zte, return_std=True)
            pit = stats.norm.cdf(yte, mu, sd)
            nll = float(np.mean(-stats.norm.logpdf(yte, mu, sd)))
            rows.append(summarise(pit, float(gauss_crps(mu, sd, yte).mean()), nll, yte, yl,
                                  {**base, "learner": "ref-bayesridge", "rmse": float(np.sqrt(np.mean((mu - yte) ** 2)))}))
            # quantile GBM: 19 quantiles; CRPS ~ 2 * mean pinball over the quantile levels
            qs = []
            for tau in TAUS:
                g = GradientBoostingRegressor(loss="quantile", alpha=tau, n_estimators=100, max_depth=3,
                                              learning_rate=0.05, min_samples_leaf=max(3, n // 50), random_state=seed)
                qs.append(g.fit(Zl, yl).predict(Zte))
            Q = np.sort(np.stack(qs, 1), 1)
            pin = np.mean([np.mean(np.maximum(tau * (yte - Q[:, k]), (tau - 1) * (yte - Q[:, k]))) for k, tau in enumerate(TAUS)])
            r = dict(base, learner="ref-qgbm", crps=float(2 * pin), rmse=float(np.sqrt(np.mean((Q[:, 9] - yte) ** 2))))
            for a, (klo, khi) in zip(LEVELS, [(4, 14), (1, 17), (0, 18)]):  # tau .25/.75, .10/.90, .05/.95
                r[f"cov{int(a*100)}"] = float(np.mean((yte >= Q[:, klo]) & (yte <= Q[:, khi])))
            rows.append(r)
            print(ds, n, seed, "done", flush=True)
    df = pd.DataFrame(rows)
    os.makedirs("results", exist_ok=True)
    df.to_csv(f"results/reg_{ds}.csv", index=False)
    return df


if __name__ == "__main__":
    ds = sys.argv[1]
    Ns = [int(a) for a in sys.argv[2:]] or [50, 200, 1000]
    df = run(ds, Ns)
    g = df.groupby(["n", "learner"])[["cov50", "cov80", "cov90", "ks", "crps", "nll", "rmse"]].mean().round(3)
    print(g.to_string())
