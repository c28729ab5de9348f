"""Explanation methods against independent answers: torch-cam's extractors (a second library),
formulas written out here (Grad-CAM++'s equation 19, Score-CAM, Eigen-CAM's SVD, Guided Grad-CAM,
Occlusion as a plain loop), torch.autograd.grad, Integrated Gradients' completeness, and
pytorch-grad-cam's own Guided Backprop (autograd Functions in place of the ReLUs, no hooks).

Seeded random weights and small pictures: no network, no pretrained weights.
"""

from __future__ import annotations

import copy
import functools
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import vizhooks
from tests.helpers import count_hooks
from vizhooks.interpret.cam import grad_cam
from vizhooks.interpret.methods import (
    CAM_METHODS,
    INPUT_METHODS,
    METHODS,
    ExplainError,
    attribute,
    default_layers,
    explain,
    ig_baseline_of,
)
from vizhooks.models.registry import load_model

#: The deeper model of the comparisons: its runs are the slow ones, left out of `make test-fast`.
RESNET50 = pytest.param("resnet50", marks=pytest.mark.slow)
#: Three layers of each model: a conv, a BatchNorm whose output ``out += identity`` rewrites in
#: place, and a whole block.
LAYERS = {
    "resnet18": ["layer2.1.conv2", "layer3.0.bn2", "layer4.1"],
    "resnet50": ["layer2.0.conv3", "layer3.1.bn3", "layer4.2"],
}


def _picture(h: int = 48, w: int = 64, seed: int = 1) -> torch.Tensor:
    return torch.randn(1, 3, h, w, generator=torch.Generator().manual_seed(seed))


def _two_classes(model: nn.Module, x: torch.Tensor) -> list[int]:
    """The picture's top two classes: on random weights most other classes get all-zero maps
    (every channel weight negative), which would make a comparison prove nothing."""
    with torch.no_grad():
        return model(x)[0].topk(2).indices.tolist()


def _corr(a: torch.Tensor, b: torch.Tensor) -> float:
    return float(torch.corrcoef(torch.stack([a.flatten().double(), b.flatten().double()]))[0, 1])


def _plain_copy(model: nn.Module) -> nn.Module:
    clone = copy.deepcopy(model).eval()
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
    return clone


def _scale(cam: torch.Tensor) -> torch.Tensor:
    cam = cam - cam.min()
    return cam / (cam.max() + 1e-7)


def _up(cam: torch.Tensor, size) -> torch.Tensor:
    return F.interpolate(cam[None, None], size=tuple(size), mode="bilinear", align_corners=False)[0, 0]


def _library_map(cam: torch.Tensor, size) -> torch.Tensor:
    """pytorch-grad-cam's path from a low-resolution map: ReLU, scale, resize, scale again."""
    return _scale(_up(_scale(cam.clamp(min=0)), size))


def _torchcam(kind: str, model: nn.Module, x: torch.Tensor, layer: str, cls: int, **kw):
    """torch-cam's map for one layer, upsampled, and the activation and gradient it used.

    ``reshape_transform`` clones what torch-cam keeps: it stores ``output.detach()``, which
    ResNet's ``out += identity`` rewrites after the hook (the same trap vizhooks avoids)."""
    import torchcam.methods as tcm

    clone = _plain_copy(model)
    extractor = getattr(tcm, kind)(clone, [layer], reshape_transform=lambda t: t.clone(), **kw)
    with extractor:
        if kind == "ScoreCAM":
            with torch.no_grad():
                clone(x)
            cams = extractor(class_idx=cls)
        else:
            cams = extractor(class_idx=cls, scores=clone(x))
        act, grad = extractor.hook_a[0], extractor.hook_g[0]
    return _up(cams[0][0], x.shape[-2:]), act, grad


def _real(m: torch.Tensor) -> torch.Tensor:
    assert m.abs().max() > 0 and m.std() > 1e-2 * m.abs().max(), "a flat map: the comparison would prove nothing"
    return m


# ----------------------------------------------------------------------------------------------
# the CAM family


