"""Grad-CAM against the published formula (Selvaraju et al., 2017) written out here, fed by an
independent route to activations and gradients: torch.fx feature extraction + autograd.grad."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models.feature_extraction import create_feature_extractor

from vizhooks.hooks.gradients import gradient_pass
from vizhooks.interpret.cam import cam_from, cams_from, grad_cam


def _oracle(model: nn.Module, x: torch.Tensor, layer: str, target: int | None):
    """(activation, gradient, target) of ``layer`` without any hook."""
    clone = copy.deepcopy(model).eval()
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    extractor = create_feature_extractor(clone, return_nodes=[layer, "fc"])
    xg = x.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        out = extractor(xg)
        index = int(out["fc"][0].argmax()) if target is None else target
        (grad,) = torch.autograd.grad(out["fc"][0, index], [out[layer]])
    return out[layer].detach(), grad.detach(), index


def _grad_cam_formula(act: torch.Tensor, grad: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    alpha = grad[0].mean(dim=(1, 2))  # one weight per channel: global average of the gradient
    lin = torch.einsum("c,chw->hw", alpha, act[0])
    m = torch.clamp(lin, min=0)
    span = m.max() - m.min()
    m = (m - m.min()) / span if span > 0 else torch.zeros_like(m)
    up = F.interpolate(m[None, None], size=size, mode="bilinear", align_corners=False)[0, 0]
    return up.clamp(0, 1)


@pytest.mark.parametrize(
    ("fixture", "layer", "target"),
    [
        ("resnet18", "layer2.1.conv2", None),
        ("resnet18", "layer3.0.bn2", 7),
        pytest.param("resnet18", "layer4.1.conv2", None, marks=pytest.mark.slow),
        pytest.param("resnet50", "layer4.2.conv3", None, marks=pytest.mark.slow),
    ],
)
def test_grad_cam_matches_formula(request, fixture, layer, target, image_tensor):
    model = request.getfixturevalue(fixture).model
    act, grad, index = _oracle(model, image_tensor, layer, target)
    want = _grad_cam_formula(act, grad, tuple(image_tensor.shape[-2:]))
    got, used = grad_cam(model, image_tensor, layer, target=target, return_target=True)
    assert used == index
    assert got.shape == image_tensor.shape[-2:] == (96, 128)
    assert not torch.isnan(got).any()
    assert got.min() >= 0 and got.max() <= 1
    assert want.max() > 0  # a real map, not the all-zero fallback
    torch.testing.assert_close(got, want, rtol=0, atol=1e-4)


def test_return_target_default_is_top1(resnet18, image_tensor):
    model = resnet18.model
    with torch.no_grad():
        top1 = int(model(image_tensor)[0].argmax())
    cam, index = grad_cam(model, image_tensor, "layer4.1.conv2", return_target=True)
    assert index == top1
    plain = grad_cam(model, image_tensor, "layer4.1.conv2")
    assert isinstance(plain, torch.Tensor)
    torch.testing.assert_close(plain, cam)
    _, index = grad_cam(model, image_tensor, "layer4.1.conv2", target=top1 - 1 if top1 else 1, return_target=True)
    assert index == (top1 - 1 if top1 else 1)


# ----------------------------------------------------------------------------------------------
# degenerate maps come back as zeros, never NaN


def test_cam_from_zero_gradient_is_zero():
    act = torch.rand(1, 8, 5, 6) + 0.1
    cam = cam_from(act, torch.zeros_like(act), (20, 24))
    assert cam.shape == (20, 24)
    assert not torch.isnan(cam).any()
    assert torch.count_nonzero(cam) == 0


def test_cam_from_zero_activation_is_zero():
    grad = torch.rand(1, 8, 5, 6) + 0.1
    cam = cam_from(torch.zeros_like(grad), grad, (20, 24))
    assert not torch.isnan(cam).any()
    assert torch.count_nonzero(cam) == 0


def test_cam_from_constant_map_is_zero():
    # positive but spatially constant: max == min, so min-max scaling would divide by zero
    cam = cam_from(torch.ones(1, 4, 3, 3), torch.ones(1, 4, 3, 3), (9, 9))
    assert not torch.isnan(cam).any()
    assert torch.count_nonzero(cam) == 0


def test_cam_from_all_negative_map_is_zero():
    # ReLU removes everything
    cam = cam_from(torch.rand(1, 4, 3, 3) + 0.1, -torch.ones(1, 4, 3, 3), (9, 9))
    assert not torch.isnan(cam).any()
    assert torch.count_nonzero(cam) == 0


class _TwoHeads(nn.Module):
    """Logit 0 depends on ``conv``; logit 1 only on the raw input, so d logit1 / d conv = 0."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.head = nn.Linear(4, 1)
        self.other = nn.Linear(3, 1)

    def forward(self, x):
        a = self.conv(x).mean(dim=(2, 3))
        b = x.mean(dim=(2, 3))
        return torch.cat([self.head(a), self.other(b)], dim=1)


