"""Every view's state in its link (issue 23): change a view's own settings, take the address the page
wrote, open it in a new session: the same settings are on screen. The browser test
(tests/e2e/test_present.py) does the same through window.location.href in Chromium."""

from __future__ import annotations

import pytest

from tests.helpers import ok, open_page

LAYERS = "conv1,layer2.0.conv1"


def reopen(at):
    """A new session opened with the address ``at`` shows now."""
    return open_page(**{k: at.query_params[k][0] if isinstance(at.query_params[k], list) else at.query_params[k]
                        for k in at.query_params})


@pytest.mark.parametrize(("view", "prefix", "channel"), [("inspector", "insp", 7), ("atlas", "atlas", 9)])
def test_layer_and_channel(view, prefix, channel):
    at = open_page(view=view, layers=LAYERS)
    at.selectbox(key=f"{prefix}_layer").set_value("layer2.0.conv1").run()
    at.number_input(key=f"{prefix}_channel").set_value(channel).run()
    ok(at)
    again = reopen(at)
    ok(again)
    assert again.selectbox(key=f"{prefix}_layer").value == "layer2.0.conv1"
    assert again.number_input(key=f"{prefix}_channel").value == channel


@pytest.mark.slow
def test_intervene_edit():
    at = open_page(view="intervene", layers=LAYERS)
    at.selectbox(key="iv_layer").set_value("layer2.0.conv1").run()
    at.selectbox(key="iv_mode").set_value("double").run()
    at.multiselect(key="iv_channels").set_value([5, 2]).run()
    ok(at)
    again = reopen(at)
    ok(again)
    assert again.selectbox(key="iv_layer").value == "layer2.0.conv1"
    assert again.selectbox(key="iv_mode").value == "double"
    assert sorted(again.multiselect(key="iv_channels").value) == [2, 5]
    at.selectbox(key="iv_mode").set_value("top").run()
    at.number_input(key="iv_k").set_value(3).run()
    again = reopen(at)
    assert again.selectbox(key="iv_mode").value == "top" and again.number_input(key="iv_k").value == 3


@pytest.mark.slow
def test_compare_photo_and_lesson_step_language_and_present_mode():
    at = open_page(view="compare")
    other = [o for o in at.selectbox(key="compare").options if o != at.selectbox(key="compare").value][0]
    at.selectbox(key="compare").set_value(other).run()
    assert reopen(at).selectbox(key="compare").value == other
    at = open_page(view="lesson", step="4", lang="zh")
    at.toggle(key="present").set_value(True).run()
    ok(at)
    again = reopen(at)
    assert again.session_state["lesson_step"] == 4 and again.session_state["lang"] == "zh"
    assert again.toggle(key="present").value is True


@pytest.mark.slow
@pytest.mark.parametrize("source", ["upload", "camera", "video"])
def test_a_source_the_link_cannot_carry_opens_asking_for_the_picture(source):
    at = open_page()
    at.radio(key="source").set_value(source).run()
    ok(at)
    assert at.query_params["source"] in (source, [source]) and "sample" not in at.query_params
    again = reopen(at)
    ok(again)
    assert again.radio(key="source").value == source
    if source != "video":
        assert any(i.value for i in again.info)  # "Upload a photo ..." / "Take a picture ..."


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_class_the_model_lacks_is_reported_and_leaves_the_link(lang):
    from vizhooks.page.texts import EN, ZH

    at = open_page(view="gradcam", target="99999", lang=lang)
    ok(at)
    sentence = {"en": EN, "zh": ZH}[lang]["target_out_of_range"].format(target=99999, n=1000, last=999)
    assert sentence in [i.value for i in at.info]
    assert "target" not in at.query_params and at.selectbox(key="target").value is None


@pytest.mark.parametrize(("view", "query", "said", "check"), [
    ("inspector", {"insp_layer": "conv1", "insp_channel": "99999"}, "insp_channel=99999",
     lambda at: at.number_input(key="insp_channel").value == 63),
    ("inspector", {"insp_layer": "conv1", "insp_channel": "0900"}, "insp_channel=900",  # compared as read
     lambda at: at.number_input(key="insp_channel").value == 63),
    ("compare", {"pt_on": "1", "pt_layer": "conv1", "pt_part": "channels", "pt_channels": "99999,3"},
     "pt_channels=99999",
     lambda at: at.multiselect(key="pt_channels").value == [3]),
])
def test_a_value_too_large_for_the_layer_is_said_as_the_links_other_refusals(view, query, said, check):
    """QA 2026-12-06: a channel the link's layer lacks was dropped in silence (the inspector showed the last
    channel, Compare kept the rest), while a size or step out of range is listed in the notice."""
    from vizhooks.page.texts import EN

    at = open_page(view=view, layers=LAYERS, size="128", **query)
    ok(at)
    assert EN["url_notice"].format(items=said) in [i.value for i in at.info]
    assert check(at)
    at.run()  # the page's own value from now on: said once
    assert EN["url_notice"].format(items=said) not in [i.value for i in at.info]


def test_a_channel_set_on_the_page_is_not_said_to_come_from_the_link():
    """Review 2026-12-06: the address bar holds the page's own values too, so a channel set on the page (300 of
    layer4.1's 512) then cut by a narrower layer (conv1's 64) was said to be "ignored from the link"."""
    from vizhooks.page.texts import EN

    at = open_page(view="inspector", layers="conv1,layer4.1.conv1", size="128", insp_layer="layer4.1.conv1",
                   insp_channel="300")
    ok(at)
    assert not [i.value for i in at.info if i.value.startswith(EN["url_notice"].split("{")[0])]
    at.number_input(key="insp_channel").set_value(400).run()
    at.selectbox(key="insp_layer").set_value("conv1").run()
    ok(at)
    assert at.number_input(key="insp_channel").value == 63
    assert not [i.value for i in at.info if i.value.startswith(EN["url_notice"].split("{")[0])]
