"""A labelling team's workflow over several cycles and runs: answers filled into a queue file are
never overwritten before they are imported; the hint after each cycle continues the right run
(`alkit run --resume NAME`); Label Studio's three exports name one user alike and read a Number
control; a spreadsheet's lost leading zeros are named."""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from sqlalchemy import select

from alkit.config import Project, load_project
from alkit.pools.ingest import InitOptions, init_project
from alkit.pools.queue import QueueError, export_queue, import_labels
from alkit.pools.schema import CycleRow, Run
from alkit.pools.store import Store

from conftest import digits_frame
from test_queue import N_TEST, PX, _digits_human, invoke, queue_batch, shared_labels, snapshot


def _fill(path: Path, truth: dict[str, str], n: int | None = None) -> None:
    """A labeler fills in the first n rows of a CSV queue file in place (not imported yet)."""
    q = pl.read_csv(path, infer_schema=False)
    labels = [truth[i] if n is None or j < n else None for j, i in enumerate(q["id"])]
    q.with_columns(pl.Series("label", labels, dtype=pl.Utf8)).write_csv(path)


def test_answers_not_yet_imported_are_kept_when_the_queue_file_is_rewritten(tmp_path: Path) -> None:
    """`alkit run` rewrites queue.csv every cycle and `queue export` reuses names; a file filled in
    place was overwritten with an empty queue (30 labels gone).  It is now moved aside first, and
    the kept file imports as it was."""
    project, truth = _digits_human(tmp_path)
    queue_batch(project, 6)
    res = export_queue(project)
    _fill(res.path, truth, n=4)
    again = export_queue(project)  # a colleague's export over the filled file
    assert again.set_aside is not None and again.set_aside.name.startswith("queue.unimported-")
    assert pl.read_csv(again.path, infer_schema=False)["label"].null_count() == 6  # the fresh queue
    imported = import_labels(project, again.set_aside)
    assert imported.labeled == 4
    # the answers are in the store now: overwriting that file again loses nothing, so nothing is kept
    _fill(again.path, truth, n=4)
    assert export_queue(project).set_aside is None
    # a file that is not a label file at all (here: someone's data) is kept too, never overwritten
    data = tmp_path / "mine.csv"
    data.write_text("a,b\n1,2\n")
    out = export_queue(project, data)
    assert out.set_aside is not None and out.set_aside.read_text() == "a,b\n1,2\n"
    assert out.set_aside_unreadable and not again.set_aside_unreadable  # said as such, not as answers to import
    data.write_text("notes\n")
    said = invoke("queue", "export", "--out", str(data), "-p", str(project.root)).text.replace("\n", "")
    assert "which is no label file alkit can read" in said and "answers not yet imported" not in said


def test_the_labels_file_names_the_run_whose_queue_each_answer_came_from(tmp_path: Path) -> None:
    """Each run counts its own cycles, so on a project with several runs a label's cycle did not say which
    run's queue it answered (a black-box check).  `queue labels` writes a run column: the run that queued
    the item in that cycle, empty for the data file's labels; a replaced answer keeps its own."""
    from alkit.pools.queue import export_labels

    project, truth = _digits_human(tmp_path)
    first = queue_batch(project, 3, cycle=0, run="a, b")  # a name may hold a comma: the cell is quoted
    queue_batch(project, 0, cycle=0, run="second")
    later = queue_batch(project, 4, cycle=1, run="second")
    answer = tmp_path / "a.csv"
    answer.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in first + later[:3]) + f"{later[3]},__skip__\n")
    import_labels(project, answer)
    out = pl.read_csv(export_labels(project, tmp_path / "l.csv").path, infer_schema=False)
    assert {r["id"]: (r["cycle"], r["run"]) for r in out.to_dicts()} == {
        **{i: ("0", "a, b") for i in first}, **{i: ("1", "second") for i in later}}
    before = snapshot(project)
    assert import_labels(project, tmp_path / "l.csv").unchanged == 7 and snapshot(project) == before
    answer.write_text(f"id,label\n{first[0]},{(int(truth[first[0]]) + 1) % 10}\n")
    import_labels(project, answer, on_conflict="replace")
    out = pl.read_parquet(export_labels(project, tmp_path / "l.parquet", history=True).path)
    assert out.filter(pl.col("id") == first[0])["run"].to_list() == ["a, b", "a, b"]
    assert out.filter(pl.col("source") == "init").height == 0  # the test split's labels are not written


def test_the_hint_continues_the_run_that_queued_the_batch(tmp_path: Path) -> None:
    """The hint said `alkit run --project P` again, which needs --budget and, with only a budget,
    continued the default run; a run started with other options went on as a new one.  --resume
    continues a run by name with every option it was started with."""
    df = digits_frame(160).with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "pool.csv")
    proj = str(tmp_path / "proj")
    assert invoke("init", str(tmp_path / "pool.csv"), "--id-col", "id", "--label-col", "label", "-p", proj).exit_code == 0
    truth = dict(zip(digits_frame(160)["id"], map(str, digits_frame(160)["label"])))
    first = invoke("run", "--strategy", "topk", "--acquisition", "margin", "-o", "width=32", "--budget", "30",
                   "--seed", "3", "-p", proj)
    assert first.exit_code == 0, first.text
    name = "topk-margin-width=32-b10-s3"
    assert f"alkit run --resume {name} --project {proj}`" in first.text
    _fill(Path(proj) / "queue.csv", truth)
    assert invoke("queue", "import", str(Path(proj) / "queue.csv"), "-p", proj).exit_code == 0
    out = invoke("run", "--resume", name, "-p", proj)
    assert out.exit_code == 0, out.text
    st = json.loads(invoke("status", "--json", "-p", proj).stdout)
    assert [(r["name"], r["cycles"], r["n_spent"]) for r in st] == [(name, 2, 20)]  # the same run went on
    # --resume takes the run's own options; another one is refused by name, as is an unknown run
    before = snapshot(load_project(proj))
    bad = invoke("run", "--resume", name, "--seed", "4", "--acquisition", "entropy", "-p", proj)
    assert bad.exit_code == 2 and "--resume " + name + " continues the run with the options it was started with: drop --seed, --acquisition" in bad.text
    nope = invoke("run", "--resume", "nope", "-p", proj)
    assert nope.exit_code == 2 and f"no run called 'nope' in this project; runs: {name}" in nope.text
    plain = invoke("run", "-p", proj)
    assert plain.exit_code == 2 and "--budget is required" in plain.text
    assert snapshot(load_project(proj)) == before
    # a smaller --budget cuts a run short: said so
    _fill(Path(proj) / "queue.csv", truth)
    assert invoke("queue", "import", str(Path(proj) / "queue.csv"), "-p", proj).exit_code == 0
    st = invoke("status", "-p", proj).text  # learns from 20 now; its latest metrics are those of the fit on 10
    assert "20/30" in st and " @10" in st
    cut = invoke("run", "--resume", name, "--budget", "20", "-p", proj)
    assert cut.exit_code == 0 and f"run {name}'s budget lowered from 30 to 20 labels by --budget 20" in cut.text


def test_a_budget_beyond_what_other_runs_left_says_what_is_left(tmp_path: Path) -> None:
    project, truth = _digits_human(tmp_path, n=N_TEST + 25)  # a pool of 25
    proj = str(project.root)
    assert invoke("run", "--strategy", "random", "--budget", "20", "-p", proj).exit_code == 0
    _fill(project.root / "queue.csv", truth)
    assert invoke("queue", "import", str(project.root / "queue.csv"), "-p", proj).exit_code == 0
    assert invoke("run", "--strategy", "random", "--seed", "1", "--budget", "10", "-p", proj).exit_code == 0
    out = invoke("run", "--strategy", "random", "--seed", "1", "--budget", "20", "-p", proj)
    assert out.exit_code == 2
    assert ("a budget of 20 labels is more than run 'random-b10-s1' can spend: it holds 10 pool items (its picks) and 5 are "
            "left unlabelled (labels from other runs count too); pass --budget 15 or less") in out.text


def _ls_regression(tmp_path: Path) -> tuple[Project, list[str], dict[str, float]]:
    df = digits_frame(100)
    y = (df["px10"] * 3 + 1).cast(pl.Float64)
    truth = dict(zip(df["id"], y.to_list()))
    df.with_columns(pl.when(pl.int_range(pl.len()) < 40).then(y).otherwise(None).alias("label")).write_csv(tmp_path / "r.csv")
    init_project(tmp_path / "r.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX,
                                                               task="regression"))
    project = load_project(tmp_path / "p")
    return project, queue_batch(project, 5), truth


@pytest.mark.parametrize("shape", ["json-min", "csv"])
def test_label_studio_number_controls_in_flat_exports(tmp_path: Path, shape: str) -> None:
    """Label Studio's converter unwraps only Choices and TextArea in JSON-MIN / CSV: a Number
    control arrives as [{"number": 243.0}], refused as 'not a number'."""
    project, ids, truth = _ls_regression(tmp_path)
    records = [{"alkit_id": i, "id": 10 + n, "target": [{"number": truth[i]}], "annotator": 7, "annotation_id": 50 + n,
                "created_at": "2026-12-01T10:00:00Z", "updated_at": "2026-12-01T10:00:05Z", "lead_time": 3.0}
               for n, i in enumerate(ids)]
    if shape == "csv":
        path = tmp_path / "export.csv"
        pl.DataFrame([{**r, "target": json.dumps(r["target"])} for r in records]).write_csv(path)
    else:
        path = tmp_path / "export.json"
        path.write_text(json.dumps(records))
    assert import_labels(project, path).labeled == len(ids)
    got = shared_labels(project)
    assert {i: float(got[i][0]) for i in ids} == {i: truth[i] for i in ids}
    assert {got[i][2] for i in ids} == {"label-studio user 7"}  # as the full JSON's completed_by 7 names them


def test_label_studio_full_json_skip_then_label_and_one_name_per_user(tmp_path: Path) -> None:
    """A cancelled annotation (a skip) beside another annotator's label was refused as a conflict
    with no way past it; the label now stands.  The newest annotation is credited, as in the flat
    exports, and a user is 'label-studio user N' in every shape."""
    project, ids, truth = _ls_regression(tmp_path)

    def ann(user: int, value: float | None) -> dict:
        if value is None:
            return {"completed_by": user, "was_cancelled": True, "result": []}
        return {"completed_by": user, "result": [{"type": "number", "value": {"number": value}}]}

    tasks = [{"data": {"alkit_id": ids[0]}, "annotations": [ann(9, None), ann(10, truth[ids[0]])]},
             {"data": {"alkit_id": ids[1]}, "annotations": [ann(9, truth[ids[1]]), ann(10, truth[ids[1]])]},
             {"data": {"alkit_id": ids[2]}, "annotations": [ann(9, None)]}]
    path = tmp_path / "full.json"
    path.write_text(json.dumps(tasks))
    res = import_labels(project, path)
    assert (res.labeled, res.skipped) == (2, 1)
    got = shared_labels(project)
    assert got[ids[0]][2] == got[ids[1]][2] == "label-studio user 10"
    # the newest by updated_at, whatever the list's order (a black-box check credited the last in the list)
    later = [{"data": {"alkit_id": ids[4]}, "annotations": [
        {**ann(5, truth[ids[4]]), "updated_at": "2026-12-01T11:00:00.000000Z"},
        {**ann(1, truth[ids[4]]), "updated_at": "2026-12-01T10:00:00.000000Z"}]}]
    (tmp_path / "later.json").write_text(json.dumps(later))
    assert import_labels(project, tmp_path / "later.json").labeled == 1
    assert shared_labels(project)[ids[4]][2] == "label-studio user 5"
    disagree = tmp_path / "disagree.json"
    disagree.write_text(json.dumps([{"data": {"alkit_id": ids[3]}, "annotations": [ann(9, 1.0), ann(10, 2.0)]}]))
    with pytest.raises(QueueError, match="conflicting labels in the file.*settle them in the file, or in Label Studio"):
        import_labels(project, disagree)
    # a task not annotated yet is a row without an answer: counted so (it was "not in this file"), its id checked
    # (another project's unannotated tasks were taken, exit 0; a black-box check)
    open_tasks = [{"data": {"alkit_id": ids[3]}, "annotations": [ann(9, truth[ids[3]])]},
                  {"data": {"alkit_id": ids[2]}, "annotations": []}]
    (tmp_path / "open.json").write_text(json.dumps(open_tasks))
    res = import_labels(project, tmp_path / "open.json")
    # (ids[2] was skipped above: its empty task changes nothing, counted as unchanged, not as waiting for a label)
    assert (res.labeled, res.pending, res.unchanged) == (1, 0, 1) and ids[2] not in res.not_in_file
    (tmp_path / "foreign.json").write_text(json.dumps([*open_tasks, {"data": {"alkit_id": "nope"}, "annotations": []}]))
    with pytest.raises(QueueError, match="nope.*unknown id"):
        import_labels(project, tmp_path / "foreign.json")


