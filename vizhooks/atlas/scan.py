"""The map step of an atlas: files -> prepared inputs -> batches of one shape -> per-channel maxima ->
a :class:`~vizhooks.atlas.state.PartialAtlas` (see :mod:`vizhooks.atlas.exemplars`)."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from vizhooks._hooks import check_ran, hooked, model_device
from vizhooks.atlas.receptive import ReceptiveField, receptive_fields
from vizhooks.atlas.state import (
    IMAGE_EXTENSIONS,
    INDEX,
    MANIFEST,
    PROGRESS,
    AtlasError,
    Job,
    PartialAtlas,
    TopK,
    check_rank,
    check_settings,
    trace_hw,
)
from vizhooks.models.images import InputSpec, fit_geometry, load_image
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import maps_of
from vizhooks.models.registry import ModelBundle

__all__ = ["Buckets", "Files", "Prepare", "as_list", "fold", "list_images", "scan_paths"]


def list_images(folder: str | os.PathLike, exclude: str | os.PathLike | None = None) -> list[str]:
    """Image files under ``folder``, recursively, as sorted relative POSIX paths.

    A file counts by its extension (``IMAGE_EXTENSIONS``, any case); hidden files and folders, the
    folder ``exclude`` (an atlas being written inside ``folder``) and any other atlas inside it (a folder
    holding an atlas's ``manifest.json`` and ``index.parquet``, or its unfinished ``progress.npz``: its crops
    are not the photos) are left out.

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
        dirs[:] = [d for d in dirs if not d.startswith(".") and (skip is None or (base / d).resolve() != skip)
                   and not _is_atlas(base / d)]
        found += [(base / f).relative_to(root).as_posix() for f in files
                  if not f.startswith(".") and f.lower().endswith(IMAGE_EXTENSIONS)]
    return sorted(found)


def _is_atlas(folder: Path) -> bool:
    return ((folder / MANIFEST).is_file() and (folder / INDEX).is_file()) or (folder / PROGRESS).is_file()


class Prepare:
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


class Files(torch.utils.data.Dataset):
    def __init__(self, root: Path, paths: Sequence[str], prepare: Prepare) -> None:
        self.root, self.paths, self.prepare = root, list(paths), prepare

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int) -> dict:
        return self.prepare(self.root, self.paths[i])


def as_list(items: list) -> list:
    return items


# ----------------------------------------------------------------------------------------------
# one batch: forward hooks -> maxima -> top-k


def _batch_maxima(model: nn.Module, names: Sequence[str], x: torch.Tensor) -> dict[str, tuple[Any, ...]]:
    """``{layer: (max (B, C), flat argmax (B, C), (H, W))}`` of one same-shaped batch, under the
    model's lock; a layer that runs several times is taken at its first run (``capture``'s key)."""
    hw = (int(x.shape[-2]), int(x.shape[-1]))

    def maxima(name: str, output: torch.Tensor) -> tuple[Any, ...]:
        m = maps_of(model, {name: output}, hw)[name]
        values, where = m.flatten(2).max(dim=2)  # reduce now: in-place ops may rewrite the map later
        return values.float().cpu().numpy(), where.cpu().numpy(), (int(m.shape[-2]), int(m.shape[-1]))

    with hooked(model, stop_after=names, reduce=maxima) as hooks, torch.inference_mode():
        found = hooks.run(lambda: model(x.to(model_device(model))))
    check_ran(names, found)
    return found


