"""What one convolution computes at one place: the numbers behind one value of one output map.

For a ``Conv2d`` with weight ``W`` (C_out, C_in / groups, kh, kw), bias ``b``, stride ``s``,
padding ``p`` and dilation ``d``, output channel ``k`` at (row ``r``, column ``c``) is

    window[j, u, v] = input[g * C_g + j, r * s_h - p_h + u * d_h, c * s_w - p_w + v * d_w]
                      (0 where that place lies in the zero padding, outside the picture)
    products        = window * W[k]                     elementwise, (C_g, kh, kw)
    sums[j]         = sum over (u, v) of products[j]    one number per input channel
    output[k, r, c] = sum over j of sums[j] + b[k]

where ``C_g = C_in / groups`` and ``g = k // (C_out / groups)`` is the group of channel ``k``: a
grouped conv's output channel sees only its group's input channels (a depthwise conv: one).

:func:`conv_at` takes the conv's input from a forward pre-hook, computes the window itself and
follows the value on through what the network does to it next, elementwise, up to the next layer
that mixes places or channels: a BatchNorm (in eval mode a scale and a shift per channel) and an
activation such as ReLU or Hardswish, when they take the conv's output as it is. A residual
``out += identity`` between them (ResNet) ends the chain: the value is no longer the conv's.

Like every hook user here: under the model's lock, eval mode inside with the training flags,
``requires_grad`` and ``.grad`` put back afterwards, every handle removed in ``finally``, and
copies kept on the CPU.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import StopForward, call_key, check_input, check_ran, first_tensor, hooked, keep, model_device
from vizhooks.models.layers import resolve_layers

__all__ = ["ConvStep", "FollowStep", "Window", "conv_at", "window_of"]

#: Modules that act on each value alone (BatchNorm in eval mode: per channel), so one output
#: value of the conv goes in and one value at the same place comes out.
ELEMENTWISE = (
    nn.BatchNorm2d, nn.ReLU, nn.ReLU6, nn.LeakyReLU, nn.ELU, nn.GELU, nn.SiLU, nn.Mish, nn.Hardswish,
    nn.Hardsigmoid, nn.Sigmoid, nn.Tanh, nn.Identity, nn.Dropout,
)


@dataclass(frozen=True)
class FollowStep:
    """One elementwise module applied to the conv's output after it, at the same place.

    Attributes:
        layer: the module's name, keyed like :func:`vizhooks.capture` (``"relu"``, or
            ``"layer1.0.relu#2"`` for the second call of a module that runs several times).
        kind: its class name (``"BatchNorm2d"``, ``"ReLU"``, ``"Hardswish"``...).
        before: the value that went in.
        after: the value that came out.
        scale: for a BatchNorm, ``after = scale * before + shift`` with
            ``scale = weight / sqrt(running_var + eps)`` and ``shift = bias - running_mean * scale``;
            ``None`` for the others.
        shift: see ``scale``.
    """

    layer: str
    kind: str
    before: float
    after: float
    scale: float | None = None
    shift: float | None = None


@dataclass(frozen=True)
class ConvStep:
    """The numbers behind ``output[channel, row, col]`` of one ``Conv2d``, for the first picture
    of the batch.

    Attributes:
        layer, channel, row, col: what was asked.
        kernel_size, stride, padding, dilation: the conv's settings as (height, width) pairs.
        groups: the conv's number of groups; ``group`` the one ``channel`` belongs to.
        in_channels: the input channels this output channel sees (all of them unless grouped).
        input_hw, output_hw: the sizes of the conv's input and output maps.
        rows, cols: the input row of each kernel row and the input column of each kernel column;
            a place outside ``0 .. input_hw - 1`` lies in the zero padding.
        window: (len(in_channels), kh, kw) the input values under the kernel (0 in the padding).
        weights: (len(in_channels), kh, kw) the kernel of ``channel``.
        products: ``window * weights``.
        sums: (len(in_channels),) ``products`` summed per input channel.
        bias: the conv's bias for ``channel`` (0.0 when the conv has none; see ``has_bias``).
        total: ``sums.sum() + bias``: the output value, summed in float64.
        output: (h, w) the whole output map of ``channel`` as the conv computed it.
        input_mean: (H, W) the mean of the seen input channels, a picture to draw the window on.
        follow: the elementwise modules after the conv, in forward order (may be empty).
    """

    layer: str
    channel: int
    row: int
    col: int
    kernel_size: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int]
    groups: int
    group: int
    in_channels: tuple[int, ...]
    input_hw: tuple[int, int]
    output_hw: tuple[int, int]
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    window: torch.Tensor
    weights: torch.Tensor
    products: torch.Tensor
    sums: torch.Tensor
    bias: float
    has_bias: bool
    total: float
    output: torch.Tensor
    input_mean: torch.Tensor
    follow: tuple[FollowStep, ...]

    @property
    def value(self) -> float:
        """The value after the last following step (``total`` when nothing follows)."""
        return self.follow[-1].after if self.follow else self.total

    @property
    def padded(self) -> torch.Tensor:
        """(kh, kw) bool: True where the kernel lies over the zero padding."""
        h, w = self.input_hw
        inside_r = torch.tensor([0 <= r < h for r in self.rows])
        inside_c = torch.tensor([0 <= c < w for c in self.cols])
        return ~(inside_r[:, None] & inside_c[None, :])

    def strongest(self, k: int) -> list[int]:
        """Positions (into ``in_channels``) of the ``k`` input channels with the largest
        ``|sums|``, largest first."""
        order = torch.argsort(self.sums.abs(), descending=True, stable=True)
        return [int(i) for i in order[: max(0, k)]]


class _Trail:
    """Where the conv's value is during the pass: the live tensor that carries it, a copy of its
    values then (to notice an in-place rewrite), and a module that has just taken it."""

    def __init__(self) -> None:
        self.current: torch.Tensor | None = None
        self.kept: torch.Tensor | None = None
        self.pending: tuple[str, nn.Module, torch.Tensor] | None = None


def _pair(value: Any) -> tuple[int, int]:
    return (int(value[0]), int(value[1])) if isinstance(value, (tuple, list)) else (int(value), int(value))


@dataclass(frozen=True)
class Window:
    """Where a sliding-window layer (Conv2d, MaxPool2d, AvgPool2d) looks: its settings as
    (height, width) pairs, and :meth:`at` for the input places one output place sees.

    Example:
        >>> window_of(nn.Conv2d(3, 8, 7, stride=2, padding=3)).at(0, 1)
        ((-3, -2, -1, 0, 1, 2, 3), (-1, 0, 1, 2, 3, 4, 5))
    """

    kernel_size: tuple[int, int]
    stride: tuple[int, int]
    padding: tuple[int, int]
    dilation: tuple[int, int] = (1, 1)

    def at(self, row: int, col: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The input row of each kernel row and the input column of each kernel column for output
        place (``row``, ``col``); a place outside the input lies in the padding."""
        (kh, kw), (sh, sw), (ph, pw), (dh, dw) = self.kernel_size, self.stride, self.padding, self.dilation
        return (tuple(row * sh - ph + u * dh for u in range(kh)), tuple(col * sw - pw + v * dw for v in range(kw)))


