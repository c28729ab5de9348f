"""The whole network at a glance: every conv (every block of an attention model) in network order,
each as its strongest channels, from one forward pass.

Each layer's forward hook reduces its output at once to the ``k`` channels with the largest mean,
each shrunk to a thumbnail, so the pass keeps a few kilobytes per layer however many layers and
however large the maps: DenseNet-121's 120 convs cost what its forward costs, not 120 captures.

Example:
    >>> ov = overview(bundle.model, x, k=8)
    >>> [(row.name, row.hw, row.channels) for row in ov.rows][:2]
    [('conv1', (112, 168), 64), ('layer1.0.conv1', (56, 84), 64)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from vizhooks._hooks import check_input, check_ran, first_tensor, hooked, keep, model_device
from vizhooks.models.layers import block_layers, conv_layers, is_token_model, resolve_layers
from vizhooks.models.maps import as_map, channels_last_modules

__all__ = ["Overview", "OverviewRow", "overview", "overview_layers", "stages"]


@dataclass(frozen=True)
class OverviewRow:
    """One layer of the overview.

    Attributes:
        name: the module's name.
        channels: how many channels its output has.
        hw: the height and width of its maps.
        picked: the shown channels, largest mean first (or in the order given to :func:`overview`).
        means: their means.
        tiles: ``(len(picked), th, tw)`` float32, each map resampled to the thumbnail's size (block
            averages when shrinking, nearest cells when enlarging), raw values.
        notes: a short text per shown channel drawn after its number (the page's signed relevance),
            or None.
    """

    name: str
    channels: int
    hw: tuple[int, int]
    picked: tuple[int, ...]
    means: tuple[float, ...]
    tiles: np.ndarray
    notes: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Overview:
    """Every row, in network order, and the logits of the same pass (CPU)."""

    rows: list[OverviewRow]
    logits: torch.Tensor
    input_hw: tuple[int, int]


def overview_layers(model: nn.Module) -> list[str]:
    """The layers an overview shows: every Conv2d, or for an attention model every block."""
    infos = block_layers(model) if is_token_model(model) else conv_layers(model)
    return [info.name for info in infos]


def thumbnail_size(input_hw: tuple[int, int], tile: int) -> tuple[int, int]:
    """A thumbnail of the picture's aspect whose longer side is ``tile``."""
    h, w = input_hw
    return (tile, max(1, round(tile * w / h))) if h >= w else (max(1, round(tile * h / w)), tile)


def _shrink(maps: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """(1, k, h, w) -> (1, k, *size): block averages when shrinking, nearest cells when enlarging."""
    h, w = maps.shape[-2:]
    if h >= size[0] and w >= size[1]:
        return F.adaptive_avg_pool2d(maps, size)
    return F.interpolate(maps, size=size, mode="nearest")


def overview(model: nn.Module, x: torch.Tensor, layers: Sequence[str] | None = None, *, k: int = 8,
             tile: int = 64, ranking: Mapping[str, Sequence[int]] | None = None) -> Overview:
    """One pass with a forward hook on every layer of the overview (see :func:`overview_layers`),
    each output reduced in the hook to its ``k`` strongest channels (by mean) as thumbnails.

    Args:
        model: any image model; ``x`` a ``(1, 3, H, W)`` input.
        layers: the layers to show (default: every conv, or every block of an attention model).
        k: channels per layer (fewer when a layer has fewer).
        tile: the thumbnails' longer side in pixels.
        ranking: per layer, all its channels in the order to pick them (a channel relevance's
            ``order``) instead of by mean; a layer missing from it, or whose ranking does not count
            its channels (a layer that gives no maps of those channels), is picked by mean.

    Raises:
        ValueError: ``k`` or ``tile`` below 1, a bad input, a layer that never runs.
        UnknownLayerError: a layer name the model lacks.
    """
    if k < 1 or tile < 1:
        raise ValueError(f"k and tile must be at least 1, not {k} and {tile}.")
    check_input(x)
    if x.shape[0] != 1:
        raise ValueError(f"An overview is of one picture: x must have a batch of 1, not {x.shape[0]}.")
    input_hw = (int(x.shape[-2]), int(x.shape[-1]))
    size = thumbnail_size(input_hw, tile)
    with hooked(model) as hooks:
        names = resolve_layers(model, list(layers) if layers is not None else overview_layers(model))
        modules = dict(model.named_modules())
        known = channels_last_modules(model)
        rows: dict[str, OverviewRow] = {}

        def hook_for(name: str) -> Any:
            def hook(_module: nn.Module, _args: Any, output: Any) -> None:
                if name in rows:  # a module that runs again in the same pass: its first run is shown
                    return
                t = first_tensor(output).detach()
                maps = as_map(t, input_hw, channels_last=True if name in known and t.ndim == 4 else None).float()
                means = maps[0].mean(dim=(1, 2))
                given = ranking.get(name) if ranking is not None else None
                if given is not None and len(given) == int(means.numel()):
                    top = torch.as_tensor([int(c) for c in given[:k]], dtype=torch.long, device=means.device)
                else:
                    top = torch.topk(means, min(k, int(means.numel()))).indices
                tiles = _shrink(maps[:, top], size)[0]
                rows[name] = OverviewRow(name, int(maps.shape[1]), (int(maps.shape[2]), int(maps.shape[3])),
                                         tuple(int(c) for c in top), tuple(float(means[c]) for c in top),
                                         keep(tiles).numpy())
            return hook

        for name in names:
            hooks.forward_hook(modules[name], hook_for(name))
        with torch.inference_mode():
            logits = keep(first_tensor(model(x.to(model_device(model)))))
    check_ran(names, rows)
    return Overview([rows[n] for n in names], logits, input_hw)


def stages(rows: Sequence[OverviewRow]) -> list[tuple[int, int]]:
    """``(first, end)`` row ranges of one resolution each, in order: a new stage begins where the
    maps' size changes."""
    bounds: list[tuple[int, int]] = []
    start = 0
    for i in range(1, len(rows) + 1):
        if i == len(rows) or rows[i].hw != rows[start].hw:
            bounds.append((start, i))
            start = i
    return bounds
