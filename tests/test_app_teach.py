"""The Teach view through AppTest, in both languages: classes named and filled with sample photos,
Train, and the whole page then runs on the taught model (top-5, Grad-CAM's classes, the code view);
its checkpoint loads back into the same predictions; bad input gets one sentence and keeps the photos;
the shared backbone is never changed; a link or a class that names the taught model opens it."""

from __future__ import annotations

import io
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import vizhooks as vz
from tests.helpers import ROOT, choose_view, ok, open_page
from vizhooks.classroom import Classroom, MemoryStore
from vizhooks.i18n import said
from vizhooks.lesson.i18n import in_language
from vizhooks.page import classes, taught
from vizhooks.page.results import get_bundle, plain_bundle
from vizhooks.page.taught import checkpoint_bytes, checkpoint_files, read_upload
from vizhooks.page.texts import EN, ZH, nt

#: Two classes of two sample photos each (leave-one-out: 4 held-out guesses).
CLASSES = {"cat": ("chelsea.jpg", "coffee.jpg"), "太空": ("astronaut.jpg", "rocket.jpg")}


def _texts(lang: str) -> dict[str, str]:
    return EN if lang == "en" else ZH


def _fill(at: AppTest, classes: dict[str, tuple[str, ...]]) -> AppTest:
    at.segmented_control(key="teach_n").set_value(len(classes)).run()
    for i, name in enumerate(classes):
        at.text_input(key=f"teach_name_{i}").set_value(name).run()
    for i, photos in enumerate(classes.values()):
        at.radio(key="teach_into").set_value(i).run()
        for photo in photos:
            at.selectbox(key="teach_sample_pick").set_value(photo).run()
            at.button(key="teach_add_sample").click().run()
    return at


def _teach_page(lang: str = "en", classes: dict[str, tuple[str, ...]] = CLASSES) -> AppTest:
    at = _fill(open_page(view="teach", lang=lang, size="128"), classes)
    at.button(key="teach_train").click().run()
    return at


@pytest.fixture(scope="module")
def taught_en():
    return _teach_page("en")


def _counts(at: AppTest) -> list[str]:
    return [c.value for c in at.caption if re.fullmatch(r"\d+ (photos?|张照片)", c.value)]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_teach_then_every_view_uses_the_taught_model(lang, request):
    texts = _texts(lang)
    at = request.getfixturevalue("taught_en") if lang == "en" else _teach_page("zh")
    ok(at)
    name = at.session_state["model"]
    assert name.startswith("resnet18+my:") and taught.names_of(name) == tuple(CLASSES)
    label = texts["model_taught_option"].format(name="resnet18", classes=texts["list_separator"].join(CLASSES))
    assert at.success[0].value == texts["teach_done"].format(model=label, backbone="resnet18")
    assert at.metric[0].label == texts["teach_accuracy"]
    assert any(c.value == texts["teach_method_loo"].format(n=4) for c in at.caption)
    acc = at.session_state["_teach_result"]["accuracy"]
    shown = f"{acc:.0%} ± {(acc * (1 - acc) / 4) ** 0.5:.0%}"  # leave-one-out: the binomial standard error
    assert at.metric[0].value == shown
    below = texts["teach_below_chance"].format(chance=0.5)
    assert (below in [w.value for w in at.warning]) == (acc < 0.5)  # a figure under chance says why
    assert at.selectbox(key="model").value == name  # the sidebar offers and shows it

    choose_view(at, "gradcam")
    ok(at)
    bars = [p.proto.text for p in at.get("progress")]
    assert sorted(b.split(" · ")[0] for b in bars) == sorted(CLASSES)  # the top-5 names the student's classes
    assert at.selectbox(key="target").options == [f"{n} ({i})" for i, n in enumerate(CLASSES)]


