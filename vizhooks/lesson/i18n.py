"""The lesson's sentences in one language: ``t(key, lang=None, **values)``.

The tables are texts_lesson.py (the steps and the handout), texts_views.py (what the handout draws as
the views do) and texts_tables.py (table headers); the language is the one vizhooks.language holds
(the page sets it for its run, :func:`in_language` for a lesson file), unless ``lang`` names one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TypeVar

from ..language import LANGUAGES, lookup, set_language
from . import texts_lesson, texts_tables, texts_views

EN: dict[str, str] = {**texts_tables.EN, **texts_views.EN, **texts_lesson.EN}
ZH: dict[str, str] = {**texts_tables.ZH, **texts_views.ZH, **texts_lesson.ZH}
TABLES: dict[str, dict[str, str]] = {"en": EN, "zh": ZH}

T = TypeVar("T")


def t(key: str, lang: str | None = None, **values: object) -> str:
    """The lesson's sentence ``key`` in ``lang`` (None: the current language), formatted with ``values``.

    Raises:
        KeyError: no English sentence has that key (a bug).
    """
    return lookup(TABLES, key, lang, **values)


def known(key: str) -> bool:
    """Whether the lesson's tables have a sentence ``key``."""
    return key in EN


def in_language(lang: str, make: Callable[[], T]) -> T:
    """``make()`` with ``lang`` as the current language, in a copy of the caller's context: the page's
    download runs outside the session's script run, and its language must not leak into it.

    Raises:
        ValueError: an unknown language.
    """
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {lang!r}.")

    def run() -> T:
        set_language(lang)
        return make()

    return contextvars.copy_context().run(run)
