"""简体中文 on the error paths too (issue 22): the library's refusals carry a code and values
(vizhooks.errors.CodedError), the page says them from its own texts, and a refusal without a code
says "details in the log" on a Chinese page rather than an English sentence. Walked with AppTest in
?lang=zh: damaged, wrong-type and oversized uploads and clips, an over-budget layer choice, a class
that is full; and the layer table's headers."""

from __future__ import annotations

import ast
import io
import json
import pickle
from pathlib import Path

import pytest
from PIL import Image
from torch import nn

from tests.helpers import allowed_names, english_in, open_page
from vizhooks.errors import CodedError
from vizhooks.hooks import budget
from vizhooks.i18n import is_plural
from vizhooks.models.images import InvalidImageError, load_image
from vizhooks.models.layers import UnknownLayerError, resolve_layers
from vizhooks.page.texts import EN, ZH

ROOT = Path(__file__).resolve().parents[1]


def raised_codes() -> dict[str, str]:
    """Every code the library passes to an error it raises: {code: file}, found in the source (the
    second positional argument of a call to a class named ...Error or its ``code=`` keyword, or
    ``f"image_{kind}"`` style)."""
    codes: dict[str, str] = {}
    for path in (ROOT / "vizhooks").rglob("*.py"):
        if "page" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "").endswith("Error") and len(node.args) >= 2:
                arg = node.args[1]
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    codes[arg.value] = path.name
            if isinstance(node, ast.Call) and getattr(node.func, "id", "").endswith("Error"):
                for kw in node.keywords:  # CodedError(code=...): the English comes from the catalogue too
                    if kw.arg == "code" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str):
                        codes[kw.value.value] = path.name
    return codes


def test_every_code_has_its_sentence_in_both_languages():
    codes = raised_codes()
    assert len(codes) >= 20, codes  # images, video, budget, classes
    missing = [c for c in codes if not all(f"err_{c}" in texts or is_plural(f"err_{c}", lang)  # plural: "1 photo"
                                           for lang, texts in (("en", EN), ("zh", ZH)))]
    assert not missing
    from vizhooks.models.images import _what_is_it  # the kinds of a non-image, each with its code

    kinds = {_what_is_it(data) for data in (b"%PDF-1.4", b"<html>", b"<svg>", b"hello there\n", b"\x00\x01\x02")}
    assert {f"err_image_{k}" for k in kinds} <= set(ZH)


def test_codes_carry_their_values_and_survive_pickling():
    big = io.BytesIO()
    Image.new("RGB", (1, 1)).save(big, "PNG")
    with pytest.raises(InvalidImageError) as caught:
        load_image(b"")
    assert caught.value.code == "image_empty" and isinstance(caught.value, ValueError)
    with pytest.raises(budget.CaptureTooLargeError) as caught:
        budget.check_capture("resnet18", ["layer1.0.conv1"], (512, 512), limit_mb=0.001)
    err = caught.value
    assert err.code == "capture_too_large" and err.values["layers"] == 1 and err.values["model"] == "resnet18"
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), str(again), again.code, again.values) == (type(err), str(err), err.code, err.values)
    plain = CodedError("no code here")
    assert plain.code == "" and plain.values == {}


