"""Every model family through vizhooks, each checked against an independent oracle.

Oracles: torchvision's ``create_feature_extractor`` (torch.fx) on a deep copy with every in-place
op switched off; ``named_modules()``; block counts from the papers / torchvision's stage tables
(written out below); torchvision's own transforms; the model run directly; timm's data config;
arithmetic for memory; a fresh process's peak memory.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
import torchvision.models.feature_extraction as fx
from PIL import Image
from torch import nn
from torchvision import transforms as T

import vizhooks.models.registry as vm
from tests.helpers import count_hooks, run_cli
from vizhooks.hooks.budget import CaptureTooLargeError, capture_bytes, check_capture
from vizhooks.hooks.capture import capture
from vizhooks.models.layers import architecture_layers, conv_layers, find_layers, quick_picks, token_model
from vizhooks.models.weights import WeightsError

ROOT = Path(__file__).resolve().parents[1]


def _cls(module: str, name: str) -> type[nn.Module]:
    # torchvision.models.googlenet is also a function: go through the module itself
    return getattr(importlib.import_module(f"torchvision.models.{module}"), name)


#: arch -> (block class as torchvision defines it, number of blocks from the paper's stage table)
BLOCKS: dict[str, tuple[tuple[type[nn.Module], ...], int]] = {
    "resnet18": ((_cls("resnet", "BasicBlock"),), 2 + 2 + 2 + 2),
    # plain stacks of convs: a block is a stage between poolings, ending on the ReLU before the pool
    "vgg11": ((nn.ReLU,), 5),
    "alexnet": ((nn.ReLU,), 3),
    "googlenet": ((_cls("googlenet", "Inception"),), 9),  # 3a 3b 4a-4e 5a 5b
    "inception_v3": (  # Mixed_5b-d (A), 6a (B), 6b-e (C), 7a (D), 7b-c (E)
        tuple(_cls("inception", f"Inception{c}") for c in "ABCDE"), 3 + 1 + 4 + 1 + 2),
    "densenet121": ((_cls("densenet", "_DenseLayer"),), 6 + 12 + 24 + 16),
    "mobilenet_v2": ((_cls("mobilenetv2", "InvertedResidual"),), 1 + 2 + 3 + 4 + 3 + 3 + 1),
    "mobilenet_v3_small": ((_cls("mobilenetv3", "InvertedResidual"),), 11),  # 11 bnecks
    "efficientnet_b0": ((_cls("efficientnet", "MBConv"),), 1 + 2 + 2 + 3 + 3 + 4 + 1),
    "regnet_x_400mf": ((_cls("regnet", "ResBottleneckBlock"),), 1 + 2 + 7 + 12),
    "resnext50_32x4d": ((_cls("resnet", "Bottleneck"),), 3 + 4 + 6 + 3),
    "shufflenet_v2_x0_5": ((_cls("shufflenetv2", "InvertedResidual"),), 4 + 8 + 4),
    "squeezenet1_1": ((_cls("squeezenet", "Fire"),), 8),
    "mnasnet0_5": ((_cls("mnasnet", "_InvertedResidual"),), 3 + 3 + 3 + 2 + 4 + 1),
    "convnext_tiny": ((_cls("convnext", "CNBlock"),), 3 + 3 + 9 + 3),
    "vit_b_16": ((_cls("vision_transformer", "EncoderBlock"),), 12),
    "swin_t": ((_cls("swin_transformer", "SwinTransformerBlock"),), 2 + 2 + 6 + 2),
    "maxvit_t": ((_cls("maxvit", "MaxVitLayer"),), 2 + 2 + 5 + 2),
}
ARCHS = list(BLOCKS)
#: The architectures whose model takes seconds to build on 2 cores: every test on them is slow.
ZOO_SLOW = {"vgg11", "convnext_tiny", "swin_t"}
PLAIN = {"vgg11", "alexnet"}  # no repeated unit of their own: blocks are the stages between pools


def _expected_blocks(arch: str, model: nn.Module) -> list[str]:
    """The blocks worked out here: every module of the family's block class, or, for a plain stack,
    the last layer of ``features`` before each MaxPool2d."""
    if arch in PLAIN:
        layers = list(model.features)
        return [f"features.{i - 1}" for i, layer in enumerate(layers) if isinstance(layer, nn.MaxPool2d)]
    classes = BLOCKS[arch][0]
    return [n for n, m in model.named_modules() if classes and isinstance(m, classes)]
FIXED_224 = {"vit_b_16", "swin_t", "maxvit_t"}
SMALL = 64  # the size asked of models that take any size


def _picture(width: int = 80, height: int = 64, seed: int = 0, cell: int = 8) -> Image.Image:
    """A random picture, smooth over ``cell`` pixels."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (height // cell + 2, width // cell + 2, 3), dtype=np.uint8)
    return Image.fromarray(coarse).resize((width, height), Image.Resampling.BICUBIC)


