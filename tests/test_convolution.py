"""conv_at() against answers reached without it.

The output value against the conv's own output (``capture``), the window against
``torch.nn.functional.unfold`` of the captured input, the following BatchNorm / activation values
against ``capture`` of those modules (on a copy of resnet18 whose BatchNorm statistics are random,
so a scale or shift taken wrongly shows), and the hooks and training flags left as they were.
"""

from __future__ import annotations

import copy
from collections import OrderedDict

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers import count_hooks
from vizhooks import UnknownLayerError, capture, load_model
from vizhooks.network.convolution import conv_at

_MODELS: dict[str, nn.Module] = {}


def _model(name: str) -> nn.Module:
    if name not in _MODELS:
        _MODELS[name] = load_model(name, weights="none", device="cpu").model
    return _MODELS[name]


def _x(hw: tuple[int, int], seed: int = 1) -> torch.Tensor:
    return torch.randn(1, 3, *hw, generator=torch.Generator().manual_seed(seed))


def _tiny() -> nn.Sequential:
    """Grouped, dilated, strided and 'same' padded convs, with bias: what the zoo lacks."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        return nn.Sequential(OrderedDict(
            stem=nn.Conv2d(3, 4, 3, padding="same"), act=nn.SiLU(),
            dilated=nn.Conv2d(4, 6, 3, stride=2, padding=2, dilation=2, groups=2),
            odd=nn.Conv2d(6, 6, (2, 5), stride=(1, 3), padding=(1, 0), bias=False),
            pool=nn.AdaptiveAvgPool2d(1), flat=nn.Flatten(), fc=nn.Linear(6, 10),
        )).eval()


def _cases(rows: list[tuple]) -> list:
    """``rows`` as parameters named model-layer; ViT's (a 224-pixel input) and VGG's (its build) are slow."""
    slow = ("vit_b_16", "vgg16")
    return [pytest.param(*row, id=f"{row[0]}-{row[1]}", marks=pytest.mark.slow if row[0] in slow else ())
            for row in rows]


# (model, layer, input size, [(channel, row, col)...]): corners reach into the zero padding
CASES = [
    ("resnet18", "conv1", (96, 128), [(5, 20, 30), (0, 0, 0), (63, 47, 63)]),  # 7x7, stride 2, padding 3
    ("resnet18", "layer2.0.conv1", (96, 128), [(3, 5, 7), (127, 0, 15), (1, 5, 0)]),  # stride 2, padding 1
    ("resnet18", "layer2.0.downsample.0", (96, 128), [(9, 11, 15)]),  # 1x1, stride 2, no padding
    ("vgg16", "features.0", (96, 128), [(1, 0, 0), (40, 50, 77), (63, 95, 127)]),
    ("mobilenet_v3_small", "features.1.block.0.0", (96, 128), [(7, 0, 3), (15, 23, 31)]),  # depthwise
    ("mobilenet_v3_small", "features.4.block.1.0", (96, 128), [(50, 2, 3), (95, 5, 7)]),  # depthwise 5x5
    ("vit_b_16", "conv_proj", (224, 224), [(10, 3, 4), (767, 13, 0)]),  # 16x16 patches, stride 16
    ("tiny", "stem", (20, 26), [(2, 0, 25), (3, 19, 0)]),
    ("tiny", "dilated", (20, 26), [(4, 0, 0), (1, 5, 7), (5, 9, 12)]),
    ("tiny", "odd", (20, 26), [(0, 0, 0), (5, 10, 2)]),
]


@pytest.mark.parametrize(("name", "layer", "hw", "places"), _cases(CASES))
def test_value_is_the_convs_own_and_the_window_is_unfolds(name, layer, hw, places):
    model = _tiny() if name == "tiny" else _model(name)
    x = _x(hw)
    conv = model.get_submodule(layer)
    seen = capture(model, x, [layer], what="input")[layer]
    out = capture(model, x, [layer])[layer]
    padding = conv._reversed_padding_repeated_twice  # torch's own answer for padding="same"
    padded = F.pad(seen, padding)
    columns = F.unfold(padded, conv.kernel_size, dilation=conv.dilation, stride=conv.stride)
    kh, kw = conv.kernel_size
    per_in = conv.in_channels // conv.groups
    for channel, row, col in places:
        step = conv_at(model, x, layer, channel, row, col)
        assert step.total == pytest.approx(float(out[0, channel, row, col]), abs=1e-4)
        assert step.output_hw == tuple(out.shape[-2:])
        torch.testing.assert_close(step.output, out[0, channel])
        group = channel // (conv.out_channels // conv.groups)
        assert step.in_channels == tuple(range(group * per_in, (group + 1) * per_in))
        window = columns[0, :, row * out.shape[-1] + col].reshape(conv.in_channels, kh, kw)
        torch.testing.assert_close(step.window, window[group * per_in:(group + 1) * per_in])
        torch.testing.assert_close(step.weights, conv.weight[channel].detach())
        torch.testing.assert_close(step.products, step.window * step.weights)
        torch.testing.assert_close(step.sums, (step.window * step.weights).sum(dim=(1, 2)), rtol=1e-5, atol=1e-6)
        bias = float(conv.bias[channel].detach()) if conv.bias is not None else 0.0
        assert step.bias == pytest.approx(bias) and step.has_bias == (conv.bias is not None)
    assert count_hooks(model) == 0


def test_depthwise_conv_sees_one_input_channel():
    step = conv_at(_model("mobilenet_v3_small"), _x((96, 128)), "features.1.block.0.0", 7, 0, 3)
    assert step.groups == 16 and step.in_channels == (7,) and step.window.shape == (1, 3, 3)
    assert step.stride == (2, 2) and step.padding == (1, 1)
    assert step.rows == (-1, 0, 1) and step.cols == (5, 6, 7)
    assert step.padded[0].all() and not step.padded[1:].any()


def _random_batchnorm(model: nn.Module) -> nn.Module:
    """A copy whose every BatchNorm has random statistics, weight and bias: scale far from 1."""
    model = copy.deepcopy(model)
    g = torch.Generator().manual_seed(3)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g))
                m.running_var.copy_(torch.rand(n, generator=g) * 3 + 0.1)
                m.weight.copy_(torch.randn(n, generator=g))
                m.bias.copy_(torch.randn(n, generator=g))
    return model


FOLLOW = [
    ("resnet18", "conv1", ["bn1", "relu"]),
    ("resnet18", "layer1.0.conv1", ["layer1.0.bn1", "layer1.0.relu"]),
    ("resnet18", "layer1.0.conv2", ["layer1.0.bn2"]),  # out += identity comes before the ReLU
    ("resnet18", "layer2.0.downsample.0", ["layer2.0.downsample.1"]),
    ("vgg16", "features.0", ["features.1"]),
    ("mobilenet_v3_small", "features.1.block.0.0", ["features.1.block.0.1", "features.1.block.0.2"]),
    ("mobilenet_v3_small", "features.4.block.1.0", ["features.4.block.1.1", "features.4.block.1.2"]),
    ("vit_b_16", "conv_proj", []),  # reshaped into tokens: nothing elementwise follows
]


@pytest.mark.parametrize(("name", "layer", "names"), _cases(FOLLOW))
def test_following_steps_are_the_captured_outputs(name, layer, names):
    model = _random_batchnorm(_model(name))
    x = _x((224, 224) if name == "vit_b_16" else (96, 128))
    out = capture(model, x, [layer, *names])
    h, w = out[layer].shape[-2:]
    kinds = {n: type(model.get_submodule(n)).__name__ for n in names}
    signs = set()
    for channel, row, col in [(0, 0, 0), (3, h // 2, w // 3), (5, h - 1, w - 1), (11, 1, 2), (2, 3, 1)]:
        step = conv_at(model, x, layer, channel, row, col)
        assert [f.layer for f in step.follow] == names
        before = float(out[layer][0, channel, row, col])
        assert step.total == pytest.approx(before, abs=1e-4)
        for f in step.follow:
            expected = float(out[f.layer][0, channel, row, col])
            assert f.kind == kinds[f.layer]
            assert f.before == pytest.approx(before, abs=1e-4)
            assert f.after == pytest.approx(expected, abs=1e-4)
            if f.kind == "BatchNorm2d":
                bn = model.get_submodule(f.layer).requires_grad_(False)
                scale = float(bn.weight[channel] / torch.sqrt(bn.running_var[channel] + bn.eps))
                assert f.scale == pytest.approx(scale, rel=1e-5)
                assert f.shift == pytest.approx(float(bn.bias[channel] - bn.running_mean[channel] * scale), abs=1e-5)
                assert f.scale * f.before + f.shift == pytest.approx(f.after, abs=1e-4)
                signs.add(f.after > 0)
            before = expected
        assert step.value == pytest.approx(before, abs=1e-4)
    if names and kinds[names[0]] == "BatchNorm2d":
        assert signs == {True, False}  # the ReLU both kept and cut a value
    assert count_hooks(model) == 0


@pytest.mark.slow
def test_hooks_state_and_statistics_are_restored_after_success_and_failure():
    model = copy.deepcopy(_model("resnet18")).train()
    model.conv1.weight.requires_grad_(True)
    stats = model.bn1.running_mean.clone()
    conv_at(model, _x((64, 64)), "layer1.0.conv1", 0, 3, 3)
    assert count_hooks(model) == 0 and model.training and model.layer1[0].bn1.training
    assert model.conv1.weight.requires_grad
    torch.testing.assert_close(model.bn1.running_mean, stats)  # ran in eval mode
    with pytest.raises(ValueError):
        conv_at(model, _x((64, 64)), "layer1.0.conv1", 0, 16, 0)  # the map is 16 x 16
    assert count_hooks(model) == 0 and model.training
    vit = _model("vit_b_16")
    with pytest.raises(Exception, match="224"):  # raised inside the forward pass by the model itself
        conv_at(vit, _x((96, 128)), "conv_proj", 0, 0, 0)
    assert count_hooks(vit) == 0


@pytest.mark.parametrize(("args", "words"), [
    (("conv1", 64, 0, 0), ["channel=64", "0 to 63"]),
    (("conv1", -1, 0, 0), ["channel=-1", "0 to 63"]),
    (("conv1", 1.5, 0, 0), ["channel", "whole number"]),
    (("conv1", True, 0, 0), ["channel", "whole number"]),
    (("conv1", 0, 32, 0), ["row=32", "0 to 31"]),  # 64 x 64 in, 32 x 32 out
    (("conv1", 0, 0, -2), ["col=-2", "0 to 31"]),
    (("conv1", 0, "a", 0), ["row", "whole number"]),
    (("layer1", 0, 0, 0), ["Sequential", "Conv2d"]),
    (("bn1", 0, 0, 0), ["BatchNorm2d", "Conv2d"]),
])
def test_bad_choices_are_one_sentence(args, words):
    model = _model("resnet18")
    with pytest.raises(ValueError) as err:
        conv_at(model, _x((64, 64)), *args)
    message = str(err.value)
    assert "\n" not in message and message.endswith(".") and message.count(". ") == 0
    for word in words:
        assert word in message
    assert count_hooks(model) == 0


def test_unknown_layer_names_close_matches():
    with pytest.raises(UnknownLayerError, match="conv1"):
        conv_at(_model("resnet18"), _x((64, 64)), "conv_1", 0, 0, 0)
    with pytest.raises(ValueError, match="image tensor"):
        conv_at(_model("resnet18"), torch.zeros(3, 64, 64), "conv1", 0, 0, 0)


def test_strongest_channels_and_padding_mask():
    step = conv_at(_model("resnet18"), _x((96, 128)), "layer1.0.conv1", 4, 0, 31)
    order = step.strongest(5)
    assert len(order) == 5 and len(set(order)) == 5
    magnitudes = step.sums.abs()
    assert magnitudes[order[0]] == magnitudes.max()
    assert all(magnitudes[a] >= magnitudes[b] for a, b in zip(order, order[1:], strict=False))
    assert step.padded.tolist() == [[True, True, True], [False, False, True], [False, False, True]]
    assert float(step.window[:, 0].abs().sum()) == 0.0 and float(step.window[:, :, 2].abs().sum()) == 0.0
