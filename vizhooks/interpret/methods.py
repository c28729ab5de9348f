"""Explanation methods side by side: which pixels a prediction rests on, by thirteen definitions.

Two families, each through a well-kept engine, with vizhooks' rules around it (the model's lock,
state restored, zero hooks left, the shared model never modified):

* **CAM family** on one or more layers: ``gradcam`` (vizhooks' own :func:`vizhooks.interpret.cam.grad_cam`,
  equal to pytorch-grad-cam's and torch-cam's), ``gradcampp``, ``xgradcam``, ``layercam``,
  ``scorecam`` and ``eigencam`` from pytorch-grad-cam 1.5.7. Chosen over torch-cam as the engine
  because it has all six (torch-cam has no Eigen-CAM) and does the multi-layer mean the way the
  page wants; torch-cam is the test oracle. Each layer's map is ReLU'd, min-max scaled, resized
  to the input; several layers give the mean of those maps, scaled again (pytorch-grad-cam's
  aggregation). Maps are in [0, 1].
* **Input attributions** through Captum 0.9: ``saliency``, ``smoothgrad`` (NoiseTunnel over
  Saliency), ``ig`` (Integrated Gradients), ``occlusion``, ``guidedbackprop`` and
  ``guidedgradcam``. Their map is the attribution summed over the colour channels (signed),
  except ``saliency`` and ``smoothgrad``, which follow Simonyan et al.: the largest absolute
  gradient over the channels (non-negative). ``raw=True`` keeps the (3, H, W) attribution.
* **LRP** (``lrp``), layer-wise relevance propagation through Zennit 0.5
  (:func:`vizhooks.interpret.relevance.lrp_attribution`: composite ``EpsilonPlusFlat``, Zennit's
  canonizers, on a private copy): the input relevance of the class, summed over the colour
  channels (signed), like the input attributions. Attention models (ViT, Swin) are refused.

Where the libraries differ (measured in tests/test_explain.py):

* Grad-CAM++: torch-cam 0.5 divides its alpha coefficients in a boolean-indexed copy, so the
  division is lost and its weights are ``sum(grad^2 * relu(grad))``; pytorch-grad-cam applies
  equation 19 of the paper. We follow pytorch-grad-cam; the test checks the paper's formula.
* Score-CAM: both weight the channels by a softmax over the masked inputs' class scores (torch-cam
  subtracts the photo's own score first, which a softmax ignores). They upsample differently
  (pytorch-grad-cam ``align_corners=True`` before the per-channel scaling, torch-cam after), so the
  maps are close, not equal.
* Eigen-CAM: the projection on the first principal component has no sign of its own; we keep
  LAPACK's, as pytorch-grad-cam does, so a map may show the complement of what one expects.

Captum's Guided Backprop hooks every ``nn.ReLU`` (a forward-pre hook that clones the input and a
tensor hook per call) and documents that in-place modules are not supported: it runs on a
per-request copy of the model whose ReLUs are not in place; the shared model keeps its own.
"""

from __future__ import annotations

import contextvars
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, cast

import torch
from torch import nn

from vizhooks._hooks import check_input, first_tensor, hooked, model_device, private_copy
from vizhooks.errors import CodedError
from vizhooks.i18n import Names
from vizhooks.interpret.cam import grad_cam
from vizhooks.interpret.relevance import lrp_attribution
from vizhooks.models.layers import find_layers, resolve_layers
from vizhooks.models.maps import cam_map, channels_last_modules
from vizhooks.models.registry import ModelBundle
from vizhooks.render.scale import min_max

CAM_METHODS = ("gradcam", "gradcampp", "xgradcam", "layercam", "scorecam", "eigencam")
#: Input attributions: Captum's six and LRP (Zennit, through vizhooks.interpret.relevance).
INPUT_METHODS = ("saliency", "smoothgrad", "ig", "occlusion", "guidedbackprop", "guidedgradcam", "lrp")
METHODS = CAM_METHODS + INPUT_METHODS
IG_BASELINES = ("black", "blur")

