"""The shared results: one model per architecture for the whole process (shared by every session,
used under vizhooks' per-model lock), activations and gradients keyed by what decides them, PNGs by
display settings. Every ``get_*`` the views call lives here, so a cache key is written once."""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import streamlit as st
from PIL import Image

import vizhooks as vz
from vizhooks.analysis import Analysis, analyse
from vizhooks.atlas import Atlas, load_atlas, visualize_channels
from vizhooks.errors import CodedError
from vizhooks.hooks.budget import check_capture
from vizhooks.hooks.gradients import BackwardRecord, backward_report, gradient_pass
from vizhooks.hooks.summary import summary_dataframe, summary_totals
from vizhooks.interpret.cam import cams_from
from vizhooks.interpret.concepts import Concepts, discover
from vizhooks.interpret.faithfulness import Faithfulness, faithfulness, infidelity_score, reference_maps
from vizhooks.interpret.methods import CAM_METHODS, default_layers, explain
from vizhooks.interpret.relevance import ChannelRelevance, channel_relevance, conditional_heatmap, taylor_relevances
from vizhooks.interpret.sanity import SanityResult, sanity_check
from vizhooks.models.layers import LayerInfo, describe_layers
from vizhooks.models.registry import (
    OPERATOR_FAMILY,
    backbone_name,
    clip_parts,
    family,
    is_clip,
    meta_model,
    resolve_entry,
)
from vizhooks.models.zero_shot import zero_shot
from vizhooks.network.convolution import ConvStep, conv_at
from vizhooks.network.overview import Overview, overview, overview_layers
from vizhooks.network.sliding import PoolInfo, PoolStep, pool_at, pool_layers, slide
from vizhooks.page.cache import ByteLRU
from vizhooks.page.clip import clip_option
from vizhooks.page.metrics import computed, counted, observe_cache
from vizhooks.page.taught import compose, is_taught, names_of
from vizhooks.page.texts import listed, set_language, t
from vizhooks.render.figures import (
    conv_products_figure,
    conv_window_figure,
    curves_figure,
    grid_layout,
    map_strips_figure,
    overview_png,
    palette_png,
)
from vizhooks.video import encode_pages

if TYPE_CHECKING:
    from torch import Tensor

LOG = logging.getLogger("vizhooks.page")
FV_SIZE, FV_STEPS, FV_SEED = 128, 128, 0
OVERVIEW_TILE = 72  # thumbnails' longer side: 8 of them and the labels fill a projector's 1280 px
SLIDE_FPS = 10  # 120 frames: 12 s, slow enough to follow the first steps of the window


@st.cache_resource(max_entries=2, show_spinner=False)
def plain_bundle(name: str) -> vz.ModelBundle:
    if is_clip(name):  # CLIP with typed class names: the image tower is shared by every set of names
        return zero_shot(*clip_parts(name))
    return vz.load_model(name)


def get_bundle(name: str) -> vz.ModelBundle:
    """The shared model of ``name``; a taught model's name gives its head on the shared backbone
    (vizhooks.page.taught), so teaching never loads or changes a second copy of the network."""
    if is_taught(name):
        return compose(name, plain_bundle(backbone_name(name)))
    return plain_bundle(name)


def model_option(name: str, lang: str) -> str:
    """The selector's line for a model (see :func:`plain_option`); a taught model's names its
    backbone and its classes. An operator's entry whose files changed since the menu listed it (a
    processor now of non-square pictures, a config gone) is its bare name, kept out of the cache: the
    menu stays, and choosing it says why it cannot be loaded (vizhooks.page.urlstate.layers_of, app.main)."""
    if is_taught(name):
        set_language(lang)
        return t("model_taught_option", name=backbone_name(name), classes=listed(names_of(name)) or "?")
    if is_clip(name):
        set_language(lang)
        return clip_option(name)
    try:
        return plain_option(name, lang)
    except (CodedError, OSError) as exc:  # the refusals layers_of answers; another ValueError is a bug
        LOG.warning("model %s listed without its details: %s", name, exc)
        return name