def test_the_page_predicts_what_the_downloaded_checkpoint_predicts(taught_en, tmp_path):
    name = taught_en.session_state["model"]
    weights, labels = (tmp_path / f for f in checkpoint_files(name))
    weights.write_bytes(checkpoint_bytes(get_bundle(name)))
    labels.write_text("\n".join(taught.names_of(name)) + "\n", encoding="utf-8")
    again = vz.load_model("resnet18", weights=weights, labels=labels, device="cpu")
    choose_view(taught_en, "maps")
    ok(taught_en)
    x = again.preprocess(vz.load_image("sample_images/chelsea.jpg"), 128)
    with torch.no_grad():
        probs = again.model(x).softmax(1)[0]
    expected = sorted(f"{again.categories[i]} · {p:.1%}" for i, p in enumerate(probs.tolist()))
    assert sorted(p.proto.text for p in taught_en.get("progress")) == expected


def test_the_code_view_builds_and_loads_the_new_layer(taught_en):
    choose_view(taught_en, "code")
    ok(taught_en)
    code = taught_en.code[0].value
    file = checkpoint_files(taught_en.session_state["model"])[0]
    assert "model.fc = torch.nn.Linear(512, 2)\n" in code
    assert f"model.load_state_dict(torch.load('{file}', weights_only=True))" in code


def test_an_uploaded_checkpoint_comes_back_and_another_backbone_is_refused(taught_en):
    name = taught_en.session_state["model"]
    data, names = checkpoint_bytes(get_bundle(name)), "\n".join(taught.names_of(name)).encode()
    back = read_upload(plain_bundle("resnet18"), data, names, ".txt")
    assert back is not None and back.bundle.name == name and back.bundle.categories == list(CLASSES)
    state = torch.load(io.BytesIO(data), weights_only=True)
    state["layer1.0.conv1.weight"] = state["layer1.0.conv1.weight"] + 1  # taught on other weights
    buffer = io.BytesIO()
    torch.save(state, buffer)
    assert read_upload(plain_bundle("resnet18"), buffer.getvalue(), names, ".txt") is None
    with pytest.raises(vz.WeightsError):
        read_upload(plain_bundle("resnet18"), b"not a checkpoint", names, ".txt")


@pytest.mark.slow
def test_the_shared_backbone_is_bit_identical_after_two_sessions_teach(taught_en):
    backbone = plain_bundle("resnet18").model
    before = {k: v.clone() for k, v in backbone.state_dict().items()}
    other = _teach_page("en", {"a": ("brick.png", "coffee.jpg"), "b": ("rocket.jpg", "chelsea.jpg")})
    ok(other)
    assert other.session_state["model"] != taught_en.session_state["model"]
    after = backbone.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert backbone.fc.out_features == 1000
    assert get_bundle(other.session_state["model"]).model.layer1 is backbone.layer1


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize(("classes", "code"), [
    ({"cat": ("chelsea.jpg", "coffee.jpg"), "": ("rocket.jpg", "brick.png")}, "teach_empty_name"),
    ({"cat": ("chelsea.jpg", "coffee.jpg"), "Cat": ("rocket.jpg", "brick.png")}, "teach_same_name"),
    ({"cat": ("chelsea.jpg",), "dog": ("rocket.jpg", "brick.png")}, "teach_few_photos"),
])
def test_bad_classes_get_one_sentence_and_keep_their_photos(lang, classes, code):
    at = _fill(open_page(view="teach", lang=lang, size="128"), classes)
    before = _counts(at)
    at.button(key="teach_train").click().run()
    assert not at.exception
    said_here = in_language(lang, lambda: said(f"err_{code}", {"name": "§", "n": 1, "least": 2}))  # plural or not
    sentence = said_here.split("§")[0].split("“")[0]
    assert len(at.error) == 1 and sentence in at.error[0].value
    assert at.session_state["model"] == "resnet18"
    at.run()  # the page keeps working, every photo still there
    ok(at)
    assert _counts(at) == before


