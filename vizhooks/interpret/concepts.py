"""Concepts: what one layer has learned over a folder of photos, as a few directions in its
activation space (CRAFT, Fel et al., CVPR 2023).

One channel is rarely one idea: a network spreads "fur" over many channels and reuses each channel
for many ideas. CRAFT's recipe, as :func:`discover` runs it:

1. ``crops_per_image`` random square crops of every photo, of side ``crop`` x its shorter side
   (positions drawn from ``numpy.random.default_rng(seed)``, photo after photo), each resized to
   ``size`` x ``size``.
2. Each crop goes through the model up to ``layer`` and no further (the forward stops there), in
   batches of ``batch_size``.
3. The layer's output is made non-negative by its **positive part** (``max(0, a)``, identity after a
   ReLU, as CRAFT takes activations after one) and averaged over positions (the H x W of a conv map,
   the tokens of a transformer): one row of A (n_crops x C) per crop. Only A is kept: memory grows
   with the crops as C floats each, never with their maps.
4. scikit-learn's NMF, ``NMF(n_components=k, init="nndsvda", max_iter=NMF_MAX_ITER, random_state=seed)``,
   factorises A ~= U W: W (k x C, :attr:`Concepts.bank`) holds one concept per row, U (n_crops x k,
   :attr:`Concepts.coefficients`) says how much of each concept each crop has.

New activation vectors are read against the fixed bank by non-negative least squares
(:meth:`Concepts.transform`, ``min ||a - u W||`` with ``u >= 0``, coordinate descent to
convergence): the concept maps, the ablation and :attr:`Concepts.importance` all use it.

Removing concept i (:func:`ablate`): at every position p of the layer's output,
``u_p = transform(max(0, a_p))`` and ``a_p -> a_p - u_p[i] W[i]``; the rest of the network runs on
the edited output. :attr:`Concepts.importance` is, with a ``target`` class, the mean over the photos
(whole, as the model sees them) of the target logit's drop when each concept is removed.

Every forward runs through :func:`vizhooks._hooks.hooked`: under the model's lock, in eval mode,
under ``torch.no_grad``, state and hooks put back afterwards.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from vizhooks._hooks import check_input, check_ran, first_tensor, hooked, model_device
from vizhooks._ray import actors, pool, session
from vizhooks.errors import CodedError
from vizhooks.i18n import Names
from vizhooks.models.images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    MAX_SIZE,
    MIN_SIZE,
    load_image,
    resize_for_model,
    to_tensor,
)
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import as_map, channels_last_modules
from vizhooks.models.registry import ModelBundle

__all__ = ["ENGINES", "NMF_MAX_ITER", "Ablation", "Concepts", "ConceptsError", "ablate", "activations",
           "concept_direction", "concept_maps", "crop_boxes", "discover", "importance", "nnls", "upsample"]

#: Where the activation pass runs: in this process, or on Ray Data (a local Ray, or the cluster of RAY_ADDRESS).
ENGINES = ("local", "ray")
#: NMF iterations (scikit-learn's default is 200; CRAFT's banks converge within this on 1,000 crops).
NMF_MAX_ITER = 500
#: Coordinate-descent sweeps of :func:`nnls` at most, and the change in u (relative to its size) that ends them.
NNLS_SWEEPS, NNLS_TOL = 2000, 1e-9

Box = tuple[int, int, int, int]
Crop = tuple[int, Box]
MeanStd = tuple[tuple[float, float, float], tuple[float, float, float]]
Progress = Callable[[int, int, str], None]
ImageLike = Image.Image | str | os.PathLike


class ConceptsError(CodedError):
    """A setting :func:`discover` or :func:`ablate` cannot use; the sentence says how to fix it."""


# ----------------------------------------------------------------------------------------------
# non-negative least squares against a fixed bank


def nnls(acts: torch.Tensor | np.ndarray, bank: torch.Tensor | np.ndarray) -> torch.Tensor:
    """For every row a of ``acts`` (n, C), the u >= 0 (k) that minimises ``||a - u @ bank||``.

    Coordinate descent on the k x k Gram matrix, all rows at once, in float64 (float32 on MPS), until
    no coefficient moves by more than ``NNLS_TOL`` of the largest (or ``NNLS_SWEEPS`` sweeps): the
    convex problem's one minimum wherever the bank's rows are independent.

    Returns:
        (n, k) tensor on ``acts``'s device (CPU for an array), float32.
    """
    a = torch.as_tensor(acts)
    w = torch.as_tensor(bank)
    dtype = torch.float32 if a.device.type == "mps" else torch.float64
    a, w = a.to(dtype), w.to(a.device, dtype)
    gram = w @ w.T  # (k, k)
    b = a @ w.T  # (n, k)
    k = gram.shape[0]
    diag = gram.diagonal().clamp_min(torch.finfo(dtype).tiny)
    u = (b / diag).clamp_min(0)
    for _ in range(NNLS_SWEEPS):
        moved = torch.zeros((), dtype=dtype, device=a.device)
        for j in range(k):
            grad = u @ gram[:, j] - b[:, j]
            new = (u[:, j] - grad / diag[j]).clamp_min(0)
            moved = torch.maximum(moved, (new - u[:, j]).abs().max() if new.numel() else moved)
            u[:, j] = new
        if float(moved) <= NNLS_TOL * max(float(u.abs().max()) if u.numel() else 0.0, 1.0):
            break
    return u.float()


# ----------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True)
class Concepts:
    """What :func:`discover` found at ``layer``.

    Attributes:
        layer: the layer's name in the model.
        bank: W, (k, C) float32, non-negative: one concept per row.
        coefficients: U, (n_crops, k) float32, non-negative: each crop's amount of each concept.
        crops: one ``(image_index, (left, top, right, bottom))`` per row of U, in the original photo's
            pixels (right and bottom excluded).
        importance: with a target class, k values: the mean drop of the target logit over the photos
            when each concept is removed (:func:`ablate`); else None.
        target: the class of ``importance``, or None.
        settings: what produced it (k, crops_per_image, crop, size, seed, photos, channels).
    """

    layer: str
    bank: np.ndarray
    coefficients: np.ndarray
    crops: list[Crop]
    importance: np.ndarray | None = None
    target: int | None = None
    settings: dict[str, Any] | None = None

    @property
    def k(self) -> int:
        return int(self.bank.shape[0])

    def transform(self, acts: torch.Tensor | np.ndarray) -> np.ndarray:
        """Coefficients (n, k) of activation vectors ``acts`` (n, C) against the fixed bank (:func:`nnls`)."""
        a = torch.as_tensor(acts)
        if a.ndim != 2 or a.shape[1] != self.bank.shape[1]:
            raise ValueError(f"acts must be (n, {self.bank.shape[1]}) activation vectors of layer "
                             f"{self.layer!r}, not {tuple(a.shape)}.")
        return nnls(a.detach().cpu(), self.bank).numpy()

    def top(self, i: int, n: int = 9) -> list[Crop]:
        """The ``n`` crops with the largest coefficient for concept ``i``, largest first (ties by row)."""
        self._check_concept(i)
        order = np.argsort(-self.coefficients[:, i], kind="stable")[:n]
        return [self.crops[r] for r in order]

    def order(self) -> list[int]:
        """Concepts by importance, largest first (by index without a target)."""
        if self.importance is None:
            return list(range(self.k))
        return [int(i) for i in np.argsort(-self.importance, kind="stable")]

    def shares(self) -> np.ndarray | None:
        """Each concept's share of the positive importance (sums to 1 when any is positive), or None."""
        if self.importance is None:
            return None
        positive = np.clip(self.importance, 0, None)
        total = positive.sum()
        return positive / total if total > 0 else positive

    def _check_concept(self, i: int) -> None:
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.k:
            raise ConceptsError(code="concepts_index", index=i, k=self.k)


