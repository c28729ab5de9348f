"""Receptive fields: which input pixels one position of a layer's map can see.

Method. The receptive field of a position is worked out from the layers that run before it, not
guessed from the map's resolution. The model runs once with its parameters swapped for meta-device
tensors (``torch.func.functional_call``: shapes only, no memory, no arithmetic), inside a
:class:`torch.overrides.TorchFunctionMode` that follows every tensor from the input onwards and
gives each one a field per spatial axis:

- ``size`` r: pixels seen by one position; ``jump`` j: input pixels between neighbouring positions;
  ``left`` L: the first input pixel seen by position 0 (negative inside the padding).
- The input: r = 1, j = 1, L = 0.
- conv / max pool / avg pool with kernel k, stride s, padding p, dilation d (effective kernel
  k' = d (k - 1) + 1): r' = r + (k' - 1) j, j' = j s, L' = L - p j. ``F.pad`` shifts L by its padding.
- Any other operation whose output keeps the inputs' height and width (BatchNorm, ReLU, the
  residual ``out += identity``, ``torch.cat`` over channels) gets the union of its inputs' fields:
  for ResNet the main path wins, as it sees more than the shortcut. Squeeze-and-excitation gates
  (1 x 1 maps from a global pool) are left out of that union.
- ``permute`` moves no position, only the order of the dimensions: the field goes along, with a
  note of where height and width now are (ConvNeXt's blocks run LayerNorm and Linear on a
  channels-last (N, H, W, C) copy). ``linear`` and ``layer_norm`` keep the field when the
  dimensions they mix are channels, not height or width.
- Operations that mix positions in other ways (flatten, reshape, interpolate, adaptive pooling,
  GroupNorm's statistics over the map, attention over tokens) have no such field: layers after
  them get ``None`` and their exemplars show the whole picture.

The centre of position (y, x) is then ``start + (y, x) * jump`` with ``start = L + (r - 1) / 2``
(pixel centres at whole numbers), and its box is ``[L + x j, L + x j + r)`` on each axis.
A layer that runs several times in one pass is described by its first run.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.overrides import TorchFunctionMode

from vizhooks._hooks import hooked
from vizhooks.models.layers import resolve_layers

__all__ = ["ReceptiveField", "receptive_field", "receptive_fields"]


@dataclass(frozen=True)
class ReceptiveField:
    """Where one position of a layer's map looks in the model's input, per axis (height, width).

    Attributes:
        size: pixels seen by one position, e.g. ``(7, 7)`` for ResNet's first conv.
        jump: input pixels between neighbouring positions (the product of the strides).
        start: centre of position (0, 0) in input pixels, pixel centres at whole numbers.
    """

    size: tuple[int, int]
    jump: tuple[int, int]
    start: tuple[float, float]

    def box(self, y: int, x: int) -> tuple[int, int, int, int]:
        """The input pixels position ``(y, x)`` of the map sees.

        Args:
            y, x: a position in the layer's map (whole numbers, or numpy arrays of them).

        Returns:
            ``(left, top, right, bottom)`` in input pixels, right and bottom excluded, not clipped
            (a box may reach into the padding).

        Example:
            >>> ReceptiveField((7, 7), (2, 2), (0.0, 0.0)).box(1, 2)
            (1, -1, 8, 6)
        """
        (rh, rw), (jh, jw), (sh, sw) = self.size, self.jump, self.start
        top, left = round(sh - (rh - 1) / 2) + y * jh, round(sw - (rw - 1) / 2) + x * jw
        return left, top, left + rw, top + rh


@dataclass(frozen=True)
class _Axis:
    size: int
    jump: int
    left: int

    def through(self, kernel: int, stride: int, padding: int, dilation: int = 1) -> _Axis:
        span = dilation * (kernel - 1) + 1
        return _Axis(self.size + (span - 1) * self.jump, self.jump * stride, self.left - padding * self.jump)


_UNKNOWN = None  # a tensor that depends on the input but has no field
#: kernel, stride, padding, dilation: (height, width) each
_Geometry = tuple[tuple[int, int], tuple[int, int], tuple[int, int], tuple[int, int]]


def _pair(value: Any) -> tuple[int, int]:
    values = (value,) if isinstance(value, int) else tuple(int(v) for v in value)
    return (values[0], values[0]) if len(values) == 1 else (values[-2], values[-1])


def _conv_args(input: Any, weight: torch.Tensor, bias: Any = None, stride: Any = 1, padding: Any = 0,  # noqa: ARG001
               dilation: Any = 1, groups: int = 1) -> _Geometry:
    kernel = _pair(weight.shape[-2:])
    if isinstance(padding, str):  # "valid", or "same" (stride 1): torch pads d (k - 1) // 2 before
        (kh, kw), (dh, dw) = kernel, _pair(dilation)
        pad = (0, 0) if padding == "valid" else (dh * (kh - 1) // 2, dw * (kw - 1) // 2)
    else:
        pad = _pair(padding)
    return kernel, _pair(stride), pad, _pair(dilation)


def _max_pool_args(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0, dilation: Any = 1,  # noqa: ARG001
                   *args: Any, **kwargs: Any) -> _Geometry:
    kernel = _pair(kernel_size)
    return kernel, _pair(stride) if stride else kernel, _pair(padding), _pair(dilation)


def _avg_pool_args(input: Any, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: ARG001
                   *args: Any, **kwargs: Any) -> _Geometry:
    kernel = _pair(kernel_size)
    return kernel, _pair(stride) if stride else kernel, _pair(padding), (1, 1)


_GEOMETRY: dict[str, Callable[..., Any]] = {
    "conv2d": _conv_args, "max_pool2d": _max_pool_args, "_max_pool2d": _max_pool_args,
    "max_pool2d_with_indices": _max_pool_args, "avg_pool2d": _avg_pool_args}

#: Shape-keeping operations that still move or mix positions (GroupNorm and InstanceNorm: their
#: statistics are taken over the whole map).
_MIXING = {"transpose", "roll", "flip", "rot90", "view", "reshape", "matmul", "bmm", "softmax",
           "interpolate", "upsample", "grid_sample", "unfold", "fold", "pixel_shuffle", "pixel_unshuffle",
           "adaptive_avg_pool2d", "adaptive_max_pool2d", "scaled_dot_product_attention", "movedim", "swapaxes",
           "group_norm", "instance_norm"}


@dataclass(frozen=True)
class _Field:
    """A tensor's field per spatial axis, and which of its dimensions are height and width: (2, 3)
    for (N, C, H, W), (1, 2) after a permute to channels-last (N, H, W, C) as in ConvNeXt."""

    h: _Axis
    w: _Axis
    dims: tuple[int, int]

    def hw(self, t: torch.Tensor) -> tuple[int, int] | None:
        """``t``'s height and width at these dimensions, or None when ``t`` lacks them."""
        return _hw(t, self.dims)


