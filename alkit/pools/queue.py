"""The human oracle: the labeling queue (DESIGN.md 'Store', 'Queue').

`alkit run` on a project whose pool has no labels selects a batch and marks it *queued*; people
label it outside alkit and the labels come back through :func:`import_labels`.  Labels from
people are shared (``labels.run_id`` NULL, source ``import``) so every run learns from them.

This module reads and checks the file (every row against the project's classes) and hands the
decisions to ``Store.import_labels``, the one transaction that writes them: it takes the store's
write lock (a no-op UPDATE, so SQLite waits on its busy timeout and PostgreSQL on a row lock),
validates every decision against the store and writes, or refuses with every offending row named
and writes nothing.
Re-importing a file changes nothing.  A skip leaves no label row (labels must be learnable);
who skipped an item is kept in ``meta`` under ``skip:<key>``.
"""

from __future__ import annotations

import json
import math
import os
import shlex
import unicodedata
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal

import numpy as np
import polars as pl
from sqlalchemy import func, select

from alkit.choices import (INITIAL_SELECTORS, ON_CONFLICT, ROW_ID_NAMES, SKIP_LABEL, class_number, fold_case,
                           is_missing_label, is_skip_label, is_spreadsheet_error, zero_padded)
from alkit.config import (CONFIG_NAME, PAYLOAD_KEY, REGRESSION_LABEL_MAX, Project, missing_indicator, payload_key,
                          write_config)
from alkit.pools import labelfiles, leases
from alkit.errors import Note
from alkit.pools.commas import comma_hint
from alkit.pools.labelfiles import QueueError, Row, refuse  # noqa: F401 (QueueError re-exported)
from alkit.pools.labelfiles._common import HISTORY_ROW, WHY_COLS
from alkit.pools.schema import Item, Label, Meta, Run, SelectionRow
from alkit.pools.store import REPLACED, SKIP, ImportRefused, Store, queuing_runs, show_decision, utf8_misread
from alkit.pools.ownership import check_project_store

Format = Literal["csv", "jsonl", "parquet", "label-studio"]
OnConflict = Literal["error", "keep", "replace"]
FORMATS: tuple[str, ...] = tuple(labelfiles.FORMATS)
RESERVED = ("id", "label", "skip", "annotator", *WHY_COLS)
LABELS_COLS = ("id", "label", "skip", "annotator", "source", "cycle", "run", "labelled_at", "replaced_at")  # a labels file's own columns
_MAX_ANNOTATOR = 128  # labels.annotator is VARCHAR(128)


@dataclass(frozen=True)
class QueuedItem:
    """One queued item and why it was picked (its latest selection)."""

    key: int
    item_id: str
    run: str
    strategy: str
    scorer: str
    selector: str
    cycle: int
    rank: int
    score: float


@dataclass(frozen=True)
class ExportResult:
    path: Path
    format: str
    n_items: int
    columns: list[str]
    set_aside: Path | None = None  # the file ``path`` held, with people's unimported answers, moved here
    set_aside_unreadable: bool = False  # what was moved aside is no label file alkit can read (not answers)
    n_skipped: int = 0  # a labels export: how many of the n_items rows are skips
    n_replaced: int = 0  # a labels export with history: how many are answers a correction replaced
    n_test: int = 0  # a labels export: the test split's labels (from the data file), not written


@dataclass(frozen=True)
class ImportResult:
    """What one import did.  ``pending`` rows had no label yet (their items stay queued)."""

    path: Path
    n_rows: int
    labeled: int
    skipped: int
    replaced: int
    unchanged: int
    kept: int
    pending: int
    still_queued: int
    not_in_file: list[str] = field(default_factory=list)  # every queued item the file does not name
    waiting_runs: list[str] = field(default_factory=list)  # runs that wait for people's labels (status waiting)
    running_runs: list[str] = field(default_factory=list)  # runs a live process drives now (they take the labels)
    added_classes: list[str] = field(default_factory=list)  # --add-class: the classes this import added
    ready_runs: list[str] = field(default_factory=list)  # waiting runs whose last queued items this import answered
    not_in_file_runs: list[str] = field(default_factory=list)  # the runs that queued the items in not_in_file

    @property
    def changed(self) -> int:
        return self.labeled + self.skipped + self.replaced


@dataclass(frozen=True)
class AnnotatorCount:
    annotator: str
    labeled: int
    skipped: int


@dataclass(frozen=True)
class QueueStatus:
    """Pool items by state, and shared labels/skips by who gave them."""

    queued: int
    labeled: int
    skipped: int
    unlabeled: int
    by_annotator: list[AnnotatorCount] = field(default_factory=list)


# ---------------------------------------------------------------------------- store helpers
def n_waiting(store: Store, run_id: int) -> int:
    """Items this run selected that are still queued (waiting for people)."""
    with store.session() as s:
        return int(s.scalar(
            select(func.count()).select_from(SelectionRow).join(Item, Item.key == SelectionRow.item_key)
            .where(SelectionRow.run_id == run_id, Item.state == "queued")
        ) or 0)


def n_selected_by_name(store: Store, run_name: str) -> int:
    """Selections of the run called ``run_name`` (0 if it does not exist yet)."""
    with store.session() as s:
        return int(s.scalar(
            select(func.count()).select_from(SelectionRow).join(Run, Run.id == SelectionRow.run_id)
            .where(Run.name == run_name)
        ) or 0)


def queued_items(store: Store) -> list[QueuedItem]:
    """Every queued pool item with its latest selection, ordered by cycle, run and rank."""
    with store.session() as s:
        latest = (
            select(SelectionRow.item_key, func.max(SelectionRow.id).label("sel_id"))
            .group_by(SelectionRow.item_key).subquery()
        )
        rows = s.execute(
            select(Item.key, Item.item_id, Run.name, Run.strategy, Run.scorer, SelectionRow.selector,
                   SelectionRow.cycle, SelectionRow.rank, SelectionRow.score)
            .join(latest, latest.c.item_key == Item.key)
            .join(SelectionRow, SelectionRow.id == latest.c.sel_id)
            .join(Run, Run.id == SelectionRow.run_id)
            .where(Item.state == "queued", Item.split == "pool")
            .order_by(SelectionRow.cycle, Run.id, SelectionRow.rank)
        ).all()
    return [QueuedItem(int(r[0]), r[1], r[2], r[3], r[4], r[5], int(r[6]), int(r[7]), float(r[8])) for r in rows]


def _holds(project: Project, stored: tuple[str, str | None] | None, row: Row) -> bool:
    """Whether the store already holds this row's answer as the item's: its skip, or its label (as the
    import would store it)."""
    if stored is None:
        return False
    state, value = stored
    if is_skip_label(row.label) or (row.skip and not (row.label or "").strip()):
        return state == "skipped"
    try:
        return state == "labeled" and canonical_label(project, (row.label or "").strip()) == value
    except ValueError:
        return False


def lists_every_queued(store: Store, path: Path) -> bool:
    """Whether the label file at ``path`` names every queued item (False where it cannot be read): a
    queue file that does not is stale, written for an earlier batch."""
    rows = _read_old_file(path)
    ids = {r.item_id for r in rows} if rows is not None else set()
    return rows is not None and all(q.item_id in ids for q in queued_items(store))


def _data_fields(project: Project) -> list[str]:
    """Every column an export may have written beside alkit's own: payload and numeric feature columns
    (--include), as named in it."""
    exportable = [*project.config.payload_cols, *project.config.data_feature_cols()]
    return [*exportable, *written_names(exportable).values(), *WHY_COLS]


