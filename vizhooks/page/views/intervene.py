"""Intervene: hooks that change values. Edit channels of one layer and see the classes and the
later layers change; steer a layer along a class's or a concept's direction; clamp gradients at one
layer and see the earlier ones fade."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

import streamlit as st

import vizhooks as vz
from vizhooks.analysis import clamp_limit_of
from vizhooks.hooks.budget import check_capture
from vizhooks.hooks.patching import (
    EditResult,
    class_direction,
    gradient_direction,
    mean_ablate,
    photo_classes,
    steer,
)
from vizhooks.interpret.cam import cams_from
from vizhooks.interpret.concepts import concept_direction
from vizhooks.lesson.display import CLAMP_CHANNELS, CLAMP_COLOUR_PERCENTILE, CLAMP_DEFAULT, CLAMP_PERCENTILES
from vizhooks.models.images import to_tensor
from vizhooks.page.results import cached, get_bundle, get_concepts, grid_png, tensor_bytes
from vizhooks.page.sources.sample import read_sample, samples
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.views.compare import STEER_SCALES
from vizhooks.page.widgets import (
    class_picker,
    keep_valid,
    labels_for,
    layer_columns,
    progress_bar,
    select_all,
    shown_labels,
    top5_bars,
)
from vizhooks.render.figures import channel_overlay

if TYPE_CHECKING:
    from torch import Tensor

    from vizhooks.interpret.concepts import Concepts
    from vizhooks.page.state import Context

#: The kinds of edit, as the link names them (``iv_mode``; urlstate checks a link against this list).
EDIT_MODES = ("zero", "mean", "half", "double", "top", "steer")
#: Where a steering direction comes from (``iv_dir``): the sample photos of one class against the
#: others, the gradient of the chosen class's logit at this photo, or a concept the Concepts view's
#: recipe finds at the layer over the sample photos.
STEER_DIRECTIONS = ("class", "gradient", "concept")
#: Concepts found for a concept direction (the Concepts view's default).
STEER_CONCEPTS = 5
#: A steered run and the cache key it was made under (which names its later layers' grids too).
Steered = tuple[EditResult, tuple[Any, ...]]

def channel_edit(mode: str, channels: tuple[int, ...], k: int) -> vz.ChannelEdit:
    if mode == "top":
        return vz.ChannelEdit(keep_top=k)
    return vz.ChannelEdit(channels=channels, scale={"zero": 0.0, "half": 0.5, "double": 2.0}[mode])


def show_top5_pair(bundle: vz.ModelBundle, before: Tensor, after: Tensor, target: int) -> None:
    left, right = st.columns(2)
    for col, logits, head in ((left, before, "iv_before"), (right, after, "iv_after")):
        col.markdown(f"**{t(head)}**")
        top5_bars(col, logits, shown_labels(bundle))
    b, a = float(before[0, target]), float(after[0, target])
    st.metric(t("iv_logit", label=shown_labels(bundle)[target]), f"{a:.3f}", delta=f"{a - b:+.3f}")


def show(ctx: Context) -> None:
    analysis, bundle, c, digest = ctx.analysis, ctx.bundle, ctx.choices, ctx.digest
    st.markdown(t("intervene_intro"))
    target = class_picker(bundle, analysis)
    layers = [n for n in c.layers if n in analysis.activations]
    keep_valid("iv_layer", layers, layers[0])
    left, mid, right = st.columns([2, 2, 3])
    layer = left.selectbox(t("iv_layer"), layers, key="iv_layer")
    mode_label, steer_label = labels_for("iv_mode_"), labels_for("steer_mode_")
    mode = mid.selectbox(t("iv_mode"), EDIT_MODES, key="iv_mode",
                         format_func=lambda v: steer_label(v) if v == "steer" else mode_label(v))
    later = tuple(n for n in layers if layers.index(n) > layers.index(layer))
    if mode == "steer":
        show_steer(ctx, layer, target, later)
        show_clamp(ctx, layers, target)
        return
    count = int(analysis.activations[layer].shape[1])
    if mode == "top":
        st.session_state["iv_k"] = min(int(st.session_state.get("iv_k", 8)), count)
        k = int(right.number_input(t("iv_k"), min_value=1, max_value=count, step=1, key="iv_k"))
        channels: tuple[int, ...] = ()
    else:
        kept = [ch for ch in st.session_state.get("iv_channels", list(range(min(4, count)))) if ch < count]
        st.session_state["iv_channels"] = kept
        channels = tuple(sorted(right.multiselect(t("iv_channels"), list(range(count)), key="iv_channels",
                                                  select_all=select_all())))
        k = 0
        if not channels:
            st.info(t("iv_no_channels"))
            return
    if mode == "mean":
        show_mean(ctx, layer, channels, target)
        show_clamp(ctx, layers, target)
        return
    key = ("intervene", c.model, digest, c.size, c.what, layer, mode, channels, k, later)
    with st.spinner(t("iv_running")):
        result = cached(
            key, lambda: vz.intervene(get_bundle(c.model).model, analysis.x, {layer: channel_edit(mode, channels, k)},
                                      capture=list(later), as_maps=True),
            lambda r: tensor_bytes([*r.activations.values(), *r.activations_before.values()]))
    show_top5_pair(bundle, result.logits_before, result.logits_after, target)
    show_later(ctx, ("iv", *key), later, result.activations, result.activations_before)
    show_clamp(ctx, layers, target)


def show_later(ctx: Context, key: tuple[Any, ...], later: tuple[str, ...], after: dict[str, Tensor],
               before: dict[str, Tensor]) -> None:
    """The maps of the layers after the edited one, with the edit, and how much each changed."""
    c = ctx.choices
    if not later:
        st.info(t("iv_no_later"))
        return
    st.caption(t("iv_later"))
    for _, name in layer_columns(list(later)):
        change = float((after[name] - before[name]).abs().mean() / (before[name].abs().mean() + 1e-12))
        png = grid_png(after[name], (*key, name), c.channels, c.grid_order, c.cmap, c.norm, c.columns, name)
        st.caption(t("iv_change", change=change))
        st.image(png)


def show_mean(ctx: Context, layer: str, channels: tuple[int, ...], target: int) -> None:
    """The layer's channels replaced by their mean over the sample photos (each squashed to this
    photo's size): what the layer adds beyond what it says for any photo."""
    analysis, bundle, c = ctx.analysis, ctx.bundle, ctx.choices
    names = samples()
    key = ("intervene-mean", c.model, ctx.digest, c.size, layer, channels, target, tuple(names))

    def make() -> EditResult:
        photos, _ = _sample_tensors(ctx)
        return mean_ablate(get_bundle(c.model).model, analysis.x, layer, photos, channels=channels, target=target)

    with st.spinner(t("iv_running")):
        result = cached(key, make, lambda r: tensor_bytes([r.logits, r.clean]))
    show_top5_pair(bundle, result.clean[None], result.logits[None], target)
    st.caption(t("patching_mean_caption", layer=layer, n=len(names)))


