"""The state of an atlas run that every part shares: the mergeable top-k, a partial atlas, the job's
settings, the file names of an atlas folder and the checks of its settings (see
:mod:`vizhooks.atlas.exemplars` for the whole design)."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import numpy as np

from vizhooks.atlas.receptive import ReceptiveField
from vizhooks.errors import CodedError
from vizhooks.models.images import MAX_SIZE, MIN_SIZE
from vizhooks.models.registry import ModelBundle

__all__ = ["CROPS", "ENGINES", "FORMAT", "IMAGE_EXTENSIONS", "INDEX", "KEYS", "LOG", "MANIFEST", "PROGRESS",
           "AtlasError", "Job", "PartialAtlas", "TopK", "check_settings", "duration", "trace_hw"]

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".webp", ".bmp", ".gif", ".tif", ".tiff")
ENGINES = ("local", "ray")
INDEX, MANIFEST, PROGRESS, LOG, CROPS = "index.parquet", "manifest.json", "progress.npz", "progress.log", "crops"
FORMAT = 1
KEYS = ("scores", "paths", "ys", "xs", "boxes")


class AtlasError(CodedError):
    """A folder, an atlas or a setting that cannot be used; the message says what to do (a ValueError)."""


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
                              zip(self.arrays(), other.arrays(), strict=True)))._select()

    def arrays(self) -> tuple[np.ndarray, ...]:
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


@dataclass
class Job:
    bundle: ModelBundle
    root: Path
    names: list[str]
    rfs: dict[str, ReceptiveField | None]
    top: int
    size: int
    batch: int
    #: "activation" (a channel's peak) or "relevance" (its Taylor relevance for class ``target``)
    rank: str = "activation"
    target: int | None = None


#: How an atlas ranks the photos of a channel: by its peak activation, or by its relevance for one
#: class (RelMax: activation x gradient of the class logit, summed over the channel's positions).
RANKS = ("activation", "relevance")


def check_rank(rank: object, target: object) -> None:
    """A known ranking; relevance needs a class index (whole number of 0 or more)."""
    if rank not in RANKS:
        raise AtlasError(f"rank must be 'activation' or 'relevance', not {rank!r}.")
    if rank == "relevance" and (isinstance(target, bool) or not isinstance(target, int) or target < 0):
        raise AtlasError(f"Ranking by relevance needs the class it is for: give target as a class index, "
                         f"not {target!r}.")


def check_settings(top: int, size: int, batch: int) -> None:
    for label, value, low, high in (("top", top, 1, 10_000), ("size", size, MIN_SIZE, MAX_SIZE),
                                    ("batch", batch, 1, 100_000)):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise AtlasError(f"{label} must be a whole number from {low} to {high}, not {value!r}.")


def trace_hw(bundle: ModelBundle, size: int) -> tuple[int, int]:
    side = bundle.input.fixed_size or max(size, bundle.input.min_size)
    return side, side


def duration(seconds: float) -> str:
    seconds = int(math.ceil(seconds))
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


class RateLine:
    """The one rewritten stderr line both engines show while they run: done / total, images per
    second and time left, at most twice a second; ``finish`` writes the closing line."""

    def __init__(self, total: int, show: bool) -> None:
        self.total, self.show = total, show
        self.started, self.shown = time.monotonic(), 0.0

    def update(self, handled: int) -> None:
        now = time.monotonic()
        if not self.show or now - self.shown < 0.5:
            return
        self.shown = now
        rate = max(handled, 1) / max(now - self.started, 1e-9)
        left = duration(max(self.total - handled, 0) / rate)
        print(f"\r{handled}/{self.total} images, {rate:.1f} images/s, {left} left  ", end="", file=sys.stderr,
              flush=True)

    def finish(self) -> None:
        if self.show and self.total:
            rate = self.total / max(time.monotonic() - self.started, 1e-9)
            print(f"\r{self.total}/{self.total} images, {rate:.1f} images/s, done.{' ' * 12}", file=sys.stderr)
