"""Turning captured tensors into matplotlib figures, fast and without pyplot.

One Axes per channel is what makes the usual approach slow (each Axes costs milliseconds to
build and draw). Here the chosen channels are coloured with the matplotlib colormap, composed
into one picture with thin separators and channel numbers, and placed on the figure 1:1 with
``figimage``: matplotlib only draws the title (and the colorbar of a per-layer scale).
"""

from __future__ import annotations

import functools
import io
import math

import matplotlib
import numpy as np
import torch
from matplotlib.artist import Artist
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

ORDERS = ("index", "mean", "max")
NORMS = ("channel", "layer")

_GAP = 1  # separator width in pixels of the activation map


def _as_chw(activation: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(activation, torch.Tensor):
        arr = activation.detach().float().cpu().numpy()
    else:
        arr = np.asarray(activation, dtype=np.float32)
    if arr.ndim == 4:
        if arr.shape[0] != 1:
            raise ValueError(f"feature_grid draws one image at a time; got a batch of {arr.shape[0]}.")
        arr = arr[0]
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3:
        raise ValueError(f"Expected a (C, H, W) or (1, C, H, W) activation, got shape {arr.shape}.")
    return arr.astype(np.float32, copy=False)


def get_colormap(name: str) -> matplotlib.colors.Colormap:
    """The named matplotlib colormap, with separators ("bad" pixels) drawn white.

    Raises:
        ValueError: not a colormap name.
    """
    try:
        return matplotlib.colormaps[name].with_extremes(bad="white")
    except KeyError:
        raise ValueError(f"Unknown colormap {name!r}; try viridis, magma, gray or coolwarm.") from None


def channel_order(arr: np.ndarray, order: str = "index") -> np.ndarray:
    """Channel indices of a (C, H, W) array: by index, by mean (most active first) or by max."""
    if order == "index":
        return np.arange(arr.shape[0])
    flat = arr.reshape(arr.shape[0], -1)
    if order == "mean":
        score = flat.mean(axis=1)
    elif order == "max":
        score = flat.max(axis=1)
    else:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}.")
    return np.argsort(-score, kind="stable")


def grid_shape(n: int, columns: int | None = None) -> tuple[int, int]:
    """(rows, columns) of a near-square grid for ``n`` tiles."""
    cols = columns if columns else math.ceil(math.sqrt(n))
    cols = max(1, min(cols, n))
    return math.ceil(n / cols), cols


def _mosaic(tiles: np.ndarray, rows: int, cols: int) -> np.ndarray:
    n, h, w = tiles.shape
    out = np.full((rows * (h + _GAP) - _GAP, cols * (w + _GAP) - _GAP), np.nan, dtype=np.float32)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * (h + _GAP): r * (h + _GAP) + h, c * (w + _GAP): c * (w + _GAP) + w] = tiles[i]
    return out


def _normalise_channels(tiles: np.ndarray) -> np.ndarray:
    lo = tiles.min(axis=(1, 2), keepdims=True)
    span = tiles.max(axis=(1, 2), keepdims=True) - lo
    # A constant channel has no contrast to show: draw it at the bottom of the scale, not NaN.
    return np.where(span > 0, (tiles - lo) / np.where(span > 0, span, 1), 0.0).astype(np.float32)


