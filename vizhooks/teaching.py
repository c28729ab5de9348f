"""Teaching a network your own classes: a linear head on the frozen backbone's pooled features.

The backbone is never touched. Each photo goes through it once (batched; remembered by the photo's
digest when a ``cache`` is given), a forward pre-hook on the model's last Linear keeps what that
layer receives (the pooled features; ViT's class token), and a multinomial logistic regression with
weight decay is fitted to them in torch (full batch, L-BFGS, float64). It is measured by stratified
k-fold cross-validation (5 folds: every photo is held out exactly once, guessed by a head fitted on
the other folds; leave-one-out when a class has fewer than 10 photos), then the head is fitted on
every photo. One 20 % split moved the figure by 0.11 per photo on 15 photos a class; pooled over
every photo, with the spread between folds beside it, the number is one a class can trust.

The taught model is the backbone's modules with the new Linear in the old one's place: the
containers on the path to the head are shallow copies, every other module (and every weight) is the
backbone's own, so it costs the head's few kilobytes, keeps the layer names every view knows, and
shares the backbone's lock. Its ``state_dict()`` is a whole model's checkpoint with a new last layer,
which :func:`vizhooks.load_model` reads back (``weights=`` the file, ``labels=`` the names).

Example:
    >>> taught = teach(load_model("resnet18"), {"mug": mugs, "pen": pens})
    >>> taught.accuracy, taught.bundle.categories
    (0.93, ['mug', 'pen'])
    >>> taught.save("my_model.pth")
    (PosixPath('my_model.pth'), PosixPath('my_model.txt'))
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import io
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image
from torch import nn

from vizhooks._hooks import one_torch_thread, share_lock
from vizhooks.errors import CodedError
from vizhooks.hooks.capture import capture
from vizhooks.models.images import fit_to_model, to_tensor
from vizhooks.models.registry import ModelBundle, taught_name
from vizhooks.render.export import write_atomic

#: A class needs at least this many photos; the page offers at most MAX_CLASSES classes.
MIN_PHOTOS, MAX_PHOTOS, MIN_CLASSES, MAX_CLASSES = 2, 200, 2, 6
#: Below this many photos in its smallest class, every photo is held out once (leave-one-out).
LEAVE_ONE_OUT_BELOW = 10
#: Folds of the cross-validation otherwise.
FOLDS = 5
WEIGHT_DECAY = 1e-2
BATCH = 16

#: ``progress(done, total, stage)``: stage is ``"features"`` or ``"training"``.
Progress = Callable[[int, int, str], None]


class TeachError(CodedError):
    """Examples or a model that cannot be taught, said in one sentence (``code``: ``teach_*``)."""


@dataclass
class Taught:
    """A taught model and how well it did on photos it had not seen.

    Attributes:
        bundle: the backbone with the new head; ``categories`` are the names taught.
        accuracy: cross-validated accuracy (0..1): right guesses over every held-out prediction.
        confusion: ``(K, K)`` counts of held-out photos, row = true class, column = predicted.
        method: ``"5-fold"`` (``"<k>-fold"``) or ``"leave-one-out"``: how the photos were held out.
        heldout: how many predictions ``accuracy`` and ``confusion`` count (every photo, once).
        fold_accuracies: the accuracy of each fold (leave-one-out: 0 or 1 per photo).
        head_path: the name of the Linear that was replaced (``"fc"``, ``"heads.head"``...).
        head: the new Linear.
        backbone: the name of the model it was taught on.
    """

    bundle: ModelBundle
    accuracy: float
    confusion: np.ndarray
    method: str
    heldout: int
    head_path: str
    head: nn.Linear
    backbone: str
    fold_accuracies: list[float] = dataclasses.field(default_factory=list)

    @property
    def spread(self) -> float:
        """How far the accuracy could move: k-fold, the standard deviation of the folds' accuracies (as
        scikit-learn users report ``scores.std()``); leave-one-out, whose folds are single photos, the
        binomial standard error ``sqrt(p (1 - p) / n)``. NaN when nothing was held out."""
        if not self.fold_accuracies:
            return float("nan")
        if self.method == "leave-one-out":
            return float(np.sqrt(self.accuracy * (1 - self.accuracy) / len(self.fold_accuracies)))
        return float(np.std(self.fold_accuracies))

    @property
    def per_class(self) -> list[float]:
        """Held-out accuracy of each class (NaN where none of its photos was held out)."""
        rows = self.confusion.sum(axis=1)
        return [float(self.confusion[i, i] / rows[i]) if rows[i] else float("nan") for i in range(len(rows))]

    def save(self, path: str | os.PathLike) -> tuple[Path, Path]:
        """Write the whole model's state_dict to ``path`` and the class names, one per line, beside it
        (``.txt``); ``load_model(arch, weights=path, labels=labels_path)`` gives the same logits.

        Raises:
            ValueError: ``path`` ends in ``.txt`` (the class names' file would replace the checkpoint).
            OSError: a file or its folder cannot be written (its ``filename`` is the path asked).
        """
        weights = Path(path)
        labels = weights.with_suffix(".txt")
        if weights.suffix.lower() == ".txt":  # the class names would replace the checkpoint
            raise ValueError(f"{weights} ends in .txt, the name of the class names' file beside the checkpoint; "
                             f"give the checkpoint another ending, such as {weights.with_suffix('.pth')}.")
        buffer = io.BytesIO()  # torch.save to a path says a refused write as a RuntimeError; this is an OSError
        torch.save(self.state_dict(), buffer)
        write_atomic(weights, buffer.getvalue())
        write_atomic(labels, ("\n".join(self.bundle.categories) + "\n").encode("utf-8"))
        return weights, labels

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The checkpoint :meth:`save` writes: every tensor of the backbone, the new head's in place
        of the old one, on the CPU."""
        return {k: v.detach().cpu() for k, v in self.bundle.model.state_dict().items()}


# ----------------------------------------------------------------------------------------------
# the head


def find_head(model: nn.Module, classes: int | None = None) -> tuple[str, nn.Linear]:
    """The model's last layer: the module that owns the last weight with one row per class.

    Raises:
        TeachError: that layer is not a Linear (SqueezeNet ends in a Conv2d), or there is none.
    """
    if classes is None:
        classes = _output_classes(model)
    owners = [(name, module) for name, module in model.named_modules()
              if isinstance(getattr(module, "weight", None), torch.Tensor) and module.weight.ndim >= 2
              and module.weight.shape[0] == classes]
    if not owners:
        raise TeachError(code="teach_no_head", classes=classes)
    name, module = owners[-1]
    if not isinstance(module, nn.Linear):
        kind = type(module).__name__
        raise TeachError(f"This model's last layer ({name}) is a {kind}, not a Linear, so it cannot be taught "
                         "new classes; choose a model that ends in a Linear layer.",
                         "teach_head", layer=name, kind=kind)
    return name, module


def _output_classes(model: nn.Module) -> int:
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    named = getattr(model, "num_classes", None)
    if isinstance(named, int):
        return named
    if linears:
        return int(linears[-1].out_features)
    raise TeachError("This model has no Linear layer, so it cannot be taught new classes; choose another model.",
                     "teach_head", layer="-", kind=type(model).__name__)


def with_head(model: nn.Module, path: str, head: nn.Module) -> nn.Module:
    """``model`` with the module at ``path`` replaced by ``head``; ``model`` itself is unchanged.

    The containers from the root to ``path`` are shallow copies with their own child lists and
    hook tables; every other module is ``model``'s own (no weight is copied). The result holds
    ``model``'s lock, so hooks on shared modules never interleave across the two.
    """
    def swap(module: nn.Module, parts: list[str]) -> nn.Module:
        if not parts:
            return head
        clone = copy.copy(module)
        for key, value in vars(module).items():  # own child list, parameters and hook tables
            if isinstance(value, dict):
                setattr(clone, key, type(value)(value))
        child = module._modules[parts[0]]
        if child is None:
            raise ValueError(f"{path} is not a module of this model.")
        clone._modules[parts[0]] = swap(child, parts[1:])
        return clone

    composed = swap(model, path.split("."))
    share_lock(composed, model)
    return composed


# ----------------------------------------------------------------------------------------------
# features


def photo_digest(image: Image.Image) -> str:
    """A photo's identity for the feature cache: its pixels, size and mode."""
    h = hashlib.sha256(f"{image.mode}{image.size}".encode())
    h.update(image.tobytes())
    return h.hexdigest()[:32]


def features(bundle: ModelBundle, images: Sequence[Image.Image], *, size: int = 224, head_path: str | None = None,
             cache: dict[tuple, torch.Tensor] | None = None, progress: Progress | None = None,
             batch: int = BATCH) -> torch.Tensor:
    """``(N, D)`` inputs of the model's last Linear, one row per photo, in batches of ``batch``.

    Every photo is seen as a ``size`` square (shorter side scaled, centre cropped; a fixed-size model
    uses its own size), normalised with the model's mean and std. With ``cache``, a photo already
    in it (by :func:`photo_digest`, model and size) costs nothing.
    """
    path = head_path or find_head(bundle.model)[0]
    side = int(bundle.input.fixed_size or size)
    spec = dataclasses.replace(bundle.input, fixed_size=side)
    keys = [(bundle.name, path, side, photo_digest(im)) for im in images]
    cache = {} if cache is None else cache
    todo = [i for i, key in enumerate(keys) if key not in cache]
    for start in range(0, len(todo), batch):
        chunk = todo[start:start + batch]
        x = torch.cat([to_tensor(fit_to_model(images[i], side, spec), spec.mean, spec.std) for i in chunk])
        rows = capture(bundle.model, x, [path], what="input")[path].flatten(1).float()
        for i, row in zip(chunk, rows, strict=True):
            cache[keys[i]] = row
        if progress is not None:
            progress(min(start + batch, len(todo)), len(todo), "features")
    if not keys:
        raise TeachError("There are no photos to learn from.", "teach_few_classes", n=0)
    return torch.stack([cache[key] for key in keys])


# ----------------------------------------------------------------------------------------------
# fitting


def fit_head(feats: torch.Tensor, labels: torch.Tensor, classes: int, *,
             weight_decay: float = WEIGHT_DECAY) -> nn.Linear:
    """Multinomial logistic regression, ``mean cross-entropy + weight_decay / 2 * |W|^2`` (the
    bias is not decayed), on standardised features, fitted to convergence with L-BFGS in float64;
    the standardisation is folded into the returned Linear, which takes the raw features.
    Deterministic: it starts from zeros."""
    x = feats.double()
    mean, std = x.mean(0), x.std(0, unbiased=False).clamp_min(1e-6)
    z = (x - mean) / std
    y = labels.long()
    weight = torch.zeros(classes, z.shape[1], dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], lr=1, max_iter=500, tolerance_grad=1e-9, tolerance_change=1e-12,
                            history_size=20, line_search_fn="strong_wolfe")

    def loss_fn() -> torch.Tensor:
        opt.zero_grad()
        loss = nn.functional.cross_entropy(z @ weight.T + bias, y) + 0.5 * weight_decay * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(loss_fn)
    folded = (weight.detach() / std)
    head = nn.Linear(z.shape[1], classes)
    with torch.no_grad():
        head.weight.copy_(folded.float())
        head.bias.copy_((bias.detach() - folded @ mean).float())
    return head


