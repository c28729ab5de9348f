"""Audit a labelled folder: where the model goes wrong, and whether it is right for the wrong reason.

An ImageFolder layout (one sub-folder per true class) goes through the model once: every picture's
prediction, the confusion matrix, and the explanation map of the picture's *predicted* class,
down-sampled to ``map_size`` x ``map_size``. Then Spectral Relevance Analysis (SpRAy, Lapuschkin et
al. 2019, as in CoRelAy/ViRelAy) clusters each class's maps: a cluster whose heat sits at an edge or
in a corner gives a shortcut away (the wolf told by the snow, the horse by a copyright tag).

* **Maps.** Grad-CAM runs batched: one forward and one backward per batch (the sum of each
  picture's predicted logit; in eval mode the pictures do not mix), each picture's map made by
  :func:`vizhooks.interpret.cam.cam_from`, so it equals :func:`~vizhooks.interpret.cam.grad_cam`
  on that picture alone. Other methods go through :func:`vizhooks.interpret.methods.explain`, one
  picture at a time. Down-sampling is an area mean (``adaptive_avg_pool2d``).
* **SpRAy.** Each map is divided by its largest absolute value and flattened; scikit-learn's
  ``SpectralClustering`` with a nearest-neighbour affinity (``n_neighbors = min(10, n - 1)``,
  ``random_state=0``) clusters them. ``clusters="auto"`` takes the number of clusters from the
  largest eigengap of the normalised Laplacian of that same affinity, from 2 to 8.
* **Shortcut flag.** A cluster's mean map has a centre of mass; when it lies more than
  :data:`OFF_CENTRE` of the picture's side from the centre, the cluster is flagged and
  ``where`` names the ninth of the picture it lies in (``"bottom-right"``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vizhooks._hooks import first_tensor, hooked, keep, model_device
from vizhooks.errors import CodedError
from vizhooks.interpret.cam import cam_from
from vizhooks.interpret.methods import METHODS, default_layers, explain
from vizhooks.models.images import IMAGENET_MEAN, IMAGENET_STD, InvalidImageError, load_image, preprocess
from vizhooks.models.layers import resolve_layers
from vizhooks.models.registry import ModelBundle

#: File endings counted as pictures (torchvision's ImageFolder's).
IMAGE_ENDINGS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
#: The column of the confusion matrix for predictions outside the folder's classes.
OTHER = "other"
#: ``clusters="auto"`` chooses from this many clusters.
AUTO_RANGE = (2, 8)
#: A cluster's heat centre this far (a fraction of the side) from the picture's centre is flagged.
OFF_CENTRE = 0.2
#: The nine parts of a picture, row by row, as ``Cluster.where`` names them.
REGIONS = ("top-left", "top", "top-right", "left", "centre", "right", "bottom-left", "bottom", "bottom-right")
ENGINES = ("local",)

#: ``progress(done, total)``: pictures done so far.
Progress = Callable[[int, int], None]
#: ``on_batch(rows, maps)``: each batch's prediction rows and maps as soon as they are known (a caller
#: that writes them as it goes keeps what was finished when a long run stops).
OnBatch = Callable[[list[dict[str, Any]], dict[str, np.ndarray]], None]

_WNID = re.compile(r"^n\d{8}$")


class AuditError(CodedError):
    """A folder, class or setting the audit cannot use, said in one sentence (``code``: ``audit_*``)."""


@dataclass(frozen=True)
class Cluster:
    """One SpRAy cluster of a class.

    Attributes:
        id: the cluster's number within its class (0, 1, ...), largest cluster first.
        mean: (map_size, map_size) mean of its members' normalised maps.
        members: picture paths, nearest to the mean first.
        distances: each member's Euclidean distance to the mean, in the same order.
        centre: (row, column) of the mean map's centre of mass, as fractions of the side.
        where: the part of the picture that centre lies in (one of :data:`REGIONS`).
        shortcut: True when the centre is off the picture's centre (see :data:`OFF_CENTRE`).
    """

    id: int
    mean: np.ndarray
    members: list[str]
    distances: list[float]
    centre: tuple[float, float]
    where: str
    shortcut: bool

    @property
    def size(self) -> int:
        return len(self.members)


@dataclass
class Audit:
    """What :func:`audit` found in a folder.

    Attributes:
        folder: the folder audited.
        classes: its class sub-folders, in order (sorted, as ImageFolder reads them).
        outputs: the model output each class was matched to, in the same order.
        columns: the confusion matrix's columns: ``classes``, then ``"other"`` when the model
            predicted a class outside the folder's.
        predictions: one dict per picture: ``path`` (relative to ``folder``, ``/`` separators),
            ``label``, ``predicted`` (name), ``predicted_index``, ``confidence`` (softmax), ``correct``.
        confusion: (K, len(columns)) integers, rows the true class, columns the predicted one.
        maps: path -> (map_size, map_size) float32 map of the predicted class.
        clusters: class -> {path: cluster id}.
        groups: class -> its :class:`Cluster` list, largest first.
        skipped: (path, reason) of every file that could not be read.
    """

    folder: Path
    classes: list[str]
    outputs: list[int]
    columns: list[str]
    predictions: list[dict[str, Any]]
    confusion: np.ndarray
    maps: dict[str, np.ndarray]
    clusters: dict[str, dict[str, int]]
    groups: dict[str, list[Cluster]]
    skipped: list[tuple[str, str]]
    method: str = "gradcam"
    layer: str = ""
    map_size: int = 16

    def accuracy(self) -> dict[str, float]:
        """Each class's share of pictures predicted right (NaN for a class whose pictures were all skipped)."""
        out = {}
        for i, name in enumerate(self.classes):
            total = int(self.confusion[i].sum())
            out[name] = float(self.confusion[i, i]) / total if total else float("nan")
        return out

    def suspicious(self) -> list[tuple[str, Cluster]]:
        """Every flagged cluster as (class, cluster), class by class."""
        return [(name, c) for name in self.classes for c in self.groups.get(name, []) if c.shortcut]

    def mistakes(self) -> list[dict[str, Any]]:
        """The wrong predictions, most confident first."""
        return sorted((p for p in self.predictions if not p["correct"]), key=lambda p: -p["confidence"])


