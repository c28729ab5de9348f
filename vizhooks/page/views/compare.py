"""Compare: two photos side by side, layer by layer, with their difference and similarity;
activation patching: photo A run with one layer (or every convolution in turn) taken from photo B;
and steering: photo A run with B's mean activation minus A's added at one layer, at a chosen strength."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, cast

import streamlit as st
from PIL import ImageDraw

from vizhooks.analysis import Analysis, compare_maps, image_digest
from vizhooks.hooks.patching import EditResult, PatchResult, mean_direction, steer, sweep
from vizhooks.models.images import to_tensor
from vizhooks.page.present import chart_for_screen
from vizhooks.page.results import cached, conv_infos, get_analysis, get_bundle, grid_png, tensor_bytes
from vizhooks.page.sources import PHOTO_SOURCES, photo_bytes, photo_picker
from vizhooks.page.texts import nt, sentences, t
from vizhooks.page.views import View
from vizhooks.page.widgets import (
    from_link,
    keep_valid,
    labels_for,
    say_link_refused,
    select_all,
    shown_labels,
    top5_bars,
)

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context

#: What of a layer is patched, as the link names it (``pt_part``; urlstate checks a link against it).
PATCH_PARTS = ("whole", "channels", "region")
#: The region's rows and columns in percent of the map, when the link gives none.
DEFAULT_SPAN = (25, 75)
#: The steering strengths the slider offers (``sr_scale``; urlstate checks a link against them): 1 gives
#: each channel of the layer B's mean, 0 changes nothing, a negative one pushes A away from B.
STEER_SCALES = (-2.0, -1.5, -1.0, -0.5, 0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0)


def show(ctx: Context) -> None:
    analysis, c, digest = ctx.analysis, ctx.choices, ctx.digest
    st.markdown(t("compare_intro"))
    left, right = st.columns([1, 2])
    left.radio(t("compare_source"), PHOTO_SOURCES, key="compare_source", horizontal=True,
               format_func=labels_for("source_"))
    source = st.session_state["compare_source"]
    photo_picker(source, right, sample_key="compare", prefix="compare_", sample_label="compare_sample")
    data = photo_bytes(source, sample_key="compare", prefix="compare_")
    if data is None:
        st.info(t("compare_none"))
        return
    digest_b = image_digest(data)
    with st.spinner(nt("running", len(c.layers), model=c.model)):
        other = get_analysis(c.model, digest_b, data, c.size, c.layers, c.what)
    a_col, b_col = st.columns(2)
    a_col.image(analysis.picture, caption=t("compare_first"))
    b_col.image(other.picture, caption=t("compare_second"))
    show_patch(ctx, other, digest_b)
    show_steer(ctx, other, digest_b)
    for name in [n for n in c.layers if n in analysis.activations and n in other.activations]:
        pair = compare_maps(analysis.activations[name], other.activations[name])
        key = ("compare", c.model, digest, digest_b, c.size, c.what, name)
        st.subheader(name)
        st.caption(sentences(t("compare_caption", similarity=pair.similarity),
                             t("compare_resized") if pair.resized else ""))
        cols = st.columns(3)
        shown = c.channels or int(pair.a.shape[1])
        sides = ((cols[0], pair.a, "a", "compare_first"), (cols[1], pair.b, "b", "compare_second"))
        for col, tensor, tag, head in sides:
            col.caption(t(head))
            col.image(grid_png(tensor, (*key, tag), shown, "index", c.cmap, "layer", c.columns, name, None, pair.clim))
        cols[2].caption(t("compare_difference"))
        cols[2].image(grid_png(pair.b - pair.a, (*key, "diff"), shown, "index", "RdBu_r", "layer", c.columns,
                               f"B − A · {name}", 0.0))


def span_box(rows: tuple[int, int], cols: tuple[int, int], hw: tuple[int, int]) -> tuple[int, int, int, int]:
    """Rows and columns in percent of a map as ``(top, left, bottom, right)`` of an ``hw`` map
    (end-exclusive), at least one position wide, so one box fits every layer of a sweep."""
    def edges(span: tuple[int, int], size: int) -> tuple[int, int]:
        start = min(math.floor(span[0] * size / 100), size - 1)
        return start, max(start + 1, math.ceil(span[1] * size / 100))

    (top, bottom), (left, right) = edges(rows, hw[0]), edges(cols, hw[1])
    return top, left, bottom, right


def _patch_runs(ctx: Context, other: Analysis, digest_b: str, layers: list[str], part: str,
                channels: tuple[int, ...], span: tuple[tuple[int, int], tuple[int, int]]) -> list[PatchResult]:
    """The patch at each of ``layers`` (A from ``ctx``, B = ``other``), one sweep per map size and
    channel count (a region in percent becomes a box per map size), cached for every session."""
    c, analysis = ctx.choices, ctx.analysis
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
    key = ("patch", c.model, ctx.digest, digest_b, c.size, tuple(layers), part, channels, span)

    def make() -> list[PatchResult]:
        bundle = get_bundle(c.model)
        source = other.x
        if other.picture.size != analysis.picture.size:  # B squashed to A's size
            source = to_tensor(other.picture.resize(analysis.picture.size), bundle.input.mean, bundle.input.std)
        infos = {i.name: i for i in conv_infos(c.model, hw)}
        groups: dict[tuple[Any, ...], list[str]] = {}
        for name in layers:
            info = infos.get(name)
            out_hw = info.out_hw if info and info.out_hw else tuple(analysis.activations[name].shape[-2:])
            count = (info.out_channels if info and info.out_channels else int(analysis.activations[name].shape[1]))
            groups.setdefault((out_hw, count), []).append(name)
        found: dict[str, PatchResult] = {}
        for (out_hw, count), names in groups.items():
            chosen = [ch for ch in channels if ch < count] if part == "channels" else None
            if chosen == []:
                continue  # none of the chosen channels exists at this width
            region = span_box(*span, out_hw) if part == "region" else None
            for r in sweep(bundle.model, analysis.x, source, names, channels=chosen, region=region):
                found[r.layer] = r
        return [found[name] for name in layers if name in found]

    return cached(key, make, lambda runs: tensor_bytes(x for r in runs for x in (r.logits, r.clean, r.source)))


def show_patch(ctx: Context, other: Analysis, digest_b: str) -> None:
    """Patching B into A: the chosen layer's top-5 and maps, and with the sweep the restored fraction
    of every convolution as a line across the network."""
    analysis, bundle, c = ctx.analysis, ctx.bundle, ctx.choices
    st.divider()
    st.subheader(t("patching_header"))
    if not st.toggle(t("patching_on"), key="pt_on", help=t("patching_intro")):
        st.caption(t("patching_intro"))
        return
    layers = [n for n in c.layers if n in analysis.activations]
    keep_valid("pt_layer", layers, layers[0])
    keep_valid("pt_part", PATCH_PARTS, "whole")
    left, mid = st.columns(2)
    layer = left.selectbox(t("patching_layer"), layers, key="pt_layer")
    part = mid.radio(t("patching_part"), PATCH_PARTS, key="pt_part", horizontal=True,
                     format_func=labels_for("patching_part_"))
    swept = st.toggle(t("patching_sweep"), key="pt_sweep")
    count = int(analysis.activations[layer].shape[1])
    channels: tuple[int, ...] = ()
    span = (DEFAULT_SPAN, DEFAULT_SPAN)
    if part == "channels":
        asked = st.session_state.get("pt_channels", list(range(min(4, count))))
        kept = [ch for ch in asked if ch < count]
        if from_link("pt_channels", asked) and kept != asked:
            say_link_refused("pt_channels", [ch for ch in asked if ch >= count])
        st.session_state["pt_channels"] = kept
        channels = tuple(sorted(st.multiselect(t("patching_channels"), list(range(count)), key="pt_channels",
                                               select_all=select_all())))
        if not channels:
            st.info(t("patching_no_channels"))
            return
    elif part == "region":
        st.session_state.setdefault("pt_rows", DEFAULT_SPAN)
        st.session_state.setdefault("pt_cols", DEFAULT_SPAN)
        rows_col, cols_col = st.columns(2)
        # a range slider: the session state holds a pair, which Streamlit's types cannot see
        rows = cast(tuple[int, int], rows_col.slider(t("patching_rows"), 0, 100, step=5, key="pt_rows"))
        cols = cast(tuple[int, int], cols_col.slider(t("patching_cols"), 0, 100, step=5, key="pt_cols"))
        span = ((int(rows[0]), max(int(rows[1]), int(rows[0]) + 5)),
                (int(cols[0]), max(int(cols[1]), int(cols[0]) + 5)))
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
    convs = [i.name for i in conv_infos(c.model, hw)] if swept else []
    chosen = [*convs, *([layer] if layer not in convs else [])]
    if other.picture.size != analysis.picture.size:
        st.caption(t("patching_resized"))
    with st.spinner(nt("patching_running", len(chosen))):
        runs = _patch_runs(ctx, other, digest_b, chosen, part, channels, span)
    by_layer = {r.layer: r for r in runs}
    labels = shown_labels(bundle)
    if swept:
        show_sweep([by_layer[name] for name in convs if name in by_layer], labels)
    result = by_layer.get(layer)
    if result is None:  # the chosen channels are wider than this layer
        st.info(t("patching_no_channels"))
        return
    if math.isnan(result.restored):
        st.info(t("patching_same"))
    else:
        st.metric(t("patching_metric", layer=layer, label=labels[result.target]), f"{result.restored:.0%}")
    heads = (("patching_top_a", result.clean), ("patching_top_b", result.source),
             ("patching_top_patched", result.logits))
    for col, (head, logits) in zip(st.columns(3), heads, strict=True):
        col.markdown(f"**{t(head, layer=layer)}**")
        top5_bars(col, logits[None], labels)
    show_patched_maps(ctx, other, digest_b, layer, part, channels, span)


def show_sweep(runs: list[PatchResult], labels: list[str]) -> None:
    """The restored fraction per layer, from the input to the output, as a line chart."""
    import altair as alt
    import pandas as pd

    if not runs:
        return
    names = [r.layer for r in runs]
    frame = pd.DataFrame({"layer": names, "restored": [r.restored for r in runs]})
    x_title, y_title = t("patching_chart_x"), t("patching_chart_y")
    chart = alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X("layer:N", sort=names, title=x_title), y=alt.Y("restored:Q", title=y_title),
        tooltip=["layer", alt.Tooltip("restored:Q", format=".0%")])
    st.altair_chart(chart_for_screen(chart), width="stretch")
    st.caption(t("patching_chart_caption", label=labels[runs[0].target]))


def show_patched_maps(ctx: Context, other: Analysis, digest_b: str, layer: str, part: str, channels: tuple[int, ...],
                      span: tuple[tuple[int, int], tuple[int, int]]) -> None:
    """A's maps of the layer, B's, and the mix A runs on after the patch (when both have one size)."""
    analysis, c = ctx.analysis, ctx.choices
    a, b = analysis.activations[layer], other.activations.get(layer)
    if b is None or a.shape != b.shape:
        return
    mixed = b.clone()
    box = None
    if part == "channels":
        mixed = a.clone()
        mixed[:, list(channels)] = b[:, list(channels)]
    elif part == "region":
        box = top, left, bottom, right = span_box(*span, (int(a.shape[-2]), int(a.shape[-1])))
        mixed = a.clone()
        mixed[..., top:bottom, left:right] = b[..., top:bottom, left:right]
        picture = analysis.picture.copy()
        width, height = picture.size
        on_photo = span_box(*span, (height, width))
        ImageDraw.Draw(picture).rectangle((on_photo[1], on_photo[0], on_photo[3] - 1, on_photo[2] - 1),
                                          outline=(255, 0, 0), width=3)
        st.image(picture, caption=t("patching_box_caption"))
    st.caption(t("patching_maps", layer=layer))
    key = ("patch-maps", c.model, ctx.digest, digest_b, c.size, c.what, layer, part, channels, span)
    shown = c.channels or int(a.shape[1])
    cols = st.columns(3)
    for col, tensor, tag in ((cols[0], a, "a"), (cols[1], b, "b"), (cols[2], mixed, "mixed")):
        col.image(grid_png(tensor, (*key, tag), shown, "index", c.cmap, "layer", c.columns, layer, None, box=box))


def steered(ctx: Context, other: Analysis, digest_b: str, layer: str, scale: float) -> EditResult:
    """A with ``scale`` times (B's mean activation at ``layer`` minus A's) added at every position,
    measured on B's top-1 class; cached for every session."""
    c, analysis = ctx.choices, ctx.analysis
    key = ("steer", c.model, ctx.digest, digest_b, c.size, layer, scale)

    def make() -> EditResult:
        model = get_bundle(c.model).model
        direction = mean_direction(model, other.x, analysis.x, layer)
        return steer(model, analysis.x, layer, direction, scale, target=int(other.logits[0].argmax()))

    return cached(key, make, lambda r: tensor_bytes([r.logits, r.clean]))