@functools.lru_cache(maxsize=4096)
def plain_option(name: str, lang: str) -> str:
    """The selector's line for a model, without building it: family, parameters, input size. (The
    language is part of the cache key.) A plain process-wide cache: the menu asks for every model on
    every run, and Streamlit's cache hashed its arguments 80 times a run."""
    set_language(lang)
    from vizhooks.models.registry import input_spec

    arch = resolve_entry(name).arch
    try:
        from torchvision.models import get_model_weights

        params = get_model_weights(arch).DEFAULT.meta["num_params"]
        fixed = input_spec(arch).fixed_size
    except (ValueError, KeyError, AttributeError):  # timm or unusual entries: count on the meta device
        from vizhooks.models.registry import meta_model

        model = meta_model(name)[0]
        params, fixed = sum(p.numel() for p in model.parameters()), input_spec(arch, model).fixed_size
    size = t("model_fixed_size", side=fixed) if fixed else ""
    group = family(name)
    group = t("family_operator") if group == OPERATOR_FAMILY else group  # the other families are names
    return t("model_option", family=group, name=name, params=t("model_params_m", m=params / 1e6), size=size)


@st.cache_resource(show_spinner=False)
def result_cache() -> ByteLRU:
    """Activations and gradients of recent requests, shared by all sessions, bounded in bytes
    (VIZHOOKS_CACHE_MB) rather than in entries: one ResNet-152 capture can outweigh a hundred
    small ones."""
    return ByteLRU(int(float(os.environ.get("VIZHOOKS_CACHE_MB", "1500")) * 1e6), observe=observe_cache)


def tensor_bytes(tensors: Any) -> int:
    """The bytes of some tensors: what a cache entry of them weighs."""
    return sum(x.element_size() * x.nelement() for x in tensors)


def cached(key: tuple, make: Callable[[], Any], size: Callable[[Any], int]) -> Any:
    """``make()`` once per ``key`` in the shared, byte-bounded cache."""
    return result_cache().get_or_create(key, make, size)


def get_analysis(model: str, digest: str, data: bytes, size: int, layers: tuple[str, ...], what: str) -> Analysis:
    return cached(("analysis", model, digest, size, layers, what),
                  lambda: analyse(get_bundle(model), vz.load_image(data), size, list(layers), what),
                  lambda a: a.nbytes)


def get_gradients(model: str, key: tuple, layers: tuple[str, ...], target: int,
                  analysis: Analysis) -> tuple[vz.GradientResult, dict[str, Tensor]]:
    """One forward + backward pass for a class: gradients and Grad-CAM maps of the chosen layers.
    Keyed apart from get_analysis, so a new class re-runs this and nothing else."""
    height, width = analysis.x.shape[-2:]
    check_capture(model, list(layers), (height, width), copies=2)

    def make() -> tuple[vz.GradientResult, dict[str, Tensor]]:
        result = gradient_pass(get_bundle(model).model, analysis.x, list(layers), target=target, as_maps=True)
        return result, cams_from(result, (height, width))

    def size(made: tuple[vz.GradientResult, dict[str, Tensor]]) -> int:
        result, cams = made
        return tensor_bytes([*result.activations.values(), *result.gradients.values(), *cams.values()])

    return cached(("gradients", model, key, layers, target), make, size)


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_backward_report(model: str, key: tuple, target: int, _analysis: Analysis) -> list[BackwardRecord]:
    computed("backward")
    bundle = get_bundle(model)
    children = [name for name, _ in bundle.model.named_children()]
    return backward_report(bundle.model, _analysis.x, children, target=target)


def get_backward_report(model: str, key: tuple, target: int, analysis: Analysis) -> list[BackwardRecord]:
    return counted("backward", lambda: cached_backward_report(model, key, target, analysis))


@st.cache_resource(max_entries=8, show_spinner=False)
def cached_summary(model: str, key: tuple, _analysis: Analysis) -> tuple[Any, dict[str, float]]:
    computed("summary")
    rows = vz.layer_summary(get_bundle(model).model, _analysis.x)
    return summary_dataframe(rows), summary_totals(rows)


