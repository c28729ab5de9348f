"""Hooks that change what flows through a model: switch channels off, scale them, keep the strongest,
or clamp a gradient on its way back.

A forward hook that returns a value replaces the module's output for everything after it; a
tensor hook that returns a value replaces the gradient that flows on. :func:`intervene` uses the
first to compare a model's answer with and without an edit, :func:`clamp_gradients` the second to
show how clipping one layer's gradient changes the gradients of the layers before it.

Channels are dim 1 of ``(N, C, H, W)`` conv maps and ``(N, D)`` vectors, and the last dim of
``(N, T, D)`` token sequences (ViT), of every ``nn.Linear``'s output, and of the ``(N, H, W, C)``
maps of the modules known to be channels-last (torchvision's Swin; see
``maps.channels_last_modules``). A 4-d output of any other module is taken as channels-first.

Like every hook user here: under the model's lock, eval mode inside with the training flags,
``requires_grad`` and ``.grad`` put back afterwards, every handle removed in ``finally``, and
copies kept on the CPU.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard, cast

import torch
from torch import nn

from vizhooks._hooks import call_key, check_input, first_tensor, hooked, keep, model_device, replace_first
from vizhooks.errors import CodedError
from vizhooks.hooks.gradients import GradientResult, gradient_pass
from vizhooks.models.layers import resolve_layers
from vizhooks.models.maps import channel_dim, channels_last_modules, maps_of

__all__ = ["ChannelEdit", "InterventionResult", "clamp_gradients", "intervene"]


@dataclass(frozen=True)
class ChannelEdit:
    """What to do to the channels of one layer's output; give exactly one of ``channels`` and
    ``keep_top``.

    Attributes:
        channels: channel indices (0-based) whose values are multiplied by ``scale``; any
            sequence of ints (a list, a NumPy array, a tensor), kept as a tuple.
        keep_top: keep the ``keep_top`` channels with the largest mean activation (over the
            positions of each image in the batch) and multiply all the others by ``scale``.
        scale: factor for the edited channels, a number >= 0: 0 switches them off (the default),
            0.5 halves, 2.0 doubles.

    Example:
        >>> ChannelEdit(channels=[3, 17])              # switch two channels off
        >>> ChannelEdit(channels=[3], scale=2.0)       # double one
        >>> ChannelEdit(keep_top=5)                    # only the five strongest survive
    """

    channels: tuple[int, ...] | None = None
    keep_top: int | None = None
    scale: float = 0.0

    def __post_init__(self) -> None:
        # a tuple of plain ints (NumPy and 0-d tensor indices included); anything else is left as
        # given, for intervene() to reject with the layer's name in the sentence
        if isinstance(self.channels, Iterable) and not isinstance(self.channels, (str, bytes)):
            object.__setattr__(self, "channels", tuple(_as_int(c) for c in self.channels))
        if self.keep_top is not None:
            object.__setattr__(self, "keep_top", _as_int(self.keep_top))


@dataclass(frozen=True)
class InterventionResult:
    """Two forward passes over the same input, one plain and one with the edits.

    Attributes:
        logits_before: model output without edits, on the CPU.
        logits_after: model output with the edits.
        activations: ``{layer: output}`` of the captured layers in the edited pass (an edited
            layer shows its edited output), CPU copies, keyed like :func:`vizhooks.capture`.
        activations_before: the same layers in the plain pass.
    """

    logits_before: torch.Tensor
    logits_after: torch.Tensor
    activations: dict[str, torch.Tensor]
    activations_before: dict[str, torch.Tensor]


def _as_int(value: Any) -> object:
    if isinstance(value, bool):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and not math.isnan(value)


def _edit_problem(edit: ChannelEdit) -> str | None:
    """What is wrong with ``edit`` whatever the layer's size, as the end of a sentence, or None."""
    if (edit.channels is None) == (edit.keep_top is None):
        given = "both" if edit.channels is not None else "neither"
        return (f"gives {given} of channels and keep_top; give exactly one, "
                "e.g. ChannelEdit(channels=[0]) or ChannelEdit(keep_top=5)")
    scale = edit.scale
    if not _is_number(scale) or scale < 0:
        return f"has scale={scale!r}; use a number >= 0 (0 switches channels off, 2.0 doubles them)"
    if edit.channels is not None:
        if not isinstance(edit.channels, tuple):
            return f"has channels={edit.channels!r}; give a list of channel indices, e.g. channels=[0]"
        if not edit.channels:
            return "has an empty channel list; name at least one channel index (0 or more)"
        bad = next((c for c in edit.channels if not _is_int(c)), None)
        if bad is not None:
            return f"has channel {bad!r}, which is not a whole number; channels are indices from 0"
    elif not _is_int(edit.keep_top) or edit.keep_top < 1:
        return f"has keep_top={edit.keep_top!r}; keep at least 1 channel"
    return None