@dataclass(frozen=True)
class Ablation:
    """The target logit of one photo before and after a concept is removed (:func:`ablate`).

    Attributes:
        target: the class.
        logit, before: the target logit with and without the concept's removal.
        logits, logits_before: every class's logit (1-D CPU tensors), after and before.
    """

    target: int
    logit: float
    before: float
    logits: torch.Tensor
    logits_before: torch.Tensor

    @property
    def drop(self) -> float:
        return self.before - self.logit


# ----------------------------------------------------------------------------------------------
# positions of a layer's output


def _channels_last(model: nn.Module, layer: str, t: torch.Tensor) -> bool:
    return t.ndim == 4 and layer in channels_last_modules(model)


def _positions(t: torch.Tensor, channels_last: bool) -> torch.Tensor:
    """A layer's output as (N, P, C): the positions of a map, the tokens of a sequence, one for a vector."""
    if t.ndim == 4:
        return t.flatten(1, 2) if channels_last else t.flatten(2).transpose(1, 2)
    if t.ndim == 3:
        return t
    if t.ndim == 2:
        return t[:, None, :]
    raise ValueError(f"The layer's output has shape {tuple(t.shape)}; choose a layer with channels (a map, "
                     "tokens or a vector).")


def _from_positions(p: torch.Tensor, like: torch.Tensor, channels_last: bool) -> torch.Tensor:
    if like.ndim == 4:
        n, c, h, w = like.shape
        return p.reshape(like.shape) if channels_last else p.transpose(1, 2).reshape(n, c, h, w)
    return p.reshape(like.shape)


