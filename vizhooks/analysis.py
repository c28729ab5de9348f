"""One photo through one model: what the page (and a notebook) shows, computed in one place."""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from PIL import Image

from vizhooks.hooks.budget import check_capture
from vizhooks.hooks.capture import capture_with_output
from vizhooks.hooks.gradients import gradient_pass
from vizhooks.interpret.cam import cams_from
from vizhooks.interpret.sanity import SanityResult, sanity_check
from vizhooks.models.images import to_tensor
from vizhooks.models.layers import conv_layers
from vizhooks.models.registry import ModelBundle


@dataclass(frozen=True)
class Prediction:
    index: int
    label: str
    probability: float


@dataclass(frozen=True)
class LayerStats:
    shape: tuple[int, ...]
    min: float
    mean: float
    max: float

    @property
    def channels(self) -> int:
        return self.shape[0]


@dataclass(frozen=True)
class Analysis:
    """The result of one forward pass with hooks.

    Attributes:
        picture: the RGB picture the model saw (after resizing).
        x: the normalised (1, 3, H, W) input tensor.
        activations: ``{layer name: (1, C, H, W) tensor}`` in network order.
        logits: (1, 1000) output of the same pass.
        what: "output" or "input".
        source_size: ``(width, height)`` of the picture before it was resized (``(0, 0)``: not known).
    """

    picture: Image.Image
    x: torch.Tensor
    activations: dict[str, torch.Tensor]
    logits: torch.Tensor
    what: str
    source_size: tuple[int, int] = (0, 0)
    _stats: dict[str, LayerStats] = field(default_factory=dict, compare=False, repr=False)
    _encoded: list[bytes] = field(default_factory=list, compare=False, repr=False)

    def picture_jpeg(self) -> bytes:
        """The picture the model saw, encoded once (JPEG, quality 95): every session that shows
        this shared analysis sends these bytes instead of encoding the picture again on each run."""
        if not self._encoded:
            out = io.BytesIO()
            self.picture.convert("RGB").save(out, "JPEG", quality=95)
            self._encoded.append(out.getvalue())
        return self._encoded[0]

    def stats(self, layer: str) -> LayerStats:
        """The layer's shape and range, worked out once: every session that shows this (shared,
        cached) analysis reads them on every run."""
        found = self._stats.get(layer)
        if found is None:
            found = self._stats[layer] = layer_stats(self.activations[layer])
        return found

    @property
    def nbytes(self) -> int:
        return sum(t.element_size() * t.nelement() for t in self.activations.values())


@dataclass(frozen=True)
class VideoAnalysis:
    """Every sampled frame of one clip through one model: the frames as the model saw them, the
    inputs, the chosen layers' maps ``(T, C, H, W)`` and the logits ``(T, classes)``."""

    pictures: list
    times: list[float]
    x: torch.Tensor
    activations: dict[str, torch.Tensor]
    logits: torch.Tensor
    what: str

    @property
    def nbytes(self) -> int:
        return sum(t.nbytes for t in [self.x, *self.activations.values()])

    def frame(self, i: int) -> Analysis:
        """Frame ``i`` as the one-picture analysis the photo views draw (slices, no model run)."""
        return Analysis(picture=self.pictures[i], x=self.x[i:i + 1],
                        activations={k: v[i:i + 1] for k, v in self.activations.items()},
                        logits=self.logits[i:i + 1], what=self.what)


def image_digest(data: bytes) -> str:
    """A short content hash, used as a cache key: the same photo under any name is one entry."""
    return hashlib.sha256(data).hexdigest()[:32]


def network_order(model: torch.nn.Module, layers: list[str]) -> list[str]:
    """``layers`` sorted as the modules appear in the network (unknown names keep their place
    at the end, for :func:`vizhooks.capture` to report)."""
    order = {name: i for i, (name, _) in enumerate(model.named_modules())}
    return sorted(dict.fromkeys(layers), key=lambda n: order.get(n, len(order)))


def analyse(
    bundle: ModelBundle,
    image: Image.Image,
    size: int = 224,
    layers: list[str] | None = None,
    what: str = "output",
) -> Analysis:
    """Resize ``image`` the model's way, run the model once with hooks on ``layers`` and keep
    everything the page shows, every tensor as (1, C, H, W) maps (``as_maps=True``). ``layers``
    defaults to every Conv2d; results come in network order.

    Raises:
        CaptureTooLargeError: the feature maps would exceed ``VIZHOOKS_MAX_CAPTURE_MB``; checked
            on the meta device before anything runs.

    Example:
        >>> a = analyse(bundle, load_image("sample_images/coffee.jpg"), 224, ["conv1"])
        >>> top_classes(a.logits, bundle.categories)[0].label
    """
    picture = bundle.resize(image, size)
    names = network_order(bundle.model, layers or [c.name for c in conv_layers(bundle.model)])
    check_capture(bundle.name, names, (picture.height, picture.width), what)  # before any work
    x = to_tensor(picture, bundle.mean, bundle.std)
    acts, logits = capture_with_output(bundle.model, x, names, what=what, as_maps=True)
    return Analysis(picture=picture, x=x, activations=acts, logits=logits, what=what, source_size=image.size)


def top_classes(logits: torch.Tensor, categories: list[str], k: int = 5) -> list[Prediction]:
    """The ``k`` most probable classes (softmax over the logits of the first image)."""
    probs = torch.softmax(logits.detach().float().reshape(logits.shape[0], -1)[0], dim=0)
    values, indices = probs.topk(min(k, probs.numel()))
    return [Prediction(int(i), categories[int(i)], float(v)) for v, i in zip(values, indices, strict=True)]


