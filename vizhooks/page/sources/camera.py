"""The Camera source: one photo from the browser's camera."""

from __future__ import annotations

from typing import Any

import streamlit as st

from vizhooks.page.texts import t


def camera(slot: Any, key: str = "camera") -> None:
    """The camera widget in ``slot`` (the sidebar, or the Compare view's column)."""
    slot.camera_input(t("camera"), key=key)


def camera_bytes(key: str = "camera") -> bytes | None:
    """The photo's bytes; None before one is taken."""
    widget = st.session_state.get(key)
    return widget.getvalue() if widget is not None else None