def _project_with_ids(tmp_path: Path, ids: "pl.Expr") -> Project:
    """A 100-item digits project (the first 40 rows the pool, unlabelled) whose ids are ``ids``."""
    df = digits_frame(100).with_columns(ids.alias("id"))
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 40).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "ids.csv")
    init_project(tmp_path / "ids.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    return load_project(tmp_path / "p")


def test_ids_a_spreadsheet_stripped_of_leading_zeros_are_named(tmp_path: Path) -> None:
    project = _project_with_ids(tmp_path, pl.format("00{}", pl.int_range(pl.len()) + 100))
    ids = queue_batch(project, 3)
    saved = tmp_path / "saved.csv"
    saved.write_text("id,label\n" + "".join(f"{int(i)},1\n" for i in ids))
    with pytest.raises(QueueError, match=rf"ids {int(ids[0])} \(queued as {ids[0]}\).* lost their leading zeros"):
        import_labels(project, saved)
    # both lost: the zeros and the whole-number form (157.0); it was a bare 'unknown id' per row
    saved.write_text("id,label\n" + "".join(f"{int(i)}.0,1\n" for i in ids))
    with pytest.raises(QueueError, match=rf"ids such as '{int(ids[0])}.0' are the queued id '{ids[0]}' written as a number"):
        import_labels(project, saved)


def test_the_import_names_queued_items_the_file_leaves_out(tmp_path: Path) -> None:
    """Label Studio's flat exports drop tasks whose annotation was cancelled: the items stayed
    queued and the run waited, with only a count to go by."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 4)
    part = tmp_path / "part.csv"
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids[:2]))
    res = import_labels(project, part)
    assert res.still_queued == 2 and res.not_in_file == ids[2:]
    out = invoke("queue", "import", str(part), "-p", str(project.root))
    assert f"2 items still queued; not in this file: {ids[2]}, {ids[3]}" in out.text


def test_every_left_out_item_is_listed_in_json_and_counted_in_text(tmp_path: Path) -> None:
    """A black-box check found the JSON list cut at 5 of 8 and '...' printed after exactly 5."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 10)
    part = tmp_path / "part.csv"
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids[:2]))
    text = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    assert f"not in this file: {', '.join(ids[2:7])} and 3 more" in text
    again = invoke("queue", "import", str(part), "-p", str(project.root), "--json")  # the same file: unchanged
    assert json.loads(again.text)["not_in_file"] == ids[2:]
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids[:5]))
    text = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    assert text.endswith(f"not in this file: {', '.join(ids[5:])}") and "..." not in text and "more" not in text


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet", "label-studio"])
def test_queue_files_are_readable_by_the_labeling_team(tmp_path: Path, fmt: str) -> None:
    """They were written owner-only (mkstemp's 0600) whatever the umask; they are made to be handed on."""
    import os

    project, _ = _digits_human(tmp_path)
    queue_batch(project, 3)
    old = os.umask(0o022)
    try:
        res = export_queue(project, fmt=fmt)
    finally:
        os.umask(old)
    assert res.path.stat().st_mode & 0o777 == 0o644


def test_data_columns_named_like_the_queues_own_are_written_renamed_and_read_back_as_data(tmp_path: Path) -> None:
    """A data column named score, annotator or label (the label column being another) made the first queue
    file fail after its batch was recorded, so the run waited for a file that never came."""
    df = digits_frame(160)
    truth = {i: str(y) for i, y in zip(df["id"], df["label"])}
    df = df.with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("y"),
        pl.format("note {}", pl.col("id")).alias("score"), pl.lit("a photographer").alias("annotator"),
        pl.format("old {}", pl.col("id")).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="y", features=PX))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 4)
    res = export_queue(project)
    frame = pl.read_csv(res.path)
    assert {"data_score", "data_annotator", "data_label"} <= set(frame.columns)
    assert frame["data_score"].to_list() == [f"note {i}" for i in ids]
    frame.with_columns(pl.Series("label", [truth[i] if i in ids[:2] else None for i in ids])).write_csv(res.path)
    assert import_labels(project, res.path).labeled == 2
    got = shared_labels(project)
    assert {i: got[i][0] for i in ids[:2]} == {i: truth[i] for i in ids[:2]}
    assert {got[i][2] for i in ids[:2]} != {"a photographer"}  # the data column is not the annotator
    # Label Studio's flat export of tasks holding those columns and two numeric features (--include): the
    # one field that is neither data nor Label Studio's own is the label, with no --label-field
    tasks = json.loads(export_queue(project, tmp_path / "t.json", "label-studio",
                                    include=["score", "annotator", "label", *PX[:2]]).path.read_text())
    assert {"data_score", "data_annotator", "data_label", *PX[:2]} <= set(tasks[0]["data"])
    flat = [{**t["data"], "id": 40 + n, "digit": truth[t["data"]["alkit_id"]], "annotator": "ls@example.org",
             "annotation_id": 200 + n} for n, t in enumerate(tasks)]
    (tmp_path / "min.json").write_text(json.dumps(flat))
    assert import_labels(project, tmp_path / "min.json").labeled == 2
    got = shared_labels(project)
    assert {i: got[i][0] for i in ids} == {i: truth[i] for i in ids}


def test_a_data_column_spelt_like_the_queues_own_in_another_case_is_written_renamed(tmp_path: Path) -> None:
    """A feature column 'Annotator' was exported under that name and read back as the annotator: every label was
    credited to a feature value (0.57, 0.79, ...; a black-box round).  Written as data_Annotator, read as data."""
    df = digits_frame(160)
    truth = {i: str(y) for i, y in zip(df["id"], df["label"])}
    df = df.rename({PX[3]: "Annotator"}).with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    features = [*PX[:3], "Annotator", *PX[4:]]
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=features))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 4)
    frame = pl.read_csv(export_queue(project, include=["Annotator"]).path, infer_schema=False)
    assert "data_Annotator" in frame.columns and "Annotator" not in frame.columns
    path = tmp_path / "answers.csv"
    frame.with_columns(pl.Series("label", [truth[i] for i in frame["id"]])).write_csv(path)
    assert import_labels(project, path).labeled == len(ids)
    assert {shared_labels(project)[i][2] for i in ids} == {None}, shared_labels(project)


def test_the_import_says_which_run_continues_or_that_none_waits(tmp_path: Path) -> None:
    """After every run's budget was spent the import still said `alkit run` continues (a black-box check)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2, run="r1")  # queue_batch leaves its run waiting
    part = tmp_path / "part.csv"
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids))
    out = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    # the project's folder too: pasted elsewhere, the command ran in the wrong folder (a black-box check)
    assert f"`alkit run --resume r1 --project {project.root}` continues with the next cycle" in out, out
    from alkit.pools.store import Store

    store = Store(project.store_url)
    store.set_run_status(store.runs()[0].id, "complete")
    again = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    assert "no run waits for labels" in again and "continues with the next cycle" not in again
    # two runs whose batches are answered by one file: both named (it said 'alkit run --resume NAME')
    ids = queue_batch(project, 2, run="r2") + queue_batch(project, 2, run="r 3")
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids))
    both = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    assert (f"ready now: `alkit run --resume r2 --project {project.root}`, `alkit run --resume 'r 3' --project "
            f"{project.root}`") in both, both
    # a later import names the run it made ready, not those ready before it
    ids = queue_batch(project, 2, run="r4")
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids))
    later = invoke("queue", "import", str(part), "-p", str(project.root)).text.replace("\n", "")
    assert later.endswith(f"ready now: `alkit run --resume r4 --project {project.root}`"), later
    # the same file again (a retried cron job, or one that lost a race to another): it answered no queue
    again = json.loads(invoke("queue", "import", str(part), "--json", "-p", str(project.root)).stdout)
    assert again["ready_runs"] == [] and again["unchanged"] == 2, again
    # while another run's items stay queued, the run the import made ready is named all the same, and the items left
    # out are said to be the other run's (nothing was said: the list read as if this file were incomplete)
    mine, theirs = queue_batch(project, 2, run="r5"), queue_batch(project, 2, run="r6")
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in mine))
    some = " ".join(invoke("queue", "import", str(part), "-p", str(project.root)).text.split())
    assert f"2 items still queued; not in this file: {theirs[0]}, {theirs[1]} (queued by r6)" in some, some
    assert some.endswith(f"ready now: `alkit run --resume r5 --project {project.root}`"), some


def test_a_semicolon_separated_answer_file_is_named_as_such(tmp_path: Path) -> None:
    """A spreadsheet in a comma-decimal locale saves ';'-separated CSV: the refusal said only 'missing column'."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    semi = tmp_path / "answers.csv"
    semi.write_text("id;label\n" + "".join(f"{i};{truth[i]}\n" for i in ids))
    with pytest.raises(QueueError, match="one column holding semicolons"):
        import_labels(project, semi)
    # Excel quotes each field ("id";"label", CRLF): the csv module stopped at the quote, saying only that
    semi.write_bytes(("\ufeff\"id\";\"label\"\r\n" + "".join(f'"{i}";"{truth[i]}"\r\n' for i in ids)).encode())
    with pytest.raises(QueueError, match="line 1: .*; the header is one column holding semicolons"):
        import_labels(project, semi)


def test_a_waiting_run_writes_a_deleted_queue_file_again(tmp_path: Path) -> None:
    """After `rm queue.csv`, `alkit run --resume` said "queue import FILE" of a file that was not there
    (a black-box check): the waiting run writes the queue again, with a note."""
    project, _ = _digits_human(tmp_path)
    root = str(project.root)
    first = invoke("run", "--strategy", "random", "--budget", "20", "-p", root)
    assert first.exit_code == 0, first.text
    path = project.root / "queue.csv"
    rows = pl.read_csv(path)
    path.unlink()
    again = invoke("run", "--resume", "random-b10-s0", "-p", root)
    assert again.exit_code == 0 and "queue.csv was missing: the queue (every run's queued items) written to it again" in again.text, again.text
    assert pl.read_csv(path)["id"].to_list() == rows["id"].to_list()
    before = path.stat().st_mtime_ns
    assert "was missing" not in invoke("run", "--resume", "random-b10-s0", "-p", root).text  # present: left alone
    assert path.stat().st_mtime_ns == before


def _label_studio_tasks(ids: list[str], truth: dict[str, str], results) -> list[dict]:
    return [{"data": {"alkit_id": i}, "annotations": [{"completed_by": 1, "result": results(i, truth[i])}]}
            for i in ids]


def test_label_studio_full_json_takes_the_named_control_and_refuses_a_guess_between_several(tmp_path: Path) -> None:
    """A rating control listed before the class was read as the label (every item stored as class 5, a
    black-box check) and --label-field was ignored for the full JSON: several controls are now refused
    unless one is named, as in the flat exports, and the named one is read."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 4)
    tasks = _label_studio_tasks(ids, truth, lambda i, y: [
        {"from_name": "confidence", "type": "rating", "value": {"rating": 5}},
        {"from_name": "digit", "type": "choices", "value": {"choices": [y]}}])
    path = tmp_path / "two_controls.json"
    path.write_text(json.dumps(tasks))
    before = snapshot(project)
    with pytest.raises(QueueError, match=r"several controls could be the label \(confidence, digit\); name the labeling "
                                         "control with --label-field"):
        import_labels(project, path)
    with pytest.raises(QueueError, match="--label-field 'class' is not a control of the export; controls: confidence, digit"):
        import_labels(project, path, label_field="class")
    assert snapshot(project) == before
    assert import_labels(project, path, label_field="digit").labeled == 4
    assert {i: shared_labels(project)[i][0] for i in ids} == {i: truth[i] for i in ids}


@pytest.mark.parametrize("result, said", [
    ([{"from_name": "digit", "value": None}], "the value of result digit is null, not an object"),
    ([{"from_name": "digit", "value": ["choices"]}], "the value of result digit is a list, not an object"),
    (["7"], "a result is text, not an object"),
    ([{"from_name": "digit", "value": {"choices": None}}], "the choices of digit is null, not a label"),
])
def test_label_studio_results_that_are_not_annotations_are_refused_by_task(tmp_path: Path, result: list, said: str) -> None:
    """A null or list value crashed the import with a traceback; a result that is a bare string, or
    choices that are null, was counted as 'without a label yet' (black-box checks)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_label_studio_tasks(ids[:1], truth, lambda i, y: result)))
    with pytest.raises(QueueError, match=rf"task 1 \(id {ids[0]}\): {said}"):
        import_labels(project, path)