def _read_fields(project: Project) -> list[str]:
    """Of ``_data_fields``, those a table's rows are read with: the payload columns and the numeric feature columns
    spelt as an answer column ('Label': data, not a misplaced answer).  The other feature columns are not read: an
    import of a `queue labels --include` file of 784 pixel columns took 3 GB and 22 s at 28,000 rows, against 0.3
    GB and 8 s for the answers alone (a check at scale); nothing reads them (ids are checked by the text payload)."""
    cfg = project.config
    names = written_names([*cfg.payload_cols, *cfg.data_feature_cols()])
    payload = {*cfg.payload_cols, *(names[c] for c in cfg.payload_cols), *WHY_COLS}
    return [f for f in dict.fromkeys(_data_fields(project)) if f in payload or f.strip().casefold() in ("label", "skip")]


def _read_old_file(path: Path, data_fields: Sequence[str] = (), problems: list[str] | None = None,
                   read_fields: Sequence[str] | None = None) -> list[Row] | None:
    """The rows of a label file about to be replaced, None where it is no label file alkit can read; its
    notes (a last label cut short) are no news then, so they are not printed.  ``problems`` receives the
    rows an import would refuse (an answer in a 'Label' column beside an empty 'label')."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return labelfiles.read(path, [] if problems is None else problems, data_fields=data_fields,
                                   read_fields=read_fields)
    except (QueueError, OSError, ValueError):
        return None


# ---------------------------------------------------------------------------- export
def default_queue_path(project: Project, fmt: str = "csv", cycle: int | None = None) -> Path:
    """queue.csv (what `alkit run` rewrites every cycle, so it is never stale); another format is
    named after the newest cycle it holds, queue-c<cycle>.<ext>, so an export from an earlier
    cycle left in the folder cannot pass for the current queue."""
    suffix = labelfiles.default_suffix(fmt)
    if fmt == "csv" or cycle is None:
        return project.root / f"queue{suffix}"
    return project.root / f"queue-c{cycle}{suffix}"


def _payload_columns(project: Project, include: Sequence[str] | None) -> tuple[list[str], list[str]]:
    """(payload columns, numeric feature columns) to export: every payload column by default;
    with ``include``, those named, which may also be feature columns (numbers the labelers see), each list
    in the order named (``_data_cells`` writes them in that order too)."""
    # a project made before the payload key was _alkit_key: a data column named 'key' was overwritten by the row
    # keys at init (its values are lost), and is not exported as if it were the data's
    lost = {payload_key(project.payload_path)} - {PAYLOAD_KEY}
    available = [c for c in project.config.payload_cols if c != project.config.id_col and c not in lost]
    features: list[str] = []
    if include is None:
        cols = available
    else:
        # the id column (by its name or as "id") is always written first: naming it is not an error
        named = [c for c in dict.fromkeys(include) if c not in (project.config.id_col, "id")]
        numeric = project.config.data_feature_cols()
        unknown = [c for c in named if c not in available and c not in numeric]
        if unknown:
            raise QueueError(
                f"--include: unknown columns {', '.join(unknown)}; payload columns: {', '.join(available) or '(none)'}"
                + (f"; feature columns: {', '.join(numeric[:20])}" + (" ..." if len(numeric) > 20 else "")
                   if numeric else "")
            )
        cols = [c for c in named if c in available]
        features = [c for c in named if c not in available]
    return cols, features


def written_names(columns: Sequence[str], reserved: Sequence[str] = RESERVED) -> dict[str, str]:
    """The name each data column gets in a queue file: its own, or ``data_<name>`` where it is one of the
    queue's own columns (RESERVED: a data column named ``score`` or ``label`` beside the id).  Why: such a
    column was refused only when the first queue was written, after its batch was recorded, so the run
    waited for a file that never came; and written as it is, an ``annotator`` column would be read back as
    the annotator.  Import ignores the renamed columns like any other data column."""
    taken = set(columns) | set(reserved)
    # in any case: a data column 'Annotator' was written as it is and read back as the annotator, every label
    # credited to a feature value (an import reads alkit's columns in any case; a black-box round)
    folded = {r.casefold() for r in reserved}
    out = {}
    for c in columns:
        name = c
        if c in reserved or c.strip().casefold() in folded:
            name, n = f"data_{c}", 2
            while name in taken:
                name, n = f"data_{c}_{n}", n + 1
            taken.add(name)
        out[c] = name
    return out


def _feature_values(project: Project, store: Store, keys: list[int], names: list[str]) -> dict[str, pl.Series]:
    """The named feature columns of these items as alkit stores them (float32, shortest text), Float64: an imputed
    cell empty, not the median it was given."""
    if not names or not keys:
        return {c: pl.Series(c, [], dtype=pl.Float64) for c in names}
    from alkit.pools.features import FeatureReader

    reader = FeatureReader(project.features_path, n_items=project.config.n_items, n_features=project.config.n_features)
    X = reader.take(np.asarray(keys, dtype=np.int64))
    at = {c: project.config.feature_index(c) for c in project.config.feature_cols}
    out = {}
    for c in names:
        flag = missing_indicator(c)
        # a float32's shortest round-trip text: 0.9167, not 0.9166999459266663 (polars writes it so, as str does)
        values = pl.Series(c, np.ascontiguousarray(X[:, at[c]], dtype=np.float32)).cast(pl.Utf8).cast(pl.Float64)
        out[c] = values.scatter(np.flatnonzero(X[:, at[flag]] == 1), None) if flag in at else values
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _set_aside_unimported(path: Path, project: Project, store: Store) -> tuple[Path | None, bool]:
    """Move the file at ``path`` out of an export's way when it holds people's work not yet
    imported, or cannot be read as a label file at all (then it is not an export alkit wrote as it
    was); return where it went.  Work not yet imported: any answer the store does not hold as it is
    written: a label or skip for an item still queued, for an id the store does not hold as written
    (spaces around it, leading zeros a spreadsheet dropped, another project's file), or one that
    differs from the item's stored answer (a correction the import refused as a conflict).  Why:
    `alkit run` rewrites queue.csv every cycle and an export reuses its name, so a file filled in
    place and not yet imported was overwritten without a word; matching the ids exactly against the
    queued ones, and then only checking that an answered item was labelled, lost such answers too.
    The second value: whether the file could not be read."""
    if not path.is_file() or path.stat().st_size == 0:  # an empty file (one made for a shared queue) holds no work
        return None, False
    problems: list[str] = []
    rows = _read_old_file(path, _data_fields(project), problems, _read_fields(project))
    # a --history file's replaced rows are a record, no answers (a rerun of `queue labels --history` set its own
    # earlier file aside); any other row an import refuses may hold an answer (in the wrong column)
    problems = [p for p in problems if HISTORY_ROW not in p]
    if rows is not None and not problems:
        answered = [r for r in rows if r.skip or (r.label or "").strip()]
        ids = {i for r in answered if r.item_id is not None for i in (r.item_id, r.item_id.strip())}
        stored = store.answers_for_ids(sorted(ids))
        if all(r.item_id is not None and _holds(project, stored.get(r.item_id) or stored.get(r.item_id.strip()), r)
               for r in answered):
            return None, False
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    for n in range(1, 1000):
        kept = path.with_name(f"{path.stem}.unimported-{stamp}{'' if n == 1 else f'-{n}'}{path.suffix}")
        if not kept.exists():
            path.rename(kept)
            return kept, rows is None
    raise QueueError(f"{path} holds answers not yet imported and no free name was found to keep it: "
                     "import or move it first")


def _write_or_put_back(path: Path, set_aside: Path | None, write: Callable[[], Any]) -> Any:
    """``write()`` the file at ``path``; where it fails (a full disk) after a labeller's file there was set
    aside, the file goes back to ``path``: the failure said nothing of the move, and the next run wrote a
    blank queue where the answers had been (a hostile-filesystem check)."""
    try:
        return write()
    except BaseException:
        if set_aside is not None and not path.exists():
            set_aside.rename(path)
        raise


def kept_aside_note(held: Path, kept: Path, where: str | None = None) -> str:
    """That the answers the file ``held`` had were moved to ``kept`` and, given ``where`` (the command's -p
    flag), how to import them: one wording for `queue export`, `queue labels` and a run's queue file."""
    note = (f"the answers {held.name} held that the store does not hold (not imported yet, declined by "
            f"--on-conflict keep, or since corrected) were kept as {kept}")
    if where is None:
        return note
    return (f"{note}: to import them, `alkit queue import {shlex.quote(str(kept))}{where}` (with --on-conflict "
            "replace where they correct a label; a file older than a correction would undo it)")


def _through_link(project: Project, path: Path, what: str) -> Path:
    """The default file (queue.csv, labels.csv) as written: where it is a symbolic link to a regular file (a
    shared folder the labellers work in), the file it names, so the link stays and the labellers' file is the one
    rewritten (the link was replaced by a file, and the shared one kept the old queue; a hostile-filesystem
    check).  A link to anything else, or to a file `--out` may not name (the project's own files, its data file,
    for labels the labellers' queue: a link to alkit.db wrote the labels over the store), is refused."""
    if not path.is_symlink():
        if path.is_file() and path.stat().st_nlink > 1:  # rewritten in place (atomic_write): a symbolic link's rule
            taken = _written_over(project, path.resolve(), what)
            if taken:
                raise QueueError(f"{path} is a hard link to a file alkit does not write the {what} over ({taken}): "
                                 "remove it")
            _refuse_unless_label_file(path, f"{path} has other hard links (it is written in place)")
        return path
    target = path.resolve()
    if not target.is_file():
        state = "which does not exist" if not target.exists() else "which is no regular file"
        raise QueueError(f"{path} is a symbolic link to {target}, {state}: point it at a file (alkit writes it whole "
                         "and renames it into place), or remove the link")
    taken = _written_over(project, target, what)
    if taken:
        raise QueueError(f"{path} is a symbolic link to {target}, which alkit does not write the {what} over ({taken}): "
                         "remove the link")
    _refuse_unless_label_file(target, f"{path} is a symbolic link to {target}")
    return target


def _refuse_unless_label_file(target: Path, lead: str) -> None:
    """A default file that leads to another file is written there only where that file is a label file (the
    labellers' shared queue, or an empty file made for it): a project received from someone else with
    queue.csv a link to ~/.bashrc wrote the queue's ids into it (an untrusted-input check)."""
    if labelfiles.format_for_suffix(target) is None or (target.stat().st_size > 0 and not _written_by_alkit(target)):
        raise QueueError(f"{lead}, and {target.name} is no queue or labels file alkit wrote: alkit writes through a "
                         "link only to such a file or an empty one (a shared queue); remove the link")


def _written_by_alkit(path: Path) -> bool:
    """Whether a label file is one alkit wrote (a queue or labels export: it has a skip column), not any file with
    id and label columns (a link to the user's train.csv was written over; an untrusted-input check)."""
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv", ".tab"):  # the header first (cheap): most files that are no export fail there
        try:
            header = pl.read_csv(path, n_rows=0, separator="\t" if suffix != ".csv" else ",", infer_schema=False).columns
        except Exception:  # noqa: BLE001 - any unreadable header: not one alkit wrote
            return False
        if "skip" not in header:
            return False
    return _read_old_file(path) is not None


def _written_over(project: Project, target: Path, what: str) -> str | None:
    """What the resolved ``target`` is where no export of ``what`` may write over it, else None: one of the
    project's own files (a queue exported onto features.parquet or alkit.db replaced it), the data file it was
    made from (set aside as answers), or for labels the labellers' queue (overwritten; black-box checks)."""
    if any(_same_file(target, f) for f in project.own_files()):
        return "one of the project's own files"
    folders = {"bench": "which `alkit bench` writes over", "stem-features": "alkit's cache",
               "vlm-features": "alkit's cache"}  # a queue written there was replaced by the next bench (a check)
    for folder, whose in folders.items():
        if target.is_relative_to(project.root.resolve() / folder):
            return f"in the project's {folder}/ folder, {whose}"
    source = project.config.source
    if source and _same_file(target, Path(source).resolve()):
        return "the data file the project was made from (alkit.toml's source)"
    if what == "labels" and (labelfiles.is_queue_file(target, project.root)
                             or _same_file(target, default_queue_path(project))):
        return "where alkit writes the labelers' queue"
    for fmt in ("csv", "jsonl", "parquet"):  # `queue labels` writes there, over the queue (queue.csv a link too)
        if what == "queue" and _same_file(target, default_labels_path(project, fmt)):
            return f"where alkit writes the labels ({default_labels_path(project, fmt).name})"
    return None


def _same_file(a: Path, b: Path) -> bool:
    """The same path, or one file under two names (a hard link: a file with other links is rewritten in
    place, so a hard link to alkit.db would have been written over)."""
    if a == b:
        return True
    try:
        return a.is_file() and b.is_file() and os.path.samefile(a, b)
    except OSError:
        return False


def _check_out(project: Project, out: str | Path | None, fmt: str | None, what: str) -> str:
    """The format an export to ``out`` is written in, after refusing an ``out`` that is one of the
    project's own files or a folder (a raw '[Errno 21] Is a directory' with a temp name), before
    anything is read; ``what``: the file's name in the refusals ('queue', 'labels')."""
    if out is not None and str(out) == "-":  # a file named '-' was written, and the hint said `queue import -`
        raise QueueError(f"--out -: the {what} file is written to disk, not to standard output; give the file's "
                         f"name (e.g. {what}.csv)")
    taken = _written_over(project, Path(out).resolve(), what) if out is not None else None
    if taken:
        # the default of the refused command: the labels' for a labels file, the queue's for a queue (it named
        # labels.csv, the file just refused, to a queue export; a documentation check)
        default = (f" (default: {'labels.csv' if what == 'labels' else 'queue.csv'})"
                   if taken.startswith("where alkit writes") else "")
        raise QueueError(f"{out} is {taken}: write the {what} to another name{default}")
    if out is not None and Path(out).is_dir():
        raise QueueError(f"{out} is a folder: give the {what} file's name (e.g. {Path(out) / f'{what}.csv'})")
    if out is not None and (Path(out).is_symlink() or (Path(out).exists() and not Path(out).is_file())):
        # /dev/stdout, or a link to a shared file: the link was moved aside as 'answers' and a file written in its
        # place (as root, /dev/stdout itself), and the file it named kept the old labels (a black-box check)
        raise QueueError(f"{out} is {'a symbolic link' if Path(out).is_symlink() else 'no regular file'}: alkit "
                         f"writes the {what} file whole and renames it into place; give the file's own path")
    fmt = labelfiles.export_format(Path(out) if out is not None else None, fmt)
    project.require(project.payload_path, why=f"the {what} file is written from it", readable=True)
    return fmt


def _data_cells(project: Project, store: Store, keys: list[int], cols: list[str], feats: list[str],
                reserved: Sequence[str], order: Sequence[str] | None = None) -> pl.DataFrame:
    """Each item's payload and feature cells under the names they are written by (``written_names``),
    a row per key in ``keys``' order (a key may come twice); the columns in ``order`` (--include's), else
    payload columns first.  Columns, not a dict per row: those took 2.8 GB for 784 features of 28,000 labels."""
    key = payload_key(project.payload_path)
    payload = (pl.scan_parquet(project.payload_path).select(list(dict.fromkeys([key, *cols])))
               .filter(pl.col(key).is_in(pl.Series(keys, dtype=pl.Int64).implode())).collect())
    rows = pl.DataFrame({key: pl.Series(keys, dtype=pl.Int64)}).join(
        payload.with_columns(pl.col(key).cast(pl.Int64)), on=key, how="left", maintain_order="left")
    values = _feature_values(project, store, keys, feats)
    name = written_names([*cols, *feats], reserved)
    # in the order --include named them (feature columns were written after every payload column whatever
    # the order given: a black-box check)
    shown = [*cols, *feats] if order is None else list(dict.fromkeys(c for c in order if c in name))  # once each
    return pl.DataFrame([(values[c] if c in values else rows[c]).alias(name[c]) for c in shown])


def export_queue(
    project: Project,
    out: str | Path | None = None,
    fmt: str | None = None,
    include: Sequence[str] | None = None,
    store: Store | None = None,
    escape_formulas: bool = True,
) -> ExportResult:
    """Write every queued item for labelers: id, payload columns, an empty ``label`` (and
    ``skip``) to fill in, and why it was picked (score, rank, cycle, run, strategy, scorer,
    selector).  ``label-studio`` writes a JSON list of Label Studio tasks instead.  CSV text cells
    that would run as spreadsheet formulas get a leading ' (``escape_formulas=False``: raw).
    ``fmt`` None: the format ``out``'s suffix names (csv without ``out``); see labelfiles.export_format.
    ``include``: the payload columns to write (default: all), which may also name numeric feature
    columns (``ProjectConfig.data_feature_cols``), written in the order named."""
    fmt = _check_out(project, out, fmt, "queue")
    store = store or Store(project.store_url)
    check_project_store(project, store)
    cols, feats = _payload_columns(project, include)
    items = queued_items(store)
    path = Path(out) if out is not None else _through_link(
        project, default_queue_path(project, fmt, max((q.cycle for q in items), default=None)), "queue")
    cells = _data_cells(project, store, [q.key for q in items], cols, feats, RESERVED, include)
    why = pl.DataFrame({
        "label": [None] * len(items), "skip": [None] * len(items),
        # a model-free pick (cold start, random) has no score: empty, not a low 0.0
        "score": [None if q.selector in INITIAL_SELECTORS and q.score == 0 else _finite(q.score) for q in items],
        "rank": [q.rank for q in items], "cycle": [q.cycle for q in items], "run": [q.run for q in items],
        "strategy": [q.strategy for q in items], "scorer": [q.scorer for q in items],
        "selector": [q.selector for q in items]},
        schema={"label": pl.Utf8, "skip": pl.Boolean, "score": pl.Float64, "rank": pl.Int64, "cycle": pl.Int64,
                "run": pl.Utf8, "strategy": pl.Utf8, "scorer": pl.Utf8, "selector": pl.Utf8})
    frame = pl.concat([pl.DataFrame({"id": [q.item_id for q in items]}, schema={"id": pl.Utf8}), cells, why],
                      how="horizontal")
    set_aside, unreadable = _set_aside_unimported(path, project, store)
    columns = _write_or_put_back(path, set_aside, lambda: labelfiles.get_format(fmt).write(
        path, frame, cells.columns, escape_formulas=escape_formulas))
    return ExportResult(path, fmt, len(items), columns, set_aside, unreadable)


@dataclass(frozen=True)
class CollectedLabel:
    """One pool item's shared answer: its label (None: skipped), who gave it, where it came from
    (``init``: the data file; ``import``: people, through the queue), the cycle that queued it and when;
    ``runs``: the runs that queued it in that cycle (each run counts its own cycles)."""

    key: int
    item_id: str
    label: str | None
    annotator: str | None
    source: str
    cycle: int | None
    time: datetime | None
    replaced_at: datetime | None = None  # an earlier answer, replaced then (``history``)
    runs: tuple[str, ...] = ()


def collected_labels(store: Store, history: bool = False) -> list[CollectedLabel]:
    """Every shared label and skip of the pool, in the order they were given (labels before skips
    at the same time); with ``history``, also every answer `--on-conflict replace` overwrote, with
    when.  A run's own simulated labels (``init --hide-labels``) are not collected: they are the data
    file's."""
    with store.session() as s:
        labels = s.execute(
            select(Item.key, Item.item_id, Label.value, Label.annotator, Label.source, Label.cycle, Label.created_at)
            .join(Label, Label.item_key == Item.key)
            .where(Label.run_id.is_(None), Item.split == "pool").order_by(Label.id)).all()
        skipped = {int(k[len("skip:"):]): json.loads(v) for k, v in s.execute(
            select(Meta.key, Meta.value).where(Meta.key.like("skip:%"))).all()}
        replaced = [(int(k[len(REPLACED):].split(":")[0]), json.loads(v)) for k, v in s.execute(
            select(Meta.key, Meta.value).where(Meta.key.like(f"{REPLACED}%"))).all()] if history else []
        queued_by = queuing_runs(s, [*(k for k, *_ in labels), *skipped, *(k for k, _ in replaced)])
    cycles: dict[int, int] = {}  # a skip's cycle: the last any run queued it in (as import records a label's)
    for key, cycle in queued_by:
        cycles[key] = max(cycle, cycles.get(key, cycle))
    ids = store.ids_for_keys(sorted({*skipped, *(k for k, _ in replaced)}))
    out = [CollectedLabel(int(k), i, v, a, src, None if c is None else int(c), t) for k, i, v, a, src, c, t in labels]
    for key, meta in skipped.items():
        when = meta.get("time")
        out.append(CollectedLabel(key, ids[key], None, meta.get("annotator"), "import", cycles.get(key),
                                  datetime.fromisoformat(when) if when else None))
    for key, meta in replaced:
        when, gone = meta.get("time"), meta.get("replaced")
        out.append(CollectedLabel(key, ids[key], meta.get("label"), meta.get("annotator"), meta.get("source") or "import",
                                  meta.get("cycle"), datetime.fromisoformat(when) if when else None,
                                  datetime.fromisoformat(gone) if gone else None))
    out = [replace(c, runs=tuple(queued_by.get((c.key, c.cycle), ()))) if c.cycle is not None else c for c in out]
    first = datetime.min.replace(tzinfo=timezone.utc)
    order = {id(c): n for n, c in enumerate(out)}
    return sorted(out, key=lambda c: (_utc(c.time) or first, c.replaced_at is None, c.label is None, order[id(c)]))


def _utc(t: datetime | None) -> datetime | None:
    return None if t is None else (t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc))