def _fx_outputs(model: nn.Module, x: torch.Tensor, names: list[str]) -> dict[str, torch.Tensor]:
    """torch.fx's view of ``names`` on a copy with in-place ops off. torchvision's modules from
    torchvision.ops (Conv2dNormActivation, SqueezeExcitation, ...) are traced through instead of
    kept as leaves, so the convs inside them are graph nodes."""
    clone = copy.deepcopy(model)
    for m in clone.modules():
        if hasattr(m, "inplace"):
            m.inplace = False
    original = fx._get_leaf_modules_for_ops
    fx._get_leaf_modules_for_ops = lambda: []
    try:
        extractor = fx.create_feature_extractor(clone, return_nodes={n: n for n in names})
    finally:
        fx._get_leaf_modules_for_ops = original
    with torch.no_grad():
        return extractor(x)


@pytest.fixture(scope="module", params=[pytest.param(a, marks=pytest.mark.slow) if a in ZOO_SLOW else a for a in ARCHS])
def zoo(request):
    """(arch, bundle, input) for one architecture; one model alive at a time (the large ones: slow)."""
    arch = request.param
    bundle = vm.load_model(arch, weights="none", device="cpu")
    x = bundle.preprocess(_picture(), SMALL)
    yield arch, bundle, x
    del bundle


def test_input_follows_the_size_rule(zoo):
    arch, bundle, x = zoo
    if arch in FIXED_224:
        assert bundle.input.fixed_size == 224 and tuple(x.shape) == (1, 3, 224, 224)
    else:
        short = 75 if arch == "inception_v3" else SMALL  # Inception v3 needs at least 75 pixels
        assert bundle.input.fixed_size is None and tuple(x.shape) == (1, 3, short, round(short * 80 / 64))


@pytest.mark.slow
def test_every_conv_matches_torch_fx(zoo):
    arch, bundle, x = zoo
    model = bundle.model
    names = [n for n, m in model.named_modules() if isinstance(m, nn.Conv2d)]
    assert [c.name for c in conv_layers(model)] == names and names
    want = _fx_outputs(model, x, names)
    for as_maps in (False, True):  # conv outputs are already (1, C, H, W): as_maps changes nothing
        got = capture(model, x, names, as_maps=as_maps)
        assert list(got) == names
        for name in names:
            assert got[name].shape == want[name].shape, (arch, name, as_maps)
            assert torch.equal(got[name], want[name]), (arch, name, as_maps)
    assert count_hooks(model) == 0


def test_blocks_are_each_familys_unit(zoo):
    arch, bundle, _ = zoo
    classes, count = BLOCKS[arch]
    blocks = find_layers(bundle.model, "block")
    modules = dict(bundle.model.named_modules())
    assert len(blocks) == count, arch
    assert all(isinstance(modules[b.name], classes) for b in blocks), arch
    # independently: every module of those classes, in order, is a block (none nests another here)
    expected = _expected_blocks(arch, bundle.model)
    assert [b.name for b in blocks] == expected
    assert [(b.index, b.count, b.kind) for b in blocks] == [(i, count, "block") for i in range(1, count + 1)]


def test_quick_picks_exist_and_resolve(zoo):
    arch, bundle, _ = zoo
    infos = architecture_layers(arch)  # on the meta device, at the model's reference size
    picks = quick_picks(infos, token_model(arch))
    modules = dict(bundle.model.named_modules())
    assert "tour" in picks
    for key, names in picks.items():
        assert names, (arch, key)
        assert all(name in modules for name in names), (arch, key)
        assert len(set(names)) == len(names), (arch, key)
    # the documented groups, worked out here; a group equal to an earlier one is left out
    convs = [n for n, m in bundle.model.named_modules() if isinstance(m, nn.Conv2d)]
    expected = {
        "downsampling": [n for n in convs if max(modules[n].stride) > 1],
        "convs": convs,
        "blocks": _expected_blocks(arch, bundle.model),
    }
    keys = list(picks)
    for key, names in expected.items():
        if key in picks:
            assert picks[key] == names and names not in [picks[k] for k in keys[: keys.index(key)]], (arch, key)
        else:
            assert not names or names in picks.values(), (arch, key)
    # tours start at the first conv (or, for attention models, the first block)
    assert picks["tour"][0] == (expected["blocks"][0] if arch in FIXED_224 else convs[0])
    assert token_model(arch) == (arch in FIXED_224)


