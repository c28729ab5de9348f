"""Feature maps: each chosen layer's channels as a grid, with its statistics and downloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.models.layers import architecture_layers
from vizhooks.page.results import Ranked, get_relevance, grid_png, maps_png, ranked
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, layer_columns, progress_bar, shown_labels
from vizhooks.render.export import npz_bytes

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context


def show(ctx: Context) -> None:
    analysis, c, digest = ctx.analysis, ctx.choices, ctx.digest
    layers = [name for name in c.layers if name in analysis.activations]
    # where each layer sits and its resolution for this photo's input (not square for most photos)
    hw = (int(analysis.x.shape[-2]), int(analysis.x.shape[-1]))
    where = {info.name: info.where for info in architecture_layers(c.model, hw)}
    target = _relevance_target(ctx)
    with progress_bar(show=len(layers) > 6) as bar:  # a few grids draw faster than a bar updates
        for i, name in layer_columns(layers):
            if bar is not None:
                bar.progress(i / len(layers), text=t("rendering", i=i + 1, n=len(layers), name=name))
            stats = analysis.stats(name)  # worked out once per (shared) analysis
            total = stats.channels
            shown = min(c.channels or total, total)
            key: tuple = ("maps", c.model, digest, c.size, c.what, name)
            order, by_relevance = c.grid_order, None
            if target is not None:
                with st.spinner(t("relevance_running", layer=name)):
                    by_relevance = _ranked(ctx, name, target)
                if by_relevance is not None:
                    key = (*key, "relevance", target)
            if c.norm == "channel":  # the common case: a colormap change only swaps a PNG palette
                png = maps_png(analysis.activations[name], key, c.channels, order, c.columns, name, c.cmap,
                               _ranked=by_relevance)
            else:
                png = grid_png(analysis.activations[name], key, c.channels, order, c.cmap, c.norm, c.columns, name,
                               _ranked=by_relevance)
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


def _relevance_target(ctx: Context) -> int | None:
    """With the order "most relevant to a class": the class (the person's pick, default the top-1)
    and a one-line note of class and method; None for the other orders."""
    if ctx.choices.order != "relevance":
        return None
    target = class_picker(ctx.bundle, ctx.analysis)
    label = shown_labels(ctx.bundle)[target]
    if ctx.choices.what != "output":
        st.caption(t("relevance_output_only"))
        return None
    st.caption(t("relevance_order_note", label=label, index=target))
    return target


def _ranked(ctx: Context, layer: str, target: int) -> Ranked | None:
    """The layer's channels by Taylor relevance for ``target`` and each one's signed score; None where the
    scores do not match the grid's channels (a layer whose output is no map)."""
    found = get_relevance(ctx.choices.model, (ctx.digest, ctx.choices.size), layer, target, ctx.analysis)
    if found.scores.numel() != ctx.analysis.activations[layer].shape[1]:
        return None
    return ranked(found)


VIEW = View("maps", group="look", order=10, label="view_maps", show=show)