def feature_grid(
    activation: torch.Tensor | np.ndarray,
    *,
    channels: int | None = 16,
    order: str = "index",
    cmap: str = "viridis",
    norm: str = "channel",
    title: str | None = None,
    columns: int | None = None,
    vcenter: float | None = None,
) -> Figure:
    """Draw the channels of one layer's activation as a grid of tiles in one figure.

    Args:
        activation: (C, H, W) or (1, C, H, W) tensor or array.
        channels: how many channels to show (capped at C); None shows all.
        order: "index", "mean" (most active first) or "max".
        cmap: any matplotlib colormap name.
        norm: "channel" (each tile stretched to its own min..max) or "layer" (one scale for the
            whole layer, drawn with a colorbar).
        title: figure title; the shape and the count of shown channels are appended.
        columns: grid columns; default near-square.
        vcenter: with ``norm="layer"``, make the scale symmetric around this value (use 0
            with a diverging colormap for gradients).

    Returns:
        A ``matplotlib.figure.Figure`` (not registered with pyplot; nothing to close).

    Raises:
        ValueError: bad shape, order, norm, channel count or colormap.

    Example:
        >>> fig = feature_grid(acts["conv1"], channels=16, order="mean")
        >>> fig.savefig("conv1.png")
    """
    arr = _as_chw(activation)
    total, h, w = arr.shape
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {', '.join(NORMS)}, not {norm!r}.")
    if channels is None:
        channels = total
    if isinstance(channels, bool) or not isinstance(channels, (int, np.integer)) or channels < 1:
        raise ValueError(f"channels must be a whole number of at least 1, not {channels!r}.")
    colormap = get_colormap(cmap)
    if columns is not None and (not isinstance(columns, (int, np.integer)) or columns < 1):
        raise ValueError(f"columns must be a whole number of at least 1, not {columns!r}.")

    picked = channel_order(arr, order)[: min(int(channels), total)]
    tiles = np.nan_to_num(arr[picked], nan=0.0, posinf=0.0, neginf=0.0)
    if norm == "channel":
        tiles = _normalise_channels(tiles)
        vmin, vmax = 0.0, 1.0
    else:
        finite = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
        vmin, vmax = float(finite.min()), float(finite.max())
        if vcenter is not None:
            reach = max(abs(vmin - vcenter), abs(vmax - vcenter)) or 1.0
            vmin, vmax = vcenter - reach, vcenter + reach
        elif vmax <= vmin:
            vmin, vmax = vmin - 0.5, vmax + 0.5
    rows, cols = grid_shape(len(picked), columns)
    unit = tiles if norm == "channel" else (tiles - vmin) / (vmax - vmin)
    canvas, k = _canvas(np.clip(unit, 0, 1), rows, cols, colormap)
    _draw_labels(canvas, [int(c) for c in picked], cols, h * k, w * k)

    shown = f"{len(picked)} of {total} channels" if len(picked) < total else f"all {total} channels"
    heading = f"{title}  ·  " if title else ""
    text = f"{heading}{total}×{h}×{w}  ·  {shown}, by {order}"
    dpi = 100
    title_px, bar_px = 34, (70 if norm == "layer" else 0)
    height_px, width_px = canvas.shape[0] + title_px, max(canvas.shape[1] + bar_px, 360)
    page = np.full((height_px, width_px, 4), 255, np.uint8)
    page[title_px:, : canvas.shape[1]] = canvas
    _draw_title(page, text, title_px)
    fig = Figure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, layout=None)
    fig.add_artist(_Pixels(page))
    if norm == "layer":
        cax = fig.add_axes(((canvas.shape[1] + 12) / width_px, 0.05 * canvas.shape[0] / height_px,
                            14 / width_px, 0.9 * canvas.shape[0] / height_px))
        fig.colorbar(ScalarMappable(Normalize(vmin, vmax), colormap), cax=cax)
        cax.tick_params(labelsize=7)
    # What was drawn, for callers and tests: channel of each tile, the values behind the colours
    # (at activation resolution, NaN between tiles) and the colour scale.
    fig.vizhooks = {"channels": [int(c) for c in picked], "grid": (rows, cols), "title": text,
                    "mosaic": _mosaic(tiles, rows, cols), "clim": (vmin, vmax), "scale": k}
    return fig


class _Pixels(Artist):
    """Finished RGBA pixels blitted to the bottom-left of the figure as they are. ``imshow`` and
    ``figimage`` would resample, mask and re-colour them on every draw: most of the time of a
    grid, for an identical result."""

    def __init__(self, rgba: np.ndarray):
        super().__init__()
        self._rgba = np.ascontiguousarray(rgba)
        self.set_zorder(0)

    def draw(self, renderer) -> None:
        if not self.get_visible():
            return
        gc = renderer.new_gc()
        try:
            renderer.draw_image(gc, 0, 0, self._rgba[::-1])
        finally:
            gc.restore()


#: Tiles are enlarged by a whole factor (crisp pixels) until the grid is about this wide.
_GRID_PX = 800
_MIN_TILE_PX = 40
_SEP_PX = 2