def _hw(t: torch.Tensor, dims: tuple[int, int]) -> tuple[int, int] | None:
    return (int(t.shape[dims[0]]), int(t.shape[dims[1]])) if t.ndim == 4 else None


def _tensors(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for item in value for t in _tensors(item)]
    if isinstance(value, dict):
        return [t for item in value.values() for t in _tensors(item)]
    return []


def _permutation(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[int, ...] | None:
    """The ``dims`` of ``torch.permute(x, dims)`` / ``x.permute(*dims)``, or None."""
    order = kwargs.get("dims", args[1:])
    if len(order) == 1 and isinstance(order[0], (tuple, list, torch.Size)):
        order = order[0]
    if not all(isinstance(d, int) for d in order):
        return None
    return tuple(d % len(order) for d in order)


class _Tracer(TorchFunctionMode):
    """Follows tensors from the input and gives each one a field (see the module docstring)."""

    def __init__(self, x: torch.Tensor) -> None:
        super().__init__()
        # id -> (tensor, field); the tensor is kept so that its id is not reused during the pass
        self.fields: dict[int, tuple[torch.Tensor, _Field | None]] = {
            id(x): (x, _Field(_Axis(1, 1, 0), _Axis(1, 1, 0), (2, 3)))}

    def field_of(self, t: torch.Tensor) -> _Field | None:
        entry = self.fields.get(id(t))
        return entry[1] if entry is not None and entry[0] is t else _UNKNOWN

    def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                           kwargs: dict[str, Any] | None = None) -> Any:
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        inputs = [t for t in _tensors((args, kwargs)) if id(t) in self.fields and self.fields[id(t)][0] is t]
        outputs = _tensors(out)
        if inputs and outputs:
            field = self._propagate(getattr(func, "__name__", ""), args, kwargs, inputs, outputs[0])
            for t in outputs:
                same = field is not _UNKNOWN and field.hw(t) == field.hw(outputs[0])
                self.fields[id(t)] = (t, field if same else _UNKNOWN)
        return out

    def _propagate(self, name: str, args: Sequence[Any], kwargs: dict[str, Any], inputs: list[torch.Tensor],
                   out: torch.Tensor) -> _Field | None:
        first = self.field_of(inputs[0]) if inputs[0] is args[0] else _UNKNOWN
        last_two = (2, 3)
        if name in _GEOMETRY:  # conv and pooling work on the last two dimensions
            if first is _UNKNOWN or first.dims != last_two or out.ndim != 4:
                return _UNKNOWN
            try:
                kernel, stride, pad, dilation = _GEOMETRY[name](*args, **kwargs)
            except TypeError:
                return _UNKNOWN
            return _Field(first.h.through(kernel[0], stride[0], pad[0], dilation[0]),
                          first.w.through(kernel[1], stride[1], pad[1], dilation[1]), last_two)
        if name == "pad":
            pad = args[1] if len(args) > 1 else kwargs.get("pad", ())
            if first is _UNKNOWN or first.dims != last_two or len(pad) < 4 or out.ndim != 4:
                return _UNKNOWN
            left, top = int(pad[0]), int(pad[2])
            return _Field(first.h.through(1, 1, top), first.w.through(1, 1, left), last_two)
        if name == "permute":  # positions stay where they were; only the dimensions' order changes
            order = _permutation(args, kwargs)
            if first is _UNKNOWN or order is None or len(order) != 4:
                return _UNKNOWN
            return _Field(first.h, first.w, (order.index(first.dims[0]), order.index(first.dims[1])))
        if name in ("linear", "layer_norm"):  # they mix the last dimension(s): fine if those are channels
            shape = (args[1] if len(args) > 1 else kwargs.get("normalized_shape", ())) if name == "layer_norm" else ()
            shape = (shape,) if isinstance(shape, int) else tuple(shape)
            mixed = range(out.ndim - (len(shape) if name == "layer_norm" else 1), out.ndim)  # linear: the last
            if first is _UNKNOWN or any(d in mixed for d in first.dims):
                return _UNKNOWN
        if name in _MIXING:
            return _UNKNOWN
        known = [f for f in (self.field_of(t) for t in inputs) if f is not _UNKNOWN]
        if not known:
            return _UNKNOWN
        dims = known[0].dims
        hw = _hw(out, dims)
        if hw is None:
            return _UNKNOWN
        fields = []
        for t in inputs:
            field = self.field_of(t)
            if field is _UNKNOWN:
                if _hw(t, dims) == (1, 1) and hw != (1, 1):
                    continue  # a squeeze-and-excitation gate, broadcast over the map
                return _UNKNOWN
            if field.dims != dims or field.hw(t) != hw:
                return _UNKNOWN
            fields.append(field)
        if len({(f.h.jump, f.w.jump) for f in fields}) != 1:
            return _UNKNOWN  # maps of one size but different strides
        return _Field(_union([f.h for f in fields]), _union([f.w for f in fields]), dims)


