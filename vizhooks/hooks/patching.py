"""Activation patching: run photo A with one layer's output taken from photo B, and see how much
of B's answer comes back. Swept over the layers, it shows *where* the network decides.

- :func:`patch`: ``x`` with ``layer``'s output replaced by ``source``'s output at that layer (all
  of it, some channels, or a region of the layer's map).
- :func:`sweep`: the same for many layers. The source's outputs are captured once (one forward
  with a hook on every layer), then the patched runs are batched: one forward per batch of layers,
  copy ``i`` of ``x`` patched at layer ``i`` only, and computed only from there on (before its
  layer a copy is ``x``'s own run, whose outputs were kept: see :class:`_Prefix`).
- :func:`mean_ablate`: a layer's output replaced by its mean over a set of photos (the mean is
  computed once per model, layer and set, and cached).
- :func:`steer`: ``scale * direction`` added to a layer's channels at every position.
- :func:`mean_direction`: a direction to steer along, the mean activation of some photos minus
  that of others, per channel; :func:`class_direction`: the same for the photos of one class
  against the rest (a concept's direction is :func:`vizhooks.interpret.concepts.concept_direction`);
  :func:`gradient_direction`: the gradient of a class's logit with respect to the layer's output,
  averaged over photos and positions (needs no photo of the class).

Channels are where vizhooks puts them everywhere (:func:`vizhooks.models.maps.channel_dim`: dim 1 of
conv maps, the last dim of ViT tokens, Linear outputs and Swin's channels-last maps); a region is
``(top, left, bottom, right)`` of the layer's map as :func:`vizhooks.models.maps.as_map` draws it
(a ViT's patch grid, without the class token), end-exclusive.

Like every hook user here: through :func:`vizhooks._hooks.hooked` (the model's lock, eval mode
inside with the state put back afterwards, every handle removed in ``finally``).
"""

from __future__ import annotations

import hashlib
import math
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import Hooks, check_input, check_ran, first_tensor, hooked, keep, model_device, replace_first
from vizhooks.errors import CodedError
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import as_map, channel_dim, channels_last_modules, maps_of
from vizhooks.models.registry import ModelBundle

__all__ = ["EditResult", "PatchResult", "class_direction", "gradient_direction", "mean_ablate", "mean_direction",
           "patch", "photo_classes",
           "steer", "sweep"]

Region = tuple[int, int, int, int]
#: What an edit does to the ``call``-th output of its layer in one pass: ``edit(call, output)``.
Edit = Callable[[int, torch.Tensor], torch.Tensor]


@dataclass(frozen=True)
class PatchResult:
    """One patched run beside the two plain ones, for one image (CPU tensors).

    Attributes:
        layer: the patched layer.
        logits: ``x``'s logits with the layer patched, 1-d.
        clean: ``x``'s own logits.
        source: the source's logits.
        target: the class :attr:`restored` is measured on.
    """

    layer: str
    logits: torch.Tensor
    clean: torch.Tensor
    source: torch.Tensor
    target: int

    @property
    def restored(self) -> float:
        """How much of the way from ``x``'s target logit to the source's the patch went:
        ``(patched - clean) / (source - clean)``; 1 is all of it, 0 none; NaN when the two agree."""
        gap = float(self.source[self.target] - self.clean[self.target])
        if gap == 0:
            return math.nan
        return float(self.logits[self.target] - self.clean[self.target]) / gap


@dataclass(frozen=True)
class EditResult:
    """``x``'s logits with one layer edited (mean ablation, steering) beside its own (CPU, 1-d).

    Attributes:
        layer: the edited layer.
        logits: with the edit.
        clean: without it.
        target: the class :attr:`change` is measured on (default ``x``'s top-1).
        activations: the maps ``(1, C, H, W)`` of the layers asked for with ``capture=``, with the edit.
        activations_before: the same layers' maps without it.
    """

    layer: str
    logits: torch.Tensor
    clean: torch.Tensor
    target: int
    activations: dict[str, torch.Tensor] = field(default_factory=dict)
    activations_before: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def change(self) -> float:
        """The target logit with the edit minus without."""
        return float(self.logits[self.target] - self.clean[self.target])


