"""Code: the few lines of vizhooks that make what the page shows, for the current choices."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from vizhooks.lesson.code import snippet
from vizhooks.page.taught import code_head
from vizhooks.page.texts import language, t
from vizhooks.page.views import View
from vizhooks.page.widgets import labels_for

if TYPE_CHECKING:  # annotations only: a view never imports the page's state (urlstate reads the views)
    from vizhooks.page.state import Choices, Context

CODE_VIEWS = ("maps", "gradients", "gradcam", "backward", "table")


def image_path(c: Choices) -> str:
    """The photo's path as a snippet names it."""
    return f"sample_images/{c.sample}" if c.source == "sample" else "my_photo.jpg"


def chosen_target() -> int | None:
    target = st.session_state.get("target")
    return None if target is None else int(target)


def show(ctx: Context) -> None:
    bundle, c = ctx.bundle, ctx.choices
    view = st.radio(t("code_view"), CODE_VIEWS, key="code_view", horizontal=True, format_func=labels_for("view_"))
    code = snippet(view, model=c.model, image=image_path(c), size=c.size, layers=list(c.layers), what=c.what,
                   target=chosen_target(), pretrained=bundle.pretrained, num_classes=len(bundle.categories),
                   lang=language(), head=code_head(c.model))
    st.caption(t("code_intro"))
    st.code(code, language="python")
    st.markdown(t("hooks_explained"))


VIEW = View("code", group="learn", order=30, label="view_code", show=show)
