"""The default backbone depth follows the inputs: a residual block on raw features, none on a
pretrained encoder's embeddings (a list column, --text-col, --image-col) or on the image stem's
pooled maps of small images (--image-shape below 16 x 16); an explicit depth wins."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import torch
from conftest import digits_frame

from alkit.config import load_project
from alkit.learners.mc_dropout import MCDropoutLearner
from alkit.learners.vbll import VBLLLearner
from alkit.loop import ActiveLoop
from alkit.models.backbone import BackboneConfig, InputSpec
from alkit.pools.ingest import InitOptions, init_project


def test_depth_for_inputs() -> None:
    emb, raw = InputSpec(embedding=True), InputSpec()
    assert BackboneConfig().depth_for(emb) == 0 and BackboneConfig().depth_for(raw) == 1
    assert BackboneConfig().depth_for(None) == 1
    assert BackboneConfig(depth=2).depth_for(emb) == 2 and BackboneConfig(depth=0).depth_for(raw) == 0
    small = InputSpec(image_shape=(1, 8, 8), patch_filters=np.zeros((4, 1, 3, 3), np.float32))
    large = InputSpec(image_shape=(1, 28, 28), patch_filters=np.zeros((4, 1, 5, 5), np.float32))
    assert BackboneConfig().depth_for(small) == 0 and BackboneConfig(depth=1).depth_for(small) == 1
    assert BackboneConfig().depth_for(large) == 1  # kept: the OOD scores on 28 x 28 needed the block
    assert BackboneConfig().depth_for(InputSpec(image_shape=(1, 8, 8))) == 1  # no stem: raw pixels


def _project(tmp_path: Path, as_list: bool) -> Path:
    df = digits_frame(120)
    px = [c for c in df.columns if c.startswith("px")]
    opts = InitOptions(id_col="id", label_col="label", hide_labels=True, progress=False)
    if as_list:
        df = df.select("id", "label", pl.concat_list(px).alias("emb"))
        opts.feature_col = "emb"
    path, root = tmp_path / f"d{int(as_list)}.parquet", tmp_path / f"p{int(as_list)}"
    df.write_parquet(path)
    init_project(path, root, opts)
    return root


def test_list_column_projects_fit_a_block_free_network(tmp_path: Path) -> None:
    """The loop marks a list-column pool as embeddings; learners built on it have no residual
    block unless asked for one.  MC dropout takes a block to drop in on raw features only; on
    embeddings it drops out the block-free network's features, so its passes still differ."""
    for as_list, blocks in ((True, 0), (False, 1)):
        spec = ActiveLoop(load_project(_project(tmp_path, as_list))).input_spec()
        assert spec.embedding is as_list
        X = np.random.default_rng(0).normal(size=(40, 64)).astype(np.float32)
        y = np.arange(40) % 10
        vbll = VBLLLearner("classification", 10, input=spec)
        vbll.fit(X, y, seed=0)
        assert len(vbll.backbone.blocks) == blocks
        deep = VBLLLearner("classification", 10, input=spec, depth=2)
        deep.fit(X, y, seed=0)
        assert len(deep.backbone.blocks) == 2
        mcd = MCDropoutLearner("classification", 10, input=spec, T=2)
        mcd.fit(X, y, seed=0)
        assert len(mcd.net.backbone.blocks) == blocks
        assert mcd.masks_T_B_w.shape == ((2, 1, mcd.net.backbone.out_dim) if as_list else (2, 1, 128))
        member_probs = mcd.predict(X).extras["member_probs_n_M_C"]
        assert not torch.allclose(member_probs[:, 0], member_probs[:, 1])  # the dropout reaches the outputs


