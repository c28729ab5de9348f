"""Reading clips with OpenCV, frames in batches, and a layer's grid over time as a video.

:func:`read_clip` decodes a clip (MP4, WebM, AVI, MOV, GIF) with ``cv2.VideoCapture`` into evenly
spaced RGB frames, or raises :class:`InvalidVideoError` with one sentence a student understands.
:func:`capture_frames` runs those frames through a model in batches with forward hooks, and
:func:`layer_video` draws one layer's captured maps as an animated grid.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import BinaryIO

# FFmpeg writes its own complaints ("moov atom not found", ...) straight to stderr while OpenCV
# probes a bad file; InvalidVideoError says the same for a person. OpenCV reads this variable when
# it first uses FFmpeg, so it is set here, before cv2 is imported, and only when nobody chose a
# level (-8 is FFmpeg's AV_LOG_QUIET); export it yourself to see FFmpeg's messages. OpenCV itself is
# imported inside the functions that read or write a clip: `import vizhooks` must not load it.
os.environ.setdefault("OPENCV_FFMPEG_LOGLEVEL", "-8")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from PIL import Image, ImageSequence  # noqa: E402
from torch import nn  # noqa: E402

from vizhooks.errors import CodedError  # noqa: E402
from vizhooks.hooks.capture import capture_with_output  # noqa: E402
from vizhooks.i18n import OSReason  # noqa: E402
from vizhooks.models.images import MAX_PIXELS, MAX_SIZE, MIN_SIZE, preprocess, resize_for_model  # noqa: E402
from vizhooks.models.registry import ModelBundle  # noqa: E402
from vizhooks.render.figures import ORDERS, colormap_lut, grid_layout, retile  # noqa: E402

__all__ = ["DEFAULT_MAX_FRAMES", "MAX_VIDEO_MB", "MAX_VIDEO_SECONDS", "VIDEO_TYPES", "Clip", "InvalidVideoError",
           "capture_frames", "capture_frames_with_output", "encode_pages", "frames_npz_bytes", "layer_video",
           "read_clip", "read_frames"]

#: Larger uploads are refused before anything is written or decoded (1 MB = 2**20 bytes, as in
#: Streamlit's upload limit).
MAX_VIDEO_MB = 100
#: Longer clips are refused from the header's frame count and rate, before decoding.
MAX_VIDEO_SECONDS = 120
#: Frames kept from a clip unless asked otherwise, spread evenly over its whole length.
DEFAULT_MAX_FRAMES = 48
#: File types the page's uploader accepts and the command line treats as clips.
VIDEO_TYPES = ("mp4", "webm", "avi", "mov", "gif")

TIMES_KEY = "__times__"

_TEMP_PREFIX = "vizhooks-video-"
_HEAD = 4096
#: What FFmpeg assumes when a file states no frame rate.
_FALLBACK_FPS = 25.0
_NAMES = {"mp4": "MP4", "mov": "MOV", "webm": "WebM", "avi": "AVI", "gif": "GIF"}
_TRY = "use an MP4, WebM, AVI, MOV or GIF clip"


class InvalidVideoError(CodedError):
    """The input is not a clip vizhooks can use; the message says why and what to do, in one sentence
    (and ``code``, ``values`` say it for a page in another language)."""


VideoSource = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
Progress = Callable[[int, int], object]


@dataclass(frozen=True)
class Clip:
    """The frames kept from a clip, and what its header says.

    Attributes:
        frames: RGB pictures, in order (resized when ``size`` was given).
        times: seconds from the start of the clip of each kept frame.
        fps: frames per second of the file.
        frame_count: frames in the file (all of them, not only the kept ones).
        duration: seconds, ``frame_count / fps``.
        width, height: the frame size stored in the file, before any resizing.
    """

    frames: list[Image.Image]
    times: list[float]
    fps: float
    frame_count: int
    duration: float
    width: int
    height: int


# ----------------------------------------------------------------------------------------------
# checks and messages


def _check_read_args(max_frames: int, size: int | None) -> None:
    if isinstance(max_frames, bool) or not isinstance(max_frames, (int, np.integer)) or max_frames < 1:
        raise ValueError(f"max_frames must be a whole number of at least 1, not {max_frames!r}.")
    if size is not None and (isinstance(size, bool) or not isinstance(size, (int, np.integer))
                             or not MIN_SIZE <= size <= MAX_SIZE):
        raise ValueError(f"size must be None or a whole number of pixels from {MIN_SIZE} to {MAX_SIZE}, "
                         f"not {size!r}.")


def _limit_bytes() -> int:
    return int(MAX_VIDEO_MB * 2**20)


def _check_bytes(nbytes: int | None) -> None:
    """``nbytes`` None: more than the limit was there to read, exact size unknown."""
    if nbytes == 0:
        raise InvalidVideoError(code="video_empty")
    limit = _limit_bytes()
    if nbytes is None or nbytes > limit:
        size = "" if nbytes is None else f"{nbytes / 2**20:.1f} MB, "
        raise InvalidVideoError(f"This video is {size}over the limit of {MAX_VIDEO_MB} MB; trim it or save it "
                                "at a lower resolution first.", "video_too_big", limit=MAX_VIDEO_MB)


def _check_length(seconds: float) -> None:
    if seconds > MAX_VIDEO_SECONDS:
        raise InvalidVideoError(f"This clip is {seconds:.1f} seconds long and the limit is {MAX_VIDEO_SECONDS} "
                                "seconds; trim it to a shorter part first.", "video_too_long",
                                seconds=round(seconds, 1), limit=MAX_VIDEO_SECONDS)


def _container(head: bytes) -> str | None:
    """The container a file's first bytes announce ("mp4", "mov", "webm", "avi", "gif"), or None."""
    if head[4:8] == b"ftyp":
        return "mov" if head[8:12] == b"qt  " else "mp4"
    if head[4:8] in (b"moov", b"mdat", b"wide", b"free", b"skip"):  # QuickTime files without ftyp
        return "mov"
    if head[:4] == b"\x1a\x45\xdf\xa3":  # EBML: WebM and Matroska, one FFmpeg demuxer
        return "webm"
    if head[:4] == b"RIFF" and head[8:12] == b"AVI ":
        return "avi"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    return None


