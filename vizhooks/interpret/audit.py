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
* **Shortcut flag.** A cluster's mean map has a centre of mass; ``where`` names the ninth of the
  picture it lies in (``"bottom-right"``). Off the centre alone is not a shortcut: an ordinary object
  can sit anywhere. A cluster is flagged when its members look at *one spot*
  (their own heat centres lie within :data:`SPOT` of the side of their mean, root mean square), many
  of the class's pictures look there too (at least :data:`MIN_SHARE` of them, and 3, have their heat
  centre within :data:`SPOT` of it), and that spot is more than :data:`OFF_CENTRE` of the side from
  the picture's centre. A sticker stays put from picture to
  picture; objects placed anywhere spread their heat over the picture.
* **Engines.** ``"local"`` reads and runs the pictures in this process; ``"ray"`` cuts the folder into
  shards of whole batches that Ray Data's actors (each holding the model) run with the same code, and
  takes their results back in the folder's order, so the audit, the store and the callbacks are the
  same as the local engine's.
* **Resume and bounded memory.** With ``store=`` a folder, each finished batch is appended there
  (``rows.jsonl``: one line per picture; ``maps.f32``: its map) before anything else sees it; a rerun
  with the same store and settings reads what is there and processes only the rest. The maps are
  then read from disk (``Audit.maps`` is a view over ``maps.f32``), full-size maps never live longer
  than their batch, and SpRAy clusters at most :data:`SPRAY_LIMIT` maps per class (an even sample;
  the rest join the nearest cluster mean), reading the maps in chunks: memory holds one summary row
  per picture, not its maps.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vizhooks._hooks import first_tensor, hooked, keep, model_device
from vizhooks._ray import actors, session
from vizhooks.errors import CodedError
from vizhooks.i18n import Names, SettingNames
from vizhooks.interpret.cam import cam_from
from vizhooks.interpret.methods import METHODS, default_layers, explain
from vizhooks.models.images import IMAGENET_MEAN, IMAGENET_STD, InvalidImageError, load_image, preprocess
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import cam_map, channels_last_modules
from vizhooks.models.registry import ModelBundle