class _Layer:
    """One layer's output layout: where its channels are, and which positions a region covers."""

    def __init__(self, name: str, module: nn.Module, channels_last: bool) -> None:
        self.name, self.module, self.channels_last = name, module, channels_last

    def dim(self, t: torch.Tensor) -> int:
        return channel_dim(self.module, t, self.channels_last)

    def mask(self, t: torch.Tensor, input_hw: tuple[int, int], channels: Sequence[int] | None,
             region: Region | None) -> torch.Tensor | None:
        """Where ``t`` (one image's output, batch dim 1) is replaced: a boolean tensor that
        broadcasts against ``t``, or None for all of it."""
        if channels is None and region is None:
            return None
        dim = self.dim(t)
        mask = torch.ones([1] * t.ndim, dtype=torch.bool, device=t.device)
        if channels is not None:
            count = t.shape[dim]
            bad = [c for c in channels if not 0 <= c < count]
            if bad:
                raise CodedError(code="patching_channel", layer=self.name, channel=bad[0], count=count,
                                 last=count - 1)
            shape = [1] * t.ndim
            shape[dim] = count
            chosen = torch.zeros(count, dtype=torch.bool, device=t.device)
            chosen[list(channels)] = True
            mask = mask & chosen.view(shape)
        if region is not None:
            # number the positions, lay the numbers out as the layer's map, read the region's
            shape = list(t.shape)
            shape[dim] = 1
            ids = torch.arange(math.prod(shape), dtype=torch.float64).view(shape)
            if ids.ndim == 3 and dim == 1:  # (N, C, L) channels-first: as_map reads (N, L, C)
                ids = ids.transpose(1, 2)
            laid = as_map(ids, input_hw, channels_last=dim == 3 if ids.ndim == 4 else None)[0, 0]
            top, left, bottom, right = region
            height, width = laid.shape
            if not (0 <= top < bottom <= height and 0 <= left < right <= width):
                raise CodedError(code="patching_region", layer=self.name, region=f"{tuple(region)}",
                                 height=height, width=width)
            inside = torch.zeros(math.prod(shape), dtype=torch.bool)
            inside[laid[top:bottom, left:right].flatten().long()] = True
            mask = mask & inside.view(shape).to(t.device)
        return mask


def _size(out: torch.Tensor, input_hw: tuple[int, int], channels_last: bool) -> str:
    """A layer output's map size for a sentence ("14x14"), or its whole shape."""
    try:
        shown = as_map(out[:1], input_hw, channels_last=channels_last if out.ndim == 4 else None)
    except ValueError:
        shown = out[:1]
    return "x".join(str(s) for s in (shown.shape[2:] or shown.shape[1:]))


def _check_same(layer: _Layer, a: list[torch.Tensor], b: list[torch.Tensor], hw_a: tuple[int, int],
                hw_b: tuple[int, int], code: str) -> None:
    if [t.shape[1:] for t in a] == [t.shape[1:] for t in b]:
        return
    size_a, size_b = _size(a[0], hw_a, layer.channels_last), _size(b[0], hw_b, layer.channels_last)
    if size_a == size_b:  # same map, other channels or calls
        size_a, size_b = "x".join(map(str, a[0].shape[1:])), "x".join(map(str, b[0].shape[1:]))
    raise CodedError(code=code, layer=layer.name, a=size_a, b=size_b)


def _check_rows(layer: _Layer, outs: list[torch.Tensor], photos: int) -> None:
    """Refuse a layer whose output does not start with one row per photo: a reshape before it that
    folds the batch with the positions (a Linear on ``(N * H * W, C)`` rows), or a tensor without a
    batch dim. Its rows cannot be told apart by photo, so no photo's output can be put in."""
    for out in outs:
        if out.ndim == 0 or out.shape[0] != photos:
            raise CodedError(code="patching_batch", layer=layer.name, rows=out.shape[0] if out.ndim else 0,
                             photos=photos)


class _SharedOutput(Exception):
    """A layer gave a batched pass of copies fewer or more rows than copies, though one image gave it one
    row (a module that returns one tensor for the whole batch): its copies run one at a time."""


def _module(model: nn.Module | ModelBundle) -> nn.Module:
    """The network of a :class:`ModelBundle`, or ``model`` itself."""
    return model.model if isinstance(model, ModelBundle) else model


def _one_image(x: torch.Tensor, name: str) -> None:
    check_input(x)
    if x.shape[0] != 1:
        raise ValueError(f"{name} must be one image, (1, 3, H, W), not a batch of {x.shape[0]}; "
                         "patch one pair at a time.")


def _channels(channels: Iterable[int] | None) -> list[int] | None:
    if channels is None:
        return None
    chosen = [int(c) for c in channels]
    if not chosen:
        raise ValueError("channels is empty; name at least one channel index (0 or more), or leave it out for all.")
    return chosen


def _region(region: Sequence[int] | None) -> Region | None:
    if region is None:
        return None
    if len(region) != 4:
        raise ValueError(f"region must be (top, left, bottom, right) in the layer's map, not {tuple(region)!r}.")
    top, left, bottom, right = (int(v) for v in region)
    return top, left, bottom, right


def _layers(model: nn.Module, names: Iterable[str]) -> list[_Layer]:
    modules = dict(model.named_modules())
    last = channels_last_modules(model)
    return [_Layer(name, modules[name], name in last) for name in names]


def _capture(hooks: Hooks, model: nn.Module, x: torch.Tensor,
             layers: Sequence[_Layer]) -> tuple[torch.Tensor, dict[str, list[torch.Tensor]]]:
    """One forward of ``x`` with a hook on every layer: its logits and each layer's outputs (one per
    call of the module, kept on the model's device)."""
    kept: dict[str, list[torch.Tensor]] = {layer.name: [] for layer in layers}
    for layer in layers:
        store = kept[layer.name]
        # a copy: in-place ops after the layer (ReLU(inplace=True), out += identity) rewrite its output
        hooks.forward_hook(layer.module,
                           lambda m, a, out, store=store: store.append(first_tensor(out).detach().clone()))
    with torch.inference_mode():
        logits = first_tensor(model(x))
    hooks.remove()
    check_ran([layer.name for layer in layers], [name for name, outs in kept.items() if outs])
    return logits, kept


