"""Check 2 + 3 (classification): ECE(15)/NLL of alkit learners vs a temperature-scaled logistic regression,
and alkit's metric functions vs an independent ECE/NLL.  usage: cls_exp.py DATASET [N ...]"""
import sys, time
import pandas as pd
from common import *
from scipy.optimize import minimize_scalar
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import StratifiedKFold, KFold

LEARNERS = [("vbll", "vbll", {}), ("none", "none", {}), ("laplace", "laplace", {}),
            ("ensemble", "ensemble", {}), ("mc-dropout", "mc-dropout", {})]


def softmax(z):
    z = z - z.max(1, keepdims=True); e = np.exp(z); return e / e.sum(1, keepdims=True)


def lr_logits(model, Z, C):
    dz = model.decision_function(Z)
    if dz.ndim == 1:
        dz = np.c_[-dz / 2, dz / 2]
    return dz


def temp_scaled_lr(Zl, yl, Zte, C, seed):
    """Logistic regression (C=1 on standardised inputs); temperature fitted on its 3-fold out-of-fold logits."""
    full = LogisticRegression(C=1.0, max_iter=2000).fit(Zl, yl)
    oof = np.zeros((len(yl), C))
    counts = np.bincount(yl, minlength=C)
    k = 3
    cv = StratifiedKFold(k, shuffle=True, random_state=seed) if counts[counts > 0].min() >= k else KFold(k, shuffle=True, random_state=seed)
    for tr, va in cv.split(Zl, yl):
        if len(np.unique(yl[tr])) < 2:
            continue
        m = LogisticRegression(C=1.0, max_iter=2000).fit(Zl[tr], yl[tr])
        lg = np.full((len(va), C), -30.0)
        dz = lr_logits(m, Zl[va], C)
        if len(m.classes_) == C:
            lg = dz
        else:
            lg[:, m.classes_] = dz if dz.shape[1] == len(m.classes_) else np.c_[-dz[:, 0] / 2, dz[:, 0] / 2][:, :len(m.classes_)]
        oof[va] = lg
    f = lambda logT: my_nll(softmax(oof / np.exp(logT)), yl)
    T = float(np.exp(minimize_scalar(f, bounds=(-3, 3), method="bounded").x))
    lg = lr_logits(full, Zte, C)
    return softmax(lg), softmax(lg / T), T


def run(ds, Ns, seeds=(0, 1, 2)):
    X, y = cls_data(ds)
    C = int(y.max() + 1)
    rows, checks = [], []
    for n in Ns:
        for seed in seeds:
            s = seed
            while True:  # a labelled set with every class (the loop trains from 2 classes; we need all for LR)
                te, pool, lab = split(len(y), n, s)
                if len(np.unique(y[lab])) == C:
                    break
                s += 1000
            Xte, yte, Xl, yl = X[te], y[te], X[lab], y[lab]
            base = dict(dataset=ds, n=n, seed=seed)
            for name, sc, opts in LEARNERS:
                t = time.process_time()
                lr = fit_learner(sc, "classification", C, X[pool], Xl, yl, seed=seed * 100 + 1, **opts)
                p = lr.predict(Xte)
                P = p.probs_n_C.double().numpy()
                m = M.classification_metrics(P, yte)
                rows.append({**base, "learner": name, "acc": m["accuracy"], "nll": m["nll"], "ece": m["ece"],
                             "mean_conf": float(P.max(1).mean()), "cpu_s": time.process_time() - t})
                checks.append({**base, "learner": name, "ece_alkit": m["ece"], "ece_mine": my_ece(P, yte),
                               "nll_alkit": m["nll"], "nll_mine": my_nll(P, yte)})
                if name == "laplace" and "probit_probs_n_C" in p.extras:
                    Pp = p.extras["probit_probs_n_C"].double().numpy()
                    mp = M.classification_metrics(Pp, yte)
                    rows.append({**base, "learner": "laplace(probit extras)", "acc": mp["accuracy"], "nll": mp["nll"],
                                 "ece": mp["ece"], "mean_conf": float(Pp.max(1).mean())})
            Xm, Xs = X[pool].mean(0), X[pool].std(0) + 1e-8
            P0, P1, T = temp_scaled_lr((Xl - Xm) / Xs, yl, (Xte - Xm) / Xs, C, seed)
            for name, P in (("ref-logreg", P0), ("ref-logreg+T", P1)):
                m = M.classification_metrics(P, yte)
                rows.append({**base, "learner": name, "acc": m["accuracy"], "nll": m["nll"], "ece": m["ece"],
                             "mean_conf": float(P.max(1).mean()), "T": T})
            print(ds, n, seed, "done", flush=True)
    df = pd.DataFrame(rows)
    os.makedirs("results", exist_ok=True)
    df.to_csv(f"results/cls_{ds}.csv", index=False)
    pd.DataFrame(checks).to_csv(f"results/cls_checks_{ds}.csv", index=False)
    return df, pd.DataFrame(checks)


if __name__ == "__main__":
    ds = sys.argv[1]
    Ns = [int(a) for a in sys.argv[2:]] or [50, 200, 1000]
    df, ch = run(ds, Ns)
    print(df.groupby(["n", "learner"])[["acc", "nll", "ece", "mean_conf"]].mean().round(3).to_string())
    ch["d_ece"] = (ch.ece_alkit - ch.ece_mine).abs(); ch["d_nll"] = (ch.nll_alkit - ch.nll_mine).abs()
    print("max |ece diff|", ch.d_ece.max(), "max |nll diff|", ch.d_nll.max())