def _range_problem(edit: ChannelEdit, count: int) -> str | None:
    """What is wrong with ``edit`` for a layer of ``count`` channels, or None."""
    if edit.channels is not None:
        bad = [c for c in edit.channels if not 0 <= c < count]
        if bad:
            return f"has channel {bad[0]}, but the layer has {count} channels (0 to {count - 1})"
    elif cast(int, edit.keep_top) > count:  # _edit_problem: channels is None, so keep_top is set
        return f"has keep_top={edit.keep_top}, but the layer has {count} channels (keep_top 1 to {count})"
    return None


def _checked_edits(edits: Mapping[str, ChannelEdit]) -> dict[str, ChannelEdit]:
    if not isinstance(edits, Mapping):
        raise TypeError(f"edits must be a mapping {{layer name: ChannelEdit}}, not {type(edits).__name__}.")
    if not edits:
        raise ValueError("edits is empty; give at least one, e.g. {'layer1.0.conv1': ChannelEdit(channels=[0])}.")
    for name, edit in edits.items():
        if not isinstance(edit, ChannelEdit):
            raise TypeError(f"The edit of layer {name!r} must be a ChannelEdit, not {type(edit).__name__}.")
        problem = _edit_problem(edit)
        if problem:
            raise ValueError(f"The edit of layer {name!r} {problem}.")
    return dict(edits)


def _edited(out: torch.Tensor, edit: ChannelEdit, dim: int) -> torch.Tensor:
    """A new tensor: ``out`` with the edit's channels multiplied by its scale (never in place, so
    whatever else holds ``out`` keeps the original values)."""
    count = out.shape[dim]
    if edit.keep_top is not None:
        others = [d for d in range(1, out.ndim) if d != dim]
        means = out.mean(dim=others) if others else out  # (N, C)
        factor = torch.full_like(means, edit.scale)
        factor.scatter_(1, means.topk(edit.keep_top, dim=1).indices, 1.0)
        shape = [1] * out.ndim
        shape[0], shape[dim] = out.shape[0], count
    else:
        factor = torch.ones(count, dtype=out.dtype, device=out.device)
        factor[list(cast(tuple[int, ...], edit.channels))] = edit.scale
        shape = [1] * out.ndim
        shape[dim] = count
    return out * factor.view(shape)


