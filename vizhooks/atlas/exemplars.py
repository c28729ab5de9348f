"""Dataset exemplars: for every channel of chosen layers, the images of a folder that make it fire most.

Every image is read with :func:`vizhooks.load_image` and prepared with ``bundle.preprocess(image,
size)``, exactly as the page prepares a photo (aspect kept, no crop). Images of one input shape run
together in batches, with forward hooks that reduce each channel's map to its maximum and the
maximum's position at once, so only the running top-k per channel is ever kept.

Layout of an atlas folder::

    index.parquet    one row per (layer, channel, rank): path, score, y, x, left, top, right, bottom, crop
    crops/LAYER/CHANNEL_RANK.jpg   the part of the original image that the maximum's position sees
    manifest.json    model, weights, size, folder, image count, skipped files with reasons, version
    progress.npz     the checkpoint: every top-k, the settings, how many lines of the log it covers
    progress.log     one JSON line per finished or skipped file, appended at each checkpoint

Order: highest score first; equal scores by path. ``rank`` counts from 0. Boxes are in the original
image's pixels, right and bottom excluded, from the layer's receptive field (see
:mod:`vizhooks.atlas.receptive`): the field's box in the model input, clipped to it, scaled back to
the original (left and top rounded down, right and bottom up).

Engines. The work is a map and a merge: :func:`scan_paths` turns any list of files into a
:class:`PartialAtlas`, and partial atlases of disjoint files :meth:`~PartialAtlas.merge` into the
same answer in any order. The ``local`` engine feeds a ``torch.utils.data.DataLoader`` (workers
decode and preprocess) into the same fold; the ``ray`` engine (:mod:`vizhooks.atlas.ray_engine`) runs
:func:`scan_paths` per shard in Ray actors and merges the shards here, in the driver.
"""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import math
import os
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np
import torch
from torch import nn

from .._hooks import first_tensor, hooks_removed_after, model_device, model_lock, preserved_state
from ..export import write_atomic
from ..images import MAX_SIZE, MIN_SIZE, InputSpec, load_image
from ..layers import UnknownLayerError, resolve_layers
from ..maps import maps_of
from ..models import ModelBundle
from .receptive import ReceptiveField, receptive_fields

__all__ = ["ENGINES", "Atlas", "AtlasError", "Exemplar", "PartialAtlas", "TopK", "build_atlas", "check_engine",
           "list_images", "load_atlas", "read_progress", "scan_paths"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
ENGINES = ("local", "ray")
INDEX, MANIFEST, PROGRESS, LOG, CROPS = "index.parquet", "manifest.json", "progress.npz", "progress.log", "crops"
_FORMAT = 1
_KEYS = ("scores", "paths", "ys", "xs", "boxes")


class AtlasError(ValueError):
    """A folder, an atlas or a setting that cannot be used; the message says what to do."""


# ----------------------------------------------------------------------------------------------
# the mergeable state


@dataclass
class TopK:
    """The running top-k of one layer: for each channel the k best images, best first.

    Every image gives one score per channel (the channel's maximum), so all channels hold
    ``min(images seen, k)`` entries. Arrays are ``(channels, n)``; ``boxes`` is ``(channels, n, 4)``.
    """

    k: int
    scores: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    paths: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), "<U1"))
    ys: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int32))
    xs: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int32))
    boxes: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 4), np.int32))

    @property
    def channels(self) -> int:
        return int(self.scores.shape[0])

    @classmethod
    def from_batch(cls, k: int, scores: np.ndarray, paths: Sequence[str], ys: np.ndarray, xs: np.ndarray,
                   boxes: np.ndarray) -> TopK:
        """The top-k of one batch of images.

        Args:
            k: entries kept per channel.
            scores: ``(images, channels)`` maxima.
            paths: one per image.
            ys, xs: ``(images, channels)`` positions of the maxima.
            boxes: ``(images, channels, 4)`` boxes in original pixels.

        Returns:
            A :class:`TopK` holding at most ``k`` entries per channel, best first, ties by path.

        Example:
            >>> t = TopK.from_batch(1, np.array([[1.0], [2.0]]), ["a.png", "b.png"], np.zeros((2, 1)),
            ...                     np.zeros((2, 1)), np.zeros((2, 1, 4)))
            >>> t.entries(0)[0][:2]
            ('b.png', 2.0)
        """
        n, channels = scores.shape
        names = np.broadcast_to(np.asarray(list(paths), dtype=str)[None, :], (channels, n))
        return cls(k, np.ascontiguousarray(scores.T, np.float32), names,
                   np.ascontiguousarray(ys.T, np.int32), np.ascontiguousarray(xs.T, np.int32),
                   np.ascontiguousarray(boxes.transpose(1, 0, 2), np.int32))._select()

    def merge(self, other: TopK) -> TopK:
        """The top-k of both (of disjoint images): the same answer in any order of merging.

        Args:
            other: a top-k of the same layer and ``k``.

        Returns:
            A new :class:`TopK`; neither input is changed.

        Raises:
            ValueError: different k or channel counts.

        Example:
            >>> a.merge(b).merge(c).scores == c.merge(b.merge(a)).scores  # all True
        """
        if self.k != other.k:
            raise ValueError(f"Cannot merge top-{self.k} with top-{other.k}.")
        if not other.scores.size:
            return dataclasses.replace(self)
        if not self.scores.size:
            return dataclasses.replace(other)
        if self.channels != other.channels:
            raise ValueError(f"Cannot merge a layer of {self.channels} channels with one of {other.channels}.")
        return TopK(self.k, *(np.concatenate([a, b], axis=1) for a, b in
                              zip(self._arrays(), other._arrays(), strict=True)))._select()

    def _arrays(self) -> tuple[np.ndarray, ...]:
        return self.scores, self.paths, self.ys, self.xs, self.boxes

    def _select(self) -> TopK:
        # highest score first, then by path; NaN scores go last
        _, rank = np.unique(self.paths, return_inverse=True)
        order = np.lexsort((rank.reshape(self.paths.shape), -self.scores), axis=1)[:, : self.k]
        take = lambda a: np.take_along_axis(a, order, axis=1)  # noqa: E731
        return TopK(self.k, take(self.scores), take(self.paths), take(self.ys), take(self.xs),
                    np.take_along_axis(self.boxes, order[:, :, None], axis=1))

    def entries(self, channel: int) -> list[tuple[str, float, int, int, tuple[int, int, int, int]]]:
        """``(path, score, y, x, box)`` of one channel, best first.

        Example:
            >>> path, score, y, x, box = top.entries(0)[0]
        """
        return [(str(self.paths[channel, i]), float(self.scores[channel, i]), int(self.ys[channel, i]),
                 int(self.xs[channel, i]),
                 cast(tuple[int, int, int, int], tuple(int(v) for v in self.boxes[channel, i])))
                for i in range(self.scores.shape[1])]


