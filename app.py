"""The vizhooks page: widgets in, vizhooks calls, st.* out.

Run with `streamlit run app.py` (or `make run`). All computing lives in the vizhooks package;
this file only places widgets, caches results and shows them. Every sentence comes from
vizhooks.page.texts.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st

import vizhooks as vz
from vizhooks.budget import CaptureTooLargeError, check_capture
from vizhooks.cam import cams_from
from vizhooks.export import npz_bytes
from vizhooks.gradients import BackwardRecord, backward_report, gradient_pass
from vizhooks.layers import architecture_layers, quick_picks, reference_hw, token_model
from vizhooks.models import OPERATOR_FAMILY, family, list_models, operator_models, resolve_entry
from vizhooks.page.analysis import (
    Analysis,
    VideoAnalysis,
    analyse,
    compare_maps,
    frame_cams,
    frames_input,
    hook_calls_demo,
    image_digest,
    layer_stats,
    top_classes,
)
from vizhooks.page.cache import ByteLRU
from vizhooks.page.lesson import STEPS, step_index
from vizhooks.page.snippets import lesson_snippet, snippet
from vizhooks.page.texts import LANGUAGE_NAMES, language, language_from_locale, set_language, t
from vizhooks.page.urlstate import (
    CHANNEL_CHOICES,
    DEFAULTS,
    LANGS,
    SIZE_MAX,
    SIZE_MIN,
    SIZE_STEP,
    VIEWS,
    parse_query,
    to_query,
)
from vizhooks.render import (
    CMAPS,
    NORMS,
    ORDERS,
    channel_image,
    channel_overlay,
    grid_layout,
    image_to_png,
    palette_png,
)
from vizhooks.summary import layer_summary, summary_dataframe, summary_totals
from vizhooks.video import (
    DEFAULT_MAX_FRAMES,
    MAX_VIDEO_MB,
    MAX_VIDEO_SECONDS,
    VIDEO_TYPES,
    InvalidVideoError,
    capture_frames_with_output,
    frames_npz_bytes,
    layer_video,
    read_clip,
)
from vizhooks.weights import fetch_command

LOG = logging.getLogger("vizhooks.app")
SAMPLES_DIR = Path(__file__).resolve().parent / "sample_images"
SAMPLES = sorted(p.name for p in SAMPLES_DIR.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
DEFAULT_SAMPLE = "chelsea.jpg" if "chelsea.jpg" in SAMPLES else SAMPLES[0]
PHOTO_MB = 20  # per photo; the server's limit (.streamlit/config.toml) is the video's
UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"]
SOURCES = ("sample", "upload", "camera", "video", "live")
PHOTO_SOURCES = ("sample", "upload", "camera")  # the Compare view's second picture


@dataclass(frozen=True)
class Choices:
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


# ---------------------------------------------------------------------------------------------
# caches: one model per architecture for the whole process (shared by every session, used under
# vizhooks' per-model lock); activations keyed by what decides them; PNGs by display settings.


@st.cache_resource(max_entries=2, show_spinner=False)
def get_bundle(name: str) -> vz.ModelBundle:
    return vz.load_model(name)


@st.cache_data(show_spinner=False)
def model_option(name: str, lang: str) -> str:
    """The selector's line for a model, without building it: family, parameters, input size. (The
    language is part of the cache key.)"""
    set_language(lang)
    from vizhooks.models import input_spec

    arch = resolve_entry(name).arch
    try:
        from torchvision.models import get_model_weights

        params = get_model_weights(arch).DEFAULT.meta["num_params"]
        fixed = input_spec(arch).fixed_size
    except (ValueError, KeyError, AttributeError):  # timm or unusual entries: count on the meta device
        from vizhooks.models import meta_model

        model = meta_model(name)[0]
        params, fixed = sum(p.numel() for p in model.parameters()), input_spec(arch, model).fixed_size
    size = t("model_fixed_size", side=fixed) if fixed else ""
    group = family(name)
    group = t("family_operator") if group == OPERATOR_FAMILY else group  # the other families are names
    return t("model_option", family=group, name=name, params=t("model_params_m", m=params / 1e6), size=size)


def labels_for(prefix: str):
    """A format_func for options whose labels are the texts ``prefix + option``, fixed in this
    run's language: Streamlit may call it later, outside this run."""
    lang = language()

    def label(option) -> str:
        set_language(lang)
        return t(f"{prefix}{option}")

    return label


def layer_where(info) -> str:
    """Where a layer sits, in the page's language: "conv 6 of 20 · 28×28"."""
    parts = []
    if info.index:
        parts.append(t(f"where_{info.kind}", index=info.index, count=info.count))
    if info.out_hw:
        parts.append(f"{info.out_hw[0]}×{info.out_hw[1]}")
    return " · ".join(parts) or info.type


def layer_label(info) -> str:
    """The layer menu's line: name, place, resolution, channels, kernel, stride."""
    if info.out_channels is not None:
        k = "x".join(map(str, info.kernel_size or ()))
        s = info.stride[0] if info.stride and info.stride[0] == info.stride[1] else info.stride
        return t("label_conv", name=info.name, where=layer_where(info), cin=info.in_channels,
                 cout=info.out_channels, k=k, s=s)
    channels = t("label_channels", n=info.out_channels_map) if info.out_channels_map else ""
    return t("label_other", name=info.name, where=layer_where(info), type=info.type, channels=channels)


def picks_for(model: str) -> dict[str, list[str]]:
    return quick_picks(architecture_layers(model), token_model(model))


def pick_label(pick: str, model: str) -> str:
    if pick.startswith("res:"):
        hw = pick.removeprefix("res:").replace("x", "×")
        return t("pick_res_blocks" if token_model(model) else "pick_res_convs", hw=hw)
    return t(f"pick_{pick}")


@st.cache_resource(show_spinner=False)
def result_cache() -> ByteLRU:
    """Activations and gradients of recent requests, shared by all sessions, bounded in bytes
    (VIZHOOKS_CACHE_MB) rather than in entries: one ResNet-152 capture can outweigh a hundred
    small ones."""
    return ByteLRU(int(float(os.environ.get("VIZHOOKS_CACHE_MB", "1500")) * 1e6))


def get_analysis(model: str, digest: str, data: bytes, size: int, layers: tuple[str, ...], what: str) -> Analysis:
    key = ("analysis", model, digest, size, layers, what)
    return result_cache().get_or_create(
        key, lambda: analyse(get_bundle(model), vz.load_image(data), size, list(layers), what),
        lambda a: a.nbytes)


