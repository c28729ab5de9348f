"""The view menu: the views in groups a newcomer understands (Look, Explain, Change, Learn, Under the
hood) in one row, with "Start the lesson" beside them, and the open group's views under it; both
read from the registry (vizhooks.page.views).

The session key ``view`` holds the view: a link's ``?view=``, the teacher's page (a class), the
"Start the lesson" button and the Overview's "open in the inspector" set it. The group is worked
out from the view on every run, so whatever sets the view opens its group too; a click on a group
opens the view last shown in that group (its first view the first time).
"""

from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from vizhooks.page.present import MENU_KEY, lesson_button
from vizhooks.page.texts import language, set_language, t
from vizhooks.page.views import BY_NAME, GROUPS, in_group

DEFAULT_VIEW = "maps"


def _labels(text_key: Callable[[str], str]) -> Callable[[str], str]:
    """A format_func fixed in this run's language (Streamlit may call it later, outside this run)."""
    lang = language()

    def label(option: str) -> str:
        set_language(lang)
        return t(text_key(option))

    return label


def _open_group() -> None:
    """A group clicked: its last shown view (else its first) becomes the view."""
    group = st.session_state["view_group"]
    st.session_state["view"] = st.session_state.get("_menu_last", {}).get(group) or in_group(group)[0]


def view_menu() -> str:
    """The menu, with the view the session holds chosen in it; returns that view's name."""
    view = st.session_state.get("view")
    if view not in BY_NAME:
        view = DEFAULT_VIEW
    group = BY_NAME[view].group
    st.session_state.setdefault("_menu_last", {})[group] = view
    # both set before the widgets are drawn: a view set by a link, the class or a button moves the group
    st.session_state["view_group"] = group
    st.session_state["view"] = view
    if "view" in (st.session_state.get("hide") or ()):  # a teacher's link fixed the view (?hide=view)
        return view
    with st.container(key=MENU_KEY, gap="xsmall"):
        with st.container(horizontal=True, vertical_alignment="center"):
            st.segmented_control(t("view_group"), [g for g in GROUPS if in_group(g)], key="view_group",
                                 required=True, format_func=_labels(lambda g: f"group_{g}"), on_change=_open_group,
                                 label_visibility="collapsed")
            lesson_button()
        st.pills(t("view"), in_group(group), key="view", required=True,
                 format_func=_labels(lambda name: BY_NAME[name].label), label_visibility="collapsed")
    return view