def heldout_folds(labels: Sequence[int], folds: int = FOLDS, seed: int = 0,
                  ) -> tuple[str, list[tuple[list[int], list[int]]]]:
    """How to measure: ``("leave-one-out", folds)`` when the smallest class has fewer than
    LEAVE_ONE_OUT_BELOW photos, else ``("<k>-fold", folds)``: stratified k-fold cross-validation, each
    class's photos shuffled with ``seed`` and dealt round the folds, so every photo is held out exactly
    once and each fold holds each class's share (sizes differ by at most one)."""
    labels = list(labels)
    if folds < 2:
        raise ValueError(f"folds must be at least 2, not {folds}.")
    counts = np.bincount(labels)
    everyone = range(len(labels))
    if counts.min() < LEAVE_ONE_OUT_BELOW:
        return "leave-one-out", [([j for j in everyone if j != i], [i]) for i in everyone]
    rng = np.random.default_rng(seed)
    fold_of = np.empty(len(labels), dtype=np.int64)
    start = 0
    for c in range(len(counts)):  # dealing continues where the last class stopped: folds stay even
        members = rng.permutation([i for i, label in enumerate(labels) if label == c])
        fold_of[members] = (start + np.arange(len(members))) % folds
        start += len(members)
    return f"{folds}-fold", [([j for j in everyone if fold_of[j] != f], [j for j in everyone if fold_of[j] == f])
                             for f in range(folds)]