# ----------------------------------------------------------------------------------------------
# the folder and its classes


def _pictures(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in IMAGE_ENDINGS
                  and not any(part.startswith(".") for part in p.relative_to(folder).parts))


def class_folders(folder: str | Path) -> dict[str, list[Path]]:
    """The class sub-folders of ``folder`` and their picture files, in ImageFolder's order.

    Raises:
        AuditError: no such folder, no class sub-folders, or a class sub-folder without pictures.
    """
    root = Path(folder)
    if not root.is_dir():
        raise AuditError(f"There is no folder at {root}; give a folder with one sub-folder of pictures per class.",
                         "audit_no_folder", folder=str(root))
    dirs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    if not dirs:
        raise AuditError(f"{root} has no class sub-folders; put each class's pictures in a sub-folder named "
                         "after the class.", "audit_no_classes", folder=str(root))
    found = {d.name: _pictures(d) for d in dirs}
    for name, files in found.items():
        if not files:
            raise AuditError(f"The class folder {root / name} holds no pictures; add some or remove it.",
                             "audit_empty", folder=str(root / name))
    return found


#: What an in-memory audit calls its folder in sentences and in ``Audit.folder``.
IN_MEMORY = "<photos in memory>"


def _in_memory(classes: Mapping[str, Sequence[tuple[str, bytes]]]) -> dict[str, list[tuple[str, bytes]]]:
    """``{class: [(file name, picture bytes), ...]}`` as :func:`audit` reads a folder: ``"class/name"`` paths."""
    if not classes:
        raise AuditError("No classes were given; give at least one class with pictures.", "audit_no_classes",
                         folder=IN_MEMORY)
    found = {}
    for name, pictures in classes.items():
        if not pictures:
            raise AuditError(f"The class {name} holds no pictures; add some or remove it.", "audit_empty",
                             folder=f"{IN_MEMORY}/{name}")
        found[str(name)] = [(f"{name}/{file}", data) for file, data in pictures]
    return found


