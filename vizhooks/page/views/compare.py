"""Compare: two photos side by side, layer by layer, with their difference and similarity."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.analysis import compare_maps, image_digest
from vizhooks.page.results import get_analysis, grid_png
from vizhooks.page.sources import PHOTO_SOURCES, photo_bytes, photo_picker
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import labels_for

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


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
    with st.spinner(t("running", model=c.model, n=len(c.layers))):
        other = get_analysis(c.model, digest_b, data, c.size, c.layers, c.what)
    a_col, b_col = st.columns(2)
    a_col.image(analysis.picture, caption=t("compare_first"))
    b_col.image(other.picture, caption=t("compare_second"))
    for name in [n for n in c.layers if n in analysis.activations and n in other.activations]:
        pair = compare_maps(analysis.activations[name], other.activations[name])
        key = ("compare", c.model, digest, digest_b, c.size, c.what, name)
        st.subheader(name)
        st.caption(t("compare_caption", similarity=pair.similarity)
                   + (" " + t("compare_resized") if pair.resized else ""))
        cols = st.columns(3)
        shown = c.channels or int(pair.a.shape[1])
        sides = ((cols[0], pair.a, "a", "compare_first"), (cols[1], pair.b, "b", "compare_second"))
        for col, tensor, tag, head in sides:
            col.caption(t(head))
            col.image(grid_png(tensor, (*key, tag), shown, "index", c.cmap, "layer", c.columns, name, None, pair.clim))
        cols[2].caption(t("compare_difference"))
        cols[2].image(grid_png(pair.b - pair.a, (*key, "diff"), shown, "index", "RdBu_r", "layer", c.columns,
                               f"B − A · {name}", 0.0))


VIEW = View("compare", group="change", order=20, label="view_compare", show=show)
