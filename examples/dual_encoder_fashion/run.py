"""A small dual encoder aligned here, then BayesVLM uncertainty and active learning on it.

1. Fashion-MNIST images -> PNG files -> alkit.encoders.encode_images (EfficientNet-Lite0, frozen);
   five hand-written descriptions per class -> alkit.encoders.encode_texts (MiniLM, frozen).
   Features are cached under .cache/ (gitignored), so reruns skip the encoders.
2. Two linear projections (image 1280 -> D, text 384 -> D) are trained contrastively (InfoNCE,
   both directions) on an alignment split that holds only 7 of the 10 classes.
3. BayesVLM (alkit.learners.dual_encoder): KFAC Laplace on both projections, evidence-tuned
   prior, ProbCosine + probit.  Zero-shot over all 10 class prompts on the test split: accuracy
   (seen / unseen classes), NLL, ECE; AUROC of the epistemic scores for unseen-class (OOD) images
   and for misclassifications.
4. Active learning on a pool with all 10 classes: DualEncoderLearner fine-tunes the image
   projection on the labels; epistemic selection (top-k 'var', top-k 'mi', diverse) against
   random, a few cycles and seeds, accuracy on the test split.

Run:  .venv/bin/python examples/dual_encoder_fashion/run.py   (about 5 minutes on 2 cores cold)
Needs: pip install 'alkit[text,image]' and the Debian package dataset-fashion-mnist.
"""

from __future__ import annotations

import argparse
import dataclasses
import gzip
import json
import math
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.metrics import roc_auc_score

from alkit import metrics
from alkit.learners.dual_encoder import (
    BayesVLM, DualEncoderLearner, LinearProjection, PreProjection, fit_kron_posterior, infonce_kfac,
)
from alkit.encoders import encode_images, encode_texts
from alkit.strategies import get_selector
from alkit.types import Candidates, SelectionContext

HERE = Path(__file__).resolve().parent
FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
SEEN = [0, 1, 2, 3, 4, 5, 6]  # the alignment split never shows 7 (sneaker), 8 (bag), 9 (ankle boot)
DESCRIPTIONS = [
    ["a t-shirt", "a short-sleeved cotton top", "a casual tee", "a plain t-shirt with short sleeves", "a simple summer top"],
    ["a pair of trousers", "long pants", "a pair of jeans", "slacks with two long legs", "denim trousers"],
    ["a pullover", "a knitted sweater", "a warm jumper with long sleeves", "a wool pullover sweater", "a cozy knit top"],
    ["a dress", "a one-piece dress for women", "an elegant evening gown", "a sleeveless summer dress", "a long flowing dress"],
    ["a coat", "a winter coat with buttons", "a warm jacket", "an overcoat", "a long outerwear jacket"],
    ["a sandal", "an open-toed summer sandal", "strappy sandals", "a flip-flop", "a flat sandal for the beach"],
    ["a shirt", "a button-down shirt with a collar", "a formal dress shirt", "a long-sleeved blouse", "a checked flannel shirt"],
    ["a sneaker", "a running shoe", "a sports trainer", "a canvas athletic shoe", "a low-top sneaker"],
    ["a bag", "a handbag", "a leather purse", "a tote bag", "a shoulder bag"],
    ["an ankle boot", "a short leather boot", "a heeled ankle bootie", "a winter boot", "a chelsea boot"],
]


# ------------------------------------------------------------------------------------ data


def read_idx(split: str) -> tuple[np.ndarray, np.ndarray]:
    prefix = "train" if split == "train" else "t10k"
    img_path, lab_path = FASHION_DIR / f"{prefix}-images-idx3-ubyte.gz", FASHION_DIR / f"{prefix}-labels-idx1-ubyte.gz"
    if not img_path.exists():
        raise SystemExit(f"{img_path} not found: apt-get install dataset-fashion-mnist")
    with gzip.open(img_path) as f:
        imgs = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(lab_path) as f:
        labels = np.frombuffer(f.read(), np.uint8, offset=8).astype(np.int64)
    return imgs, labels


def splits(n_align: int, n_pool: int, n_test: int) -> dict[str, tuple[str, np.ndarray]]:
    """Fixed index splits (seed 0): align = seen classes only; pool, test = all classes."""
    rng = np.random.default_rng(0)
    _, y_train = read_idx("train")
    perm = rng.permutation(len(y_train))
    seen_idx = perm[np.isin(y_train[perm], SEEN)][:n_align]
    rest = np.setdiff1d(perm, seen_idx, assume_unique=True)
    pool_idx = rng.permutation(rest)[:n_pool]
    test_idx = np.random.default_rng(1).permutation(10000)[:n_test]
    return {"align": ("train", seen_idx), "pool": ("train", pool_idx), "test": ("test", test_idx)}