def default_labels_path(project: Project, fmt: str = "csv") -> Path:
    """labels.csv (labels.jsonl, labels.parquet) in the project folder."""
    return project.root / f"labels{labelfiles.default_suffix(fmt)}"


def export_labels(
    project: Project,
    out: str | Path | None = None,
    fmt: str | None = None,
    include: Sequence[str] | None = None,
    store: Store | None = None,
    escape_formulas: bool = True,
    history: bool = False,
) -> ExportResult:
    """Write every label the project's people and data file gave (and every skip): id, payload
    columns, label, skip, annotator, source (init | import), cycle, run (the runs that queued it in that
    cycle, comma-separated) and labelled_at (UTC, ISO 8601).
    Why: the labels are the project's most expensive asset, and a team needs them outside alkit
    (to train its production model, to audit annotators) without reading the store's tables.
    ``fmt``/``out``/``include`` as :func:`export_queue`; Label Studio tasks are no label table and are
    refused.  A file at ``out`` holding queue answers not yet imported is kept aside, as export does.
    ``history``: also every answer a correction replaced, with a ``replaced_at`` column (empty for the
    answers that stand); such a file is no answer file to import back."""
    fmt = _check_out(project, out, fmt, "labels")
    if fmt == "label-studio":
        raise QueueError("labels are written as csv, jsonl or parquet (a Label Studio file holds tasks to label)")
    store = store or Store(project.store_url)
    check_project_store(project, store)
    cols, feats = _payload_columns(project, include)
    given = collected_labels(store, history)
    path = Path(out) if out is not None else _through_link(project, default_labels_path(project, fmt), "labels")
    cells = _data_cells(project, store, [c.key for c in given], cols, feats, LABELS_COLS, include)
    # a regression project's labels as numbers (text in a Parquet or JSON Lines file to train on elsewhere; a
    # black-box check); stored as repr(float), so they read back as they are
    number = project.config.task == "regression"

    def when(t: datetime | None) -> str | None:
        return None if t is None else _utc(t).isoformat(timespec="seconds")

    answers = pl.DataFrame({
        "label": [float(c.label) if number and c.label is not None else c.label for c in given],
        "skip": [c.label is None for c in given], "annotator": [c.annotator for c in given],
        "source": [c.source for c in given], "cycle": [c.cycle for c in given],
        "run": [", ".join(c.runs) or None for c in given], "labelled_at": [when(c.time) for c in given],
        **({"replaced_at": [when(c.replaced_at) for c in given]} if history else {})},
        schema={"label": pl.Float64 if number else pl.Utf8, "skip": pl.Boolean, "annotator": pl.Utf8, "source": pl.Utf8,
                "cycle": pl.Int64, "run": pl.Utf8, "labelled_at": pl.Utf8, **({"replaced_at": pl.Utf8} if history else {})})
    frame = pl.concat([pl.DataFrame({"id": [c.item_id for c in given]}, schema={"id": pl.Utf8}), cells, answers],
                      how="horizontal")
    set_aside, unreadable = _set_aside_unimported(path, project, store)
    columns = _write_or_put_back(path, set_aside, lambda: labelfiles.get_format(fmt).write(
        path, frame, cells.columns, escape_formulas=escape_formulas))
    return ExportResult(path, fmt, len(given), columns, set_aside, unreadable,
                        n_skipped=sum(c.label is None and c.replaced_at is None for c in given),
                        n_replaced=sum(c.replaced_at is not None for c in given), n_test=_n_test_labels(store))


