"""Faithfulness scores against independent answers: a plain loop written here (one masked image at
a time, its own ranking and masking), NumPy's trapezoid, SciPy's Gaussian filter, torch-cam's
ClassificationMetric and DeletionInsertionMetric, Captum's infidelity and sensitivity_max called
directly, and a model built here whose right answer is known."""

from __future__ import annotations

import contextlib
import copy
import threading
from functools import partial

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers import count_hooks
from vizhooks.interpret.faithfulness import (
    BLUR_SIGMA,
    Faithfulness,
    auc,
    baseline_image,
    deletion_insertion,
    drop_and_increase,
    faithfulness,
    gaussian_map,
    infidelity_score,
    random_map,
    reference_maps,
    sensitivity_score,
)


def _photo(side: int = 64, seed: int = 3) -> torch.Tensor:
    return torch.randn(1, 3, side, side, generator=torch.Generator().manual_seed(seed))


class _Sharper(nn.Module):
    """A seeded network's logits times 4: random weights give a near-uniform softmax (every class
    ~1e-3), where 1e-5 would say little; sharper, the top class's probability spans 0 .. 0.4."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return 4.0 * self.model(x)


def _top1(model: nn.Module, x: torch.Tensor) -> int:
    with torch.no_grad():
        return int(model(x).argmax())


def _probability(model: nn.Module, x: torch.Tensor, target: int) -> float:
    with torch.no_grad():
        return float(model(x).softmax(dim=1)[0, target])


def _loop_curves(model: nn.Module, x: torch.Tensor, target: int, attribution: torch.Tensor, steps: int,
                 baseline: torch.Tensor) -> tuple[list[float], list[float]]:
    """Deletion and insertion as the papers describe them, one image at a time: the map scaled to
    [0, 1] and resized bilinearly, pixels ordered by NumPy's stable sort of the negated map (ties in
    reading order), the top k * H * W // steps of them taken from the other image."""
    h, w = x.shape[-2:]
    m = attribution.double()
    m = (m - m.min()) / (m.max() - m.min())
    m = F.interpolate(m.float()[None, None], size=(h, w), mode="bilinear", align_corners=False)[0, 0]
    order = np.argsort(-m.flatten().numpy(), kind="stable")
    rows, cols = order // w, order % w
    deletion, insertion = [], []
    for k in range(steps + 1):
        count = k * h * w // steps
        r, c = torch.from_numpy(rows[:count]), torch.from_numpy(cols[:count])
        deleted = x.clone()
        deleted[:, :, r, c] = baseline[:, :, r, c]
        inserted = baseline.clone()
        inserted[:, :, r, c] = x[:, :, r, c]
        deletion.append(_probability(model, deleted, target))
        insertion.append(_probability(model, inserted, target))
    return deletion, insertion


# ----------------------------------------------------------------------------------------------
# deletion and insertion against a plain loop


@pytest.mark.slow
@pytest.mark.parametrize("baseline", ["blur", "zeros"])
def test_curves_equal_a_plain_loop_and_the_areas_numpys_trapezoid(resnet18, baseline):
    model, x, steps = _Sharper(resnet18.model), _photo(), 10
    target = _top1(model, x)
    cam = torch.rand(8, 8, generator=torch.Generator().manual_seed(5))  # smaller than x: resized
    scores = faithfulness(model, x, target, cam, steps=steps, baseline=baseline, batch_size=8)

    want_del, want_ins = _loop_curves(model, x, target, cam, steps, baseline_image(x, baseline))
    assert scores.deletion_curve.shape == scores.insertion_curve.shape == (steps + 1,)
    np.testing.assert_allclose(scores.deletion_curve.numpy(), want_del, rtol=0, atol=1e-5)
    np.testing.assert_allclose(scores.insertion_curve.numpy(), want_ins, rtol=0, atol=1e-5)
    assert max(want_del) - min(want_del) > 0.2  # the curve moves: 1e-5 says something

    grid = np.linspace(0, 1, steps + 1)
    assert scores.deletion_auc == pytest.approx(np.trapezoid(want_del, grid), abs=1e-5)
    assert scores.insertion_auc == pytest.approx(np.trapezoid(want_ins, grid), abs=1e-5)
    deletion, insertion = deletion_insertion(model, x, target, cam, steps=steps, baseline=baseline)
    torch.testing.assert_close(deletion, scores.deletion_curve, rtol=0, atol=1e-6)
    torch.testing.assert_close(insertion, scores.insertion_curve, rtol=0, atol=1e-6)