# ----------------------------------------------------------------------------------------------
# teach


def check_classes(names: Sequence[str], counts: Sequence[int]) -> list[str]:
    """The class names, stripped, after the checks every caller needs; one sentence per problem.

    Raises:
        TeachError: fewer than 2 classes, an empty or repeated name (case aside), a name on several
            lines, a class with fewer than 2 or more than 200 photos.
    """
    stripped = [str(n).strip() for n in names]
    if len(stripped) < MIN_CLASSES:
        raise TeachError(f"Teaching needs at least {MIN_CLASSES} classes; this has {len(stripped)}.",
                         "teach_few_classes", n=len(stripped))
    seen: set[str] = set()
    for name, count in zip(stripped, counts, strict=True):
        if not name or "\n" in name:
            raise TeachError("Every class needs a name on one line; one is empty.", "teach_empty_name")
        if name.casefold() in seen:
            raise TeachError(f"Two classes are both called {name!r}; give each class its own name.",
                             "teach_same_name", name=name)
        seen.add(name.casefold())
        if count < MIN_PHOTOS:
            raise TeachError(code="teach_few_photos", name=name, n=count, least=MIN_PHOTOS)  # "1 photo", "0 photos"
        if count > MAX_PHOTOS:
            raise TeachError(f"Class {name!r} has {count} photos; at most {MAX_PHOTOS} per class are taught.",
                             "teach_too_many", name=name, n=count, most=MAX_PHOTOS)
    return stripped