def _mean_positive(t: torch.Tensor, channels_last: bool) -> torch.Tensor:
    return _positions(t, channels_last).clamp_min(0).mean(dim=1)


# ----------------------------------------------------------------------------------------------
# photos and crops


@dataclass(frozen=True)
class _Input:
    model: nn.Module
    device: torch.device
    mean: tuple[float, float, float]
    std: tuple[float, float, float]
    interpolation: str
    side: int  # the square side crops are resized to
    bundle: ModelBundle | None

    def crop_tensor(self, image: Image.Image, box: Box) -> torch.Tensor:
        resample = Image.Resampling.BICUBIC if self.interpolation == "bicubic" else Image.Resampling.BILINEAR
        piece = image.crop(box).resize((self.side, self.side), resample, reducing_gap=3.0)
        return to_tensor(piece, self.mean, self.std)

    def photo_tensor(self, image: Image.Image, size: int) -> torch.Tensor:
        if self.bundle is not None:
            return self.bundle.preprocess(image, size)
        return to_tensor(resize_for_model(image, size), self.mean, self.std)


def _input(model: nn.Module | ModelBundle, size: int, mean_std: MeanStd | None) -> _Input:
    if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ConceptsError(code="concepts_size", value=size, low=MIN_SIZE, high=MAX_SIZE)
    if isinstance(model, ModelBundle):
        spec = model.input
        side = spec.fixed_size or max(size, spec.min_size)
        return _Input(model.model, model.device, spec.mean, spec.std, spec.interpolation, side, model)
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be an nn.Module or a ModelBundle, not {type(model).__name__}.")
    mean, std = mean_std if mean_std is not None else (IMAGENET_MEAN, IMAGENET_STD)
    return _Input(model, model_device(model), tuple(mean), tuple(std), "bilinear", size, None)  # type: ignore[arg-type]


def _open(image: ImageLike) -> Image.Image:
    return image.convert("RGB") if isinstance(image, Image.Image) else load_image(image)


def crop_boxes(width: int, height: int, count: int, crop: float, rng: np.random.Generator) -> list[Box]:
    """``count`` random square boxes of side ``crop`` x the shorter side inside a width x height photo."""
    side = max(1, min(width, height, round(crop * min(width, height))))
    lefts = rng.integers(0, width - side + 1, size=count)
    tops = rng.integers(0, height - side + 1, size=count)
    return [(int(x), int(y), int(x) + side, int(y) + side) for x, y in zip(lefts, tops, strict=True)]


def _crops(images: Sequence[ImageLike], count: int, crop: float, seed: int
           ) -> Iterator[tuple[int, Image.Image, list[Box]]]:
    rng = np.random.default_rng(seed)
    for index, source in enumerate(images):
        image = _open(source)
        yield index, image, crop_boxes(*image.size, count, crop, rng)


