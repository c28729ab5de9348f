"""Model registry: every torchvision classifier, timm models, your own checkpoints and the
operator's list; how each one is built, fed and named; device choice.

Names:
    ``"resnet18"``, ``"vgg16"``, ``"vit_b_16"``, ... any ``torchvision.models`` classifier;
    ``"timm:convnext_tiny"`` any timm model (when timm is installed);
    ``"hf:ID_OR_DIR"`` a Hugging Face image classifier (a ``save_pretrained`` folder or a Hub id);
    ``"clip:ARCH\\nname\\nname..."`` CLIP with typed class names (:func:`clip_name`; built by
    :func:`vizhooks.models.zero_shot.zero_shot`, so :func:`load_model` refuses it);
    an operator entry's name from ``VIZHOOKS_MODELS`` (a TOML file).
"""

from __future__ import annotations

import functools
import json
import os
import re
import sys
import threading
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import torch
from PIL import Image
from torch import nn
from torchvision import models as tvm

from vizhooks.errors import CodedError
from vizhooks.i18n import Names, OSReason, t
from vizhooks.models.architectures import (
    CLIP_PREFIX,
    HF_PREFIX,
    TIMM_PREFIX,
    HFClassifier,
    build,
    drop_aux_heads,
    file_stamp,
    hf_config,
    hf_file,
    hf_json,
    hf_processor,
    meta_build,
    timm_module,
)
from vizhooks.models.images import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    InputSpec,
    clip_spec,
    fit_to_model,
    processor_spec,
    to_tensor,
)
from vizhooks.models.weights import (
    DOWNLOAD_TIMEOUT_S,
    Note,
    WeightsError,
    apply_state_dict,
    bounded,
    checkpoint_filename,
    checkpoint_path,
    fetch_command,
    gathered,
    hf_ensure_config,
    hf_pretrained,
    hub_download_allowed,
    imagenet_chain,
    imagenet_weights,
    offline,
    read_state_dict,
    remember_download,
)

ARCHITECTURES: tuple[str, ...] = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")

#: Families in the order the page lists them: (label, name prefixes).
FAMILIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ResNet", ("resnet",)),
    ("ResNeXt / Wide ResNet", ("resnext", "wide_resnet")),
    ("AlexNet / VGG", ("alexnet", "vgg")),
    ("GoogLeNet / Inception", ("googlenet", "inception")),
    ("DenseNet", ("densenet",)),
    ("MobileNet", ("mobilenet",)),
    ("EfficientNet", ("efficientnet",)),
    ("RegNet", ("regnet",)),
    ("ShuffleNet / SqueezeNet / MNASNet", ("shufflenet", "squeezenet", "mnasnet")),
    ("ConvNeXt", ("convnext",)),
    ("Vision Transformer", ("vit_",)),
    ("Swin Transformer", ("swin",)),
    ("MaxViT", ("maxvit",)),
)
OPERATOR_FAMILY = "This server's models"
HF_FAMILY = "Hugging Face"
CLIP_FAMILY = "CLIP"
#: A taught model's name: the backbone's name, this mark, and its head's key (vizhooks.teach).
TAUGHT_MARK = "+my:"


@dataclass(frozen=True)
class ModelEntry:
    """What a model name stands for: an architecture, where its weights come from, its labels."""

    name: str
    arch: str
    weights: str = "auto"
    labels: str | None = None
    description: str = ""
    position: int = 0  # its place among VIZHOOKS_MODELS' [[model]] tables, from 1 (0: no entry of that file)

    @property
    def is_timm(self) -> bool:
        return self.arch.startswith(TIMM_PREFIX)

    @property
    def is_hf(self) -> bool:
        return self.arch.startswith(HF_PREFIX)


#: ``weights_status`` of a model built with random weights because ``weights="none"`` asked for them.
RANDOM_AS_ASKED = "Random weights (seeded) for {name}, as asked: predictions are meaningless."


def random_as_asked(status: str) -> bool:
    """Whether ``status`` (a ``weights_status``) says the weights are random because they were asked to be."""
    head, _, tail = RANDOM_AS_ASKED.partition("{name}")
    return status.startswith(head) and status.endswith(tail)


