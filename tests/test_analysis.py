"""analyse() and friends, each checked against an oracle computed here with torch / torchvision.

The oracles never call vizhooks: activations come from torchvision's feature extractor on a deep
copy of the model (ReLU made out-of-place), logits from a plain forward, class names from the
torchvision weights metadata, layer lists from ``named_modules()`` of the real architectures.
"""

from __future__ import annotations

import copy
import dataclasses
import functools

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor

from vizhooks.analysis import Analysis, LayerStats, analyse, image_digest, layer_stats, network_order, top_classes
from vizhooks.models.images import preprocess
from vizhooks.models.layers import LayerInfo, architecture_convs, architecture_layers, quick_pick, quick_picks

ARCHS = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")
CATEGORIES = list(torchvision.models.ResNet18_Weights.IMAGENET1K_V1.meta["categories"])


def photo(width: int, height: int, seed: int = 0) -> Image.Image:
    rng = np.random.default_rng(seed)
    # Smooth-ish content (a gradient plus noise) so resizing really changes pixel values.
    yy, xx = np.mgrid[0:height, 0:width]
    base = np.stack([xx * 255 / max(width - 1, 1), yy * 255 / max(height - 1, 1), (xx + yy) % 256], axis=-1)
    noisy = base + rng.normal(0, 25, size=base.shape)
    return Image.fromarray(np.clip(noisy, 0, 255).astype(np.uint8), "RGB")


def tv_conv_names(model: nn.Module) -> list[str]:
    return [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]


@functools.cache
def real_conv_names(arch: str) -> tuple[str, ...]:
    """Conv2d names of the real torchvision architecture (built on the CPU, random weights)."""
    return tuple(tv_conv_names(getattr(torchvision.models, arch)(weights=None)))


def out_of_place_copy(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model).eval()
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    return clone


def extract(model: nn.Module, x: torch.Tensor, nodes: dict[str, str]) -> dict[str, torch.Tensor]:
    """Oracle: torchvision's FX feature extractor on an out-of-place copy of ``model``."""
    extractor = create_feature_extractor(out_of_place_copy(model), return_nodes=nodes)
    with torch.no_grad():
        return extractor(x)


def expected_size(width: int, height: int, size: int) -> tuple[int, int]:
    short, long = min(width, height), max(width, height)
    new_long = min(round(size * long / short), 2 * size)
    return (new_long, size) if width >= height else (size, new_long)


@pytest.fixture(scope="module")
def picture():
    return photo(200, 150)


# --------------------------------------------------------------------------------------------
# top_classes


def oracle_top(logits: torch.Tensor, k: int) -> tuple[list[int], list[float]]:
    probs = torch.softmax(logits[0].double(), dim=0)
    values, indices = probs.topk(k)
    return indices.tolist(), values.tolist()


def test_top_classes_against_softmax_topk():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(1, 1000, generator=g) * 4
    preds = top_classes(logits, CATEGORIES, k=5)
    idx, probs = oracle_top(logits, 5)
    assert [p.index for p in preds] == idx
    assert [p.label for p in preds] == [CATEGORIES[i] for i in idx]
    assert [p.probability for p in preds] == pytest.approx(probs, rel=1e-5, abs=1e-7)
    assert all(isinstance(p.index, int) and isinstance(p.probability, float) for p in preds)
    assert preds[0].probability >= preds[-1].probability


def test_top_classes_known_labels():
    logits = torch.full((1, 1000), -5.0)
    logits[0, 285] = 9.0  # Egyptian cat
    logits[0, 504] = 7.0  # coffee mug
    preds = top_classes(logits, CATEGORIES, k=2)
    assert [(p.index, p.label) for p in preds] == [(285, CATEGORIES[285]), (504, CATEGORIES[504])]
    assert CATEGORIES[285] == "Egyptian cat" and CATEGORIES[504] == "coffee mug"
    e = np.exp(np.array([9.0, 7.0, -5.0]))
    p_cat = e[0] / (e[0] + e[1] + 998 * e[2])
    assert preds[0].probability == pytest.approx(p_cat, rel=1e-5)


