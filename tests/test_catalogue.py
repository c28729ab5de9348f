"""The one text catalogue (vizhooks/i18n.py, vizhooks/locale/<lang>/LC_MESSAGES/vizhooks.po): every key in
every shipped language with the same placeholders, every key the code uses in the catalogue (found by Babel's
own extraction and, independently, by a walk over the code's syntax trees), the translators' English comments
and the template up to date, and a new language that needs only a .po file."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.frontend import parse_mapping_cfg
from babel.messages.pofile import read_po

from vizhooks import i18n

ROOT = Path(__file__).resolve().parent.parent
#: the functions whose first argument is a message id (babel.cfg's documented `-k t -k english`)
KEYWORDS = {"t": None, "english": None, "nt": None}
#: presentation types that take the same kind of value: a spec may change width or precision, not the kind
KINDS = {**dict.fromkeys("s", "text"), **dict.fromkeys("bcdoxXn", "integer"), **dict.fromkeys("eEfFgG%", "real")}


def catalogue(lang: str) -> Catalog:
    with i18n.po_path(lang).open("rb") as fh:
        return read_po(fh, locale=lang.replace("-", "_"))


def entries(cat: Catalog) -> dict[str, object]:
    """key -> entry; a plural entry (msgid, msgid_plural) under its msgid."""
    return {m.id[0] if isinstance(m.id, tuple) else m.id: m for m in cat if m.id}


def written(message: object) -> str:
    """An entry's text; a plural entry's forms, one a line (as the template's comment gives them)."""
    string = message.string  # type: ignore[attr-defined]
    return "\n".join(string) if isinstance(string, tuple) else str(string)


LANGS = i18n.languages()
OTHERS = [lang for lang in LANGS if lang != i18n.SOURCE]
ENGLISH = entries(catalogue(i18n.SOURCE))


def test_shipped_languages_and_their_names():
    assert LANGS[0] == "en" and "zh" in LANGS
    assert "zh-Hant" in LANGS and i18n.LANGUAGE_NAMES["zh-Hant"] == "繁體中文"  # so every test here covers it
    assert list(i18n.LANGUAGES) == list(LANGS) == list(i18n.LANGUAGE_NAMES)
    assert (i18n.LANGUAGE_NAMES["en"], i18n.LANGUAGE_NAMES["zh"]) == ("English", "简体中文")
    names = [i18n.table(lang).get("language_name") for lang in LANGS]  # a new language names itself in its .po
    assert all(names) and len(set(names)) == len(names), names


@pytest.mark.parametrize("lang", LANGS)
def test_every_key_translated(lang):
    mine = entries(catalogue(lang))
    assert sorted(set(ENGLISH) - set(mine)) == [], f"keys missing in {i18n.po_path(lang)}"
    assert sorted(set(mine) - set(ENGLISH)) == [], f"keys of {lang} that English does not have"
    untranslated = sorted(k for k, m in mine.items() if not all(m.string if isinstance(m.string, tuple) else [m.string])
                          or m.fuzzy)
    assert untranslated == [], f"untranslated or fuzzy in {i18n.po_path(lang)}"


def kinds(text: str) -> dict[str, tuple[str, str]]:
    """field name -> (conversion, kind of value its spec takes)."""
    found: dict[str, tuple[str, str]] = {}
    for name, conv, spec in i18n.placeholders(text):
        kind = KINDS.get(spec[-1:], "any") if spec else "any"
        assert found.setdefault(name, (conv, kind)) == (conv, kind), f"{name} formatted two ways in {text!r}"
    return found


def sample(kind: str) -> object:
    return {"integer": 7, "real": 0.25, "text": "x"}.get(kind, 3)


@pytest.mark.parametrize("lang", OTHERS)
def test_placeholders_agree_with_english(lang):
    texts = i18n.table(lang)
    problems = {}
    for key, english in i18n.table(i18n.SOURCE).items():
        want, got = kinds(english), kinds(texts.get(key, english))
        if want != got:
            problems[key] = (want, got)
            continue
        values = {name: sample(kind) for name, (_, kind) in want.items()}
        if values:  # both format with the same values, as t() will
            english.format(**values)
            texts[key].format(**values)
    assert problems == {}


def test_placeholder_check_catches_a_mismatch():
    assert kinds("{n} photo(s)") != kinds("{count} 张照片")
    assert kinds("{p:.0%}") != kinds("{p:d}")
    assert kinds("{p:.0%}") == kinds("{p:.1%}")


def babel_keys() -> set[str]:
    """Every message id that `pybabel extract -F babel.cfg -k t -k english -k nt` finds, through Babel's API."""
    with (ROOT / "babel.cfg").open() as fh:
        method_map, options_map = parse_mapping_cfg(fh)
    return {message for _, _, message, _, _ in
            extract_from_dir(ROOT, method_map, options_map, keywords=KEYWORDS, comment_tags=())
            if isinstance(message, str)}


def ast_keys() -> set[str]:
    """The same, independently: every t("...") / english("...") call with a literal key."""
    found = set()
    for path in [ROOT / "app.py", *sorted((ROOT / "vizhooks").rglob("*.py"))]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)
                    and getattr(node.func, "id", getattr(node.func, "attr", None)) in KEYWORDS):
                found.add(node.args[0].value)
    return found


