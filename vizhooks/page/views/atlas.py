"""Channel atlas: what a channel looks for, as the photos that excite it most (an operator's atlas,
else the one shipped with the samples) and as an image optimised to excite it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.page.folders import atlas_dir, shipped_atlas_dir
from vizhooks.page.results import atlases_for, excited_image, get_analysis
from vizhooks.page.sources import photo_bytes
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import keep_below, keep_valid, progress_bar, show_excitation
from vizhooks.render.figures import channel_overlay

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, c, digest = ctx.analysis, ctx.choices, ctx.digest
    st.markdown(t("atlas_intro"))
    atlases = atlases_for(c.model, str(atlas_dir())) or atlases_for(c.model, str(shipped_atlas_dir()))
    if not atlases:
        st.info(t("atlas_none", model=c.model, folder=str(atlas_dir())))
    atlas = atlases[0] if atlases else None
    choices = list(atlas.layers if atlas else c.layers)
    keep_valid("atlas_layer", choices, choices[0])
    left, right = st.columns(2)
    layer = left.selectbox(t("insp_layer"), choices, key="atlas_layer")
    act = analysis.activations.get(layer)
    if act is None:  # a layer of the atlas the sidebar did not choose: capture it for this photo
        data = photo_bytes(c.source)
        assert data is not None  # the analysis above was made from it
        act = get_analysis(c.model, digest, data, c.size, (layer,), "output").activations[layer]
    count = int(act.shape[1])
    keep_below("atlas_channel", count)
    channel = int(right.number_input(t("insp_channel"), min_value=0, max_value=count - 1, step=1,
                                     key="atlas_channel"))
    photo, excite = st.columns(2)
    photo.image(channel_overlay(analysis.picture, act[0, channel], 0.6, c.cmap),
                caption=t("atlas_photo", layer=layer, channel=channel))
    show_excitation(c.model, layer, channel, excite)
    if atlas is not None:
        st.subheader(t("atlas_top", n=len(atlas.top(layer, channel))))
        m = atlas.manifest
        st.caption(t("atlas_source", folder=m.get("folder", "?"), images=m.get("images", "?"),
                     weights=t("atlas_random") if m.get("weights") == "random" else m.get("weights", "?")))
        tops = atlas.top(layer, channel)
        for row in range(0, len(tops), 3):
            for col, ex in zip(st.columns(3), tops[row:row + 3], strict=False):
                col.image(str(ex.crop), caption=t("atlas_exemplar", score=ex.score, name=Path(ex.path).name))
    st.divider()
    if st.button(t("fv_grid_button", n=16), key="fv_grid"):
        first = min(channel, max(count - 16, 0))
        chosen = tuple(range(first, min(first + 16, count)))
        with progress_bar() as bar:
            images = excited_image(c.model, (layer,), chosen, bar)
        for row in range(0, len(images), 8):
            cols = st.columns(8)
            for col, ch, image in zip(cols, chosen[row:row + 8], images[row:row + 8], strict=False):
                col.image(image, caption=str(ch))


VIEW = View("atlas", group="look", order=50, label="view_atlas", show=show,
            keys=("atlas_layer", "atlas_channel"))
