"""Forward hooks and forward pre-hooks that capture what flows through chosen layers.

Hooks live on the model object, which Streamlit shares between all browser sessions (one thread
each). Registering, running and removing therefore happen under one lock per model, so no
session ever sees another session's hooks fire or its activations.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterable
from contextlib import contextmanager
from typing import Any

import torch
from torch import nn

from .layers import resolve_layers

_locks: weakref.WeakKeyDictionary[nn.Module, threading.RLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def model_lock(model: nn.Module) -> threading.RLock:
    """The one lock of ``model``; every vizhooks function that hooks it holds this lock."""
    with _locks_guard:
        lock = _locks.get(model)
        if lock is None:
            lock = _locks[model] = threading.RLock()
        return lock


def model_device(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def _first_tensor(value: Any) -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                return item
    raise TypeError(f"Expected a tensor to capture, got {type(value).__name__}.")


def _keep(t: torch.Tensor) -> torch.Tensor:
    # Copy now: ResNet's ReLU(inplace=True) and `out += identity` rewrite tensors after the hook
    # has seen them. inference_mode(False) makes the copy a normal tensor, so callers may later
    # modify it in place or use it with autograd.
    with torch.inference_mode(False):
        return t.detach().to("cpu", copy=True)


def _check_input(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or x.ndim != 4 or x.shape[1] != 3:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (N, 3, H, W) image tensor (see preprocess), not {shape}.")


@contextmanager
def hooks_removed_after(handles: list):
    """Own hook handles: remove every one when the block ends, whatever happens."""
    try:
        yield handles
    finally:
        for handle in handles:
            handle.remove()


def capture_with_output(
    model: nn.Module,
    x: torch.Tensor,
    layers: str | Iterable[str],
    *,
    what: str = "output",
) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    """Like :func:`capture`, but also returns the model output (logits) of the same pass, on
    the CPU, so a caller that needs both runs the network once."""
    if what not in ("output", "input"):
        raise ValueError(f"what must be 'output' or 'input', not {what!r}.")
    _check_input(x)
    with model_lock(model):
        names = resolve_layers(model, layers)
        modules = dict(model.named_modules())
        calls: dict[str, list[torch.Tensor]] = {name: [] for name in names}

        def make_hook(name: str):
            store = calls[name]
            if what == "output":
                return lambda module, args, output: store.append(_keep(_first_tensor(output)))
            return lambda module, args: store.append(_keep(_first_tensor(args)))

        with hooks_removed_after([]) as handles:
            for name in names:
                module = modules[name]
                if what == "output":
                    handles.append(module.register_forward_hook(make_hook(name)))
                else:
                    handles.append(module.register_forward_pre_hook(make_hook(name)))
            with torch.inference_mode():
                logits = model(x.to(model_device(model)))
            logits = _keep(logits)

    result: dict[str, torch.Tensor] = {}
    for name in names:
        for i, tensor in enumerate(calls[name]):
            result[name if i == 0 else f"{name}#{i + 1}"] = tensor
    return result, logits


def capture(
    model: nn.Module,
    x: torch.Tensor,
    layers: str | Iterable[str],
    *,
    what: str = "output",
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
    return capture_with_output(model, x, layers, what=what)[0]


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