# ----------------------------------------------------------------------------------------------
# tokens and channels-last as maps


@pytest.fixture(scope="module")
def vit():
    return vm.load_model("vit_b_16", weights="none", device="cpu")


@pytest.fixture(scope="module")
def swin():
    return vm.load_model("swin_t", weights="none", device="cpu")


def _x224(seed: int = 3) -> torch.Tensor:
    return torch.randn(1, 3, 224, 224, generator=torch.Generator().manual_seed(seed))


@pytest.mark.slow
def test_vit_tokens_as_maps(vit):
    layers = ["conv_proj", "encoder.layers.encoder_layer_0", "encoder.layers.encoder_layer_11", "encoder.ln",
              "heads.head"]
    x = _x224()
    raw = capture(vit.model, x, layers)
    maps = capture(vit.model, x, layers, as_maps=True)
    grid = 224 // 16
    for name in layers[1:4]:
        t = raw[name]
        assert t.shape == (1, 1 + grid * grid, 768)
        want = t[:, 1:, :].transpose(1, 2).reshape(1, 768, grid, grid)  # class token dropped
        assert torch.equal(maps[name], want), name
    assert torch.equal(maps["conv_proj"], raw["conv_proj"]) and maps["conv_proj"].shape == (1, 768, grid, grid)
    assert torch.equal(maps["heads.head"], raw["heads.head"][:, :, None, None])
    assert count_hooks(vit.model) == 0


@pytest.mark.slow
def test_swin_channels_last_as_maps(swin):
    layers = ["features.0.0", "features.0", "features.1.0", "features.2", "features.5.3", "norm"]
    x = _x224()
    raw = capture(swin.model, x, layers)
    maps = capture(swin.model, x, layers, as_maps=True)
    assert raw["features.0.0"].shape == (1, 96, 56, 56)  # the patch embedding's conv is NCHW
    assert torch.equal(maps["features.0.0"], raw["features.0.0"])
    for name, (h, c) in {"features.0": (56, 96), "features.1.0": (56, 96), "features.2": (28, 192),
                         "features.5.3": (14, 384), "norm": (7, 768)}.items():
        assert raw[name].shape == (1, h, h, c), name
        assert torch.equal(maps[name], raw[name].permute(0, 3, 1, 2)), name
    # the layer list quotes the same resolutions
    hw = {i.name: (i.out_hw, i.out_channels_map) for i in architecture_layers("swin_t")}
    assert hw["features.0.0"] == ((56, 56), 96) and hw["features.5.3"] == ((14, 14), 384)


def test_no_hooks_left_after_failing_capture(vit):
    # 64 pixels: ViT refuses the size inside its forward, after the hooks were registered
    with pytest.raises(AssertionError, match="Wrong image height"):
        capture(vit.model, torch.zeros(1, 3, 64, 64), ["encoder.layers.encoder_layer_0", "conv_proj"],
                as_maps=True)
    assert count_hooks(vit.model) == 0
    with pytest.raises(KeyError):
        capture(vit.model, _x224(), ["conv_proj", "encoder.layers.encoder_layer_99"])
    assert count_hooks(vit.model) == 0


# ----------------------------------------------------------------------------------------------
# preprocessing against torchvision's transforms


def _torchvision_pipeline(arch: str, resize: int, crop: int | None) -> T.Compose:
    transform = torchvision.models.get_model_weights(arch).DEFAULT.transforms()
    steps: list = [T.Resize(resize, interpolation=transform.interpolation, antialias=True)]
    if crop:
        steps.append(T.CenterCrop(crop))
    return T.Compose([*steps, T.ToTensor(), T.Normalize(transform.mean, transform.std)])


