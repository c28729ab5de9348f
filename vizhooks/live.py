"""The live camera: each frame through the model up to one layer, shown with that layer's maps.

Built for a stream (the page's WebRTC worker thread calls :meth:`LiveProcessor.process` with the
newest camera frame; frames that came while it was busy are skipped by the stream itself):

- the pass stops at the chosen layer (a forward hook keeps the output and raises), so a layer
  in the middle of the network costs a part of a whole pass;
- the model is shared with every other session under its lock, taken without waiting: a frame
  that arrives while another session holds the model is dropped and the last picture is sent
  again, so latency stays bounded however busy the server is;
- the settings are one frozen object swapped as a whole, so the page thread can change them
  while a frame is in flight and every frame sees one consistent set;
- frames are resized with OpenCV and coloured through a 256-entry table (the grids' own
  colours, see :func:`vizhooks.render.figures.colormap_lut`); the output is at most 640 x 480 pixels so
  the video encoder keeps up.
"""

from __future__ import annotations

import functools
import numbers
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np
import torch
from torch import nn

from vizhooks._hooks import HELD, check_ran, first_tensor, hooked, keep, lock_if_free
from vizhooks.errors import CodedError
from vizhooks.models.images import MAX_SIZE, MIN_SIZE, fit_geometry
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import maps_of
from vizhooks.models.registry import ModelBundle
from vizhooks.render.figures import WHITE_LEVEL, channel_levels, colormap_lut, get_colormap, grid_shape

__all__ = ["CHANNEL_PICKS", "MODES", "LiveFrame", "LiveProcessor", "LiveSettings", "LiveStats", "compose",
           "grid_geometry", "limit_torch_threads_here"]

MODES = ("grid", "overlay")
#: "first": channels 0-15; "top": the 16 with the largest mean, averaged over recent frames.
CHANNEL_PICKS = ("first", "top")
GRID_CHANNELS = 16
#: The composed picture's bounds: larger frames cost the browser's video encoder more than they show.
MAX_WIDTH, MAX_HEIGHT = 640, 480
_GAP = 2  # pixels between the picture and the tiles, and between tiles
#: Weight of the newest frame in the running channel means behind "top" (steadier tiles than
#: ranking each frame alone).
_TOP_SMOOTHING = 0.3


@dataclass(frozen=True)
class LiveSettings:
    """What the live view shows; frozen, so a new choice is a new object (swap it whole).

    Attributes:
        layer: one module name, e.g. ``"layer2.0.conv1"``.
        channels: ``"first"`` (channels 0-15), ``"top"`` (the 16 with the largest mean over recent
            frames) or up to 16 channel indices.
        mode: ``"grid"`` (the picture beside a grid of the channels) or ``"overlay"`` (one channel
            as a heat map over the picture).
        channel: the overlay's channel.
        cmap: a matplotlib colormap name.
        size: shorter side of the model's input in pixels (the model's own rules apply).
        opacity: the overlay's heat map opacity, 0 (picture only) to 1 (map only).
        classify: also run the rest of the network and keep the frame's top class (see
            :meth:`LiveProcessor.stats`): a whole pass instead of a part, for a model whose classes
            the person chose (a taught model).

    Raises:
        ValueError: any field out of range, with the allowed values.
    """

    layer: str
    channels: str | tuple[int, ...] = "first"
    mode: str = "grid"
    channel: int = 0
    cmap: str = "viridis"
    size: int = 160
    opacity: float = 0.5
    classify: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.layer, str) or not self.layer:
            raise ValueError(f"layer must be one module name such as 'layer2.0.conv1', not {self.layer!r}.")
        if isinstance(self.channels, str):
            if self.channels not in CHANNEL_PICKS:
                raise ValueError(f"channels must be 'first', 'top' or a list of channel indices, "
                                 f"not {self.channels!r}.")
        else:
            picked: tuple[Any, ...] | None = tuple(self.channels) if isinstance(self.channels, Sequence) else None
            if (not picked or len(picked) > GRID_CHANNELS
                    or any(isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0 for c in picked)):
                raise ValueError(f"channels must be 'first', 'top' or 1 to {GRID_CHANNELS} channel indices "
                                 f"(whole numbers from 0), not {self.channels!r}.")
            object.__setattr__(self, "channels", tuple(int(c) for c in picked))
        if self.mode not in MODES:
            raise ValueError(f"mode must be 'grid' or 'overlay', not {self.mode!r}.")
        if isinstance(self.channel, bool) or not isinstance(self.channel, (int, np.integer)) or self.channel < 0:
            raise ValueError(f"channel must be a whole number from 0, not {self.channel!r}.")
        get_colormap(self.cmap)  # an unknown name raises ValueError with suggestions
        if isinstance(self.size, bool) or not isinstance(self.size, int) or not MIN_SIZE <= self.size <= MAX_SIZE:
            raise ValueError(f"size must be a whole number of pixels from {MIN_SIZE} to {MAX_SIZE}, not {self.size!r}.")
        if isinstance(self.opacity, bool) or not isinstance(self.opacity, numbers.Real) or not 0 <= self.opacity <= 1:
            raise ValueError(f"opacity must be a number from 0 to 1, not {self.opacity!r}.")
        if not isinstance(self.classify, bool):
            raise ValueError(f"classify must be True or False, not {self.classify!r}.")