def test_image_backbone_pools_to_about_seven_by_seven_and_by_at_least_two() -> None:
    """PatchConv.pool_for: 28 x 28 -> 4 (7 x 7 maps, as before), 8 x 8 -> 2 (4 x 4 maps, not 64
    unpooled positions), never more than the image; patch_for: 5 x 5 filters from 16 x 16 up, 3 x 3
    below.  An 8 x 8 image spec builds a conv stem of 2 x 9 filters (every component of a 3 x 3
    patch) x 4 x 4 = 288 features that predicts; an explicit pool and patch override the rules.
    The stem's filters whiten the pool's mean-removed patches (orthogonal, unit variance along the
    leading components) and its features equal a per-position loop: the standardised, zero-padded
    patch against each filter, ReLU of both signs, then the average over pool x pool cells."""
    import numpy as np
    import torch

    from alkit.models.backbone import BackboneConfig, ConvBackbone, PatchConv, build_backbone, pool_input_spec

    assert PatchConv.pool_for((1, 28, 28)) == 4 and PatchConv.pool_for((1, 8, 8)) == 2
    assert PatchConv.pool_for((3, 32, 32)) == 5 and PatchConv.pool_for((1, 1, 9)) == 1
    assert PatchConv.patch_for((1, 28, 28)) == 5 and PatchConv.patch_for((1, 8, 8)) == 3
    X = np.random.default_rng(0).random((300, 64)).astype(np.float32)
    for options, width in (({}, 2 * 9 * 4 * 4), ({"pool": 1, "patch": 5}, 2 * 16 * 8 * 8)):
        spec = pool_input_spec(X, (1, 8, 8), **options)
        net = build_backbone(64, spec, torch.as_tensor(X), BackboneConfig())
        assert isinstance(net, ConvBackbone) and net.conv.out_dim == width == len(spec.conv_mean_f)
        assert len(net.blocks) == 0  # the stem's maps are learnt features: no residual block
        assert net(torch.as_tensor(X[:5])).shape == (5, net.out_dim)
        conv = net.conv
        x5 = torch.as_tensor(X[:5]).requires_grad_()  # the in-place ReLU is skipped where autograd needs z
        out = conv(x5)
        out.sum().backward()
        assert torch.allclose(out, conv(torch.as_tensor(X[:5])), atol=1e-6) and x5.grad.abs().sum() > 0
        W = conv.weight.double().numpy()  # (k, 1, p, p)
        k, p, pool = W.shape[0], W.shape[-1], conv.pool
        imgs = (X.astype(np.float64).reshape(-1, 8, 8) - float(conv.pixel_mean)) / float(conv.pixel_std)
        # whitening: every p x p patch of the pool (300 images: all of them), its own mean removed
        P = np.stack([imgs[:, i : i + p, j : j + p].reshape(len(imgs), -1)
                      for i in range(9 - p) for j in range(9 - p)], 1).reshape(-1, p * p)
        P = P - P.mean(1, keepdims=True)
        Wf = W.reshape(k, -1)
        white = Wf @ np.cov(P.T) @ Wf.T
        np.testing.assert_allclose(white - np.diag(np.diag(white)), 0.0, atol=1e-4)  # decorrelated
        assert np.all(np.diag(white) <= 1 + 1e-4) and np.all(np.diag(white)[: k // 2] > 0.9)  # unit variance
        # the features of two images against the per-position loop
        pad = np.pad(imgs[:2], ((0, 0), (p // 2, p // 2), (p // 2, p // 2)))
        z = np.zeros((2, k, 8, 8))
        for i in range(8):
            for j in range(8):
                z[:, :, i, j] = pad[:, i : i + p, j : j + p].reshape(2, -1) @ Wf.T
        maps = np.concatenate([np.maximum(z, 0), np.maximum(-z, 0)], 1)
        pooled = maps.reshape(2, 2 * k, 8 // pool, pool, 8 // pool, pool).mean((3, 5)).reshape(2, -1)
        with torch.no_grad():
            got = conv(torch.as_tensor(X[:2])).double().numpy()
        np.testing.assert_allclose(got, pooled, rtol=1e-4, atol=1e-4 * np.abs(pooled).max())


def test_mc_dropout_takes_the_plain_networks_depth_on_every_input() -> None:
    """MC dropout keeps the plain MLP's depth (depth_for): a block on raw features, none on the stem of
    small images, where its dropout goes on the features; an explicit depth wins."""
    from alkit.models.backbone import pool_input_spec

    X = np.random.default_rng(0).random((80, 64)).astype(np.float32)
    y = np.arange(80) % 4
    for spec, blocks in ((pool_input_spec(X), 1), (pool_input_spec(X, (1, 8, 8)), 0)):
        mcd = MCDropoutLearner("classification", 4, input=spec, T=3)
        mcd.fit(X, y, seed=0)
        assert len(mcd.net.backbone.blocks) == blocks
        assert mcd.masks_T_B_w.shape[1] == 1
    deep = MCDropoutLearner("classification", 4, input=pool_input_spec(X, (1, 8, 8)), T=3, depth=1)
    deep.fit(X, y, seed=0)
    assert len(deep.net.backbone.blocks) == 1