#: Leaf modules whose rows a batched patched pass can leave uncomputed while they still equal x's own
#: run: each maps one tensor to one tensor, row by row (in eval mode), and does most of a network's work.
_ROWWISE = (nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d, nn.ConvTranspose3d, nn.Linear,
            nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d, nn.LayerNorm, nn.GroupNorm, nn.MaxPool1d, nn.MaxPool2d,
            nn.MaxPool3d, nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d,
            nn.AdaptiveAvgPool3d)


#: At most this much of x's own outputs is kept for :class:`_Prefix` (a big model on a big photo runs
#: its later modules on every copy rather than hold all of them).
_PREFIX_BYTES = 512 * 2**20


def _batch_statistics(module: nn.Module) -> bool:
    """A BatchNorm without running statistics: it normalises over the batch even in eval mode, so the
    images of a batch are not independent there."""
    return isinstance(module, nn.modules.batchnorm._BatchNorm) and module.running_mean is None


def _rowwise_modules(model: nn.Module) -> list[nn.Module]:
    """The leaf modules of ``model`` that :class:`_Prefix` may skip rows of."""
    return [m for m in model.modules()
            if isinstance(m, _ROWWISE) and next(m.children(), None) is None and not _batch_statistics(m)]


class _Prefix:
    """Skips the shared prefix of a batched patched pass.

    Copy ``i`` of ``x`` equals ``x``'s own run until its layer is patched, so the work before that is the
    same for every copy and was done once already, in ``x``'s own run. For each row-wise leaf module
    (a conv, a norm, a pool, a Linear: :func:`_rowwise_modules`) that run kept the input's shape and the
    output of every call; in the batched pass a pre-hook hands the module only the rows already patched
    (the copies are ordered by when their layer first runs, so these are the first ``k``), and a forward
    hook puts the kept output back for the others. Before the first patch a module computes nothing
    (a batch of 0), and the last copies skip almost all of the network. The model is entered only
    through hooks; a module whose call does not look as it did in ``x``'s run (another batch layout, a
    reshape that folds the batch) runs on every row, as before.
    """

    def __init__(self, modules: list[nn.Module]) -> None:
        self.modules = modules
        #: per module, per call of x's own run: (input shape, output), or None where it cannot be skipped
        self.kept: dict[nn.Module, list[tuple[torch.Size, torch.Tensor] | None]] = {m: [] for m in modules}
        self.rows = 0
        self.patched: list[bool] = []
        self._calls: dict[nn.Module, int] = {}
        self._pending: dict[nn.Module, int] = {}

    def keep_clean(self, hooks: Hooks) -> None:
        """Hooks that keep each module's calls in ``x``'s own run (one image), the first
        :data:`_PREFIX_BYTES` of outputs (the earliest calls, which every copy skips); removed with the
        block's other hooks."""
        room = [_PREFIX_BYTES]
        for module in self.modules:
            hooks.forward_hook(module, self._keeper(self.kept[module], room))

    @staticmethod
    def _keeper(store: list[tuple[torch.Size, torch.Tensor] | None], room: list[int]) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            if (len(args) == 1 and isinstance(args[0], torch.Tensor) and isinstance(output, torch.Tensor)
                    and args[0].ndim and output.ndim and args[0].shape[0] == 1 and output.shape[0] == 1
                    and output.nbytes <= room[0]):
                room[0] -= output.nbytes
                # a copy: in-place ops after the module (ReLU(inplace=True)) rewrite its output
                store.append((args[0].shape, output.detach().clone()))
            else:
                store.append(None)

        return hook

    def start(self, hooks: Hooks, rows: int) -> None:
        """Register the skipping hooks for a pass of ``rows`` copies (before the patch hooks, so that those
        see every row); every copy starts unpatched."""
        self.rows = rows
        self.patched = [False] * rows
        self._calls = dict.fromkeys(self.modules, 0)
        self._pending = {}
        for module in self.modules:
            hooks.forward_pre_hook(module, self._pre)
            hooks.forward_hook(module, self._post)

    def _done(self) -> int:
        """How many copies are patched already: the first ``k`` rows, or ``rows`` (compute all) if not a prefix."""
        k = sum(self.patched)
        return k if not any(self.patched[k:]) else self.rows

    def _pre(self, module: nn.Module, args: Any) -> Any:
        calls = self.kept[module]
        call = self._calls[module]
        entry = calls[call] if call < len(calls) else None
        if entry is None or len(args) != 1 or not isinstance(args[0], torch.Tensor):
            return None
        k = self._done()
        if k == self.rows or args[0].shape != (self.rows, *entry[0][1:]):
            return None
        self._pending[module] = k
        return (args[0][:k],)

    def _post(self, module: nn.Module, args: Any, output: Any) -> Any:
        call = self._calls[module]
        self._calls[module] = call + 1
        k = self._pending.pop(module, None)
        if k is None:
            return None
        entry = self.kept[module][call]
        assert entry is not None  # _pre skipped rows only where x's run kept this call
        clean = entry[1]
        return torch.cat([output, clean.expand(self.rows - k, *clean.shape[1:])])


