"""`--backbone MODULE:FUNCTION`: the user's own network as the feature extractor of every learner.

The function takes the number of features (or, for an image-shaped project, its (C, H, W) shape)
and returns a ``torch.nn.Module`` whose output is the feature vector phi (n, d).  alkit wraps it
like its own backbones: inputs standardised with the pool's statistics (``fixed``), the user's
module as the trained part (``trainable``), d found by one forward pass.

Its output is multiplied by one fixed number, set at initialisation so that the mean feature norm on
a sample of pool inputs (the labelled inputs where a caller gives no pool sample) is ``norm``
(``BackboneConfig.module_norm``; 0 keeps the network's own scale).  The same measurement refuses a
network whose outputs are NaN or all zero in training mode.  Why: the heads' optimisers move each weight by about the learning rate per step, so the
logits a network can reach in a fit's few hundred steps scale with its feature norm.  A network in
PyTorch's default initialisation ending in Linear + ReLU gives norms near 0.5-1 (alkit's own
backbones: about 3), and VBLL on it stayed near-uniform (the own_model example's CNN: NLL 1.65 at
100 digit labels; benchmarks/results/user_backbone_scale.md).  The reference is
``package.module:function`` (importable from the current folder or the project folder) or
``path/to/file.py:function``, and it is recorded with the run: a resumed run imports it again.
"""

from __future__ import annotations

import copy
import importlib
import importlib.util
import math
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch
from torch import nn


class BackboneImportError(ValueError):
    """The user's backbone reference cannot be imported or called; the message says why."""


# Folders a reference is also looked for in, after the current one: the project folder of the run being
# driven (ActiveLoop adds it), so a module kept beside alkit.toml is found from any folder, as the README
# says, and a run started in the project resumes from elsewhere.  Like sys.path, which import reads.
PROJECT_DIRS: list[Path] = []


def search_project(root: Path) -> None:
    """Look for --backbone / --learner references in ``root`` too (after the current folder)."""
    root = Path(root).resolve()
    if root not in PROJECT_DIRS:
        PROJECT_DIRS.append(root)


def load_factory(ref: str, search: tuple[Path, ...] = (), flag: str = "--backbone") -> Callable[..., Any]:
    """The function a ``MODULE:FUNCTION`` or ``FILE.py:FUNCTION`` reference names (``flag``: the
    option the user gave it with, for the messages), looked for in the current folder, then ``search``
    and the PROJECT_DIRS."""
    search = (*search, *PROJECT_DIRS)
    target, sep, func = ref.rpartition(":")
    if not sep or not target or not func:
        raise BackboneImportError(f"{flag} {ref!r}: write it as module:function or path/to/file.py:function")
    try:
        if target.endswith(".py"):
            path = _file_of(target, search)
            spec = importlib.util.spec_from_file_location(f"alkit_user_backbone_{path.stem}", path)
            if spec is None or spec.loader is None or not path.is_file():
                raise BackboneImportError(f"{flag} {ref!r}: no file {path}")
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        else:
            for p in (Path.cwd(), *search):
                if str(p) not in sys.path:
                    sys.path.append(str(p))
            module = importlib.import_module(target)
    except BackboneImportError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to import the user's code is reported by name
        raise BackboneImportError(f"{flag} {ref!r} cannot be imported: {type(exc).__name__}: {exc}") from None
    factory = getattr(module, func, None)
    if not callable(factory):
        raise BackboneImportError(f"{flag} {ref!r}: {target} has no function {func!r}")
    return factory


def canonical_ref(ref: str, root: Path) -> str:
    """A ``FILE.py:FUNCTION`` reference in one spelling, so one file is one run whatever folder the command was
    typed in (``m.py:f`` in the project, ``proj/m.py:f`` beside it, ``./m.py:f`` made two runs and two curves):
    a file inside the project folder by its path from there, one outside by its absolute path.  Module references
    and files that cannot be found are left as given (loading them is refused by name)."""
    target, sep, func = ref.rpartition(":")
    if not sep or not target.endswith(".py"):
        return ref
    path = _file_of(target, (Path(root).resolve(),))
    if not path.is_file():
        return ref
    path, root = path.resolve(), Path(root).resolve()
    return f"{path.relative_to(root).as_posix() if path.is_relative_to(root) else path}:{func}"