def test_gradcam_is_vizhooks_grad_cam_and_layers_are_averaged(resnet18):
    x = _picture()
    layers = LAYERS["resnet18"]
    for cls in _two_classes(resnet18.model, x):
        ours = [explain(resnet18, x, cls, ["gradcam"], [layer])["gradcam"] for layer in layers]
        want = [grad_cam(resnet18.model, x, layer, target=cls) for layer in layers]
        for got, expected in zip(ours, want, strict=True):
            torch.testing.assert_close(got, _real(expected), rtol=0, atol=0)
        together = explain(resnet18, x, cls, ["gradcam"], layers)["gradcam"]
        torch.testing.assert_close(together, _scale(torch.stack(want).mean(0)), rtol=0, atol=1e-6)
        assert together.dtype == torch.float32 and together.shape == (48, 64)
        assert together.min() >= 0 and together.max() <= 1


@pytest.mark.parametrize("method", ["gradcam", "xgradcam", "layercam"])
@pytest.mark.parametrize("arch", ["resnet18", RESNET50])
def test_cam_equals_torchcam(request, arch, method):
    bundle = request.getfixturevalue(arch)
    kind = {"gradcam": "GradCAM", "xgradcam": "XGradCAM", "layercam": "LayerCAM"}[method]
    x = _picture()
    for layer in LAYERS[arch]:
        for cls in _two_classes(bundle.model, x):
            ours = explain(bundle, x, cls, [method], [layer])[method]
            theirs, _, _ = _torchcam(kind, bundle.model, x, layer, cls)
            assert _corr(ours, _real(theirs)) > 0.99, (layer, cls)


def _tokens_to_grid(t: torch.Tensor) -> torch.Tensor:
    """A ViT block's (N, 1 + h*w, D) tokens as an (N, D, h, w) map, the class token left out: written here for the
    test, as pytorch-grad-cam's and torch-cam's ViT tutorials write it."""
    side = int(math.isqrt(t.shape[1] - 1))
    return t[:, 1:, :].reshape(t.shape[0], side, side, t.shape[2]).permute(0, 3, 1, 2).clone()


@pytest.mark.parametrize("method", ["gradcam", "xgradcam", "layercam"])
def test_cams_of_a_vits_tokens_equal_torchcam_over_the_patch_grid(method):
    """QA 2026-12-06: `explain --model vit_b_16` refused its own default layer (the last block: tokens, not a
    map); every CAM now takes a ViT's tokens over its patch grid, as the page and grad_cam show them."""
    import torchvision

    torch.manual_seed(0)
    vit = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16,
                                               mlp_dim=32, num_classes=10).eval()
    nn.init.normal_(vit.heads.head.weight)  # torchvision starts the head at zero: no class would have a gradient
    x, layer = _picture(32, 32), "encoder.layers.encoder_layer_1.ln_1"  # the last block reaches the head only through
    # its class token: the patch tokens of its output get no gradient, those of its first norm do
    kind = {"gradcam": "GradCAM", "xgradcam": "XGradCAM", "layercam": "LayerCAM"}[method]
    import torchcam.methods as tcm

    for cls in _two_classes(vit, x):
        ours = explain(vit, x, cls, [method], [layer])[method]
        clone = copy.deepcopy(vit)
        with tcm.__dict__[kind](clone, [layer], reshape_transform=_tokens_to_grid) as extractor:
            theirs = _up(extractor(class_idx=cls, scores=clone(x))[0][0], x.shape[-2:])
        assert ours.shape == (32, 32) and _corr(ours, _real(theirs)) > 0.99, cls