@dataclass(frozen=True)
class _Net:
    model: nn.Module
    categories: list[str] | None
    prepare: Callable[[Any], torch.Tensor]


def _net(model: ModelBundle | nn.Module, categories: Sequence[str] | None, size: int,
         mean_std: tuple | None) -> _Net:
    if isinstance(model, ModelBundle):
        bundle = model
        cats = list(categories) if categories is not None else list(bundle.categories)
        return _Net(bundle.model, cats, lambda im: bundle.preprocess(im, size))
    if not isinstance(model, nn.Module):
        raise AuditError(f"audit needs a ModelBundle (load_model) or a torch nn.Module, not {type(model).__name__}.",
                         "audit_model")
    found = categories if categories is not None else getattr(model, "categories", None)
    mean, std = mean_std or getattr(model, "mean_std", None) or (IMAGENET_MEAN, IMAGENET_STD)
    return _Net(model, None if found is None else list(found),
                lambda im: preprocess(im, size, mean=tuple(mean), std=tuple(std)))


def _wordnet_ids() -> list[str]:
    """The 1000 ImageNet WordNet ids in class order, from the list timm ships (read, not imported)."""
    from importlib.util import find_spec

    spec = find_spec("timm")
    if spec is None or spec.origin is None:  # pragma: no cover - timm is installed with vizhooks
        return []
    path = Path(spec.origin).parent / "data" / "_info" / "imagenet_synsets.txt"
    return path.read_text().split() if path.is_file() else []


def match_classes(names: Sequence[str], categories: Sequence[str] | None, outputs: int,
                  folder: str | Path = "") -> list[int]:
    """The model output of each class folder: by name (case-insensitive), by ImageNet WordNet id
    (``n02123045``, for a 1000-class model) or by integer index.

    Raises:
        AuditError: a folder that matches none of them, naming it.
    """
    by_name = {c.strip().lower(): i for i, c in reversed(list(enumerate(categories or [])))}
    wnids: dict[str, int] | None = None
    found = []
    for name in names:
        key = name.strip().lower()
        if key in by_name:
            found.append(by_name[key])
            continue
        if _WNID.match(key) and outputs == 1000:
            if wnids is None:
                wnids = {w: i for i, w in enumerate(_wordnet_ids())}
            if key in wnids:
                found.append(wnids[key])
                continue
        if key.isdigit() and int(key) < outputs:
            found.append(int(key))
            continue
        example = ", ".join(repr(c) for c in (categories or [])[:3]) or "0, 1, 2"
        raise AuditError(f"The class folder {Path(folder) / name} matches no output of the model; name it after "
                         f"one of the model's classes ({example}, ...), its index or its WordNet id.",
                         "audit_unmatched", folder=str(Path(folder) / name), example=example)
    return found


# ----------------------------------------------------------------------------------------------
# predictions and maps


def _downsample(m: torch.Tensor, map_size: int) -> np.ndarray:
    small = F.adaptive_avg_pool2d(m.float()[None, None], (map_size, map_size))[0, 0]
    return small.numpy().astype(np.float32)


