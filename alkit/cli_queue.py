"""`alkit queue ...`: the labeling queue for people (export, import, status).  Thin: parse, call
alkit.pools.queue, render with rich."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, List, Optional

import typer
from rich import box
from rich.markup import escape
from rich.table import Table

from alkit.cli_common import (LabelsFormat, OnConflict, ProjectOpt, QueueFormat, console, one_line, parse_csv, typer_app, user_errors,
                              utf8_path)
from alkit.config import load_project
from alkit.choices import ON_CONFLICT, SKIP_LABEL
from alkit.choices import QUEUE_FORMATS as FORMATS

if TYPE_CHECKING:
    from alkit.pools.queue import ImportResult

queue_app = typer_app("Label with people: export the queued items, import their labels, see progress.")



@queue_app.command("export")
def export_cmd(
    fmt: Optional[QueueFormat] = typer.Option(None, "--format", "-f", help="The file format (default: from --out's suffix, else csv)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", parser=utf8_path, metavar="<path>", help="Output file (default, in the project: queue.csv for CSV; another format queue-c<cycle>.<ext>, after the newest cycle it holds)."),
    include: Optional[str] = typer.Option(None, "--include", help="Comma-separated columns to include: payload columns (default: all of them) and numeric feature columns (as in the data file; an imputed cell empty)."),
    escape_formulas: bool = typer.Option(True, "--escape-formulas/--no-escape-formulas", help="CSV: prefix ' to cells a spreadsheet would run as formulas (=, +, -, @, tab, CR); off for machine consumers."),
    project: Path = ProjectOpt,
) -> None:
    """Write the queued items for labelers: id, payload, empty label/skip, score, rank, cycle and why."""
    from alkit.pools.labelfiles import format_for_suffix
    from alkit.pools.queue import export_queue, kept_aside_note

    with user_errors():
        proj = load_project(project)
        res = export_queue(proj, out, fmt, parse_csv(include), escape_formulas=escape_formulas)
    where = proj.cli_flag()
    if res.set_aside is not None:
        if res.set_aside_unreadable:
            console.print(f"[yellow]moved[/] {res.path}, which is no label file alkit can read, out of the way as "
                          f"{res.set_aside}", highlight=False)
        else:
            console.print(f"[yellow]note:[/] {kept_aside_note(res.path, res.set_aside, where)}", highlight=False)
    if res.n_items == 0:
        why = ("this project's labels come from its own file (init --hide-labels): runs label their picks "
               "themselves and queue nothing for people" if proj.config.hide_labels else
               f"`alkit run --resume NAME{where}` queues a run's next batch, `alkit run --budget N{where}` starts "
               f"one; `alkit status{where}` lists the runs")
        console.print(f"nothing is queued; wrote an empty {res.format} file {res.path} ({why})")
        return
    todo = (f"import the tasks into Label Studio, label them, export its JSON and `alkit queue import FILE{where}`"
            if res.format == "label-studio" else
            f"fill in `label` (or skip=true / label {SKIP_LABEL}), then `alkit queue import {shlex.quote(str(res.path))}{where}"
            + ("" if format_for_suffix(res.path) is not None else f" --format {res.format}") + "`")
    shape = "tab-separated" if res.path.suffix.lower() in (".tsv", ".tab") else res.format
    console.print(f"[green]exported[/] {res.n_items} queued item{'' if res.n_items == 1 else 's'} to {res.path} "
                  f"({shape}); {todo}",
                      highlight=False)


@queue_app.command("import")
def import_cmd(
    file: Path = typer.Argument(..., metavar="FILE", callback=utf8_path, help="Labeled CSV, JSONL, Parquet, or Label Studio export (.json)."),
    annotator: Optional[str] = typer.Option(None, "--annotator", help="Who labeled this file (overrides the file's annotator column)."),
    on_conflict: OnConflict = typer.Option("error", "--on-conflict", help="An item already labeled differently: refuse the file, keep the old label, or replace it."),
    fmt: Optional[QueueFormat] = typer.Option(None, "--format", "-f", help="The file's format (default: from its suffix)."),
    label_field: Optional[str] = typer.Option(None, "--label-field", help="Label Studio JSON-MIN/CSV exports: the control holding the label (default: the one field that is neither data nor Label Studio's own)."),
    add_class: Optional[List[str]] = typer.Option(None, "--add-class", help="A class found after init (repeat for several): appended to the project's classes with this import."),
    unqueued: bool = typer.Option(False, "--unqueued", help="Also take labels for pool items no run queued (labels the team has from elsewhere); every run learns from them, none spent them."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
    project: Path = ProjectOpt,
) -> None:
    """Import labels for queued items, all or nothing; the same file twice changes nothing."""
    from alkit.pools.queue import import_labels

    with user_errors():
        proj = load_project(project)
        res = import_labels(proj, file, annotator=annotator, on_conflict=on_conflict, fmt=fmt,
                           label_field=label_field, unqueued=unqueued, add_classes=add_class or ())
    if json_out:
        print(json.dumps({**asdict(res), "path": str(res.path)}))
        return
    parts = [f"{res.labeled} labeled", f"{res.skipped} skipped"] if res.n_rows else [
        "no rows (an empty queue's export: nothing to import)"]  # refused, exit 2: a cron export-import loop died
    parts += [f"{n} {what}" for n, what in ((res.replaced, "replaced"), (res.unchanged, "unchanged"),
                                           (res.kept, "kept (conflicts)"), (res.pending, "without a label yet"))
              if n]
    absent = ""
    if res.not_in_file:  # queued items the file does not name: the run waits for them
        rest = len(res.not_in_file) - 5
        more = f" and {rest} more" if rest > 0 else ""
        runs = res.not_in_file_runs
        # with several runs, the items another run queued read as if this file were incomplete (a black-box check)
        whose = (f" (queued by {', '.join(runs[:3])}{' and others' if len(runs) > 3 else ''})"
                 if runs and len(set(res.waiting_runs) | set(runs)) > 1 else "")
        absent = f"; not in this file: {', '.join(res.not_in_file[:5])}{more}{whose}"
    if res.added_classes:
        console.print(f"[green]added[/] class{'' if len(res.added_classes) == 1 else 'es'} "
                      f"{', '.join(map(repr, res.added_classes))} to the project (alkit.toml); every run learns "
                      f"{'it' if len(res.added_classes) == 1 else 'them'} from its next cycle", highlight=False)
    console.print(f"[green]imported[/] {res.path.name}: {', '.join(parts)}; {res.still_queued} "
                  f"item{'' if res.still_queued == 1 else 's'} still queued{absent}"
                  + _next_step(res, proj.cli_flag()), highlight=False)


def _next_step(res: ImportResult, where: str = "") -> str:
    """What the import lets happen next: a waiting run's next cycle, or nothing (every run is done);
    ``where``: the project flag its commands need (Project.cli_flag)."""
    # the runs this import made ready, named (NAME was left for the team to fill in; every waiting run was listed,
    # also those ready before; none while other runs' items stayed queued: black-box checks)
    ready = (" — ready now: " + ", ".join(f"`alkit run --resume {shlex.quote(n)}{where}`" for n in res.ready_runs)
             if 1 <= len(res.ready_runs) <= 3 else "")
    if res.still_queued:
        return ready
    if len(res.waiting_runs) == 1:
        return f" — `alkit run --resume {shlex.quote(res.waiting_runs[0])}{where}` continues with the next cycle"
    if len(res.waiting_runs) > 1 and ready:
        return ready
    if res.waiting_runs:
        return (f" — `alkit run --resume NAME{where}` continues each run that waited for labels (`alkit status{where}` "
                "lists them)")
    if res.running_runs:
        one = len(res.running_runs) == 1
        return (f" — {', '.join(map(repr, res.running_runs))} {'is' if one else 'are'} running now and "
                f"{'trains on them from its' if one else 'train on them from their'} next cycle")
    return " — no run waits for labels (a run whose budget is spent continues with a larger --budget)"


@queue_app.command("labels")
def labels_cmd(
    fmt: Optional[LabelsFormat] = typer.Option(None, "--format", "-f", help="csv, jsonl or parquet (default: from --out's suffix, else csv)."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", parser=utf8_path, metavar="<path>", help="Output file (default: labels.csv, labels.jsonl or labels.parquet in the project)."),
    include: Optional[str] = typer.Option(None, "--include", help="Comma-separated columns to include: payload columns (default: all of them) and numeric feature columns."),
    escape_formulas: bool = typer.Option(True, "--escape-formulas/--no-escape-formulas", help="CSV: prefix ' to cells a spreadsheet would run as formulas; off for machine consumers."),
    history: bool = typer.Option(False, "--history", help="Also every answer a correction (--on-conflict replace) replaced, with a replaced_at column."),
    project: Path = ProjectOpt,
) -> None:
    """Write every label collected (from the data file and from people) and every skip: id, payload, label, skip, annotator, source, cycle, run, labelled_at."""
    from alkit.pools.queue import export_labels, kept_aside_note

    with user_errors():
        proj = load_project(project)
        res = export_labels(proj, out, fmt, parse_csv(include), escape_formulas=escape_formulas, history=history)
    if res.set_aside is not None:
        console.print(f"[yellow]note:[/] {kept_aside_note(res.path, res.set_aside)}", highlight=False)
    shape = "tab-separated" if res.path.suffix.lower() in (".tsv", ".tab") else res.format
    note = (" (the runs of this project label their picks from its data file, init --hide-labels: those labels "
            "are the data file's and are not written here)" if proj.config.hide_labels else
            f" (not the test split's {res.n_test} label{'' if res.n_test == 1 else 's'} from the data file, which "
            "measure the runs)" if res.n_test else "")
    n_labels = res.n_items - res.n_skipped - res.n_replaced
    older = f" and {res.n_replaced} replaced answer{'' if res.n_replaced == 1 else 's'}" if history else ""
    if res.n_items == 0:
        note += " (nothing collected yet: the file holds its header alone)"
    console.print(f"[green]wrote[/] {n_labels} label{'' if n_labels == 1 else 's'}, {res.n_skipped} "
                  f"skip{'' if res.n_skipped == 1 else 's'}{older} to {res.path} ({shape}){note}", highlight=False)


@queue_app.command("status")
def status_cmd(
    json_out: bool = typer.Option(False, "--json", help="Machine-readable output."),
    project: Path = ProjectOpt,
) -> None:
    """Queued, labeled and skipped pool items, and labels/skips by annotator."""
    from alkit.pools.queue import queue_status

    with user_errors():
        st = queue_status(load_project(project))
    if json_out:
        print(json.dumps(asdict(st)))
        return
    console.print(f"pool: [bold]{st.queued}[/] queued, [bold]{st.labeled}[/] labeled, "
                      f"[bold]{st.skipped}[/] skipped, {st.unlabeled} unlabeled")
    if st.by_annotator:
        t = Table(title="by annotator", box=box.SIMPLE_HEAD, title_justify="left")
        t.add_column("annotator")
        t.add_column("labeled", justify="right")
        t.add_column("skipped", justify="right")
        for a in st.by_annotator:
            # a name from a label file, shown as text: an escape sequence in it cleared the terminal and
            # painted a red 'ADMIN' (an untrusted-input check), and [brackets] were read as markup
            t.add_row(escape(one_line(a.annotator)), str(a.labeled), str(a.skipped))
        console.print(t)
