"""Overview: the whole network for this photo in one picture, every conv (every block of an
attention model) in network order with its strongest channels, the stages marked, the top classes
at the end; any layer and channel of it opens in the Channel inspector."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.network.overview import stages
from vizhooks.page.results import get_overview, overview_picture
from vizhooks.page.texts import nt, t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, keep_valid, shown_labels, top5

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context

CHANNEL_CHOICES = (4, 8, 12, 16)
#: More layers than this are shown one stage (one resolution) at a time, so a row stays readable.
MAX_ROWS = 60


def show(ctx: Context) -> None:
    c = ctx.choices
    st.markdown(t("ov_intro"))
    st.session_state.setdefault("ov_k", 8)
    k = int(st.select_slider(t("ov_k"), CHANNEL_CHOICES, key="ov_k", help=t("ov_k_help")))
    target = _relevance_target(ctx)
    with st.spinner(t("ov_running", model=c.model)):
        ov = get_overview(c.model, (ctx.digest, c.size), k, ctx.analysis, target)
    rows, first = ov.rows, 0
    parts = stages(rows)
    if len(rows) > MAX_ROWS:  # DenseNet-121's 120 convs: one stage at a time
        labels = {i: nt("ov_stage", b - a, n=i + 1, h=rows[a].hw[0], w=rows[a].hw[1], layers=b - a)
                  for i, (a, b) in enumerate(parts)}
        keep_valid("ov_stage", list(labels), 0)
        stage = int(st.selectbox(t("ov_stage_pick"), list(labels), key="ov_stage", format_func=labels.__getitem__))
        first, end = parts[stage]
        rows = rows[first:end]
        st.caption(t("ov_paged", total=len(ov.rows), stages=len(parts), most=MAX_ROWS))
    top = tuple(top5(ov.logits, shown_labels(ctx.bundle)))
    key = ("overview", c.model, ctx.digest, c.size, k, first, target)
    st.image(overview_picture(tuple(rows), key, top, c.cmap),
             caption=t("ov_caption", layers=len(ov.rows), stages=len(parts), k=k) if len(parts) > 1
             else t("ov_caption_one_stage", layers=len(ov.rows), k=k), width="stretch")
    _open_in_inspector(rows)


def _relevance_target(ctx: Context) -> int | None:
    """With the channel order "most relevant to a class": the class (the person's pick, default the
    top-1) and a one-line note of class and method; None for the other orders (strongest by mean)."""
    if ctx.choices.order != "relevance":
        return None
    target = class_picker(ctx.bundle, ctx.analysis)
    st.caption(t("relpage_overview_note", label=shown_labels(ctx.bundle)[target], index=target))
    return target


def _open_in_inspector(rows: list) -> None:
    """A layer and one of its shown channels, and the button that opens them in the inspector."""
    st.subheader(t("ov_open_header"))
    left, middle, right = st.columns([3, 2, 3], vertical_alignment="bottom")  # room for the button's label
    by_name = {row.name: row for row in rows}
    keep_valid("ov_layer", list(by_name), rows[0].name)
    layer = left.selectbox(t("ov_layer"), list(by_name), key="ov_layer")
    picked = list(by_name[layer].picked)
    keep_valid("ov_channel", picked, picked[0])
    channel = middle.selectbox(t("ov_channel"), picked, key="ov_channel", format_func=lambda ch: f"#{ch}")
    right.button(t("ov_open"), key="ov_open", on_click=_open, args=(layer, int(channel)),
                 icon=":material/zoom_in:", width="stretch")


def _open(layer: str, channel: int) -> None:
    """Runs before the next run draws anything: the layer joins the chosen layers, the inspector opens."""
    layers = list(st.session_state.get("layers", []))
    if layer not in layers:
        st.session_state["layers"] = [*layers, layer]
    st.session_state["insp_layer"] = layer
    st.session_state["insp_channel"] = channel
    st.session_state["view"] = "inspector"


VIEW = View("overview", group="look", order=20, label="view_overview", show=show, keys=("ov_stage",))