def _canvas(unit: np.ndarray, rows: int, cols: int, colormap) -> tuple[np.ndarray, int]:
    """Colour the tiles (values in [0, 1]) and lay them out, enlarged, with white separators.
    Colouring happens at activation resolution; enlarging repeats the coloured pixels."""
    n, h, w = unit.shape
    # ... but never so small that a tile is under ~40 px (512 channels of 7 x 11 would be)
    k = max(1, _GRID_PX // (cols * (w + _SEP_PX)), math.ceil(_MIN_TILE_PX / max(h, w)))
    rgb = colormap(unit, bytes=True)
    if k > 1:
        rgb = rgb.repeat(k, axis=1).repeat(k, axis=2)
    th, tw = h * k, w * k
    canvas = np.full((rows * (th + _SEP_PX) - _SEP_PX, cols * (tw + _SEP_PX) - _SEP_PX, 4), 255, np.uint8)
    for i in range(n):
        r, c = divmod(i, cols)
        y, x = r * (th + _SEP_PX), c * (tw + _SEP_PX)
        canvas[y: y + th, x: x + tw] = rgb[i]
    return canvas, k


@functools.lru_cache(maxsize=8)
def _font(size: int, face: str | None = None):
    from PIL import ImageFont

    if face:  # matplotlib's own DejaVu Sans, so titles look like the rest of matplotlib
        from matplotlib import font_manager

        return ImageFont.truetype(font_manager.findfont(face), size)
    return ImageFont.load_default(size=size)


def _draw_title(page: np.ndarray, text: str, height: int) -> None:
    """The heading, drawn into the pixels like the labels (a matplotlib Text costs ~5 ms)."""
    from PIL import Image, ImageDraw

    font = _font(13, "DejaVu Sans")
    img = Image.fromarray(page[:height])
    draw = ImageDraw.Draw(img)
    draw.text((6, height // 2), text, fill=(0, 0, 0, 255), font=font, anchor="lm")
    page[:height] = np.asarray(img)


def _draw_labels(canvas: np.ndarray, channels: list[int], cols: int, th: int, tw: int) -> None:
    """Channel numbers in the top-left corner of each tile, white on a dark box, drawn into the
    pixels (a matplotlib Text per tile would cost more than the whole grid)."""
    from PIL import Image, ImageDraw

    size = int(max(8, min(14, min(th, tw) // 4)))
    font = _font(size)
    img = Image.fromarray(canvas)
    draw = ImageDraw.Draw(img)
    for i, ch in enumerate(channels):
        r, c = divmod(i, cols)
        x, y = c * (tw + _SEP_PX), r * (th + _SEP_PX)
        left, top, right, bottom = draw.textbbox((0, 0), str(ch), font=font)
        box = (x, y, x + min(right + 6, tw), y + min(bottom + 4, th))
        draw.rectangle(box, fill=(20, 20, 20, 255))
        draw.text((x + 3, y + 2 - top // 2), str(ch), fill=(255, 255, 255, 255), font=font)
    canvas[...] = np.asarray(img)


def figure_to_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a figure to PNG bytes."""
    buf = io.BytesIO()
    # zlib level 1: a third of the default's encoding time for a few percent more bytes.
    # Z_RLE strategy: grids are runs of repeated pixels; faster and smaller than the default.
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs={"compress_level": 1, "compress_type": 3})
    return buf.getvalue()


#: Colormaps offered on the page: perceptually uniform ones first, then diverging ones.
CMAPS = ("viridis", "magma", "inferno", "plasma", "cividis", "gray", "coolwarm", "RdBu_r")


def _unit(channel: np.ndarray) -> np.ndarray:
    arr = np.nan_to_num(np.asarray(channel, dtype=np.float32))
    lo, hi = float(arr.min()), float(arr.max())
    return (arr - lo) / (hi - lo) if hi > lo else np.zeros_like(arr)


def channel_image(channel: torch.Tensor | np.ndarray, size: tuple[int, int], cmap: str = "viridis"):
    """One channel stretched to its own min..max, coloured and upsampled (bicubic) to ``size``
    (width, height): the inspector's large view. Returns a PIL RGB image."""
    import cv2
    from PIL import Image

    arr = channel.detach().float().cpu().numpy() if isinstance(channel, torch.Tensor) else channel
    if arr.ndim != 2:
        raise ValueError(f"Expected one (H, W) channel, got shape {arr.shape}.")
    big = cv2.resize(_unit(arr), size, interpolation=cv2.INTER_CUBIC)
    rgba = get_colormap(cmap)(np.clip(big, 0, 1), bytes=True)
    return Image.fromarray(rgba[..., :3])


def channel_overlay(picture, channel: torch.Tensor | np.ndarray, alpha: float = 0.5, cmap: str = "viridis"):
    """Blend a coloured, upsampled channel over the picture the model saw.

    Args:
        picture: PIL RGB image (what the model saw).
        channel: (H, W) activation of one channel.
        alpha: opacity of the heat map, 0 (picture only) to 1 (map only).
    """
    from PIL import Image

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}.")
    heat = np.asarray(channel_image(channel, picture.size, cmap), dtype=np.float32)
    base = np.asarray(picture.convert("RGB"), dtype=np.float32)
    return Image.fromarray((base * (1 - alpha) + heat * alpha + 0.5).astype(np.uint8))


def image_to_png(image) -> bytes:
    """A PIL image as PNG bytes (for download buttons)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()
