"""Hook internals shared by every vizhooks function that registers hooks.

One owner of hook work, :func:`hooked`: a ``with`` block that holds the model's lock, preserves
its state (training flag, ``requires_grad``, ``.grad``), owns every hook handle and removes them
all in ``finally``, and can stop the forward pass after given layers. Every module that hooks a
model goes through it. Also here: the lock itself, the first tensor of a module's input or output,
keeping a copy, the ``"name#N"`` key of a module that runs several times, and the one sentence
for a layer that did not run. Private: the public functions in capture, gradients, summary, cam,
live and the atlas are built on these.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import time
import weakref
from collections.abc import Callable, Container, Iterable, Iterator
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
def lock_if_free(model: nn.Module) -> Iterator[bool]:
    """Hold ``model``'s lock for the block if no one holds it now; yields whether it was taken.

    For work that is better dropped than late (a camera frame): the block skips its work on False.
    Hooks inside the block go through :func:`hooked` with ``lock=HELD``.
    """
    lock = model_lock(model)
    taken = lock.acquire(blocking=False)
    try:
        yield taken
    finally:
        if taken:
            lock.release()


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


def replace_first(output: Any, new: torch.Tensor) -> Any:
    """``output`` with its first tensor replaced by ``new``: what a forward hook returns to change a
    module's output (modules may return tuples, and named tuples such as GoogLeNet's)."""
    if isinstance(output, torch.Tensor):
        return new
    items = list(output)
    index = next(i for i, item in enumerate(items) if isinstance(item, torch.Tensor))
    items[index] = new
    if hasattr(output, "_fields"):
        return type(output)(*items)
    return type(output)(items)


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
    computing (feature visualization, the live camera). :meth:`Hooks.run` ends the pass quietly on it."""


def check_ran(names: Iterable[str], ran: Container[str]) -> None:
    """Raise the one sentence for the first of ``names`` not in ``ran`` (the layers the hooks saw):
    a layer that never ran in the forward pass, such as a head the model does not use."""
    missing = [n for n in names if n not in ran]
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


#: ``lock=HELD``: the caller already holds the lock that guards the model (a helper documented "call
#: with the model's lock held", a meta-device model under the lock :func:`vizhooks.models.registry.meta_model`
#: gives, the live stream's frame that took the lock without waiting), so nothing more is acquired.
HELD: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()

#: A module, or its qualified name in the hooked model.
ModuleRef = nn.Module | str


