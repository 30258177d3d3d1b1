"""The fixed choices the command line offers, as plain data with no imports: `alkit --help` must
list them without loading the modules that implement them (torch, SQLAlchemy, polars).  Each
implementing module takes its list from here or is checked against it by tests/test_cli_help.py."""

from __future__ import annotations

import unicodedata

QUEUE_FORMATS: tuple[str, ...] = ("csv", "jsonl", "parquet", "label-studio")  # = alkit.pools.labelfiles.FORMATS
LABELS_FORMATS: tuple[str, ...] = QUEUE_FORMATS[:3]  # `queue labels` writes no Label Studio tasks file
ON_CONFLICT: tuple[str, ...] = ("error", "keep", "replace")
SKIP_LABEL = "__skip__"  # the label text that means "skip this item"
# the id column `alkit init` makes without --id-col (items named by their row number): the first free name
ROW_ID_NAMES = ("row", "row_number", "alkit_row")

# Cells of a label column that mean "no label", in a data file and an answers file alike: the missing-value
# markers that no class is named ('NA', as R and pandas write a missing cell; '#N/A', a spreadsheet's failed lookup,
# became a class of its own; not 'none', '?' or '-', which a feature column also reads as missing but a class may be
# called)
MISSING_LABELS = ("na", "n/a", "#n/a", "nan", "null",
                  "#n/a n/a", "#na", "<na>")  # pandas' own markers too: '<NA>' is str(pd.NA) (a black-box round)
# a spreadsheet's formula errors, in a label cell: no class a person gave (a black-box round: '#VALUE!' became one)
SPREADSHEET_ERRORS = ("#value!", "#ref!", "#div/0!", "#name?", "#num!", "#null!", "#spill!", "#calc!", "#getting_data",
                      # Excel's newer ones (data types, connections, Python in cells; a black-box round)
                      "#blocked!", "#field!", "#connect!", "#unknown!", "#busy!", "#python!", "#external!",
                      "#error!")  # Google Sheets' parse error


def fold_case(text: str) -> str:
    """A class name as an answer matches it: NFKC (full-width 'ｓｅ' is 'se', as '＃ＲＥＦ！' is '#REF!') in lower
    case.  Only case was folded: a full-width answer was an unknown class whose hint added a visual twin, and a
    full-width '＿＿ｓｋｉｐ＿＿' became a class label, not a skip.  Lower case, not casefold: casefold makes 'ß'
    'ss', so the answer 'Masse' (mass) was filed as the class 'Maße' (measures) without a word (black-box checks)."""
    return unicodedata.normalize("NFKC", text).lower()


def _folded(text: str) -> str:
    """A cell as the marker lists spell it: ``fold_case``'s (full-width '＃ＲＥＦ！' is '#REF!'), stripped."""
    return fold_case(text).strip()


def is_missing_label(text: str) -> bool:
    """'NA', '#N/A', 'null' ... (MISSING_LABELS, any case, in full-width characters too): no label.  Read through
    NFKC as the formula errors are: a full-width '＃Ｎ／Ａ' was a class where '＃ＲＥＦ！' was refused (a check)."""
    return _folded(text) in MISSING_LABELS


def is_spreadsheet_error(text: str) -> bool:
    """'#VALUE!', '#REF!', '#DIV/0!' ...: a spreadsheet's formula error shown in a cell (any case, in full-width
    characters too: NFKC reads '＃REF！' as '#REF!')."""
    folded = _folded(text)
    # LibreOffice writes its errors as 'Err:502' (its codes are 501-539, and 5xx is kept for more); 'err:404', an
    # error-code class, was refused as one (a black-box check)
    return folded in SPREADSHEET_ERRORS or (len(folded) == 7 and folded.startswith("err:5") and folded[4:].isdigit())


TASKS: tuple[str, ...] = ("classification", "regression")
ENGINES: tuple[str, ...] = ("local", "ray")  # = alkit.engines.ENGINES
HEADS: tuple[str, ...] = ("gaussian", "hetero", "quantile", "buckets")  # VBLL regression heads
COVARIANCES: tuple[str, ...] = ("dense", "diagonal", "shared")  # VBLL covariance
INITIAL_SELECTORS: tuple[str, ...] = ("random", "coldstart")  # model-free first batch
SCORERS: tuple[str, ...] = ("vbll", "laplace", "csd", "gradnorm", "ensemble", "mc-dropout", "sve", "none", "sklearn",
                            "bayesvlm")  # = alkit.registry.SCORERS
