"""The grouped view menu and the first screen (issue 33), in Debian Chromium at 1024 x 768, in English
and 简体中文: the open group, the current view and the first feature-map grid of the default view
all lie inside the first screen; a click on a group opens its first view and the link follows; an
old ``?view=`` link opens its view in its group.

Positions are the browser's own layout (getBoundingClientRect), read once Streamlit's run has
finished and the grid's picture has arrived.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from vizhooks.page.texts import LANGUAGES

pytestmark = pytest.mark.browser

expect.set_options(timeout=120_000)

WIDTH, HEIGHT = 1024, 768
FIRST_LAYER = "conv1"  # the default model's tour starts here

# The box of an element, and of the first grid: the picture drawn right under the layer's heading.
_BOXES = """layer => {
  const box = e => { if (!e) { return null; } const r = e.getBoundingClientRect();
                     return {top: r.top, bottom: r.bottom, left: r.left, right: r.right}; };
  const heading = [...document.querySelectorAll('[data-testid="stMain"] h3')]
    .find(h => h.innerText.trim() === layer);
  const block = heading && heading.closest('[data-testid="stElementContainer"]').nextElementSibling;
  const grid = block && block.querySelector('[data-testid="stImage"] img');
  return {group: box(document.querySelector('.st-key-view_group button[aria-checked="true"]')),
          view: box(document.querySelector('.st-key-view button[aria-checked="true"]')),
          grid: box(grid), gridLoaded: !!grid && grid.complete && grid.naturalWidth > 0,
          scrollTop: document.querySelector('[data-testid="stMain"]').scrollTop};
}"""


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def _chosen(page, key: str):
    """The chosen option of the menu's row keyed ``key`` (view_group or view)."""
    return page.locator(f".st-key-{key} button[aria-checked=true]")


def _inside(box: dict, name: str) -> None:
    assert box is not None, f"{name}: not on the page"
    assert 0 <= box["top"] and box["bottom"] <= HEIGHT and 0 <= box["left"] and box["right"] <= WIDTH, (
        f"{name} lies outside the first {WIDTH} x {HEIGHT} screen: {box}")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_first_screen_holds_the_menu_and_a_feature_map_grid(server, browser, artifacts, lang):
    texts = LANGUAGES[lang]
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.set_default_timeout(120_000)
    try:
        page.goto(f"{server}/?lang={lang}")
        expect(page.get_by_role("heading", name=FIRST_LAYER, exact=True)).to_be_visible()
        expect(_chosen(page, "view_group")).to_have_text(texts["group_look"])
        expect(_chosen(page, "view")).to_have_text(texts["view_maps"])
        _idle(page)
        page.wait_for_function(f"layer => ({_BOXES})(layer).gridLoaded", arg=FIRST_LAYER)
        page.wait_for_timeout(500)  # the last layout pass after the pictures arrived
        boxes = page.evaluate(_BOXES, FIRST_LAYER)
        print(f"{lang} {WIDTH}x{HEIGHT}: {boxes}")  # the report's numbers (pytest -s)
        assert boxes["scrollTop"] == 0
        _inside(boxes["group"], "the open group")
        _inside(boxes["view"], "the current view")
        _inside(boxes["grid"], f"the first feature-map grid ({FIRST_LAYER})")
        page.screenshot(path=str(artifacts / f"first-screen-{WIDTH}x{HEIGHT}-{lang}.png"))
        assert page.get_by_test_id("stException").count() == 0
    finally:
        context.close()


def test_a_group_opens_its_first_view_and_an_old_link_opens_its_group(server, page):
    from vizhooks.page.texts import EN

    page.goto(f"{server}/?view=table&layers=conv1")  # a link from before the menu had groups
    expect(_chosen(page, "view_group")).to_have_text(EN["group_hood"])
    expect(_chosen(page, "view")).to_have_text(EN["view_table"])
    expect(page.get_by_test_id("stDataFrame")).to_be_visible()
    _idle(page)
    page.locator(".st-key-view_group").get_by_text(EN["group_explain"], exact=True).click()
    expect(_chosen(page, "view_group")).to_have_text(EN["group_explain"])
    expect(_chosen(page, "view")).to_have_text(EN["view_gradcam"])
    _idle(page)
    expect(page).to_have_url(re.compile(r"[?&]view=gradcam(&|$)"))
    page.locator(".st-key-view").get_by_text(EN["view_explain"], exact=True).click()
    expect(_chosen(page, "view")).to_have_text(EN["view_explain"])
    _idle(page)
    expect(page).to_have_url(re.compile(r"[?&]view=explain(&|$)"))
    assert page.get_by_test_id("stException").count() == 0
