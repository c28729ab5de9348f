"""Both languages: every key in each table, the language switch, and a Chinese page with no
English sentence outside code, layer, model and ImageNet class names."""

from __future__ import annotations

import string

import pytest

from tests.helpers import (
    CODE_SPAN,
    ENGLISH_PHRASE,
    allowed_names,
    checkpoint_by_hand,
    choose_view,
    english_in,
    open_page,
)
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import EN, ZH, language_from_locale


def _fields(text: str) -> list[tuple[str, str]]:
    return sorted((f, spec or "") for _, f, spec, _ in string.Formatter().parse(text) if f is not None)


def test_every_key_in_both_languages():
    assert sorted(set(EN) - set(ZH)) == [] and sorted(set(ZH) - set(EN)) == []


@pytest.mark.parametrize("key", sorted(EN))
def test_same_placeholders(key):
    assert _fields(ZH[key]) == _fields(EN[key])


def test_locale_decides_without_a_link():
    # zh_TW gave "zh" while 简体中文 was the only Chinese; with 繁體中文 shipped it is Traditional
    assert [language_from_locale(x) for x in ("zh-CN", "zh_TW", "zh", "ZH-hans", "en-US", "de", "", None)] == \
        ["zh", "zh-Hant", "zh", "zh", "en", "en", "en", "en"]
    assert [language_from_locale(x) for x in ("zh-HK", "zh-Hant", "zh-Hant-TW", "zh-Hans-TW", "zh-SG")] == \
        ["zh-Hant", "zh-Hant", "zh-Hant", "zh", "zh"]


@pytest.mark.parametrize(("value", "lang"), [("zh", "zh"), ("zh_CN", "zh"), ("zh_CN.UTF-8", "zh"), ("ZH", "zh"),
                                             ("zh-Hant", "zh-Hant"), ("zh_TW.UTF-8", "zh-Hant"), ("en_US", "en"),
                                             ("fr", "en"), ("", "en")])
def test_vizhooks_lang_is_read_as_a_locale(monkeypatch, value, lang):
    """VIZHOOKS_LANG as a shell's locale writes it (zh_CN.UTF-8, ZH) is that language, not English in silence."""
    from vizhooks import i18n

    monkeypatch.setattr(i18n, "_current", i18n.contextvars.ContextVar("vizhooks_test_lang", default=None))
    monkeypatch.setenv("VIZHOOKS_LANG", value)
    assert i18n.language() == lang


VIEWS = ("maps", "inspector", "atlas", "gradients", "gradcam", "backward", "table", "intervene", "compare", "code")


@pytest.mark.slow
def test_chinese_page_has_no_english_sentences():
    at = open_page(lang="zh", size="128", layers="conv1,layer2.0.conv1,layer4.0.conv1")
    # the weights' details: where the file goes, in Chinese, and the library's account said to be English
    details = at.sidebar.expander[0]
    assert details.label == ZH["weights_details"]
    # and why the weights are random (the suite runs with VIZHOOKS_OFFLINE set), in Chinese too
    assert [m.value for m in details.markdown] == [
        ZH["weights_file_place"].format(path=checkpoint_by_hand()),
        ZH["weights_why"] + "\n\n- " + ZH["weights_note_downloads_off"].format(variable="`VIZHOOKS_OFFLINE`")]
    assert [c.value for c in details.caption] == [ZH["weights_details_english"]]
    allowed = allowed_names(at)
    problems = {}
    for view in VIEWS:
        choose_view(at, view)
        assert not at.exception, (view, [e.value for e in at.exception])
        problems[view] = english_in(at, allowed)
    choose_view(at, "lesson")
    for n in range(1, len(STEPS) + 1):
        assert not at.exception, (n, [e.value for e in at.exception])
        problems[f"lesson {n}"] = english_in(at, allowed)
        if n < len(STEPS):
            at.button(key="lesson_next").click().run()
    assert {k: v for k, v in problems.items() if v} == {}
    assert at.query_params["lang"] == "zh"


def test_switching_language_reruns_no_model(forward_passes):
    at = open_page(size="128")
    assert at.title[0].value == EN["title"] and len(forward_passes) == 1
    at.segmented_control(key="lang").set_value("zh").run()
    assert at.title[0].value == ZH["title"] and at.query_params["lang"] == "zh"
    assert len(forward_passes) == 1


def _all_snippets(lang: str) -> list[str]:
    from vizhooks.lesson.code import LESSON_BODIES, VIEWS, lesson_snippet, snippet

    common = dict(model="resnet18", image="sample_images/chelsea.jpg", size=128, lang=lang)
    kinds = [(v, w) for v in VIEWS for w in ("output", "input") if v == "maps" or w == "output"]
    codes = [snippet(v, layers=["conv1", "layer2.0.conv1"], what=w, **common) for v, w in kinds]
    codes += [lesson_snippet(b, layers=["layer1.0.conv1"], clamp_at="layer3.0.conv1", **common) for b in LESSON_BODIES]
    codes.append(snippet("maps", layers=["features.1.0"], **{**common, "model": "swin_t"}))
    return codes


def test_code_comments_follow_the_language_and_the_code_does_not():
    from vizhooks.lesson.snippets import split_comment

    for en, zh in zip(_all_snippets("en"), _all_snippets("zh"), strict=True):
        en_lines, zh_lines = en.splitlines(), zh.splitlines()
        assert len(en_lines) == len(zh_lines)
        for a, b in zip(en_lines, zh_lines, strict=True):
            (code_a, _), (code_b, comment_b) = split_comment(a), split_comment(b)
            assert code_a == code_b  # the code is the same
            if comment_b is not None:
                assert not ENGLISH_PHRASE.search(CODE_SPAN.sub(" ", comment_b)), comment_b  # the comment is not English


def test_names_are_listed_in_the_language_and_other_tuples_stay_as_python_writes_them():
    """A refusal's near names (i18n.Names) are listed as each language lists names; a tuple a user gave (a size)
    is said as Python writes it, in English and in Chinese alike."""
    import pickle

    from vizhooks.errors import CodedError
    from vizhooks.i18n import Names, english, said, set_language

    names = Names(["resnet18", "resnet34"])
    assert english("err_unknown_model_close", name="resnt", close=names) == \
        "Unknown model “resnt”. Did you mean: resnet18, resnet34? `python -m vizhooks --list-models` lists them all."
    size = {"low": 32, "high": 1024, "value": (224, 224)}
    assert english("err_concepts_size", **size).endswith(", not (224, 224).")
    set_language("zh")
    try:
        assert "resnet18、resnet34" in said("err_unknown_model_close", {"name": "resnt", "close": names})
        assert "(224, 224)" in said("err_concepts_size", size)
    finally:
        set_language("en")
    # the methods a refusal offers are names too: listed in Chinese as Chinese lists them
    from vizhooks.interpret import relevance

    with pytest.raises(CodedError) as info:
        relevance._check_method("nope")
    set_language("zh")
    try:
        assert "、".join(relevance.METHODS) in said(f"err_{info.value.code}", info.value.values)
    finally:
        set_language("en")
    assert ", ".join(relevance.METHODS) in str(info.value)
    again = pickle.loads(pickle.dumps(CodedError(code="unknown_model_close", name="resnt", close=names)))
    assert isinstance(again.values["close"], Names) and str(again).count("resnet18, resnet34") == 1
