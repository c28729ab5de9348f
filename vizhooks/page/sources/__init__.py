"""The picture sources: a sample photo, an upload, the camera, a video clip, the live camera.
A new source is one module here, one entry in SOURCES below and its texts."""

from __future__ import annotations

from typing import Any

from vizhooks.page.sources.camera import camera, camera_bytes
from vizhooks.page.sources.sample import sample_bytes, sample_picker
from vizhooks.page.sources.upload import uploaded_bytes, uploader

__all__ = ["PHOTO_SOURCES", "SOURCES", "photo_bytes", "photo_picker"]

#: The picture sources, in the sidebar's order: the one list, read by the link's parser (urlstate) too.
SOURCES = ("sample", "upload", "camera", "video", "live")
PHOTO_SOURCES = ("sample", "upload", "camera")  # the Compare view's second picture


def photo_picker(source: str, slot: Any, sample_key: str = "sample", prefix: str = "",
                 sample_label: str = "sample") -> None:
    """The widget of a photo source in ``slot``; the Compare view's second picture uses its own keys."""
    if source == "sample":
        sample_picker(slot, sample_key, sample_label)
    elif source == "upload":
        uploader(slot, prefix + "upload")
    elif source == "camera":
        camera(slot, prefix + "camera")


def photo_bytes(source: str, sample_key: str = "sample", prefix: str = "") -> bytes | None:
    """The bytes of the photo a photo source holds; None before one is given."""
    if source == "sample":
        return sample_bytes(sample_key)
    if source == "upload":
        return uploaded_bytes(prefix + "upload")
    return camera_bytes(prefix + "camera")
