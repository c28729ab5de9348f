"""The sanity check (vizhooks/interpret/sanity.py): cascading randomisation on a copy, Spearman and SSIM against
independent computations (scipy's spearmanr, an SSIM written here as a plain loop), the shared model
untouched, no NaN, no hook left."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from scipy import stats

import vizhooks as vz
from tests.helpers import ROOT
from vizhooks.interpret.methods import ExplainError, explain
from vizhooks.interpret.sanity import FLAG_AT, SanityResult, randomisation_stages, sanity_check, spearman, ssim
from vizhooks.ops import hook_count


@pytest.fixture(scope="module")
def photo_x(resnet18):
    return resnet18.preprocess(vz.load_image(ROOT / "sample_images" / "chelsea.jpg"), 224)


def _state(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


@pytest.mark.parametrize("seed", range(4))
def test_spearman_is_scipys_also_with_ties(seed):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(20, 30, generator=g)
    b = a + 0.8 * torch.randn(20, 30, generator=g)
    if seed % 2:  # ties: a CAM's zeros after ReLU
        a, b = a.clamp(min=0).round(decimals=1), b.clamp(min=0).round(decimals=1)
    expected = stats.spearmanr(a.flatten().numpy(), b.flatten().numpy()).statistic
    assert spearman(a, b) == pytest.approx(expected, abs=1e-9)
    assert spearman(a, torch.zeros_like(a)) == 0.0  # a constant map shares no order: 0, not NaN


def _ssim_loop(a: np.ndarray, b: np.ndarray, size: int = 11, sigma: float = 1.5) -> float:
    """SSIM by its definition, one window at a time (Wang et al. 2004), on maps scaled to [0, 1]."""
    def unit(m):
        return (m - m.min()) / (m.max() - m.min())
    a, b = unit(a.astype(np.float64)), unit(b.astype(np.float64))
    r = np.arange(size) - (size - 1) / 2
    w = np.exp(-(r[:, None] ** 2 + r[None, :] ** 2) / (2 * sigma ** 2))
    w /= w.sum()
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    values = []
    for i in range(a.shape[0] - size + 1):
        for j in range(a.shape[1] - size + 1):
            x, y = a[i:i + size, j:j + size], b[i:i + size, j:j + size]
            mx, my = (w * x).sum(), (w * y).sum()
            vx, vy = (w * (x - mx) ** 2).sum(), (w * (y - my) ** 2).sum()
            cov = (w * (x - mx) * (y - my)).sum()
            values.append((2 * mx * my + c1) * (2 * cov + c2) / ((mx ** 2 + my ** 2 + c1) * (vx + vy + c2)))
    return float(np.mean(values))


def test_ssim_is_the_definition_window_by_window():
    g = torch.Generator().manual_seed(3)
    a = torch.rand(24, 20, generator=g)
    b = (a + 0.3 * torch.rand(24, 20, generator=g)).clamp(0, 1)
    assert ssim(a, b) == pytest.approx(_ssim_loop(a.numpy(), b.numpy()), abs=1e-9)
    assert ssim(a, a) == pytest.approx(1.0)
    assert ssim(a, b) > ssim(a, torch.rand(24, 20, generator=g))


@pytest.mark.slow
def test_stages_go_from_the_head_down_and_open_big_containers(resnet18):
    assert randomisation_stages(resnet18.model) == ["fc", "layer4", "layer3", "layer2", "layer1", "bn1", "conv1"]
    vgg = vz.load_model("vgg16", weights="none", device="cpu").model
    stages = randomisation_stages(vgg)
    assert stages[0] == "classifier" and stages[-1] == "features.0"
    convs = {n for n, m in vgg.named_modules() if isinstance(m, torch.nn.Conv2d)}
    assert convs <= set(stages)  # one conv per step: VGG's features are opened


@pytest.mark.slow
def test_every_step_is_the_same_re_initialisation_done_by_hand(resnet18, photo_x):
    """One step (fc): the map after it equals explain() on a copy whose fc the test re-initialises."""
    result = sanity_check(resnet18, photo_x, methods=["gradcam", "saliency"], stages=["fc"], seed=5)
    by_hand = copy.deepcopy(resnet18.model)
    torch.manual_seed(5 + 1)
    by_hand.fc.reset_parameters()
    expected = explain(by_hand, photo_x, result.target, ["gradcam", "saliency"])
    for method in ("gradcam", "saliency"):
        torch.testing.assert_close(result.maps[method][1], expected[method])
        assert result.correlations[method] == [pytest.approx(spearman(result.maps[method][0], expected[method]))]
    assert result.target == int(resnet18.model(photo_x)[0].argmax())


@pytest.mark.slow
def test_grad_cam_stops_correlating_once_the_model_is_random_and_the_shared_model_is_untouched(resnet18, photo_x):
    before = _state(resnet18.model)
    result = sanity_check(resnet18, photo_x, methods=["gradcam"], layers=["layer4.1"])
    assert result.stages == ("fc", "layer4", "layer3", "layer2", "layer1", "bn1", "conv1")
    assert len(result.maps["gradcam"]) == len(result.stages) + 1 and len(result.correlations["gradcam"]) == 7
    assert result.correlations["gradcam"][-1] < 0.5  # measured 0.37 on this photo and seed
    assert "gradcam" not in result.flagged
    for maps in result.maps.values():
        assert all(torch.isfinite(m).all() for m in maps)  # BatchNorm's reset: no NaN, no inf
    after = resnet18.model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert hook_count(resnet18.model) == 0 and not resnet18.model.training


@pytest.mark.slow
def test_a_fully_random_resnet50_gives_finite_logits_and_maps(resnet50):
    x = torch.randn(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    result = sanity_check(resnet50, x, methods=["gradcam", "saliency"])
    assert all(torch.isfinite(m).all() for maps in result.maps.values() for m in maps)
    assert all(np.isfinite(c) for cs in result.correlations.values() for c in cs)


def test_flagged_are_the_methods_still_alike_at_the_end():
    maps = {m: [torch.zeros(2, 2)] for m in ("a", "b")}
    result = SanityResult(("a", "b"), ("fc",), 0, maps, {"a": [FLAG_AT], "b": [FLAG_AT - 0.01]}, {"a": [1], "b": [0]})
    assert result.flagged == ("a",)


def test_bad_methods_and_stages_are_one_sentence(resnet18):
    x = torch.zeros(1, 3, 32, 32)
    with pytest.raises(ExplainError, match="Unknown method 'nope'") as e:
        sanity_check(resnet18, x, methods=["nope"])
    assert e.value.code == "explain_method"
    with pytest.raises(ExplainError, match="no module 'layer9'") as e:
        sanity_check(resnet18, x, stages=["layer9"])
    assert e.value.code == "explain_stage"
    assert hook_count(resnet18.model) == 0