def test_preprocess_fixed_size_model_matches_torchvision(vit):
    ref = _torchvision_pipeline("vit_b_16", 224, 224)
    # 504 x 336 -> 336 x 224 exactly: pixel-identical up to float rounding
    exact = _picture(504, 336, seed=1)
    x = vit.preprocess(exact, 96)  # the size asked is ignored by a fixed-size model
    assert x.shape == (1, 3, 224, 224)
    torch.testing.assert_close(x, ref(exact)[None], rtol=0, atol=1e-5)
    assert vit.input_note(96) and "224" in vit.input_note(96)
    # 640 x 480 -> 298.7 x 224: vizhooks rounds the width to 299 where torchvision truncates to
    # 298, so the crops differ by a sub-pixel shift. On a picture smooth over 64 pixels that is a
    # mean difference of about 0.03 (normalised units); tolerance 0.06. For scale: a crop 3 pixels
    # off gives 0.16, torchvision's resize-to-256 gives 0.56.
    for width, height in ((640, 480), (300, 500), (1000, 333)):
        odd = _picture(width, height, seed=2, cell=64)
        y = vit.preprocess(odd)
        assert y.shape == (1, 3, 224, 224)
        assert (y - ref(odd)[None]).abs().mean() < 0.06, (width, height)


def test_preprocess_bicubic_model_matches_torchvision():
    bundle = vm.load_model("efficientnet_b0", weights="none", device="cpu")
    assert bundle.input.interpolation == "bicubic" and bundle.input.fixed_size is None
    image = _picture(150, 100, seed=5)  # -> 144 x 96 exactly: no rounding question
    x = bundle.preprocess(image, 96)
    assert x.shape == (1, 3, 96, 144)
    ref = _torchvision_pipeline("efficientnet_b0", 96, None)(image)[None]
    torch.testing.assert_close(x, ref, rtol=0, atol=1e-5)
    # the check can tell bicubic from bilinear
    bilinear = T.Compose([T.Resize(96, interpolation=T.InterpolationMode.BILINEAR, antialias=True), T.ToTensor(),
                          T.Normalize(bundle.input.mean, bundle.input.std)])(image)[None]
    assert (x - bilinear).abs().max() > 1e-3
    assert bundle.input_note(96) is None


# ----------------------------------------------------------------------------------------------
# own checkpoints


LABELS = ["ant", "bee", "cat", "dog", "eel", "fox", "gnu", "hen", "ibis", "jay"]


def _ten_class_resnet() -> nn.Module:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(42)
        model = torchvision.models.resnet18(num_classes=10)
        model.fc = nn.Linear(512, 10)  # a changed head, as after fine-tuning
        nn.init.normal_(model.fc.weight, std=0.5)
        nn.init.normal_(model.fc.bias, std=0.5)
    return model.eval()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    folder = tmp_path_factory.mktemp("own")
    model = _ten_class_resnet()
    path = folder / "ten.pth"
    torch.save(model.state_dict(), path)
    (folder / "labels.txt").write_text("\n".join(LABELS) + "\n")
    (folder / "labels.json").write_text(json.dumps(LABELS))
    return folder, path, model


@pytest.mark.parametrize("labels_file", ["labels.txt", "labels.json", None])
def test_own_checkpoint_with_another_class_count(checkpoint, labels_file):
    folder, path, direct = checkpoint
    bundle = vm.load_model("resnet18", weights=path, device="cpu",
                           labels=folder / labels_file if labels_file else None)
    expected = LABELS if labels_file else [f"class {i}" for i in range(10)]
    assert bundle.categories == expected
    assert bundle.pretrained and bundle.weights_source == "file" and str(path) in bundle.weights_status
    x = bundle.preprocess(_picture(96, 96, seed=6), 64)
    with torch.no_grad():
        logits = bundle.model(x)
        want = direct(x)
    assert logits.shape == (1, 10)
    torch.testing.assert_close(logits, want)
    assert bundle.categories[int(logits.argmax())] == expected[int(want.argmax())]


def test_labels_that_do_not_fit_are_refused(checkpoint, tmp_path):
    folder, path, _ = checkpoint
    nine = tmp_path / "nine.txt"
    nine.write_text("\n".join(LABELS[:9]))
    with pytest.raises(WeightsError, match="9 labels but the model has 10 classes"):
        vm.load_model("resnet18", weights=path, device="cpu", labels=nine)


