"""The window sliding over the input: the first conv on the RGB photo, and pooling, as an animation.

:func:`slide` runs the model once up to the layer (a forward pre-hook keeps its input, a forward
hook its output, then the pass stops) and draws frames: at each one the window at one output
place, drawn on the input with the padding around it, and the output map filled in row by row up
to that place, the rest blank. The filled-in values are the layer's own output, never recomputed;
the windows are :meth:`vizhooks.network.convolution.Window.at` of the layer's stride, padding and dilation.

A 112 x 112 map has 12,544 places, so frames are a sample of them in row-major order: the first
few one by one (the stride is seen), then evenly spaced, always ending at the last place
(:func:`slide_positions`).

Frames are drawn once as colour levels with one palette (the photo quantised to 128 colours and
the colormap in 120 levels, or the colormap alone for pooling), which is exactly what the GIF and
MP4 encoders of :func:`vizhooks.video.encode_pages` take; ``slide.frame(t)`` is one as RGB.

:func:`pool_at` takes one value of a ``MaxPool2d`` / ``AvgPool2d`` apart (the window, its maximum
or mean, the layer's own value), as :func:`vizhooks.network.convolution.conv_at` does for a conv.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from PIL import Image, ImageDraw
from torch import nn

from vizhooks._hooks import HELD, check_input, check_ran, first_tensor, hooked, keep, model_device
from vizhooks.models.images import IMAGENET_MEAN, IMAGENET_STD
from vizhooks.models.layers import resolve_layers
from vizhooks.network.convolution import Window, window_of
from vizhooks.render.figures import get_colormap
from vizhooks.render.scale import min_max

__all__ = ["MAX_FRAMES", "PoolInfo", "PoolStep", "Slide", "pool_at", "pool_layers", "slide", "slide_positions"]

#: Frames of an animation unless asked otherwise: 12 s at 10 frames per second.
MAX_FRAMES = 120
#: Places shown one by one before the animation speeds up.
SLOW = 16
POOLS = (nn.MaxPool2d, nn.AvgPool2d)

# The palette: levels 0..127 the photo, 128..247 the colormap (a conv); 0..239 the colormap (a
# pool); the page's own colours at the top.
_PHOTO_COLOURS, _CONV_LEVELS, _POOL_LEVELS = 128, 120, 240
ORANGE, RED, BLACK, BLANK, PAD, WHITE = 250, 251, 252, 253, 254, 255
_OWN = {ORANGE: (255, 165, 0), RED: (230, 0, 0), BLACK: (0, 0, 0), BLANK: (236, 236, 236), PAD: (170, 170, 170),
        WHITE: (255, 255, 255)}
_MARGIN, _GAP, _HEAD, _LINE = 8, 16, 22, 2


@dataclass(frozen=True)
class Slide:
    """An animation of one layer's window sliding over its input.

    Attributes:
        layer: the layer's name; ``kind`` "conv", "max" or "avg".
        channel: the output channel filled in (a pool: the input channel, the same for its output).
        window: the layer's kernel size, stride, padding, dilation.
        input_hw, output_hw: the sizes of the layer's input and output maps.
        positions: the output place (row, col) of each frame, in row-major order.
        output: (h, w) the channel's map as the layer computed it.
        pages: (T, H, W) uint8 colour levels of the frames; ``palette[pages[t]]`` is frame ``t``.
        palette: (256, 3) uint8 RGB.
        scale: frame pixels per input pixel and per output place.
        input_origin, output_origin: the frame pixel (y, x) of input pixel (0, 0) and output place (0, 0).
    """

    layer: str
    kind: str
    channel: int
    window: Window
    input_hw: tuple[int, int]
    output_hw: tuple[int, int]
    positions: tuple[tuple[int, int], ...]
    output: torch.Tensor
    pages: np.ndarray
    palette: np.ndarray
    scale: tuple[int, int]
    input_origin: tuple[int, int]
    output_origin: tuple[int, int]

    def __len__(self) -> int:
        return len(self.positions)

    def frame(self, t: int) -> np.ndarray:
        """Frame ``t`` as (H, W, 3) uint8 RGB."""
        return self.palette[self.pages[t]]

    def taps(self, t: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """The input rows and columns under the window in frame ``t`` (outside the input: padding)."""
        return self.window.at(*self.positions[t])

    def filled(self, t: int) -> torch.Tensor:
        """(h, w): the output map as frame ``t`` shows it, NaN where it is still blank."""
        row, col = self.positions[t]
        shown = self.output.clone().flatten()
        shown[row * self.output_hw[1] + col + 1:] = float("nan")
        return shown.reshape(self.output.shape)

    def value(self, t: int) -> float:
        """The output value at frame ``t``'s place."""
        return float(self.output[self.positions[t]])