@dataclass(frozen=True)
class LiveStats:
    """How the stream is going, measured by the processor.

    Attributes:
        fps: frames processed per second over the last ``window_s`` seconds (0 when none).
        latency_ms: mean time from a frame's arrival in :meth:`LiveProcessor.process` to its
            composed picture, over the same window.
        last_latency_ms: the same for the newest frame.
        processed: frames run through the model since the processor was made.
        dropped: frames dropped because another session held the model.
        skipped: frames the stream skipped while this processor was still busy (reported by the
            caller through :meth:`LiveProcessor.note_skipped`).
        running: a frame was processed since the stream (re)started and it has not ended.
        top: (class index, probability) of the newest frame when its settings asked to classify,
            else None.
    """

    fps: float
    latency_ms: float
    last_latency_ms: float
    processed: int
    dropped: int
    skipped: int
    running: bool
    top: tuple[int, float] | None = None


@dataclass(frozen=True)
class LiveFrame:
    """What the newest processed frame gave, before rendering: the model input ``x`` (CPU), the
    layer, the shown ``channels`` and their ``maps`` ((len(channels), h, w) float32 on the CPU)."""

    x: torch.Tensor
    layer: str
    channels: tuple[int, ...]
    maps: np.ndarray


@dataclass(frozen=True)
class GridGeometry:
    """Where :func:`compose` puts things in grid mode (all in output pixels).

    ``picture``: (top, left, height, width) of the camera picture; ``tiles``: (top, left) of
    each tile, in channel order; ``tile``: (height, width) of every tile; ``size``: (height,
    width) of the whole output.
    """

    picture: tuple[int, int, int, int]
    tiles: tuple[tuple[int, int], ...]
    tile: tuple[int, int]
    size: tuple[int, int]


