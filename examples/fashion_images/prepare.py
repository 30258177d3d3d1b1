"""Write images/*.png and fashion.csv (id, path, label) from Fashion-MNIST's test split.

The images come from the Debian package dataset-fashion-mnist; N (default 2000) of them,
a seeded sample, so users see the real flow: image files on disk -> `alkit init --image-col`.
"""

import os
import sys
from pathlib import Path

import numpy as np
from PIL import Image

from alkit.datasets import FASHION_CLASSES, load_fashion_mnist

n = int(os.environ.get("N", sys.argv[1] if len(sys.argv) > 1 else 2000))
here = Path(__file__).parent
(here / "images").mkdir(exist_ok=True)
X, y = load_fashion_mnist("test")
idx = np.random.default_rng(0).permutation(len(y))[:n]
rows = ["id,path,label"]
for i in idx:
    path = here / "images" / f"f{i:05d}.png"
    if not path.exists():
        Image.fromarray(X[i]).save(path)
    rows.append(f"f{i:05d},images/f{i:05d}.png,{FASHION_CLASSES[y[i]].replace('/', '-')}")
(here / "fashion.csv").write_text("\n".join(rows) + "\n")
print(f"wrote {n} images and fashion.csv")
