"""Turning captured tensors into matplotlib figures, fast and without pyplot.

One Axes per channel is what makes the usual approach slow (each Axes costs milliseconds to
build and draw). Here the chosen channels are coloured with the matplotlib colormap, composed
into one picture with thin separators, channel numbers and the title, and drawn on the figure as
one image, pixel for pixel at the figure's 100 dpi and scaled as a whole at any other dpi or in
PDF / SVG: matplotlib itself only draws the colorbar of a per-layer scale.
"""

from __future__ import annotations

import dataclasses
import functools
import io
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import matplotlib
import numpy as np
import torch
from matplotlib.artist import Artist
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, Normalize
from matplotlib.figure import Figure
from matplotlib.transforms import Affine2D, Bbox

from vizhooks.errors import CodedError
from vizhooks.render.scale import min_max

if TYPE_CHECKING:  # PIL is imported where pixels are made
    from matplotlib.backend_bases import RendererBase
    from PIL import ImageFont
    from PIL.Image import Image as PILImage

ORDERS = ("index", "mean", "max")
NORMS = ("channel", "layer")

_GAP = 1  # separator width in pixels of the activation map
#: A colour for _draw_text: RGBA on an RGBA page, a level (palette index) on a level page.
_Ink = tuple[int, int, int, int] | int


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