@pytest.mark.parametrize("spelling", ["spaces", "zeros"])
def test_a_filled_queue_whose_ids_import_refuses_is_kept_not_overwritten(tmp_path: Path, spelling: str) -> None:
    """Answers were kept aside only where their ids matched a queued id exactly: a filled queue.csv
    whose ids had spaces around them, or had lost their leading zeros in a spreadsheet, was overwritten
    by the next export or run (black-box checks).  Any answer for an id the store does not hold as
    already labelled now keeps the file."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    path = export_queue(project).path
    if spelling == "spaces":
        written = [f"{i} " for i in ids]
    else:
        written = [i.lstrip("d0") for i in ids]
    path.write_text("id,label\n" + "".join(f"{w},{truth[i]}\n" for w, i in zip(written, ids)))
    out = export_queue(project)
    assert out.set_aside is not None and out.set_aside.read_text().startswith("id,label\n")
    if spelling == "spaces":  # the kept file imports as it is
        assert import_labels(project, out.set_aside).labeled == 3
        out.set_aside.rename(path)  # filled and imported: overwriting it loses nothing
        assert export_queue(project).set_aside is None
        # a correction the import refused as a conflict is work not yet imported too (it was overwritten)
        other = "1" if truth[ids[0]] != "1" else "2"
        path.write_text(f"id,label\n{ids[0]},{other}\n")
        with pytest.raises(QueueError, match="conflicts with the stored"):
            import_labels(project, path)
        kept = export_queue(project).set_aside
        assert kept is not None and kept.read_text() == f"id,label\n{ids[0]},{other}\n"
        # the hint to import it names the option its correction needs (it led to a refusal; a black-box check)
        path.write_text(f"id,label\n{ids[0]},{other}\n")
        said = invoke("queue", "export", "-p", str(project.root)).text
        assert "with --on-conflict replace where they correct a label; a file older than a correction would undo it" in said


def test_an_export_onto_the_projects_own_files_is_refused(tmp_path: Path) -> None:
    """`queue export --out features.parquet` moved the features aside and wrote the queue in their
    place (the next run failed); --out alkit.db did the same to the store (a black-box check)."""
    project, _ = _digits_human(tmp_path)
    queue_batch(project, 2)
    def files() -> tuple[list[tuple[str, int]], dict]:  # the store by its rows: SQLite touches its files on open
        return (sorted((p.name, p.stat().st_mtime_ns) for p in project.root.iterdir() if not p.name.startswith("alkit.db")),
                snapshot(project))

    for name in ("features.parquet", "payload.parquet", "alkit.db", "alkit.db-wal", "alkit.toml"):
        before = files()
        out = invoke("queue", "export", "--format", "csv", "--out", str(project.root / name), "-p", str(project.root))
        assert out.exit_code != 0 and f"{name} is one of the project's own files" in out.text, out.text
        assert "Traceback" not in out.text and files() == before


def test_a_waiting_run_rewrites_a_queue_file_that_lists_another_batch(tmp_path: Path) -> None:
    """A run killed between recording its batch and writing queue.csv left the previous batch's file,
    and the resumed run only said "import FILE" of it (a black-box check): the waiting run writes the
    queue again, with a note; a file that lists every queued item is left alone."""
    project, truth = _digits_human(tmp_path)
    root = str(project.root)
    assert invoke("run", "--strategy", "random", "--budget", "20", "-p", root).exit_code == 0
    path = project.root / "queue.csv"
    queued = pl.read_csv(path)["id"].to_list()
    stale = "id,label\n" + "".join(f"{i}," + "\n" for i in ["d9999", *queued[:3]])
    path.write_text(stale)
    again = invoke("run", "--resume", "random-b10-s0", "-p", root)
    assert "queue.csv listed other items than the queued ones: the queue (every run's queued items) written to it again" \
        in again.text, again.text
    assert pl.read_csv(path)["id"].to_list() == queued


def test_a_truncated_last_label_is_noted_and_equal_answers_under_two_spellings_are_one(tmp_path: Path) -> None:
    """An id,label file cut inside its last label imported '21' for '21.5' without a word; the same
    answer under two spellings of one id (spaces) was refused as a duplicate, while exact duplicates
    are taken (black-box checks)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    cut = tmp_path / "cut.csv"
    cut.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids[:2]) + f"{ids[2]},{truth[ids[2]]}")
    with pytest.warns(UserWarning, match=rf"cut.csv does not end with a line break.*line 4, id {ids[2]}"):
        assert import_labels(project, cut).labeled == 3
    ids = queue_batch(project, 2, cycle=1)
    twice = tmp_path / "twice.csv"
    twice.write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\n{ids[0]} ,{truth[ids[0]]}\n{ids[1]},{truth[ids[1]]}\n")
    assert import_labels(project, twice).labeled == 2
    other = "0" if truth[ids[0]] != "0" else "1"
    ids = queue_batch(project, 1, cycle=2)
    clash = tmp_path / "clash.csv"
    clash.write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\n {ids[0]},{other}\n")
    with pytest.raises(QueueError, match="ids differ only in spaces"):
        import_labels(project, clash)
    ids = queue_batch(project, 2, cycle=3)  # cut right after the last id's comma: its answer is what was lost
    cut.write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\n{ids[1]},")
    with pytest.warns(UserWarning, match=rf"last row \(line 3, id {ids[1]}\) has no label: if the file was cut short"):
        assert import_labels(project, cut).labeled == 1


def test_labels_given_at_init_take_no_import(tmp_path: Path) -> None:
    """An item labelled in the data file at init was never queued, yet `--on-conflict replace`
    overwrote its label (a black-box check); the README says a not-queued id refuses the file."""
    df = digits_frame(120)
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 70).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX,
                                                                 initial_labeled=20))
    project = load_project(tmp_path / "p")
    given = {i: v[0] for i, v in shared_labels(project).items() if v[1] == "init"}
    assert len(given) == 20
    some = sorted(given)[:2]
    path = tmp_path / "fix.csv"
    path.write_text("id,label\n" + "".join(f"{i},{'1' if given[i] != '1' else '2'}\n" for i in some))
    before = snapshot(project)
    first = some[0]
    with pytest.raises(QueueError, match=rf"id {first}\): '{'1' if given[first] != '1' else '2'}' conflicts with the "
                                         rf"label '{given[first]}' the data file gave the item at init, which no import "
                                         r"changes \(--on-conflict and --unqueued do not apply to it\)"):
        import_labels(project, path, on_conflict="replace")
    with pytest.raises(QueueError, match="the data file gave the item at init"):  # it said 'never queued' here
        import_labels(project, path, unqueued=True)
    assert snapshot(project) == before


def test_the_import_does_not_send_people_to_resume_a_run_that_is_running(tmp_path: Path) -> None:
    """A resumed run keeps 'waiting' in the store until its cycle ends: the import told people to resume
    it while it ran (a black-box check).  A run a live process drives is said to take the labels."""
    from alkit.pools import leases
    from alkit.pools.store import Store

    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2, run="r1")
    part = tmp_path / "part.csv"
    part.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids))
    store = Store(project.store_url)
    lease = leases.acquire(store, "r1")
    try:
        out = invoke("queue", "import", str(part), "-p", str(project.root)).text
        # --add-class meanwhile is refused as busy, exit 3 as a busy run's (it was 2, bad input; an automation check)
        busy = invoke("queue", "import", str(part), "--add-class", "new", "-p", str(project.root))
    finally:
        leases.release(store, lease)
    assert "'r1' is running now and trains on them from its next cycle" in out, out
    assert "alkit run --resume r1" not in out
    assert busy.exit_code == 3 and "--add-class: r1 is running now" in " ".join(busy.text.split()), busy.text


def test_a_named_run_keeps_off_another_strategys_curve(tmp_path: Path) -> None:
    """`--name random` on an epistemic run put it on random's curve, averaged with the random runs (a
    black-box check); --stop on uncertainty with a strategy that reads no score could never fire."""
    project, _ = _digits_human(tmp_path)
    root = str(project.root)
    assert invoke("run", "--strategy", "random", "--budget", "10", "-p", root).exit_code == 0
    out = invoke("run", "--strategy", "margin", "--budget", "10", "--seed", "2", "--name", "random", "-p", root)
    assert out.exit_code == 2 and "--name 'random' would draw this run (margin) on the learning curve of" in out.text, out.text
    out = invoke("run", "--strategy", "random", "--budget", "10", "--seed", "3", "--stop", "max-uncertainty:threshold=1",
                 "-p", root)
    assert out.exit_code == 2 and "picks without one" in out.text, out.text
    # the same strategy at other settings was averaged in: a margin-acquisition, width-16 run named
    # random-b10-s2 joined the preset's curve, and expA-b10-s1 of width 16 joined expA's (a black-box check)
    out = invoke("run", "--strategy", "random", "--budget", "10", "--seed", "2", "-o", "width=16",
                 "--name", "random-b10-s2", "-p", root)
    assert out.exit_code == 2 and "would draw this run (random-width=16) on the learning curve of" in out.text, out.text
    assert invoke("run", "--strategy", "random", "--budget", "10", "--seed", "4", "--name", "random-b10-s4",
                  "-p", root).exit_code == 0  # the same settings: the same curve, as documented
    assert invoke("run", "--strategy", "margin", "--budget", "10", "--name", "expA-b10-s0", "-p", root).exit_code == 0
    out = invoke("run", "--strategy", "margin", "--budget", "10", "--seed", "1", "--max-epochs", "5",
                 "--name", "expA-b10-s1", "-p", root)
    assert out.exit_code == 2 and ("would draw this run (margin-max_epochs=5) on the learning curve of runs of "
                                   "margin/vbll at margin") in out.text, out.text
    # either order: an unnamed run whose name's curve a named run of other settings already draws (margin-width=16
    # of width 128 beside one of width 16 were averaged; a black-box check), and a first batch of another size
    assert invoke("run", "--strategy", "margin", "--budget", "10", "--seed", "5", "--name", "margin-width=16-b10-s5",
                  "-p", root).exit_code == 0
    out = invoke("run", "--strategy", "margin", "--budget", "10", "--seed", "6", "-o", "width=16", "-p", root)
    assert out.exit_code == 2 and "its name 'margin-width=16-b10-s6' would draw this run (margin-width=16)" in out.text
    out = invoke("run", "--strategy", "random", "--budget", "20", "--seed", "7", "--initial", "20", "--name",
                 "random-b10-s7", "-p", root)
    assert out.exit_code == 2 and "would draw this run (random-i20)" in out.text, out.text
    # --candidates and --stratify-by are in no name: an unnamed run of either on a new seed joined the default
    # runs' curve (a review); its curve shows them, beside the default runs'
    assert invoke("run", "--strategy", "epistemic", "--budget", "10", "--seed", "8", "-p", root).exit_code == 0
    for seed, extra, curve in ((9, ["--candidates", "60"], "epistemic-candidates=60"),
                               (15, ["--stratify-by", "batch"], "epistemic-stratify_by=batch")):
        out = invoke("run", "--strategy", "epistemic", "--budget", "10", "--seed", str(seed), *extra, "-p", root)
        assert out.exit_code == 0, out.text
        status = json.loads(invoke("status", "--json", "-p", root).stdout)
        assert {r["name"]: r["curve"] for r in status}[f"epistemic-b10-s{seed}"] == curve
    assert invoke("run", "--strategy", "epistemic", "--budget", "10", "--seed", "9", "--candidates", "60",
                  "--name", "epistemic-m60-b10-s9", "-p", root).exit_code == 0
    assert invoke("run", "--strategy", "epistemic", "--budget", "10", "--seed", "10", "--candidates", "200",
                  "-p", root).exit_code == 0  # the default value is the default run's setting