def _gradcampp_weights(act: torch.Tensor, grad: torch.Tensor, lost_division: bool) -> torch.Tensor:
    """Equation 19 of Chattopadhay et al. (alpha = g^2 / (2 g^2 + sum(A) g^3)), or torch-cam 0.5's
    result, where the division happens in a boolean-indexed copy and is lost (alpha = g^2)."""
    g2, g3 = grad**2, grad**3
    alpha = g2 if lost_division else g2 / (2 * g2 + act.sum(dim=(2, 3), keepdim=True) * g3 + 1e-6)
    alpha = torch.where(grad != 0, alpha, torch.zeros_like(alpha))
    return (alpha * grad.clamp(min=0)).sum(dim=(2, 3))


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["resnet18", RESNET50])
def test_gradcampp_follows_the_paper_and_torchcam_loses_its_division(request, arch):
    bundle = request.getfixturevalue(arch)
    x = _picture()
    for layer in LAYERS[arch]:
        for cls in _two_classes(bundle.model, x):
            theirs, act, grad = _torchcam("GradCAMpp", bundle.model, x, layer, cls)
            paper = (_gradcampp_weights(act, grad, False)[0, :, None, None] * act[0]).sum(0)
            ours = explain(bundle, x, cls, ["gradcampp"], [layer])["gradcampp"]
            assert _corr(ours, _real(_library_map(paper, x.shape[-2:]))) > 0.99, (layer, cls)
            lost = (_gradcampp_weights(act, grad, True)[0, :, None, None] * act[0]).sum(0)
            assert _corr(theirs, _library_map(lost, x.shape[-2:])) > 0.99, (layer, cls)


def _score_cam(model: nn.Module, x: torch.Tensor, act: torch.Tensor, classes, upsample_first: bool):
    """Score-CAM (Wang et al.) written out: each channel, scaled to [0, 1] and upsampled, masks the
    photo; the masked photos' class scores, softmaxed over channels, weight the channels.
    ``upsample_first``: pytorch-grad-cam's order (align_corners=True, then scale); otherwise
    torch-cam's (scale, then upsample with align_corners=False)."""
    size = x.shape[-2:]
    a = act[0][:, None]
    if upsample_first:
        masks = F.interpolate(a, size=tuple(size), mode="bilinear", align_corners=True)
        lo, hi = masks.amin(dim=(2, 3), keepdim=True), masks.amax(dim=(2, 3), keepdim=True)
        masks = (masks - lo) / (hi - lo + 1e-8)
    else:
        lo, hi = a.amin(dim=(2, 3), keepdim=True), a.amax(dim=(2, 3), keepdim=True)
        masks = F.interpolate((a - lo) / (hi - lo + 1e-8), size=tuple(size), mode="bilinear", align_corners=False)
    with torch.no_grad():
        scores = torch.cat([model(x * masks[i : i + 64]) for i in range(0, len(masks), 64)])
    maps = {}
    for cls in classes:
        weights = torch.softmax(scores[:, cls], dim=0)
        maps[cls] = (weights[:, None, None] * act[0]).sum(0)
    return maps


@pytest.mark.slow
@pytest.mark.parametrize(
    ("arch", "layers"),
    [("resnet18", ["layer1.0.conv1", "layer1.0.bn2", "layer1.1"]),
     pytest.param("resnet50", ["layer1.0.conv1", "layer1.2.bn2", "layer2.0.conv1"], marks=pytest.mark.slow)],
)
def test_scorecam_is_the_formula_and_torchcam_differs_only_in_mask_order(request, arch, layers):
    bundle = request.getfixturevalue(arch)
    x = _picture(32, 32)
    clone = _plain_copy(bundle.model)
    classes = _two_classes(bundle.model, x)
    for layer in layers:
        mine, theirs = {}, {}
        for cls in classes:
            mine[cls] = explain(bundle, x, cls, ["scorecam"], [layer], batch_size=64)["scorecam"]
            theirs[cls], act, _ = _torchcam("ScoreCAM", bundle.model, x, layer, cls, batch_size=64)
        ours_formula = _score_cam(clone, x, act, classes, upsample_first=True)
        torchcam_formula = _score_cam(clone, x, act, classes, upsample_first=False)
        for cls in classes:
            assert _corr(mine[cls], _real(_library_map(ours_formula[cls], x.shape[-2:]))) > 0.99, (layer, cls)
            assert _corr(theirs[cls], _real(_up(_scale(torchcam_formula[cls].clamp(min=0)),
                                                x.shape[-2:]))) > 0.99, (layer, cls)