def _still_image(head: bytes) -> str | None:
    if head[:3] == b"\xff\xd8\xff":
        return "JPEG"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "PNG"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "WebP"
    if head[:4] in (b"II*\x00", b"MM\x00*"):
        return "TIFF"
    if head[:2] == b"BM":
        return "BMP"
    return None


def _looks_like_text(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):  # byte order marks
        return True
    if b"\x00" in head:
        return False
    for cut in range(4):  # the sample may end inside a multi-byte character
        try:
            head[: len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def _kind(head: bytes) -> str | None:
    """The sniffed container; text and still pictures are refused here, before OpenCV sees them
    (FFmpeg opens a JPEG as a one-frame "video")."""
    kind = _container(head)
    if kind is None:
        still = _still_image(head)
        if still:
            raise InvalidVideoError(f"This is a still picture ({still}), not a video; open it as a photo "
                                    f"instead, or {_TRY}.", "video_still", kind=still)
        if _looks_like_text(head):
            raise InvalidVideoError(code="video_text")
    return kind


def _damaged(kind: str | None) -> InvalidVideoError:
    if kind is None:
        return InvalidVideoError(code="video_unknown")
    return InvalidVideoError(code="video_damaged", kind=_NAMES[kind])


# ----------------------------------------------------------------------------------------------
# the source as a file OpenCV can open


def _read_data(source: BinaryIO) -> bytes:
    limit = _limit_bytes()
    data = source.read(limit + 1)  # never more than the limit (and one byte to know it is more)
    if not isinstance(data, (bytes, bytearray)):
        raise TypeError("read_clip needs a binary file object (opened with 'rb').")
    return bytes(data)


@contextlib.contextmanager
def _local_file(source: VideoSource) -> Iterator[tuple[str, str | None]]:
    """(a path OpenCV can open, the sniffed container) for ``source``. Bytes and file objects are
    written to a temporary file, removed on exit whatever happens; the size is checked first."""
    if isinstance(source, (str, os.PathLike)):
        path = os.fspath(source)
        if os.path.isdir(path):
            raise InvalidVideoError(code="video_folder", path=path)
        try:
            nbytes = os.path.getsize(path)
            _check_bytes(nbytes)
            with open(path, "rb") as fh:
                head = fh.read(_HEAD)
        except FileNotFoundError:
            raise InvalidVideoError(code="no_file", path=path) from None
        except OSError as exc:
            raise InvalidVideoError(code="unreadable", path=path, reason=OSReason.of(exc)) from None
        yield path, _kind(head)
        return
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = memoryview(source).cast("B")  # no copy
        _check_bytes(data.nbytes)
    elif hasattr(source, "read"):
        data = memoryview(_read_data(source))
        _check_bytes(None if data.nbytes > _limit_bytes() else data.nbytes)  # the read stops 1 byte past
    else:
        raise TypeError(f"read_clip takes a path, bytes or a binary file object, not {type(source).__name__}.")
    kind = _kind(bytes(data[:_HEAD]))
    # The suffix lets FFmpeg pick the demuxer by name as well as by content.
    fd, path = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=f".{kind or 'bin'}")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        del data
        yield path, kind
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