def image_features(name: str, source: str, idx: np.ndarray, cache: Path, image_size: int) -> tuple[np.ndarray, np.ndarray]:
    """PNG files written once, then EfficientNet-Lite0 features (cached)."""
    from PIL import Image

    feat_path = cache / f"img_{name}_{len(idx)}_{image_size}.npz"
    if feat_path.exists():
        z = np.load(feat_path)
        return z["X"], z["y"]
    imgs, labels = read_idx(source)
    png_dir = cache / "png" / source
    png_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in idx:
        p = png_dir / f"{i:05d}.png"
        if not p.exists():
            Image.fromarray(imgs[i], mode="L").save(p)
        paths.append(p)
    X = encode_images(paths, batch_size=64, image_size=image_size)
    np.savez(feat_path, X=X, y=labels[idx])
    return X, labels[idx]


def text_features(cache: Path) -> np.ndarray:
    """(10, 5, 384) MiniLM features of the class descriptions (cached)."""
    path = cache / "text_descriptions.npy"
    flat = [d for ds in DESCRIPTIONS for d in ds]
    if path.exists():
        return np.load(path)
    T = encode_texts(flat, batch_size=64).reshape(10, 5, -1)
    np.save(path, T)
    return T


LABEL_NAMES = ["t-shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag", "ankle boot"]


def export_csv(path: Path, sp: dict[str, tuple[str, np.ndarray]]) -> None:
    """The pool and test images as a CSV `alkit init --image-col path --split-col split` reads
    (paths relative to the CSV, which lies in the cache folder beside the PNG files)."""
    import csv

    rows = []
    for name in ("pool", "test"):
        source, idx = sp[name]
        _, labels = read_idx(source)
        for i in idx:
            rows.append((f"{source}-{i}", f"png/{source}/{i:05d}.png", LABEL_NAMES[labels[i]], name))
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([("id", "path", "label", "split"), *rows])
    print(f"wrote {len(rows)} rows to {path}", flush=True)


# ------------------------------------------------------------------------------ alignment


def train_projections(
    A_n_p: torch.Tensor, y_n: torch.Tensor, T_C_K_q: torch.Tensor, *, dim: int, steps: int, seed: int
) -> tuple[LinearProjection, LinearProjection, float]:
    """Contrastive training of P (dim, p) and Q (dim, q) on image/description pairs.

    Each step: a batch of images, one random description per seen class; InfoNCE image->class
    over the seen descriptions plus description->image over the batch (positives = the class's
    images, averaged); a learned logit scale, as CLIP."""
    g = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    p, q = A_n_p.shape[1], T_C_K_q.shape[-1]
    P = (torch.randn(dim, p, generator=g) / math.sqrt(p)).requires_grad_(True)
    Q = (torch.randn(dim, q, generator=g) / math.sqrt(q)).requires_grad_(True)
    log_s = torch.tensor(math.log(10.0), requires_grad=True)
    opt = torch.optim.AdamW([P, Q, log_s], lr=3e-3, weight_decay=1e-2)
    seen = torch.tensor(SEEN)
    remap = torch.full((10,), -1, dtype=torch.long)
    remap[seen] = torch.arange(len(SEEN))
    for _ in range(steps):
        b = torch.randint(0, A_n_p.shape[0], (256,), generator=g)
        k = torch.randint(0, T_C_K_q.shape[1], (len(SEEN),), generator=g)
        t = T_C_K_q[seen, k]  # (7, q)
        gi = torch.nn.functional.normalize(A_n_p[b] @ P.T, dim=-1)
        ht = torch.nn.functional.normalize(t @ Q.T, dim=-1)
        s = log_s.clamp(max=math.log(100.0)).exp()
        logits = s * gi @ ht.T  # (256, 7)
        yb = remap[y_n[b]]
        loss_i = torch.nn.functional.cross_entropy(logits, yb)
        pos = (yb[None, :] == torch.arange(len(SEEN))[:, None]).float()  # (7, 256)
        logp_t = logits.T.log_softmax(-1)
        loss_t = -((pos * logp_t).sum(-1) / pos.sum(-1).clamp_min(1))[pos.sum(-1) > 0].mean()
        loss = 0.5 * (loss_i + loss_t)
        opt.zero_grad()
        loss.backward()
        opt.step()
    s = float(log_s.detach().clamp(max=math.log(100.0)).exp())
    return LinearProjection(P.detach().double()), LinearProjection(Q.detach().double()), s


