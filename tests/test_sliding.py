"""vizhooks.network.sliding: the window sliding over the photo (first conv) and over a pooled channel, checked
against answers found another way: the layer's map from create_feature_extractor, its windows from
F.unfold, a pool's value as the max / mean of the window written out here, and the encoded GIF and
MP4 decoded again (Pillow, PyAV)."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor

from tests.helpers import count_hooks
from vizhooks.network.sliding import MAX_FRAMES, RED, pool_at, slide, slide_positions
from vizhooks.video import encode_pages


@pytest.fixture(scope="module")
def net(resnet18) -> nn.Module:
    return resnet18.model


@pytest.fixture(scope="module")
def x() -> torch.Tensor:
    return torch.randn(1, 3, 64, 80, generator=torch.Generator().manual_seed(0))


def _io(model: nn.Module, x: torch.Tensor, before: str, layer: str) -> tuple[torch.Tensor, torch.Tensor]:
    """The layer's input (the output of the node before it, or x) and output, by FX."""
    nodes = {layer: layer} if before == "x" else {before: "in", layer: layer}
    with torch.no_grad():
        got = create_feature_extractor(model.eval(), return_nodes=nodes)(x)
    return (x if before == "x" else got["in"])[0], got[layer][0]


@pytest.mark.parametrize(("layer", "before", "channel"), [("conv1", "x", 5), ("maxpool", "relu", 7)])
def test_last_frame_holds_the_layers_own_map_and_the_windows_are_unfolds(net, x, layer, before, channel):
    s = slide(net, x, layer, channel, max_frames=40)
    inp, out = _io(net, x, before, layer)
    assert torch.allclose(s.filled(len(s) - 1), out[channel], atol=1e-4)
    assert s.filled(0).isnan().sum() == out[channel].numel() - 1  # only the first place is shown at first
    module = net.get_submodule(layer)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = (s.window.kernel_size, s.window.stride, s.window.padding,
                                              s.window.dilation)
    assert (kh, kw, sh, ph) == ((7, 7, 2, 3) if layer == "conv1" else (3, 3, 2, 1))
    plane = inp if layer == "conv1" else inp[channel:channel + 1]
    columns = F.unfold(plane[None], (kh, kw), dilation=(dh, dw), padding=(ph, pw), stride=(sh, sw))[0]
    h, w = s.output_hw
    assert columns.shape[1] == h * w == out.shape[-2] * out.shape[-1]
    c_in, h_in, w_in = plane.shape
    for t in range(len(s)):
        rows, cols = s.taps(t)
        cut = torch.zeros(c_in, kh, kw)
        for u, r in enumerate(rows):
            for v, c in enumerate(cols):
                if 0 <= r < h_in and 0 <= c < w_in:
                    cut[:, u, v] = plane[:, r, c]
        row, col = s.positions[t]
        assert torch.equal(cut.flatten(), columns[:, row * w + col]), (layer, t)
    if isinstance(module, nn.MaxPool2d):  # what unfold pads with (0) never wins a max after a ReLU
        assert torch.allclose(columns.max(0).values.reshape(h, w), out[channel], atol=1e-6)


def test_the_red_box_in_a_frame_is_the_window(net, x):
    s = slide(net, x, "conv1", 0, max_frames=30)
    (s_in, _), (y0, x0) = s.scale, s.input_origin
    for t in (0, 7, len(s) - 1):
        rows, cols = s.taps(t)
        left_panel = s.pages[t][:, : s.output_origin[1] - 4]
        ys, xs = np.nonzero(left_panel == RED)
        # a 2-pixel frame just outside the window's pixels
        assert (ys.min() + 2, ys.max() - 2 + 1) == (y0 + rows[0] * s_in, y0 + (rows[-1] + 1) * s_in)
        assert (xs.min() + 2, xs.max() - 2 + 1) == (x0 + cols[0] * s_in, x0 + (cols[-1] + 1) * s_in)


