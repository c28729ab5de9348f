"""This session's state: the sidebar's choices, the first run's defaults from a shared link, and
the link kept in step with what is shown (vizhooks.page.urlstate parses and writes the query)."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import streamlit as st

import vizhooks as vz
from vizhooks.analysis import Analysis
from vizhooks.models.layers import architecture_layers, quick_picks, token_model
from vizhooks.page.sources.sample import default_sample, samples
from vizhooks.page.texts import language_from_locale
from vizhooks.page.urlstate import DEFAULTS, LANGS, VIEW_KEYS, layers_of, parse_query, to_query
from vizhooks.page.widgets import keep_valid


@dataclass(frozen=True)
class Choices:
    """What the sidebar says: model, picture source, layers and display settings."""

    model: str
    source: str
    sample: str
    size: int
    layers: tuple[str, ...]
    what: str
    channels: int | None
    order: str
    cmap: str
    norm: str
    columns: int | None
    #: the chosen model's refusal where its layers cannot be listed (an operator's entry whose files changed)
    refused: Exception | None = None

    @property
    def grid_order(self) -> str:
        """The order for grids that compute no relevance: "relevance" draws them by index."""
        return "index" if self.order == "relevance" else self.order


@dataclass(frozen=True)
class Context:
    """What every view is shown with: the choices, the loaded model, this picture's analysis and
    its digest (the part of every cache key that names the picture)."""

    choices: Choices
    bundle: vz.ModelBundle
    analysis: Analysis
    digest: str


def picks_for(model: str) -> dict[str, list[str]]:
    """The quick picks of layers for ``model`` (``"tour"`` is the starting choice): new lists on every
    call, as session state keeps them."""
    return {pick: list(layers) for pick, layers in _picks(model)}


@functools.lru_cache(maxsize=64)
def _picks(model: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The quick picks, worked out once per model name (keyed as architecture_layers is): the sidebar
    asks three times a run, and each time walked the model's modules for attention blocks."""
    return tuple((pick, tuple(layers)) for pick, layers in quick_picks(architecture_layers(model),
                                                                       token_model(model)).items())


def init_state() -> None:
    """First run of a session: defaults, then whatever the shared link says."""
    if st.session_state.get("_initialised"):
        return
    names = samples()
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    good, bad = parse_query(params, names)
    # the opening link's own values as read, for the checks a view makes once its layer is known
    # (widgets.from_link): the address bar later holds the page's values too
    st.session_state["_link"] = {k: good[k] for k in params if k in good}
    for key, value in DEFAULTS.items():
        st.session_state[key] = good.get(key, value)
    # a link names its source; an upload or a camera picture it cannot carry: the page asks for one
    st.session_state["source"] = good.get("source", "sample")
    st.session_state["present"] = bool(good.get("present", False))
    for key in (k for keys in VIEW_KEYS.values() for k in keys):
        if key in good:
            st.session_state[key] = good[key]
    st.session_state["sample"] = good.get("sample", default_sample())
    st.session_state["layers"] = good.get("layers") or picks_for(st.session_state["model"])["tour"]
    if "target" in good:
        st.session_state["target"] = good["target"]
    raw = good.get("plan")
    plan: tuple[int, ...] = raw if isinstance(raw, tuple) else ()
    st.session_state["lesson_plan"] = plan  # the teacher's steps, in order (empty: all)
    st.session_state["lesson_step"] = good.get("step", plan[0] if plan else 1)
    st.session_state["hide"] = good.get("hide", ())  # controls a teacher's link hides
    # the link decides the language; without one, the browser's (st.context.locale), else English
    st.session_state["lang"] = good.get("lang") or language_from_locale(st.context.locale)
    st.session_state["compare"] = good.get("compare", next(s for s in names if s != st.session_state["sample"]))
    st.session_state["_url_notices"] = bad
    # a class link: follow that class; a teacher link: lead it (vizhooks.page.classes checks the secret)
    st.session_state["_class_link"] = (good.get("class"), good.get("teacher"))
    st.session_state["_initialised"] = True


#: Widgets whose option labels follow the language (their values travel as labels in Streamlit 1.67).
RELABELED = ("model", "layers", "quick", "order", "what", "norm", "view", "view_group", "source", "iv_mode", "target",
             "video_target", "lesson_pick", "live_mode", "live_pick", "code_view", "compare_source",
             "cv_part", "ex_methods", "ex_sanity_methods", "ex_ig_baseline", "ex_baseline", "pt_part")


def keep_a_language() -> None:
    """A new language: keep one chosen (a segmented control can be clicked off), and give every
    widget whose labels are translated its value again from here. A selectbox sends its value back
    as the label the browser last showed; set by the script, the browser takes the new label, so
    the next run finds it (else "resnet18 · ... parameters" came back as an unknown model)."""
    keep_valid("lang", LANGS, "en")
    for key in RELABELED:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def apply_quick_pick() -> None:
    pick = st.session_state.get("quick")
    if pick:
        st.session_state["layers"] = picks_for(st.session_state["model"]).get(pick, [])
        st.session_state["quick"] = None


def model_changed() -> None:
    """A new model keeps the layers it also has; with none left, it starts on its own tour."""
    model = st.session_state["model"]
    infos, refused = layers_of(model)
    if refused is not None:  # the sidebar says why; the layers stay for the next model
        return
    names = {info.name for info in infos}
    kept = [n for n in st.session_state.get("layers", []) if n in names]
    st.session_state["layers"] = kept or picks_for(model)["tour"]


def sync_url(c: Choices, view: str) -> None:
    """The address bar follows the page, so a copied link opens this exact view."""
    target = st.session_state.get("target")
    shown = {key: st.session_state.get(key) for key in VIEW_KEYS.get(view, ())}  # this view's own settings
    if view == "intervene" and shown.get("iv_mode") == "top":
        shown["iv_channels"] = None
    elif view == "intervene":
        shown["iv_k"] = None
    query = to_query({
        "lang": st.session_state.get("lang", "en"), "view": view, "target": target, "model": c.model,
        "present": 1 if st.session_state.get("present") else None,
        "source": c.source if c.source != "sample" else None,
        "sample": c.sample if c.source == "sample" else None, "layers": c.layers, **shown,
        "compare": st.session_state.get("compare") if view == "compare" else None,
        "step": st.session_state.get("lesson_step", 1) if view == "lesson" else None,
        "plan": st.session_state.get("lesson_plan") or None, "hide": st.session_state.get("hide") or None,
        "what": c.what, "size": c.size, "channels": c.channels or "all", "order": c.order,
        "cmap": c.cmap, "norm": c.norm, "columns": c.columns or 0,
        "class": st.session_state.get("_class_code"),  # a student's link keeps the class; a teacher's secret never
    })
    if query != st.query_params.to_dict():
        st.query_params.from_dict(query)
    st.session_state["_query"] = query