@dataclass(frozen=True)
class PoolStep:
    """One value of a pooling layer taken apart, for the first picture of the batch.

    Attributes:
        layer, channel, row, col: what was asked; ``kind`` "max" or "avg".
        window: the layer's settings; ``rows``, ``cols`` the input places under it here.
        values: (kh, kw) the input under the window (0 where it lies in the padding).
        padded: (kh, kw) bool, True in the padding: a max leaves it out, a mean counts it as 0
            when the layer has ``count_include_pad`` (see ``divisor``).
        divisor: a mean's divisor (the layer's rule: taps inside the padded input, or inside
            the input, or ``divisor_override``); 0 for a max.
        computed: the max of the taps outside the padding, or the sum divided by ``divisor``.
        own: the layer's own output at (row, col).
        input: (H, W) the input channel; ``output`` (h, w) the output channel.
    """

    layer: str
    kind: str
    channel: int
    row: int
    col: int
    window: Window
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    values: torch.Tensor
    padded: torch.Tensor
    divisor: int
    computed: float
    own: float
    input: torch.Tensor
    output: torch.Tensor

    @property
    def strongest(self) -> tuple[int, int]:
        """(u, v) in the window of the largest value outside the padding (what a max takes)."""
        masked = self.values.masked_fill(self.padded, float("-inf"))
        u, v = divmod(int(torch.argmax(masked)), masked.shape[1])
        return u, v


def _layer(model: nn.Module, layer: str) -> tuple[str, nn.Module, str]:
    name = resolve_layers(model, [layer])[0]
    module = model.get_submodule(name)
    if isinstance(module, nn.MaxPool2d):
        return name, module, "max"
    if isinstance(module, nn.AvgPool2d):
        return name, module, "avg"
    if isinstance(module, nn.Conv2d):
        return name, module, "conv"
    raise ValueError(f"Layer {layer!r} is a {type(module).__name__}; the window is drawn for a Conv2d on the photo, "
                     "a MaxPool2d or an AvgPool2d, so choose one of those.")