def test_label_studio_two_answers_of_one_control_in_one_annotation_are_refused(tmp_path: Path) -> None:
    """Two 'digit' results in one annotation: the first was taken unsaid (a black-box check)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 1)
    path = tmp_path / "dup.json"
    path.write_text(json.dumps(_label_studio_tasks(ids, truth, lambda i, y: [
        {"from_name": "digit", "value": {"choices": ["1"]}}, {"from_name": "digit", "value": {"choices": ["2"]}}])))
    with pytest.raises(QueueError, match="2 results of control digit in one annotation, expected one"):
        import_labels(project, path)


def test_an_export_to_a_folder_and_a_control_name_on_a_plain_list_are_refused(tmp_path: Path) -> None:
    """`--out <folder>` printed a raw '[Errno 21]' with a temporary name; --label-field on a plain JSON list
    of {id, label} records was ignored (black-box checks)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    (tmp_path / "sub").mkdir()
    with pytest.raises(QueueError, match="sub is a folder: give the queue file's name"):
        export_queue(project, tmp_path / "sub")
    path = tmp_path / "plain.json"
    path.write_text(json.dumps([{"id": i, "label": truth[i]} for i in ids]))
    with pytest.raises(QueueError, match="--label-field 'digit' names a Label Studio control; this is a plain list"):
        import_labels(project, path, label_field="digit")
    assert import_labels(project, path).labeled == 2


def _with_ids(tmp_path: Path, ids: list[str]) -> Project:
    """A project of 100 digits named ``ids`` (written as CSV text), the last 20 its labelled test split."""
    df = digits_frame(100).with_columns(pl.Series("id", ids))
    df = df.with_columns(pl.when(pl.int_range(pl.len()) >= 80).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "z.csv")
    init_project(tmp_path / "z.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    return load_project(tmp_path / "p")


@pytest.mark.parametrize(("ids", "batch", "saved_text", "refusal", "fine_text", "fine_labels"), [
    # items 1, 01, 2, 02 all queued; a spreadsheet saves 02 as 2 and 01 as 1: the file names 1 and 2 twice (one
    # answer, one blank each) and every answer went to the item without zeros, exit 0 (a black-box check)
    (["1", "01", "2", "02"], 6, "id,label\n2,3\n1,\n1,5\n2,\n",
     r"ids 1 \(queued as 01\), 2 \(queued as 02\) look like queued ids that lost their leading zeros",
     "id,label\n02,3\n1,\n01,5\n2,\n", {"02": "3", "01": "5"}),
    # +5 and 1e3 queued beside items 5 and 1000: a spreadsheet saves them as 5 and 1000, and their labels went
    # to the items 5 and 1000 with exit 0 (an untrusted-input check)
    (["+5", "1e3", "5", "1000"], 2, "id,label\n5,3\n1000,4\n",
     r"ids 5 \(queued as \+5\), 1000 \(queued as 1e3\) look like queued ids that a spreadsheet rewrote as numbers",
     "id,label\n+5,3\n1e3,4\n", {"+5": "3", "1e3": "4"}),
], ids=["lost-zeros", "lost-sign-or-exponent"])
def test_ids_a_spreadsheet_rewrote_into_another_items_id_refuse_the_file(
        tmp_path: Path, ids: list[str], batch: int, saved_text: str, refusal: str, fine_text: str,
        fine_labels: dict[str, str]) -> None:
    """Refused, naming the ids, with the project unchanged; the same ids written as text are taken as they are."""
    project = _with_ids(tmp_path, ids + [f"x{i}" for i in range(96)])
    queued = queue_batch(project, batch)[:4]
    assert set(queued) >= set(fine_labels) and set(queued) <= set(ids)
    before = snapshot(project)
    saved = tmp_path / "saved.csv"
    saved.write_text(saved_text)
    with pytest.raises(QueueError, match=refusal):
        import_labels(project, saved)
    assert snapshot(project) == before
    fine = tmp_path / "fine.csv"
    fine.write_text(fine_text)
    assert import_labels(project, fine).labeled == len(fine_labels)
    assert {k: shared_labels(project)[k][0] for k in fine_labels} == fine_labels


def test_stripped_zeros_that_name_no_item_are_unknown_ids_not_another_item(tmp_path: Path) -> None:
    """'7' for the queued '07' where no item '7' exists was said to 'also name another item' (a black-box
    check): that id names nothing, so it is the store's unknown id (with its own hint)."""
    ids = ["07", "08"] + [f"x{i}" for i in range(98)]
    df = digits_frame(100).with_columns(pl.Series("id", ids))
    df = df.with_columns(pl.when(pl.int_range(pl.len()) >= 80).then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "z.csv")
    init_project(tmp_path / "z.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "p")
    assert queue_batch(project, 4)[:2] == ["07", "08"]
    saved = tmp_path / "saved.csv"
    saved.write_text("id,label\n7,3\n08,\n")
    with pytest.raises(QueueError) as err:
        import_labels(project, saved)
    assert "also names another item" not in str(err.value) and "unknown id" in str(err.value), str(err.value)


def test_ids_read_in_the_wrong_encoding_are_named(tmp_path: Path) -> None:
    """Excel opens a UTF-8 queue.csv as Windows-1252 and saves 'é中3' as 'Ã©ä¸\\xad3': every row was
    'unknown id' with no why (a black-box check); the refusal says what happened."""
    project = _project_with_ids(tmp_path, pl.format("é中{}", pl.int_range(pl.len())))
    ids = queue_batch(project, 3)
    saved = tmp_path / "excel.csv"
    garbled = [i.encode("utf-8").decode("cp1252", errors="replace") for i in ids]
    saved.write_text("id,label\n" + "".join(f"{g},1\n" for g in garbled), encoding="utf-8")
    with pytest.raises(QueueError, match="read in the wrong text encoding"):
        import_labels(project, saved)


def test_ids_written_as_decimal_numbers_are_named(tmp_path: Path) -> None:
    """pandas writes the id 107 as 107.0, a spreadsheet as 1.07E+02: a bare 'unknown id' before."""
    project = _project_with_ids(tmp_path, (pl.int_range(pl.len()) + 100).cast(pl.Utf8))
    ids = queue_batch(project, 2)
    saved = tmp_path / "pandas.csv"
    saved.write_text(f"id,label\n{ids[0]}.0,1\n{float(ids[1]):.2E},1\n")
    with pytest.raises(QueueError, match=rf"'{ids[0]}.0' are the id '{ids[0]}' written as a decimal number"):
        import_labels(project, saved)


def test_label_files_as_windows_tools_write_them(tmp_path: Path) -> None:
    """A UTF-16 answer file was 'not valid UTF-8 (byte 0)'; Excel's 'sep=,' first line a missing-column
    refusal (black-box checks): both named as what they are, nothing imported."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    body = "id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids)
    (tmp_path / "u16.csv").write_bytes(body.encode("utf-16"))
    with pytest.raises(QueueError, match="UTF-16 text"):
        import_labels(project, tmp_path / "u16.csv")
    (tmp_path / "sep.csv").write_text("sep=,\n" + body)
    with pytest.raises(QueueError, match="Excel's separator hint"):
        import_labels(project, tmp_path / "sep.csv")


def test_label_columns_that_cannot_be_told_apart_and_tab_files(tmp_path: Path) -> None:
    """A file with 'Label' (the team's column) and 'LABEL' (alkit's, renamed) was read with neither, every
    answer dropped with exit 0; a .tsv's 'sep=<tab>' line was shown as 'sep=,'; UTF-16 without a BOM was a
    missing-column refusal (a black-box check of this day's fixes)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    both = tmp_path / "both.csv"
    both.write_text("id,Label,LABEL\n" + "".join(f"{i},note,{truth[i]}\n" for i in ids))
    with pytest.raises(QueueError, match="columns 'Label', 'LABEL' could each be alkit's 'label' column"):
        import_labels(project, both)
    jl = tmp_path / "both.jsonl"
    jl.write_text(json.dumps({"id": ids[0], "Label": "x", "LABEL": truth[ids[0]]}) + "\n")
    with pytest.raises(QueueError, match="could each be alkit's 'label' column"):
        import_labels(project, jl)
    tsv = tmp_path / "a.tsv"
    tsv.write_text("sep=\t\nid\tlabel\n" + "".join(f"{i}\t{truth[i]}\n" for i in ids))
    with pytest.raises(QueueError, match=r"line 1 'sep=\\t' is Excel's separator hint"):
        import_labels(project, tsv)
    u16 = tmp_path / "u16.csv"
    u16.write_bytes(("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids)).encode("utf-16-le"))
    with pytest.raises(QueueError, match="UTF-16 text"):
        import_labels(project, u16)


@pytest.mark.parametrize("column", ["Label", "Skip"])
def test_answers_in_another_spelling_beside_alkits_column_are_refused_and_kept(tmp_path: Path, column: str) -> None:
    """'Label' filled in beside alkit's empty 'label' (or 'Skip' beside 'skip') was read as nothing (exit 0,
    '0 labeled') and the next export overwrote the file, every answer gone (a black-box check)."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    out = export_queue(project).path
    frame = pl.read_csv(out, infer_schema_length=0)
    answers = [truth[i] for i in frame["id"].to_list()] if column == "Label" else ["yes"] * frame.height
    frame.insert_column(2, pl.Series(column, answers)).write_csv(out)
    with pytest.raises(QueueError, match=f"column .{column}. holds .* where alkit.s .{column.lower()}. column is empty"):
        import_labels(project, out)
    again = export_queue(project)
    assert again.set_aside is not None and column in pl.read_csv(again.set_aside, infer_schema_length=0).columns
    assert len(ids) == 3


def test_a_nul_character_in_an_answer_is_refused_on_every_store(tmp_path: Path) -> None:
    """A NUL in a label or annotator cell was stored by SQLite and was a traceback with exit 1 on
    PostgreSQL (a black-box check): refused by row on every store, nothing imported."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    bad = tmp_path / "nul.csv"
    bad.write_bytes(("id,label,annotator\n" + f"{ids[0]},{truth[ids[0]]},ann\n" +
                     f"{ids[1]},{truth[ids[1]]},a\x00n\n").encode())
    before = snapshot(project)
    with pytest.raises(QueueError, match="line 3: its id, label or annotator holds a NUL character"):
        import_labels(project, bad)
    assert snapshot(project) == before


def test_collected_labels_export_every_answer_with_its_origin_and_read_back_unchanged(tmp_path: Path) -> None:
    """`alkit queue labels` writes the labels a project collected (the data file's and people's) and the
    skips, with who gave each, from where and when: before it the store's tables were the only way out.
    Read back by `queue import`, the file changes nothing (init labels included); a corrected label is
    written as it now is."""
    from alkit.pools.queue import export_labels

    df = digits_frame(160)
    truth = {i: str(y) for i, y in zip(df["id"], df["label"])}
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 70).then(pl.col("label")).otherwise(None).alias("label"),
                         pl.lit("x").alias("source"))  # a data column named like the file's own is renamed
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX,
                                                                 initial_labeled=20))
    project = load_project(tmp_path / "p")
    given = {i: v[0] for i, v in shared_labels(project).items() if v[1] == "init"}
    ids = queue_batch(project, 5)
    answer = tmp_path / "a.csv"
    answer.write_text("id,label,skip,annotator\n" + "".join(
        f"{i},,true,bo\n" if j == 0 else f"{i},{truth[i]},,{'ann' if j < 3 else 'bo'}\n" for j, i in enumerate(ids)))
    import_labels(project, answer)
    res = export_labels(project)
    assert res.path == project.root / "labels.csv" and (res.n_items, res.n_skipped) == (len(given) + 5, 1)
    out = pl.read_csv(res.path, infer_schema=False)
    assert out.columns[:2] == ["id", "data_source"] and out.columns[-7:] == [
        "label", "skip", "annotator", "source", "cycle", "run", "labelled_at"]
    rows = {r["id"]: r for r in out.to_dicts()}
    assert {i: r["label"] for i, r in rows.items() if r["source"] == "init"} == given
    assert all(rows[i]["annotator"] is None and rows[i]["cycle"] is None and rows[i]["run"] is None for i in given)
    assert [(rows[i]["label"], rows[i]["skip"], rows[i]["annotator"], rows[i]["source"], rows[i]["cycle"])
            for i in ids] == [(None, "true", "bo", "import", "0")] + [
               (truth[i], "false", "ann" if j < 3 else "bo", "import", "0") for j, i in enumerate(ids[1:], start=1)]
    assert all(r["labelled_at"].endswith("+00:00") for r in rows.values())
    assert list(rows)[-1] == ids[0]  # in the order given; a skip after labels given at the same time
    before = snapshot(project)
    back = import_labels(project, res.path)
    assert (back.labeled, back.skipped, back.unchanged) == (0, 0, len(given) + 5) and snapshot(project) == before
    # a correction is written as the label now is; other formats hold the same rows
    other = str((int(truth[ids[1]]) + 1) % 10)
    answer.write_text(f"id,label\n{ids[1]},{other}\n")
    import_labels(project, answer, on_conflict="replace")
    parquet = pl.read_parquet(export_labels(project, tmp_path / "l.parquet").path)
    assert parquet.filter(pl.col("id") == ids[1])["label"].to_list() == [other]
    assert parquet.height == len(given) + 5 and parquet["skip"].sum() == 1
    # the answer a correction replaced is kept, not lost: --history writes it, with when it was replaced
    answer.write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\n")  # the skip becomes a label
    import_labels(project, answer, on_conflict="replace", annotator="cy")
    res = export_labels(project, tmp_path / "h.csv", history=True)
    assert (res.n_items, res.n_skipped, res.n_replaced) == (len(given) + 7, 0, 2)
    hist = pl.read_csv(res.path, infer_schema=False).filter(pl.col("id").is_in(ids[:2]))
    old = hist.filter(pl.col("replaced_at").is_not_null()).sort("id")
    assert sorted(zip(old["id"], old["label"].fill_null(""), old["skip"], old["annotator"])) == sorted(
        [(ids[0], "", "true", "bo"), (ids[1], truth[ids[1]], "false", "ann")])
    now = hist.filter(pl.col("replaced_at").is_null())
    assert dict(zip(now["id"], now["label"])) == {ids[0]: truth[ids[0]], ids[1]: other}
    assert "replaced_at" not in pl.read_csv(export_labels(project).path).columns
    with pytest.raises(QueueError, match="csv, jsonl or parquet"):
        export_labels(project, tmp_path / "l.json")
    queue_file = export_queue(project).path  # the labelers' file is no place for the labels (it was overwritten)
    for name in ("queue.csv", "queue-c9.jsonl", "queue.tsv", "queue-c9.json"):  # one predicate with init's refusal
        with pytest.raises(QueueError, match="is where alkit writes the labelers' queue"):
            export_labels(project, project.root / name)
    still = pl.read_csv(queue_file).columns
    assert "score" in still and "labelled_at" not in still  # the queue it was
    # and the queue no place where `queue labels` writes, in any of its formats (labels.jsonl was taken; the refusal
    # of labels.csv named labels.csv as the queue's default; a documentation check)
    for name in ("labels.csv", "labels.jsonl", "labels.parquet"):
        with pytest.raises(QueueError, match=rf"is where alkit writes the labels \({name}\): write the queue to "
                                             r"another name \(default: queue.csv\)"):
            export_queue(project, project.root / name)
    for folder in ("bench", "stem-features"):  # alkit bench wrote over a queue written into bench/
        with pytest.raises(QueueError, match=rf"is in the project's {folder}/ folder"):
            export_queue(project, project.root / folder / "bench_summary.csv")
        with pytest.raises(QueueError, match=rf"is in the project's {folder}/ folder"):
            export_labels(project, project.root / folder / "l.csv")
    assert not (project.root / "bench").exists()
    assert "label-studio" not in invoke("queue", "labels", "-h").text
    said = invoke("queue", "labels", "--format", "label-studio", "-p", str(project.root))
    assert said.exit_code == 2 and "'label-studio' is not one of 'csv', 'jsonl', 'parquet'" in said.text
    said = invoke("queue", "labels", "-o", str(tmp_path / "l.jsonl"), "-p", str(project.root))
    assert said.exit_code == 0 and f"wrote {len(given) + 5} labels, 0 skips to" in said.text.replace("\n", " ")
    assert len((tmp_path / "l.jsonl").read_text().splitlines()) == len(given) + 5


def test_labels_for_items_no_run_queued_need_unqueued_and_join_every_run(tmp_path: Path) -> None:
    """A team with labels from elsewhere (an earlier campaign, a domain expert's list) had no way to add
    them: only queued items took labels.  `--unqueued` takes them as shared labels with no cycle, which
    every run learns from; without it the refusal says how.  A project whose runs label from the data
    file refuses it (its curves would change)."""
    from alkit.pools.queue import collected_labels
    from alkit.pools.store import Store

    project, truth = _digits_human(tmp_path)
    store = Store(project.store_url)
    queued = queue_batch(project, 2)
    free = [i for i in store.ids_for_keys(store.pool_keys().tolist()).values() if i not in queued][:3]
    path = tmp_path / "mine.csv"
    path.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in [queued[0], *free]))
    before = snapshot(project)
    with pytest.raises(QueueError, match=r"not queued \(state unlabeled\).*--unqueued"):
        import_labels(project, path)
    assert snapshot(project) == before
    res = import_labels(project, path, unqueued=True, annotator="expert")
    assert (res.labeled, res.still_queued) == (4, 1)
    got = {c.item_id: (c.label, c.annotator, c.source, c.cycle) for c in collected_labels(store)}
    assert got == {queued[0]: (truth[queued[0]], "expert", "import", 0),
                   **{i: (truth[i], "expert", "import", None) for i in free}}
    keys, values = store.labeled_set(None)
    assert sorted(store.ids_for_keys(keys.tolist()).values()) == sorted([queued[0], *free])
    said = invoke("queue", "import", str(path), "--unqueued", "-p", str(project.root))
    assert said.exit_code == 0 and "4 unchanged" in said.text
    df = digits_frame(120)
    df.write_csv(tmp_path / "h.csv")
    init_project(tmp_path / "h.csv", tmp_path / "h", InitOptions(id_col="id", label_col="label", features=PX,
                                                                 hide_labels=True))
    hidden = load_project(tmp_path / "h")
    with pytest.raises(QueueError, match="--unqueued: this project's runs label their picks from its data file"):
        import_labels(hidden, path, unqueued=True)