def test_ties_are_broken_in_reading_order(resnet18):
    model, x, steps = _Sharper(resnet18.model), _photo(), 8
    target = _top1(model, x)
    cam = torch.zeros(64, 64)
    cam[20:40, 10:50] = 1.0  # 800 equal pixels, then 3,296 equal ones
    deletion, insertion = deletion_insertion(model, x, target, cam, steps=steps, baseline="zeros")
    want_del, want_ins = _loop_curves(model, x, target, cam, steps, torch.zeros_like(x))
    np.testing.assert_allclose(deletion.numpy(), want_del, rtol=0, atol=1e-5)
    np.testing.assert_allclose(insertion.numpy(), want_ins, rtol=0, atol=1e-5)


def test_curve_ends_are_the_photo_and_the_baseline(resnet18):
    model, x, steps = _Sharper(resnet18.model), _photo(), 5
    target = _top1(model, x)
    scores = faithfulness(model, x, target, gaussian_map((64, 64)), steps=steps)
    assert len(scores.deletion_curve) == len(scores.insertion_curve) == steps + 1
    p, p_base = _probability(model, x, target), _probability(model, baseline_image(x, "blur"), target)
    assert float(scores.deletion_curve[0]) == pytest.approx(p, abs=1e-5)
    assert float(scores.insertion_curve[-1]) == pytest.approx(p, abs=1e-5)
    assert float(scores.deletion_curve[-1]) == pytest.approx(p_base, abs=1e-5)
    assert float(scores.insertion_curve[0]) == pytest.approx(p_base, abs=1e-5)
    assert p - p_base > 0.1


def test_one_step_is_the_photo_and_the_baseline(resnet18):
    x = _photo()
    deletion, insertion = deletion_insertion(resnet18, x, 0, random_map((64, 64)), steps=1, baseline="zeros")
    assert deletion.shape == insertion.shape == (2,)
    torch.testing.assert_close(deletion, insertion.flip(0))


def test_equals_torch_cams_deletion_insertion_metric(resnet18):
    """torch-cam's own deletion / insertion (zeros baseline): the same steps when 16 divides H * W."""
    from torchcam.metrics import DeletionInsertionMetric

    model, x, target, steps = resnet18.model, _photo(), 4, 16
    cam = torch.rand(8, 8, generator=torch.Generator().manual_seed(2))
    metric = DeletionInsertionMetric(_GivenMap(model, cam), partial(torch.softmax, dim=-1), steps=steps)
    metric.update(x, class_idx=target)
    scores = faithfulness(model, x, target, cam, steps=steps, baseline="zeros")
    want = metric.summary()
    assert scores.deletion_auc == pytest.approx(want["deletion_auc"], abs=1e-5)
    assert scores.insertion_auc == pytest.approx(want["insertion_auc"], abs=1e-5)


# ----------------------------------------------------------------------------------------------
# a model whose right answer is known