def window_of(module: nn.Module) -> Window:
    """The :class:`Window` of a ``Conv2d``, ``MaxPool2d`` or ``AvgPool2d`` (``padding="same"``
    and ``"valid"`` as the numbers torch pads with on the near side).

    Raises:
        TypeError: another kind of module.
    """
    if isinstance(module, nn.Conv2d):
        kernel, dilation = _pair(module.kernel_size), _pair(module.dilation)
        if module.padding == "valid":
            padding = (0, 0)
        elif module.padding == "same":  # torch puts the odd one of the total on the far side
            padding = (dilation[0] * (kernel[0] - 1) // 2, dilation[1] * (kernel[1] - 1) // 2)
        else:
            padding = _pair(module.padding)
        return Window(kernel, _pair(module.stride), padding, dilation)
    if isinstance(module, nn.MaxPool2d):
        return Window(_pair(module.kernel_size), _pair(module.stride), _pair(module.padding), _pair(module.dilation))
    if isinstance(module, nn.AvgPool2d):  # torch stores stride=kernel_size when none was given
        return Window(_pair(module.kernel_size), _pair(module.stride), _pair(module.padding))
    raise TypeError(f"A {type(module).__name__} has no sliding window; choose a Conv2d, MaxPool2d or AvgPool2d.")


def _index(value: object, name: str, count: int, what: str) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        i = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"{name} must be a whole number from 0 to {count - 1}, not {value!r}.") from None
    if not 0 <= i < count:
        raise ValueError(f"{name}={i} is outside the {what} (0 to {count - 1}); choose one inside it.")
    return i