def gradcam_batch(model: nn.Module, x: torch.Tensor, layer: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits of a batch and each picture's Grad-CAM map of its top-1 class, from one forward and one
    backward pass (the sum of the top-1 logits). Each map equals :func:`grad_cam` on that picture alone.

    Returns:
        ``(logits (N, classes), [ (H, W) map in [0, 1] per picture ])``, on the CPU.
    """
    kept: dict[str, torch.Tensor] = {}
    with hooked(model) as hooks:
        def hook(_m: nn.Module, _args: Any, output: Any) -> None:
            if "a" in kept:  # a module that runs twice: its first run, as grad_cam's key ``layer``
                return
            out = first_tensor(output)
            kept["a"] = keep(out)
            hooks.tensor_hook(out, lambda grad: kept.__setitem__("g", keep(grad)))

        hooks.forward_hook(layer, hook)
        with torch.enable_grad():
            xg = x.detach().to(model_device(model)).clone().requires_grad_(True)
            logits = first_tensor(model(xg))
            top = logits.argmax(dim=1, keepdim=True)
            torch.autograd.grad(logits.gather(1, top).sum(), xg)
    a = kept.get("a")
    if a is None or a.ndim != 4:
        got = "did not run" if a is None else f"gives a {tuple(a.shape)} tensor"
        raise AuditError(f"Grad-CAM needs a layer whose output is an (N, C, h, w) map; {layer!r} {got}.",
                         "audit_layer", layer=layer)
    g = kept.get("g", torch.zeros_like(a))
    size = (int(x.shape[-2]), int(x.shape[-1]))
    maps = [cam_from(a[i:i + 1], g[i:i + 1], size) for i in range(len(a))]
    return logits.detach().float().cpu(), maps


def _batch_maps(net: nn.Module, x: torch.Tensor, method: str, layer: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
    if method == "gradcam":
        return gradcam_batch(net, x, layer)
    with hooked(net), torch.no_grad():
        logits = first_tensor(net(x.to(model_device(net)))).float().cpu()
    maps = [explain(net, x[i:i + 1], int(logits[i].argmax()), [method], [layer])[method] for i in range(len(x))]
    return logits, maps


# ----------------------------------------------------------------------------------------------
# SpRAy


def normalised(maps: np.ndarray) -> np.ndarray:
    """(n, s, s) maps as (n, s * s) rows, each divided by its largest absolute value (zeros stay zeros)."""
    flat = maps.reshape(len(maps), -1).astype(np.float64)
    top = np.abs(flat).max(axis=1, keepdims=True)
    return flat / np.where(top > 0, top, 1.0)


def neighbours(n: int) -> int:
    """The nearest-neighbour count of the affinity for ``n`` maps."""
    return max(1, min(10, n - 1))


def eigengap(features: np.ndarray, low: int = AUTO_RANGE[0], high: int = AUTO_RANGE[1]) -> int:
    """The number of clusters (``low`` to ``high``, at most n - 1) after which the eigenvalues of the
    normalised Laplacian of the nearest-neighbour affinity jump most."""
    from scipy.sparse.csgraph import laplacian
    from sklearn.neighbors import kneighbors_graph  # type: ignore[import-untyped]

    n = len(features)
    graph = kneighbors_graph(features, n_neighbors=neighbours(n), include_self=True)
    affinity = (0.5 * (graph + graph.T)).toarray()
    values = np.sort(np.linalg.eigvalsh(laplacian(affinity, normed=True)))
    top = min(high, n - 1)
    if top <= low:
        return max(1, min(low, n - 1))
    gaps = [values[k] - values[k - 1] for k in range(low, top + 1)]
    return low + int(np.argmax(gaps))


def spray(maps: np.ndarray, clusters: int | str = "auto") -> np.ndarray:
    """Cluster labels of (n, s, s) maps: scikit-learn's spectral clustering of the normalised maps."""
    from sklearn.cluster import SpectralClustering  # type: ignore[import-untyped]

    n = len(maps)
    features = normalised(maps)
    k = eigengap(features) if clusters == "auto" else min(int(clusters), n)
    if n < 3 or k < 2:
        return np.zeros(n, dtype=int)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Graph is not fully connected": separate groups are what we look for
        found = SpectralClustering(n_clusters=k, affinity="nearest_neighbors", n_neighbors=neighbours(n),
                                   random_state=0).fit_predict(features)
    return np.asarray(found, dtype=int)


def region(centre: tuple[float, float]) -> str:
    """The ninth of the picture (one of :data:`REGIONS`) that a (row, column) point in [0, 1] lies in."""
    row, col = (min(int(v * 3), 2) for v in centre)
    return REGIONS[3 * row + col]


def _clusters(paths: list[str], maps: np.ndarray, labels: np.ndarray) -> tuple[dict[str, int], list[Cluster]]:
    features = normalised(maps)
    side = maps.shape[-1]
    order = sorted(set(labels.tolist()), key=lambda c: (-(labels == c).sum(), c))
    renumber = {old: new for new, old in enumerate(order)}
    found = []
    grid = (np.arange(side) + 0.5) / side
    for old in order:
        idx = np.flatnonzero(labels == old)
        mean = features[idx].mean(axis=0)
        dist = np.linalg.norm(features[idx] - mean, axis=1)
        ranked = np.argsort(dist, kind="stable")
        heat = np.clip(mean.reshape(side, side), 0, None)
        total = heat.sum()
        centre = ((float((heat.sum(axis=1) * grid).sum() / total), float((heat.sum(axis=0) * grid).sum() / total))
                  if total > 0 else (0.5, 0.5))
        off = float(np.hypot(centre[0] - 0.5, centre[1] - 0.5))
        found.append(Cluster(id=renumber[old], mean=mean.reshape(side, side).astype(np.float32),
                             members=[paths[idx[i]] for i in ranked], distances=[float(dist[i]) for i in ranked],
                             centre=centre, where=region(centre), shortcut=off > OFF_CENTRE))
    return {p: renumber[int(c)] for p, c in zip(paths, labels, strict=True)}, found


# ----------------------------------------------------------------------------------------------
# the entry


def _check(method: str, clusters: int | str, engine: str, batch_size: int, map_size: int) -> None:
    if method not in METHODS:
        raise AuditError(f"Unknown explanation method {method!r}; choose from {', '.join(METHODS)}.",
                         "audit_method", method=str(method), known=", ".join(METHODS))
    if clusters != "auto" and (isinstance(clusters, bool) or not isinstance(clusters, int) or clusters < 1):
        raise AuditError(f"clusters must be 'auto' or a whole number of at least 1, not {clusters!r}.",
                         "audit_clusters", value=str(clusters))
    if engine not in ENGINES:
        raise AuditError(f"The audit engine must be {' or '.join(repr(e) for e in ENGINES)}, not {engine!r}.",
                         "audit_engine", engine=str(engine))
    for name, value, low in (("batch_size", batch_size, 1), ("map_size", map_size, 2)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise AuditError(f"{name} must be a whole number of at least {low}, not {value!r}.", "audit_setting",
                             name=name, value=str(value))


def audit(
    model: ModelBundle | nn.Module,
    folder: str | Path | Mapping[str, Sequence[tuple[str, bytes]]],
    *,
    categories: Sequence[str] | None = None,
    layer: str | None = None,
    method: str = "gradcam",
    size: int = 224,
    mean_std: tuple | None = None,
    clusters: int | str = "auto",
    engine: str = "local",
    batch_size: int = 32,
    map_size: int = 16,
    progress: Progress | None = None,
    on_batch: OnBatch | None = None,
) -> Audit:
    """Predictions, confusion, explanation maps and SpRAy clusters of a labelled folder.

    Args:
        model: a :class:`ModelBundle` (its own preprocessing and categories) or an ``nn.Module``
            (its ``categories`` and ``mean_std`` attributes when it has them; ImageNet's mean and std else).
        folder: one sub-folder per true class, named after a model class, its index or WordNet id; or the
            same in memory, ``{class: [(file name, picture bytes), ...]}`` (a page's photos, never written
            to disk), whose paths are then ``"class/file name"``.
        categories: the model's class names (instead of the model's own).
        layer: the CAM layer; default :func:`vizhooks.interpret.methods.default_layers`.
        method: an explanation method of :data:`vizhooks.interpret.methods.METHODS`.
        size: the shorter side pictures are seen at.
        mean_std: ``(mean, std)`` for a bare module.
        clusters: ``"auto"`` (eigengap, 2 to 8) or the number of clusters per class.
        engine: ``"local"``.
        batch_size: pictures per forward (and, for Grad-CAM, backward) pass.
        map_size: side of the down-sampled maps.
        progress: ``progress(done, total)`` after each batch.
        on_batch: ``on_batch(rows, maps)`` with each batch's new prediction rows and maps.

    Raises:
        AuditError: a missing folder, no class sub-folders, an empty class folder, a class folder
            that matches no model output, pictures none of which could be read, a bad setting.

    Example:
        >>> found = audit(load_model("resnet18"), "photos/", clusters=2)
        >>> found.confusion, found.suspicious()
    """
    _check(method, clusters, engine, batch_size, map_size)
    files: dict[str, list[tuple[str, Path | bytes]]]
    if isinstance(folder, Mapping):  # pictures in memory (a page's photos): nothing is written to disk
        root = Path(IN_MEMORY)
        files = {name: list(pictures) for name, pictures in _in_memory(folder).items()}
    else:
        root = Path(folder)
        files = {name: [(path.relative_to(root).as_posix(), path) for path in paths]
                 for name, paths in class_folders(root).items()}
    net = _net(model, categories, size, mean_std)
    layer = resolve_layers(net.model, [layer])[0] if layer else default_layers(net.model)[0]
    names = list(files)
    todo = [(rel, source, name) for name in names for rel, source in files[name]]
    skipped: list[tuple[str, str]] = []
    rows: list[dict[str, Any]] = []
    maps: dict[str, np.ndarray] = {}
    outputs: list[int] | None = None
    batch: list[tuple[str, str, torch.Tensor]] = []

    def flush() -> None:
        nonlocal outputs
        if not batch:
            return
        logits, found = _batch_maps(net.model, torch.cat([b[2] for b in batch]), method, layer)
        if outputs is None:
            outputs = match_classes(names, net.categories, int(logits.shape[-1]), root)
        probs = torch.softmax(logits, dim=1)
        first = len(rows)
        for (rel, label, _), row, m in zip(batch, probs, found, strict=True):
            index = int(row.argmax())
            predicted = (names[outputs.index(index)] if index in outputs
                         else net.categories[index] if net.categories and index < len(net.categories) else str(index))
            rows.append({"path": rel, "label": label, "predicted": predicted, "predicted_index": index,
                         "confidence": float(row[index]), "correct": outputs[names.index(label)] == index})
            maps[rel] = _downsample(m, map_size)
        batch.clear()
        if on_batch is not None:
            on_batch(rows[first:], {r["path"]: maps[r["path"]] for r in rows[first:]})
        if progress is not None:
            progress(len(rows) + len(skipped), len(todo))

    for rel, source, label in todo:
        try:
            x = net.prepare(load_image(source))
        except InvalidImageError as exc:
            skipped.append((rel, str(exc)))
            continue
        if batch and (len(batch) >= batch_size or batch[0][2].shape != x.shape):
            flush()
        batch.append((rel, label, x))
    flush()
    if outputs is None:
        raise AuditError(f"None of the {len(todo)} picture files in {root} could be read; see the skipped list.",
                         "audit_unreadable", folder=str(root), n=len(todo))
    indices = outputs
    other = any(r["predicted_index"] not in indices for r in rows)
    columns = names + ([OTHER] if other else [])
    confusion = np.zeros((len(names), len(columns)), dtype=np.int64)
    for r in rows:
        col = indices.index(r["predicted_index"]) if r["predicted_index"] in indices else len(names)
        confusion[names.index(r["label"]), col] += 1
    by_class: dict[str, dict[str, int]] = {}
    groups: dict[str, list[Cluster]] = {}
    for name in names:
        paths = [r["path"] for r in rows if r["label"] == name]
        if not paths:
            continue
        stack = np.stack([maps[p] for p in paths])
        by_class[name], groups[name] = _clusters(paths, stack, spray(stack, clusters))
    return Audit(folder=root, classes=names, outputs=indices, columns=columns, predictions=rows,
                 confusion=confusion, maps=maps, clusters=by_class, groups=groups, skipped=skipped,
                 method=method, layer=layer, map_size=map_size)


__all__ = ["AUTO_RANGE", "OFF_CENTRE", "OTHER", "REGIONS", "Audit", "AuditError", "Cluster", "OnBatch", "Progress",
           "audit", "class_folders", "eigengap", "gradcam_batch", "match_classes", "normalised", "region", "spray"]