def fit_bayes_vlm(
    img: PreProjection, y_n: torch.Tensor, texts_C_K_q: torch.Tensor, P: LinearProjection, Q: LinearProjection,
    s: float, *, seed: int,
):
    """KFAC Laplace on both projections from the alignment pairs (label-free GGNs)."""
    seen = torch.tensor(SEEN)
    prompts_seen = PreProjection(texts_C_K_q[seen].mean(1))
    img_fac = infonce_kfac(img, P, Q(prompts_seen), s)
    # text side: each seen description against batches of 256 image embeddings (text->image)
    g = torch.Generator().manual_seed(seed)
    desc = PreProjection(texts_C_K_q[seen].reshape(-1, texts_C_K_q.shape[-1]))
    emb = P(img)
    txt_fac = None
    for _ in range(8):
        batch = emb[torch.randint(0, len(img), (256,), generator=g)]
        f = infonce_kfac(desc, Q, batch, s)
        txt_fac = f if txt_fac is None else txt_fac + f
    post_img = fit_kron_posterior(img_fac, P)
    post_txt = fit_kron_posterior(txt_fac, Q)
    return BayesVLM(P, Q, post_img, post_txt, s), img_fac


# ------------------------------------------------------------------------------ evaluation


def zero_shot_report(vlm: BayesVLM, X_test: torch.Tensor, y_test: np.ndarray, prompts: PreProjection) -> dict:
    x = PreProjection(X_test)
    out = vlm.zero_shot(x, prompts)
    out_full = vlm.zero_shot(x, prompts, covariance="full")
    out_img = dataclasses.replace(vlm, text_post=None).zero_shot(x, prompts)  # image uncertainty only
    det = dataclasses.replace(vlm, image_post=None, text_post=None).zero_shot(x, prompts)
    probs, probs_map = out.probs_n_C.numpy(), det.probs_n_C.numpy()
    pred = probs.argmax(1)
    seen = np.isin(y_test, SEEN)
    wrong = pred != y_test
    ent = lambda p: -(p * np.log(np.clip(p, 1e-12, 1))).sum(1)  # noqa: E731
    k = vlm.image_post.scale_n(X_test.double()).numpy()
    scores = {
        "var": out.var_n.numpy(), "mi": out.mi_n.numpy(),
        "var_full_cov": out_full.var_n.numpy(), "mi_full_cov": out_full.mi_n.numpy(),
        "var_image_only": out_img.var_n.numpy(), "mi_image_only": out_img.mi_n.numpy(),
        "image_k=a'A~^-1a": k, "feature_norm2": (X_test.double() ** 2).sum(1).numpy(),
        "map_entropy": ent(probs_map), "map_1-maxprob": 1 - probs_map.max(1),
    }
    rep = {
        "acc_all": metrics.accuracy(probs, y_test), "acc_seen": metrics.accuracy(probs[seen], y_test[seen]),
        "acc_unseen": metrics.accuracy(probs[~seen], y_test[~seen]),
        "acc_map": metrics.accuracy(probs_map, y_test),
        "nll_probit": metrics.nll(probs, y_test), "nll_map": metrics.nll(probs_map, y_test),
        "nll_mc": metrics.nll(out.probs_mc_n_C.numpy(), y_test),
        "ece_probit": metrics.ece(probs, y_test), "ece_map": metrics.ece(probs_map, y_test),
        "ece_mc": metrics.ece(out.probs_mc_n_C.numpy(), y_test),
        "ood_auroc": {k: float(roc_auc_score(~seen, v)) for k, v in scores.items()},
        "miscls_auroc_seen": {k: float(roc_auc_score(wrong[seen], v[seen])) for k, v in scores.items()},
        "miscls_auroc_all": {k: float(roc_auc_score(wrong, v)) for k, v in scores.items()},
        "prior_precision_img": vlm.image_post.prior_precision, "prior_precision_txt": vlm.text_post.prior_precision,
        "logit_scale": vlm.logit_scale,
    }
    return rep


