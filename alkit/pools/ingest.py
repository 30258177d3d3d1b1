"""`alkit init`: turn a CSV, TSV, JSON Lines or Parquet file into a project, or refuse with a named problem.

Everything is validated before anything is written; files are written under temporary names and
moved into place only after the store is filled, and alkit.toml is written last, so a failed
init leaves no half-made project behind.
"""

from __future__ import annotations

import json
import math
import os
import re
import secrets
import shlex
import shutil
import stat
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl

from alkit.checks import image_dims
from alkit.choices import (MISSING_LABELS, ROW_ID_NAMES, SEED_MAX, SKIP_LABEL, class_number, fold_case,
                           is_missing_label, is_skip_label, is_spreadsheet_error, zero_padded)
from alkit.config import (
    CONFIG_NAME,
    DEFAULT_DB,
    PROJECT_FORMAT,
    FEATURES_NAME,
    PAYLOAD_KEY,
    PAYLOAD_NAME,
    REGRESSION_LABEL_MAX,
    ProjectConfig,
    missing_indicator,
    load_project,
    resolve_store_url,
    store_identity,
    without_password,
    write_config,
)
from alkit.pools.commas import comma_hint, comma_kind
from alkit.pools.feature_hints import feature_hints
from alkit.pools.features import FeatureReader, FeatureWriter, write_features
from alkit.pools.labelfiles import is_queue_file
from alkit.pools.labelfiles._common import current_umask
from alkit.pools.ownership import id_text
from alkit.pools.procs import file_lock, pid_alive
from alkit.pools.store import Store
from alkit.pools.tables import JSON_LINES, InputError, TableSource, read_table  # noqa: F401 (InputError re-exported)


# what a missing cell looks like in a CSV: a label's missing markers, and 'none', '?', '-' (which a class may be called)
_MISSING_TOKENS = ('', *MISSING_LABELS, 'none', '?', '-')


@dataclass
class InitOptions:
    id_col: str  # "" (or None): no id column, the items are named by their row number (ROW_ID_NAMES)
    label_col: str
    features: list[str] | None = None
    feature_col: str | None = None
    task: Literal["classification", "regression"] | None = None
    test_frac: float | None = None  # None: DEFAULT_TEST_FRAC; an explicit value conflicts with split_col
    seed: int = 0
    store: str | None = None
    hide_labels: bool = False
    initial_labeled: int = 0
    max_classes: int = 100
    text_col: str | None = None  # encode this column with the frozen text encoder
    image_col: str | None = None  # encode the image paths in this column with the image encoder
    cache_dir: Path | None = None  # embedding cache (default: .alkit-cache beside the data file)
    allow_outside_paths: bool = False  # --image-col paths outside the data file's folder
    split_col: str | None = None  # column of test/pool(/train) marks: a given test split instead of --test-frac
    image_shape: tuple[int, ...] | None = None  # (H, W) or (C, H, W): the features are pixels of that image
    exclude: list[str] | None = None  # columns that are no features (kept in the payload for exports)
    impute: bool = False  # missing numeric cells: the pool's median plus a 0/1 feature COL=missing, instead of refused
    progress: bool = True
    classes: list[str] | None = None  # the classes, declared: a pool no one has labelled yet, or classes not yet seen


DEFAULT_TEST_FRAC = 0.2
SPLIT_VALUES = {"test": "test", "pool": "pool", "train": "pool"}  # split-column value -> split


def parse_image_shape(text: str) -> tuple[int, ...]:
    """'28,28' or '1,28,28' -> a tuple of ints; the rest of the checks need the data (init_project)."""
    try:
        shape = tuple(int(v.strip()) for v in text.split(","))
    except ValueError:
        raise InputError(f"--image-shape must be H,W or C,H,W (positive integers), got {text!r}") from None
    if len(shape) not in (2, 3) or min(shape) < 1:
        raise InputError(f"--image-shape must be H,W or C,H,W (positive integers), got {text!r}")
    return shape


_PIXEL_NAME = re.compile(r"^(?:px|pix|pixel)_?(\d+)(?:_(\d+))?$", re.IGNORECASE)


def _whole_number_counts(labels: list[str]) -> np.ndarray | None:
    """How often each distinct value occurs, where every label is a whole number; else None."""
    try:
        values = [float(v) for v in labels]
    except ValueError:
        return None
    if not values or any(v != int(v) for v in values):
        return None
    return np.unique(values, return_counts=True)[1]


def count_like_labels(labels: list[str], min_values: int = 10, skew: float = 5.0) -> bool:
    """Whether class labels look like a count or an amount rather than class codes: at least
    ``min_values`` distinct whole numbers whose most frequent value is at least ``skew`` times as
    frequent as the median one (a zero-inflated or long-tailed count; class codes such as the
    digits' 0-9 are near balanced).  A regression target of whole numbers is read as classes unless
    ``--task`` says so, which this flags for a hint."""
    counts = _whole_number_counts(labels)
    return counts is not None and len(counts) >= min_values and counts.max() >= skew * float(np.median(counts))


def regression_hint(labels: list[str], min_values: int = 20) -> str | None:
    """Why whole-number class labels look like a regression target, or None: a skewed, count-like
    spread (``count_like_labels``), or at least ``min_values`` distinct whole numbers most of which
    occur once (a measurement such as a score or an amount: a class seen once cannot be learned).
    For init's hint; the task stays as inferred unless ``--task`` says otherwise."""
    if count_like_labels(labels):
        return "a skewed, count-like spread"
    counts = _whole_number_counts(labels)
    if counts is not None and len(counts) >= min_values and float(np.median(counts)) < 2:
        return "most of them seen only once"
    if counts is not None and len(counts) >= 5 and float(np.median(counts)) < 2:
        values = np.unique([float(v) for v in labels])
        if values[-1] - values[0] + 1 >= 2 * len(values):  # few labels yet: codes run 0..K-1; 7, 12, 22, 30, 45 do not
            return f"most of them seen only once, from {values[0]:g} to {values[-1]:g} with gaps"
    if counts is not None and len(counts) >= 4 and counts.max() >= 5.0 * float(np.median(counts)):
        values = np.unique([float(v) for v in labels])
        if values[-1] - values[0] + 1 >= 2 * len(values):  # class codes run 0..K-1 or 1..K; a binned count skips
            return f"a skewed spread with gaps, from {values[0]:g} to {values[-1]:g}"
    if counts is not None and len(counts) >= 6:  # AER DoctorVisits (0-8 less 5; 83 % zeros) had no hint
        values = np.unique([float(v) for v in labels])
        # counts are in the values' order: the most at 0, then never rising by more than a tenth of that
        if (values[0] == 0 and counts[0] >= 0.5 * counts.sum() and (np.diff(counts) <= 0.1 * counts[0]).all()
                and counts[-1] <= 0.5 * counts[1]):  # a tail that thins out; codes 1-5 of equal shares do not
            return f"most of them 0 and fewer at each larger value up to {values[-1]:g}, as a zero-inflated count"
    if counts is not None and len(counts) >= 10 and _bell_shaped(counts):
        values = np.unique([float(v) for v in labels])
        if values[-1] - values[0] + 1 == len(values):  # consecutive: 0, 1, 2, ... as a count runs
            return f"a bell-shaped spread over {values[0]:g} to {values[-1]:g}, as counts and scores have"
    return None


def _bell_shaped(counts: np.ndarray) -> bool:
    """Frequencies that rise to a peak inside the range and fall after it (up to bumps of a tenth of the
    peak), with tails at most a tenth of the peak: a Poisson(3) count (15/48/60/72/50/25/14/7/6/3) had no hint, its peak only 3.6x its
    median (a black-box check); class codes are rarely ordered by a smooth hump."""
    peak = int(np.argmax(counts))
    slack = 0.1 * counts[peak]  # a sample's bumps (pois 3: ... 7, 2, 3) are no second hump
    rising, falling = np.diff(counts[: peak + 1]), np.diff(counts[peak:])
    return (0 < peak < len(counts) - 1 and bool((rising >= -slack).all()) and bool((falling <= slack).all())
            and min(counts[0], counts[-1]) <= slack)


def label_values(data: Path, label_col: str) -> list[str]:
    """The values of a data file's label column, as text, without its empty and missing cells (as init
    reads them: _blank_labels_missing; a 'NaN' among numbers crashed the hint that reads these)."""
    col = TableSource(data, codes_as_text=[label_col]).frame([pl.col(label_col)])[label_col]
    return _blank_labels_missing(col).drop_nulls().cast(pl.Utf8).to_list()


def pixel_shape_hint(feature_cols: list[str]) -> tuple[int, int] | None:
    """(H, W) when the feature columns are named as the pixels of square gray images (px0..px63,
    pixel1..pixel784, pixel_0_0..pixel_7_7: one number counting from 0 or 1, or a row and a
    column), at least 4 x 4; else None.  A hint for `alkit init` to print, never applied by itself:
    declared images get the image backbone (on digits 0.03-0.06 more accurate at 20-300 labels,
    benchmarks/results/learner_parity_digits8.md), and only the user knows the columns are pixels."""
    n = len(feature_cols)
    side = math.isqrt(n)
    if side < 4 or side * side != n:
        return None
    matches = [_PIXEL_NAME.match(c) for c in feature_cols]
    if not all(matches):
        return None
    if all(m.group(2) is not None for m in matches):
        cells = [(int(m.group(1)), int(m.group(2))) for m in matches]
        return (side, side) if cells == [(r, c) for r in range(side) for c in range(side)] else None
    numbers = [int(m.group(1)) for m in matches if m.group(2) is None]
    if len(numbers) == n and numbers[0] in (0, 1) and numbers == list(range(numbers[0], numbers[0] + n)):
        return side, side
    return None


def id_list(ids: list[str]) -> str:
    """Ids for a message, comma-separated; quoted when one holds a comma or outer spaces (a name
    such as 'Smith, John' would otherwise read as two ids)."""
    quote = any("," in i or i != i.strip() for i in ids)
    return ", ".join(repr(i) if quote else i for i in ids)


def _rows(mask: pl.Series, n: int = 5) -> str:
    """The first ``n`` rows where ``mask`` holds, 1-based data rows, for a message."""
    rows = (mask.fill_null(False).arg_true() + 1).to_list()
    return ", ".join(map(str, rows[:n])) + (f" and {len(rows) - n} more" if len(rows) > n else "")


def _refuse_json_structures(path: Path, columns: list[str]) -> None:
    """An InputError naming the first line of a JSON Lines file whose id, label or split value is a list or an
    object: its JSON text became an item's name or a class ('["a"]' beside 'a'; a black-box check)."""
    with path.open(encoding="utf-8-sig", errors="replace") as f:
        for number, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                return  # the reader has named a bad line already
            for key in columns:
                value = record.get(key) if isinstance(record, dict) else None
                if isinstance(value, (list, dict)):
                    raise InputError(f"line {number}: {key!r} holds a JSON {'list' if isinstance(value, list) else 'object'} "
                                     f"({json.dumps(value)[:30]}); an id, a label or a split mark is one value")


def _first_ids(df: pl.DataFrame, id_col: str, mask: pl.Series, n: int = 5) -> str:
    return id_list(df.filter(mask)[id_col].head(n).cast(pl.Utf8).to_list())


def _encoder_column(df: pl.DataFrame, opts: InitOptions) -> tuple[str, str]:
    """(column, 'text' | 'image') of --text-col / --image-col, refused when absent or not text."""
    col, kind = (opts.text_col, "text") if opts.text_col else (opts.image_col, "image")
    assert col is not None
    if col not in df.columns:
        raise InputError(f"{kind} column {col!r} not found; columns: {columns_shown(df.columns, col)}")
    dtype = df[col].dtype
    if kind == "text" and dtype == pl.Categorical:
        return col, kind  # a Parquet category of strings: text (cast when it is read)
    if kind == "text" and dtype != pl.Utf8:
        raise InputError(f"text column {col!r} holds {dtype}, not text")
    if kind == "image" and dtype != pl.Utf8:  # bytes (a Hugging Face image struct) were looked up as a path
        raise InputError(f"image column {col!r} holds {str(dtype)[:40]}, not paths: --image-col reads image files "
                         "named by a text column (write the images to files and their paths to the column)")
    return col, kind


