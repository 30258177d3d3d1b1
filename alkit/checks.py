"""Value checks shared by the command line, the loop, the strategies and the library, in a module
with no imports beyond the standard library and alkit.choices, so that any of them can use it without loading torch."""

from __future__ import annotations

import numbers

from alkit.choices import SEED_MAX  # choices imports nothing: still no torch here


def is_whole_number(value: object) -> bool:
    """True for a Python or NumPy integer; False for bools (True is no batch size), floats (2.5 was cut
    to 2 unsaid, 2.0 failed inside NumPy), None and text: the one test every count and seed passes."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)  # numpy.bool_ is no Integral


def not_distribution_rows(p_n_C):  # noqa: ANN001, ANN201 - a NumPy array or a torch tensor, and the same kind back
    """Rows of class probabilities (n, C) that are no distribution: a NaN or inf, a value outside [0, 1]
    beyond 1e-6, or a sum off 1 by more than 1e-3 (a user's learner handing over logits, a broken row).
    Written with operators NumPy and torch share, so the acquisitions (torch) and the selectors (NumPy)
    refuse the same rows without this module importing either."""
    finite = (p_n_C == p_n_C) & (abs(p_n_C) != float("inf"))
    return ~finite.all(1) | (p_n_C < -1e-6).any(1) | (p_n_C > 1 + 1e-6).any(1) | (abs(p_n_C.sum(1) - 1) > 1e-3)


def distribution_problem(p_n_C) -> str | None:  # noqa: ANN001 - a NumPy array or a torch tensor
    """None where every row of ``p_n_C`` is a distribution, else the words naming the first row that is not
    (its index and first values, and how many such rows), which the loop and the acquisitions put in their
    errors alike."""
    bad_n = not_distribution_rows(p_n_C)
    count = int(bad_n.sum())
    if count == 0:
        return None
    i = int(bad_n.nonzero()[0][0])
    first = [round(float(v), 4) for v in p_n_C[i, :4]]
    return (f"row {i} of probs_n_C is not a distribution (finite values in [0, 1] summing to 1), e.g. {first}; "
            f"{count} such row{'s' if count != 1 else ''}")


MIN_IMAGE_SIDE = 3  # the image stem's smallest filters (alkit/models/backbone.py PatchConv.patch_for)


def image_dims(shape: tuple[int, ...] | list[int], n_features: int, option: str = "--image-shape") -> list[int]:
    """(H, W) or (C, H, W) -> [C, H, W], checked against the feature count (row-major, channels first); a
    ValueError naming ``option`` otherwise.  Shared by `alkit init` and the library's pool_learner, where a
    channels-last shape or a side below 3 failed deep in torch's patch extraction (a black-box check)."""
    shown = ",".join(map(str, shape))
    if len(shape) not in (2, 3) or any(not isinstance(v, numbers.Real) or int(v) != v or v < 1 for v in shape):
        raise ValueError(f"{option} must be H,W or C,H,W (positive integers), got {shown}")
    dims = [1, *map(int, shape)] if len(shape) == 2 else [int(v) for v in shape]
    size = dims[0] * dims[1] * dims[2]
    if size != n_features:
        raise ValueError(f"{option} {shown} holds {size} values but the data has {n_features} features")
    # 28,28,3 was read as 28 channels of 28 x 3 images, 4,4,3 as 4 channels of 4 x 3: a last side of 1-4 below both
    # others is a channel count
    if len(shape) == 3 and shape[2] <= 4 and shape[2] < min(shape[0], shape[1]):
        raise ValueError(f"{option} {shown} looks channels-last (H,W,C); alkit reads C,H,W with each channel's image "
                         f"stored in turn: pass {int(shape[2])},{int(shape[0])},{int(shape[1])} if the columns are laid "
                         "out so, and reorder columns that interleave the channels (R,G,B of each pixel) to channels "
                         "first")
    if min(dims[1:]) < MIN_IMAGE_SIDE:  # every run failed in the image stem's patch extraction
        raise ValueError(f"{option} {shown}: an image side below {MIN_IMAGE_SIDE} pixels is too small for the image "
                         f"stem's {MIN_IMAGE_SIDE} x {MIN_IMAGE_SIDE} filters; leave {option} out to treat the columns "
                         "as flat features")
    return dims


def check_seed(seed: object, name: str = "seed", limit: int = SEED_MAX) -> int:
    """A seed as a whole number in 0 .. ``limit`` (a run's: 2^31 - 1; a fit's: numpy's 2^32 - 1, as the loop
    derives them), else a ValueError naming ``name``: numpy's and torch's own words ('expected non-negative
    integer', 'int() argument must be ...') named neither the argument nor the range (a black-box check)."""
    if not is_whole_number(seed) or not 0 <= int(seed) <= limit:  # type: ignore[call-overload]
        raise ValueError(f"{name} must be a whole number in 0..{limit}, got {seed!r}")
    return int(seed)  # type: ignore[call-overload]


def column_names(X: object) -> list[str] | None:
    """The column names of a DataFrame (pandas or polars), None for an array."""
    columns = getattr(X, "columns", None)
    return None if columns is None else [str(c) for c in columns]


def check_columns(X: object, expected: list[str] | None, what: str) -> None:
    """A DataFrame ``X`` must have the columns the learner was built on, in that order: they were read by
    position, so a frame with its columns reordered got other items' probabilities and picks without a word
    (a black-box check).  Arrays are taken as they are."""
    got = column_names(X)
    if expected is None or got is None or got == expected:
        return
    if sorted(got) == sorted(expected):
        raise ValueError(f"{what}'s columns are the learner's in another order: reorder them as pool_learner saw "
                         f"them ({', '.join(expected[:6])}{' ...' if len(expected) > 6 else ''})")
    missing = [c for c in expected if c not in got][:5]
    extra = [c for c in got if c not in expected][:5]
    raise ValueError(f"{what}'s columns are not the ones the learner was built on (pool_learner's frame): "
                     f"missing {missing or 'none'}, not known {extra or 'none'}")