def get_summary(model: str, key: tuple, analysis: Analysis) -> tuple[Any, dict[str, float]]:
    return counted("summary", lambda: cached_summary(model, key, analysis))


def get_overview(model: str, key: tuple, k: int, analysis: Analysis, target: int | None = None) -> Overview:
    """The whole network for this picture: every conv (or block), its ``k`` strongest channels as
    thumbnails, from one pass (vizhooks.network.overview); a few kilobytes per layer, shared by sessions.
    With ``target``: each layer's ``k`` channels most relevant to that class (Taylor, every layer from
    one more forward + backward pass), each with its signed relevance as the tile's note."""
    if target is None:
        return cached(("overview", model, key, k),
                      lambda: overview(get_bundle(model).model, analysis.x, k=k, tile=OVERVIEW_TILE),
                      _overview_bytes)
    return cached(("overview", model, key, k, "relevance", target),
                  lambda: _relevance_overview(model, k, analysis, target), _overview_bytes)


def _overview_bytes(made: Overview) -> int:
    return sum(row.tiles.nbytes for row in made.rows) + tensor_bytes([made.logits])


def _relevance_overview(model: str, k: int, analysis: Analysis, target: int) -> Overview:
    net = get_bundle(model).model
    found = taylor_relevances(net, analysis.x, overview_layers(net), target)
    made = overview(net, analysis.x, k=k, tile=OVERVIEW_TILE,
                    ranking={name: [int(c) for c in r.order] for name, r in found.items()})
    rows = [replace(row, notes=tuple(_note(found[row.name].scores[c]) for c in row.picked))
            if found[row.name].scores.numel() == row.channels else row for row in made.rows]
    return replace(made, rows=rows)


def _note(score: Any) -> str:
    """A channel's relevance written short and signed, as on the tiles of a grid."""
    return f"{float(score):+.2g}"


@functools.lru_cache(maxsize=64)
def conv_infos(model: str, hw: tuple[int, int]) -> tuple[LayerInfo, ...]:
    """Every Conv2d of ``model`` with its output size for an input of ``hw``: the bounds of the
    Convolution view's row and column, from a pass on the meta device (no weights, no time)."""
    meta, lock = meta_model(model)
    with lock:
        return tuple(i for i in describe_layers(meta, hw) if i.kind == "conv")


def get_conv_step(model: str, key: tuple, layer: str, channel: int, row: int, col: int,
                  analysis: Analysis) -> ConvStep:
    """One conv output value taken apart (vizhooks.network.convolution.conv_at): one forward pass per
    place, kept for every session; a few kilobytes besides the channel's map and the input's mean."""
    return cached(("conv", model, key, layer, channel, row, col),
                  lambda: conv_at(get_bundle(model).model, analysis.x, layer, channel, row, col),
                  lambda s: tensor_bytes([s.window, s.weights, s.products, s.sums, s.output, s.input_mean]))


@st.cache_data(max_entries=32, show_spinner=False)
def conv_window_png(_step: ConvStep, key: tuple, titles: tuple[str, ...], cmap: str) -> bytes:
    """The conv's input with the window, a close-up (padding, taps, the next step) and the output map
    (key: the step's key; redrawn for another colormap or language)."""
    return vz.figure_to_png(conv_window_figure(_step.input_mean, _step.rows, _step.cols, _step.stride, _step.output,
                                               (_step.row, _step.col), titles, cmap))


@st.cache_data(max_entries=32, show_spinner=False)
def conv_products_png(_step: ConvStep, key: tuple, shown: tuple[int, ...], labels: tuple[str, ...],
                      sums: tuple[str, ...], heads: tuple[str, ...]) -> bytes:
    """Window, kernel and products of the input channels ``shown`` (positions in the step)."""
    rows = list(shown)
    return vz.figure_to_png(conv_products_figure(_step.window[rows], _step.weights[rows], _step.products[rows],
                                                 _step.padded, labels, sums, heads))