_quiet_lock = threading.Lock()
_quiet_depth = 0
_saved_level: int | None = None


@contextlib.contextmanager
def _quiet_opencv() -> Iterator[None]:
    """OpenCV's own log lines ("[ERROR:0@0.1] ... Could not open codec") off while probing and
    encoding; the level in force before is restored when the last caller (of any thread) leaves."""
    import cv2

    global _quiet_depth, _saved_level
    with _quiet_lock:
        if _quiet_depth == 0:
            _saved_level = cv2.utils.logging.getLogLevel()
            cv2.utils.logging.setLogLevel(cv2.utils.logging.LOG_LEVEL_SILENT)
        _quiet_depth += 1
    try:
        yield
    finally:
        with _quiet_lock:
            _quiet_depth -= 1
            if _quiet_depth == 0 and _saved_level is not None:
                cv2.utils.logging.setLogLevel(_saved_level)
                _saved_level = None


# ----------------------------------------------------------------------------------------------
# reading


def _sample(count: int, max_frames: int) -> list[int]:
    """At most ``max_frames`` frame indices spread evenly over ``0 .. count - 1``, first and last
    included. With more frames than asked the step is above 1, so rounding keeps them distinct."""
    if count <= max_frames:
        return list(range(count))
    if max_frames == 1:
        return [0]
    return [int(i) for i in np.floor(np.linspace(0, count - 1, max_frames) + 0.5)]


def _to_picture(bgr: np.ndarray, size: int | None) -> Image.Image:
    import cv2

    if bgr.ndim == 2:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_GRAY2RGB)
    elif bgr.shape[2] == 4:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGRA2RGB)
    else:
        rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
    picture = Image.fromarray(rgb)
    return resize_for_model(picture, int(size)) if size else picture


def _decode(path: str, wanted: list[int], size: int | None,
            progress: Progress | None) -> tuple[list[Image.Image], int]:
    """The frames at ``wanted`` (sorted), read in order: ``grab`` every frame, ``retrieve`` (convert)
    only the kept ones; seeking is frame-accurate on few codecs. Returns (frames, frames grabbed)."""
    import cv2

    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    frames: list[Image.Image] = []
    grabbed = 0
    try:
        keep = iter(wanted)
        target = next(keep, None)
        while target is not None and capture.grab():
            if grabbed == target:
                ok, bgr = capture.retrieve()
                if not ok or bgr is None:
                    break
                frames.append(_to_picture(bgr, size))
                if progress is not None:
                    progress(len(frames), len(wanted))
                target = next(keep, None)
            grabbed += 1
    finally:
        capture.release()
    return frames, grabbed


def _count_frames(path: str, fps: float) -> int:
    """Frames in a file whose header does not say, by grabbing them all (decoding, no conversion);
    stops as soon as the clip is longer than the limit."""
    import cv2

    limit = math.floor(MAX_VIDEO_SECONDS * fps) + 1
    capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    count = 0
    try:
        while count <= limit and capture.grab():
            count += 1
    finally:
        capture.release()
    _check_length(count / fps)
    return count


def _read_gif(path: str, max_frames: int, size: int | None, progress: Progress | None) -> Clip:
    """An animated GIF through Pillow, with each frame's own duration (for builds of OpenCV whose
    FFmpeg cannot read GIFs)."""
    try:
        with Image.open(path) as im:
            width, height = im.size
            if width * height > MAX_PIXELS:
                raise _too_many_pixels(width, height)
            durations = [max(int(frame.info.get("duration") or 100), 10) / 1000 for frame in
                         ImageSequence.Iterator(im)]
            count = len(durations)
            if count == 1:
                raise InvalidVideoError(f"This GIF has one frame, a still picture; open it as a photo instead, "
                                        f"or {_TRY}.", "video_one_frame")
            duration = float(sum(durations))
            _check_length(duration)
            starts = np.concatenate([[0.0], np.cumsum(durations)[:-1]])
            wanted = _sample(count, max_frames)
            frames = []
            for i in wanted:
                im.seek(i)
                picture = im.convert("RGB")
                frames.append(resize_for_model(picture, int(size)) if size else picture)
                if progress is not None:
                    progress(len(frames), len(wanted))
    except InvalidVideoError:
        raise
    except Exception:  # a damaged GIF can raise almost anything inside Pillow
        raise _damaged("gif") from None
    return Clip(frames=frames, times=[float(starts[i]) for i in wanted], fps=count / duration,
                frame_count=count, duration=duration, width=width, height=height)