@pytest.mark.slow
def test_eigencam_is_the_first_principal_component(resnet18):
    x = _picture()
    for layer in LAYERS["resnet18"]:
        _, act, _ = _torchcam("GradCAM", resnet18.model, x, layer, 3)
        flat = act[0].flatten(1).T  # (h*w, C)
        centred = flat - flat.mean(dim=0)
        _, _, vt = torch.linalg.svd(centred.double(), full_matrices=False)
        projection = (centred.double() @ vt[0]).float().view(act.shape[-2:])
        ours = explain(resnet18, x, 3, ["eigencam"], [layer])["eigencam"]
        # a principal component has no sign of its own: the map is one of the two, and they differ
        plus, minus = (_library_map(s * projection, x.shape[-2:]) for s in (1, -1))
        assert _corr(plus, minus) < 0.5
        assert max(_corr(ours, _real(plus)), _corr(ours, _real(minus))) > 0.99, layer
        # the class plays no part in Eigen-CAM
        torch.testing.assert_close(explain(resnet18, x, 7, ["eigencam"], [layer])["eigencam"], ours)


# ----------------------------------------------------------------------------------------------
# input attributions


def _class_score_grad(model: nn.Module, x: torch.Tensor, cls: int) -> torch.Tensor:
    xg = x.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(_plain_copy(model)(xg)[0, cls], xg)
    return grad[0]


