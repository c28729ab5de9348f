"""The page's repeated patterns, written once: option labels in the page's language, a selection
kept valid, a progress bar that goes away, the two-column layer loop, top-5 bars, the class picker,
the picture with its predictions, and the "What excites this channel?" button."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import streamlit as st

import vizhooks as vz
from vizhooks.analysis import Analysis, top_classes
from vizhooks.models.labels import class_labels
from vizhooks.models.layers import LayerInfo, token_model
from vizhooks.page.results import FV_SIZE, FV_STEPS, excited_image
from vizhooks.page.texts import language, set_language, t

if TYPE_CHECKING:
    from torch import Tensor


#: The width of the picture above a view (it shows how the model saw it, not its details).
PICTURE_PX = 220


def labels_for(prefix: str) -> Callable[[Any], str]:
    """A format_func for options whose labels are the texts ``prefix + option``, fixed in this
    run's language: Streamlit may call it later, outside this run."""
    lang = language()

    def label(option: Any) -> str:
        set_language(lang)
        return t(f"{prefix}{option}")

    return label


def layer_label(info: LayerInfo) -> str:
    """The layer menu's line: name, place, resolution, channels, kernel, stride."""
    if info.out_channels is not None:
        k = "x".join(map(str, info.kernel_size or ()))
        s = info.stride[0] if info.stride and info.stride[0] == info.stride[1] else info.stride
        return t("label_conv", name=info.name, where=info.where, cin=info.in_channels,
                 cout=info.out_channels, k=k, s=s)
    channels = t("label_channels", n=info.out_channels_map) if info.out_channels_map else ""
    return t("label_other", name=info.name, where=info.where, type=info.type, channels=channels)


def pick_label(pick: str, model: str) -> str:
    """A quick pick's line in the menu."""
    if pick.startswith("res:"):
        hw = pick.removeprefix("res:").replace("x", "×")
        return t("pick_res_blocks", hw=hw) if token_model(model) else t("pick_res_convs", hw=hw)
    return t(f"pick_{pick}")


def keep_valid(key: str, options: Sequence[Any], default: Any) -> None:
    """Keep a menu's choice among ``options`` (a layer of another model, say); else ``default``."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default


def select_all() -> int:
    """A multiselect's ``select_all``: Streamlit's "Select all" row is English whatever the page's language,
    so it is offered on the English page only, as Streamlit offers it (up to 1,000 options), and a Chinese page
    lists the options alone (0)."""
    return 1000 if language() == "en" else 0


def keep_below(key: str, count: int, default: int = 0) -> None:
    """Keep a number input's value below ``count`` (a channel of a narrower layer, say); the opening link's value
    that is too large for the layer is said as the link's other refused values are (the notice under the title)."""
    value = int(st.session_state.get(key, default))
    if from_link(key, value) and value >= count:
        say_link_refused(key, value)
    st.session_state[key] = min(value, count - 1)


def from_link(key: str, asked: Any) -> bool:
    """Whether ``asked`` is the opening link's ``key`` (``_link``, kept by ``state.init_state``): asked once a
    key, by the view that checks it once its layer or model is known; a value set on the page is not the link's
    (the address bar holds the page's values too)."""
    link = st.session_state.get("_link", {}).pop(key, None)
    if isinstance(asked, (list, tuple)):
        return isinstance(link, (list, tuple)) and sorted(link) == sorted(asked)
    return link is not None and link == asked


def say_link_refused(key: str, value: Any) -> None:
    """The notice of the link's ``key=value`` left out (``value`` a list: those of its values)."""
    shown = ",".join(map(str, value)) if isinstance(value, (list, tuple)) else str(value)
    st.info(t("url_notice", items=f"{key}={shown}"))


@contextmanager
def progress_bar(text: str | None = None, slot: Any = None, show: bool = True) -> Iterator[Any]:
    """A progress bar in ``slot`` (the main area by default) for the time of the block, then gone;
    with ``show=False``, None (a few grids draw faster than a bar updates)."""
    if not show:
        yield None
        return
    bar = (slot or st).progress(0.0, text=text)
    try:
        yield bar
    finally:
        bar.empty()


def fraction(done: int, total: int) -> float:
    """``done / total`` for a progress bar, within 0..1."""
    return min(done / max(total, 1), 1.0)


