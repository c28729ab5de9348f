"""Feature visualization: the picture a channel likes best, found by gradient ascent on the input.

The recipe is Lucid's (Olah et al., "Feature Visualization", Distill 2017) as Lucent ports it to
PyTorch, written anew here:

- the image lives in Fourier space: the parameters are a spectrum, scaled by 1/frequency, so
  that a step of Adam moves every frequency about equally instead of favouring the high ones
  (which gives the familiar noise of plain pixel ascent);
- colour is decorrelated: the three channels of the inverse FFT are mixed with the square root of
  ImageNet's colour correlation matrix, then squashed to [0, 1] by a sigmoid;
- every step sees the picture padded, jittered, scaled and rotated a little ("standard"
  transforms), so only features that survive small moves are worth growing.

The hook follows every other vizhooks function: under the model's lock, eval mode and frozen
parameters, one forward hook removed in ``finally``. The pass stops at the target layer: the hook
keeps the output and raises, so nothing after the layer ever runs.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from vizhooks._hooks import check_ran, hooked, model_device
from vizhooks.errors import CodedError
from vizhooks.models.images import IMAGENET_MEAN, IMAGENET_STD
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import as_map, channels_last_modules

__all__ = ["visualize_channel", "visualize_channels"]

MIN_SIZE, MAX_SIZE = 16, 1024
MAX_STEPS = 10_000
TRANSFORMS = ("standard", "none")

#: Square root of ImageNet's colour correlation matrix (Lucid's ``color_correlation_svd_sqrt``),
#: normalised so that its largest column has unit length.
_COLOR_SQRT = np.asarray([[0.26, 0.09, 0.02], [0.27, 0.00, -0.05], [0.27, -0.09, 0.03]], dtype=np.float32)
_COLOR_SQRT = _COLOR_SQRT / np.max(np.linalg.norm(_COLOR_SQRT, axis=0))
#: Lucid's constant: divides the inverse FFT so the sigmoid starts far from saturation.
_SPECTRUM_DIVISOR = 4.0
_INIT_SD = 0.01
#: Lucid's standard transforms, tuned for 128 px pictures; pad and jitter scale with the size.
_PAD, _JITTER_1, _JITTER_2 = 12, 8, 4
_SCALES = tuple(1 + (i - 5) / 50 for i in range(11))  # 0.90 ... 1.10
_ANGLES = tuple(range(-10, 11)) + (0,) * 5  # degrees; upright more often


def visualize_channel(
    model: nn.Module,
    layer: str,
    channel: int,
    *,
    size: int = 128,
    steps: int = 256,
    lr: float = 0.05,
    seed: int = 0,
    transforms: str = "standard",
    progress: Callable[[int, int], object] | None = None,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
) -> Image.Image:
    """The picture that makes channel ``channel`` of ``layer`` fire most (activation maximisation).

    Optimises a ``size`` x ``size`` image, parameterised in decorrelated Fourier space, with Adam so
    that the mean of the channel over all positions is as large as possible.

    Args:
        model: any ``nn.Module`` taking a (N, 3, H, W) batch; hooked only during the call.
        layer: qualified module name, e.g. ``"layer3.1.conv2"``.
        channel: index along the channel dimension: dim 1 of conv maps, the last dim of ViT tokens
            and of Swin's channels-last maps (the layout :func:`vizhooks.models.maps.as_map` uses).
        size: side of the square picture in pixels (16-1024).
        steps: optimisation steps (0 returns the starting picture, a nearly uniform grey).
        lr: Adam's learning rate (0 < lr <= 1).
        seed: seeds a private ``torch.Generator`` for the start and the transforms; the global RNG
            is never touched. Same seed, same picture (on the CPU).
        transforms: ``"standard"`` (pad, jitter, scale, rotate each step) or ``"none"``.
        progress: called as ``progress(step, steps)`` after each step, from 1 to ``steps``.
        mean, std: the model's input normalisation (a ModelBundle's ``bundle.mean``, ``bundle.std``).

    Returns:
        An RGB ``PIL.Image`` of ``size`` x ``size`` pixels.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks, with close matches.
        ValueError: a channel out of range (the sentence gives the layer's range), or ``size``,
            ``steps``, ``lr``, ``transforms``, ``mean`` or ``std`` out of range.

    Example:
        >>> bundle = load_model("resnet18")
        >>> img = visualize_channel(bundle.model, "layer3.0.conv1", 7, mean=bundle.mean, std=bundle.std)
        >>> img.save("layer3.0.conv1-7.png")
    """
    if isinstance(channel, bool) or not isinstance(channel, (int, np.integer)):
        raise ValueError(f"channel must be one integer index, not {channel!r}; use visualize_channels for several.")
    return visualize_channels(model, layer, [int(channel)], size=size, steps=steps, lr=lr, seed=seed,
                              transforms=transforms, progress=progress, mean=mean, std=std)[0]


def visualize_channels(
    model: nn.Module,
    layer: str,
    channels: Sequence[int],
    *,
    size: int = 128,
    steps: int = 256,
    lr: float = 0.05,
    seed: int = 0,
    transforms: str = "standard",
    progress: Callable[[int, int], object] | None = None,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
) -> list[Image.Image]:
    """One picture per channel of ``layer``, all optimised together in one batch.

    Picture ``i`` maximises the mean of its own channel ``channels[i]``; the loss is the sum over
    the batch, so the pictures do not interact, and one pass serves them all (much faster per
    channel than :func:`visualize_channel` in a loop). The pictures are not identical to single
    runs with the same seed: the starting spectra are drawn as one batch.

    Args:
        model: any ``nn.Module`` taking a (N, 3, H, W) batch.
        layer: qualified module name.
        channels: channel indices, repeats allowed (each gets its own picture).
        size, steps, lr, seed, transforms, progress, mean, std: as in :func:`visualize_channel`.

    Returns:
        A list of RGB ``PIL.Image`` of ``size`` x ``size``, in the order of ``channels``.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks.
        ValueError: no channels, a channel out of range, or another argument out of range.

    Example:
        >>> imgs = visualize_channels(bundle.model, "layer3.0.conv1", range(16), size=96, steps=128)
        >>> len(imgs)
        16
    """
    chans = _check_channels(channels)
    _check_options(size, steps, lr, seed, transforms, progress, mean, std)
    if not isinstance(layer, str):
        raise ValueError(f"layer must be one module name such as 'layer3.0.conv1', not {layer!r}.")
    name = resolve_layers(model, [layer])[0]
    if name != layer:  # "all" / "blocks" expand to many layers
        raise ValueError(f"layer must be one module name such as 'layer3.0.conv1', not {layer!r}.")
    channels_last = name in channels_last_modules(model)
    # every pass ends at the layer: nothing after it is computed
    with torch.inference_mode(False), torch.enable_grad(), hooked(model, stop_after=[name]) as hooks:
        pictures = _optimise(model, hooks.run, name, channels_last, chans, size=size, steps=steps, lr=lr,
                             seed=seed, transforms=transforms, progress=progress, mean=mean, std=std)
    return [_to_pil(p) for p in pictures]


# ----------------------------------------------------------------------------------------------
# checks


def _check_channels(channels: Sequence[int]) -> list[int]:
    if isinstance(channels, (str, bytes)) or not hasattr(channels, "__iter__"):
        raise ValueError(f"channels must be a list of integer indices, not {channels!r}.")
    chans = list(channels)
    if not chans:
        raise ValueError("channels is empty; name at least one channel index, e.g. [0].")
    for c in chans:
        if isinstance(c, bool) or not isinstance(c, (int, np.integer)):
            raise ValueError(f"channels must hold integer indices, not {c!r}.")
    return [int(c) for c in chans]


def _check_options(size: int, steps: int, lr: float, seed: int, transforms: str,
                   progress: Callable[[int, int], object] | None, mean: Sequence[float], std: Sequence[float]) -> None:
    if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(f"size must be a whole number of pixels from {MIN_SIZE} to {MAX_SIZE}, not {size!r}.")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 0 <= steps <= MAX_STEPS:
        raise ValueError(f"steps must be a whole number from 0 to {MAX_STEPS}, not {steps!r}.")
    if isinstance(lr, bool) or not isinstance(lr, numbers.Real) or not 0 < lr <= 1:
        raise ValueError(f"lr must be a number above 0 and at most 1 (0.05 works well), not {lr!r}.")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise ValueError(f"seed must be an integer, not {seed!r}.")
    if transforms not in TRANSFORMS:
        raise ValueError(f"transforms must be 'standard' or 'none', not {transforms!r}.")
    if progress is not None and not callable(progress):
        raise ValueError(f"progress must be a function progress(step, steps) or None, not {progress!r}.")
    for label, values in (("mean", mean), ("std", std)):
        ok = hasattr(values, "__len__") and len(values) == 3 and all(isinstance(v, numbers.Real) for v in values)
        if not ok or (label == "std" and min(values) <= 0):
            raise ValueError(f"{label} must be three numbers (one per colour){' above 0' * (label == 'std')}, "
                             f"such as the model bundle's {label}, not {values!r}.")


# ----------------------------------------------------------------------------------------------
# the picture's parameterisation


def _frequency_scale(size: int) -> torch.Tensor:
    """1 / frequency for each coefficient of an ``rfft2`` of a size x size picture (the DC term
    gets the scale of the lowest frequency instead of infinity)."""
    fy = torch.fft.fftfreq(size)[:, None]
    fx = torch.fft.rfftfreq(size)[None, :]
    freqs = torch.sqrt(fx * fx + fy * fy)
    return 1.0 / torch.clamp(freqs, min=1.0 / size)


def _pictures(spectrum: torch.Tensor, scale: torch.Tensor, color: torch.Tensor, size: int) -> torch.Tensor:
    """(B, 3, size, size) in [0, 1] from the (B, 3, size, size//2+1, 2) spectrum parameters."""
    coeffs = torch.view_as_complex(spectrum * scale[..., None])
    image = torch.fft.irfft2(coeffs, s=(size, size), norm="ortho") / _SPECTRUM_DIVISOR
    image = torch.einsum("bchw,dc->bdhw", image, color)  # decorrelated colour -> RGB
    return torch.sigmoid(image)


def _to_pil(picture: torch.Tensor) -> Image.Image:
    arr = picture.detach().float().cpu().permute(1, 2, 0).numpy()
    return Image.fromarray((np.clip(arr, 0, 1) * 255 + 0.5).astype(np.uint8), mode="RGB")


# ----------------------------------------------------------------------------------------------
# transforms


def _jitter(x: torch.Tensor, d: int, u: float, v: float) -> torch.Tensor:
    """A random crop ``d - 1`` pixels smaller (Lucid's jitter): moves the picture by up to d - 1."""
    if d <= 1:
        return x
    dy, dx = int(u * d), int(v * d)
    h, w = x.shape[-2:]
    return x[..., dy:dy + h - d + 1, dx:dx + w - d + 1]


def _standard(x: torch.Tensor, gen: torch.Generator, size: int) -> torch.Tensor:
    """Pad with grey, jitter, scale and rotate about the centre, jitter again, back to ``size``.
    One draw of the private generator per step, the same move for the whole batch."""
    u = torch.rand(6, generator=gen).tolist()
    k = size / 128
    x = F.pad(x, [round(_PAD * k)] * 4, value=0.5)
    x = _jitter(x, max(1, round(_JITTER_1 * k)), u[0], u[1])
    scale = _SCALES[min(int(u[2] * len(_SCALES)), len(_SCALES) - 1)]
    angle = math.radians(_ANGLES[min(int(u[3] * len(_ANGLES)), len(_ANGLES) - 1)])
    cos, sin = math.cos(angle) / scale, math.sin(angle) / scale
    theta = torch.tensor([[cos, -sin, 0.0], [sin, cos, 0.0]], dtype=x.dtype, device=x.device)
    grid = F.affine_grid(theta.expand(x.shape[0], 2, 3), list(x.shape), align_corners=False)
    x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
    x = _jitter(x, max(1, round(_JITTER_2 * k)), u[4], u[5])
    return F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)


# ----------------------------------------------------------------------------------------------
# the optimisation


def _optimise(model: nn.Module, run: Callable[[Callable[[], object]], dict[str, torch.Tensor]], name: str,
              channels_last: bool, channels: list[int], *,
              size: int, steps: int, lr: float, seed: int, transforms: str,
              progress: Callable[[int, int], object] | None, mean: Sequence[float],
              std: Sequence[float]) -> torch.Tensor:
    device = model_device(model)
    dtype = next(model.parameters(), torch.empty(0)).dtype
    if not dtype.is_floating_point:
        dtype = torch.float32
    gen = torch.Generator().manual_seed(seed)
    batch = len(channels)
    # Drawn on the CPU from the private generator: the same start on every device.
    spectrum = (torch.randn(batch, 3, size, size // 2 + 1, 2, generator=gen) * _INIT_SD).to(device)
    spectrum.requires_grad_(True)
    scale = _frequency_scale(size).to(device)
    color = torch.from_numpy(_COLOR_SQRT).to(device)
    mean_t = torch.tensor(mean, dtype=torch.float32, device=device).view(1, 3, 1, 1)
    std_t = torch.tensor(std, dtype=torch.float32, device=device).view(1, 3, 1, 1)
    # A batch runs faster in channels-last memory (oneDNN's convolutions and pooling prefer it:
    # -17 % per step for 16 pictures at 128 px on our CPUs); one picture runs faster as it is.
    layout = torch.channels_last if batch > 1 else torch.contiguous_format

    def layer_maps(x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) maps of the layer for pictures ``x`` in [0, 1]; the pass ends at the layer."""
        seen = run(lambda: model(((x - mean_t) / std_t).to(dtype).contiguous(memory_format=layout)))
        check_ran([name], seen)
        out = seen[name]
        return as_map(out, (size, size), channels_last=True if channels_last and out.ndim == 4 else None)

    with torch.no_grad():  # the channel count, before any work
        count = layer_maps(torch.full((1, 3, size, size), 0.5, device=device)).shape[1]
    bad = [c for c in channels if not 0 <= c < count]
    if bad:
        raise CodedError(f"Channel {bad[0]} is out of range for layer {name!r}, which has {count} channels "
                         f"(0 to {count - 1}).", "channel_range", channel=bad[0], layer=name, count=count,
                         last=count - 1)
    index = torch.tensor(channels, device=device)
    rows = torch.arange(batch, device=device)
    optimizer = torch.optim.Adam([spectrum], lr=lr)
    for step in range(1, steps + 1):
        optimizer.zero_grad(set_to_none=True)
        x = _pictures(spectrum, scale, color, size)
        if transforms == "standard":
            x = _standard(x, gen, size)
        maps = layer_maps(x)
        # Each picture's own channel: the sum keeps the pictures' gradients independent.
        objective = maps.float().mean(dim=(2, 3))[rows, index].sum()
        (-objective).backward()
        optimizer.step()
        if progress is not None:
            progress(step, steps)
    with torch.no_grad():
        return _pictures(spectrum, scale, color, size).cpu()
