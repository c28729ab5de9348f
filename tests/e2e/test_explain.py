"""The Explain view in Chromium, in both languages: opened from a link, the maps computed on their
button, then the score button: the curves' picture arrives (decoded, naturalWidth > 0) with the
scores table; no exception. Full-page screenshots in tests/artifacts/explain-<lang>.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from vizhooks.page.texts import EN, ZH

pytestmark = pytest.mark.browser

#: The maps and the scores take seconds on two shared cores; expect()'s own default is 5 s.
WAIT_MS = 120_000


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT_MS)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_maps_then_scores_with_their_curves(server, page, artifacts, lang):
    texts = EN if lang == "en" else ZH
    page.goto(f"{server}/?view=explain&lang={lang}&size=128&ex_methods=gradcam,saliency")
    compute = page.get_by_role("button", name=texts["ex_compute"])
    expect(compute).to_be_visible()
    _idle(page)
    compute.click()
    score = page.get_by_role("button", name=texts["ex_score"])
    expect(score).to_be_visible(timeout=WAIT_MS)
    _idle(page)
    maps = page.get_by_test_id("stImage").filter(has_text=texts["ex_method_saliency"]).locator("img")
    expect(maps).not_to_have_js_property("naturalWidth", 0)
    score.click()
    curves = page.get_by_test_id("stImage").filter(has_text=texts["ex_curves_caption"]).locator("img")
    expect(curves).to_have_js_property("complete", True, timeout=WAIT_MS)
    expect(curves).not_to_have_js_property("naturalWidth", 0)
    _idle(page)
    expect(page.get_by_test_id("stDataFrame")).to_have_count(1)
    assert page.get_by_test_id("stException").count() == 0
    assert "view=explain" in page.url and "ex_methods=gradcam%2Csaliency" in page.url.replace(",", "%2C")
    page.set_viewport_size({"width": 1400, "height": 2800})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / f"explain-{lang}.png"), full_page=True)
