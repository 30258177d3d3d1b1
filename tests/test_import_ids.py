"""Item ids in label files: matched exactly as `alkit init` kept them (spaces included), a trimmed
id where no exact one exists, and two spellings of one item refused."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from alkit.config import load_project
from alkit.pools.ingest import InitOptions, init_project
from alkit.pools.queue import QueueError, export_queue, import_labels
from alkit.pools.store import Store

from conftest import digits_frame
from test_queue import PX, queue_batch, snapshot


def _project_with_spaced_ids(tmp_path: Path) -> tuple[object, dict[str, str]]:
    df = digits_frame(160)
    ids = [f" d{i} " if i % 2 else f"d{i}" for i in range(len(df))]  # every other id padded with spaces
    truth = {i: str(y) for i, y in zip(ids, df["label"])}
    df = df.with_columns(pl.Series("id", ids),
                         pl.when(pl.int_range(pl.len()) < 60).then(pl.col("label")).otherwise(None).alias("label"))
    src = tmp_path / "spaced.csv"
    df.write_csv(src)
    init_project(src, tmp_path / "proj", InitOptions(id_col="id", label_col="label", features=PX))
    return load_project(tmp_path / "proj"), truth


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "label-studio"])
def test_alkits_own_export_round_trips_ids_with_spaces(tmp_path: Path, fmt: str) -> None:
    project, truth = _project_with_spaced_ids(tmp_path)
    ids = queue_batch(project, 6)
    assert any(i != i.strip() for i in ids)  # the batch holds padded ids
    exported = export_queue(project, tmp_path / f"q.{'json' if fmt == 'label-studio' else fmt}", fmt).path
    if fmt == "csv":
        df = pl.read_csv(exported, infer_schema_length=0)
        df.with_columns(pl.col("id").replace_strict(truth, default=None).alias("label")).write_csv(tmp_path / "in.csv")
        path = tmp_path / "in.csv"
    elif fmt == "jsonl":
        df = pl.read_ndjson(exported).with_columns(pl.col("id").cast(pl.Utf8))
        df.with_columns(pl.col("id").replace_strict(truth, default=None).alias("label")).write_ndjson(tmp_path / "in.jsonl")
        path = tmp_path / "in.jsonl"
    else:
        import json

        tasks = json.loads(exported.read_text())
        for t in tasks:
            t["annotations"] = [{"result": [{"type": "choices", "from_name": "label", "to_name": "x",
                                             "value": {"choices": [truth[t["data"]["alkit_id"]]]}}]}]
        path = tmp_path / "in.json"
        path.write_text(json.dumps(tasks))
    res = import_labels(project, path)
    assert res.labeled == 6
    stored = dict(zip(*Store(project.store_url).labeled_set(None)))
    got = Store(project.store_url).ids_for_keys(list(stored))
    assert {got[k]: v for k, v in stored.items()} == {i: truth[i] for i in ids}


def test_a_trimmed_id_matches_and_two_spellings_of_one_item_are_refused(tmp_path: Path) -> None:
    project, truth = _project_with_spaced_ids(tmp_path)
    ids = queue_batch(project, 4)
    padded = next(i for i in ids if i != i.strip())
    plain = next(i for i in ids if i == i.strip())
    before = snapshot(project)
    both = tmp_path / "both.csv"  # two spellings of one item with two answers: refused
    other = "1" if truth[padded] != "1" else "2"
    both.write_text(f"id,label\n{padded},{truth[padded]}\n{padded.strip()},{other}\n")
    with pytest.raises(QueueError, match=r"line 3 \(id d\d+\): the same item as line 2 .*\(ids differ only in spaces\) "
                                         "with another answer"):
        import_labels(project, both)
    assert snapshot(project) == before
    typed = tmp_path / "typed.csv"  # a person typed the ids without the spaces, or added some
    typed.write_text(f"id,label\n{padded.strip()},{truth[padded]}\n {plain},{truth[plain]}\n")
    assert import_labels(project, typed).labeled == 2
    with pytest.raises(QueueError, match="unknown id"):
        (tmp_path / "bad.csv").write_text("id,label\nd999,1\n")
        import_labels(project, tmp_path / "bad.csv")


def test_a_label_in_decomposed_unicode_is_the_class_it_spells(tmp_path: Path) -> None:
    """'Château' typed on macOS arrives decomposed (a + combining circumflex): it printed exactly as the
    class in the refusal ("unknown class 'Château' (classes: Château, ...)")."""
    import unicodedata

    df = digits_frame(160)
    names = {0: "Château Margaux", 1: "Côte-Rôtie"}
    df = df.with_columns(pl.col("label").map_elements(lambda v: names.get(int(v) % 2), return_dtype=pl.Utf8),
                         pl.col("id").cast(pl.Utf8))
    df = df.with_columns(pl.when(pl.int_range(pl.len()) < 60).then(pl.col("label")).otherwise(None).alias("label"))
    src = tmp_path / "wine_names.csv"
    df.write_csv(src)
    init_project(src, tmp_path / "proj", InitOptions(id_col="id", label_col="label", features=PX))
    project = load_project(tmp_path / "proj")
    ids = queue_batch(project, 3)
    decomposed = unicodedata.normalize("NFD", "Château Margaux")
    assert decomposed != "Château Margaux"
    path = tmp_path / "nfd.csv"
    path.write_text(f"id,label\n{ids[0]},{decomposed}\n{ids[1]},Côte-Rôtie\n", encoding="utf-8")
    assert import_labels(project, path).labeled == 2
    assert sorted(Store(project.store_url).labeled_set(None)[1]) == ["Château Margaux", "Côte-Rôtie"]
    # the class in the wrong text encoding (a spreadsheet's Windows-1252 reading of UTF-8) is named as such, not
    # an unknown class to add (a black-box check)
    garbled = tmp_path / "cp.csv"
    garbled.write_text(f"id,label\n{ids[2]},{'Côte-Rôtie'.encode('utf-8').decode('cp1252')}\n", encoding="utf-8")
    with pytest.raises(QueueError, match="is the class 'Côte-Rôtie' read in the wrong text encoding") as refused:
        import_labels(project, garbled)
    assert "--add-class" not in str(refused.value)
    garbled.write_text(f"id,label\n{ids[2]},{'CÔTE-RÔTIE'.encode('utf-8').decode('cp1252')}\n", encoding="utf-8")
    with pytest.raises(QueueError, match="is the class 'Côte-Rôtie' read in the wrong text encoding"):
        import_labels(project, garbled)  # in another case too, as answers match classes
    with pytest.raises(QueueError, match=r"--add-class 'CÃ´te-RÃ´tie' is the class 'Côte-Rôtie' read in the wrong"):
        import_labels(project, garbled, add_classes=["Côte-Rôtie".encode("utf-8").decode("cp1252")])


def test_tab_separated_queue_files_round_trip(tmp_path: Path) -> None:
    """`alkit init` reads .tsv; queue export and import now do too (tab-separated, by the suffix)."""
    project, truth = _project_with_spaced_ids(tmp_path)
    ids = queue_batch(project, 4)
    out = export_queue(project, tmp_path / "q.tsv").path
    header = out.read_text().splitlines()[0]
    assert header.split("\t")[:2] == ["id", "label"] and "," not in header
    df = pl.read_csv(out, separator="\t", infer_schema_length=0)
    df.with_columns(pl.col("id").replace_strict(truth, default=None).alias("label")).write_csv(
        tmp_path / "in.tsv", separator="\t")
    assert import_labels(project, tmp_path / "in.tsv").labeled == 4
    assert sorted(Store(project.store_url).ids_for_keys(list(
        dict(zip(*Store(project.store_url).labeled_set(None))))).values()) == sorted(ids)