def _batch_relevance(model: nn.Module, names: Sequence[str], x: torch.Tensor,
                     target: int) -> dict[str, tuple[Any, ...]]:
    """``{layer: (relevance (B, C), flat argmax (B, C), (H, W))}`` of one batch: per photo and channel,
    the sum over the map's positions of activation x gradient of the logit of ``target`` (the photos
    of a batch are independent in eval mode, so one backward pass of their summed logits gives each
    its own gradient), and the position where that product is largest (where the evidence sits)."""
    hw = (int(x.shape[-2]), int(x.shape[-1]))
    kept: dict[str, dict[str, torch.Tensor]] = {}

    def keep(name: str) -> Any:
        def hook(_m: nn.Module, _a: Any, output: Any) -> None:
            out = output[0] if isinstance(output, tuple) else output
            if name in kept:  # a module that runs twice: its first run is the layer
                return
            # clone now: ResNet's `out += identity` rewrites this tensor after the hook saw it
            kept[name] = {"act": out.detach().clone()}
            hooks.tensor_hook(out, lambda grad: kept[name].__setitem__("grad", grad.detach()))
        return hook

    with hooked(model) as hooks:
        for name in names:
            hooks.forward_hook(name, keep(name))
        xg = x.to(model_device(model)).clone().requires_grad_(True)
        logits = model(xg)
        logits = logits[0] if isinstance(logits, tuple) else logits
        if target >= logits.shape[-1]:
            raise AtlasError(f"The model has {logits.shape[-1]} classes; give a target from 0 to "
                             f"{logits.shape[-1] - 1}, not {target}.")
        check_ran(names, kept)
        logits[:, target].sum().backward()
    found = {}
    for name in names:
        act = kept[name]["act"]
        grad = kept[name].get("grad", torch.zeros_like(act))
        product = maps_of(model, {name: act}, hw)[name] * maps_of(model, {name: grad}, hw)[name]
        _, where = product.flatten(2).max(dim=2)
        found[name] = (product.sum(dim=(2, 3)).float().cpu().numpy(), where.cpu().numpy(),
                       (int(product.shape[-2]), int(product.shape[-1])))
    return found


def _placement(spec: InputSpec, wh: np.ndarray, input_hw: tuple[int, int]) -> tuple[np.ndarray, ...]:
    """Per image: the resized width and height before any crop, and the crop's left and top (where
    :func:`vizhooks.models.images.fit_to_model` puts it: :func:`~vizhooks.models.images.fit_geometry`)."""
    w0, h0 = wh[:, 0], wh[:, 1]
    if not spec.fixed_size:
        zeros = np.zeros_like(w0)
        return np.full_like(w0, input_hw[1]), np.full_like(h0, input_hw[0]), zeros, zeros
    placed = np.array([fit_geometry(int(w), int(h), spec) for w, h in zip(w0, h0, strict=True)], np.int64)
    return tuple(placed.reshape(-1, 4).T)


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


def fold(job: Job, state: PartialAtlas, items: list[dict]) -> None:
    """Run one batch of same-shaped prepared images and merge its top-k into ``state``."""
    x = torch.stack([item["x"] for item in items])
    paths = [item["path"] for item in items]
    wh = np.asarray([item["wh"] for item in items], np.int64)
    input_hw = (int(x.shape[-2]), int(x.shape[-1]))
    scored = (_batch_relevance(job.bundle.model, job.names, x, int(job.target or 0)) if job.rank == "relevance"
              else _batch_maxima(job.bundle.model, job.names, x))
    for name, (values, where, (_, width)) in scored.items():
        ys, xs = where // width, where % width
        boxes = _boxes(job.rfs[name], ys, xs, wh, input_hw, job.bundle.input)
        state.tops[name] = state.tops[name].merge(TopK.from_batch(job.top, values, paths, ys, xs, boxes))
    state.done.extend(paths)


class Buckets:
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


def scan_paths(
    bundle: ModelBundle,
    folder: str | os.PathLike,
    paths: Sequence[str],
    layers: str | Iterable[str],
    *,
    top: int = 9,
    size: int = 224,
    batch: int = 32,
    rank: str = "activation",
    target: int | None = None,
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
        rank: ``"activation"`` (a channel's peak) or ``"relevance"``: the channel's Taylor relevance
            for class ``target`` (activation x gradient of its logit, summed over the positions).

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
    check_settings(top, size, batch)
    check_rank(rank, target)
    names = resolve_layers(bundle.model, layers)
    job = Job(bundle, Path(folder), names, receptive_fields(bundle.model, names, trace_hw(bundle, size)),
               top, size, batch, rank, target)
    state = PartialAtlas.empty(names, top)
    prepare, buckets = Prepare(bundle, size), Buckets(batch)
    for path in paths:
        item = prepare(job.root, path)
        if item["error"] is not None:
            state.skipped[path] = item["error"]
            continue
        for ready in buckets.add(item):
            fold(job, state, ready)
    for ready in buckets.rest():
        fold(job, state, ready)
    state.done.sort()
    return state