def test_grad_cam_target_not_influenced_by_layer_is_zero():
    torch.manual_seed(0)
    model = _TwoHeads().eval()
    x = torch.randn(1, 3, 16, 20, generator=torch.Generator().manual_seed(2))
    cam, index = grad_cam(model, x, "conv", target=1, return_target=True)
    assert index == 1
    assert cam.shape == (16, 20)
    assert not torch.isnan(cam).any()
    assert torch.count_nonzero(cam) == 0
    # the gradient really is zero there, and really not for the other target
    assert torch.count_nonzero(gradient_pass(model, x, ["conv"], target=1).gradients["conv"]) == 0
    assert torch.count_nonzero(gradient_pass(model, x, ["conv"], target=0).gradients["conv"]) > 0


# ----------------------------------------------------------------------------------------------
# several layers, several targets


def test_cams_from_one_map_per_layer(resnet18, image_tensor):
    layers = ["layer1.0.relu", "layer3.1.conv1", "layer4.1.conv2"]  # layer1.0.relu runs twice
    result = gradient_pass(resnet18.model, image_tensor, layers)
    cams = cams_from(result, image_tensor.shape[-2:])
    assert list(cams) == list(result.activations)
    assert set(cams) == {*layers, "layer1.0.relu#2"}
    for name, cam in cams.items():
        assert cam.shape == (96, 128), name
        assert not torch.isnan(cam).any() and cam.min() >= 0 and cam.max() <= 1
        want = _grad_cam_formula(result.activations[name], result.gradients[name], (96, 128))
        torch.testing.assert_close(cam, want, rtol=0, atol=1e-5, msg=name)
    single = grad_cam(resnet18.model, image_tensor, "layer3.1.conv1")
    torch.testing.assert_close(cams["layer3.1.conv1"], single, rtol=0, atol=1e-5)


def test_different_targets_give_different_maps(resnet18, image_tensor):
    model = resnet18.model
    a = grad_cam(model, image_tensor, "layer4.1.conv2", target=3)
    b = grad_cam(model, image_tensor, "layer4.1.conv2", target=900)
    assert a.max() > 0 and b.max() > 0
    assert (a - b).abs().max() > 1e-2


@pytest.mark.slow
def test_frame_cams_gives_each_frame_its_own_class_and_map(resnet18, image_tensor):
    """The video view's Grad-CAM: one map per frame, each from that frame's own top class (or one
    chosen class), equal to the formula on that frame alone."""
    from vizhooks.analysis import frame_cams

    model = resnet18.model
    frames = torch.cat([image_tensor, image_tensor.flip(-1) * 0.5, torch.randn_like(image_tensor)])
    calls: list[int] = []
    layer = "layer3.0.bn2"
    for target in (None, 3):
        cams = frame_cams(model, frames, [layer], target=target, progress=calls.append)
        assert set(cams) == {layer} and cams[layer].shape == (3, 96, 128)
        for i in range(3):
            act, grad, _ = _oracle(model, frames[i : i + 1], layer, target)
            want = _grad_cam_formula(act, grad, (96, 128))
            torch.testing.assert_close(cams[layer][i], want, rtol=0, atol=1e-4)
        assert not torch.allclose(cams[layer][0], cams[layer][2])  # not one frame's map repeated
    assert calls == [1, 2, 3, 1, 2, 3]