@functools.lru_cache(maxsize=64)
def pool_infos(model: str, hw: tuple[int, int]) -> tuple[PoolInfo, ...]:
    """Every MaxPool2d / AvgPool2d of ``model`` with its sizes for an input of ``hw`` (a pass on
    the meta device, like :func:`conv_infos`)."""
    meta, lock = meta_model(model)
    with lock:
        return tuple(pool_layers(meta, hw))


def get_pool_step(model: str, key: tuple, layer: str, channel: int, row: int, col: int,
                  analysis: Analysis) -> PoolStep:
    """One pooling value taken apart (vizhooks.network.sliding.pool_at), kept like :func:`get_conv_step`."""
    return cached(("pool", model, key, layer, channel, row, col),
                  lambda: pool_at(get_bundle(model).model, analysis.x, layer, channel, row, col),
                  lambda s: tensor_bytes([s.values, s.input, s.output]))


@st.cache_data(max_entries=32, show_spinner=False)
def pool_window_png(_step: PoolStep, key: tuple, titles: tuple[str, ...], cmap: str) -> bytes:
    """The pooled channel with the window, a close-up and the output map (key: the step's key)."""
    return vz.figure_to_png(conv_window_figure(_step.input, _step.rows, _step.cols, _step.window.stride, _step.output,
                                               (_step.row, _step.col), titles, cmap))


@dataclass(frozen=True)
class SlideFiles:
    """The window sliding over the input (vizhooks.network.sliding.slide), encoded once: an animated GIF
    (what the page plays) and an MP4 (None without an MP4 encoder)."""

    gif: bytes
    mp4: bytes | None
    frames: int
    places: int


def get_slide(model: str, key: tuple, layer: str, channel: int, cmap: str, analysis: Analysis) -> SlideFiles:
    """The animation of ``layer`` (the first conv or a pool) for this picture: frames drawn once,
    encoded as GIF and MP4, and only the bytes kept (the frames are ~20 MB, the files well under 1 MB)."""
    def make() -> SlideFiles:
        bundle = get_bundle(model)
        made = slide(bundle.model, analysis.x, layer, channel, cmap=cmap, mean=bundle.mean, std=bundle.std)
        return SlideFiles(gif=encode_pages(made.pages, made.palette, fps=SLIDE_FPS, kind="gif") or b"",
                          mp4=encode_pages(made.pages, made.palette, fps=SLIDE_FPS, kind="mp4"), frames=len(made),
                          places=made.output_hw[0] * made.output_hw[1])

    return cached(("slide", model, key, layer, channel, cmap), make, lambda f: len(f.gif) + len(f.mp4 or b""))


@st.cache_data(max_entries=32, show_spinner=False)
def overview_picture(_rows: tuple, key: tuple, top: tuple[tuple[str, float], ...], cmap: str) -> bytes:
    """The overview's picture (key: the overview's key and the rows shown); redrawn only for
    another colormap, page of stages or language."""
    return overview_png(_rows, top, cmap)


@st.cache_data(max_entries=64, show_spinner=False)
def grid_png(_tensor: Tensor, key: tuple, channels: int | None, order: str, cmap: str, norm: str,
             columns: int | None, title: str, vcenter: float | None = None,
             clim: tuple[float, float] | None = None, _ranked: Ranked | None = None,
             box: tuple[int, int, int, int] | None = None) -> bytes:
    """``_ranked``: (channel order, note per channel) of the relevance order; ``key`` names it.
    ``box``: a region ``(top, left, bottom, right)`` of the map outlined on every tile."""
    ranking, notes = _ranked if _ranked is not None else (None, None)
    fig = vz.feature_grid(_tensor, channels=channels, order=order, cmap=cmap, norm=norm, title=title,
                          columns=columns, vcenter=vcenter, clim=clim, ranking=ranking, notes=notes, box=box)
    return vz.figure_to_png(fig)


@st.cache_data(max_entries=64, show_spinner=False)
def maps_png(_tensor: Tensor, key: tuple, channels: int | None, order: str, columns: int | None, title: str,
             cmap: str, _ranked: Ranked | None = None) -> bytes:
    """Per-channel grids in two steps: the layout (which channel where, as colour levels) is kept
    with the activations, so another colormap costs a palette PNG encode, not a redraw."""
    ranking, notes = _ranked if _ranked is not None else (None, None)
    layout = cached(
        ("layout", key, channels, order, columns, title),
        lambda: grid_layout(_tensor, channels=channels, order=order, columns=columns, title=title, ranking=ranking,
                            notes=notes),
        lambda made: made.nbytes)
    return palette_png(layout, cmap)


