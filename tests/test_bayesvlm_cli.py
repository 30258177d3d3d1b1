"""`alkit run --scorer bayesvlm --model-dir DIR`: BayesVLM on a local CLIP / SigLIP directory.

Real transformers model classes at tiny random-initialised configs, saved with save_pretrained
(weights, a word-level tokenizer, the image processor) into a temp directory, on a project of
bundled digits images made by `alkit init --image-col`.
"""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import folder_snapshot, project_cli
from typer.testing import CliRunner

tf = pytest.importorskip("transformers")
pytest.importorskip("PIL")

NAMES = ["zero", "one", "two"]
PROMPT = "a photo of the digit {}"


def _tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers, processors

    vocab = {"[PAD]": 0, "[UNK]": 1, "[BOS]": 2, "[EOS]": 3}
    for w in "a photo of the digit".split() + NAMES:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[BOS] $A [EOS]", special_tokens=[("[BOS]", 2), ("[EOS]", 3)])
    return tf.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                      bos_token="[BOS]", eos_token="[EOS]")


def save_tiny_dual_encoder(out: Path, kind: str) -> Path:
    """A CLIPModel or SiglipModel (16-pixel images, one layer per tower) with its tokenizer and
    image processor, as save_pretrained writes them."""
    text = dict(vocab_size=32, hidden_size=16, intermediate_size=24, num_hidden_layers=1, num_attention_heads=2,
                max_position_embeddings=12, bos_token_id=2, eos_token_id=3, pad_token_id=0)
    vision = dict(hidden_size=16, intermediate_size=20, num_hidden_layers=1, num_attention_heads=2,
                  image_size=16, patch_size=8, num_channels=3)
    torch.manual_seed(0)
    if kind == "clip":
        model = tf.CLIPModel(tf.CLIPConfig(text_config=text, vision_config=vision, projection_dim=8))
        processor = tf.CLIPImageProcessor(size={"shortest_edge": 16}, crop_size={"height": 16, "width": 16})
    else:
        model = tf.SiglipModel(tf.SiglipConfig(text_config={**text, "projection_size": 16}, vision_config=vision))
        processor = tf.SiglipImageProcessor(size={"height": 16, "width": 16})
    model.save_pretrained(out)
    _tokenizer().save_pretrained(out)
    processor.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def vlm_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Tiny CLIP and SigLIP directories and one image project (120 pool / 30 test digits)."""
    from PIL import Image
    from sklearn.datasets import load_digits

    home = tmp_path_factory.mktemp("vlm")
    for kind in ("clip", "siglip"):
        save_tiny_dual_encoder(home / "models" / kind, kind)
    d = load_digits()
    (home / "img").mkdir()
    rows = []
    for i, (x, y) in enumerate(zip(d.images, d.target)):
        if y <= 2 and len(rows) < 150:
            Image.fromarray((x / 16 * 255).astype("uint8")).resize((16, 16)).convert("RGB").save(home / "img" / f"{i}.png")
            rows.append((f"d{i}", f"img/{i}.png", NAMES[y]))
    with open(home / "data.csv", "w", newline="") as f:
        csv.writer(f).writerows([("id", "path", "label"), *rows])
    res = project_cli(home, "base")("init", "data.csv", "--id-col", "id", "--label-col", "label", "--image-col", "path",
                                    "--hide-labels", "--test-frac", "0.2")
    assert res.returncode == 0, res.stderr
    return home


def _invoke(work: Path, *args: str, project: str = "p") -> tuple[int, str]:
    """`alkit ARGS -p PROJECT` in this process (the subprocess runs above cover the real CLI)."""
    import os

    from alkit.cli import app

    old = os.getcwd()
    os.chdir(work)
    try:
        res = CliRunner().invoke(app, [*args, "-p", project], catch_exceptions=False)
    finally:
        os.chdir(old)
    return res.exit_code, (res.stdout if "--json" in args else res.output)  # notes go to stderr


def _project(vlm_home: Path, tmp_path: Path) -> Path:
    """A fresh copy of the image project (its store included) beside the models and images."""
    work = tmp_path / "w"
    work.mkdir()
    shutil.copytree(vlm_home / "base", work / "p")
    (work / "models").symlink_to(vlm_home / "models")
    return work


@pytest.mark.parametrize("kind", ["clip", "siglip"])
def test_bayesvlm_runs_from_the_command_line(vlm_home: Path, tmp_path: Path, kind: str) -> None:
    from alkit.config import load_project
    from alkit.pools.features import FeatureReader
    from alkit.pools.store import Store

    work = _project(vlm_home, tmp_path)
    alkit = project_cli(work)
    res = alkit("run", "--scorer", "bayesvlm", "--model-dir", f"models/{kind}", "--class-prompts", PROMPT,
                "--budget", "30", "--json")
    assert res.returncode == 0, res.stderr
    row = json.loads(res.stdout)[0]
    assert row["scorer"] == "bayesvlm" and row["n_labeled"] == 30 and row["status"] == "complete"
    assert row["name"].endswith(f"-{kind}-b10-s0") and " " not in row["name"]

    # the stored features are the model's own: its projection of them is get_image_features
    proj = load_project(work / "p")
    files = list((work / "p" / "vlm-features").glob(f"{kind}-*.parquet"))
    assert len(files) == 1
    X = FeatureReader(files[0]).take(np.arange(proj.config.n_items))
    model = tf.AutoModel.from_pretrained(work / "models" / kind).eval()
    processor = tf.AutoImageProcessor.from_pretrained(work / "models" / kind)
    from PIL import Image
    import polars as pl

    paths = pl.read_parquet(work / "p" / "payload.parquet").sort("_alkit_key")["path"].to_list()[:6]
    pixels = processor(images=[Image.open(vlm_home / p).convert("RGB") for p in paths], return_tensors="pt")["pixel_values"]
    with torch.no_grad():
        ref = model.get_image_features(pixel_values=pixels)
    ref = ref if isinstance(ref, torch.Tensor) else ref.pooler_output
    from alkit.learners.dual_encoder import hf_dual_encoder, split_inputs

    P = hf_dual_encoder(model).image_projection()
    torch.testing.assert_close(P(split_inputs(X[:6], P)), ref, rtol=1e-4, atol=1e-4)

    # zero-shot from the first cycle: metrics at 0 labels, and the first batch picked by the model
    store = Store(proj.store_url)
    run = next(r for r in store.runs() if r.name == row["name"])
    cycles = store.cycles(run.id)
    assert cycles[0].n_labeled == 0 and "accuracy" in cycles[0].metrics
    from sqlalchemy import select

    from alkit.pools.schema import SelectionRow

    with store.session() as s:
        first = set(s.scalars(select(SelectionRow.selector).where(SelectionRow.run_id == run.id, SelectionRow.cycle == 0)))
    assert first == {"power-diverse"}  # the epistemic preset's selector, not its model-free cold start
    assert [c.n_labeled for c in cycles] == [0, 10, 20, 30]

    # the same command again continues nothing and encodes nothing
    before = folder_snapshot(work / "p" / "vlm-features")
    code, out = _invoke(work, "run", "--scorer", "bayesvlm", "--model-dir", f"models/{kind}", "--class-prompts",
                        PROMPT, "--budget", "30", "--json")
    assert code == 0, out
    assert json.loads(out)[0]["cycles"] == len(cycles)
    assert folder_snapshot(work / "p" / "vlm-features") == before


def test_bayesvlm_composes_with_acquisitions_and_selectors(vlm_home: Path, tmp_path: Path) -> None:
    """Every acquisition the scorer's Prediction feeds and every selector run end to end; the
    posterior-driven ones it cannot feed are refused by name, leaving the project unchanged."""
    work = _project(vlm_home, tmp_path)
    model = ["--model-dir", "models/clip", "--class-prompts", PROMPT, "--budget", "20"]
    for args in (["--strategy", "margin"], ["--strategy", "entropy", "--initial", "5"],
                 ["--strategy", "power", "-o", "score=mi"], ["--strategy", "kcenter", "-o", "score=embed"],
                 ["--strategy", "badge"], ["--strategy", "coldstart"], ["--strategy", "topk", "--batch-size", "1",
                                                                        "--budget", "3"]):
        code, out = _invoke(work, "run", *model, *args, "--json")
        assert code == 0, (args, out)
        row = json.loads(out)[0]
        assert row["status"] == "complete" and row["n_labeled"] == (3 if "topk" in args else 20), args
    before = folder_snapshot(work / "p")
    for acq in ("bald", "epig", "decision-flip"):
        code, out = _invoke(work, "run", *model, "--acquisition", acq)
        assert code == 2 and out.strip().count("\n") == 0, out
        assert f"acquisition {acq!r} needs" in out and "bayesvlm" in out
    assert folder_snapshot(work / "p") == before


def test_bayesvlm_refusals_are_one_line_and_change_nothing(vlm_home: Path, tmp_path: Path) -> None:
    work = _project(vlm_home, tmp_path)
    (work / "empty").mkdir()
    before = folder_snapshot(work / "p")
    cases = [
        (["--model-dir", "models/nope"], "does not exist"),
        (["--model-dir", "empty"], "neither a Hugging Face model"),
        (["--scorer", "bayesvlm"], "needs --model-dir"),
        (["--model-dir", "models/clip", "--class-prompts", "no slot"], "must contain {}"),
        (["--scorer", "vbll", "--model-dir", "models/clip"], "--model-dir is the bayesvlm scorer's model"),
        (["--class-prompts", "a {}"], "--class-prompts is the bayesvlm scorer's"),
    ]
    for args, msg in cases:
        code, out = _invoke(work, "run", "--budget", "20", *args)
        assert code == 2 and msg in out and out.strip().count("\n") == 0, (args, out)
    assert folder_snapshot(work / "p") == before
    # a project without images
    from conftest import digits_frame

    digits_frame(60).write_csv(work / "d.csv")
    assert _invoke(work, "init", "d.csv", "--id-col", "id", "--label-col", "label", "--hide-labels", project="q")[0] == 0
    before_q = folder_snapshot(work / "q")
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "models/clip", project="q")
    assert code == 2 and "has no image column" in out and out.strip().count("\n") == 0, out
    assert folder_snapshot(work / "q") == before_q


def test_missing_image_files_are_named_before_anything_is_written(vlm_home: Path, tmp_path: Path) -> None:
    import tomli_w
    import tomllib

    work = _project(vlm_home, tmp_path)
    shutil.copytree(vlm_home / "img", work / "img")
    shutil.copy(vlm_home / "data.csv", work / "data.csv")
    toml = work / "p" / "alkit.toml"  # the project's images now come from its own data folder
    cfg = tomllib.loads(toml.read_text())
    cfg["project"]["source"] = str(work / "data.csv")
    toml.write_text(tomli_w.dumps(cfg))
    first = sorted((work / "img").iterdir())[0]
    first.unlink()
    before = folder_snapshot(work / "p")
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "models/clip")
    assert code == 2 and "image files are missing" in out and first.name in out, out
    assert folder_snapshot(work / "p") == before


def test_an_alkit_dual_encoder_over_the_frozen_encoders_runs(vlm_home: Path, tmp_path: Path) -> None:
    """The alkit layout (linear projections over EfficientNet-Lite0 and MiniLM, as
    examples/dual_encoder_fashion saves its aligned model): its image features are the frozen
    encoder's, standardised with the directory's statistics; the run works end to end."""
    pytest.importorskip("sentence_transformers")
    from alkit.config import load_project
    from alkit.models.dual_encoder_dir import save_alkit_dual_encoder
    from alkit.pools.features import FeatureReader

    work = _project(vlm_home, tmp_path)
    rng = np.random.default_rng(0)
    mean, std = rng.normal(size=1280) * 0.01, 1.0 + rng.random(1280)
    save_alkit_dual_encoder(work / "aligned", rng.normal(size=(8, 1280)) / 36.0, rng.normal(size=(8, 384)) / 20.0,
                            20.0, mean, std, image_size=224)
    code, out = _invoke(work, "run", "--model-dir", "aligned", "--class-prompts", PROMPT, "--budget", "20", "--json")
    assert code == 0, out
    row = json.loads(out)[0]
    assert row["scorer"] == "bayesvlm" and row["n_labeled"] == 20
    proj = load_project(work / "p")
    keys = np.arange(proj.config.n_items)
    (vlm_file,) = (work / "p" / "vlm-features").glob("alkit-*.parquet")
    X_vlm = FeatureReader(vlm_file).take(keys)
    X_init = FeatureReader(proj.features_path).take(keys)  # what init stored: EfficientNet-Lite0 at 224 px
    np.testing.assert_allclose(X_vlm, (X_init - mean) / std, rtol=1e-4, atol=1e-4)


def test_model_dir_black_box_cases(vlm_home: Path, tmp_path: Path) -> None:
    """A directory without tokenizer files loaded an empty tokenizer (every class prompt the same tokens: a run
    that never learned, NLL ln C); a run refused for another --model-dir had encoded the pool into vlm-features/
    first; a model replaced between cycles was taken on without a word; a file given as --model-dir was called
    missing, and --backbone beside bayesvlm named an option no one typed (black-box checks)."""
    work = _project(vlm_home, tmp_path)
    notok = work / "notok"
    shutil.copytree(vlm_home / "models" / "clip", notok)
    for f in notok.iterdir():
        if "token" in f.name or f.name in ("vocab.json", "merges.txt", "special_tokens_map.json"):
            f.unlink()
    before = folder_snapshot(work / "p")
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "notok", "--class-prompts", PROMPT)
    assert code == 2 and "as the same tokens" in out and out.strip().count("\n") == 0, out
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "p/alkit.toml")
    assert code == 2 and "is a file" in out, out
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "models/clip", "--backbone", "x.py:net")
    assert code == 2 and "--backbone: scorer 'bayesvlm' reads its own model's image features" in out, out
    assert folder_snapshot(work / "p") == before
    # a run of one model; the same name with another model is refused before any image is encoded
    own = work / "own"
    shutil.copytree(vlm_home / "models" / "clip", own)
    code, out = _invoke(work, "run", "--budget", "10", "--model-dir", "own", "--class-prompts", PROMPT, "--name", "r")
    assert code == 0, out
    encoded = sorted(p.name for p in (work / "p" / "vlm-features").iterdir())
    code, out = _invoke(work, "run", "--budget", "20", "--model-dir", "models/siglip", "--class-prompts", PROMPT,
                        "--name", "r")
    assert code == 2 and "exists with" in out, out
    assert sorted(p.name for p in (work / "p" / "vlm-features").iterdir()) == encoded
    # the model in the run's folder replaced: the resume stops, naming it
    save_tiny_dual_encoder(own, "siglip")
    code, out = _invoke(work, "run", "--resume", "r", "--budget", "20")
    assert code == 2 and "another version of the model --model-dir names" in out, out