def test_every_key_the_code_uses_is_in_the_catalogue():
    extracted, walked = babel_keys(), ast_keys()
    assert len(extracted) > 400  # the page's ~hundreds of call sites, not an empty walk
    assert sorted(walked - set(ENGLISH)) == []
    # Babel sees what the syntax trees see, except calls inside an f-string (one token for Python 3.11's
    # tokenizer); a key it glues together (t("a" if c else "b") reads as "ab") fails here: write t("a") if c else t("b")
    assert sorted(extracted - walked) == []
    assert len(walked - extracted) < 20


def test_pybabel_extract_on_the_command_line(tmp_path):
    pybabel = Path(sys.executable).with_name("pybabel")
    subprocess.run([pybabel, "--quiet", "extract", "-F", "babel.cfg", "-k", "t", "-k", "english", "-k", "nt", "-o",
                    tmp_path / "used.pot", "."], cwd=ROOT, check=True)
    with (tmp_path / "used.pot").open("rb") as fh:
        used = {m.id for m in read_po(fh) if m.id}
    assert used == babel_keys()


def english_comment(message: object) -> str:
    return " ".join(" ".join(message.auto_comments).split())  # type: ignore[attr-defined]


@pytest.mark.parametrize("lang", OTHERS)
def test_translators_see_the_current_english(lang):
    stale = {key: english_comment(m) for key, m in entries(catalogue(lang)).items()
             if key in ENGLISH and english_comment(m) != " ".join(written(ENGLISH[key]).split())}
    assert stale == {}, ("English changed: python -m vizhooks.i18n, then pybabel update -w 100 -i vizhooks/locale/"
                         f"vizhooks.pot -d vizhooks/locale -D vizhooks -l {lang.replace('-', '_')}")


@pytest.mark.parametrize("lang", OTHERS)
def test_pybabel_update_leaves_the_catalogue_as_it_is(lang, tmp_path):
    """The documented update (template -> each .po) is a no-op on an up-to-date catalogue: Babel's own
    writer keeps every comment, section and line of what it reads, so translators' diffs stay small."""
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale)
    pybabel = Path(sys.executable).with_name("pybabel")
    subprocess.run([pybabel, "--quiet", "update", "-w", "100", "-i", locale / "vizhooks.pot", "-d", locale,
                    "-D", "vizhooks", "-l", lang.replace("-", "_")], check=True)
    po = Path(lang.replace("-", "_"), "LC_MESSAGES", "vizhooks.po")
    assert (locale / po).read_bytes() == (i18n.LOCALE_DIR / po).read_bytes()


def test_template_is_the_english_catalogue(tmp_path):
    fresh = i18n.write_template(tmp_path / "vizhooks.pot")
    assert fresh.read_bytes() == (i18n.LOCALE_DIR / "vizhooks.pot").read_bytes(), "run python -m vizhooks.i18n"


def test_sections_group_the_keys():
    assert set(i18n.section("polls")) >= {"poll_header", "lesson_what_c1"}
    assert set(i18n.section("polls", "zh")) == set(i18n.section("polls"))
    assert all(key.startswith("err_") for key in i18n.section("errors"))
    assert i18n.section("no such section") == {}