#: The relevance order of a grid: channels by descending relevance, and each channel's signed score as text.
Ranked = tuple[list[int], list[str]]


def get_relevance(model: str, key: tuple, layer: str, target: int, analysis: Analysis) -> ChannelRelevance:
    """Taylor channel relevance (activation x gradient, one forward + backward) of ``layer`` for
    ``target``, shared by every session that shows this photo."""
    return cached(("relevance", model, key, layer, target),
                  lambda: channel_relevance(get_bundle(model), analysis.x, layer, target, method="taylor"),
                  lambda made: tensor_bytes([made.scores]))


def get_conditional_heatmap(model: str, key: tuple, layer: str, channel: int, target: int,
                            analysis: Analysis) -> Tensor:
    """Where ``channel`` of ``layer`` found its evidence for ``target``: its LRP conditional heatmap
    (H, W), signed, of the relevance that passed through the channel (a conv inside a residual block
    would otherwise share the shortcut's part with every other channel), shared by every session that
    shows this photo. Raises the library's RelevanceError for a model or layer LRP cannot handle
    (attention tokens)."""
    return cached(("conditional", model, key, layer, int(channel), target),
                  lambda: conditional_heatmap(get_bundle(model), analysis.x, layer, int(channel), target,
                                              through_only=True),
                  lambda made: tensor_bytes([made]))


def ranked(found: ChannelRelevance) -> Ranked:
    """A grid's relevance order: the channels by descending score and each score written short and signed."""
    return [int(c) for c in found.order], [_note(s) for s in found.scores]


def excited_image(model: str, layers: tuple[str, ...], channels: tuple[int, ...], bar: Any) -> list[Image.Image]:
    """Images optimised to excite ``channels`` of ``layers[0]`` (one pass for all of them),
    kept with the other results; ``bar`` is a progress bar the optimisation moves."""
    layer = layers[0]
    bundle = get_bundle(model)

    def make() -> list[Image.Image]:
        def progress(step: int, steps: int) -> None:
            bar.progress(step / steps, text=t("fv_running", layer=layer, step=step, steps=steps))

        return visualize_channels(bundle.model, layer, list(channels), size=FV_SIZE, steps=FV_STEPS, seed=FV_SEED,
                                  progress=progress, mean=bundle.mean, std=bundle.std)

    return cached(("excite", model, layer, channels, FV_SIZE, FV_STEPS, FV_SEED), make,
                  lambda images: 3 * FV_SIZE * FV_SIZE * len(images))


@st.cache_resource(ttl=300, show_spinner=False)
def atlases_for(model: str, folder: str) -> list[Atlas]:
    """Atlases under the operator's folder (itself or one level down) made for ``model``."""
    found = []
    root = Path(folder)
    for candidate in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        if (candidate / "manifest.json").is_file():
            try:
                atlas = load_atlas(candidate)
            except (ValueError, OSError) as exc:
                LOG.warning("atlas %s not used: %s", candidate, exc)
                continue
            if atlas.model == model:
                found.append(atlas)
    return found


# --- the Explain view: maps of several methods, their scores, the sanity check -----------------------

#: The settings each method's map depends on (the others leave it unchanged, so stay out of its key).
EXPLAIN_READS: dict[str, tuple[str, ...]] = {"scorecam": ("batch_size",), "smoothgrad": ("batch_size",),
                                             "occlusion": ("batch_size",),
                                             "ig": ("batch_size", "ig_steps", "ig_baseline")}
#: Infidelity's perturbations per map (Captum draws them seeded; 16 forward passes in one batch).
INFIDELITY_DRAWS = 16


