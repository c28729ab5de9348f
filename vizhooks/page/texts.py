"""The page's texts: ``t(key, **values)``, ``nt(key, count, **values)`` (a count's plural form) and the
language switch, over the one text catalogue (vizhooks/i18n.py; the texts are in
vizhooks/locale/<lang>/LC_MESSAGES/vizhooks.po, one file per language).

``EN`` and ``ZH`` are the English and Chinese tables (key -> text) for code and tests that read a text
without the current language; ``section("polls")`` is one part of them.
"""

from __future__ import annotations

from vizhooks.i18n import (
    LANGUAGE_NAMES,
    LANGUAGES,
    language,
    language_from_locale,
    listed,
    nt,
    section,
    sentences,
    set_language,
    t,
    table,
)

__all__ = ["EN", "LANGUAGES", "LANGUAGE_NAMES", "ZH", "language", "language_from_locale", "listed", "nt",
           "section", "sentences", "set_language", "t", "use_session_language"]

EN = table("en")
ZH = table("zh")


def use_session_language() -> None:
    """Set this thread's language to the session's choice, for a fragment: a fragment's run skips the
    page's main(), where the language is set."""
    import streamlit as st  # here, so the texts stay importable without Streamlit

    set_language(st.session_state.get("lang", "en"))
