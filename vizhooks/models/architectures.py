"""Building a torchvision, timm, Hugging Face or CLIP (open_clip) network: seeded random weights, any device (the meta
device for shapes only). Imports no other vizhooks module, so weights, models and layers can all build
on it. Nothing here downloads: a Hugging Face model is built from a folder or the Hugging Face cache.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torchvision import models as tvm

TIMM_PREFIX = "timm:"
#: ``"hf:ID_OR_DIR"``: a Hugging Face image classifier from a ``save_pretrained`` folder or the Hub.
HF_PREFIX = "hf:"
#: ``"clip:ARCH"``: an open_clip model's image tower as a classifier of typed class names
#: (vizhooks.models.zero_shot); a model *name* adds the class names, one a line (registry.clip_name).
CLIP_PREFIX = "clip:"
#: The seed of every randomly initialised model (a shown code snippet repeats it).
SEED = 0


def timm_module() -> ModuleType:
    """The timm package, or a ValueError that says how to install it."""
    try:
        import timm
    except ImportError:
        raise ValueError("timm models need the timm package: pip install timm.") from None
    return timm


class HFClassifier(nn.Module):
    """A Hugging Face image classifier that returns the logits tensor, as every vizhooks model does.

    The Hugging Face model is the child ``hf``, so its layers keep their own names under ``hf.``
    (``hf.vit.layers.0``, ``hf.resnet.encoder.stages.1``): the names in links and the CLI are the
    Hugging Face names. ``flip_channels`` (a model whose image processor flips RGB to BGR: MobileViT)
    flips the input's channels here, so the tensors vizhooks makes and shows stay RGB.
    """

    def __init__(self, hf: nn.Module, flip_channels: bool = False) -> None:
        super().__init__()
        self.hf = hf
        self.flip_channels = flip_channels

    @property
    def config(self) -> Any:
        return self.hf.config

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.hf(pixel_values=x.flip(1) if self.flip_channels else x)
        return out.logits if hasattr(out, "logits") else out[0]


class ZeroShotCLIP(nn.Module):
    """CLIP's image tower and a fixed set of prompt embeddings: ``model(x)`` returns
    ``logit_scale.exp() * cos(image embedding, prompt embedding)`` for each prompt, shape (N, prompts).

    ``visual`` is open_clip's image encoder itself (ResNet or ViT), shared with the CLIP model.
    """

    def __init__(self, clip: Any, prompt_features: torch.Tensor) -> None:
        super().__init__()
        self.visual: nn.Module = clip.visual
        self.logit_scale: nn.Parameter = clip.logit_scale
        self.prompts: torch.Tensor
        self.register_buffer("prompts", F.normalize(prompt_features.detach(), dim=-1), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        image = self.visual(x)
        image = image[0] if isinstance(image, tuple) else image
        return self.logit_scale.exp() * F.normalize(image, dim=-1) @ self.prompts.t()


def open_clip_module() -> ModuleType:
    """The open_clip package, or a ValueError that says how to install it."""
    try:
        import open_clip  # type: ignore[import-untyped]
    except ImportError:
        raise ValueError("CLIP zero-shot needs the open_clip package: pip install open-clip-torch.") from None
    return open_clip


def clip_check(arch: str) -> ModuleType:
    """The open_clip package, once it is known to have a model named ``arch``.

    Raises:
        ValueError: open_clip is missing, or has no model of that name (close names suggested).
    """
    open_clip = open_clip_module()
    if arch not in open_clip.list_models():
        import difflib

        close = difflib.get_close_matches(arch, open_clip.list_models(), n=3, cutoff=0.6)
        hint = f" Did you mean: {', '.join(close)}?" if close else ""
        raise ValueError(f"open_clip has no model named {arch!r}.{hint} open_clip.list_models() lists them.")
    return open_clip


def clip_random(arch: str, device: torch.device | str = "cpu") -> Any:
    """The open_clip model ``arch`` with seeded random weights, in eval mode (the meta device: shapes only).

    A Hugging Face text tower (open_clip's multilingual models: ``xlm-roberta-base-ViT-B-32``...) is built
    from its config alone: open_clip would otherwise download its pretrained weights (1 GB for XLM-R) into
    a model whose weights are random anyway.

    Raises:
        ValueError: open_clip has no model of that name (close names suggested).
    """
    open_clip = clip_check(arch)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(SEED)
        return open_clip.create_model(arch, pretrained=None, pretrained_text=False, device=device).eval()


def clip_dim(clip: Any) -> int:
    """The size of a CLIP model's joint embedding (what its image tower returns)."""
    dim = getattr(clip.visual, "output_dim", None)
    return int(dim) if dim is not None else int(clip.text_projection.shape[-1])


def hf_file(ref: str, filename: str) -> Path | None:
    """``filename`` of the Hugging Face model ``ref`` (a folder or a Hub id) on this machine: in the
    folder, or in the Hugging Face cache (HF_HOME); None when it is not here. Never downloads."""
    folder = Path(os.path.expanduser(ref))
    if folder.is_dir():
        path = folder / filename
        return path if path.is_file() else None
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(ref, filename)
    except ValueError:  # not a valid repository id
        return None
    return Path(found) if isinstance(found, str) else None


def file_stamp(path: str | os.PathLike | None) -> tuple[int, int] | None:
    """When the file at ``path`` last changed, and its size (a cache key that changes with the file); None
    without a file."""
    try:
        st = os.stat(path) if path else None
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size) if st else None


