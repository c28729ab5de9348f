"""vizhooks.i18n.nt: a text that names a count takes the catalogue's plural form for it ("1 layer",
"4 layers"; Chinese has one form), as Python's own gettext picks it from the same catalogue compiled to
a .mo file, in every shipped language."""

from __future__ import annotations

import gettext
import io
import string

import pytest
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from vizhooks import i18n


def python_gettext(lang: str) -> gettext.GNUTranslations:
    """The catalogue as the C library's gettext would read it: compiled with Babel, read by the stdlib."""
    with i18n.po_path(lang).open("rb") as fh:
        catalog = read_po(fh, locale=lang.replace("-", "_"))
    mo = io.BytesIO()
    write_mo(mo, catalog)
    mo.seek(0)
    return gettext.GNUTranslations(mo)


def plural_keys() -> list[str]:
    with i18n.po_path(i18n.SOURCE).open("rb") as fh:
        return [m.id[0] for m in read_po(fh) if isinstance(m.id, tuple)]


def test_there_are_plural_entries():
    assert "ov_stage" in plural_keys()


@pytest.mark.parametrize("lang", i18n.languages())
def test_nt_picks_the_form_gettext_picks(lang):
    oracle = python_gettext(lang)
    i18n.set_language(lang)
    for key in plural_keys():
        for n in (0, 1, 2, 5, 11, 21, 101):
            values = {"n": 3, "h": 28, "w": 14, "layers": n}
            for text in (oracle.ngettext(key, f"{key}_plural", 1), oracle.ngettext(key, f"{key}_plural", 2)):
                for _, field, _, _ in string.Formatter().parse(text):  # every other placeholder, e.g. {model}
                    if field and field.split("!")[0].split(".")[0] not in values:
                        values[field.split("!")[0].split(".")[0]] = 7  # a number takes any format spec
            assert i18n.nt(key, n, **values) == oracle.ngettext(key, f"{key}_plural", n).format(**values), (key, n)


def test_english_has_two_forms_chinese_one():
    values = {"n": 2, "h": 28, "w": 28}
    i18n.set_language("en")
    assert i18n.nt("ov_stage", 1, layers=1, **values) == "Stage 2: 28×28, 1 layer"
    assert i18n.nt("ov_stage", 4, layers=4, **values) == "Stage 2: 28×28, 4 layers"
    assert i18n.nt("ov_stage", 0, layers=0, **values) == "Stage 2: 28×28, 0 layers"
    i18n.set_language("zh")
    assert i18n.nt("ov_stage", 1, layers=1, **values) == "第 2 阶段：28×28，1 层"
    assert i18n.nt("ov_stage", 4, layers=4, **values) == "第 2 阶段：28×28，4 层"


def test_a_key_that_is_not_a_plural_entry_is_a_bug():
    i18n.set_language("en")
    with pytest.raises(KeyError):
        i18n.nt("no_such_plural", 2)
    with pytest.raises(KeyError):  # a plain text is not a plural entry
        i18n.nt("ov_stage_pick", 2)