def bad_uploads() -> dict[str, bytes]:
    good = io.BytesIO()
    Image.new("RGB", (64, 64), (10, 200, 30)).save(good, "JPEG")
    return {"empty.png": b"", "notes.png": b"these are my notes, not a picture\n" * 20,
            "paper.png": b"%PDF-1.7\n" + b"0" * 400, "cut.jpg": good.getvalue()[: len(good.getvalue()) // 2]}


@pytest.mark.parametrize("name", list(bad_uploads()))
def test_a_bad_upload_on_the_chinese_page_is_all_chinese(name):
    at = open_page(lang="zh")
    at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload").set_value((name, bad_uploads()[name], "image/png")).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors and all("无法使用此文件" in e for e in errors), errors
    assert english_in(at, allowed_names(at)) == []


def test_a_bad_clip_on_the_chinese_page_is_all_chinese():
    at = open_page(lang="zh")
    at.radio(key="source").set_value("video").run()
    at.file_uploader(key="video_upload").set_value(("clip.mp4", b"plain text, not a clip\n" * 10, "video/mp4")).run()
    assert not at.exception
    assert [e.value for e in at.error] and english_in(at, allowed_names(at)) == []


def test_an_over_budget_choice_on_the_chinese_page_is_all_chinese(monkeypatch, fresh_results):
    monkeypatch.setattr(budget, "MAX_CAPTURE_MB", 0.01)
    at = open_page(lang="zh")
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("MB" in w and "请少选几层" in w for w in warnings), warnings
    assert english_in(at, allowed_names(at)) == []


def test_an_uncoded_refusal_says_details_are_in_the_log(monkeypatch):
    from vizhooks.page import errors
    from vizhooks.page.texts import set_language

    set_language("zh")
    try:
        assert errors.reason(ValueError("Layer 'foo' does not exist in this model")) == ZH["err_generic"]
        assert errors.reason(InvalidImageError("x", "image_empty")) == ZH["err_image_empty"]
        with pytest.raises(UnknownLayerError) as unknown:
            resolve_layers(nn.Sequential(nn.Conv2d(3, 4, 3)), ["foo"])
        assert errors.reason(unknown.value) == ZH["err_unknown_layer"].format(name="foo")
    finally:
        set_language("en")
    assert errors.reason(ValueError("Layer 'foo' does not exist")) == "Layer 'foo' does not exist"


def test_the_layer_table_has_chinese_headers():
    at = open_page(lang="zh", view="table")
    assert not at.exception
    columns = json.loads(at.dataframe[0].proto.columns)
    labels = {name: spec["label"] for name, spec in columns.items() if "label" in spec}
    assert labels["name"] == "模块" and labels["output_shape"] == "输出形状" and labels["params"] == "参数量"
    assert all(any("\u4e00" <= ch <= "\u9fff" for ch in label) for label in labels.values()), labels


@pytest.mark.slow
def test_top5_and_the_class_menu_use_chinese_imagenet_names_on_the_chinese_page():
    from vizhooks.models.labels import chinese_categories
    from vizhooks.models.registry import imagenet_categories

    zh, en = open_page(lang="zh"), open_page(lang="en")
    bars_zh = [bar.proto.text for bar in zh.get("progress")]
    bars_en = [bar.proto.text for bar in en.get("progress")]
    assert len(bars_zh) == len(bars_en) == 5
    english, chinese = list(imagenet_categories()), chinese_categories()
    for line_zh, line_en in zip(bars_zh, bars_en, strict=True):
        name_en, share = line_en.rsplit(" · ", 1)
        assert line_zh == f"{chinese[english.index(name_en)]} · {share}"  # the same class, its Chinese name
    at = open_page(lang="zh", view="gradcam")
    assert at.selectbox(key="target").format_func(0).startswith(chinese[0])  # the class menu: 丁鲷 (0)


def test_the_backward_table_notes_are_page_texts():
    """ResNet's ReLUs work in place: the backward table says why they are not hooked, in Chinese."""
    from vizhooks.page.texts import ZH as zh

    at = open_page(lang="zh", view="backward")
    assert not at.exception
    rows = at.dataframe[0].value
    notes = [n for n in rows[zh["col_note"]] if n]
    assert notes and set(notes) <= {zh["backward_note_inplace_self"], zh["backward_note_inplace_later"]}
    assert zh["col_module"] in rows.columns


@pytest.mark.slow
def test_a_chinese_class_in_present_mode_has_no_english(monkeypatch):
    """The class's own texts (teacher panel, following, polls) and present mode, on Chinese pages."""
    from vizhooks.page import classes

    monkeypatch.delenv("VIZHOOKS_CLASS_STORE", raising=False)
    classes.reset()
    try:
        teacher = open_page(lang="zh", view="lesson", step="2", present="1")
        teacher.button(key="class_start").click().run()
        code = teacher.session_state["_class_teacher"].code
        pupil = open_page(**{"lang": "zh", "class": code})
        for at in (teacher, pupil):
            assert not at.exception
            assert english_in(at, allowed_names(at)) == [], at is teacher
        assert pupil.session_state["lesson_step"] == 2 and pupil.toggle(key="present").value is True
    finally:
        classes.reset()