def hf_json(ref: str, filename: str) -> dict[str, Any] | None:
    """A JSON file of ``ref`` (``config.json``, ``preprocessor_config.json``) from this machine, or None."""
    path = hf_file(ref, filename)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


#: The image processor settings :func:`vizhooks.models.images.processor_spec` reads (and the READMEs and
#: docs/models.md list: tests/test_hf.py checks they do).
HF_PROCESSOR_FIELDS = ("size", "resample", "do_center_crop", "crop_size", "crop_pct", "do_rescale", "rescale_factor",
                       "do_normalize", "image_mean", "image_std", "do_flip_channel_order")


def hf_processor(ref: str) -> dict[str, Any] | None:
    """The image processor settings of ``ref``: its saved ``preprocessor_config.json`` completed by its
    processor class's own defaults (MobileViT's saves no ``do_normalize``: its class does not normalise),
    old formats read as transformers reads them (a single ``size`` number). None without a saved
    processor; the file as it is when transformers cannot build its processor."""
    saved = hf_json(ref, "preprocessor_config.json")
    path = hf_file(ref, "preprocessor_config.json")
    if saved is None or path is None:
        return None
    return dict(_processor_settings(str(path), file_stamp(path))) or saved


@functools.lru_cache(maxsize=32)
def _processor_settings(path: str, stamp: tuple[int, int] | None) -> tuple[tuple[str, Any], ...]:
    from transformers import AutoImageProcessor

    try:
        processor = AutoImageProcessor.from_pretrained(str(Path(path).parent), local_files_only=True)
    except Exception:  # any processor transformers cannot build: the caller reads the file itself
        return ()
    settings = []
    for field in HF_PROCESSOR_FIELDS:
        value = getattr(processor, field, None)
        if dataclasses.is_dataclass(value):  # transformers' SizeDict
            value = dataclasses.asdict(value)  # type: ignore[arg-type]
        if isinstance(value, dict):
            value = {k: v for k, v in value.items() if v is not None}
        elif isinstance(value, (list, tuple)):
            value = tuple(value)
        elif value is not None and not isinstance(value, (bool, int, float, str)):
            value = int(value)  # PIL's resampling enum
        settings.append((field, value))
    # whose resize rule applies (ConvNeXt's crop_pct): the class transformers built, as its saved file names it
    settings.append(("image_processor_type", type(processor).__name__))
    return tuple(settings)


def hf_config(ref: str) -> Any:
    """The ``transformers`` config of ``ref`` from its folder or the Hugging Face cache.

    Raises:
        ValueError: the config is not on this machine, or is not an image classifier's.
    """
    path = hf_file(ref, "config.json")
    if path is None:
        raise ValueError(f"Hugging Face model {ref} is not on this machine (no config.json in its folder or the "
                         f"Hugging Face cache); load it once with weights='auto' while online.")
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(path.parent), local_files_only=True)
    except (OSError, ValueError, KeyError) as exc:
        raise ValueError(f"Hugging Face model {ref}: its config.json could not be read "
                         f"({str(exc).splitlines()[0][:160]}).") from None


def hf_from_config(config: Any) -> HFClassifier:
    """A Hugging Face image classifier of ``config`` with the default (random) initialisation, wrapped."""
    from transformers import AutoModelForImageClassification

    try:
        model = AutoModelForImageClassification.from_config(config)
    except ValueError as exc:
        raise ValueError(f"{type(config).__name__} is not an image-classification model that transformers "
                         f"builds ({str(exc).splitlines()[0][:160]}).") from None
    return HFClassifier(model)


def imagenet_weights(arch: str) -> tvm.WeightsEnum:
    """The torchvision weights enum member vizhooks uses for ``arch`` (its DEFAULT)."""
    try:
        return tvm.get_model_weights(arch).DEFAULT
    except (ValueError, KeyError):
        raise ValueError(f"{arch!r} is not a torchvision classification model.") from None