def get_gradients(model: str, key: tuple, layers: tuple[str, ...], target: int, analysis: Analysis):
    """One forward + backward pass for a class: gradients and Grad-CAM maps of the chosen layers.
    Keyed apart from get_analysis, so a new class re-runs this and nothing else."""
    height, width = analysis.x.shape[-2:]
    check_capture(model, list(layers), (height, width), copies=2)

    def make():
        result = gradient_pass(get_bundle(model).model, analysis.x, list(layers), target=target, as_maps=True)
        return result, cams_from(result, (height, width))

    def size(made) -> int:
        result, cams = made
        tensors = [*result.activations.values(), *result.gradients.values(), *cams.values()]
        return sum(t.element_size() * t.nelement() for t in tensors)

    return result_cache().get_or_create(("gradients", model, key, layers, target), make, size)


@st.cache_resource(max_entries=8, show_spinner=False)
def get_backward_report(model: str, key: tuple, target: int, _analysis: Analysis) -> list[BackwardRecord]:
    bundle = get_bundle(model)
    children = [name for name, _ in bundle.model.named_children()]
    return backward_report(bundle.model, _analysis.x, children, target=target)


@st.cache_resource(max_entries=8, show_spinner=False)
def get_summary(model: str, key: tuple, _analysis: Analysis):
    rows = layer_summary(get_bundle(model).model, _analysis.x)
    return summary_dataframe(rows), summary_totals(rows)


@st.cache_data(max_entries=64, show_spinner=False)
def grid_png(_tensor, key: tuple, channels: int | None, order: str, cmap: str, norm: str,
             columns: int | None, title: str, vcenter: float | None = None,
             clim: tuple[float, float] | None = None) -> bytes:
    fig = vz.feature_grid(_tensor, channels=channels, order=order, cmap=cmap, norm=norm, title=title,
                          columns=columns, vcenter=vcenter, clim=clim)
    return vz.figure_to_png(fig)


@st.cache_data(max_entries=64, show_spinner=False)
def maps_png(_tensor, key: tuple, channels: int | None, order: str, columns: int | None, title: str,
             cmap: str) -> bytes:
    """Per-channel grids in two steps: the layout (which channel where, as colour levels) is kept
    with the activations, so another colormap costs a palette PNG encode, not a redraw."""
    layout = result_cache().get_or_create(
        ("layout", key, channels, order, columns, title),
        lambda: grid_layout(_tensor, channels=channels, order=order, columns=columns, title=title),
        lambda made: made.nbytes)
    return palette_png(layout, cmap)


@st.cache_data(max_entries=64, show_spinner=False)
def read_sample(name: str) -> bytes:
    return (SAMPLES_DIR / name).read_bytes()


# ---------------------------------------------------------------------------------------------
# sidebar


def init_state() -> None:
    """First run of a session: defaults, then whatever the shared link says."""
    if st.session_state.get("_initialised"):
        return
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    good, bad = parse_query(params, SAMPLES)
    for key, value in DEFAULTS.items():
        st.session_state[key] = good.get(key, value)
    st.session_state["source"] = "sample"
    st.session_state["sample"] = good.get("sample", DEFAULT_SAMPLE)
    st.session_state["layers"] = good.get("layers") or picks_for(st.session_state["model"])["tour"]
    if "target" in good:
        st.session_state["target"] = good["target"]
    st.session_state["lesson_step"] = good.get("step", 1)
    # the link decides the language; without one, the browser's (st.context.locale), else English
    st.session_state["lang"] = good.get("lang") or language_from_locale(st.context.locale)
    st.session_state["compare"] = good.get("compare", next(s for s in SAMPLES if s != st.session_state["sample"]))
    st.session_state["_url_notices"] = bad
    st.session_state["_initialised"] = True


def apply_quick_pick() -> None:
    pick = st.session_state.get("quick")
    if pick:
        st.session_state["layers"] = picks_for(st.session_state["model"]).get(pick, [])
        st.session_state["quick"] = None


def model_changed() -> None:
    """A new model keeps the layers it also has; with none left, it starts on its own tour."""
    model = st.session_state["model"]
    names = {info.name for info in architecture_layers(model)}
    kept = [n for n in st.session_state.get("layers", []) if n in names]
    st.session_state["layers"] = kept or picks_for(model)["tour"]


def sidebar() -> tuple[Choices, st.delta_generator.DeltaGenerator]:
    sb = st.sidebar
    # switching language only redraws: no cache key holds the language
    sb.segmented_control(t("language"), LANGS, key="lang", format_func=LANGUAGE_NAMES.get,
                         selection_mode="single", on_change=keep_a_language)
    models = list_models()
    if st.session_state.get("model") not in models:  # an operator entry removed since
        st.session_state["model"] = DEFAULTS["model"]
    lang = language()
    sb.selectbox(t("model"), models, key="model", help=t("model_help"),
                 format_func=lambda name: model_option(name, lang),
                 on_change=model_changed)
    for warning in operator_models()[1]:
        sb.warning(t("operator_warning", warning=warning), icon=":material/warning:")
    description = resolve_entry(st.session_state["model"]).description
    if description:
        sb.caption(t("model_description", description=description))
    model_slot = sb.container()  # device and weights status, filled once the model is loaded

    sb.radio(t("image_source"), SOURCES, key="source", horizontal=True,
             format_func=labels_for("source_"))
    source = st.session_state["source"]
    if source == "sample":
        st.session_state.setdefault("sample", DEFAULT_SAMPLE)
        sb.selectbox(t("sample"), SAMPLES, key="sample")
    elif source == "upload":
        sb.file_uploader(t("upload"), type=UPLOAD_TYPES, key="upload", max_upload_size=PHOTO_MB,
                         help=t("upload_help"))
    elif source == "camera":
        sb.camera_input(t("camera"), key="camera")
    elif source == "video":
        video_sidebar(sb)
    sb.slider(t("size"), SIZE_MIN, SIZE_MAX, step=SIZE_STEP, key="size", help=t("size_help"))

    sb.subheader(t("layers_header"))
    model = st.session_state["model"]
    infos = architecture_layers(model)
    labels = {info.name: layer_label(info) for info in infos}
    # A layer chosen for another model may not exist in this one (resnet50 has conv3s).
    st.session_state["layers"] = [n for n in st.session_state.get("layers", []) if n in labels]
    sb.selectbox(t("quick_pick"), list(picks_for(model)), index=None, key="quick", on_change=apply_quick_pick,
                 placeholder=t("quick_pick_placeholder"),
                 format_func={p: pick_label(p, model) for p in picks_for(model)}.get)
    sb.multiselect(t("layers"), list(labels), key="layers", format_func=labels.get,
                   help=t("layers_help", side=reference_hw(model)[0]))
    sb.radio(t("what"), ("output", "input"), key="what", format_func=labels_for("what_"))

    sb.subheader(t("display_header"))
    sb.select_slider(t("channels"), CHANNEL_CHOICES, key="channels")
    sb.selectbox(t("order"), ORDERS, key="order", format_func=labels_for("order_"))
    sb.selectbox(t("cmap"), CMAPS, key="cmap")
    sb.radio(t("norm"), NORMS, key="norm", horizontal=True, format_func=labels_for("norm_"))
    sb.number_input(t("columns"), min_value=0, max_value=64, step=1, key="columns")
    sb.caption(t("share_hint"))

    s = st.session_state
    order = {info.name: i for i, info in enumerate(infos)}
    return Choices(
        model=s["model"], source=source, sample=s.get("sample", DEFAULT_SAMPLE), size=int(s["size"]),
        layers=tuple(sorted(s["layers"], key=order.__getitem__)), what=s["what"],
        channels=None if s["channels"] == "all" else int(s["channels"]), order=s["order"],
        cmap=s["cmap"], norm=s["norm"], columns=int(s["columns"]) or None,
    ), model_slot