def _too_many_pixels(width: int, height: int) -> InvalidVideoError:
    return InvalidVideoError(
        f"This video's frames are {width} x {height} pixels ({width * height / 1e6:.0f} megapixels) and the "
        f"limit is {MAX_PIXELS / 1e6:.0f} megapixels; save a smaller copy first.", "video_too_many_pixels",
        width=width, height=height, limit=round(MAX_PIXELS / 1e6))


def _read_opened(path: str, kind: str | None, max_frames: int, size: int | None,
                 progress: Progress | None) -> Clip:
    import cv2

    probe = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
    try:
        if not probe.isOpened():
            if kind == "gif":
                return _read_gif(path, max_frames, size, progress)
            raise _damaged(kind)
        fps = probe.get(cv2.CAP_PROP_FPS)
        claimed = probe.get(cv2.CAP_PROP_FRAME_COUNT)
        width, height = int(probe.get(cv2.CAP_PROP_FRAME_WIDTH)), int(probe.get(cv2.CAP_PROP_FRAME_HEIGHT))
    finally:
        probe.release()
    fps_known = math.isfinite(fps) and 0 < fps <= 1000
    if kind == "gif" and not fps_known:
        return _read_gif(path, max_frames, size, progress)
    fps = fps if fps_known else _FALLBACK_FPS
    if width * height > MAX_PIXELS:
        raise _too_many_pixels(width, height)
    # FFmpeg estimates the count from the duration for some containers and gives -1, 0 or
    # nonsense (-9e18) for others: then the frames are counted.
    if math.isfinite(claimed) and 0 < claimed < 2**31:
        count = int(round(claimed))
        _check_length(count / fps)
    else:
        count = _count_frames(path, fps)
    if count == 0:
        raise _damaged(kind)
    if kind == "gif" and count == 1:
        raise InvalidVideoError(f"This GIF has one frame, a still picture; open it as a photo instead, or {_TRY}.",
                                "video_one_frame")
    wanted = _sample(count, max_frames)
    frames, grabbed = _decode(path, wanted, size, progress)
    if len(frames) < len(wanted):
        if grabbed == 0:
            raise _damaged(kind)
        if count - grabbed > max(2, count // 10):
            raise InvalidVideoError(code="video_truncated", decoded=grabbed, frames=count)
        # The header over-counted by a frame or two (common for WebM): sample the frames there are.
        count = grabbed
        wanted = _sample(count, max_frames)
        frames, grabbed = _decode(path, wanted, size, progress)
        if len(frames) < len(wanted):
            raise _damaged(kind)
    return Clip(frames=frames, times=[i / fps for i in wanted], fps=float(fps), frame_count=count,
                duration=count / fps, width=width, height=height)


def read_clip(
    source: VideoSource,
    *,
    max_frames: int = DEFAULT_MAX_FRAMES,
    size: int | None = None,
    progress: Progress | None = None,
) -> Clip:
    """Decode a clip into at most ``max_frames`` RGB frames, spread evenly over its whole length.

    Frames are read in order with OpenCV's FFmpeg backend (``grab`` each, convert only the kept
    ones). Bytes and file objects go through a temporary file that is removed before returning,
    also on errors. Animated GIFs are read by OpenCV too; if it cannot open one (or finds no frame
    rate) Pillow reads it, with each frame's own duration.

    Args:
        source: a path, bytes or a binary file object of an MP4, WebM, AVI, MOV or GIF clip.
        max_frames: frames to keep; a shorter clip gives all of its frames.
        size: None keeps the decoded size; a number resizes every frame like a photo
            (:func:`vizhooks.models.images.resize_for_model`: shorter side ``size``, aspect ratio kept).
        progress: called as ``progress(done, total)`` after each kept frame.

    Returns:
        A :class:`Clip`: the frames, their times in seconds, and the header's facts.

    Raises:
        InvalidVideoError: no such file, empty, over ``MAX_VIDEO_MB``, not a video (text, a still
            picture, unknown bytes), truncated or damaged, longer than ``MAX_VIDEO_SECONDS`` (from
            the header, before decoding), or frames over ``vizhooks.models.images.MAX_PIXELS``.
        ValueError: ``max_frames`` below 1 or ``size`` outside 32..1024.
        TypeError: ``source`` is not a path, bytes or binary file object.

    Example:
        >>> clip = read_clip("walk.mp4", max_frames=16)
        >>> len(clip.frames), clip.times[:2]
        (16, [0.0, 0.8])
    """
    _check_read_args(max_frames, size)
    with _quiet_opencv(), _local_file(source) as (path, kind):
        return _read_opened(path, kind, int(max_frames), size, progress)


def read_frames(
    source: VideoSource,
    *,
    max_frames: int = DEFAULT_MAX_FRAMES,
    size: int | None = None,
) -> list[Image.Image]:
    """The frames of :func:`read_clip`: at most ``max_frames`` RGB pictures, evenly spaced.

    Raises:
        InvalidVideoError: see :func:`read_clip`.
        ValueError: ``max_frames`` below 1 or ``size`` outside 32..1024.

    Example:
        >>> frames = read_frames(open("walk.mp4", "rb"), max_frames=8, size=224)
        >>> min(frames[0].size)
        224
    """
    return read_clip(source, max_frames=max_frames, size=size).frames


# ----------------------------------------------------------------------------------------------
# capturing


def _preparer(model: ModelBundle | nn.Module, size: int) -> tuple[nn.Module, Callable[[Image.Image], torch.Tensor]]:
    if isinstance(model, ModelBundle):
        return model.model, lambda frame: model.preprocess(frame, size)
    if isinstance(model, nn.Module):
        return model, lambda frame: preprocess(frame, size)
    raise TypeError(f"capture_frames needs a ModelBundle or an nn.Module, not {type(model).__name__}.")


def capture_frames_with_output(
    model: ModelBundle | nn.Module,
    frames: Sequence[Image.Image],
    layers: str | Iterable[str],
    *,
    size: int = 224,
    batch: int = 8,
    what: str = "output",
    progress: Progress | None = None,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Like :func:`capture_frames`, and also each frame's logits, ``(T, classes)`` on the CPU, from
    the same passes (for each frame's top classes).

    Example:
        >>> acts, logits = capture_frames_with_output(bundle, frames, ["layer3.0.conv1"])
        >>> logits.softmax(1).topk(5).indices.shape
        torch.Size([48, 5])
    """
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be a whole number of at least 1, not {batch!r}.")
    frames = list(frames)
    if not frames:
        raise ValueError("frames is empty; read some first, e.g. with read_frames(clip).")
    net, prepare = _preparer(model, size)
    xs = [prepare(frame) for frame in frames]
    groups: dict[tuple[int, ...], list[int]] = {}
    for i, x in enumerate(xs):  # frames of one prepared shape share batches; order is restored below
        groups.setdefault(tuple(x.shape), []).append(i)
    result: dict[str, torch.Tensor] = {}
    filled: dict[str, int] = {}
    logits: dict[str, torch.Tensor] = {}
    done = 0
    for indices in groups.values():
        for start in range(0, len(indices), int(batch)):
            chunk = indices[start: start + int(batch)]
            x = torch.cat([xs[i] for i in chunk])
            if len(chunk) > 1:  # oneDNN / cuDNN convolve a batch faster channels-last (as featurevis does)
                x = x.contiguous(memory_format=torch.channels_last)
            acts, out = capture_with_output(net, x, layers, what=what, as_maps=True)
            rows = torch.tensor(chunk)
            for key, tensor in acts.items():
                _put(result, key, tensor, rows, frames)
                filled[key] = filled.get(key, 0) + len(chunk)
            _put(logits, "logits", out, rows, frames)
            done += len(chunk)
            if progress is not None:
                progress(done, len(frames))
    for key, count in filled.items():
        if count != len(frames):  # a module that ran for frames of one size only
            raise ValueError(_one_size(key, frames))
    return result, logits["logits"]


def _one_size(key: str, frames: list[Image.Image]) -> str:
    sizes = sorted({f"{f.width} x {f.height}" for f in frames})
    return (f"All frames must have one size to stack {key} over time, not {', '.join(sizes)}; read them with "
            "read_frames(clip, size=...) or resize them alike.")


def _put(store: dict[str, torch.Tensor], key: str, tensor: torch.Tensor, rows: torch.Tensor,
         frames: list[Image.Image]) -> None:
    """Copy a batch's ``tensor`` into rows ``rows`` of ``store[key]``, a (T, ...) tensor made on
    first use: the frames' order whatever order the batches ran in."""
    target = store.get(key)
    if target is None:
        target = store[key] = torch.empty((len(frames), *tensor.shape[1:]), dtype=tensor.dtype)
    elif target.shape[1:] != tensor.shape[1:]:
        raise ValueError(_one_size(key, frames))
    target.index_copy_(0, rows, tensor)


def capture_frames(
    model: ModelBundle | nn.Module,
    frames: Sequence[Image.Image],
    layers: str | Iterable[str],
    *,
    size: int = 224,
    batch: int = 8,
    what: str = "output",
    progress: Progress | None = None,
) -> dict[str, torch.Tensor]:
    """Capture ``layers`` for every frame of a clip, ``batch`` frames per forward pass.

    Each frame is prepared exactly like a photo (``bundle.preprocess(frame, size)``; a plain
    module gets :meth:`vizhooks.ModelBundle.preprocess`, ImageNet normalisation), then frames of one prepared
    shape run together through :func:`vizhooks.capture_with_output` (model lock held, hooks
    removed in ``finally``).

    Args:
        model: a :class:`vizhooks.ModelBundle` (preferred: its own preprocessing) or an ``nn.Module``.
        frames: RGB pictures, e.g. from :func:`read_frames`.
        layers: module names, or "all" for every Conv2d.
        size: shorter side of the model input, as for a photo.
        batch: frames per forward pass.
        what: "output" (forward hook) or "input" (forward pre-hook).
        progress: called as ``progress(done, total)`` after each batch.

    Returns:
        ``{name: (T, C, H, W)}`` CPU tensors in frame order, as maps like
        ``capture(..., as_maps=True)``; a module that runs several times per pass adds "name#2", ...

    Raises:
        ValueError: no frames, ``batch`` below 1, bad ``what`` or ``size``, or frames whose maps
            differ in size (frames of several sizes).
        UnknownLayerError (a KeyError): a name the model lacks.

    Example:
        >>> frames = read_frames("walk.mp4", max_frames=16)
        >>> capture_frames(bundle, frames, ["layer1.0.conv1"])["layer1.0.conv1"].shape
        torch.Size([16, 64, 56, 75])
    """
    return capture_frames_with_output(model, frames, layers, size=size, batch=batch, what=what,
                                      progress=progress)[0]


# ----------------------------------------------------------------------------------------------
# writing


def _as_tchw(acts: torch.Tensor | np.ndarray) -> np.ndarray:
    if isinstance(acts, torch.Tensor):
        arr = acts.detach().float().cpu().numpy()
    else:
        arr = np.asarray(acts, dtype=np.float32)
    if arr.ndim != 4 or arr.shape[0] < 1:
        raise ValueError(f"layer_video needs one layer's maps over time, (T, C, H, W) with T >= 1, not an array "
                         f"of shape {arr.shape}.")
    return np.nan_to_num(arr.astype(np.float32, copy=False), nan=0.0, posinf=0.0, neginf=0.0)


def _encode_pyav(pages: list[np.ndarray], lut: np.ndarray, fps: float) -> bytes | None:
    """H.264 in MP4 through PyAV's FFmpeg, which has libx264 (OpenCV's wheel has no H.264 encoder,
    and its VP9 runs at libvpx's slowest setting: 20-30 s for one 48-frame grid on 2 cores)."""
    try:
        import av

        av.codec.Codec("libx264", "w")
    except Exception:  # PyAV missing, or built without libx264
        return None
    height, width = pages[0].shape
    buf = io.BytesIO()
    try:
        with av.open(buf, "w", format="mp4") as out:
            stream = out.add_stream("libx264", rate=Fraction(fps).limit_denominator(1001),
                                    options={"preset": "veryfast", "crf": "20"})
            stream.width, stream.height, stream.pix_fmt = width + width % 2, height + height % 2, "yuv420p"
            for page in pages:
                frame = av.VideoFrame.from_ndarray(_even(lut[page]), format="rgb24")
                out.mux(stream.encode(frame))
            out.mux(stream.encode())
    except av.error.FFmpegError:  # the encoder refused: the next encoder is tried
        return None
    return buf.getvalue()


def _even(rgb: np.ndarray) -> np.ndarray:
    """Pad with white to an even width and height: 4:2:0 video needs them."""
    h, w = rgb.shape[:2]
    if h % 2 == 0 and w % 2 == 0:
        return rgb
    return np.pad(rgb, ((0, h % 2), (0, w % 2), (0, 0)), constant_values=255)


def _encode_opencv(pages: list[np.ndarray], lut: np.ndarray, fps: float, fourcc: str) -> bytes | None:
    """MP4 through ``cv2.VideoWriter`` and a temporary file (removed in ``finally``); None when
    OpenCV's FFmpeg has no encoder for ``fourcc``."""
    import cv2

    height, width = pages[0].shape
    bgr_lut = np.ascontiguousarray(lut[:, ::-1])
    fd, path = tempfile.mkstemp(prefix=_TEMP_PREFIX, suffix=".mp4")
    os.close(fd)
    writer = None
    try:
        writer = cv2.VideoWriter(path, cv2.CAP_FFMPEG, cv2.VideoWriter_fourcc(*fourcc),  # type: ignore[attr-defined]  # in cv2, not in its stub
                                 float(fps),
                                 (width + width % 2, height + height % 2))
        if not writer.isOpened():
            return None
        for page in pages:
            writer.write(_even(bgr_lut[page]))
        writer.release()
        writer = None
        with open(path, "rb") as fh:
            data = fh.read()
        return data or None
    finally:
        if writer is not None:
            writer.release()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def _encode_gif(pages: list[np.ndarray], lut: np.ndarray, fps: float) -> bytes:
    palette = lut.tobytes()
    images = []
    for page in pages:
        im = Image.fromarray(page).convert("P")  # "L" -> "P" keeps the values as palette indices
        im.putpalette(palette)
        images.append(im)
    buf = io.BytesIO()
    images[0].save(buf, format="GIF", save_all=True, append_images=images[1:], loop=0,
                   duration=max(20, round(1000 / fps)), optimize=False)
    return buf.getvalue()


def _encode_mp4(pages: list[np.ndarray], lut: np.ndarray, fps: float) -> bytes | None:
    data = _encode_pyav(pages, lut, fps)
    if data:
        return data
    with _quiet_opencv():
        for fourcc in ("avc1", "vp09"):
            data = _encode_opencv(pages, lut, fps, fourcc)
            if data:
                return data
    return None


def _encode(pages: list[np.ndarray], lut: np.ndarray, fps: float) -> tuple[bytes, str, str]:
    data = _encode_mp4(pages, lut, fps)
    if data:
        return data, "video/mp4", "mp4"
    return _encode_gif(pages, lut, fps), "image/gif", "gif"


def encode_pages(pages: Sequence[np.ndarray] | np.ndarray, lut: np.ndarray, *, fps: float = 8.0,
                 kind: str = "mp4") -> bytes | None:
    """Pictures drawn as colour levels, an animated GIF or an MP4, with the encoders of :func:`layer_video`.

    Args:
        pages: frames of one size, each (H, W) uint8 levels (or one (T, H, W) array); the colour of
            level ``i`` is ``lut[i]``.
        lut: (256, 3) uint8 RGB, the palette of every frame (e.g. :func:`vizhooks.render.figures.colormap_lut`).
        fps: frames per second.
        kind: "gif" (Pillow, always there) or "mp4" (H.264 through PyAV, else OpenCV's 'avc1' or 'vp09').

    Returns:
        The file's bytes; ``None`` for "mp4" when no MP4 encoder is installed.

    Raises:
        ValueError: no pages, pages of several sizes or not uint8 (H, W), a bad ``lut``, ``fps`` or ``kind``.

    Example:
        >>> gif = encode_pages(slide.pages, slide.palette, fps=10, kind="gif")
    """
    if kind not in ("gif", "mp4"):
        raise ValueError(f"kind must be 'gif' or 'mp4', not {kind!r}.")
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps <= 120:
        raise ValueError(f"fps must be a number above 0 and at most 120, not {fps!r}.")
    frames = [np.asarray(page) for page in pages]
    if not frames or any(f.dtype != np.uint8 or f.ndim != 2 or f.shape != frames[0].shape for f in frames):
        raise ValueError("pages must be one or more uint8 (H, W) arrays of one size, the colour levels of each frame.")
    palette = np.ascontiguousarray(lut, dtype=np.uint8)
    if palette.shape != (256, 3):
        raise ValueError(f"lut must be (256, 3) RGB colours, one per level, not an array of shape {palette.shape}.")
    if kind == "gif":
        return _encode_gif(frames, palette, float(fps))
    return _encode_mp4(frames, palette, float(fps))


def layer_video(
    acts: torch.Tensor | np.ndarray,
    *,
    fps: float = 8.0,
    channels: int | None = 16,
    order: str = "index",
    cmap: str = "viridis",
    columns: int | None = None,
    title: str | None = None,
) -> tuple[bytes, str, str]:
    """One layer over time as an animated grid: frame ``t`` is the grid of the clip's frame ``t``.

    Drawn with the fast grid renderer (:func:`vizhooks.render.figures.grid_layout`). Each channel is
    scaled by its minimum and maximum over the whole clip, not per frame, so a colour means the
    same value in every frame (no flicker); the channels shown and their order are chosen once,
    from the whole clip ("mean": mean over time and space, "max": the clip's peak).

    Encoders, first that works: H.264 in MP4 through PyAV (libx264, plays everywhere), then
    ``cv2.VideoWriter`` with 'avc1' (H.264; PyPI's OpenCV lacks the encoder) and 'vp09' (VP9 in
    MP4: Chrome, Firefox, Edge; slow), else an animated GIF through Pillow.

    Args:
        acts: ``(T, C, H, W)`` maps of one layer, e.g. ``capture_frames(...)[name]``.
        fps: frames per second of the result.
        channels, order, cmap, columns, title: as for :func:`vizhooks.feature_grid`.

    Returns:
        ``(data, mime, extension)``: ``(bytes, "video/mp4", "mp4")``, or ``"image/gif", "gif"``.

    Raises:
        ValueError: ``acts`` not (T, C, H, W), bad ``fps``, order, channel count or colormap.

    Example:
        >>> data, mime, ext = layer_video(acts["layer1.0.conv1"], fps=8, order="mean")
        >>> Path(f"layer1.0.conv1.{ext}").write_bytes(data)
    """
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps <= 120:
        raise ValueError(f"fps must be a number above 0 and at most 120, not {fps!r}.")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}.")
    arr = _as_tchw(acts)
    lut = colormap_lut(cmap)
    # The layout (which channels, where, labels) from the clip as a whole: the channel ranking of
    # the mean over time is the ranking by mean over time and space, of the maximum the peak.
    summary = arr.max(axis=0) if order == "max" else arr.mean(axis=0)
    layout = grid_layout(summary, channels=channels, order=order, columns=columns, title=title)
    picked = np.asarray(layout.channels)
    shown = arr[:, picked]
    lo = shown.min(axis=(0, 2, 3), keepdims=True)
    span = shown.max(axis=(0, 2, 3), keepdims=True) - lo
    # A channel constant over the clip has no contrast to show: the bottom of the scale.
    unit = np.where(span > 0, (shown - lo) / np.where(span > 0, span, 1), 0.0)
    pages = [retile(layout, unit[t]) for t in range(arr.shape[0])]
    return _encode(pages, lut, float(fps))


def frames_npz_bytes(acts: dict[str, torch.Tensor], times: Sequence[float]) -> bytes:
    """A clip's capture as .npz bytes: one float32 ``(T, C, H, W)`` array per layer under its name,
    and the frames' times in seconds under ``"__times__"``.

    Raises:
        ValueError: a layer whose frame count differs from ``len(times)``.

    Example:
        >>> Path("clip.npz").write_bytes(frames_npz_bytes(acts, clip.times))
    """
    arrays = {TIMES_KEY: np.asarray(list(times), dtype=np.float64)}
    for name, tensor in acts.items():
        arr = tensor.detach().float().cpu().numpy() if isinstance(tensor, torch.Tensor) else np.asarray(tensor)
        if arr.shape[0] != len(arrays[TIMES_KEY]):
            raise ValueError(f"{name} has {arr.shape[0]} frames but {len(arrays[TIMES_KEY])} times were given; "
                             "pass the times of the frames that were captured.")
        arrays[name] = np.ascontiguousarray(arr, dtype=np.float32)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **arrays as its allow_pickle: bool
    return buf.getvalue()
