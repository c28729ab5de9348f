"""Gradients: ∂ (a class's logit) / ∂ each chosen layer's activations, as grids."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.analysis import layer_stats
from vizhooks.page.results import get_gradients, grid_png
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, layer_columns, shown_labels

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, bundle, c, digest = ctx.analysis, ctx.bundle, ctx.choices, ctx.digest
    target = class_picker(bundle, analysis)
    with st.spinner(t("running_backward", label=shown_labels(bundle)[target])):
        result, _ = get_gradients(c.model, (digest, c.size), c.layers, target, analysis)
    st.caption(t("gradients_intro", label=shown_labels(bundle)[target], index=target))
    for _, name in layer_columns([n for n in c.layers if n in result.gradients]):
        grad = result.gradients[name]
        s = layer_stats(grad)
        key = ("grad", c.model, digest, c.size, target, name)
        png = grid_png(grad, key, c.channels, c.order, "RdBu_r", "layer", c.columns, f"∂y[{target}] / ∂ {name}", 0.0)
        st.caption(t("grad_caption", shape="×".join(map(str, s.shape)), min=s.min, max=s.max))
        st.image(png)
        st.download_button(t("download_png"), data=png, file_name=f"{name}-gradient.png", mime="image/png",
                           key=f"download_grad_{name}", on_click="ignore", icon=":material/download:")


VIEW = View("gradients", group="hood", order=10, label="view_gradients", show=show)