@pytest.mark.slow
def test_saliency_is_the_gradient_of_the_class_score(resnet18):
    x = _picture()
    for cls in _two_classes(resnet18.model, x):
        grad = _class_score_grad(resnet18.model, x, cls)
        raw = explain(resnet18, x, cls, ["saliency"], raw=True)["saliency"]
        torch.testing.assert_close(raw, grad.abs(), rtol=1e-4, atol=1e-7)
        shown = explain(resnet18, x, cls, ["saliency"])["saliency"]
        torch.testing.assert_close(shown, grad.abs().amax(dim=0), rtol=1e-4, atol=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("baseline", ["black", "blur"])
def test_integrated_gradients_add_up_to_the_score_difference(resnet18, baseline):
    x = _picture(32, 32)
    cls = 3
    raw = explain(resnet18, x, cls, ["ig"], ig_steps=200, ig_baseline=baseline, raw=True)["ig"]
    start = ig_baseline_of(x, baseline, (resnet18.input.mean, resnet18.input.std))
    with torch.no_grad():
        gap = float(resnet18.model(x)[0, cls] - resnet18.model(start)[0, cls])
    assert abs(gap) > 1e-3
    assert abs(float(raw.sum()) - gap) <= 0.01 * abs(gap)
    shown = explain(resnet18, x, cls, ["ig"], ig_steps=200, ig_baseline=baseline)["ig"]
    torch.testing.assert_close(shown, raw.sum(dim=0))


def test_black_is_the_normalised_black_picture_and_blur_keeps_the_colours(resnet18):
    x = _picture(32, 32)
    mean, std = resnet18.input.mean, resnet18.input.std
    black = ig_baseline_of(x, "black", (mean, std))
    for c in range(3):
        assert torch.allclose(black[0, c], torch.full((32, 32), -mean[c] / std[c]))
    assert torch.count_nonzero(ig_baseline_of(x, "black")) == 0  # a bare module: zeros
    blur = ig_baseline_of(x, "blur")
    torch.testing.assert_close(blur.mean(dim=(2, 3)), x.mean(dim=(2, 3)), rtol=0, atol=0.05)
    assert blur.std() < 0.3 * x.std()


def test_occlusion_is_a_plain_loop_over_windows(resnet18):
    x = _picture(32, 32)
    cls, window, stride = 3, 8, 4
    raw = explain(resnet18, x, cls, ["occlusion"], occlusion_window=window, raw=True)["occlusion"]
    model = resnet18.model
    total, count = torch.zeros(32, 32), torch.zeros(32, 32)
    with torch.no_grad():
        base = float(model(x)[0, cls])
        for top in range(0, 32 - window + 1, stride):
            for left in range(0, 32 - window + 1, stride):
                hidden = x.clone()
                hidden[..., top : top + window, left : left + window] = 0
                total[top : top + window, left : left + window] += base - float(model(hidden)[0, cls])
                count[top : top + window, left : left + window] += 1
    want = total / count
    for c in range(3):
        torch.testing.assert_close(raw[c], want, rtol=1e-4, atol=1e-5)


def test_smoothgrad_is_repeatable_and_leaves_the_random_stream_alone(resnet18):
    x = _picture(32, 32)
    torch.manual_seed(123)
    expected_next = torch.rand(3)
    torch.manual_seed(123)
    a = explain(resnet18, x, 3, ["smoothgrad"], smooth_samples=4)["smoothgrad"]
    torch.testing.assert_close(torch.rand(3), expected_next)
    b = explain(resnet18, x, 3, ["smoothgrad"], smooth_samples=4)["smoothgrad"]
    torch.testing.assert_close(a, b)
    plain = explain(resnet18, x, 3, ["saliency"])["saliency"]
    assert a.min() >= 0 and not torch.allclose(a, plain)


class _GuidedReLU(torch.autograd.Function):
    """ReLU whose backward passes only positive gradients where the input was positive."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.clamp(min=0)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * (x > 0) * (grad > 0)


class _GuidedModule(nn.Module):
    def forward(self, x):
        return _GuidedReLU.apply(x)


def _guided_backprop(model: nn.Module, x: torch.Tensor, cls: int) -> torch.Tensor:
    """Guided Backprop with no hook: every ReLU module of a copy becomes the Function above (a
    ResNet block calls its one ReLU several times; a Function has no per-module state to mix up)."""
    clone = _plain_copy(model)
    for parent in list(clone.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, nn.ReLU):
                setattr(parent, name, _GuidedModule())
    return _class_score_grad(clone, x, cls)


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["resnet18", RESNET50])
def test_guided_backprop_and_guided_gradcam_equal_hook_free_formulas(request, arch):
    bundle = request.getfixturevalue(arch)
    x = _picture()
    layer = LAYERS[arch][2]
    for cls in _two_classes(bundle.model, x):
        guided = _guided_backprop(bundle.model, x, cls)
        maps = explain(bundle, x, cls, ["guidedbackprop", "guidedgradcam"], [layer], raw=True)
        torch.testing.assert_close(maps["guidedbackprop"], _real(guided), rtol=1e-4, atol=1e-6)
        _, act, grad = _torchcam("GradCAM", bundle.model, x, layer, cls)
        cam = (grad.mean(dim=(2, 3))[0, :, None, None] * act[0]).sum(0).clamp(min=0)
        torch.testing.assert_close(maps["guidedgradcam"], _real(guided * _up(cam, x.shape[-2:])),
                                   rtol=1e-3, atol=1e-6)
    # the shared model's ReLUs are still in place: only the copy was changed
    relus = [m for m in bundle.model.modules() if isinstance(m, nn.ReLU)]
    assert relus and all(m.inplace for m in relus)


def test_attribute_takes_batches_and_serves_captums_sensitivity(resnet18):
    from captum.metrics import sensitivity_max

    x = torch.cat([_picture(32, 32, 1), _picture(32, 32, 2)])
    both = attribute(resnet18, x, [3, 7], "saliency")
    assert both.shape == x.shape and both.dtype == torch.float32
    for i, cls in enumerate((3, 7)):
        torch.testing.assert_close(both[i], explain(resnet18, x[i : i + 1], cls, ["saliency"], raw=True)["saliency"])
    fn = functools.partial(attribute, resnet18, method="saliency")
    score = sensitivity_max(fn, x[:1], target=3, n_perturb_samples=3)
    assert score.shape == (1,) and torch.isfinite(score).all()
    with pytest.raises(ExplainError, match="input attribution"):
        attribute(resnet18, x, 3, "gradcam")


# ----------------------------------------------------------------------------------------------
# LRP against Zennit called directly


def _zennit_relevance(model: nn.Module, x: torch.Tensor, target: int, canonizers: list) -> torch.Tensor:
    """Zennit's own attributor on a copy (ReLUs not in place): composite EpsilonPlusFlat with these
    canonizers, the relevance starting as the target logit at the target class."""
    from zennit.attribution import Gradient
    from zennit.composites import EpsilonPlusFlat

    model = _plain_copy(model)
    with Gradient(model, EpsilonPlusFlat(canonizers=canonizers)) as attributor:
        _, relevance = attributor(x.clone(), lambda out: out * torch.eye(out.shape[-1])[[target]])
    return relevance[0].detach()


def _bn_net() -> nn.Module:
    """A VGG-BN-like net whose BatchNorm is far from the identity, so merging it changes the map."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True), nn.MaxPool2d(2),
                        nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))
    g = torch.Generator().manual_seed(1)
    for m in net.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.rand(m.num_features, generator=g) * 0.2 - 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)
            m.weight.data.copy_(torch.rand(m.num_features, generator=g) + 0.5)
    return net.eval()