def test_labels_as_the_data_file_spells_them_and_classes_it_would_split(tmp_path: Path) -> None:
    """Black-box checks of a team's labels: a True/False label column gives the classes 'true'/'false', yet
    the file's own True (and Excel's TRUE) was refused at import; a label column of numbers beside text
    ('other') made '1' and '1.0' two classes without a word; classes that differ only in case, a few-label
    numeric target taken as classes, and a few labels all of one class were not said as such."""
    from alkit.config import Project

    rng = np.random.default_rng(0)
    feats = {f"f{j}": rng.normal(size=60) for j in range(3)}
    ids = [f"r{i}" for i in range(60)]

    def make(name: str, labels: list, *extra: str) -> tuple[Project | None, str]:
        pl.DataFrame({"id": ids, **feats, "y": labels}).write_csv(tmp_path / f"{name}.csv")
        said = invoke("init", str(tmp_path / f"{name}.csv"), "--id-col", "id", "--label-col", "y",
                      "-p", str(tmp_path / name), *extra)
        return (load_project(tmp_path / name) if said.exit_code == 0 else None), said.text

    project, _ = make("b", [True, False] * 5 + [None] * 50)
    assert project is not None and project.config.classes == ["false", "true"]
    ids_q = queue_batch(project, 3)
    (tmp_path / "a.csv").write_text(f"id,label\n{ids_q[0]},True\n{ids_q[1]},FALSE\n{ids_q[2]},true\n")
    assert import_labels(project, tmp_path / "a.csv").labeled == 3
    project, said = make("m", ["1", "1.0", "other", "0", "0.0"] * 2 + [None] * 50)
    assert project is not None and project.config.classes == ["0", "1", "other"]
    ids_q = queue_batch(project, 2)
    (tmp_path / "m.csv").write_text(f"id,label\n{ids_q[0]},1.00\n{ids_q[1]},Other\n")
    assert import_labels(project, tmp_path / "m.csv").labeled == 2
    assert {v[0] for i, v in shared_labels(project).items() if i in ids_q} == {"1", "other"}
    _, said = make("c", ["barolo", "Barolo", "grignolino"] * 4 + [None] * 48)
    assert "classes that differ only in case or character width: 'Barolo', 'barolo'" in said
    # a code with a leading zero among them kept '1' and '1.0' two classes without a word (a black-box check)
    project, said = make("z", ["1", "1.0", "01", "2", "2.0"] * 2 + [None] * 50)
    assert project is not None and project.config.classes == ["01", "1", "1.0", "2", "2.0"]
    assert "hint: classes that are one number in other spellings: '01', '1', '1.0'; '2', '2.0'" in said, said
    project, said = make("y", ["1", "01", "2"] * 4 + [None] * 48)
    assert "hint: classes that are one number" in said  # codes: documented as classes, but said
    assert "spell them alike in the data file" in said  # not '--classes', which was not given (a check of the fix)
    # --add-class in a project of codes: another code is a class of its own (it was refused as filed under '01',
    # which import refuses as ambiguous); a plain spelling of the number names the classes it is
    ids_q = queue_batch(project, 2)
    (tmp_path / "y.csv").write_text(f"id,label\n{ids_q[0]},001\n{ids_q[1]},2\n")
    with pytest.raises(QueueError, match=r"'1\.00' \(the number of the classes '01', '1'\)"):
        import_labels(project, tmp_path / "y.csv", add_classes=["1.00"])
    assert import_labels(project, tmp_path / "y.csv", add_classes=["001"]).labeled == 2
    assert load_project(project.root).config.classes == ["01", "1", "2", "001"]
    project, said = make("r", [12, 30, 45, 7, 22, 30] + [None] * 54)
    assert project is not None and "most of them seen only once, from 7 to 45 with gaps" in said
    assert "--task regression" in said
    ids_q = queue_batch(project, 1)
    (tmp_path / "r.csv").write_text(f"id,label\n{ids_q[0]},15\n")
    with pytest.raises(QueueError, match="unknown class '15'.*init a project with --task regression"):
        import_labels(project, tmp_path / "r.csv")
    _, said = make("codes", [1, 2, 3, 4, 5] * 2 + [None] * 50)  # class codes seen a few times: no hint
    assert "--task regression" not in said
    _, said = make("one", ["spam"] * 5 + [None] * 55)
    assert "the labels given are all 'spam': declare every class with --classes" in said