def active_learning(
    vlm: BayesVLM, img_fac, prompts: PreProjection, X_pool: np.ndarray, y_pool: np.ndarray,
    X_test: np.ndarray, y_test: np.ndarray, *, strategies: list[str], seeds: list[int], cycles: int, batch: int,
    finetune_steps: int, finetune_prior: float,
) -> dict:
    curves: dict[str, list[list[float]]] = {s: [] for s in strategies}
    keys = np.arange(len(X_pool))
    for seed in seeds:
        for strat in strategies:
            score = {"topk_mi": "mi", "topk_embed": "embed"}.get(strat, "var")
            learner = DualEncoderLearner(vlm, prompts, img_fac, score=score, finetune_steps=finetune_steps,
                                         finetune_prior_precision=finetune_prior)
            selector = get_selector("topk" if strat.startswith("topk") else strat)
            labeled = np.zeros(0, dtype=np.int64)
            learner.fit(X_pool[labeled], y_pool[labeled], seed=seed)
            accs = [metrics.accuracy(learner.predict(X_test).probs_n_C, y_test)]
            for cycle in range(cycles):
                unl = np.setdiff1d(keys, labeled)
                ctx = SelectionContext(seed=seed * 1000 + cycle, n_pool=len(unl))
                if strat == "random":
                    cands = Candidates(keys_n=unl)
                else:
                    pred = learner.predict(X_pool[unl])
                    sc = pred.epistemic_n.numpy()
                    if strat == "diverse":  # the top-m by 'var', then greedy batch information
                        top = np.argsort(-sc, kind="stable")[: 10 * batch]
                        cands = Candidates(keys_n=unl[top], scores_n=sc[top], embedding_n_d=pred.embedding_n_d.numpy()[top])
                        ctx.posterior = learner.posterior()
                    else:
                        cands = Candidates(keys_n=unl, scores_n=sc)
                sel = selector.select(cands, batch, ctx)
                labeled = np.concatenate([labeled, sel.keys])
                learner.fit(X_pool[labeled], y_pool[labeled], seed=seed)
                accs.append(metrics.accuracy(learner.predict(X_test).probs_n_C, y_test))
            curves[strat].append(accs)
            print(f"  seed {seed} {strat:9s} acc " + " ".join(f"{a:.3f}" for a in accs), flush=True)
    n_lab = [batch * c for c in range(cycles + 1)]
    summary = {}
    for strat, runs in curves.items():
        arr = np.array(runs)
        summary[strat] = {
            "mean": arr.mean(0).round(4).tolist(), "std": arr.std(0).round(4).tolist(),
            "aulc_mean": float(np.mean([metrics.aulc(n_lab, r) for r in runs])),
            "aulc_std": float(np.std([metrics.aulc(n_lab, r) for r in runs])),
        }
    return {"n_labeled": n_lab, "strategies": summary, "curves": curves}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-align", type=int, default=3000)
    ap.add_argument("--n-pool", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=1000)
    ap.add_argument("--image-size", type=int, default=112)
    ap.add_argument("--dim", type=int, default=64, help="shared embedding dimension D")
    ap.add_argument("--align-steps", type=int, default=300)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--cycles", type=int, default=5)
    ap.add_argument("--batch", type=int, default=20)
    ap.add_argument("--finetune-steps", type=int, default=150)
    ap.add_argument("--finetune-prior", type=float, default=1.0,
                    help="anchor precision of fine-tuning at the aligned projection (the evidence-tuned "
                         "zero-shot prior, ~150 here, barely lets 100 labels move it)")
    ap.add_argument("--strategies", default="random,topk_var,topk_mi,topk_embed",
                    help="also: diverse (greedy batch information on the top-200 by 'var'; slow at p=1280)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1 is fastest on a shared machine)")
    ap.add_argument("--cache-dir", type=Path, default=HERE / ".cache")
    ap.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")
    ap.add_argument("--save-model", type=Path, default=None,
                    help="write seed 0's aligned dual encoder here (alkit layout) for `alkit run --model-dir`")
    ap.add_argument("--export-csv", action="store_true",
                    help="write <cache-dir>/fashion_images.csv (id, path, label, split of the pool and test images) "
                         "for `alkit init --image-col path --split-col split`")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.cache_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.time()

    sp = splits(args.n_align, args.n_pool, args.n_test)
    feats = {k: image_features(k, src, idx, args.cache_dir, args.image_size) for k, (src, idx) in sp.items()}
    if args.export_csv:
        export_csv(args.cache_dir / "fashion_images.csv", sp)
    T = text_features(args.cache_dir)
    t_enc = time.time() - t0
    print(f"features ready in {t_enc:.0f}s: " + ", ".join(f"{k} {v[0].shape}" for k, v in feats.items()), flush=True)

    # frozen preprocessing of the image features: standardised with alignment-split statistics
    Xa, ya = feats["align"]
    mu, sd = Xa.mean(0), Xa.std(0) + 1e-3
    std = lambda X: ((X - mu) / sd).astype(np.float32)  # noqa: E731
    Xa_t = torch.from_numpy(std(Xa))
    T_t = torch.from_numpy(T.astype(np.float32))

    prompts = PreProjection(T_t.double().mean(1))  # one prompt per class: the mean description feature
    Xt, yt = feats["test"]
    Xp, yp = feats["pool"]
    Xt_s, Xp_s = std(Xt), std(Xp)
    strategies = args.strategies.split(",")
    zero_shot, al_runs = [], []
    t_fit = t_al = 0.0
    for seed in range(args.seeds):  # each seed: its own alignment, posterior and AL runs
        t1 = time.time()
        P, Q, s = train_projections(Xa_t, torch.from_numpy(ya), T_t, dim=args.dim, steps=args.align_steps, seed=seed)
        vlm, img_fac = fit_bayes_vlm(PreProjection(Xa_t.double()), torch.from_numpy(ya), T_t.double(), P, Q, s, seed=seed)
        zero_shot.append(zero_shot_report(vlm, torch.from_numpy(Xt_s).double(), yt, prompts))
        if seed == 0 and args.save_model:
            from alkit.models.dual_encoder_dir import save_alkit_dual_encoder

            save_alkit_dual_encoder(args.save_model, P.weight_D_p.numpy(), Q.weight_D_p.numpy(), s, mu, sd,
                                    image_size=args.image_size)
            print(f"wrote the aligned dual encoder to {args.save_model}", flush=True)
        t_fit += time.time() - t1
        z = zero_shot[-1]
        print(f"seed {seed}: zero-shot acc {z['acc_all']:.3f} (seen {z['acc_seen']:.3f}, unseen {z['acc_unseen']:.3f}); "
              "OOD AUROC " + ", ".join(f"{k} {v:.3f}" for k, v in z["ood_auroc"].items()), flush=True)
        t2 = time.time()
        al_runs.append(active_learning(
            vlm, img_fac, prompts, Xp_s, yp, Xt_s, yt, strategies=strategies, seeds=[seed], cycles=args.cycles,
            batch=args.batch, finetune_steps=args.finetune_steps, finetune_prior=args.finetune_prior,
        ))
        t_al += time.time() - t2

    zs = summarise_zero_shot(zero_shot)
    print("zero-shot (mean ± std over seeds):")
    print(json.dumps(zs, indent=1, ensure_ascii=False))
    n_lab = al_runs[0]["n_labeled"]
    al = {"n_labeled": n_lab, "strategies": {}}
    print(f"active learning, test accuracy at {n_lab} labels (mean ± std over {args.seeds} seeds):")
    for strat in strategies:
        curves = np.array([r["curves"][strat][0] for r in al_runs])
        aulcs = [metrics.aulc(n_lab, c) for c in curves]
        al["strategies"][strat] = {"mean": curves.mean(0).round(4).tolist(), "std": curves.std(0).round(4).tolist(),
                                   "aulc_mean": float(np.mean(aulcs)), "aulc_std": float(np.std(aulcs))}
        print(f"  {strat:10s} " + " ".join(f"{m:.3f}±{sd_:.3f}" for m, sd_ in zip(curves.mean(0), curves.std(0)))
              + f"   AULC {np.mean(aulcs):.4f} ± {np.std(aulcs):.4f}")
    timing = {"encode_s": t_enc, "align_laplace_eval_s": t_fit, "active_learning_s": t_al, "total_s": time.time() - t0}
    print(f"timing: {json.dumps({k: round(v, 1) for k, v in timing.items()})}")
    if args.out:
        args.out.write_text(json.dumps({"zero_shot": zs, "zero_shot_per_seed": zero_shot, "active_learning": al,
                                        "timing": timing, "args": {k: str(v) for k, v in vars(args).items()}}, indent=1))


def summarise_zero_shot(reports: list[dict]) -> dict:
    """Mean and std over seeds of every number in the per-seed reports (nested dicts kept)."""
    out: dict = {}
    for key, val in reports[0].items():
        if isinstance(val, dict):
            out[key] = summarise_zero_shot([r[key] for r in reports])
        else:
            vals = np.array([r[key] for r in reports], dtype=float)
            out[key] = f"{vals.mean():.3f} ± {vals.std():.3f}"
    return out


if __name__ == "__main__":
    main()
