"""Tables the CLI prints, laid out to fit an 80-column terminal: the few columns a person reads
by default, everything with ``wide`` (and ``--json`` for machines).  Values are never cut: a run
name folds onto a second line rather than ending in an ellipsis."""

from __future__ import annotations

import math
from typing import Any

from rich import box
from rich.table import Table

from alkit.choices import HIGHER_IS_BETTER

# the metric a curve is judged by first, then a second one, per task; arrows say which way is better
PRIMARY = {"accuracy": "↑", "crps": "↓"}
SECONDARY = {"accuracy": "nll", "crps": "rmse"}


def number(x: Any) -> str:
    """A metric in about 6 characters, as many decimals as its size leaves room for."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return str(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    a = abs(x)
    if a >= 1e5 or (0 < a < 1e-3):
        return f"{x:.1e}"
    return f"{x:.0f}" if a >= 100 else f"{x:.1f}" if a >= 10 else f"{x:.3f}"


def arrow(metric: str) -> str:
    return f"{metric} {'↑' if metric in HIGHER_IS_BETTER else '↓'}"


def print_table(console: Any, table: Table, wide: bool) -> None:
    """Narrow tables fit the terminal; a --wide one is laid out at its natural width (a narrow
    terminal then wraps its lines, but no value is cut)."""
    if wide:
        from rich.console import Console

        console = Console(width=max(console.width, 240), soft_wrap=True, file=console.file)
    console.print(table)


def break_at_hyphens(name: str, limit: int) -> str:
    """``name`` on lines of at most ``limit`` characters, broken after a hyphen (a part longer than
    that stays whole, for the table to fold).  Why: run names are hyphenated settings, and a name
    folded mid-word ('...-lr_d' / 'ecay=0-b100-s0') hid the setting it names."""
    if len(name) <= limit:
        return name
    parts = name.split("-")
    lines, line = [], parts[0]
    for i, part in enumerate(parts[1:], start=1):
        hyphen = 0 if i == len(parts) - 1 else 1  # every line but the last ends with its hyphen
        if len(line) + 1 + len(part) + hyphen > limit:
            lines.append(line + "-")
            line = part
        else:
            line += "-" + part
    return "\n".join([*lines, line])


def _labels_cell(r: dict[str, Any]) -> str:
    """Labels spent / budget, and the labels the run learns from where they are not only the answers to its
    own picks (given labels, people's labels for other runs' picks; skips among its picks)."""
    labels = f"{r.get('n_spent', r['n_labeled'])}/{r['budget']}"
    if r["n_labeled"] != r.get("n_spent", r["n_labeled"]) or r.get("n_not_picked"):
        labels += f" (learns from {r['n_labeled']})"
    return labels


def _narrow_run_width(rows: list[dict[str, Any]], shown: list[str], width: int, cycles: bool = True) -> int:
    """The characters left for the run column of the narrow table at ``width`` columns."""
    def longest(values: list[str], header: str, cap: int | None = None) -> int:
        w = max([len(header), *(len(v) for v in values)])
        return min(w, cap) if cap else w

    others = [longest([str(r["cycles"]) for r in rows], "cycles")] if cycles else []
    others += [longest([_labels_cell(r) for r in rows], "labels"),
              longest([str(r["status"]) for r in rows], "status", 12)]
    others += [longest([number(r["metrics"][m]) for r in rows if m in r["metrics"]], arrow(m)) for m in shown]
    return width - sum(others) - 3 * len(others) - 4  # padding between columns and at the edges, with a margin


def summary_table(rows: list[dict[str, Any]], title: str, wide: bool = False, width: int | None = None) -> Table:
    """One row per run.  Narrow: run, labels spent/budget, status, the task's main metric and one
    more; wide: identity columns and every metric too.  ``width``: the terminal's, where a narrow
    table breaks long run names after a hyphen (``break_at_hyphens``)."""
    metric_names: list[str] = []
    for r in rows:
        metric_names += [k for k in r["metrics"] if k not in metric_names]
    t = Table(title=title, box=box.SIMPLE_HEAD, title_justify="left", pad_edge=False)
    if wide:
        shown = metric_names
        for col in ("id", "run", "strategy", "scorer", "acquisition", "selector", "seed", "cycles", "labels", "status"):
            t.add_column(col, justify="right" if col in ("id", "seed", "cycles", "labels") else "left", no_wrap=col != "run",
                         overflow="fold")
    else:
        main = next((m for m in PRIMARY if m in metric_names), metric_names[0] if metric_names else None)
        shown = [m for m in (main, SECONDARY.get(main or "")) if m and m in metric_names]
        # a run name is one token: kept whole up to 22 characters (the status wraps between words
        # instead); a longer one folds
        limit = _narrow_run_width(rows, shown, width) if width else None
        show_cycles = True
        # a terminal too narrow for every column: the second metric goes, then the cycle count, never the run
        # (at 40 columns the run column was squeezed out of the table, a black-box check)
        if limit is not None and limit < 12 and len(shown) > 1:
            shown = shown[:1]
            limit = _narrow_run_width(rows, shown, width)
        if limit is not None and limit < 12:
            show_cycles = False
            limit = _narrow_run_width(rows, shown, width, cycles=False)
        whole = max((len(r["name"]) for r in rows), default=0)
        if limit is not None and show_cycles and limit < whole <= _narrow_run_width(rows, shown, width, cycles=False):
            # the cycle count goes before a run name breaks: `epistemic-b100-` / `s0` beside "200/300 (learns from
            # 100)", and a double-click copied half the name `--resume` needs (a check at scale)
            show_cycles = False
            limit = whole
        names = [break_at_hyphens(r["name"], max(limit, 12)) if limit is not None else r["name"] for r in rows]
        longest = max((len(line) for n in names for line in n.split("\n")), default=12)
        t.add_column("run", overflow="fold", min_width=min(max(12, longest), 22))
        for col in ("cycles", "labels") if show_cycles else ("labels",):
            t.add_column(col, justify="right", no_wrap=True)
        t.add_column("status", max_width=12)
    for m in shown:
        t.add_column(arrow(m), justify="right", no_wrap=True, min_width=len(arrow(m)))
    for i, r in enumerate(rows):
        labels = _labels_cell(r)
        values = [number(r["metrics"][m]) if m in r["metrics"] else "" for m in shown]
        at = r.get("metrics_n_labeled")
        if values and values[0] and at is not None and at != r["n_labeled"]:  # the latest fit is older than the labels
            values[0] += f" @{at}"
        if wide:
            t.add_row(str(r["id"]), r["name"], r["strategy"], r["scorer"], r.get("acquisition") or "-",
                      _selectors(r), str(r["seed"]), str(r["cycles"]), labels,
                      r["status"], *values)
        else:
            t.add_row(names[i], *([str(r["cycles"])] if show_cycles else []), labels, r["status"], *values)
    return t


def _selectors(row: dict[str, Any]) -> str:
    """'coldstart, then power-diverse': the first batch's selector and the one after it."""
    first, then = row.get("initial_selector"), row.get("selector")
    if not then:
        return first or "-"
    return then if not first or first == then else f"{first}, then {then}"