def _n_test_labels(store: Store) -> int:
    """The test split's labels (given in the data file): they measure the runs and are no pool answer."""
    with store.session() as s:
        return int(s.scalar(select(func.count()).select_from(Item)
                            .where(Item.split == "test", Item.label.is_not(None))) or 0)


# ---------------------------------------------------------------------------- import: checks
def canonical_label(project: Project, raw: str) -> str:
    """The stored form of a label, or ValueError: a known class, or a finite number as repr(float)."""
    cfg = project.config
    if cfg.task == "classification":
        if raw in cfg.classes:
            return raw
        x = class_number(raw)  # not 1_0 as 10 (float() reads it so; a person would not mean that, nor does regression)
        match = [c for c in cfg.classes if _float_or_none(c) == x] if x is not None else []
        if len(match) > 1:  # codes '1', '01', '001' are three classes: '1.0' went to the first without a word
            raise ValueError(f"label {raw!r} is the number of several classes ({', '.join(map(repr, match))}): "
                             "write the class as the project lists it")
        if not match:  # the same text in another Unicode form (decomposed accents, as macOS types them)
            nfc = unicodedata.normalize("NFC", raw)
            match = [c for c in cfg.classes if unicodedata.normalize("NFC", c) == nfc]
        if not match:  # in another case where that names one class: the data file's True (init's 'true'), Excel's TRUE
            folded = fold_case(raw)
            match = [c for c in cfg.classes if fold_case(c) == folded]
            if len(match) > 1:
                raise ValueError(f"label {raw!r} is several classes in another case ({', '.join(map(repr, match))}): "
                                 "write the class as the project lists it")
        if match:
            return match[0]
        known = _misread_class(raw, cfg.classes)
        if known:  # 'cafÃ©' was an unknown class with a hint to add it, a garbled class (a black-box check)
            raise ValueError(f"label {raw!r} is the class {known[0]!r} read in the wrong text encoding (a spreadsheet "
                             "opened the UTF-8 file as Windows-1252): open it with UTF-8 (in Excel: Data > From "
                             "Text/CSV, File origin 65001: Unicode (UTF-8)), or fill in the file alkit wrote in a text "
                             "editor")
        if is_spreadsheet_error(raw):  # offered --add-class '#VALUE!' (a black-box round)
            raise ValueError(f"label {raw!r} is a spreadsheet's formula error, not a class: fix the cell, or empty it "
                             "to leave the item queued")
        # each class quoted: a class with a comma read as two in an unquoted list (a black-box check)
        shown = ", ".join(map(repr, cfg.classes[:30])) + (", ..." if len(cfg.classes) > 30 else "")
        numeric = _float_or_none(raw) is not None and all(_float_or_none(c) is not None for c in cfg.classes)
        raise ValueError(f"unknown class {raw!r} (classes: {shown}; a project's classes are set at `alkit init`, and "
                         f"one found later is added with `alkit queue import FILE --add-class {raw.strip()!r}`"
                         + ("; if the labels are a numeric target, init a project with --task regression" if numeric
                            else "") + ")")
    # float(), without 1_000 read as 1000 (a person would not mean that) and with the word processors' minus sign
    # read as '-' (a black-box check)
    x = class_number(raw)
    if x is None:
        hint = comma_hint(raw)
        raise ValueError(f"regression label {raw!r} is not a number" + (f" ({hint})" if hint else ""))
    if not math.isfinite(x):
        blank = " (leave the cell empty for an item not labelled yet)" if math.isnan(x) else ""
        raise ValueError(f"regression label {raw!r} is not a finite number{blank}")
    if abs(x) > REGRESSION_LABEL_MAX:
        raise ValueError(f"regression label {raw!r} is beyond ±{REGRESSION_LABEL_MAX:.0e}, which alkit's 32-bit fits "
                         "cannot take: rescale the target (e.g. in thousands) for the whole project")
    return repr(x + 0.0)  # -0 is 0: '-0.0' stored made a later '0' a conflict (a black-box check)