#: File endings counted as pictures (torchvision's ImageFolder's).
IMAGE_ENDINGS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")
#: The column of the confusion matrix for predictions outside the folder's classes.
OTHER = "other"
#: ``clusters="auto"`` chooses from this many clusters.
AUTO_RANGE = (2, 8)
#: A cluster's heat centre this far (a fraction of the side) from the picture's centre is flagged.
OFF_CENTRE = 0.2
#: Members' own heat centres within this far (root mean square, a fraction of the side) are one spot.
SPOT = 0.1
#: A flagged cluster holds at least this share of its class's pictures.
MIN_SHARE = 0.2
#: SpRAy clusters at most this many maps of a class (the spectral affinity is n x n); the rest join the
#: nearest cluster mean.
SPRAY_LIMIT = 2000
#: Maps read from a store at a time while clustering.
CHUNK = 4096
#: The nine parts of a picture, row by row, as ``Cluster.where`` names them.
REGIONS = ("top-left", "top", "top-right", "left", "centre", "right", "bottom-left", "bottom", "bottom-right")
ENGINES = ("local", "ray")

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
        shortcut: True when the class's pictures look at one spot off the centre: ``share`` at least
            :data:`MIN_SHARE`, ``spread`` at most :data:`SPOT`, ``centre`` beyond :data:`OFF_CENTRE`.
        spread: root mean square distance of the members' own heat centres from their mean (side = 1).
        share: the share of the class's pictures whose own heat centre lies within :data:`SPOT` of this
            cluster's spot (the mean of its members' centres): how many look where this cluster looks.
    """

    id: int
    mean: np.ndarray
    members: list[str]
    distances: list[float]
    centre: tuple[float, float]
    where: str
    shortcut: bool
    spread: float = 0.0
    share: float = 1.0

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
    maps: Mapping[str, np.ndarray]
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
    if root.exists() and not root.is_dir():
        raise AuditError(code="audit_is_file", folder=str(root))
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
    a, size = kept.get("a"), (int(x.shape[-2]), int(x.shape[-1]))
    shape, g = None if a is None else tuple(a.shape), None
    if a is not None:  # as a CAM weighs it: a ViT's tokens over its patch grid, Swin's maps permuted
        channels_last = layer in channels_last_modules(model)
        g = cam_map(kept.get("g", torch.zeros_like(a)), size, channels_last)
        a = cam_map(a, size, channels_last)
    if a is None or g is None:
        got = "did not run" if shape is None else f"gives a {shape} tensor"
        raise AuditError(f"Grad-CAM needs a layer whose output is a map over the picture ((N, C, h, w), or a ViT's "
                         f"tokens); {layer!r} {got}.", "audit_layer", layer=layer)
    maps = [cam_from(a[i:i + 1], g[i:i + 1], size) for i in range(len(a))]
    return logits.detach().float().cpu(), maps


def _batch_maps(net: nn.Module, x: torch.Tensor, method: str, layer: str) -> tuple[torch.Tensor, list[torch.Tensor]]:
    if method == "gradcam":
        return gradcam_batch(net, x, layer)
    with hooked(net), torch.no_grad():
        logits = first_tensor(net(x.to(model_device(net)))).float().cpu()
    maps = [explain(net, x[i:i + 1], int(logits[i].argmax()), [method], [layer])[method] for i in range(len(x))]
    return logits, maps


#: One picture's result as a pass finds it: ``(path, label, predicted index, confidence, small map)``.
Result = tuple[str, str, int, float, np.ndarray]
#: What :func:`_passes` yields per batch: ``(model outputs, results, files skipped since the last)``;
#: ``outputs`` is None for a last yield of skipped files only.
Pass = tuple[int | None, list[Result], list[tuple[str, str]]]
#: ``(method, layer, batch_size, map_size)``.
Settings = tuple[str, str, int, int]


def _passes(net: _Net, items: Sequence[tuple[str, Path | bytes, str]], method: str, layer: str, batch_size: int,
            map_size: int) -> Iterator[Pass]:
    """The pictures ``(path, file or bytes, label)`` read, batched (a batch ends at ``batch_size`` or where the
    picture shape changes) and run: each batch's predictions and down-sampled maps, and the unreadable files
    met before it. Both engines run this; Ray on shards of the folder."""
    batch: list[tuple[str, str, torch.Tensor]] = []
    skipped: list[tuple[str, str]] = []

    def run() -> Pass:
        logits, found = _batch_maps(net.model, torch.cat([b[2] for b in batch]), method, layer)
        probs = torch.softmax(logits, dim=1)
        results = []
        for (rel, label, _), row, m in zip(batch, probs, found, strict=True):
            index = int(row.argmax())
            results.append((rel, label, index, float(row[index]), _downsample(m, map_size)))
        out = (int(logits.shape[-1]), results, list(skipped))
        batch.clear()
        skipped.clear()
        return out

    for rel, source, label in items:
        try:
            x = net.prepare(load_image(source))
        except InvalidImageError as exc:
            skipped.append((rel, str(exc)))
            continue
        if batch and (len(batch) >= batch_size or batch[0][2].shape != x.shape):
            yield run()
        batch.append((rel, label, x))
    if batch:
        yield run()
    elif skipped:
        yield None, [], list(skipped)


#: Pictures per shard of the ray engine, in batches: fewer round trips, fuller batches.
SHARD_BATCHES = 4


def _shards(items: list[Any], batch_size: int, workers: int) -> list[list[Any]]:
    """``items`` cut into shards of whole batches, at most :data:`SHARD_BATCHES` of them, and small enough
    that every worker gets two (as the exemplar engine cuts them)."""
    per_worker = -(-len(items) // (2 * workers))
    size = max(batch_size * max(1, min(SHARD_BATCHES, per_worker // batch_size)), 1)
    return [items[i:i + size] for i in range(0, len(items), size)]


class _ShardAuditor:
    """The callable class of Ray Data's ``map_batches``: one per worker, holding the model; each batch
    names shards by number and comes back as their pickled passes (a list of :data:`Pass`)."""

    def __init__(self, net_ref: Any, shards_ref: Any, settings: Settings, gpu: bool) -> None:
        import ray

        model, categories, size, mean_std = ray.get(net_ref)
        if gpu and torch.cuda.is_available():
            (model.model if isinstance(model, ModelBundle) else model).to("cuda")
        self.net = _net(model, categories, size, mean_std)
        self.shards, self.settings = ray.get(shards_ref), settings

    def __call__(self, batch: dict) -> dict:
        import pickle

        parts = [pickle.dumps(list(_passes(self.net, self.shards[int(i)], *self.settings))) for i in batch["shard"]]
        return {"part": np.array(parts, dtype=object)}


def _no_ray() -> AuditError:
    return AuditError("The ray engine needs Ray: pip install 'vizhooks[ray]', or use the local engine.", "audit_no_ray")


def _ray_passes(net_args: tuple[Any, ...], items: list[tuple[str, Path | bytes, str]], settings: Settings,
                workers: int) -> Iterator[Pass]:
    """:func:`_passes` on Ray Data: shards of whole batches go through ``map_batches`` with one model actor
    per worker (``workers``; 0: one per GPU of the cluster, else one per CPU) and come back in the folder's
    order, so the driver keeps, stores and reports them exactly as the local engine's. An existing Ray
    session is used as it is; else the cluster of ``RAY_ADDRESS``, else a Ray of this machine, shut down
    after."""
    if not items:
        return
    import pickle

    with session(workers, _no_ray) as ray:
        from ray.data import DataContext

        DataContext.get_current().execution_options.preserve_order = True  # shards come back in the folder's order
        gpus, count = actors(ray, workers)
        shards = _shards(items, settings[2], count)
        dataset = ray.data.from_items([{"shard": i} for i in range(len(shards))], override_num_blocks=len(shards))
        parts = dataset.map_batches(
            _ShardAuditor, batch_size=1, compute=ray.data.ActorPoolStrategy(size=min(count, len(shards))), num_cpus=1,
            num_gpus=1 if gpus else 0,
            fn_constructor_kwargs={"net_ref": ray.put(net_args), "shards_ref": ray.put(shards),
                                   "settings": settings, "gpu": bool(gpus)})
        for batch in parts.iter_batches(batch_size=1, batch_format="numpy"):
            for blob in batch["part"]:
                yield from pickle.loads(blob)


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


def heat_centres(maps: np.ndarray) -> np.ndarray:
    """(n, 2) centre of mass (row, column; each side = 1) of each (h, w) map's positive part; (0.5, 0.5) for
    none."""
    h, w = maps.shape[-2:]
    heat = np.clip(maps.reshape(len(maps), h, w).astype(np.float64), 0, None)
    total = heat.sum(axis=(1, 2))
    safe = np.where(total > 0, total, 1.0)
    rows = np.where(total > 0, (heat.sum(axis=2) * ((np.arange(h) + 0.5) / h)).sum(axis=1) / safe, 0.5)
    cols = np.where(total > 0, (heat.sum(axis=1) * ((np.arange(w) + 0.5) / w)).sum(axis=1) / safe, 0.5)
    return np.stack([rows, cols], axis=1)


#: ``read(positions)``: the (len(positions), s, s) maps of a class's members at those positions.
Reader = Callable[[np.ndarray], np.ndarray]


def _chunks(n: int) -> Iterator[np.ndarray]:
    for start in range(0, n, CHUNK):
        yield np.arange(start, min(n, start + CHUNK))


def _labels(read: Reader, n: int, clusters: int | str) -> np.ndarray:
    """SpRAy labels of a class's ``n`` maps: all of them, or an even sample of :data:`SPRAY_LIMIT` whose
    cluster means then take in every map (the nearest mean), read in chunks."""
    if n <= SPRAY_LIMIT:
        return spray(read(np.arange(n)), clusters)
    pick = np.linspace(0, n - 1, SPRAY_LIMIT).round().astype(int)
    sample = read(pick)
    found = spray(sample, clusters)
    ids = np.unique(found)
    means = np.stack([normalised(sample[found == c]).mean(axis=0) for c in ids])
    labels = np.empty(n, dtype=int)
    for idx in _chunks(n):
        feats = normalised(read(idx))
        labels[idx] = ids[((feats[:, None, :] - means[None]) ** 2).sum(axis=2).argmin(axis=1)]
    return labels


def _clusters(paths: list[str], read: Reader, labels: np.ndarray) -> tuple[dict[str, int], list[Cluster]]:
    """Each cluster's mean, members by distance to it, centre and flag, reading the maps in chunks."""
    n = len(paths)
    side = read(np.arange(1)).shape[-1]
    order = sorted(set(labels.tolist()), key=lambda c: (-(labels == c).sum(), c))
    renumber = {old: new for new, old in enumerate(order)}
    sums = {c: np.zeros(side * side) for c in order}
    centres = np.empty((n, 2))
    for idx in _chunks(n):
        maps = read(idx)
        feats = normalised(maps)
        centres[idx] = heat_centres(maps)
        for c in order:
            sums[c] += feats[labels[idx] == c].sum(axis=0)
    means = {c: sums[c] / (labels == c).sum() for c in order}
    dist = np.empty(n)
    for idx in _chunks(n):
        feats = normalised(read(idx))
        for c in order:
            mine = labels[idx] == c
            dist[idx[mine]] = np.linalg.norm(feats[mine] - means[c], axis=1)
    found = []
    for old in order:
        idx = np.flatnonzero(labels == old)
        ranked = idx[np.argsort(dist[idx], kind="stable")]
        mean = means[old]
        centre = tuple(float(v) for v in heat_centres(mean.reshape(1, side, side))[0])
        off = float(np.hypot(centre[0] - 0.5, centre[1] - 0.5))
        spot = centres[idx].mean(axis=0)
        spread = float(np.sqrt(((centres[idx] - spot) ** 2).sum(axis=1).mean()))
        near = np.hypot(*(centres - spot).T) <= SPOT  # the class's pictures looking at this spot
        share = float(near.mean())
        found.append(Cluster(id=renumber[old], mean=mean.reshape(side, side).astype(np.float32),
                             members=[paths[i] for i in ranked], distances=[float(dist[i]) for i in ranked],
                             centre=(centre[0], centre[1]), where=region((centre[0], centre[1])),
                             shortcut=off > OFF_CENTRE and spread <= SPOT and share >= MIN_SHARE and near.sum() >= 3,
                             spread=spread, share=share))
    return {p: renumber[int(c)] for p, c in zip(paths, labels, strict=True)}, found