def _pair(row: dict[str, Any], base: str) -> str:
    mean, std = row.get(f"{base}_mean"), row.get(f"{base}_std")
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "—"
    return number(mean) if std is None or (isinstance(std, float) and math.isnan(std)) else mean_std(mean, std)


def mean_std(mean: float, std: float) -> str:
    """``mean ± std`` with the std at the mean's precision: '124 ± 3', '0.966 ± 0.000' (not '124 ± 3.198' or
    '0.966 ± 1.2e-16', which a black-box check found side by side in one column)."""
    m = number(mean)
    if "e" in m or not math.isfinite(std):
        return f"{m} ± {number(std)}"
    decimals = len(m.partition(".")[2])
    return f"{m} ± {std:.{decimals}f}"


def _labels_to_target(row: dict) -> str:
    """The labels at which the mean curve over seeds reaches the target, with how many seeds' own curves
    reached it where some did not ("190 (3/5)"; "— (2/5)" where the mean curve never does).  Why the mean
    curve: the mean over the seeds that reached it alone (157 for 3 of 5) read as faster than a strategy
    whose every seed got there later (a black-box check)."""
    v, reached, seeds = row.get("labels_to_target_curve"), row.get("n_reached"), row.get("n_seeds")
    shown = "—" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.0f}"
    if reached is not None and seeds is not None and int(reached) < int(seeds):
        return f"{shown} ({int(reached)}/{int(seeds)})"
    return shown


