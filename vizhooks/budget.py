"""Memory bounds: how big a capture will be before it runs, and a byte-bounded cache.

A classroom server must never be killed for memory because one visitor asked for every layer of
ResNet-152 at 512 pixels. Output shapes are worked out on PyTorch's meta device (no memory, no
arithmetic), so a capture that would not fit is refused with a sentence before it starts.
"""

from __future__ import annotations

import functools
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

import torch
from torch import nn

#: Largest capture one request may make (feature maps of all chosen layers), in MB.
MAX_CAPTURE_MB = float(os.environ.get("VIZHOOKS_MAX_CAPTURE_MB", "600"))

T = TypeVar("T")


class CaptureTooLargeError(ValueError):
    """The requested capture would need more memory than this server allows."""


@functools.cache
def _meta_model(arch: str) -> tuple[nn.Module, threading.Lock]:
    from torchvision.models import get_model_builder

    with torch.device("meta"):
        model = get_model_builder(arch)(weights=None).eval()
    return model, threading.Lock()


def capture_shapes(arch: str, layers: Iterable[str], input_hw: tuple[int, int],
                   what: str = "output") -> dict[str, tuple[int, ...]]:
    """Shapes a capture of ``layers`` on a (1, 3, H, W) input would return, computed on the meta
    device (free). Modules that run several times contribute every call."""
    model, lock = _meta_model(arch)
    modules = dict(model.named_modules())
    calls: dict[str, list[tuple[int, ...]]] = {}
    handles = []

    def remember(name):
        def hook(module, args, output=None):
            calls.setdefault(name, []).append(tuple((args[0] if output is None else output).shape))

        return hook

    with lock:
        try:
            for name in layers:
                if name in modules:
                    hook = remember(name)
                    handles.append(modules[name].register_forward_pre_hook(hook) if what == "input"
                                   else modules[name].register_forward_hook(hook))
            with torch.no_grad():
                model(torch.empty(1, 3, *input_hw, device="meta"))
        finally:
            for h in handles:
                h.remove()
    return {(name if i == 0 else f"{name}#{i + 1}"): shape
            for name, shapes in calls.items() for i, shape in enumerate(shapes)}


def capture_bytes(arch: str, layers: Iterable[str], input_hw: tuple[int, int], what: str = "output") -> int:
    """Bytes of float32 feature maps a capture would hold."""
    return sum(4 * int(torch.Size(s).numel()) for s in capture_shapes(arch, layers, input_hw, what).values())


def check_capture(arch: str, layers: list[str], input_hw: tuple[int, int], what: str = "output",
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
    need = copies * capture_bytes(arch, layers, input_hw, what)
    if need > limit * 1e6:
        raise CaptureTooLargeError(
            f"{len(layers)} layers of {arch} at {input_hw[1]} x {input_hw[0]} pixels would need "
            f"{need / 1e6:,.0f} MB for their feature maps{' and gradients' if copies > 1 else ''}; "
            f"this server allows {limit:,.0f} MB per request. Choose fewer layers or a smaller input size."
        )
    return need


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the total size of its values.

    ``get_or_create(key, create, size)`` returns the cached value or makes it with ``create()``
    (outside the lock, so one slow entry does not block other keys) and evicts the oldest
    entries until the total fits in ``max_bytes``. A value larger than the whole cache is
    returned but not kept.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get_or_create(self, key: Hashable, create: Callable[[], T], size: Callable[[T], int]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]  # type: ignore[return-value]
        value = create()
        nbytes = int(size(value))
        with self._lock:
            if key in self._items:  # another thread made it meanwhile: keep one copy
                self._items.move_to_end(key)
                return self._items[key][0]  # type: ignore[return-value]
            if nbytes <= self.max_bytes:
                self._items[key] = (value, nbytes)
                self._total += nbytes
                while self._total > self.max_bytes:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._total -= dropped
        return value

    @property
    def total_bytes(self) -> int:
        return self._total

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0