@dataclass
class ModelBundle:
    """A ready-to-use model and what a person needs to know about it.

    Attributes:
        model: the network, in eval mode, on ``device``.
        name: the name it was loaded by, e.g. ``"resnet18"`` or an operator entry's name.
        device: where the model lives.
        pretrained: True when ImageNet (or operator-supplied) weights were loaded.
        weights_status: a plain sentence: where the weights came from, or why they are random
            and how to fix that.
        categories: class names, index-aligned with the logits.
        mean, std: the normalisation the model expects.
        weights_source: ``"file"``, ``"env"``, ``"cache"``, ``"download"``, ``"timm"`` or ``"random"``.
        weights_notes: random weights where pretrained ones were asked for: the reasons met on the way
            (:data:`vizhooks.models.weights.Note`), which ``weights_status`` says in English and a page in
            its own language (:func:`vizhooks.models.weights.said_notes`); else empty.
        arch: the architecture (torchvision name or ``"timm:..."``).
        input: how the model wants its pictures (see :class:`InputSpec`).
        clip: for a CLIP zero-shot model (:func:`vizhooks.models.zero_shot.zero_shot`), the open_clip
            model; else None.
    """

    model: nn.Module
    name: str
    device: torch.device
    pretrained: bool
    weights_status: str
    categories: list[str]
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    weights_source: str = "random"
    arch: str = ""
    input: InputSpec = field(default_factory=InputSpec)
    clip: nn.Module | None = None
    weights_notes: tuple[Note, ...] = ()

    def __post_init__(self) -> None:
        self.arch = self.arch or self.name

    @property
    def num_params(self) -> int:
        return sum(p.numel() for p in self.model.parameters())

    def resize(self, image: Image.Image, size: int = 224) -> Image.Image:
        """The picture this model sees (see :meth:`preprocess`)."""
        return fit_to_model(image, size, self.input)

    def preprocess(self, image: Image.Image, size: int = 224) -> torch.Tensor:
        """``image`` as this model's (1, 3, H, W) input: its own mean, std and interpolation.

        Models that accept any size get the no-crop rule (shorter side ``size``, at least the
        model's minimum, longer side capped); models that need a fixed size (ViT, Swin, MaxViT)
        get the shorter side resized to that size and the centre cropped square; ``size`` is
        then ignored (see :meth:`input_note`).
        """
        return to_tensor(self.resize(image, size), self.input.mean, self.input.std)

    def input_note(self, size: int = 224) -> str | None:
        """One sentence, in the current language (vizhooks.i18n), when the picture was not simply scaled
        to ``size``, else None."""
        spec = self.input
        if spec.fixed_size:
            return t("input_fixed", name=display_name(self.name), side=spec.fixed_size)
        if size < spec.min_size:
            return t("input_min", name=display_name(self.name), side=spec.min_size)
        return None


# ----------------------------------------------------------------------------------------------
# the registry


