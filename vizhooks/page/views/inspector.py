"""Inspector: one channel of one layer, large and over the picture."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.analysis import layer_stats
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import keep_below, keep_valid, show_excitation
from vizhooks.render.figures import channel_image, channel_overlay

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
    left, right = st.columns(2)
    left.image(channel_image(one, analysis.picture.size, c.cmap),
               caption=t("insp_large", layer=layer, channel=int(channel), h=one.shape[0], w=one.shape[1]))
    right.image(channel_overlay(analysis.picture, one, alpha, c.cmap), caption=t("insp_overlay", alpha=alpha))
    s = layer_stats(one[None])
    st.caption(t("insp_range", min=s.min, mean=s.mean, max=s.max))
    show_excitation(c.model, layer, int(channel), st.container())


VIEW = View("inspector", group="look", order=30, label="view_inspector", show=show,
            keys=("insp_layer", "insp_channel"))
