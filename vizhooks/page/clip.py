"""The "Your own class names (CLIP)" model choice: a teacher types the classes, one a line, and CLIP's
image tower classifies the picture among them (vizhooks.models.zero_shot).

The model's name carries the class names (vizhooks.models.registry.clip_name), so every cache keyed by the
name keeps each set apart, and a link or a class that carries the model carries the names. The operator
picks the open_clip model with ``VIZHOOKS_CLIP`` (default ``RN50``; ``off`` hides the choice).
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from typing import Any

import streamlit as st

from vizhooks.models.registry import clip_name, clip_parts, is_clip
from vizhooks.models.zero_shot import reads_chinese
from vizhooks.page.texts import t

#: How many class names the page takes (the library takes more).
MIN_NAMES, MAX_NAMES = 2, 20
#: The class names a first visit starts with (CLIP's own prompt style; the teacher replaces them).
DEFAULT_NAMES = ("a photo of a cat", "a photo of a dog", "a photo of a red mug")
_CHINESE = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def clip_arch() -> str | None:
    """The open_clip model the page offers (``VIZHOOKS_CLIP``), or None: switched off or no open_clip."""
    arch = os.environ.get("VIZHOOKS_CLIP", "RN50").strip()
    return None if arch.lower() in ("", "off", "none") or not _has_open_clip() else arch


@functools.cache
def _has_open_clip() -> bool:
    return importlib.util.find_spec("open_clip") is not None


def read_names(text: str) -> tuple[str, ...]:
    """The class names in the text area: one a line, blank lines left out."""
    return tuple(line.strip() for line in text.splitlines() if line.strip())


def names_problem(names: tuple[str, ...]) -> str | None:
    """The sentence for class names the page does not take, else None."""
    if not MIN_NAMES <= len(names) <= MAX_NAMES:
        return t("hf_clip_count", n=len(names), low=MIN_NAMES, high=MAX_NAMES)
    if len(set(names)) != len(names):
        return t("hf_clip_repeated", name=next(n for n in names if names.count(n) > 1))
    return None


def offered(name: str) -> bool:
    """Whether this server offers the CLIP model ``name`` (a link's, a class's): its own arch, 2-20 names."""
    if not is_clip(name):
        return False
    arch, names = clip_parts(name)
    return arch == clip_arch() and names_problem(names) is None


def clip_choice() -> list[str]:
    """The model menu's CLIP entry: the current CLIP model, else one of the typed (or first) names; []
    when the server offers none."""
    arch = clip_arch()
    if arch is None:
        return []
    current = st.session_state.get("model", "")
    if offered(current):
        return [current]
    names = read_names(st.session_state.get("clip_names", ""))
    return [clip_name(arch, names if names_problem(names) is None else DEFAULT_NAMES)]


def _names_typed() -> None:
    """New class names: a new model (the same image tower, so the layers stay)."""
    arch = clip_arch()
    names = read_names(st.session_state.get("clip_names", ""))
    if arch is not None and is_clip(st.session_state.get("model", "")) and names_problem(names) is None:
        st.session_state["model"] = clip_name(arch, names)


def clip_controls(sb: Any, hidden: bool) -> None:
    """Under the model menu, for a CLIP model: the class names (a text area, one a line) and what the
    model reads: many languages (a multilingual text tower, vizhooks.models.zero_shot.reads_chinese), or
    English only, with a warning for a Chinese name."""
    model = st.session_state.get("model", "")
    if not is_clip(model):
        return
    names = clip_parts(model)[1]
    typed = read_names(st.session_state.get("clip_names", ""))
    if "clip_names" not in st.session_state or (names_problem(typed) is None and typed != names):
        st.session_state["clip_names"] = "\n".join(names)  # a link's or the teacher's names
    if hidden:  # a teacher's link fixed the model: the names are shown, not edited
        sb.caption(t("hf_clip_fixed", names=", ".join(names)))
        return
    sb.text_area(t("hf_clip_names"), key="clip_names", help=t("hf_clip_names_help", low=MIN_NAMES, high=MAX_NAMES),
                 on_change=_names_typed, height=120)
    problem = names_problem(read_names(st.session_state["clip_names"]))
    if problem:
        sb.warning(t("hf_clip_kept", problem=problem), icon=":material/warning:")
    if reads_chinese(clip_parts(model)[0]):
        sb.caption(t("hf_clip_many_languages"))
        return
    sb.caption(t("hf_clip_english"))
    chinese = next((n for n in names if _CHINESE.search(n)), None)
    if chinese is not None:  # an English-only text tower spells Chinese as bytes it hardly saw in training
        sb.warning(t("hf_clip_not_english", name=chinese), icon=":material/translate:")


def clip_option(name: str) -> str:
    """The model menu's line for a CLIP model."""
    arch, names = clip_parts(name)
    return t("hf_clip_option", arch=arch, n=len(names))
