"""Forward hooks and forward pre-hooks that capture what flows through chosen layers.

Hooks live on the model object, which Streamlit shares between all browser sessions (one thread
each). Registering, running and removing therefore happen under one lock per model, so no
session ever sees another session's hooks fire or its activations.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import torch
from torch import nn

from ._hooks import call_key, check_input, first_tensor, hooks_removed_after, keep, model_device, model_lock
from .layers import resolve_layers

__all__ = ["as_map", "capture", "capture_with_output", "hook_count", "is_out_of_memory", "model_lock",
           "release_memory"]


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


def _channels_last_modules(model: nn.Module) -> set[str]:
    """Modules known to output (N, H, W, C): torchvision Swin's blocks, stages and patch embedding."""
    names = set()
    for name, module in model.named_modules():
        kind = type(module).__name__
        if kind.startswith("SwinTransformerBlock") or kind in ("PatchMerging", "PatchMergingV2", "Permute"):
            names.add(name)
        elif (type(model).__name__ == "SwinTransformer" and name.startswith("features.")
              and not isinstance(module, nn.Conv2d)):  # the patch embedding's conv is still NCHW
            names.add(name)
    return names


def maps_of(model: nn.Module, tensors: dict[str, torch.Tensor], input_hw: tuple[int, int]) -> dict[str, torch.Tensor]:
    """:func:`as_map` over a capture, using what is known of the model's modules."""
    known = _channels_last_modules(model)
    out = {}
    for key, t in tensors.items():
        base = key.split("#")[0]
        out[key] = as_map(t, input_hw, channels_last=True if base in known and t.ndim == 4 else None)
    return out


def capture_with_output(
    model: nn.Module,
    x: torch.Tensor,
    layers: str | Iterable[str],
    *,
    what: str = "output",
    as_maps: bool = False,
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Like :func:`capture`, but also returns the model output (logits) of the same pass, on
    the CPU, so a caller that needs both runs the network once."""
    if what not in ("output", "input"):
        raise ValueError(f"what must be 'output' or 'input', not {what!r}.")
    check_input(x)
    with model_lock(model):
        names = resolve_layers(model, layers)
        modules = dict(model.named_modules())
        calls: dict[str, list[torch.Tensor]] = {name: [] for name in names}

        def make_hook(name: str):
            store = calls[name]
            if what == "output":
                return lambda module, args, output: store.append(keep(first_tensor(output)))
            return lambda module, args: store.append(keep(first_tensor(args)))

        with hooks_removed_after([]) as handles:
            for name in names:
                module = modules[name]
                if what == "output":
                    handles.append(module.register_forward_hook(make_hook(name)))
                else:
                    handles.append(module.register_forward_pre_hook(make_hook(name)))
            with torch.inference_mode():
                logits = model(x.to(model_device(model)))
            logits = keep(first_tensor(logits))

    result: dict[str, torch.Tensor] = {}
    for name in names:
        for i, tensor in enumerate(calls[name]):
            result[call_key(name, i + 1)] = tensor
    if as_maps:
        result = maps_of(model, result, (int(x.shape[-2]), int(x.shape[-1])))
    return result, logits


def capture(
    model: nn.Module,
    x: torch.Tensor,
    layers: str | Iterable[str],
    *,
    what: str = "output",
    as_maps: bool = False,
) -> dict[str, torch.Tensor]:
    """Run one forward pass with hooks on ``layers`` and return what they saw.

    Registers a forward hook (or a forward pre-hook when ``what="input"``) on exactly the named
    modules, runs ``model(x)`` under ``torch.inference_mode()``, and removes every hook before
    returning, also when the pass raises.

    A module that runs several times in one pass (ResNet reuses one ReLU per block) keeps every
    call: the first under its name, later ones as ``"name#2"``, ``"name#3"``, ... right after it.

    Args:
        model: any ``nn.Module``; the input is moved to the device of its parameters.
        x: input batch, e.g. from :func:`vizhooks.preprocess`.
        layers: qualified module names (see :func:`vizhooks.conv_layers`), or ``"all"`` for
            every Conv2d.
        what: ``"output"`` (forward hook) or ``"input"`` (forward pre-hook, first argument).
        as_maps: return every tensor as ``(1, C, H, W)`` (see :func:`as_map`): ViT tokens over
            the patch grid, Swin's channels-last maps permuted. ``False`` returns what the module
            produced.

    Returns:
        ``{name: tensor}`` in the order asked; tensors detached, copied and on the CPU.

    Raises:
        UnknownLayerError (a KeyError): a name the model lacks; no hook is left behind.
        ValueError: bad ``what`` or ``x``.

    Example:
        >>> img = load_image("sample_images/chelsea.jpg")  # 451 x 300
        >>> acts = capture(bundle.model, preprocess(img), ["conv1", "layer1.0.conv1"])
        >>> acts["conv1"].shape
        torch.Size([1, 64, 112, 169])
    """
    return capture_with_output(model, x, layers, what=what, as_maps=as_maps)[0]


def hook_count(model: nn.Module) -> int:
    """Number of hooks of every kind registered on ``model`` and its submodules."""
    total = 0
    for m in model.modules():
        for attr in (
            "_forward_hooks",
            "_forward_pre_hooks",
            "_backward_hooks",
            "_backward_pre_hooks",
        ):
            total += len(getattr(m, attr, {}))
    return total


def is_out_of_memory(exc: BaseException) -> bool:
    """True for CUDA / MPS / host out-of-memory errors (each backend words it differently)."""
    if isinstance(exc, (MemoryError, torch.cuda.OutOfMemoryError)):
        return True
    return isinstance(exc, RuntimeError) and "out of memory" in str(exc).lower()


def release_memory() -> None:
    """After a failed run: drop garbage and give cached GPU memory back, so the next request
    (from any session) starts clean."""
    import gc

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