def sweep(
    model: nn.Module | ModelBundle,
    x: torch.Tensor,
    source: torch.Tensor,
    layers: str | Iterable[str],
    *,
    target: int | None = None,
    channels: Iterable[int] | None = None,
    region: Sequence[int] | None = None,
    batch_size: int = 16,
) -> list[PatchResult]:
    """:func:`patch` for each of ``layers``, in their order, in few forward passes.

    The source and ``x`` run once each with a hook on every layer (the source's outputs to put in,
    ``x``'s shapes to check them against); then copies of ``x`` run in batches of ``batch_size``
    layers, copy ``i`` patched at layer ``i`` only. Before its layer a copy equals ``x``'s own run:
    its convs, norms, pools and Linears take that run's kept outputs instead of computing them
    again, so each copy costs only the network after its layer. A module that runs several times
    in one pass has each of its calls replaced by the source's same call. A model with a BatchNorm
    that uses batch statistics in eval mode runs its copies one at a time, and so does a batch with a
    layer whose output is one tensor for the whole batch.
    A layer whose output does not start with one row per photo (a reshape before it folds the
    positions into the batch, as a Linear on ``(N * H * W, C)`` rows) is refused: its rows cannot be
    told apart by photo.

    Args:
        model: any ``nn.Module`` whose first output is the logits; eval mode inside.
        x: the image to patch, ``(1, 3, H, W)``.
        source: the image whose outputs go in, ``(1, 3, H', W')``; each layer must give both the
            same shape.
        layers: module names (duplicates dropped), or ``"all"`` for every conv.
        target: the class to measure; default the source's top-1.
        channels: only these channel indices are patched; default all.
        region: only ``(top, left, bottom, right)`` of each layer's map (end-exclusive) is patched.
        batch_size: copies of ``x`` per forward pass.

    Returns:
        One :class:`PatchResult` per layer (``.layer``, ``.restored``, ``.logits`` ...).

    Raises:
        UnknownLayerError: a name the model lacks. CodedError (a ValueError): a layer that gives
        the two photos different shapes, a channel or region outside a layer, a layer whose output
        does not have one row per photo. ValueError: bad inputs, a layer that did not run.

    Example:
        >>> for r in sweep(bundle.model, cat, dog, "all"):
        ...     print(r.layer, round(r.restored, 2))
    """
    model = _module(model)
    _one_image(x, "x")
    _one_image(source, "source")
    chosen, box = _channels(channels), _region(region)
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a whole number >= 1, not {batch_size!r}.")
    hw_x = (int(x.shape[-2]), int(x.shape[-1]))
    hw_s = (int(source.shape[-2]), int(source.shape[-1]))
    with hooked(model) as hooks:
        names = resolve_layers(model, layers)
        unique = _layers(model, names)
        by_name = {layer.name: layer for layer in unique}
        device = model_device(model)
        xd = x.to(device)
        source_logits, kept = _capture(hooks, model, source.to(device), unique)
        prefix = _Prefix(_rowwise_modules(model))
        prefix.keep_clean(hooks)
        first: dict[str, int] = {}  # the order in which the layers first run
        for layer in unique:
            hooks.forward_hook(layer.module, lambda m, a, out, name=layer.name: None if name in first
                               else first.update({name: len(first)}))
        clean_logits, clean_outs = _capture(hooks, model, xd, unique)
        masks: dict[str, list[torch.Tensor | None]] = {}
        for layer in unique:
            _check_rows(layer, clean_outs[layer.name], 1)
            _check_rows(layer, kept[layer.name], 1)
            _check_same(layer, clean_outs[layer.name], kept[layer.name], hw_x, hw_s, "patching_shapes")
            masks[layer.name] = [layer.mask(t, hw_x, chosen, box) for t in kept[layer.name]]
        del clean_outs
        if target is None:
            target = int(source_logits[0].argmax())
        elif not 0 <= target < source_logits.shape[-1]:
            raise ValueError(f"target must be a class index from 0 to {source_logits.shape[-1] - 1}, not {target!r}.")

        def patcher(name: str, row: int, rows: int) -> Callable[..., Any]:
            calls = [0]
            sources, layer_masks = kept[name], masks[name]

            def hook(module: nn.Module, args: Any, output: Any) -> Any:
                call = calls[0]
                calls[0] += 1
                out = first_tensor(output)
                if out.shape[0] != rows:
                    if rows > 1:
                        raise _SharedOutput(name)
                    _check_rows(by_name[name], [out], rows)
                new = out.clone()
                src, mask = sources[call], layer_masks[call]
                new[row:row + 1] = src if mask is None else torch.where(mask, src, out[row:row + 1])
                prefix.patched[row] = True
                return replace_first(output, new)

            return hook

        # copies in the order their layers first run: the rows already patched are always the first ones
        order = sorted(names, key=first.__getitem__)
        if any(_batch_statistics(m) for m in model.modules()):
            batch_size = 1  # copies in one batch would change each other's statistics
        patched: dict[str, torch.Tensor] = {}

        def run(batch: list[str]) -> None:
            prefix.start(hooks, len(batch))  # before the patch hooks: they must see every row
            for i, name in enumerate(batch):
                hooks.forward_hook(by_name[name].module, patcher(name, i, len(batch)))
            try:
                with torch.inference_mode():
                    patched.update(zip(batch, first_tensor(model(xd.repeat(len(batch), 1, 1, 1))), strict=True))
            finally:
                hooks.remove()

        for start in range(0, len(order), batch_size):
            batch = order[start:start + batch_size]
            try:
                run(batch)
            except _SharedOutput:  # a layer's output is one for the whole batch: patching it would patch all
                for name in batch:
                    run([name])
    clean, src = keep(clean_logits[0]), keep(source_logits[0])
    return [PatchResult(layer=name, logits=keep(patched[name]), clean=clean, source=src, target=target)
            for name in names]


