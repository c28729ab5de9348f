"""Compare's Patch in Chromium (issue 31): a link with patch settings opens the Compare view with the
patch on, and the patched top-5 arrives. conv1 taken whole from photo B gives A exactly B's first maps,
so A-patched's top-5 is B's (restored 100%) and equals patch() called on the same two photos. A
full-page screenshot in tests/artifacts/patching-en.png."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

import vizhooks as vz
from tests.helpers import ROOT
from vizhooks.hooks.patching import patch
from vizhooks.models.images import to_tensor
from vizhooks.page.texts import EN

pytestmark = pytest.mark.browser

#: The page's first run loads the model and patches; two shared cores take seconds.
WAIT_MS = 120_000
SIZE = 128


def _column_bars(page, head: str) -> list[str]:
    """The top-5 bars of the column headed ``head``, as their text ("tabby · 1.2%")."""
    column = page.get_by_test_id("stColumn").filter(has=page.get_by_text(head, exact=True))
    bars = column.get_by_test_id("stProgress")
    expect(bars).to_have_count(5, timeout=WAIT_MS)
    return [" ".join(text.split()) for text in bars.all_inner_texts()]


def _expected_top5() -> list[str]:
    """patch() on the photos as the page prepares them: each at the link's size, then B squashed to A's."""
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    a = bundle.resize(vz.load_image(ROOT / "sample_images/chelsea.jpg"), SIZE)
    b = bundle.resize(vz.load_image(ROOT / "sample_images/coffee.jpg"), SIZE).resize(a.size)
    result = patch(bundle.model, to_tensor(a, bundle.input.mean, bundle.input.std), to_tensor(b, bundle.input.mean,
                   bundle.input.std), "conv1")
    probs = result.logits.softmax(-1)
    return [f"{bundle.categories[i]} · {float(probs[i]):.1%}" for i in probs.topk(5).indices.tolist()]


def test_a_link_with_patch_settings_shows_the_patched_top5(server, page, artifacts):
    page.goto(f"{server}/?view=compare&lang=en&size={SIZE}&layers=conv1,layer2.0.conv1&sample=chelsea.jpg"
              "&compare=coffee.jpg&pt_on=1&pt_layer=conv1&pt_part=whole")
    patched_head = EN["patching_top_patched"].format(layer="conv1")
    expect(page.get_by_text(patched_head, exact=True)).to_be_visible(timeout=WAIT_MS)
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                           timeout=WAIT_MS)
    patched = _column_bars(page, patched_head)
    assert patched == _column_bars(page, EN["patching_top_b"])  # all of B came back
    assert patched != _column_bars(page, EN["patching_top_a"])
    assert patched == _expected_top5()
    metric = page.get_by_test_id("stMetric").filter(has_text=EN["patching_metric"].split("{")[0].strip())
    expect(metric.get_by_test_id("stMetricValue")).to_have_text("100%")
    assert page.get_by_test_id("stException").count() == 0
    assert "pt_on=1" in page.url and "pt_layer=conv1" in page.url
    page.set_viewport_size({"width": 1400, "height": 2800})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "patching-en.png"), full_page=True)