def _conv(model: nn.Module, layer: str) -> nn.Conv2d:
    name = resolve_layers(model, [layer])[0]
    module = model.get_submodule(name)
    if not isinstance(module, nn.Conv2d):
        raise ValueError(f"Layer {layer!r} is a {type(module).__name__}, not a Conv2d; "
                         "choose a convolution (see vizhooks.models.layers.conv_layers).")
    if module.padding_mode != "zeros":
        raise ValueError(f"Layer {layer!r} pads with {module.padding_mode!r}; only zero padding is "
                         "shown, so choose a conv with padding_mode='zeros'.")
    return module


def _bn_scale_shift(bn: nn.BatchNorm2d, channel: int) -> tuple[float, float]:
    assert bn.running_mean is not None and bn.running_var is not None  # checked by _follows
    mean = float(bn.running_mean[channel].detach())
    var = float(bn.running_var[channel].detach())
    weight = float(bn.weight[channel].detach()) if bn.weight is not None else 1.0
    bias = float(bn.bias[channel].detach()) if bn.bias is not None else 0.0
    scale = weight / (var + bn.eps) ** 0.5
    return scale, bias - mean * scale


def _follows(module: nn.Module) -> bool:
    if isinstance(module, nn.BatchNorm2d):
        return module.running_mean is not None and module.running_var is not None
    return isinstance(module, ELEMENTWISE)


def _step(name: str, module: nn.Module, channel: int, before: float, after: float) -> FollowStep:
    if isinstance(module, nn.BatchNorm2d):
        scale, shift = _bn_scale_shift(module, channel)
        return FollowStep(name, "BatchNorm2d", before, after, scale, shift)
    return FollowStep(name, type(module).__name__, before, after)


def conv_at(model: nn.Module, x: torch.Tensor, layer: str, channel: int, row: int, col: int) -> ConvStep:
    """Take one output value of a ``Conv2d`` apart: window, kernel, products, sums, bias, and what
    the next elementwise modules (BatchNorm, ReLU, Hardswish...) make of it.

    One forward pass with a pre-hook on the conv (its input), forward hooks on it and on every leaf
    module (what follows); all removed before returning, also when the pass raises. The window is
    cut from the captured input here, by the formula in this module's docstring, not by the conv.

    Args:
        model: any ``nn.Module``; the input is moved to the device of its parameters.
        x: input batch, e.g. from :meth:`vizhooks.ModelBundle.preprocess`; only the first picture is used.
        layer: the name of a ``Conv2d`` (see :func:`vizhooks.models.layers.conv_layers`). A conv that runs
            several times in one pass is taken at its first call.
        channel: output channel, 0 to ``out_channels - 1``.
        row, col: the place in the output map, 0 to its height / width - 1.

    Returns:
        A :class:`ConvStep`; its tensors are CPU copies.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.
        ValueError: a layer that is not a Conv2d, a channel or place outside the map, a bad ``x``,
            or a conv that did not run.

    Example:
        >>> step = conv_at(bundle.model, preprocess(img), "conv1", channel=5, row=40, col=60)
        >>> step.total == float(step.sums.sum()) + step.bias
        True
    """
    check_input(x)
    x = x[:1]
    with hooked(model) as hooks:
        conv = _conv(model, layer)
        channel = _index(channel, "channel", conv.out_channels, f"{conv.out_channels} output channels of {layer!r}")
        seen: dict[str, Any] = {}
        steps: list[tuple[str, nn.Module, torch.Tensor, torch.Tensor]] = []
        calls: dict[str, int] = {}
        trail = _Trail()

        def conv_input(_module: nn.Module, args: Any) -> None:
            if "input" not in seen:
                seen["input"] = keep(first_tensor(args))

        def conv_output(_module: nn.Module, _args: Any, output: Any) -> None:
            if "output" not in seen:
                out = first_tensor(output)
                seen["output"] = keep(out)
                trail.current, trail.kept = out, seen["output"]

        def leaf_input(name: str, module: nn.Module) -> Any:
            def hook(_m: nn.Module, args: Any) -> None:
                calls[name] = calls.get(name, 0) + 1
                if trail.current is None or trail.kept is None or module is conv:
                    return
                arg = args[0] if isinstance(args, tuple) and args else None
                if arg is not trail.current:
                    return  # another branch of the network: not the conv's value
                # the same tensor, but rewritten in place since (ResNet's out += identity)?
                if not _follows(module) or not torch.equal(keep(arg), trail.kept):
                    raise StopForward  # nothing further is the conv's value alone
                trail.pending = (call_key(name, calls[name]), module, trail.kept)
            return hook

        def leaf_output(_m: nn.Module, _args: Any, output: Any) -> None:
            if trail.pending is None:
                return
            (key, module, before), trail.pending = trail.pending, None
            out = first_tensor(output)
            after = keep(out)
            steps.append((key, module, before, after))
            trail.current, trail.kept = out, after

        hooks.forward_pre_hook(conv, conv_input)
        hooks.forward_hook(conv, conv_output)
        for name, module in model.named_modules():
            if name and not any(True for _ in module.children()):
                hooks.forward_pre_hook(module, leaf_input(name, module))
                hooks.forward_hook(module, leaf_output)

        def forward() -> None:
            with torch.inference_mode():
                model(x.to(model_device(model)))

        hooks.run(forward)  # a leaf's hook raises StopForward where the conv's value ends
        check_ran([layer], {layer} if "output" in seen else set())
        return _step_from(conv, layer, channel, row, col, seen["input"], seen["output"], steps)


