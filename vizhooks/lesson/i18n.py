"""The lesson's sentences in one language: ``t(key, lang=None, **values)``.

The sentences are the text catalogue's (vizhooks/locale, read by :mod:`vizhooks.i18n`), the same one
the page reads; the language is the current one (the page sets it for its run, :func:`in_language`
for a lesson file), unless ``lang`` names one.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TypeVar

from vizhooks.i18n import LANGUAGES, SOURCE, language, set_language, table

T = TypeVar("T")


def t(key: str, lang: str | None = None, **values: object) -> str:
    """The lesson's sentence ``key`` in ``lang`` (None: the current language), formatted with ``values``.

    Raises:
        KeyError: no English sentence has that key (a bug).
    """
    text = table(lang if lang is not None and lang in LANGUAGES else language()).get(key) or table(SOURCE)[key]
    return text.format(**values) if values else text


def known(key: str) -> bool:
    """Whether the catalogue has a sentence ``key``."""
    return key in table(SOURCE)


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
