"""Label Studio: alkit writes a list of tasks (the item id as ``data.alkit_id``, the payload in
``data``, why it was picked in ``meta`` and ``predictions``) and reads back each of Label Studio's
three export shapes:

- JSON (full): tasks with ``annotations``; the label from an annotation's choices/labels/...,
  a cancelled annotation as a skip, ``completed_by`` as the annotator;
- JSON-MIN: one flat record per annotation, the task's data fields beside one key per control
  (``{"alkit_id": ..., "text": ..., "sentiment": "great", "annotator": ...}``);
- CSV: the same columns as JSON-MIN.

Label Studio puts its own task ``id`` at the top of the flat shapes, which is why alkit's id
travels as ``alkit_id`` (tasks exported before that carried it as ``data.id``, still read).  The
label is the control named by ``--label-field``, else the one key that is neither a data field
of the project nor Label Studio's own.  A plain JSON list of {id, label} records is read too."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import polars as pl

from alkit.pools.labelfiles._common import WHY_COLS, Row, as_id, as_text, atomic_write, decode, records_to_rows, refuse

NAME = "label-studio"
SUFFIXES = (".json",)
ID_KEY = "alkit_id"
# what Label Studio adds to every JSON-MIN record / CSV row besides the data and the controls
LS_KEYS = {"id", ID_KEY, "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement",
           "drafts", "predictions", "meta", "total_annotations", "cancelled_annotations", "total_predictions",
           "file_upload", "inner_id", "project", "updated_by", "comment_count", "unresolved_comment_count",
           "last_comment_updated_at", "annotations_results", "annotations_ids", "predictions_score"}


def write(path: Path, frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:  # escape_formulas: CSV only
    cols = [c for c in cols if c not in (ID_KEY, "id")]  # "id" would collide with Label Studio's task id
    tasks = [{
        "data": {ID_KEY: r["id"], **{c: r[c] for c in cols}},
        "predictions": [{"model_version": f"alkit {r['strategy']}/{r['scorer']}/{r['selector']}",
                         "score": r["score"], "result": []}],
        "meta": {k: r[k] for k in WHY_COLS},
    } for r in frame.iter_rows(named=True)]
    atomic_write(path, lambda p: p.write_text(json.dumps(tasks, indent=1, default=str), encoding="utf-8"))
    return [ID_KEY, *cols]


def _ls_results(result: Any) -> tuple[list[tuple[str, str, Any]], str | None]:
    """((control name, value key, value) of every labelling result, problem) from one annotation's
    ``result`` list: the controls alkit can read a label from (choices, labels, rating, ...); a
    result that is not an object, or whose value is not one, is a problem (a hand-edited or
    damaged export: it was taken for an annotation without a label, or crashed)."""
    if not isinstance(result, list):
        return [], "annotation result is not a list"
    found = []
    for r in result:
        if not isinstance(r, dict):
            return [], f"a result is {_json_kind(r)}, not an object"
        name = as_text(r.get("from_name")) or ""
        value = r.get("value", {})
        if not isinstance(value, dict):
            return [], f"the value of result {name or '(unnamed)'} is {_json_kind(value)}, not an object"
        key = next((k for k in _VALUE_KEYS if k in value), None)
        if key is not None:
            found.append((name, key, value[key]))
    return found, None


def _json_kind(v: Any) -> str:
    return ("null" if v is None else "a list" if isinstance(v, list) else "text" if isinstance(v, str)
            else "true/false" if isinstance(v, bool) else "a number" if isinstance(v, (int, float)) else type(v).__name__)


def _ls_label(results: tuple[list[tuple[str, str, Any]], str | None],
              label_field: str | None) -> tuple[str | None, str | None]:
    """(label text, problem) from one annotation's ``_ls_results``: the value of the control
    ``label_field`` names, else of the one control there is (``_ls_controls`` refuses a file with several)."""
    found, problem = results
    if problem:
        return None, problem
    if label_field is not None:
        found = [f for f in found if f[0] == label_field]
    if not found:
        return None, None
    if len({json.dumps(f[2], sort_keys=True, default=str) for f in found}) > 1:  # the first was taken unsaid
        return None, f"{len(found)} results of control {found[0][0] or '(unnamed)'} in one annotation, expected one"
    name, key, v = found[0]
    if isinstance(v, list):
        flat = [x[0] if isinstance(x, list) and x else x for x in v]
        if len(flat) != 1:
            return None, f"{len(flat)} {key} in one annotation, expected exactly one"
        v = flat[0]
    if v is None or isinstance(v, (dict, list)):
        return None, f"the {key} of {name or 'a result'} is {json.dumps(v)[:40]}, not a label"
    return as_text(v), None


def _ls_controls(path: Path, parsed: list[tuple[list[tuple[str, str, Any]], str | None]],
                 label_field: str | None) -> None:
    """Refuse a full JSON export whose annotations (``parsed``: their ``_ls_results``) hold several
    labelling controls and no ``--label-field`` to choose one (a rating beside the class was read as the
    label), or whose controls do not include the one named; as the flat exports' field choice does."""
    names = dict.fromkeys(name for found, _ in parsed for name, _, _ in found)
    if label_field is None and len(names) > 1:
        raise refuse(path, [f"several controls could be the label ({', '.join(names)}); name the labeling control "
                            "with --label-field"])
    if label_field is not None and names and label_field not in names:
        raise refuse(path, [f"--label-field {label_field!r} is not a control of the export; controls: {', '.join(names)}"])