def _step_from(conv: nn.Conv2d, layer: str, channel: int, row: int, col: int, inp: torch.Tensor,
               out: torch.Tensor, steps: list[tuple[str, nn.Module, torch.Tensor, torch.Tensor]]) -> ConvStep:
    h_out, w_out = int(out.shape[-2]), int(out.shape[-1])
    row = _index(row, "row", h_out, f"output map of {layer!r}, {h_out} rows")
    col = _index(col, "col", w_out, f"output map of {layer!r}, {w_out} columns")
    geometry = window_of(conv)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = geometry.kernel_size, geometry.stride, geometry.padding, geometry.dilation
    per_group_out = conv.out_channels // conv.groups
    per_group_in = conv.in_channels // conv.groups
    group = channel // per_group_out
    in_channels = tuple(range(group * per_group_in, (group + 1) * per_group_in))
    seen = inp[0, group * per_group_in:(group + 1) * per_group_in].double()  # (C_g, H, W)
    h_in, w_in = int(seen.shape[-2]), int(seen.shape[-1])
    rows, cols = geometry.at(row, col)
    window = torch.zeros(per_group_in, kh, kw, dtype=torch.float64)
    for u, r in enumerate(rows):
        for v, c in enumerate(cols):
            if 0 <= r < h_in and 0 <= c < w_in:
                window[:, u, v] = seen[:, r, c]
    weights = keep(conv.weight[channel]).double()
    products = window * weights
    sums = products.sum(dim=(1, 2))
    bias = float(conv.bias[channel].detach()) if conv.bias is not None else 0.0
    total = float(sums.sum()) + bias
    follow = tuple(_step(key, module, channel, float(before[0, channel, row, col]), float(after[0, channel, row, col]))
                   for key, module, before, after in steps)
    return ConvStep(
        layer=layer, channel=channel, row=row, col=col, kernel_size=(kh, kw), stride=(sh, sw),
        padding=(ph, pw), dilation=(dh, dw), groups=conv.groups, group=group, in_channels=in_channels,
        input_hw=(h_in, w_in), output_hw=(h_out, w_out), rows=rows, cols=cols, window=window.float(),
        weights=weights.float(), products=products.float(), sums=sums.float(), bias=bias,
        has_bias=conv.bias is not None, total=total, output=out[0, channel].clone(),
        input_mean=seen.mean(dim=0).float(), follow=follow,
    )
