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

import streamlit as st

import vizhooks as vz
from vizhooks.budget import CaptureTooLargeError, check_capture
from vizhooks.cam import cams_from
from vizhooks.export import npz_bytes
from vizhooks.gradients import BackwardRecord, backward_report, gradient_pass
from vizhooks.layers import architecture_layers, quick_picks, reference_hw, token_model
from vizhooks.models import family, list_models, operator_models, resolve_entry
from vizhooks.page.analysis import Analysis, analyse, image_digest, layer_stats, top_classes
from vizhooks.page.cache import ByteLRU
from vizhooks.page.snippets import snippet
from vizhooks.page.texts import t
from vizhooks.page.urlstate import (
    CHANNEL_CHOICES,
    DEFAULTS,
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
from vizhooks.weights import fetch_command

LOG = logging.getLogger("vizhooks.app")
SAMPLES_DIR = Path(__file__).resolve().parent / "sample_images"
SAMPLES = sorted(p.name for p in SAMPLES_DIR.iterdir() if p.suffix.lower() in (".jpg", ".jpeg", ".png"))
DEFAULT_SAMPLE = "chelsea.jpg" if "chelsea.jpg" in SAMPLES else SAMPLES[0]
UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"]
SOURCES = ("sample", "upload", "camera")


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
def model_option(name: str) -> str:
    """The selector's line for a model, without building it: family, parameters, input size."""
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
    return t("model_option", family=family(name), name=name, params=t("model_params_m", m=params / 1e6), size=size)


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
             columns: int | None, title: str, vcenter: float | None = None) -> bytes:
    fig = vz.feature_grid(_tensor, channels=channels, order=order, cmap=cmap, norm=norm, title=title,
                          columns=columns, vcenter=vcenter)
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
    models = list_models()
    if st.session_state.get("model") not in models:  # an operator entry removed since
        st.session_state["model"] = DEFAULTS["model"]
    sb.selectbox(t("model"), models, key="model", help=t("model_help"), format_func=model_option,
                 on_change=model_changed)
    for warning in operator_models()[1]:
        sb.warning(t("operator_warning", warning=warning), icon=":material/warning:")
    description = resolve_entry(st.session_state["model"]).description
    if description:
        sb.caption(t("model_description", description=description))
    model_slot = sb.container()  # device and weights status, filled once the model is loaded

    sb.radio(t("image_source"), SOURCES, key="source", horizontal=True,
             format_func=lambda s: t(f"source_{s}"))
    source = st.session_state["source"]
    if source == "sample":
        st.session_state.setdefault("sample", DEFAULT_SAMPLE)
        sb.selectbox(t("sample"), SAMPLES, key="sample")
    elif source == "upload":
        sb.file_uploader(t("upload"), type=UPLOAD_TYPES, key="upload", help=t("upload_help"))
    else:
        sb.camera_input(t("camera"), key="camera")
    sb.slider(t("size"), SIZE_MIN, SIZE_MAX, step=SIZE_STEP, key="size", help=t("size_help"))

    sb.subheader(t("layers_header"))
    model = st.session_state["model"]
    infos = architecture_layers(model)
    labels = {info.name: info.label for info in infos}
    # A layer chosen for another model may not exist in this one (resnet50 has conv3s).
    st.session_state["layers"] = [n for n in st.session_state.get("layers", []) if n in labels]
    sb.selectbox(t("quick_pick"), list(picks_for(model)), index=None, key="quick", on_change=apply_quick_pick,
                 placeholder=t("quick_pick_placeholder"), format_func=lambda p: pick_label(p, model))
    sb.multiselect(t("layers"), list(labels), key="layers", format_func=labels.get,
                   help=t("layers_help", side=reference_hw(model)[0]))
    sb.radio(t("what"), ("output", "input"), key="what", format_func=lambda w: t(f"what_{w}"))

    sb.subheader(t("display_header"))
    sb.select_slider(t("channels"), CHANNEL_CHOICES, key="channels")
    sb.selectbox(t("order"), ORDERS, key="order", format_func=lambda o: t(f"order_{o}"))
    sb.selectbox(t("cmap"), CMAPS, key="cmap")
    sb.radio(t("norm"), NORMS, key="norm", horizontal=True, format_func=lambda n: t(f"norm_{n}"))
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


def sync_url(c: Choices, view: str) -> None:
    target = st.session_state.get("target")
    query = to_query({
        "view": view, "target": target, "model": c.model,
        "sample": c.sample if c.source == "sample" else None, "layers": c.layers,
        "what": c.what, "size": c.size, "channels": c.channels or "all", "order": c.order,
        "cmap": c.cmap, "norm": c.norm, "columns": c.columns or 0,
    })
    if query != st.query_params.to_dict():
        st.query_params.from_dict(query)


# ---------------------------------------------------------------------------------------------
# main area


def show_model_status(slot, bundle: vz.ModelBundle) -> None:
    slot.caption(t("device", device=str(bundle.device).upper()))
    if bundle.pretrained:
        slot.caption(t("weights_ok", status=bundle.weights_status))
    else:
        slot.warning(t("weights_random", command=fetch_command(bundle.arch)), icon=":material/warning:")
        slot.expander(t("weights_details")).write(bundle.weights_status)


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
    where = {info.name: info.where for info in architecture_layers(c.model)}
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
        png = grid_png(grad, key, c.channels, c.order, "RdBu_r", "layer", c.columns, f"d logit / d {name}", 0.0)
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


def show_code(bundle: vz.ModelBundle, c: Choices) -> None:
    view = st.radio(t("code_view"), ("maps", "gradients", "gradcam", "backward", "table"), key="code_view",
                    horizontal=True, format_func=lambda v: t(f"view_{v}"))
    image = f"sample_images/{c.sample}" if c.source == "sample" else "my_photo.jpg"
    target = st.session_state.get("target")
    code = snippet(view, model=c.model, image=image, size=c.size, layers=list(c.layers), what=c.what,
                   target=None if target is None else int(target), pretrained=bundle.pretrained,
                   num_classes=len(bundle.categories))
    st.caption(t("code_intro"))
    st.code(code, language="python")
    st.markdown(t("hooks_explained"))


@contextmanager
def shown_errors():
    """Turn a failure into one sentence on the page and stop this run. Nothing else is lost: the
    sidebar is already drawn, the shared model is unharmed (vizhooks removes its hooks and
    restores its state in `finally`), and the next change runs normally."""
    try:
        yield
    except vz.InvalidImageError as exc:
        st.error(t("bad_image", reason=str(exc)))
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
    st.set_page_config(page_title=t("page_title"), layout="wide")
    init_state()
    choices, model_slot = sidebar()

    st.title(t("title"))
    st.caption(t("subtitle"))
    bad = st.session_state.get("_url_notices")
    if bad:
        st.info(t("url_notice", items=", ".join(f"{k}={v}" for k, v in bad)))

    with shown_errors(), st.spinner(t("loading_model", name=choices.model), show_time=True):
        bundle = get_bundle(choices.model)  # an operator's broken checkpoint: one sentence, page stays
    show_model_status(model_slot, bundle)

    data = image_bytes(choices)
    view = st.radio(t("view"), VIEWS, key="view", horizontal=True, label_visibility="collapsed",
                    format_func=lambda v: t(f"view_{v}"))
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
        else:
            show_code(bundle, choices)

main()