def _union(axes: list[_Axis]) -> _Axis:
    left = min(a.left for a in axes)
    right = max(a.left + a.size for a in axes)
    return _Axis(right - left, axes[0].jump, left)


def _trace(model: nn.Module, names: list[str], x: torch.Tensor, meta: bool) -> dict[str, ReceptiveField | None]:
    tracer = _Tracer(x)

    def field_of(_name: str, output: torch.Tensor) -> ReceptiveField | None:
        field = tracer.field_of(output)
        if field is _UNKNOWN:
            return None
        h, w = field.h, field.w
        centre = (h.left + (h.size - 1) / 2, w.left + (w.size - 1) / 2)
        return ReceptiveField((h.size, w.size), (h.jump, w.jump), centre)

    def forward() -> None:
        with torch.no_grad(), tracer:
            if meta:
                state = {k: torch.empty_like(v, device="meta")
                         for k, v in itertools.chain(model.named_parameters(), model.named_buffers())}
                torch.func.functional_call(model, state, (x,))
            else:
                model(x)

    # the model's mode is left alone (no arithmetic on meta; a real pass on zeros under no_grad)
    with hooked(model, preserve=False, stop_after=names, reduce=field_of) as hooks:
        found = hooks.run(forward)
    return {name: found.get(name) for name in names}


def receptive_fields(
    model: nn.Module, layers: str | Iterable[str], input_hw: tuple[int, int] = (224, 224)
) -> dict[str, ReceptiveField | None]:
    """The receptive field of every position of each layer's output (see the module docstring).

    Args:
        model: any image model; it is not changed and no arithmetic is done (meta device), except
            for a model that cannot run on the meta device: then one pass on zeros, stopped after
            the last layer asked.
        layers: qualified module names, as for :func:`vizhooks.capture`.
        input_hw: the input size to trace with; fields do not depend on it, but which operations
            keep the map's size may.

    Returns:
        ``{name: ReceptiveField}`` in the order asked; ``None`` for a layer whose positions see
        the whole picture or could not be followed (token models after the patch embedding).

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.

    Example:
        >>> receptive_fields(load_model("resnet18", weights="none").model, ["conv1"])["conv1"]
        ReceptiveField(size=(7, 7), jump=(2, 2), start=(0.0, 0.0))
    """
    names = resolve_layers(model, layers)
    try:
        return _trace(model, names, torch.zeros(1, 3, *input_hw, device="meta"), meta=True)
    except Exception:  # data-dependent Python in forward: follow a real pass instead
        param = next(itertools.chain(model.parameters(), model.buffers()), None)
        device = param.device if param is not None else torch.device("cpu")
        return _trace(model, names, torch.zeros(1, 3, *input_hw, device=device), meta=False)


def receptive_field(model: nn.Module, layer: str, input_hw: tuple[int, int] = (224, 224)) -> ReceptiveField | None:
    """:func:`receptive_fields` for one layer.

    Args:
        model: any image model.
        layer: a qualified module name.
        input_hw: the input size to trace with.

    Returns:
        The layer's :class:`ReceptiveField`, or None when its positions see the whole picture.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.

    Example:
        >>> receptive_field(nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1)), "0").box(0, 0)
        (-1, -1, 2, 2)
    """
    return receptive_fields(model, [layer], input_hw)[layer]