def _sample_tensors(ctx: Context) -> tuple[list[Tensor], tuple[str, ...]]:
    """The sample photos, each squashed to this photo's size (as the mean replaces)."""
    bundle, picture = get_bundle(ctx.choices.model), ctx.analysis.picture
    names = tuple(samples())
    photos = [to_tensor(vz.load_image(read_sample(name)).resize(picture.size), bundle.input.mean, bundle.input.std)
              for name in names]
    return photos, names


def steer_by_class(ctx: Context, layer: str, scale: float, later: tuple[str, ...]) -> Steered | None:
    """Steering along a class's direction: the sample photos the model puts in the chosen class
    (``iv_toward``), their mean activation at ``layer`` minus the other sample photos'."""
    c, analysis, labels = ctx.choices, ctx.analysis, shown_labels(ctx.bundle)
    key = ("steer-classes", c.model, c.size, analysis.picture.size, tuple(samples()))
    photos, names = _sample_tensors(ctx)
    classes = cached(key, lambda: photo_classes(get_bundle(c.model).model, photos), lambda r: 64 * len(r))
    options = list(dict.fromkeys(classes))
    if len(options) < 2:
        st.info(t("steer_one_class", n=len(classes)))
        return None
    mine = int(analysis.logits[0].argmax())
    keep_valid("iv_toward", options, next((o for o in options if o != mine), options[0]))
    toward = int(st.selectbox(t("steer_toward"), options, key="iv_toward",
                              format_func=lambda v: f"{labels[v]} ({classes.count(v)})"))
    st.caption(t("steer_class_caption", label=labels[toward], k=classes.count(toward),
                 others=len(classes) - classes.count(toward), layer=layer))
    run_key = ("steer-class", c.model, ctx.digest, c.size, layer, toward, scale, names, later)

    def make() -> EditResult:
        model = get_bundle(c.model).model
        direction = class_direction(model, photos, layer, toward, labels=classes)
        return steer(model, analysis.x, layer, direction, scale, target=toward, capture=later)

    with st.spinner(t("iv_running")):
        return cached(run_key, make, _steered_bytes), run_key


