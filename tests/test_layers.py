from __future__ import annotations

import pytest
from torch import nn
from torchvision.models.feature_extraction import get_graph_node_names

from vizhooks import UnknownLayerError, conv_layers, default_layers, find_layers, resolve_layers
from vizhooks.layers import describe_position


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


def test_labels_help_newcomers(resnet18):
    label = next(i for i in conv_layers(resnet18.model) if i.name == "layer2.0.conv1").label
    assert "stage 2" in label and "block 0" in label and "64→128" in label and "stride 2" in label
    assert describe_position("layer3.1.downsample.0") == "stage 3 · block 1 · shortcut conv"
    assert describe_position("conv1") == "stem"


def test_other_kinds(resnet18, resnet50):
    assert [i.name for i in find_layers(resnet18.model, "stage")] == [f"layer{i}" for i in range(1, 5)]
    assert len(find_layers(resnet18.model, "block")) == 8
    assert len(find_layers(resnet50.model, "block")) == 16
    assert len(find_layers(resnet18.model, "bn")) == 20
    assert len(find_layers(resnet18.model, nn.Linear)) == 1
    leaves = find_layers(resnet18.model, "leaf")
    assert all(not list(dict(resnet18.model.named_modules())[i.name].children()) for i in leaves)
    with pytest.raises(ValueError, match="conv"):
        find_layers(resnet18.model, "convolution")


def test_defaults_and_resolution(resnet18, resnet50):
    want = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
    assert default_layers(resnet18.model) == want
    assert default_layers(resnet50.model) == want
    assert len(resolve_layers(resnet50.model, "all")) == 53
    assert resolve_layers(resnet18.model, ["conv1", "conv1", "fc"]) == ["conv1", "fc"]
    with pytest.raises(ValueError):
        resolve_layers(resnet18.model, [])
    with pytest.raises(UnknownLayerError) as info:
        resolve_layers(resnet18.model, ["layer5.0.conv1"])
    assert "--list-layers" in str(info.value) and not str(info.value).startswith("'")