def _index(value: object, name: str, count: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 0 <= int(value) < count:
        raise ValueError(f"{name} must be a whole number from 0 to {count - 1}, not {value!r}.")
    return int(value)


def _input_and_output(model: nn.Module, x: torch.Tensor, layer: str) -> tuple[nn.Module, str, torch.Tensor,
                                                                            torch.Tensor]:
    """One pass up to ``layer`` (first call): its input and output for the first picture, on the CPU."""
    check_input(x)
    name, module, kind = _layer(model, layer)
    seen: dict[str, torch.Tensor] = {}

    def before(_m: nn.Module, args: Any) -> None:
        seen.setdefault("input", keep(first_tensor(args)))

    def forward() -> None:
        with torch.inference_mode():
            model(x[:1].to(model_device(model)))

    # nothing after the layer is needed: the pass stops once it has run, keeping a copy of its output
    with hooked(model, stop_after=[name], reduce=lambda _name, t: keep(t)) as hooks:
        hooks.forward_pre_hook(module, before)
        found = hooks.run(forward)
    check_ran([name], found)
    inp, out = seen["input"], found[name]
    if inp.ndim != 4 or out.ndim != 4:
        raise ValueError(f"Layer {layer!r} does not take and give (N, C, H, W) maps; choose a layer that does.")
    return module, kind, inp[0].float(), out[0].float()


def slide_positions(height: int, width: int, max_frames: int = MAX_FRAMES, slow: int = SLOW) -> list[tuple[int, int]]:
    """The output places an animation shows, row-major: the first ``slow`` one by one, then evenly
    spaced up to the last place, ``max_frames`` at most (every place when there are fewer).

    Example:
        >>> slide_positions(112, 112)[-1], len(slide_positions(112, 112))
        ((111, 111), 120)
    """
    places = height * width
    if places <= max_frames:
        order = list(range(places))
    else:
        slow = max(1, min(slow, max_frames - 1))
        tail = np.rint(np.linspace(slow - 1, places - 1, max_frames - slow + 1)[1:]).astype(int)
        order = list(dict.fromkeys([*range(slow), *tail.tolist()]))
    return [divmod(i, width) for i in order]


def _levels(values: np.ndarray, lo: float, hi: float, levels: int, first: int) -> np.ndarray:
    unit = min_max(values, lo, hi)
    return (first + np.clip(np.rint(unit * (levels - 1)), 0, levels - 1)).astype(np.uint8)


def _photo(inp: torch.Tensor, mean: tuple[float, ...], std: tuple[float, ...]) -> tuple[np.ndarray, np.ndarray]:
    """The conv's input as the photo it came from: (H, W) levels 0..127 and their colours."""
    rgb = inp.numpy().transpose(1, 2, 0) * np.asarray(std) + np.asarray(mean)
    picture = Image.fromarray((np.clip(rgb, 0, 1) * 255 + 0.5).astype(np.uint8))
    quantised = picture.quantize(colors=_PHOTO_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    colours = np.zeros((_PHOTO_COLOURS, 3), dtype=np.uint8)
    found = np.asarray(quantised.getpalette() or [], dtype=np.uint8).reshape(-1, 3)[:_PHOTO_COLOURS]
    colours[: len(found)] = found
    return np.asarray(quantised, dtype=np.uint8), colours


def _outline(page: np.ndarray, top: int, left: int, bottom: int, right: int, level: int) -> None:
    """A frame ``_LINE`` pixels wide just outside the box [top, bottom) x [left, right)."""
    h, w = page.shape
    t, b, le, r = max(top - _LINE, 0), min(bottom + _LINE, h), max(left - _LINE, 0), min(right + _LINE, w)
    page[t:max(top, t), le:r] = level
    page[min(bottom, b):b, le:r] = level
    page[t:b, le:max(left, le)] = level
    page[t:b, min(right, r):r] = level


def slide(model: nn.Module, x: torch.Tensor, layer: str, channel: int = 0, *, max_frames: int = MAX_FRAMES,
          slow: int = SLOW, cmap: str = "viridis", panel: int = 480,
          mean: tuple[float, float, float] = IMAGENET_MEAN, std: tuple[float, float, float] = IMAGENET_STD) -> Slide:
    """Draw the window of ``layer`` sliding over its input and its output map filling in.

    Args:
        model: any ``nn.Module``; the input is moved to the device of its parameters.
        x: input batch, e.g. from :meth:`vizhooks.ModelBundle.preprocess`; only the first picture is used.
        layer: a ``Conv2d`` on the RGB photo (3 input channels, one group: the first conv), a
            ``MaxPool2d`` or an ``AvgPool2d``. A layer that runs several times is taken at its first call.
        channel: the output channel filled in (a pool: the channel, 0 to channels - 1).
        max_frames: at most this many frames (2 to 1000); see :func:`slide_positions`.
        slow: how many places are shown one by one first.
        cmap: the colormap of the maps (matplotlib's name).
        panel: the longer side, in pixels, the input is enlarged to (whole multiples only).
        mean, std: the normalisation of ``x``, to show the photo as it was.

    Returns:
        A :class:`Slide`: its frames as colour levels and a palette, and what they show.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.
        ValueError: another kind of layer, a conv that does not take the RGB photo, a bad channel,
            ``max_frames``, ``slow`` or colormap, a bad ``x``, or a layer that did not run.

    Example:
        >>> s = slide(bundle.model, preprocess(img), "conv1", channel=5)
        >>> len(s), s.positions[-1]
        (120, (111, 111))
    """
    for name, value, low, high in (("max_frames", max_frames, 2, 1000), ("slow", slow, 1, 1000),
                                   ("panel", panel, 16, 4096)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise ValueError(f"{name} must be a whole number from {low} to {high}, not {value!r}.")
    colormap = get_colormap(cmap)
    module, kind, inp, out = _input_and_output(model, x, layer)
    if kind == "conv":
        conv = module
        assert isinstance(conv, nn.Conv2d)  # _layer said so
        if conv.in_channels != 3 or conv.groups != 1 or inp.shape[0] != 3:
            raise ValueError(f"Layer {layer!r} takes {conv.in_channels} channels, not the RGB photo; the sliding "
                             "window is drawn for the first conv (3 input channels) or a pooling layer.")
    channel = _index(channel, "channel", int(out.shape[0]))
    window = window_of(module)
    (kh, kw), (sh, sw), (ph, pw), (dh, dw) = window.kernel_size, window.stride, window.padding, window.dilation
    h_in, w_in = int(inp.shape[-2]), int(inp.shape[-1])
    h, w = int(out.shape[-2]), int(out.shape[-1])
    output = out[channel].clone()
    # the canvas of the input: the padding around it, and past it where a ceil_mode window reaches
    below = max(ph, (h - 1) * sh - ph + (kh - 1) * dh - (h_in - 1))
    beyond = max(pw, (w - 1) * sw - pw + (kw - 1) * dw - (w_in - 1))
    canvas_hw = (h_in + ph + below, w_in + pw + beyond)
    s_in = max(1, panel // max(canvas_hw))
    s_out = max(1, s_in * max(canvas_hw) // max(h, w))

    palette = np.zeros((256, 3), dtype=np.uint8)
    for level, rgb in _OWN.items():
        palette[level] = rgb
    values = output.numpy()
    if kind == "conv":
        picture, colours = _photo(inp, mean, std)
        palette[:_PHOTO_COLOURS] = colours
        levels, first = _CONV_LEVELS, _PHOTO_COLOURS
        lo, hi = float(values.min()), float(values.max())
    else:  # input and output on one scale: a max (or mean) has the colour of what it came from
        plane = inp[channel].numpy()
        levels, first = _POOL_LEVELS, 0
        lo, hi = min(float(plane.min()), float(values.min())), max(float(plane.max()), float(values.max()))
        picture = _levels(plane, lo, hi, levels, first)
    ramp = (colormap(np.linspace(0, 1, levels))[:, :3] * 255 + 0.5).astype(np.uint8)
    palette[first:first + levels] = ramp
    mapped = _levels(values, lo, hi, levels, first)

    padded = np.full(canvas_hw, PAD, dtype=np.uint8)
    padded[ph:ph + h_in, pw:pw + w_in] = picture
    left = np.kron(padded, np.ones((s_in, s_in), dtype=np.uint8))
    full = np.kron(mapped, np.ones((s_out, s_out), dtype=np.uint8))
    height = _HEAD + max(left.shape[0], full.shape[0]) + _MARGIN
    width = _MARGIN + left.shape[1] + _GAP + full.shape[1] + _MARGIN
    base = np.full((height, width), WHITE, dtype=np.uint8)
    y_in = _HEAD + (height - _HEAD - _MARGIN - left.shape[0]) // 2
    y_out = _HEAD + (height - _HEAD - _MARGIN - full.shape[0]) // 2
    x_out = _MARGIN + left.shape[1] + _GAP
    base[y_in:y_in + left.shape[0], _MARGIN:_MARGIN + left.shape[1]] = left
    base[y_out:y_out + full.shape[0], x_out:x_out + full.shape[1]] = BLANK
    head = Image.fromarray(base)
    draw = ImageDraw.Draw(head)
    draw.fontmode = "1"  # no antialiasing: every pixel stays one of the palette's levels
    kernel = f"{kh}x{kw}, stride {sh}" + (f", padding {ph}" if ph or pw else "")
    draw.text((_MARGIN, 4), f"{layer}  {kernel}", fill=BLACK)
    draw.text((x_out, 4), f"{layer} #{channel}  {h}x{w}", fill=BLACK)
    base = np.asarray(head, dtype=np.uint8).copy()
    origin_in = (y_in + ph * s_in, _MARGIN + pw * s_in)

    positions = slide_positions(h, w, max_frames, slow)
    pages = np.empty((len(positions), height, width), dtype=np.uint8)
    shown = 0  # places of the output map drawn so far, row-major
    view = base[y_out:y_out + full.shape[0], x_out:x_out + full.shape[1]]
    flat_view = view.reshape(h, s_out, w, s_out)
    flat_full = full.reshape(h, s_out, w, s_out)
    for t, (row, col) in enumerate(positions):
        upto = row * w + col + 1
        for r in range(shown // w, (upto - 1) // w + 1):  # the rows that gain places
            c0 = shown - r * w if r == shown // w else 0
            c1 = upto - r * w if r == (upto - 1) // w else w
            flat_view[r, :, c0:c1, :] = flat_full[r, :, c0:c1, :]
        shown = upto
        page = pages[t]
        page[:] = base
        rows, cols = window.at(row, col)
        top, lft = origin_in[0] + rows[0] * s_in, origin_in[1] + cols[0] * s_in
        _outline(page, top, lft, origin_in[0] + (rows[-1] + 1) * s_in, origin_in[1] + (cols[-1] + 1) * s_in, RED)
        oy, ox = y_out + row * s_out, x_out + col * s_out
        _outline(page, oy, ox, oy + s_out, ox + s_out, RED)
    return Slide(layer=layer, kind=kind, channel=channel, window=window, input_hw=(h_in, w_in), output_hw=(h, w),
                 positions=tuple(positions), output=output, pages=pages, palette=palette, scale=(s_in, s_out),
                 input_origin=origin_in, output_origin=(y_out, x_out))


def pool_at(model: nn.Module, x: torch.Tensor, layer: str, channel: int, row: int, col: int) -> PoolStep:
    """Take one value of a ``MaxPool2d`` or ``AvgPool2d`` apart: the window, its max or mean, and
    the layer's own value there (one pass up to the layer, hooks removed before returning).

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.
        ValueError: a layer that is not a pool, a channel or place outside the map, a bad ``x``.

    Example:
        >>> step = pool_at(bundle.model, x, "maxpool", channel=3, row=10, col=20)
        >>> abs(step.computed - step.own) < 1e-6
        True
    """
    module, kind, inp, out = _input_and_output(model, x, layer)
    if kind == "conv":
        raise ValueError(f"Layer {layer!r} is a Conv2d, not a pooling layer; take it apart with "
                         "vizhooks.network.convolution.conv_at.")
    channel = _index(channel, "channel", int(out.shape[0]))
    h, w = int(out.shape[-2]), int(out.shape[-1])
    row, col = _index(row, "row", h), _index(col, "col", w)
    window = window_of(module)
    rows, cols = window.at(row, col)
    plane = inp[channel]
    h_in, w_in = int(plane.shape[0]), int(plane.shape[1])
    inside_r = torch.tensor([0 <= r < h_in for r in rows])
    inside_c = torch.tensor([0 <= c < w_in for c in cols])
    padded = ~(inside_r[:, None] & inside_c[None, :])
    values = torch.zeros(len(rows), len(cols), dtype=torch.float64)
    for u, r in enumerate(rows):
        for v, c in enumerate(cols):
            if 0 <= r < h_in and 0 <= c < w_in:
                values[u, v] = float(plane[r, c])
    if kind == "max":
        divisor, computed = 0, float(values.masked_fill(padded, float("-inf")).max())
    else:
        assert isinstance(module, nn.AvgPool2d)  # _layer said so
        divisor = _avg_divisor(module, window, rows, cols, (h_in, w_in))
        computed = float(values.sum()) / divisor
    return PoolStep(layer=layer, kind=kind, channel=channel, row=row, col=col, window=window, rows=rows, cols=cols,
                    values=values.float(), padded=padded, divisor=divisor, computed=computed,
                    own=float(out[channel, row, col]), input=plane.clone(), output=out[channel].clone())


def _avg_divisor(pool: nn.AvgPool2d, window: Window, rows: tuple[int, ...], cols: tuple[int, ...],
                 hw: tuple[int, int]) -> int:
    """What torch divides an average by: ``divisor_override``; else the taps inside the padded
    input (``count_include_pad``, a ceil_mode window's overhang past the padding left out) or
    inside the input."""
    if pool.divisor_override:
        return int(pool.divisor_override)
    (ph, pw), (h, w) = window.padding, hw
    low_r, high_r, low_c, high_c = (-ph, h + ph, -pw, w + pw) if pool.count_include_pad else (0, h, 0, w)
    return sum(low_r <= r < high_r for r in rows) * sum(low_c <= c < high_c for c in cols)


@dataclass(frozen=True)
class PoolInfo:
    """A pooling layer that runs in the forward pass: its name, class name ("MaxPool2d" or
    "AvgPool2d"), channels, input and output sizes, and window."""

    name: str
    type: str
    channels: int
    input_hw: tuple[int, int]
    output_hw: tuple[int, int]
    window: Window


def pool_layers(model: nn.Module, input_hw: tuple[int, int] = (224, 224)) -> list[PoolInfo]:
    """Every ``MaxPool2d`` and ``AvgPool2d`` of ``model`` that runs, in ``named_modules()`` order,
    with its sizes for a ``(1, 3, *input_hw)`` input (first call of each). One forward pass with
    hooks; on a meta-device model (:func:`vizhooks.models.registry.meta_model`) it costs nothing. Call with
    the model's lock held.

    Example:
        >>> [(p.name, p.output_hw) for p in pool_layers(resnet18())]
        [('maxpool', (56, 56))]
    """
    pools = [(name, m) for name, m in model.named_modules() if name and isinstance(m, POOLS)]
    if not pools:
        return []  # no pass: nothing to find (and a fixed-size model would refuse another size)
    shapes: dict[str, tuple[torch.Size, torch.Size]] = {}

    def hook_for(name: str) -> Any:
        def hook(_m: nn.Module, args: Any, output: Any) -> None:
            shapes.setdefault(name, (first_tensor(args).shape, first_tensor(output).shape))
        return hook

    with hooked(model, preserve=False, lock=HELD) as hooks:
        for name, module in pools:
            hooks.forward_hook(module, hook_for(name))
        with torch.no_grad():
            model(torch.zeros(1, 3, *input_hw, device=model_device(model)))
    return [PoolInfo(name, type(module).__name__, int(shapes[name][1][1]), (int(shapes[name][0][-2]),
                                                                              int(shapes[name][0][-1])),
                     (int(shapes[name][1][-2]), int(shapes[name][1][-1])), window_of(module))
            for name, module in pools if name in shapes and len(shapes[name][1]) == 4]
