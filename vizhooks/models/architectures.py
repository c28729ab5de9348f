"""Building a torchvision or timm network: seeded random weights, any device (the meta device for
shapes only). Imports no other vizhooks module, so weights, models and layers can all build on it.
"""

from __future__ import annotations

import functools
import threading
from types import ModuleType
from typing import Any

import torch
from torch import nn
from torchvision import models as tvm

TIMM_PREFIX = "timm:"
#: The seed of every randomly initialised model (a shown code snippet repeats it).
SEED = 0


def timm_module() -> ModuleType:
    """The timm package, or a ValueError that says how to install it."""
    try:
        import timm
    except ImportError:
        raise ValueError("timm models need the timm package: pip install timm.") from None
    return timm


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
        arch: a torchvision classifier name, or ``"timm:NAME"``.
        num_classes: rows of the head; default the ImageNet head.
        device: where the parameters are created.
        drop_aux: remove auxiliary classifiers (GoogLeNet, Inception v3).

    Returns:
        The model in eval mode.

    Raises:
        ValueError: not a torchvision classifier, or a timm model without timm installed.

    Example:
        >>> build("resnet18", device="meta").fc.out_features
        1000
    """
    if arch.startswith("regnet"):
        _regnet_params_on_cpu()
    with torch.random.fork_rng(devices=[]), torch.device(device):
        torch.manual_seed(SEED)
        if arch.startswith(TIMM_PREFIX):
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