def patch(
    model: nn.Module | ModelBundle,
    x: torch.Tensor,
    source: torch.Tensor,
    layer: str,
    *,
    target: int | None = None,
    channels: Iterable[int] | None = None,
    region: Sequence[int] | None = None,
) -> PatchResult:
    """Run ``x`` with ``layer``'s output replaced by ``source``'s output at that layer.

    Args:
        model: any ``nn.Module`` whose first output is the logits; eval mode inside.
        x: the image to patch, ``(1, 3, H, W)``.
        source: the image whose output goes in; ``layer`` must give both the same shape.
        layer: a module name.
        target: the class :attr:`PatchResult.restored` is measured on; default the source's top-1.
        channels: only these channel indices (0-based, on the layer's channel dim); default all.
        region: only ``(top, left, bottom, right)`` of the layer's map, end-exclusive (a ViT's
            patch grid without the class token; Swin's maps as vizhooks shows them).

    Returns:
        A :class:`PatchResult`: ``.logits`` patched, ``.clean``, ``.source``, ``.target``, ``.restored``.

    Raises:
        UnknownLayerError: a name the model lacks. CodedError (a ValueError): the two photos give
        the layer different shapes; a channel or region outside the layer; a layer whose output does
        not have one row per photo (folded with the positions). ValueError: bad inputs.

    Example:
        >>> r = patch(bundle.model, cat, dog, "layer3.0.conv1")
        >>> r.restored  # 1.0: all of the dog came back; 0.0: none of it
    """
    if not isinstance(layer, str):
        raise TypeError(f"layer must be one module name, not {type(layer).__name__}; sweep() takes many.")
    return sweep(model, x, source, [layer], target=target, channels=channels, region=region, batch_size=1)[0]


# The mean outputs of mean_ablate: {model: {(layer, digest of the photos): means per call}}, a few per model.
_means: weakref.WeakKeyDictionary[nn.Module, OrderedDict[tuple[str, str], list[torch.Tensor]]] = (
    weakref.WeakKeyDictionary())
_means_guard = threading.Lock()
_MEANS_PER_MODEL = 16


def _photo_batch(photos: Any, preprocess: Callable[[Any], torch.Tensor] | None) -> torch.Tensor:
    if isinstance(photos, torch.Tensor):
        items: list[Any] = [photos] if photos.ndim == 4 else [photos[None]] if photos.ndim == 3 else []
        if not items:
            raise ValueError(f"The photos must be (N, 3, H, W) image tensors, not {tuple(photos.shape)}.")
    else:
        items = list(photos)
    if not items:
        raise ValueError("No photos to take the mean over; give at least one.")
    tensors = []
    for item in items:
        if not isinstance(item, torch.Tensor):
            if preprocess is None:
                raise ValueError("The photos are not tensors; pass preprocess= (e.g. bundle.preprocess) "
                                 "to turn them into tensors.")
            item = preprocess(item)
        tensors.append(item[None] if item.ndim == 3 else item)
    shapes = {tuple(t.shape[1:]) for t in tensors}
    if len(shapes) != 1:
        raise ValueError("The photos have different sizes; preprocess them to one size first.")
    batch = torch.cat(tensors)
    check_input(batch)
    return batch


def _mean_outputs(hooks: Hooks, model: nn.Module, layer: _Layer, photos: torch.Tensor) -> list[torch.Tensor]:
    """The layer's output (per call) averaged over ``photos``, on the model's device; cached."""
    data = photos.detach().to("cpu", torch.float32).contiguous()
    digest = hashlib.sha1(data.numpy().tobytes()).hexdigest() + str(tuple(data.shape))
    key = (layer.name, digest)
    with _means_guard:
        cached = _means.setdefault(model, OrderedDict())
        if key in cached:
            cached.move_to_end(key)
            return cached[key]
    device = model_device(model)
    sums: list[torch.Tensor] = []
    for start in range(0, len(photos), 16):
        chunk = photos[start:start + 16]
        _, outs = _capture(hooks, model, chunk.to(device), [layer])
        _check_rows(layer, outs[layer.name], len(chunk))  # else the sum below would mix positions and photos
        parts = [t.sum(0, keepdim=True) for t in outs[layer.name]]
        sums = parts if not sums else [a + b for a, b in zip(sums, parts, strict=True)]
    means = [s / len(photos) for s in sums]
    with _means_guard:
        cached[key] = means
        while len(cached) > _MEANS_PER_MODEL:
            cached.popitem(last=False)
    return means


