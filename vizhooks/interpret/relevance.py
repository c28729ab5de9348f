"""Which channels decided? How much each channel of a layer mattered for one class, and where in
the photo each channel found its evidence.

A layer's activation says what a channel *does*; its relevance says how much it *mattered* for the
answer. Three definitions, each one exact (the tests compare them with independent code):

* ``"taylor"``: ``scores[c] = sum over positions of a_c * d logit[target] / d a_c`` (``a`` the
  layer's output): the first-order Taylor estimate of what switching the channel off would cost.
  One forward and one backward pass.
* ``"ablation"``: ``scores[c] = logit[target](x) - logit[target](x with channel c of the layer's
  output set to 0)``: what switching it off really costs. The channels go through the network in
  batches, ``batch_size`` copies of the photo per forward pass, each with another channel zeroed
  by one forward hook.
* ``"lrp"``: layer-wise relevance propagation through Zennit (chr5tphr/zennit): composite
  ``EpsilonPlusFlat`` (flat rule on the first layer, z+ on the other convolutions, epsilon on the
  fully connected ones), Zennit's ``ResNetCanonizer`` for torchvision ResNets and BatchNorm merged
  into the layer before it for other models that have BatchNorm (VGG-BN). The relevance starts as
  the target logit at the target class and zero elsewhere; a channel's score is the relevance at
  the layer's output summed over its positions. Where BatchNorm is merged, a convolution's output
  *is* its BatchNorm's output (the two are one layer to LRP).

:func:`conditional_heatmap` is zennit-crp's conditional attribution: the LRP relevance of the
photo's pixels when, at ``layer``, only the relevance of some channels is kept. It masks the
gradient (which Zennit's rules make the relevance) at the layer's output with a tensor hook; many
channel sets go through at once as copies of the photo in the batch dimension. Relevance that
reaches the input without passing the layer (a residual connection *around* a convolution) is
not masked, so the per-channel maps add up to the full map for layers the whole signal passes
through: a block's output, a stage, any layer of a plain convolutional network.

LRP changes modules (canonizers rewrite the residual sum, merge BatchNorm) and registers Zennit's
hooks: it runs on a private copy of the model, taken under the model's lock, so the shared model
is bit-identical afterwards. Every call holds the model's lock and leaves no hook, and the training
flag, ``requires_grad`` and ``.grad`` as they were, also after an exception (:func:`vizhooks._hooks.hooked`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from vizhooks._hooks import check_input, first_tensor, hooked, model_device, private_copy, replace_first
from vizhooks.errors import CodedError
from vizhooks.i18n import Names
from vizhooks.models.layers import is_token_model, resolve_layers
from vizhooks.models.maps import channels_last_modules
from vizhooks.models.registry import ModelBundle

METHODS = ("taylor", "ablation", "lrp")

__all__ = ["METHODS", "ChannelRelevance", "RelevanceError", "channel_relevance", "conditional_heatmap",
           "conditional_heatmaps", "lrp_attribution", "lrp_heatmap", "taylor_relevances"]


class RelevanceError(CodedError):
    """A method, layer, target, channel or model that relevance cannot be computed for, said in one
    sentence (``code``: ``relevance_*``)."""


@dataclass(frozen=True)
class ChannelRelevance:
    """How much each channel of one layer mattered for one class of one photo.

    Attributes:
        layer: the layer's name.
        target: the class index.
        method: ``"taylor"``, ``"ablation"`` or ``"lrp"``.
        logit: the target logit of the photo (for LRP: of the canonized copy, equal up to rounding).
        scores: float32 CPU tensor (C,): one signed score per channel of the layer's output.
    """

    layer: str
    target: int
    method: str
    logit: float
    scores: torch.Tensor

    @property
    def order(self) -> torch.Tensor:
        """Channel indices by descending score (ties keep channel order)."""
        return torch.argsort(self.scores, descending=True, stable=True)

    def rank(self, channel: int) -> int:
        """The 1-based place of ``channel`` in :attr:`order`."""
        return int((self.order == channel).nonzero()[0, 0]) + 1

    def share(self, channel: int) -> float:
        """``channel``'s score as a fraction of the layer's total absolute score (signed; 0.0 when
        every score is 0)."""
        total = float(self.scores.abs().sum())
        return float(self.scores[channel]) / total if total > 0 else 0.0


# ----------------------------------------------------------------------------------------------
# checks


def _net(model: ModelBundle | nn.Module) -> nn.Module:
    if isinstance(model, ModelBundle):
        return model.model
    if isinstance(model, nn.Module):
        return model
    raise RelevanceError(f"Relevance needs a ModelBundle (load_model) or a torch nn.Module, not "
                         f"{type(model).__name__}.", "relevance_model", kind=type(model).__name__)


def _check_method(method: object) -> str:
    if method not in METHODS:
        raise RelevanceError(code="relevance_method", method=str(method), known=Names(METHODS))
    return str(method)


def _check_one(x: torch.Tensor) -> None:
    check_input(x)
    if x.shape[0] != 1:
        raise RelevanceError(code="relevance_batch", count=int(x.shape[0]))


def _check_target(target: object, classes: int) -> None:
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < classes:
        raise RelevanceError(code="relevance_target", target=str(target), last=classes - 1)


def _check_batch_size(batch_size: object) -> int:
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise RelevanceError(code="relevance_batch_size", value=str(batch_size))
    return batch_size


def _logits(output: Any) -> torch.Tensor:
    return first_tensor(output)


def _pick_target(logits: torch.Tensor, target: int | None) -> int:
    if target is None:
        return int(logits[0].argmax())
    _check_target(target, int(logits.shape[-1]))
    return target


def _channel_dim(model: nn.Module, layer: str, t: torch.Tensor) -> int:
    """The dimension of ``t`` (the layer's output) that holds its channels: 1 for conv maps and
    vectors, the last for tokens (ViT) and channels-last maps (Swin)."""
    if t.ndim == 3 or (t.ndim == 4 and layer in channels_last_modules(model)):
        return t.ndim - 1
    return 1


# ----------------------------------------------------------------------------------------------
# Taylor and ablation: the model itself, under hooked()


def _taylor(model: nn.Module, x: torch.Tensor, layer: str, target: int | None) -> tuple[torch.Tensor, int, float]:
    found, index, logit = _taylor_layers(model, x, [layer], target)
    return found[layer], index, logit


def _taylor_layers(model: nn.Module, x: torch.Tensor, layers: Sequence[str],
                   target: int | None) -> tuple[dict[str, torch.Tensor], int, float]:
    """Taylor scores of every layer in ``layers`` from one forward and one backward pass."""
    kept: dict[str, dict[str, torch.Tensor]] = {name: {} for name in layers}

    def keep(name: str) -> Any:
        def hook(_m: nn.Module, _a: Any, output: Any) -> None:
            out = first_tensor(output)
            if "act" in kept[name]:  # a module that runs twice: its first run is the layer
                return
            # clone now: ResNet's `out += identity` rewrites this tensor after the hook saw it
            kept[name]["act"] = out.detach().clone()
            hooks.tensor_hook(out, lambda grad: kept[name].__setitem__("grad", grad.detach()))
        return hook

    with hooked(model) as hooks:
        for name in layers:
            hooks.forward_hook(name, keep(name))
        xg = x.detach().to(model_device(model)).clone().requires_grad_(True)
        logits = _logits(model(xg))
        for name in layers:
            _layer_ran(name, kept[name])
        index = _pick_target(logits, target)
        logits[0, index].backward()
    found = {}
    for name in layers:
        act = kept[name]["act"]
        product = act * kept[name].get("grad", torch.zeros_like(act))
        dim = _channel_dim(model, name, act)
        found[name] = product.movedim(dim, -1).reshape(-1, product.shape[dim]).sum(dim=0).float().cpu()
    return found, index, float(logits[0, index].detach())


def _layer_ran(layer: str, kept: dict[str, Any]) -> None:
    if "act" not in kept:
        raise RelevanceError(code="relevance_layer_ran", layer=layer)


class _NotShared(Exception):
    """The layers after the ablated one cannot take a batch grown at that layer (``torch.cat`` with
    an earlier tensor, a batch size read from the input): run whole copies of the photo instead."""


# errors a suffix raises when its tensors' batch sizes disagree; anything else propagates
_SUFFIX_ERRORS = (RuntimeError, ValueError, IndexError, TypeError)


def _ablation(model: nn.Module, x: torch.Tensor, layer: str, target: int | None,
              batch_size: int) -> tuple[torch.Tensor, int, float]:
    """Every copy of the photo is the same up to ``layer``, so the photo runs once (batch 1) and the
    hook grows its output into one row per ablated channel: only the layers after it see the batch.
    The first pass carries one more row, left as it is, whose logit must equal the photo's: a suffix
    that mixes rows, or cannot take the grown batch, sends the channels through whole copies of the
    photo instead (the same numbers, the cost of the whole network per channel)."""
    seen: dict[str, Any] = {}
    zeroed: list[int] = []  # the channel each row switches off this pass; -1 leaves the row as it is

    def probe(_m: nn.Module, _a: Any, output: Any) -> None:
        out = first_tensor(output)
        seen.setdefault("act", out.shape)
        seen.setdefault("dim", _channel_dim(model, layer, out))

    def switch_off(_m: nn.Module, _a: Any, output: Any) -> Any:
        out = first_tensor(output)
        if out.shape[0] == 1 and len(zeroed) > 1:
            out = out.expand(len(zeroed), *out.shape[1:])
        edited = out.clone()
        rows = [i for i, c in enumerate(zeroed) if c >= 0]
        index: list[Any] = [slice(None)] * out.ndim
        index[0] = torch.tensor(rows, device=out.device)
        index[seen["dim"]] = torch.tensor([zeroed[i] for i in rows], device=out.device)
        edited[tuple(index)] = 0
        return replace_first(output, edited)

    xd = x.detach().to(model_device(model))
    with hooked(model) as hooks, torch.no_grad():
        handle = hooks.forward_hook(layer, probe)
        logits = _logits(model(xd))
        _layer_ran(layer, {"act": seen.get("act")} if "act" in seen else {})
        index = _pick_target(logits, target)
        base = float(logits[0, index])
        handle.remove()
        channels = int(seen["act"][seen["dim"]])
        hooks.forward_hook(layer, switch_off)

        def passes(whole: bool) -> torch.Tensor:
            scores = torch.empty(channels)
            for start in range(0, channels, batch_size):
                chunk = range(start, min(start + batch_size, channels))
                zeroed[:] = [*chunk, *([-1] if start == 0 and not whole else [])]
                try:
                    out = _logits(model(xd.expand(len(zeroed), *xd.shape[1:]) if whole else xd))
                except _SUFFIX_ERRORS as error:
                    if whole:
                        raise
                    raise _NotShared from error
                if not whole and (out.shape[0] != len(zeroed) or (
                        start == 0 and abs(float(out[-1, index]) - base) > 1e-3 * (1 + abs(base)))):
                    raise _NotShared
                scores[chunk.start:chunk.stop] = base - out[:len(chunk), index].float().cpu()
            return scores

        try:
            scores = passes(whole=False)
        except _NotShared:
            scores = passes(whole=True)
    return scores, index, base


# ----------------------------------------------------------------------------------------------
# LRP: Zennit on a private copy


def canonizers_for(model: nn.Module) -> list[Any]:
    """Zennit's canonizers for ``model``: ``ResNetCanonizer`` for torchvision ResNets, BatchNorm
    merged into the layer before it (``SequentialMergeBatchNorm``, Zennit's VGG canonizer) for other
    models with BatchNorm, none otherwise."""
    from torchvision.models.resnet import BasicBlock, Bottleneck
    from zennit.canonizers import SequentialMergeBatchNorm
    from zennit.torchvision import ResNetCanonizer

    if any(isinstance(m, (BasicBlock, Bottleneck)) for m in model.modules()):
        return [ResNetCanonizer()]
    if any(isinstance(m, nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return [SequentialMergeBatchNorm()]
    return []


def _check_lrp_model(model: nn.Module) -> None:
    if is_token_model(model):
        raise RelevanceError(code="relevance_lrp_tokens")


def _lrp_pass(model: nn.Module, x: torch.Tensor, layer: str | None, target: int | None,
              masks: torch.Tensor | None, through_only: bool = False) -> tuple[torch.Tensor, torch.Tensor, int, float]:
    """One LRP pass over ``len(masks)`` copies of ``x`` (one copy without ``masks``): (relevance at
    the layer's output, (N, 3, H, W) relevance of the input, target, logit). ``masks[i]`` (C,)
    multiplies the relevance of copy ``i`` at the layer, channel by channel. ``through_only``: the
    input's relevance is what passed through the layer (the backward starts again at the layer's
    output), without what goes around it."""
    from zennit.composites import EpsilonPlusFlat

    _check_lrp_model(model)
    clone = private_copy(model)
    composite = EpsilonPlusFlat(canonizers=canonizers_for(clone))
    kept: dict[str, torch.Tensor] = {}
    copies = 1 if masks is None else len(masks)

    def hook(_m: nn.Module, _a: Any, output: Any) -> Any:
        out = first_tensor(output)
        if "act" in kept:
            return None
        kept["act"] = out
        if out.ndim != 4:
            raise RelevanceError(code="relevance_lrp_layer", layer=layer, shape=str(tuple(out.shape)))
        if through_only:
            # the later layers get a copy: an in-place `out += shortcut` must not rewrite the tensor
            # the second backward starts from
            return replace_first(output, out.clone())

        def at_layer(grad: torch.Tensor) -> torch.Tensor:
            kept["relevance"] = grad.detach().clone()
            if masks is None:
                return grad
            return grad * masks.to(grad.device, grad.dtype)[:, :, None, None]

        hooks.tensor_hook(out, at_layer)
        return None

    with hooked(clone) as hooks:
        # Zennit's context registers its rules' hooks and applies the canonizers, and removes both
        # on leaving; the copy's own block owns our hook (fires after Zennit's, registered later)
        with composite.context(clone) as modified:
            if layer is not None:
                hooks.forward_hook(layer, hook)
            xg = x.detach().to(model_device(clone)).expand(copies, *x.shape[1:]).clone().requires_grad_(True)
            logits = _logits(modified(xg))
            if layer is not None:
                _layer_ran(layer, kept)
            index = _pick_target(logits, target)
            start = torch.zeros_like(logits)
            start[:, index] = logits[:, index].detach()
            if through_only and layer is not None:
                act = kept["act"]
                (at,) = torch.autograd.grad(logits, act, grad_outputs=start, retain_graph=True, allow_unused=True)
                at = torch.zeros_like(act) if at is None else at
                kept["relevance"] = at.detach().clone()
                if masks is not None:
                    at = at * masks.to(at.device, at.dtype)[:, :, None, None]
                (relevance,) = torch.autograd.grad(act, xg, grad_outputs=at)
            else:
                (relevance,) = torch.autograd.grad(logits, xg, grad_outputs=start)
    at_layer = kept.get("relevance", torch.zeros_like(kept["act"])) if "act" in kept else torch.zeros(0)
    return at_layer.float().cpu(), relevance.detach().float().cpu(), index, float(logits[0, index].detach())


def _lrp(model: nn.Module, x: torch.Tensor, layer: str, target: int | None) -> tuple[torch.Tensor, int, float]:
    at_layer, _, index, logit = _lrp_pass(model, x, layer, target, None)
    return at_layer[0].sum(dim=(1, 2)), index, logit


# ----------------------------------------------------------------------------------------------
# the entries


def channel_relevance(model: ModelBundle | nn.Module, x: torch.Tensor, layer: str, target: int | None = None, *,
                      method: str = "taylor", batch_size: int = 64) -> ChannelRelevance:
    """How much each channel of ``layer`` mattered for class ``target`` of the photo ``x``.

    Args:
        model: a :class:`ModelBundle` or any classifier returning (1, classes) logits.
        x: one (1, 3, H, W) input, e.g. ``bundle.preprocess(image)``.
        layer: the layer whose output channels are scored.
        target: class index; default the top-1 class of ``x``.
        method: ``"taylor"`` (activation times gradient), ``"ablation"`` (the logit's fall when the
            channel is switched off) or ``"lrp"`` (Zennit's EpsilonPlusFlat); see the module's text.
        batch_size: copies of the photo per forward pass of ``"ablation"``.

    Returns:
        A :class:`ChannelRelevance`: ``scores`` (C,) and ``order``, channels by descending score.

    Raises:
        RelevanceError: an unknown method, a bad input, target or batch size, a layer that did not
            run, LRP on an attention model or on a layer without a (1, C, h, w) map.
        UnknownLayerError: a layer the model lacks.

    Example:
        >>> r = channel_relevance(bundle, x, "layer4.1.conv2", method="taylor")
        >>> r.order[:5], r.scores[r.order[:5]]
    """
    net = _net(model)
    name = str(_check_method(method))
    _check_one(x)
    size = _check_batch_size(batch_size)
    layer = resolve_layers(net, [layer])[0]
    if name == "taylor":
        scores, index, logit = _taylor(net, x, layer, target)
    elif name == "ablation":
        scores, index, logit = _ablation(net, x, layer, target, size)
    else:
        scores, index, logit = _lrp(net, x, layer, target)
    return ChannelRelevance(layer=layer, target=index, method=name, logit=logit, scores=scores.float())


def taylor_relevances(model: ModelBundle | nn.Module, x: torch.Tensor, layers: Sequence[str],
                      target: int | None = None) -> dict[str, ChannelRelevance]:
    """:func:`channel_relevance` with ``method="taylor"`` for many layers at once, from one forward
    and one backward pass (the page's Overview orders every conv of a network by it).

    Returns:
        ``{layer: ChannelRelevance}`` in the order of ``layers`` (their resolved names).

    Raises:
        As :func:`channel_relevance`.

    Example:
        >>> found = taylor_relevances(bundle, x, ["layer3.1.conv2", "layer4.1.conv2"], target=281)
    """
    net = _net(model)
    _check_one(x)
    names = resolve_layers(net, list(layers))
    found, index, logit = _taylor_layers(net, x, names, target)
    return {name: ChannelRelevance(layer=name, target=index, method="taylor", logit=logit, scores=found[name])
            for name in names}


def _masks(groups: Sequence[int | Iterable[int]], layer: str, channels: int) -> torch.Tensor:
    """(len(groups), channels) masks: 1 at the channels each group keeps."""
    sets: list[list[int]] = []
    for group in groups:
        members = [group] if isinstance(group, int) else list(group)
        for c in members:
            if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < channels:
                raise RelevanceError(code="relevance_channel", channel=str(c), layer=layer, last=channels - 1)
        sets.append(members)
    masks = torch.zeros(len(sets), channels)
    for i, members in enumerate(sets):
        masks[i, members] = 1.0
    return masks


def _layer_channels(model: nn.Module, x: torch.Tensor, layer: str) -> int:
    """The channels of ``layer``'s output (a forward pass that stops after it)."""
    with hooked(model, stop_after=[layer]) as hooks, torch.no_grad():
        found = hooks.run(lambda: model(x.detach().to(model_device(model))))
    if layer not in found:
        raise RelevanceError(code="relevance_layer_ran", layer=layer)
    out = found[layer]
    if out.ndim != 4:
        raise RelevanceError(code="relevance_lrp_layer", layer=layer, shape=str(tuple(out.shape)))
    return int(out.shape[1])


def conditional_heatmaps(model: ModelBundle | nn.Module, x: torch.Tensor, layer: str,
                         groups: Sequence[int | Iterable[int]], target: int | None = None, *,
                         batch_size: int = 16, through_only: bool = False) -> torch.Tensor:
    """Many :func:`conditional_heatmap` maps at once, ``batch_size`` copies of the photo per pass.

    Args:
        groups: one entry per map: a channel, or a list of channels kept together.
        through_only: as :func:`conditional_heatmap`.

    Returns:
        (len(groups), H, W) float32 CPU tensor.

    Example:
        >>> maps = conditional_heatmaps(bundle, x, "layer4.1", [[c] for c in range(16)])
    """
    net = _net(model)
    _check_one(x)
    size = _check_batch_size(batch_size)
    layer = resolve_layers(net, [layer])[0]
    _check_lrp_model(net)
    masks = _masks(list(groups), layer, _layer_channels(net, x, layer))
    out = []
    index = target
    for start in range(0, len(masks), size):
        _, relevance, index, _ = _lrp_pass(net, x, layer, index, masks[start:start + size], through_only)
        out.append(relevance.sum(dim=1))
    if not out:
        return torch.zeros(0, *x.shape[-2:])
    return torch.cat(out)


def conditional_heatmap(model: ModelBundle | nn.Module, x: torch.Tensor, layer: str, channels: int | Iterable[int],
                        target: int | None = None, *, through_only: bool = False) -> torch.Tensor:
    """Where in the photo ``channels`` of ``layer`` found their evidence for class ``target``:
    the LRP relevance of the input, summed over the colour channels, when at ``layer`` only the
    relevance of ``channels`` is kept (zennit-crp's conditional attribution).

    Args:
        channels: one channel or a list of channels kept together.
        target: class index; default the top-1 class of ``x``.
        through_only: keep only the relevance that passed through ``channels``. By default what goes
            around the layer (a residual shortcut past a conv inside a block) reaches the photo as
            well, whatever the mask, as with zennit-crp's mask; at such a layer that shared part can
            make every channel's map look alike. The page's channel inspector sets it.

    Returns:
        (H, W) float32 CPU tensor, signed. The maps of every channel of a layer the whole signal
        passes through add up to :func:`lrp_heatmap` (with ``through_only`` too: nothing goes around).

    Raises:
        RelevanceError: as :func:`channel_relevance` with ``method="lrp"``, or a channel the layer
            does not have. UnknownLayerError: a layer the model lacks.

    Example:
        >>> where = conditional_heatmap(bundle, x, "layer4.1", 42)
    """
    return conditional_heatmaps(model, x, layer, [channels], target, through_only=through_only)[0]


def lrp_attribution(model: ModelBundle | nn.Module, x: torch.Tensor, target: int | None = None) -> torch.Tensor:
    """The LRP relevance of every input value of ``x`` for class ``target`` (default the top-1):
    EpsilonPlusFlat, canonized as above, (3, H, W) float32, signed. Its sum is about the target
    logit (conservation; the flat first layer and the epsilon keep a little).

    Example:
        >>> relevance = lrp_attribution(bundle, x, target=281)
    """
    net = _net(model)
    _check_one(x)
    _, relevance, _, _ = _lrp_pass(net, x, None, target, None)
    return relevance[0]


def lrp_heatmap(model: ModelBundle | nn.Module, x: torch.Tensor, target: int | None = None) -> torch.Tensor:
    """The full LRP heatmap of ``x`` for class ``target`` (default the top-1): the input relevance
    (:func:`lrp_attribution`) summed over the colour channels, (H, W) float32, signed. The
    explanation view's ``"lrp"`` method.

    Example:
        >>> heat = lrp_heatmap(bundle, x)
    """
    return lrp_attribution(model, x, target).sum(dim=0)