def layer_columns(names: Sequence[str]) -> Iterator[tuple[int, str]]:
    """Layers in two columns (one when there is one layer), each under its name as a heading;
    yields ``(i, name)`` with the layer's column as the current container."""
    columns = st.columns(2) if len(names) > 1 else [st.container()]
    for i, name in enumerate(names):
        with columns[i % len(columns)]:
            st.subheader(name)
            yield i, name


def shown_labels(bundle: vz.ModelBundle) -> list[str]:
    """The model's class names as the page shows them: Chinese ImageNet names on the Chinese page
    (the code view and the exports keep torchvision's English ones)."""
    return class_labels(bundle.categories, language())


def top5(logits: Tensor, categories: Sequence[str]) -> list[tuple[str, float]]:
    """The five most likely classes: (label, probability), most likely first."""
    return [(p.label, float(p.probability)) for p in top_classes(logits, list(categories), 5)]


def top5_bars(slot: Any, logits: Tensor, categories: Sequence[str]) -> None:
    """The five most likely classes as bars."""
    for label, probability in top5(logits, categories):
        slot.progress(min(max(probability, 0.0), 1.0), text=f"{label} · {probability:.1%}")


def class_select(categories: Sequence[str], key: str, placeholder: str, help: str,
                 persist: bool = False) -> int | None:
    """A menu of the model's classes (``None``: none picked); a class of another model, or from a
    link, is dropped first."""
    value = st.session_state.get(key)
    if not isinstance(value, int) or not 0 <= value < len(categories):
        if isinstance(value, int):  # from a link, or another model's class: say so, and drop it from the link
            st.info(t("target_out_of_range", target=value, n=len(categories), last=len(categories) - 1))
            if key in st.query_params:
                del st.query_params[key]
        st.session_state[key] = None
    picked = st.selectbox(t("target"), range(len(categories)), key=key, index=None,
                          format_func=lambda i: f"{categories[i]} ({i})", help=help, placeholder=placeholder,
                          persist_state="session" if persist else None)
    return None if picked is None else int(picked)


def class_picker(bundle: vz.ModelBundle, analysis: Analysis) -> int:
    """The class whose logit is differentiated: the top-1 class unless the person picks one."""
    names = shown_labels(bundle)
    top = top_classes(analysis.logits, names, 1)[0]
    picked = class_select(names, "target", t("target_top1", label=top.label, index=top.index),
                          t("target_help"), persist=True)
    return top.index if picked is None else picked


#: A picture whose shorter side was enlarged more than this many times is said to hold little for the model.
UPSCALED = 4


def input_and_predictions(analysis: Analysis, bundle: vz.ModelBundle, size: int) -> None:
    """The picture as the model saw it, beside its top-5 classes: small, so the view under them
    starts on the first screen."""
    left, right = st.columns([2, 3], gap="medium")
    w, h = analysis.picture.size
    left.image(analysis.picture_jpeg(), caption=t("model_saw", width=w, height=h), width=PICTURE_PX)
    note = bundle.input_note(size)
    if note:
        left.caption(note)
    sw, sh = analysis.source_size
    if 0 < min(sw, sh) and min(sw, sh) * UPSCALED < min(w, h):  # a 1 x 1 upload became a 128 x 128 square in silence
        left.caption(f":material/warning: {t('input_upscaled', source_w=sw, source_h=sh, width=w, height=h)}")
    top = right.container(gap="xxsmall", key="top5")
    top.subheader(t("top5"))  # a heading of the page's outline, set small (present.py)
    if not bundle.pretrained:
        top.caption(f":material/warning: {t('top5_random')}")
    top5_bars(top, analysis.logits, shown_labels(bundle))


def show_excitation(model: str, layer: str, channel: int, slot: Any) -> None:
    """The "What excites this channel?" button and, once asked (or cached), its image."""
    key = ("fv", model, layer, int(channel))
    asked = st.session_state.setdefault("_fv_asked", set())
    if slot.button(t("fv_button"), key="fv_go", icon=":material/auto_awesome:"):
        asked.add(key)
    if key in asked:
        with progress_bar(slot=slot) as bar:
            image = excited_image(model, (layer,), (int(channel),), bar)[0]
        slot.image(image, caption=t("fv_caption", layer=layer, channel=int(channel), size=FV_SIZE, steps=FV_STEPS))