@pytest.mark.parametrize("kind", ["max", "avg"])
def test_a_pools_value_is_the_max_or_mean_of_its_window(kind, x):
    pool = nn.MaxPool2d(3, stride=2, padding=1) if kind == "max" else nn.AvgPool2d(3, stride=2, padding=1)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), pool).eval()
    torch.manual_seed(1)
    with torch.no_grad():
        inp = model[0](x)[0]
    padded = F.pad(inp, (1, 1, 1, 1), value=float("-inf") if kind == "max" else 0.0)
    s = slide(model, x, "1", 2, max_frames=25)
    for t, (row, col) in enumerate(s.positions):
        window = padded[2, row * 2: row * 2 + 3, col * 2: col * 2 + 3]
        expected = window.max() if kind == "max" else window.sum() / 9  # count_include_pad: 9 taps
        assert s.value(t) == pytest.approx(float(expected), abs=1e-5)
        step = pool_at(model, x, "1", 2, row, col)
        assert step.computed == pytest.approx(float(expected), abs=1e-5)
        assert step.own == pytest.approx(s.value(t), abs=1e-6)
    step = pool_at(model, x, "1", 2, 0, 0)
    assert step.padded.sum() == 5 and (step.divisor == 9 if kind == "avg" else step.divisor == 0)
    assert count_hooks(model) == 0


def test_an_average_without_the_padding_and_in_ceil_mode_divides_like_torch(x):
    model = nn.Sequential(nn.AvgPool2d(3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)).eval()
    s = slide(model, x, "0", 1)
    with torch.no_grad():
        out = model(x)[0, 1]
    assert torch.allclose(s.filled(len(s) - 1), out, atol=1e-6)
    h, w = s.output_hw
    for row, col in [(0, 0), (h - 1, w - 1), (3, w - 1)]:
        step = pool_at(model, x, "0", 1, row, col)
        assert step.computed == pytest.approx(float(out[row, col]), abs=1e-5)


def test_frames_are_capped_row_major_and_end_at_the_last_place():
    places = slide_positions(112, 112)
    assert len(places) == MAX_FRAMES
    assert places[:3] == [(0, 0), (0, 1), (0, 2)] and places[-1] == (111, 111)
    order = [r * 112 + c for r, c in places]
    assert order == sorted(set(order))
    assert slide_positions(5, 6) == [(r, c) for r in range(5) for c in range(6)]
    assert len(slide_positions(1000, 1000, max_frames=7)) == 7


def test_gif_and_mp4_decode_to_the_frames(net, x):
    s = slide(net, x, "conv1", 3, max_frames=24)
    gif = encode_pages(s.pages, s.palette, fps=10, kind="gif")
    with Image.open(io.BytesIO(gif)) as im:
        assert im.format == "GIF" and im.n_frames == len(s) == 24
        im.seek(len(s) - 1)
        last = np.asarray(im.convert("RGB"))
    assert np.array_equal(last, s.frame(len(s) - 1))  # the palette and levels survive
    mp4 = encode_pages(s.pages, s.palette, fps=10, kind="mp4")
    assert mp4 is not None
    with av.open(io.BytesIO(mp4)) as clip:
        frames = [f.to_ndarray(format="rgb24") for f in clip.decode(video=0)]
    assert len(frames) == len(s)
    h, w = s.pages.shape[1:]
    assert frames[0].shape[:2] == (h + h % 2, w + w % 2)
    error = np.abs(frames[-1][:h, :w].astype(int) - s.frame(len(s) - 1).astype(int)).mean()
    assert error < 12  # lossy H.264, but the same picture


def test_bad_choices_are_sentences(net, x):
    with pytest.raises(ValueError, match="not the RGB photo"):
        slide(net, x, "layer1.0.conv1")
    with pytest.raises(ValueError, match="choose one of those"):
        slide(net, x, "bn1")
    with pytest.raises(ValueError, match="channel must be"):
        slide(net, x, "maxpool", 64)
    with pytest.raises(ValueError, match="max_frames"):
        slide(net, x, "conv1", max_frames=1)
    with pytest.raises(ValueError, match="conv_at"):
        pool_at(net, x, "conv1", 0, 0, 0)
    with pytest.raises(ValueError, match="kind must be"):
        encode_pages([np.zeros((4, 4), np.uint8)], np.zeros((256, 3), np.uint8), kind="webm")
    assert count_hooks(net) == 0
