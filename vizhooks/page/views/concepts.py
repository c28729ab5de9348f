"""Concepts: what a layer has learned across many photos (CRAFT), one card per concept ordered by its
importance for a class: its best crops, its share, its map over this photo, and the top-5 without it."""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.interpret.concepts import ablate, concept_maps
from vizhooks.models.images import InvalidImageError, load_image
from vizhooks.models.layers import block_layers
from vizhooks.page.errors import reason
from vizhooks.page.results import get_concepts
from vizhooks.page.sources.sample import read_sample, samples
from vizhooks.page.sources.upload import PHOTO_MB
from vizhooks.page.texts import t
from vizhooks.page.views import View
from vizhooks.page.widgets import class_picker, keep_valid, progress_bar, shown_labels, top5_bars
from vizhooks.render.figures import channel_overlay

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Context

#: At most this many uploaded photos (the issue's bound: a discovery stays a classroom wait).
MAX_PHOTOS = 60
TOP_CROPS = 6


def _photos() -> list[tuple[str, bytes]]:
    """(digest, bytes) of the chosen photos: the sample photos or the uploaded ones (at most 60)."""
    where = st.radio(t("concepts_photos"), ("samples", "upload"), key="cc_photos", horizontal=True,
                     format_func=lambda v: t("concepts_samples") if v == "samples" else t("concepts_upload"))
    if where == "samples":
        chosen = [read_sample(name) for name in samples()]
    else:
        files = st.file_uploader(t("concepts_upload"), type=["jpg", "jpeg", "png", "webp"], key="cc_upload",
                                 accept_multiple_files=True, max_upload_size=PHOTO_MB) or []
        if len(files) > MAX_PHOTOS:
            st.info(t("concepts_too_many", n=MAX_PHOTOS))
        return _readable([(f.name, f.getvalue()) for f in files[:MAX_PHOTOS]])
    return [(hashlib.sha256(data).hexdigest(), data) for data in chosen]


def _readable(files: list[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    """(digest, bytes) of the uploads that are pictures; each other one is a warning naming it, and the
    discovery runs on the rest. Each upload is read once a session (kept by digest: None or its reason)."""
    checked = st.session_state.setdefault("_cc_checked", {})
    readable = []
    for name, data in files:
        digest = hashlib.sha256(data).hexdigest()
        if digest not in checked:
            try:
                load_image(data)
                checked[digest] = None
            except InvalidImageError as exc:  # kept without its traceback, whose frames hold every upload's bytes
                checked[digest] = exc.with_traceback(None)
        if checked[digest] is None:
            readable.append((digest, data))
        else:
            st.warning(t("concepts_not_image", file=name, reason=reason(checked[digest])))
    return readable


def show(ctx: Context) -> None:
    analysis, bundle, c = ctx.analysis, ctx.bundle, ctx.choices
    st.markdown(t("concepts_intro"))
    photos = _photos()
    layers = [info.name for info in block_layers(bundle.model)] or list(c.layers)
    keep_valid("cc_layer", layers, layers[len(layers) * 3 // 4 - 1] if len(layers) > 1 else layers[0])
    left, right = st.columns(2)
    layer = left.selectbox(t("concepts_layer"), layers, key="cc_layer")
    k = int(right.number_input(t("concepts_k"), min_value=2, max_value=20, value=5, step=1, key="cc_k"))
    target = class_picker(bundle, analysis)
    names = shown_labels(bundle)
    if not photos:
        st.info(t("concepts_no_photos"))
        return
    if not st.toggle(t("concepts_run", n=len(photos)), key="cc_run"):
        return
    with progress_bar() as bar:
        found = get_concepts(c.model, tuple(photos), layer, k, target, c.size, bar)
    shares = found.shares()
    maps = concept_maps(bundle, analysis.x, found)
    st.caption(t("concepts_found", k=found.k, crops=len(found.crops), photos=len(photos), layer=layer,
                 label=names[target]))
    for rank, i in enumerate(found.order(), 1):
        with st.container(border=True, key=f"cc_card_{i}"):
            st.subheader(t("concepts_card", rank=rank))  # numbered as shown: 1 is the most important
            share = float(shares[i]) if shares is not None else 0.0
            st.progress(min(max(share, 0.0), 1.0), text=t("concepts_share", share=share, label=names[target]))
            crops = [load_image(photos[index][1]).crop(box) for index, box in found.top(i, TOP_CROPS)]
            st.image(crops, width=96)
            st.image(channel_overlay(analysis.picture, maps[i], 0.6, c.cmap), caption=t("concepts_map"), width=320)
            if st.toggle(t("concepts_remove"), key=f"cc_remove_{i}"):
                result = ablate(bundle, analysis.x, layer, found, i, target)
                before, after = st.columns(2)
                before.caption(t("concepts_with"))
                top5_bars(before, result.logits_before[None], names)
                after.caption(t("concepts_without"))
                top5_bars(after, result.logits[None], names)


VIEW = View("concepts", group="explain", order=60, label="view_concepts", show=show)