def steer_by_gradient(ctx: Context, layer: str, scale: float, target: int, later: tuple[str, ...]) -> Steered:
    """Steering along the gradient of the chosen class's logit with respect to ``layer``'s output at
    this photo, averaged over positions, as long as the photo's mean activation per channel there:
    strength 1 moves the layer as far as its own mean, in the direction the class's score grows fastest."""
    c, analysis, labels = ctx.choices, ctx.analysis, shown_labels(ctx.bundle)
    maps = analysis.activations[layer]
    length = float(maps.mean(dim=(0, 2, 3)).norm()) or 1.0
    st.caption(t("steer_gradient_caption", label=labels[target], layer=layer, length=length))
    run_key = ("steer-gradient", c.model, ctx.digest, c.size, layer, target, scale, later)

    def make() -> EditResult:
        model = get_bundle(c.model).model
        direction = gradient_direction(model, analysis.x, layer, target, length=length)
        return steer(model, analysis.x, layer, direction, scale, target=target, capture=later)

    with st.spinner(t("iv_running")):
        return cached(run_key, make, _steered_bytes), run_key


def steer_by_concept(ctx: Context, layer: str, scale: float, target: int, later: tuple[str, ...]) -> Steered:
    """Steering along a concept's direction (``iv_concept``): the concepts of ``layer`` over the sample
    photos as the Concepts view finds them (shared with it when its settings are the same)."""
    c, analysis, labels = ctx.choices, ctx.analysis, shown_labels(ctx.bundle)
    photos = tuple((hashlib.sha256(data).hexdigest(), data) for data in (read_sample(n) for n in samples()))
    with progress_bar() as bar:
        found: Concepts = get_concepts(c.model, photos, layer, STEER_CONCEPTS, target, c.size, bar)
    order, shares = found.order(), found.shares()
    keep_valid("iv_concept", order, order[0])
    concept = int(st.selectbox(
        t("steer_concept"), order, key="iv_concept",
        format_func=lambda i: t("steer_concept_option", i=order.index(i) + 1, label=labels[target],
                                share=float(shares[i]) if shares is not None else 0.0)))
    # numbered by importance from 1, as the Concepts view's cards are
    st.caption(t("steer_concept_caption", i=order.index(concept) + 1, k=found.k, photos=len(photos), layer=layer))
    run_key = ("steer-concept", c.model, ctx.digest, c.size, layer, concept, scale, target,
               tuple(d for d, _ in photos), later)

    def make() -> EditResult:
        return steer(get_bundle(c.model).model, analysis.x, layer, concept_direction(found, concept), scale,
                     target=target, capture=later)

    with st.spinner(t("iv_running")):
        return cached(run_key, make, _steered_bytes), run_key


def _steered_bytes(r: EditResult) -> int:
    return tensor_bytes([r.logits, r.clean, *r.activations.values(), *r.activations_before.values()])


def show_steer(ctx: Context, layer: str, target: int, later: tuple[str, ...]) -> None:
    """Steering: ``scale`` times a class's or a concept's direction added to ``layer`` at every
    position; the top-5 before and after, the score of the class it points to, and the maps of the
    ``later`` layers with the steering."""
    st.caption(t("steer_intro", compare=t("view_compare"), concepts=t("view_concepts")))
    keep_valid("iv_dir", STEER_DIRECTIONS, "class")
    keep_valid("iv_scale", STEER_SCALES, 1.0)
    left, right = st.columns(2)
    how = left.radio(t("steer_direction"), STEER_DIRECTIONS, key="iv_dir", horizontal=True,
                     format_func=labels_for("steer_dir_"))
    scale = float(right.select_slider(t("steer_scale"), STEER_SCALES, key="iv_scale", format_func=lambda v: f"{v:+g}"))
    if how == "class":
        steered = steer_by_class(ctx, layer, scale, later)
    elif how == "gradient":
        steered = steer_by_gradient(ctx, layer, scale, target, later)
    else:
        steered = steer_by_concept(ctx, layer, scale, target, later)
    if steered is not None:
        result, key = steered
        show_top5_pair(ctx.bundle, result.clean[None], result.logits[None], result.target)
        show_later(ctx, ("iv", *key), later, result.activations, result.activations_before)


