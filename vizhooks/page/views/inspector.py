"""Inspector: one channel of one layer, large and over the picture."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import streamlit as st

from vizhooks.analysis import layer_stats
from vizhooks.errors import CodedError
from vizhooks.page.errors import reason
from vizhooks.page.results import get_conditional_heatmap, get_relevance
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, keep_below, keep_valid, show_excitation, shown_labels
from vizhooks.render.figures import channel_image, channel_overlay, signed_overlay

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, c = ctx.analysis, ctx.choices
    layers = [name for name in c.layers if name in analysis.activations]
    keep_valid("insp_layer", layers, layers[0])
    layer = st.selectbox(t("insp_layer"), layers, key="insp_layer")
    act = analysis.activations[layer][0]
    channels = act.shape[0]
    keep_below("insp_channel", channels)
    channel = st.number_input(t("insp_channel"), min_value=0, max_value=channels - 1, step=1, key="insp_channel")
    alpha = st.slider(t("insp_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="insp_alpha")
    one = act[int(channel)]
    target = _relevance_target(ctx)
    left, right, *where = st.columns(2 if target is None else 3)
    # three pictures side by side share the row, so they are drawn at one size
    width: Literal["content", "stretch"] = "content" if target is None else "stretch"
    left.image(channel_image(one, analysis.picture.size, c.cmap), width=width,
               caption=t("insp_large", layer=layer, channel=int(channel), h=one.shape[0], w=one.shape[1]))
    right.image(channel_overlay(analysis.picture, one, alpha, c.cmap), caption=t("insp_overlay", alpha=alpha),
                width=width)
    s = layer_stats(one[None])
    st.caption(t("insp_range", min=s.min, mean=s.mean, max=s.max))
    if target is not None:
        _relevance(ctx, layer, int(channel), channels, target, alpha, where[0])
    show_excitation(c.model, layer, int(channel), st.container())


def _relevance_target(ctx: Context) -> int | None:
    """With the channel order "most relevant to a class": the class (the person's pick, default the
    top-1); None for the other orders and for layer inputs (relevance is measured at outputs)."""
    if ctx.choices.order != "relevance":
        return None
    target = class_picker(ctx.bundle, ctx.analysis)
    if ctx.choices.what != "output":
        st.caption(t("relevance_output_only"))
        return None
    return target


def _relevance(ctx: Context, layer: str, channel: int, channels: int, target: int, alpha: float,
               slot: Any) -> None:
    """The channel's Taylor relevance rank and share of the layer's total (as the grids' order), and in
    ``slot`` its LRP conditional heatmap over the photo: where it found its evidence for the class."""
    c = ctx.choices
    key = (ctx.digest, c.size)
    label = shown_labels(ctx.bundle)[target]
    found = get_relevance(c.model, key, layer, target, ctx.analysis)
    if found.scores.numel() == channels:  # a layer whose output is a map of these channels
        st.markdown(t("relpage_rank", channel=channel, label=label, index=target, rank=found.rank(channel),
                      total=channels, score=float(found.scores[channel]), share=found.share(channel)))
    try:
        heat = get_conditional_heatmap(c.model, key, layer, channel, target, ctx.analysis)
    except CodedError as exc:  # attention tokens or a layer without maps: one sentence, the page goes on
        slot.info(t("relpage_no_heatmap") if exc.code == "relevance_lrp_tokens" else reason(exc))
        return
    slot.image(signed_overlay(ctx.analysis.picture, heat, alpha), width="stretch",
               caption=t("relpage_heatmap", channel=channel, label=label))


VIEW = View("inspector", group="look", order=30, label="view_inspector", show=show,
            keys=("insp_layer", "insp_channel"))
