"""The overview (vizhooks.network.overview): every conv (or block) in network order, each layer's k strongest
channels checked against an ordinary capture, its thumbnails against adaptive average pooling of
those maps, the logits of the same pass, stages where the resolution changes, no hook left; its
picture (vizhooks.render.figures.overview_png) is drawn tile by tile from those numbers."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image

import vizhooks as vz
from tests.helpers import count_hooks
from vizhooks.models.layers import block_layers, conv_layers
from vizhooks.network.overview import overview, overview_layers, stages, thumbnail_size
from vizhooks.render.figures import channel_levels, colormap_lut, overview_png


@pytest.fixture(scope="module")
def x(resnet18):
    return resnet18.preprocess(vz.load_image("sample_images/chelsea.jpg"), 128)


def test_every_conv_in_network_order_with_its_strongest_channels(resnet18, x):
    ov = overview(resnet18.model, x, k=5, tile=32)
    names = [info.name for info in conv_layers(resnet18.model)]
    assert [row.name for row in ov.rows] == names and len(names) == 20
    captured = vz.capture(resnet18.model, x, names)  # an ordinary capture of every conv, the oracle
    for row in ov.rows:
        maps = captured[row.name]
        means = maps[0].mean(dim=(1, 2))
        assert row.channels == maps.shape[1] and row.hw == tuple(maps.shape[2:])
        assert list(row.picked) == torch.topk(means, 5).indices.tolist()
        assert np.allclose(row.means, means[list(row.picked)].numpy(), atol=1e-5)
        size = thumbnail_size(ov.input_hw, 32)
        want = F.adaptive_avg_pool2d(maps[:, list(row.picked)], size)[0] if maps.shape[2] >= size[0] else \
            F.interpolate(maps[:, list(row.picked)], size=size, mode="nearest")[0]
        np.testing.assert_allclose(row.tiles, want.numpy(), rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        assert torch.allclose(ov.logits, resnet18.model(x), atol=1e-5)
    assert count_hooks(resnet18.model) == 0


def test_a_given_ranking_picks_the_channels_and_a_ranking_of_the_wrong_length_is_left_out(resnet18, x):
    """``ranking``: the first k of each layer's given order are shown, their tiles those channels' maps; a
    layer whose ranking does not count its channels keeps the mean order."""
    names = ["conv1", "layer3.1.conv2", "layer4.1.conv2"]
    reversed_order = {n: list(range(c - 1, -1, -1)) for n, c in (("conv1", 64), ("layer3.1.conv2", 256))}
    ov = overview(resnet18.model, x, names, k=4, tile=16,
                  ranking={**reversed_order, "layer4.1.conv2": [0, 1, 2]})
    captured = vz.capture(resnet18.model, x, names)
    for row in ov.rows:
        maps = captured[row.name]
        if row.name in reversed_order:
            assert list(row.picked) == reversed_order[row.name][:4]
        else:
            assert list(row.picked) == torch.topk(maps[0].mean(dim=(1, 2)), 4).indices.tolist()
        size = thumbnail_size(ov.input_hw, 16)
        want = F.adaptive_avg_pool2d(maps[:, list(row.picked)], size)[0] if maps.shape[2] >= size[0] else \
            F.interpolate(maps[:, list(row.picked)], size=size, mode="nearest")[0]
        np.testing.assert_allclose(row.tiles, want.numpy(), rtol=1e-4, atol=1e-5)


def test_stages_begin_where_the_resolution_changes(resnet18, x):
    rows = overview(resnet18.model, x, k=2, tile=16).rows
    parts = stages(rows)
    assert [b - a for a, b in parts] == [1, 4, 5, 5, 5]  # conv1, then the four ResNet stages
    assert all(rows[a].hw == rows[b - 1].hw for a, b in parts)
    assert all(rows[b - 1].hw != rows[b].hw for _, b in parts[:-1])


@pytest.mark.slow
def test_attention_models_show_their_blocks_as_maps():
    bundle = vz.load_model("vit_b_16", weights="none", device="cpu")
    x = bundle.preprocess(vz.load_image("sample_images/chelsea.jpg"))
    ov = overview(bundle.model, x, k=3, tile=16)
    assert [row.name for row in ov.rows] == [info.name for info in block_layers(bundle.model)]
    assert overview_layers(bundle.model) == [row.name for row in ov.rows]
    assert all(row.hw == (14, 14) and row.channels == 768 for row in ov.rows)  # 196 tokens, class token left out


def test_no_hook_is_left_after_an_error(resnet18, x, monkeypatch):
    def broken(*args):
        raise RuntimeError("boom")

    handle = resnet18.model.layer3.register_forward_hook(broken)
    try:
        with pytest.raises(RuntimeError, match="boom"):
            overview(resnet18.model, x)
    finally:
        handle.remove()
    assert count_hooks(resnet18.model) == 0
    with pytest.raises(ValueError, match="at least 1"):
        overview(resnet18.model, x, k=0)
    with pytest.raises(ValueError, match="one picture"):
        overview(resnet18.model, torch.cat([x, x]))


def test_the_picture_is_the_tiles_in_the_grids_colours(resnet18, x):
    ov = overview(resnet18.model, x, k=4, tile=40)
    png = overview_png(ov.rows, [("tabby", 0.5), ("虎斑猫", 0.25)], "magma", label_width=300)
    picture = Image.open(io.BytesIO(png))
    assert picture.mode == "P"  # the colormap is the palette, as the grids'
    image = np.asarray(picture.convert("RGB"))
    th, tw = ov.rows[0].tiles.shape[-2:]
    margin, band, gap = 12, 26, 4
    assert image.shape[1] == 2 * margin + 300 + 4 * (tw + gap)
    # the first row's first tile sits after the first stage's band, in the label column's right
    top, left = margin + band, margin + 300
    tile = image[top:top + th, left:left + tw]
    want = colormap_lut("magma")[channel_levels(ov.rows[0].tiles)[0]]
    below_tag = slice(18, th)  # the channel number covers the tile's top-left corner
    np.testing.assert_array_equal(tile[below_tag, 30:], want[below_tag, 30:])
    assert tuple(image[margin + band // 2, margin + 200]) == (20, 20, 20)  # the rule where the first stage begins
    assert tuple(image[margin + band + th + gap + band // 2, margin + 200]) == (255, 255, 255)  # none in a stage
    with pytest.raises(ValueError):
        overview_png([])