def build_kwargs(arch: str) -> dict[str, object]:
    """The keyword arguments torchvision's builder sets when it loads ImageNet weights, so a model
    built here has exactly the modules (and the input size) of ``builder(weights=DEFAULT)``."""
    weights = imagenet_weights(arch)
    kwargs: dict[str, object] = {"num_classes": len(weights.meta["categories"])}
    if arch in ("googlenet", "inception_v3"):
        kwargs.update(transform_input=True, aux_logits=True, init_weights=False)
    elif arch.startswith("vit_"):
        kwargs["image_size"] = weights.meta["min_size"][0]
    elif arch.startswith("maxvit"):
        kwargs["input_size"] = weights.meta["min_size"]
    return kwargs


def drop_aux_heads(model: nn.Module) -> None:
    """Remove GoogLeNet's / Inception v3's auxiliary classifiers, as torchvision's pretrained
    models do."""
    if hasattr(model, "aux1"):
        model.aux_logits, model.aux1, model.aux2 = False, None, None  # type: ignore[assignment]
    if hasattr(model, "AuxLogits"):
        model.aux_logits, model.AuxLogits = False, None  # type: ignore[assignment]


@functools.cache
def _regnet_params_on_cpu() -> None:
    """RegNet's builders compute their widths with tensors; on the meta device those have no
    values. Compute them on the CPU whatever the default device (same numbers, no weights)."""
    from torchvision.models import regnet

    original = regnet.BlockParams.from_init_params.__func__

    def on_cpu(cls: type, *args: Any, **kwargs: Any) -> Any:
        with torch.device("cpu"):
            return original(cls, *args, **kwargs)

    regnet.BlockParams.from_init_params = classmethod(on_cpu)


def build(arch: str, *, num_classes: int | None = None, device: torch.device | str = "cpu",
          drop_aux: bool = True) -> nn.Module:
    """The network of ``arch`` with seeded random weights, in eval mode (no download ever).

    Seeded inside a forked RNG: deterministic weights without disturbing the caller's RNG. On the
    ``"meta"`` device nothing is allocated (shapes only).

    Args:
        arch: a torchvision classifier name, ``"timm:NAME"``, ``"hf:ID_OR_DIR"`` (its config must be
            in the folder or the Hugging Face cache), or ``"clip:ARCH"`` (an open_clip image tower whose
            ``num_classes`` prompt embeddings are zeros: for shapes and layers only).
        num_classes: rows of the head; default the ImageNet head (2 prompts for CLIP).
        device: where the parameters are created.
        drop_aux: remove auxiliary classifiers (GoogLeNet, Inception v3).

    Returns:
        The model in eval mode.

    Raises:
        ValueError: not a torchvision classifier, a timm model without timm installed, or a Hugging
            Face model whose config is not on this machine.

    Example:
        >>> build("resnet18", device="meta").fc.out_features
        1000
    """
    if arch.startswith("regnet"):
        _regnet_params_on_cpu()
    if arch.startswith(CLIP_PREFIX):
        clip = clip_random(arch.removeprefix(CLIP_PREFIX), device)
        with torch.device(device):
            return ZeroShotCLIP(clip, torch.zeros(num_classes or 2, clip_dim(clip))).eval()
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(SEED)
        if arch.startswith(HF_PREFIX):
            config = hf_config(arch.removeprefix(HF_PREFIX))
            if num_classes is not None:
                config.num_labels = num_classes
            model = hf_from_config(config)
            model.flip_channels = bool((hf_processor(arch.removeprefix(HF_PREFIX)) or {}).get("do_flip_channel_order"))
        elif arch.startswith(TIMM_PREFIX):
            kwargs: dict[str, object] = {} if num_classes is None else {"num_classes": num_classes}
            model = timm_module().create_model(arch.removeprefix(TIMM_PREFIX), pretrained=False, **kwargs)
        else:
            kwargs = build_kwargs(arch)
            if num_classes is not None:
                kwargs["num_classes"] = num_classes
            model = tvm.get_model_builder(arch)(weights=None, **kwargs)
    if drop_aux:
        drop_aux_heads(model)
    return model.eval()


@functools.cache
def meta_build(arch: str, num_classes: int | None = None) -> tuple[nn.Module, threading.Lock]:
    """``arch`` built on the meta device (shapes only, no memory), with a lock for hooking it.
    Cached: one copy per architecture and head size."""
    return build(arch, num_classes=num_classes, device="meta"), threading.Lock()