@dataclass
class PartialAtlas:
    """What a run (or a shard of one) has found: a :class:`TopK` per layer, the files folded in
    and the files skipped, ``{path: reason}``."""

    tops: dict[str, TopK]
    done: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)

    @classmethod
    def empty(cls, layers: Iterable[str], k: int) -> PartialAtlas:
        """Nothing seen yet, for ``layers`` and ``k`` entries per channel.

        Example:
            >>> PartialAtlas.empty(["layer3.0.conv1"], 9).done
            []
        """
        return cls({name: TopK(k) for name in layers})

    def merge(self, other: PartialAtlas) -> PartialAtlas:
        """Both partial atlases as one; they must cover different files and the same layers.

        Args:
            other: a partial atlas of other files.

        Returns:
            A new :class:`PartialAtlas`: every top-k merged, the files of both, sorted.

        Raises:
            ValueError: other layers, or a file in both.

        Example:
            >>> whole = scan_paths(b, "photos", first_half, ["layer3.0.conv1"]).merge(
            ...     scan_paths(b, "photos", second_half, ["layer3.0.conv1"]))
        """
        if list(self.tops) != list(other.tops):
            raise ValueError(f"Cannot merge atlases of layers {list(self.tops)} and {list(other.tops)}.")
        shared = (set(self.done) | set(self.skipped)) & (set(other.done) | set(other.skipped))
        if shared:
            raise ValueError(f"Both partial atlases hold {len(shared)} of the same files, e.g. {min(shared)}; "
                             "shards must not overlap.")
        return PartialAtlas({name: top.merge(other.tops[name]) for name, top in self.tops.items()},
                            sorted([*self.done, *other.done]), dict(sorted({**self.skipped, **other.skipped}.items())))


