"""Channel relevance in Chromium, in both languages: the Channel inspector opened from a link with the
order "most relevant to the class" shows the channel's conditional heatmap (its picture decoded,
naturalWidth > 0) and its relevance rank; no exception. Full-page screenshots in
tests/artifacts/relevance-inspector-<lang>.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from vizhooks.page.texts import EN, ZH

pytestmark = pytest.mark.browser

#: The photo's relevance and one LRP pass take seconds on two shared cores; expect()'s own default is 5 s.
WAIT_MS = 120_000


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT_MS)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inspector_shows_the_conditional_heatmap_and_the_rank(server, page, artifacts, lang):
    texts = EN if lang == "en" else ZH
    page.goto(f"{server}/?view=inspector&lang={lang}&order=relevance&size=128&layers=layer4.1.conv2"
              "&insp_layer=layer4.1.conv2&insp_channel=5")
    heading = texts["relpage_heatmap"].split("{label}")[0].format(channel=5)
    heatmap = page.get_by_test_id("stImage").filter(has_text=heading).locator("img")
    expect(heatmap).to_have_js_property("complete", True, timeout=WAIT_MS)
    expect(heatmap).not_to_have_js_property("naturalWidth", 0)
    rank = texts["relpage_rank"].split("**")[0].format(channel=5)
    expect(page.get_by_test_id("stMarkdown").filter(has_text=rank)).to_have_count(1)
    _idle(page)
    assert page.get_by_test_id("stException").count() == 0
    assert "order=relevance" in page.url and "insp_channel=5" in page.url
    page.set_viewport_size({"width": 1400, "height": 2000})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / f"relevance-inspector-{lang}.png"), full_page=True)