class _Payload:
    """Unpickling this runs ``Path.touch(marker)``: harmless, and visible."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def _one_sentence(exc: BaseException, path: Path) -> str:
    msg = str(exc)
    assert "\n" not in msg and msg.endswith(".") and len(msg) < 500, msg
    assert str(path) in msg, msg
    return msg


def test_unusable_checkpoints_are_one_sentence(checkpoint, tmp_path):
    _, path, _ = checkpoint
    cut = tmp_path / "cut.pth"
    cut.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(WeightsError) as info:
        vm.load_model("resnet18", weights=cut, device="cpu")
    _one_sentence(info.value, cut)

    other = tmp_path / "mobilenet.pth"
    torch.save(torchvision.models.mobilenet_v2(num_classes=10).state_dict(), other)
    with pytest.raises(WeightsError) as info:
        vm.load_model("resnet18", weights=other, device="cpu")
    msg = _one_sentence(info.value, other)
    assert "mobilenet_v2" in msg and "first: conv1.weight" in msg and "first: features.0.0.weight" in msg

    gray = tmp_path / "gray.pth"  # same keys, one wrong shape: a network trained on 1-channel pictures
    model = _ten_class_resnet()
    model.conv1 = nn.Conv2d(1, 64, 7, 2, 3, bias=False)
    torch.save(model.state_dict(), gray)
    with pytest.raises(WeightsError) as info:
        vm.load_model("resnet18", weights=gray, device="cpu")
    msg = _one_sentence(info.value, gray)
    assert "first: conv1.weight, file (64, 1, 7, 7), model (64, 3, 7, 7)" in msg

    marker = tmp_path / "payload-ran"
    evil = tmp_path / "evil.pth"
    torch.save({"conv1.weight": _Payload(marker)}, evil)
    assert not marker.exists()
    with pytest.raises(WeightsError) as info:
        vm.load_model("resnet18", weights=evil, device="cpu")
    assert "not loaded for safety" in _one_sentence(info.value, evil)
    assert not marker.exists()


def test_old_densenet_checkpoint_layout_loads(tmp_path):
    # torchvision's published DenseNet file predates two changes: its layers say "norm.1" where
    # the modules are now "norm1", and (saved before PyTorch 0.4) it has no BatchNorm
    # "num_batches_tracked" counters. torchvision loads it; so must vizhooks.
    reference = vm.build("densenet121")
    state = reference.state_dict()
    old = {}
    for key, value in state.items():
        if key.endswith(".num_batches_tracked"):
            continue
        if ".denselayer" in key:
            for part in ("norm1", "norm2", "conv1", "conv2"):
                key = key.replace(f".{part}.", f".{part[:-1]}.{part[-1]}.")
        old[key] = value
    assert "features.denseblock1.denselayer1.norm.1.weight" in old and "features.norm0.running_mean" in old
    assert not any(".norm1." in k for k in old)
    path = tmp_path / "densenet_old.pth"
    torch.save(old, path)
    # PyTorch's own strict loader accepts the file once the names are the current ones (what
    # torchvision does when it loads it): the missing counters are not an error
    renamed = {k.replace(".norm.1.", ".norm1.").replace(".norm.2.", ".norm2.").replace(".conv.1.", ".conv1.")
               .replace(".conv.2.", ".conv2."): v for k, v in old.items()}
    torchvision.models.densenet121().load_state_dict(renamed, strict=True)
    loaded = vm.load_model("densenet121", weights=path, device="cpu").model.state_dict()
    assert loaded.keys() == state.keys()
    for key in state:
        want = torch.zeros_like(state[key]) if key.endswith(".num_batches_tracked") else state[key]
        assert torch.equal(loaded[key], want), key
    # a file that really lacks something is still refused, naming the key
    del old["features.norm0.running_mean"]
    torch.save(old, path)
    with pytest.raises(WeightsError, match="1 keys are missing \\(first: features.norm0.running_mean\\)"):
        vm.load_model("densenet121", weights=path, device="cpu")


# ----------------------------------------------------------------------------------------------
# the operator's list


def test_operator_models_file(checkpoint, tmp_path, monkeypatch, capsys):
    folder, path, direct = checkpoint
    toml = tmp_path / "models.toml"
    toml.write_text(textwrap.dedent(f"""
        [[model]]
        name = "Ten things"
        arch = "resnet18"
        weights = "{path}"
        labels = "{folder / 'labels.txt'}"
        description = "fine-tuned"

        [[model]]
        name = "Broken one"
        arch = "resnet18"
        weights = "missing.pth"

        [[model]]
        name = "Unknown arch"
        arch = "resnet19"

        [[model]]
        name = "Unknown timm"
        arch = "timm:resnet19"
    """))
    monkeypatch.setenv("VIZHOOKS_MODELS", str(toml))
    entries, warnings = vm.operator_models()
    assert list(entries) == ["Ten things"]
    assert len(warnings) == 3
    assert "Broken one" in warnings[0] and "missing.pth" in warnings[0]
    assert "Unknown arch" in warnings[1] and "resnet19" in warnings[1]
    # a timm name timm does not know (its model menu label would need its layers): left out too
    assert "Unknown timm" in warnings[2] and "timm has no model named 'resnet19'" in warnings[2]
    assert all("\n" not in w for w in warnings)
    names = vm.list_models()
    assert "Ten things" in names and "Broken one" not in names and "vgg16" in names
    # --list-models lists the entry among its models and says on stderr which entries were left out, and why
    code, out, err = run_cli(capsys, "--list-models")
    assert code == 0 and "\n  Ten things\n" in out and "Broken one" not in out
    assert err.splitlines() == [f"python -m vizhooks: {w}" for w in warnings]
    bundle = vm.load_model("Ten things", device="cpu")
    assert bundle.categories == LABELS and bundle.weights_source == "file" and bundle.arch == "resnet18"
    assert all(torch.equal(v, direct.state_dict()[k]) for k, v in bundle.model.state_dict().items())
    # its layers and shapes come from a 10-class model, without loading weights
    assert vm.family("Ten things") == vm.OPERATOR_FAMILY
    assert capture_bytes("Ten things", ["fc"], (64, 64)) == 4 * 10


# ----------------------------------------------------------------------------------------------
# timm


@pytest.mark.slow
def test_timm_model_captures_and_input_spec():
    import timm  # a dev pin: a missing install fails here, never skips
    bundle = vm.load_model("timm:resnet18", weights="none", device="cpu")
    assert bundle.weights_source == "random" and len(bundle.categories) == 1000
    cfg = timm.data.resolve_data_config({}, model=bundle.model)
    spec = vm.input_spec("timm:resnet18")
    assert (spec.mean, spec.std, spec.interpolation) == (tuple(cfg["mean"]), tuple(cfg["std"]), cfg["interpolation"])
    assert spec.fixed_size is None
    x = bundle.preprocess(_picture(), SMALL)
    names = [n for n, m in bundle.model.named_modules() if isinstance(m, nn.Conv2d)]
    assert [c.name for c in conv_layers(bundle.model)] == names and len(names) == 20
    got = capture(bundle.model, x, names, as_maps=True)
    want = _fx_outputs(bundle.model, x, names)
    for name in names:
        assert torch.equal(got[name], want[name]), name
    assert count_hooks(bundle.model) == 0

    vit_spec = vm.input_spec("timm:vit_tiny_patch16_224")
    vit_cfg = timm.data.resolve_data_config({}, model=vm.meta_model("timm:vit_tiny_patch16_224")[0])
    assert vit_spec.fixed_size == vit_cfg["input_size"][-1] == 224
    assert (vit_spec.mean, vit_spec.std, vit_spec.interpolation) == (
        tuple(vit_cfg["mean"]), tuple(vit_cfg["std"]), vit_cfg["interpolation"])


def test_hf_hub_offline_keeps_timm_from_the_hub_and_holds_back_no_other_download(monkeypatch):
    """timm's checkpoints live on the Hugging Face Hub, so the Hub's own switch HF_HUB_OFFLINE (the classroom
    setting the manual gives) stops their download as it stops an hf: model's: no attempt, a sentence naming
    the variable, and no "failed a moment ago" that would hold back the next torchvision download."""
    import huggingface_hub

    import vizhooks.models.weights as vw

    asked: list[tuple] = []
    monkeypatch.delenv("VIZHOOKS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(vw, "_offline_since", None)
    monkeypatch.setattr(huggingface_hub, "try_to_load_from_cache", lambda *args, **kwargs: None)  # not cached
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", lambda *args, **kwargs: asked.append(args))
    bundle = vm.load_model("timm:resnet10t", weights="auto", device="cpu")
    assert bundle.weights_source == "random" and "HF_HUB_OFFLINE" in bundle.weights_status, bundle.weights_status
    with pytest.raises(WeightsError, match="HF_HUB_OFFLINE"):
        vm.load_model("timm:resnet10t", weights="imagenet", device="cpu")
    assert asked == [] and vw._offline_since is None and vw.download_allowed([])


# ----------------------------------------------------------------------------------------------
# memory budget for giant models


@pytest.mark.slow
def test_giant_captures_are_refused_without_weights():
    # vit_h_14 takes 518 x 518: 37 x 37 patches + the class token, 1280 wide, 32 blocks
    blocks = [f"encoder.layers.encoder_layer_{i}" for i in range(32)]
    need = 32 * (1 + 37 * 37) * 1280 * 4
    assert capture_bytes("vit_h_14", blocks, (518, 518)) == need  # about 224 MB
    with pytest.raises(CaptureTooLargeError) as info:
        check_capture("vit_h_14", blocks, (518, 518), limit_mb=200)
    msg = str(info.value)
    assert "\n" not in msg and "32 layers of vit_h_14" in msg and f"{need / 1e6:,.0f} MB" in msg and "200 MB" in msg
    # every module of vit_h_14 does not fit the default budget
    every = [i.name for i in find_layers(vm.meta_model("vit_h_14")[0], "all")]
    with pytest.raises(CaptureTooLargeError, match="Choose fewer layers"):
        check_capture("vit_h_14", every, (518, 518))
    convs = [c.name for c in architecture_layers("regnet_y_128gf") if c.kind == "conv"]
    with pytest.raises(CaptureTooLargeError, match=f"{len(convs)} layers of regnet_y_128gf at 512 x 512"):
        check_capture("regnet_y_128gf", convs, (512, 512))


@pytest.mark.slow
def test_budget_checks_allocate_no_weights():
    # In a fresh process: the peak memory of both checks stays far below the 2.5 GB of weights
    # each of these models has (632 M and 645 M parameters).
    script = textwrap.dedent("""
        import resource, sys
        import torch
        from vizhooks.hooks.budget import CaptureTooLargeError, check_capture
        from vizhooks.models.layers import find_layers
        from vizhooks.models.registry import meta_model
        meta_model("resnet18")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        refused = 0
        blocks = [i.name for i in find_layers(meta_model("vit_h_14")[0], "block")]
        convs = [i.name for i in find_layers(meta_model("regnet_y_128gf")[0], "conv")]
        for name, layers, hw in (("vit_h_14", blocks, (518, 518)), ("regnet_y_128gf", convs, (512, 512))):
            try:
                check_capture(name, layers, hw, limit_mb=100)
            except CaptureTooLargeError:
                refused += 1
            except Exception as exc:  # still report the memory: the point of this test
                print(type(exc).__name__, file=sys.stderr)
        params = sum(p.numel() for n in ("vit_h_14", "regnet_y_128gf") for p in meta_model(n)[0].parameters())
        grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
        print(refused, len(blocks), len(convs), params, grew)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout.split()
    refused, blocks, convs, params, grew_kb = map(int, out)
    assert grew_kb < 200_000, f"peak memory grew by {grew_kb / 1e3:.0f} MB"
    assert params > 1.2e9  # the weights that were not allocated: about 5 GB of float32
    assert (refused, blocks) == (2, 32) and convs > 100


