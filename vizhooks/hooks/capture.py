"""Forward hooks and forward pre-hooks that capture what flows through chosen layers.

Hooks live on the model object, which Streamlit shares between all browser sessions (one thread
each). Registering, running and removing therefore happen under one lock per model, so no
session ever sees another session's hooks fire or its activations.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch
from torch import nn

from vizhooks._hooks import call_key, check_input, first_tensor, hooked, keep, model_device, model_lock
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import as_map, maps_of

__all__ = ["as_map", "capture", "capture_with_output", "model_lock"]


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
    # the model runs in the mode its caller set (no preserve): a capture only watches
    with hooked(model, preserve=False) as hooks:
        names = resolve_layers(model, layers)
        modules = dict(model.named_modules())
        calls: dict[str, list[torch.Tensor]] = {name: [] for name in names}

        def make_hook(name: str) -> Callable[..., None]:
            store = calls[name]
            if what == "output":
                return lambda module, args, output: store.append(keep(first_tensor(output)))
            return lambda module, args: store.append(keep(first_tensor(args)))

        for name in names:
            if what == "output":
                hooks.forward_hook(modules[name], make_hook(name))
            else:
                hooks.forward_pre_hook(modules[name], make_hook(name))
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
        x: input batch, e.g. from :meth:`vizhooks.ModelBundle.preprocess`.
        layers: qualified module names (see :func:`vizhooks.models.layers.conv_layers`), or ``"all"`` for
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