@functools.lru_cache(maxsize=64)
def cam_layers(model: str) -> tuple[str, ...]:
    """The layer a CAM of ``model`` uses when none is chosen (vizhooks.interpret.methods.default_layers), from
    the model on the meta device (no weights, no time)."""
    meta, lock = meta_model(model)
    with lock:
        return tuple(default_layers(meta))


def explain_layer_options(model: str) -> list[str]:
    """The Explain view's CAM layers: the convs and blocks the sidebar lists, and the CAM's default where it is
    neither (a ViT's last block's first norm), right after its block."""
    from vizhooks.models.layers import architecture_layers

    options = [info.name for info in architecture_layers(model)]
    for name in cam_layers(model):
        if name not in options:
            parent = name.rsplit(".", 1)[0]
            options.insert(options.index(parent) + 1 if parent in options else len(options), name)
    return options


def explain_key(model: str, key: tuple, target: int, method: str, layers: tuple[str, ...],
                settings: tuple[tuple[str, Any], ...]) -> tuple:
    """What decides one method's map: the picture, the class, its layers (CAMs and Guided
    Grad-CAM only) and the settings it reads."""
    uses_layers = method in CAM_METHODS or method == "guidedgradcam"
    reads = dict(settings)
    return ("explain", model, key, target, method, layers if uses_layers else (),
            tuple((name, reads[name]) for name in EXPLAIN_READS.get(method, ()) if name in reads))


def get_explanations(model: str, key: tuple, target: int, methods: tuple[str, ...], layers: tuple[str, ...],
                     settings: tuple[tuple[str, Any], ...], analysis: Analysis, bar: Any,
                     names: dict[str, str]) -> dict[str, Tensor]:
    """``{method: (H, W) map}`` (vizhooks.explain), one cache entry per method, so another choice of
    methods computes only the new ones; ``bar`` follows the batches (``names``: the methods' labels)."""
    out: dict[str, Tensor] = {}
    for i, method in enumerate(methods):
        def progress(done: int, total: int, _method: str, i: int = i, method: str = method) -> None:
            if bar is not None:
                bar.progress(min((i + done / max(total, 1)) / len(methods), 1.0),
                             text=t("ex_running", method=names[method], i=i + 1, n=len(methods), done=done,
                                    total=total))

        def make(method: str = method, progress: Any = progress) -> Tensor:
            return explain(get_bundle(model), analysis.x, target, [method], list(layers), progress=progress,
                           **dict(settings))[method]

        if bar is not None:
            bar.progress(i / len(methods), text=t("ex_running_method", method=names[method], i=i + 1,
                                                   n=len(methods)))
        out[method] = cached(explain_key(model, key, target, method, layers, settings), make,
                             lambda m: tensor_bytes([m]))
    return out


def explain_references(hw: tuple[int, int]) -> dict[str, Tensor]:
    """The random (seed 0) and centred Gaussian maps every method is scored beside."""
    return reference_maps(hw, seed=0)


def get_faithfulness(model: str, key: tuple, target: int, maps: dict[str, tuple[tuple, Tensor]], steps: int,
                     baseline: str, analysis: Analysis, bar: Any, names: dict[str, str]) -> dict[str, Faithfulness]:
    """Deletion / insertion curves and areas, Average Drop and Increase of each map
    (vizhooks.faithfulness); ``maps``: ``{name: (what decides it, map)}``. One cache entry per map."""
    out: dict[str, Faithfulness] = {}
    for i, (name, (decided, attribution)) in enumerate(maps.items()):
        def progress(done: int, total: int, _stage: str, i: int = i, name: str = name) -> None:
            if bar is not None:
                bar.progress(min((i + done / max(total, 1)) / len(maps), 1.0),
                             text=t("ex_scoring", method=names[name], i=i + 1, n=len(maps), done=done, total=total))

        def make(attribution: Tensor = attribution, progress: Any = progress) -> Faithfulness:
            return faithfulness(get_bundle(model), analysis.x, target, attribution, steps=steps,
                                baseline=baseline, progress=progress)  # type: ignore[arg-type]

        out[name] = cached(("faithfulness", model, key, target, decided, steps, baseline), make,
                           lambda f: tensor_bytes([f.deletion_curve, f.insertion_curve]) + 64)
    return out