def keep_a_language() -> None:
    if st.session_state.get("lang") not in LANGS:  # a segmented control can be clicked off
        st.session_state["lang"] = "en"


def sync_url(c: Choices, view: str) -> None:
    target = st.session_state.get("target")
    query = to_query({
        "lang": st.session_state.get("lang", "en"), "view": view, "target": target, "model": c.model,
        "sample": c.sample if c.source == "sample" else None, "layers": c.layers,
        "compare": st.session_state.get("compare") if view == "compare" else None,
        "step": st.session_state.get("lesson_step", 1) if view == "lesson" else None,
        "what": c.what, "size": c.size, "channels": c.channels or "all", "order": c.order,
        "cmap": c.cmap, "norm": c.norm, "columns": c.columns or 0,
    })
    if query != st.query_params.to_dict():
        st.query_params.from_dict(query)
    st.session_state["_query"] = query


# ---------------------------------------------------------------------------------------------
# main area


def show_model_status(slot, bundle: vz.ModelBundle) -> None:
    slot.caption(t("device", device=str(bundle.device).upper()))
    if bundle.pretrained:
        slot.caption(t(f"weights_from_{bundle.weights_source}"))
    else:
        slot.warning(t("weights_random", command=fetch_command(bundle.arch)), icon=":material/warning:")
    # the library's own account (paths, URLs, each reason on the way), as it printed it
    slot.expander(t("weights_details")).code(bundle.weights_status, language=None, wrap_lines=True)


def image_bytes(c: Choices) -> bytes | None:
    if c.source == "sample":
        return read_sample(c.sample)
    widget = st.session_state.get("upload" if c.source == "upload" else "camera")
    return widget.getvalue() if widget is not None else None


def show_input_and_predictions(analysis: Analysis, bundle: vz.ModelBundle, size: int) -> None:
    left, right = st.columns([3, 2])
    w, h = analysis.picture.size
    left.image(analysis.picture, caption=t("model_saw", width=w, height=h))
    if bundle.input.fixed_size:
        left.caption(t("input_fixed", name=bundle.name, side=bundle.input.fixed_size))
    elif size < bundle.input.min_size:
        left.caption(t("input_min", name=bundle.name, side=bundle.input.min_size))
    right.subheader(t("top5"))
    if not bundle.pretrained:
        right.warning(t("top5_random"))
    for p in top_classes(analysis.logits, bundle.categories, 5):
        right.progress(min(max(p.probability, 0.0), 1.0), text=f"{p.label} · {p.probability:.1%}")


def show_feature_maps(analysis: Analysis, c: Choices, digest: str) -> None:
    st.download_button(t("download_npz"), data=lambda: npz_bytes(analysis.x, analysis.activations),
                       file_name=f"vizhooks-{c.model}-{digest[:8]}.npz", mime="application/octet-stream",
                       key="download_npz", on_click="ignore", help=t("download_npz_help"))
    layers = [name for name in c.layers if name in analysis.activations]
    bar = st.progress(0.0) if len(layers) > 6 else None  # a few grids draw faster than a bar updates
    where = {info.name: layer_where(info) for info in architecture_layers(c.model)}
    columns = st.columns(2) if len(layers) > 1 else [st.container()]
    for i, name in enumerate(layers):
        if bar is not None:
            bar.progress(i / len(layers), text=t("rendering", i=i + 1, n=len(layers), name=name))
        stats = layer_stats(analysis.activations[name])
        total = stats.channels
        shown = min(c.channels or total, total)
        key = ("maps", c.model, digest, c.size, c.what, name)
        if c.norm == "channel":  # the common case: a colormap change only swaps a PNG palette
            png = maps_png(analysis.activations[name], key, c.channels, c.order, c.columns, name, c.cmap)
        else:
            png = grid_png(analysis.activations[name], key, c.channels, c.order, c.cmap, c.norm, c.columns, name)
        with columns[i % len(columns)]:
            st.subheader(name)
            st.caption(t("layer_caption", where=where.get(name, ""), what=t(f"what_{c.what}").split(" ")[0],
                         shape="×".join(map(str, stats.shape)), min=stats.min, mean=stats.mean, max=stats.max,
                         shown=t("shown_some", shown=shown, total=total) if shown < total
                         else t("shown_all", total=total)))
            st.image(png)
            st.download_button(t("download_png"), data=png, file_name=f"{name}.png", mime="image/png",
                               key=f"download_{name}", on_click="ignore", icon=":material/download:")
    if bar is not None:
        bar.empty()