class _Progress:
    """The checkpoint of a run: ``progress.npz`` holds every top-k and the settings, ``progress.log``
    one JSON line per finished or skipped file, only ever appended to (so a checkpoint costs what
    is new, not the whole list). The npz says how many log lines it covers; lines after that are
    from batches that were not saved and are dropped when the run continues."""

    def __init__(self, out: Path, config: dict, state: PartialAtlas) -> None:
        self.out, self.config, self.state = out, config, state
        self.logged = [len(state.done), len(state.skipped)]  # already in the log

    def save(self) -> None:
        state, (done, skipped) = self.state, self.logged
        lines = [json.dumps({"path": p}, ensure_ascii=False) for p in state.done[done:]]
        lines += [json.dumps({"path": p, "skipped": r}, ensure_ascii=False)
                  for p, r in itertools.islice(state.skipped.items(), skipped, None)]
        self.out.mkdir(parents=True, exist_ok=True)
        with open(self.out / LOG, "a", encoding="utf-8") as fh:
            fh.writelines(line + "\n" for line in lines)
            fh.flush()
            os.fsync(fh.fileno())  # on disk before the npz that counts these lines
        self.logged = [len(state.done), len(state.skipped)]
        meta = {"format": _FORMAT, "config": self.config, "layers": list(state.tops), "lines": sum(self.logged)}
        arrays: dict[str, np.ndarray] = {"meta": np.frombuffer(json.dumps(meta).encode(), np.uint8)}
        for i, top in enumerate(state.tops.values()):
            for key, array in zip(_KEYS, top._arrays(), strict=True):
                arrays[f"{i}.{key}"] = array
        buf = io.BytesIO()
        np.savez(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **arrays as its allow_pickle: bool
        write_atomic(self.out / PROGRESS, buf.getvalue())


def _read_log(path: Path, lines: int) -> tuple[list[str], dict[str, str], int]:
    """The first ``lines`` records of a progress log: finished files, skipped files, their bytes."""
    done: list[str] = []
    skipped: dict[str, str] = {}
    size = 0
    with open(path, "rb") as fh:
        for _ in range(lines):
            raw = fh.readline()
            if not raw.endswith(b"\n"):
                raise ValueError("the log is shorter than the checkpoint")
            size += len(raw)
            record = json.loads(raw)
            if "skipped" in record:
                skipped[record["path"]] = record["skipped"]
            else:
                done.append(record["path"])
    return done, skipped, size


def read_progress(out: str | os.PathLike) -> tuple[PartialAtlas, dict] | None:
    """The saved state of a run in an atlas folder, finished or not.

    Args:
        out: the atlas folder of :func:`build_atlas`.

    Returns:
        ``(state, settings)``, or None when ``out`` holds no checkpoint.

    Raises:
        AtlasError: the checkpoint is damaged.

    Example:
        >>> state, config = read_progress("atlas/")
        >>> len(state.done), config["layers"]
    """
    path = Path(out) / PROGRESS
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            tops = {name: TopK(int(meta["config"]["top"]), *(data[f"{i}.{key}"] for key in _KEYS))
                    for i, name in enumerate(meta["layers"])}
        done, skipped, _ = _read_log(Path(out) / LOG, int(meta["lines"]))
    except Exception as exc:
        raise AtlasError(f"The checkpoint in {out} is damaged ({exc.__class__.__name__}); delete {path} and "
                         f"{Path(out) / LOG} to start the atlas again.") from None
    return PartialAtlas(tops, done, skipped), meta["config"]


# ----------------------------------------------------------------------------------------------
# reading and preparing files


def list_images(folder: str | os.PathLike, exclude: str | os.PathLike | None = None) -> list[str]:
    """Image files under ``folder``, recursively, as sorted relative POSIX paths.

    A file counts by its extension (``IMAGE_EXTENSIONS``, any case); hidden files and folders and
    the folder ``exclude`` (an atlas being written inside ``folder``) are left out.

    Args:
        folder: where to look.
        exclude: a folder inside ``folder`` to skip.

    Returns:
        Paths relative to ``folder``, with ``/`` separators, sorted.

    Example:
        >>> list_images("photos")
        ['cat.jpg', 'more/dog.png']
    """
    root = Path(folder)
    skip = Path(exclude).resolve() if exclude is not None else None
    found = []
    for here, dirs, files in os.walk(root):
        base = Path(here)
        dirs[:] = [d for d in dirs if not d.startswith(".") and (skip is None or (base / d).resolve() != skip)]
        found += [(base / f).relative_to(root).as_posix() for f in files
                  if not f.startswith(".") and f.lower().endswith(IMAGE_EXTENSIONS)]
    return sorted(found)


class _Prepare:
    """``bundle.preprocess`` without the network, so DataLoader workers get a small picklable copy."""

    def __init__(self, bundle: ModelBundle, size: int) -> None:
        self.bundle = dataclasses.replace(bundle, model=nn.Identity())
        self.size = size

    def __call__(self, root: Path, path: str) -> dict:
        try:
            image = load_image(root / path)
            x = self.bundle.preprocess(image, self.size)
        except Exception as exc:  # InvalidImageError says why for a person; anything else by its name
            reason = str(exc) if isinstance(exc, ValueError) else f"{exc.__class__.__name__}: {exc}"
            return {"path": path, "x": None, "wh": None, "error": reason}
        return {"path": path, "x": x[0], "wh": image.size, "error": None}


class _Files(torch.utils.data.Dataset):
    def __init__(self, root: Path, paths: Sequence[str], prepare: _Prepare) -> None:
        self.root, self.paths, self.prepare = root, list(paths), prepare

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> dict:
        return self.prepare(self.root, self.paths[i])


def _as_list(items: list) -> list:
    return items


# ----------------------------------------------------------------------------------------------
# one batch: forward hooks -> maxima -> top-k


class _Stop(Exception):
    """Raised by the last hook of a pass: the rest of the network is not needed."""


def _batch_maxima(model: nn.Module, names: Sequence[str], x: torch.Tensor) -> dict[str, tuple]:
    """``{layer: (max (B, C), flat argmax (B, C), (H, W))}`` of one same-shaped batch, under the
    model's lock; a layer that runs several times is taken at its first run (``capture``'s key)."""
    hw = (int(x.shape[-2]), int(x.shape[-1]))
    found: dict[str, tuple] = {}

    def hook_for(name: str):
        def hook(module, args, output):
            if name in found:
                return
            m = maps_of(model, {name: first_tensor(output)}, hw)[name]
            values, where = m.flatten(2).max(dim=2)  # reduce now: in-place ops may rewrite the map later
            found[name] = (values.float().cpu().numpy(), where.cpu().numpy(), (int(m.shape[-2]), int(m.shape[-1])))
            if len(found) == len(names):
                raise _Stop
        return hook

    with model_lock(model), preserved_state(model), hooks_removed_after([]) as handles:
        modules = dict(model.named_modules())
        for name in names:
            handles.append(modules[name].register_forward_hook(hook_for(name)))
        try:
            with torch.inference_mode():
                model(x.to(model_device(model)))
        except _Stop:
            pass
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"Layer {missing[0]} did not run in the model's forward pass; choose another layer.")
    return found