def test_a_model_that_ends_in_a_convolution_says_so(lang="zh"):
    at = open_page(view="teach", lang=lang, model="squeezenet1_0", size="128")
    assert not at.exception
    assert len(at.error) == 1 and "classifier.1" in at.error[0].value and "Conv2d" in at.error[0].value


def test_removing_and_clearing_photos(lang="en"):
    at = _fill(open_page(view="teach", lang=lang, size="128"), {"a": ("chelsea.jpg", "coffee.jpg"), "b": ()})
    assert _counts(at) == ["2 photos", "0 photos"]
    next(b for b in at.button if b.key and b.key.startswith("teach_rm_0_")).click().run()
    assert _counts(at) == ["1 photo", "0 photos"]
    at.button(key="teach_clear_0").click().run()
    ok(at)
    assert _counts(at) == ["0 photos", "0 photos"]


def test_a_link_to_a_taught_model_opens_it_and_an_unknown_one_is_reported(taught_en):
    name = taught_en.session_state["model"]
    at = open_page(model=name, size="128")
    ok(at)
    assert at.session_state["model"] == name
    gone = open_page(model="resnet18+my:0000000000", size="128")
    ok(gone)
    assert gone.session_state["model"] == "resnet18" and "model=resnet18+my:0000000000" in gone.info[0].value


def test_a_student_on_another_server_gets_the_teachers_taught_model(taught_en, monkeypatch):
    """The class carries the head: a student's server that never held it reads it from the class."""
    name = taught_en.session_state["model"]
    room = Classroom(MemoryStore())
    monkeypatch.setattr(classes, "classroom", lambda: room)
    lead = room.start()
    blob = taught.head_blob(name)
    room.share_model(lead, blob)
    room.publish(lead, {"model": name, "view": "maps"})
    monkeypatch.setattr(taught, "_heads", type(taught._heads)())  # the student's server: no heads held
    at = open_page(**{"class": lead.code})
    ok(at)
    assert at.session_state["model"] == name and taught.names_of(name) == tuple(CLASSES)


def test_the_live_camera_classifies_with_the_taught_model(taught_en, monkeypatch):
    monkeypatch.setattr("streamlit_webrtc.component.get_this_session_info", lambda: None)  # as tests/test_live.py
    name = taught_en.session_state["model"]
    at = open_page(model=name).radio(key="source").set_value("live").run()
    ok(at)
    processor = at.session_state["_live_stream"].processor
    assert processor.settings.classify and processor.bundle.name == name
    assert processor.bundle.categories == list(CLASSES)
    plain = open_page().radio(key="source").set_value("live").run()
    assert not plain.session_state["_live_stream"].processor.settings.classify  # ImageNet: maps only


@pytest.mark.slow
def test_every_view_runs_on_the_taught_model(taught_en):
    """Maps, the inspector, the atlas, gradients, Grad-CAM, backward hooks, the table, Intervene,
    Compare, the code and the lesson: each one on the taught model, with no error."""
    from vizhooks.page.urlstate import VIEWS

    name = taught_en.session_state["model"]
    at = open_page(model=name, size="128", layers="conv1,layer4.1.conv2")
    for view in VIEWS:
        choose_view(at, view)
        assert not at.exception, (view, [e.value for e in at.exception])
        assert not at.error, (view, [e.value for e in at.error])
        assert at.session_state["model"] == name, view


def _sample(name: str) -> bytes:
    return (ROOT / "sample_images" / name).read_bytes()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_several_uploads_at_once_and_a_file_that_is_not_a_picture(lang):
    texts = _texts(lang)
    at = open_page(view="teach", lang=lang, size="128")
    at.text_input(key="teach_name_0").set_value("cat").run()
    uploader = next(u for u in at.file_uploader if u.key and u.key.startswith("teach_up_"))
    uploader.set_value([("a.jpg", _sample("chelsea.jpg"), "image/jpeg"), ("notes.png", b"just some text", "image/png"),
                        ("b.jpg", _sample("coffee.jpg"), "image/jpeg")]).run()
    assert not at.exception
    notices = [i.value for i in at.info]
    assert notices[0] == in_language(lang, lambda: nt("teach_added", 2, name="cat"))
    assert notices[1].startswith(texts["teach_not_image"].split("{")[0] + "notes.png" if lang == "en" else "notes.png")
    assert _counts(at)[0] in ("2 photos", "2 张照片")