def clamp_limit(ctx: Context, clamp_at: str, target: int, percentile: int) -> tuple[float, float, int]:
    """The limit at ``percentile`` of the non-zero |gradient| values at ``clamp_at`` for this photo
    and class, the share of all that gradient's values beyond it (the clipped share) and how many
    values there are. Zeros are left out: behind a ReLU half the gradient is often exactly 0, and a
    limit of 0 would cut the path rather than clip it."""
    c, analysis = ctx.choices, ctx.analysis
    key = ("clamp-limit", c.model, ctx.digest, c.size, clamp_at, target)

    def make() -> Tensor:
        grad = vz.capture_gradients(get_bundle(c.model).model, analysis.x, [clamp_at], target=target)[clamp_at]
        return grad.abs().flatten().sort().values

    return clamp_limit_of(cached(key, make, lambda g: tensor_bytes([g])), percentile)


def show_clamp(ctx: Context, layers: list[str], target: int) -> None:
    """Gradients of the earlier layers with and without a clamp at one layer, and their Grad-CAMs."""
    analysis, bundle, c, digest = ctx.analysis, ctx.bundle, ctx.choices, ctx.digest
    st.divider()
    st.subheader(t("clamp_header"))
    st.markdown(t("clamp_intro"))
    keep_valid("iv_clamp_at", layers, layers[-1])
    left, right = st.columns(2)
    clamp_at = left.selectbox(t("clamp_at"), layers, key="iv_clamp_at")
    st.session_state.setdefault("iv_clip_pct", CLAMP_DEFAULT)
    percentile = right.select_slider(t("clamp_limit"), CLAMP_PERCENTILES, key="iv_clip_pct",
                                     format_func=lambda v: t("clamp_percentile", p=v))
    earlier = [n for n in layers if layers.index(n) < layers.index(clamp_at)]
    if not earlier:
        st.info(t("clamp_no_earlier"))
        return
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
    check_capture(c.model, [*earlier, clamp_at], hw, copies=4)
    limit, clipped, count = clamp_limit(ctx, clamp_at, target, int(percentile))
    st.markdown(t("clamp_clipped", layer=clamp_at, limit=limit, p=percentile, share=clipped, count=count))
    key = ("clamp", c.model, digest, c.size, tuple(earlier), clamp_at, limit, target)

    def make() -> tuple[Any, Any, dict[str, Tensor], dict[str, Tensor]]:
        plain, clamped = vz.clamp_gradients(get_bundle(c.model).model, analysis.x, earlier, clamp_at=clamp_at,
                                            limit=limit, target=target, as_maps=True)
        return plain, clamped, cams_from(plain, hw), cams_from(clamped, hw)

    def size(made: tuple[Any, ...]) -> int:
        plain, clamped, _, _ = made
        return tensor_bytes(x for r in (plain, clamped) for x in [*r.activations.values(), *r.gradients.values()])

    with st.spinner(t("running_backward", label=shown_labels(bundle)[target])):
        plain, clamped, cams, cams_clamped = cached(key, make, size)
    alpha = 0.5
    for name in earlier:
        st.subheader(name)
        g0, g1 = plain.gradients[name], clamped.gradients[name]
        change = float((g1 - g0).abs().mean() / (g0.abs().mean() + 1e-30))
        st.caption(t("clamp_changed", change=change, layer=clamp_at))
        # one colour scale for both, from the plain gradient's 99th percentile: a few extreme values
        # would otherwise turn every other tile white and hide the change
        magnitude = g0.abs().flatten()
        k = max(1, int(CLAMP_COLOUR_PERCENTILE / 100 * magnitude.numel()))
        reach = float(magnitude.kthvalue(k).values) or float(magnitude.max()) or 1.0
        cols = st.columns(2)
        for col, grad, head, which in ((cols[0], g0, "clamp_before", "b"), (cols[1], g1, "clamp_after", "a")):
            png = grid_png(grad, ("clamp", *key, name, which), min(c.channels or CLAMP_CHANNELS, CLAMP_CHANNELS),
                           "index", "RdBu_r", "layer", 2, f"∂y[{target}] / ∂ {name}", 0.0, (-reach, reach))
            col.caption(t(head, layer=clamp_at))
            col.image(png, width="stretch")
        cols = st.columns(2)
        cols[0].image(channel_overlay(analysis.picture, cams[name], alpha, "jet"), caption=t("clamp_cam_before"),
                      width="stretch")
        cols[1].image(channel_overlay(analysis.picture, cams_clamped[name], alpha, "jet"),
                      caption=t("clamp_cam_after", layer=clamp_at), width="stretch")


VIEW = View("intervene", group="change", order=10, label="view_intervene", show=show,
            keys=("iv_layer", "iv_mode", "iv_channels", "iv_k", "iv_dir", "iv_scale", "iv_toward", "iv_concept"))
