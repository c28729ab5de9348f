"""Hook internals shared by every vizhooks function that registers hooks.

One home for: the model lock, owned handles removed in ``finally``, the first tensor of a module's
input or output, keeping a copy, the ``"name#N"`` key of a module that runs several times, and
state preservation (training flag, ``requires_grad``, ``.grad``), and running the network up to a
layer, then stopping. Private: the public functions in capture, gradients, summary, cam, live
and the atlas are built on these.
"""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import torch
from torch import nn

#: Called with the seconds each blocking acquire of a model lock waited (a server's metrics).
lock_wait_observers: list[Callable[[float], None]] = []


class ModelLock:
    """A re-entrant lock that tells ``lock_wait_observers`` how long each blocking acquire waited."""

    def __init__(self) -> None:
        self._lock = threading.RLock()

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if not blocking or not lock_wait_observers:
            return self._lock.acquire(blocking, timeout)
        start = time.perf_counter()
        got = self._lock.acquire(blocking, timeout)
        waited = time.perf_counter() - start
        for observe in lock_wait_observers:
            observe(waited)
        return got

    def release(self) -> None:
        self._lock.release()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


_locks: weakref.WeakKeyDictionary[nn.Module, ModelLock] = weakref.WeakKeyDictionary()
_locks_guard = threading.Lock()


def model_lock(model: nn.Module) -> ModelLock:
    """The one lock of ``model``; every vizhooks function that hooks it holds this lock.

    Streamlit runs each browser session in its own thread and shares cached models between them,
    so registering, running and removing hooks must never interleave across sessions.
    """
    with _locks_guard:
        lock = _locks.get(model)
        if lock is None:
            lock = _locks[model] = ModelLock()
        return lock


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch's operators on one intra-op thread in the calling thread while the block runs; every
    other thread, and threads started meanwhile, keep the process's setting.

    For many tiny operations in a row (L-BFGS on a small problem): on a busy server, threads that
    must meet after every operation wait for cores, and two threads ran 40 times slower than one.
    ``torch.set_num_threads`` sets this thread's OpenMP threads and the default of threads started
    later; a helper thread puts the default back at once (as vizhooks.live does for a stream).
    """
    before = torch.get_num_threads()
    if before == 1:
        yield
        return
    torch.set_num_threads(1)
    helper = threading.Thread(target=torch.set_num_threads, args=(before,), name="vizhooks-threads")
    helper.start()
    helper.join()
    try:
        yield
    finally:
        torch.set_num_threads(before)


def share_lock(model: nn.Module, owner: nn.Module) -> None:
    """Give ``model`` the lock of ``owner``: for a model built from ``owner``'s own modules (a taught
    head on a shared backbone), whose hooks must not interleave with ``owner``'s."""
    lock = model_lock(owner)
    with _locks_guard:
        _locks[model] = lock


def model_device(model: nn.Module) -> torch.device:
    param = next(model.parameters(), None)
    return param.device if param is not None else torch.device("cpu")


def first_tensor(value: Any) -> torch.Tensor:
    """The tensor a hook should look at: the value itself, or the first tensor of a tuple/list
    (module inputs always, and outputs of modules such as GoogLeNet's that return tuples)."""
    if isinstance(value, torch.Tensor):
        return value
    if isinstance(value, (tuple, list)):
        for item in value:
            if isinstance(item, torch.Tensor):
                return item
    raise TypeError(f"Expected a tensor to capture, got {type(value).__name__}.")


def keep(t: torch.Tensor) -> torch.Tensor:
    """A detached CPU copy of ``t``.

    Copy now: ResNet's ReLU(inplace=True) and ``out += identity`` rewrite tensors after the hook
    has seen them. ``inference_mode(False)`` makes the copy a normal tensor, so callers may later
    change it in place or use it with autograd.
    """
    with torch.inference_mode(False):
        return t.detach().to("cpu", copy=True)


def check_input(x: torch.Tensor) -> None:
    if not isinstance(x, torch.Tensor) or x.ndim != 4 or x.shape[1] != 3:
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"x must be a (N, 3, H, W) image tensor (see preprocess), not {shape}.")


def call_key(name: str, call: int) -> str:
    """Key of the ``call``-th run (1-based) of module ``name`` in one pass: ``name``, ``name#2``..."""
    return name if call == 1 else f"{name}#{call}"


class StopForward(Exception):
    """Raised by a forward hook once the layer it watches has run: nothing after that layer needs
    computing (feature visualization, the live camera). Catch it around the model call."""


@contextlib.contextmanager
def hooks_removed_after(handles: list[Any]) -> Iterator[list[Any]]:
    """Own hook handles: remove every one when the block ends, whatever happens."""
    try:
        yield handles
    finally:
        for handle in handles:
            handle.remove()


@contextlib.contextmanager
def forward_until(
    model: nn.Module, layers: Sequence[str], reduce: Callable[[str, torch.Tensor], Any] | None = None,
) -> Iterator[Callable[[Callable[[], object]], dict[str, Any]]]:
    """Forward hooks on ``layers`` that stop the pass once every one of them has run.

    Yields ``run(forward)``: it calls ``forward()`` (which calls the model, as the caller likes:
    under ``no_grad``, through ``functional_call``...) and returns ``{layer: value}`` for the layers
    that ran, where ``value`` is the first tensor of the layer's first output, or
    ``reduce(layer, tensor)`` when given (reduce at once: in-place ops may rewrite it later). Nothing
    after the last of the layers is computed. ``run`` may be called many times; every hook is removed
    when the block ends. Call with the model's lock held.

    Example:
        >>> with forward_until(model, ["layer2"]) as run:
        ...     maps = run(lambda: model(x))["layer2"]
    """
    names = list(dict.fromkeys(layers))
    found: dict[str, Any] = {}

    def hook_for(name: str) -> Callable[[nn.Module, Any, Any], None]:
        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            if name in found:
                return
            value = first_tensor(output)
            found[name] = value if reduce is None else reduce(name, value)
            if len(found) == len(names):
                raise StopForward

        return hook

    def run(forward: Callable[[], object]) -> dict[str, Any]:
        found.clear()
        try:
            forward()
        except StopForward:
            pass
        return dict(found)

    with hooks_removed_after([]) as handles:
        for name in names:
            # get_submodule walks one path; the live view calls this for every frame
            handles.append(model.get_submodule(name).register_forward_hook(hook_for(name)))
        yield run


def missing_layers(names: Iterable[str], found: dict[str, Any]) -> None:
    """Raise when a layer never ran in the forward pass (a head the model does not use)."""
    missing = [n for n in names if n not in found]
    if missing:
        raise ValueError(f"Layer {missing[0]!r} did not run in the model's forward pass; choose a layer that does.")


@contextlib.contextmanager
def preserved_state(model: nn.Module) -> Iterator[None]:
    """Eval mode and frozen parameters inside; the training flag, every parameter's
    ``requires_grad`` and ``.grad`` exactly as before afterwards."""
    training = {m: m.training for m in model.modules()}
    params = list(model.parameters())
    saved = [(p.requires_grad, p.grad) for p in params]
    try:
        model.eval()
        for p in params:
            p.requires_grad_(False)
        yield
    finally:
        for p, (requires_grad, grad) in zip(params, saved, strict=True):
            p.requires_grad_(requires_grad)
            p.grad = grad
        for m, flag in training.items():
            m.training = flag