def test_a_class_found_after_init_is_added_with_its_import_and_learned(tmp_path: Path) -> None:
    """A class that shows up after init (a rare kind the first labels missed) could not be added: the
    refusal pointed at init's --classes and init refuses an existing project (a black-box check).
    `--add-class` appends it, in alkit.toml and the store's record (the classes before keep their
    indices), with the import, all or nothing; runs then learn it."""
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.queue import queued_items
    from alkit.pools.store import Store

    keep = ["0", "1", "2"]
    project = _three_class_project_with_a_queue(tmp_path, keep)
    queued = [q.item_id for q in queued_items(Store(project.store_url))]
    answers = {i: ("7" if j < 2 else "8" if j < 4 else keep[j % 3]) for j, i in enumerate(queued)}
    path = tmp_path / "a.csv"
    path.write_text("id,label\n" + "".join(f"{i},{v}\n" for i, v in answers.items()))
    toml = (project.root / "alkit.toml").read_bytes()
    before = snapshot(project)
    with pytest.raises(QueueError, match=r"unknown class '7'.*--add-class '7'"):
        import_labels(project, path)
    with pytest.raises(QueueError, match="unknown class '8'"):  # one of the two added: refused, nothing changed
        import_labels(project, path, add_classes=["7"])
    with pytest.raises(QueueError, match=r"already a class of the project: '1\.0' \(the number of the class '1'"):
        import_labels(project, path, add_classes=[" 1.0", "8"])
    with pytest.raises(QueueError, match=r"--add-class '#VALUE!' is a spreadsheet's formula error"):
        import_labels(project, path, add_classes=["7", "#VALUE!"])
    with pytest.raises(QueueError, match=r"--add-class '8' and 'x8' differ only in case|'new' and 'NEW' differ only"):
        import_labels(project, path, add_classes=["7", "8", "new", "NEW"])
    import alkit.pools.queue as queue_module

    def unwritable(*_: object, **__: object) -> None:
        raise PermissionError(1, "Operation not permitted")

    real = queue_module.write_config
    queue_module.write_config = unwritable  # alkit.toml cannot be written: refused before the store, the file named
    try:
        with pytest.raises(QueueError, match=r"cannot write .*alkit.toml \(Operation not permitted\)"):
            import_labels(project, path, add_classes=["7", "8"])
    finally:
        queue_module.write_config = real
    assert sorted(p.name for p in project.root.iterdir() if p.name.startswith(".alkit.toml")) == []
    assert (project.root / "alkit.toml").read_bytes() == toml and snapshot(project) == before
    said = invoke("queue", "import", str(path), "--add-class", "7", "--add-class", "8", "-p", str(project.root))
    assert said.exit_code == 0 and "added classes '7', '8' to the project" in said.text, said.text
    # the same command again (the retry of an import killed after its commit) changes nothing, with a note; it was
    # refused as "already a class of the project" on every retry (a black-box check)
    from alkit.errors import Note

    with pytest.warns(Note, match="--add-class '7', '8': already classes of the project"):
        again = invoke("queue", "import", str(path), "--add-class", "7", "--add-class", " 8", "-p", str(project.root))
    assert again.exit_code == 0, again.text
    assert "10 unchanged" in again.text.replace("\n", " ") and "added classes" not in again.text, again.text
    grown = load_project(project.root)
    assert grown.config.classes == [*keep, "7", "8"] and Store(grown.store_url).init_classes() == grown.config.classes
    res = ActiveLoop(grown).run(RunRequest(strategy="random", budget=20, batch_size=10))
    assert res and res[-1].metrics  # trained on the grown class list, evaluated
    # alkit.toml put back as init wrote it (or an import stopped between its store and alkit.toml): the store's
    # record, written with the labels, is the one taken; the next import rewrites alkit.toml with a note
    # (alkit.toml was written first once: killed before the store, it listed a class the store never recorded,
    # and every later import was refused until the file was edited by hand; a black-box check)
    (project.root / "alkit.toml").write_bytes(toml)
    loop = ActiveLoop(load_project(project.root))
    assert loop.cfg.classes == [*keep, "7", "8"]
    loop.run(RunRequest(strategy="random", budget=30, batch_size=10))  # refused before ('list them in alkit.toml')
    assert load_project(project.root).config.classes == keep  # a run writes no alkit.toml
    queued = [q.item_id for q in queued_items(Store(project.store_url))]
    more = tmp_path / "more.csv"
    more.write_text("id,label\n" + "".join(f"{i},8\n" for i in queued))
    from alkit.errors import Note

    refused = tmp_path / "refused.csv"  # a refused import changes nothing, alkit.toml included
    refused.write_text("id,label\nno-such-id,8\n")
    with pytest.raises(QueueError, match="unknown id"):
        import_labels(load_project(project.root), refused)
    assert (project.root / "alkit.toml").read_bytes() == toml
    with pytest.warns(Note, match="alkit.toml lacked the classes '7', '8' that an `--add-class` import recorded"):
        assert import_labels(load_project(project.root), more).labeled == len(queued)
    # two --add-class imports at once: each wrote the class list it had read over the record, so one class was
    # lost while its labels stayed and every run was refused (a black-box check); under the write lock the
    # record is read again and both are kept (here the second import's store step meets the first's record)
    store = Store(project.store_url)
    base = store.init_classes()
    ids = [q.item_id for q in queued_items(store)]
    if not ids:
        ActiveLoop(load_project(project.root)).run(RunRequest(strategy="random", budget=50, batch_size=10))
        ids = [q.item_id for q in queued_items(store)]
    counts, _, record, _ = store.import_labels({ids[0]: ("nine", "row 1", None)}, classes=[*base, "nine"])
    assert record == [*base, "nine"]
    counts, _, record, _ = store.import_labels({ids[1]: ("ten", "row 1", None)}, classes=[*base, "ten"])
    assert record == [*base, "nine", "ten"] and store.init_classes() == record
    from alkit.pools.store import ImportRefused

    with pytest.raises(ImportRefused) as refusal:
        store.import_labels({ids[2]: ("NINE", "row 1", None)}, classes=[*base, "NINE"])
    assert "another import added 'nine' meanwhile" in refusal.value.problems[0]
    assert store.init_classes() == [*base, "nine", "ten"]
    assert load_project(project.root).config.classes == [*keep, "7", "8"]
    hidden = tmp_path / "h"
    digits_frame(100).write_csv(tmp_path / "h.csv")
    init_project(tmp_path / "h.csv", hidden, InitOptions(id_col="id", label_col="label", features=PX, hide_labels=True))
    with pytest.raises(QueueError, match="--add-class: this project's labels come from its data file"):
        import_labels(load_project(hidden), path, add_classes=["x"])


def test_a_teams_lifecycle_checks_of_2026_12_06(tmp_path: Path) -> None:
    """A black-box check of a project's life over weeks: a negative number written as text ("'-2.6"), the
    skip token in capitals made a class, another project's unfilled queue taken, the data file overwritten
    by `queue labels -o`, a labels file set aside as 'not yet imported' after a correction, and labels put
    on other items where ids are row numbers.  Each now holds."""
    from alkit.pools.labelfiles._common import escape_formula, unescape_formula
    from alkit.pools.queue import export_labels

    # numbers are no formulas; text that a spreadsheet would run still is, and both read back exactly
    for cell, written in (("-2.646", "-2.646"), ("+3", "+3"), ("-1e5", "-1e5"), ("=1+1", "'=1+1"),
                          ("-2+3", "'-2+3"), ("'-2", "''-2"), ("@x", "'@x")):
        assert escape_formula(cell) == written and unescape_formula(written) == cell
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 4)
    # another project's unfilled queue: unknown ids refuse it, as they do once filled in
    other = tmp_path / "other.csv"
    other.write_text("id,label\nnot-an-id,\n" + f"{ids[0]},\n")
    before = snapshot(project)
    with pytest.raises(QueueError, match="not-an-id.*unknown id"):
        import_labels(project, other)
    assert snapshot(project) == before
    # the skip token in any case is a skip, never a class to add
    first = tmp_path / "a.csv"
    first.write_text(f"id,label\n{ids[0]},__SKIP__\n{ids[1]},{truth[ids[1]]}\n")
    res = import_labels(project, first)
    assert (res.skipped, res.labeled) == (1, 1)
    with pytest.raises(QueueError, match="label files use that label to skip an item"):
        import_labels(project, first, add_classes=["__Skip__"])
    # a number in another spelling of a class ('3.0' beside '3') split one class in two, and a missing-label
    # token ('N/A') was added while its own answer was read as no label (a black-box check); nothing is written
    before = snapshot(project)
    cls = project.config.classes[1]
    for names, said in (([f"{cls}.0"], rf"already a class of the project: '{cls}\.0' \(the number of the class '{cls}'"),
                        ([f"+{cls}"], rf"'\+{cls}' \(the number of the class '{cls}'"),
                        (["40", "40.0"], r"--add-class '40' and '40\.0' are one number"),
                        (["N/A"], r"--add-class 'N/A': an answer 'N/A' is read as no label"),
                        (["nan"], r"--add-class 'nan': an answer 'nan' is read as no label")):
        with pytest.raises(QueueError, match=said):
            import_labels(project, first, add_classes=names)
        assert snapshot(project) == before
    # the project's own data file is no place for the labels (it was set aside as 'answers', the labels in its place)
    source = Path(project.config.source)
    kept = source.read_bytes()
    with pytest.raises(QueueError, match="the data file the project was made from"):
        export_labels(project, source)
    assert source.read_bytes() == kept
    # a labels file written before a correction holds the old answer: kept aside (it may as well be a labeller's
    # revert, which must not be lost), and the message says it may be an answer since corrected
    written = export_labels(project).path
    fix = tmp_path / "fix.csv"
    wrong = next(c for c in project.config.classes if c != truth[ids[1]])
    fix.write_text(f"id,label\n{ids[1]},{wrong}\n")
    assert import_labels(project, fix, on_conflict="replace").replaced == 1
    said = invoke("queue", "labels", "-p", str(project.root))
    assert said.exit_code == 0 and "or since corrected" in " ".join(said.text.split())
    assert len(list((tmp_path / "proj").glob("labels.unimported-*"))) == 1
    # a --history file's replaced rows are a record: rewriting it over itself keeps nothing aside
    hist = export_labels(project, tmp_path / "hist.csv", history=True).path
    assert export_labels(project, hist, history=True).set_aside is None
    assert export_labels(project, written).set_aside is None  # the file as the store holds it now

    # ids that are row numbers: a labels file from the same data in another row order is refused by its text
    df = digits_frame(60).with_columns(pl.format("text {}", pl.col("id")).alias("text"),  # and two texts named like
                                       pl.format("grade {}", pl.col("id")).alias("score"),  # a queue's / a labels
                                       pl.format("web {}", pl.col("id")).alias("source"))  # file's own columns
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 20).then(pl.col("label")).otherwise(None).alias("label"))
    df.drop("id").write_csv(tmp_path / "rows.csv")
    init_project(tmp_path / "rows.csv", tmp_path / "rp", InitOptions(id_col="", label_col="label", features=PX))
    rows_project = load_project(tmp_path / "rp")
    queue_batch(rows_project, 3)
    queued = export_queue(rows_project).path
    q = pl.read_csv(queued, infer_schema=False)
    truth_by_text = dict(zip(df["text"], df["label"].cast(pl.Utf8)))
    answers = q.with_columns(pl.Series("label", [truth_by_text.get(t) or "0" for t in q["text"]]))
    shifted = answers.with_columns(pl.Series("text", list(reversed(q["text"].to_list()))))
    shifted.write_csv(tmp_path / "shifted.csv")
    before = snapshot(rows_project)
    with pytest.raises(QueueError, match="names its items by row number"):
        import_labels(rows_project, tmp_path / "shifted.csv", unqueued=True)
    assert snapshot(rows_project) == before
    shifted.write_parquet(tmp_path / "shifted.parquet")
    with pytest.raises(QueueError, match="names its items by row number"):
        import_labels(rows_project, tmp_path / "shifted.parquet")
    assert snapshot(rows_project) == before
    # a text a spreadsheet changed names no other item: no refusal (accents read in the wrong encoding)
    answers.with_columns((pl.col("text") + " cafÃ©").alias("text")).write_csv(tmp_path / "same.csv")
    assert import_labels(rows_project, tmp_path / "same.csv").labeled == 3
    # the project's own files, whose payload 'score' / 'source' are written as data_score / data_source, read back
    back = export_labels(rows_project, tmp_path / "rows_labels.csv").path
    assert import_labels(rows_project, back).unchanged == 3
    with pytest.raises(QueueError, match="no regular file"):  # a device was read whole (/dev/zero: memory)
        import_labels(rows_project, Path("/dev/null"))
    # a class added between a run's read of alkit.toml and its check: the run says so, not "list them in alkit.toml"
    from alkit.loop import ActiveLoop, LoopError

    stale = ActiveLoop(load_project(rows_project.root))
    new = tmp_path / "new.csv"
    new.write_text("id,label\n60,fresh\n")
    assert import_labels(load_project(rows_project.root), new, add_classes=["fresh"],
                         unqueued=True).added_classes == ["fresh"]
    with pytest.raises(LoopError, match=r"classes were added \('fresh'.*run the same command again"):
        stale._check_labels()
    assert ActiveLoop(load_project(rows_project.root)).cfg.classes[-1] == "fresh"  # a loop made after it knows it


def test_exports_through_links_history_files_and_the_test_splits_labels(tmp_path: Path) -> None:
    """More of the same checks: `--out` a symbolic link (to /dev/stdout: the link was moved aside and a file
    written in its place) is refused; a `--history` file imported back names its replaced rows instead of
    'conflicting labels'; `queue labels` says the test split's labels are not in its file."""
    from alkit.pools.queue import export_labels

    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 2)
    (tmp_path / "a.csv").write_text(f"id,label\n{ids[0]},{truth[ids[0]]}\n")
    import_labels(project, tmp_path / "a.csv")
    wrong = next(c for c in project.config.classes if c != truth[ids[0]])
    (tmp_path / "b.csv").write_text(f"id,label\n{ids[0]},{wrong}\n")
    import_labels(project, tmp_path / "b.csv", on_conflict="replace")
    target = tmp_path / "shared.csv"
    target.write_text("kept\n")
    (tmp_path / "link.csv").symlink_to(target)
    for out in (tmp_path / "link.csv", Path("/dev/null")):
        with pytest.raises(QueueError, match="renames it into place"):
            export_labels(project, out)
        with pytest.raises(QueueError, match="renames it into place"):
            export_queue(project, out)
    assert target.read_text() == "kept\n" and (tmp_path / "link.csv").is_symlink()
    hist = export_labels(project, tmp_path / "h.csv", history=True).path
    before = snapshot(project)
    with pytest.raises(QueueError, match="an answer a correction replaced.*without --history"):
        import_labels(project, hist)
    assert snapshot(project) == before
    said = invoke("queue", "labels", "-o", str(tmp_path / "l.csv"), "-p", str(project.root))
    assert said.exit_code == 0 and f"not the test split's {N_TEST} labels" in " ".join(said.text.split())
    from alkit.config import ConfigError

    with pytest.raises(ConfigError, match=r"alkit.toml is a file: -p takes the project's folder"):
        load_project(project.root / "alkit.toml")