def show_steer(ctx: Context, other: Analysis, digest_b: str) -> None:
    """Steering A towards B at one layer: A's top-5 before and after, and B's class's score."""
    analysis, bundle, c = ctx.analysis, ctx.bundle, ctx.choices
    st.divider()
    st.subheader(t("patching_steer_header"))
    if not st.toggle(t("patching_steer_on"), key="sr_on", help=t("patching_steer_intro")):
        st.caption(t("patching_steer_intro"))
        return
    st.caption(t("patching_steer_intro"))
    layers = [n for n in c.layers if n in analysis.activations]
    keep_valid("sr_layer", layers, layers[-1])
    keep_valid("sr_scale", STEER_SCALES, 1.0)
    left, right = st.columns(2)
    layer = left.selectbox(t("patching_steer_layer"), layers, key="sr_layer")
    scale = float(right.select_slider(t("patching_steer_scale"), STEER_SCALES, key="sr_scale",
                                      format_func=lambda v: f"{v:+g}"))
    with st.spinner(t("patching_steer_running", layer=layer)):
        result = steered(ctx, other, digest_b, layer, scale)
    labels = shown_labels(bundle)
    before, after = float(result.clean[result.target]), float(result.logits[result.target])
    st.metric(t("patching_steer_metric", label=labels[result.target]), f"{after:.3f}", delta=f"{after - before:+.3f}")
    heads = (("patching_top_a", result.clean), ("patching_steer_after", result.logits))
    for col, (head, logits) in zip(st.columns(2), heads, strict=True):
        col.markdown(f"**{t(head, layer=layer, scale=f'{scale:+g}')}**")
        top5_bars(col, logits[None], labels)


VIEW = View("compare", group="change", order=20, label="view_compare", show=show,
            keys=("pt_on", "pt_layer", "pt_part", "pt_channels", "pt_rows", "pt_cols", "pt_sweep",
                  "sr_on", "sr_layer", "sr_scale"))