# ----------------------------------------------------------------------------------------------
# the store: finished batches on disk, for resuming and for bounded memory

ROWS, MAPS, SETTINGS, OUTPUTS = "rows.jsonl", "maps.f32", "settings.json", "outputs.json"


class StoredMaps(Mapping[str, np.ndarray]):
    """``path -> map`` read from a store's ``maps.f32`` (memory-mapped: the maps stay on disk)."""

    def __init__(self, file: Path, index: dict[str, int], map_size: int) -> None:
        self._index = index
        self._data = (np.memmap(file, dtype=np.float32, mode="r", shape=(len(index), map_size, map_size))
                      if index else np.zeros((0, map_size, map_size), np.float32))

    def __getitem__(self, path: str) -> np.ndarray:
        return np.array(self._data[self._index[path]])

    def __iter__(self) -> Iterator[str]:
        return iter(self._index)

    def __len__(self) -> int:
        return len(self._index)

    def positions(self, paths: Sequence[str]) -> np.ndarray:
        """Where these pictures' maps are in the file."""
        return np.array([self._index[p] for p in paths], dtype=np.int64)

    def rows(self, positions: np.ndarray) -> np.ndarray:
        """The maps at these positions of the file (a copy in memory)."""
        return np.asarray(self._data[positions])


def fingerprint(model: nn.Module) -> str:
    """A hash of the model's parameters and buffers: a store is resumed only with the same weights."""
    digest = hashlib.sha256()
    for name, value in list(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(value.detach().float().cpu().contiguous().numpy().tobytes())
    return digest.hexdigest()


class _Store:
    """Append-only record of an audit in a folder: ``settings.json`` (what it was made with), ``rows.jsonl``
    (a prediction row, with its map's number, or a skipped file, per line) and ``maps.f32`` (the maps,
    float32, one after another). The maps of a batch are written before its rows, so a run killed in
    between leaves maps without rows, which the next run cuts off."""

    def __init__(self, folder: Path, settings: dict[str, Any], map_size: int) -> None:
        self.folder, self.map_bytes = folder, map_size * map_size * 4
        self.map_size = map_size
        folder.mkdir(parents=True, exist_ok=True)
        saved = folder / SETTINGS
        if saved.is_file():
            old = json.loads(saved.read_text(encoding="utf-8"))
            changed = [k for k in [*settings, *(k for k in old if k not in settings)] if old.get(k) != settings.get(k)]
            if changed:
                raise AuditError(code="audit_store", folder=str(folder),
                                 changed=SettingNames(f"audit_{key}" for key in changed))
        else:
            for name in (ROWS, MAPS):
                (folder / name).unlink(missing_ok=True)
            saved.write_text(json.dumps(settings, sort_keys=True) + "\n", encoding="utf-8")
        self.rows: list[dict[str, Any]] = []
        self.skipped: list[tuple[str, str]] = []
        self.outputs: list[int] | None = None
        self.index: dict[str, int] = {}
        good = 0
        maps_on_disk = (folder / MAPS).stat().st_size // self.map_bytes if (folder / MAPS).is_file() else 0
        if (folder / ROWS).is_file():
            with open(folder / ROWS, "rb") as f:
                for line in f:
                    if not line.endswith(b"\n"):
                        break  # the half-written last line of a killed run
                    entry = json.loads(line)
                    if "skipped" in entry:
                        self.skipped.append((entry["path"], entry["skipped"]))
                    elif entry["map"] < maps_on_disk:
                        self.index[entry["path"]] = entry.pop("map")
                        self.rows.append(entry)
                    else:
                        break
                    good += len(line)
        if (folder / OUTPUTS).is_file():
            self.outputs = json.loads((folder / OUTPUTS).read_text(encoding="utf-8"))
        for name, size in ((ROWS, good), (MAPS, len(self.index) * self.map_bytes)):
            with open(folder / name, "ab") as f:
                f.truncate(size)

    def done(self) -> set[str]:
        return set(self.index) | {p for p, _ in self.skipped}

    def append(self, rows: list[dict[str, Any]], maps: dict[str, np.ndarray], skipped: list[tuple[str, str]],
               outputs: list[int] | None) -> None:
        if outputs is not None and not (self.folder / OUTPUTS).is_file():
            (self.folder / OUTPUTS).write_text(json.dumps(outputs) + "\n", encoding="utf-8")
        with open(self.folder / MAPS, "ab") as f:
            for r in rows:
                f.write(np.ascontiguousarray(maps[r["path"]], dtype=np.float32).tobytes())
        lines = []
        for r in rows:
            self.index[r["path"]] = len(self.index)
            lines.append(json.dumps({**r, "map": self.index[r["path"]]}))
        lines += [json.dumps({"path": path, "skipped": reason}) for path, reason in skipped]
        with open(self.folder / ROWS, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))

    def maps(self) -> StoredMaps:
        return StoredMaps(self.folder / MAPS, dict(self.index), self.map_size)