def _ls_user(by: Any) -> str | None:
    """One name per Label Studio user whichever export it comes from: the full JSON's
    ``completed_by`` (a user id, or an object with email/username/id) and the flat exports'
    ``annotator`` (the same id, as a number or its digits, or an email)."""
    if isinstance(by, dict):  # the id first, as the flat exports and a bare completed_by give it (the email made a second name)
        by = by.get("id") if by.get("id") is not None else by.get("email") or by.get("username")
    text = as_text(by)
    if text is None or not text.strip():
        return None
    return f"label-studio user {text.strip()}" if text.strip().isdigit() else text.strip()


_VALUE_KEYS = ("choices", "labels", "taxonomy", "text", "number", "rating")


def _flat_label(value: Any) -> tuple[str | None, str | None]:
    """(label, problem) from a control's value in a flat record: a string, a number, a list of one,
    or an object as JSON-MIN writes some controls ({"choices": [...]}; a Number control as
    [{"number": 243.0}]); a CSV cell holds those as JSON."""
    for _ in range(4):  # list of one -> object -> list of one -> scalar, at most
        if isinstance(value, str) and value.strip().startswith(("{", "[")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                break
        if isinstance(value, dict):
            inner = next((value[k] for k in _VALUE_KEYS if k in value), None)
            if inner is None:
                return None, f"cannot read a label from {json.dumps(value)[:60]}"
            value = inner
        elif isinstance(value, list):
            flat = [x[0] if isinstance(x, list) and x else x for x in value]
            if len(flat) > 1:
                return None, f"{len(flat)} values in one annotation, expected exactly one"
            value = flat[0] if flat else None
        else:
            break
    return as_text(value), None


def _label_key(records: list[dict[str, Any]], label_field: str | None, data_fields: set[str]) -> str:
    keys = [k for k in dict.fromkeys(k for r in records for k in r)]
    if label_field is not None:
        if label_field not in keys:
            raise ValueError(f"--label-field {label_field!r} is not a field of the export; fields: {', '.join(keys)}")
        return label_field
    candidates = [k for k in keys if k not in LS_KEYS and k not in data_fields]
    if len(candidates) != 1:
        what = f"several fields could be the label ({', '.join(candidates)})" if candidates else "no annotation field"
        raise ValueError(f"{what}; name the labeling control with --label-field")
    return candidates[0]


def _flat_rows(path: Path, records: list[tuple[str, dict[str, Any]]], problems: list[str],
               label_field: str | None, data_fields: set[str]) -> list[Row]:
    """JSON-MIN records or CSV rows: one annotation each."""
    try:
        key = _label_key([r for _, r in records], label_field, data_fields)
    except ValueError as exc:
        raise refuse(path, [str(exc)]) from None
    rows = []
    for where, rec in records:
        item_id = as_id(rec.get(ID_KEY))
        if item_id is None:
            problems.append(f"{where}: no {ID_KEY} (export tasks that alkit wrote)")
            continue
        label, problem = _flat_label(rec.get(key))
        if problem:
            problems.append(f"{where} (id {item_id}): {problem}")
            continue
        rows.append(Row(where, item_id, label, False, _ls_user(rec.get("annotator"))))
    return rows


def is_export_csv(header: list[str]) -> bool:
    """A CSV header as Label Studio writes its CSV export of alkit's tasks."""
    return ID_KEY in header and "annotation_id" in header


def read(path: Path, data: bytes, problems: list[str], *, label_field: str | None = None,
         data_fields: Sequence[str] = ()) -> list[Row]:
    """``data_fields``: the project's payload columns (never the label when guessing the field)."""
    text = decode(path, data)
    fields = set(data_fields)
    if path.suffix.lower() == ".csv":
        return _flat_rows(path, _csv_records(path, text), problems, label_field, fields)
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(path, [f"line {exc.lineno}: invalid JSON ({exc.msg}; truncated or malformed file)"]) from None
    if not isinstance(tasks, list):
        raise refuse(path, [f"expected a JSON list of tasks, found {type(tasks).__name__}"])
    flat = tasks and all(isinstance(t, dict) and "data" not in t and "annotations" not in t for t in tasks)
    if flat and any(ID_KEY in t for t in tasks):  # JSON-MIN
        return _flat_rows(path, [(f"record {i}", t) for i, t in enumerate(tasks, start=1)], problems, label_field, fields)
    if flat:  # a plain JSON list of {id, label, ...} records
        if label_field not in (None, "label"):  # it was ignored here, and refused for a CSV
            raise refuse(path, [f"--label-field {label_field!r} names a Label Studio control; this is a plain list of "
                                "{id, label} records: drop --label-field"])
        for i, t in enumerate(tasks, start=1):
            if "id" not in t or not ({"label", "skip"} & set(t)):
                problems.append(f"record {i}: missing key {', '.join(k for k in ('id', 'label') if k not in t)}")
        return records_to_rows(path, ((f"record {i}", t) for i, t in enumerate(tasks, start=1)), problems)
    parsed = {(i, j): _ls_results(a.get("result", []))  # each annotation read once, for the controls and the label
              for i, t in enumerate(tasks, start=1) if isinstance(t, dict) and isinstance(t.get("annotations"), list)
              for j, a in enumerate(t["annotations"], start=1) if isinstance(a, dict)}
    _ls_controls(path, list(parsed.values()), label_field)
    rows: list[Row] = []
    for i, task in enumerate(tasks, start=1):
        where = f"task {i}"
        data_ = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data_, dict) or not ({ID_KEY, "id"} & set(data_)):
            problems.append(f"{where}: no data.{ID_KEY} (export the tasks alkit wrote, which carry the item id)")
            continue
        item_id = as_id(data_.get(ID_KEY, data_.get("id")))
        anns = task.get("annotations") or []
        if not isinstance(anns, list):
            problems.append(f"{where} (id {item_id}): annotations is not a list")
            continue
        task_rows: list[Row] = []
        # newest first, by updated_at (else created_at; else the list's order, as Label Studio makes it): an
        # item is credited to its latest annotator, as the flat exports, which carry the latest annotation, do
        for j, ann in sorted(enumerate(anns, start=1), key=lambda ja: _made_at(ja[1], ja[0]), reverse=True):
            w = f"{where} annotation {j}" if len(anns) > 1 else where
            if not isinstance(ann, dict):
                problems.append(f"{w} (id {item_id}): annotation is not an object")
                continue
            if ann.get("was_cancelled"):
                task_rows.append(Row(w, item_id, None, True, _ls_user(ann.get("completed_by"))))
                continue
            label, problem = _ls_label(parsed[(i, j)], label_field)
            if problem:
                problems.append(f"{w} (id {item_id}): {problem}")
                continue
            task_rows.append(Row(w, item_id, label, False, _ls_user(ann.get("completed_by"))))
        # one annotator skipped, another labelled: the item has its label (two labels that
        # disagree stay a conflict, for people to settle)
        if any(not r.skip and r.label is not None for r in task_rows):
            task_rows = [r for r in task_rows if not r.skip]
        if not anns:  # a task not annotated yet: no answer, but its id names an item (it was "not in this file",
            task_rows = [Row(where, item_id, None, False, None)]  # and another project's ids went unchecked)
        rows.extend(task_rows)
    return rows