def show_inspector(analysis: Analysis, c: Choices) -> None:
    layers = [name for name in c.layers if name in analysis.activations]
    if st.session_state.get("insp_layer") not in layers:
        st.session_state["insp_layer"] = layers[0]
    layer = st.selectbox(t("insp_layer"), layers, key="insp_layer")
    act = analysis.activations[layer][0]
    channels = act.shape[0]
    st.session_state["insp_channel"] = min(int(st.session_state.get("insp_channel", 0)), channels - 1)
    channel = st.number_input(t("insp_channel"), min_value=0, max_value=channels - 1, step=1, key="insp_channel")
    alpha = st.slider(t("insp_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="insp_alpha")
    one = act[int(channel)]
    left, right = st.columns(2)
    left.image(channel_image(one, analysis.picture.size, c.cmap),
               caption=t("insp_large", layer=layer, channel=int(channel), h=one.shape[0], w=one.shape[1]))
    right.image(channel_overlay(analysis.picture, one, alpha, c.cmap), caption=t("insp_overlay", alpha=alpha))
    s = layer_stats(one[None])
    st.caption(t("insp_range", min=s.min, mean=s.mean, max=s.max))
    show_excitation(c.model, layer, int(channel), st.container())


def class_picker(bundle: vz.ModelBundle, analysis: Analysis) -> int:
    """The class whose logit is differentiated: the top-1 class unless the person picks one."""
    top = top_classes(analysis.logits, bundle.categories, 1)[0]
    cats = bundle.categories
    if not isinstance(st.session_state.get("target"), int) or not 0 <= st.session_state["target"] < len(cats):
        st.session_state["target"] = None  # a class of another model, or from a link
    picked = st.selectbox(t("target"), range(len(cats)), key="target", index=None,
                          format_func=lambda i: f"{cats[i]} ({i})", help=t("target_help"),
                          placeholder=t("target_top1", label=top.label, index=top.index),
                          persist_state="session")
    return top.index if picked is None else int(picked)


def show_gradients(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    target = class_picker(bundle, analysis)
    with st.spinner(t("running_backward", label=bundle.categories[target])):
        result, _ = get_gradients(c.model, (digest, c.size), c.layers, target, analysis)
    st.caption(t("gradients_intro", label=bundle.categories[target], index=target))
    columns = st.columns(2) if len(c.layers) > 1 else [st.container()]
    for i, name in enumerate(n for n in c.layers if n in result.gradients):
        grad = result.gradients[name]
        s = layer_stats(grad)
        key = ("grad", c.model, digest, c.size, target, name)
        png = grid_png(grad, key, c.channels, c.order, "RdBu_r", "layer", c.columns, f"∂y[{target}] / ∂ {name}", 0.0)
        with columns[i % len(columns)]:
            st.subheader(name)
            st.caption(t("grad_caption", shape="×".join(map(str, s.shape)), min=s.min, max=s.max))
            st.image(png)
            st.download_button(t("download_png"), data=png, file_name=f"{name}-gradient.png", mime="image/png",
                               key=f"download_grad_{name}", on_click="ignore", icon=":material/download:")


def show_gradcam(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    target = class_picker(bundle, analysis)
    alpha = st.slider(t("cam_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="cam_alpha", persist_state="session")
    with st.spinner(t("running_backward", label=bundle.categories[target])):
        _, cams = get_gradients(c.model, (digest, c.size), c.layers, target, analysis)
    st.caption(t("gradcam_intro", label=bundle.categories[target], index=target))
    columns = st.columns(2) if len(c.layers) > 1 else [st.container()]
    for i, name in enumerate(n for n in c.layers if n in cams):
        overlay = channel_overlay(analysis.picture, cams[name], alpha, "jet")
        with columns[i % len(columns)]:
            st.subheader(name)
            st.image(overlay, caption=t("cam_caption", layer=name, label=bundle.categories[target]))
            st.download_button(t("download_png"), data=image_to_png(overlay), file_name=f"{name}-gradcam.png",
                               mime="image/png", key=f"download_cam_{name}", on_click="ignore",
                               icon=":material/download:")


def _shapes(shapes) -> str:
    if shapes is None:
        return "—"
    return ", ".join("None" if s is None else "×".join(map(str, s)) for s in shapes)


def show_backward(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    target = class_picker(bundle, analysis)
    with st.spinner(t("running_backward", label=bundle.categories[target])):
        records = get_backward_report(c.model, (digest, c.size), target, analysis)
    st.markdown(t("backward_intro", label=bundle.categories[target]))
    st.dataframe(
        [{t("col_step"): i + 1, t("col_module"): r.name, t("col_type"): r.type,
          t("col_grad_output"): _shapes(r.grad_output), t("col_grad_input"): _shapes(r.grad_input),
          t("col_note"): r.note} for i, r in enumerate(records)],
        hide_index=True, key="backward_table",
    )
    st.markdown(t("backward_reading"))


def show_table(analysis: Analysis, c: Choices, digest: str) -> None:
    with st.spinner(t("running_table")):
        frame, totals = get_summary(c.model, (digest, c.size), analysis)
    left, mid, right = st.columns(3)
    left.metric(t("total_params"), f"{int(totals['params']):,}")
    mid.metric(t("total_outputs"), f"{int(totals['output_elements']):,}")
    right.metric(t("total_time"), f"{totals['time_ms']:.0f} ms")
    st.caption(t("table_intro"))
    st.dataframe(frame, hide_index=True, key="layer_table", column_config={
        "time_ms": st.column_config.NumberColumn(format="%.2f"),
        "params": st.column_config.NumberColumn(format="localized"),
        "output_elements": st.column_config.NumberColumn(format="localized"),
    })


# ---------------------------------------------------------------------------------------------
# hooks that change values


EDIT_MODES = ("zero", "half", "double", "top")
CLAMP_LIMITS = (1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0)


def _edit(mode: str, channels: tuple[int, ...], k: int) -> vz.ChannelEdit:
    if mode == "top":
        return vz.ChannelEdit(keep_top=k)
    return vz.ChannelEdit(channels=channels, scale={"zero": 0.0, "half": 0.5, "double": 2.0}[mode])


def show_top5_pair(bundle: vz.ModelBundle, before, after, target: int) -> None:
    left, right = st.columns(2)
    for col, logits, head in ((left, before, "iv_before"), (right, after, "iv_after")):
        col.markdown(f"**{t(head)}**")
        for p in top_classes(logits, bundle.categories, 5):
            col.progress(min(max(p.probability, 0.0), 1.0), text=f"{p.label} · {p.probability:.1%}")
    b, a = float(before[0, target]), float(after[0, target])
    st.metric(t("iv_logit", label=bundle.categories[target]), f"{a:.3f}", delta=f"{a - b:+.3f}")


def show_intervene(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    st.markdown(t("intervene_intro"))
    target = class_picker(bundle, analysis)
    layers = [n for n in c.layers if n in analysis.activations]
    if st.session_state.get("iv_layer") not in layers:
        st.session_state["iv_layer"] = layers[0]
    left, mid, right = st.columns([2, 2, 3])
    layer = left.selectbox(t("iv_layer"), layers, key="iv_layer")
    mode = mid.selectbox(t("iv_mode"), EDIT_MODES, key="iv_mode", format_func=labels_for("iv_mode_"))
    count = int(analysis.activations[layer].shape[1])
    if mode == "top":
        st.session_state["iv_k"] = min(int(st.session_state.get("iv_k", 8)), count)
        k = int(right.number_input(t("iv_k"), min_value=1, max_value=count, step=1, key="iv_k"))
        channels: tuple[int, ...] = ()
    else:
        kept = [ch for ch in st.session_state.get("iv_channels", list(range(min(4, count)))) if ch < count]
        st.session_state["iv_channels"] = kept
        channels = tuple(sorted(right.multiselect(t("iv_channels"), list(range(count)), key="iv_channels")))
        k = 0
        if not channels:
            st.info(t("iv_no_channels"))
            return
    later = [n for n in layers if layers.index(n) > layers.index(layer)]
    key = ("intervene", c.model, digest, c.size, c.what, layer, mode, channels, k, tuple(later))
    with st.spinner(t("iv_running")):
        result = result_cache().get_or_create(
            key, lambda: vz.intervene(get_bundle(c.model).model, analysis.x, {layer: _edit(mode, channels, k)},
                                      capture=later, as_maps=True),
            lambda r: sum(x.element_size() * x.nelement() for x in [*r.activations.values(),
                                                                     *r.activations_before.values()]))
    show_top5_pair(bundle, result.logits_before, result.logits_after, target)
    if later:
        st.caption(t("iv_later"))
        columns = st.columns(2) if len(later) > 1 else [st.container()]
        for i, name in enumerate(later):
            after, before = result.activations[name], result.activations_before[name]
            change = float((after - before).abs().mean() / (before.abs().mean() + 1e-12))
            png = grid_png(after, ("iv", *key, name), c.channels, c.order, c.cmap, c.norm, c.columns, name)
            with columns[i % len(columns)]:
                st.subheader(name)
                st.caption(t("iv_change", change=change))
                st.image(png)
    else:
        st.info(t("iv_no_later"))
    show_clamp(analysis, bundle, c, digest, layers, target)


def show_clamp(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str, layers: list[str],
               target: int) -> None:
    st.divider()
    st.subheader(t("clamp_header"))
    st.markdown(t("clamp_intro"))
    if st.session_state.get("iv_clamp_at") not in layers:
        st.session_state["iv_clamp_at"] = layers[-1]
    left, right = st.columns(2)
    clamp_at = left.selectbox(t("clamp_at"), layers, key="iv_clamp_at")
    st.session_state.setdefault("iv_limit", 1e-3)
    limit = right.select_slider(t("clamp_limit"), CLAMP_LIMITS, key="iv_limit", format_func=lambda v: f"{v:g}")
    earlier = [n for n in layers if layers.index(n) < layers.index(clamp_at)]
    if not earlier:
        st.info(t("clamp_no_earlier"))
        return
    check_capture(c.model, earlier, tuple(analysis.x.shape[-2:]), copies=4)
    key = ("clamp", c.model, digest, c.size, tuple(earlier), clamp_at, limit, target)

    def make():
        plain, clamped = vz.clamp_gradients(get_bundle(c.model).model, analysis.x, earlier, clamp_at=clamp_at,
                                            limit=float(limit), target=target, as_maps=True)
        hw = tuple(analysis.x.shape[-2:])
        return plain, clamped, cams_from(plain, hw), cams_from(clamped, hw)

    def size(made) -> int:
        plain, clamped, _, _ = made
        return sum(x.element_size() * x.nelement() for r in (plain, clamped)
                   for x in [*r.activations.values(), *r.gradients.values()])

    with st.spinner(t("running_backward", label=bundle.categories[target])):
        plain, clamped, cams, cams_clamped = result_cache().get_or_create(key, make, size)
    alpha = 0.5
    for name in earlier:
        st.subheader(name)
        g0, g1 = plain.gradients[name], clamped.gradients[name]
        reach = float(max(g0.abs().max(), g1.abs().max())) or 1.0
        cols = st.columns(4)
        for col, grad, head, which in ((cols[0], g0, "clamp_before", "b"), (cols[1], g1, "clamp_after", "a")):
            png = grid_png(grad, ("clamp", *key, name, which), min(c.channels or 16, 16), "index", "RdBu_r", "layer",
                           None, f"∂y[{target}] / ∂ {name}", 0.0, (-reach, reach))
            col.caption(t(head))
            col.image(png)
        cols[2].image(channel_overlay(analysis.picture, cams[name], alpha, "jet"), caption=t("clamp_cam_before"))
        cols[3].image(channel_overlay(analysis.picture, cams_clamped[name], alpha, "jet"), caption=t("clamp_cam_after"))


# ---------------------------------------------------------------------------------------------
# two photos side by side


def compare_bytes() -> tuple[str, bytes | None]:
    source = st.session_state.get("compare_source", "sample")
    if source == "sample":
        name = st.session_state.get("compare") or SAMPLES[0]
        return name, read_sample(name)
    widget = st.session_state.get("compare_upload" if source == "upload" else "compare_camera")
    return "", (widget.getvalue() if widget is not None else None)


def show_compare(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    st.markdown(t("compare_intro"))
    left, right = st.columns([1, 2])
    left.radio(t("compare_source"), PHOTO_SOURCES, key="compare_source", horizontal=True,
               format_func=labels_for("source_"))
    source = st.session_state["compare_source"]
    if source == "sample":
        right.selectbox(t("compare_sample"), SAMPLES, key="compare")
    elif source == "upload":
        right.file_uploader(t("upload"), type=UPLOAD_TYPES, key="compare_upload", max_upload_size=PHOTO_MB,
                            help=t("upload_help"))
    else:
        right.camera_input(t("camera"), key="compare_camera")
    _, data = compare_bytes()
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


# ---------------------------------------------------------------------------------------------
# what a channel looks for: feature visualization and dataset exemplars

FV_SIZE, FV_STEPS, FV_SEED = 128, 128, 0
ATLAS_DIR = Path(os.environ.get("VIZHOOKS_ATLAS_DIR", "") or Path(__file__).resolve().parent / "atlas")
#: A small atlas built from the sample photos (random weights), so the view works on a fresh clone.
SHIPPED_ATLAS_DIR = SAMPLES_DIR / "atlas"


def excited_image(model: str, layers: tuple[str, ...], channels: tuple[int, ...], bar):
    """Images optimised to excite ``channels`` of ``layers[0]`` (one pass for all of them),
    kept with the other results; ``bar`` is a progress bar the optimisation moves."""
    layer = layers[0]
    bundle = get_bundle(model)

    def make():
        def progress(step: int, steps: int) -> None:
            bar.progress(step / steps, text=t("fv_running", layer=layer, step=step, steps=steps))

        return vz.visualize_channels(bundle.model, layer, list(channels), size=FV_SIZE, steps=FV_STEPS, seed=FV_SEED,
                                     progress=progress, mean=bundle.mean, std=bundle.std)

    return result_cache().get_or_create(("excite", model, layer, channels, FV_SIZE, FV_STEPS, FV_SEED), make,
                                        lambda images: 3 * FV_SIZE * FV_SIZE * len(images))


def show_excitation(model: str, layer: str, channel: int, slot) -> None:
    """The "What excites this channel?" button and, once asked (or cached), its image."""
    key = ("fv", model, layer, int(channel))
    asked = st.session_state.setdefault("_fv_asked", set())
    if slot.button(t("fv_button"), key="fv_go", icon=":material/auto_awesome:"):
        asked.add(key)
    if key in asked:
        bar = slot.progress(0.0)
        image = excited_image(model, (layer,), (int(channel),), bar)[0]
        bar.empty()
        slot.image(image, caption=t("fv_caption", layer=layer, channel=int(channel), size=FV_SIZE, steps=FV_STEPS))


@st.cache_resource(ttl=300, show_spinner=False)
def atlases_for(model: str, folder: str) -> list:
    """Atlases under the operator's folder (itself or one level down) made for ``model``."""
    found = []
    root = Path(folder)
    for candidate in [root, *sorted(p for p in root.iterdir() if p.is_dir())] if root.is_dir() else []:
        if (candidate / "manifest.json").is_file():
            try:
                atlas = vz.load_atlas(candidate)
            except (ValueError, OSError) as exc:
                LOG.warning("atlas %s not used: %s", candidate, exc)
                continue
            if atlas.model == model:
                found.append(atlas)
    return found


def show_atlas(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    st.markdown(t("atlas_intro"))
    atlases = atlases_for(c.model, str(ATLAS_DIR)) or atlases_for(c.model, str(SHIPPED_ATLAS_DIR))
    if not atlases:
        st.info(t("atlas_none", model=c.model, folder=str(ATLAS_DIR)))
    atlas = atlases[0] if atlases else None
    choices = [n for n in (atlas.layers if atlas else c.layers)]
    if st.session_state.get("atlas_layer") not in choices:
        st.session_state["atlas_layer"] = choices[0]
    left, right = st.columns(2)
    layer = left.selectbox(t("insp_layer"), choices, key="atlas_layer")
    data = image_bytes(c)
    act = analysis.activations.get(layer)
    if act is None:  # a layer of the atlas the sidebar did not choose: capture it for this photo
        act = get_analysis(c.model, digest, data, c.size, (layer,), "output").activations[layer]
    count = int(act.shape[1])
    st.session_state["atlas_channel"] = min(int(st.session_state.get("atlas_channel", 0)), count - 1)
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
            cols = st.columns(3)
            for col, ex in zip(cols, tops[row:row + 3], strict=False):
                col.image(str(ex.crop), caption=t("atlas_exemplar", score=ex.score, name=Path(ex.path).name))
    st.divider()
    if st.button(t("fv_grid_button", n=16), key="fv_grid"):
        first = min(channel, max(count - 16, 0))
        chosen = tuple(range(first, min(first + 16, count)))
        bar = st.progress(0.0)
        images = excited_image(c.model, (layer,), chosen, bar)
        bar.empty()
        for row in range(0, len(images), 8):
            cols = st.columns(8)
            for col, ch, image in zip(cols, chosen[row:row + 8], images[row:row + 8], strict=False):
                col.image(image, caption=str(ch))


# ---------------------------------------------------------------------------------------------
# the lesson


def lesson_code(step, bundle: vz.ModelBundle, c: Choices) -> str:
    image = f"sample_images/{c.sample}" if c.source == "sample" else "my_photo.jpg"
    target = st.session_state.get("target")
    target = None if target is None else int(target)
    kind, name = step.code
    common = dict(model=c.model, image=image, size=c.size, target=target, pretrained=bundle.pretrained,
                  num_classes=len(bundle.categories), lang=language())
    if kind == "view":
        return snippet(name, layers=list(c.layers), what="output", **common)
    layers = list(c.layers)
    clamp_at = None
    if name == "clamp":
        clamp_at = st.session_state.get("iv_clamp_at") if st.session_state.get("iv_clamp_at") in layers else layers[-1]
        layers = [n for n in layers if layers.index(n) < layers.index(clamp_at)] or layers[:1]
    return lesson_snippet(name, layers=layers, clamp_at=clamp_at, limit=float(st.session_state.get("iv_limit", 1e-3)),
                          **common)


def _to_step(n: int) -> None:
    st.session_state["lesson_step"] = step_index(n)


def show_lesson(analysis: Analysis, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    n = step_index(st.session_state.get("lesson_step", 1))
    step = STEPS[n - 1]
    st.subheader(t("lesson_step", n=n, total=len(STEPS), title=t(f"lesson_{step.id}_title")))
    st.markdown(t(f"lesson_{step.id}_text"))
    layers = [name for name in c.layers if name in analysis.activations]
    if step.live == "hello":
        st.caption(t("lesson_hello_caption"))
        modules = dict(bundle.model.named_modules())
        st.dataframe([{t("lesson_col_layer"): name, t("lesson_col_module"): type(modules[name.split("#")[0]]).__name__,
                       t("lesson_col_shape"): "×".join(map(str, analysis.activations[name].shape))}
                      for name in layers], hide_index=True, key="lesson_hello")
    elif step.live == "maps":
        show_feature_maps(analysis, c, digest)
    elif step.live == "prepost":
        layer = layers[0]
        before = get_analysis(c.model, digest, image_bytes(c), c.size, (layer,), "input")
        left, right = st.columns(2)
        for col, act, head, what in ((left, before.activations[layer], "lesson_prepost_input", "input"),
                                     (right, analysis.activations[layer], "lesson_prepost_output", "output")):
            col.caption(t(head, layer=layer))
            col.image(grid_png(act, ("lesson", c.model, digest, c.size, what, layer), c.channels, c.order, c.cmap,
                               c.norm, c.columns, layer))
    elif step.live == "table":
        show_table(analysis, c, digest)
    elif step.live == "gradients":
        show_gradients(analysis, bundle, c, digest)
    elif step.live == "clamp":
        show_clamp(analysis, bundle, c, digest, layers, class_picker(bundle, analysis))
    elif step.live == "backward":
        show_backward(analysis, bundle, c, digest)
    elif step.live == "gradcam":
        show_gradcam(analysis, bundle, c, digest)
    elif step.live == "remove":
        layer = layers[0]
        counts = result_cache().get_or_create(
            ("hook-calls", c.model, digest, c.size, layer),
            lambda: hook_calls_demo(get_bundle(c.model).model, analysis.x, layer), lambda _: 64)
        st.markdown(f"- {t('lesson_remove_forgot', calls=counts['forgot'])}\n"
                    f"- {t('lesson_remove_removed', calls=counts['removed'])}")
    st.caption(t("lesson_code"))
    st.code(lesson_code(step, bundle, c), language="python")
    st.markdown(f"**{t('lesson_question')}** {t(f'lesson_{step.id}_q')}")
    with st.expander(t("lesson_answer"), expanded=False):
        st.markdown(t(f"lesson_{step.id}_a"))
    back, link, nxt = st.columns([1, 2, 1])
    back.button(t("lesson_back"), key="lesson_back", disabled=n == 1, on_click=_to_step, args=(n - 1,))
    nxt.button(t("lesson_next"), key="lesson_next", disabled=n == len(STEPS), on_click=_to_step, args=(n + 1,))
    query = {**st.session_state.get("_query", {}), "view": "lesson", "step": str(n)}
    link.markdown(f"[{t('lesson_link')}](?{urlencode(query)})")


def show_code(bundle: vz.ModelBundle, c: Choices) -> None:
    view = st.radio(t("code_view"), ("maps", "gradients", "gradcam", "backward", "table"), key="code_view",
                    horizontal=True, format_func=labels_for("view_"))
    image = f"sample_images/{c.sample}" if c.source == "sample" else "my_photo.jpg"
    target = st.session_state.get("target")
    code = snippet(view, model=c.model, image=image, size=c.size, layers=list(c.layers), what=c.what,
                   target=None if target is None else int(target), pretrained=bundle.pretrained,
                   num_classes=len(bundle.categories), lang=language())
    st.caption(t("code_intro"))
    st.code(code, language="python")
    st.markdown(t("hooks_explained"))


# ---------------------------------------------------------------------------------------------
# video: every frame captured in batched passes once, then the slider only redraws


VIDEO_VIEWS = ("maps", "inspector", "gradcam")
PLAY_SECONDS = 0.5  # one frame per half second while playing: the grids of 5 layers redraw in time


def video_sidebar(sb) -> None:
    sb.file_uploader(t("video_upload"), type=list(VIDEO_TYPES), key="video_upload",
                     help=t("video_upload_help", mb=MAX_VIDEO_MB, seconds=MAX_VIDEO_SECONDS))
    st.session_state.setdefault("video_frames", DEFAULT_MAX_FRAMES)
    sb.slider(t("video_frames"), 8, 96, step=8, key="video_frames", help=t("video_frames_help"))


def get_clip(digest: str, data: bytes, max_frames: int):
    """The clip's frames, decoded once per (clip, frame count) and shared by all sessions."""
    def make():
        bar = st.progress(0.0, text=t("video_decoding"))
        try:
            return read_clip(data, max_frames=max_frames,
                             progress=lambda done, total: bar.progress(
                                 min(done / max(total, 1), 1.0), text=t("video_decoding_n", i=done, n=total)))
        finally:
            bar.empty()

    return result_cache().get_or_create(
        ("clip", digest, max_frames), make, lambda clip: sum(3 * f.width * f.height for f in clip.frames))


def get_video_analysis(model: str, digest: str, clip, size: int, layers: tuple[str, ...], what: str) -> VideoAnalysis:
    def make() -> VideoAnalysis:
        bundle = get_bundle(model)
        pictures = [bundle.resize(f, size) for f in clip.frames]
        height, width = bundle.preprocess(clip.frames[0], size).shape[-2:]
        check_capture(model, list(layers), (height, width), copies=len(pictures))
        bar = st.progress(0.0, text=t("video_capturing", n=len(pictures)))
        try:
            acts, logits = capture_frames_with_output(
                bundle, clip.frames, list(layers), size=size, what=what,
                progress=lambda done, total: bar.progress(min(done / max(total, 1), 1.0),
                                                          text=t("video_capturing_n", i=done, n=total)))
        finally:
            bar.empty()
        return VideoAnalysis(pictures, list(clip.times), frames_input(bundle, clip.frames, size), acts, logits, what)

    return result_cache().get_or_create(("video", model, digest, len(clip.frames), size, layers, what), make,
                                        lambda v: v.nbytes)


def get_video_cams(model: str, key: tuple, video: VideoAnalysis, layers: tuple[str, ...], target: int | None):
    """Grad-CAM of every frame for one class (None: each frame's own top class), computed once
    with a progress bar; ``{layer: (T, H, W)}``."""
    def make():
        net = get_bundle(model).model
        hw = tuple(video.x.shape[-2:])
        check_capture(model, list(layers), hw, copies=2)
        bar = st.progress(0.0, text=t("video_cams", n=len(video.pictures)))
        n = len(video.pictures)
        try:
            return frame_cams(net, video.x, list(layers), target=target,
                              progress=lambda i: bar.progress(i / n, text=t("video_cams_n", i=i, n=n)))
        finally:
            bar.empty()

    return result_cache().get_or_create(("video-cams", model, key, layers, target), make,
                                        lambda cams: sum(c.nbytes for c in cams.values()))


def toggle_play() -> None:
    st.session_state["video_playing"] = not st.session_state.get("video_playing", False)


def show_video_frame(video: VideoAnalysis, bundle: vz.ModelBundle, c: Choices, digest: str, view: str) -> None:
    """The slider and the chosen view of the current frame; while playing, this part alone reruns
    every PLAY_SECONDS and moves one frame on. Nothing here runs the model."""
    count = len(video.pictures)
    frame = min(int(st.session_state.get("video_frame", 0)), count - 1)
    if st.session_state.get("video_playing"):
        frame = (frame + 1) % count
    st.session_state["video_frame"] = frame
    st.slider(t("video_frame"), 0, count - 1, key="video_frame", disabled=count == 1,
              help=t("video_frame_help", n=count))
    frame = int(st.session_state["video_frame"])
    st.caption(t("video_at", i=frame + 1, n=count, s=video.times[frame]))
    analysis = video.frame(frame)
    show_input_and_predictions(analysis, bundle, c.size)
    st.divider()
    key = f"{digest}-{count}-f{frame}"  # the PNG caches: one entry per frame
    if view == "maps":
        show_feature_maps(analysis, c, key)
    elif view == "inspector":
        show_inspector(analysis, c)
    else:
        show_video_gradcam(video, frame, bundle, c, digest)


def show_video_gradcam(video: VideoAnalysis, frame: int, bundle: vz.ModelBundle, c: Choices, digest: str) -> None:
    cats = bundle.categories
    if not isinstance(st.session_state.get("video_target"), int):
        st.session_state["video_target"] = None
    target = st.selectbox(t("target"), range(len(cats)), key="video_target", index=None,
                          format_func=lambda i: f"{cats[i]} ({i})", placeholder=t("video_target_each"),
                          help=t("video_target_help"))
    alpha = st.slider(t("cam_alpha"), 0.0, 1.0, value=0.5, step=0.05, key="video_cam_alpha")
    cams = get_video_cams(c.model, (digest, len(video.pictures), c.size), video, c.layers,
                          None if target is None else int(target))
    label = cats[int(video.logits[frame].argmax())] if target is None else cats[int(target)]
    columns = st.columns(2) if len(cams) > 1 else [st.container()]
    for i, (name, maps) in enumerate(cams.items()):
        with columns[i % len(columns)]:
            st.subheader(name)
            st.image(channel_overlay(video.pictures[frame], maps[frame], alpha, "jet"),
                     caption=t("cam_caption", layer=name, label=label))


def show_video_export(video: VideoAnalysis, c: Choices, digest: str) -> None:
    st.divider()
    st.subheader(t("video_export"))
    layers = [n for n in c.layers if n in video.activations]
    if st.session_state.get("video_export_layer") not in layers:
        st.session_state["video_export_layer"] = layers[0]
    left, mid, right = st.columns([2, 2, 2])
    layer = left.selectbox(t("video_export_layer"), layers, key="video_export_layer")
    fps = mid.select_slider(t("video_export_fps"), (2, 4, 8, 12, 24), value=8, key="video_export_fps")

    key = ("movie", c.model, digest, len(video.pictures), c.size, c.what, layer, fps, c.channels, c.order, c.cmap,
           c.columns)
    with right:
        if st.button(t("video_make_movie"), key="video_make_movie", icon=":material/movie:"):
            with st.spinner(t("video_encoding", layer=layer)):
                st.session_state["video_movie"] = (key, layer_video(
                    video.activations[layer], fps=float(fps), channels=c.channels, order=c.order, cmap=c.cmap,
                    columns=c.columns, title=layer))
    kept = st.session_state.get("video_movie")  # this session's last movie, while its settings hold
    made = kept[1] if kept is not None and kept[0] == key else None
    if made is not None:
        data, mime, ext = made
        if mime.startswith("video/"):
            st.video(data, format=mime, loop=True)
        else:
            st.image(data)
        st.download_button(t("video_download_movie", ext=ext.upper().lstrip(".")), data=data,
                           file_name=f"{layer}.{ext.lstrip('.')}", mime=mime, key="video_download_movie",
                           on_click="ignore", icon=":material/download:")
    st.download_button(t("video_download_npz"), data=lambda: frames_npz_bytes(video.activations, video.times),
                       file_name=f"vizhooks-{c.model}-{digest[:8]}-frames.npz", mime="application/octet-stream",
                       key="video_download_npz", on_click="ignore", help=t("video_download_npz_help"))


def show_video(bundle: vz.ModelBundle, c: Choices) -> None:
    widget = st.session_state.get("video_upload")
    view = st.radio(t("view"), VIDEO_VIEWS, key="video_view", horizontal=True, label_visibility="collapsed",
                    format_func=labels_for("view_"))
    sync_url(c, view)
    if widget is None:
        st.info(t("no_video", mb=MAX_VIDEO_MB, seconds=MAX_VIDEO_SECONDS))
        return
    if not c.layers:
        st.info(t("no_layers"))
        return
    data = widget.getvalue()
    digest = image_digest(data)
    max_frames = int(st.session_state.get("video_frames", DEFAULT_MAX_FRAMES))
    with shown_errors():
        clip = get_clip(digest, data, max_frames)
        video = get_video_analysis(c.model, digest, clip, c.size, c.layers, c.what)
    st.caption(t("video_summary", n=len(clip.frames), total=clip.frame_count, seconds=clip.duration,
                 fps=clip.fps, w=clip.width, h=clip.height))
    playing = bool(st.session_state.get("video_playing"))
    st.button(t("video_pause" if playing else "video_play"), key="video_play", on_click=toggle_play,
              icon=":material/pause:" if playing else ":material/play_arrow:", disabled=len(clip.frames) < 2)
    part = st.fragment(show_video_frame, run_every=PLAY_SECONDS if playing else None)
    with shown_errors():
        part(video, bundle, c, digest, view)
    with shown_errors():
        show_video_export(video, c, digest)


@contextmanager
def shown_errors():
    """Turn a failure into one sentence on the page and stop this run. Nothing else is lost: the
    sidebar is already drawn, the shared model is unharmed (vizhooks removes its hooks and
    restores its state in `finally`), and the next change runs normally."""
    try:
        yield
    except vz.InvalidImageError as exc:
        st.error(t("bad_image", reason=str(exc)))
    except InvalidVideoError as exc:
        st.error(t("bad_video", reason=str(exc)))
    except vz.WeightsError as exc:
        LOG.warning("model refused: %s", exc)
        st.error(t("bad_model", reason=str(exc)))
    except CaptureTooLargeError as exc:
        st.warning(t("too_large", reason=str(exc)))
    except (ValueError, KeyError) as exc:
        LOG.warning("refused: %s", exc)
        st.error(t("bad_input", reason=str(exc)))
    except (RuntimeError, MemoryError) as exc:
        LOG.exception("model run failed")
        vz.release_memory()
        st.error(t("out_of_memory" if vz.is_out_of_memory(exc) else "failed"))
    else:
        return
    st.stop()


def main() -> None:
    init_state()
    set_language(st.session_state.get("lang", "en"))
    st.set_page_config(page_title=t("page_title"), layout="wide")
    choices, model_slot = sidebar()

    st.title(t("title"))
    st.caption(t("subtitle"))
    bad = st.session_state.get("_url_notices")
    if bad:
        st.info(t("url_notice", items=", ".join(f"{k}={v}" for k, v in bad)))

    with shown_errors(), st.spinner(t("loading_model", name=choices.model), show_time=True):
        bundle = get_bundle(choices.model)  # an operator's broken checkpoint: one sentence, page stays
    show_model_status(model_slot, bundle)

    if choices.source == "video":  # a clip: frames captured once, a slider instead of one picture
        show_video(bundle, choices)
        return
    if choices.source == "live":  # its own main area: a stream, not one picture
        from vizhooks.page.live import show_live

        with shown_errors():
            show_live(choices.model, bundle, choices.layers, choices.cmap)
        return
    data = image_bytes(choices)
    view = st.radio(t("view"), VIEWS, key="view", horizontal=True, label_visibility="collapsed",
                    format_func=labels_for("view_"))
    sync_url(choices, view)
    if data is None:
        st.info(t("no_upload" if choices.source == "upload" else "no_camera"))
        return
    if not choices.layers:
        st.info(t("no_layers"))
        return
    digest = image_digest(data)
    with shown_errors(), st.spinner(t("running", model=choices.model, n=len(choices.layers))):
        analysis = get_analysis(choices.model, digest, data, choices.size, choices.layers, choices.what)

    show_input_and_predictions(analysis, bundle, choices.size)
    st.divider()
    with shown_errors():
        if view == "maps":
            show_feature_maps(analysis, choices, digest)
        elif view == "inspector":
            show_inspector(analysis, choices)
        elif view == "gradients":
            show_gradients(analysis, bundle, choices, digest)
        elif view == "gradcam":
            show_gradcam(analysis, bundle, choices, digest)
        elif view == "backward":
            show_backward(analysis, bundle, choices, digest)
        elif view == "table":
            show_table(analysis, choices, digest)
        elif view == "intervene":
            show_intervene(analysis, bundle, choices, digest)
        elif view == "compare":
            show_compare(analysis, bundle, choices, digest)
        elif view == "lesson":
            show_lesson(analysis, bundle, choices, digest)
        elif view == "atlas":
            show_atlas(analysis, bundle, choices, digest)
        else:
            show_code(bundle, choices)

main()