class Hooks:
    """Everything a vizhooks function does to a model while it hooks it, undone when the block ends.

    Entering takes, in this order: the model's lock (:func:`model_lock`, or ``lock``), its state
    (with ``preserve``: eval mode and frozen parameters inside, see :func:`preserved_state`), and
    the stop hooks of ``stop_after``. Leaving, whatever happened, undoes them in reverse: every
    handle registered through this object removed, the state put back, the lock released. Made by
    :func:`hooked`; one ``with`` block per object.

    ``stop_after``: a forward hook on each of these layers keeps the first tensor of its first
    output (or ``reduce(layer, tensor)``: reduce at once, in-place ops may rewrite it later) and,
    once every one of them has run, stops the pass: :meth:`run` returns what they kept and nothing
    after the last of them is computed. They fire after the block's other forward hooks on the
    same module, whenever those were registered.
    """

    def __init__(self, model: nn.Module, *, preserve: bool = True, stop_after: Iterable[str] = (),
                 reduce: Callable[[str, torch.Tensor], Any] | None = None,
                 lock: contextlib.AbstractContextManager[Any] | None = None) -> None:
        self.model = model
        self._preserve = preserve
        self._lock = model_lock(model) if lock is None else lock
        self._reduce = reduce
        self._stop_names = list(dict.fromkeys(stop_after))
        self._stops: dict[str, tuple[nn.Module, Any]] = {}
        self._found: dict[str, Any] = {}
        self._handles: list[Any] = []
        self._exit: contextlib.ExitStack | None = None

    def __enter__(self) -> Hooks:
        if self._exit is not None:
            raise RuntimeError("This Hooks block is already open; make a new one with hooked(model).")
        with contextlib.ExitStack() as stack:
            stack.enter_context(self._lock)
            if self._preserve:
                stack.enter_context(preserved_state(self.model))
            stack.callback(self.remove)
            for name in self._stop_names:
                # get_submodule walks one path; the live view opens a block for every frame
                module = self.model.get_submodule(name)
                self._stops[name] = (module, module.register_forward_hook(self._stop_hook(name)))
            self._exit = stack.pop_all()
        return self

    def __exit__(self, *exc: object) -> None:
        stack, self._exit = self._exit, None
        if stack is not None:
            stack.close()  # never swallows: the block's exception goes on after this returns

    def _open(self) -> None:
        if self._exit is None:
            raise RuntimeError("Register hooks inside the `with hooked(model) as hooks:` block, which removes them.")

    def _module(self, module: ModuleRef) -> nn.Module:
        return self.model.get_submodule(module) if isinstance(module, str) else module

    def add(self, *handles: Any) -> None:
        """Own handles registered elsewhere (a library's): removed when the block ends."""
        self._open()
        self._handles.extend(handles)

    def forward_hook(self, module: ModuleRef, hook: Callable[..., Any]) -> Any:
        """``module.register_forward_hook(hook)`` (a name is looked up in the model), owned."""
        self._open()
        target = self._module(module)
        handle = target.register_forward_hook(hook)
        self._handles.append(handle)
        for name, (stop_module, stop_handle) in list(self._stops.items()):
            if stop_module is target:  # the stop goes last, or the pass would end before this hook
                stop_handle.remove()
                self._stops[name] = (target, target.register_forward_hook(self._stop_hook(name)))
        return handle

    def forward_pre_hook(self, module: ModuleRef, hook: Callable[..., Any]) -> Any:
        """``module.register_forward_pre_hook(hook)``, owned."""
        self._open()
        handle = self._module(module).register_forward_pre_hook(hook)
        self._handles.append(handle)
        return handle

    def full_backward_hook(self, module: ModuleRef, hook: Callable[..., Any]) -> Any:
        """``module.register_full_backward_hook(hook)``, owned."""
        self._open()
        handle = self._module(module).register_full_backward_hook(hook)
        self._handles.append(handle)
        return handle

    def tensor_hook(self, tensor: torch.Tensor, hook: Callable[..., Any]) -> Any:
        """``tensor.register_hook(hook)`` (a gradient hook, usually from a forward hook), owned."""
        self._open()
        handle = tensor.register_hook(hook)
        self._handles.append(handle)
        return handle

    def _stop_hook(self, name: str) -> Callable[[nn.Module, Any, Any], None]:
        def hook(_module: nn.Module, _args: Any, output: Any) -> None:
            if name in self._found:
                return
            value = first_tensor(output)
            self._found[name] = value if self._reduce is None else self._reduce(name, value)
            if len(self._found) == len(self._stop_names):
                raise StopForward

        return hook

    def run(self, forward: Callable[[], object]) -> dict[str, Any]:
        """Call ``forward()`` (which calls the model as the caller likes: under ``no_grad``, through
        ``functional_call``...), ending quietly where a hook raised :class:`StopForward`; returns
        ``{layer: value}`` for the layers of ``stop_after`` that ran. May be called many times."""
        self._open()
        self._found.clear()
        try:
            forward()
        except StopForward:
            pass
        return dict(self._found)

    def remove(self) -> None:
        """Remove every hook registered so far, now (the block removes them again at its end,
        which is harmless)."""
        handles, self._handles = self._handles, []
        stops, self._stops = self._stops, {}
        for handle in [*handles, *(h for _, h in stops.values())]:
            handle.remove()


def hooked(model: nn.Module, *, preserve: bool = True, stop_after: Iterable[str] = (),
           reduce: Callable[[str, torch.Tensor], Any] | None = None,
           lock: contextlib.AbstractContextManager[Any] | None = None) -> Hooks:
    """The one way vizhooks hooks a model: a ``with`` block that holds its lock, keeps its state
    and owns every hook (see :class:`Hooks`).

    Args:
        model: the model to hook.
        preserve: eval mode and frozen parameters inside; the training flags, ``requires_grad``
            and ``.grad`` exactly as before afterwards (:func:`preserved_state`). False leaves the
            model's mode alone (a capture runs the model as the caller set it).
        stop_after: layer names whose forward pass :meth:`Hooks.run` ends after.
        reduce: ``reduce(layer, tensor)`` kept for a ``stop_after`` layer instead of the tensor.
        lock: the lock to hold; default the model's own (:func:`model_lock`). :data:`HELD` when the
            caller holds it already.

    Example:
        >>> with hooked(model, stop_after=["layer2"]) as hooks:
        ...     hooks.forward_pre_hook("layer2", lambda m, args: print(args[0].shape))
        ...     maps = hooks.run(lambda: model(x))["layer2"]
    """
    return Hooks(model, preserve=preserve, stop_after=stop_after, reduce=reduce, lock=lock)


def private_copy(model: nn.Module) -> nn.Module:
    """A private copy of a shared model: ReLUs not in place, no hook of the original, eval mode,
    parameters frozen (Captum's module hooks; the sanity check's randomised copies).

    Captum's Guided Backprop does not support in-place modules (captum#837). The copy is taken
    under the model's lock, when no vizhooks hook is on it; the shared model is never changed.
    """
    with model_lock(model):
        clone = copy.deepcopy(model)
    for m in clone.modules():
        if isinstance(m, nn.ReLU):
            m.inplace = False
        # a user's own hooks on the shared model must not run on the copy
        m._forward_hooks.clear()
        m._forward_pre_hooks.clear()
        m._backward_hooks.clear()
    clone.eval()
    for p in clone.parameters():
        p.requires_grad_(False)
        p.grad = None
    return clone