def _check_settings(images: Sequence[ImageLike], k: int, crops_per_image: int, crop: float, batch_size: int) -> None:
    if not len(images):
        raise ConceptsError(code="concepts_no_images")
    for name, value in (("k", k), ("crops_per_image", crops_per_image), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ConceptsError(code="concepts_whole", name=name, value=value)
    if not isinstance(crop, (int, float)) or not 0 < crop <= 1:
        raise ConceptsError(code="concepts_crop", value=crop)
    if k > len(images) * crops_per_image:
        raise ConceptsError(code="concepts_k_too_large", k=k, crops=len(images) * crops_per_image)


def _layer(model: nn.Module, layer: str) -> str:
    return resolve_layers(model, [layer])[0]


# ----------------------------------------------------------------------------------------------
# the activation pass


def _pass(spec: _Input, name: str, pieces: Iterable[tuple[int, Image.Image, list[Box]]], batch_size: int,
          progress: Callable[[int], None] | None = None) -> tuple[np.ndarray, list[Crop]]:
    """Rows of A for the crops ``pieces`` names, through ``spec.model`` up to ``name``, ``batch_size`` at a time;
    ``progress(rows_so_far)`` after each batch."""
    net = spec.model
    rows: list[np.ndarray] = []
    crops: list[Crop] = []
    batch: list[torch.Tensor] = []
    channels_last: list[bool] = []

    def reduce(_name: str, t: torch.Tensor) -> torch.Tensor:
        if not channels_last:
            channels_last.append(_channels_last(net, name, t))
        return _mean_positive(t, channels_last[0]).float().cpu()

    with hooked(net, stop_after=[name], reduce=reduce) as hooks, torch.no_grad():
        def flush() -> None:
            x = torch.cat(batch).to(spec.device)
            batch.clear()
            found = hooks.run(lambda: net(x))
            check_ran([name], found)
            rows.append(found[name].numpy())
            if progress is not None:
                progress(sum(len(r) for r in rows))

        for index, image, boxes in pieces:
            for box in boxes:
                batch.append(spec.crop_tensor(image, box))
                crops.append((index, box))
                if len(batch) == batch_size:
                    flush()
        if batch:
            flush()
    width = rows[0].shape[1] if rows else 0
    return np.concatenate(rows).astype(np.float32, copy=False) if rows else np.zeros((0, width), np.float32), crops


def _check_engine(engine: str) -> None:
    if engine not in ENGINES:
        raise ConceptsError(code="concepts_engine", engine=repr(engine), engines=Names(ENGINES))
    if engine == "ray":
        import importlib.util

        if importlib.util.find_spec("ray") is None:  # found, not imported: importing Ray takes seconds
            raise ConceptsError(code="concepts_no_ray")


def activations(model: nn.Module | ModelBundle, images: Sequence[ImageLike], layer: str, *,
                crops_per_image: int = 16, crop: float = 0.5, size: int = 224, mean_std: MeanStd | None = None,
                seed: int = 0, batch_size: int = 32, progress: Progress | None = None, engine: str = "local",
                workers: int = 0) -> tuple[np.ndarray, list[Crop]]:
    """A (n_crops x C, float32) and its crops: steps 1-3 of :func:`discover`, in batches of crops.

    ``engine="ray"`` runs the same pass on Ray Data (:func:`_ray_pass`); both give the same crops and A.
    """
    _check_settings(images, 1, crops_per_image, crop, batch_size)
    _check_engine(engine)
    spec = _input(model, size, mean_std)
    name = _layer(spec.model, layer)
    total = len(images) * crops_per_image
    if engine == "ray":
        return _ray_pass(spec, name, _plan(images, crops_per_image, crop, seed), batch_size, workers, progress, total)
    return _pass(spec, name, _crops(images, crops_per_image, crop, seed), batch_size,
                 None if progress is None else lambda done: progress(done, total, "crops"))


# ----------------------------------------------------------------------------------------------
# the activation pass on Ray Data

#: Crops of work per shard of the ray engine, in batches: fewer round trips, fuller batches.
SHARD_BATCHES = 4


def _plan(images: Sequence[ImageLike], count: int, crop: float, seed: int) -> list[tuple[int, ImageLike, list[Box]]]:
    """Every photo's crop boxes, drawn as :func:`_crops` draws them (photo after photo from one
    generator, so the driver reads each photo's size once, one photo at a time), with its source."""
    rng = np.random.default_rng(seed)
    plan = []
    for index, source in enumerate(images):
        width, height = (source.size if isinstance(source, Image.Image) else _open(source).size)
        plan.append((index, source, crop_boxes(width, height, count, crop, rng)))
    return plan


def _shards(plan: list[Any], per_photo: int, batch_size: int, workers: int) -> list[list[Any]]:
    """Consecutive photos in shards of about ``SHARD_BATCHES`` batches of crops, small enough that each
    worker gets two where it can. Every shard but the last holds a whole number of batches, so each batch
    of crops is the one the local pass makes: the same crops in the same batch give the same rows of A."""
    step = batch_size // math.gcd(batch_size, per_photo)  # photos whose crops fill whole batches
    per_worker = -(-len(plan) // (2 * workers))
    photos = max(1, min(-(-SHARD_BATCHES * batch_size // per_photo), per_worker))
    photos = -(-photos // step) * step
    return [plan[i:i + photos] for i in range(0, len(plan), photos)]


class _ShardPass:
    """The callable class of Ray Data's ``map_batches``: one per worker, holding the model; each row
    of a batch is a pickled shard ``[(photo index, source, boxes), ...]`` and comes back as its rows of A."""

    def __init__(self, spec_ref: Any, name: str, batch_size: int, gpu: bool) -> None:
        import ray

        spec = ray.get(spec_ref)
        if gpu and torch.cuda.is_available():
            spec = dataclasses.replace(spec, model=spec.model.to("cuda"), device=torch.device("cuda"))
        self.spec, self.name, self.batch_size = spec, name, batch_size

    def __call__(self, batch: dict) -> dict:
        import pickle

        out = []
        for blob in batch["work"]:
            pieces = ((index, _open(source), boxes) for index, source, boxes in pickle.loads(blob))
            rows, _crops_ = _pass(self.spec, self.name, pieces, self.batch_size)
            out.append(pickle.dumps(rows))
        return {"shard": batch["shard"], "rows": np.array(out, dtype=object)}


def _ray_pass(spec: _Input, name: str, plan: list[tuple[int, ImageLike, list[Box]]], batch_size: int, workers: int,
              progress: Progress | None, total: int) -> tuple[np.ndarray, list[Crop]]:
    """:func:`_pass` on Ray Data: shards of consecutive photos go through ``map_batches`` with one model
    actor per worker (``workers``; 0: one per GPU of the cluster, else one per CPU); each shard's rows come
    back to this process, which puts them in photo order. The session of the caller is used when Ray is
    running; else the cluster of ``RAY_ADDRESS``, or a Ray of this machine, shut down afterwards."""
    import pickle

    with session(workers, lambda: ConceptsError(code="concepts_no_ray")) as ray:
        gpus, count = actors(ray, workers)
        per_photo = len(plan[0][2])
        shards = _shards(plan, per_photo, batch_size, count)
        items = [{"shard": i, "work": pickle.dumps(shard)} for i, shard in enumerate(shards)]
        dataset = ray.data.from_items(items, override_num_blocks=len(shards))
        # the actors get a CPU copy (a GPU actor moves it); the caller's model stays where it is
        shipped = spec.model if spec.device.type == "cpu" else copy.deepcopy(spec.model).cpu()
        worker_spec = dataclasses.replace(spec, model=shipped, device=torch.device("cpu"), bundle=None)
        parts = dataset.map_batches(
            _ShardPass, batch_size=1, **pool(ray, min(count, len(shards))), num_gpus=1 if gpus else 0,
            fn_constructor_kwargs={"spec_ref": ray.put(worker_spec), "name": name, "batch_size": batch_size,
                                   "gpu": bool(gpus)})
        found: dict[int, np.ndarray] = {}
        for batch in parts.iter_batches(batch_size=1, batch_format="numpy"):
            for shard, blob in zip(batch["shard"], batch["rows"], strict=True):
                found[int(shard)] = pickle.loads(blob)
                if progress is not None:
                    progress(sum(len(r) for r in found.values()), total, "crops")
    rows = np.concatenate([found[i] for i in range(len(shards))]).astype(np.float32, copy=False)
    return rows, [(index, box) for index, _source, boxes in plan for box in boxes]


def _nmf(acts: np.ndarray, k: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    import warnings

    # scikit-learn ships no type information; an ignore here keeps pyproject's shared list as it is
    from sklearn.decomposition import NMF  # type: ignore[import-untyped]
    from sklearn.exceptions import ConvergenceWarning  # type: ignore[import-untyped]

    nmf = NMF(n_components=k, init="nndsvda", max_iter=NMF_MAX_ITER, random_state=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # a bank that has not fully converged is still one
        u = nmf.fit_transform(acts)
    return u.astype(np.float32), nmf.components_.astype(np.float32)


def discover(model: nn.Module | ModelBundle, images: Sequence[ImageLike], layer: str, *, k: int = 10,
             target: int | None = None, crops_per_image: int = 16, crop: float = 0.5, size: int = 224,
             mean_std: MeanStd | None = None, seed: int = 0, batch_size: int = 32,
             progress: Progress | None = None, engine: str = "local", workers: int = 0) -> Concepts:
    """Find ``k`` concepts of ``layer`` over ``images`` (CRAFT; see the module's description).

    Args:
        model: an ``nn.Module`` or a ``ModelBundle`` (then its own preprocessing and device).
        images: PIL images or paths, read one at a time.
        layer: the layer's name (``python -m vizhooks --list-layers``).
        k: concepts to find.
        target: a class index: also compute :attr:`Concepts.importance` for it.
        crops_per_image, crop: random square crops per photo, of side ``crop`` x its shorter side.
        size: the side crops are resized to (the model's own for fixed-size models).
        mean_std: normalisation for a bare module (default ImageNet's; ``((0, 0, 0), (1, 1, 1))`` for none).
        seed: crop positions and NMF; the same seed gives the same concepts.
        batch_size: crops per forward pass.
        progress: ``progress(done, total, stage)`` after every batch (stage ``"crops"``) and every
            photo of the importance pass (``"importance"``); on Ray, after every shard.
        engine: ``"local"``, or ``"ray"``: the activation pass on Ray Data, shards of photos on model
            actors (a running Ray session, else the cluster of ``RAY_ADDRESS``, else a Ray of this
            machine). Both give the same crops and the same A, so the same concepts.
        workers: ray: model actors (0: one per GPU of the cluster, else one per CPU).

    Returns:
        :class:`Concepts`.

    Raises:
        UnknownLayerError: no such layer. ConceptsError: no images, k larger than the crops, a bad setting,
            an unknown engine or ``"ray"`` without Ray installed.

    Example:
        >>> found = discover(bundle, ["a.jpg", "b.jpg"], "layer3", k=5, target=281)
        >>> found.top(found.order()[0], n=4)
    """
    _check_settings(images, k, crops_per_image, crop, batch_size)
    _check_engine(engine)
    acts, crops = activations(model, images, layer, crops_per_image=crops_per_image, crop=crop, size=size,
                              mean_std=mean_std, seed=seed, batch_size=batch_size, progress=progress,
                              engine=engine, workers=workers)
    u, w = _nmf(acts, k, seed)
    settings = {"k": k, "crops_per_image": crops_per_image, "crop": crop, "size": size, "seed": seed,
                "photos": len(images), "channels": int(acts.shape[1])}
    found = Concepts(_layer(_input(model, size, mean_std).model, layer), w, u, crops, None, None, settings)
    if target is None:
        return found
    return Concepts(found.layer, w, u, crops, importance(model, images, found, target, size=size,
                                                          mean_std=mean_std, progress=progress),
                    int(target), settings)


# ----------------------------------------------------------------------------------------------
# removing a concept


def _removal_hook(concepts: Concepts, remove: list[int | None], channels_last: bool) -> Callable[..., Any]:
    """A forward hook that removes concept ``remove[r]`` from sample r of the batch (None: nothing)."""
    def hook(_module: nn.Module, _args: Any, output: Any) -> Any:
        t = first_tensor(output)
        pos = _positions(t, channels_last and t.ndim == 4)  # (N, P, C)
        n, p, c = pos.shape
        bank = torch.as_tensor(concepts.bank, device=t.device)
        u = nnls(pos.detach().clamp_min(0).reshape(n * p, c), bank).reshape(n, p, -1)
        edit = torch.zeros_like(pos)
        for r, i in enumerate(remove):
            if i is not None:
                edit[r] = u[r, :, i, None].to(pos.dtype) * bank[i].to(pos.dtype)
        edited = _from_positions(pos - edit, t, channels_last and t.ndim == 4)
        if isinstance(output, torch.Tensor):
            return edited
        return type(output)(edited if item is t else item for item in output)

    return hook


def _ablated_logits(model: nn.Module, x: torch.Tensor, concepts: Concepts, remove: list[int | None]) -> torch.Tensor:
    """Logits (len(remove), classes) of ``x`` (1, 3, H, W) with ``remove[r]`` taken away in row r."""
    name = _layer(model, concepts.layer)
    batch = x.to(model_device(model)).expand(len(remove), *x.shape[1:])
    with hooked(model) as hooks, torch.no_grad():
        hooks.forward_hook(name, _removal_hook(concepts, remove, name in channels_last_modules(model)))
        out = model(batch)
    return first_tensor(out).float().cpu()


def ablate(model: nn.Module | ModelBundle, x: torch.Tensor, layer: str, concepts: Concepts, i: int,
           target: int | None = None) -> Ablation:
    """The target logit of ``x`` when concept ``i`` is removed at ``layer``.

    At every position p of the layer's output, ``u_p = concepts.transform(max(0, a_p))`` and
    ``a_p -> a_p - u_p[i] * W[i]``; the rest of the network runs on the edited output (a forward hook).

    Args:
        x: one preprocessed photo, (1, 3, H, W).
        layer: the layer the concepts were found at.
        target: the class; default the top class of the unedited photo.

    Returns:
        :class:`Ablation` (``.logit`` after, ``.before``, every logit).

    Example:
        >>> ablate(bundle, bundle.preprocess(photo), "layer3", found, 2, target=281).drop
    """
    net = model.model if isinstance(model, ModelBundle) else model
    check_input(x)
    if x.shape[0] != 1:
        raise ValueError(f"x must be one photo, (1, 3, H, W), not {tuple(x.shape)}.")
    if _layer(net, layer) != concepts.layer:
        raise ConceptsError(code="concepts_layer", layer=layer, found=concepts.layer)
    concepts._check_concept(i)
    logits = _ablated_logits(net, x, concepts, [None, int(i)])
    chosen = int(logits[0].argmax()) if target is None else int(target)
    if not 0 <= chosen < logits.shape[1]:
        raise ConceptsError(code="concepts_target", target=target, classes=logits.shape[1])
    return Ablation(chosen, float(logits[1, chosen]), float(logits[0, chosen]), logits[1], logits[0])


def concept_direction(concepts: Concepts, i: int) -> torch.Tensor:
    """Concept ``i`` as a direction to steer along at its layer (:func:`vizhooks.hooks.patching.steer`):
    its row of the bank times the largest coefficient any crop had, ``W[i] * max(U[:, i])``.

    NMF's split of scale between U and W is arbitrary; this one is not: steering with ``scale=1`` adds
    the concept as strongly as the crop that shows it most (at every position).

    Returns:
        A ``(C,)`` float32 CPU tensor, one value per channel of :attr:`Concepts.layer`.

    Raises:
        ConceptsError: no concept ``i``.

    Example:
        >>> steer(bundle.model, x, found.layer, concept_direction(found, found.order()[0]), 1.0)
    """
    concepts._check_concept(i)
    amount = float(concepts.coefficients[:, i].max()) if concepts.coefficients.size else 0.0
    return torch.from_numpy(np.asarray(concepts.bank[i], dtype=np.float32) * np.float32(amount))


def importance(model: nn.Module | ModelBundle, images: Sequence[ImageLike], concepts: Concepts, target: int, *,
               size: int = 224, mean_std: MeanStd | None = None, progress: Progress | None = None) -> np.ndarray:
    """Mean over ``images`` (whole photos, as the model sees them) of the ``target`` logit's drop when each
    concept is removed (:func:`ablate`): k values; one batch of k + 1 per photo."""
    spec = _input(model, size, mean_std)
    drops = np.zeros(concepts.k, dtype=np.float64)
    remove: list[int | None] = [None, *range(concepts.k)]
    for done, source in enumerate(images, 1):
        logits = _ablated_logits(spec.model, spec.photo_tensor(_open(source), size), concepts, remove)
        if not 0 <= target < logits.shape[1]:
            raise ConceptsError(code="concepts_target", target=target, classes=logits.shape[1])
        drops += (logits[0, target] - logits[1:, target]).double().numpy()
        if progress is not None:
            progress(done, len(images), "importance")
    return (drops / len(images)).astype(np.float32)


def concept_maps(model: nn.Module | ModelBundle, x: torch.Tensor, concepts: Concepts) -> torch.Tensor:
    """Each concept's coefficient at each position of the layer's output for ``x`` (1, 3, H, W):
    a (k, h, w) CPU tensor (token layers over their patch grid)."""
    net = model.model if isinstance(model, ModelBundle) else model
    check_input(x)
    name = _layer(net, concepts.layer)
    with hooked(net, stop_after=[name]) as hooks, torch.no_grad():
        found = hooks.run(lambda: net(x[:1].to(model_device(net))))
    check_ran([name], found)
    t = found[name]
    last = _channels_last(net, name, t)
    pos = _positions(t, last)[0]
    u = nnls(pos.clamp_min(0), torch.as_tensor(concepts.bank, device=pos.device)).cpu()  # (P, k)
    if t.ndim == 4:
        h, w = (t.shape[1], t.shape[2]) if last else (t.shape[2], t.shape[3])
        return u.T.reshape(-1, h, w)
    return as_map(u[None], (int(x.shape[-2]), int(x.shape[-1])))[0]


def upsample(maps: torch.Tensor, hw: tuple[int, int]) -> torch.Tensor:
    """Concept maps (k, h, w) resized bilinearly to a photo's (H, W)."""
    return F.interpolate(maps[None], size=hw, mode="bilinear", align_corners=False)[0]


# ----------------------------------------------------------------------------------------------
# pictures of a concept


def top_photos(concepts: Concepts, i: int, n: int = 2) -> list[int]:
    """The ``n`` photos whose crops have, on average, the most of concept ``i``, most first."""
    concepts._check_concept(i)
    index = np.asarray([image for image, _box in concepts.crops])
    sums = np.bincount(index, weights=concepts.coefficients[:, i])
    means = sums / np.maximum(np.bincount(index), 1)
    return [int(p) for p in np.argsort(-means, kind="stable")[:n]]


def concept_sheet(crops: Sequence[Image.Image], overlays: Sequence[Image.Image] = (), side: int = 96) -> Image.Image:
    """One picture of a concept: its top crops as a strip (``side`` pixels each) over its maps on
    photos (``overlays``, as tall as two crops)."""
    gap = 4
    width = max(len(crops) * (side + gap) - gap, 1)
    tall = 2 * side
    shown = [o.resize((max(1, round(o.width * tall / o.height)), tall)) for o in overlays]
    width = max(width, sum(o.width + gap for o in shown) - gap)
    sheet = Image.new("RGB", (width, side + (gap + tall if shown else 0)), "white")
    for column, piece in enumerate(crops):
        sheet.paste(piece.convert("RGB").resize((side, side)), (column * (side + gap), 0))
    left = 0
    for picture in shown:
        sheet.paste(picture, (left, side + gap))
        left += picture.width + gap
    return sheet
