"""One text catalogue: every sentence of the page and of the library's coded refusals (which the command
line prints too), as gettext catalogues read with Babel.

``vizhooks/locale/<lang>/LC_MESSAGES/vizhooks.po`` holds one language. Message ids are symbolic keys
(``"page_title"``, ``"err_image_empty"``), the ones the code has always used in ``t("key")``; ``en.po``
holds the English sentences, and every other ``.po`` carries the English as an extracted comment
(``#.``) above each entry for its translator. A ``# section: NAME`` comment groups the entries of one
part of the page (``section()``). Each ``.po`` is parsed once per process, on first use (about 0.2 s
for today's two, ~700 entries each); after that a text is one dictionary look-up, so the page's
script, which runs on every interaction, never reads a file.

``t(key, **values)`` looks a text up in the current language (a context variable, so each Streamlit
session's thread has its own) and fills in ``{values}`` with ``str.format``. A key missing in another
language falls back to English; a key missing in English is a bug and raises KeyError.
``nt(key, count, **values)`` is the same for a text that names a count ("1 layer", "4 layers"): its entry is
a gettext plural entry (``msgid "key"``, ``msgid_plural "key_plural"``, ``msgstr[0]``, ``msgstr[1]``...),
and the catalogue header's ``Plural-Forms`` rule picks the form for the count (English two, Chinese one).

Adding a language needs no code:

1. ``pybabel init -i vizhooks/locale/vizhooks.pot -d vizhooks/locale -D vizhooks -l zh_Hant``
   writes ``vizhooks/locale/zh_Hant/LC_MESSAGES/vizhooks.po`` with every key and its English.
2. Fill in each ``msgstr`` (``language_name`` is how the language names itself in the page's
   switch); keep every ``{placeholder}`` and its format spec.
3. ``tests/test_catalogue.py`` checks that every key is translated with the same placeholders.

繁體中文 (``zh_Hant``) is not written this way: ``python -m vizhooks.hant`` generates it from ``zh.po``
(OpenCC s2twp and reviewed overrides); re-run it after ``zh.po`` changes.

The page calls the language by its folder's name with ``-`` for ``_`` (``zh_Hant`` -> ``zh-Hant``).
After English texts change, ``python -m vizhooks.i18n`` rewrites the template from ``en.po`` and
``pybabel update -w 100 -i vizhooks/locale/vizhooks.pot -d vizhooks/locale -D vizhooks -l zh`` carries the new
English comments and keys into ``zh.po``. ``pybabel extract -F babel.cfg -k t -k english -k nt -o used.pot .`` lists
every key the code uses; the tests check each of them is in the catalogue.
"""

from __future__ import annotations

import contextvars
import errno
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path

#: Where the catalogues live: one folder per language, gettext's layout.
LOCALE_DIR = Path(__file__).with_name("locale")
DOMAIN = "vizhooks"
#: The language every key must have, and the one a missing text falls back to.
SOURCE = "en"
#: The translator comment that names an entry's section.
SECTION_MARK = "section: "

_current: contextvars.ContextVar[str | None] = contextvars.ContextVar("vizhooks_language", default=None)


def po_path(lang: str) -> Path:
    """The catalogue file of ``lang`` (``"zh-Hant"`` lives in the folder ``zh_Hant``)."""
    return LOCALE_DIR / lang.replace("-", "_") / "LC_MESSAGES" / f"{DOMAIN}.po"


