"""Backward-time hooks: tensor gradient hooks and full module backward hooks.

Gradients of layer outputs are caught with ``Tensor.register_hook`` on the output, registered
from a forward hook. A module backward hook would be the obvious tool, but it breaks on any
module whose output is later modified in place (BatchNorm before ``ReLU(inplace=True)``, pytorch
issue 61519), which is most of a ResNet. :func:`backward_report` still shows
``register_full_backward_hook`` at work, on the modules where it can work, and says which ones
it had to leave out and why.

All functions here hold the model's lock, switch the model to eval mode, freeze its parameters
(so no ``.grad`` is written) and put everything back when they return, also on errors.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import HELD, call_key, check_input, first_tensor, hooked, keep, model_device
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import maps_of


@dataclass(frozen=True)
class GradientResult:
    """One forward + backward pass: what the gradient views of the page need.

    Attributes:
        activations: ``{layer: (1, C, H, W) output}``, CPU copies.
        gradients: ``{layer: d logit[target] / d output}``, same shapes, CPU copies.
        logits: (1, 1000) output.
        target: the class index whose logit was differentiated.
    """

    activations: dict[str, torch.Tensor]
    gradients: dict[str, torch.Tensor]
    logits: torch.Tensor
    target: int


def _target_index(logits: torch.Tensor, target: int | None) -> int:
    classes = logits.shape[-1]
    if target is None:
        return int(logits[0].argmax())
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < classes:
        raise ValueError(f"target must be a class index from 0 to {classes - 1}, not {target!r}.")
    return target


def _input_with_grad(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    # The input carries requires_grad (parameters are frozen), so every activation joins the
    # graph and backward never writes a parameter's .grad.
    return x.detach().to(model_device(model)).clone().requires_grad_(True)


def _forward_backward(model: nn.Module, x: torch.Tensor, target: int | None) -> tuple[torch.Tensor, int]:
    """Forward with autograd on, then backward from one class logit (hooks do the recording)."""
    with torch.enable_grad():
        xg = _input_with_grad(model, x)
        logits = first_tensor(model(xg))
        index = _target_index(logits, target)
        torch.autograd.grad(logits[0, index], xg)
    return logits, index


def gradient_pass(
    model: nn.Module, x: torch.Tensor, layers: str | Iterable[str], *, target: int | None = None,
    as_maps: bool = False,
) -> GradientResult:
    """Forward with a tensor hook on each layer's output, then backward from one class logit.

    Args:
        layers: module names (see :func:`vizhooks.models.layers.conv_layers`) or ``"all"``.
        target: class index; default the top-1 class of this image.
        as_maps: activations and gradients as ``(1, C, H, W)`` (see :func:`vizhooks.models.maps.as_map`).

    Returns:
        A :class:`GradientResult`. A module that runs several times in the pass is keyed like
        :func:`vizhooks.capture` does (``name``, ``name#2``, ...).
    """
    check_input(x)
    with hooked(model) as hooks:
        names = resolve_layers(model, layers)
        modules = dict(model.named_modules())
        acts: dict[str, torch.Tensor] = {}
        grads: dict[str, torch.Tensor] = {}

        def make_forward_hook(name: str) -> Callable[..., None]:
            calls = [0]

            def hook(module: nn.Module, args: Any, output: Any) -> None:
                out = first_tensor(output)
                calls[0] += 1
                key = call_key(name, calls[0])
                acts[key] = keep(out)
                # The tensor hook from the article: runs during backward with d(logit)/d(out).
                # Registered before any later in-place op, it sees the gradient of this value.
                hooks.tensor_hook(out, lambda grad, key=key: grads.__setitem__(key, keep(grad)))

            return hook

        for name in names:
            hooks.forward_hook(modules[name], make_forward_hook(name))
        logits, index = _forward_backward(model, x, target)
        ordered = [k for k in acts]  # forward order, repeated calls after their first
        activations = {k: acts[k] for k in ordered}
        gradients = {k: grads.get(k, torch.zeros_like(acts[k])) for k in ordered}
        if as_maps:
            hw = (int(x.shape[-2]), int(x.shape[-1]))
            activations, gradients = maps_of(model, activations, hw), maps_of(model, gradients, hw)
        return GradientResult(activations=activations, gradients=gradients, logits=keep(first_tensor(logits)),
                              target=index)


def capture_gradients(
    model: nn.Module, x: torch.Tensor, layers: str | Iterable[str], *, target: int | None = None,
    as_maps: bool = False,
) -> dict[str, torch.Tensor]:
    """Gradient of one class logit with respect to each named layer's output.

    Uses ``Tensor.register_hook`` on the output tensor, registered by a forward hook, so it also
    works for modules whose output is modified in place afterwards.

    Args:
        model: any classifier returning (N, classes) logits.
        x: (1, 3, H, W) input, e.g. from :meth:`vizhooks.ModelBundle.preprocess`.
        layers: module names or ``"all"`` (every Conv2d).
        target: class index; default the top-1 class.

    Returns:
        ``{name: gradient}`` in forward order, each shaped like the activation, detached, on
        the CPU.

    Raises:
        UnknownLayerError: a name the model lacks. ValueError: bad ``x`` or ``target``.

    Example:
        >>> grads = capture_gradients(bundle.model, x, ["layer4.1.conv2"], target=281)
        >>> grads["layer4.1.conv2"].shape
        torch.Size([1, 512, 7, 11])
    """
    return gradient_pass(model, x, layers, target=target, as_maps=as_maps).gradients


# ----------------------------------------------------------------------------------------------
# full backward hooks


#: Why a full backward hook cannot wrap a module, by code (a page says them in its own language).
INPLACE_REASONS = {
    "inplace_self": "it changes its input in place (inplace=True)",
    "inplace_later": "a later operation changes its output in place",
}


@dataclass(frozen=True)
class BackwardRecord:
    """What ``register_full_backward_hook`` saw for one module.

    ``grad_input`` / ``grad_output`` are tuples of shapes, with None where the module's input or
    output had no gradient. ``supported`` is False for a module a full backward hook cannot be
    put on; ``note`` says why.
    """

    name: str
    type: str
    grad_input: tuple[tuple[int, ...] | None, ...] | None
    grad_output: tuple[tuple[int, ...] | None, ...] | None
    supported: bool = True
    note: str = ""
    order: int = field(default=0, compare=False)
    #: why a module was not hooked, as a stable code ("inplace_self", "inplace_later"; "" when hooked)
    note_code: str = field(default="", compare=False)


def _shapes(grads: Sequence[torch.Tensor | None]) -> tuple[tuple[int, ...] | None, ...]:
    return tuple(None if g is None else tuple(g.shape) for g in grads)


def inplace_conflicts(model: nn.Module, x: torch.Tensor, names: list[str]) -> dict[str, str]:
    """Modules among ``names`` that a full backward hook cannot wrap, with the reason.

    Found by one probe pass that watches each tensor's version counter: a module that changes
    its own input in place (``ReLU(inplace=True)``), or whose output something later changes in
    place (BatchNorm before such a ReLU, or a block output followed by ``+=``). Call with the
    model's lock held (or a meta model's own).
    """
    modules = dict(model.named_modules())
    seen: dict[str, list] = {n: [] for n in names}

    def pre(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any) -> None:
            t = first_tensor(args) if args else None
            seen[name].append(["in", t, t._version if t is not None else 0])

        return hook

    def post(name: str) -> Callable[..., None]:
        def hook(module: nn.Module, args: Any, output: Any) -> None:
            rec = seen[name][-1]
            if rec[1] is not None and rec[1]._version != rec[2]:
                rec[0] = "self"
            out = first_tensor(output)
            rec.extend([out, out._version])

        return hook

    with hooked(model, preserve=False, lock=HELD) as hooks:
        for n in names:
            hooks.forward_pre_hook(modules[n], pre(n))
            hooks.forward_hook(modules[n], post(n))
        with torch.no_grad():
            model(x.to(model_device(model)))
    reasons = {}
    for n, calls in seen.items():
        for kind, _, _, out, version in calls:
            if kind == "self":
                reasons[n] = INPLACE_REASONS["inplace_self"]
            elif out._version != version:
                reasons.setdefault(n, INPLACE_REASONS["inplace_later"])
    return reasons


def backward_report(
    model: nn.Module, x: torch.Tensor, modules: Iterable[str], *, target: int | None = None
) -> list[BackwardRecord]:
    """Put ``register_full_backward_hook`` on ``modules`` and record what each one receives.

    Records come in the order backward reached the modules (the reverse of the forward pass
    along a chain). Modules a full backward hook cannot wrap (see :func:`inplace_conflicts`)
    get a record with ``supported=False``, placed where backward would have reached them.

    Example:
        >>> names = [n for n, _ in bundle.model.named_children()]
        >>> for r in backward_report(bundle.model, x, names):
        ...     print(r.name, r.grad_input, r.grad_output)
    """
    check_input(x)
    with hooked(model) as hooks:
        names = resolve_layers(model, list(modules))
        named = dict(model.named_modules())
        forward_index = {n: i for i, (n, _) in enumerate(model.named_modules())}
        skipped = inplace_conflicts(model, x, names)
        fired: list[BackwardRecord] = []

        def make_hook(name: str) -> Callable[..., None]:
            def hook(module: nn.Module, grad_input: Any, grad_output: Any) -> None:
                fired.append(BackwardRecord(name, type(module).__name__, _shapes(grad_input),
                                            _shapes(grad_output), order=len(fired)))

            return hook

        for name in names:
            if name not in skipped:
                hooks.full_backward_hook(named[name], make_hook(name))
        _forward_backward(model, x, target)

    records = list(fired)
    for name, reason in skipped.items():
        code = next((c for c, text in INPLACE_REASONS.items() if text == reason), "")
        rec = BackwardRecord(name, type(named[name]).__name__, None, None, supported=False,
                             note=f"not hooked: {reason}, which a full backward hook does not allow", note_code=code)
        # backward meets modules in reverse forward order: insert before the first record that
        # comes earlier in the forward pass
        pos = next((i for i, r in enumerate(records) if forward_index[r.name] < forward_index[name]),
                   len(records))
        records.insert(pos, rec)
    return records
