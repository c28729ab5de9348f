"""capture() against an independent route: torchvision's create_feature_extractor (torch.fx)."""

from __future__ import annotations

import copy
import threading

import pytest
import torch
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor

from tests.helpers import count_hooks
from vizhooks import UnknownLayerError, capture, capture_with_output
from vizhooks.models.layers import conv_layers


def _not_inplace(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model)
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    return clone


def _oracle(model: nn.Module, x: torch.Tensor, nodes: list[str]) -> dict[str, torch.Tensor]:
    extractor = create_feature_extractor(_not_inplace(model), return_nodes=nodes)
    with torch.no_grad():
        return extractor(x)


@pytest.mark.slow
@pytest.mark.parametrize("fixture", ["resnet18", "resnet50"])
def test_every_conv_matches_feature_extractor(request, fixture, image_tensor):
    model = request.getfixturevalue(fixture).model
    names = [c.name for c in conv_layers(model)]
    assert len(names) == {"resnet18": 20, "resnet50": 53}[fixture]
    got = capture(model, image_tensor, names)
    want = _oracle(model, image_tensor, names)
    assert list(got) == names
    for name in names:
        assert got[name].shape == want[name].shape, name
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-5, msg=name)
    assert count_hooks(model) == 0


def test_bn_output_is_not_rewritten_by_inplace_relu(resnet18, image_tensor):
    model = resnet18.model
    assert model.relu.inplace and model.layer1[0].relu.inplace  # the hazard is really there
    names = ["bn1", "layer1.0.bn1", "layer2.1.bn2"]
    got = capture(model, image_tensor, names)
    want = _oracle(model, image_tensor, names)
    for name in names:
        torch.testing.assert_close(got[name], want[name], rtol=1e-5, atol=1e-5)
        assert got[name].min() < 0  # a BatchNorm output has negatives; a ReLU'd copy would not

    # The check above can fail: a hook that keeps the tensor without copying sees it rewritten.
    kept = []
    handle = model.bn1.register_forward_hook(lambda m, a, out: kept.append(out.detach()))
    try:
        with torch.no_grad():
            model(image_tensor)
    finally:
        handle.remove()
    assert kept[0].min() >= 0
    assert not torch.allclose(kept[0], want["bn1"])


def test_reused_module_keeps_every_call(resnet18, image_tensor):
    model = resnet18.model
    got = capture(model, image_tensor, ["layer1.0.relu", "conv1"])
    assert list(got) == ["layer1.0.relu", "layer1.0.relu#2", "conv1"]
    want = _oracle(model, image_tensor, ["layer1.0.relu", "layer1.0.relu_1"])
    torch.testing.assert_close(got["layer1.0.relu"], want["layer1.0.relu"])
    torch.testing.assert_close(got["layer1.0.relu#2"], want["layer1.0.relu_1"])


@pytest.mark.slow
def test_input_capture_uses_pre_hook(resnet18, image_tensor):
    model = resnet18.model
    got = capture(model, image_tensor, ["layer1.0.conv2", "fc"], what="input")
    want = _oracle(model, image_tensor, ["layer1.0.relu", "flatten"])
    torch.testing.assert_close(got["layer1.0.conv2"], want["layer1.0.relu"])
    torch.testing.assert_close(got["fc"], want["flatten"])
    assert count_hooks(model) == 0


def test_order_as_asked_and_cpu_copies(resnet18, image_tensor):
    got = capture(resnet18.model, image_tensor, ["layer3.0.conv1", "conv1", "layer2.0.conv1"])
    assert list(got) == ["layer3.0.conv1", "conv1", "layer2.0.conv1"]
    for t in got.values():
        assert t.device.type == "cpu" and not t.requires_grad and not t.is_inference()
        t.mul_(2)  # callers may modify what they got


def test_logits_from_the_same_pass(resnet18, image_tensor):
    acts, logits = capture_with_output(resnet18.model, image_tensor, ["fc"])
    with torch.no_grad():
        want = resnet18.model(image_tensor)
    torch.testing.assert_close(logits, want)
    torch.testing.assert_close(acts["fc"], want)


def test_unknown_layer_suggests_and_leaves_no_hook(resnet18, image_tensor):
    with pytest.raises(KeyError) as info:
        capture(resnet18.model, image_tensor, ["conv1", "layer1.0.conv3"])
    assert isinstance(info.value, UnknownLayerError)
    assert "layer1.0.conv1" in str(info.value) and "layer1.0.conv3" in str(info.value)
    assert count_hooks(resnet18.model) == 0


def test_failing_forward_leaves_no_hook(resnet18, image_tensor):
    model = resnet18.model

    def broken(*args, **kwargs):
        raise RuntimeError("simulated failure inside the network")

    model.layer3.forward = broken
    try:
        with pytest.raises(RuntimeError, match="simulated"):
            capture(model, image_tensor, ["conv1", "layer4.0.conv1"])
        with pytest.raises(RuntimeError, match="simulated"):
            capture(model, image_tensor, ["conv1"], what="input")
    finally:
        del model.layer3.forward
    assert count_hooks(model) == 0
    capture(model, image_tensor, ["conv1"])  # still usable


@pytest.mark.parametrize("bad", [torch.zeros(3, 32, 32), torch.zeros(1, 1, 32, 32), "x"])
def test_bad_input_tensor(resnet18, bad):
    with pytest.raises(ValueError, match="image tensor"):
        capture(resnet18.model, bad, ["conv1"])


def test_bad_what(resnet18, image_tensor):
    with pytest.raises(ValueError, match="what"):
        capture(resnet18.model, image_tensor, ["conv1"], what="gradient")


@pytest.mark.slow
def test_threads_each_get_their_own_activations(resnet18):
    model = resnet18.model
    layers = ["conv1", "layer2.0.conv1", "layer4.1.conv2"]
    inputs = [torch.randn(1, 3, 64, 64 + 8 * i, generator=torch.Generator().manual_seed(i))
              for i in range(8)]
    expected = [capture(model, x, layers) for x in inputs]
    errors: list[BaseException] = []
    mismatches: list[int] = []
    barrier = threading.Barrier(len(inputs))

    def worker(i: int) -> None:
        try:
            barrier.wait()
            for _ in range(3):
                got = capture(model, inputs[i], layers)
                for name in layers:
                    if not torch.equal(got[name], expected[i][name]):
                        mismatches.append(i)
        except BaseException as exc:  # collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(len(inputs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a capture thread hung"
    assert not errors and not mismatches
    assert count_hooks(model) == 0