METRIC_SHORT = {"balanced_accuracy": "bal acc", "macro_f1": "F1", "accuracy": "acc"}  # bench's narrow headers


def _at_count(row: dict[str, Any], point: str) -> str:
    """The metric at a label count, starred where only some seeds had a model there (the CSV's
    ``{point}_seeds`` says how many; a value over 1 of 3 seeds read as the strategy's mean)."""
    cell = _pair(row, point)
    k, n = row.get(f"{point}_seeds"), row.get("n_seeds")
    return f"{cell}*" if k is not None and n is not None and int(k) < int(n) else cell


def bench_table(table_df: Any, metric: str, wide: bool = False) -> Table:
    """`alkit bench`'s summary.  Narrow: per strategy, the metric at the last label count, the
    area under the learning curve and the labels to reach the target; wide: every checkpoint and
    the timings too (the full table is always in bench_summary.md)."""
    cols = table_df.columns
    points = [c[: -len("_mean")] for c in cols if c.startswith(f"{metric}@") and c.endswith("_mean")]
    shown = points if wide else points[-1:]
    extra = ["score_s_per_1k", "select_s_per_run"] if wide else []
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
    names = [str(r) for r in table_df["strategy"].to_list()]
    # an 80-column terminal: the strategy keeps up to 22 characters (longer names fold), the numbers never
    # wrap, and the headers are short (`balanced_accuracy@100 ↑` squeezed the strategy column to nothing)
    t.add_column("strategy", overflow="fold", min_width=min(22, max([10, *map(len, names)])))
    seed_counts = {int(n) for n in table_df["n_seeds"].to_list()} if "n_seeds" in cols else set()
    one_count = len(seed_counts) == 1 and not wide  # said once under the table: the column took 7 of 80
    if one_count:
        n = next(iter(seed_counts))
        t.caption, t.caption_justify = f"mean ± std over {n} seed{'s' if n != 1 else ''} each", "left"
    else:
        t.add_column("seeds", justify="right", no_wrap=True)
    direction = "↑" if metric in HIGHER_IS_BETTER else "↓"
    short = METRIC_SHORT.get(metric, metric)
    for p in shown:
        t.add_column(f"{short}{p[len(metric):]} {direction}", justify="right", no_wrap=True)
    t.add_column(f"AULC {direction}", justify="right", no_wrap=True)
    if "labels_to_target_mean" in cols:
        t.add_column("to target", justify="right", no_wrap=True)  # "27 (3/10)" was cut to "27 (3/1…"
    if "aulc_vs_ref_mean" in cols:
        t.add_column("vs random", justify="right", no_wrap=True)
    for e in extra:
        t.add_column(e.replace("_", " "), justify="right", no_wrap=True)
    starred = any(f"{p}_seeds" in cols for p in shown)
    if starred:
        note = "* over the seeds that had a model at that label count (bench_summary.csv: _seeds)"
        t.caption, t.caption_justify = "; ".join(filter(None, [t.caption, note])), "left"
    for row in table_df.iter_rows(named=True):
        cells = [str(row["strategy"])] + ([] if one_count else [str(row.get("n_seeds", ""))])
        cells += [_at_count(row, p) for p in shown]
        cells.append(_pair(row, "aulc"))
        if "labels_to_target_mean" in cols:
            cells.append(_labels_to_target(row))
        if "aulc_vs_ref_mean" in cols:  # AULC minus random's, seed by seed, and on how many paired seeds better
            d = row["aulc_vs_ref_mean"]
            paired = row.get("paired_seeds", row["n_seeds"])
            cells.append("—" if d is None else f"{d:+.3f} {row['better_seeds']}/{paired}")
        cells += [_pair(row, e) for e in extra]
        t.add_row(*cells)
    return t
