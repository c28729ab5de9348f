"""The inspector's large channel view and its overlay on the picture.

Colours are checked against matplotlib's own colormaps, looked up here, not through vizhooks.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest
import torch
from PIL import Image

from vizhooks.render.figures import CMAPS, channel_image, channel_overlay, get_colormap, signed_overlay


def mpl_rgb(cmap: str, value: float) -> np.ndarray:
    """The colour matplotlib itself gives ``value`` (0..1) in ``cmap``, as uint8 RGB."""
    return np.asarray(matplotlib.colormaps[cmap](value, bytes=True)[:3], dtype=np.uint8)


def rgb(image: Image.Image) -> np.ndarray:
    return np.asarray(image, dtype=np.uint8)


def random_picture(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, size=(height, width, 3), dtype=np.uint8), "RGB")


def random_channel(h: int, w: int, seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(h, w)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# channel_image


@pytest.mark.parametrize(("size", "shape"), [((96, 64), (7, 7)), ((64, 96), (7, 7)), ((224, 224), (14, 14)),
                                             ((301, 117), (5, 9)), ((7, 7), (7, 7)), ((10, 3), (28, 28))])
def test_channel_image_size_and_mode(size, shape):
    im = channel_image(random_channel(*shape), size)
    assert isinstance(im, Image.Image)
    assert im.mode == "RGB"
    assert im.size == size  # (width, height), as PIL reports it
    assert rgb(im).shape == (size[1], size[0], 3)


def test_channel_image_accepts_tensor_like_array():
    arr = random_channel(6, 8, seed=4)
    from_numpy = rgb(channel_image(arr, (40, 30), "magma"))
    from_tensor = rgb(channel_image(torch.from_numpy(arr.copy()), (40, 30), "magma"))
    np.testing.assert_array_equal(from_numpy, from_tensor)


@pytest.mark.parametrize("cmap", ["viridis", "gray", "magma"])
def test_hot_pixel_top_left(cmap):
    channel = np.zeros((7, 7), dtype=np.float32)
    channel[0, 0] = 5.0
    out = rgb(channel_image(channel, (70, 70), cmap)).astype(np.int32)
    top, bottom = mpl_rgb(cmap, 1.0).astype(np.int32), mpl_rgb(cmap, 0.0).astype(np.int32)
    span = np.abs(top - bottom).sum()
    # The corner pixel shows (nearly) the top of the scale ...
    assert np.abs(out[0, 0] - top).sum() < 0.1 * span
    # ... the top-left tile as a whole is closer to the top colour than to the bottom one ...
    corner = out[:8, :8].reshape(-1, 3).mean(axis=0)
    assert np.abs(corner - top).sum() < np.abs(corner - bottom).sum()
    # ... and everything far from it is exactly the bottom colour.
    np.testing.assert_array_equal(out[30:, :], np.broadcast_to(bottom, out[30:, :].shape))
    np.testing.assert_array_equal(out[:, 30:], np.broadcast_to(bottom, out[:, 30:].shape))


def test_hot_pixel_brightest_point_is_top_left():
    channel = np.zeros((7, 7), dtype=np.float32)
    channel[0, 0] = 1.0
    grey = rgb(channel_image(channel, (70, 70), "gray"))[..., 0].astype(np.int32)
    y, x = np.unravel_index(grey.argmax(), grey.shape)
    assert y < 10 and x < 10
    assert grey[:10, :10].mean() > 100
    assert grey[:10, :10].mean() > 20 * max(grey[-10:, -10:].mean(), grey[:10, -10:].mean(),
                                            grey[-10:, :10].mean(), 1.0)


def test_hot_pixel_elsewhere_moves_the_bright_region():
    channel = np.zeros((7, 7), dtype=np.float32)
    channel[6, 3] = 1.0  # bottom row, middle column
    grey = rgb(channel_image(channel, (70, 70), "gray"))[..., 0].astype(np.int32)
    y, x = np.unravel_index(grey.argmax(), grey.shape)
    assert y >= 60 and 30 <= x < 40
    assert grey[:10, :10].max() == 0


def test_upsampling_is_smooth_not_blocky():
    # A 4-step ramp upsampled 10x: smooth (bicubic) interpolation gives many grey levels that
    # rise left to right; blocky (nearest) upsampling would give only the 4 original levels.
    ramp = np.tile(np.arange(4, dtype=np.float32), (4, 1))
    row = rgb(channel_image(ramp, (40, 40), "gray"))[20, :, 0].astype(np.int32)
    assert len(np.unique(row)) >= 12
    assert row[0] == 0 and row[-1] == 255
    assert (np.diff(row) >= -2).all()  # rising, allowing for tiny interpolation ripple


def test_channel_stretched_to_its_own_range():
    # Offset and scale do not matter: each channel is stretched to its own min..max.
    base = random_channel(6, 6, seed=9)
    a = rgb(channel_image(base, (48, 48))).astype(np.int32)
    b = rgb(channel_image(base * 1000 - 7, (48, 48))).astype(np.int32)
    assert np.abs(a - b).max() <= 1  # float rounding only
    # The top and the bottom colour are both reached when the map is not upsampled.
    flat = rgb(channel_image(base, (6, 6))).reshape(-1, 3)
    assert (flat == mpl_rgb("viridis", 1.0)).all(axis=1).any()
    assert (flat == mpl_rgb("viridis", 0.0)).all(axis=1).any()


@pytest.mark.parametrize("value", [0.0, 3.5, -2.0, 1e6])
@pytest.mark.parametrize("cmap", ["viridis", "coolwarm"])
def test_constant_channel_is_lowest_colour(value, cmap):
    channel = np.full((5, 8), value, dtype=np.float32)
    out = rgb(channel_image(channel, (40, 25), cmap))
    assert out.shape == (25, 40, 3)
    np.testing.assert_array_equal(out, np.broadcast_to(mpl_rgb(cmap, 0.0), out.shape))


def test_constant_tensor_channel_no_nan():
    out = rgb(channel_image(torch.full((4, 4), 2.0), (16, 16)))
    # A NaN would be drawn in the colormap's "bad" colour (white), not the lowest colour.
    assert not (out == 255).all(axis=-1).any()
    np.testing.assert_array_equal(out, np.broadcast_to(mpl_rgb("viridis", 0.0), out.shape))


@pytest.mark.parametrize("shape", [(7,), (1, 7, 7), (1, 1, 7, 7), ()])
def test_channel_image_wrong_ndim(shape):
    with pytest.raises(ValueError):
        channel_image(np.zeros(shape, dtype=np.float32), (32, 32))
    with pytest.raises(ValueError):
        channel_image(torch.zeros(shape), (32, 32))


# --------------------------------------------------------------------------------------------
# channel_overlay


@pytest.fixture
def scene():
    picture = random_picture(60, 40)
    channel = random_channel(5, 7, seed=2)
    return picture, channel


def test_overlay_alpha_zero_is_picture(scene):
    picture, channel = scene
    out = channel_overlay(picture, channel, alpha=0.0)
    assert out.mode == "RGB" and out.size == picture.size
    np.testing.assert_array_equal(rgb(out), rgb(picture))


@pytest.mark.parametrize("cmap", ["viridis", "gray", "RdBu_r"])
def test_overlay_alpha_one_is_channel_image(scene, cmap):
    picture, channel = scene
    out = channel_overlay(picture, channel, alpha=1.0, cmap=cmap)
    np.testing.assert_array_equal(rgb(out), rgb(channel_image(channel, picture.size, cmap)))


def test_overlay_alpha_half_is_mean(scene):
    picture, channel = scene
    out = rgb(channel_overlay(picture, channel, alpha=0.5)).astype(np.int32)
    heat = rgb(channel_image(channel, picture.size)).astype(np.int32)
    mean = np.round((rgb(picture).astype(np.int32) + heat) / 2)
    assert out.shape == mean.shape
    assert np.abs(out - mean).max() <= 1
    # It really blends: not just one of the two.
    assert not np.array_equal(out, rgb(picture)) and not np.array_equal(out, heat)


def test_overlay_default_alpha_is_half(scene):
    picture, channel = scene
    np.testing.assert_array_equal(rgb(channel_overlay(picture, channel)),
                                  rgb(channel_overlay(picture, channel, alpha=0.5)))


def test_overlay_of_non_rgb_picture():
    grey = random_picture(30, 20, seed=5).convert("L")
    channel = random_channel(4, 4)
    out = channel_overlay(grey, channel, alpha=0.0)
    assert out.mode == "RGB"
    np.testing.assert_array_equal(rgb(out), rgb(grey.convert("RGB")))


@pytest.mark.parametrize("alpha", [-0.01, 1.01, -1.0, 2.0, float("nan")])
def test_overlay_alpha_out_of_range(scene, alpha):
    picture, channel = scene
    with pytest.raises(ValueError):
        channel_overlay(picture, channel, alpha=alpha)


@pytest.mark.parametrize("shape", [(7,), (1, 5, 7), (1, 1, 5, 7)])
def test_overlay_wrong_channel_ndim(scene, shape):
    picture, _ = scene
    with pytest.raises(ValueError):
        channel_overlay(picture, np.zeros(shape, dtype=np.float32), alpha=0.5)


# --------------------------------------------------------------------------------------------
# colormaps


@pytest.mark.parametrize("name", CMAPS)
def test_every_offered_colormap_is_real(name):
    assert name in matplotlib.colormaps
    ours, theirs = get_colormap(name), matplotlib.colormaps[name]
    xs = np.linspace(0, 1, 17)
    np.testing.assert_array_equal(ours(xs, bytes=True), theirs(xs, bytes=True))
    # Separators (NaN, "bad" pixels) are drawn white.
    assert tuple(ours(np.nan)) == (1.0, 1.0, 1.0, 1.0)


def test_colormap_menu():
    assert len(CMAPS) == len(set(CMAPS)) >= 4
    assert "viridis" in CMAPS and "gray" in CMAPS


@pytest.mark.parametrize("name", ["nope", "Viridis_", "", "viridis "])
def test_unknown_colormap(name):
    with pytest.raises(ValueError):
        get_colormap(name)


def test_channel_image_unknown_colormap():
    with pytest.raises(ValueError):
        channel_image(random_channel(4, 4), (8, 8), "nope")


def test_signed_overlay_puts_zero_at_the_middle_and_the_signs_on_one_scale():
    """A relevance map: +2 is full red, -1 half way to blue, 0 white (bwr's middle), at alpha 1; the
    picture itself at alpha 0."""
    heat = torch.tensor([[2.0, 0.0], [-1.0, 0.0]])
    picture = random_picture(2, 2)
    got = rgb(signed_overlay(picture, heat, alpha=1.0))
    for (i, j), value in {(0, 0): 1.0, (0, 1): 0.5, (1, 0): 0.25}.items():
        assert np.abs(got[i, j].astype(int) - mpl_rgb("bwr", value).astype(int)).max() <= 1, (i, j)
    assert np.array_equal(rgb(signed_overlay(picture, heat, alpha=0.0)), rgb(picture))
    assert np.array_equal(rgb(signed_overlay(picture, torch.zeros(2, 2), alpha=1.0))[0, 0], mpl_rgb("bwr", 0.5))
    with pytest.raises(ValueError, match="alpha"):
        signed_overlay(picture, heat, alpha=1.5)
