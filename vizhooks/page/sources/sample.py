"""The Sample source: the photos in ``sample_images/`` beside app.py."""

from __future__ import annotations

from typing import Any

import streamlit as st

from vizhooks.page.folders import samples_dir
from vizhooks.page.texts import t

PHOTO_TYPES = (".jpg", ".jpeg", ".png")


_listed: dict[tuple[str, int], list[str]] = {}


def samples() -> list[str]:
    """The sample photos' file names, sorted; listed again only when the folder changed (every run
    asks, and listing it was 6% of a page view's server time)."""
    folder = samples_dir()
    key = (str(folder), folder.stat().st_mtime_ns)
    names = _listed.get(key)
    if names is None:
        names = sorted(p.name for p in folder.iterdir() if p.suffix.lower() in PHOTO_TYPES)
        _listed.clear()
        _listed[key] = names
    return list(names)


def default_sample() -> str:
    names = samples()
    return "chelsea.jpg" if "chelsea.jpg" in names else names[0]


@st.cache_data(max_entries=64, show_spinner=False)
def read_sample(name: str) -> bytes:
    return (samples_dir() / name).read_bytes()


def sample_picker(slot: Any, key: str = "sample", label: str = "sample") -> None:
    """The menu of sample photos in ``slot`` (the sidebar, or the Compare view's column)."""
    slot.selectbox(t(label), samples(), key=key)


def sample_bytes(key: str = "sample") -> bytes:
    """The chosen sample photo's bytes (the first one if the choice is gone)."""
    return read_sample(st.session_state.get(key) or samples()[0])