#: ``progress(done, total, method)``: called after each batch of Score-CAM, Occlusion, Integrated
#: Gradients and SmoothGrad, so a page can show a bar.
Progress = Callable[[int, int, str], None]

#: Noise of SmoothGrad as a fraction of the input's value range (Smilkov et al. found 10-20 % best).
SMOOTH_NOISE = 0.15

_progress: contextvars.ContextVar[Callable[[int, int], None] | None] = contextvars.ContextVar(
    "vizhooks_explain_progress", default=None)


class ExplainError(CodedError):
    """A method, layer, target or setting that cannot be explained, said in one sentence
    (``code``: ``explain_*``)."""


# ----------------------------------------------------------------------------------------------
# checks


def _model_and_mean_std(bundle_or_model: ModelBundle | nn.Module) -> tuple[nn.Module, tuple | None]:
    if isinstance(bundle_or_model, ModelBundle):
        spec = bundle_or_model.input
        return bundle_or_model.model, (spec.mean, spec.std)
    if isinstance(bundle_or_model, nn.Module):
        return bundle_or_model, None
    raise ExplainError(f"Explain needs a ModelBundle (load_model) or a torch nn.Module, not "
                       f"{type(bundle_or_model).__name__}.", "explain_model")


def _check_methods(methods: str | Iterable[str]) -> list[str]:
    names = [methods] if isinstance(methods, str) else list(methods)
    unknown = [m for m in names if m not in METHODS]
    if unknown or not names:
        what = f"Unknown explanation method {unknown[0]!r}" if unknown else "No explanation method was chosen"
        raise ExplainError(f"{what}; choose from {', '.join(METHODS)}.", "explain_method",
                           method=unknown[0] if unknown else "", known=Names(METHODS))
    return list(dict.fromkeys(names))


def _check_target(target: object, classes: int) -> int:
    if isinstance(target, bool) or not isinstance(target, int) or not 0 <= target < classes:
        raise ExplainError(f"target must be a class index from 0 to {classes - 1}, not {target!r}.",
                           "explain_target", target=str(target), last=classes - 1)
    return target