def _placement(spec: InputSpec, wh: np.ndarray, input_hw: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Per image: the resized width and height before any crop, and the crop's left and top (the
    arithmetic of :func:`vizhooks.images.fit_to_model`)."""
    w0, h0 = wh[:, 0], wh[:, 1]
    if not spec.fixed_size:
        zeros = np.zeros_like(w0)
        return np.full_like(w0, input_hw[1]), np.full_like(h0, input_hw[0]), zeros, zeros
    side = int(spec.fixed_size)
    scale = side / np.minimum(w0, h0)
    new_w = np.maximum(side, np.round(w0 * scale).astype(np.int64))
    new_h = np.maximum(side, np.round(h0 * scale).astype(np.int64))
    return new_w, new_h, (new_w - side) // 2, (new_h - side) // 2


def _boxes(rf: ReceptiveField | None, ys: np.ndarray, xs: np.ndarray, wh: np.ndarray, input_hw: tuple[int, int],
           spec: InputSpec) -> np.ndarray:
    """``(B, C, 4)`` boxes in original pixels for positions ``ys``, ``xs`` of shape ``(B, C)``."""
    w0, h0 = wh[:, 0:1].astype(np.int64), wh[:, 1:2].astype(np.int64)
    if rf is None:  # the position sees the whole picture
        whole = np.stack(np.broadcast_arrays(0, 0, w0, h0), -1)
        return np.broadcast_to(whole, (*ys.shape, 4)).astype(np.int32)
    # arg-type: box is plain arithmetic, so it works on arrays of positions too (its docstring says so)
    left, top, right, bottom = (np.asarray(v, np.int64) for v in rf.box(ys.astype(np.int64), xs.astype(np.int64)))  # type: ignore[arg-type]
    height, width = input_hw
    left, right = np.clip(left, 0, width), np.clip(right, 0, width)
    top, bottom = np.clip(top, 0, height), np.clip(bottom, 0, height)
    wr, hr, ox, oy = (v.astype(np.int64)[:, None] for v in _placement(spec, wh, input_hw))
    box = [(left + ox) * w0 // wr, (top + oy) * h0 // hr, -((-(right + ox) * w0) // wr), -((-(bottom + oy) * h0) // hr)]
    box[0], box[2] = np.clip(box[0], 0, w0 - 1), np.clip(box[2], 0, w0)
    box[1], box[3] = np.clip(box[1], 0, h0 - 1), np.clip(box[3], 0, h0)
    box[2], box[3] = np.maximum(box[2], box[0] + 1), np.maximum(box[3], box[1] + 1)  # never empty
    return np.stack(box, -1).astype(np.int32)


@dataclass
class _Job:
    bundle: ModelBundle
    root: Path
    names: list[str]
    rfs: dict[str, ReceptiveField | None]
    top: int
    size: int
    batch: int


def _fold(job: _Job, state: PartialAtlas, items: list[dict]) -> None:
    """Run one batch of same-shaped prepared images and merge its top-k into ``state``."""
    x = torch.stack([item["x"] for item in items])
    paths = [item["path"] for item in items]
    wh = np.asarray([item["wh"] for item in items], np.int64)
    input_hw = (int(x.shape[-2]), int(x.shape[-1]))
    for name, (values, where, (_, width)) in _batch_maxima(job.bundle.model, job.names, x).items():
        ys, xs = where // width, where % width
        boxes = _boxes(job.rfs[name], ys, xs, wh, input_hw, job.bundle.input)
        state.tops[name] = state.tops[name].merge(TopK.from_batch(job.top, values, paths, ys, xs, boxes))
    state.done.extend(paths)


class _Buckets:
    """Prepared images waiting for a batch of their shape; at most ``4 * batch`` wait in all."""

    def __init__(self, batch: int) -> None:
        self.batch = batch
        self.waiting: dict[tuple[int, ...], list[dict]] = {}

    def add(self, item: dict) -> list[list[dict]]:
        """Add one item; returns the batches now ready."""
        bucket = self.waiting.setdefault(tuple(item["x"].shape), [])
        bucket.append(item)
        ready = []
        if len(bucket) >= self.batch:
            ready.append(self.waiting.pop(tuple(item["x"].shape)))
        if sum(len(b) for b in self.waiting.values()) > 4 * self.batch:  # many shapes: bound the memory
            ready.append(self.waiting.pop(max(self.waiting, key=lambda s: len(self.waiting[s]))))
        return ready

    def rest(self) -> list[list[dict]]:
        ready, self.waiting = list(self.waiting.values()), {}
        return ready


def _check_settings(top: int, size: int, batch: int) -> None:
    for label, value, low, high in (("top", top, 1, 10_000), ("size", size, MIN_SIZE, MAX_SIZE),
                                    ("batch", batch, 1, 100_000)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise AtlasError(f"{label} must be a whole number from {low} to {high}, not {value!r}.")


def _trace_hw(bundle: ModelBundle, size: int) -> tuple[int, int]:
    side = bundle.input.fixed_size or max(size, bundle.input.min_size)
    return side, side


def scan_paths(
    bundle: ModelBundle,
    folder: str | os.PathLike,
    paths: Sequence[str],
    layers: str | Iterable[str],
    *,
    top: int = 9,
    size: int = 224,
    batch: int = 32,
) -> PartialAtlas:
    """The partial atlas of some files of ``folder``: the map step of any engine (one shard).

    Files are read one after another in this process, grouped by input shape and run in batches of
    at most ``batch``. Bad files are recorded in ``skipped``, never raised.

    Args:
        bundle: from :func:`vizhooks.load_model`.
        folder: the root the ``paths`` are relative to.
        paths: relative paths, e.g. a slice of :func:`list_images`.
        layers: qualified module names.
        top, size, batch: images kept per channel, shorter side of the model input, images per pass.

    Returns:
        A :class:`PartialAtlas`; merge shards with :meth:`PartialAtlas.merge`.

    Raises:
        UnknownLayerError: a layer the model lacks.
        AtlasError: a bad ``top``, ``size`` or ``batch``.

    Example:
        >>> files = list_images("photos")
        >>> a = scan_paths(bundle, "photos", files[::2], ["layer3.0.conv1"], top=3)
        >>> b = scan_paths(bundle, "photos", files[1::2], ["layer3.0.conv1"], top=3)
        >>> a.merge(b).tops["layer3.0.conv1"].entries(0)[0]  # (path, score, y, x, box)
    """
    _check_settings(top, size, batch)
    names = resolve_layers(bundle.model, layers)
    job = _Job(bundle, Path(folder), names, receptive_fields(bundle.model, names, _trace_hw(bundle, size)),
               top, size, batch)
    state = PartialAtlas.empty(names, top)
    prepare, buckets = _Prepare(bundle, size), _Buckets(batch)
    for path in paths:
        item = prepare(job.root, path)
        if item["error"] is not None:
            state.skipped[path] = item["error"]
            continue
        for ready in buckets.add(item):
            _fold(job, state, ready)
    for ready in buckets.rest():
        _fold(job, state, ready)
    state.done.sort()
    return state


# ----------------------------------------------------------------------------------------------
# engines


def _local_engine(job: _Job, todo: list[str], state: PartialAtlas, *, workers: int, save: Callable[[], None],
                  checkpoint_every: int, on_batch: Callable[[int, PartialAtlas], object] | None,
                  progress: bool) -> None:
    """DataLoader workers decode and preprocess; this process batches by shape and runs the model."""
    loader = torch.utils.data.DataLoader(
        _Files(job.root, todo, _Prepare(job.bundle, job.size)), batch_size=job.batch, shuffle=False,
        num_workers=workers, collate_fn=_as_list, persistent_workers=False)
    buckets, batches, started, shown = _Buckets(job.batch), 0, time.monotonic(), 0.0
    handled = 0

    def fold(items: list[dict]) -> None:
        nonlocal batches, shown
        _fold(job, state, items)
        batches += 1
        if batches % checkpoint_every == 0:
            save()
        if on_batch is not None:
            on_batch(batches, state)
        now = time.monotonic()
        if progress and now - shown >= 0.5:
            shown = now
            rate = (handled or 1) / max(now - started, 1e-9)
            left = (len(todo) - handled) / rate
            print(f"\r{handled}/{len(todo)} images, {rate:.1f} images/s, {_duration(left)} left  ",
                  end="", file=sys.stderr, flush=True)

    for chunk in loader:
        for item in chunk:
            handled += 1
            if item["error"] is not None:
                state.skipped[item["path"]] = item["error"]
                continue
            for ready in buckets.add(item):
                fold(ready)
    for ready in buckets.rest():
        fold(ready)
    if progress and todo:
        rate = len(todo) / max(time.monotonic() - started, 1e-9)
        print(f"\r{len(todo)}/{len(todo)} images, {rate:.1f} images/s, done.{' ' * 12}", file=sys.stderr)


def _duration(seconds: float) -> str:
    seconds = int(math.ceil(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


def check_engine(engine: str) -> None:
    """Check an engine name before any work starts.

    Args:
        engine: one of ``ENGINES``.

    Raises:
        AtlasError: an unknown engine, or ``"ray"`` where Ray is not installed.

    Example:
        >>> check_engine("local")
    """
    if engine not in ENGINES:
        raise AtlasError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}.")
    if engine == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:  # found, not imported: importing Ray takes seconds
            raise AtlasError("The ray engine needs Ray: pip install -r requirements-scale.txt "
                             "(or pip install 'vizhooks[ray]'), or use the local engine.")


def build_atlas(
    folder: str | os.PathLike,
    bundle: ModelBundle,
    layers: str | Iterable[str],
    out: str | os.PathLike,
    *,
    top: int = 9,
    size: int = 224,
    engine: str = "local",
    batch: int = 32,
    workers: int = 0,
    checkpoint_every: int = 20,
    progress: bool = True,
    on_batch: Callable[[int, PartialAtlas], object] | None = None,
) -> Atlas:
    """Find the top-``top`` images of ``folder`` for every channel of ``layers`` and write an atlas.

    Resumable: the state is saved to ``out/progress.npz`` and ``out/progress.log`` every
    ``checkpoint_every`` batches and when the run is interrupted (KeyboardInterrupt, a failed
    worker); calling again with the same settings continues where it stopped and gives the same
    atlas. Files added to the folder later are folded in by another call.

    Args:
        folder: a folder of images, read recursively (see :func:`list_images`).
        bundle: from :func:`vizhooks.load_model`.
        layers: qualified module names.
        out: the atlas folder (created).
        top: images kept per channel.
        size: shorter side of the model input, as on the page.
        engine: ``"local"``, or ``"ray"``: shards of files scanned by Ray actors, on the cluster of
            ``RAY_ADDRESS``, the Ray session already started in this process, or a local Ray started
            for the run (see :mod:`vizhooks.atlas.ray_engine`). Both give the same atlas.
        batch: images per forward pass (all of one input shape).
        workers: local: DataLoader worker processes that decode and preprocess (0: in this process);
            ray: actors, each holding the model (0: one per CPU, or per GPU where there are GPUs).
        checkpoint_every: save the state after this many batches (ray: after this many shards).
        progress: print a progress line (images/s, time left) on stderr.
        on_batch: called as ``on_batch(batches_done, state)`` after every batch (ray: every shard).

    Returns:
        The finished :class:`Atlas`.

    Raises:
        AtlasError: no such folder, no images in it, bad settings, an engine that cannot run, or an
            ``out`` folder holding a run with other settings.
        UnknownLayerError: a layer the model lacks.
        KeyboardInterrupt: re-raised after the state is saved.

    Example:
        >>> atlas = build_atlas("photos", load_model("resnet18"), ["layer3.0.conv1"], "atlas", top=9)
        >>> atlas.top("layer3.0.conv1", 0)[0].path
        'cats/tabby.jpg'
    """
    root, out = Path(folder), Path(out)
    if not root.exists():
        raise AtlasError(f"There is no folder at {root}.")
    if not root.is_dir():
        raise AtlasError(f"{root} is a file; give the folder that holds the images.")
    check_engine(engine)
    _check_settings(top, size, batch)
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 0:
        raise AtlasError(f"workers must be 0 or more, not {workers!r}.")
    if isinstance(checkpoint_every, bool) or not isinstance(checkpoint_every, int) or checkpoint_every < 1:
        raise AtlasError(f"checkpoint_every must be 1 or more, not {checkpoint_every!r}.")
    names = resolve_layers(bundle.model, layers)
    files = list_images(root, exclude=out)
    if not files:
        raise AtlasError(f"{root} holds no image files ({', '.join(IMAGE_EXTENSIONS)}).")

    config = {"model": bundle.name, "arch": bundle.arch, "weights": bundle.weights_source,
              "weights_status": bundle.weights_status, "size": size, "layers": names, "top": top,
              "folder": str(root.resolve())}
    state = _resume(out, config, names, top)
    handled = set(state.done) | set(state.skipped)
    todo = [f for f in files if f not in handled]
    job = _Job(bundle, root, names, receptive_fields(bundle.model, names, _trace_hw(bundle, size)), top, size, batch)
    checkpoint = _Progress(out, config, state)
    try:
        if engine == "ray":
            from .ray_engine import run_ray

            run_ray(job, todo, state, workers=workers, save=checkpoint.save, checkpoint_every=checkpoint_every,
                    on_batch=on_batch, progress=progress)
        else:
            _local_engine(job, todo, state, workers=workers, save=checkpoint.save,
                          checkpoint_every=checkpoint_every, on_batch=on_batch, progress=progress)
    except BaseException:
        checkpoint.save()  # keep every finished batch; the same call again continues from here
        raise
    checkpoint.save()
    _write_atlas(job, state, out, config)
    return load_atlas(out)


def _resume(out: Path, config: dict, names: list[str], top: int) -> PartialAtlas:
    """The saved state in ``out`` (the log cut back to what the checkpoint covers), or a new one."""
    saved = read_progress(out)
    if saved is None:
        (out / LOG).unlink(missing_ok=True)  # lines of a first checkpoint that never completed
        return PartialAtlas.empty(names, top)
    state, old = saved
    if old != config:
        changed = ", ".join(k for k in config if old.get(k) != config[k])
        raise AtlasError(f"{out} holds an atlas made with other settings ({changed}); choose another --out "
                         f"or delete {out / PROGRESS} and {out / LOG} to start again.")
    lines = len(state.done) + len(state.skipped)
    with open(out / LOG, "r+b") as fh:  # drop lines written after the checkpoint
        fh.truncate(_read_log(out / LOG, lines)[2])
    return state


# ----------------------------------------------------------------------------------------------
# writing and reading an atlas


def _write_atlas(job: _Job, state: PartialAtlas, out: Path, config: dict) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from .. import __version__

    columns: dict[str, list] = {k: [] for k in ("layer", "channel", "rank", "path", "score", "y", "x", "left",
                                                "top", "right", "bottom", "crop")}
    wanted: dict[str, list[tuple[str, tuple[int, int, int, int]]]] = {}
    for name, topk in state.tops.items():
        for channel in range(topk.channels):
            for rank, (path, score, y, x, box) in enumerate(topk.entries(channel)):
                crop = f"{CROPS}/{name}/{channel}_{rank}.jpg"
                for key, value in zip(columns, (name, channel, rank, path, score, y, x, *box, crop), strict=True):
                    columns[key].append(value)
                wanted.setdefault(path, []).append((crop, box))
    missing = _write_crops(job.root, out, wanted)
    columns["crop"] = ["" if c in missing else c for c in columns["crop"]]
    schema = pa.schema([("layer", pa.string()), ("channel", pa.int32()), ("rank", pa.int32()), ("path", pa.string()),
                        ("score", pa.float32()), ("y", pa.int32()), ("x", pa.int32()), ("left", pa.int32()),
                        ("top", pa.int32()), ("right", pa.int32()), ("bottom", pa.int32()), ("crop", pa.string())])
    sink = pa.BufferOutputStream()
    pq.write_table(pa.table(columns, schema=schema), sink)
    write_atomic(out / INDEX, sink.getvalue().to_pybytes())
    manifest = {
        "model": config["model"], "arch": config["arch"], "weights": config["weights"],
        "weights_status": config["weights_status"], "size": config["size"], "top": config["top"],
        "folder": config["folder"], "images": len(state.done),
        "skipped": [{"path": p, "reason": r} for p, r in sorted(state.skipped.items())],
        "layers": [{"name": name, "channels": topk.channels, "receptive_field": _rf_json(job.rfs[name])}
                   for name, topk in state.tops.items()],
        "vizhooks": __version__,
    }
    write_atomic(out / MANIFEST, (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())


def _rf_json(rf: ReceptiveField | None) -> dict | None:
    return None if rf is None else {"size": list(rf.size), "jump": list(rf.jump), "start": list(rf.start)}


def _write_crops(root: Path, out: Path, wanted: dict[str, list[tuple[str, tuple[int, int, int, int]]]]) -> set[str]:
    """Cut every crop, reading each image once; returns the crops whose image could not be read."""
    missing: set[str] = set()
    for path, crops in wanted.items():
        try:
            image = load_image(root / path)
        except Exception:  # gone or changed since it was scanned: the row stays, without a crop
            missing.update(c for c, _ in crops)
            continue
        for crop, box in crops:
            target = out / crop
            target.parent.mkdir(parents=True, exist_ok=True)
            image.crop(box).save(target, "JPEG", quality=90)
    return missing


@dataclass(frozen=True)
class Exemplar:
    """One image that makes a channel fire.

    Attributes:
        path: the image, relative to the atlas's folder (POSIX separators).
        score: the channel's maximum over its map.
        y, x: where that maximum is in the layer's map.
        box: ``(left, top, right, bottom)`` the maximum's receptive field covers, in the original
            image's pixels, clipped to the image (right and bottom excluded).
        crop: the JPEG of that box, or None when the image could not be read at writing time.
    """

    path: str
    score: float
    y: int
    x: int
    box: tuple[int, int, int, int]
    crop: Path | None


class Atlas:
    """A finished atlas folder (see :func:`load_atlas`).

    Attributes:
        path: the atlas folder.
        manifest: the contents of ``manifest.json``.
    """

    def __init__(self, path: Path, manifest: dict, rows: dict[str, list]) -> None:
        self.path = path
        self.manifest = manifest
        self._channels = {layer["name"]: int(layer["channels"]) for layer in manifest["layers"]}
        self._rows: dict[tuple[str, int], list[Exemplar]] = {}
        for i in np.lexsort((rows["rank"], rows["channel"])):
            crop = rows["crop"][i]
            self._rows.setdefault((rows["layer"][i], int(rows["channel"][i])), []).append(Exemplar(
                rows["path"][i], float(rows["score"][i]), int(rows["y"][i]), int(rows["x"][i]),
                (int(rows["left"][i]), int(rows["top"][i]), int(rows["right"][i]), int(rows["bottom"][i])),
                path / crop if crop else None))

    @property
    def layers(self) -> list[str]:
        """The layers, in the order they were asked for."""
        return list(self._channels)

    @property
    def model(self) -> str:
        """The model's name, e.g. ``"resnet18"``."""
        return str(self.manifest["model"])

    def channels(self, layer: str) -> int:
        """Number of channels of ``layer``.

        Raises:
            UnknownLayerError (a KeyError): a layer not in the atlas.

        Example:
            >>> load_atlas("atlas").channels("layer3.0.conv1")
            256
        """
        self._check_layer(layer)
        return self._channels[layer]

    def top(self, layer: str, channel: int) -> list[Exemplar]:
        """The exemplars of one channel, best first.

        Args:
            layer: one of :attr:`layers`.
            channel: from 0 to ``channels(layer) - 1``.

        Returns:
            Up to ``top`` :class:`Exemplar` (fewer when the folder had fewer images).

        Raises:
            UnknownLayerError (a KeyError): a layer not in the atlas.
            IndexError: no such channel.

        Example:
            >>> load_atlas("atlas").top("layer3.0.conv1", 5)[0].score
        """
        self._check_layer(layer)
        if isinstance(channel, bool) or not isinstance(channel, (int, np.integer)) or not (
                0 <= channel < self._channels[layer]):
            raise IndexError(f"{layer} has channels 0 to {self._channels[layer] - 1}, not {channel!r}.")
        return list(self._rows.get((layer, int(channel)), []))

    def _check_layer(self, layer: str) -> None:
        if layer not in self._channels:
            raise UnknownLayerError(f"The atlas has no layer {layer!r}; it has {', '.join(self._channels)}.")

    def __repr__(self) -> str:
        return f"Atlas({str(self.path)!r}, model={self.model!r}, layers={self.layers!r})"


