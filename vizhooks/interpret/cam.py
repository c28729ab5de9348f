"""Grad-CAM (Selvaraju et al., 2017): where in the picture a layer found evidence for a class.

For a layer with activations A (C, h, w) and gradients G = d logit[target] / d A:

    weights  a_k = mean over (h, w) of G_k              one number per channel
    map      M   = ReLU( sum_k a_k * A_k )              (h, w)
    scaled   M'  = (M - min M) / (max M - min M)        or zeros when M is constant
    result       = bilinear upsampling of M' to the input's (H, W), clipped to [0, 1]

Scaling before upsampling matches pytorch-grad-cam's order of operations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from vizhooks.hooks.gradients import GradientResult, gradient_pass
from vizhooks.render.scale import min_max


def cam_from(activation: torch.Tensor, gradient: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Grad-CAM map of one layer from its activation and gradient (both (1, C, h, w)), upsampled
    to ``size`` = (H, W). All-zero or constant maps come back as zeros, never NaN."""
    a = activation.detach().float()
    g = gradient.detach().float()
    weights = g.mean(dim=(2, 3), keepdim=True)
    cam = F.relu((weights * a).sum(dim=1, keepdim=True))
    cam = min_max(cam)
    up = F.interpolate(cam, size=size, mode="bilinear", align_corners=False)
    return up[0, 0].clamp_(0, 1)


def grad_cam(
    model: nn.Module,
    x: torch.Tensor,
    layer: str,
    *,
    target: int | None = None,
    return_target: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, int]:
    """Grad-CAM heat map of ``layer`` for class ``target`` (default: the top-1 class).

    Returns:
        A (H, W) tensor in [0, 1] with the input's height and width, on the CPU; with
        ``return_target=True``, the pair (map, class index used).

    Example:
        >>> cam, cls = grad_cam(bundle.model, x, "layer4.1.conv2", return_target=True)
        >>> bundle.categories[cls], cam.shape
    """
    result = gradient_pass(model, x, [layer], target=target, as_maps=True)  # token layers (ViT) too, as on the page
    cam = cams_from(result, x.shape[-2:])[layer]
    return (cam, result.target) if return_target else cam


def cams_from(result: GradientResult, size: tuple[int, int] | torch.Size) -> dict[str, torch.Tensor]:
    """Grad-CAM maps for every layer of one :func:`vizhooks.hooks.gradients.gradient_pass`."""
    size = (int(size[0]), int(size[1]))
    return {name: cam_from(result.activations[name], result.gradients[name], size)
            for name in result.activations}