def _even(n: float) -> int:
    return max(2, int(n) // 2 * 2)


def grid_geometry(picture_hw: tuple[int, int], map_hw: tuple[int, int], n: int) -> GridGeometry:
    """Layout of grid mode: the picture on the left, ``n`` tiles of a ``map_hw`` map in a
    near-square grid on the right, both as tall as each other, at most 640 x 480 pixels."""
    ph, pw = picture_hw
    mh, mw = map_hw
    rows, cols = grid_shape(n)
    pic_aspect, tile_aspect = pw / ph, mw / mh
    # width(height) = height * pic_aspect + gap + cols * tile_aspect * tile_h + (cols - 1) * gap,
    # with tile_h = (height - (rows - 1) * gap) / rows; solved for the width bound.
    spare = MAX_WIDTH - cols * _GAP + cols * tile_aspect * (rows - 1) * _GAP / rows
    height = min(MAX_HEIGHT, max(ph, 2 * rows), spare / (pic_aspect + cols * tile_aspect / rows))
    tile_h = max(1, int((height - (rows - 1) * _GAP) // rows))
    tile_w = max(1, min(round(tile_h * tile_aspect), (MAX_WIDTH // 2 - (cols - 1) * _GAP) // cols))
    grid_h, grid_w = rows * tile_h + (rows - 1) * _GAP, cols * tile_w + (cols - 1) * _GAP
    pic_h = grid_h
    pic_w = max(1, min(round(pic_h * pic_aspect), MAX_WIDTH - grid_w - _GAP))
    left = pic_w + _GAP
    tiles = tuple(((i // cols) * (tile_h + _GAP), left + (i % cols) * (tile_w + _GAP)) for i in range(n))
    size = (_even(grid_h + 1), _even(left + grid_w + 1))
    return GridGeometry(picture=(0, 0, pic_h, pic_w), tiles=tiles, tile=(tile_h, tile_w), size=size)


def _resize(img: np.ndarray, wh: tuple[int, int], smooth: bool = True) -> np.ndarray:
    import cv2

    if (img.shape[1], img.shape[0]) == wh:
        return img
    shrinking = wh[0] < img.shape[1] or wh[1] < img.shape[0]
    if not smooth:  # tiles: crisp activation cells when enlarged, averaged when shrunk
        return cv2.resize(img, wh, interpolation=cv2.INTER_AREA if shrinking else cv2.INTER_NEAREST)
    factor = int(min(img.shape[1] / wh[0], img.shape[0] / wh[1]))
    if factor >= 2:
        # OpenCV averages whole k x k blocks ten times faster than any other shrink (0.1 ms for a
        # 640 x 480 frame against 2.9 ms for 640 -> 318): drop the last few rows and columns that
        # do not fill a block, average, then finish with a small bilinear step.
        h, w = img.shape[0] // factor * factor, img.shape[1] // factor * factor
        img = cv2.resize(img[:h, :w], (w // factor, h // factor), interpolation=cv2.INTER_AREA)
        if (img.shape[1], img.shape[0]) == wh:
            return img
    return cv2.resize(img, wh, interpolation=cv2.INTER_LINEAR)


def _label(out: np.ndarray, text: str, top: int, left: int, limit_w: int, limit_h: int) -> None:
    """A channel number (or a name) in white on a dark box, in the tile's top-left corner."""
    import cv2

    scale = 0.35 if limit_h < 60 else 0.45
    (w, h), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_SIMPLEX, scale, 1)
    box_w, box_h = min(w + 4, limit_w), min(h + base + 3, limit_h)
    out[top: top + box_h, left: left + box_w] = (20, 20, 20)
    cv2.putText(out, text, (left + 2, top + h + 1), cv2.FONT_HERSHEY_SIMPLEX, scale, (255, 255, 255), 1, cv2.LINE_AA)


def compose(picture: np.ndarray, maps: np.ndarray, channels: Sequence[int], settings: LiveSettings) -> np.ndarray:
    """The live view of one frame: ``picture`` (H, W, 3 uint8: what the model saw, at camera
    resolution) with ``maps`` ((len(channels), h, w) of the layer), as :class:`LiveSettings`
    asks. Each map is stretched to its own min..max and coloured with ``settings.cmap``.

    Returns:
        (H', W', 3) uint8, at most 640 x 480, even sides (what a video encoder wants).
    """
    table = _table(settings.cmap)
    levels = channel_levels(maps)
    if settings.mode == "overlay":
        import cv2

        ph, pw = picture.shape[:2]
        scale = min(1.0, MAX_WIDTH / pw, MAX_HEIGHT / ph)
        size = (_even(pw * scale), _even(ph * scale))
        base = _resize(picture, size)
        heat = np.take(table, _resize(levels[0], size), axis=0)
        out = cv2.addWeighted(base, 1.0 - float(settings.opacity), heat, float(settings.opacity), 0.0)
        _label(out, f"{settings.layer} #{channels[0]}", 0, 0, size[0], size[1])
        return out
    geo = grid_geometry(picture.shape[:2], maps.shape[1:], len(channels))
    th, tw = geo.tile
    canvas = np.full(geo.size, WHITE_LEVEL, np.uint8)
    for (top, left), level in zip(geo.tiles, levels, strict=True):
        canvas[top: top + th, left: left + tw] = _resize(level, (tw, th), smooth=False)
    out = np.take(table, canvas, axis=0)  # 4x faster than table[canvas]
    top, left, h, w = geo.picture
    out[top: top + h, left: left + w] = _resize(picture, (w, h))
    for (top, left), ch in zip(geo.tiles, channels, strict=True):
        _label(out, str(ch), top, left, tw, th)
    return out


@functools.lru_cache(maxsize=16)
def _table(cmap: str) -> np.ndarray:
    return colormap_lut(cmap)


def limit_torch_threads_here(threads: int = 1) -> None:
    """Run torch's operators on ``threads`` intra-op threads in the calling thread, for the rest of
    its life; every other thread, and threads started later, keep the process's setting.

    For a stream's worker thread (the page calls it from its frame callback): the video codecs,
    the browser on the same machine and other streams need the other cores, and threads that must
    meet after every layer slow down badly when one of them waits for a core (resnet18 to
    layer2.0.conv1 at 160 px on 2 cores with one core busy: 19 frames/s on 1 thread, 2.4 on 2).

    ``torch.set_num_threads`` sets both this thread's OpenMP threads and the default that threads
    starting later take; a helper thread puts that default back at once.

    Raises:
        ValueError: ``threads`` below 1.
    """
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1:
        raise ValueError(f"threads must be a whole number from 1, not {threads!r}.")
    before = torch.get_num_threads()
    if threads == before:
        return
    torch.set_num_threads(threads)
    helper = threading.Thread(target=torch.set_num_threads, args=(before,), name="vizhooks-threads")
    helper.start()
    helper.join()


def _check_frame(frame: np.ndarray) -> np.ndarray:
    if not isinstance(frame, np.ndarray) or frame.ndim != 3 or frame.shape[2] != 3 or frame.dtype != np.uint8:
        shape = (frame.shape, frame.dtype) if isinstance(frame, np.ndarray) else type(frame).__name__
        raise ValueError(f"A live frame must be an (H, W, 3) uint8 RGB array, not {shape}.")
    if min(frame.shape[:2]) < 2:
        raise ValueError(f"A live frame needs at least 2 x 2 pixels, not {frame.shape[1]} x {frame.shape[0]}.")
    return frame


class LiveProcessor:
    """Runs camera frames through ``bundle``'s model up to one layer and composes the picture
    with that layer's maps (see :class:`LiveSettings`). One per stream; safe to call
    :meth:`process` from one worker thread while other threads set :attr:`settings` and read
    :meth:`stats`.

    A stream's worker thread should run its passes on one torch thread: see
    :func:`limit_torch_threads_here`.

    Example:
        >>> bundle = load_model("resnet18", weights="none")
        >>> live = LiveProcessor(bundle, LiveSettings(layer="layer2.0.conv1"))
        >>> out = live.process(np.zeros((480, 640, 3), np.uint8))
        >>> out.shape, live.stats().processed
        ((238, 638, 3), 1)
    """

    def __init__(self, bundle: ModelBundle, settings: LiveSettings, *, window_s: float = 2.0):
        if not isinstance(settings, LiveSettings):
            raise TypeError(f"settings must be a LiveSettings, not {type(settings).__name__}.")
        self.bundle = bundle
        self._settings = settings
        self._window = float(window_s)
        self._guard = threading.Lock()  # counters, the window and the last output
        self._times: deque[tuple[float, float]] = deque()  # (finished, latency) of recent frames
        self._processed = self._dropped = self._skipped = 0
        self._last_latency = 0.0
        self._running = False
        self._last_out: np.ndarray | None = None
        self._top: tuple[int, float] | None = None
        self._modules: dict[str, nn.Module] = {}
        self._means: tuple[tuple[str, int], np.ndarray] | None = None  # running channel means for "top"
        #: the newest processed frame before rendering (for tests and callers that want numbers)
        self.last: LiveFrame | None = None

    # -- settings ---------------------------------------------------------------------------

    @property
    def settings(self) -> LiveSettings:
        return self._settings

    @settings.setter
    def settings(self, settings: LiveSettings) -> None:
        """Takes effect from the next frame; one attribute store, so a frame in flight keeps the
        object it started with."""
        if not isinstance(settings, LiveSettings):
            raise TypeError(f"settings must be a LiveSettings, not {type(settings).__name__}.")
        self._settings = settings

    # -- frames -----------------------------------------------------------------------------

    def preprocess(self, frame: np.ndarray, size: int | None = None) -> tuple[torch.Tensor, np.ndarray]:
        """The model's input for an RGB frame, made by :meth:`ModelBundle.preprocess` itself (its
        size rules, interpolation, mean and std; about 3 ms for 640 x 480 at 160 px), and the
        part of the frame the model sees, at camera resolution, for the picture: the whole frame
        (squashed to a square by a Hugging Face ViT), or the centre crop that fixed-size models
        (ViT, Swin; ConvNeXt's crop_pct a little inside it) are cut to.

        Returns:
            ``(x, seen)``: x is (1, 3, h, w) float32 on the CPU; seen is a view of ``frame``.
        """
        from PIL import Image

        frame = _check_frame(frame)
        x = self.bundle.preprocess(Image.fromarray(frame), self._settings.size if size is None else size)
        seen = frame
        spec = self.bundle.input
        if spec.fixed_size and not spec.squash:  # a squashed frame is seen whole
            height, width = frame.shape[:2]
            new_w, new_h, left, top = fit_geometry(width, height, spec)
            side = int(spec.fixed_size)
            # the crop, in the frame's own pixels
            seen = frame[round(top * height / new_h): round((top + side) * height / new_h),
                         round(left * width / new_w): round((left + side) * width / new_w)]
        return x, seen

    def process(self, frame_rgb: np.ndarray) -> np.ndarray:
        """One camera frame in, the composed picture out (see :func:`compose`).

        Never waits for the model: when another session holds it, the frame is dropped
        (counted in :meth:`stats`) and the last composed picture is returned at once (the frame
        itself before the first).

        Raises:
            ValueError: not an (H, W, 3) uint8 frame; a layer that does not run in the model's
                forward pass; a channel out of range for the layer.
            UnknownLayerError (a KeyError): a layer name the model lacks, with close matches.
        """
        start = time.perf_counter()
        frame = _check_frame(frame_rgb)
        settings = self._settings  # one read: this frame sees one consistent set
        # the lock alone, taken without waiting (hooked would wait); the passes below hook under it
        with lock_if_free(self.bundle.model) as taken:
            if not taken:
                with self._guard:
                    self._dropped += 1
                    last = self._last_out
                return last if last is not None else frame
            # Preprocessing needs no lock, but done first it would be paid for every dropped frame
            # too: with many streams most frames are dropped.
            x, seen = self.preprocess(frame, settings.size)
            if settings.classify:
                out, top = self._run_whole(x, settings.layer)
            else:
                out, top = self._run_to_layer(x, settings.layer), None
        # the layer's output is ours alone now: choosing, copying and drawing need no lock
        channels = self._pick(out, settings)
        maps = out[0, list(channels)].float().cpu().numpy()
        picture = compose(seen, maps, channels, settings)
        done = time.perf_counter()
        with self._guard:
            self._processed += 1
            self._running = True
            self._last_latency = done - start
            self._times.append((done, done - start))
            self._trim(done)
            self._last_out = picture
            self._top = top
        self.last = LiveFrame(x=x, layer=settings.layer, channels=channels, maps=maps)
        return picture

    def _module(self, layer: str) -> nn.Module:
        module = self._modules.get(layer)
        if module is None:
            model = self.bundle.model
            names = resolve_layers(model, [layer])  # an unknown name raises, with close matches
            if names != [layer]:  # "all" / "blocks" expand to many layers
                raise ValueError(f"The live view shows one layer such as 'layer2.0.conv1', not {layer!r}.")
            module = self._modules[layer] = dict(model.named_modules())[layer]
        return module

    def _run_to_layer(self, x: torch.Tensor, layer: str) -> torch.Tensor:
        """(1, C, h, w) output of ``layer`` for input ``x``, on the model's device; nothing after
        the layer runs. Call with the model's lock held."""
        model = self.bundle.model
        self._module(layer)  # checks the name
        dtype = self._input_dtype()
        with hooked(model, lock=HELD, stop_after=[layer]) as hooks, torch.inference_mode():
            seen = hooks.run(lambda: model(x.to(self.bundle.device, dtype, non_blocking=True)))
        check_ran([layer], seen)
        return maps_of(model, {layer: seen[layer]}, (int(x.shape[-2]), int(x.shape[-1])))[layer]

    def _input_dtype(self) -> torch.dtype:
        """The dtype the model's parameters use (float32 for a model without floating parameters)."""
        param = next(self.bundle.model.parameters(), None)
        return param.dtype if param is not None and param.dtype.is_floating_point else torch.float32

    def _run_whole(self, x: torch.Tensor, layer: str) -> tuple[torch.Tensor, tuple[int, float]]:
        """``layer``'s (1, C, h, w) output and the (class, probability) of the top class, from one
        whole pass. Call with the model's lock held."""
        model = self.bundle.model
        module = self._module(layer)
        found: dict[str, torch.Tensor] = {}

        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            found.setdefault(layer, keep(first_tensor(output)))  # a copy: later in-place ops rewrite it

        dtype = self._input_dtype()
        with hooked(model, lock=HELD) as hooks, torch.inference_mode():
            hooks.forward_hook(module, hook)
            logits = first_tensor(model(x.to(self.bundle.device, dtype, non_blocking=True)))
        check_ran([layer], found)
        probs = logits[0].float().softmax(0)
        best = int(probs.argmax())
        maps = maps_of(model, found, (int(x.shape[-2]), int(x.shape[-1])))[layer]
        return maps, (best, float(probs[best]))

    def _pick(self, out: torch.Tensor, settings: LiveSettings) -> tuple[int, ...]:
        count = int(out.shape[1])
        if settings.mode == "overlay":
            wanted: tuple[int, ...] = (settings.channel,)
        elif settings.channels == "first":
            wanted = tuple(range(min(GRID_CHANNELS, count)))
        elif settings.channels == "top":
            means = out[0].float().mean(dim=(1, 2)).cpu().numpy()
            key = (settings.layer, count)
            if self._means is not None and self._means[0] == key:
                means = _TOP_SMOOTHING * means + (1 - _TOP_SMOOTHING) * self._means[1]
            self._means = (key, means)
            wanted = tuple(int(c) for c in np.argsort(-means, kind="stable")[:GRID_CHANNELS])
        else:
            wanted = cast(tuple[int, ...], settings.channels)  # __post_init__ left a tuple of ints
        bad = [c for c in wanted if c >= count]
        if bad:
            raise CodedError(f"Channel {bad[0]} is out of range for layer {settings.layer!r}, which has {count} "
                             f"channels (0 to {count - 1}).", "channel_range", channel=bad[0], layer=settings.layer,
                             count=count, last=count - 1)
        return wanted

    # -- the stream -------------------------------------------------------------------------

    def note_skipped(self, frames: int) -> None:
        """Count ``frames`` the stream skipped because this processor was still busy."""
        with self._guard:
            self._skipped += int(frames)

    def stream_ended(self) -> None:
        """The stream stopped (the person pressed Stop, closed the page, or the connection
        dropped): :meth:`stats` says not running and forgets the frame rate window."""
        with self._guard:
            self._running = False
            self._times.clear()

    def _trim(self, now: float) -> None:
        while self._times and self._times[0][0] < now - self._window:
            self._times.popleft()

    def stats(self) -> LiveStats:
        """Frame rate and latency over the last ``window_s`` seconds, and the counters."""
        with self._guard:
            self._trim(time.perf_counter())
            times = list(self._times)
            fps = 0.0
            if len(times) >= 2 and times[-1][0] > times[0][0]:
                fps = (len(times) - 1) / (times[-1][0] - times[0][0])
            mean = sum(lat for _, lat in times) / len(times) if times else 0.0
            return LiveStats(fps=fps, latency_ms=mean * 1000, last_latency_ms=self._last_latency * 1000,
                             processed=self._processed, dropped=self._dropped, skipped=self._skipped,
                             running=self._running, top=self._top)
