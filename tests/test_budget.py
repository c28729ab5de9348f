"""vizhooks.hooks.budget: the size of a capture before it runs, and the refusal of one over the limit.

The oracle is a real forward pass of torchvision's ResNet-18 (random weights, a small input) with
plain forward hooks written here: the meta-device shapes must be the shapes a real capture gets,
every call of a module that runs twice included, and the bytes 4 per float of them."""

from __future__ import annotations

import pytest
import torch
from torchvision.models import resnet18

from vizhooks.hooks.budget import CaptureTooLargeError, capture_bytes, capture_shapes, check_capture

HW = (64, 96)
LAYERS = ["conv1", "layer1.0.relu", "layer2.0.downsample.0", "layer4.1.conv2", "avgpool", "fc"]


@pytest.fixture(scope="module")
def real_shapes() -> dict[tuple[str, str], list[tuple[int, ...]]]:
    """{(layer, "output" | "input"): [shape of each call]} from a real pass on the CPU."""
    model = resnet18().eval()
    seen: dict[tuple[str, str], list[tuple[int, ...]]] = {}
    handles = []
    for name, module in model.named_modules():
        if name in LAYERS:
            handles.append(module.register_forward_hook(
                lambda m, args, out, name=name: seen.setdefault((name, "output"), []).append(tuple(out.shape))))
            handles.append(module.register_forward_pre_hook(
                lambda m, args, name=name: seen.setdefault((name, "input"), []).append(tuple(args[0].shape))))
    with torch.no_grad():
        model(torch.randn(1, 3, *HW))
    for h in handles:
        h.remove()
    return seen


def _keys(name: str, calls: int) -> list[str]:
    return [name if i == 0 else f"{name}#{i + 1}" for i in range(calls)]


@pytest.mark.parametrize("what", ["output", "input"])
def test_shapes_are_a_real_captures_every_call_included(real_shapes, what):
    want = {key: shape for name in LAYERS
            for key, shape in zip(_keys(name, len(real_shapes[(name, what)])), real_shapes[(name, what)], strict=True)}
    assert len(real_shapes[("layer1.0.relu", what)]) == 2  # a BasicBlock runs its ReLU twice
    assert capture_shapes("resnet18", LAYERS, HW, what) == want
    assert capture_bytes("resnet18", LAYERS, HW, what) == sum(4 * torch.Size(s).numel() for s in want.values())


def test_shapes_asked_again_come_without_a_pass_and_the_answer_is_the_callers(real_shapes):
    from vizhooks.models.registry import meta_model

    model = meta_model("resnet18")[0]
    first = capture_shapes("resnet18", LAYERS, HW)
    passes = []
    handle = model.register_forward_pre_hook(lambda m, args: passes.append(1))
    try:
        again = capture_shapes("resnet18", LAYERS, HW)
        assert again == first and passes == []  # kept with the meta model: no second pass
        again["conv1"] = (0,)  # the caller's own dict: changing it changes nothing kept
        assert capture_shapes("resnet18", LAYERS, HW) == first and passes == []
        other = capture_shapes("resnet18", LAYERS, (HW[0] * 2, HW[1]))
        assert passes == [1] and other["conv1"] == (1, 64, HW[0], HW[1] // 2)  # another size: a pass
    finally:
        handle.remove()


def test_layers_the_model_lacks_add_nothing():
    assert capture_shapes("resnet18", ["layer9.conv1"], HW) == {}
    assert capture_bytes("resnet18", ["layer9.conv1"], HW) == 0


def test_no_hook_is_left_on_the_shared_meta_model():
    from vizhooks.models.registry import meta_model

    capture_shapes("resnet18", LAYERS, HW)
    model = meta_model("resnet18")[0]
    assert sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules()) == 0


def test_a_capture_within_the_limit_returns_its_bytes_and_one_over_it_is_a_sentence():
    need = capture_bytes("resnet18", LAYERS, HW)
    assert check_capture("resnet18", LAYERS, HW, limit_mb=need / 1e6) == need  # exactly at the limit: allowed
    assert check_capture("resnet18", LAYERS, HW, copies=2, limit_mb=2 * need / 1e6) == 2 * need
    with pytest.raises(CaptureTooLargeError) as caught:
        check_capture("resnet18", LAYERS, HW, copies=2, limit_mb=need / 1e6)
    error = caught.value
    assert str(error) == (f"6 layers of resnet18 at 96 x 64 pixels would need {2 * need / 1e6:,.0f} MB for their "
                          f"feature maps and gradients; this server allows {need / 1e6:,.0f} MB per request. "
                          "Choose fewer layers or a smaller input size.")
    assert error.code == "capture_too_large"
    assert error.values == {"layers": 6, "model": "resnet18", "width": 96, "height": 64,
                            "need": round(2 * need / 1e6), "limit": round(need / 1e6), "gradients": True}
    with pytest.raises(CaptureTooLargeError, match="for their feature maps; this server"):
        check_capture("resnet18", LAYERS, HW, limit_mb=need / 1e6 * 0.99)


def test_the_default_limit_is_the_servers(monkeypatch):
    import vizhooks.hooks.budget as vb

    monkeypatch.setattr(vb, "MAX_CAPTURE_MB", 0.001)
    with pytest.raises(CaptureTooLargeError, match="allows 0 MB per request"):
        check_capture("resnet18", ["conv1"], HW)
    monkeypatch.setattr(vb, "MAX_CAPTURE_MB", 600.0)
    assert check_capture("resnet18", ["conv1"], HW) == 4 * 64 * 32 * 48