def get_infidelity(model: str, key: tuple, target: int, maps: dict[str, tuple[tuple, Tensor]], analysis: Analysis,
                   bar: Any, names: dict[str, str]) -> dict[str, float]:
    """Captum's infidelity of each map (vizhooks.interpret.faithfulness.infidelity_score, seed 0)."""
    out: dict[str, float] = {}
    for i, (name, (decided, attribution)) in enumerate(maps.items()):
        if bar is not None:
            bar.progress(i / len(maps), text=t("ex_infidelity_running", method=names[name], i=i + 1, n=len(maps)))

        def make(attribution: Tensor = attribution) -> float:
            return infidelity_score(get_bundle(model), analysis.x, target, attribution, n_perturb=INFIDELITY_DRAWS)

        out[name] = cached(("infidelity", model, key, target, decided, INFIDELITY_DRAWS), make, lambda _: 64)
    return out


def get_sanity(model: str, key: tuple, target: int, methods: tuple[str, ...], layers: tuple[str, ...],
               settings: tuple[tuple[str, Any], ...], analysis: Analysis, bar: Any) -> SanityResult:
    """The cascading randomisation test (vizhooks.interpret.sanity.sanity_check, seed 0) for ``methods``: every
    method's map after each step, and its likeness to the original."""
    def progress(done: int, total: int, stage: str) -> None:
        if bar is not None:
            bar.progress(min(done / max(total, 1), 1.0), text=t("ex_sanity_running", done=done, total=total,
                                                                stage=stage))

    def make() -> SanityResult:
        if bar is not None:
            bar.progress(0.0, text=t("ex_sanity_starting"))
        return sanity_check(get_bundle(model), analysis.x, target, list(methods), list(layers) or None, seed=0,
                            progress=progress, **dict(settings))

    return cached(("sanity", model, key, target, methods, layers, settings), make,
                  lambda r: tensor_bytes([m for maps in r.maps.values() for m in maps]))


@st.cache_data(max_entries=16, show_spinner=False)
def curves_png(_curves: tuple, key: tuple, titles: tuple[str, ...], xlabels: tuple[str, ...], ylabel: str) -> bytes:
    """The deletion and insertion curves of the scored maps in one picture (key: what decided the
    scores; the labels are the texts, so another language redraws it)."""
    return vz.figure_to_png(curves_figure(_curves, titles, xlabels, ylabel))


@st.cache_data(max_entries=16, show_spinner=False)
def strips_png(_rows: tuple, key: tuple, columns: tuple[str, ...], cmap: str) -> bytes:
    """The sanity check's maps, one row per method, one column per step (key: the check's key)."""
    return vz.figure_to_png(map_strips_figure(_rows, columns, cmap))


#: The Concepts view's crops per photo and seed: every visitor asking the same photos, layer, k and
#: class shares one discovery.
CONCEPT_CROPS, CONCEPT_SEED = 8, 0


def get_concepts(model: str, photos: tuple[tuple[str, bytes], ...], layer: str, k: int, target: int, size: int,
                 bar: Any) -> Concepts:
    """CRAFT's concepts of ``layer`` over ``photos`` ((digest, bytes) each) and their importance for
    ``target``, once for every visitor (single flight); ``bar`` is a progress bar the first one sees."""
    bundle = get_bundle(model)

    def make() -> Concepts:
        def progress(done: int, total: int, stage: str) -> None:
            text = t("concepts_running_crops") if stage == "crops" else t("concepts_running_importance")
            bar.progress(min(done / max(total, 1), 1.0), text=f"{text} {done}/{total}")

        return discover(bundle, [vz.load_image(data) for _, data in photos], layer, k=k, target=target,
                        crops_per_image=CONCEPT_CROPS, size=size, seed=CONCEPT_SEED, progress=progress)

    digests = tuple(digest for digest, _ in photos)
    key = ("concepts", model, digests, layer, k, target, size, CONCEPT_CROPS, CONCEPT_SEED)
    return cached(key, make, lambda c: c.bank.nbytes + c.coefficients.nbytes + 64 * len(c.crops))
