"""The page in a real browser: default view, an upload, another layer, a screenshot."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from .conftest import ROOT

PHOTO = ROOT / "sample_images" / "coffee.jpg"
# A cold server loads torch and the model on the first visit: allow for a slow CI machine.
expect.set_options(timeout=120_000)


def _wait_for_grids(page, names):
    for name in names:
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    # the input picture plus one grid per layer, all loaded
    page.wait_for_function(
        """n => [...document.querySelectorAll('[data-testid="stImage"] img')]
                 .filter(img => img.complete && img.naturalWidth > 0).length >= n""",
        arg=len(names) + 1, timeout=120_000)
    _wait_idle(page)


def _wait_idle(page):
    # The status widget is hidden with toolbarMode = "minimal"; the app root says whether the
    # script is still running.
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def test_default_view_upload_and_layer_change(server, page, artifacts):
    page.goto(server)
    tour = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
    _wait_for_grids(page, tour)
    expect(page.get_by_text(re.compile(r"What the model saw: \d+ × 224 pixels"))).to_be_visible()
    page.screenshot(path=str(artifacts / "page-default.png"), full_page=True)

    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Upload", exact=True).click()
    sidebar.locator("input[type=file]").set_input_files(str(PHOTO))
    expect(page.get_by_text(re.compile(r"What the model saw: 336 × 224 pixels"))).to_be_visible()
    _wait_for_grids(page, tour)
    assert page.get_by_test_id("stException").count() == 0

    layers = sidebar.get_by_test_id("stMultiSelect")
    layers.locator("input").click()
    page.keyboard.type("layer3.1.conv2")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    _wait_for_grids(page, [*tour, "layer3.1.conv2"])
    expect(page.get_by_text("256 of", exact=False)).to_have_count(0)
    assert "layer3.1.conv2" in page.url
    assert page.get_by_test_id("stException").count() == 0
    # Streamlit scrolls inside its own container, so a tall window shows the whole page.
    page.set_viewport_size({"width": 1400, "height": 2600})
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "page.png"))


def test_every_view_renders_from_a_link(server, page, artifacts):
    from vizhooks.page.urlstate import VIEWS

    # what each view must show once it has finished
    shows = {"maps": "stImage", "inspector": "stImage", "gradients": "stImage", "gradcam": "stImage",
             "backward": "stDataFrame", "table": "stDataFrame", "code": "stCode", "intervene": "stMetric",
             "compare": "stImage", "lesson": "stCode", "atlas": "stImage"}
    assert set(shows) == set(VIEWS)
    for view in VIEWS:
        page.goto(f"{server}/?view={view}&layers=conv1,layer4.1.conv2")
        expect(page.get_by_text(re.compile(r"What the model saw"))).to_be_visible()
        if view not in ("inspector", "code", "lesson", "atlas"):
            expect(page.get_by_role("heading", name="layer4.1.conv2", exact=True).or_(
                page.get_by_test_id(shows[view]).last).first).to_be_visible()
        expect(page.get_by_test_id(shows[view]).last).to_be_visible()
        _wait_idle(page)
        expect(page.get_by_test_id("stSpinner")).to_have_count(0)
        assert page.get_by_test_id("stException").count() == 0, view
        assert page.get_by_test_id("stAlert").filter(has_text="can't").count() == 0, view
        page.screenshot(path=str(artifacts / f"view-{view}.png"))


def test_lesson_in_chinese_next_back_and_step_link(server, page, artifacts):
    from vizhooks.page.lesson import STEPS
    from vizhooks.page.texts_zh import ZH

    def heading(n: int) -> str:
        title = ZH[f"lesson_{STEPS[n - 1].id}_title"]
        return ZH["lesson_step"].format(n=n, total=len(STEPS), title=title)

    page.goto(f"{server}/?view=lesson&step=2&lang=zh&layers=conv1,layer4.1.conv2")
    expect(page.get_by_role("heading", name=heading(2))).to_be_visible()
    _wait_idle(page)
    page.get_by_role("button", name=ZH["lesson_next"]).click()
    expect(page.get_by_role("heading", name=heading(3))).to_be_visible()
    _wait_idle(page)
    assert "step=3" in page.url and "lang=zh" in page.url
    page.get_by_role("button", name=ZH["lesson_back"]).click()
    page.get_by_role("button", name=ZH["lesson_back"]).click()
    expect(page.get_by_role("heading", name=heading(1))).to_be_visible()
    _wait_idle(page)
    page.get_by_text(ZH["lesson_answer"]).click()  # the answer opens on request
    expect(page.get_by_text(ZH["lesson_what_a"][:12])).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
    page.set_viewport_size({"width": 1400, "height": 1900})
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "lesson-zh.png"))

    page.get_by_role("button", name=ZH["lesson_next"]).click()
    expect(page.get_by_role("heading", name=heading(2))).to_be_visible()
    _wait_idle(page)
    href = page.get_by_role("link", name=ZH["lesson_link"]).get_attribute("href")
    assert "step=2" in href
    shared = page.context.new_page()  # a student opens the teacher's link
    shared.goto(f"{server}/{href.lstrip('/')}" if href.startswith("?") else href)
    expect(shared.get_by_role("heading", name=heading(2))).to_be_visible()
    expect(shared.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
    assert shared.get_by_test_id("stException").count() == 0
