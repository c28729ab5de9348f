"""Memory bounds: how big a capture will be before it runs, and a byte-bounded cache.

A classroom server must never be killed for memory because one visitor asked for every layer of
ResNet-152 at 512 pixels. Output shapes are worked out on PyTorch's meta device (no memory, no
arithmetic), so a capture that would not fit is refused with a sentence before it starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import HELD, call_key, first_tensor, hooked
from vizhooks.errors import CodedError
from vizhooks.models.registry import meta_model

#: Largest capture one request may make (feature maps of all chosen layers), in MB.
MAX_CAPTURE_MB = float(os.environ.get("VIZHOOKS_MAX_CAPTURE_MB", "600"))


#: Answers of :func:`capture_shapes` kept per meta model.
_KEPT_SHAPES = 256


class CaptureTooLargeError(CodedError):
    """The requested capture would need more memory than this server allows."""


def capture_shapes(name: str, layers: Iterable[str], input_hw: tuple[int, int],
                   what: str = "output") -> dict[str, tuple[int, ...]]:
    """Shapes a capture of ``layers`` of model ``name`` (any name :func:`vizhooks.load_model`
    takes) on a (1, 3, H, W) input would return, computed on the meta device: no weights are
    allocated and nothing is computed. Modules that run several times contribute every call.

    The shapes are kept with the (cached) meta model, per layers, size and ``what``: the page asks again
    on every request, and a meta pass through batch norms runs PyTorch's Python decompositions."""
    model, lock = meta_model(name)
    key = (tuple(layers), tuple(input_hw), what)
    known: dict = model.__dict__.setdefault("_vizhooks_shapes", {})
    with lock:
        if key not in known:
            if len(known) >= _KEPT_SHAPES:  # a server's visitors ask for many layer sets: the oldest go
                del known[next(iter(known))]
            known[key] = _meta_shapes(model, key[0], input_hw, what)
        return dict(known[key])


def _meta_shapes(model: nn.Module, layers: tuple[str, ...], input_hw: tuple[int, int],
                 what: str) -> dict[str, tuple[int, ...]]:
    modules = dict(model.named_modules())
    calls: dict[str, list[tuple[int, ...]]] = {}

    def remember(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any = None) -> None:
            value = first_tensor(args if output is None else output)
            calls.setdefault(name, []).append(tuple(value.shape))

        return hook

    with hooked(model, preserve=False, lock=HELD) as hooks:  # a meta model (its lock held above): no state to keep
        for name in layers:
            if name in modules:
                hook = remember(name)
                if what == "input":
                    hooks.forward_pre_hook(modules[name], hook)
                else:
                    hooks.forward_hook(modules[name], hook)
        with torch.no_grad():
            model(torch.empty(1, 3, *input_hw, device="meta"))
    return {call_key(name, i + 1): shape for name, shapes in calls.items() for i, shape in enumerate(shapes)}


def capture_bytes(name: str, layers: Iterable[str], input_hw: tuple[int, int], what: str = "output") -> int:
    """Bytes of float32 feature maps a capture would hold."""
    return sum(4 * int(torch.Size(s).numel()) for s in capture_shapes(name, layers, input_hw, what).values())


def check_capture(name: str, layers: list[str], input_hw: tuple[int, int], what: str = "output",
                  *, copies: int = 1, limit_mb: float | None = None) -> int:
    """Refuse a capture that would not fit in the per-request budget.

    Args:
        copies: how many tensors of each shape are kept (2 for activations plus gradients).
        limit_mb: the budget; default ``VIZHOOKS_MAX_CAPTURE_MB`` (600).

    Returns:
        The estimated bytes.

    Raises:
        CaptureTooLargeError: with what was asked, what it needs, the limit and what to do.
    """
    limit = MAX_CAPTURE_MB if limit_mb is None else limit_mb
    need = copies * capture_bytes(name, layers, input_hw, what)
    if need > limit * 1e6:
        raise CaptureTooLargeError(
            f"{len(layers)} layers of {name} at {input_hw[1]} x {input_hw[0]} pixels would need "
            f"{need / 1e6:,.0f} MB for their feature maps{' and gradients' if copies > 1 else ''}; "
            f"this server allows {limit:,.0f} MB per request. Choose fewer layers or a smaller input size.",
            "capture_too_large", layers=len(layers), model=name, width=input_hw[1], height=input_hw[0],
            need=round(need / 1e6), limit=round(limit), gradients=copies > 1)
    return need