def test_lrp_map_equals_zennit_called_directly_on_a_resnet(resnet18):
    from zennit.torchvision import ResNetCanonizer

    x = _picture(32, 32, 4)
    cls = _two_classes(resnet18.model, x)[1]
    maps = explain(resnet18, x, cls, ["lrp", "gradcam"])
    expected = _zennit_relevance(resnet18.model, x, cls, [ResNetCanonizer()])
    torch.testing.assert_close(maps["lrp"], expected.sum(dim=0), rtol=1e-4, atol=1e-7)
    torch.testing.assert_close(explain(resnet18, x, cls, ["lrp"], raw=True)["lrp"], expected, rtol=1e-4, atol=1e-7)
    assert maps["lrp"].shape == (32, 32) and maps["lrp"].dtype == torch.float32
    assert count_hooks(resnet18.model) == 0


def test_lrp_map_on_a_batchnorm_net_merges_batchnorm_as_zennit_does():
    from zennit.torchvision import VGGCanonizer

    net, x = _bn_net(), _picture(32, 32, 5)
    top1 = int(net(x)[0].argmax())
    found = explain(net, x, methods=["lrp"])["lrp"]
    torch.testing.assert_close(found, _zennit_relevance(net, x, top1, [VGGCanonizer()]).sum(dim=0),
                               rtol=1e-4, atol=1e-7)
    # Zennit without the canonizer gives another map: merging BatchNorm is part of the answer
    assert not torch.allclose(found, _zennit_relevance(net, x, top1, []).sum(dim=0), rtol=1e-2)


def test_attribute_gives_lrp_per_picture_for_its_own_class(resnet18):
    from zennit.torchvision import ResNetCanonizer

    x = torch.cat([_picture(32, 32, 1), _picture(32, 32, 2)])
    both = attribute(resnet18, x, [3, 7], "lrp")
    assert both.shape == x.shape and both.dtype == torch.float32
    for i, cls in enumerate((3, 7)):
        torch.testing.assert_close(both[i], _zennit_relevance(resnet18.model, x[i:i + 1], cls, [ResNetCanonizer()]),
                                   rtol=1e-4, atol=1e-7)


