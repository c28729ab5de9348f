"""Naming, listing and grouping the layers of any image model, and checking layer names before
any hook is registered.

Nothing here assumes a family's names: positions ("conv 6 of 20", "block 3 of 8"), output
resolutions and quick picks are worked out from the module tree and from shapes (one pass on
PyTorch's meta device, which computes shapes and nothing else).
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, cast

import torch
from torch import nn

from vizhooks._hooks import first_tensor, hooked, model_device
from vizhooks.i18n import Names, t
from vizhooks.models.maps import maps_of

#: Class names of the repeated units of each family; the outermost one wins when they nest
#: (MaxViT's MaxVitLayer holds an MBConv).
BLOCK_TYPES: frozenset[str] = frozenset({
    "BasicBlock", "Bottleneck",  # ResNet, ResNeXt, Wide ResNet (and timm's ResNets)
    "EncoderBlock",  # ViT
    "SwinTransformerBlock", "SwinTransformerBlockV2",  # Swin
    "CNBlock",  # ConvNeXt
    "InvertedResidual", "_InvertedResidual", "MBConv", "FusedMBConv",  # MobileNet, ShuffleNet, MNASNet, EfficientNet
    "_DenseLayer",  # DenseNet
    "MaxVitLayer",  # MaxViT
    "Inception", "InceptionA", "InceptionB", "InceptionC", "InceptionD", "InceptionE",  # GoogLeNet, Inception v3
    "Fire",  # SqueezeNet
    "ResBottleneckBlock",  # RegNet
    # Hugging Face transformers (hf:ID_OR_DIR)
    "ViTLayer", "DeiTLayer", "BeitLayer", "Data2VecVisionLayer", "Dinov2Layer",  # ViT family
    "SwinLayer", "Swinv2Layer",  # Swin
    "ConvNextLayer", "ConvNextV2Layer",  # ConvNeXt
    "ResNetBasicLayer", "ResNetBottleNeckLayer",  # ResNet
    "MobileViTInvertedResidual", "MobileViTLayer",  # MobileViT: its MobileNet blocks and its transformer stages
    "EfficientNetBlock", "RegNetXLayer", "RegNetYLayer", "PoolFormerLayer",
    "ResidualAttentionBlock",  # open_clip's ViT image tower (its ResNet's are Bottlenecks)
})

#: Aliases accepted by :func:`find_layers`.
KINDS: dict[str, tuple[type[nn.Module], ...]] = {
    "conv": (nn.Conv2d,),
    "bn": (nn.BatchNorm2d,),
    "relu": (nn.ReLU,),
    "pool": (nn.MaxPool2d, nn.AdaptiveAvgPool2d),
    "linear": (nn.Linear,),
}
SPECIAL_KINDS = ("block", "stage", "leaf", "all")


class UnknownLayerError(KeyError):
    """A layer name the model does not have. ``str()`` is the plain message (KeyError would
    otherwise wrap it in quotes); ``code`` and ``values`` let the page say it in its own language
    (as vizhooks.errors.CodedError's do)."""

    def __init__(self, message: str, code: str = "", **values: object) -> None:
        super().__init__(message)
        self.code = code
        self.values = values

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else "unknown layer"


@dataclass(frozen=True)
class LayerInfo:
    """One module of a model, described for people.

    ``in_channels``, ``out_channels``, ``kernel_size`` and ``stride`` are set for Conv2d and
    None for other module types. ``kind`` is "conv", "block" or "other"; ``index`` / ``count``
    its position among the model's layers of that kind (1-based); ``out_hw`` the height and
    width of its output map for the reference input (see :func:`describe_layers`), when known.
    """

    name: str
    type: str
    in_channels: int | None = None
    out_channels: int | None = None
    kernel_size: tuple[int, int] | None = None
    stride: tuple[int, int] | None = None
    kind: str = "other"
    index: int = 0
    count: int = 0
    out_hw: tuple[int, int] | None = None
    out_channels_map: int | None = None

    @property
    def where(self) -> str:
        """Where the layer sits, e.g. "conv 6 of 20 · 28×28" or "block 3 of 8 · 28×28", in the current
        language (vizhooks.i18n: "第 6/20 个卷积层 · 28×28")."""
        parts = []
        if self.index:
            parts.append(t(f"where_{self.kind}", index=self.index, count=self.count))
        if self.out_hw:
            parts.append(f"{self.out_hw[0]}×{self.out_hw[1]}")
        return " · ".join(parts) or self.type

    @property
    def label(self) -> str:
        """A one-line label for menus: name, position, resolution, channels, kernel and stride."""
        if self.out_channels is None:
            channels = f" · {self.out_channels_map} ch" if self.out_channels_map else ""
            return f"{self.name} · {self.where} · {self.type}{channels}"
        k = "x".join(map(str, self.kernel_size or ()))
        s = self.stride[0] if self.stride and self.stride[0] == self.stride[1] else self.stride
        return f"{self.name} · {self.where} · {self.in_channels}→{self.out_channels}, {k}, stride {s}"


def _info(name: str, module: nn.Module, kind: str = "other") -> LayerInfo:
    if isinstance(module, nn.Conv2d):
        return LayerInfo(
            name=name, type=type(module).__name__, in_channels=module.in_channels,
            out_channels=module.out_channels, kernel_size=cast(tuple[int, int], tuple(module.kernel_size)),
            stride=cast(tuple[int, int], tuple(module.stride)), kind="conv",  # Conv2d keeps pairs
        )
    return LayerInfo(name=name, type=type(module).__name__, kind=kind)


def _numbered(infos: list[LayerInfo]) -> list[LayerInfo]:
    return [replace(info, index=i, count=len(infos)) for i, info in enumerate(infos, 1)]


def _blocks(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Outermost modules of a known block type, plus the children of containers named
    ``blocks`` (timm's layout), in ``named_modules()`` order."""
    def outermost(test: Callable[[str, nn.Module], bool]) -> list[tuple[str, nn.Module]]:
        chosen: list[tuple[str, nn.Module]] = []
        for name, module in model.named_modules():
            if name and not any(name.startswith(c + ".") for c, _ in chosen) and test(name, module):
                chosen.append((name, module))
        return chosen

    known = outermost(lambda name, module: type(module).__name__ in BLOCK_TYPES)
    if known:
        return known
    containers = {n for n, m in model.named_modules() if n and n.rsplit(".", 1)[-1] == "blocks"
                  and isinstance(m, (nn.Sequential, nn.ModuleList))}
    listed = outermost(lambda name, module: "." in name and name.rsplit(".", 1)[0] in containers)
    return listed or _pooled_stages(model)


def _pooled_stages(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """Blocks of plain sequential networks (AlexNet, VGG): the stages between pooling layers, as
    the textbooks draw them. Each stage with a conv is named by its last module before the pool
    (VGG16's ``features.3``, ``features.8``, ...: five stages; AlexNet's three), whose output is
    the stage's maps at the stage's own resolution."""
    pools = (nn.MaxPool2d, nn.AvgPool2d)
    chosen: list[tuple[str, nn.Module]] = []
    for name, sequence in model.named_modules():
        children = list(sequence.named_children()) if isinstance(sequence, nn.Sequential) else []
        if not children or any(next(child.children(), None) is not None for _, child in children):
            continue  # only flat sequences of layers
        stage: list[tuple[str, nn.Module]] = []
        for child_name, child in children:
            if not isinstance(child, pools):
                stage.append((f"{name}.{child_name}" if name else child_name, child))
                continue
            if any(isinstance(m, nn.Conv2d) for _, m in stage):
                chosen.append(stage[-1])
            stage = []
    return chosen


def find_layers(
    model: nn.Module, kind: str | type[nn.Module] | tuple[type[nn.Module], ...] = "conv"
) -> list[LayerInfo]:
    """Modules of ``model`` of one kind, in ``named_modules()`` order.

    Args:
        kind: a module type or tuple of types, or an alias: "conv", "bn", "relu", "pool",
            "linear", "block" (each family's repeated unit: ResNet blocks, ViT and Swin encoder
            blocks, ConvNeXt blocks, inverted residuals, DenseNet layers, Inception modules, ...;
            for plain sequential networks such as VGG and AlexNet, the stages between pooling
            layers, each named by its last module before the pool),
            "stage" (ResNet's layer1..layer4), "leaf" (modules without children), "all" (every
            named module).

    Example:
        >>> [l.name for l in find_layers(resnet18(), "block")][:2]
        ['layer1.0', 'layer1.1']
    """
    named = [(n, m) for n, m in model.named_modules() if n]
    if kind == "block":
        return _numbered([_info(n, m, "block") for n, m in _blocks(model)])
    if kind == "all":
        chosen = named
    elif kind == "leaf":
        chosen = [(n, m) for n, m in named if not any(True for _ in m.children())]
    elif kind == "stage":
        chosen = [(n, m) for n, m in named if re.fullmatch(r"layer\d+", n)]
    else:
        if isinstance(kind, str):
            if kind not in KINDS:
                choices = ", ".join([*KINDS, *SPECIAL_KINDS])
                raise ValueError(f"Unknown layer kind {kind!r}. Choose one of: {choices}.")
            types: type[nn.Module] | tuple[type[nn.Module], ...] = KINDS[kind]
        else:
            types = kind
        chosen = [(n, m) for n, m in named if isinstance(m, types)]
    infos = [_info(n, m) for n, m in chosen]
    return _numbered(infos) if kind == "conv" else infos


def conv_layers(model: nn.Module) -> list[LayerInfo]:
    """Every ``nn.Conv2d`` of ``model`` in ``named_modules()`` order.

    Example:
        >>> len(conv_layers(resnet18()))
        20
    """
    return find_layers(model, "conv")


def block_layers(model: nn.Module) -> list[LayerInfo]:
    """Every block of ``model`` (see :func:`find_layers` with ``"block"``)."""
    return find_layers(model, "block")


def is_token_model(model: nn.Module) -> bool:
    """True for attention models (ViT, Swin, MaxViT): their blocks, not their few convs, are
    what a person wants to see first."""
    return any("Attention" in type(m).__name__ for m in model.modules())


def describe_layers(model: nn.Module, input_hw: tuple[int, int] = (224, 224)) -> list[LayerInfo]:
    """Convs and blocks of ``model`` in ``named_modules()`` order, with their output resolution
    for a ``(1, 3, *input_hw)`` input.

    Runs one forward pass with forward hooks; on a meta-device model (see
    :func:`vizhooks.models.registry.meta_model`) that pass computes shapes only and costs nothing.
    """
    infos = {i.name: i for i in [*conv_layers(model), *block_layers(model)]}
    modules = dict(model.named_modules())
    shapes: dict[str, torch.Tensor] = {}

    def remember(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            out = first_tensor(output)
            shapes.setdefault(name, torch.empty(out.shape, device="meta"))

        return hook

    with hooked(model, preserve=False) as hooks:
        for name in infos:
            hooks.forward_hook(modules[name], remember(name))
        with torch.no_grad():
            model(torch.zeros(1, 3, *input_hw, device=model_device(model)))
    maps = maps_of(model, shapes, input_hw)
    order = {n: i for i, (n, _) in enumerate(model.named_modules())}
    described = []
    for name in sorted(infos, key=order.__getitem__):
        info = infos[name]
        if name in maps:
            m = maps[name]
            info = replace(info, out_hw=(int(m.shape[-2]), int(m.shape[-1])), out_channels_map=int(m.shape[1]))
        described.append(info)
    return described


def resolve_layers(model: nn.Module, layers: str | Iterable[str]) -> list[str]:
    """Check layer names against ``model`` and return them as a list (duplicates dropped).

    ``"all"`` (alone) means every Conv2d; ``"blocks"`` (alone) every block.

    Raises:
        UnknownLayerError: a name the model does not have; lists close matches.
        ValueError: no layers given.
    """
    names = [layers] if isinstance(layers, str) else list(layers)
    if names == ["all"]:
        return [c.name for c in conv_layers(model)]
    if names == ["blocks"]:
        return [b.name for b in block_layers(model)]
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
                "List the names with `python -m vizhooks --list-layers --model NAME`.",
                "unknown_layer_close" if close else "unknown_layer", name=str(name), close=Names(close),
            )
    return list(dict.fromkeys(names))


# ----------------------------------------------------------------------------------------------
# layers of a named model, without weights, and quick picks


def reference_hw(name: str) -> tuple[int, int]:
    """The input size layer resolutions are quoted for: the model's fixed size, else 224."""
    from vizhooks.models.registry import input_spec, meta_model, resolve_entry

    side = input_spec(resolve_entry(name).arch, meta_model(name)[0]).fixed_size or 224
    return side, side


@functools.lru_cache(maxsize=256)
def architecture_layers(name: str, input_hw: tuple[int, int] | None = None) -> tuple[LayerInfo, ...]:
    """Convs and blocks of a model by name (see :func:`vizhooks.list_models`), described with
    resolutions, without loading any weights (the model is built on the meta device). Used by
    the page and to check layer names from a URL before a model loads.

    ``input_hw`` is the input's height and width the resolutions are for (a photo that is not
    square: 224 x 338 gives ResNet's conv1 112 x 169); without it, :func:`reference_hw`'s square."""
    from vizhooks.models.registry import meta_model

    model, lock = meta_model(name)
    with lock:
        return tuple(describe_layers(model, input_hw or reference_hw(name)))


def architecture_convs(name: str) -> tuple[LayerInfo, ...]:
    """The Conv2d layers among :func:`architecture_layers`."""
    return tuple(i for i in architecture_layers(name) if i.kind == "conv")


def token_model(name: str) -> bool:
    from vizhooks.models.registry import meta_model

    return is_token_model(meta_model(name)[0])


def _tour(infos: Sequence[LayerInfo], at_most: int = 6) -> list[str]:
    """The first layer and the first at each new output resolution; topped up with evenly spaced
    layers (and the last) when that gives fewer than 4 (a ViT keeps one resolution throughout)."""
    picked, seen = [], set()
    for info in infos:
        if info.out_hw not in seen:
            seen.add(info.out_hw)
            picked.append(info.name)
    if len(picked) < 4 and len(infos) > len(picked):
        step = (len(infos) - 1) / (min(at_most, len(infos)) - 1 or 1)
        extra = {infos[round(i * step)].name for i in range(min(at_most, len(infos)))}
        picked = [i.name for i in infos if i.name in extra or i.name in picked]
    return picked


def quick_picks(infos: Sequence[LayerInfo], token: bool = False) -> dict[str, list[str]]:
    """Named groups of layers for any model, each non-empty, in menu order.

    Keys: ``"tour"`` (the first conv and the first conv at each new resolution; blocks for
    attention models), ``"res:HxW"`` (all convs, or blocks, at one resolution), ``"downsampling"``
    (convs with stride > 1), ``"convs"`` (every conv), ``"blocks"`` (every block). A group equal
    to an earlier one is left out.
    """
    convs = [i for i in infos if i.kind == "conv"]
    blocks = [i for i in infos if i.kind == "block"]
    # 1x1 outputs are pooled vectors (squeeze-and-excitation convs), not maps worth a tour stop
    main = [i for i in (blocks if (token and blocks) or not convs else convs) if i.out_hw != (1, 1)] or convs
    picks: dict[str, list[str]] = {"tour": _tour(main)}
    for hw in dict.fromkeys(i.out_hw for i in main if i.out_hw):
        picks[f"res:{hw[0]}x{hw[1]}"] = [i.name for i in main if i.out_hw == hw]
    picks["downsampling"] = [i.name for i in convs if i.stride and max(i.stride) > 1]
    picks["convs"] = [i.name for i in convs]
    picks["blocks"] = [i.name for i in blocks]
    out: dict[str, list[str]] = {}
    for key, names in picks.items():
        general = key.startswith("res:") and names in (picks["convs"], picks["blocks"])
        if names and not general and names not in out.values():
            out[key] = names
    return out


def quick_pick(infos: Iterable[LayerInfo], pick: str, token: bool = False) -> list[str]:
    """Layer names for one quick pick (see :func:`quick_picks`); ``"all"`` is every conv.

    Raises:
        ValueError: a pick this model does not offer.
    """
    infos = list(infos)
    if pick == "all":
        return [i.name for i in infos if i.kind == "conv"]
    picks = quick_picks(infos, token)
    if pick not in picks:
        raise ValueError(f"Unknown quick pick {pick!r}. Choose one of: {', '.join(picks)}.")
    return picks[pick]


def default_layers(model: nn.Module, input_hw: tuple[int, int] = (224, 224)) -> list[str]:
    """A quick tour from edges to objects: the first conv and the first conv at each new
    resolution, or, for attention models, blocks spread over the network."""
    return quick_picks(describe_layers(model, input_hw), is_token_model(model))["tour"]