def test_a_filled_queue_goes_back_where_it_was_when_the_export_cannot_be_written(tmp_path: Path, monkeypatch) -> None:
    """A full disk while `queue export` (or a run) wrote the queue: the labeller's filled queue.csv had been moved
    aside as queue.unimported-*.csv, the error said nothing of it, and the next run wrote a blank queue.csv in its
    place (a hostile-filesystem check).  The filled file is now back where the labeller left it."""
    import errno

    from alkit.pools import labelfiles

    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    path = export_queue(project).path
    filled = "id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids)
    path.write_text(filled)
    fmt = labelfiles.get_format("csv")

    def disk_full(*args, **kwargs):  # noqa: ANN002, ANN003 - the format's writer meeting a full disk
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fmt, "write", disk_full)
    with pytest.raises(OSError, match="No space left"):
        export_queue(project)
    assert path.read_text() == filled and not list(project.root.glob("queue.unimported-*"))


def test_a_run_whose_queue_file_cannot_be_written_says_its_batch_is_recorded(tmp_path: Path) -> None:
    """A folder where queue.csv goes: the run committed its batch, then failed naming a temporary file, exit 2,
    which reads as 'nothing changed' (a hostile-filesystem check).  It names queue.csv, says the batch is
    recorded, and the same command writes the file once the folder is gone."""
    project, _ = _digits_human(tmp_path)
    (project.root / "queue.csv").mkdir()
    res = invoke("run", "--strategy", "random", "--budget", "20", "-p", str(project.root))
    assert res.exit_code == 2 and f"cannot use {project.root / 'queue.csv'}: the path is a folder" in res.text, res.text
    assert "the batch of 10 is recorded and queued, and the same command writes its queue file once that is mended" \
        in res.text
    (project.root / "queue.csv").rmdir()
    again = invoke("run", "--strategy", "random", "--budget", "20", "-p", str(project.root))
    assert again.exit_code == 0 and len(pl.read_csv(project.root / "queue.csv")) == 10, again.text


def test_a_default_queue_file_that_links_to_a_shared_folder_is_written_there(tmp_path: Path) -> None:
    """queue.csv a symbolic link to the labellers' shared folder: the export replaced the link with a file, and
    the shared file kept the old queue (a hostile-filesystem check).  The shared file is written, the link stays;
    a link to no regular file is refused."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "queue.csv").write_text("id,label,skip\n")  # an old, empty queue alkit wrote there
    link = project.root / "queue.csv"
    link.symlink_to(shared / "queue.csv")
    out = export_queue(project)
    assert link.is_symlink() and out.path == (shared / "queue.csv").resolve()
    assert pl.read_csv(shared / "queue.csv")["id"].cast(pl.Utf8).to_list() == ids
    (shared / "queue.csv").write_text("id,label,skip\n" + "".join(f"{i},{truth[i]},\n" for i in ids))  # filled there
    kept = export_queue(project).set_aside  # answers not imported yet: kept beside the shared file, as ever
    assert kept is not None and kept.parent == shared.resolve() and link.is_symlink()
    link.unlink()
    link.symlink_to(tmp_path / "nowhere.csv")
    with pytest.raises(QueueError, match="is a symbolic link to .*nowhere.csv, which does not exist"):
        export_queue(project)


def test_a_class_renamed_or_a_payload_column_added_in_alkit_toml_is_refused_before_anything_is_written(
        tmp_path: Path) -> None:
    """Hand edits of alkit.toml (an options-and-config check): with class '9' renamed 'nine', an import stored
    'nine' labels the store's class record did not know, and with the file restored every run was refused; an
    unknown payload_cols name made a run commit its batch and then fail with a polars traceback."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 6)
    answers = tmp_path / "answers.csv"
    answers.write_text("id,label\n" + "".join(f"{i},{truth[i]}\n" for i in ids))
    toml = project.root / "alkit.toml"
    original = toml.read_text()
    toml.write_text(original.replace('"9",', '"nine",', 1))
    before = snapshot(project)
    res = invoke("queue", "import", str(answers), "-p", str(project.root))
    assert res.exit_code == 2 and "the store recorded [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]" in res.text, res.text
    assert snapshot(project) == before
    toml.write_text(original.replace('payload_cols = [\n', 'payload_cols = [\n    "zzz",\n', 1))
    res = invoke("run", "--strategy", "random", "--budget", "20", "-p", str(project.root))
    assert res.exit_code == 2 and "alkit.toml's payload_cols names 'zzz', which payload.parquet does not hold" \
        in res.text, res.text
    assert snapshot(project) == before
    toml.write_text(original)
    assert invoke("queue", "import", str(answers), "-p", str(project.root)).exit_code == 0


def test_a_default_file_linked_to_a_file_alkit_must_not_write_over_is_refused(tmp_path: Path) -> None:
    """A check of the link fix: queue.csv a link to features.parquet, labels.csv a link to alkit.db or to the
    data file were written through, destroying the project (the store moved aside as 'answers'); a link to a
    folder or to nothing was refused after the run had committed its batch, reading as 'nothing changed'; a
    shared file written through a link lost its group write permission."""
    import os
    import stat

    project, _ = _digits_human(tmp_path)
    queue_batch(project, 3)
    root = project.root
    for name, target, command in (("queue.csv", "features.parquet", ("queue", "export")),
                                  ("labels.csv", "alkit.db", ("queue", "labels")),
                                  ("labels.csv", "queue.csv", ("queue", "labels")),
                                  ("queue.csv", str(tmp_path / "digits_pool.csv"), ("queue", "export"))):
        if name == "labels.csv" and target == "queue.csv":
            export_queue(project)
        link = root / name
        link.symlink_to(target)
        before = snapshot(project)
        res = invoke(*command, "-p", str(root))
        assert res.exit_code == 2 and "which alkit does not write the" in res.text, (name, target, res.text)
        assert snapshot(project) == before and link.is_symlink()
        link.unlink()
        (root / "queue.csv").unlink(missing_ok=True)
    (tmp_path / "shared").mkdir()
    (root / "queue.csv").symlink_to(tmp_path / "shared")
    res = invoke("run", "--strategy", "random", "--budget", "20", "-p", str(root))
    assert res.exit_code == 2 and "which is no regular file" in res.text and "is recorded and queued" in res.text
    (root / "queue.csv").unlink()
    shared = tmp_path / "shared" / "queue.csv"
    shared.write_text("id,label,skip\n")
    os.chmod(shared, 0o664)
    (root / "queue.csv").symlink_to(shared)
    export_queue(project)
    assert stat.S_IMODE(shared.stat().st_mode) == 0o664 and pl.read_csv(shared).height > 0


def test_an_export_with_feature_columns_refuses_a_swapped_features_file(tmp_path: Path) -> None:
    """The digest check covered runs only: `queue export --include` wrote another row's feature values, exit 0
    (a check of the fix).  The same data made again in another row order gives the swapped file."""
    import shutil

    project, _ = _digits_human(tmp_path)
    queue_batch(project, 3)
    frame = pl.read_csv(tmp_path / "digits_pool.csv")
    frame.reverse().write_csv(tmp_path / "reversed.csv")
    init_project(tmp_path / "reversed.csv", tmp_path / "other", InitOptions(id_col="id", label_col="label",
                                                                            features=PX))
    shutil.copy(tmp_path / "other" / "features.parquet", project.root / "features.parquet")
    res = invoke("queue", "export", "--include", "px0,px1", "-p", str(project.root))
    assert res.exit_code == 2 and "features.parquet is not the file this project was made with" in res.text, res.text


def test_a_received_projects_links_lead_no_export_out_of_the_folder_but_to_a_label_file(tmp_path: Path) -> None:
    """A project received from someone else with queue.csv a link to ~/.bashrc: `alkit run` wrote the queue's
    ids into it (moving the original aside), and labels.csv a link to notes.txt wrote every label there (an
    untrusted-input check).  A default file leads elsewhere only to a label file; a hard-linked queue.csv (a
    shared queue) is rewritten in place, and one hard-linked to the store is refused."""
    from alkit.pools.queue import export_labels

    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 3)
    home = tmp_path / "home"
    home.mkdir()
    rc = home / "bashrc"
    rc.write_text('alias ll="ls -l"\n')
    link = project.root / "queue.csv"
    link.symlink_to(rc)
    with pytest.raises(QueueError, match=r"queue.csv is a symbolic link to .*bashrc, and bashrc is no queue or labels file"):
        export_queue(project)
    assert rc.read_text() == 'alias ll="ls -l"\n' and sorted(p.name for p in home.iterdir()) == ["bashrc"]
    notes = home / "notes.txt"
    notes.write_text("private\n")
    (project.root / "labels.csv").symlink_to(notes)
    with pytest.raises(QueueError, match="labels.csv is a symbolic link to .*notes.txt, and notes.txt is no queue or labels file"):
        export_labels(project)
    assert notes.read_text() == "private\n"
    link.unlink()
    shared = home / "shared.csv"
    shared.write_text("")  # an empty file made for the shared queue
    data_like = home / "train.csv"  # any CSV with id and label columns is no file alkit wrote: not written over
    data_like.write_text("id,age,label\n1,34,yes\n")
    link.symlink_to(data_like)
    with pytest.raises(QueueError, match="train.csv is no queue or labels file alkit wrote"):
        export_queue(project)
    assert data_like.read_text() == "id,age,label\n1,34,yes\n"
    link.unlink()
    os.link(shared, link)  # a hard link: the shared queue, the same file under two names
    export_queue(project)
    assert pl.read_csv(shared)["id"].cast(pl.Utf8).to_list() == ids and os.path.samefile(shared, link)
    link.unlink()
    os.link(project.root / "alkit.db", link)
    before = snapshot(project)
    with pytest.raises(QueueError, match="queue.csv is a hard link to a file alkit does not write the queue over"):
        export_queue(project)
    # the store's rows, and a store file still (its bytes may move: SQLite checkpoints the journal of the export
    # before on closing a connection, which made a byte comparison fail now and then)
    assert snapshot(project) == before and (project.root / "alkit.db").read_bytes()[:16] == b"SQLite format 3\x00"


def test_rows_repeating_an_items_answer_in_one_file_count_as_unchanged(tmp_path: Path) -> None:
    """Two annotators' agreeing rows merged into one file: 15 rows read and 10 counted (the 5 repeats in no
    count), while the same 5 rows imported as a file of their own were 'unchanged' (a black-box check).  Every
    row now lands in one count; the first row's annotator is the one recorded."""
    project, truth = _digits_human(tmp_path)
    ids = queue_batch(project, 10)
    path = tmp_path / "merged.csv"
    rows = [f"{i},{truth[i]},alice" for i in ids] + [f"{i},{truth[i]},bob" for i in ids[:5]] + [f"{ids[0]},,carol"]
    path.write_text("id,label,annotator\n" + "\n".join(rows) + "\n")
    res = import_labels(project, path)
    assert (res.n_rows, res.labeled, res.unchanged, res.pending) == (16, 10, 6, 0)
    assert res.labeled + res.skipped + res.replaced + res.unchanged + res.kept + res.pending == res.n_rows
    assert {who for _, _, who in shared_labels(project).values()} == {"alice"}
    again = import_labels(project, path)  # the same file twice: every row unchanged
    assert (again.labeled, again.unchanged) == (0, 16)
    spaced = tmp_path / "spaced.csv"  # the same id with spaces around it: one answer, the other row unchanged
    spaced.write_text(f"id,label,annotator\n{ids[2]},{truth[ids[2]]},x\n {ids[2]},{truth[ids[2]]},y\n")
    res = import_labels(project, spaced)
    assert res.labeled + res.unchanged + res.pending == res.n_rows == 2
    blank = tmp_path / "blank.csv"  # a blank row for an answered item was 'without a label yet' (pending)
    blank.write_text(f"id,label\n{ids[1]},\n")
    assert (lambda r: (r.pending, r.unchanged))(import_labels(project, blank)) == (0, 1)


@pytest.mark.parametrize("args", [["bench", "--budget", "20", "--strategies", "random", "--seeds", "1", "--out-dir", ""],
                                  ["queue", "labels", "-o", ""], ["queue", "export", "--out", " "], ["plot", "-o", ""],
                                  ["status", "-p", ""]])