def intervene(
    model: nn.Module,
    x: torch.Tensor,
    edits: Mapping[str, ChannelEdit],
    *,
    capture: str | Iterable[str] = (),
    as_maps: bool = False,
) -> InterventionResult:
    """Run ``x`` through ``model`` twice, without and with channel edits, and return both answers.

    The edited pass puts a forward hook on each edited layer that returns the edited output, so
    everything after the layer sees the change. An edit applies to every call of a module that
    runs several times in one pass. Both passes run under ``torch.inference_mode()`` in eval mode
    (dropout off, BatchNorm statistics untouched); the model's state is restored afterwards.

    The edits are checked before any hook is registered; the channel ranges, which need the
    layers' output shapes, right after the plain pass and before the edited one.

    Args:
        model: any ``nn.Module``; the input is moved to the device of its parameters.
        x: input batch, e.g. from :meth:`vizhooks.ModelBundle.preprocess`.
        edits: ``{layer name: ChannelEdit}``.
        capture: layers whose outputs to keep from both passes (names or ``"all"``).
        as_maps: captured tensors as ``(1, C, H, W)`` (see :func:`vizhooks.models.maps.as_map`).

    Returns:
        An :class:`InterventionResult` with CPU tensors.

    Raises:
        UnknownLayerError (a KeyError): an edited or captured layer the model lacks.
        ValueError: an edit without exactly one of channels / keep_top, an empty channel list,
            a scale below 0 or NaN, a channel or keep_top outside the layer's channels; or a bad
            ``x``. CodedError (a ValueError): ``keep_top`` on a layer whose output does not have one
            row per image (a reshape before it folds positions into the batch). TypeError: ``edits``
            is not a mapping of ChannelEdit.

    Example:
        >>> r = intervene(bundle.model, x, {"layer4.1.conv2": ChannelEdit(keep_top=10)},
        ...               capture=["layer4.1.conv2"])
        >>> r.logits_before.argmax(1), r.logits_after.argmax(1)
    """
    check_input(x)
    checked = _checked_edits(edits)
    with hooked(model) as hooks:
        edit_names = resolve_layers(model, list(checked))
        wanted = [capture] if isinstance(capture, str) else list(capture)
        capture_names = resolve_layers(model, wanted) if wanted else []
        modules = dict(model.named_modules())
        channels_last = channels_last_modules(model)
        xd = x.to(model_device(model))

        def run(edit_hooks: dict[str, Callable[..., Any]]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
            kept: dict[str, list[torch.Tensor]] = {name: [] for name in capture_names}
            # edits first: a hook's returned output is what the hooks after it see
            for name, hook in edit_hooks.items():
                hooks.forward_hook(modules[name], hook)
            for name in capture_names:
                store = kept[name]
                hooks.forward_hook(modules[name],
                                   lambda module, args, output, store=store: store.append(keep(first_tensor(output))))
            with torch.inference_mode():
                logits = keep(first_tensor(model(xd)))
            hooks.remove()  # this pass's hooks only; the block removes them too if the pass raised
            acts = {call_key(name, i + 1): t for name in capture_names for i, t in enumerate(kept[name])}
            return logits, acts

        counts: dict[str, set[int]] = {name: set() for name in edit_names}
        rows: dict[str, set[int]] = {name: set() for name in edit_names}

        def count_channels(name: str) -> Callable[..., None]:
            def hook(module: nn.Module, args: Any, output: Any) -> None:
                out = first_tensor(output)
                counts[name].add(out.shape[channel_dim(module, out, name in channels_last)])
                rows[name].add(out.shape[0])

            return hook

        logits_before, before = run({name: count_channels(name) for name in edit_names})
        for name in edit_names:
            for count in sorted(counts[name]):
                problem = _range_problem(checked[name], count)
                if problem:
                    raise ValueError(f"The edit of layer {name!r} {problem}.")
            folded = sorted(r for r in rows[name] if r != x.shape[0])
            if checked[name].keep_top is not None and folded:
                # keep_top ranks the channels of each image; rows that fold positions into the batch
                # would rank them per position instead
                raise CodedError(code="intervene_keep_top_batch", layer=name, rows=folded[0], photos=x.shape[0])

        def apply_edit(name: str) -> Callable[..., Any]:
            edit = checked[name]

            def hook(module: nn.Module, args: Any, output: Any) -> Any:
                out = first_tensor(output)
                return replace_first(output, _edited(out, edit, channel_dim(module, out, name in channels_last)))

            return hook

        logits_after, after = run({name: apply_edit(name) for name in edit_names})

    if as_maps:
        hw = (int(x.shape[-2]), int(x.shape[-1]))
        before, after = maps_of(model, before, hw), maps_of(model, after, hw)
    return InterventionResult(logits_before=logits_before, logits_after=logits_after, activations=after,
                              activations_before=before)


def clamp_gradients(
    model: nn.Module,
    x: torch.Tensor,
    layers: str | Iterable[str],
    *,
    clamp_at: str,
    limit: float,
    target: int | None = None,
    as_maps: bool = False,
) -> tuple[GradientResult, GradientResult]:
    """Gradients of ``layers`` for one class, once plainly and once with the gradient at
    ``clamp_at``'s output clipped to ``[-limit, limit]``.

    The clip is a tensor hook on ``clamp_at``'s output (registered from a forward hook) that
    returns ``grad.clamp(-limit, limit)``: the gradient that flows on to the layers before
    ``clamp_at`` is the clipped one, so their gradients change and the layers after it do not.
    ``clamp_at``'s own gradient in the second result is the clipped one. Both passes use the same
    class (the first pass's top-1 when ``target`` is None).

    Args:
        layers: module names whose activations and gradients to record, or ``"all"``.
        clamp_at: the module whose output gradient is clipped.
        limit: the clip, a number >= 0.
        target: class index; default the top-1 class of this image.
        as_maps: activations and gradients as ``(1, C, H, W)`` (see :func:`vizhooks.models.maps.as_map`).

    Returns:
        ``(plain, clamped)``, two :class:`vizhooks.GradientResult` with CPU tensors.

    Raises:
        UnknownLayerError: a name the model lacks. ValueError: ``limit`` below 0 or NaN, bad
        ``x`` or ``target``.

    Example:
        >>> plain, clipped = clamp_gradients(bundle.model, x, ["layer1.0.conv1"],
        ...                                  clamp_at="layer3.0.conv1", limit=1e-4)
        >>> (plain.gradients["layer1.0.conv1"] - clipped.gradients["layer1.0.conv1"]).abs().max()
    """
    check_input(x)
    if not _is_number(limit) or limit < 0:
        raise ValueError(f"limit must be a number >= 0 (gradients are clipped to [-limit, limit]), not {limit!r}.")
    with hooked(model, preserve=False) as hooks:  # gradient_pass keeps the state itself
        names = resolve_layers(model, layers)
        at = resolve_layers(model, [clamp_at])[0]
        plain = gradient_pass(model, x, names, target=target, as_maps=as_maps)

        def clamp_hook(module: nn.Module, args: Any, output: Any) -> None:
            out = first_tensor(output)
            if out.requires_grad:
                # registered before gradient_pass's own tensor hook on the same output, so a
                # recorded clamp_at gradient is the clipped one
                hooks.tensor_hook(out, lambda grad: grad.clamp(-limit, limit))

        hooks.forward_hook(at, clamp_hook)
        clamped = gradient_pass(model, x, names, target=plain.target, as_maps=as_maps)
    return plain, clamped