def _encoded_features(df: pl.DataFrame, opts: InitOptions, data_dir: Path) -> tuple[np.ndarray, str]:
    from alkit.embed import CACHE_DIR_NAME, embed_values

    col, kind = _encoder_column(df, opts)
    cache = opts.cache_dir or data_dir / CACHE_DIR_NAME
    try:
        X, _ = embed_values(df[col].to_list(), df[opts.id_col].cast(pl.Utf8).to_list(), kind,  # type: ignore[arg-type]
                            cache_dir=cache, base_dir=data_dir, progress=opts.progress,
                            allow_outside_paths=opts.allow_outside_paths)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    return X, col


def _is_number(dtype: pl.DataType) -> bool:
    return dtype.is_numeric() or dtype == pl.Boolean


def streamed_columns(schema: pl.Schema, opts: InitOptions) -> list[str]:
    """The columns init reads in batches instead of whole: the numeric feature columns (or the
    --feature-col vectors).  Lenient: a wrong choice is refused later, by ``feature_names``."""
    if opts.text_col or opts.image_col:
        return []  # the encoders read the file whole
    if opts.feature_col:
        return [opts.feature_col] if isinstance(schema.get(opts.feature_col), (pl.List, pl.Array)) else []
    left_out = {opts.id_col, opts.label_col, opts.split_col, *(opts.exclude or [])}
    names = opts.features or [c for c in schema.names() if c not in left_out]
    return [c for c in names if c in schema and _is_number(schema[c])]


# A column of text values with at most this many distinct values (and at most half as many as rows)
# is categorical: one-hot encoded into indicator features; with more it is free text, refused.
MAX_LEVELS = 50
MISSING_LEVEL = "(missing)"  # the level of a missing cell in a categorical column


def _is_text(dtype: pl.DataType) -> bool:
    return dtype in (pl.Utf8, pl.Categorical) or isinstance(dtype, pl.Enum)


def _category(col: str) -> pl.Expr:
    """A categorical column's cells as its levels: text, stripped, a missing cell MISSING_LEVEL
    (the one normalisation both the level list and the indicators use)."""
    return pl.col(col).cast(pl.Utf8).str.strip_chars().fill_null(MISSING_LEVEL)


def _comma_numbers(s: pl.Series) -> str | None:
    """A cell of a text column whose cells are nearly all numbers written with commas (a decimal
    comma, '0,844'; thousands separators, '50,994', '18,000.5'), or None: the usual reason a
    numeric column arrives as text.  The example is one with a thousands reading where any has one."""
    text = s.drop_nulls().cast(pl.Utf8).str.strip_chars().head(10_000)
    kinds = [comma_kind(t) for t in text.to_list()]
    plain = text.cast(pl.Float64, strict=False).is_not_null().to_list()  # numbers without commas beside them
    if not any(kinds) or sum(k is not None or p for k, p in zip(kinds, plain)) < 0.9 * len(kinds):
        return None
    return next((t for t, k in zip(text, kinds) if k in ("thousands", "either")),
                next(t for t, k in zip(text, kinds) if k is not None))


_UNIT_SIGNS = "%$€£¥"


def _unit_numbers(s: pl.Series) -> str | None:
    """A cell of a text column whose cells are nearly all numbers with a percent or currency sign ('12%', '$3.50',
    '4.2 €'), or None: such a column was refused as free text with too many values to one-hot encode (a check)."""
    text = s.drop_nulls().cast(pl.Utf8).str.strip_chars().head(10_000)
    if text.is_empty():
        return None
    signed = text.str.contains(f"[{_UNIT_SIGNS}]")
    bare = text.str.replace_all(f"[{_UNIT_SIGNS}\\s]", "").cast(pl.Float64, strict=False).is_not_null()
    if not signed.any() or (bare & signed | (~signed & text.cast(pl.Float64, strict=False).is_not_null())).mean() < 0.9:
        return None
    return str(text.filter(signed & bare)[0]) if (signed & bare).any() else None


def _comma_message(what: str, example: str) -> str:
    """``what`` holds numbers with commas, e.g. ``example``: what the comma may be and how to write them."""
    if comma_kind(example) == "decimal":
        return (f"{what} holds numbers written with a decimal comma (e.g. {example!r}): alkit reads '.' as the "
                "decimal mark; write the file with '.' decimals")
    return (f"{what} holds numbers written with ',' (e.g. {example!r}: {comma_hint(example)}): alkit reads numbers "
            "with '.' as the decimal mark and no separators; write the file that way")


