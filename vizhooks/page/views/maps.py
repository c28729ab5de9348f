"""Feature maps: each chosen layer's channels as a grid, with its statistics and downloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.models.layers import architecture_layers
from vizhooks.page.results import grid_png, maps_png
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import layer_columns, layer_where, progress_bar
from vizhooks.render.export import npz_bytes

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, c, digest = ctx.analysis, ctx.choices, ctx.digest
    layers = [name for name in c.layers if name in analysis.activations]
    where = {info.name: layer_where(info) for info in architecture_layers(c.model)}
    with progress_bar(show=len(layers) > 6) as bar:  # a few grids draw faster than a bar updates
        for i, name in layer_columns(layers):
            if bar is not None:
                bar.progress(i / len(layers), text=t("rendering", i=i + 1, n=len(layers), name=name))
            stats = analysis.stats(name)  # worked out once per (shared) analysis
            total = stats.channels
            shown = min(c.channels or total, total)
            key = ("maps", c.model, digest, c.size, c.what, name)
            if c.norm == "channel":  # the common case: a colormap change only swaps a PNG palette
                png = maps_png(analysis.activations[name], key, c.channels, c.order, c.columns, name, c.cmap)
            else:
                png = grid_png(analysis.activations[name], key, c.channels, c.order, c.cmap, c.norm, c.columns, name)
            st.image(png)  # the grid right under its heading, its numbers under it: the first one on the first screen
            st.caption(t("layer_caption", where=where.get(name, ""), what=t(f"what_{c.what}").split(" ")[0],
                         shape="×".join(map(str, stats.shape)), min=stats.min, mean=stats.mean, max=stats.max,
                         shown=t("shown_some", shown=shown, total=total) if shown < total
                         else t("shown_all", total=total)))
            st.download_button(t("download_png"), data=png, file_name=f"{name}.png", mime="image/png",
                               key=f"download_{name}", on_click="ignore", icon=":material/download:")
    # after the grids: the first one starts on the first screen
    st.download_button(t("download_npz"), data=lambda: npz_bytes(analysis.x, analysis.activations),
                       file_name=f"vizhooks-{c.model}-{digest[:8]}.npz", mime="application/octet-stream",
                       key="download_npz", on_click="ignore", help=t("download_npz_help"))


VIEW = View("maps", group="look", order=10, label="view_maps", show=show)