ACQUISITIONS: tuple[str, ...] = ("epistemic", "bald", "epig", "epig-decision", "decision-flip", "decision-bald",
                                 "decision-risk", "margin", "entropy", "least-confident")  # = alkit.acquisition.ACQUISITIONS
# the words of an acquisition's ``needs`` a scorer's registry entry answers (ScorerInfo.provides, epistemic),
# checked by name before a run; any other word names a Prediction field or extras key, checked on the Prediction
CAPABILITIES = frozenset({"probs", "posterior", "members", "epistemic_n"})
HIGHER_IS_BETTER = frozenset({"accuracy", "balanced_accuracy", "macro_f1", "cv_accuracy"})  # every other metric alkit reports (nll, ece, mae, rmse, crps, ...) is lower-is-better
# The metrics a cycle can record, by task: alkit.metrics' classification_metrics / regression_metrics
# (nll10, ece10 where the project has bucket edges) and the cross-validated curve of `--stop forecast`
# without a test split (tests/test_bench.py checks the metric functions against these)
METRICS: dict[str, tuple[str, ...]] = {
    "classification": ("accuracy", "balanced_accuracy", "macro_f1", "nll", "ece", "cv_accuracy"),
    "regression": ("mae", "rmse", "nll", "crps", "nll10", "ece10", "cv_crps"),
}

# The values a metric can take, where bounded (a --target outside them is never reached: every row read
# 'never' after the whole bench); nll of a regression density can be negative, so it is unbounded
METRIC_RANGE: dict[str, tuple[float, float]] = {
    **{m: (0.0, 1.0) for m in ("accuracy", "balanced_accuracy", "macro_f1", "cv_accuracy", "ece", "ece10")},
    **{m: (0.0, float("inf")) for m in ("mae", "rmse", "crps", "cv_crps")},
}

# Seeds of runs and splits: 0 .. 2^31 - 1, the range of the store's seed column on every backend
# (PostgreSQL's INTEGER is 32-bit; a larger --seed failed with an overflow traceback)
SEED_MAX = 2**31 - 1


# what other active-learning libraries call a strategy alkit has (modAL, small-text, scikit-activeml, baal)
PEER_NAMES = {"uncertainty": "least-confident", "uncertainty_sampling": "least-confident",
              "least_confidence": "least-confident", "leastconfidence": "least-confident",
              "margin_sampling": "margin", "smallest_margin": "margin", "breaking_ties": "margin",
              "entropy_sampling": "entropy", "max_entropy": "entropy", "coreset": "kcenter", "core_set": "kcenter",
              "greedy_coreset": "kcenter", "k_center": "kcenter", "kcenter_greedy": "kcenter",
              "random_sampling": "random", "batch_bald": "batchbald", "bald_sampling": "bald"}


def peer_name_hint(name: str, known: object) -> str:
    """' (did you mean 'kcenter'?)' for another library's name or spelling of one of ``known``, else ''."""
    if not isinstance(name, str):  # an object given for a name: its own refusal says so, no hint
        return ""
    key = name.strip().casefold().replace("-", "_").replace(" ", "_")
    for candidate in (PEER_NAMES.get(key), key.replace("_", "-"), key.replace("_", "")):
        if candidate and candidate in known and candidate != name:
            return f" (did you mean {candidate!r}?)"
    return ""


def is_skip_label(text: str | None) -> bool:
    """Whether a label cell is the skip token, in any case and character width ('__SKIP__' was read as an unknown
    class, and the hint to add it made a class of the skip)."""
    return text is not None and _folded(text) == SKIP_LABEL


def class_number(name: str) -> float | None:
    """The number a class name or an answer is read as (as ``queue import`` reads one: no underscores, which
    float() would skip: 1_0 is no 10), else None."""
    if "_" in name:
        return None
    try:  # the minus sign word processors write (U+2212) is '-': '−1' was an unknown class whose hint added a twin
        return float(name.replace("\u2212", "-"))  # of '-1' (a black-box check)
    except ValueError:
        return None


def zero_padded(name: str) -> bool:
    """Whether a class name is a code with a leading zero ('01', '-007'): a class of its own beside the number it
    spells (codes 1, 01 and 001 are three classes)."""
    text = name.strip().lstrip("+-")
    return len(text) > 1 and text[0] == "0" and text[1].isdigit()