def load_atlas(path: str | os.PathLike) -> Atlas:
    """Open an atlas folder written by :func:`build_atlas` (or ``python -m vizhooks exemplars``).

    Args:
        path: the atlas folder.

    Returns:
        An :class:`Atlas`: ``atlas.layers``, ``atlas.model``, ``atlas.top(layer, channel)``.

    Raises:
        AtlasError: not a folder, not a finished atlas, or a damaged one; one sentence saying so.

    Example:
        >>> atlas = load_atlas("atlas/")
        >>> [e.path for e in atlas.top("layer3.0.conv1", 0)]
        ['cats/tabby.jpg', 'dogs/pug.png', 'cats/tom.jpg']
    """
    path = Path(path)
    if not path.is_dir():
        raise AtlasError(f"There is no atlas folder at {path}; make one with `python -m vizhooks exemplars FOLDER "
                         f"--out {path}`.")
    manifest_path, index_path = path / MANIFEST, path / INDEX
    if not manifest_path.is_file() or not index_path.is_file():
        unfinished = (path / PROGRESS).is_file()
        raise AtlasError(f"{path} is an unfinished atlas; run the same exemplars command again to finish it."
                         if unfinished else f"{path} is not an atlas folder (it has no {MANIFEST} and {INDEX}).")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        int(manifest["layers"][0]["channels"]), str(manifest["model"])  # noqa: B018 - the fields an Atlas needs
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        raise AtlasError(f"{manifest_path} is damaged ({exc.__class__.__name__}).") from None
    try:
        import pyarrow.parquet as pq

        table = pq.read_table(index_path)
        rows = {name: table.column(name).to_pylist() for name in
                ("layer", "channel", "rank", "path", "score", "y", "x", "left", "top", "right", "bottom", "crop")}
    except Exception as exc:
        raise AtlasError(f"{index_path} is damaged ({exc.__class__.__name__}).") from None
    return Atlas(path, manifest, rows)