def _made_at(ann: Any, position: int) -> tuple[float, int]:
    """When an annotation was last changed (POSIX seconds; -inf where it says not or cannot be read), then
    its place in the list: the sort key that puts the newest last."""
    stamp = ann.get("updated_at") or ann.get("created_at") if isinstance(ann, dict) else None
    try:
        when = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
        when = when if when.tzinfo else when.replace(tzinfo=timezone.utc)
        return when.timestamp(), position
    except (TypeError, ValueError):
        return -math.inf, position


def _csv_records(path: Path, text: str) -> list[tuple[str, dict[str, Any]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header = [h.strip() for h in next(reader, [])]
        if not is_export_csv(header):
            raise refuse(path, [f"header: not a Label Studio CSV export of alkit tasks (needs {ID_KEY} and "
                                "annotation_id columns)"])
        out = []
        for fields in reader:
            if not fields or all(not f.strip() for f in fields):
                continue
            where = f"line {reader.line_num}"
            if len(fields) != len(header):
                raise refuse(path, [f"{where}: {len(fields)} fields, expected {len(header)} (truncated or malformed file; "
                                    "some Label Studio versions write text with commas unquoted in CSV: export JSON or "
                                    "JSON-MIN instead, or leave text columns out with `alkit queue export --include`)"])
            out.append((where, dict(zip(header, fields))))
    except csv.Error as exc:
        raise refuse(path, [f"line {reader.line_num}: {exc} (truncated or malformed file)"]) from None
    return out