# ----------------------------------------------------------------------------------------------
# the entry


def _check(method: str, clusters: int | str, engine: str, batch_size: int, map_size: int, workers: int) -> None:
    if method not in METHODS:
        raise AuditError(f"Unknown explanation method {method!r}; choose from {', '.join(METHODS)}.",
                         "audit_method", method=str(method), known=Names(METHODS))
    if clusters != "auto" and (isinstance(clusters, bool) or not isinstance(clusters, int) or clusters < 1):
        raise AuditError(f"clusters must be 'auto' or a whole number of at least 1, not {clusters!r}.",
                         "audit_clusters", value=str(clusters))
    if engine not in ENGINES:
        raise AuditError(f"The audit engine must be {' or '.join(repr(e) for e in ENGINES)}, not {engine!r}.",
                         "audit_engine", engine=str(engine))
    for name, value, low in (("batch_size", batch_size, 1), ("map_size", map_size, 2), ("workers", workers, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise AuditError(f"{name} must be a whole number of at least {low}, not {value!r}.", "audit_setting",
                             name=name, value=str(value), low=str(low))


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
    store: str | Path | None = None,
    workers: int = 0,
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
        engine: ``"local"`` (this process), or ``"ray"``: shards of the folder on Ray Data, one actor per
            worker holding the model, the results kept in the folder's order; the same audit as ``"local"``
            (and the same store, so either engine resumes the other's run).
        batch_size: pictures per forward (and, for Grad-CAM, backward) pass.
        map_size: side of the down-sampled maps.
        progress: ``progress(done, total)`` after each batch.
        on_batch: ``on_batch(rows, maps)`` with each batch's new prediction rows and maps (with a store,
            first the rows it already holds, a batch at a time).
        store: a folder that keeps every finished batch (see the module's "Resume and bounded memory");
            a rerun with the same folder, model and settings processes only the pictures not yet there,
            and ends as one run would. ``Audit.maps`` is then read from that folder.
        workers: ray only: model actors (0: one per GPU of the cluster, else one per CPU).

    Raises:
        AuditError: a missing folder, no class sub-folders, an empty class folder, a class folder
            that matches no model output, pictures none of which could be read, a bad setting.

    Example:
        >>> found = audit(load_model("resnet18"), "photos/", clusters=2)
        >>> found.confusion, found.suspicious()
    """
    _check(method, clusters, engine, batch_size, map_size, workers)
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
    if net.categories:  # a class folder that matches no output is refused before the store keeps anything
        match_classes(names, net.categories, len(net.categories), root)
    todo = [(rel, source, name) for name in names for rel, source in files[name]]
    saved = None if store is None else _Store(Path(store), {
        "classes": names, "method": method, "layer": layer, "size": size, "map_size": map_size,
        "mean_std": json.loads(json.dumps(mean_std)), "categories": net.categories,
        "model": fingerprint(net.model)}, map_size)
    skipped: list[tuple[str, str]] = []
    rows: list[dict[str, Any]] = []
    maps: dict[str, np.ndarray] = {}  # without a store; with one, the maps are on disk
    outputs: list[int] | None = None
    if saved is not None:
        rows, skipped, outputs = list(saved.rows), list(saved.skipped), saved.outputs
        if on_batch is not None:  # a caller writing files as it goes starts them again from what is kept
            kept = saved.maps()
            for start in range(0, len(rows), batch_size):
                part = rows[start:start + batch_size]
                on_batch(part, {r["path"]: kept[r["path"]] for r in part})
        done = saved.done()
        todo_left = [item for item in todo if item[0] not in done]
        if progress is not None and done:
            progress(len(rows) + len(skipped), len(todo))
    else:
        todo_left = todo
    def take(outputs_seen: int | None, results: list[Result], skipped_now: list[tuple[str, str]]) -> None:
        nonlocal outputs
        if outputs is None and outputs_seen is not None:
            outputs = match_classes(names, net.categories, outputs_seen, root)
        new, small = [], {}
        for rel, label, index, confidence, m in results:
            assert outputs is not None
            predicted = (names[outputs.index(index)] if index in outputs
                         else net.categories[index] if net.categories and index < len(net.categories) else str(index))
            new.append({"path": rel, "label": label, "predicted": predicted, "predicted_index": index,
                        "confidence": confidence, "correct": outputs[names.index(label)] == index})
            small[rel] = m
        if saved is not None:  # on disk first: whatever happens next, this batch is kept
            saved.append(new, small, skipped_now, outputs)
        else:
            maps.update(small)
        rows.extend(new)
        skipped.extend(skipped_now)
        if on_batch is not None and new:
            on_batch(new, small)
        if progress is not None:
            progress(len(rows) + len(skipped), len(todo))

    settings = (method, layer, batch_size, map_size)
    passes = (_passes(net, todo_left, *settings) if engine == "local"
              else _ray_passes((model, categories, size, mean_std), todo_left, settings, workers))
    for found_pass in passes:
        take(*found_pass)
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
    found_maps: Mapping[str, np.ndarray] = maps if saved is None else saved.maps()
    by_class: dict[str, dict[str, int]] = {}
    groups: dict[str, list[Cluster]] = {}
    for name in names:
        paths = [r["path"] for r in rows if r["label"] == name]
        if not paths:
            continue
        read = _reader(found_maps, paths)
        by_class[name], groups[name] = _clusters(paths, read, _labels(read, len(paths), clusters))
    return Audit(folder=root, classes=names, outputs=indices, columns=columns, predictions=rows,
                 confusion=confusion, maps=found_maps, clusters=by_class, groups=groups, skipped=skipped,
                 method=method, layer=layer, map_size=map_size)


def _reader(maps: Mapping[str, np.ndarray], paths: list[str]) -> Reader:
    if isinstance(maps, StoredMaps):
        where = maps.positions(paths)
        return lambda idx: maps.rows(where[idx])
    return lambda idx: np.stack([maps[paths[i]] for i in idx])


__all__ = ["AUTO_RANGE", "CHUNK", "MIN_SHARE", "OFF_CENTRE", "OTHER", "REGIONS", "SPOT", "SPRAY_LIMIT", "Audit",
           "AuditError", "Cluster", "OnBatch", "Progress", "StoredMaps", "audit", "class_folders", "eigengap",
           "fingerprint", "gradcam_batch", "heat_centres", "match_classes", "normalised", "region", "spray"]
