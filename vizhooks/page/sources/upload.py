"""The Upload source: a photo from the person's computer, kept in memory only."""

from __future__ import annotations

from typing import Any

import streamlit as st

from vizhooks.page.texts import t

PHOTO_MB = 20  # per photo; the server's limit (.streamlit/config.toml) is the video's
UPLOAD_TYPES = ["png", "jpg", "jpeg", "webp", "bmp", "gif", "tif", "tiff"]


def uploader(slot: Any, key: str = "upload") -> None:
    """The photo uploader in ``slot`` (the sidebar, or the Compare view's column)."""
    slot.file_uploader(t("upload"), type=UPLOAD_TYPES, key=key, max_upload_size=PHOTO_MB, help=t("upload_help"))


def uploaded_bytes(key: str = "upload") -> bytes | None:
    """The uploaded photo's bytes; None before one is given."""
    widget = st.session_state.get(key)
    return widget.getvalue() if widget is not None else None