@functools.cache
def languages() -> tuple[str, ...]:
    """Every language with a catalogue, English first, as the page names them (``"zh-Hant"``)."""
    found = sorted(p.parent.parent.name.replace("_", "-") for p in LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
    if SOURCE not in found:
        raise FileNotFoundError(f"The English catalogue {po_path(SOURCE)} is missing; reinstall vizhooks.")
    return (SOURCE, *(lang for lang in found if lang != SOURCE))


@functools.cache
def _read(lang: str) -> tuple[dict[str, str], dict[str, str], dict[str, tuple[str, ...]], str]:
    """``(texts, sections, plurals, rule)`` of one catalogue: key -> text (untranslated entries left out,
    so they fall back to English), key -> section name, key -> the forms of a plural entry (``msgid`` /
    ``msgid_plural``, read by :func:`nt`) and the catalogue's ``Plural-Forms`` rule (``"(n != 1)"``,
    Chinese ``"0"``). Parsed once per process."""
    from babel.messages.pofile import read_po  # here: the library's import stays free of Babel

    with po_path(lang).open("rb") as fh:
        catalog = read_po(fh, locale=lang.replace("-", "_"), domain=DOMAIN)
    texts: dict[str, str] = {}
    sections: dict[str, str] = {}
    plurals: dict[str, tuple[str, ...]] = {}
    for message in catalog:
        if not message.id:
            continue  # the header
        key = str(message.id[0] if isinstance(message.id, (tuple, list)) else message.id)
        if isinstance(message.string, (tuple, list)):  # a plural entry: one text per form
            forms = tuple(str(form) for form in message.string)
            if all(forms) and not message.fuzzy:
                plurals[key] = forms
        elif message.string and not message.fuzzy:
            texts[key] = str(message.string)
        for comment in message.user_comments:
            if comment.startswith(SECTION_MARK):
                sections[key] = comment[len(SECTION_MARK):].strip()
    return texts, sections, plurals, catalog.plural_expr


@functools.cache
def _plural_index(rule: str) -> Callable[[int], int]:
    """gettext's plural rule (C syntax, from a catalogue's header) as a function of the count."""
    import gettext

    return gettext.c2py(rule)


def table(lang: str) -> dict[str, str]:
    """Every translated text of ``lang``: key -> text (a shared dict: read it, do not change it)."""
    return _read(lang)[0]


def section(name: str, lang: str = SOURCE) -> dict[str, str]:
    """The texts of one section (``"polls"``, ``"errors"``...) in ``lang``, keyed as in English;
    sections are named by the English catalogue."""
    texts = table(lang)
    return {key: texts[key] for key, part in _read(SOURCE)[1].items() if part == name and key in texts}


def placeholders(text: str) -> list[tuple[str, str, str]]:
    """``(name, conversion, format spec)`` of each ``{field}`` of a text, in order; [] for a text whose
    braces are not a format string (it is shown without ``str.format``)."""
    import string

    try:
        return [(name, conv or "", spec or "") for _, name, spec, conv in string.Formatter().parse(text)
                if name is not None]
    except ValueError:
        return []


def set_language(lang: str) -> None:
    """The language of this thread's page run (Streamlit runs each session in its own thread)."""
    _current.set(lang if lang in languages() else SOURCE)


def language() -> str:
    """This thread's language: the page's choice, else ``VIZHOOKS_LANG`` read as a locale (``zh``, ``zh_CN``,
    ``zh_CN.UTF-8``, ``ZH``, ``zh_TW``: see :func:`language_from_locale`), else English."""
    lang = _current.get()
    return lang if lang in languages() else _env_language(os.environ.get("VIZHOOKS_LANG", SOURCE))


@functools.lru_cache(maxsize=8)
def _env_language(value: str) -> str:
    return language_from_locale(value.split(".")[0].split("@")[0])


def language_from_locale(locale: str | None) -> str:
    """A browser's locale as a catalogue language: ``"zh-CN"``, ``"zh"`` -> ``"zh"``; an exact match
    (``"zh-Hant"``) first, then Traditional script (``"zh-Hant-HK"``, ``"zh_TW"``, ``"zh-HK"``, ``"zh-MO"`` ->
    ``"zh-Hant"``), then the language's first part; anything else (or nothing) -> ``"en"``."""
    tag = (locale or "").lower().replace("_", "-")
    by_tag = {lang.lower(): lang for lang in languages()}
    parts = tag.split("-")
    traditional = parts[0] == "zh" and bool({"hant", "tw", "hk", "mo"} & set(parts[1:])) and "hans" not in parts
    return by_tag.get(tag) or (traditional and by_tag.get("zh-hant")) or by_tag.get(parts[0]) or SOURCE


def t(key: str, **values: object) -> str:
    """The text ``key`` in the current language, formatted with ``values``.

    Args:
        key: a message id of the catalogue, e.g. ``"page_title"``.
        **values: the ``{placeholders}`` of the text; without values the text is returned as written.

    Returns:
        The sentence; English where the current language lacks it.

    Raises:
        KeyError: ``key`` is not in the English catalogue (a bug: tests/test_catalogue.py checks every key).

    Example:
        >>> t("where_conv", index=1, count=20)
        'conv 1 of 20'
    """
    text = table(language()).get(key) or table(SOURCE)[key]
    return text.format(**values) if values else text


def listed(items: Iterable[str]) -> str:
    """``items`` as one list in the current language: "a, b, c"; in Chinese "a、b、c"."""
    return t("list_separator").join(items)


#: Full-width marks that end a Chinese sentence: the next sentence follows with no space.
_FULL_WIDTH_ENDS = tuple("。！？；：）」』")


def sentences(*parts: str) -> str:
    """The sentences ``parts`` (empty ones left out) as one text: a space between two, as English writes
    them, except after a full-width mark ("。"), after which Chinese writes none."""
    out = ""
    for part in filter(None, parts):
        out += ("" if not out or out.endswith(_FULL_WIDTH_ENDS) else " ") + part
    return out


def nt(key: str, count: int, /, **values: object) -> str:
    """The plural entry ``key`` in the current language, in its form for ``count``, formatted with
    ``values`` (``{n}`` is the count when ``values`` has no ``n``). The forms and the rule that picks one are the
    catalogue's gettext plural forms (``msgid_plural``, ``msgstr[0]``...; ``Plural-Forms`` in its header):
    English has two, Chinese one. A language without the entry falls back to English.

    Raises:
        KeyError: ``key`` is not a plural entry of the English catalogue (a bug).

    Example:
        >>> nt("ov_stage", 1, n=2, h=28, w=28, layers=1), nt("ov_stage", 4, n=2, h=28, w=28, layers=4)
        ('Stage 2: 28×28, 1 layer', 'Stage 2: 28×28, 4 layers')
    """
    lang = language()
    if key not in _read(lang)[2]:
        lang = SOURCE
    forms, rule = _read(lang)[2][key], _read(lang)[3]
    text = forms[min(_plural_index(rule)(count), len(forms) - 1)]
    return text.format(**{"n": count, **values})


def english(key: str, **values: object) -> str:
    """The English text ``key`` whatever the page's language: library refusals and the command line. A plural
    entry (see :func:`nt`) takes its form for ``values["n"]``; :class:`Names` are listed ("a, b")."""
    if is_plural(key):
        return in_source(lambda: said(key, values))
    text = table(SOURCE)[key]
    return text.format(**_listed_values(values, table(SOURCE)["list_separator"], SOURCE)) if values else text


def is_plural(key: str, lang: str = SOURCE) -> bool:
    """Whether ``key`` is a plural entry of ``lang``'s catalogue (read with :func:`nt`, not :func:`t`)."""
    return key in _read(lang)[2]


def in_source(make: Callable[[], str]) -> str:
    """``make()`` with English as the current language, in a copy of the caller's context."""
    def run() -> str:
        _current.set(SOURCE)
        return make()

    return contextvars.copy_context().run(run)


def said(key: str, values: Mapping[str, object]) -> str:
    """The text ``key`` in the current language filled with ``values``; a plural entry in its form for
    ``values["n"]`` (a refusal's sentence, ``err_CODE``, whichever kind its entry is). :class:`Names` are
    said as the language lists them (:func:`listed`: "a, b" in English, "a、b" in Chinese)."""
    values = _listed_values(values, t("list_separator"), language())
    if language() != SOURCE:
        values = {k: v.said() if isinstance(v, OSReason) else v for k, v in values.items()}
    return nt(key, _count(values), **values) if is_plural(key) else t(key, **values)


class Names(tuple[str, ...]):
    """A refusal's value that is a list of names (the near names of a mistyped one): :func:`said` and
    :func:`english` list it as the language lists names; any other tuple (a size the user gave) stays as
    Python writes it."""


class OSReason(str):
    """The operating system's reason for refusing a file, as a refusal's value: its own words (``strerror``)
    in English, and in another language the catalogue's ``os_error_<errno name>`` where it has one
    (:func:`said`)."""

    key: str = ""

    @classmethod
    def of(cls, exc: OSError) -> OSReason:
        reason = cls(exc.strerror or type(exc).__name__)
        reason.key = f"os_error_{errno.errorcode.get(exc.errno or 0, '')}"
        return reason

    def said(self) -> str:
        """The reason in the current language (the system's words where the catalogue lacks it)."""
        return t(self.key) if self.key in table(SOURCE) else str(self)


class SettingNames(Names):
    """A refusal's list of a store's settings that differ (``("audit_model", "audit_size")``): each said by
    the catalogue's ``setting_<name>`` in the language (a flag such as ``--size``, or words), not by the
    store's own key."""


def _listed_values(values: Mapping[str, object], sep: str, lang: str) -> dict[str, object]:
    """``values`` with each :class:`Names` joined by ``sep`` (:class:`SettingNames` in ``lang``'s words)."""
    def words(v: Names) -> Iterable[str]:
        return (table(lang).get(f"setting_{n}") or table(SOURCE).get(f"setting_{n}") or n for n in v) \
            if isinstance(v, SettingNames) else v

    return {k: sep.join(words(v)) if isinstance(v, Names) else v for k, v in values.items()}


def _count(values: Mapping[str, object]) -> int:
    """The count ``n`` of a plural text's values."""
    n = values["n"]
    if not isinstance(n, int):
        raise TypeError(f"a plural text's n must be a whole number, not {n!r}")
    return n


class _Languages(Mapping[str, dict[str, str]]):
    """language -> its table, read on first use (``LANGUAGES["zh"]``, ``"zh" in LANGUAGES``)."""

    def __getitem__(self, lang: str) -> dict[str, str]:
        if lang not in languages():
            raise KeyError(lang)
        return table(lang)

    def __iter__(self) -> Iterator[str]:
        return iter(languages())

    def __len__(self) -> int:
        return len(languages())


class _Names(Mapping[str, str]):
    """language -> how it names itself (its catalogue's ``language_name``)."""

    def __getitem__(self, lang: str) -> str:
        return LANGUAGES[lang].get("language_name") or lang

    def __iter__(self) -> Iterator[str]:
        return iter(languages())

    def __len__(self) -> int:
        return len(languages())


#: language -> key -> text, for every language with a catalogue.
LANGUAGES: Mapping[str, dict[str, str]] = _Languages()
#: How each language names itself in the page's switch.
LANGUAGE_NAMES: Mapping[str, str] = _Names()


def write_template(path: Path | None = None) -> Path:
    """Rewrite ``vizhooks/locale/vizhooks.pot`` from ``en.po``: every key, its section and its English
    as the extracted comment, no translation; ``pybabel init`` / ``update`` start from it."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    with po_path(SOURCE).open("rb") as fh:
        english_catalog = read_po(fh, locale=SOURCE, domain=DOMAIN)
    template = Catalog(domain=DOMAIN, project="vizhooks", version=None, copyright_holder="vizhooks",
                       msgid_bugs_address="", creation_date=english_catalog.creation_date,
                       revision_date=english_catalog.revision_date, fuzzy=False)
    template.header_comment = "# The vizhooks text catalogue's template: python -m vizhooks.i18n writes it from en.po."
    for message in english_catalog:
        if message.id:
            # no python-brace-format flag: Babel derives it from the msgid, a key without braces, and drops it on
            # update; tests/test_catalogue.py compares the placeholders instead. A plural entry's comment is
            # its English forms, one a line
            text = ("\n".join(message.string) if isinstance(message.string, (tuple, list))
                    else str(message.string))
            template.add(message.id, ("", "") if isinstance(message.id, tuple) else "",
                         auto_comments=text.split("\n"), user_comments=message.user_comments)
    target = path or LOCALE_DIR / f"{DOMAIN}.pot"
    with target.open("wb") as fh:
        write_po(fh, template, width=100, omit_header=False)
    return target


if __name__ == "__main__":
    print(write_template())