# ----------------------------------------------------------------------------------------------
# Hugging Face families (hf:FOLDER): tiny models from a config, save_pretrained with an image processor

HF_KINDS = ("vit", "beit", "convnext", "swin", "resnet", "deit", "mobilevit")
# their processors save a {"height": 32, "width": 32} size (squashed); the others ConvNeXt's {"shortest_edge": 32}
# (crop_pct 0.875: the shorter side to 36, then a 32 crop)
HF_SQUASHED = {"vit", "beit", "swin", "deit"}
# attention models (vizhooks.models.layers.is_token_model), whose tour is their blocks: MobileViT too, though
# its blocks give maps (its attention runs on unfolded patches inside each block)
HF_TOKENS = {"vit", "beit", "swin", "deit", "mobilevit"}


@pytest.fixture(scope="module", params=HF_KINDS)
def hf_zoo(request, tmp_path_factory):
    """(kind, name, bundle, input) for one tiny Hugging Face family."""
    from tests.helpers import save_tiny_hf

    os.environ["HF_HUB_OFFLINE"] = "1"
    name = f"hf:{save_tiny_hf(request.param, tmp_path_factory.mktemp(request.param))}"
    bundle = vm.load_model(name, device="cpu")
    return request.param, name, bundle, bundle.preprocess(_picture(), SMALL)