def test_sanity_check_draws_lrp_on_each_randomised_copy(resnet18):
    """The sanity check runs LRP like the other methods: after a step, the map is Zennit's on a copy
    whose stage the test re-initialises by hand; the shared model keeps its weights."""
    from zennit.torchvision import ResNetCanonizer

    from vizhooks.interpret.sanity import sanity_check, spearman

    x = _picture(32, 32, 6)
    before = _state(resnet18.model)
    result = sanity_check(resnet18, x, methods=["lrp"], stages=["fc", "layer4"], seed=5)
    by_hand = copy.deepcopy(resnet18.model)
    for i, stage in enumerate(("fc", "layer4"), 1):
        torch.manual_seed(5 + i)
        for m in by_hand.get_submodule(stage).modules():
            if hasattr(m, "reset_parameters"):
                m.reset_parameters()
            if isinstance(m, nn.BatchNorm2d):
                m.reset_running_stats()
    expected = _zennit_relevance(by_hand, x, result.target, [ResNetCanonizer()]).sum(dim=0)
    torch.testing.assert_close(result.maps["lrp"][2], expected, rtol=1e-4, atol=1e-7)
    assert result.correlations["lrp"][-1] == pytest.approx(spearman(result.maps["lrp"][0], expected), abs=1e-6)
    assert all(torch.equal(before[k], v) for k, v in resnet18.model.state_dict().items())
    assert count_hooks(resnet18.model) == 0


# ----------------------------------------------------------------------------------------------
# the shared model: hooks, state, parameters


def _state(model: nn.Module):
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.fixture
def own_resnet18():
    """A model of this test alone: it is put in training mode and given a gradient."""
    return load_model("resnet18", weights="none", device="cpu")


@pytest.mark.slow
def test_every_method_leaves_no_hook_and_the_model_as_it_was(own_resnet18):
    model = own_resnet18.model
    model.train()
    model.layer2.eval()
    frozen = model.layer1[0].conv1.weight
    frozen.requires_grad_(False)
    fc = model.fc.weight
    fc.grad = torch.full_like(fc, 0.5)
    before = _state(model)
    flags = {name: m.training for name, m in model.named_modules()}
    maps = explain(own_resnet18, _picture(32, 32), 3, METHODS, ["layer3.0.bn2"], batch_size=64,
                   ig_steps=8, smooth_samples=2)
    assert list(maps) == list(METHODS)
    for name, m in maps.items():
        assert m.shape == (32, 32) and m.dtype == torch.float32 and m.device.type == "cpu", name
        assert torch.isfinite(m).all(), name
    for name in CAM_METHODS:
        assert maps[name].min() >= 0 and maps[name].max() <= 1, name
    assert count_hooks(model) == 0
    after = _state(model)
    assert all(torch.equal(before[k], after[k]) for k in before)  # BatchNorm statistics included
    assert {name: m.training for name, m in model.named_modules()} == flags
    assert not frozen.requires_grad and fc.requires_grad
    assert torch.equal(fc.grad, torch.full_like(fc, 0.5))
    assert all(m.inplace for m in model.modules() if isinstance(m, nn.ReLU))


class _Boom(RuntimeError):
    pass


@pytest.mark.parametrize("method", METHODS)
def test_a_failure_midway_leaves_no_hook(own_resnet18, monkeypatch, method):
    model = own_resnet18.model
    model.train()
    before = _state(model)
    # LRP's copy is canonized: Zennit's ResNetCanonizer gives each block a forward of its own, so
    # the failure sits in a convolution inside the block, which every method runs
    block = model.layer4[1].conv1 if method == "lrp" else model.layer4[1]
    real = block.forward
    calls = {"n": 0}
    # explain's own check runs the model once first (top-1 class and the CAM layers' shapes in one
    # pass): fail after it, inside the library's work, with its hooks on the model
    checks = 1

    def failing(x):
        calls["n"] += 1
        if calls["n"] > checks:
            raise _Boom("mid-way")
        return real(x)

    monkeypatch.setattr(block, "forward", failing)
    with pytest.raises(_Boom) as failure:
        explain(own_resnet18, _picture(32, 32), 3, [method], ["layer3.1"], batch_size=64, ig_steps=8,
                smooth_samples=2)
    monkeypatch.undo()
    # counted while the traceback (and with it the library's objects) is still alive, as it is
    # while a page shows the error: a hook left for the garbage collector to remove counts
    assert failure.value is not None and count_hooks(model) == 0, method
    assert model.training and all(m.training for m in model.modules())
    after = _state(model)
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_a_target_out_of_range_is_one_sentence_and_leaves_no_hook(resnet18):
    for method in ("gradcam", "scorecam", "ig", "guidedbackprop"):
        with pytest.raises(ExplainError, match=r"^target must be a class index from 0 to 999, not 1000\.$") as err:
            explain(resnet18, _picture(32, 32), 1000, [method])
        assert err.value.code == "explain_target"
        assert count_hooks(resnet18.model) == 0