def test_top_classes_all_1000_sum_to_one():
    logits = torch.randn(1, 1000, generator=torch.Generator().manual_seed(5))
    preds = top_classes(logits, CATEGORIES, k=1000)
    assert len(preds) == 1000
    assert sorted(p.index for p in preds) == list(range(1000))
    assert sum(p.probability for p in preds) == pytest.approx(1.0, abs=1e-4)
    probs = [p.probability for p in preds]
    assert probs == sorted(probs, reverse=True)


def test_top_classes_k_larger_than_classes_and_first_image_only():
    logits = torch.randn(2, 10, generator=torch.Generator().manual_seed(7))
    labels = [f"c{i}" for i in range(10)]
    preds = top_classes(logits, labels, k=50)
    assert len(preds) == 10
    idx, probs = oracle_top(logits, 10)
    assert [p.index for p in preds] == idx  # first image of the batch, not the second
    assert [p.probability for p in preds] == pytest.approx(probs, rel=1e-5)


def test_top_classes_of_a_real_forward(resnet18, picture):
    a = analyse(resnet18, picture, size=128, layers=["conv1"])
    with torch.no_grad():
        logits = resnet18.model(a.x)
    idx, probs = oracle_top(logits, 3)
    preds = top_classes(a.logits, resnet18.categories, k=3)
    assert [p.index for p in preds] == idx
    assert [p.label for p in preds] == [CATEGORIES[i] for i in idx]
    assert [p.probability for p in preds] == pytest.approx(probs, rel=1e-4)


# --------------------------------------------------------------------------------------------
# analyse


