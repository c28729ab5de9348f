from __future__ import annotations

import pytest
import torch
from torch import nn
from torchvision.models.feature_extraction import get_graph_node_names

from vizhooks import UnknownLayerError, describe_layers, find_layers
from vizhooks.models.layers import architecture_layers, conv_layers, default_layers, resolve_layers


def test_conv_layers_follow_the_graph(resnet18):
    model = resnet18.model
    infos = conv_layers(model)
    # Independent order: the nodes torch.fx traces, filtered to the Conv2d modules.
    _, nodes = get_graph_node_names(model)
    modules = dict(model.named_modules())
    traced = [n for n in nodes if isinstance(modules.get(n), nn.Conv2d)]
    assert [i.name for i in infos] == traced
    first = infos[0]
    assert (first.name, first.in_channels, first.out_channels, first.kernel_size, first.stride) == (
        "conv1", 3, 64, (7, 7), (2, 2))
    down = next(i for i in infos if i.name == "layer2.0.downsample.0")
    assert (down.kernel_size, down.stride, down.out_channels) == ((1, 1), (2, 2), 128)


def _output_hw(model: nn.Module, names: list[str], hw: tuple[int, int]) -> dict[str, tuple[int, int]]:
    """Output height and width of each named module, from a real forward pass with plain hooks."""
    modules = dict(model.named_modules())
    seen: dict[str, tuple[int, int]] = {}

    def hook(name):
        def remember(module, args, output):
            seen.setdefault(name, tuple(output.shape[-2:]))
        return remember

    handles = [modules[n].register_forward_hook(hook(n)) for n in names]
    try:
        with torch.no_grad():
            model(torch.zeros(1, 3, *hw))
    finally:
        for h in handles:
            h.remove()
    return seen


def test_labels_say_position_resolution_channels_kernel_and_stride(resnet18):
    model = resnet18.model
    convs = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    blocks = [n for n, m in model.named_modules() if type(m).__name__ == "BasicBlock"]
    hw = _output_hw(model, convs + blocks, (224, 224))
    infos = {i.name: i for i in describe_layers(model, (224, 224))}
    assert set(infos) == set(convs) | set(blocks)

    conv = infos["layer2.0.conv1"]
    position = convs.index("layer2.0.conv1") + 1
    h, w = hw["layer2.0.conv1"]
    assert conv.where == f"conv {position} of {len(convs)} · {h}×{w}" == "conv 6 of 20 · 28×28"
    assert conv.label == f"layer2.0.conv1 · conv 6 of 20 · {h}×{w} · 64→128, 3x3, stride 2"

    block = infos["layer3.1"]
    h, w = hw["layer3.1"]
    assert block.where == f"block {blocks.index('layer3.1') + 1} of {len(blocks)} · {h}×{w}"
    assert block.label == f"layer3.1 · block 6 of 8 · {h}×{w} · BasicBlock · 256 ch"
    for name, info in infos.items():  # every layer's resolution is the one a real pass produces
        assert info.out_hw == hw[name], name

    # without a resolution (conv_layers alone) the position is still given, and no ResNet words
    plain = conv_layers(model)[position - 1]
    assert plain.where == "conv 6 of 20" and "stage" not in plain.label and "block 0" not in plain.label
    other = find_layers(model, "bn")[0]
    assert other.where == "BatchNorm2d" and other.index == 0


def test_a_photo_that_is_not_square_gets_its_own_resolutions(resnet18):
    """Issue 34: the Feature maps captions said 112×112 for conv1 where a 224 × 338 photo gives 112 × 169."""
    model = resnet18.model
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    for hw in ((224, 338), (64, 96), (96, 40)):
        real = _output_hw(model, names, hw)
        infos = {i.name: i for i in architecture_layers("resnet18", hw) if i.kind == "conv"}
        assert {name: info.out_hw for name, info in infos.items()} == real, hw
    assert {i.name: i.out_hw for i in architecture_layers("resnet18", (224, 338))}["conv1"] == (112, 169)
    # without a size: the model's reference square, as before
    assert architecture_layers("resnet18")[0].out_hw == (112, 112)


def test_other_kinds(resnet18, resnet50):
    model = resnet18.model
    assert [i.name for i in find_layers(model, "stage")] == [f"layer{i}" for i in range(1, 5)]
    assert len(find_layers(model, "block")) == 8
    assert len(find_layers(resnet50.model, "block")) == 16
    assert len(find_layers(model, "bn")) == 20
    assert len(find_layers(model, nn.Linear)) == 1
    leaves = [i.name for i in find_layers(model, "leaf")]
    # Independent list: ResNet's leaves are exactly its modules of these six types, in order
    # (20 convs + 20 batch norms + 9 ReLUs + max pool + average pool + fc).
    leaf_types = (nn.Conv2d, nn.BatchNorm2d, nn.ReLU, nn.MaxPool2d, nn.AdaptiveAvgPool2d, nn.Linear)
    expected = [n for n, m in model.named_modules() if isinstance(m, leaf_types)]
    assert leaves == expected and len(leaves) == 52
    assert "layer1.0" not in leaves and "layer2.0.downsample" not in leaves
    everything = [i.name for i in find_layers(model, "all")]
    assert everything == [n for n, _ in model.named_modules() if n]
    with pytest.raises(ValueError, match="conv"):
        find_layers(model, "convolution")


@pytest.mark.slow
def test_defaults_and_resolution(resnet18, resnet50):
    # the first conv and the first conv at each new resolution (224 px input)
    want = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
    assert default_layers(resnet18.model) == want
    # ResNet-50 (v1.5) downsamples in the 3x3 conv2, so conv1 of a stage still has the old size
    want50 = ["conv1", "layer1.0.conv1", "layer2.0.conv2", "layer3.0.conv2", "layer4.0.conv2"]
    assert default_layers(resnet50.model) == want50
    convs50 = [n for n, m in resnet50.model.named_modules() if isinstance(m, nn.Conv2d)]
    hw = _output_hw(resnet50.model, convs50, (224, 224))
    firsts = [n for i, n in enumerate(convs50) if all(hw[p] != hw[n] for p in convs50[:i])]
    assert firsts == want50
    assert len(resolve_layers(resnet50.model, "all")) == 53
    assert resolve_layers(resnet18.model, ["conv1", "conv1", "fc"]) == ["conv1", "fc"]
    with pytest.raises(ValueError):
        resolve_layers(resnet18.model, [])
    with pytest.raises(UnknownLayerError) as info:
        resolve_layers(resnet18.model, ["layer5.0.conv1"])
    assert "--list-layers" in str(info.value) and not str(info.value).startswith("'")
