"""Development set of image-encoder embeddings (`python benchmarks/fimg_dev_data.py`, then
benchmarks/protocol.py --data fimg_dev):  EfficientNet-Lite0 embeddings of Fashion-MNIST train-file rows permutation(60000)[3000:6000]
(disjoint from the report set `fashion`, rows [:3000]); stratified 30 % test split."""
from pathlib import Path
import numpy as np, polars as pl
from PIL import Image
from sklearn.model_selection import train_test_split
from alkit.datasets import FASHION_CLASSES, load_fashion_mnist
from alkit.embed import embed_values
d = Path(__file__).resolve().parent / "_work" / "fimg_dev"
(d / "images").mkdir(parents=True, exist_ok=True)
X, y = load_fashion_mnist("train")
idx = np.random.default_rng(0).permutation(60000)[3000:6000]
paths = []
for i in idx:
    p = d / "images" / f"t{i:05d}.png"
    if not p.exists():
        Image.fromarray(X[i]).save(p)
    paths.append(f"images/t{i:05d}.png")
ids = [f"t{i:05d}" for i in idx]
E, _ = embed_values(paths, ids, "image", cache_dir=d / "cache", base_dir=d, progress=False)
labels = [FASHION_CLASSES[y[i]] for i in idx]
te = set(train_test_split(np.arange(3000), test_size=0.3, stratify=[y[i] for i in idx], random_state=0)[1].tolist())
split = ["test" if k in te else "pool" for k in range(3000)]
pl.DataFrame({"id": ids, "label": labels, "split": split, "embedding": [list(map(float, e)) for e in E]}).with_columns(
    pl.col("embedding").cast(pl.List(pl.Float32))).write_parquet(Path(__file__).resolve().parent / "_work" / "data" / "fimg_dev.parquet")
print("ok", E.shape)
