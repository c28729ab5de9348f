"""The sidebar: language, model, picture source, layers and display settings, returned as
:class:`~vizhooks.page.state.Choices`, and the slot where the model's status goes once loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import streamlit as st

import vizhooks as vz
from vizhooks.i18n import SOURCE
from vizhooks.models.layers import reference_hw
from vizhooks.models.registry import list_models, operator_models, resolve_entry
from vizhooks.models.weights import checkpoint_path, fetch_command, said_notes
from vizhooks.page.classes import followed_photo
from vizhooks.page.clip import clip_choice, clip_controls
from vizhooks.page.errors import LOG
from vizhooks.page.results import model_option
from vizhooks.page.sources import SOURCES, photo_picker
from vizhooks.page.sources.sample import default_sample
from vizhooks.page.sources.video import video_sidebar
from vizhooks.page.state import Choices, apply_quick_pick, keep_a_language, model_changed, picks_for
from vizhooks.page.taught import offered_models, switch_pending
from vizhooks.page.texts import LANGUAGE_NAMES, language, listed, t
from vizhooks.page.urlstate import (
    CHANNEL_CHOICES,
    DEFAULTS,
    LANGS,
    PAGE_ORDERS,
    SIZE_MAX,
    SIZE_MIN,
    SIZE_STEP,
    layers_of,
)
from vizhooks.page.widgets import keep_valid, labels_for, layer_label, pick_label, select_all
from vizhooks.render.figures import CMAPS, NORMS


def sidebar() -> tuple[Choices, Any]:
    """Draw the sidebar; returns the choices and the (still empty) slot for the model's status."""
    sb = st.sidebar
    hidden = hidden_controls()
    if hidden:  # a teacher's link fixed these (?hide=): the student sees what, not the controls
        sb.caption(t("plan_hidden", items=listed(t(f"plan_hide_{name}") for name in hidden)))
    # switching language only redraws: no cache key holds the language
    if "lang" not in hidden:
        sb.segmented_control(t("language"), LANGS, key="lang", format_func=LANGUAGE_NAMES.__getitem__,
                             selection_mode="single", on_change=keep_a_language)
    switch_pending()  # a model just taught (or uploaded) in the Teach view becomes the choice
    models = [*list_models(), *offered_models(), *clip_choice()]
    keep_valid("model", models, DEFAULTS["model"])  # an operator entry removed since
    lang = language()
    if "model" not in hidden:
        sb.selectbox(t("model"), models, key="model", help=t("model_help"),
                     format_func=lambda name: model_option(name, lang),
                     on_change=model_changed)
    clip_controls(sb, "model" in hidden)  # a CLIP model's class names, typed by the teacher
    for warning in operator_models()[1]:
        sb.warning(t("operator_warning", warning=warning), icon=":material/warning:")
    description = resolve_entry(st.session_state["model"]).description
    if description:
        sb.caption(t("model_description", description=description))
    model_slot = sb.container()  # device and weights status, filled once the model is loaded

    # a follower sees the teacher's photo, not a picker of its own that the class would override
    led = None if st.session_state["source"] in ("video", "live") else followed_photo()
    if led is not None:
        sb.caption(t("class_photo_from_teacher"))
        sb.image(led[0], caption=led[1] or None)
    elif "source" not in hidden:
        sb.radio(t("image_source"), SOURCES, key="source", horizontal=True,
                 format_func=labels_for("source_"))
    source = st.session_state["source"]
    if source == "sample":
        st.session_state.setdefault("sample", default_sample())
    if source == "video":
        video_sidebar(sb)
    elif "source" not in hidden and led is None:
        photo_picker(source, sb)
    if source == "live":  # the live view sets its own (smaller) input size: one size on screen
        st.session_state["size"] = st.session_state.get("size", DEFAULTS["size"])  # kept for the other sources
        sb.caption(t("live_size_where"))
    elif "size" not in hidden:
        sb.slider(t("size"), SIZE_MIN, SIZE_MAX, step=SIZE_STEP, key="size", help=t("size_help"))

    model = st.session_state["model"]
    infos, refused = layers_of(model)  # an operator's entry whose files changed: said by the page (app.main)
    if refused is not None:
        LOG.warning("model refused: %s", refused)
    labels = {info.name: layer_label(info) for info in infos}
    # A layer chosen for another model may not exist in this one (resnet50 has conv3s).
    st.session_state["layers"] = [n for n in st.session_state.get("layers", []) if n in labels]
    if "layers" not in hidden and refused is None:
        layer_controls(sb, model, labels, reference_hw(model)[0])
    if "display" not in hidden:
        display_controls(sb)
    sb.caption(t("share_hint"))

    s = st.session_state
    order = {info.name: i for i, info in enumerate(infos)}
    return Choices(
        model=s["model"], source=source, sample=s.get("sample", default_sample()), size=int(s["size"]),
        layers=tuple(sorted(s["layers"], key=order.__getitem__)), what=s["what"],
        channels=None if s["channels"] == "all" else int(s["channels"]), order=s["order"],
        cmap=s["cmap"], norm=s["norm"], columns=int(s["columns"]) or None, refused=refused,
    ), model_slot