def _file_of(target: str, search: tuple[Path, ...]) -> Path:
    """A ``FILE.py`` target resolved against the current folder, then ``search``."""
    path = Path(target).expanduser()
    if not path.is_absolute():
        path = next((p / path for p in (Path.cwd(), *search) if (p / path).is_file()), path)
    return path


def source_digest(ref: str, search: tuple[Path, ...] = ()) -> str:
    """A short hash of the source file a ``MODULE:FUNCTION`` / ``FILE.py:FUNCTION`` reference names ('' when
    it cannot be found).  Recorded with a run, so a resumed run whose network or estimator file was edited
    is refused instead of continuing, silently, with another model (seen: a layer of width 32 became 7)."""
    import hashlib

    search = (*search, *PROJECT_DIRS)
    target = ref.rpartition(":")[0]
    try:
        if target.endswith(".py"):
            path = _file_of(target, search)
        else:
            for p in (Path.cwd(), *search):
                if str(p) not in sys.path:
                    sys.path.append(str(p))
            spec = importlib.util.find_spec(target)
            path = Path(spec.origin) if spec is not None and spec.origin else Path()
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else ""
    except Exception:  # noqa: BLE001 - an unresolvable reference is refused by load_factory, not here
        return ""


PROBE_RANDOM = 64  # random rows the output is checked on where no pool inputs are given (2 rows of a small
# ReLU network can both give all-zero outputs by chance; 64 cannot, unless the network is dead)