def test_the_same_photo_twice_is_added_once_and_said():
    at = _fill(open_page(view="teach", size="128"), {"a": ("chelsea.jpg",), "b": ()})
    at.radio(key="teach_into").set_value(0).run()
    at.selectbox(key="teach_sample_pick").set_value("chelsea.jpg").run()
    at.button(key="teach_add_sample").click().run()
    ok(at)
    assert _counts(at) == ["1 photo", "0 photos"]
    assert at.info[0].value == "1 photo was already in a, so it was not added again."
    at.radio(key="teach_into").set_value(1).run()  # the same photo into another class: refused and said
    at.button(key="teach_add_sample").click().run()
    ok(at)
    assert _counts(at) == ["1 photo", "0 photos"]
    assert at.info[0].value == EN["teach_in_other"].format(file="chelsea.jpg", name="a")


def test_the_number_of_classes_is_a_choice_of_two_to_six():
    at = open_page(view="teach", size="128")
    ok(at)
    assert at.segmented_control(key="teach_n").options == ["2", "3", "4", "5", "6"]  # 7 cannot be typed


def test_each_snapshot_adds_one_photo_and_the_camera_is_ready_again():
    at = open_page(view="teach", size="128")
    for i, name in enumerate(("chelsea.jpg", "coffee.jpg")):
        camera = next(c for c in at.camera_input if c.key and c.key.startswith("teach_cam_"))
        camera.set_value(("snap.jpg", _sample(name), "image/jpeg")).run()
        ok(at)
        assert _counts(at)[0] == ["1 photo", "2 photos"][i]
        assert next(c for c in at.camera_input if c.key.startswith("teach_cam_")).key != camera.key


def test_the_session_and_class_limits_refuse_and_keep_what_was_added(monkeypatch):
    from vizhooks.page.views import teach as view

    monkeypatch.setattr(view, "MAX_PHOTOS", 1)
    at = _fill(open_page(view="teach", size="128"), {"a": ("chelsea.jpg",), "b": ()})
    at.radio(key="teach_into").set_value(0).run()
    at.selectbox(key="teach_sample_pick").set_value("coffee.jpg").run()
    at.button(key="teach_add_sample").click().run()
    assert _counts(at) == ["1 photo", "0 photos"]
    assert at.info[0].value == EN["teach_full_class"].format(name="a", most=1)
    monkeypatch.setattr(view, "MAX_SESSION_MB", 0.001)  # 1 kB: nothing more fits
    at.radio(key="teach_into").set_value(1).run()
    at.selectbox(key="teach_sample_pick").set_value("rocket.jpg").run()
    at.button(key="teach_add_sample").click().run()
    assert _counts(at) == ["1 photo", "0 photos"]
    assert at.info[0].value.startswith(EN["teach_full_session"].split("{")[0])


def test_a_downloaded_model_uploaded_again_becomes_the_sessions_model(taught_en):
    name = taught_en.session_state["model"]
    weights, labels = checkpoint_files(name)
    at = open_page(view="teach", size="128")
    at.file_uploader(key="teach_model_files").set_value([
        (weights, checkpoint_bytes(get_bundle(name)), "application/octet-stream"),
        (labels, ("\n".join(taught.names_of(name)) + "\n").encode(), "text/plain")]).run()
    at.button(key="teach_upload_go").click().run()
    ok(at)
    assert at.session_state["model"] == name