def layer_stats(activation: torch.Tensor) -> LayerStats:
    """Shape (without the batch dimension) and min / mean / max of one activation."""
    t = activation.detach().float()
    shape = tuple(t.shape[1:]) if t.ndim == 4 else tuple(t.shape)
    return LayerStats(shape, float(t.min()), float(t.mean()), float(t.max()))


@dataclass(frozen=True)
class MapPair:
    """One layer of two photos, ready to draw side by side.

    Attributes:
        a, b: (1, C, H, W) maps; ``b`` resampled bilinearly to ``a``'s grid when the photos'
            shapes differ (``resized``), so they can be compared cell by cell.
        similarity: cosine similarity of the two flattened layers (1 = the same pattern).
        clim: one (min, max) for both, so brightness means the same in both grids.
    """

    a: torch.Tensor
    b: torch.Tensor
    similarity: float
    clim: tuple[float, float]
    resized: bool


def compare_maps(a: torch.Tensor, b: torch.Tensor) -> MapPair:
    import torch.nn.functional as F

    a, b = a.detach().float(), b.detach().float()
    resized = tuple(b.shape[-2:]) != tuple(a.shape[-2:])
    if resized:
        b = F.interpolate(b, size=tuple(a.shape[-2:]), mode="bilinear", align_corners=False)
    similarity = float(F.cosine_similarity(a.flatten(), b.flatten(), dim=0))
    clim = (float(min(a.min(), b.min())), float(max(a.max(), b.max())))
    return MapPair(a, b, similarity, clim, resized)


def clamp_limit_of(gradient: torch.Tensor, percentile: int) -> tuple[float, float, int]:
    """The lesson's clamp limit: the value at ``percentile`` of the non-zero |gradient| values, the
    share of all the gradient's values beyond it (the clipped share) and how many values there are.
    Zeros are left out: behind a ReLU half the gradient is often exactly 0, and a limit of 0 would
    cut the path rather than clip it."""
    ordered = gradient.abs().flatten().sort().values
    count = int(ordered.numel())
    nonzero = ordered[ordered > 0]
    if not nonzero.numel():
        return 0.0, 0.0, count
    limit = float(nonzero[min(max(math.ceil(nonzero.numel() * percentile / 100) - 1, 0), nonzero.numel() - 1)])
    return limit, float((ordered > limit).sum()) / count, count


def lesson_sanity(bundle: ModelBundle, x: torch.Tensor, layer: str, target: int) -> SanityResult:
    """The lesson's sanity check: Grad-CAM of ``layer`` for ``target`` on a copy of the model, after
    each stage is re-initialised from the head down (vizhooks.interpret.sanity, seed 0: the lesson's code draws
    the same weights).

    Raises:
        ExplainError: the layer has no spatial map (a transformer's tokens).
    """
    return sanity_check(bundle, x, target, ["gradcam"], [layer])


def sanity_bytes(result: SanityResult) -> int:
    return sum(m.numel() * m.element_size() for maps in result.maps.values() for m in maps)


def hook_calls_demo(model: torch.nn.Module, x: torch.Tensor, layer: str, passes: int = 3) -> dict[str, list[int]]:
    """What forgetting ``handle.remove()`` does: calls of a forward hook per pass when a loop
    registers it on every pass without removing it ("forgot"), and when it removes it ("removed").

    Runs ``2 * passes`` forward passes on the shared model under its lock; every handle is removed
    in ``finally``, so the demonstration itself leaves nothing behind.
    """
    from vizhooks._hooks import hooked, model_device

    modules = dict(model.named_modules())
    if layer not in modules:
        raise KeyError(layer)
    result: dict[str, list[int]] = {}
    calls = [0]

    def count(module: torch.nn.Module, args: object, output: object) -> None:
        calls[0] += 1

    with hooked(model, preserve=False) as hooks, torch.inference_mode():
        for mode in ("forgot", "removed"):
            per_pass = []
            for _ in range(passes):
                calls[0] = 0
                handle = hooks.forward_hook(modules[layer], count)
                model(x.to(model_device(model)))
                per_pass.append(calls[0])
                if mode == "removed":
                    handle.remove()
            hooks.remove()  # the forgotten ones too, before the other mode
            result[mode] = per_pass
    return result


def frames_input(bundle: ModelBundle, frames: list[Image.Image], size: int) -> torch.Tensor:
    """The frames as one ``(T, 3, H, W)`` batch, each prepared the way the model expects."""
    return torch.cat([bundle.preprocess(frame, size) for frame in frames])


def frame_cams(model: torch.nn.Module, x: torch.Tensor, layers: list[str], *, target: int | None = None,
               progress: Callable[[int], None] | None = None) -> dict[str, torch.Tensor]:
    """Grad-CAM of every frame of ``x`` (one backward pass each, so one frame's gradient never
    mixes with another's) for class ``target`` (None: each frame's own top class);
    ``{layer: (T, H, W)}``. ``progress(i)`` after frame ``i`` (1-based)."""
    hw = (x.shape[-2], x.shape[-1])
    per_layer: dict[str, list[torch.Tensor]] = {}
    for i in range(x.shape[0]):
        result = gradient_pass(model, x[i:i + 1], layers, target=target, as_maps=True)
        for name, cam in cams_from(result, hw).items():
            per_layer.setdefault(name, []).append(cam)
        if progress is not None:
            progress(i + 1)
    return {name: torch.stack(cams) for name, cams in per_layer.items()}
