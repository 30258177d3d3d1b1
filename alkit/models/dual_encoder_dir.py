"""A dual (image-text) encoder read from a local directory: `alkit run --scorer bayesvlm --model-dir DIR`.

Why a directory: nothing is downloaded at run time, so the model must already be on disk, and a
run records the directory and a fingerprint of its files (a changed model is a different run's
features).  Two layouts are read:

- Hugging Face (``config.json``): a ``CLIPModel`` or ``SiglipModel`` with its tokenizer and image
  processor, as ``save_pretrained`` writes them (``pip install 'alkit[vlm]'``).  The image
  features are the pre-projection inputs BayesVLM puts its posterior on
  (alkit/learners/dual_encoder.py ``HFDualEncoder``): CLIP's pooled vision output; SigLIP's
  pooling-head activation followed by the head's residual (``[a | offset]``, p + D columns).
- alkit (``alkit_dual_encoder.json`` + ``projections.npz``): linear projections over alkit's own
  frozen encoders (EfficientNet-Lite0 for images, MiniLM for texts), as
  examples/dual_encoder_fashion aligns them; image features are standardised with the statistics
  the alignment used.

``DualEncoderDir`` hands out the two projections, the logit scale and bias, image features for
a list of image files and pre-projection features for texts; it does no Bayesian work itself.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Literal, Sequence

import numpy as np
import torch

from alkit.learners.dual_encoder import LinearProjection, PreProjection, hf_dual_encoder

ALKIT_LAYOUT = "alkit_dual_encoder.json"
ALKIT_WEIGHTS = "projections.npz"
ALKIT_FORMAT = "alkit-dual-encoder"
Kind = Literal["clip", "siglip", "alkit"]
Advance = Callable[[int], None]


class ModelDirError(ValueError):
    """The model directory cannot be used; the message names the directory and what is wrong."""


def fingerprint(path: Path) -> str:
    """sha256 over every file's relative name and content, 16 hex digits: the identity of a model
    directory (the feature cache is keyed by it).  Hashed once per process while no file's size or
    modification time changes."""
    files = sorted(p for p in path.rglob("*") if p.is_file())
    return _content_hash(path, tuple((str(f.relative_to(path)), f.stat().st_size, f.stat().st_mtime_ns) for f in files))


@lru_cache(maxsize=8)
def _content_hash(path: Path, listing: tuple[tuple[str, int, int], ...]) -> str:
    h = hashlib.sha256()
    for name, _, _ in listing:
        h.update(name.encode() + b"\0")
        with open(path / name, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def _load_images(paths: Sequence[str]) -> list[Any]:
    from PIL import Image, UnidentifiedImageError

    out = []
    for p in paths:
        try:
            with Image.open(p) as img:
                out.append(img.convert("RGB"))
        except (OSError, UnidentifiedImageError) as exc:
            raise ModelDirError(f"image {p} could not be read: {exc}") from None
    return out


@dataclass(eq=False)  # hashed by identity: one object per loaded directory (open_model_dir caches it)
class DualEncoderDir:
    """A loaded model directory.  ``image_features`` and ``text_inputs`` give the inputs of the
    two projections; ``image_dim`` is p, the width of ``a`` (SigLIP's features carry D more
    columns: the residual added after the projection)."""

    path: Path
    kind: Kind
    fingerprint: str
    image_projection: LinearProjection
    text_projection: LinearProjection
    logit_scale: float
    logit_bias: float
    _image: Callable[[Sequence[str], Advance], np.ndarray] = field(repr=False)
    _text: Callable[[Sequence[str]], PreProjection] = field(repr=False)

    @property
    def image_dim(self) -> int:
        return int(self.image_projection.weight_D_p.shape[1])

    @property
    def feature_dim(self) -> int:
        """Columns of ``image_features``: p, plus D for a model with a residual (SigLIP)."""
        return self.image_dim + (int(self.image_projection.weight_D_p.shape[0]) if self.kind == "siglip" else 0)

    def image_features(self, paths: Sequence[str], advance: Advance = lambda k: None) -> np.ndarray:
        """(n, feature_dim) float32 for the image files ``paths``, in order."""
        return self._image(paths, advance)

    def text_inputs(self, texts: Sequence[str]) -> PreProjection:
        return self._text(texts)


def _hf(path: Path, fp: str) -> DualEncoderDir:
    try:
        import transformers
    except ImportError:
        raise ModelDirError("a Hugging Face model directory needs transformers: pip install 'alkit[vlm]'") from None
    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()
    try:
        model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001  (transformers raises many kinds; the message says which)
        raise ModelDirError(f"--model-dir {path}: the model could not be loaded ({type(exc).__name__}: "
                            f"{str(exc).splitlines()[0] if str(exc) else ''})") from None
    try:
        adapter = hf_dual_encoder(model)
    except ValueError as exc:
        raise ModelDirError(f"--model-dir {path}: {exc}") from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise ModelDirError(f"--model-dir {path} has no usable tokenizer ({type(exc).__name__}); save one "
                            "there with tokenizer.save_pretrained") from None
    try:
        processor = transformers.AutoImageProcessor.from_pretrained(path, local_files_only=True)
    except Exception as exc:  # noqa: BLE001
        raise ModelDirError(f"--model-dir {path} has no usable image processor ({type(exc).__name__}); save "
                            "one there with image_processor.save_pretrained") from None
    max_len = int(getattr(model.config.text_config, "max_position_embeddings", 77))
    padding = "max_length" if adapter.kind == "siglip" else True  # SigLIP was trained on padded prompts

    @torch.no_grad()
    def image(paths: Sequence[str], advance: Advance) -> np.ndarray:
        rows = []
        for i in range(0, len(paths), 32):
            pixels = processor(images=_load_images(paths[i:i + 32]), return_tensors="pt")["pixel_values"]
            x = adapter.image_inputs(pixels)
            rows.append(x.a_n_p if x.offset_n_D is None else torch.cat([x.a_n_p, x.offset_n_D], 1))
            advance(len(pixels))
        return torch.cat(rows).float().numpy() if rows else np.zeros((0, 0), np.float32)

    @torch.no_grad()
    def text(texts: Sequence[str]) -> PreProjection:
        tok = tokenizer(list(texts), padding=padding, max_length=max_len, truncation=True, return_tensors="pt")
        first: dict[tuple[int, ...], str] = {}
        for t, row in zip(texts, tok["input_ids"].tolist()):
            other = first.setdefault(tuple(row), t)
            if other != t:  # a directory without tokenizer files loads an empty one: every class prompt the same
                raise ModelDirError(f"--model-dir {path}: its tokenizer reads {other!r} and {t!r} as the same tokens "
                                    f"(a vocabulary of {len(tokenizer)}), so their classes cannot be told apart; save "
                                    "the model's own tokenizer there with tokenizer.save_pretrained")
        return adapter.text_inputs(tok["input_ids"], tok.get("attention_mask"))

    return DualEncoderDir(path, adapter.kind, fp, adapter.image_projection(), adapter.text_projection(),
                          adapter.logit_scale, adapter.logit_bias, image, text)


def _alkit(path: Path, fp: str) -> DualEncoderDir:
    try:
        meta = json.loads((path / ALKIT_LAYOUT).read_text(encoding="utf-8"))
        z = np.load(path / ALKIT_WEIGHTS)
        P, Q = z["image_weight"], z["text_weight"]
        mean, std = z["image_mean"], z["image_std"]
    except (OSError, ValueError, KeyError) as exc:
        raise ModelDirError(f"--model-dir {path}: {ALKIT_LAYOUT} / {ALKIT_WEIGHTS} unreadable ({exc})") from None
    if meta.get("format") != ALKIT_FORMAT:
        raise ModelDirError(f"--model-dir {path}: {ALKIT_LAYOUT} is not an {ALKIT_FORMAT} file")
    if P.shape[0] != Q.shape[0] or P.shape[1] != mean.shape[0] or mean.shape != std.shape:
        raise ModelDirError(f"--model-dir {path}: projection shapes {P.shape}, {Q.shape} and image statistics "
                            f"{mean.shape} do not fit together")
    image_size = int(meta.get("image_size", 224))
    std = np.where(std > 0, std, 1.0)

    def image(paths: Sequence[str], advance: Advance) -> np.ndarray:
        from alkit.encoders import encode_images

        X = encode_images(list(paths), image_size=image_size, progress=False)
        advance(len(paths))
        return ((X - mean) / std).astype(np.float32)

    def text(texts: Sequence[str]) -> PreProjection:
        from alkit.encoders import encode_texts

        return PreProjection(torch.as_tensor(encode_texts(list(texts), progress=False), dtype=torch.float64))

    scale = float(meta.get("logit_scale", math.e ** 2))
    return DualEncoderDir(path, "alkit", fp, LinearProjection(torch.as_tensor(P, dtype=torch.float64)),
                          LinearProjection(torch.as_tensor(Q, dtype=torch.float64)), scale, 0.0, image, text)


def check_model_dir(path: str | Path) -> Path:
    """The directory, resolved, if it holds one of the two layouts; else a ModelDirError naming it."""
    p = Path(path).expanduser()
    if p.exists() and not p.is_dir():
        raise ModelDirError(f"--model-dir {path} is a file: give the folder save_pretrained wrote the model into")
    if not p.is_dir():
        raise ModelDirError(f"--model-dir {path} does not exist (alkit never downloads a model: save one there "
                            "with save_pretrained)")
    if not (p / "config.json").is_file() and not (p / ALKIT_LAYOUT).is_file():
        raise ModelDirError(f"--model-dir {path} holds neither a Hugging Face model (config.json) nor an alkit "
                            f"dual encoder ({ALKIT_LAYOUT})")
    return p.resolve()


@lru_cache(maxsize=2)
def _open(path: Path, fp: str) -> DualEncoderDir:
    return _alkit(path, fp) if (path / ALKIT_LAYOUT).is_file() else _hf(path, fp)


def open_model_dir(path: str | Path) -> DualEncoderDir:
    """Load (once per process and content) the dual encoder in ``path``."""
    p = check_model_dir(path)
    return _open(p, fingerprint(p))


def save_alkit_dual_encoder(path: Path, image_weight_D_p: np.ndarray, text_weight_D_q: np.ndarray,
                            logit_scale: float, image_mean_p: np.ndarray, image_std_p: np.ndarray, *,
                            image_size: int = 224) -> None:
    """Write the alkit layout (used by examples/dual_encoder_fashion to hand its aligned model to
    `alkit run`)."""
    path.mkdir(parents=True, exist_ok=True)
    np.savez(path / ALKIT_WEIGHTS, image_weight=np.asarray(image_weight_D_p, np.float64),
             text_weight=np.asarray(text_weight_D_q, np.float64), image_mean=np.asarray(image_mean_p, np.float64),
             image_std=np.asarray(image_std_p, np.float64))
    meta = {"format": ALKIT_FORMAT, "version": 1, "image_encoder": "efficientnet-lite0", "image_size": image_size,
            "text_encoder": "all-MiniLM-L6-v2", "logit_scale": float(logit_scale)}
    (path / ALKIT_LAYOUT).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