def check_examples(examples: Mapping[str, Sequence[object]]) -> list[str]:
    """:func:`check_classes` of a mapping name -> photos."""
    return check_classes(list(examples), [len(v) for v in examples.values()])


def teach(bundle: ModelBundle, examples: Mapping[str, Sequence[Image.Image]], *, seed: int = 0,
          folds: int = FOLDS, progress: Progress | None = None, size: int = 224,
          cache: dict[tuple, torch.Tensor] | None = None, weight_decay: float = WEIGHT_DECAY) -> Taught:
    """Teach ``bundle``'s backbone the classes of ``examples`` (name -> photos).

    Args:
        bundle: a loaded model whose last layer is a Linear (see :func:`find_head`).
        examples: at least 2 classes, each with 2 to 200 photos; names in any language.
        seed: for the folds' draw (fitting itself is deterministic).
        folds: folds of the stratified cross-validation, when every class has at least 10 photos
            (below that, leave-one-out).
        progress: ``progress(done, total, stage)`` while features are computed and folds fitted.
        size: the square side photos are seen at (fixed-size models use their own).
        cache: a dict kept between calls; photos already in it are not run through the model again.
        weight_decay: the L2 penalty on the head's weights.

    Returns:
        A :class:`Taught`: its ``bundle`` is the backbone with the new head, named
        ``"<backbone>+my:<key>"``, ``categories`` the stripped names.

    Raises:
        TeachError: the examples or the model cannot be taught (one sentence; see :func:`check_examples`).
    """
    names = check_examples(examples)
    if folds < 2:
        raise ValueError(f"folds must be at least 2, not {folds}.")
    path, old = find_head(bundle.model, len(bundle.categories))
    photos = [im for group in examples.values() for im in group]
    labels = torch.tensor([c for c, group in enumerate(examples.values()) for _ in group])
    feats = features(bundle, photos, size=size, head_path=path, cache=cache, progress=progress)

    method, splits = heldout_folds(labels.tolist(), folds, seed)
    confusion = np.zeros((len(names), len(names)), dtype=np.int64)
    fold_accuracies: list[float] = []
    with one_torch_thread():  # hundreds of tiny steps: on a busy server, threads waiting for cores cost 40x
        for done, (train, test) in enumerate(splits, 1):
            head = fit_head(feats[train], labels[train], len(names), weight_decay=weight_decay)
            with torch.no_grad():
                predicted = head(feats[test]).argmax(1)
            for truth, guess in zip(labels[test].tolist(), predicted.tolist(), strict=True):
                confusion[truth, guess] += 1
            fold_accuracies.append(float((predicted == labels[test]).float().mean()))
            if progress is not None:
                progress(done, len(splits) + 1, "training")
        head = fit_head(feats, labels, len(names), weight_decay=weight_decay).to(old.weight.device)
    if progress is not None:
        progress(len(splits) + 1, len(splits) + 1, "training")

    model = with_head(bundle.model, path, head).eval()
    key = head_key(bundle.name, head, names)
    heldout = int(confusion.sum())
    taught = dataclasses.replace(
        bundle, model=model, name=taught_name(bundle.name, key), categories=names,
        weights_status=f"{bundle.name} with a head taught {len(names)} classes "
                       f"(cross-validated accuracy {confusion.trace() / heldout:.0%}). {bundle.weights_status}",
    )
    return Taught(bundle=taught, accuracy=float(confusion.trace() / heldout), confusion=confusion, method=method,
                  heldout=heldout, head_path=path, head=head, backbone=bundle.name, fold_accuracies=fold_accuracies)


def head_key(backbone: str, head: nn.Linear, names: Sequence[str]) -> str:
    """Ten hex digits that tell taught heads apart: the backbone's name, the weights, the names."""
    h = hashlib.sha256(backbone.encode())
    h.update(head.weight.detach().cpu().numpy().tobytes())
    h.update(head.bias.detach().cpu().numpy().tobytes())
    h.update("\n".join(names).encode())
    return h.hexdigest()[:10]


def taught_bundle(bundle: ModelBundle, head_path: str, head: nn.Linear, names: Sequence[str]) -> ModelBundle:
    """``bundle`` with a head taught before (for instance one shared with a class): the same model
    :func:`teach` returned, without teaching again."""
    head = head.to(bundle.device).eval()
    key = head_key(bundle.name, head, names)
    return dataclasses.replace(bundle, model=with_head(bundle.model, head_path, head).eval(),
                               name=taught_name(bundle.name, key), categories=list(names),
                               weights_status=f"{bundle.name} with a head taught {len(names)} classes. "
                                              f"{bundle.weights_status}")


__all__ = ["MAX_CLASSES", "MAX_PHOTOS", "MIN_PHOTOS", "TeachError", "Taught", "check_classes", "check_examples",
           "features", "find_head", "fit_head", "heldout_folds", "photo_digest", "taught_bundle", "teach", "with_head"]