def test_parsed_once_per_process():
    i18n.t("title")
    before = i18n._read.cache_info()
    for lang in LANGS:
        i18n.set_language(lang)
        for _ in range(100):
            i18n.t("where_conv", index=1, count=2)
    after = i18n._read.cache_info()
    assert after.misses - before.misses <= len(LANGS) - 1 and after.hits > before.hits


def test_a_new_language_is_one_po_file(tmp_path, monkeypatch):
    """The documented steps: pybabel init from the template, translate, and the page has a third language."""
    locale = tmp_path / "locale"
    shutil.copytree(i18n.LOCALE_DIR, locale)
    pybabel = Path(sys.executable).with_name("pybabel")
    subprocess.run([pybabel, "--quiet", "init", "-i", locale / "vizhooks.pot", "-d", locale, "-D", "vizhooks",
                    "-l", "zh_Hant"], check=True)
    po = locale / "zh_Hant" / "LC_MESSAGES" / "vizhooks.po"
    with po.open("rb") as fh:
        cat = read_po(fh, locale="zh_Hant")
    assert english_comment(cat["title"]) == ENGLISH["title"].string  # the translator sees the English
    cat["language_name"].string = "繁體中文"
    cat["where_conv"].string = "第 {index}/{count} 個卷積層"
    from babel.messages.pofile import write_po

    with po.open("wb") as fh:
        write_po(fh, cat)
    monkeypatch.setattr(i18n, "LOCALE_DIR", locale)
    for cached in (i18n.languages, i18n._read):
        cached.cache_clear()
    try:
        assert i18n.languages()[0] == "en" and "zh-Hant" in i18n.languages()
        assert i18n.LANGUAGE_NAMES["zh-Hant"] == "繁體中文"
        assert i18n.language_from_locale("zh-hant") == "zh-Hant" and i18n.language_from_locale("zh-CN") == "zh"
        i18n.set_language("zh-Hant")
        assert i18n.t("where_conv", index=1, count=2) == "第 1/2 個卷積層"
        assert i18n.t("title") == i18n.table("en")["title"]  # not translated yet: English
    finally:
        i18n.set_language("en")
        monkeypatch.undo()
        for cached in (i18n.languages, i18n._read):
            cached.cache_clear()


def refusal_codes() -> set[str]:
    """Every literal ``code="..."`` a library refusal is raised with."""
    codes = set()
    for path in sorted((ROOT / "vizhooks").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                codes |= {k.value.value for k in node.keywords if k.arg == "code" and isinstance(k.value, ast.Constant)}
    return codes


def test_every_refusal_code_has_its_sentence():
    codes = refusal_codes()
    assert {"image_empty", "class_unknown", "video_truncated"} <= codes
    assert sorted(c for c in codes if f"err_{c}" not in ENGLISH) == []


def test_a_refusal_says_the_catalogue_sentence_in_english_and_the_page_translates_it():
    import pickle

    import vizhooks as vz
    from vizhooks.errors import CodedError

    with pytest.raises(vz.InvalidImageError) as caught:
        vz.load_image(b"%PDF-1.7 not a picture")
    assert caught.value.code == "image_pdf"
    assert str(caught.value) == "This is a PDF document, not an image. Export the page as PNG or JPEG first."
    assert str(caught.value) == i18n.table("en")["err_image_pdf"]
    error = CodedError(code="image_too_large", width=9000, height=8000, megapixels=72, limit=40)
    assert str(error) == ("This image is 9000 x 8000 pixels (72 megapixels); the limit is 40 megapixels. "
                          "Please use a smaller copy.")
    assert str(pickle.loads(pickle.dumps(error))) == str(error)
    i18n.set_language("zh")
    try:
        assert i18n.t(f"err_{error.code}", **error.values) == i18n.table("zh")["err_image_too_large"].format(
            width=9000, height=8000, megapixels=72, limit=40)
        assert str(CodedError(code="image_empty")) == "The file is empty (0 bytes)."  # English whatever the page says
    finally:
        i18n.set_language("en")
    assert str(CodedError("size must be 32 or more", "explain_setting")) == "size must be 32 or more"
    with pytest.raises(TypeError):
        CodedError()