def _check_settings(batch_size: int, ig_steps: int, ig_baseline: str, smooth_samples: int,
                    occlusion_window: int | None) -> None:
    for name, value in (("batch_size", batch_size), ("ig_steps", ig_steps), ("smooth_samples", smooth_samples),
                        ("occlusion_window", 1 if occlusion_window is None else occlusion_window)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ExplainError(f"{name} must be a whole number of at least 1, not {value!r}.", "explain_setting",
                               name=name, value=str(value))
    if ig_baseline not in IG_BASELINES:
        raise ExplainError(f"ig_baseline must be 'black' or 'blur', not {ig_baseline!r}.", "explain_setting",
                           name="ig_baseline", value=str(ig_baseline))


#: A transformer block whose output reaches the head through its class token only, and its first norm: the
#: patch tokens of the block's output get no gradient, those of the norm before its attention do (the layer
#: pytorch-grad-cam's ViT tutorial takes, ``blocks[-1].norm1``). torchvision, Hugging Face, timm.
_TOKEN_BLOCK_NORM = {"EncoderBlock": "ln_1", "ViTLayer": "layernorm_before", "DeiTLayer": "layernorm_before",
                     "Block": "norm1"}


def default_layers(model: ModelBundle | nn.Module) -> list[str]:
    """The layer a CAM uses when none is chosen: the network's last block, or its last conv when
    that comes after the last block (EfficientNet's closing 1x1 conv, SqueezeNet's class conv); in a
    ViT, the first norm of its last block (:data:`_TOKEN_BLOCK_NORM`).

    The last block is the usual choice (pytorch-grad-cam's ``model.layer4[-1]`` for a ResNet):
    its map is the coarsest, most semantic one that still has a place in the picture. The page's
    Grad-CAM view has no default of its own (it shows the sidebar's layers), so this is the one home.

    Example:
        >>> default_layers(load_model("resnet18", weights="none").model)
        ['layer4.1']
    """
    model = model.model if isinstance(model, ModelBundle) else model
    blocks, convs = find_layers(model, "block"), find_layers(model, "conv")
    if not blocks and not convs:
        raise ExplainError("The model has no Conv2d layer or block for a CAM; name a layer with layers=[...].",
                           "explain_layers")
    if not convs or blocks and _token_norm(model, blocks[-1].name):
        return [_token_norm(model, blocks[-1].name) or blocks[-1].name]
    if not blocks:
        return [convs[-1].name]
    order = {name: i for i, (name, _) in enumerate(model.named_modules())}
    block, conv = blocks[-1].name, convs[-1].name
    later_conv = order[conv] > order[block] and not conv.startswith(block + ".")
    return [conv if later_conv else block]


def _token_norm(model: nn.Module, block: str) -> str | None:
    norm = _TOKEN_BLOCK_NORM.get(type(model.get_submodule(block)).__name__)
    return f"{block}.{norm}" if norm and hasattr(model.get_submodule(block), norm) else None


# ----------------------------------------------------------------------------------------------
# the CAM family (pytorch-grad-cam)


def _scale(cam: torch.Tensor) -> torch.Tensor:
    """Min-max to [0, 1] like pytorch-grad-cam's ``scale_cam_image`` (a constant map becomes zeros)."""
    return min_max(cam, eps=1e-7)


def _aggregate(per_layer: Sequence[torch.Tensor]) -> torch.Tensor:
    """The mean of the per-layer maps, scaled again: pytorch-grad-cam's several-layer rule.

    One layer's map comes back as it is, so ``gradcam`` on one layer is exactly
    :func:`vizhooks.interpret.cam.grad_cam` (whose upsampled maximum can be a little under 1).
    """
    if len(per_layer) == 1:
        return per_layer[0]
    return _scale(torch.stack(list(per_layer)).clamp(min=0).mean(dim=0)).clamp_(0, 1)


class _QuietBatches:
    """Stands in for the ``tqdm`` module inside pytorch-grad-cam's Score-CAM: no bar on stderr
    (a server's log), and each batch reported to the calling thread's progress callback instead."""

    @staticmethod
    def tqdm(iterable: Iterable[Any], *_args: Any, **_kwargs: Any) -> Iterator[Any]:
        items = list(iterable)
        report = _progress.get()
        for done, item in enumerate(items, start=1):
            yield item
            if report is not None:
                report(done, len(items))


def _cam_class(method: str) -> type:
    import pytorch_grad_cam as pgc
    from pytorch_grad_cam import score_cam

    # Score-CAM loops over its batches with tqdm.tqdm; tqdm reads its settings once, at import, so
    # the bar can only be silenced by giving that one module another tqdm.
    score_cam.tqdm = _QuietBatches
    return {"gradcampp": pgc.GradCAMPlusPlus, "xgradcam": pgc.XGradCAM, "layercam": pgc.LayerCAM,
            "scorecam": pgc.ScoreCAM, "eigencam": pgc.EigenCAM}[method]


def _clone(t: torch.Tensor) -> torch.Tensor:
    # pytorch-grad-cam keeps ``output.cpu().detach()``, which on the CPU is the output itself:
    # ResNet's ``out += identity`` would rewrite a bn2 activation after the hook saw it.
    return t.clone()


def _library_cam(model: nn.Module, x: torch.Tensor, target: int, method: str, layer: str,
                 batch_size: int) -> torch.Tensor:
    """One layer's map by pytorch-grad-cam, its hooks released whatever happens."""
    from pytorch_grad_cam.utils.model_targets import ClassifierOutputTarget

    cls = _cam_class(method)
    module = model.get_submodule(layer)
    hw, channels_last = (int(x.shape[-2]), int(x.shape[-1])), layer in channels_last_modules(model)

    def as_maps(t: torch.Tensor) -> torch.Tensor:  # ViT tokens, Swin's channels-last maps: (N, C, h, w)
        return _clone(cast(torch.Tensor, cam_map(t, hw, channels_last)))  # _probe let only maps through

    with hooked(model) as hooks:
        # the constructor registers the hooks and calls model.eval(); the block restores the flag
        cam = cls(model, [module], reshape_transform=as_maps)
        hooks.add(*cam.activations_and_grads.handles)  # owned here too: removed even if release is not reached
        try:
            cam.batch_size = batch_size
            # parameters are frozen, so the input carries requires_grad for the backward pass
            xg = x.detach().to(model_device(model)).clone().requires_grad_(cam.uses_gradients)
            maps = cam(xg, [ClassifierOutputTarget(target)])
        finally:
            cam.activations_and_grads.release()
    return torch.from_numpy(maps[0]).float()


def _probe(model: nn.Module, x: torch.Tensor, layers: Sequence[str]) -> tuple[int, int, dict[str, int]]:
    """One forward pass: (top-1 class, number of classes, {layer: channels of its map}). The channel
    counts give Score-CAM's batch count. A layer's output is taken as the page shows it
    (:func:`~vizhooks.models.maps.cam_map`: a ViT's tokens over its patch grid, Swin's channels-last
    maps); one that is no map over the picture (a pooled vector, a head) is refused."""
    shapes: dict[str, torch.Size] = {}

    def keep(name: str) -> Callable[[nn.Module, Any, Any], None]:
        def hook(_m: nn.Module, _a: Any, output: Any) -> None:
            shapes.setdefault(name, first_tensor(output).shape)
        return hook

    with hooked(model) as hooks, torch.no_grad():
        for name in layers:
            hooks.forward_hook(name, keep(name))
        logits = first_tensor(model(x.to(model_device(model))))
    hw, known = (int(x.shape[-2]), int(x.shape[-1])), channels_last_modules(model)
    channels: dict[str, int] = {}
    for layer in layers:
        shape = shapes.get(layer)
        mapped = None if shape is None else cam_map(torch.empty(shape, device="meta"), hw, layer in known)
        if mapped is None:
            got = "did not run" if shape is None else f"gives a {tuple(shape)} tensor"
            raise ExplainError(f"A CAM needs a layer whose output is a map over the picture ((1, C, h, w), or a "
                               f"ViT's tokens); {layer!r} {got}.", "explain_layer", layer=layer)
        channels[layer] = int(mapped.shape[1])
    return int(logits[0].argmax()), int(logits.shape[-1]), channels


def _cam(model: nn.Module, x: torch.Tensor, target: int, method: str, layers: dict[str, int],
         batch_size: int, progress: Progress | None) -> torch.Tensor:
    """``method``'s map over ``layers`` (name -> channels); Score-CAM's batches of every layer
    count towards one progress total."""
    per_layer = []
    total = sum(math.ceil(c / batch_size) for c in layers.values())
    before = 0
    for layer, channels in layers.items():
        if method == "gradcam":
            per_layer.append(cast(torch.Tensor, grad_cam(model, x, layer, target=target)))
            continue
        report = None
        if progress is not None:
            def report(done: int, _batches: int, _before: int = before) -> None:
                progress(min(_before + done, total), total, method)
        before += math.ceil(channels / batch_size)
        token = _progress.set(report)
        try:
            per_layer.append(_library_cam(model, x, target, method, layer, batch_size))
        finally:
            _progress.reset(token)
    return _aggregate(per_layer)


# ----------------------------------------------------------------------------------------------
# input attributions (Captum)


class _Counted:
    """The model as Captum's ``forward_func``, reporting each call as a batch done."""

    def __init__(self, model: nn.Module, method: str, total: int, progress: Progress | None) -> None:
        self.model, self.method, self.total, self.progress, self.done = model, method, max(total, 1), progress, 0

    def __call__(self, inputs: torch.Tensor) -> torch.Tensor:
        out = first_tensor(self.model(inputs))
        self.done += 1
        if self.progress is not None:
            self.progress(min(self.done, self.total), self.total, self.method)
        return out


def _black(x: torch.Tensor, mean_std: tuple | None) -> torch.Tensor:
    if mean_std is None:
        return torch.zeros_like(x)
    mean, std = (torch.tensor(v, dtype=x.dtype, device=x.device).view(1, -1, 1, 1) for v in mean_std)
    return ((0 - mean) / std).expand_as(x).clone()


def _blur(x: torch.Tensor) -> torch.Tensor:
    """A strongly blurred copy (Gaussian, sigma an eighth of the shorter side): the photo's colours
    without its shapes, a baseline Integrated Gradients and the faithfulness scores share."""
    from torchvision.transforms.functional import gaussian_blur

    side = min(x.shape[-2:])
    sigma = max(side / 8, 1.0)
    kernel = min(2 * math.ceil(3 * sigma) + 1, 2 * side - 1)
    return gaussian_blur(x, [kernel, kernel], [sigma, sigma])


def ig_baseline_of(x: torch.Tensor, baseline: str, mean_std: tuple | None = None) -> torch.Tensor:
    """The Integrated Gradients baseline for ``x`` (normalised, as the model sees it).

    ``"black"``: a black picture in the model's input space, ``(0 - mean) / std`` per channel when
    the mean and std are known (a ModelBundle), else zeros. ``"blur"``: ``x`` strongly blurred.
    """
    return _black(x, mean_std) if baseline == "black" else _blur(x)


def _targets(target: Any, n: int) -> Any:
    if isinstance(target, torch.Tensor):
        return target.tolist() if target.ndim else int(target)
    return list(target) if isinstance(target, (list, tuple)) else target


def _occlusion_window(x: torch.Tensor, window: int | None) -> tuple[int, int]:
    side = min(x.shape[-2:])
    w = min(window if window is not None else max(side // 8, 2), side)
    return w, max(w // 2, 1)


def _captum(model: nn.Module, x: torch.Tensor, target: Any, method: str, layers: list[str],
            mean_std: tuple | None, batch_size: int, ig_steps: int, ig_baseline: str,
            smooth_samples: int, occlusion_window: int | None, progress: Progress | None) -> torch.Tensor:
    from captum import attr

    # parameters are frozen, so the input is what carries requires_grad into the graph
    if method == "lrp":  # one picture at a time: Zennit's pass starts from each one's own class
        targets = target if isinstance(target, list) else [target] * len(x)
        return torch.stack([lrp_attribution(model, x[i:i + 1], int(targets[i])) for i in range(len(x))])
    x = x.detach().to(model_device(model)).clone().requires_grad_(method != "occlusion")
    if method in ("guidedbackprop", "guidedgradcam"):
        clone = private_copy(model)
        if method == "guidedbackprop":
            return attr.GuidedBackprop(clone).attribute(x, target=target)
        maps = [attr.GuidedGradCam(clone, clone.get_submodule(layer)).attribute(
            x, target=target, interpolate_mode="bilinear") for layer in layers]
        return torch.stack(maps).mean(dim=0)
    with hooked(model):  # the lock and the state: these four Captum methods register no hooks
        if method == "saliency":
            return attr.Saliency(_Counted(model, method, 1, None)).attribute(x, target=target, abs=True)
        if method == "smoothgrad":
            calls = math.ceil(smooth_samples / batch_size) * len(x)
            tunnel = attr.NoiseTunnel(attr.Saliency(_Counted(model, method, calls, progress)))
            stdev = SMOOTH_NOISE * float(x.detach().max() - x.detach().min())
            # a fixed seed: the same photo gives the same map (the page caches it), and the
            # caller's random stream is left where it was
            with torch.random.fork_rng(devices=[x.device] if x.device.type == "cuda" else []):
                torch.manual_seed(0)
                return tunnel.attribute(x, nt_type="smoothgrad", nt_samples=smooth_samples, stdevs=stdev,
                                        nt_samples_batch_size=batch_size, target=target, abs=True)
        if method == "ig":
            baseline = ig_baseline_of(x, ig_baseline, mean_std)
            calls = math.ceil(ig_steps * len(x) / batch_size)
            ig = attr.IntegratedGradients(_Counted(model, method, calls, progress))
            return ig.attribute(x, baselines=baseline, target=target, n_steps=ig_steps,
                                internal_batch_size=batch_size)
        # occlusion: square windows of the mean colour (zero in the normalised space), half-overlapping
        w, stride = _occlusion_window(x, occlusion_window)
        windows = math.prod(math.ceil((d - w) / stride) + 1 for d in x.shape[-2:])
        counted = _Counted(model, method, 1 + math.ceil(windows / batch_size), progress)
        return attr.Occlusion(counted).attribute(x, sliding_window_shapes=(x.shape[1], w, w),
                                                 strides=(x.shape[1], stride, stride), target=target,
                                                 baselines=0.0, perturbations_per_eval=batch_size)


def attribute(model: ModelBundle | nn.Module, x: torch.Tensor, target: Any = None, method: str = "ig", *,
              layers: Sequence[str] | None = None, batch_size: int = 32, ig_steps: int = 50,
              ig_baseline: str = "black", smooth_samples: int = 20, occlusion_window: int | None = None,
              progress: Progress | None = None) -> torch.Tensor:
    """The raw (N, 3, H, W) attribution of an input method for a batch ``x``: the
    ``explanation_func`` that Captum's ``sensitivity_max`` perturbs and calls.

    Args:
        target: one class index for every picture, one per picture (list or tensor), or None for
            each picture's top-1 class.
        method: one of :data:`INPUT_METHODS`; the settings are those of :func:`explain`.

    Returns:
        A detached float32 CPU tensor shaped like ``x``. ``saliency`` and ``smoothgrad`` are
        absolute gradients; the others are signed.

    Example:
        >>> from functools import partial
        >>> from captum.metrics import sensitivity_max
        >>> fn = partial(attribute, bundle, method="saliency")
        >>> sensitivity_max(fn, x, target=3)  # Captum calls fn(perturbed, target=3)
    """
    if isinstance(x, tuple) and len(x) == 1:  # Captum's metrics pass inputs as a tuple
        return (attribute(model, x[0], target, method, layers=layers, batch_size=batch_size, ig_steps=ig_steps,
                          ig_baseline=ig_baseline, smooth_samples=smooth_samples, occlusion_window=occlusion_window,
                          progress=progress),)
    net, mean_std = _model_and_mean_std(model)
    check_input(x)
    if method not in INPUT_METHODS:
        raise ExplainError(f"attribute computes an input attribution; choose from {', '.join(INPUT_METHODS)}, "
                           f"not {method!r}.", "explain_method", method=str(method), known=Names(INPUT_METHODS))
    _check_settings(batch_size, ig_steps, ig_baseline, smooth_samples, occlusion_window)
    names = resolve_layers(net, layers) if layers else default_layers(net)
    if target is None:
        with hooked(net), torch.no_grad():
            target = first_tensor(net(x.to(model_device(net)))).argmax(dim=1).tolist()
    found = _captum(net, x, _targets(target, len(x)), method, names, mean_std, batch_size, ig_steps, ig_baseline,
                    smooth_samples, occlusion_window, progress)
    return found.detach().float().cpu()


# ----------------------------------------------------------------------------------------------
# the entry


def explain(
    bundle_or_model: ModelBundle | nn.Module,
    x: torch.Tensor,
    target: int | None = None,
    methods: str | Iterable[str] = ("gradcam",),
    layers: str | Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    ig_steps: int = 50,
    ig_baseline: str = "black",
    smooth_samples: int = 20,
    occlusion_window: int | None = None,
    raw: bool = False,
    progress: Progress | None = None,
) -> dict[str, torch.Tensor]:
    """One map per method, for one picture and one class: the methods side by side.

    Args:
        bundle_or_model: a :class:`ModelBundle` (its mean and std give the "black" baseline) or any
            classifier returning (1, classes) logits.
        x: (1, 3, H, W) input, e.g. ``bundle.preprocess(image)``.
        target: class index; default the top-1 class of ``x``.
        methods: ids from :data:`METHODS`, in the order the maps should come back.
        layers: the CAM layers (and Guided Grad-CAM's); default :func:`default_layers`.
        batch_size: inputs per forward pass for Score-CAM's masks, Occlusion's windows, Integrated
            Gradients' steps and SmoothGrad's noisy copies.
        ig_steps: Integrated Gradients' steps (Gauss-Legendre, Captum's default).
        ig_baseline: ``"black"`` or ``"blur"`` (see :func:`ig_baseline_of`).
        smooth_samples: SmoothGrad's noisy copies (noise 15 % of the input's range, seed 0).
        occlusion_window: side of Occlusion's square window in pixels (stride half of it); default
            an eighth of the shorter side. Occluded pixels take the mean colour (zero).
        raw: input methods return their (3, H, W) attribution instead of a map.
        progress: ``progress(done, total, method)`` after each batch of the slow methods.

    Returns:
        ``{method: (H, W) float32 CPU tensor}``. CAM maps lie in [0, 1]; input maps are the
        attribution summed over colour channels (signed), except ``saliency`` and ``smoothgrad``:
        the largest absolute gradient over the channels.

    Raises:
        ExplainError: an unknown method, a target out of range, a bad setting or a layer without
            a spatial map. UnknownLayerError: a layer the model lacks.

    Example:
        >>> maps = explain(bundle, x, methods=["gradcam", "scorecam", "ig"])
        >>> maps["ig"].shape == x.shape[-2:]
        True
    """
    model, mean_std = _model_and_mean_std(bundle_or_model)
    check_input(x)
    if x.shape[0] != 1:
        raise ExplainError(f"explain takes one picture, a (1, 3, H, W) tensor, not {x.shape[0]} of them.",
                           "explain_batch", count=int(x.shape[0]))
    names = _check_methods(methods)
    _check_settings(batch_size, ig_steps, ig_baseline, smooth_samples, occlusion_window)
    chosen = resolve_layers(model, layers) if layers else default_layers(model)
    mapped = chosen if any(m in CAM_METHODS or m == "guidedgradcam" for m in names) else []
    top1, classes, channels = _probe(model, x, mapped)
    index = top1 if target is None else _check_target(target, classes)
    out: dict[str, torch.Tensor] = {}
    for method in names:
        if method in CAM_METHODS:
            out[method] = _cam(model, x, index, method, channels, batch_size, progress).float().cpu()
            continue
        found = _captum(model, x, index, method, chosen, mean_std, batch_size, ig_steps, ig_baseline,
                        smooth_samples, occlusion_window, progress)[0].detach().float().cpu()
        if raw:
            out[method] = found
        elif method in ("saliency", "smoothgrad"):
            out[method] = found.abs().amax(dim=0)
        else:
            out[method] = found.sum(dim=0)
    return out


__all__ = ["CAM_METHODS", "IG_BASELINES", "INPUT_METHODS", "METHODS", "ExplainError", "Progress", "attribute",
           "default_layers", "explain", "ig_baseline_of"]

