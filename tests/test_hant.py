"""繁體中文 (zh-Hant): generated from the reviewed 简体中文 by ``python -m vizhooks.hant`` (OpenCC s2twp and
the reviewed overrides), checked against OpenCC called here directly; the committed files are the
generator's output; the page and the lesson handout show Traditional texts."""

from __future__ import annotations

import html
import json
import re

import opencc
import pytest

from tests.helpers import ROOT, open_page
from vizhooks import hant
from vizhooks.i18n import LANGUAGE_NAMES, table
from vizhooks.lesson.snippets import render

S2TWP = opencc.OpenCC("s2twp")
ZH, HANT = table("zh"), table("zh-Hant")
OVERRIDES = hant.read_overrides()
#: Characters Traditional writes too, which a character-by-character s2twp changes: 干預 (not 幹預),
#: 上游 / 下游 (not 上遊).
SHARED = set("干游")


def _plain(text: str) -> bool:
    """Whether no override touches ``text``: then zh-Hant is s2twp's conversion exactly."""
    return not any(term in text for term in OVERRIDES.terms)


def test_the_committed_files_are_the_generators_output():
    assert hant.stale() == [], f"繁體中文 is out of date: run `{hant.COMMAND}` and commit the files it writes"


def test_a_stale_file_is_found(tmp_path, monkeypatch):
    edited = tmp_path / "labels_zh_Hant.txt"
    edited.write_text(hant.LABELS_HANT.read_text(encoding="utf-8").replace("虎紋貓", "虎纹猫"), encoding="utf-8")
    monkeypatch.setattr(hant, "LABELS_HANT", edited)
    assert hant.stale() == [edited]


def test_texts_are_opencc_s2twp_of_the_simplified():
    # Taiwan's words, as s2twp says them: 视频 -> 影片, 默认 -> 預設, 网络 -> 網路 (and 程序 -> 程式 in code)
    for simplified, taiwan in (("视频", "影片"), ("默认", "預設"), ("网络", "網路")):
        keys = [key for key, text in ZH.items() if simplified in text and _plain(text)]
        assert keys, f"the catalogue has sentences with {simplified}"
        for key in keys:
            assert HANT[key] == S2TWP.convert(ZH[key]) and taiwan in HANT[key], (key, HANT[key])
    assert S2TWP.convert("程序") == "程式"
    plain = [key for key in ZH if _plain(ZH[key]) and key not in OVERRIDES.keys]
    assert len(plain) > 500 and all(HANT[key] == S2TWP.convert(ZH[key]) for key in plain)
    assert sorted(HANT) == sorted(ZH)  # every key, none untranslated


def test_overrides_are_applied():
    assert LANGUAGE_NAMES["zh-Hant"] == "繁體中文" and LANGUAGE_NAMES["zh"] == "简体中文"
    checked = 0
    for term, wanted in OVERRIDES.terms.items():
        for key in (k for k, text in ZH.items() if term in text):
            checked += 1
            assert HANT[key].count(wanted) >= ZH[key].count(term), (key, term, HANT[key])
    assert checked > 20
    activation = next(key for key, text in ZH.items() if "激活" in text)
    assert "啟用" in S2TWP.convert(ZH[activation]) and "啟用" not in HANT[activation]  # s2twp alone would say 啟用
    webcam = next(key for key, text in ZH.items() if "摄像头" in text)
    assert "攝影機" in HANT[webcam] and "攝像頭" in S2TWP.convert(ZH[webcam])


def test_a_bad_overrides_line_is_refused(tmp_path):
    bad = tmp_path / "overrides.txt"
    bad.write_text("# fine\n张量 = 張量\n", encoding="utf-8")
    with pytest.raises(ValueError, match="overrides.txt:2"):
        hant.read_overrides(bad)


def test_class_names_and_lesson_comments_are_converted():
    from vizhooks.models.labels import class_labels
    from vizhooks.models.registry import imagenet_categories

    zh = class_labels(imagenet_categories(), "zh")
    traditional = class_labels(imagenet_categories(), "zh-Hant")
    assert len(traditional) == 1000 and traditional[282] == S2TWP.convert(zh[282]) == "虎紋貓"
    assert sum(a != b for a, b in zip(zh, traditional, strict=True)) > 300
    comments = json.loads(hant.COMMENTS_HANT.read_text(encoding="utf-8"))
    assert sorted(comments) == hant.snippet_comments()
    code = dict(layers=["conv1"], clamp_at="conv1", limit=1.0, target=3)
    simplified, converted = render("clamp", "zh", **code), render("clamp", "zh-Hant", **code)
    assert converted == S2TWP.convert(simplified) != simplified and "張量鉤子" in converted
    assert render("clamp", "en", **code).count("#") == converted.count("#")


def _hant_names() -> list[str]:
    from vizhooks.models.labels import class_labels
    from vizhooks.models.registry import imagenet_categories

    return class_labels(imagenet_categories(), "zh-Hant")


HANT_NAMES = _hant_names()


def _simplified_only(text: str) -> set[str]:
    return {ch for ch in text if S2TWP.convert(ch) != ch} - SHARED


@pytest.mark.slow  # the page's first run: about 9 s on a busy machine
def test_the_page_in_traditional_chinese():
    at = open_page(lang="zh-Hant", size="128")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == HANT["title"] == S2TWP.convert(ZH["title"]) != ZH["title"]
    assert at.query_params["lang"] == "zh-Hant"
    assert at.segmented_control(key="lang").value == "zh-Hant"
    main = [e.value for e in [*at.title, *at.header, *at.subheader, *at.markdown, *at.caption]
            if isinstance(e.value, str)]
    chinese = [text for text in main if re.search(r"[\u4e00-\u9fff]", text)]
    assert len(chinese) > 5
    assert {text: _simplified_only(text) for text in chinese if _simplified_only(text)} == {}
    assert _simplified_only(ZH["title"] + ZH["subtitle"])  # the check finds Simplified where it is
    # the top-5 bars name the classes in Traditional characters: s2twp of the 简体中文 names
    from vizhooks.models.labels import chinese_categories
    from vizhooks.models.registry import imagenet_categories

    english, simplified = list(imagenet_categories()), chinese_categories()
    shown = [bar.proto.text for bar in at.get("progress")]
    assert len(shown) == 5
    for line in shown:
        name, _share = line.rsplit(" · ", 1)
        assert name == S2TWP.convert(simplified[HANT_NAMES.index(name)]) and name not in english


@pytest.mark.slow
def test_the_lesson_handout_in_traditional_chinese():
    import vizhooks as vz
    from vizhooks.lesson.handout import LessonChoices, lesson_file
    from vizhooks.lesson.steps import STEPS

    photo = ROOT / "sample_images" / "chelsea.jpg"
    choices = LessonChoices("resnet18", photo.read_bytes(), photo.name, 64, "zh-Hant")
    page = lesson_file(choices, vz.load_model("resnet18"), "html").decode("utf-8")
    assert '<html lang="zh-Hant-TW">' in page
    for step in STEPS:
        assert html.escape(HANT[f"lesson_{step.id}_title"]) in page
    shown = html.unescape(re.sub(r"<[^>]+>|data:[^\"']+", " ", page.split("</style>", 1)[1]))
    assert "# 張量鉤子可以返回新的梯度" in shown  # the lesson's code comments, converted
    assert _simplified_only(shown) == set()
