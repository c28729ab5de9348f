"""The language of what is being made: the page's run, a lesson file. No table lives here, only which
language is current (per thread and per context: Streamlit runs each session in its own thread) and
how a sentence is looked up in tables of the texts*.py form (``{"en": EN, "zh": ZH}``).

The page's texts (vizhooks/page/texts.py) and the lesson's (vizhooks/lesson/i18n.py) both read the
language from here, so setting it once serves both.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Mapping

#: The languages every table has; English is the reference the others follow.
LANGUAGES: tuple[str, ...] = ("en", "zh")

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("vizhooks_language", default=None)


def set_language(lang: str) -> None:
    """Make ``lang`` the current language of this context (an unknown one: English)."""
    _current.set(lang if lang in LANGUAGES else "en")


def language() -> str:
    """The current language: the one set in this context, else ``VIZHOOKS_LANG``, else English."""
    lang = _current.get() or os.environ.get("VIZHOOKS_LANG", "en")
    return lang if lang in LANGUAGES else "en"


def language_from_locale(locale: str | None) -> str:
    """``"zh-CN"``, ``"zh_TW"``, ``"zh"`` -> "zh"; anything else (or nothing) -> "en"."""
    return "zh" if (locale or "").lower().replace("_", "-").split("-")[0] == "zh" else "en"


def lookup(tables: Mapping[str, Mapping[str, str]], key: str, lang: str | None = None, **values: object) -> str:
    """The sentence ``key`` of ``tables`` in ``lang`` (None: the current language), formatted with
    ``values``. A key missing in another language falls back to English; one missing in English is a
    bug and raises KeyError.

    Example:
        >>> lookup({"en": {"hi": "Hello {name}"}, "zh": {}}, "hi", "zh", name="Ada")
        'Hello Ada'
    """
    text = tables.get(lang or language(), {}).get(key) or tables["en"][key]
    return text.format(**values) if values else text