def get_colormap(name: str) -> Colormap:
    """The named matplotlib colormap, with separators ("bad" pixels) drawn white.

    Raises:
        ValueError: not a colormap name.
    """
    try:
        return matplotlib.colormaps[name].with_extremes(bad="white")
    except KeyError:
        raise CodedError(f"Unknown colormap {name!r}; try viridis, magma, gray or coolwarm.", "colormap",
                         name=str(name)) from None


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
    clim: tuple[float, float] | None = None,
    ranking: Sequence[int] | None = None,
    notes: Sequence[str] | None = None,
    box: Sequence[int] | None = None,
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
        clim: with ``norm="layer"``, this (min, max) instead of the layer's own, so grids of two
            photos share one scale.
        ranking: the channels in the order to show them (a channel relevance's ``order``), instead
            of ``order``; the heading says "↓ R".
        notes: one short text per channel of the layer (indexed by channel), drawn after each shown
            tile's channel number (its signed relevance).
        box: ``(top, left, bottom, right)`` of the map (end-exclusive, in map positions): a red
            rectangle around that region on every tile (a patched region), drawn as matplotlib
            ``Rectangle`` patches of one frameless Axes laid over the picture in page pixels.

    Returns:
        A :class:`GridFigure` (a ``matplotlib.figure.Figure``; not registered with pyplot, nothing
        to close) whose ``savefig`` writes PNGs as fast as :func:`figure_to_png`.

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
    _check_grid_args(channels, columns)
    region = None if box is None else _check_box(box, h, w)
    colormap = get_colormap(cmap)

    layout = _layout(arr, channels, order, norm, columns, vcenter, title, clim, ranking=ranking, notes=notes)
    page = _colour(layout, colormap)
    _draw_text(page, layout, (20, 20, 20, 255), (255, 255, 255, 255), (0, 0, 0, 255), (*NOTE_RED, 255),
               (*NOTE_BLUE, 255))
    vmin, vmax = layout.clim
    height_px, width_px = page.shape[:2]
    dpi = 100
    fig = GridFigure(figsize=(width_px / dpi, height_px / dpi), dpi=dpi, layout=None)
    fig.add_artist(_Pixels(page, dpi))
    if norm == "layer":
        grid_h, grid_w = layout.levels.shape[0] - layout.title_px, layout.grid_width
        cax = fig.add_axes(((grid_w + 12) / width_px, 0.05 * grid_h / height_px,
                            14 / width_px, 0.9 * grid_h / height_px))
        fig.colorbar(ScalarMappable(Normalize(vmin, vmax), colormap), cax=cax)
        cax.tick_params(labelsize=7)
    if region is not None:
        _draw_box(fig, layout, region, (width_px, height_px))
    # What was drawn, for callers and tests: channel of each tile, the values behind the colours
    # (at activation resolution, NaN between tiles) and the colour scale.
    fig.vizhooks = {"channels": layout.channels, "grid": layout.grid, "title": layout.title,
                    "mosaic": layout.mosaic, "clim": layout.clim, "scale": layout.scale, "box": region}
    return fig


def _check_box(box: Sequence[int], h: int, w: int) -> tuple[int, int, int, int]:
    if len(box) != 4:
        raise ValueError(f"box must be (top, left, bottom, right) of the map, not {tuple(box)!r}.")
    top, left, bottom, right = (int(v) for v in box)
    if not (0 <= top < bottom <= h and 0 <= left < right <= w):
        raise ValueError(f"box {(top, left, bottom, right)} does not fit a map of {h}x{w}: "
                         f"give 0 <= top < bottom <= {h} and 0 <= left < right <= {w}.")
    return top, left, bottom, right


def _draw_box(fig: Figure, layout: GridLayout, box: tuple[int, int, int, int], page: tuple[int, int]) -> None:
    """A red rectangle around ``box`` of every tile: one frameless Axes over the whole figure whose
    data coordinates are the page's pixels (x right, y down), each pixel ``[j, j + 1)``."""
    top, left, bottom, right = box
    width_px, height_px = page
    ax = fig.add_axes((0, 0, 1, 1), label="box")
    ax.set_axis_off()
    ax.set_zorder(2)
    ax.set_xlim(0, width_px)
    ax.set_ylim(height_px, 0)
    k, (th, tw), cols = layout.scale, layout.tile, layout.grid[1]
    for i in range(len(layout.channels)):
        r, c = divmod(i, cols)
        y, x = layout.title_px + r * (th + _SEP_PX), c * (tw + _SEP_PX)
        ax.add_patch(_rect((x + left * k, y + top * k), (right - left) * k, (bottom - top) * k, fill=False,
                           edgecolor="red", lw=1.5))


class _Pixels(Artist):
    """Finished RGBA pixels drawn at the bottom-left of the figure, filling ``width / dpi`` inches.

    At the figure's own dpi (the default path) they are blitted 1:1: ``imshow`` and ``figimage``
    would resample, mask and re-colour them on every draw, most of the time of a grid, for an
    identical result. At another dpi the picture keeps its size in inches, as any figure's content
    does: vector renderers (PDF, SVG, PS) place it with a transform, raster ones get pixels
    enlarged (whole factors: repeated; others: nearest) or reduced (Lanczos) to the new size.
    """

    def __init__(self, rgba: np.ndarray, dpi: float):
        super().__init__()
        self._rgba = np.ascontiguousarray(rgba)
        self._dpi = float(dpi)
        self._scaled: tuple[tuple[int, int], np.ndarray] | None = None  # the last resize, for re-saves
        self.set_zorder(0)

    def draw(self, renderer: RendererBase) -> None:
        if not self.get_visible():
            return
        scale = self._scale()
        h, w = self._rgba.shape[:2]
        gc = renderer.new_gc()
        try:
            if renderer.option_scale_image():
                # The unit square of the image mapped onto its box in points, whatever the dpi.
                box = Affine2D().scale(w * scale, h * scale)
                renderer.draw_image(gc, 0, 0, self._rgba[::-1], box)
            elif scale == 1.0:
                renderer.draw_image(gc, 0, 0, self._rgba[::-1])
            else:
                renderer.draw_image(gc, 0, 0, self._resized(round(w * scale), round(h * scale))[::-1])
        finally:
            gc.restore()

    def _scale(self) -> float:
        """Output pixels per picture pixel: the figure's dpi during a save (the requested one for
        raster output, 72 points for vector) over the dpi the picture was made for."""
        return self.figure.dpi / self._dpi if self.figure is not None else 1.0

    def _resized(self, width: int, height: int) -> np.ndarray:
        if self._scaled is not None and self._scaled[0] == (width, height):
            return self._scaled[1]
        h, w = self._rgba.shape[:2]
        if width % w == 0 and height % h == 0 and width // w == height // h:
            k = width // w  # a whole factor: crisp tiles, exactly the default picture enlarged
            out = self._rgba.repeat(k, axis=0).repeat(k, axis=1)
        else:
            from PIL import Image

            resample = Image.Resampling.NEAREST if width >= w else Image.Resampling.LANCZOS
            out = np.asarray(Image.fromarray(self._rgba).resize((max(1, width), max(1, height)), resample))
        out = np.ascontiguousarray(out)
        self._scaled = ((width, height), out)
        return out

    def get_window_extent(self, renderer: RendererBase | None = None) -> Bbox:
        # Where the pixels are, so bbox_inches="tight" keeps the grid rather than only the title text.
        scale = self._scale()
        h, w = self._rgba.shape[:2]
        return Bbox.from_bounds(0, 0, w * scale, h * scale)


#: Tiles are enlarged by a whole factor (crisp pixels) until the grid is about this wide.
_GRID_PX = 800
_MIN_TILE_PX = 40
_SEP_PX = 2
#: The grid's heading line (layer, shape, channels shown, order) in its 34 px band, shown at about half size:
#: at most this size, and as large as fits the grid's width.
_TITLE_FONT_PX = 20


def _check_grid_args(channels: object, columns: object) -> None:
    if channels is not None and (isinstance(channels, bool) or not isinstance(channels, (int, np.integer))
                                 or channels < 1):
        raise ValueError(f"channels must be a whole number of at least 1, not {channels!r}.")
    if columns is not None and (not isinstance(columns, (int, np.integer)) or columns < 1):
        raise ValueError(f"columns must be a whole number of at least 1, not {columns!r}.")


@functools.lru_cache(maxsize=32)  # the heading's sizes (20 down to 13) beside the tiles' own
def _font(size: int, face: str | None = None) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    from PIL import ImageFont

    if face:  # matplotlib's own DejaVu Sans, so titles look like the rest of matplotlib
        from matplotlib import font_manager

        return ImageFont.truetype(font_manager.findfont(face), size)
    return ImageFont.load_default(size=size)


#: Tile values are stored as 252 levels; the last indices are the page's own colours.
_LEVELS = 252
_WHITE = 252
#: A picture with signed notes takes two of the page's own entries for them (see _lut).
_RED, _BLUE = _WHITE + 1, _WHITE + 3


@dataclass(frozen=True)
class GridLayout:
    """Everything about a grid except its colours: which channel goes where, the tiles as
    colour levels (0..251, separators and margins = 252), label and title positions. Cheap to
    colour again with another colormap (see :func:`palette_png`)."""

    levels: np.ndarray  # (H, W) uint8
    channels: list[int]
    grid: tuple[int, int]
    scale: int
    tile: tuple[int, int]
    title: str
    title_px: int
    grid_width: int
    clim: tuple[float, float]
    mosaic: np.ndarray
    norm: str
    labelled: np.ndarray | None = None  # levels with labels and title drawn in, for palette_png
    notes: list[str] | None = None  # a short text after each shown tile's channel number (its relevance)
    signed: bool = False  # notes drawn red / blue at the palette entries _RED / _BLUE (see palette_png)

    @property
    def nbytes(self) -> int:
        extra = self.labelled.nbytes if self.labelled is not None else 0
        return int(self.levels.nbytes + self.mosaic.nbytes + extra)


def _layout(arr: np.ndarray, channels: int | None, order: str, norm: str, columns: int | None,
            vcenter: float | None, title: str | None, clim: tuple[float, float] | None = None,
            ranking: Sequence[int] | None = None, notes: Sequence[str] | None = None) -> GridLayout:
    total, h, w = arr.shape
    ranked = channel_order(arr, order) if ranking is None else np.asarray(ranking, dtype=np.int64)
    picked = ranked[: min(int(channels or total), total)]
    tiles = np.nan_to_num(arr[picked], nan=0.0, posinf=0.0, neginf=0.0)
    if norm == "channel":
        tiles = _normalise_channels(tiles)
        vmin, vmax = 0.0, 1.0
    else:
        finite = np.nan_to_num(arr, nan=0.0, posinf=0.0, neginf=0.0)
        vmin, vmax = (float(finite.min()), float(finite.max())) if clim is None else map(float, clim)
        if vcenter is not None:
            reach = max(abs(vmin - vcenter), abs(vmax - vcenter)) or 1.0
            vmin, vmax = vcenter - reach, vcenter + reach
        elif vmax <= vmin:
            vmin, vmax = vmin - 0.5, vmax + 0.5
    rows, cols = grid_shape(len(picked), columns)
    unit = np.clip(tiles if norm == "channel" else (tiles - vmin) / (vmax - vmin), 0, 1)
    # Tiles are enlarged by a whole factor until the grid is about _GRID_PX wide, but never so
    # small that a tile is under ~40 px (512 channels of 7 x 11 would be).
    k = max(1, _GRID_PX // (cols * (w + _SEP_PX)), math.ceil(_MIN_TILE_PX / max(h, w)))
    level = (unit * (_LEVELS - 1) + 0.5).astype(np.uint8)
    if k > 1:
        level = level.repeat(k, axis=1).repeat(k, axis=2)
    th, tw = h * k, w * k
    title_px, bar_px = 34, (70 if norm == "layer" else 0)
    grid_h, grid_w = rows * (th + _SEP_PX) - _SEP_PX, cols * (tw + _SEP_PX) - _SEP_PX
    page = np.full((grid_h + title_px, max(grid_w + bar_px, 360)), _WHITE, np.uint8)
    for i in range(len(picked)):
        r, c = divmod(i, cols)
        y, x = title_px + r * (th + _SEP_PX), c * (tw + _SEP_PX)
        page[y: y + th, x: x + tw] = level[i]
    # Numbers, names and symbols only, so a grid reads the same on an English and a Chinese page:
    # "12/64" = 12 of 64 channels shown; "↓ μ" / "↓ max" = sorted by mean / peak, largest first.
    shown = f"  ·  {len(picked)}/{total}" if len(picked) < total else ""
    sort = "  ·  ↓ R" if ranking is not None else {"index": "", "mean": "  ·  ↓ μ", "max": "  ·  ↓ max"}[order]
    heading = f"{title}  ·  " if title else ""
    return GridLayout(
        levels=page, channels=[int(c) for c in picked], grid=(rows, cols), scale=k, tile=(th, tw),
        title=f"{heading}{total}×{h}×{w}{shown}{sort}", title_px=title_px, grid_width=grid_w,
        clim=(vmin, vmax), mosaic=_mosaic(tiles, rows, cols), norm=norm,
        notes=None if notes is None else [notes[int(c)] for c in picked],
    )


def _lut(colormap: Colormap, signed: bool = False) -> np.ndarray:
    """(256, 4) uint8: the colormap sampled at the 252 levels, then white, black and dark grey; with
    ``signed`` (a picture with red and blue notes) black is the notes' red and the last white their blue."""
    lut = np.empty((256, 4), np.uint8)
    lut[:_LEVELS] = colormap(np.linspace(0, 1, _LEVELS), bytes=True)
    lut[_WHITE:] = [(255, 255, 255, 255), (0, 0, 0, 255), (20, 20, 20, 255), (255, 255, 255, 255)]
    if signed:
        lut[_RED], lut[_BLUE] = (*NOTE_RED, 255), (*NOTE_BLUE, 255)
    return lut


def _colour(layout: GridLayout, colormap: Colormap) -> np.ndarray:
    return _lut(colormap)[layout.levels]


#: The colours of a tile's signed note (its relevance): red helped the class, blue spoke against it;
#: light enough to read on the dark label box.
NOTE_RED, NOTE_BLUE = (255, 84, 84), (84, 150, 255)


def note_colour(note: str) -> tuple[int, int, int] | None:
    """:data:`NOTE_RED` for a note that reads as a positive number, :data:`NOTE_BLUE` for a negative
    one, None for zero and for other texts (drawn like the channel number)."""
    try:
        value = float(note.replace("\u2212", "-"))
    except ValueError:
        return None
    return NOTE_RED if value > 0 else NOTE_BLUE if value < 0 else None


def _draw_text(page: np.ndarray, layout: GridLayout, box: _Ink, text: _Ink, title: _Ink,
               red: _Ink | None = None, blue: _Ink | None = None) -> None:
    """Channel numbers (on dark boxes in the top-left corner of each tile), each tile's note after its
    number (a signed one in ``red`` or ``blue`` when given, see :func:`note_colour`), and the heading,
    drawn into the pixels: a matplotlib Text per tile would cost more than the whole grid.
    ``page`` is RGBA (colours given as tuples) or palette indices (colours given as ints)."""
    from PIL import Image, ImageDraw

    th, tw = layout.tile
    img = Image.fromarray(page)
    draw = ImageDraw.Draw(img)
    if page.ndim == 2:
        draw.fontmode = "1"  # palette images: no anti-aliasing, every pixel is one of our colours
    # The grid is drawn ~_GRID_PX wide and shown at 320-700 px (two grids side by side at 1024 x 768): a large
    # tile gets a large number (a fifth of it, up to 36 px) so it still reads on a projector; a small one keeps
    # up to a quarter of it (at most 14 px), as a "58 +0.31" must fit in it.
    side = min(th, tw)
    font = _font(int(max(8, min(14, side // 4), min(36, side // 5))))
    cols = layout.grid[1]
    for i, ch in enumerate(layout.channels):
        r, c = divmod(i, cols)
        x, y = c * (tw + _SEP_PX), layout.title_px + r * (th + _SEP_PX)
        label = str(ch) if layout.notes is None else f"{ch} {layout.notes[i]}"
        _, top, right, bottom = draw.textbbox((0, 0), label, font=font)
        draw.rectangle((x, y, x + min(right + 6, tw), y + min(bottom + 4, th)), fill=box)
        draw.text((x + 3, y + 2 - top // 2), str(ch), fill=text, font=font)
        if layout.notes is not None:
            note, ink = layout.notes[i], note_colour(layout.notes[i])
            fill = red if ink == NOTE_RED else blue if ink == NOTE_BLUE else None
            draw.text((x + 3 + draw.textlength(f"{ch} ", font=font), y + 2 - top // 2), note,
                      fill=text if fill is None else fill, font=font)
    size = _TITLE_FONT_PX  # smaller, down to 13 px, where a long layer name would not fit the page's width
    while size > 13 and draw.textlength(layout.title, font=_font(size, "DejaVu Sans")) > page.shape[1] - 12:
        size -= 1
    draw.text((6, layout.title_px // 2), layout.title, fill=title, font=_font(size, "DejaVu Sans"), anchor="lm")
    page[...] = np.asarray(img)


def grid_layout(
    activation: torch.Tensor | np.ndarray,
    *,
    channels: int | None = 16,
    order: str = "index",
    columns: int | None = None,
    title: str | None = None,
    ranking: Sequence[int] | None = None,
    notes: Sequence[str] | None = None,
) -> GridLayout:
    """The colour-independent part of a per-channel (``norm="channel"``) grid, for
    :func:`palette_png`. Same arguments and checks as :func:`feature_grid`."""
    arr = _as_chw(activation)
    _check_grid_args(channels, columns)
    layout = _layout(arr, channels, order, "channel", columns, None, title, ranking=ranking, notes=notes)
    labelled = layout.levels.copy()
    if layout.notes is not None and any(note_colour(note) for note in layout.notes):
        # the palette's four own entries: numbers in the background's white, the heading in the boxes'
        # near-black, so black and the second white become the notes' red and blue
        _draw_text(labelled, layout, _WHITE + 2, _WHITE, _WHITE + 2, _RED, _BLUE)
        return dataclasses.replace(layout, labelled=labelled, signed=True)
    _draw_text(labelled, layout, _WHITE + 2, _WHITE + 3, _WHITE + 1)
    return dataclasses.replace(layout, labelled=labelled)


def palette_png(layout: GridLayout, cmap: str = "viridis") -> bytes:
    """A per-channel grid as a palette PNG: the colormap is the palette, so a colormap change
    costs an encode (a few ms), not a redraw. Looks like :func:`feature_grid`'s picture, with
    un-smoothed label text."""
    from PIL import Image

    if layout.norm != "channel":
        raise ValueError("palette_png draws per-channel grids; use feature_grid for norm='layer'.")
    if layout.labelled is None:
        raise ValueError("palette_png needs a layout from grid_layout().")
    img = Image.fromarray(layout.labelled, mode="L").convert("P")
    img.putpalette(_lut(get_colormap(cmap), layout.signed)[:, :3].tobytes())
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=1, compress_type=3)
    return buf.getvalue()


def retile(layout: GridLayout, unit: np.ndarray) -> np.ndarray:
    """The labelled page of ``layout`` with new tile values: one frame of an animated grid.

    The frames of a clip share one layout (channels, positions, labels, title) and a scale that
    the caller fixes for the whole clip, so a colour means the same value in every frame.

    Args:
        layout: from :func:`grid_layout`.
        unit: (n, h, w) values in 0..1, one map per shown channel in ``layout.channels`` order,
            at activation resolution; NaN counts as 0, values outside 0..1 are clipped.

    Returns:
        (H, W) uint8 colour levels with the labels and title drawn in; colour them with
        :func:`colormap_lut`.

    Raises:
        ValueError: a layout not from :func:`grid_layout`, or ``unit`` of the wrong shape.

    Example:
        >>> layout = grid_layout(acts[0], channels=16)
        >>> rgb = colormap_lut("viridis")[retile(layout, unit[0])]
    """
    if layout.labelled is None:
        raise ValueError("retile needs a layout from grid_layout().")
    th, tw = layout.tile
    k = layout.scale
    shape = (len(layout.channels), th // k, tw // k)
    arr = np.asarray(unit, dtype=np.float32)
    if arr.shape != shape:
        raise ValueError(f"retile needs {shape[0]} maps of {shape[1]} x {shape[2]} for this layout, "
                         f"not an array of shape {arr.shape}.")
    unit_clean = np.clip(np.nan_to_num(arr, nan=0.0, posinf=1.0, neginf=0.0), 0, 1)
    level = (unit_clean * (_LEVELS - 1) + 0.5).astype(np.uint8)
    if k > 1:
        level = level.repeat(k, axis=1).repeat(k, axis=2)
    page = layout.levels.copy()
    cols = layout.grid[1]
    for i in range(shape[0]):
        r, c = divmod(i, cols)
        y, x = layout.title_px + r * (th + _SEP_PX), c * (tw + _SEP_PX)
        page[y: y + th, x: x + tw] = level[i]
    # Label boxes, numbers and the title use levels no tile can take (> 251): wherever the
    # labelled page differs from the bare one is text, drawn back over the new tiles.
    text = layout.labelled != layout.levels
    page[text] = layout.labelled[text]
    return page


def colormap_lut(cmap: str = "viridis") -> np.ndarray:
    """(256, 3) uint8 RGB of every colour level of a grid page: the colormap at levels 0..251,
    then the page's white, black, dark grey and white; ``colormap_lut(cmap)[levels]`` is the
    RGB picture of a :func:`retile` page, and the palette :func:`palette_png` uses.

    Raises:
        ValueError: not a colormap name.
    """
    return np.ascontiguousarray(_lut(get_colormap(cmap))[:, :3])


def _png_writer() -> dict:
    # zlib level 1: a third of the default's encoding time for a few percent more bytes.
    # Z_RLE strategy (3): grids are runs of repeated pixels; faster and smaller than the default.
    # A new dict each call, so no caller can change the defaults of the next one.
    return {"compress_level": 1, "compress_type": 3}


class GridFigure(Figure):
    """The figure :func:`feature_grid` returns: a plain ``Figure`` whose ``savefig`` fills in
    vizhooks' PNG defaults, so ``fig.savefig("x.png")`` is as fast as :func:`figure_to_png`.

    Matplotlib keeps savefig defaults only in the global ``rcParams``; changing those would
    affect every figure of the process and race between threads, so the defaults live here.
    Unless the caller passes their own:

    - ``dpi`` is the figure's (100), where the grid is blitted 1:1 in pixels (the fast path), so
      an ``rcParams`` ``savefig.dpi`` meant for other plots does not resize it; an explicit
      ``dpi=200`` gives the same picture twice as large (for a slide);
    - a PNG written by Agg gets ``pil_kwargs`` of zlib level 1 with the run-length strategy.

    Any explicit ``dpi``, ``pil_kwargs``, ``format`` or ``backend`` wins; other formats (PDF,
    SVG, JPEG, ...) are saved exactly as matplotlib would.
    """

    #: What was drawn (set by :func:`feature_grid`): channel of each tile, values, colour scale.
    vizhooks: dict[str, Any]

    def savefig(self, fname: Any, **kwargs: Any) -> None:
        kwargs.setdefault("dpi", "figure")
        if "pil_kwargs" not in kwargs and kwargs.get("backend") is None and self._writes_png(
                fname, kwargs.get("format")):
            kwargs["pil_kwargs"] = _png_writer()
        return super().savefig(fname, **kwargs)

    def _writes_png(self, fname: Any, fmt: str | None) -> bool:
        """Whether ``savefig`` will write a PNG, decided as matplotlib's ``print_figure`` does:
        the format argument, else the file name's extension, else ``savefig.format``."""
        if fmt is None and isinstance(fname, (str, os.PathLike)):
            fmt = os.path.splitext(os.fspath(fname))[1][1:]
        if not fmt:
            fmt = self.canvas.get_default_filetype()
        return fmt.lower() == "png"


#: Fonts with Chinese characters, tried in this order after DejaVu Sans (names a person types are
#: in any language; Debian's fonts-wqy-zenhei is what `make chromium` installs).
CJK_FONTS = ("WenQuanYi Zen Hei", "Noto Sans CJK SC", "Noto Sans SC", "Source Han Sans SC", "Microsoft YaHei",
             "PingFang SC", "SimHei")


class _OneWeightFonts(logging.Filter):
    """Leaves out matplotlib's "findfont: Failed to find font weight normal for WenQuanYi Zen Hei, now using
    500." for the fonts of :data:`CJK_FONTS`: such a font comes in one weight, which is the right one for
    every Chinese label, yet the line was printed on the command line and in the server's log."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args if isinstance(record.args, tuple) else ()
        return not (str(record.msg).startswith("findfont: Failed to find font weight")
                    and len(args) > 1 and args[1] in CJK_FONTS)


@functools.cache
def text_fonts() -> tuple[str, ...]:
    """DejaVu Sans, then the first font of :data:`CJK_FONTS` this machine has: matplotlib falls back
    glyph by glyph along the list, so Latin and Chinese names both show (without a warning that such a
    font has one weight: :class:`_OneWeightFonts`)."""
    from matplotlib import font_manager

    logging.getLogger(font_manager.__name__).addFilter(_OneWeightFonts())
    have = {f.name for f in font_manager.fontManager.ttflist}
    if not have.intersection(CJK_FONTS):
        # matplotlib lists the system's fonts once, in a cache it keeps until its own version changes:
        # a Chinese font installed after that (`make test` installs fonts-wqy-zenhei after the first
        # import) stayed unknown, and every Chinese label was drawn as empty boxes. Add what is new.
        have |= _add_new_system_fonts(font_manager)
    return ("DejaVu Sans", *[name for name in CJK_FONTS if name in have][:1])


def _add_new_system_fonts(font_manager: ModuleType) -> set[str]:
    """Register with matplotlib the system fonts its cached list does not know; their names."""
    known = {f.fname for f in font_manager.fontManager.ttflist}
    for path in font_manager.findSystemFonts():
        if path not in known:
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):  # a file FreeType cannot read: skipped, as matplotlib does
                continue
    return {f.name for f in font_manager.fontManager.ttflist}


def confusion_figure(confusion: np.ndarray, names: list[str], title: str = "", truth: str = "true class",
                     guess: str = "predicted class") -> Figure:
    """A confusion matrix as a picture: counts in the cells, row = true class, column = predicted,
    the diagonal (right answers) in green and mistakes in red."""
    counts = np.asarray(confusion)
    k = len(names)
    side = 1.2 + 0.75 * k
    fig = Figure(figsize=(side + 1.2, side))
    ax = fig.add_subplot()
    right = np.eye(k, dtype=bool)
    shade = counts / max(1, counts.max())
    rgb = np.ones((k, k, 3))
    rgb[right] = 1 - shade[right][:, None] * np.array([0.6, 0.15, 0.6])
    rgb[~right] = 1 - shade[~right][:, None] * np.array([0.1, 0.6, 0.6])
    ax.imshow(rgb)
    fonts = list(text_fonts())
    for i in range(k):
        for j in range(k):
            ax.text(j, i, str(int(counts[i, j])), ha="center", va="center", fontsize=12, family=fonts)
    ax.set_xticks(range(k), [n[:14] for n in names], rotation=30, ha="right", family=fonts)
    ax.set_yticks(range(k), [n[:14] for n in names], family=fonts)
    ax.set_xlabel(guess, family=fonts)
    ax.set_ylabel(truth, family=fonts)
    if title:
        ax.set_title(title, family=fonts)
    fig.tight_layout()
    return fig


def _label_font(size: int) -> Any:
    """A TrueType font for names a person wrote or a page translated: the first CJK font of
    :func:`text_fonts` (it has Latin letters too), else DejaVu Sans."""
    from matplotlib import font_manager
    from PIL import ImageFont

    face = text_fonts()[-1]
    path = next(f.fname for f in font_manager.fontManager.ttflist if f.name == face)
    return ImageFont.truetype(path, size)


def overview_png(rows: Sequence[Any], top: Sequence[tuple[str, float]] = (), cmap: str = "viridis",
                 label_width: int = 300) -> bytes:
    """The whole network as one picture (see :func:`vizhooks.network.overview.overview`): one row per
    layer, its name, channels and map size on the left and its strongest channels as tiles (each
    on its own colour scale, its channel number in the corner); a rule with the map size where a
    new resolution (a stage) begins; then the top classes as bars. Drawn tile by tile in one
    palette image whose palette is the colormap (as :func:`palette_png`): no Axes per thumbnail,
    and a PNG of a few hundred kilobytes encoded in milliseconds.

    Args:
        rows: :class:`~vizhooks.network.overview.OverviewRow` objects, all with tiles of one size.
        top: ``(label, probability)`` pairs for the strip at the end (labels in any language).
    """
    from PIL import Image, ImageDraw

    if not rows:
        raise ValueError("An overview needs at least one layer.")
    white, black, dark = _WHITE, _WHITE + 1, _WHITE + 2  # the palette's own colours after the colormap
    signed = any(note_colour(note) for row in rows for note in (getattr(row, "notes", None) or ()))
    if signed:  # black becomes the notes' red (see _lut): names in the boxes' near-black instead
        black = dark
    th, tw = rows[0].tiles.shape[-2:]
    k = max(len(r.picked) for r in rows)
    gap, margin, band, line = 4, 12, 26, 20
    row_h = max(th, 2 * line) + gap
    changes = sum(1 for i in range(len(rows)) if i == 0 or rows[i].hw != rows[i - 1].hw)
    strip = (band + len(top) * (line + 6) + gap) if top else 0
    width = 2 * margin + label_width + k * (tw + gap)
    height = 2 * margin + len(rows) * row_h + changes * band + strip
    canvas = np.full((height, width), white, np.uint8)
    y, tops = margin, []
    for i, row in enumerate(rows):
        if i == 0 or row.hw != rows[i - 1].hw:
            y += band
        levels = channel_levels(row.tiles)
        x = margin + label_width
        for level in levels:
            canvas[y:y + th, x:x + tw] = level
            x += tw + gap
        tops.append(y)
        y += row_h
    image = Image.fromarray(canvas, mode="L").convert("P")
    image.putpalette(_lut(get_colormap(cmap), signed)[:, :3].tobytes())
    draw = ImageDraw.Draw(image)
    draw.fontmode = "1"  # palette colours only: no anti-aliasing
    name_font, small = _font(15, "DejaVu Sans"), _font(13, "DejaVu Sans")
    for i, (row, y) in enumerate(zip(rows, tops, strict=True)):
        if i == 0 or row.hw != rows[i - 1].hw:  # a stage begins: its map size, and a rule across the picture
            draw.text((margin, y - band // 2), f"{row.hw[0]}×{row.hw[1]}", fill=black, font=name_font, anchor="lm")
            draw.line([margin + 90, y - band // 2, width - margin, y - band // 2], fill=dark, width=2)
        name = row.name if len(row.name) <= 34 else "…" + row.name[-33:]
        draw.text((margin, y + 2), name, fill=black, font=name_font)
        draw.text((margin, y + 2 + line), f"{row.channels} × {row.hw[0]}×{row.hw[1]}", fill=dark, font=small)
        x = margin + label_width
        notes = getattr(row, "notes", None)
        for j, channel in enumerate(row.picked):
            tag = f"#{channel}"
            box = draw.textbbox((x, y), tag, font=small)
            draw.rectangle([x, y, box[2] + 3, box[3] + 1], fill=dark)
            draw.text((x + 1, y), tag, fill=white, font=small)
            if notes is not None:  # its signed relevance under the number
                at = (x + 1, box[3] + 2)
                under = draw.textbbox(at, notes[j], font=small)
                draw.rectangle([x, box[3] + 1, under[2] + 3, under[3] + 1], fill=dark)
                ink = note_colour(notes[j])
                draw.text(at, notes[j], fill=_RED if ink == NOTE_RED else _BLUE if ink == NOTE_BLUE else white,
                          font=small)
            x += tw + gap
    if top:
        y = tops[-1] + row_h
        draw.line([margin, y + band // 2, width - margin, y + band // 2], fill=dark, width=1)
        y += band
        font = _label_font(15)
        bar_w = width - 2 * margin - label_width
        for label, p in top:
            draw.rectangle([margin + label_width, y + 2, margin + label_width + max(1, round(bar_w * p)), y + line],
                           fill=_LEVELS * 2 // 3)
            draw.text((margin, y + 1), f"{label[:28]}  {p:.1%}", fill=black, font=font)
            y += line + 6
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=1, compress_type=3)
    return buffer.getvalue()


def figure_to_png(fig: Figure, dpi: int = 100) -> bytes:
    """Render a figure (any ``matplotlib.figure.Figure``) to PNG bytes with vizhooks' fast PNG
    writer settings; for a :func:`feature_grid` figure this is the same as
    ``fig.savefig(buf, format="png")``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, pil_kwargs=_png_writer())
    return buf.getvalue()


#: Colormaps offered on the page: perceptually uniform ones first, then diverging ones.
CMAPS = ("viridis", "magma", "inferno", "plasma", "cividis", "gray", "coolwarm", "RdBu_r")


def _unit(channel: np.ndarray) -> np.ndarray:
    return min_max(np.nan_to_num(np.asarray(channel, dtype=np.float32)))


def channel_image(channel: torch.Tensor | np.ndarray, size: tuple[int, int], cmap: str = "viridis") -> PILImage:
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


def channel_overlay(picture: PILImage, channel: torch.Tensor | np.ndarray, alpha: float = 0.5,
                    cmap: str = "viridis") -> PILImage:
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


def signed_overlay(picture: PILImage, heat: torch.Tensor | np.ndarray, alpha: float = 0.5,
                   cmap: str = "bwr") -> PILImage:
    """Blend a signed map (a relevance heatmap) over the picture, upsampled (bicubic), with zero at
    the middle of a diverging colormap: the largest ``|value|`` is full red (for) or full blue
    (against), so the two signs are drawn on one scale. ``alpha`` as in :func:`channel_overlay`."""
    import cv2
    from PIL import Image

    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be between 0 and 1, not {alpha!r}.")
    arr = heat.detach().float().cpu().numpy() if isinstance(heat, torch.Tensor) else np.asarray(heat, np.float32)
    if arr.ndim != 2:
        raise ValueError(f"Expected one (H, W) map, got shape {arr.shape}.")
    arr = np.nan_to_num(arr.astype(np.float32))
    reach = float(np.abs(arr).max())
    unit = min_max(arr, -reach, reach) if reach > 0 else np.full_like(arr, 0.5)
    big = cv2.resize(unit, picture.size, interpolation=cv2.INTER_CUBIC)
    coloured = np.asarray(get_colormap(cmap)(np.clip(big, 0, 1), bytes=True)[..., :3], dtype=np.float32)
    base = np.asarray(picture.convert("RGB"), dtype=np.float32)
    return Image.fromarray((base * (1 - alpha) + coloured * alpha + 0.5).astype(np.uint8))


def image_to_png(image: PILImage) -> bytes:
    """A PIL image as PNG bytes (for download buttons)."""
    buf = io.BytesIO()
    image.save(buf, format="PNG")
    return buf.getvalue()



#: The level :func:`channel_levels` never produces and :func:`colormap_lut` draws white: fill the
#: gaps between tiles with it.
WHITE_LEVEL = _WHITE


def channel_levels(tiles: np.ndarray) -> np.ndarray:
    """(N, H, W) values as uint8 colour levels 0..251, each channel stretched to its own
    min..max (a constant channel at 0; NaN and infinities as 0): the grids' per-channel scale,
    for callers that compose pixels themselves (the live camera). Colour them with
    ``colormap_lut(cmap)[levels]``."""
    arr = np.nan_to_num(np.asarray(tiles, dtype=np.float32), nan=0.0, posinf=0.0, neginf=0.0)
    return (_normalise_channels(arr) * (_LEVELS - 1) + 0.5).astype(np.uint8)


def _cells(ax: Any, values: np.ndarray, cmap: str, reach: float, numbers: bool,
           padded: np.ndarray | None = None) -> None:
    """One small matrix as coloured cells (values in the cells when there are few), padding hatched."""
    ax.imshow(values, cmap=cmap, vmin=-reach, vmax=reach, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    kh, kw = values.shape
    if padded is not None and padded.any():
        for u, v in zip(*np.nonzero(padded), strict=True):
            ax.add_patch(_rect((v - 0.5, u - 0.5), 1, 1, fill=False, hatch="///", edgecolor="0.55", lw=0))
    if numbers:
        size = 8 if max(kh, kw) <= 3 else 6
        for u in range(kh):
            for v in range(kw):
                ax.text(v, u, f"{values[u, v]:.2f}", ha="center", va="center", fontsize=size,
                        color="white" if abs(values[u, v]) > 0.6 * reach else "black")


def _rect(xy: tuple[float, float], width: float, height: float, **kw: Any) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle(xy, width, height, **kw)


def conv_window_figure(plane: torch.Tensor | np.ndarray, rows: Sequence[int], cols: Sequence[int],
                       stride: tuple[int, int], output: torch.Tensor | np.ndarray, place: tuple[int, int],
                       titles: Sequence[str] = ("input", "close up", "output"), cmap: str = "viridis") -> Figure:
    """Where one conv output value looks: the input (``plane``, (H, W)) with the window drawn, a
    close-up with the zero padding shown in grey, the kernel's taps (``rows`` x ``cols``, dilation
    shows as gaps) and the next window one ``stride`` to the right dashed, then the ``output`` map
    (h, w) with the value's ``place`` (row, col) marked."""
    plane, output = np.asarray(plane, dtype=float), np.asarray(output, dtype=float)
    h, w = plane.shape
    sh, sw = stride
    fonts = list(text_fonts())
    fig = Figure(figsize=(11, 3.8))
    axes = fig.subplots(1, 3, gridspec_kw={"width_ratios": [1, 1, 1]})
    top, bottom, left, right = rows[0], rows[-1], cols[0], cols[-1]
    axes[0].imshow(plane, cmap=cmap, interpolation="nearest")
    axes[0].add_patch(_rect((left - 0.5, top - 0.5), right - left + 1, bottom - top + 1, fill=False, edgecolor="red",
                            lw=1.5))
    # the close-up: the window with a margin, padding (outside the picture) in grey
    span = max(bottom - top + 1, right - left + 1)
    margin = max(2, span // 2, max(sh, sw))
    r0, r1 = top - margin, bottom + margin
    c0, c1 = left - margin, right + sw + margin
    canvas = np.full((r1 - r0 + 1, c1 - c0 + 1), np.nan)
    ra, rb, ca, cb = max(r0, 0), min(r1, h - 1), max(c0, 0), min(c1, w - 1)
    if ra <= rb and ca <= cb:
        canvas[ra - r0:rb - r0 + 1, ca - c0:cb - c0 + 1] = plane[ra:rb + 1, ca:cb + 1]
    colours = get_colormap(cmap).with_extremes(bad="0.85")
    lo, hi = float(np.nanmin(plane)), float(np.nanmax(plane))
    axes[1].imshow(canvas, cmap=colours, vmin=lo, vmax=hi if hi > lo else lo + 1, interpolation="nearest",
                   extent=(c0 - 0.5, c1 + 0.5, r1 + 0.5, r0 - 0.5))
    axes[1].add_patch(_rect((-0.5, -0.5), w, h, fill=False, edgecolor="black", lw=1))  # the picture's edge
    axes[1].set_xlim(c0 - 0.5, c1 + 0.5)
    axes[1].set_ylim(r1 + 0.5, r0 - 0.5)
    taps = [(r, c) for r in rows for c in cols]
    axes[1].scatter([c for _, c in taps], [r for r, _ in taps], s=14, c="red", marker="s")
    axes[1].add_patch(_rect((left - 0.5, top - 0.5), right - left + 1, bottom - top + 1, fill=False, edgecolor="red",
                            lw=1.5))
    axes[1].add_patch(_rect((left + sw - 0.5, top - 0.5), right - left + 1, bottom - top + 1, fill=False,
                            edgecolor="orange", lw=1.2, ls="--"))
    axes[2].imshow(output, cmap=cmap, interpolation="nearest")
    axes[2].scatter([place[1]], [place[0]], s=40, facecolors="none", edgecolors="red", linewidths=1.5)
    for ax, title in zip(axes, titles, strict=True):
        ax.set_title(title, family=fonts, fontsize=10)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.tight_layout()
    return fig


def conv_products_figure(window: torch.Tensor | np.ndarray, weights: torch.Tensor | np.ndarray,
                         products: torch.Tensor | np.ndarray, padded: torch.Tensor | np.ndarray,
                         labels: Sequence[str], sums: Sequence[str],
                         heads: Sequence[str] = ("input window", "× kernel", "= products", "sum")) -> Figure:
    """One row per input channel shown: its window, the kernel's weights, their elementwise
    product (each on a scale symmetric around 0; the numbers in the cells for kernels up to 5×5,
    zero padding hatched) and the row's sum as text. ``labels`` name the rows, ``sums`` is the
    text of each row's sum."""
    window, weights, products = (np.asarray(a, dtype=float) for a in (window, weights, products))
    padded = np.asarray(padded, dtype=bool)
    n, kh, kw = window.shape
    numbers = max(kh, kw) <= 5
    fonts = list(text_fonts())
    cell = 1.25 if numbers else 1.0
    fig = Figure(figsize=(1.6 + 3 * cell * max(1.0, kw / kh) + 1.4, 0.5 + cell * n))
    axes = np.atleast_2d(fig.subplots(n, 4, squeeze=False, gridspec_kw={"width_ratios": [1, 1, 1, 0.9]}))
    for i in range(n):
        for j, (values, cmap) in enumerate(((window[i], "PuOr_r"), (weights[i], "RdBu_r"), (products[i], "RdBu_r"))):
            reach = float(np.abs(values).max()) or 1.0
            _cells(axes[i, j], values, cmap, reach, numbers, padded if j != 1 else None)
        axes[i, 0].set_ylabel(labels[i], family=fonts, fontsize=9, rotation=0, ha="right", va="center")
        axes[i, 3].axis("off")
        axes[i, 3].text(0.0, 0.5, sums[i], family=fonts, fontsize=10, va="center", transform=axes[i, 3].transAxes)
    for j, head in enumerate(heads):
        axes[0, j].set_title(head, family=fonts, fontsize=10)
    fig.tight_layout()
    return fig


def curves_figure(curves: Sequence[tuple[str, Sequence[float], Sequence[float], bool]],
                  titles: Sequence[str] = ("Deletion", "Insertion"),
                  xlabels: Sequence[str] = ("fraction of pixels removed", "fraction of pixels added"),
                  ylabel: str = "probability") -> Figure:
    """Deletion and insertion curves of several maps in one picture: two panels side by side, one
    line per map (``(label, deletion, insertion, dashed)``; the points lie at 0, 1/steps, ..., 1),
    reference maps dashed in grey tones, one legend."""
    fonts = list(text_fonts())
    fig = Figure(figsize=(10.0, 4.0))
    axes = fig.subplots(1, 2, sharey=True)
    tab10 = matplotlib.colormaps["tab10"]
    colours = [tab10(i) for i in range(10)]
    greys = ("0.35", "0.6", "0.15")
    for panel, ax in enumerate(axes):
        solid = dashed_seen = 0
        for label, deletion, insertion, dashed in curves:
            ys = np.asarray(deletion if panel == 0 else insertion, dtype=float)
            xs = np.linspace(0.0, 1.0, len(ys))
            colour: Any
            if dashed:
                colour, dashed_seen = greys[dashed_seen % len(greys)], dashed_seen + 1
            else:
                colour, solid = colours[solid % len(colours)], solid + 1
            ax.plot(xs, ys, linestyle="--" if dashed else "-", linewidth=1.4 if dashed else 1.8, color=colour,
                    label=label)
        ax.set_title(titles[panel], family=fonts, fontsize=11)
        ax.set_xlabel(xlabels[panel], family=fonts)
        ax.set_xlim(0.0, 1.0)
        ax.grid(alpha=0.3)
    # both panels share one scale from 0 to the highest point of either (set once, after every line)
    top = max((float(np.max(np.asarray(c, dtype=float))) for _, d, i, _ in curves for c in (d, i) if len(c)),
              default=1.0)
    axes[0].set_ylim(0.0, top * 1.05 if top > 0 else 1.0)
    axes[0].set_ylabel(ylabel, family=fonts)
    axes[1].legend(prop={"family": fonts, "size": 8}, loc="best")
    fig.tight_layout()
    return fig


def map_strips_figure(rows: Sequence[tuple[str, Sequence[torch.Tensor | np.ndarray]]], columns: Sequence[str],
                      cmap: str = "jet", tile: int = 96) -> Figure:
    """Maps in rows, e.g. one method's map before and after each step of a sanity check: each map
    scaled to its own range, resized to ``tile`` pixels high (the first map's aspect) and coloured,
    one row composed into one image (one Axes per row, not per map), ``columns`` as the titles over
    the first row and each row's label at its left."""
    if not rows or any(len(maps) != len(columns) for _, maps in rows):
        raise ValueError(f"Each row needs one map per column ({len(columns)}).")
    fonts = list(text_fonts())
    colormap = get_colormap(cmap)
    gap = 4
    h0, w0 = (int(s) for s in rows[0][1][0].shape[-2:])
    high, wide = tile, max(1, round(tile * w0 / h0))  # the maps' own shape, ``tile`` pixels high
    width = len(columns) * (wide + gap) - gap
    fig = Figure(figsize=(1.8 + width / 100, 0.6 + len(rows) * (high + 14) / 100))
    axes = np.atleast_1d(fig.subplots(len(rows), 1, squeeze=False)[:, 0])
    for ax, (label, maps) in zip(axes, rows, strict=True):
        strip = np.full((high, width, 3), 255, dtype=np.uint8)
        for j, m in enumerate(maps):
            arr = m.detach().float().cpu() if isinstance(m, torch.Tensor) else torch.as_tensor(np.asarray(m)).float()
            small = torch.nn.functional.interpolate(arr[None, None], size=(high, wide), mode="bilinear",
                                                    align_corners=False)[0, 0].numpy()
            strip[:, j * (wide + gap):j * (wide + gap) + wide] = colormap(_unit(small), bytes=True)[..., :3]
        ax.imshow(strip, interpolation="nearest")
        ax.set_xticks([])
        ax.set_yticks([])
        for side in ax.spines.values():
            side.set_visible(False)
        ax.set_ylabel(label, family=fonts, fontsize=10, rotation=0, ha="right", va="center")
    for j, title in enumerate(columns):
        axes[0].text(j * (wide + gap) + wide / 2, -4, title, ha="center", va="bottom", family=fonts, fontsize=9)
    fig.tight_layout()
    return fig
