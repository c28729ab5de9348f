"""Does the explanation depend on the model? The cascading model-parameter randomisation test of
Adebayo et al., "Sanity Checks for Saliency Maps" (NeurIPS 2018).

On a private copy of the network, stages are re-initialised one after another from the top (the
head) down, cumulatively, until every weight is random. After each step every method draws its map
again for the same photo and the same class, and the new map is compared with the original one:

- **Spearman rank correlation** of the two maps' values (flattened). A map whose pixels keep their
  order while the model is destroyed describes the picture (edges, colour), not the model.
- **SSIM** (Wang et al., 2004; Gaussian window 11 px, sigma 1.5, each map min-max scaled to [0, 1]
  first, as in the paper's figures), for structure rather than order.

A method whose correlation is still at least :data:`FLAG_AT` once every stage is random is
*flagged*. A map that is constant (a CAM that ReLU made all zero) shares no order with anything: its
correlation counts as 0, never NaN.

Re-initialising uses each module's own ``reset_parameters()`` (PyTorch's default initialisation);
parameters owned directly by a module without one (ViT's class token and position embedding) are
drawn from N(0, 0.02). A BatchNorm reset sets its running mean to 0 and variance to 1, so no stage
divides by a negative or zero variance (re-drawing running statistics at random is the known trap
that gives NaN). The shared model is only read, under its lock, to make the copy.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from vizhooks._hooks import check_input
from vizhooks.i18n import Names
from vizhooks.interpret.methods import METHODS, ExplainError, explain, private_copy
from vizhooks.models.registry import ModelBundle
from vizhooks.render.scale import min_max

#: A method whose maps still correlate this much with the original after every stage is randomised
#: is flagged: it does not depend on the model.
FLAG_AT = 0.5

#: ``progress(done, total, stage)`` after each randomisation step's maps.
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class SanityResult:
    """The maps and their likeness to the original after each cumulative randomisation step.

    Attributes:
        methods: the methods, in the order asked.
        stages: the module names re-initialised at each step, top first (``stages[i]`` is what step
            ``i + 1`` adds; the model is fully random after the last).
        target: the class every map explains (the original model's top-1 unless given).
        maps: ``{method: [original map, map after step 1, ...]}`` (``len(stages) + 1`` maps each).
        correlations: ``{method: [Spearman after step 1, ..., after the last step]}``.
        ssim: ``{method: [SSIM after step 1, ...]}``.
    """

    methods: tuple[str, ...]
    stages: tuple[str, ...]
    target: int
    maps: dict[str, list[torch.Tensor]]
    correlations: dict[str, list[float]]
    ssim: dict[str, list[float]]

    @property
    def flagged(self) -> tuple[str, ...]:
        """Methods whose final correlation is still at least :data:`FLAG_AT`."""
        return tuple(m for m in self.methods if self.correlations[m] and self.correlations[m][-1] >= FLAG_AT)


def _ranks(values: torch.Tensor) -> torch.Tensor:
    """Average ranks (ties share the mean of their positions), as Spearman's coefficient wants."""
    v = values.double().flatten()
    order = torch.argsort(v, stable=True)
    sorted_v = v[order]
    ranks = torch.empty_like(v)
    # each run of equal values gets the mean of its 1-based positions
    starts = torch.ones_like(sorted_v, dtype=torch.bool)
    starts[1:] = sorted_v[1:] != sorted_v[:-1]
    group = torch.cumsum(starts.long(), 0) - 1
    positions = torch.arange(1, v.numel() + 1, dtype=torch.float64)
    sums = torch.zeros(int(group[-1]) + 1, dtype=torch.float64).index_add_(0, group, positions)
    counts = torch.zeros_like(sums).index_add_(0, group, torch.ones_like(positions))
    ranks[order] = (sums / counts)[group]
    return ranks


def spearman(a: torch.Tensor, b: torch.Tensor) -> float:
    """Spearman's rank correlation of two maps of the same shape; 0.0 when either is constant."""
    if a.shape != b.shape:
        raise ValueError(f"the maps differ in shape: {tuple(a.shape)} and {tuple(b.shape)}.")
    ra, rb = _ranks(a), _ranks(b)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    denominator = float(ra.norm() * rb.norm())
    return float((ra * rb).sum()) / denominator if denominator > 0 else 0.0


def _gaussian_window(size: int = 11, sigma: float = 1.5) -> torch.Tensor:
    g = torch.exp(-((torch.arange(size, dtype=torch.float64) - (size - 1) / 2) ** 2) / (2 * sigma ** 2))
    g = g / g.sum()
    return (g[:, None] * g[None, :])[None, None]


def ssim(a: torch.Tensor, b: torch.Tensor) -> float:
    """Mean structural similarity of two (H, W) maps, each min-max scaled to [0, 1] first
    (Gaussian window 11, sigma 1.5, K1 = 0.01, K2 = 0.03, data range 1; the window is cut to the
    map for maps smaller than 11 px; only places where the whole window fits count)."""
    if a.shape != b.shape or a.dim() != 2:
        raise ValueError(f"ssim takes two (H, W) maps of one shape, not {tuple(a.shape)} and {tuple(b.shape)}.")
    size = min(11, int(a.shape[0]), int(a.shape[1]))
    w = _gaussian_window(size)
    x, y = min_max(a.double())[None, None], min_max(b.double())[None, None]
    mx, my = F.conv2d(x, w), F.conv2d(y, w)
    sxx = F.conv2d(x * x, w) - mx * mx
    syy = F.conv2d(y * y, w) - my * my
    sxy = F.conv2d(x * y, w) - mx * my
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    value = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return float(value.mean())


def _leaves(module: nn.Module) -> int:
    """How many modules under ``module`` own parameters themselves."""
    return sum(1 for m in module.modules() if any(True for _ in m.parameters(recurse=False)))


def randomisation_stages(model: nn.Module) -> list[str]:
    """The modules re-initialised one step at a time, from the output down.

    The top-level children that have parameters, in reverse order; a container that holds more than
    half of the network's parameterised modules (VGG's ``features``, ViT's ``encoder``) is opened
    into its own children (again, at most three levels), so that no single step destroys most of
    the network at once. resnet18: fc, layer4, layer3, layer2, layer1, bn1, conv1.
    """
    total = _leaves(model)
    modules = dict(model.named_modules())
    stages = [name for name, child in model.named_children() if _leaves(child)]
    for _ in range(3):
        opened: list[str] = []
        for name in stages:
            children = [f"{name}.{n}" for n, c in modules[name].named_children() if _leaves(c)]
            owns = any(True for _ in modules[name].parameters(recurse=False))
            if _leaves(modules[name]) * 2 > total and len(children) > 1 and not owns:
                opened += children
            else:
                opened.append(name)
        if opened == stages:
            break
        stages = opened
    return stages[::-1]


def reinitialise(module: nn.Module, seed: int) -> None:
    """Every parameter under ``module`` drawn anew (see the module's docstring), reproducibly."""
    generator_state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        with torch.no_grad():
            for m in module.modules():
                reset = getattr(m, "reset_parameters", None)
                if callable(reset):
                    reset()
                elif isinstance(m, nn.modules.batchnorm._NormBase):  # pragma: no cover - all have reset
                    m.reset_running_stats()
                else:
                    for p in m.parameters(recurse=False):
                        p.normal_(0.0, 0.02)
    finally:
        torch.random.set_rng_state(generator_state)


def sanity_check(
    bundle_or_model: ModelBundle | nn.Module,
    x: torch.Tensor,
    target: int | None = None,
    methods: str | Iterable[str] = ("gradcam",),
    layers: str | Sequence[str] | None = None,
    *,
    stages: Sequence[str] | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    **settings: Any,
) -> SanityResult:
    """The cascading randomisation test for ``methods`` on this photo and class.

    Args:
        bundle_or_model: the model (a :class:`ModelBundle` or a module); it is copied, never changed.
        x: (1, 3, H, W) input.
        target: the class; default the original model's top-1 (kept for every step).
        methods, layers: as for :func:`vizhooks.interpret.methods.explain`; ``settings`` are its keyword
            settings (``batch_size``, ``ig_steps``, ...).
        stages: module names to re-initialise, one per step, in order; default
            :func:`randomisation_stages`.
        seed: the seed of the first step's re-initialisation (step ``i`` uses ``seed + i``).
        progress: ``progress(done, total, stage)`` after each step.

    Returns:
        a :class:`SanityResult`.

    Raises:
        ExplainError: an unknown method or setting, a stage the model lacks.
    """
    model = bundle_or_model.model if isinstance(bundle_or_model, ModelBundle) else bundle_or_model
    check_input(x)
    names = [methods] if isinstance(methods, str) else list(methods)
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise ExplainError(f"Unknown method {unknown[0]!r}; choose from {', '.join(METHODS)}.", "explain_method",
                           method=unknown[0], known=Names(METHODS))
    private = private_copy(model)
    modules = dict(private.named_modules())
    steps = list(stages) if stages is not None else randomisation_stages(private)
    missing = [s for s in steps if s not in modules]
    if missing:
        raise ExplainError(f"The model has no module {missing[0]!r} to randomise.", "explain_stage",
                           stage=missing[0])
    subject: ModelBundle | nn.Module = (dataclasses.replace(bundle_or_model, model=private)
                                        if isinstance(bundle_or_model, ModelBundle) else private)
    chosen_layers = [layers] if isinstance(layers, str) else (list(layers) if layers else None)
    if target is None:
        with torch.no_grad():
            target = int(private(x.to(next(private.parameters()).device))[0].argmax())
    first = explain(subject, x, target, names, chosen_layers, **settings)
    maps = {m: [first[m]] for m in names}
    correlations: dict[str, list[float]] = {m: [] for m in names}
    likeness: dict[str, list[float]] = {m: [] for m in names}
    for i, stage in enumerate(steps, 1):
        reinitialise(modules[stage], seed + i)
        now = explain(subject, x, target, names, chosen_layers, **settings)
        for m in names:
            new = now[m]
            maps[m].append(new)
            correlations[m].append(spearman(maps[m][0], new))
            likeness[m].append(ssim(maps[m][0], new))
        if progress is not None:
            progress(i, len(steps), stage)
    return SanityResult(tuple(names), tuple(steps), int(target), maps, correlations, likeness)


__all__ = ["FLAG_AT", "SanityResult", "randomisation_stages", "reinitialise", "sanity_check", "spearman", "ssim"]
