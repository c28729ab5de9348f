"""How faithful is a map, for this photo and class: scores that ask the model, not the eye.

A map (Grad-CAM, Saliency, Integrated Gradients...) claims that some pixels matter more than
others for class ``target``. These scores test the claim by changing the photo and watching the
class probability (softmax of the logits):

- **Deletion** (Petsiuk et al., 2018, RISE): rank the pixels by the map, highest first (ties in
  reading order: row by row, left to right), and in ``steps`` equal steps replace the top
  ``k / steps`` of them (all three channels of a pixel) by a baseline image, k = 0 .. steps
  (the top ``k * H * W // steps`` pixels). A faithful map makes the probability fall fast: a
  *low* area under the curve.
- **Insertion**: start from the baseline and put the top ``k / steps`` of the photo back. A
  faithful map makes the probability rise fast: a *high* area.
- Each area is the trapezoid rule over x = k / steps in [0, 1]; each curve has ``steps + 1``
  points: deletion from the unmodified photo to everything replaced, insertion from the baseline
  to the full photo.
- **Average Drop** and **Increase in Confidence** (Chattopadhyay et al., 2018, Grad-CAM++),
  exactly as torch-cam's ``ClassificationMetric`` computes them, in percent: the photo multiplied
  by the map (scaled to [0, 1]) goes through the model; drop = max(0, p - p') / p, increase =
  100 when p' > p else 0.
- Captum's **infidelity** and **max-sensitivity** (Yeh et al., 2019) for input attributions:
  :func:`infidelity_score` and :func:`sensitivity_score`, seeded.

A score alone says little; :func:`random_map` and :func:`gaussian_map` give the two maps to score
beside every method (a method that does no better than random noise explains nothing).

The map may have any size: it is scaled to [0, 1] (min-max, at its own resolution, as torch-cam's
extractors do) and then resized bilinearly (``align_corners=False``) to the photo's (H, W); a
constant map becomes zeros. Its values are ranked as given: pass ``attribution.abs()`` to rank by
magnitude. The model is never modified: every forward runs under its lock, in eval mode, under
``torch.no_grad``, with its state put back afterwards; masked images go through in batches on the
model's device.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn

from vizhooks._hooks import check_input, first_tensor, hooked, model_device
from vizhooks.models.registry import ModelBundle
from vizhooks.render.scale import min_max

__all__ = [
    "BLUR_KERNEL",
    "BLUR_SIGMA",
    "Faithfulness",
    "auc",
    "baseline_image",
    "deletion_insertion",
    "drop_and_increase",
    "faithfulness",
    "gaussian_map",
    "infidelity_score",
    "random_map",
    "reference_maps",
    "sensitivity_score",
]

#: The "blur" baseline: a Gaussian blur of this standard deviation (pixels) with a kernel of this
#: size (+-3 sigma), smaller on photos under 31 pixels a side (reflect padding needs the room).
BLUR_SIGMA, BLUR_KERNEL = 10.0, 61
#: Masked images per forward pass.
BATCH_SIZE = 16
#: :func:`gaussian_map`'s standard deviation, as a fraction of the side.
GAUSSIAN_SIGMA = 0.25
#: :func:`infidelity_score`'s perturbation: Gaussian noise of this standard deviation (in the
#: units of ``x``, i.e. of the normalised input) subtracted from the photo.
INFIDELITY_STD = 0.1
#: :func:`sensitivity_score`'s perturbation: uniform noise in an L-infinity ball of this radius
#: (Captum's default), in the units of ``x``.
SENSITIVITY_RADIUS = 0.02

#: ``progress(done, total, stage)`` after each batch: masked images scored so far, out of all of them;
#: ``stage`` is ``"faithfulness"`` (the shape of vizhooks.teach's and vizhooks.explain's progress).
Progress = Callable[[int, int, str], object]
Baseline = Literal["blur", "zeros"]
#: An explanation: ``explanation_func(x, target) -> map`` for one (1, 3, H, W) photo.
ExplanationFunc = Callable[[torch.Tensor, int], torch.Tensor]


@dataclass(frozen=True)
class Faithfulness:
    """The scores of one map, for one photo and class.

    Attributes:
        deletion_auc: area under the deletion curve (lower: more faithful).
        insertion_auc: area under the insertion curve (higher: more faithful).
        deletion_curve: ``steps + 1`` class probabilities: the unmodified photo, ..., every pixel
            replaced by the baseline.
        insertion_curve: ``steps + 1``: the baseline, ..., the full photo.
        avg_drop: Average Drop in percent (lower: more faithful).
        increase: Increase in Confidence in percent, 0 or 100 for one photo (higher: more faithful).
    """

    deletion_auc: float
    insertion_auc: float
    deletion_curve: torch.Tensor
    insertion_curve: torch.Tensor
    avg_drop: float
    increase: float


# ----------------------------------------------------------------------------------------------
# maps and baselines


def baseline_image(x: torch.Tensor, kind: Baseline = "blur") -> torch.Tensor:
    """What deleted pixels become: ``"blur"``, a Gaussian blur of ``x`` (``BLUR_SIGMA`` = 10 px,
    a ``BLUR_KERNEL`` = 61 kernel, reflect padding), or ``"zeros"`` (the mean colour of a
    normalised input).

    Example:
        >>> baseline_image(x, "blur").shape == x.shape
        True
    """
    if kind == "zeros":
        return torch.zeros_like(x)
    if kind != "blur":
        raise ValueError(f'baseline must be "blur" or "zeros", not {kind!r}.')
    from torchvision.transforms.functional import gaussian_blur

    side = min(int(x.shape[-2]), int(x.shape[-1]))
    kernel = min(BLUR_KERNEL, 2 * side - 1)  # odd, and reflect padding (kernel // 2) stays under the side
    return gaussian_blur(x, [kernel, kernel], [BLUR_SIGMA, BLUR_SIGMA])


def random_map(shape: tuple[int, int] | torch.Size, seed: int = 0) -> torch.Tensor:
    """A reference map of uniform noise in [0, 1): what a map that knows nothing scores.

    Example:
        >>> random_map((224, 224), seed=0).shape
        torch.Size([224, 224])
    """
    h, w = _shape(shape)
    return torch.rand(h, w, generator=torch.Generator().manual_seed(int(seed)))


def gaussian_map(shape: tuple[int, int] | torch.Size, sigma: float = GAUSSIAN_SIGMA) -> torch.Tensor:
    """A reference map that only says "the centre": a Gaussian bump of peak 1 at the centre, its
    standard deviation ``sigma`` times the height (rows) and the width (columns). Photographers
    centre their subject, so a method should beat this to mean something.

    Example:
        >>> gaussian_map((5, 5))[2, 2]
        tensor(1.)
    """
    h, w = _shape(shape)
    if not sigma > 0:
        raise ValueError(f"sigma must be a positive fraction of the side, not {sigma!r}.")
    dy = (torch.arange(h, dtype=torch.float32) - (h - 1) / 2) / (sigma * h)
    dx = (torch.arange(w, dtype=torch.float32) - (w - 1) / 2) / (sigma * w)
    return torch.exp(-0.5 * (dy[:, None] ** 2 + dx[None, :] ** 2))


def reference_maps(shape: tuple[int, int] | torch.Size, seed: int = 0) -> dict[str, torch.Tensor]:
    """``{"random": random_map(shape, seed), "gaussian": gaussian_map(shape)}``: score both beside
    every method."""
    return {"random": random_map(shape, seed), "gaussian": gaussian_map(shape)}


def _shape(shape: tuple[int, int] | torch.Size) -> tuple[int, int]:
    if len(shape) != 2 or any(int(s) < 1 for s in shape):
        raise ValueError(f"shape must be (H, W) with both at least 1, not {tuple(shape)}.")
    return int(shape[0]), int(shape[1])


def _scaled_map(attribution: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """``attribution`` as an (H, W) float map in [0, 1] of ``size``: min-max scaled at its own
    resolution (zeros when constant), then resized bilinearly."""
    if not isinstance(attribution, torch.Tensor):
        raise TypeError(f"attribution must be a tensor, not {type(attribution).__name__}.")
    m = attribution.detach()
    while m.ndim > 2 and m.shape[0] == 1:
        m = m[0]
    if m.ndim != 2 or m.numel() == 0:
        raise ValueError(f"attribution must be one (H, W) map (or (1, H, W), (1, 1, H, W)), not "
                         f"{tuple(attribution.shape)}; sum an input attribution over its channels first.")
    m = m.float()
    if not torch.isfinite(m).all():
        raise ValueError("attribution has NaN or infinite values; a score of it would mean nothing.")
    m = min_max(m)
    if tuple(m.shape) != size:
        m = F.interpolate(m[None, None], size=size, mode="bilinear", align_corners=False)[0, 0]
    return m


def _ranks(scaled: torch.Tensor) -> torch.Tensor:
    """Each pixel's place (0 = first deleted) in the map's order, highest first, ties in reading order."""
    order = torch.argsort(scaled.flatten(), descending=True, stable=True)
    ranks = torch.empty_like(order)
    ranks[order] = torch.arange(order.numel(), device=order.device)
    return ranks.view_as(scaled)


def auc(curve: torch.Tensor) -> float:
    """Area under a curve of ``steps + 1`` points at x = 0, 1/steps, ..., 1: the trapezoid rule."""
    if curve.ndim != 1 or curve.numel() < 2:
        raise ValueError(f"curve must have at least 2 points in one dimension, not {tuple(curve.shape)}.")
    return float(torch.trapezoid(curve.double(), dx=1.0 / (curve.numel() - 1)))


# ----------------------------------------------------------------------------------------------
# deletion, insertion, average drop


def _model_of(bundle_or_model: ModelBundle | nn.Module) -> nn.Module:
    model = bundle_or_model.model if isinstance(bundle_or_model, ModelBundle) else bundle_or_model
    if not isinstance(model, nn.Module):
        raise TypeError(f"Expected a ModelBundle or an nn.Module, got {type(bundle_or_model).__name__}.")
    return model


def _check(x: torch.Tensor, target: int, steps: int, batch_size: int) -> None:
    check_input(x)
    if x.shape[0] != 1:
        raise ValueError(f"Faithfulness scores one photo: x must be (1, 3, H, W), not {tuple(x.shape)}.")
    for name, value, least in (("target", target, 0), ("steps", steps, 1), ("batch_size", batch_size, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise ValueError(f"{name} must be a whole number of at least {least}, not {value!r}.")


def _probabilities(model: nn.Module, make: Callable[[int, int], torch.Tensor], total: int, target: int,
                   batch_size: int, progress: Progress | None) -> torch.Tensor:
    """Softmax probability of ``target`` for images ``make(start, stop)``, in batches; call with the
    model's lock held and its state kept (``hooked``), under ``no_grad``."""
    out = []
    for start in range(0, total, batch_size):
        stop = min(start + batch_size, total)
        logits = first_tensor(model(make(start, stop))).float()
        if logits.ndim != 2 or not target < logits.shape[1]:
            raise ValueError(f"target {target} is not a class of this model; it has {logits.shape[-1]} outputs.")
        out.append(logits.softmax(dim=1)[:, target])
        if progress is not None:
            progress(stop, total, "faithfulness")
    return torch.cat(out).cpu()