def _levels(s: pl.Series) -> list[str] | None:
    """The sorted levels of a mostly-text column (a missing cell is the level MISSING_LEVEL), or
    None when it has too many to be categorical."""
    levels = s.to_frame().select(_category(s.name)).to_series().unique()
    if s.null_count() and MISSING_LEVEL in levels.to_list() and s.cast(pl.Utf8).str.strip_chars().eq(MISSING_LEVEL).any():
        raise InputError(f"categorical column {s.name!r} holds the text {MISSING_LEVEL!r} beside empty cells, which "
                         f"alkit also names {MISSING_LEVEL!r}: the two would be one value; write one of them otherwise")
    if len(levels) > min(MAX_LEVELS, max(2, len(s) // 2)):
        return None
    return sorted(levels.to_list())


def feature_names(df: pl.DataFrame, columns: list[str], schema: pl.Schema,
                  opts: InitOptions, text_numbers: bool = False,
                  json_path: Path | None = None) -> tuple[list[str], dict[str, list[str]]]:
    """The feature columns, refused with a named problem when missing or not numbers, and the
    levels of the categorical ones among them (text columns with few distinct values, one-hot
    encoded by FeatureValues).

    ``columns``/``schema`` describe the whole file; ``df`` needs to hold only its non-numeric
    columns, whose cells the messages quote (the numeric ones are checked value by value later).
    ``text_numbers``: the file is delimited text (CSV, TSV), whose reader leaves numbers it cannot type
    as text ('+7', ' 5 '): such a column is read as numbers unless a value is zero-padded (a code such as
    a zip '01003'); a Parquet or JSON Lines text column is text by the writer's choice, and stays so.
    """
    if opts.feature_col:
        col = opts.feature_col
        if col not in columns:
            raise InputError(f"feature column {col!r} not found; columns: {columns_shown(columns, col)}")
        dtype = schema[col]
        if not isinstance(dtype, (pl.List, pl.Array)):
            text = " (a CSV cell holds text: write the vectors to JSON Lines or Parquet)" if dtype == pl.Utf8 else ""
            raise InputError(f"feature column {col!r} must be a list of numbers, found {dtype}{text}")
        if not dtype.inner.is_numeric():
            raise InputError(f"feature column {col!r} holds {dtype.inner}, not numbers")
        return [col], {}
    if opts.features:
        names = list(opts.features)
        missing = [c for c in names if c not in columns]
        if missing:
            raise InputError(f"feature columns not found: {', '.join(map(repr, missing))}; columns: "
                             f"{columns_shown(columns, missing[0])}")
        if opts.split_col in names:
            raise InputError(f"split column {opts.split_col!r} cannot also be a feature column")
        for col, what in ((opts.label_col, "label"), (opts.id_col, "id")):
            if col in names:  # the label as a feature: every prediction would read its answer
                raise InputError(f"{what} column {col!r} cannot also be a feature column: drop it from --features")
        twice = sorted({c for c in names if names.count(c) > 1})
        if twice:
            raise InputError(f"--features names {', '.join(twice)} more than once")
    else:
        missing = [c for c in opts.exclude or [] if c not in columns]
        if missing:
            raise InputError(f"--exclude: columns not found: {', '.join(map(repr, missing))}; columns: "
                             f"{columns_shown(columns, missing[0])}")
        left_out = {opts.id_col, opts.label_col, opts.split_col, opts.text_col, opts.image_col, *(opts.exclude or [])}
        names = [c for c in columns if c not in left_out]
        if not names:
            raise InputError("no feature columns: pass --features or --feature-col")
        # 'Unnamed: 0' is that index after one pandas round trip (read_csv, then to_csv/to_parquet with index=False):
        # taken as a feature, it predicted a class-sorted file's label (a black-box check)
        index = [c for c in names if c == "" or c.startswith("__index_level_") or re.fullmatch(r"Unnamed: \d+(\.\d+)?", c)]
        if index:  # a row index would be learned from as a feature
            if index[0] == "" and "" in df.columns and df[""].cast(pl.Utf8).str.strip_chars().fill_null("").eq("").all():
                raise InputError(f"column {columns.index('') + 1} of the header has no name and no value in any row (a "
                                 "spreadsheet's trailing separators, ',,' at the ends of the lines): delete those empty "
                                 "columns in the file, or list the features with --features")
            if index[0] == "":
                raise InputError(f"column {columns.index('') + 1} of the header has no name (a pandas index written "
                                 "by to_csv?) and would be a feature; write the file with index=False, name the "
                                 "column and --exclude it, or list the features with --features")
            how = "a pandas index read back and written again" if index[0].startswith("Unnamed") else "a pandas index (written by to_parquet)"
            raise InputError(f"column {index[0]!r} is {how} and would be a feature (the row number: on a sorted file it "
                             f"gives the label away); write the file with index=False, --exclude {option_list([index[0]])}, "
                             "or list the features with --features")
    empty = [c for c in names if _is_text(schema[c]) and df[c].cast(pl.Utf8).str.strip_chars().fill_null("").eq("").all()]
    if empty:  # read as text with no value: it became one constant one-hot feature, '(missing)'
        raise InputError(f"feature column {empty[0]!r} has no value in any row"
                         + ("" if opts.features else f": leave it out with --exclude {option_list(empty)}"))
    # numbers whose missing cells are written as text ('NA', '?'): numbers like any other, their gaps filled by
    # --impute or else named with every other column's (FeatureValues.check)
    gappy = {c for c in names if _is_text(schema[c]) and _numbers_and_gaps(df[c])}
    mostly_text = [c for c in names if _is_text(schema[c]) and c not in gappy and
                   df[c].cast(pl.Utf8).str.strip_chars().cast(pl.Float64, strict=False).is_null().mean() > 0.5]
    # numbers written with commas, even where most cells have none ('735' beside '1,065')
    comma = {c: example for c in names if _is_text(schema[c]) and c not in gappy
             and (example := _comma_numbers(df[c])) is not None}
    if comma:
        c, example = next(iter(comma.items()))
        raise InputError(_comma_message(f"feature column {c!r}", example)
                         + ("" if opts.features else f", or leave the column out with --exclude {option_list(comma)}"))
    levels = {c: lv for c in mostly_text if (lv := _levels(df[c])) is not None}
    textual = [c for c in mostly_text if c not in levels]  # free text: no feature
    units = {c: example for c in textual if (example := _unit_numbers(df[c])) is not None}
    if units:  # called free text with too many values to one-hot encode (a black-box check)
        c, example = next(iter(units.items()))
        raise InputError(f"feature column {c!r} holds numbers with a percent or currency sign (e.g. {example!r}), "
                         "read as text: write them as plain numbers ('12%' as 12 or 0.12, '$3.50' as 3.5)"
                         + ("" if opts.features else f", or leave the column out with --exclude {option_list(units)}"))
    if textual and not opts.features:  # (listed by --features, the cell is named below)
        raise InputError(
            f"non-numeric columns: {', '.join(repr(c) if ',' in c else c for c in textual)} (text with too many distinct values to one-hot encode: "
            f"over {MAX_LEVELS} or over half the rows); leave them out with --exclude {option_list(textual)}, "
            "embed one with --text-col COL, or list the features with --features")
    non_numeric = [c for c in names if not _is_number(schema[c]) and c not in levels and c not in gappy]
    for c in non_numeric:  # name the first cell that is not a number, and say what it is
        if schema[c] == pl.Utf8:
            text = df[c]
            missing = _is_gap(text)
            bad = missing | text.str.strip_chars().cast(pl.Float64, strict=False).is_null()
            i = int(bad.arg_true()[0]) if bad.any() else None
            if i is not None and bool((bad & ~missing).any()):
                i = int((bad & ~missing).arg_true()[0])  # text is the problem to name first; gaps come with it
                raise InputError(f"feature column {c!r} is not numeric: row {i + 1} (id {df[opts.id_col][i]}) holds "
                                 f"{text[i]!r}, text; features must be numbers")
            if i is not None:  # numbers with gaps, empty and 'NA' alike: every row named, as for empty cells alone
                rows = missing.arg_true()
                ids = ", ".join(str(df[opts.id_col][int(r)]) for r in rows[:10]) + (" ..." if len(rows) > 10 else "")
                raise InputError(f"feature column {c!r} has missing values (empty or 'NA'-like cells; ids: {ids}); "
                                 "missing values are not allowed in features " + (
                                     "(fill the missing pixels before init, e.g. with 0, or drop --image-shape)"
                                     if opts.image_shape is not None else "(--impute fills them)"))
    # every cell a number the CSV reader kept as text ('+7', ' 5'): read as numbers (FeatureValues.text)
    if text_numbers:
        non_numeric = [c for c in non_numeric if schema[c] != pl.Utf8
                       or df[c].str.strip_chars().str.contains(r"^[+-]?0\d").any()]
    quoted = [c for c in non_numeric if schema[c] == pl.Utf8 and json_path is not None
              and not df[c].str.strip_chars().cast(pl.Float64, strict=False).is_null().any()]
    if quoted:  # numbers, some in quotes: called text, with an encoder suggested and no row named (a black-box check)
        from alkit.pools.tables import first_mixed_json

        found = first_mixed_json(json_path, quoted)
        if found is not None:
            number, key, kind, value, seen_line, seen_kind = found
            where = (f"line {number} holds {json.dumps(value)[:30]} as {kind} where line {seen_line} holds "
                     f"{seen_kind}")
        else:
            where = "every line holds them in quotes"
            key = quoted[0]
        raise InputError(f"feature column {key!r} holds numbers written as text ({where}): "
                         "write them as JSON numbers, without quotes")
    if non_numeric:
        kinds = ", ".join(f"{c} ({schema[c]})" for c in non_numeric)
        out = "" if opts.features else f"leave them out with --exclude {option_list(non_numeric)}, "
        lists = [c for c in non_numeric if isinstance(schema[c], (pl.List, pl.Array))]
        vec = f"--feature-col {lists[0]} takes a list column as the feature vector; " if lists else ""
        raise InputError(f"non-numeric feature columns: {kinds} ({vec}{out}choose numeric columns with --features, "
                         "or embed text/images with an encoder)")
    return names, levels


def _is_gap(text: pl.Series) -> pl.Series:
    """Cells of a text column that are missing: empty, or a token such as 'NA' (_MISSING_TOKENS)."""
    return text.is_null() | text.str.strip_chars().str.to_lowercase().is_in(list(_MISSING_TOKENS))


def _numbers_and_gaps(s: pl.Series) -> bool:
    """A text column whose every cell is a number or missing, with some of each."""
    text = s.cast(pl.Utf8)
    gap = _is_gap(text)
    number = text.str.strip_chars().cast(pl.Float64, strict=False).is_not_null()
    return bool(gap.any()) and bool(number.any()) and bool((gap | number).all())


def _number(c: str, is_text: bool) -> pl.Expr:
    """Column c as float64 with every missing cell null (NaN too; text cells other than numbers are
    null, which only columns ``_numbers_and_gaps`` accepted may hold)."""
    col = pl.col(c).cast(pl.Utf8).str.strip_chars().cast(pl.Float64, strict=False) if is_text else pl.col(c).cast(pl.Float64)
    return col.fill_nan(None)


def pool_medians(read: Callable[[list[pl.Expr]], pl.DataFrame], schema: pl.Schema, names: list[str],
                 levels: dict[str, list[str]], pool_n: np.ndarray) -> dict[str, float]:
    """--impute: the median of the pool rows (``pool_n``, never the test split's) of every numeric
    feature column with a missing cell.  ``read`` returns these expressions over every row."""
    numeric = [c for c in names if c not in levels]
    if not numeric:
        return {}
    counts = read([_number(c, _is_text(schema[c])).is_null().sum().alias(c) for c in numeric]).row(0)
    gappy = [c for c, k in zip(numeric, counts) if k]
    if not gappy:
        return {}
    values = read([_number(c, _is_text(schema[c])).alias(c) for c in gappy])
    fill = {}
    in_pool_n = pl.Series(pool_n)
    for c in gappy:
        in_pool = values[c].filter(in_pool_n).drop_nulls()
        if in_pool.is_empty():
            raise InputError(f"feature column {c!r} has no value in the pool to impute from: leave it out with --exclude {option_list([c])}")
        fill[c] = float(in_pool.median())
    return fill


def one_hot_names(names: list[str], levels: dict[str, list[str]], filled: Iterable[str] = ()) -> list[str]:
    """The feature names after one-hot encoding: a categorical column c becomes c=level per level,
    and an imputed column c is followed by its indicator c=missing."""
    filled = set(filled)
    return [n for c in names for n in ([f"{c}={lv}" for lv in levels[c]] if c in levels
                                       else [c, missing_indicator(c)] if c in filled else [c])]


def _check_exclude(opts: InitOptions) -> None:
    if opts.exclude and (opts.features or opts.feature_col):
        raise InputError("--exclude leaves columns out of the default features; with --features or --feature-col "
                         "list only the ones you want")


def _vector_size(is_null: pl.Series, lengths: pl.Series, df: pl.DataFrame, opts: InitOptions) -> int:
    """The length every --feature-col vector has; missing or ragged vectors are refused with their ids."""
    if is_null.any() or lengths.n_unique() != 1:
        bad = is_null | (lengths != lengths.mode()[0])
        common = int(lengths.mode()[0]) if lengths.drop_nulls().len() else 0
        other = sorted({int(v) for v in lengths.filter(bad).drop_nulls().to_list()})[:3]
        raise InputError(f"feature column {opts.feature_col!r} has missing or ragged vectors: most hold {common} "
                         f"values{', these ' + ' / '.join(map(str, other)) if other else ''} "
                         f"(ids: {_first_ids(df, opts.id_col, bad)})")
    return int(lengths[0])


FLOAT32_MAX = float(np.finfo(np.float32).max)  # features are stored as float32
MIN_FEATURE_SPREAD = 2e-8  # a smaller range has a standard deviation below the learners' constant-column 1e-8


def float32_loses(lo_f: np.ndarray, hi_f: np.ndarray, lo32_f: np.ndarray, hi32_f: np.ndarray,
                  varies_f: np.ndarray | None = None) -> np.ndarray:
    """(f,) bool: features whose range (float64 lo..hi) varies but is lost as stored: constant in float32
    (1e12 + x), or a spread of at most MIN_FEATURE_SPREAD, which the learners' standardisation takes for a
    constant.  ``varies_f``: features known to vary from their exact values (integers: 10**18 + i is one
    value in float64 already).  One rule for `alkit init` and the library's pools."""
    varies = hi_f > lo_f if varies_f is None else varies_f | (hi_f > lo_f)
    return varies & ((hi32_f <= lo32_f) | (hi_f - lo_f <= MIN_FEATURE_SPREAD))


class FeatureValues:
    """Feature blocks turned into float32 rows, the values checked on the way: missing cells,
    NaN/inf and float32 overflow are judged in float64, block by block, and ``check`` then
    refuses the file as a whole would be (the first column with a missing value, every column
    with a non-finite one, the first ids of each), so streamed and whole-file reads say the same."""

    def __init__(self, names: list[str], vector_col: str | None, n_features: int,
                 levels: dict[str, list[str]] | None = None, fill: dict[str, float] | None = None,
                 text: Iterable[str] = ()) -> None:
        self.levels = levels or {}  # categorical column -> its levels, one indicator feature each
        self.fill = fill or {}  # imputed column -> the value of its missing cells (and an indicator feature)
        self.text = set(text)  # number columns written as text ('+7'; imputed: 'NA' among numbers)
        self.names, self.vector_col, self.n_features = names, vector_col, n_features
        self.numeric = [c for c in names if c not in self.levels and c not in self.fill]
        self.n_rows = 0
        self.null_rows: dict[str, list[int]] = {}  # column -> its first rows (up to 5) with a missing value
        self.nonfinite_f = np.zeros(n_features, dtype=bool)
        self.nonfinite_rows: list[int] = []  # the first rows (up to 5) with a NaN or infinite value
        self.nan_seen = False  # a NaN in a column --impute would fill (not a vector's)
        self.over_f = np.zeros(n_features, dtype=bool)  # features with a value beyond float32's range
        self.over_rows: list[int] = []  # the first rows (up to 5) with one
        # each feature's range before and after float32, to find variation the stored float32 loses
        self.lo_f, self.hi_f = np.full(n_features, np.inf), np.full(n_features, -np.inf)
        self.lo32_f, self.hi32_f = np.full(n_features, np.inf), np.full(n_features, -np.inf)
        # integer columns' exact ranges: 10**18 + i is one value in float64 as well, so its loss showed
        # as "holds one value in every row" instead of being refused as the float32 loss it is
        self.int_range: dict[str, tuple[int, int]] = {}

    def block(self, batch: pl.DataFrame) -> np.ndarray:
        """(b, f) float32 of one block of rows (columns named by ``names``, or the vector column)."""
        if self.vector_col:
            flat = batch[self.vector_col].cast(pl.List(pl.Float64)).explode().to_numpy()
            X_b_f = flat.reshape(batch.height, self.n_features)
        else:
            # a text column of numbers and 'NA'-like gaps (``_numbers_and_gaps``) by its gaps too: such columns were
            # refused one per init, before the numeric columns' gaps were named (a black-box round)
            if self.numeric:
                gaps = batch.select([(_number(c, True) if c in self.text else pl.col(c)).is_null().alias(c)
                                     for c in self.numeric])
                for c, k in zip(self.numeric, gaps.sum().row(0)):
                    if k:
                        rows = self.null_rows.setdefault(c, [])
                        rows += (gaps[c].arg_true().head(5 - len(rows)) + self.n_rows).to_list()
            X_b_f = batch.select([e for c in self.names for e in self._columns(c)]).to_numpy()
            for c in [*self.numeric, *self.fill]:  # an imputed column's own values too (its nulls are no range)
                if c not in self.text and batch.schema[c].is_integer() and batch[c].null_count() < batch.height:
                    lo, hi = int(batch[c].min()), int(batch[c].max())
                    was = self.int_range.get(c, (lo, hi))
                    self.int_range[c] = (min(lo, was[0]), max(hi, was[1]))
        finite_b_f = np.isfinite(X_b_f)
        if not finite_b_f.all():
            self._flag(~finite_b_f, self.nonfinite_f, self.nonfinite_rows)
            self.nan_seen |= not self.vector_col and bool(np.isnan(X_b_f).any())
        else:
            over_b_f = np.abs(X_b_f) > FLOAT32_MAX
            if over_b_f.any():
                self._flag(over_b_f, self.over_f, self.over_rows)
        self.n_rows += batch.height
        with np.errstate(over="ignore", invalid="ignore"):  # an overflowing block is refused by ``check``
            X32 = X_b_f.astype(np.float32)
            if len(X_b_f):
                self.lo_f, self.hi_f = np.fmin(self.lo_f, X_b_f.min(0)), np.fmax(self.hi_f, X_b_f.max(0))
                self.lo32_f, self.hi32_f = np.fmin(self.lo32_f, X32.min(0)), np.fmax(self.hi32_f, X32.max(0))
        return X32

    def _flag(self, bad_b_f: np.ndarray, features_f: np.ndarray, rows: list[int]) -> None:
        """Mark (in place) the features with a bad cell in this block, and its rows while fewer than 5 are noted."""
        features_f |= bad_b_f.any(axis=0)
        rows += (np.flatnonzero(bad_b_f.any(axis=1))[: max(0, 5 - len(rows))] + self.n_rows).tolist()

    def _columns(self, c: str) -> list[pl.Expr]:
        """Column c as float64 features: itself, one 0/1 indicator per level if categorical, or
        filled where missing and followed by the indicator of the missing cells if imputed."""
        if c in self.fill:
            value = _number(c, c in self.text)
            return [value.fill_null(self.fill[c]), value.is_null().cast(pl.Float64).alias(missing_indicator(c))]
        if c not in self.levels:
            return [_number(c, True).fill_null(float("nan")) if c in self.text else pl.col(c).cast(pl.Float64)]
        text = _category(c)
        return [(text == lv).cast(pl.Float64).alias(f"{c}={lv}") for lv in self.levels[c]]

    def check(self, ids: pl.Series, pixels: bool = False) -> None:
        """Refuse what the blocks held: missing values, then NaN/inf, then float32 overflow.  ``pixels``: the
        columns are an image's (--image-shape), which neither --impute nor --exclude may change."""
        missing = [c for c in self.numeric if self.null_rows.get(c)] if not self.vector_col else []
        if missing:  # every such column named: naming the first alone sent the user back once per column
            c, listed = missing[0], MISSING_LISTED
            more = (f"; also {', '.join(missing[1:listed])}"
                    f"{f' and {len(missing) - listed} more' if len(missing) > listed else ''}"
                    f" ({len(missing)} columns in all)" if len(missing) > 1 else "")
            exclude = (f", --exclude {option_list(missing)} leaves {'them' if len(missing) > 1 else 'the column'} out"
                       if len(missing) <= listed else "")
            advice = (("fill the missing values before init (pixels e.g. with 0), leave a column that is no pixel out "
                       "with --exclude, or drop --image-shape (--impute would break the pixel layout)") if pixels else
                      f"--impute fills them with the pool's median (and adds a feature COLUMN=missing){exclude}")
            raise InputError(f"feature column {c!r} has missing values (ids: {_ids_of(ids, self.null_rows[c])}){more}; "
                             + advice)
        if self.nonfinite_rows:
            raise InputError(f"NaN or infinite feature values in {', '.join(self._named(self.nonfinite_f))} "
                             f"(ids: {_ids_of(ids, self.nonfinite_rows)})"
                             + ("; --impute fills NaN cells (not inf) as missing" if self.nan_seen else ""))
        if self.over_rows:
            raise InputError(f"feature values beyond float32's range (|x| > {FLOAT32_MAX:.3g}) in "
                             f"{', '.join(self._named(self.over_f))} (ids: {_ids_of(ids, self.over_rows)}); "
                             "rescale those columns (e.g. take logs)")
        # variation alkit would lose without a word: a large offset float32 rounds away (1e12 + x), or a
        # spread so small (<= 2e-8) that the learners' standardisation takes the column for a constant.
        varies = self.hi_f > self.lo_f
        encoded = self.encoded
        exact = {encoded.index(c): r for c, r in self.int_range.items() if r[1] > r[0]}  # integers that vary
        lost_f = float32_loses(self.lo_f, self.hi_f, self.lo32_f, self.hi32_f,
                               np.isin(np.arange(len(varies)), list(exact)))
        if self.vector_col:
            # an encoder's vectors have a few dead dimensions of numerical noise (MiniLM: ~1e-33): a vector
            # column is refused when none of its dimensions is usable, or most of those that vary are lost
            # (1e12 + x, 1e-20 x, or one vector in every row: the runs were at chance)
            usable = int((varies & ~lost_f).sum())
            if usable == 0 or lost_f.sum() > varies.sum() / 2:
                raise InputError(f"vector column {self.vector_col!r}: {usable} of its {self.n_features} dimensions vary "
                                 "enough for alkit to use (features are stored as float32, and a spread of at most "
                                 f"{MIN_FEATURE_SPREAD:g} counts as constant); centre or rescale the vectors before "
                                 "init" + (" (every row holds the same vector)" if not varies.any() else ""))
            return
        if lost_f.any():
            j = int(np.flatnonzero(lost_f)[0])
            lo, hi = f"{self.lo_f[j]:.15g}", f"{self.hi_f[j]:.15g}"
            if lo == hi:  # 1e18 and 1e18 + 128 (integers read as floats): the shortest exact forms
                lo, hi = repr(float(self.lo_f[j])), repr(float(self.hi_f[j]))
            lo, hi = exact.get(j, (lo, hi))
            raise InputError(f"feature {', '.join(self._named(lost_f))} varies too little for alkit to use (from "
                             f"{lo} to {hi}: features are stored as float32 and a "
                             f"spread of at most {MIN_FEATURE_SPREAD:g} counts as constant); subtract its mean or "
                             "rescale it before init, or leave it out with --exclude")
        if self.n_rows and not self.varies_stored().any():  # nothing to learn from: runs were at chance
            names = self.encoded
            raise InputError(f"every feature column holds one value in every row ({', '.join(names[:5])}"
                             f"{', ...' if len(names) > 5 else ''}): there is nothing to learn from; choose other "
                             "columns with --features")

    def varies_stored(self) -> np.ndarray:
        """(f,) whether each feature takes more than one value as stored (float32)."""
        return self.hi32_f > self.lo32_f

    def _named(self, features_f: np.ndarray) -> list[str]:
        """The names of the flagged features (the vector column's own name for a vector column)."""
        if self.vector_col:
            return list(self.names)
        encoded = self.encoded
        return [encoded[j] for j in np.flatnonzero(features_f)]

    @property
    def encoded(self) -> list[str]:
        """The feature names, one per column of the blocks."""
        return one_hot_names(self.names, self.levels, self.fill)


def _ids_of(ids: pl.Series, rows: list[int]) -> str:
    return id_list(ids.gather(rows).cast(pl.Utf8).to_list())


def extract_features(df: pl.DataFrame, opts: InitOptions, data_dir: Path = Path("."),
                     pool_n: np.ndarray | None = None) -> tuple[np.ndarray, list[str], list[str], list[str]]:
    """The (n, f) float32 matrix of a frame in memory, checked for non-numeric and non-finite values
    (`alkit init` streams the same checks over the file instead: ``stream_features``), its feature
    names, the categorical columns one-hot encoded into them and the columns imputed (with
    ``opts.impute``, from the rows ``pool_n`` marks; default every row).

    With --text-col/--image-col the encoder's vectors come first, then any --features columns.
    """
    _check_exclude(opts)
    if opts.text_col or opts.image_col:
        if opts.text_col and opts.image_col:
            raise InputError("pass either --text-col or --image-col, not both")
        if opts.feature_col:
            raise InputError("--feature-col cannot be combined with --text-col/--image-col")
        X_enc, col = _encoded_features(df, opts, data_dir)
        if not opts.features:
            return X_enc, [], [], []
        X_num, names, one_hot, imputed = extract_features(df, replace(opts, text_col=None, image_col=None),
                                                          pool_n=pool_n)
        return np.concatenate([X_enc, X_num], axis=1), names, one_hot, imputed
    names, levels = feature_names(df, df.columns, df.schema, opts)
    n_vector = None
    if opts.feature_col:
        s = df[opts.feature_col]
        lengths = s.list.len() if isinstance(s.dtype, pl.List) else pl.Series([s.dtype.size] * len(s))
        n_vector = _vector_size(s.is_null(), lengths, df, opts)
    values = _values(names, levels, df.schema, opts, lambda exprs: df.select(exprs),
                     np.ones(df.height, dtype=bool) if pool_n is None else pool_n, n_vector)
    X = values.block(df)
    values.check(df[opts.id_col], pixels=opts.image_shape is not None)
    return X, values.encoded, list(levels), list(values.fill)


def _values(names: list[str], levels: dict[str, list[str]], schema: pl.Schema, opts: InitOptions,
            read: Callable[[list[pl.Expr]], pl.DataFrame], pool_n: np.ndarray,
            n_vector: int | None) -> FeatureValues:
    """The FeatureValues of these columns (``n_vector``: the length of --feature-col's vectors),
    with --impute's fill values read from the pool rows."""
    if opts.feature_col:
        assert n_vector is not None
        return FeatureValues(names, opts.feature_col, n_vector)
    fill = pool_medians(read, schema, names, levels, pool_n) if opts.impute else {}
    encoded = one_hot_names(names, levels, fill)
    twice = next((n for n in encoded if encoded.count(n) > 1), None)
    if twice is not None:  # polars failed with a DuplicateError traceback
        made = [why for c in names for name, why in (
            [(f"{c}={lv}", f"the one-hot feature of column {c!r} for its value {lv!r}") for lv in levels[c]]
            if c in levels else [(c, f"column {c!r}"), (missing_indicator(c), f"--impute's indicator of column {c!r}")]
            if c in fill else [(c, f"column {c!r}")]) if name == twice]
        raise InputError(f"feature name {twice!r} would be made twice: by {made[0]} and by {made[1]}; rename a "
                         "column, or leave one out with --exclude")
    # 'c=x' is how alkit names the one-hot features of categorical column c: a column of that name was read back
    # as one of them (counted among c's values, and left out of the columns a features file must hold)
    prefixed = next(((n, o) for n in names if n not in levels for o in levels if n.startswith(f"{o}=")), None)
    if prefixed is not None:
        raise InputError(f"column {prefixed[0]!r} begins with {prefixed[1] + '='!r}, the names of the one-hot features "
                         f"of categorical column {prefixed[1]!r}; rename a column, or leave one out with --exclude")
    return FeatureValues(names, None, len(encoded), levels, fill,
                         [c for c in names if c not in levels and _is_text(schema[c])])


def stream_features(source: TableSource, df: pl.DataFrame, opts: InitOptions, path: Path, pool_n: np.ndarray,
                    columns: tuple[list[str], dict[str, list[str]]],
                    on_rows: Callable[[int], None] = lambda n: None
                    ) -> tuple[list[str], int, list[str], list[str], np.ndarray]:
    """Check the file's features and write them to ``path`` (features.parquet) batch by batch:
    (feature names, feature count, the categorical columns one-hot encoded into them, the columns
    imputed from the rows ``pool_n`` marks, (f,) whether each feature is constant as stored).  ``columns``: ``feature_names``'s answer, checked
    before the labels.  ``df`` holds the file's other columns (ids, labels, text); the feature
    matrix is never whole in memory, in float32 or float64 (an imputed column's median reads that
    one column whole).  ``on_rows(n)`` after each block of n rows is written (progress)."""
    names, levels = columns
    n_vector = None
    if opts.feature_col:  # the vectors' lengths first (one small column), then their values
        col = pl.col(opts.feature_col)
        dtype = source.schema[opts.feature_col]
        lengths = col.list.len() if isinstance(dtype, pl.List) else pl.lit(dtype.size, dtype=pl.UInt32)
        shape = source.frame([col.is_null().alias("null"), lengths.alias("len")])
        n_vector = _vector_size(shape["null"], shape["len"], df, opts)
    values = _values(names, levels, source.schema, opts, source.frame, pool_n, n_vector)
    with FeatureWriter(path, values.n_features) as writer:
        for batch in source.batches(names):
            writer.write(values.block(batch))
            on_rows(batch.height)
    values.check(df[opts.id_col], pixels=opts.image_shape is not None)
    return values.encoded, values.n_features, list(levels), list(values.fill), ~values.varies_stored()


def _label_strings(s: pl.Series, task: str) -> pl.Series:
    if task == "regression":
        if not s.dtype.is_numeric():
            try:
                s = s.cast(pl.Float64, strict=True)
            except Exception:  # noqa: BLE001
                bad = s.cast(pl.Utf8).filter(s.cast(pl.Float64, strict=False).is_null() & s.is_not_null())
                raise InputError(f"regression labels must be numbers; column {s.name!r} holds {s.dtype}"
                                 + (f", e.g. {bad[0]!r}" if len(bad) else "")) from None
        f = s.cast(pl.Float64)
        if (~f.is_finite() & f.is_not_null()).any():
            raise InputError(f"label column {s.name!r} has NaN or infinite values")
        if (f.abs() > REGRESSION_LABEL_MAX).any():
            raise InputError(f"label column {s.name!r} holds values beyond ±{REGRESSION_LABEL_MAX:.0e} (largest "
                             f"{f.abs().max():.3g}), which alkit's 32-bit fits cannot take: rescale the target")
        given = f.drop_nulls()
        spread = float(given.std() or 0.0) if len(given) > 1 else 0.0
        if 0 < spread < SPREAD_MIN:  # predictive variances below float32's smallest normal number (1e-20 units)
            raise InputError(f"label column {s.name!r} varies by only {spread:.3g} (standard deviation): alkit's 32-bit "
                             "fits cannot resolve it; rescale the target (e.g. multiply it by a power of ten)")
        if spread > 0 and float(given.abs().max()) > OFFSET_RATIO_MAX * spread:
            # float32 keeps ~7 digits: 1e7 + y with y's spread 2 was rounded to whole numbers in the fits, the
            # predictions and the test targets, so the error figures moved with the offset (a black-box check)
            raise InputError(f"label column {s.name!r} varies by {spread:.3g} (standard deviation) around "
                             f"{float(given.mean()):.7g}: alkit's 32-bit fits and error figures would round it; "
                             f"subtract a constant from the target first (e.g. {float(given.mean()):.0f})")
        return f.map_elements(repr, return_dtype=pl.Utf8)
    if s.dtype.is_float():
        f = s.drop_nulls()
        if (f != f.round(0)).any():
            raise InputError(f"label column {s.name!r} holds non-integer numbers: use --task regression")
        s = s.cast(pl.Int64)
    return s.cast(pl.Utf8)


# A regression target whose largest |value| is more than this many standard deviations is refused: float32's
# rounding there (6e-8 relative) reaches 0.6 % of the spread.
OFFSET_RATIO_MAX = 1e5
# A regression target with a smaller spread is refused: predictive variances a thousandth of its square
# underflow float32 (targets in 1e-20 units gave twice the CRPS of the same target in units; 1e-9 held).
SPREAD_MIN = 1e-12



def _blank_labels_missing(s: pl.Series) -> pl.Series:
    """Text labels as ``queue import`` reads them: surrounding whitespace stripped, and an empty or
    blank cell missing (an unlabeled row), not a class named ''; so is a missing-value marker
    (MISSING_LABELS: 'NA', as R and pandas write a missing cell), and a column whose other cells are
    all numbers is then read as numbers, as the same file with empty cells would be.  Why: a CSV
    writer that quotes text (polars, some spreadsheets) writes a missing label as \"\", which reads
    back as an empty string; taken as a class, every row counted as labeled; and 'NA' became a class
    of its own, or kept a numeric target from being read as one.  Numbers and booleans pass unchanged."""
    if s.dtype.is_float():  # a CSV's 'NaN' cell among numbers, or a Parquet NaN: a float NaN, not a null
        return s.fill_nan(None)
    if s.dtype.is_numeric() or s.dtype == pl.Boolean:
        return s
    # one Unicode form (NFC): 'café' typed on macOS (decomposed) and elsewhere were two classes, where an
    # import already read them as one (a black-box check)
    text = s.cast(pl.Utf8).str.strip_chars().str.normalize("NFC")
    text = text.set((text == "") | text.str.normalize("NFKC").str.to_lowercase().is_in(list(MISSING_LABELS)), None)
    numbers = text.cast(pl.Float64, strict=False)
    if text.null_count() < len(text) and numbers.null_count() == text.null_count():
        given = text.drop_nulls()
        if given.str.contains(r"^[+-]?0\d").any():  # codes: '01', '001' and '1' (and '1.0') are classes of their own
            return text
        whole = given.str.contains(r"^[+-]?\d+$").all()
        return numbers.cast(pl.Int64) if whole else numbers  # as a CSV reader types the column
    if numbers.is_not_null().any() and not text.filter(numbers.is_not_null()).str.contains(r"^[+-]?0\d").any():
        # text beside numbers ('other' beside 0 and 1): each number spelled once, as a column of numbers reads
        # it; '1' and '1.0' were two classes without a word, and an import of '1.00' was refused (a black-box check)
        cells = pl.DataFrame({"t": text, "x": numbers})
        finite = pl.col("x").is_not_null() & pl.col("x").is_finite()
        whole = finite & (pl.col("x") == pl.col("x").round(0)) & (pl.col("x").abs() < 2.0 ** 53)
        return cells.select(pl.when(whole).then(pl.col("x").cast(pl.Int64).cast(pl.Utf8))
                            .when(finite).then(pl.col("x").cast(pl.Utf8)).otherwise(pl.col("t")).alias(s.name)).to_series()
    return text


def _infer_task(s: pl.Series, max_classes: int) -> str:
    vals = s.drop_nulls()
    if s.dtype.is_float() and (vals != vals.round(0)).any():
        return "regression"
    if s.dtype.is_numeric() and vals.n_unique() > max_classes:
        return "regression"
    return "classification"


def _declared_classes(values: list[str]) -> list[str]:
    """--classes as given: stripped, each once, none empty (a class named '' is no label)."""
    out = list(dict.fromkeys(unicodedata.normalize("NFC", v.strip()) for v in values))
    if "" in out:
        raise InputError("--classes holds an empty class name")
    missing = [c for c in out if is_missing_label(c)]
    if missing:  # a class no answer could give: the answer reads as no label (as --add-class refuses it)
        raise InputError(f"--classes {missing[0]!r}: an answer {missing[0]!r} is read as no label (as NA, N/A, #N/A, NaN "
                         "and null are, any case); name the class otherwise")
    errors = [c for c in out if is_spreadsheet_error(c)]
    if errors:  # was refused as the label column's formula error, in 0 rows (a black-box round)
        raise InputError(f"--classes {errors[0]!r} is a spreadsheet's formula error, not a class name: name the class otherwise")
    if len(out) < 2:
        raise InputError(f"--classes needs at least 2 classes, got {len(out)}")
    # two names an answer cannot tell apart: 'a' and 'A' (an answer in another case), '1' and '1.0' (one number;
    # codes with a leading zero, '01' beside '1', are classes of their own) were taken without a word (a black-box check)
    seen: dict[tuple[str, Any], str] = {}
    for c in out:
        x = class_number(c)
        keys = [("case", fold_case(c))] + ([("number", x)] if x is not None and not zero_padded(c) else [])
        for key in keys:
            if key in seen:
                how = ("are one number" if key[0] == "number" else "differ only in case"
                       if seen[key].lower() == c.lower() else "differ only in character width or case")
                raise InputError(f"--classes {seen[key]!r} and {c!r} {how}: an answer could not tell them apart; "
                                 "give one of them")
            seen[key] = c
    return out


def _sorted_classes(values: list[str]) -> list[str]:
    uniq = sorted(set(values))
    try:
        return sorted(uniq, key=lambda v: float(v))
    except ValueError:
        return uniq


def _split_column(df: pl.DataFrame, columns: list[str], opts: InitOptions) -> np.ndarray:
    """Rows marked test in --split-col (bool mask); any value but test/pool/train refuses the whole file."""
    col = opts.split_col
    assert col is not None
    if col not in columns:
        raise InputError(f"split column {col!r} not found; columns: {columns_shown(columns, col)}")
    if col in (opts.id_col, opts.label_col):
        raise InputError(f"split column {col!r} is also the id or label column")
    raw = df[col].cast(pl.Utf8)
    norm = raw.str.strip_chars().str.to_lowercase()
    bad = (~norm.is_in(list(SPLIT_VALUES)) | norm.is_null()).fill_null(True)
    if bad.any():
        shown = [repr(v) if v is not None else "missing" for v in raw.filter(bad).unique(maintain_order=True).head(5)]
        raise InputError(f"split column {col!r} has values other than test/pool/train: {', '.join(shown)} "
                         f"(ids: {_first_ids(df, opts.id_col, bad)})")
    return (norm == "test").to_numpy()


def _stratified_test_mask(labels: list[str], test_frac: float, rng: np.random.Generator) -> np.ndarray:
    """Test rows with the same share of every class as the pool, so test metrics weigh classes as the data does.

    Each class gets floor(test_frac * size) rows, the rest of round(test_frac * n) goes by largest
    remainder (ties seeded); a class keeps at least one row in the pool, so single-row classes
    stay there and their share goes to the others.
    """
    n = len(labels)
    classes, inverse, counts = np.unique(np.asarray(labels, dtype=str), return_inverse=True, return_counts=True)
    total = int(round(test_frac * n))
    cap = counts - 1
    quota = test_frac * counts
    take = np.minimum(np.floor(quota + 1e-9).astype(np.int64), cap)  # 1e-9: 0.3 * 10 is 2.9999999999999996
    order = np.lexsort((rng.random(len(classes)), -(quota - take)))
    left = total - int(take.sum())
    while left > 0 and (take < cap).any():
        for c in order:
            if left > 0 and take[c] < cap[c]:
                take[c] += 1
                left -= 1
    mask = np.zeros(n, dtype=bool)
    for c in range(len(classes)):
        members = np.flatnonzero(inverse == c)
        mask[rng.permutation(members)[: take[c]]] = True
    return mask


def _image_shape(shape: tuple[int, ...], n_features: int) -> list[int]:
    """(H, W) or (C, H, W) -> [C, H, W], checked against the feature count (checks.image_dims)."""
    try:
        return image_dims(shape, n_features)
    except ValueError as exc:
        raise InputError(f"{exc}{' before init' if 'channels first' in str(exc) else ''}") from None



INIT_PREFIX = ".alkit-init-"  # temp folder of an init in progress: .alkit-init-<pid>-<random>
_JOURNAL = "moved.txt"  # inside it: every file already moved into the project, one path per line
_STORE_TABLES = "store-tables.json"  # inside it: the external store's tables this init created, and which store


MISSING_LISTED = 20  # feature columns with missing values named in one refusal (and an --exclude of them all)
PROGRESS_MIN_ROWS = 100_000  # files at least this long show init's progress (500,000 rows took ~8 s)
PROGRESS_MIN_CELLS = 5_000_000  # so do files this wide and long (60,000 images of 784 pixels took 32 s, unsaid)


class _InitProgress:
    """A transient bar per phase of a long init (writing the features, then the store's items);
    inert when disabled, so the calls cost nothing on small files and in tests."""

    def __init__(self, enabled: bool, total: int) -> None:
        self.total, self.progress = total, None
        if enabled:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            self.progress = Progress(TextColumn("init: {task.description}"), BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), transient=True)
            self.progress.start()

    def step(self, what: str) -> Callable[[int], None]:
        """A callback advancing a new bar ``what`` by n rows."""
        if self.progress is None:
            return lambda n: None
        task = self.progress.add_task(what, total=self.total)
        return lambda n: self.progress.advance(task, n) if self.progress is not None else None

    def counted(self, what: str, rows: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """``rows``, advancing a new bar ``what`` every 10,000."""
        advance = self.step(what)
        k = 0
        for k, row in enumerate(rows, start=1):
            if k % 10_000 == 0:
                advance(10_000)
            yield row
        advance(k % 10_000)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None


def _pid_of(folder: Path) -> int | None:
    head = folder.name[len(INIT_PREFIX):].split("-", 1)[0]
    return int(head) if head.isdigit() else None


def _commit_moves(tmp: Path, root: Path, moves: list[tuple[Path, Path]]) -> None:
    """Move the built files into the project ``root``, journaling each target first, so an init
    killed between two moves is rolled back by the next one (``remove_stale_inits``).  Under a lock
    on the folder, where alkit.toml is checked again: two inits into one folder at once had both
    said "created project", the second one's files replacing the first's."""
    with file_lock(root):
        _refuse_if_created_meanwhile(root)
        _journaled_moves(tmp, moves)


def _refuse_if_created_meanwhile(root: Path) -> None:
    if (root / CONFIG_NAME).exists():
        raise InputError(f"{root / CONFIG_NAME} already exists: another init created a project in this "
                         "directory while this one was reading its data")


def _journaled_moves(tmp: Path, moves: list[tuple[Path, Path]]) -> None:
    """Each move is journaled with the file's identity (device, inode) before it is made, and again after
    a move that copied (a store on another file system), so a rollback removes only files this init made."""
    with (tmp / _JOURNAL).open("a", encoding="utf-8") as journal:
        def note(path: Path, made: os.stat_result) -> None:
            journal.write(f"{path}\t{made.st_dev}\t{made.st_ino}\n")
            journal.flush()
            os.fsync(journal.fileno())

        for src, dst in moves:
            before = os.stat(src)
            note(dst, before)
            shutil.move(src, dst)  # a rename within one file system; a copy for a store elsewhere
            after = os.stat(dst)
            if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
                note(dst, after)


def _roll_back(tmp: Path) -> None:
    """Remove what a failed or killed init had already moved into the project: a journaled path only where
    it is still the file the init moved there (same device and inode).  A path alone was removed whatever
    it was: a data folder received with a crafted .alkit-init-*/moved.txt made `alkit init` delete any file
    it named (an untrusted-input check); a line without an identity (an older alkit's) is left alone."""
    journal = tmp / _JOURNAL
    if not journal.exists():
        return
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        path, _, ident = line.partition("\t")
        dev, _, ino = ident.partition("\t")
        if not (dev.isdigit() and ino.isdigit()):
            continue
        try:
            now = os.stat(path, follow_symlinks=False)
        except (OSError, ValueError):
            continue
        if (now.st_dev, now.st_ino) == (int(dev), int(ino)) and stat.S_ISREG(now.st_mode):
            for suffix in ("", "-wal", "-shm"):
                Path(path + suffix).unlink(missing_ok=True)


def remove_stale_inits(root: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Temp folders of inits whose process is gone (killed): roll back what each had moved in,
    unless it got as far as alkit.toml (then the project is complete), and delete the folder.  Returns
    what each such init had created in an external store (``_STORE_TABLES``: {"store": digest, "tables"}),
    with its folder, for the next init on that store to drop (``_drop_dead_tables``).  A folder holding such a
    record keeps the record alone until then: an init refused before the drop (bad input, another store) had
    deleted it, and with it the only note of those tables (a PostgreSQL check)."""
    dead: list[tuple[Path, dict[str, Any]]] = []
    for folder in root.glob(f"{INIT_PREFIX}*"):
        pid = _pid_of(folder)
        if not folder.is_dir() or (pid is not None and pid != os.getpid() and pid_alive(pid)):
            continue  # another init is running here right now
        if not (root / CONFIG_NAME).exists():
            _roll_back(folder)
            try:
                record = json.loads((folder / _STORE_TABLES).read_text(encoding="utf-8"))
            except (OSError, ValueError):
                record = None
            if isinstance(record, dict):
                dead.append((folder, record))
                for leftover in folder.iterdir():
                    if leftover.name != _STORE_TABLES:
                        shutil.rmtree(leftover, ignore_errors=True) if leftover.is_dir() else leftover.unlink(missing_ok=True)
                continue
        shutil.rmtree(folder, ignore_errors=True)
    return dead


def _store_digest(url: str) -> str:
    """An external store named without its password (none is written to disk), hashed."""
    import hashlib

    return hashlib.sha256(store_identity(url).encode()).hexdigest()


def _drop_dead_tables(url: str, dead: list[tuple[Path, dict[str, Any]]]) -> None:
    """Drop the tables an init into this folder created in this external store before it was killed (after its
    store committed, before alkit.toml): they held a full store that no project claimed, and every later init was
    refused with 'the store already holds items' (a PostgreSQL check).  The record's folder goes once they are."""
    digest = _store_digest(url)
    for folder, record in dead:
        tables = [t for t in record.get("tables") or [] if isinstance(t, str) and t in Store.table_names()]
        token = record.get("token")
        if record.get("store") == digest and isinstance(token, str) and token:
            # only the store that init filled (its token): emptied tables another project's init took since are
            # that project's (a drop by table names erased its labels; a black-box check); a record of an init
            # killed before its store committed drops nothing (its empty tables block no init)
            if tables:
                Store.drop_created(url, tables, init_token=token)
            shutil.rmtree(folder, ignore_errors=True)


def columns_shown(columns: Sequence[str], wanted: str | None = None) -> str:
    """A file's column names for a message: a name with spaces at its ends or a comma quoted (' id ' read
    as id in a plain list), and the one ``wanted`` names but for such spaces or case pointed out."""
    shown = ", ".join(repr(c) if c != c.strip() or "," in c or not c else c for c in columns)
    near = [c for c in columns if wanted is not None and c != wanted and c.strip().casefold() == wanted.strip().casefold()]
    return shown + (f" (the file's column {near[0]!r} differs from {wanted!r} only in spaces or case: name it "
                    "exactly, or fix the header)" if near else "")


def option_list(names: list[str]) -> str:
    """Column names as one --exclude / --features value a shell takes: comma-separated, a name with a comma
    in double quotes (as the options read it), the whole shell-quoted ('sepal length' was two words)."""
    quoted = ['"' + n.replace('"', '""') + '"' if any(c in n for c in ',"') or n != n.strip() else n for n in names]
    return shlex.quote(",".join(quoted))


def _refuse_nul(values: pl.Series, what: str) -> None:
    """A NUL character in an id or a label: SQLite keeps it, PostgreSQL cannot store it (a traceback, exit 1,
    a black-box check), and no label tool shows it: refused on every store, naming the row."""
    hit = values.str.contains("\x00", literal=True).fill_null(False)
    if hit.any():
        row = int(hit.arg_max())
        raise InputError(f"{what} holds a NUL character (\\x00) in data row {row + 1} ({values[row]!r}): no store "
                         "keeps one portably; remove it")


def _written_by_alkit(root: Path, db_file: Path) -> str | None:
    """What alkit itself writes at ``db_file`` in the project ``root`` (the labelers' queue files,
    bench/, the feature caches), or None."""
    try:
        path, top = db_file.resolve(), root.resolve()
    except OSError:
        return None
    if is_queue_file(path, top):
        return "the labelers' queue files (queue.csv, queue.unimported-*.csv, ...)"
    for folder in ("bench", "stem-features", "vlm-features"):
        if (top / folder) in path.parents:
            return f"{folder}/ (its own outputs)"
    return None


def _refuse_writing_over(data: Path, own: list[Path]) -> None:
    """Refuse a data file that is one of the files init writes into the project folder: `alkit init
    features.parquet` in the data's own folder replaced the user's file with alkit's (a black-box check)."""
    try:
        source = data.resolve()
    except OSError:
        return
    hit = next((p for p in own if p.resolve() == source), None)
    if hit is not None:
        raise InputError(f"{data} is where the project keeps its own {hit.name}: init would write over your data; "
                         "rename the file or make the project in another folder (-p DIR)")


def init_project(data: str | Path, project_dir: str | Path, opts: InitOptions,
                 notes: list[str] | None = None) -> ProjectConfig:
    """Create a project from ``data`` in ``project_dir``.  Raises InputError, writes nothing, on bad input.
    ``notes``, if given, receives init's hints on the features (``feature_hints``) for the caller to show.

    The feature columns are streamed from the file into features.parquet (in the temp folder)
    while they are checked; the other columns (ids, labels, split, payload) are read whole.
    """
    data, root = Path(data), Path(project_dir)
    for what, path in (("data file", data), ("project folder", root)):
        try:  # bytes that are no UTF-8 (a Windows zip's 'caf\xe9.csv'): the readers failed in words of their own
            str(path.absolute()).encode("utf-8")
        except UnicodeEncodeError:
            raise InputError(f"the {what} path {str(path)!r} is not valid UTF-8 text (a name from another system's "
                             "encoding): rename it") from None
    blocking = next((p for p in (root, *root.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        raise InputError(f"project folder {root}: {blocking} is a file, not a folder")
    dead_inits = remove_stale_inits(root) if root.is_dir() else []  # debris of a killed init goes first
    if (root / CONFIG_NAME).exists():
        raise InputError(f"{root / CONFIG_NAME} already exists: this directory already holds a project")
    _refuse_writing_over(data, [root / FEATURES_NAME, root / PAYLOAD_NAME, root / CONFIG_NAME])
    test_frac = DEFAULT_TEST_FRAC if opts.test_frac is None else opts.test_frac
    if not 0.0 <= test_frac < 1.0:
        raise InputError(f"--test-frac must be in [0, 1), got {test_frac}")
    if opts.split_col and opts.test_frac is not None:
        raise InputError("--split-col and --test-frac both choose the test split: drop --test-frac")
    if opts.test_frac is not None and not opts.hide_labels:
        raise InputError("--test-frac splits a test set off a fully labelled file and needs --hide-labels; without "
                         "it the labelled rows are the test split and the unlabelled rows the pool: drop --test-frac")
    if opts.store is not None:  # checked before any work: a bad URL was found only by the final round trip
        from sqlalchemy.engine import make_url
        from sqlalchemy.exc import ArgumentError

        if not opts.store.strip():
            raise InputError("--store is empty: pass a store URL (e.g. sqlite:///alkit.db, postgresql://host/db) or leave it out")
        try:
            make_url(opts.store)
        except ArgumentError:
            raise InputError(f"--store {opts.store!r} is not a store URL (e.g. sqlite:///alkit.db, postgresql://host/db)") from None
        from alkit.pools.store import sqlite_file

        # a relative SQLite path is inside the project folder, where the store is made: checked against the
        # current folder, a valid layout was refused and a bad one passed to fail later (a black-box check)
        db_file = sqlite_file(resolve_store_url(opts.store, root))
        if db_file is None and opts.store.startswith("sqlite"):  # in memory, or a 'file:' URI: it left a half-made
            # project that blocked a retry, and a file named ':memory:' in the current folder (an options check)
            raise InputError(f"--store {opts.store!r} names no SQLite file (an in-memory store is gone when the command "
                             "ends): give a file, e.g. sqlite:///alkit.db, or a server URL")
        relative = db_file is not None and not opts.store.startswith("sqlite:////")
        if db_file is not None and "?" in db_file.name:  # 'x.db?timeout=30' made a file of that name (a black-box check)
            raise InputError(f"--store {opts.store!r}: a SQLite store takes no URL options "
                             f"('?{db_file.name.partition('?')[2]}'): the store file would be named {db_file.name!r}; "
                             "give the file's path alone")
        in_root = db_file is not None and db_file.parent.resolve() == root.resolve()  # init makes the project folder
        if db_file is not None and not db_file.parent.is_dir() and not in_root:  # SQLite said '[Errno 2] No such file'
            what = "is a file, not a folder" if db_file.parent.exists() else "does not exist; create it first"
            raise InputError(f"--store {opts.store!r}: the folder {str(db_file.parent)!r} {what} (init makes the "
                             "store file, not its folder" + ("; a relative SQLite path is inside the project folder"
                                                            if relative else "") + ")")
        if db_file is not None and db_file.is_dir():
            raise InputError(f"--store {opts.store!r} names a folder: give the store file's name in it (e.g. "
                             f"{str(db_file / 'alkit.db')!r})")
    if opts.id_col and opts.id_col == opts.label_col:
        raise InputError(f"--id-col and --label-col are both {opts.id_col!r}: the ids and the labels need columns of their own")
    for option, col in (("--feature-col", opts.feature_col), ("--text-col", opts.text_col), ("--image-col", opts.image_col)):
        if col is not None and col == opts.label_col:  # features made from the answer
            raise InputError(f"{option} {col!r} is the label column; the features must come from another column")
        if col is not None and col == opts.id_col and option != "--image-col":  # learned from the ids (a path may be both)
            raise InputError(f"{option} {col!r} is the id column; the features must come from another column")
        if col is not None and col == opts.split_col:  # every item's features were the embedding of 'test' or 'pool'
            raise InputError(f"{option} {col!r} is the --split-col column (test/pool marks); the features must come "
                             "from another column")
        if col is not None and option != "--feature-col" and opts.features and col in opts.features:
            raise InputError(f"{option} {col!r} is also named by --features: the {option[2:6]} column is embedded, "
                             "--features are numeric columns beside it; drop it from --features")
    if opts.initial_labeled < 0:
        raise InputError(f"--initial-labeled must be >= 0, got {opts.initial_labeled}")
    if opts.initial_labeled and opts.hide_labels:
        raise InputError("--initial-labeled hands labelled rows to the learner in a project labelled by people; with "
                         "--hide-labels every pool label is hidden until a run picks it (runs start from --initial "
                         "picks): drop --initial-labeled")
    if not 0 <= opts.seed <= SEED_MAX:
        raise InputError(f"--seed must be in 0..{SEED_MAX}, got {opts.seed}")
    if opts.split_col and opts.initial_labeled:
        raise InputError("--split-col and --initial-labeled both choose the learner's first labels: drop "
                         "--initial-labeled (without --hide-labels, labeled rows marked pool go to the learner)")
    if opts.impute and (opts.feature_col or ((opts.text_col or opts.image_col) and not opts.features)):
        raise InputError("--impute fills missing cells of numeric feature columns, and "
                         + ("--feature-col vectors must be complete" if opts.feature_col else
                            "--text-col/--image-col give none (add numeric ones with --features)") + ": drop --impute")
    if opts.image_shape is not None and opts.impute:  # its COL=missing features broke the image's layout
        raise InputError("--impute adds a 0/1 feature after each column it fills, which would break the pixel layout "
                         "--image-shape describes: fill the missing pixels before init (e.g. with 0), or drop --image-shape")
    if opts.image_shape is not None and (opts.text_col or opts.image_col):
        raise InputError("--image-shape describes pixel features; --text-col/--image-col produce embeddings: drop one")
    # zero-padded label codes ('01', '001') are the classes they spell, not one number
    source = TableSource(data, text_cols=[opts.id_col] if opts.id_col else [],
                         codes_as_text=[opts.label_col] if opts.task != "regression" else False)
    if opts.text_col or opts.image_col:
        source.require_text(opts.text_col or opts.image_col)
    if source.empty_rows and notes is not None:
        notes.append(f"note: {source.empty_rows} empty row{'s' if source.empty_rows > 1 else ''} of {data.name} left out "
                     "(blank lines, or lines of separators only)")
    row_ids = not opts.id_col  # ids made from the row numbers, kept in the payload as a column of their own
    if row_ids and source.path.suffix.lower() in JSON_LINES and source.first_inner_empty is None:
        from alkit.pools.tables import first_inner_blank_line

        source.first_inner_empty = first_inner_blank_line(source.path)
    if row_ids and source.first_inner_empty is not None:  # row N would not be the file's N-th data row
        raise InputError(f"{data.name} has an empty row on line {source.first_inner_empty}, with data after it: "
                         "without --id-col the items are named by their row number, which would skip it, so a "
                         "labeler's 'row N' in a spreadsheet would be another item; remove the empty rows, or give "
                         "--id-col")
    if row_ids:
        opts = replace(opts, id_col=next((c for c in ROW_ID_NAMES if c not in source.columns), ""))
        if not opts.id_col:
            raise InputError(f"the file has columns {', '.join(ROW_ID_NAMES)}: name the id column with --id-col")
    streamed = streamed_columns(source.schema, opts)
    keep = {opts.id_col, opts.label_col, opts.split_col}
    read = [c for c in source.columns if c not in streamed or c in keep]  # all but the feature matrix
    # a file that cannot be read says so first; with nothing to read (an all-numeric file whose label
    # column is misspelled: the label column is always read), reading said "no rows"
    df = source.frame(read) if read else pl.DataFrame()
    for col, what in ((opts.id_col, "id"), (opts.label_col, "label")):
        if col not in source.columns and not (row_ids and what == "id"):
            raise InputError(f"{what} column {col!r} not found; columns: {columns_shown(source.columns, col)}")
    if row_ids:  # 1 for the first data row, as a spreadsheet shows the rows below the header
        df = df.with_columns(pl.int_range(1, df.height + 1).cast(pl.Utf8).alias(opts.id_col))
    marked_test = _split_column(df, source.columns, opts) if opts.split_col else None
    if source.path.suffix.lower() in JSON_LINES:  # a list or object taken as the JSON text of an id or a class
        _refuse_json_structures(source.path, [c for c in (opts.id_col, opts.label_col, opts.split_col) if c])
    ids = df[opts.id_col]
    if ids.null_count():  # the rows named: a count alone left them to be searched for (a black-box check)
        n_missing = ids.null_count()
        raise InputError(f"id column {opts.id_col!r} has {n_missing} missing id{'' if n_missing == 1 else 's'} "
                         f"(rows {_rows(ids.is_null())}; 1 = the first data row)")
    ids_str = id_text(ids, opts.id_col)
    if ids.dtype.is_float():  # the payload's id column as the store names the items
        df = df.with_columns(ids_str.alias(opts.id_col))
    _refuse_nul(ids_str, f"id column {opts.id_col!r}")
    if opts.label_col in df.columns and df[opts.label_col].dtype == pl.Utf8:
        _refuse_nul(df[opts.label_col], f"label column {opts.label_col!r}")
    dup = ids_str.is_duplicated()
    if dup.any():
        shown = ", ".join(f"{id_list([v])} (rows {_rows(ids_str == v)})"
                          for v in ids_str.filter(dup).unique(maintain_order=True).head(5).to_list())
        raise InputError(f"duplicate ids in {opts.id_col!r}: {shown}; 1 = the first data row")

    made = [p for p in (root, *root.parents) if not p.exists()]  # the folders this init makes, deepest first
    root.mkdir(parents=True, exist_ok=True)
    # everything is built in the temp folder (the features while they are checked), and moved in at the end
    tmp = Path(tempfile.mkdtemp(prefix=f"{INIT_PREFIX}{os.getpid()}-", dir=root)).absolute()
    store, created, db_file, build_url = None, [], None, ""
    bar = _InitProgress(opts.progress and (df.height >= PROGRESS_MIN_ROWS
                                           or df.height * len(source.columns) >= PROGRESS_MIN_CELLS), df.height)
    try:
        encoded = bool(opts.text_col or opts.image_col)  # the encoders embed the column in memory
        # the choice of columns is checked first, then the labels, then the values (while they are
        # written or encoded: the slow part comes last)
        if encoded:
            _encoder_column(df, opts)
        else:
            _check_exclude(opts)
            columns = feature_names(df, source.columns, source.schema, opts,
                                    text_numbers=source.path.suffix.lower() in (".csv", ".tsv", ".tab"),
                                    json_path=source.path if source.path.suffix.lower() in JSON_LINES else None)
        sp = _split(df, opts, test_frac, marked_test)
        pool_n = sp.split_n == "pool"
        unmeasured = _classes_without_test_rows(sp)
        if unmeasured and notes is not None:
            notes.append(_unmeasured_note(unmeasured, opts))
        if encoded:
            X, feature_names_, one_hot, imputed = extract_features(df, opts, data.resolve().parent, pool_n)
            n_features, constant_f = X.shape[1], None
            write_features(tmp / FEATURES_NAME, X)
            del X
        else:
            feature_names_, n_features, one_hot, imputed, constant_f = stream_features(source, df, opts, tmp / FEATURES_NAME,
                                                                           pool_n, columns, bar.step("features"))
        if encoded and not opts.features and notes is not None:  # numeric columns went to the payload unsaid
            numeric = [c for c in df.columns if c not in (opts.id_col, opts.label_col, opts.split_col, opts.text_col,
                                                           opts.image_col) and df[c].dtype.is_numeric()]
            if numeric:
                notes.append(f"note: the features are the {'text' if opts.text_col else 'image'} embedding; numeric "
                             f"column{'s' if len(numeric) > 1 else ''} {', '.join(numeric[:6])}{' ...' if len(numeric) > 6 else ''} "
                             f"stay{'' if len(numeric) > 1 else 's'} in the payload (add them with --features "
                             f"{','.join(numeric[:6])})")
        named = [] if encoded or opts.feature_col else feature_names_  # an embedding's dimensions have no names
        hints = feature_hints(tmp / FEATURES_NAME, named, constant_f, list(one_hot), sp.labels, sp.task, opts.seed,
                              pixels=opts.image_shape is not None or pixel_shape_hint(named) is not None)
        if notes is not None:
            notes.extend(hints)
        columns_in_file = [opts.id_col, *source.columns] if row_ids else source.columns  # the made ids: a payload column
        cfg, items, shared_labels = _plan(df, columns_in_file, ids_str, marked_test, sp, feature_names_, n_features,
                                          opts, test_frac, data)
        cfg.one_hot, cfg.imputed = one_hot, imputed
        if PAYLOAD_KEY in cfg.payload_cols:
            raise InputError(f"column {PAYLOAD_KEY!r} has the name alkit gives its row keys in {PAYLOAD_NAME}: rename it")
        url = resolve_store_url(opts.store or f"sqlite:///{DEFAULT_DB}", root)
        db_file = Path(url[len("sqlite:///"):]) if url.startswith("sqlite:///") else None
        if db_file is not None:
            if data.resolve() in {f.resolve() for f in (db_file, *(db_file.with_name(db_file.name + e)
                                                                    for e in ("-wal", "-shm")))}:
                raise InputError(f"--store {opts.store} names the data file {data}: init would write the store over "
                                 "your data; give the store another file name (default: alkit.db)")
            own = {(root / n).resolve(): n for n in (FEATURES_NAME, PAYLOAD_NAME, CONFIG_NAME)}
            if db_file.resolve() in own:  # a traceback ('file is not a database'), or a half-made project
                raise InputError(f"--store {opts.store} is the project's own {own[db_file.resolve()]}: give the store "
                                 "another file name (default: alkit.db)")
            written = _written_by_alkit(root, db_file)
            if written:  # `run` rewrote a store named queue.csv as the labelers' queue (a black-box check)
                raise InputError(f"--store {opts.store} is where alkit writes {written}: give the store another file "
                                 "name (default: alkit.db)")
        if db_file is not None and db_file.exists():
            _refuse_if_created_meanwhile(root)
            raise InputError(f"store file {db_file} already exists (it may hold people's labels: move it aside, "
                             "do not delete it, or pass another --store)")
        for name in (FEATURES_NAME, PAYLOAD_NAME):  # a user's own file of that name was replaced without a word
            if (root / name).exists():  # (e.g. `alkit embed ... --out features.parquet` in the folder; a check)
                _refuse_if_created_meanwhile(root)
                raise InputError(f"{root / name} already exists and is not a project's (no {CONFIG_NAME} beside it): "
                                 "init writes its own file of that name; move it aside or init into another folder")
        # the embedded store is built in the temp folder too, and moved in with the rest
        build_url = f"sqlite:///{tmp / db_file.name}" if db_file is not None else url
        df.select(cfg.payload_cols).with_columns(pl.Series(PAYLOAD_KEY, np.arange(cfg.n_items, dtype=np.int64))).write_parquet(
            tmp / PAYLOAD_NAME)
        if db_file is None and dead_inits:
            _drop_dead_tables(url, dead_inits)
        store = Store(build_url, create=True)
        created = store.created_tables
        token = secrets.token_hex(16)  # this init's, in the store's meta: a later init drops only the store it names
        if db_file is None and created:  # what a kill from here on leaves in the store, for the next init to drop
            record = tmp / _STORE_TABLES
            record.write_text(json.dumps({"store": _store_digest(url), "tables": created, "token": token}),
                              encoding="utf-8")
        store.initialise(bar.counted("items", items), shared_labels, cfg.classes,
                         features_id=FeatureReader(tmp / FEATURES_NAME).file_id, made_as=cfg.made_as(),
                         init_token=token)
        store.dispose()
        store = None
        cfg.store_token = token  # the store's own: another init's store of the same data is told apart by it
        write_config(tmp, cfg)
        moves = [(tmp / FEATURES_NAME, root / FEATURES_NAME), (tmp / PAYLOAD_NAME, root / PAYLOAD_NAME)]
        if db_file is not None:
            # SQLite makes its file 0644 whatever the umask: a team's umask 002 left a store that teammates could
            # not import into ('the store is read-only'; an environment check); its -wal/-shm files follow it
            os.chmod(tmp / db_file.name, 0o666 & ~current_umask())
            moves.append((tmp / db_file.name, db_file))
        _commit_moves(tmp, root, [*moves, (tmp / CONFIG_NAME, root / CONFIG_NAME)])  # alkit.toml last
    except BaseException:
        if store is not None:
            store.dispose()
        if not (root / CONFIG_NAME).exists():
            _roll_back(tmp)
            if created and db_file is None:  # an external store: drop exactly the tables this init created
                Store.drop_created(build_url, created)
            shutil.rmtree(tmp, ignore_errors=True)
            for folder in made:  # a refused init leaves no empty project folder behind, nor the folders above it
                if folder.is_dir() and not any(folder.iterdir()):
                    folder.rmdir()
        raise
    finally:
        bar.close()
        shutil.rmtree(tmp, ignore_errors=True)
    for folder, _ in dead_inits:  # a project now claims this folder: no later init here reads them
        shutil.rmtree(folder, ignore_errors=True)
    load_project(root)  # round-trip check of what was written
    return cfg


@dataclass
class Split:
    """The labels as text (missing: null), the task and classes, and each row's split and whether
    its label goes to the learner at init."""

    task: str
    labels: pl.Series
    classes: list[str]
    split_n: np.ndarray  # 'test' | 'pool'
    shared_n: np.ndarray


def _classes_without_test_rows(sp: Split) -> list[tuple[str, int]]:
    """(class, its labelled rows) of the classes with labelled rows but none in a non-empty test split: a rare
    class the stratified split left all in the pool (3 of 1,191 rows), whose accuracy no metric then measures."""
    if sp.task != "classification" or not (sp.split_n == "test").any():
        return []
    labels = sp.labels.to_numpy()
    tested = set(labels[sp.split_n == "test"].tolist())
    counts: dict[str, int] = {}
    for v in labels[sp.labels.is_not_null().to_numpy()].tolist():
        counts[v] = counts.get(v, 0) + 1
    return [(c, counts[c]) for c in sp.classes if c in counts and c not in tested]


def _unmeasured_note(unmeasured: list[tuple[str, int]], opts: InitOptions) -> str:
    shown = ", ".join(f"{c!r} ({k} row{'' if k == 1 else 's'})" for c, k in unmeasured[:5])
    more = f" and {len(unmeasured) - 5} more" if len(unmeasured) > 5 else ""
    # the remedy the options given allow (--test-frac beside --split-col is refused; a check of the note)
    fix = ("mark some of its rows test in the --split-col column" if opts.split_col else
           "raise --test-frac, or mark test rows with --split-col" if opts.hide_labels else
           "label more of its rows in the file (labelled rows not given to the learner are the test split)")
    return (f"note: no test item of the class{'es' if len(unmeasured) > 1 else ''} {shown}{more}: accuracy and the "
            f"other test metrics will not measure it; {fix}")


def _split(df: pl.DataFrame, opts: InitOptions, test_frac: float, marked_test: np.ndarray | None) -> Split:
    """The label checks, the test split and the initial labels (before the features: --impute's
    medians come from the pool rows only)."""
    label_raw = _blank_labels_missing(df[opts.label_col])
    if opts.task != "classification" and _is_text(label_raw.dtype):  # '1,300' would be a class, unsaid
        example = _comma_numbers(label_raw)
        if example is not None:
            raise InputError(_comma_message(f"label column {opts.label_col!r}", example)
                             + ("" if opts.task else "; if they are class names, pass --task classification"))
    if opts.classes is not None and opts.task == "regression":
        raise InputError("--classes declares the classes of a classification project, not of --task regression")
    task = "classification" if opts.classes is not None else opts.task or _infer_task(label_raw, opts.max_classes)
    labels = _label_strings(label_raw, task)
    has_label = labels.is_not_null().to_numpy()
    classes = _sorted_classes(labels.drop_nulls().to_list()) if task == "classification" else []
    if opts.classes is not None:
        declared = _declared_classes(opts.classes)
        unknown = [c for c in classes if c not in declared]
        if unknown:
            raise InputError(f"label column {opts.label_col!r} holds {', '.join(map(repr, unknown[:5]))}"
                             f"{' ...' if len(unknown) > 5 else ''}, not among --classes ({', '.join(declared)})")
        classes = _sorted_classes(declared)
    errors = [c for c in classes if is_spreadsheet_error(c)]
    if errors:  # '#VALUE!' and '#REF!' became classes of the project, unsaid (a black-box round)
        rows = int(labels.is_in(errors).sum())
        raise InputError(f"label column {opts.label_col!r} holds a spreadsheet's formula errors "
                         f"({', '.join(map(repr, errors))}; {rows} row{'s' if rows != 1 else ''}), not classes: fix "
                         "those cells, or empty them to leave the rows unlabelled")
    if any(is_skip_label(c) for c in classes):  # an import reads it as "skip this item": that class could never be labelled
        raise InputError(f"a class is named {SKIP_LABEL!r}, which label files use to skip an item: rename that class")
    if task == "classification" and len(classes) < 2:
        constant = len(classes) == 1 and has_label.all() and opts.classes is None
        raise InputError(f"classification needs at least 2 classes in {opts.label_col!r}, found {len(classes)}"
                         + ("" if opts.classes is not None else
                            f" ({classes[0]!r} in every row: a constant target; --task regression takes it)" if constant else
                            f"; the labels given are all {classes[0]!r}: declare every class with --classes a,b,c"
                            if classes else "; a pool no one has labelled yet: declare them with --classes a,b,c"
                            + (", or give --task regression for a numeric target" if opts.task is None else "")))
    if task == "classification" and len(classes) > opts.max_classes and opts.task != "classification":
        numeric = label_raw.dtype.is_numeric()  # only a numeric column can be a regression target
        if not numeric:  # numbers but for a few cells (a typo, a note): name the first, as for a feature column
            text = label_raw.cast(pl.Utf8)
            words = text.is_not_null() & text.str.strip_chars().cast(pl.Float64, strict=False).is_null()
            if 0 < words.sum() <= max(5, 0.01 * text.is_not_null().sum()):
                i = int(words.arg_true()[0])
                raise InputError(f"label column {opts.label_col!r} holds numbers but row {i + 1} (id "
                                 f"{df[opts.id_col][i]}) holds {text[i]!r}: correct or empty that cell (an empty "
                                 "label is an unlabelled row)")
        raise InputError(f"{len(classes)} classes in {opts.label_col!r}, more than {opts.max_classes}: pass --task "
                         + ("classification to keep them as classes, or --task regression for a numeric target"
                            if numeric else "classification to keep them all as classes"))

    rng = np.random.default_rng(opts.seed)
    n = df.height
    split = np.full(n, "pool", dtype=object)
    shared = np.zeros(n, dtype=bool)
    if opts.hide_labels:
        if not has_label.all():
            raise InputError(
                f"--hide-labels needs a label for every row; {int((~has_label).sum())} rows have none "
                f"(ids: {_first_ids(df, opts.id_col, pl.Series(~has_label))})"
            )
        if marked_test is not None:
            split[marked_test] = "test"
        elif task == "classification":
            split[_stratified_test_mask(labels.to_list(), test_frac, rng)] = "test"
        else:
            split[rng.permutation(n)[: int(round(test_frac * n))]] = "test"
    elif marked_test is not None:
        unlabeled_test = marked_test & ~has_label
        if unlabeled_test.any():
            n_bad = int(unlabeled_test.sum())
            raise InputError(f"{n_bad} row{'' if n_bad == 1 else 's'} marked test in split column {opts.split_col!r} "
                             f"ha{'s' if n_bad == 1 else 've'} no "
                             f"label (ids: {_first_ids(df, opts.id_col, pl.Series(unlabeled_test))})")
        split[marked_test] = "test"
        shared = ~marked_test & has_label  # labeled pool rows: the learner's first labels
    else:
        labeled_idx = rng.permutation(np.where(has_label)[0])
        if opts.initial_labeled > len(labeled_idx):
            raise InputError(f"--initial-labeled {opts.initial_labeled} exceeds the {len(labeled_idx)} labeled rows")
        shared[labeled_idx[: opts.initial_labeled]] = True
        split[labeled_idx[opts.initial_labeled :]] = "test"
    if not (split == "pool").any():
        if not opts.hide_labels and marked_test is None and has_label.all():
            raise InputError("the pool is empty: every row has a label, and labelled rows are the test split; to "
                             "simulate labelling on a fully labelled file pass --hide-labels (a --test-frac share "
                             "becomes the test split)")
        raise InputError("the pool is empty: every row went to the test split")
    return Split(task, labels, classes, split, shared)


def _plan(df: pl.DataFrame, columns: list[str], ids_str: pl.Series, marked_test: np.ndarray | None, sp: Split,
          feature_names_: list[str], n_features: int, opts: InitOptions, test_frac: float,
          data: Path) -> tuple[ProjectConfig, Iterator[dict[str, Any]], list[dict[str, Any]]]:
    """The project's config, its items table (a generator: a large pool is never a list of rows)
    and the labels given at init."""
    image_shape = _image_shape(opts.image_shape, n_features) if opts.image_shape is not None else []
    task, labels, classes, split, shared = sp.task, sp.labels, sp.classes, sp.split_n, sp.shared_n
    shared_keys = np.flatnonzero(shared)
    shared_values = labels.gather(shared_keys).to_list()
    shared_labels = [{"item_key": int(k), "value": v, "source": "init", "run_id": None}
                     for k, v in zip(shared_keys, shared_values)]
    features_in_payload = feature_names_ if not opts.feature_col else [opts.feature_col]
    payload_cols = [c for c in columns if c != opts.label_col and c not in features_in_payload]
    store_token = opts.store or f"sqlite:///{DEFAULT_DB}"
    cfg = ProjectConfig(
        task=task, id_col=opts.id_col, label_col=opts.label_col, n_items=df.height, n_features=n_features,
        store=without_password(store_token), classes=classes,
        feature_cols=feature_names_ if not opts.feature_col else [],
        feature_col=opts.feature_col or "", hide_labels=opts.hide_labels,
        # with --split-col, the share of rows the column put in the test split
        test_frac=float(marked_test.mean()) if marked_test is not None else test_frac,
        seed=opts.seed, source=str(data.resolve()), payload_cols=payload_cols,
        encoder="text:all-MiniLM-L6-v2" if opts.text_col else "image:efficientnet-lite0" if opts.image_col else "",
        split_col=opts.split_col or "", image_shape=image_shape, image_col=opts.image_col or "", format=PROJECT_FORMAT,
    )
    return cfg, _item_rows(ids_str, labels, split, shared, opts.hide_labels), shared_labels


def _item_rows(ids_str: pl.Series, labels: pl.Series, split_n: np.ndarray, shared_n: np.ndarray,
               hide_labels: bool, chunk: int = 20_000) -> Iterator[dict[str, Any]]:
    """The items table's rows, made a chunk at a time as the store inserts them."""
    for start in range(0, len(ids_str), chunk):
        stop = start + chunk
        for key, item_id, lab, split, is_shared in zip(range(start, start + chunk), ids_str[start:stop].to_list(),
                                                       labels[start:stop].to_list(), split_n[start:stop],
                                                       shared_n[start:stop]):
            visible = split == "test" or hide_labels
            yield {"key": key, "item_id": item_id, "split": split, "state": "labeled" if is_shared else "unlabeled",
                   "label": lab if visible else None}