def _edit_run(model: nn.Module, x: torch.Tensor, layer_name: str, *, target: int | None,
              make_edit: Callable[[Hooks, _Layer, list[torch.Tensor]], Edit],
              capture: str | Iterable[str] = ()) -> EditResult:
    """``x`` plainly and with every call of ``layer_name``'s output replaced by ``edit(call, output)``;
    the first output of each ``capture`` layer kept in both runs, as maps."""
    _one_image(x, "x")
    with hooked(model) as hooks:
        layer = _layers(model, resolve_layers(model, [layer_name]))[0]
        watched = [w for w in _layers(model, resolve_layers(model, capture) if capture else []) if w.name != layer.name]
        xd = x.to(model_device(model))
        clean, outs = _capture(hooks, model, xd, [layer, *watched])
        before = {w.name: outs[w.name][0] for w in watched}
        edit = make_edit(hooks, layer, outs[layer.name])
        after: dict[str, torch.Tensor] = {}

        def keeper(name: str) -> Callable[..., None]:
            def hook(module: nn.Module, args: Any, output: Any) -> None:
                if name not in after:  # the first call, as before
                    after[name] = first_tensor(output).detach().clone()
            return hook

        for w in watched:
            hooks.forward_hook(w.module, keeper(w.name))
        calls = [0]

        def hook(module: nn.Module, args: Any, output: Any) -> Any:
            call = calls[0]
            calls[0] += 1
            return replace_first(output, edit(call, first_tensor(output)))

        hooks.forward_hook(layer.module, hook)
        with torch.inference_mode():
            edited = first_tensor(model(xd))
    if target is None:
        target = int(clean[0].argmax())
    elif not 0 <= target < clean.shape[-1]:
        raise ValueError(f"target must be a class index from 0 to {clean.shape[-1] - 1}, not {target!r}.")
    hw = (int(x.shape[-2]), int(x.shape[-1]))
    shown = {name: keep(t) for name, t in maps_of(model, before, hw).items()}
    return EditResult(layer=layer.name, logits=keep(edited[0]), clean=keep(clean[0]), target=target,
                      activations={name: keep(t) for name, t in maps_of(model, after, hw).items()},
                      activations_before=shown)


def mean_ablate(
    model: nn.Module | ModelBundle,
    x: torch.Tensor,
    layer: str,
    images_or_tensors: Any,
    *,
    target: int | None = None,
    channels: Iterable[int] | None = None,
    preprocess: Callable[[Any], torch.Tensor] | None = None,
) -> EditResult:
    """Run ``x`` with ``layer``'s output (or only ``channels`` of it) replaced by its mean over photos.

    The mean is each position's average over the photos, computed once per model, layer and set of
    photos and cached (the last 16 per model).

    Args:
        x: the image, ``(1, 3, H, W)``.
        layer: a module name; the photos must give it the shape ``x`` gives it.
        images_or_tensors: an ``(N, 3, H, W)`` tensor, or a list of image tensors or of pictures
            (PIL images, with ``preprocess``).
        target: the class :attr:`EditResult.change` is measured on; default ``x``'s top-1.
        channels: only these channel indices are replaced; default all.
        preprocess: turns a picture into a ``(3, H, W)`` or ``(1, 3, H, W)`` tensor (``bundle.preprocess``).

    Returns:
        An :class:`EditResult` (``.logits`` with the mean, ``.clean``, ``.target``, ``.change``).

    Raises:
        UnknownLayerError: a name the model lacks. CodedError: the photos give the layer another
        shape than ``x``; a channel outside the layer; a layer whose output does not have one row per
        photo (folded with the positions). ValueError: bad inputs.

    Example:
        >>> r = mean_ablate(bundle.model, cat, "layer4", samples, preprocess=bundle.preprocess)
        >>> r.change  # how far the cat logit fell
    """
    model = _module(model)
    _one_image(x, "x")
    chosen = _channels(channels)
    photos = _photo_batch(images_or_tensors, preprocess)
    hw_x = (int(x.shape[-2]), int(x.shape[-1]))
    hw_p = (int(photos.shape[-2]), int(photos.shape[-1]))

    def make_edit(hooks: Hooks, layer: _Layer, outs: list[torch.Tensor]) -> Edit:
        _check_rows(layer, outs, 1)
        means = _mean_outputs(hooks, model, layer, photos)
        _check_same(layer, outs, means, hw_x, hw_p, "patching_mean_shapes")
        masks = [layer.mask(t, hw_x, chosen, None) for t in means]

        def edit(call: int, out: torch.Tensor) -> torch.Tensor:
            mask = masks[call]
            return means[call].expand_as(out) if mask is None else torch.where(mask, means[call], out)

        return edit

    return _edit_run(model, x, layer, target=target, make_edit=make_edit)


