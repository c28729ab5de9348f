"""Grad-CAM: where each chosen layer looked for a class, over the picture."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.page.results import get_gradients
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, layer_columns, shown_labels
from vizhooks.render.figures import channel_overlay, image_to_png

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, bundle, c, digest = ctx.analysis, ctx.bundle, ctx.choices, ctx.digest
    target = class_picker(bundle, analysis)
    alpha = st.slider(t("cam_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="cam_alpha", persist_state="session")
    with st.spinner(t("running_backward", label=shown_labels(bundle)[target])):
        _, cams = get_gradients(c.model, (digest, c.size), c.layers, target, analysis)
    st.caption(t("gradcam_intro", label=shown_labels(bundle)[target], index=target))
    for _, name in layer_columns([n for n in c.layers if n in cams]):
        overlay = channel_overlay(analysis.picture, cams[name], alpha, "jet")
        st.image(overlay, caption=t("cam_caption", layer=name, label=shown_labels(bundle)[target]))
        st.download_button(t("download_png"), data=image_to_png(overlay), file_name=f"{name}-gradcam.png",
                           mime="image/png", key=f"download_cam_{name}", on_click="ignore",
                           icon=":material/download:")


VIEW = View("gradcam", group="explain", order=10, label="view_gradcam", show=show)