def _scores(bundle_or_model: ModelBundle | nn.Module, x: torch.Tensor, target: int, attribution: torch.Tensor, *,
            steps: int, baseline: Baseline, batch_size: int, progress: Progress | None, curves: bool,
            drop: bool) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(deletion curve, insertion curve, [p, p'] of Average Drop) in one batched stream of images:
    the photo, the baseline, deletion steps 1 .. steps-1, insertion steps 1 .. steps-1 (when
    ``curves``), then the photo times the map (when ``drop``)."""
    model = _model_of(bundle_or_model)
    _check(x, target, steps, batch_size)
    size = (int(x.shape[-2]), int(x.shape[-1]))
    scaled = _scaled_map(attribution, size)
    n = size[0] * size[1]
    inner = list(range(1, steps)) if curves else []
    # each image: the pixels ranked below `count` come from the baseline (deletion), or all the
    # others do (insertion: `inverted`)
    counts = [0, n] if curves else [0]
    counts += [k * n // steps for k in inner] * 2
    inverted = [False] * (len(counts) - len(inner)) + [True] * len(inner)
    total = len(counts) + int(drop)
    with hooked(model), torch.no_grad():
        device = model_device(model)
        photo = x.detach().to(device)
        base = baseline_image(photo, baseline) if curves else photo
        ranks = _ranks(scaled.to(device))
        count_t = torch.tensor(counts, device=device)
        inverted_t = torch.tensor(inverted, device=device)
        weighted = photo * scaled.to(device=device, dtype=photo.dtype) if drop else photo

        def make(start: int, stop: int) -> torch.Tensor:
            masked = min(stop, len(counts))
            parts = []
            if start < masked:
                replaced = (ranks[None] < count_t[start:masked, None, None]) ^ inverted_t[start:masked, None, None]
                parts.append(torch.where(replaced[:, None], base, photo))
            if stop > len(counts):
                parts.append(weighted)
            return torch.cat(parts) if len(parts) > 1 else parts[0]

        probs = _probabilities(model, make, total, target, batch_size, progress)
    drops = probs[[0, -1]] if drop else probs[:0]
    if not curves:
        return probs[:0], probs[:0], drops
    p, p_base = probs[0:1], probs[1:2]
    deleted, inserted = probs[2:2 + len(inner)], probs[2 + len(inner):2 + 2 * len(inner)]
    return torch.cat([p, deleted, p_base]), torch.cat([p_base, inserted, p]), drops


def deletion_insertion(
    bundle_or_model: ModelBundle | nn.Module,
    x: torch.Tensor,
    target: int,
    attribution: torch.Tensor,
    *,
    steps: int = 20,
    baseline: Baseline = "blur",
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The deletion and insertion curves of ``attribution`` (see the module's docstring).

    Args:
        bundle_or_model: the model (or its bundle); never modified.
        x: one normalised photo, (1, 3, H, W).
        target: the class whose softmax probability is followed.
        attribution: (H, W), (1, H, W) or (1, 1, H, W) map, any size (resized bilinearly).
        steps: how many equal steps from nothing to everything.
        baseline: ``"blur"`` or ``"zeros"`` (see :func:`baseline_image`).
        batch_size: masked images per forward pass.
        progress: ``progress(done, total, "faithfulness")`` after each batch.

    Returns:
        ``(deletion_curve, insertion_curve)``, each ``steps + 1`` float32 probabilities on the CPU.

    Raises:
        ValueError: a bad photo, map, target, steps, batch size or baseline, said in one sentence.

    Example:
        >>> deletion, insertion = deletion_insertion(bundle, x, 281, grad_cam(bundle.model, x, "layer4"))
        >>> auc(deletion), auc(insertion)
    """
    deletion, insertion, _ = _scores(bundle_or_model, x, target, attribution, steps=steps, baseline=baseline,
                                     batch_size=batch_size, progress=progress, curves=True, drop=False)
    return deletion, insertion


def drop_and_increase(
    bundle_or_model: ModelBundle | nn.Module, x: torch.Tensor, target: int, attribution: torch.Tensor,
) -> tuple[float, float]:
    """Average Drop and Increase in Confidence of one photo, in percent, as torch-cam's
    ``ClassificationMetric`` defines them: with p the probability of ``target`` for ``x`` and p'
    for ``x`` times the map (scaled to [0, 1], resized bilinearly),
    ``100 * max(0, p - p') / (p + 1e-7)`` and ``100`` if ``p' > p`` else ``0``.

    Example:
        >>> drop, increase = drop_and_increase(bundle, x, 281, cam)
    """
    _, _, (p, masked) = _scores(bundle_or_model, x, target, attribution, steps=1, baseline="zeros",
                                batch_size=2, progress=None, curves=False, drop=True)
    return _drop(p, masked)


def _drop(p: torch.Tensor, masked: torch.Tensor) -> tuple[float, float]:
    return 100.0 * float(torch.relu(p - masked) / (p + 1e-7)), 100.0 if bool(p < masked) else 0.0


def faithfulness(
    bundle_or_model: ModelBundle | nn.Module,
    x: torch.Tensor,
    target: int,
    attribution: torch.Tensor,
    *,
    steps: int = 20,
    baseline: Baseline = "blur",
    batch_size: int = BATCH_SIZE,
    progress: Progress | None = None,
) -> Faithfulness:
    """Deletion and insertion (curves and areas), Average Drop and Increase in Confidence of one
    map, in one batched pass over ``2 * steps + 1`` images.

    Args: as :func:`deletion_insertion`.

    Returns:
        A :class:`Faithfulness`.

    Raises:
        ValueError: a bad photo, map, target, steps, batch size or baseline, said in one sentence.

    Example:
        >>> scores = faithfulness(bundle, x, 281, cam, steps=20, baseline="blur")
        >>> scores.deletion_auc, scores.insertion_auc, scores.avg_drop
        >>> faithfulness(bundle, x, 281, random_map(x.shape[-2:])).deletion_auc  # the reference
    """
    deletion, insertion, (p, masked) = _scores(
        bundle_or_model, x, target, attribution, steps=steps, baseline=baseline, batch_size=batch_size,
        progress=progress, curves=True, drop=True)
    avg_drop, increase = _drop(p, masked)
    return Faithfulness(deletion_auc=auc(deletion), insertion_auc=auc(insertion), deletion_curve=deletion,
                        insertion_curve=insertion, avg_drop=avg_drop, increase=increase)


# ----------------------------------------------------------------------------------------------
# Captum's infidelity and max-sensitivity


def _rng_devices(device: torch.device) -> list[int]:
    if device.type != "cuda":
        return []
    return [device.index if device.index is not None else torch.cuda.current_device()]


def _check_samples(n_perturb: int, max_examples_per_batch: int | None) -> None:
    if isinstance(n_perturb, bool) or not isinstance(n_perturb, int) or n_perturb < 1:
        raise ValueError(f"n_perturb must be a whole number of at least 1, not {n_perturb!r}.")
    if max_examples_per_batch is not None and not 1 <= max_examples_per_batch:
        raise ValueError(f"max_examples_per_batch must be at least 1 (or None), not {max_examples_per_batch!r}.")


def infidelity_score(
    bundle_or_model: ModelBundle | nn.Module,
    x: torch.Tensor,
    target: int,
    attribution: torch.Tensor | None = None,
    explanation_func: ExplanationFunc | None = None,
    *,
    n_perturb: int = 16,
    noise_std: float = INFIDELITY_STD,
    normalize: bool = True,
    seed: int = 0,
    max_examples_per_batch: int | None = None,
) -> float:
    """Captum's ``captum.metrics.infidelity`` of an attribution of the logit of ``target``: the
    expected squared error between ``I . attribution`` and ``f(x) - f(x - I)`` over perturbations
    I, lower is better.

    I is Gaussian noise of standard deviation ``noise_std`` drawn on the CPU after
    ``torch.manual_seed(seed)`` (the global random state is put back afterwards), ``n_perturb``
    draws; f is the model's logit of ``target``. An (H, W) map counts for each of the three
    channels of its pixel (resized to the photo as in :func:`deletion_insertion`, not scaled); a
    (1, 3, H, W) attribution is used as it is. ``normalize=True`` (Captum's option) rescales the
    attribution by its best factor first, so maps of different scales compare.

    Args:
        attribution: the map; or None, and ``explanation_func(x, target)`` gives it.

    Example:
        >>> infidelity_score(bundle, x, 281, saliency_map)
    """
    from captum.metrics import infidelity

    model = _model_of(bundle_or_model)
    _check(x, target, 1, 1)
    _check_samples(n_perturb, max_examples_per_batch)
    if attribution is None:
        if explanation_func is None:
            raise ValueError("Give an attribution, or an explanation_func(x, target) that makes one.")
        attribution = explanation_func(x, target)
    device = model_device(model)
    photo = x.detach().to(device)
    attr = attribution.detach().to(device=device, dtype=photo.dtype)
    if tuple(attr.shape) != tuple(photo.shape):
        m = attr
        while m.ndim > 2 and m.shape[0] == 1:
            m = m[0]
        if m.ndim != 2:
            raise ValueError(f"attribution must be (1, 3, H, W) like x or one (H, W) map, not {tuple(attr.shape)}.")
        if tuple(m.shape) != tuple(photo.shape[-2:]):
            m = F.interpolate(m[None, None], size=photo.shape[-2:], mode="bilinear", align_corners=False)[0, 0]
        attr = m.expand_as(photo[0])[None]

    def perturb(inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        noise = (torch.randn(inputs.shape) * noise_std).to(device=inputs.device, dtype=inputs.dtype)
        return noise, inputs - noise

    with hooked(model), torch.random.fork_rng(devices=_rng_devices(device)):
        torch.manual_seed(seed)
        value = infidelity(model, perturb, photo, attr, target=target, n_perturb_samples=n_perturb,
                           max_examples_per_batch=max_examples_per_batch, normalize=normalize)
    return float(value[0])


def sensitivity_score(
    explanation_func: ExplanationFunc,
    x: torch.Tensor,
    target: int,
    *,
    n_perturb: int = 10,
    radius: float = SENSITIVITY_RADIUS,
    seed: int = 0,
    max_examples_per_batch: int | None = None,
) -> float:
    """Captum's ``captum.metrics.sensitivity_max``: the largest change of the map, relative to its
    norm (Frobenius), when ``x`` moves by uniform noise within ``radius`` (Captum's default
    perturbation); lower is steadier.

    ``explanation_func(x, target)`` is called with one (1, 3, H, W) photo at a time and returns
    its map, any shape; it must enable gradients itself if it needs them (Captum runs it under
    ``torch.no_grad``) and hold its model's lock (every vizhooks explanation does). The noise is
    drawn after ``torch.manual_seed(seed)``; the global random state is put back afterwards, and
    a method that draws random numbers itself (SmoothGrad) draws them from the same seeded state.

    Example:
        >>> sensitivity_score(lambda x, t: saliency.attribute(x, target=t), x, 281)
    """
    from captum.metrics import sensitivity_max

    _check(x, target, 1, 1)
    _check_samples(n_perturb, max_examples_per_batch)

    def explain_each(inputs: torch.Tensor | tuple[torch.Tensor, ...], target: int) -> object:
        if isinstance(inputs, tuple):  # Captum's first call passes its inputs as a tuple, and wants one back
            return (explain_each(inputs[0], target),)
        return torch.stack([explanation_func(inputs[i:i + 1], target).reshape(-1) for i in range(inputs.shape[0])])

    with torch.random.fork_rng(devices=_rng_devices(x.device)):
        torch.manual_seed(seed)
        value = sensitivity_max(explain_each, x.detach(), perturb_radius=radius, n_perturb_samples=n_perturb,
                                max_examples_per_batch=max_examples_per_batch, target=target)
    return float(value[0])