def _float_or_none(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None




def _stripped_zeros(rows: list[Row], queued: list[str], exists: Callable[[list[str]], set[str]]) -> str | None:
    """Why a file must be refused whose ids look like queued ids less their leading zeros, where such an id
    also names another item: a queued `02` saved by a spreadsheet as `2`, beside the item `2` (the file then
    names `2` twice, or `2` is not queued).  Its label went to item `2` with exit 0 (a black-box check); an id
    that names no item at all is the store's unknown-id hint (``exists(ids)``: which of them name an item;
    listing such ids as 'also names another item' was false, a black-box check)."""
    named = Counter(r.item_id.strip() for r in rows if r.item_id)
    queued_set = {q.strip() for q in queued}
    lost = {}
    for q in queued:
        full = q.strip()
        short = _as_a_spreadsheet_saves(full)
        if short is not None and full not in named and short in named \
                and (named[short] > 1 or short not in queued_set):
            lost[short] = full
    real = exists(sorted(lost)) if lost else set()
    lost = {k: v for k, v in lost.items() if k in real or named[k] > 1}
    if not lost:
        return None
    shown = ", ".join(f"{k} (queued as {v})" for k, v in list(lost.items())[:3])
    zeros = all(v.isdigit() for v in lost.values())
    how = ("lost their leading zeros (a spreadsheet read them as numbers)" if zeros
           else "a spreadsheet rewrote as numbers (a sign, an exponent or zeros lost)")
    return (f"ids {shown}{' ...' if len(lost) > 3 else ''} look like queued ids that {how}, and each also names "
            "another item: format the id column as text before saving, or fill in the file alkit wrote in a text editor")


def _is_utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _as_a_spreadsheet_saves(item_id: str) -> str | None:
    """The id a spreadsheet writes back for a number-like id, where that differs from it: 007 -> 7, +5 -> 5,
    1e3 -> 1000, 2.50 -> 2.5 (queued +5 and 1e3 came back as 5 and 1000, the ids of two other items, and
    their labels went there with exit 0: an untrusted-input check); None for any other id."""
    try:
        value = Decimal(item_id)
    except ArithmeticError:
        return None
    if not value.is_finite():
        return None
    saved = str(int(value)) if value == value.to_integral_value() else format(value.normalize(), "f")
    return saved if saved != item_id else None


def _decisions(project: Project, rows: list[Row], problems: list[str],
               refused: dict[str, str]) -> dict[str, tuple[Any, Row]]:
    """item id -> (canonical label or SKIP, first row saying so); pending rows dropped; rows refused
    for their label or skip go to ``refused`` (item id -> where), so the store still checks their ids."""
    out: dict[str, tuple[Any, Row]] = {}
    for r in rows:
        if not r.item_id:
            problems.append(f"{r.where}: missing id")
            continue
        if r.annotator is not None and len(r.annotator) > _MAX_ANNOTATOR:
            problems.append(f"{r.name()}: annotator name longer than {_MAX_ANNOTATOR} characters")
            continue
        if is_skip_label(r.label) or (r.skip and r.label is None):
            decision: Any = SKIP
        elif r.skip:
            problems.append(f"{r.name()}: both a label {r.label!r} and skip=true; keep one")
            refused.setdefault(r.item_id, r.name())
            continue
        elif r.label is None or is_missing_label(r.label):
            continue  # not labeled yet ('NA', 'nan': as init reads them, and a Parquet NaN): the item stays queued
        else:
            try:
                decision = canonical_label(project, r.label)
            except ValueError as exc:
                problems.append(f"{r.name()}: {exc}")
                refused.setdefault(r.item_id, r.name())
                continue
        prev = out.get(r.item_id)
        if prev is None:
            out[r.item_id] = (decision, r)
        elif prev[0] is not decision and prev[0] != decision:
            problems.append(f"id {r.item_id}: conflicting labels in the file: {show_decision(prev[0])} at {prev[1].where}, "
                            f"{show_decision(decision)} at {r.where} (settle them in the file, or in Label Studio and "
                            "export again; --on-conflict applies to labels already imported)")
    return out


def import_labels(
    project: Project,
    path: str | Path,
    annotator: str | None = None,
    on_conflict: str = "error",
    store: Store | None = None,
    fmt: str | None = None,
    label_field: str | None = None,
    unqueued: bool = False,
    add_classes: Sequence[str] = (),
) -> ImportResult:
    """Import people's labels for queued items, all or nothing.

    A row with an empty label (and no skip) is not labeled yet and leaves its item queued.
    A skip (``skip`` true with an empty label, or the label ``__skip__``; Label Studio: a
    cancelled annotation) moves the item to skipped.  ``--annotator`` names every row; without
    it a row's ``annotator`` column (Label Studio: ``completed_by``) is used.  An item that
    already has a label (or a skip) is unchanged by the same answer; a different answer is a
    conflict: refused (``error``), ignored (``keep``) or overwritten (``replace``).  ``fmt``
    names the file's format (alkit/pools/labelfiles); by default its suffix decides.
    ``unqueued``: pool items no run queued take labels too (labels the team has from elsewhere: every
    run learns from them, none spent them); refused where runs label from the data file (--hide-labels),
    whose runs would no longer be comparable.
    ``add_classes``: classes found after init, appended to the project's (alkit.toml and the store's
    record, so the classes before keep their indices) with this import, all or nothing; not while a
    run is running (its process knows the classes as they were).
    """
    if unqueued and project.config.hide_labels:
        raise QueueError("--unqueued: this project's runs label their picks from its data file (init --hide-labels); "
                         "a shared label from outside would change every run's learning curve")
    if on_conflict not in ON_CONFLICT:
        raise QueueError(f"--on-conflict must be one of {', '.join(ON_CONFLICT)}, not {on_conflict!r}")
    if annotator is not None and not annotator.strip():  # '' or spaces: stored, then shown as '(unnamed)'
        raise QueueError("--annotator is empty: give a name, or leave the option out (the file's annotator column)")
    if annotator is not None and not _is_utf8(annotator):  # a raw "surrogates not allowed" at the store (a check)
        raise QueueError("--annotator is not valid UTF-8 text: under a C/POSIX locale without Python's UTF-8 mode a "
                         "non-ASCII name arrives undecoded; set a UTF-8 locale (LANG=C.UTF-8) or PYTHONUTF8=1")
    if annotator is not None and "\x00" in annotator:
        raise QueueError("--annotator holds a NUL character (\\x00): remove it")
    if annotator is not None and len(annotator) > _MAX_ANNOTATOR:
        raise QueueError(f"--annotator is longer than {_MAX_ANNOTATOR} characters")
    path = Path(path)
    store = store or Store(project.store_url)
    check_project_store(project, store)
    ahead = classes_ahead(project, store)  # alkit.toml a class behind the store: rewritten with this import
    before_ahead = list(project.config.classes)
    if ahead is not None:
        project = Project(project.root, replace(project.config, classes=ahead))
    recorded = store.init_classes()
    listed = list(project.config.classes)
    if recorded is not None and project.config.task == "classification" and recorded != listed:
        # the store behind alkit.toml by classes at its end (a store older than the file: a restored backup): every
        # import was refused, --add-class of those classes too, and only an edit of alkit.toml got out (a black-box
        # check); --add-class of exactly them records them in the store, in alkit.toml's order
        tail = listed[len(recorded):] if listed[:len(recorded)] == recorded else []
        named = {unicodedata.normalize("NFC", n.strip()) for n in add_classes}
        if tail and {unicodedata.normalize("NFC", c) for c in tail} <= named:
            project = Project(project.root, replace(project.config, classes=list(recorded)))
            add_classes = [*tail, *(n for n in add_classes if unicodedata.normalize("NFC", n.strip()) not in
                                    {unicodedata.normalize("NFC", c) for c in tail})]
        elif tail:
            raise QueueError(f"alkit.toml lists the classes as [{', '.join(listed)}], the store recorded "
                             f"[{', '.join(recorded)}]: the store lacks {', '.join(map(repr, tail))} (a store older "
                             "than alkit.toml, such as a restored backup): import with "
                             + " ".join(f"--add-class {shlex.quote(c)}" for c in tail) + " to record "
                             + ("it" if len(tail) == 1 else "them") + " in the store")
        else:
            # a class renamed in alkit.toml by hand: its labels were stored under the new name, which the store's
            # record and every later run refused (an options check)
            raise QueueError(f"alkit.toml lists the classes as [{', '.join(listed)}], the store recorded "
                             f"[{', '.join(recorded)}] (init and --add-class write both): restore alkit.toml's "
                             "classes; --add-class adds one")
    before = project
    if add_classes:
        project = _with_classes(project, add_classes, store)
    problems: list[str] = []
    rows = labelfiles.read(path, problems, fmt, label_field=label_field, data_fields=_data_fields(project),
                           read_fields=_read_fields(project))
    nul = [r for r in rows if any("\x00" in (v or "") for v in (r.item_id, r.label, r.annotator))]
    if nul:  # PostgreSQL cannot store one (a traceback, exit 1, a black-box check); no store keeps one portably
        problems.extend(f"{r.where}: its id, label or annotator holds a NUL character (\\x00)" for r in nul)
        dropped = {id(r) for r in nul}
        rows = [r for r in rows if id(r) not in dropped]
    numeric = any(r.item_id and r.item_id.strip().isdigit() for r in rows)
    stripped = _stripped_zeros(rows, [q.item_id for q in queued_items(store)],
                               lambda ids: set(store.keys_for_ids(ids))) if numeric else None
    if stripped:  # before any id is matched: a row would go to the item that has the shorter id
        raise refuse(path, [stripped])
    refused: dict[str, str] = {}
    decisions = _decisions(project, rows, problems, refused)
    problems.extend(_other_rows(project, store, [row for _, row in decisions.values()]))
    if problems and not decisions and not refused:
        raise refuse(path, problems)
    pending = sum(1 for r in rows if r.item_id and r.item_id not in decisions)
    # rows with no answer yet name items too: another project's unfilled queue was taken ("10 without a label
    # yet", exit 0) where the same file filled in was refused for its unknown ids (a black-box check)
    unanswered = {r.item_id: r.name() for r in rows if r.item_id and r.item_id not in decisions and r.item_id not in refused}
    grown = project is not before
    added = project.config.classes[len(before.config.classes):]
    # the store first, alkit.toml after it: the store records the grown class list with the labels in one
    # transaction, and alkit.toml found behind that record is brought up to it (classes_ahead).  alkit.toml first
    # had left, when killed between the two, a class the store never recorded, and every later import refused
    # until the file was edited by hand (a black-box check).  A refused import writes neither.
    staged = _staged_config(project) if (grown or ahead is not None) and not problems else None  # unwritable: refused
    try:  # the store checks the ids of every well-formed row even when the file is already refused
        counts, still, recorded_now, answered_runs = store.import_labels(
            {k: (d, row.name(), row.annotator) for k, (d, row) in decisions.items()}, on_conflict=on_conflict,
            annotator=annotator, found=problems, refused_rows={**unanswered, **refused}, unqueued=unqueued,
            classes=project.config.classes if grown else None)
    except BaseException as exc:
        if staged is not None:
            staged.unlink(missing_ok=True)
        if isinstance(exc, ImportRefused):
            raise refuse(path, exc.problems) from None
        raise
    if staged is not None:
        if recorded_now is not None and recorded_now != list(project.config.classes):  # another import added one
            project = Project(project.root, replace(project.config, classes=recorded_now))  # meanwhile: both kept
            staged = _staged_config(project)
        try:
            os.replace(staged, project.root / CONFIG_NAME)
        except OSError as exc:  # the labels and the class record are in: the next run or import takes them from there
            staged.unlink(missing_ok=True)
            warnings.warn(Note(f"the labels and the class record are stored, but alkit.toml could not be rewritten "
                               f"({exc.strerror or exc}); the next run or import adds the class to it"), stacklevel=2)
        else:
            if ahead is not None:
                behind = ahead[len(before_ahead):]
                warnings.warn(Note(f"alkit.toml lacked the class{'es' if len(behind) > 1 else ''} "
                                   f"{', '.join(map(repr, behind))} that an `--add-class` import recorded in the store "
                                   "with its labels (another import at the same time, or one stopped before it "
                                   "rewrote alkit.toml): added"), stacklevel=2)
    named = {r.item_id for r in rows}
    # e.g. Label Studio's flat exports leave out tasks whose annotation was cancelled: those items
    # stay queued and the run waits for them, which the count alone did not say
    absent_items = [q for q in queued_items(store) if q.item_id not in named] if still else []
    absent = [q.item_id for q in absent_items]
    live = leases.live_runs(store)  # a resumed run keeps 'waiting' in the store until its cycle ends
    waiting_runs = [r for r in store.runs() if r.status == "waiting" and r.name not in live]
    waiting = [r.name for r in waiting_runs]
    # a row naming an item an earlier row of the file answered changes nothing more: counted as unchanged (two
    # annotators' agreeing rows in one file fell in no count, 15 rows read and 10 counted; a black-box check)
    repeated = sum(1 for r in rows if r.item_id in decisions and decisions[r.item_id][1] is not r)
    if pending:  # a blank row for an item already answered changes nothing: unchanged, not 'without a label yet'
        states = store.answers_for_ids(list(unanswered))
        answered = sum(1 for r in rows if r.item_id in unanswered and states.get(r.item_id, ("",))[0] in
                       ("labeled", "skipped"))
        pending, repeated = pending - answered, repeated + answered
    # the runs this import made ready: it took items of their queue out of it, and none is left (the next step names
    # them; it named every waiting run, also those ready before; a retry of the import, or one that lost a race to
    # another, named them again: black-box checks)
    ready = [r.name for r in waiting_runs if r.name in answered_runs and not n_waiting(store, r.id)]
    return ImportResult(path, len(rows), counts["labeled"], counts["skipped"], counts["replaced"],
                        counts["unchanged"] + repeated, counts["kept"], pending, still, absent, waiting, sorted(live),
                        added, ready, sorted({q.run for q in absent_items}))


def _other_rows(project: Project, store: Store, rows: list[Row]) -> list[str]:
    """Rows whose text payload cell is another item's text, in a project whose ids are row numbers (init
    without --id-col).  Why: there an id is only a position, and an answers file for this data in another row
    order put its labels on other items without a word (a black-box check: 'dog text 164' labelled onto item
    165, 'bird text 114').  Only a text that names another item refuses a row: a cell a spreadsheet changed
    ('00075' saved as '75', accents read in the wrong encoding) names none.  A project's own ids are trusted."""
    cfg = project.config
    cols = [c for c in cfg.payload_cols if c != cfg.id_col]
    rows = [r for r in rows if r.data and r.item_id]
    if cfg.id_col not in ROW_ID_NAMES or not cols or not rows:
        return []
    keys = store.keys_for_ids([r.item_id for r in rows])
    found = [r for r in rows if r.item_id in keys]
    cells = _data_cells(project, store, [keys[r.item_id] for r in found], cols, [], ())
    types = cells.schema
    renamed = [{k: v for k, v in written_names(cols, reserved).items() if k != v} for reserved in (RESERVED, LABELS_COLS)]
    own = {*RESERVED, *LABELS_COLS}  # a payload column of such a name is written as data_<name>: the file's is alkit's

    def norm(v: Any) -> str:
        return " ".join(unicodedata.normalize("NFC", "" if v is None else str(v)).split())

    differ: dict[str, list[tuple[Row, str, int]]] = {}  # column -> (row, its text, its item's key)
    for r, item in zip(found, cells.iter_rows(named=True)):
        for c in (c for c in cols if types.get(c) == pl.Utf8):
            names = [m[c] for m in renamed if c in m] or ([] if c in own else [c])
            given = next((r.data[n] for n in names if n in r.data), None)
            if given is not None and norm(given) and norm(given) != norm(item.get(c)):
                differ.setdefault(c, []).append((r, given, keys[r.item_id]))
    out: list[str] = []
    key = payload_key(project.payload_path)
    for c, hits in differ.items():
        wanted = sorted({norm(g) for _, g, _ in hits})
        owners = (pl.scan_parquet(project.payload_path).select(key, c)
                  .with_columns(pl.col(c).cast(pl.Utf8).str.replace_all(r"\s+", " ").str.strip_chars().alias("_t"))
                  .filter(pl.col("_t").is_in(pl.Series(wanted, dtype=pl.Utf8).implode())).collect())
        by_text: dict[str, list[int]] = {}
        for k, t in zip(owners[key], owners["_t"]):
            by_text.setdefault(unicodedata.normalize("NFC", t), []).append(int(k))
        elsewhere = [(r, g, other) for r, g, own_key in hits
                     if (other := next((k for k in by_text.get(norm(g), []) if k != own_key), None)) is not None]
        ids = store.ids_for_keys(sorted({other for _, _, other in elsewhere}))
        for r, g, other in elsewhere[:max(0, 1000 - len(out))]:
            out.append(f"{r.name()}: its {c!r} {g[:40]!r} is item {ids[other]}'s, not item {r.item_id}'s: this "
                       "project names its items by row number (no --id-col), so the file is in another row order "
                       "or another project's")
    return out


def _misread_class(text: str, classes: Sequence[str]) -> list[str]:
    """The classes ``text`` is, read back from Windows-1252 or Latin-1 to UTF-8, in any case and Unicode form (as an
    answer matches a class): 'cafÃ©' and 'CAFÃ©' are 'Café'."""
    back = utf8_misread(text)
    if back is None:
        return []
    nfc = unicodedata.normalize("NFC", back)
    exact = [c for c in classes if unicodedata.normalize("NFC", c) == nfc]
    return exact or [c for c in classes if fold_case(c) == fold_case(nfc)]


def _with_classes(project: Project, names: Sequence[str], store: Store) -> Project:
    """The project with ``names`` appended to its classes, each checked: a classification project whose
    labels come from people, a name not empty, not a class already (in any case), not the skip label,
    and no run running now."""
    cfg = project.config
    if cfg.task != "classification":
        raise QueueError("--add-class: a regression project has no classes")
    if cfg.hide_labels:
        raise QueueError("--add-class: this project's labels come from its data file (init --hide-labels), whose "
                         "classes init took")
    added = list(dict.fromkeys(unicodedata.normalize("NFC", n.strip()) for n in names))
    if "" in added or any("\x00" in n for n in added):
        raise QueueError("--add-class holds an empty class name or a NUL character")
    if any(is_skip_label(n) for n in added):
        raise QueueError(f"--add-class {SKIP_LABEL!r}: label files use that label to skip an item")
    errors = [n for n in added if is_spreadsheet_error(n)]
    if errors:
        raise QueueError(f"--add-class {errors[0]!r} is a spreadsheet's formula error, not a class name")
    missing = [n for n in added if is_missing_label(n)]
    if missing:  # added, then its own answer (and every later one) read as no label (a black-box check)
        raise QueueError(f"--add-class {missing[0]!r}: an answer {missing[0]!r} is read as no label (as NA, N/A, #N/A, "
                         "NaN and null are, any case); name the class otherwise")
    # a class the project has, exactly: the retry of an import that added it (one killed after its commit was
    # refused on every retry, a black-box check); said, and nothing added
    have = [n for n in added if n in {unicodedata.normalize("NFC", c) for c in cfg.classes}]
    if have:
        warnings.warn(Note(f"--add-class {', '.join(map(repr, have))}: already {'a class' if len(have) == 1 else 'classes'}"
                           " of the project (an earlier import added it, or init found it); nothing to add"),
                      stacklevel=2)
        added = [n for n in added if n not in have]
        if not added:
            return project
    known = {fold_case(c): c for c in cfg.classes}
    taken = [f"{n!r} (the class {known[fold_case(n)]!r})" for n in added if fold_case(n) in known]
    # a number in another spelling: '3.0' beside '3' split one class's answers in two, and every later '3.00' was
    # refused as the number of several classes (a black-box check)
    for n in added:
        x = class_number(n)
        if x is None or fold_case(n) in known or zero_padded(n):  # a zero-padded code is a class of its own
            continue
        twins = [k for k in cfg.classes if class_number(k) == x]
        if len(twins) == 1:
            taken.append(f"{n!r} (the number of the class {twins[0]!r}, which an answer {n!r} is filed under)")
        elif twins:
            taken.append(f"{n!r} (the number of the classes {', '.join(map(repr, twins))})")
    if taken:
        raise QueueError(f"--add-class: already a class of the project: {', '.join(taken)}")
    garbled = [(n, twin[0]) for n in added if (twin := _misread_class(n, cfg.classes))]
    if garbled:  # 'CafÃ©' beside 'Café' split one class's answers in two (a black-box check)
        raise QueueError(f"--add-class {garbled[0][0]!r} is the class {garbled[0][1]!r} read in the wrong text encoding "
                         "(UTF-8 read as Windows-1252): import the file saved as UTF-8 instead")
    numbers: dict[float, str] = {}
    for n in added:  # '4.0' and '4' added together: two classes of one number (codes '04' and '004' may be)
        x = None if zero_padded(n) else class_number(n)
        if x is not None and x in numbers:
            raise QueueError(f"--add-class {numbers[x]!r} and {n!r} are one number: add one of them")
        if x is not None:
            numbers[x] = n
    folded: dict[str, str] = {}
    for n in added:  # 'new' and 'NEW' both added: every later 'New' was refused as two classes (a black-box check)
        if fold_case(n) in folded:
            raise QueueError(f"--add-class {folded[fold_case(n)]!r} and {n!r} differ only in case or character width: "
                             "add one of them")
        folded[fold_case(n)] = n
    live = leases.live_runs(store)
    if live:  # its process holds the class list as it was, and would meet a label it cannot encode
        # busy (exit 3), as a run another process drives: the same command works once it is done (an automation check)
        raise leases.RunBusy(f"--add-class: {', '.join(sorted(live))} {'is' if len(live) == 1 else 'are'} running "
                             "now; add the class once no run is running (`alkit status` shows them)")
    return Project(project.root, replace(cfg, classes=[*cfg.classes, *added]))


def classes_ahead(project: Project, store: Store) -> list[str] | None:
    """The store's class record where it extends alkit.toml's list, else None.  Why: an `--add-class` import
    records the grown class list with its labels in one transaction and rewrites alkit.toml just after, so one
    killed between the two left the file a class short, and the store's record is the one the labels were
    written under.  Any other difference is the callers' to refuse."""
    cfg = project.config
    if cfg.task != "classification" or cfg.hide_labels:  # no --add-class there: a class short is a hand edit
        return None
    recorded = store.init_classes()
    if recorded is None or len(recorded) <= len(cfg.classes) or recorded[:len(cfg.classes)] != list(cfg.classes):
        return None
    return recorded


def _staged_config(project: Project) -> Path:
    """alkit.toml with the project's config, written beside it under a temporary name for the caller to rename
    over it (one step); where it cannot be written, the temporary file is removed and alkit.toml named."""
    tmp = project.root / f".{CONFIG_NAME}.{os.getpid()}.tmp"
    try:
        write_config(project.root, project.config, name=tmp.name)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise QueueError(f"cannot write {project.root / CONFIG_NAME} ({exc.strerror or exc}): --add-class records the "
                         "class there; make it writable") from None
    return tmp


# ---------------------------------------------------------------------------- status
def queue_status(project: Project, store: Store | None = None) -> QueueStatus:
    """Pool items queued/labeled/skipped, and people's labels and skips by annotator."""
    store = store or Store(project.store_url)
    check_project_store(project, store)
    with store.session() as s:
        states = dict(s.execute(
            select(Item.state, func.count()).where(Item.split == "pool").group_by(Item.state)).all())
        labeled = s.execute(
            select(Label.annotator, Label.source, func.count()).where(Label.run_id.is_(None))
            .group_by(Label.annotator, Label.source)).all()
        skips = [json.loads(v).get("annotator") for v in s.scalars(select(Meta.value).where(Meta.key.like("skip:%")))]
    table: dict[str, list[int]] = {}
    for who, source, n in labeled:
        name = who or ("(given at init)" if source == "init" else "(unnamed)")
        table.setdefault(name, [0, 0])[0] += int(n)
    for who in skips:
        table.setdefault(who or "(unnamed)", [0, 0])[1] += 1
    by = [AnnotatorCount(k, v[0], v[1]) for k, v in sorted(table.items())]
    return QueueStatus(int(states.get("queued", 0)), int(states.get("labeled", 0)), int(states.get("skipped", 0)),
                       int(states.get("unlabeled", 0)), by)