@functools.cache
def torchvision_models() -> tuple[str, ...]:
    """Every torchvision image classifier, ResNets first, then by family."""
    names = tvm.list_models(module=tvm)
    natural = lambda n: [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", n)]  # noqa: E731
    return tuple(sorted(names, key=lambda n: (_family_index(n), natural(n))))


def _family_index(name: str) -> int:
    for i, (_, prefixes) in enumerate(FAMILIES):
        if name.startswith(prefixes):
            return i
    return len(FAMILIES)


def family(name: str) -> str:
    """The family label the page groups ``name`` under."""
    if name in _all_operator_models()[0]:
        return OPERATOR_FAMILY
    arch = name.removeprefix(TIMM_PREFIX)
    if name.startswith(TIMM_PREFIX):
        return "timm"
    if name.startswith(HF_PREFIX):
        return HF_FAMILY
    if is_clip(name):
        return CLIP_FAMILY
    i = _family_index(arch)
    return FAMILIES[i][0] if i < len(FAMILIES) else "Other"


def list_models() -> list[str]:
    """Every name the page and the CLI offer: torchvision's classifiers, then the operator's
    entries from ``VIZHOOKS_MODELS`` that can be used (:func:`operator_models`). (timm names are
    accepted by :func:`load_model` too.)"""
    return [*torchvision_models(), *operator_models()[0]]


def _models_file() -> str:
    return os.environ.get("VIZHOOKS_MODELS", "").strip()


def operator_models() -> tuple[dict[str, ModelEntry], list[str]]:
    """The entries of the ``VIZHOOKS_MODELS`` TOML file, and one warning per broken entry.

    File format::

        [[model]]
        name = "Cats vs dogs (ResNet-50)"
        arch = "resnet50"
        weights = "/srv/models/cats.pth"
        labels = "/srv/models/cats.txt"
        description = "Fine-tuned in week 3"

        [[model]]
        name = "Birds (ViT)"
        hf = "/srv/models/birds-vit"   # a save_pretrained folder, or a Hugging Face Hub id

    An ``hf`` entry whose config is neither on this machine nor downloadable now (downloads off, the Hub
    unreachable), or cannot be read, is not offered either, with a warning that says why: its layers cannot
    be listed, so a page could not show it; nor is one that takes only non-square pictures, which vizhooks
    does not make. It is asked again on each call (after a failed download, no download is tried for
    ``OFFLINE_MEMORY_S`` seconds); :func:`load_model` of its name still says why it cannot be loaded.
    """
    entries, warnings = _all_operator_models()
    unusable: dict[str, str] = {}
    for name, entry in entries.items():
        if entry.is_hf:
            try:
                meta_model(name)  # its config here (or a bounded download) and readable: the layers can be listed
                input_spec(entry.arch)  # and pictures vizhooks can make (a square, or any size)
            except Exception as exc:  # whatever stops the builder (a missing package too) must not stop the page
                why = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(".")
                unusable[name] = f"VIZHOOKS_MODELS entry {entry.position} ({name}) is not offered: {why}."
    if not unusable:
        return entries, warnings
    return {n: e for n, e in entries.items() if n not in unusable}, [*warnings, *unusable.values()]


def operator_listed(name: str) -> bool:
    """Whether ``VIZHOOKS_MODELS`` has an entry ``name``, one that cannot be offered now included."""
    return name in _all_operator_models()[0]


def _all_operator_models() -> tuple[dict[str, ModelEntry], list[str]]:
    """The ``VIZHOOKS_MODELS`` entries as the file gives them, an ``hf`` entry that cannot be built included."""
    return _operator_models(_models_file(), file_stamp(_models_file()))


@functools.lru_cache(maxsize=4)
def _operator_models(path: str, stamp: tuple[int, int] | None) -> tuple[dict[str, ModelEntry], list[str]]:
    if not path:
        return {}, []
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        return {}, [f"VIZHOOKS_MODELS ({path}) could not be read: {exc}."]
    entries: dict[str, ModelEntry] = {}
    warnings: list[str] = []
    raw = data.get("model", [])
    if not isinstance(raw, list):
        return {}, [f"VIZHOOKS_MODELS ({path}) must hold [[model]] tables."]
    base = Path(path).parent
    for i, item in enumerate(raw, 1):
        name = item.get("name") if isinstance(item, Mapping) else None
        label = f"entry {i}" + (f" ({name})" if name else "")
        problem = _entry_problem(item, base)
        if problem:
            warnings.append(f"VIZHOOKS_MODELS {label} is not offered: {problem}")
            continue
        if name in entries or name in torchvision_models():
            warnings.append(f"VIZHOOKS_MODELS {label} is not offered: the name is already taken.")
            continue

        def resolve(p: str | None) -> str | None:
            return None if p is None else str((base / os.path.expanduser(p)).resolve())

        name = cast(str, name)  # _entry_problem has checked it
        arch = item["arch"] if "hf" not in item else HF_PREFIX + _hf_ref(item["hf"], base)
        entries[name] = ModelEntry(name=name, arch=arch, weights=resolve(item.get("weights")) or "auto",
                                   labels=resolve(item.get("labels")), description=str(item.get("description", "")),
                                   position=i)
    return entries, warnings


def _entry_problem(item: object, base: Path) -> str | None:
    if not isinstance(item, Mapping):
        return "it is not a table."
    if "hf" in item:
        if "arch" in item or "weights" in item:
            return "an 'hf' entry takes no 'arch' or 'weights' (the Hugging Face model has its own)."
        if not isinstance(item["hf"], str) or not _hf_ref(item["hf"], base):
            return "'hf' must be a save_pretrained folder or a Hugging Face Hub id (owner/name)."
    for key in ("name",) if "hf" in item else ("name", "arch"):
        if not isinstance(item.get(key), str) or not item[key].strip():
            return f"'{key}' is missing."
    arch = item.get("arch", HF_PREFIX)
    if not arch.startswith((TIMM_PREFIX, HF_PREFIX)) and arch not in torchvision_models():
        return f"arch {arch!r} is not a torchvision classifier (or 'timm:NAME')."
    if arch.startswith(TIMM_PREFIX):  # the page lists its layers for the model menu: a name timm knows
        try:
            if not timm_module().is_model(arch.removeprefix(TIMM_PREFIX)):
                return f"timm has no model named {arch.removeprefix(TIMM_PREFIX)!r}."
        except ValueError as exc:  # timm is not installed
            return str(exc)
    for key in ("weights", "labels"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not (base / os.path.expanduser(value)).is_file()):
            return f"its {key} file {value!r} does not exist."
    return None


_HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*(/[A-Za-z0-9][\w.-]*)?")


def _hf_ref(ref: str, base: Path | None = None) -> str:
    """A Hugging Face model reference as vizhooks keeps it: an existing folder as its absolute path
    (relative to ``base``, the operator file's folder), else a Hub id; "" for neither."""
    ref = ref.strip()
    folder = (base or Path.cwd()) / os.path.expanduser(ref)
    if ref and folder.is_dir():
        return str(folder.resolve())
    return ref if _HUB_ID.fullmatch(ref) and ".." not in ref else ""


def clip_name(arch: str, prompts: Sequence[str]) -> str:
    """The name of CLIP ``arch`` (an open_clip model) classifying ``prompts``: ``"clip:ARCH"`` and the
    class names, one a line. The whole model is in its name, so a link or a class that carries the name
    carries the class names, and every cache keyed by the name keeps each set apart."""
    return "\n".join((CLIP_PREFIX + arch, *(str(p).strip() for p in prompts)))


def is_clip(name: str) -> bool:
    """Whether ``name`` is a CLIP model with typed class names (:func:`clip_name`)."""
    return name.startswith(CLIP_PREFIX)


def clip_parts(name: str) -> tuple[str, tuple[str, ...]]:
    """(open_clip arch, class names) of a :func:`clip_name`."""
    first, *prompts = name.split("\n")
    return first.removeprefix(CLIP_PREFIX), tuple(prompts)


def display_name(name: str) -> str:
    """A model's name as a sentence shows it: a CLIP model's is "CLIP ARCH" (its name holds the class names
    too, one a line, which the page lists elsewhere); any other name is itself."""
    return f"CLIP {clip_parts(name)[0]}" if is_clip(name) else name


def taught_name(backbone: str, key: str) -> str:
    """The name of ``backbone`` with a head taught new classes (see :mod:`vizhooks.teach`)."""
    return f"{backbone}{TAUGHT_MARK}{key}"


def backbone_name(name: str) -> str:
    """The model a name is built on: itself, or a taught model's backbone."""
    return name.split(TAUGHT_MARK, 1)[0]


def resolve_entry(name: str) -> ModelEntry:
    """The :class:`ModelEntry` for a name; torchvision and ``timm:`` names stand for themselves, a
    taught model's name stands for its backbone's architecture (its layers, its input).

    Raises:
        ValueError: an unknown name, with close matches.
    """
    if TAUGHT_MARK in name:
        base = resolve_entry(backbone_name(name))
        return ModelEntry(name=name, arch=base.arch, description=base.description)
    if is_clip(name):
        return ModelEntry(name=name, arch=CLIP_PREFIX + clip_parts(name)[0])
    entries = _all_operator_models()[0]  # an unusable hf entry too
    if name in entries:
        return entries[name]
    if name.startswith(HF_PREFIX):
        ref = _hf_ref(name.removeprefix(HF_PREFIX))
        if not ref:
            raise ValueError(f"{name} names neither a folder nor a Hugging Face Hub id: give hf:FOLDER (made by "
                             f"save_pretrained) or hf:OWNER/NAME.")
        return ModelEntry(name=name, arch=HF_PREFIX + ref)
    if name.startswith(TIMM_PREFIX):
        bare = name.removeprefix(TIMM_PREFIX)
        if not timm_module().is_model(bare):
            raise CodedError(f"timm has no model named {bare!r}; timm.list_models('*{bare[:6]}*') lists similar ones.",
                             "timm_unknown", name=bare, pattern=bare[:6])
        return ModelEntry(name=name, arch=name)
    if name in torchvision_models():
        return ModelEntry(name=name, arch=name)
    import difflib

    close = difflib.get_close_matches(str(name), list_models(), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    raise CodedError(f"Unknown model {name!r}.{hint} `python -m vizhooks --list-models` lists them all.",
                     "unknown_model_close" if close else "unknown_model", name=str(name), close=Names(close))


# ----------------------------------------------------------------------------------------------
# building


def meta_model(name: str) -> tuple[nn.Module, threading.Lock]:
    """The model of ``name`` on the meta device (no memory, no weights), with a lock for hooking
    it. One builder for the memory budget, the layer lists and the shapes. Cached."""
    entry = resolve_entry(name)
    if entry.is_hf:
        hf_ensure_config(entry.arch.removeprefix(HF_PREFIX))
    if is_clip(name):  # the image tower's layers and shapes; one prompt embedding per class name
        return meta_build(entry.arch, max(len(clip_parts(name)[1]), 1))
    return meta_build(entry.arch, _checkpoint_classes(entry))


def _checkpoint_classes(entry: ModelEntry) -> int | None:
    if entry.weights in ("auto", "none", "imagenet"):
        return None
    stamp = file_stamp(entry.weights)
    # meta_model runs on every page request (the memory budget): read each checkpoint once
    return None if stamp is None else _file_classes(entry.arch, entry.weights, stamp)


@functools.lru_cache(maxsize=32)
def _file_classes(arch: str, path: str, stamp: tuple[int, int]) -> int | None:
    try:
        return _head_classes(arch, read_state_dict(path))
    except WeightsError:
        return None


def _head_classes(arch: str, state: Mapping[str, torch.Tensor]) -> int | None:
    """Number of classes of a checkpoint: the rows of its last tensor that the default head
    gives ``num_classes`` rows (the classifier's bias, usually)."""
    default, _ = meta_build(arch, None)
    classes = _default_classes(arch)
    for key, value in reversed(list(default.state_dict().items())):
        if value.ndim >= 1 and value.shape[0] == classes and key in state and state[key].ndim == value.ndim:
            return int(state[key].shape[0])
    return None


def _default_classes(arch: str) -> int:
    if arch.startswith(HF_PREFIX):
        return int(hf_config(arch.removeprefix(HF_PREFIX)).num_labels)
    if arch.startswith(TIMM_PREFIX):
        return int(getattr(meta_build(arch, None)[0], "num_classes", 1000))
    return len(imagenet_weights(arch).meta["categories"])


@functools.lru_cache(maxsize=32)
def _hf_input_spec(ref: str, *stamps: tuple[int, int] | None) -> InputSpec:
    """A Hugging Face model's :func:`input_spec`, read again when its config or processor file changes
    (``stamps``); a refusal (a model of non-square pictures) is not kept and is said again on each call."""
    return processor_spec(hf_processor(ref), getattr(hf_config(ref), "image_size", None))


def input_spec(arch: str, model: nn.Module | None = None) -> InputSpec:
    """Mean, std, interpolation and size rule of ``arch``, from torchvision's weights transforms
    (timm's data config; a Hugging Face model's saved image processor, see
    :func:`vizhooks.models.images.processor_spec`)."""
    if arch.startswith(CLIP_PREFIX):
        model = model if model is not None else meta_build(arch, None)[0]
        return clip_spec(model.visual)
    if arch.startswith(HF_PREFIX):
        ref = arch.removeprefix(HF_PREFIX)
        return _hf_input_spec(ref, *(file_stamp(hf_file(ref, f)) for f in ("config.json", "preprocessor_config.json")))
    if arch.startswith(TIMM_PREFIX):
        timm = timm_module()
        model = model if model is not None else meta_build(arch, None)[0]
        cfg = timm.data.resolve_data_config({}, model=model)
        side = int(cfg["input_size"][-1])
        strict = bool(getattr(getattr(model, "patch_embed", None), "strict_img_size", False))
        return InputSpec(tuple(cfg["mean"]), tuple(cfg["std"]), str(cfg.get("interpolation", "bilinear")),
                         side if strict else None, 1)
    weights = imagenet_weights(arch)
    transform = weights.transforms()
    crop = int(transform.crop_size[0])
    min_side = int(weights.meta["min_size"][0])
    return InputSpec(tuple(transform.mean), tuple(transform.std), transform.interpolation.value,
                     crop if min_side >= crop else None, min_side)


@functools.cache
def imagenet_categories() -> tuple[str, ...]:
    """The 1000 ImageNet class names; shipped inside torchvision, so available offline."""
    return tuple(imagenet_weights("resnet18").meta["categories"])


def categories() -> list[str]:
    return list(imagenet_categories())


def read_labels(path: str | os.PathLike, classes: int | None = None) -> list[str]:
    """Class names from a file: one per line, or a JSON list of strings.

    Raises:
        WeightsError: unreadable, empty, or a different count than the checkpoint's classes.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        code = {FileNotFoundError: "labels_missing", IsADirectoryError: "labels_folder",
                UnicodeDecodeError: "labels_not_utf8"}.get(type(exc), "labels_unreadable")
        raise WeightsError(f"Labels file {path} could not be read ({exc.__class__.__name__}).", code, source=str(path),
                           reason=OSReason.of(exc) if isinstance(exc, OSError) else exc.__class__.__name__) from None
    return parse_labels(text, str(path), classes)


def parse_labels(text: str, source: str = "the labels", classes: int | None = None) -> list[str]:
    """Class names from a labels file's text (see :func:`read_labels`); ``source`` names it in errors."""
    labels: object
    if text.lstrip().startswith("["):
        try:
            labels = json.loads(text)
        except json.JSONDecodeError as exc:
            raise WeightsError(f"Labels file {source} is not a valid JSON list ({exc.msg}, line {exc.lineno}).",
                               "labels_json", source=source, line=exc.lineno) from None
        if not isinstance(labels, list) or not all(isinstance(x, (str, int, float)) for x in labels):
            raise WeightsError(f"Labels file {source} must be a JSON list of strings.", "labels_json", source=source,
                               line=1)
        labels = [str(x) for x in labels]
    else:
        labels = [line.strip() for line in text.splitlines() if line.strip()]
    if not labels:
        raise WeightsError(f"Labels file {source} holds no labels.", "labels_empty", source=source)
    if classes is not None and len(labels) != classes:
        raise WeightsError(f"Labels file {source} has {len(labels)} labels but the model has {classes} classes.",
                           "labels_count", source=source, n=len(labels), classes=classes)
    return labels


# ----------------------------------------------------------------------------------------------
# devices


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` picks CUDA, then Apple MPS, then the CPU; any torch device string is accepted.

    Raises:
        ValueError: the string is not a device, or names one this machine does not have.
    """
    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise CodedError(f"Unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps.", "device_unknown",
                             device=str(device)) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise CodedError(code="device_no_cuda", device=str(device))
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise CodedError(code="device_no_mps", device=str(device))
    return dev


# ----------------------------------------------------------------------------------------------
# load_model


def _timm_pretrained(arch: str, model: nn.Module) -> tuple[str, str]:
    """timm's weights through the Hugging Face cache: cache only when VIZHOOKS_OFFLINE or the Hub's own
    HF_HUB_OFFLINE is set, else a download whose first answer is awaited at most DOWNLOAD_TIMEOUT_S seconds."""
    timm = timm_module()
    from huggingface_hub import hf_hub_download, try_to_load_from_cache

    name = arch.removeprefix(TIMM_PREFIX)
    cfg = timm.models.get_pretrained_cfg(name)
    repo = getattr(cfg, "hf_hub_id", None) if cfg is not None else None
    if not repo:
        raise WeightsError(f"timm has no Hugging Face checkpoint for {name}")
    filenames = ("model.safetensors", "pytorch_model.bin")
    path = next((p for f in filenames if isinstance(p := try_to_load_from_cache(repo, f), str)), None)
    source = "cache"
    if path is None:
        notes: list[Note] = []
        if not hub_download_allowed(notes):
            raise gathered([notes[0], ("timm_not_cached", {"name": name})], end="")
        try:
            path = bounded(lambda started: hf_hub_download(repo, filenames[0]), DOWNLOAD_TIMEOUT_S, name)
            remember_download(None)
            source = "download"
        except Exception as exc:
            error = exc if isinstance(exc, WeightsError) else WeightsError(str(exc).splitlines()[0][:160])
            remember_download(error)
            raise gathered([("timm_download_failed", {"name": name, "reason": str(error)})], end="") from None
    if str(path).endswith(".safetensors"):
        from safetensors.torch import load_file

        state = load_file(str(path))
    else:
        state = read_state_dict(path)
    state = _timm_filter(model, state)
    apply_state_dict(model, arch, state, str(path))
    return source, f"Pretrained weights for {name} from timm ({path})."


def _timm_filter(model: nn.Module, state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    # Some timm models convert an original checkpoint's layout on load (their checkpoint_filter_fn)
    module = sys.modules.get(type(model).__module__)
    filter_fn = getattr(module, "checkpoint_filter_fn", None)
    if filter_fn is None:
        return state
    try:
        return filter_fn(state, model)
    except Exception:  # an unexpected layout: load as is, and let the strict check speak
        return state


def load_model(
    name: str = "resnet18",
    weights: str | os.PathLike = "auto",
    device: str | torch.device = "auto",
    *,
    labels: str | os.PathLike | None = None,
) -> ModelBundle:
    """Build a model by name with weights resolved as documented in the README.

    Args:
        name: any name of :func:`list_models` (every torchvision classifier, operator entries),
            or ``"timm:NAME"`` for a timm model.
        weights: ``"auto"`` (env file -> torch cache -> bounded download -> random),
            ``"imagenet"`` (same chain, but an error instead of random weights),
            ``"none"`` (seeded random weights) or a path to your own state_dict, whose head may
            have any number of classes (read from its last layer).
        device: ``"auto"`` or any torch device string.
        labels: class names for your own checkpoint: one per line, or a JSON list. Without it, a
            1000-class head gets the ImageNet names and any other head "class 0", "class 1", ...

    Returns:
        A :class:`ModelBundle` with the model in eval mode on its device.

    Raises:
        ValueError: unknown name or device.
        WeightsError: weights or labels file unusable, or ``"imagenet"`` weights unavailable.

    Example:
        >>> bundle = load_model("vgg16", weights="none", device="cpu")
        >>> bundle.pretrained, bundle.input.fixed_size
        (False, None)
    """
    if TAUGHT_MARK in name:
        raise ValueError(f"{name} is a taught model: it lives in the session that taught it. Load its saved "
                         f"checkpoint with load_model({backbone_name(name)!r}, weights=..., labels=...).")
    if is_clip(name):
        arch, prompts = clip_parts(name)
        names = list(prompts) or ["a cat", "a dog"]
        raise CodedError(code="clip_needs_names", arch=arch, call=f"vizhooks.zero_shot({arch!r}, {names!r})")
    entry = resolve_entry(name)
    dev = resolve_device(device)
    weights = os.fspath(weights)
    if entry.is_hf:
        return _load_hf(entry, weights, dev, labels)
    if weights == "auto" and entry.weights != "auto":
        weights = entry.weights
    labels = labels if labels is not None else entry.labels
    arch = entry.arch
    fix = (
        f"To use real ImageNet weights, run `{fetch_command(arch)}` (or `make weights MODELS={arch}`) once on "
        f"a machine with internet; it saves {checkpoint_filename(arch)} into {checkpoint_path(arch).parent}."
        if not entry.is_timm else
        "To use pretrained weights, load the model once on a machine with internet (timm keeps it in the "
        "Hugging Face cache, HF_HOME)."
    )

    num_classes = None
    notes: tuple[Note, ...] = ()
    if weights == "none":
        model = build(arch)
        source, pretrained = "random", False
        status = RANDOM_AS_ASKED.format(name=entry.name)
    elif weights in ("auto", "imagenet"):
        model = build(arch, drop_aux=False)
        try:
            if entry.is_timm:
                source, status = _timm_pretrained(arch, model)
            else:
                source, status = imagenet_chain(arch, model)
            pretrained = True
        except WeightsError as exc:
            if weights == "imagenet":
                raise WeightsError(f"Pretrained weights for {entry.name} are not available: {exc} {fix}") from None
            source, pretrained = "random", False  # the model is untouched: weights are checked before loading
            notes = exc.notes
            status = (
                f"Random weights: pretrained weights for {entry.name} could not be loaded. {str(exc).rstrip('.')}. "
                f"{fix} Until then, feature maps show an untrained network and predictions are meaningless."
            )
        drop_aux_heads(model)
    else:
        state = read_state_dict(weights)
        num_classes = _head_classes(arch, state)
        has_aux = any(k.startswith(("aux1.", "AuxLogits.")) for k in state)
        model = build(arch, num_classes=num_classes, drop_aux=not has_aux)
        apply_state_dict(model, arch, state, weights)
        drop_aux_heads(model)
        source, pretrained = "file", True
        status = f"Weights for {entry.name} from {weights}."

    classes = num_classes or _default_classes(arch)
    if labels is not None:
        cats = read_labels(labels, classes)
    elif classes == 1000:
        cats = categories()
    else:
        cats = [f"class {i}" for i in range(classes)]
    spec = input_spec(arch, model)
    model = model.to(dev).eval()
    return ModelBundle(
        model=model, name=entry.name, device=dev, pretrained=pretrained, weights_status=status,
        categories=cats, mean=spec.mean, std=spec.std, weights_source=source, arch=arch, input=spec,
        weights_notes=notes,
    )


def _load_hf(entry: ModelEntry, weights: str, dev: torch.device, labels: str | os.PathLike | None) -> ModelBundle:
    """:func:`load_model` for ``hf:ID_OR_DIR``: the Hugging Face model wrapped so that it returns
    logits, its categories from ``id2label``, its input from its saved image processor."""
    ref = entry.arch.removeprefix(HF_PREFIX)
    folder = Path(os.path.expanduser(ref)).is_dir()
    fix = ("To use its own weights, save the model into the folder with save_pretrained (it writes config.json "
           "and model.safetensors)." if folder else
           f"To use its own weights, load {entry.name} once on a machine with internet (it stays in the Hugging "
           f"Face cache, HF_HOME; HF_ENDPOINT names a mirror), or save_pretrained it into a folder and load "
           f"hf:FOLDER.")
    notes: tuple[Note, ...] = ()
    if weights == "none" or folder:  # a folder without config.json: say that, not transformers' guess at a type
        hf_ensure_config(ref)
    if hf_file(ref, "config.json") is not None:
        input_spec(entry.arch)  # a model of non-square pictures is refused before its weights are read or fetched
    if weights == "none":
        model, source, pretrained = build(entry.arch), "random", False
        status = RANDOM_AS_ASKED.format(name=entry.name)
    elif weights in ("auto", "imagenet"):
        try:
            hf_model, source, status = hf_pretrained(ref)
            model, pretrained = hf_model.eval(), True
        except WeightsError as exc:
            if weights == "imagenet" or hf_json(ref, "config.json") is None:
                raise WeightsError(f"{str(exc).rstrip('.')}. {fix}") from None
            model, source, pretrained, notes = build(entry.arch), "random", False, exc.notes
            status = (f"Random weights: the weights of {entry.name} could not be loaded. {str(exc).rstrip('.')}. {fix} "
                      f"Until then, feature maps show an untrained network and predictions are meaningless.")
    else:
        raise ValueError(f"{entry.name} is a Hugging Face model: weights must be 'auto' or 'none'; for other "
                         f"weights, save_pretrained the model into a folder and load hf:FOLDER.")
    config = cast(HFClassifier, model).config
    classes = int(config.num_labels)
    if labels is not None:
        cats = read_labels(labels, classes)
    else:
        id2label = {str(k): str(v) for k, v in (getattr(config, "id2label", None) or {}).items()}
        cats = [id2label.get(str(i), f"class {i}") for i in range(classes)]
    spec = input_spec(entry.arch, model)
    cast(HFClassifier, model).flip_channels = spec.channels == "BGR"
    return ModelBundle(
        model=model.to(dev).eval(), name=entry.name, device=dev, pretrained=pretrained, weights_status=status,
        categories=cats, mean=spec.mean, std=spec.std, weights_source=source, arch=entry.arch, input=spec,
        weights_notes=notes,
    )


__all__ = [
    "ARCHITECTURES", "IMAGENET_MEAN", "IMAGENET_STD", "InputSpec", "ModelBundle", "ModelEntry", "WeightsError",
    "TAUGHT_MARK", "backbone_name", "build", "categories", "checkpoint_path", "clip_name", "clip_parts", "family",
    "is_clip", "input_spec", "list_models",
    "load_model", "meta_model", "offline", "operator_models", "parse_labels", "read_labels", "resolve_device",
    "resolve_entry",
    "taught_name",
]