def steer(model: nn.Module | ModelBundle, x: torch.Tensor, layer: str, direction: torch.Tensor, scale: float, *,
          target: int | None = None, capture: str | Iterable[str] = ()) -> EditResult:
    """Run ``x`` with ``scale * direction`` added to ``layer``'s channels at every position.

    Args:
        x: the image, ``(1, 3, H, W)``.
        layer: a module name.
        direction: a ``(C,)`` vector over the layer's channels: a concept, or the difference of two
            classes' mean activations.
        scale: how much of it to add (negative subtracts).
        target: the class :attr:`EditResult.change` is measured on; default ``x``'s top-1.
        capture: later layers whose maps to keep with and without the steering (their first call),
            in :attr:`EditResult.activations` and :attr:`EditResult.activations_before`.

    Returns:
        An :class:`EditResult`.

    Raises:
        UnknownLayerError: a name the model lacks. CodedError: ``direction`` does not have one value
        per channel of the layer. ValueError: bad inputs.

    Example:
        >>> r = steer(bundle.model, x, "layer4", dog_mean - cat_mean, 2.0, target=dog_class)
    """
    model = _module(model)
    if not isinstance(direction, torch.Tensor) or direction.ndim != 1:
        shape = tuple(direction.shape) if isinstance(direction, torch.Tensor) else type(direction).__name__
        raise ValueError(f"direction must be a (C,) tensor with one value per channel of the layer, not {shape}.")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or math.isnan(scale):
        raise ValueError(f"scale must be a number, not {scale!r}.")

    def make_edit(hooks: Hooks, layer: _Layer, outs: list[torch.Tensor]) -> Edit:
        shifts = []
        for out in outs:
            dim = layer.dim(out)
            if out.shape[dim] != direction.numel():
                raise CodedError(code="patching_direction", layer=layer.name, count=out.shape[dim],
                                 given=direction.numel())
            shape = [1] * out.ndim
            shape[dim] = out.shape[dim]
            shifts.append((scale * direction.to(out.device, out.dtype)).view(shape))
        return lambda call, out: out + shifts[call]

    return _edit_run(model, x, layer, target=target, make_edit=make_edit, capture=capture)


def mean_direction(model: nn.Module | ModelBundle, toward: torch.Tensor, away: torch.Tensor,
                   layer: str) -> torch.Tensor:
    """The direction from ``away`` to ``toward`` at ``layer``: their mean activations per channel,
    ``toward``'s minus ``away``'s, each averaged over its photos, positions (and calls).

    Steering ``away`` by this direction with ``scale=1`` gives each of its channels ``toward``'s
    mean; the photos may have different sizes, since only the means are compared.

    Args:
        toward: images ``(N, 3, H, W)`` (or one, ``(1, 3, H, W)``) whose mean the direction points to.
        away: images whose mean it starts from.
        layer: a module name.

    Returns:
        A ``(C,)`` CPU tensor, one value per channel of the layer (for :func:`steer`).

    Raises:
        UnknownLayerError: a name the model lacks. ValueError: bad inputs, a layer that did not run.

    Example:
        >>> direction = mean_direction(bundle.model, dog, cat, "layer3")
        >>> steer(bundle.model, cat, "layer3", direction, 1.0).logits
    """
    model = _module(model)
    check_input(toward)
    check_input(away)
    device = model_device(model)
    means = []
    with hooked(model) as hooks:
        found = _layers(model, resolve_layers(model, [layer]))[0]
        for photos in (toward, away):
            _, outs = _capture(hooks, model, photos.to(device), [found])
            # every position of every photo and call as one row of channel values
            rows = [t.movedim(found.dim(t), -1).reshape(-1, t.shape[found.dim(t)]) for t in outs[found.name]]
            means.append(torch.cat(rows).double().mean(0))
    return keep((means[0] - means[1]).float())


def photo_classes(model: nn.Module | ModelBundle, photos: torch.Tensor | Sequence[torch.Tensor], *,
                  batch_size: int = 16) -> list[int]:
    """The model's top-1 class of each of ``photos`` ((N, 3, H, W), or a list of image tensors of one size),
    in batches (eval mode, the model's lock)."""
    model = _module(model)
    photos = _photo_batch(photos, None)
    device = model_device(model)
    found: list[int] = []
    with hooked(model), torch.inference_mode():
        for start in range(0, len(photos), batch_size):
            found.extend(first_tensor(model(photos[start:start + batch_size].to(device))).argmax(-1).tolist())
    return [int(c) for c in found]