class _CentreModel(nn.Module):
    """Class 0's logit rises with the mean of the centre 16 x 16 pixels; class 1's is 0. Nothing
    outside the centre counts, so the right map is the centre square."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        evidence = 8.0 * (x[:, :, 24:40, 24:40].mean(dim=(1, 2, 3)) - 0.375)
        return torch.stack([evidence, torch.zeros_like(evidence)], dim=1)


def test_the_right_map_beats_the_reference_maps_and_its_reverse():
    model, steps = _CentreModel(), 16
    x = 0.5 + 0.5 * torch.rand(1, 3, 64, 64, generator=torch.Generator().manual_seed(0))
    right = torch.zeros(64, 64)
    right[24:40, 24:40] = 1.0
    maps = {"right": right, **reference_maps((64, 64), seed=1), "reversed": -right}
    scores = {name: faithfulness(model, x, 0, m, steps=steps, baseline="zeros") for name, m in maps.items()}
    deletion = {name: s.deletion_auc for name, s in scores.items()}
    insertion = {name: s.insertion_auc for name, s in scores.items()}
    # the centre goes first: the right map, then the centred Gaussian (a disc, not the square), then
    # noise that takes the centre pixels at the rate of all others, then the map that takes them last
    assert deletion["right"] <= deletion["gaussian"] < deletion["random"] < deletion["reversed"]
    assert insertion["right"] >= insertion["gaussian"] > insertion["random"] > insertion["reversed"]
    assert deletion["reversed"] - deletion["right"] > 0.5
    # the right map takes the whole centre in the first 256 / 4096 pixels: one step of 16
    assert float(scores["right"].deletion_curve[1]) == pytest.approx(_probability(model, torch.zeros_like(x), 0))
    # Average Drop: the photo times the right map keeps the centre whole
    assert scores["right"].avg_drop == pytest.approx(0.0, abs=1e-4)
    assert scores["reversed"].avg_drop > 50


# ----------------------------------------------------------------------------------------------
# Average Drop and Increase in Confidence against torch-cam


class _GivenMap:
    """A torch-cam CAM extractor that hands back a map made elsewhere (already in [0, 1])."""

    def __init__(self, model: nn.Module, cam: torch.Tensor) -> None:
        self.model, self.cam = model, cam

    def __call__(self, class_idx=None, scores=None, normalized=True, **kwargs):
        return [self.cam[None]]

    def fuse_cams(self, cams):
        return cams[0]

    @contextlib.contextmanager
    def _hooks_off(self):
        yield


def _torchcam_drop(extractor, x: torch.Tensor, target: int) -> tuple[float, float]:
    from torchcam.metrics import ClassificationMetric

    metric = ClassificationMetric(extractor, partial(torch.softmax, dim=-1))
    metric.update(x, class_idx=target)
    summary = metric.summary()
    return 100 * summary["avg_drop"], 100 * summary["conf_increase"]


def test_average_drop_and_increase_equal_torch_cams_on_given_maps(resnet18):
    model, x = resnet18.model, _photo()
    seen = []
    for seed in range(3):
        g = torch.Generator().manual_seed(seed)
        cam = torch.rand(7, 7, generator=g)
        cam = (cam - cam.min()) / (cam.max() - cam.min())  # torch-cam's extractors give [0, 1] maps
        # the top class (its probability drops) and a random one (on random weights it mostly rises)
        for target in (_top1(model, x), int(torch.randint(0, 1000, (1,), generator=g))):
            want = _torchcam_drop(_GivenMap(model, cam), x, target)
            assert drop_and_increase(resnet18, x, target, cam) == pytest.approx(want, abs=1e-4)
            # any map is scaled to [0, 1] first, as torch-cam's extractors scale theirs
            assert drop_and_increase(resnet18, x, target, 3 * cam - 2) == pytest.approx(want, abs=1e-4)
            seen.append(want)
    scores = faithfulness(resnet18, x, target, cam, steps=2)
    assert (scores.avg_drop, scores.increase) == pytest.approx(want, abs=1e-4)
    assert {increase for _, increase in seen} == {0.0, 100.0}  # both answers of Increase were checked
    assert max(drop for drop, _ in seen) > 30


def test_average_drop_equals_torch_cams_grad_cam(resnet18):
    from torchcam.methods import GradCAM

    model, x, target = copy.deepcopy(resnet18.model), _photo(), 3
    with GradCAM(model, target_layer="layer3") as extractor:
        want = _torchcam_drop(extractor, x, target)
        model.eval()
        cam = extractor(target, model(x))[0][0].detach()
    assert cam.shape == (4, 4) and cam.max() > 0
    assert drop_and_increase(model, x, target, cam) == pytest.approx(want, abs=1e-4)


# ----------------------------------------------------------------------------------------------
# batches, progress, the model left as it was


def test_batches_give_the_curves_of_one_image_at_a_time_and_report_progress(resnet18):
    x, target, steps, cam = _photo(), 9, 6, random_map((16, 16), seed=3)
    calls: dict[int, list[tuple[int, int, str]]] = {}
    results = {}
    for batch_size in (1, 5, 64):
        calls[batch_size] = []
        results[batch_size] = faithfulness(resnet18, x, target, cam, steps=steps, batch_size=batch_size,
                                           progress=lambda *done, b=batch_size: calls[b].append(done))
    total = 2 * steps + 1
    for batch_size, result in results.items():
        torch.testing.assert_close(result.deletion_curve, results[1].deletion_curve, rtol=0, atol=1e-6)
        torch.testing.assert_close(result.insertion_curve, results[1].insertion_curve, rtol=0, atol=1e-6)
        assert result.avg_drop == pytest.approx(results[1].avg_drop, abs=1e-4)
        want = [(min(stop, total), total, "faithfulness") for stop in range(batch_size, total + batch_size, batch_size)]
        assert calls[batch_size] == want


def test_the_model_is_left_exactly_as_it_was(resnet18):
    model = copy.deepcopy(resnet18.model).train()
    model.layer1.requires_grad_(False)
    model.fc.weight.grad = torch.ones_like(model.fc.weight)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    flags = [(m.training, [p.requires_grad for p in m.parameters(recurse=False)]) for m in model.modules()]

    scores = faithfulness(model, _photo(), 1, random_map((64, 64)), steps=4)
    assert isinstance(scores, Faithfulness)
    infidelity_score(model, _photo(), 1, random_map((64, 64)), n_perturb=2)
    with pytest.raises(ValueError, match="not a class of this model"):
        faithfulness(model, _photo(), 1000, random_map((64, 64)), steps=4)

    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)  # BatchNorm statistics included
    assert flags == [(m.training, [p.requires_grad for p in m.parameters(recurse=False)]) for m in model.modules()]
    assert torch.equal(model.fc.weight.grad, torch.ones_like(model.fc.weight))
    assert count_hooks(model) == 0
    # the lock was let go, also after the refusal
    got = []
    helper = threading.Thread(target=lambda: got.append(_lock_free(model)))
    helper.start()
    helper.join()
    assert got == [True]


def _lock_free(model: nn.Module) -> bool:
    from vizhooks._hooks import model_lock

    lock = model_lock(model)
    if lock.acquire(blocking=False):
        lock.release()
        return True
    return False


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_gives_the_cpu_curves(resnet18):
    model = copy.deepcopy(resnet18.model).cuda()
    x, cam = _photo(), random_map((8, 8))
    on_cpu = faithfulness(resnet18, x, 5, cam, steps=8)
    on_gpu = faithfulness(model, x.cuda(), 5, cam.cuda(), steps=8)
    assert on_gpu.deletion_curve.device.type == "cpu"
    torch.testing.assert_close(on_gpu.deletion_curve, on_cpu.deletion_curve, rtol=0, atol=1e-4)
    torch.testing.assert_close(on_gpu.insertion_curve, on_cpu.insertion_curve, rtol=0, atol=1e-4)
    assert next(model.parameters()).device.type == "cuda"
    assert infidelity_score(model, x, 5, cam, n_perturb=4) == pytest.approx(
        infidelity_score(resnet18, x, 5, cam, n_perturb=4), rel=1e-3)


# ----------------------------------------------------------------------------------------------
# baselines and reference maps


def test_blur_baseline_is_scipys_gaussian_filter():
    from scipy.ndimage import gaussian_filter

    x = _photo()
    got = baseline_image(x, "blur")
    # torch's "reflect" padding is SciPy's "mirror"; the 61-pixel kernel is +-3 sigma
    want = np.stack([gaussian_filter(x[0, c].double().numpy(), BLUR_SIGMA, mode="mirror", truncate=3.0)
                     for c in range(3)])
    np.testing.assert_allclose(got[0].numpy(), want, rtol=0, atol=1e-5)
    assert float(got.std()) < 0.2 * float(x.std())  # strong: little of the photo's detail is left
    assert torch.equal(baseline_image(x, "zeros"), torch.zeros_like(x))
    assert baseline_image(torch.rand(1, 3, 12, 20), "blur").shape == (1, 3, 12, 20)  # a small photo too


def test_reference_maps():
    r = random_map((30, 40), seed=4)
    assert r.shape == (30, 40) and 0 <= float(r.min()) and float(r.max()) < 1
    assert torch.equal(r, random_map((30, 40), seed=4))
    assert not torch.equal(r, random_map((30, 40), seed=5))
    g = gaussian_map((31, 41))
    assert float(g[15, 20]) == pytest.approx(1.0) and float(g.argmax()) == 15 * 41 + 20
    torch.testing.assert_close(g, g.flip(0))
    torch.testing.assert_close(g, g.flip(1))
    # the standard deviation is a quarter of the side: 25.25 px of 101, from the centre pixel 50
    assert float(gaussian_map((101, 101))[50, 75]) == pytest.approx(np.exp(-0.5 * (25 / 25.25) ** 2))
    assert float(gaussian_map((101, 101), sigma=0.1)[60, 50]) == pytest.approx(np.exp(-0.5 * (10 / 10.1) ** 2))
    assert set(reference_maps((4, 4))) == {"random", "gaussian"}


def test_auc_is_the_trapezoid_rule():
    curve = torch.tensor([1.0, 0.5, 0.25, 0.0])
    assert auc(curve) == pytest.approx(np.trapezoid(curve.numpy(), np.linspace(0, 1, 4)))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"baseline": "noise"}, "blur"),
        ({"steps": 0}, "steps"),
        ({"batch_size": 0}, "batch_size"),
        ({"target": -1}, "target"),
        ({"x": torch.zeros(2, 3, 64, 64)}, "one photo"),
        ({"x": torch.zeros(1, 64, 64)}, "image tensor"),
        ({"attribution": torch.zeros(3, 64, 64)}, "one \\(H, W\\) map"),
        ({"attribution": torch.full((8, 8), float("nan"))}, "NaN"),
    ],
)
def test_bad_input_is_one_sentence(resnet18, change, message):
    args = {"x": _photo(), "target": 1, "attribution": torch.rand(8, 8), "steps": 4, "batch_size": 4,
            "baseline": "blur", **change}
    x, target, attribution = args.pop("x"), args.pop("target"), args.pop("attribution")
    with pytest.raises(ValueError, match=message):
        faithfulness(resnet18, x, target, attribution, **args)


# ----------------------------------------------------------------------------------------------
# Captum's infidelity and max-sensitivity, called directly


@pytest.mark.slow
def test_infidelity_equals_captums_with_the_same_seed(resnet18):
    from captum.attr import Saliency
    from captum.metrics import infidelity

    model, x, target, std, n = resnet18.model, _photo(), 12, 0.1, 4

    def perturb(inputs):  # Gaussian noise of the documented std, subtracted from the photo
        noise = torch.randn(inputs.shape) * std
        return noise, inputs - noise

    saliency = Saliency(model).attribute(x.clone().requires_grad_(True), target=target).detach()
    cam = torch.rand(8, 8, generator=torch.Generator().manual_seed(0))
    cam_as_input = F.interpolate(cam[None, None], size=(64, 64), mode="bilinear", align_corners=False).expand_as(x)
    state = torch.get_rng_state()
    for attribution, as_input, normalize in ((saliency, saliency, False), (cam, cam_as_input, True)):
        got = infidelity_score(resnet18, x, target, attribution, n_perturb=n, noise_std=std, seed=7,
                               normalize=normalize)
        torch.manual_seed(7)
        with torch.no_grad():
            want = float(infidelity(model, perturb, x, as_input.contiguous(), target=target, n_perturb_samples=n,
                                    normalize=normalize)[0])
        torch.set_rng_state(state)
        assert got == pytest.approx(want, rel=1e-5) and got > 0
    assert torch.equal(torch.get_rng_state(), state)  # ours left the global random state alone
    again = infidelity_score(resnet18, x, target, saliency, n_perturb=n, seed=7)
    assert again == infidelity_score(resnet18, x, target, None, lambda x, t: saliency, n_perturb=n, seed=7)
    assert again != infidelity_score(resnet18, x, target, saliency, n_perturb=n, seed=8)
    assert count_hooks(model) == 0


@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require gradients")  # Captum's, for our x
def test_sensitivity_equals_captums_with_the_same_seed(resnet18):
    from captum.attr import Saliency
    from captum.metrics import sensitivity_max

    x, target = _photo(), 12
    saliency = Saliency(resnet18.model)
    state = torch.get_rng_state()
    got = sensitivity_score(lambda image, t: saliency.attribute(image, target=t), x, target, n_perturb=4, seed=3)
    assert torch.equal(torch.get_rng_state(), state)
    torch.manual_seed(3)
    want = float(sensitivity_max(saliency.attribute, x, target=target, perturb_radius=0.02, n_perturb_samples=4)[0])
    torch.set_rng_state(state)
    assert got == pytest.approx(want, rel=1e-4) and got > 0
    # a map that ignores the photo does not move at all
    assert sensitivity_score(lambda image, t: torch.ones(8, 8), x, target, n_perturb=2) == 0.0
    assert got != sensitivity_score(lambda image, t: saliency.attribute(image, target=t), x, target, n_perturb=4,
                                    seed=4)
