"""Label Studio JSON: alkit writes a list of tasks (the item in ``data``, why it was picked in
``meta`` and ``predictions``) and reads Label Studio's JSON export of them back (the label from
the annotation's choices/labels/..., a cancelled annotation as a skip, ``completed_by`` as the
annotator); a plain JSON list of {id, label} records is read too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from alkit.pools.labelfiles._common import WHY_COLS, Row, as_text, atomic_write, decode, records_to_rows, refuse

NAME = "label-studio"
SUFFIXES = (".json",)


def write(path: Path, records: list[dict], frame: pl.DataFrame, cols: list[str], *,
          escape_formulas: bool = True) -> list[str]:  # escape_formulas: CSV only
    tasks = [{
        "data": {"id": r["id"], **{c: r[c] for c in cols}},
        "predictions": [{"model_version": f"alkit {r['strategy']}/{r['scorer']}/{r['selector']}",
                         "score": r["score"], "result": []}],
        "meta": {k: r[k] for k in WHY_COLS},
    } for r in records]
    atomic_write(path, lambda p: p.write_text(json.dumps(tasks, indent=1, default=str), encoding="utf-8"))
    return ["id", *cols]


def _ls_label(result: Any) -> tuple[str | None, str | None]:
    """(label text, problem) from one Label Studio annotation ``result`` list."""
    if not isinstance(result, list):
        return None, "annotation result is not a list"
    for r in result:
        value = r.get("value", {}) if isinstance(r, dict) else {}
        for key in ("choices", "labels", "taxonomy", "text", "number", "rating"):
            if key not in value:
                continue
            v = value[key]
            if isinstance(v, list):
                flat = [x[0] if isinstance(x, list) and x else x for x in v]
                if len(flat) != 1:
                    return None, f"{len(flat)} {key} in one annotation, expected exactly one"
                v = flat[0]
            return as_text(v), None
    return None, None


def _ls_annotator(ann: dict[str, Any]) -> str | None:
    by = ann.get("completed_by")
    if isinstance(by, dict):
        return as_text(by.get("email") or by.get("username") or by.get("id"))
    return None if by is None else f"label-studio user {by}"


def read(path: Path, data: bytes, problems: list[str]) -> list[Row]:
    text = decode(path, data)
    try:
        tasks = json.loads(text)
    except json.JSONDecodeError as exc:
        raise refuse(path, [f"line {exc.lineno}: invalid JSON ({exc.msg}; truncated or malformed file)"]) from None
    if not isinstance(tasks, list):
        raise refuse(path, [f"expected a JSON list of tasks, found {type(tasks).__name__}"])
    if tasks and all(isinstance(t, dict) and "data" not in t and "annotations" not in t for t in tasks):
        # a plain JSON list of {id, label, ...} records
        for i, t in enumerate(tasks, start=1):
            if "id" not in t or not ({"label", "skip"} & set(t)):
                problems.append(f"record {i}: missing key {', '.join(k for k in ('id', 'label') if k not in t)}")
        return records_to_rows(path, ((f"record {i}", t) for i, t in enumerate(tasks, start=1)), problems)
    rows: list[Row] = []
    for i, task in enumerate(tasks, start=1):
        where = f"task {i}"
        data_ = task.get("data") if isinstance(task, dict) else None
        if not isinstance(data_, dict) or "id" not in data_:
            problems.append(f"{where}: no data.id (export the tasks alkit wrote, which carry the item id in data.id)")
            continue
        item_id = as_text(data_["id"])
        anns = task.get("annotations") or []
        if not isinstance(anns, list):
            problems.append(f"{where} (id {item_id}): annotations is not a list")
            continue
        for j, ann in enumerate(anns, start=1):
            w = f"{where} annotation {j}" if len(anns) > 1 else where
            if not isinstance(ann, dict):
                problems.append(f"{w} (id {item_id}): annotation is not an object")
                continue
            if ann.get("was_cancelled"):
                rows.append(Row(w, item_id, None, True, _ls_annotator(ann)))
                continue
            label, problem = _ls_label(ann.get("result", []))
            if problem:
                problems.append(f"{w} (id {item_id}): {problem}")
                continue
            rows.append(Row(w, item_id, label, False, _ls_annotator(ann)))
    return rows