def _hand_hooked(model: nn.Module, x: torch.Tensor, names: list[str]) -> dict[str, torch.Tensor]:
    """Each module's output by a forward hook written out here, on a copy with in-place ops off."""
    clone = copy.deepcopy(model)
    for m in clone.modules():
        if hasattr(m, "inplace"):
            m.inplace = False
    modules, seen = dict(clone.named_modules()), {}
    handles = [modules[n].register_forward_hook(lambda _m, _i, out, n=n: seen.__setitem__(n, out.detach().clone()))
               for n in names]
    try:
        with torch.no_grad():
            clone(x)
    finally:
        for handle in handles:
            handle.remove()
    return seen


def test_hf_input_follows_the_saved_processor(hf_zoo):
    """The tensor of an 80 x 64 picture is the processor's own (transformers' PIL backend, PIL's resampling as
    ours), and the model's logits on it are the Hugging Face model's own: logits that move with the input and
    differ between classes (a tiny MobileViT's own initialisation gave 0 for every class and every picture)."""
    from transformers import AutoImageProcessor, AutoModelForImageClassification

    kind, name, bundle, x = hf_zoo
    folder = name.removeprefix("hf:")
    spec = bundle.input
    assert spec.fixed_size == 32 and tuple(x.shape) == (1, 3, 32, 32)
    assert (spec.squash, spec.resize_side) == ((True, None) if kind in HF_SQUASHED else (False, 36))
    theirs = AutoImageProcessor.from_pretrained(folder, backend="pil")(_picture(), return_tensors="pt").pixel_values
    torch.testing.assert_close(x, theirs, rtol=0, atol=1e-5)
    other = bundle.preprocess(_picture(seed=1), SMALL)
    hf = AutoModelForImageClassification.from_pretrained(folder).eval()
    with torch.no_grad():
        logits, logits_other = bundle.model(x), bundle.model(other)
        torch.testing.assert_close(logits, hf(pixel_values=x).logits, rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(logits_other, hf(pixel_values=other).logits, rtol=1e-5, atol=1e-5)
    assert (logits - logits_other).abs().max() > 1e-3, "the logits do not move with the picture"
    assert logits.max() - logits.min() > 1e-3, "every class has the same logit"


def test_hf_every_conv_matches_a_hand_written_hook(hf_zoo):
    kind, _, bundle, x = hf_zoo
    names = [n for n, m in bundle.model.named_modules() if isinstance(m, nn.Conv2d)]
    assert [c.name for c in conv_layers(bundle.model)] == names and names
    want = _hand_hooked(bundle.model, x, names)
    got = capture(bundle.model, x, names)
    assert list(got) == names
    for name in names:
        # to float rounding: a deepcopy of the tiny MobileViT alone, with no hook, moves its 1 x 1 maps and
        # logits by ~2e-8 (measured; the copy's weights sit elsewhere in memory and are summed in another order)
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-6, msg=f"{kind} {name}")
    assert count_hooks(bundle.model) == 0


