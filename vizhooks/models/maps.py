"""Any captured tensor as a ``(1, C, H, W)`` map: ViT token sequences over their patch grid, Swin's
channels-last maps permuted, pooled vectors as 1 x 1 maps. One home for the shape rules that
grids, Grad-CAM, interventions and the page share.
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["as_map", "channel_dim", "channels_last_modules", "maps_of"]


def _token_grid(tokens: int, input_hw: tuple[int, int]) -> tuple[int, int, int] | None:
    """(prefix tokens, grid height, grid width) for a token sequence made from an image of
    ``input_hw`` with square patches: the class token (and any register tokens) come first."""
    height, width = input_hw
    for prefix in (1, 0, 2, 5):  # class token; none (Swin/pooling); class + distillation; + registers
        n = tokens - prefix
        if n <= 0:
            continue
        for patch in range(1, 65):
            gh, gw = height // patch, width // patch
            if gh * gw == n:
                return prefix, gh, gw
        side = math.isqrt(n)
        if side * side == n:
            return prefix, side, side
    return None


def _spatial_pair_fits(a: int, b: int, input_hw: tuple[int, int]) -> bool:
    """True when (a, b) is ``input_hw`` downsampled by one power-of-two stride (floor or ceil)."""
    height, width = input_hw
    for stride in (1, 2, 4, 8, 16, 32, 64):
        if a in (height // stride, -(-height // stride)) and b in (width // stride, -(-width // stride)):
            return True
    return False


def as_map(t: torch.Tensor, input_hw: tuple[int, int], *, channels_last: bool | None = None) -> torch.Tensor:
    """Any captured tensor as ``(1, C, H, W)``, so grids, Grad-CAM and the page treat every layer alike.

    - ``(1, C, H, W)`` conv maps are returned unchanged.
    - ``(1, H, W, C)`` channels-last maps (Swin) are permuted. ``channels_last=None`` decides from
      the shapes: the middle pair must look like a downsampled ``input_hw`` and the last pair not.
    - ``(1, T, D)`` token sequences (ViT) become ``(1, D, h, w)`` over the patch grid, without the
      class token.
    - ``(1, D)`` vectors (pooled features, logits) become ``(1, D, 1, 1)``.

    Args:
        input_hw: height and width of the image the model was given.
    """
    if t.ndim == 4:
        if channels_last is None:
            last_pair = _spatial_pair_fits(t.shape[2], t.shape[3], input_hw)
            mid_pair = _spatial_pair_fits(t.shape[1], t.shape[2], input_hw)
            channels_last = mid_pair and not last_pair
        return t.permute(0, 3, 1, 2) if channels_last else t
    if t.ndim == 3:
        grid = _token_grid(t.shape[1], input_hw)
        if grid is None:
            return t.transpose(1, 2).unsqueeze(-1)  # (1, D, T, 1): a column of tokens
        prefix, gh, gw = grid
        return t[:, prefix:, :].transpose(1, 2).reshape(t.shape[0], t.shape[2], gh, gw)
    if t.ndim == 2:
        return t[:, :, None, None]
    raise ValueError(f"Cannot show a tensor of shape {tuple(t.shape)} as feature maps.")


def cam_map(t: torch.Tensor, input_hw: tuple[int, int], channels_last: bool) -> torch.Tensor | None:
    """A layer's output (or its gradient) as the ``(N, C, h, w)`` map a CAM weighs, as the page shows it
    (:func:`as_map`): a known channels-last module's (:func:`channels_last_modules`) permuted, another 4-D map
    by its sizes (a channels-last block this list lacks, e.g. a newer timm one), a ViT's tokens over its patch
    grid (the class token left out); None for anything else (a vector, tokens that make no grid)."""
    if t.ndim == 4:
        return as_map(t, input_hw, channels_last=True if channels_last else None)
    if t.ndim == 3 and _token_grid(t.shape[1], input_hw) is not None:
        return as_map(t, input_hw)
    return None


def channels_last_modules(model: nn.Module) -> set[str]:
    """Modules known to output (N, H, W, C): torchvision Swin's blocks, stages and patch embedding;
    the norm and pointwise layers inside Hugging Face ConvNeXt blocks."""
    names: set[str] = set()
    for name, module in model.named_modules():
        kind = type(module).__name__
        if kind in ("ConvNextLayer", "ConvNextV2Layer"):  # permuted after dwconv, back at the block's end
            prefix = f"{name}." if name else ""
            names.update(prefix + child for child, _ in module.named_children() if child not in ("dwconv", "drop_path"))
        elif kind.startswith(("SwinTransformerBlock", "SwinTransformerV2Block")) or kind in ("PatchMerging",
                                                                                               "PatchMergingV2"):
            names.add(name)
        elif kind == "Permute":  # to NHWC only: Swin's last Permute turns its maps back to NCHW
            if list(getattr(module, "dims", ())) == [0, 2, 3, 1]:
                names.add(name)
        elif (type(model).__name__ == "SwinTransformer" and name.startswith("features.")
              and not isinstance(module, nn.Conv2d)):  # the patch embedding's conv is still NCHW
            names.add(name)
    return names


def maps_of(model: nn.Module, tensors: dict[str, torch.Tensor], input_hw: tuple[int, int]) -> dict[str, torch.Tensor]:
    """:func:`as_map` over a capture, using what is known of the model's modules."""
    known = channels_last_modules(model)
    out = {}
    for key, t in tensors.items():
        base = key.split("#")[0]
        out[key] = as_map(t, input_hw, channels_last=True if base in known and t.ndim == 4 else None)
    return out


def channel_dim(module: nn.Module, t: torch.Tensor, channels_last: bool) -> int:
    """Where the channels of ``module``'s output ``t`` are: the last dim for a Linear (its
    out_features, whatever comes before), token sequences ``(N, T, D)`` and known channels-last
    maps (``channels_last``: the module is in :func:`channels_last_modules`); else dim 1."""
    if t.ndim < 2:
        return 0
    if isinstance(module, (nn.Conv1d, nn.BatchNorm1d)):  # (N, C, L) is channels-first
        return 1
    if isinstance(module, nn.Linear) or t.ndim == 3 or (t.ndim == 4 and channels_last):
        return t.ndim - 1
    return 1
