"""Naming and listing layers, and checking layer names before any hook is registered."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass

import torch
from torch import nn
from torchvision.models.resnet import BasicBlock, Bottleneck

#: Aliases accepted by :func:`find_layers`.
KINDS: dict[str, tuple[type[nn.Module], ...]] = {
    "conv": (nn.Conv2d,),
    "bn": (nn.BatchNorm2d,),
    "relu": (nn.ReLU,),
    "pool": (nn.MaxPool2d, nn.AdaptiveAvgPool2d),
    "block": (BasicBlock, Bottleneck),
    "linear": (nn.Linear,),
}


class UnknownLayerError(KeyError):
    """A layer name the model does not have. ``str()`` is the plain message (KeyError would
    otherwise wrap it in quotes)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown layer"


@dataclass(frozen=True)
class LayerInfo:
    """One module of a model, described for people.

    ``in_channels``, ``out_channels``, ``kernel_size`` and ``stride`` are set for Conv2d and
    None for other module types.
    """

    name: str
    type: str
    in_channels: int | None = None
    out_channels: int | None = None
    kernel_size: tuple[int, int] | None = None
    stride: tuple[int, int] | None = None

    @property
    def where(self) -> str:
        """Position in ResNet terms, e.g. "stage 2 · block 1 · conv 2" or "stem"."""
        return describe_position(self.name)

    @property
    def label(self) -> str:
        """A one-line label for menus: name, position, channels, kernel and stride."""
        if self.out_channels is None:
            return f"{self.name} · {self.where} · {self.type}"
        k = "x".join(map(str, self.kernel_size or ()))
        s = self.stride[0] if self.stride and self.stride[0] == self.stride[1] else self.stride
        return f"{self.name} · {self.where} · {self.in_channels}→{self.out_channels}, {k}, stride {s}"


def describe_position(name: str) -> str:
    """Where a ResNet module sits: ``layer2.1.conv2`` -> "stage 2 · block 1 · conv 2"."""
    m = re.match(r"layer(\d+)(?:\.(\d+))?(?:\.(.+))?$", name)
    if not m:
        return "stem" if name in ("conv1", "bn1", "relu", "maxpool") else "head" if name else "model"
    stage, block, rest = m.groups()
    parts = [f"stage {stage}"]
    if block is not None:
        parts.append(f"block {block}")
    if rest:
        if rest.startswith("downsample"):
            parts.append("shortcut " + ("conv" if rest.endswith("0") else "bn"))
        else:
            c = re.match(r"(conv|bn)(\d+)$", rest)
            parts.append(f"{c.group(1)} {c.group(2)}" if c else rest)
    return " · ".join(parts)


def _info(name: str, module: nn.Module) -> LayerInfo:
    if isinstance(module, nn.Conv2d):
        return LayerInfo(
            name=name,
            type=type(module).__name__,
            in_channels=module.in_channels,
            out_channels=module.out_channels,
            kernel_size=tuple(module.kernel_size),
            stride=tuple(module.stride),
        )
    return LayerInfo(name=name, type=type(module).__name__)


def find_layers(
    model: nn.Module, kind: str | type[nn.Module] | tuple[type[nn.Module], ...] = "conv"
) -> list[LayerInfo]:
    """Modules of ``model`` of one kind, in ``named_modules()`` order.

    Args:
        kind: a module type or tuple of types, or an alias: "conv", "bn", "relu", "pool",
            "block", "linear", "stage" (layer1..layer4), "leaf" (modules without children),
            "all" (every named module).

    Example:
        >>> [l.name for l in find_layers(resnet18(), "stage")]
        ['layer1', 'layer2', 'layer3', 'layer4']
    """
    named = [(n, m) for n, m in model.named_modules() if n]
    if kind == "all":
        chosen = named
    elif kind == "leaf":
        chosen = [(n, m) for n, m in named if not any(True for _ in m.children())]
    elif kind == "stage":
        chosen = [(n, m) for n, m in named if re.fullmatch(r"layer\d+", n)]
    else:
        if isinstance(kind, str):
            if kind not in KINDS:
                choices = ", ".join([*KINDS, "stage", "leaf", "all"])
                raise ValueError(f"Unknown layer kind {kind!r}. Choose one of: {choices}.")
            types = KINDS[kind]
        else:
            types = kind
        chosen = [(n, m) for n, m in named if isinstance(m, types)]
    return [_info(n, m) for n, m in chosen]


def conv_layers(model: nn.Module) -> list[LayerInfo]:
    """Every ``nn.Conv2d`` of ``model`` in ``named_modules()`` order.

    Example:
        >>> len(conv_layers(resnet18()))
        20
    """
    return find_layers(model, "conv")


def default_layers(model: nn.Module) -> list[str]:
    """conv1 plus the first convolution of each stage: a quick tour from edges to objects."""
    return quick_pick(conv_layers(model), "tour")


def resolve_layers(model: nn.Module, layers: str | Iterable[str]) -> list[str]:
    """Check layer names against ``model`` and return them as a list (duplicates dropped).

    ``"all"`` (alone) means every Conv2d.

    Raises:
        UnknownLayerError: a name the model does not have; lists close matches.
        ValueError: no layers given.
    """
    names = [layers] if isinstance(layers, str) else list(layers)
    if names == ["all"]:
        return [c.name for c in conv_layers(model)]
    if not names:
        raise ValueError("No layers were chosen; name at least one, e.g. 'layer1.0.conv1'.")
    modules = dict(model.named_modules())
    modules.pop("", None)
    for name in names:
        if not isinstance(name, str) or name not in modules:
            close = difflib.get_close_matches(str(name), list(modules), n=4, cutoff=0.6)
            hint = f" Did you mean: {', '.join(close)}?" if close else ""
            raise UnknownLayerError(
                f"The model has no layer named {name!r}.{hint} "
                "List the names with `python -m vizhooks --list-layers`."
            )
    return list(dict.fromkeys(names))


@functools.cache
def architecture_convs(name: str) -> tuple[LayerInfo, ...]:
    """Conv2d layers of a torchvision architecture, without loading any weights (the model is
    built on the meta device). Used to check layer names from a URL before a model loads."""
    from torchvision.models import get_model_builder

    with torch.device("meta"):
        model = get_model_builder(name)(weights=None)
    return tuple(conv_layers(model))


#: Quick picks offered on the page, in menu order.
QUICK_PICKS = ("tour", "stage1", "stage2", "stage3", "stage4", "shortcuts", "all")


def quick_pick(convs: Iterable[LayerInfo], pick: str) -> list[str]:
    """Layer names for a quick pick: "tour" (conv1 and each stage's first conv), "stageN" (every
    conv of stage N), "shortcuts" (the 1x1 downsample convs) or "all".

    Raises:
        ValueError: unknown pick.
    """
    if pick not in QUICK_PICKS:
        raise ValueError(f"Unknown quick pick {pick!r}. Choose one of: {', '.join(QUICK_PICKS)}.")
    names = [c.name for c in convs]
    if pick == "all":
        return names
    if pick == "tour":
        tour, stages = [], set()
        for n in names:
            stage = n.split(".")[0]
            if n == "conv1" or (stage.startswith("layer") and stage not in stages):
                tour.append(n)
                stages.add(stage)
        return tour
    if pick == "shortcuts":
        return [n for n in names if ".downsample." in n]
    prefix = f"layer{pick.removeprefix('stage')}."  # stage1..stage4
    return [n for n in names if n.startswith(prefix)]