def test_an_empty_path_option_is_refused_not_read_as_the_current_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]) -> None:
    """Path('') is '.': `bench --out-dir ''` (an unset shell variable) wrote its four files into the current folder
    and `init -p ''` made its project there.  Refused by name, nothing written."""
    project, _ = _digits_human(tmp_path)
    queue_batch(project, 2)
    monkeypatch.chdir(tmp_path)
    before, here = snapshot(project), sorted(p.name for p in tmp_path.iterdir())
    with_project = args if "-p" in args else [*args, "-p", str(project.root)]
    said = invoke(*with_project)
    assert said.exit_code == 2 and "empty: give a path (an unset shell variable?)" in said.text, said.text
    assert snapshot(project) == before and sorted(p.name for p in tmp_path.iterdir()) == here


def test_a_larger_budget_keeps_a_finished_runs_evaluation_where_labels_came_in_since(tmp_path: Path) -> None:
    """A larger budget redoes a finished run's last, evaluation-only cycle so that it continues as if given that
    budget from the start; in a team project the redo fits the labels other runs collected since, so it erased a
    measured point of the run's curve (110 labels, 0.983, gone; a black-box check).  Kept where the labels differ."""
    project, truth = _digits_human(tmp_path)
    proj = str(project.root)
    a = ["run", "--strategy", "random", "--budget", "10", "-p", proj]
    assert invoke(*a).exit_code == 0
    _fill(project.root / "queue.csv", truth)
    assert invoke("queue", "import", str(project.root / "queue.csv"), "-p", proj).exit_code == 0
    assert invoke(*a).exit_code == 0
    st = json.loads(invoke("status", "--json", "-p", proj).stdout)
    name = st[0]["name"]
    assert st[0]["status"] == "complete"

    def cycles() -> list[tuple[int, int, int]]:
        with Store(project.store_url).session() as s:
            return [tuple(r) for r in s.execute(select(CycleRow.cycle, CycleRow.n_labeled, CycleRow.n_selected)
                                                .join(Run, Run.id == CycleRow.run_id).where(Run.name == name)
                                                .order_by(CycleRow.cycle))]

    finished = cycles()
    assert finished == [(0, 0, 10), (1, 10, 0)]
    # another run's answers come in; the finished run, given more budget, keeps its point at 10 labels
    assert invoke("run", "--strategy", "random", "--seed", "1", "--budget", "10", "-p", proj).exit_code == 0
    _fill(project.root / "queue.csv", truth)
    assert invoke("queue", "import", str(project.root / "queue.csv"), "-p", proj).exit_code == 0
    assert invoke("run", "--resume", name, "--budget", "20", "-p", proj).exit_code == 0
    assert cycles() == finished + [(2, 20, 10)]
    # with no label in since, the redo replaces the evaluation (the run goes on as if given the budget at first)
    _fill(project.root / "queue.csv", truth)
    assert invoke("queue", "import", str(project.root / "queue.csv"), "-p", proj).exit_code == 0
    assert invoke("run", "--resume", name, "-p", proj).exit_code == 0
    assert cycles()[-1] == (3, 30, 0)
    assert invoke("run", "--resume", name, "--budget", "30", "-p", proj).exit_code == 0
    assert cycles()[3] == (3, 30, 10)


def test_full_width_answers_read_as_the_class_or_skip_they_spell(tmp_path: Path) -> None:
    """Only case was folded: a full-width 'ｓｅ' was an unknown class whose hint added a visual twin 'ｓｅ' beside 'se',
    and a full-width '＿＿ｓｋｉｐ＿＿' was added as a class and became an item's label, not a skip (a black-box
    check).  Answers are read through NFKC as the formula errors and missing-label markers are."""
    from alkit.pools.ingest import InputError

    df = digits_frame(160).with_columns(
        pl.when(pl.int_range(pl.len()) < N_TEST).then(pl.col("label").cast(pl.Utf8).replace(
            {str(d): n for d, n in enumerate("zero one two three four five six seven eight nine".split())}))
        .otherwise(None).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "p")
    ids = queue_batch(project, 3)
    answers = tmp_path / "a.csv"
    answers.write_text(f"id,label\n{ids[0]},ｏｎｅ\n{ids[1]},＿＿ｓｋｉｐ＿＿\n{ids[2]},ＴＷＯ\n")
    res = import_labels(project, answers)
    assert (res.labeled, res.skipped) == (2, 1)
    assert {i: v[0] for i, v in shared_labels(project).items() if i in ids} == {ids[0]: "one", ids[2]: "two"}
    before = snapshot(project)
    for names, said in ((["ｏｎｅ"], r"'ｏｎｅ' \(the class 'one'\)"), (["＿＿ｓｋｉｐ＿＿"], "label files use that label to skip"),
                        (["ten", "ｔｅｎ"], "'ten' and 'ｔｅｎ' differ only in case or character width")):
        with pytest.raises(QueueError, match=said):
            import_labels(project, answers, add_classes=names)
    assert snapshot(project) == before
    with pytest.raises(InputError, match=r"--classes 'a' and 'ａ' differ only in character width or case"):
        init_project(tmp_path / "d.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label", features=PX,
                                                                     classes=["a", "b", "ａ"]))
    # lower case, not casefold: 'Masse' (mass) and 'Maße' (measures) are two classes, and neither answer is the other
    from alkit.choices import fold_case

    assert fold_case("Masse") != fold_case("Maße") and fold_case("ＭＡＳＳＥ") == fold_case("masse")


def test_an_empty_queues_export_imports_nothing_with_exit_0(tmp_path: Path) -> None:
    """A cron loop export -> label -> import died under `set -e` whenever nothing was queued: the export of an empty
    queue (csv: a header, jsonl: no line) was refused by import, exit 2, as if it were a broken file (a black-box
    check).  It imports nothing, exit 0; a file with no header at all is still refused."""
    project, _ = _digits_human(tmp_path)
    for name in ("empty.csv", "empty.jsonl"):
        out = invoke("queue", "export", "--out", str(tmp_path / name), "-p", str(project.root))
        assert out.exit_code == 0, out.text
        res = invoke("queue", "import", str(tmp_path / name), "-p", str(project.root))
        assert res.exit_code == 0 and "no rows (an empty queue's export: nothing to import)" in " ".join(res.text.split())
        got = json.loads(invoke("queue", "import", str(tmp_path / name), "--json", "-p", str(project.root)).stdout)
        assert (got["n_rows"], got["labeled"], got["still_queued"]) == (0, 0, 0), got
    (tmp_path / "zero.csv").write_text("")
    assert invoke("queue", "import", str(tmp_path / "zero.csv"), "-p", str(project.root)).exit_code == 2


def test_out_dash_is_refused_not_written_as_a_file_named_dash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`queue export --out - --format csv` wrote a file named '-' in the current folder, and its hint said
    `alkit queue import -` (a black-box check): refused, nothing written."""
    project, _ = _digits_human(tmp_path)
    monkeypatch.chdir(tmp_path)
    for cmd in (["queue", "export"], ["queue", "labels"]):
        res = invoke(*cmd, "--out", "-", "--format", "csv", "-p", str(project.root))
        assert res.exit_code == 2 and "file is written to disk, not to standard output" in " ".join(res.text.split())
        assert not (tmp_path / "-").exists()


def _three_class_project_with_a_queue(tmp_path: Path, keep: list[str]) -> Project:
    """Digits whose test split holds only the classes ``keep`` (others come later), a random run's first batch queued."""
    from alkit.loop import ActiveLoop, RunRequest

    df = digits_frame(160)
    df = df.with_columns(pl.when((pl.int_range(pl.len()) < 60) & pl.col("label").cast(pl.Utf8).is_in(keep))
                         .then(pl.col("label")).otherwise(None).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "p")
    assert project.config.classes == keep
    ActiveLoop(project).run(RunRequest(strategy="random", budget=20, batch_size=10))  # queues the first batch
    return project


def test_a_restored_store_behind_alkit_toml_by_an_added_class_takes_it_again(tmp_path: Path) -> None:
    """A store backup from before an `--add-class` import, copied back: every import was refused ('restore alkit.toml's
    classes; --add-class adds one'), the --add-class it pointed to too, and only a hand edit of alkit.toml got out
    (a black-box check).  The refusal names the class the store lacks; --add-class of it records it again."""
    import sqlite3

    from alkit.pools.queue import queued_items
    from alkit.pools.store import Store

    keep = ["0", "1", "2"]
    project = _three_class_project_with_a_queue(tmp_path, keep)
    queued = [q.item_id for q in queued_items(Store(project.store_url))]
    def copy_db(src: Path, dst: Path) -> None:  # as `sqlite3 .backup` does: the WAL's pages too, under SQLite's locks
        with sqlite3.connect(src) as a, sqlite3.connect(dst) as b:
            a.backup(b)

    copy_db(project.root / "alkit.db", tmp_path / "backup.db")
    path = tmp_path / "a.csv"
    path.write_text("id,label\n" + "".join(f"{i},{'7' if j == 0 else keep[j % 3]}\n" for j, i in enumerate(queued)))
    assert import_labels(project, path, add_classes=["7"]).labeled == 10
    copy_db(tmp_path / "backup.db", project.root / "alkit.db")  # the team restores the backup
    project = load_project(project.root)
    assert project.config.classes == [*keep, "7"]
    plain = tmp_path / "plain.csv"
    plain.write_text("id,label\n" + "".join(f"{i},{keep[j % 3]}\n" for j, i in enumerate(queued) if j))
    with pytest.raises(QueueError, match=r"the store lacks '7' \(a store older than alkit.toml, such as a restored "
                                         r"backup\): import with --add-class 7 to record it in the store"):
        import_labels(project, plain)
    assert import_labels(project, path, add_classes=["7"]).labeled == 10
    assert Store(project.store_url).init_classes() == [*keep, "7"] == load_project(project.root).config.classes


def test_a_class_answer_with_the_word_processors_minus_is_that_class(tmp_path: Path) -> None:
    """'−1' (U+2212) was an unknown class whose hint added it as a third class beside '-1', and the item's label
    went there (a black-box check): it is the number -1, the class '-1'; --add-class of it is refused as a twin."""
    from alkit.loop import ActiveLoop, RunRequest
    from alkit.pools.queue import queued_items
    from alkit.pools.store import Store

    df = digits_frame(160).with_columns(
        pl.when(pl.int_range(pl.len()) < 60).then(pl.when(pl.col("label").cast(pl.Int64) < 5).then(pl.lit("-1"))
                                                   .otherwise(pl.lit("1"))).alias("label"))
    df.write_csv(tmp_path / "d.csv")
    init_project(tmp_path / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "p")
    ActiveLoop(project).run(RunRequest(strategy="random", budget=20, batch_size=10))
    queued = [q.item_id for q in queued_items(Store(project.store_url))]
    path = tmp_path / "a.csv"
    path.write_text(f"id,label\n{queued[0]},\u22121\n{queued[1]},+1\n")
    assert import_labels(project, path).labeled == 2
    assert [shared_labels(project)[i][0] for i in queued[:2]] == ["-1", "1"]
    with pytest.raises(QueueError, match="--add-class"):
        import_labels(project, path, add_classes=["\u22121"])
    assert load_project(project.root).config.classes == ["-1", "1"]


def test_an_old_projects_alkit_toml_rewritten_keeps_no_empty_store_token(tmp_path: Path) -> None:
    """An --add-class import rewrote an old project's alkit.toml with `store_token = ""`, and a teammate's older alkit
    then refused the project ('unknown keys'; a black-box check): an empty token is not written."""
    from alkit.config import write_config

    project, _ = _digits_human(tmp_path)
    assert project.config.store_token  # a new project's
    text = (project.root / "alkit.toml").read_text()
    assert "store_token" in text
    old = dataclasses.replace(project.config, store_token="")
    assert "store_token" not in write_config(tmp_path, old, name="old.toml").read_text()


def test_a_parquet_answer_files_time_ids_read_as_init_wrote_them(tmp_path: Path) -> None:
    """Init writes a time-of-day id with its fraction as 12:00:42.500; a Parquet answers file of that type read it as
    str() does, 12:00:42.500000, an unknown id (a black-box check).  Whole seconds are alike either way."""
    import datetime as dt

    from alkit.pools import labelfiles
    from alkit.pools.ownership import id_text

    times = [dt.time(12, 0, 42, 500000), dt.time(12, 0, 2)]
    pl.DataFrame({"id": times, "label": ["p", "q"]}).write_parquet(tmp_path / "a.parquet")
    problems: list[str] = []
    rows = labelfiles.read(tmp_path / "a.parquet", problems)
    assert not problems and [r.item_id for r in rows] == id_text(pl.Series(times), "id").to_list() \
        == ["12:00:42.500", "12:00:02"]
