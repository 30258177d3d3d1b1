"""What init can tell about the features once they are written: columns that carry nothing, and
columns that give the answer away.

Why: both make a run meaningless without failing it.  A file whose every feature is constant runs
at chance; a feature derived from the label (the class's code beside its name, a copy of the
target) gives perfect accuracy from the first batch, so every strategy looks alike and the
learning curves measure nothing.  init refuses the first (``FeatureValues.check``, beside the
other variation checks) and names the second here (it may be meant: a hint, not a refusal).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from alkit.pools.features import iter_masked_batches, open_features

LEAK_SAMPLE = 50_000  # labelled rows read for the label-leak check (a seeded random subset beyond that)
LEAK_CORR = 0.99999  # regression: |correlation| with the target at least this is a copy of it


def _labelled_sample(path: Path, labelled_n: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(keys_s, X_s_f): the labelled rows, or a seeded random LEAK_SAMPLE of them."""
    keys = np.flatnonzero(labelled_n)
    if len(keys) > LEAK_SAMPLE:
        keys = np.sort(np.random.default_rng(seed).choice(keys, LEAK_SAMPLE, replace=False))
    mask = np.zeros(len(labelled_n), dtype=bool)
    mask[keys] = True
    parts = list(iter_masked_batches(open_features(path), 65_536, mask))
    if not parts:
        return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
    return np.concatenate([k for k, _ in parts]), np.concatenate([x for _, x in parts])


def _one_to_one(codes_s: np.ndarray, labels_s: pl.Series) -> bool:
    """Whether the codes and the labels determine each other on these rows."""
    pairs = pl.DataFrame({"c": codes_s, "y": labels_s})
    k = pairs["y"].n_unique()
    return k >= 2 and pairs["c"].n_unique() == k and pairs.unique().height == k


def feature_hints(path: Path, names: list[str], constant_f: np.ndarray | None, one_hot: list[str], labels: pl.Series,
                  task: str, seed: int, *, pixels: bool = False) -> list[str]:
    """Hints on the named feature columns of ``path`` (alkit's features.parquet, columns ``names``;
    ``constant_f``: whether each holds one value in every row, as the init's checks found it (a file
    of none but constant columns is refused there); ``one_hot``: the categorical columns encoded as
    ``col=value`` groups; ``labels``: one label per row as text, null where unknown; ``pixels``: the
    columns are an image's, whose constant border pixels are no news and must stay for its layout)."""
    if not names or constant_f is None:  # a vector column or an encoder's embedding: no names to report
        return []
    hints = []
    if constant_f.any() and not pixels:
        dead = [n for n, c in zip(names, constant_f) if c]
        hints.append(f"note: feature{'s' if len(dead) > 1 else ''} {', '.join(dead[:8])}{', ...' if len(dead) > 8 else ''} "
                     f"hold{'' if len(dead) > 1 else 's'} one value in every row and carr{'y' if len(dead) > 1 else 'ies'} "
                     f"nothing (leave {'them' if len(dead) > 1 else 'it'} out with --exclude)")
    labelled_n = labels.is_not_null().to_numpy()
    keys_s, X_s_f = _labelled_sample(path, labelled_n, seed)
    if len(keys_s) < 10:
        return hints
    y_s = labels.gather(keys_s)
    leaks = []
    if task == "classification":
        if len(keys_s) < max(30, 10 * y_s.n_unique()):  # too few rows per class to tell a code from chance
            return hints
        groups = {c: [j for j, n in enumerate(names) if n.startswith(f"{c}=")] for c in one_hot}
        in_group = {j for js in groups.values() for j in js}
        for c, js in groups.items():
            if js and _one_to_one(X_s_f[:, js].argmax(1), y_s):
                leaks.append(c)
        leaks += [names[j] for j in range(len(names)) if j not in in_group and not constant_f[j]
                  and _one_to_one(X_s_f[:, j], y_s)]
        why = ("matches", "match", "the label one to one on every labelled row")
    else:
        y = y_s.cast(pl.Float64).to_numpy()
        if y.std() > 0:
            leaks = _regression_leaks(X_s_f.astype(np.float64), y, names)
        why = ("is", "are", "a function of the label on every labelled row (linear, monotone, or the mark of its "
                            "most common value)")
    if leaks:
        one = len(leaks) == 1
        hints.append(f"hint: feature{'' if one else 's'} {', '.join(leaks[:5])} {why[0] if one else why[1]} {why[2]}: "
                     "if derived from the label (a copy, its code or its name), the model reads the answer from "
                     f"{'it' if one else 'them'} and every strategy scores alike; init again with --exclude "
                     f"{','.join(leaks[:5])}")
    return hints


def _corr_n(X_s_f: np.ndarray, y_s: np.ndarray) -> np.ndarray:
    """Pearson correlation of each column with ``y_s`` (0 for a constant column)."""
    sd = X_s_f.std(0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = ((X_s_f - X_s_f.mean(0)) * (y_s - y_s.mean())[:, None]).mean(0) / (sd * y_s.std())
    return np.where(sd > 0, np.nan_to_num(r), 0.0)


def _regression_leaks(X_s_f: np.ndarray, y_s: np.ndarray, names: list[str]) -> list[str]:
    """Columns that copy a regression target: a linear function of it; a monotone one (log, square
    root: rank correlation), read on the rows where its ``col=missing`` companion (--impute) is 0,
    whose median fill is no copy; or a 0/1 column marking its most common value (``meddol=0``: a
    missing-indicator of log(meddol) is exactly that)."""
    from scipy.stats import rankdata

    leaks = set(np.flatnonzero(np.abs(_corr_n(X_s_f, y_s)) >= LEAK_CORR))
    index = {n: j for j, n in enumerate(names)}
    values, counts = np.unique(y_s, return_counts=True)
    mode_mark = y_s == values[counts.argmax()]
    marks_mode = 0.05 <= mode_mark.mean() < 1.0
    for j, name in enumerate(names):
        if j in leaks:
            continue
        x = X_s_f[:, j]
        if marks_mode and np.isin(x, (0.0, 1.0)).all() and (np.array_equal(x == 1, mode_mark)
                                                             or np.array_equal(x == 0, mode_mark)):
            leaks.add(j)
            continue
        rows = X_s_f[:, index[f"{name}=missing"]] == 0 if f"{name}=missing" in index else np.ones(len(x), bool)
        if rows.sum() >= 10 and x[rows].std() > 0 and y_s[rows].std() > 0:
            rho = _corr_n(rankdata(x[rows])[:, None], rankdata(y_s[rows]))[0]
            if abs(rho) >= LEAK_CORR:
                leaks.add(j)
    return [names[j] for j in sorted(leaks)]