def test_unknown_method_names_every_known_one():
    with pytest.raises(ExplainError) as err:
        explain(nn.Conv2d(3, 3, 1), _picture(8, 8), methods=["gradcam", "gradcam++"])
    message = str(err.value)
    assert err.value.code == "explain_method" and err.value.values["method"] == "gradcam++"
    assert message.count(".") == 1 + message.count("e.g.") and message.endswith(".")
    assert "'gradcam++'" in message and all(m in message for m in METHODS)


@pytest.mark.parametrize(
    ("kwargs", "code"),
    [({"methods": []}, "explain_method"), ({"ig_steps": 0}, "explain_setting"),
     ({"ig_baseline": "white"}, "explain_setting"), ({"layers": ["fc"]}, "explain_layer")],
)
def test_bad_settings_are_one_sentence(resnet18, kwargs, code):
    with pytest.raises(ExplainError) as err:
        explain(resnet18, _picture(32, 32), **{"methods": ["gradcam"], **kwargs})
    assert err.value.code == code and str(err.value).endswith(".") and "\n" not in str(err.value)


# ----------------------------------------------------------------------------------------------
# defaults, progress, the public name


@pytest.mark.parametrize(
    ("arch", "layer"),
    [("resnet18", "layer4.1"), ("resnet50", "layer4.2"), ("vgg16", "features.29"),
     ("efficientnet_b0", "features.8.0"), ("convnext_tiny", "features.7.2"), ("googlenet", "inception5b"),
     ("vit_b_16", "encoder.layers.encoder_layer_11.ln_1"), ("swin_t", "features.7.1")],
)
def test_default_layer_is_the_last_block_or_a_later_conv(arch, layer):
    from vizhooks.models.architectures import build

    assert default_layers(build(arch, device="meta")) == [layer]


def test_default_layer_is_used_when_none_is_given(resnet18):
    x = _picture()
    torch.testing.assert_close(explain(resnet18, x, 3)["gradcam"], grad_cam(resnet18.model, x, "layer4.1", target=3))
    with torch.no_grad():
        top1 = int(resnet18.model(x)[0].argmax())
    torch.testing.assert_close(explain(resnet18.model, x)["gradcam"],
                               grad_cam(resnet18.model, x, "layer4.1", target=top1))


def test_slow_methods_report_progress_and_print_nothing(resnet18, capfd):
    seen: list[tuple[int, int, str]] = []
    explain(resnet18, _picture(32, 32), 3, ["scorecam", "occlusion", "ig", "smoothgrad"],
            ["layer1.0.conv1", "layer2.0"], batch_size=32, ig_steps=80, smooth_samples=4, occlusion_window=8,
            progress=lambda done, total, method: seen.append((done, total, method)))
    out, err = capfd.readouterr()
    assert out == "" and "it/s" not in err and "%|" not in err  # no tqdm bar
    # Score-CAM: 64 + 128 channels; Occlusion: the photo, then 7 x 7 windows; IG: 80 steps
    for method, total in (("scorecam", 2 + 4), ("occlusion", 1 + 2), ("ig", 3), ("smoothgrad", 1)):
        calls = [(d, t) for d, t, m in seen if m == method]
        assert calls[-1] == (total, total), method
        assert [d for d, _ in calls] == sorted(d for d, _ in calls), method


def test_vizhooks_explain_is_the_function():
    assert vizhooks.explain is explain
    assert "explain" in vizhooks.__all__
    assert set(METHODS) == set(CAM_METHODS) | set(INPUT_METHODS) and len(METHODS) == 13