class UserBackbone(nn.Module):
    """x (n, f) -> standardised -> the user's module -> phi (n, out_dim)."""

    def __init__(self, net: nn.Module, mean_f: torch.Tensor, std_f: torch.Tensor,
                 image_shape: tuple[int, ...] | None = None, *, norm: float = 0.0,
                 probe_n_f: torch.Tensor | None = None) -> None:
        super().__init__()
        if not isinstance(net, nn.Module):
            raise BackboneImportError(f"the backbone function returned {type(net).__name__}, not a torch.nn.Module")
        self.net = net
        self.image_shape = tuple(image_shape) if image_shape else None
        self.register_buffer("x_mean", mean_f.float())
        self.register_buffer("x_std", torch.where(std_f > 1e-8, std_f, torch.ones_like(std_f)).float())
        self.register_buffer("out_scale", torch.ones(()))
        with torch.no_grad():  # a probe: a tuple, NaNs or an error failed only at the first fit, labels spent
            was = net.training
            net.eval()
            try:
                out = self._call(torch.randn(2, len(mean_f), generator=torch.Generator().manual_seed(0)))
            except Exception as exc:  # noqa: BLE001 - the user's code: named, in one line
                raise BackboneImportError(f"the backbone failed on a probe batch: {type(exc).__name__}: {exc}") from None
            finally:
                net.train(was)
        if not isinstance(out, torch.Tensor):
            raise BackboneImportError(f"the backbone must return a tensor of (n, d) features, it returned {type(out).__name__}")
        if out.ndim != 2 or out.shape[0] != 2:
            raise BackboneImportError(f"the backbone must return (n, d) features, it returned shape {tuple(out.shape)}")
        if out.dtype != torch.float32:  # float64 features failed in the heads' first matmul, after a batch was spent
            raise BackboneImportError(f"the backbone returned {str(out.dtype).replace('torch.', '')} features; alkit's "
                                      "heads are float32: return float32 (e.g. drop .double())")
        if not torch.isfinite(out).all():
            raise BackboneImportError("the backbone returned NaN or infinite features on a probe batch")
        self.out_dim = int(out.shape[1])
        if probe_n_f is None:  # no pool inputs (the plan's check): PROBE_RANDOM rows standardised to N(0, 1)
            z = torch.randn(PROBE_RANDOM, len(mean_f), generator=torch.Generator().manual_seed(1))
            probe_n_f = z * self.x_std + self.x_mean
        mean = self._mean_norm(probe_n_f)
        if not math.isfinite(mean):
            raise BackboneImportError(f"the backbone returned NaN or infinite features in training mode on {len(probe_n_f)} inputs")
        if mean <= 1e-8:  # ReLU outputs all zero pass no gradient: such a network never learns
            raise BackboneImportError(f"the backbone returned all-zero features on {len(probe_n_f)} inputs at "
                                      "initialisation (no gradient reaches its weights); check its last layers")
        if norm > 0:
            self.out_scale.fill_(norm / mean)

    def _mean_norm(self, probe_n_f: torch.Tensor) -> float:
        """The mean feature norm of the user's module at initialisation on ``probe_n_f`` (raw inputs),
        in training mode, as the first training steps see it (batch norm at initialisation in
        evaluation mode does not normalise: its running statistics are 0 and 1), on a copy, so that no
        running statistic moves, in chunks of near-equal size (at most 64 rows; batch norm in training
        mode refuses a chunk of one), with the global random state restored afterwards (dropout draws
        from it).  The first chunk also goes backward (on the copy), so that a module whose backward
        fails is named here, before a run spends labels, not at its first fit."""
        net = copy.deepcopy(self.net).train()
        chunks = torch.tensor_split(probe_n_f, max(1, math.ceil(len(probe_n_f) / 64)))
        outs = []
        with torch.random.fork_rng(devices=[]):
            for i, b in enumerate(chunks):
                step = "forward"
                try:
                    with torch.set_grad_enabled(i == 0):
                        out = self._call(self.fixed(b.float()), net)
                        if i == 0 and out.requires_grad:
                            step = "backward"
                            out.sum().backward()
                except Exception as exc:  # noqa: BLE001 - the user's code: named, in one line
                    raise BackboneImportError(f"the backbone failed in training mode ({step}) on {len(b)} inputs: "
                                              f"{type(exc).__name__}: {exc}") from None
                outs.append(out.detach())
        out = torch.cat(outs)  # one chunk at least (tensor_split), maybe of no rows
        return float(out.norm(dim=1).mean()) if len(out) else 0.0

    def forward(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return self.trainable(self.fixed(x_n_f))

    def fixed(self, x_n_f: torch.Tensor) -> torch.Tensor:
        return (x_n_f - self.x_mean) / self.x_std

    def trainable(self, z_n_f: torch.Tensor) -> torch.Tensor:
        return self._raw(z_n_f) * self.out_scale

    def _call(self, z_n_f: torch.Tensor, net: nn.Module | None = None) -> torch.Tensor:
        return (self.net if net is None else net)(z_n_f.reshape(-1, *self.image_shape) if self.image_shape else z_n_f)

    def _raw(self, z_n_f: torch.Tensor, net: nn.Module | None = None) -> torch.Tensor:
        """The user's module (or ``net``) on standardised inputs, image-shaped where the project is.  An error
        in it (in training or scoring, past the probe at initialisation) is named as the backbone's, in one line:
        it came out as a traceback of alkit's loop."""
        try:
            return self._call(z_n_f, net)
        except Exception as exc:  # noqa: BLE001 - the user's code
            raise BackboneImportError(f"the backbone failed on a batch of {len(z_n_f)} inputs: "
                                      f"{type(exc).__name__}: {exc}") from None


def build_user_backbone(ref: str, n_features: int, image_shape: tuple[int, ...] | None, mean_f: Any,
                        std_f: Any, *, norm: float = 0.0, probe_n_f: Any = None) -> UserBackbone:
    """The user's network ``ref`` wrapped (see UserBackbone); ``norm`` > 0 scales its output to that
    mean norm on ``probe_n_f`` (raw pool inputs) at initialisation."""
    factory = load_factory(ref)
    try:
        net = factory(tuple(image_shape) if image_shape else n_features)
    except Exception as exc:  # noqa: BLE001
        raise BackboneImportError(f"--backbone {ref!r} failed when called: {type(exc).__name__}: {exc}") from None
    try:
        probe = None if probe_n_f is None else torch.as_tensor(np.asarray(probe_n_f), dtype=torch.float32)
        return UserBackbone(net, torch.as_tensor(mean_f, dtype=torch.float32),
                            torch.as_tensor(std_f, dtype=torch.float32), image_shape, norm=norm, probe_n_f=probe)
    except BackboneImportError as exc:
        raise BackboneImportError(f"--backbone {ref!r}: {exc}") from None