def class_direction(model: nn.Module | ModelBundle, photos: torch.Tensor | Sequence[torch.Tensor], layer: str,
                    toward: int, *, labels: Sequence[int] | None = None, away: int | None = None) -> torch.Tensor:
    """The direction of class ``toward`` at ``layer``: the mean activation of the photos of that class
    minus that of the other photos (or of class ``away`` only), per channel (:func:`mean_direction`).

    Steering a photo of the others by it with ``scale=1`` gives each channel of the layer the class's
    mean: the difference of two classes' mean activations, as the issue's steering asks for.

    Args:
        photos: images ``(N, 3, H, W)`` (or a list of image tensors of one size), some of class ``toward``
            and some not.
        layer: a module name.
        toward: the class the direction points to.
        labels: the class of each photo; default the model's own top-1 of each (:func:`photo_classes`).
        away: the class it starts from; default every photo not of ``toward``.

    Returns:
        A ``(C,)`` CPU tensor, one value per channel of the layer (for :func:`steer`).

    Raises:
        UnknownLayerError: a name the model lacks. CodedError (a ValueError): no photo of ``toward``,
        or none to start from. ValueError: bad inputs.

    Example:
        >>> direction = class_direction(bundle.model, samples, "layer4", toward=281)
        >>> steer(bundle.model, dog, "layer4", direction, 1.0, target=281).change
    """
    photos = _photo_batch(photos, None)
    classes = photo_classes(model, photos) if labels is None else [int(c) for c in labels]
    if len(classes) != len(photos):
        raise ValueError(f"labels has {len(classes)} classes for {len(photos)} photos: give one class per photo.")
    mine = [i for i, c in enumerate(classes) if c == toward]
    others = [i for i, c in enumerate(classes) if (c != toward if away is None else c == away)]
    if not mine:
        raise CodedError(code="steer_no_class", toward=toward, n=len(classes))
    if not others:
        raise CodedError(code="steer_no_others", toward=toward if away is None else away)
    return mean_direction(model, photos[mine], photos[others], layer)


def gradient_direction(model: nn.Module | ModelBundle, photos: torch.Tensor | Sequence[torch.Tensor], layer: str,
                       toward: int, *, length: float | None = None, batch_size: int = 16) -> torch.Tensor:
    """The direction in which class ``toward``'s logit grows fastest at ``layer``: the gradient of that
    logit with respect to the layer's output, averaged over the photos, the positions (and the calls of
    the module), per channel.

    Where :func:`class_direction` needs photos of the class, this needs none of it: one photo is
    enough (steering it by a small multiple raises the class's logit to first order). The gradient's
    size is in logit per unit of activation, which says nothing about how far to steer; ``length``
    rescales it to that Euclidean length (e.g. that of the layer's mean activation).

    Args:
        photos: images ``(N, 3, H, W)`` (or a list of image tensors of one size).
        layer: a module name.
        toward: the class whose logit is differentiated.
        length: the direction's Euclidean length; default the averaged gradient as it is.
        batch_size: photos per forward and backward pass.

    Returns:
        A ``(C,)`` CPU tensor, one value per channel of the layer (for :func:`steer`).

    Raises:
        UnknownLayerError: a name the model lacks. ValueError: bad inputs, a class outside the
        logits, a layer that did not run or that the logit does not depend on.

    Example:
        >>> direction = gradient_direction(bundle.model, x, "layer4", toward=281, length=10.0)
        >>> steer(bundle.model, x, "layer4", direction, 1.0, target=281).change
    """
    model = _module(model)
    photos = _photo_batch(photos, None)
    if length is not None and (isinstance(length, bool) or not isinstance(length, (int, float)) or not length > 0):
        raise ValueError(f"length must be a number above 0, not {length!r}.")
    device = model_device(model)
    total: torch.Tensor | None = None
    rows = 0
    with hooked(model) as hooks:
        found = _layers(model, resolve_layers(model, [layer]))[0]
        grads: list[torch.Tensor] = []
        calls = [0]

        def hook(module: nn.Module, args: Any, output: Any) -> None:
            # a tensor hook registered as the output is made sees the gradient of that value, even if
            # a later operation (ReLU(inplace=True), out += identity) changes it in place
            calls[0] += 1
            hooks.tensor_hook(first_tensor(output), grads.append)

        hooks.forward_hook(found.module, hook)
        for start in range(0, len(photos), batch_size):
            grads.clear()
            calls[0] = 0
            with torch.enable_grad():
                xg = photos[start:start + batch_size].to(device).requires_grad_(True)
                logits = first_tensor(model(xg))
                if not 0 <= toward < logits.shape[-1]:
                    raise ValueError(f"toward must be a class index from 0 to {logits.shape[-1] - 1}, "
                                     f"not {toward!r}.")
                # the photos do not meet in eval mode: the sum's gradient is each photo's own
                torch.autograd.grad(logits[:, toward].sum(), xg)
            check_ran([found.name], [found.name] if calls[0] else [])
            if not grads:
                raise ValueError(f"Class {toward}'s logit does not depend on {found.name}'s output; pick a layer "
                                 "the logits are computed from.")
            for g in grads:
                dim = found.dim(g)
                flat = g.detach().movedim(dim, -1).reshape(-1, g.shape[dim]).double()
                total = flat.sum(0) if total is None else total + flat.sum(0)
                rows += flat.shape[0]
    assert total is not None
    direction = total / rows
    if length is not None:
        norm = float(direction.norm())
        if norm == 0:
            raise ValueError(f"The class's logit does not change with {found.name}'s output here (its gradient "
                             "is 0); pick a later layer or another class.")
        direction = direction * (length / norm)
    return keep(direction.float())