def test_analyse_matches_feature_extractor(resnet18, picture):
    layers = ["conv1", "layer1.0.conv2", "layer2.0.downsample.0", "layer3.1.conv1", "layer4.1.conv2"]
    a = analyse(resnet18, picture, size=128, layers=layers)
    assert isinstance(a, Analysis)
    assert a.what == "output"
    assert list(a.activations) == layers
    want = extract(resnet18.model, a.x, {n: n for n in layers})
    for name in layers:
        got = a.activations[name]
        assert got.shape == want[name].shape, name
        torch.testing.assert_close(got, want[name], rtol=1e-4, atol=1e-5, msg=name)
    with torch.no_grad():
        logits = resnet18.model(a.x)
    assert a.logits.shape == (1, 1000)
    torch.testing.assert_close(a.logits, logits, rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_analyse_resnet50_bottleneck_layers(resnet50, picture):
    layers = ["layer1.0.conv3", "layer1.0.downsample.0", "layer4.2.conv3"]
    a = analyse(resnet50, picture, size=128, layers=layers)
    want = extract(resnet50.model, a.x, {n: n for n in layers})
    assert a.activations["layer4.2.conv3"].shape[1] == 2048
    for name in layers:
        torch.testing.assert_close(a.activations[name], want[name], rtol=1e-4, atol=1e-5, msg=name)
    with torch.no_grad():
        torch.testing.assert_close(a.logits, resnet50.model(a.x), rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_analyse_what_input(resnet18, picture):
    layers = ["conv1", "layer1.0.conv1", "layer1.0.conv2", "layer2.0.conv1", "layer2.0.downsample.0"]
    a = analyse(resnet18, picture, size=128, layers=layers, what="input")
    assert a.what == "input"
    assert list(a.activations) == layers
    # What each conv receives, as torch.fx nodes of the real graph.
    feeds = {"maxpool": "maxpool", "layer1.0.relu": "relu_a", "layer1.1.relu_1": "layer1_out"}
    want = extract(resnet18.model, a.x, feeds)
    torch.testing.assert_close(a.activations["conv1"], a.x)
    torch.testing.assert_close(a.activations["layer1.0.conv1"], want["maxpool"])
    torch.testing.assert_close(a.activations["layer1.0.conv2"], want["relu_a"])
    torch.testing.assert_close(a.activations["layer2.0.conv1"], want["layer1_out"])
    torch.testing.assert_close(a.activations["layer2.0.downsample.0"], want["layer1_out"])
    assert a.activations["layer2.0.conv1"].shape[1] == 64  # input channels, not the conv's 128 outputs


@pytest.mark.slow
@pytest.mark.parametrize(("width", "height", "size"), [(200, 150, 128), (150, 200, 160), (600, 100, 128),
                                                        (100, 600, 128), (224, 224, 224), (97, 301, 128)])
def test_picture_follows_resize_rule(resnet18, width, height, size):
    image = photo(width, height, seed=width + height)
    a = analyse(resnet18, image, size=size, layers=["conv1"])
    assert a.picture.size == expected_size(width, height, size)
    assert a.picture.mode == "RGB"
    w, h = a.picture.size
    assert tuple(a.x.shape) == (1, 3, h, w)
    assert torch.equal(a.x, preprocess(image, size))


def test_expected_size_rule_itself():
    # Hand-worked values for the oracle above, so the oracle cannot silently drift.
    assert expected_size(200, 150, 128) == (171, 128)
    assert expected_size(600, 100, 128) == (256, 128)
    assert expected_size(100, 600, 128) == (128, 256)
    assert expected_size(640, 480, 224) == (299, 224)


@pytest.mark.slow
def test_analyse_default_size_and_x(resnet18):
    image = photo(320, 240, seed=11)
    a = analyse(resnet18, image, layers=["layer1.0.conv1"])
    assert a.picture.size == (299, 224)
    assert torch.equal(a.x, preprocess(image, 224))
    assert a.activations["layer1.0.conv1"].shape == (1, 64, 56, 75)


@pytest.mark.slow
def test_layers_come_back_in_network_order(resnet18, picture):
    real_order = list(real_conv_names("resnet18"))
    asked = ["layer4.0.downsample.0", "conv1", "layer2.1.conv2", "layer1.0.conv1", "layer2.0.conv1"]
    a = analyse(resnet18, picture, size=128, layers=asked)
    assert list(a.activations) == sorted(asked, key=real_order.index)
    assert list(a.activations) == ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer2.1.conv2",
                                   "layer4.0.downsample.0"]


def test_layers_none_gives_every_conv(resnet18, picture):
    a = analyse(resnet18, picture, size=128, layers=None)
    expected = list(real_conv_names("resnet18"))
    assert len(expected) == 20
    assert list(a.activations) == expected
    for name, t in a.activations.items():
        assert t.ndim == 4 and t.shape[0] == 1, name
    # nbytes is the memory of the kept activations: float32 -> 4 bytes per element.
    assert a.nbytes == sum(4 * t.numel() for t in a.activations.values())


def test_analysis_stats_and_immutability(resnet18, picture):
    a = analyse(resnet18, picture, size=128, layers=["layer3.0.conv2"])
    s = a.stats("layer3.0.conv2")
    t = a.activations["layer3.0.conv2"]
    assert s.shape == tuple(t.shape[1:]) == (256, 8, 11)
    assert s.channels == 256
    assert s.min == pytest.approx(float(t.min()))
    assert s.max == pytest.approx(float(t.max()))
    assert s.mean == pytest.approx(float(t.mean()), rel=1e-5, abs=1e-6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.what = "input"  # type: ignore[misc]
    with pytest.raises(KeyError):
        a.stats("conv1")


def test_analyse_rejects_unknown_layer(resnet18, picture):
    with pytest.raises(KeyError):
        analyse(resnet18, picture, size=128, layers=["layer9.0.conv1"])


# --------------------------------------------------------------------------------------------
# layer_stats, image_digest, network_order


def test_layer_stats_4d():
    t = torch.arange(2 * 3 * 4, dtype=torch.float32).reshape(1, 2, 3, 4) - 5.5
    s = layer_stats(t)
    assert isinstance(s, LayerStats)
    assert s.shape == (2, 3, 4)
    assert s.channels == 2
    assert (s.min, s.mean, s.max) == (-5.5, pytest.approx(6.0), 17.5)


def test_layer_stats_random_against_torch():
    t = torch.randn(1, 16, 9, 7, generator=torch.Generator().manual_seed(2)) * 3 + 1
    s = layer_stats(t)
    assert s.shape == (16, 9, 7)
    assert s.min == pytest.approx(t.min().item())
    assert s.mean == pytest.approx(t.mean().item(), rel=1e-5)
    assert s.max == pytest.approx(t.max().item())
    assert all(isinstance(v, float) for v in (s.min, s.mean, s.max))


def test_layer_stats_3d_and_half_precision():
    t = torch.tensor([[[1.0, 2.0], [3.0, 6.0]]], dtype=torch.float16)
    s = layer_stats(t)
    assert s.shape == (1, 2, 2)
    assert (s.min, s.mean, s.max) == (1.0, 3.0, 6.0)


def test_image_digest():
    data = bytes(range(256)) * 40
    d = image_digest(data)
    assert isinstance(d, str) and d
    assert image_digest(bytes(bytearray(data))) == d  # same bytes, another object
    for pos in (0, len(data) // 2, len(data) - 1):
        changed = bytearray(data)
        changed[pos] ^= 0x01
        assert image_digest(bytes(changed)) != d, pos
    assert image_digest(data + b"\x00") != d
    assert image_digest(b"") != d


def test_image_digest_of_real_file():
    with open("sample_images/coffee.jpg", "rb") as fh:
        data = fh.read()
    assert image_digest(data) == image_digest(data[:])
    assert image_digest(data) != image_digest(data[:-1])


def test_network_order_direct(resnet18):
    real = [n for n, _ in torchvision.models.resnet18(weights=None).named_modules()]
    asked = ["fc", "layer2", "conv1", "layer1.0.bn1", "avgpool", "conv1"]
    assert network_order(resnet18.model, asked) == sorted(set(asked), key=real.index)
    # Unknown names go last, in the order given, for capture to report.
    assert network_order(resnet18.model, ["zzz", "fc", "aaa", "conv1"]) == ["conv1", "fc", "zzz", "aaa"]
    assert network_order(resnet18.model, []) == []


# --------------------------------------------------------------------------------------------
# quick picks and architecture_convs


def conv_resolutions(model: torch.nn.Module, side: int = 224) -> dict[str, tuple[int, int]]:
    """Each Conv2d's output (H, W), by plain forward hooks written here (independent of vizhooks)."""
    seen = {}

    def remember(name):
        def hook(module, args, output):  # returns None: the output stays as it is
            seen.setdefault(name, tuple(output.shape[-2:]))

        return hook

    handles = [m.register_forward_hook(remember(n)) for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]
    try:
        with torch.no_grad():
            model(torch.zeros(1, 3, side, side))
    finally:
        for h in handles:
            h.remove()
    return seen


def oracle_picks(model: torch.nn.Module) -> dict[str, list[str]]:
    res = conv_resolutions(model)
    names = [n for n, m in model.named_modules() if isinstance(m, torch.nn.Conv2d)]
    tour, seen = [], set()
    for n in names:
        if res[n] not in seen:
            seen.add(res[n])
            tour.append(n)
    groups = {f"res:{h}x{w}": [n for n in names if res[n] == (h, w)] for h, w in dict.fromkeys(res[n] for n in names)}
    strided = [n for n in names if max(dict(model.named_modules())[n].stride) > 1]
    return {"tour": tour, **groups, "downsampling": strided, "convs": names}


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["resnet18", "resnet50"])
def test_quick_picks_match_an_independent_grouping(request, fixture):
    bundle = request.getfixturevalue(fixture)
    picks = quick_picks(architecture_layers(fixture))
    expected = oracle_picks(bundle.model)
    assert {k: v for k, v in picks.items() if k != "blocks"} == expected
    blocks = [n for n, m in bundle.model.named_modules() if type(m).__name__ in ("BasicBlock", "Bottleneck")]
    assert picks["blocks"] == blocks and len(blocks) == (8 if fixture == "resnet18" else 16)
    for names in picks.values():
        assert names and all(n in dict(bundle.model.named_modules()) for n in names)
    assert quick_pick(architecture_layers(fixture), "all") == expected["convs"]


def test_quick_pick_known_values():
    r18 = architecture_layers("resnet18")
    r50 = architecture_layers("resnet50")
    # The tour of a ResNet-18 is still conv1 and the first conv of each stage.
    assert quick_pick(r18, "tour") == ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
    assert len(quick_pick(r18, "res:28x28")) == 5  # stage 2: 2 blocks x 2 convs + shortcut
    # stage 3 (6 x 3 convs + shortcut) less its first 1x1 conv (still at 28), plus stage 4's first 1x1
    assert len(quick_pick(r50, "res:14x14")) == 19
    assert quick_pick(r18, "downsampling") == ["conv1", "layer2.0.conv1", "layer2.0.downsample.0", "layer3.0.conv1",
                                               "layer3.0.downsample.0", "layer4.0.conv1", "layer4.0.downsample.0"]
    assert len(quick_pick(r18, "all")) == 20
    assert len(quick_pick(r50, "convs")) == 53


@pytest.mark.parametrize("pick", ["nope", "Tour", "", "stage1", "res:1x1", "layer1"])
def test_quick_pick_unknown(pick):
    with pytest.raises(ValueError):
        quick_pick(architecture_layers("resnet18"), pick)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ARCHS)
def test_architecture_convs_match_torchvision(arch):
    real = getattr(torchvision.models, arch)(weights=None)
    convs = architecture_convs(arch)
    assert isinstance(convs, tuple)
    assert all(isinstance(c, LayerInfo) for c in convs)
    modules = dict(real.named_modules())
    assert [c.name for c in convs] == tv_conv_names(real)
    for c in convs:
        m = modules[c.name]
        assert (c.type, c.in_channels, c.out_channels, c.kernel_size, c.stride) == (
            "Conv2d", m.in_channels, m.out_channels, tuple(m.kernel_size), tuple(m.stride)), c.name


def test_architecture_convs_spot_checks():
    def info(arch, name):
        return next(c for c in architecture_convs(arch) if c.name == name)

    c = info("resnet50", "layer1.0.conv3")
    assert (c.in_channels, c.out_channels, c.kernel_size) == (64, 256, (1, 1))
    c = info("resnet152", "layer4.2.conv3")
    assert (c.in_channels, c.out_channels) == (512, 2048)
    c = info("resnet18", "layer4.1.conv2")
    assert (c.in_channels, c.out_channels, c.kernel_size, c.stride) == (512, 512, (3, 3), (1, 1))
    c = info("resnet34", "layer3.0.downsample.0")
    assert (c.in_channels, c.out_channels, c.kernel_size, c.stride) == (128, 256, (1, 1), (2, 2))
    assert len(architecture_convs("resnet101")) == 104
    assert len(architecture_convs("resnet152")) == 155


def test_architecture_convs_builds_on_meta_device(monkeypatch):
    """No real weights: the model it inspects has its parameters on the meta device."""
    seen: list[set[str]] = []
    real_get = torchvision.models.get_model_builder

    def spying_get(name):
        builder = real_get(name)

        def build(**kwargs):
            model = builder(**kwargs)
            seen.append({p.device.type for p in model.parameters()} | {b.device.type for b in model.buffers()})
            return model

        return build

    monkeypatch.setattr(torchvision.models, "get_model_builder", spying_get)
    from vizhooks.models.architectures import meta_build

    meta_build.cache_clear()  # bypass the caches: really build
    convs = [c for c in architecture_layers.__wrapped__("resnet152") if c.kind == "conv"]
    assert len(seen) == 1, "architecture_layers must build the model through get_model_builder"
    assert seen[0] == {"meta"}
    assert [c.name for c in convs] == [c.name for c in architecture_convs("resnet152")]
    # The result holds only plain numbers and names, no tensors.
    for c in convs:
        for value in dataclasses.asdict(c).values():
            assert not isinstance(value, torch.Tensor)


def test_architecture_convs_cached_and_rejects_unknown():
    assert architecture_layers("resnet50") is architecture_layers("resnet50")
    with pytest.raises(ValueError):
        architecture_convs("resnet9000")
