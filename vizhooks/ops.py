"""Server operation: what the page and an operator's own server need around a shared model.

The page serves many sessions from one process: each model is used under its own lock, hooks are
counted to prove none is left behind, and an out-of-memory failure is recognised and its memory
handed back before the next request.
"""

import gc
from collections.abc import Callable

import torch
from torch import nn

from vizhooks._hooks import lock_wait_observers, model_lock
from vizhooks.models.weights import checkpoint_path


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
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def observe_lock_wait(observe: Callable[[float], None]) -> None:
    """Have ``observe(seconds)`` called after every blocking acquire of a model lock, with the time
    it waited (a server's metrics; the same function registered twice is called once)."""
    if observe not in lock_wait_observers:
        lock_wait_observers.append(observe)


__all__ = ["checkpoint_path", "hook_count", "is_out_of_memory", "model_lock", "observe_lock_wait",
           "release_memory"]