def test_hf_blocks_are_each_familys_unit_and_quick_picks_resolve(hf_zoo):
    from tests.helpers import HF_BLOCKS, tiny_hf_config

    kind, name, bundle, _ = hf_zoo
    config = tiny_hf_config(kind)
    count = {"mobilevit": 7}.get(kind) or getattr(config, "num_hidden_layers", None) or sum(config.depths)
    modules = dict(bundle.model.named_modules())
    # the outermost modules of the family's block classes
    ours = [n for n, m in modules.items() if type(m).__name__ in HF_BLOCKS[kind]]
    expected = [n for n in ours if not any(n.startswith(f"{o}.") for o in ours)]
    assert len(expected) == count and [b.name for b in find_layers(bundle.model, "block")] == expected
    assert all(n.startswith("hf.") for n in expected)  # the Hugging Face names under the wrapper's prefix
    picks = quick_picks(architecture_layers(name), token_model(name))
    assert picks["tour"] and all(n in modules for names in picks.values() for n in names)
    assert picks["blocks"] == expected if "blocks" in picks else expected in picks.values()
    convs = [n for n, m in modules.items() if isinstance(m, nn.Conv2d)]
    assert picks["tour"][0] == (expected[0] if kind in HF_TOKENS else convs[0])
    assert token_model(name) == (kind in HF_TOKENS)