def hidden_controls() -> tuple[str, ...]:
    """The sidebar's controls this session's link hides (``?hide=``, vizhooks.lesson.steps.HIDEABLE)."""
    return tuple(st.session_state.get("hide") or ())


def layer_controls(sb: Any, model: str, labels: dict[str, str], side: int) -> None:
    """The quick picks, the layers and what of them to show (``side``: the model's usual input side)."""
    sb.subheader(t("layers_header"))
    sb.selectbox(t("quick_pick"), list(picks_for(model)), index=None, key="quick", on_change=apply_quick_pick,
                 placeholder=t("quick_pick_placeholder"),
                 format_func={p: pick_label(p, model) for p in picks_for(model)}.__getitem__)
    sb.multiselect(t("layers"), list(labels), key="layers", select_all=select_all(), format_func=labels.__getitem__,
                   help=t("layers_help", side=side))
    sb.radio(t("what"), ("output", "input"), key="what", format_func=labels_for("what_"))


def display_controls(sb: Any) -> None:
    """How the maps are drawn: how many channels, their order, colours and columns."""
    sb.subheader(t("display_header"))
    sb.select_slider(t("channels"), CHANNEL_CHOICES, key="channels")
    sb.selectbox(t("order"), PAGE_ORDERS, key="order", format_func=labels_for("order_"))
    sb.selectbox(t("cmap"), CMAPS, key="cmap")
    sb.radio(t("norm"), NORMS, key="norm", horizontal=True, format_func=labels_for("norm_"))
    sb.number_input(t("columns"), min_value=0, max_value=64, step=1, key="columns")


def show_model_status(slot: Any, bundle: vz.ModelBundle) -> None:
    """Device and weights in the sidebar's slot, with the library's own account of the weights."""
    slot.caption(t("device", device=str(bundle.device).upper()))
    if bundle.pretrained:
        slot.caption(t(f"weights_from_{bundle.weights_source}"))
    else:
        slot.warning(t("weights_random", command=fetch_command(bundle.arch)), icon=":material/warning:")
    box = slot.expander(t("weights_details"))
    where = _torchvision_checkpoint(bundle)
    if where is not None:
        box.markdown(t("weights_file_place", path=where))
    # the library's own account (paths, URLs, each reason on the way), as it printed it: English, said so
    # on a page in another language, after the reasons it met in the page's language
    if language() != SOURCE:
        if bundle.weights_notes:
            box.markdown(t("weights_why") + "\n" + "".join(
                f"\n- {note}" for note in said_notes(bundle.weights_notes)))
        box.caption(t("weights_details_english"))
    box.code(bundle.weights_status, language=None, wrap_lines=True)


def _torchvision_checkpoint(bundle: vz.ModelBundle) -> Path | None:
    """Where torchvision keeps (or would keep) the ImageNet checkpoint of ``bundle``'s model, unless its
    weights came from somewhere else (a file, ``VIZHOOKS_WEIGHTS``) or it is not a torchvision model."""
    if bundle.weights_source not in ("cache", "download", "random"):
        return None
    try:
        return checkpoint_path(bundle.arch)
    except ValueError:  # timm, Hugging Face, a model of one's own: their weights live elsewhere
        return None
