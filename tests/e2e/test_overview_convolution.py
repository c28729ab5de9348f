"""The Overview and the Convolution view in Chromium, in both languages: the overview's picture
arrives and opens a channel in the inspector; the convolution's numbers are on screen. Their
full-page screenshots (tests/artifacts/) are what the manual's pictures (docs/images/) are cut from."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from vizhooks.page.texts import EN, ZH

pytestmark = pytest.mark.browser


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_overview_then_one_channel_in_the_inspector(server, page, artifacts, lang):
    texts = EN if lang == "en" else ZH
    page.goto(f"{server}/?view=overview&lang={lang}")
    picture = page.get_by_test_id("stImage").filter(has_text=texts["ov_caption"].format(layers=20, stages=5, k=8))
    expect(picture.locator("img")).to_have_js_property("complete", True)
    expect(picture.locator("img")).not_to_have_js_property("naturalWidth", 0)
    _idle(page)
    assert page.get_by_test_id("stException").count() == 0
    page.set_viewport_size({"width": 1400, "height": 2600})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / f"overview-{lang}.png"), full_page=True)
    page.get_by_role("button", name=texts["ov_open"]).click()
    _idle(page)
    expect(page.get_by_text(texts["insp_overlay"].format(alpha=0.5))).to_be_visible()
    assert "view=inspector" in page.url and "insp_layer=conv1" in page.url


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_convolution_shows_its_numbers(server, page, artifacts, lang):
    texts = EN if lang == "en" else ZH
    page.goto(f"{server}/?view=convolution&lang={lang}&cv_layer=layer1.0.conv1")
    expect(page.get_by_test_id("stMetric").filter(has_text=texts["cv_total"].split("{")[0].strip()).first)\
        .to_be_visible()
    _idle(page)
    assert page.get_by_test_id("stException").count() == 0
    images = page.get_by_test_id("stImage").locator("img")
    for i in range(images.count()):
        expect(images.nth(i)).not_to_have_js_property("naturalWidth", 0)
    page.set_viewport_size({"width": 1400, "height": 3000})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / f"convolution-{lang}.png"), full_page=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_window_slides_after_the_button(server, page, lang):
    texts = EN if lang == "en" else ZH
    page.goto(f"{server}/?view=convolution&lang={lang}&size=128&cv_layer=conv1&cv_channel=3")
    button = page.get_by_role("button", name=texts["cv_slide_build"])
    expect(button).to_be_visible()
    _idle(page)
    button.click()
    caption = texts["cv_slide_caption"].split("{")[0].strip() or texts["cv_slide_caption"].split("}")[-1].strip()
    animation = page.get_by_test_id("stImage").filter(has_text=caption).locator("img")
    expect(animation).to_have_js_property("complete", True)
    expect(animation).not_to_have_js_property("naturalWidth", 0)
    assert ".gif" in (animation.get_attribute("src") or "")
    _idle(page)
    assert page.get_by_test_id("stException").count() == 0
    expect(page.get_by_test_id("stDownloadButton")).to_have_count(2)
