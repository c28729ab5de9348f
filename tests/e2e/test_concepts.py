"""The Concepts view in Chromium (issue 29): on the sample photos with k = 2 at 128 px, the cards arrive
after "Find concepts", the most important one first with its crops (decoded pictures) and its share of
the importance, and its "Remove this concept" shows the top-5 with and without it; both equal
vizhooks.interpret.concepts (discover, ablate) called on the same photos. A full-page screenshot in
tests/artifacts/concepts-en.png."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

import vizhooks as vz
from tests.helpers import ROOT
from vizhooks.analysis import analyse
from vizhooks.interpret.concepts import ablate, discover
from vizhooks.models.layers import block_layers
from vizhooks.page.results import CONCEPT_CROPS, CONCEPT_SEED
from vizhooks.page.texts import EN
from vizhooks.page.views.concepts import TOP_CROPS
from vizhooks.page.widgets import top5

pytestmark = pytest.mark.browser

#: The model's first load and the discovery take seconds on two shared cores.
WAIT_MS = 180_000
SIZE, K = 128, 2
SAMPLES = ["astronaut.jpg", "brick.png", "chelsea.jpg", "coffee.jpg", "rocket.jpg"]


def _idle(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning", timeout=WAIT_MS)


def _bars(page, card, head: str) -> list[str]:
    """The top-5 bars of the card's column headed ``head`` ("tabby · 1.2%")."""
    column = card.get_by_test_id("stColumn").filter(has=page.get_by_text(head, exact=True))
    bars = column.get_by_test_id("stProgress")
    expect(bars).to_have_count(5, timeout=60_000)
    return [" ".join(text.split()) for text in bars.all_inner_texts()]


def test_the_cards_show_crops_and_importance_and_removal_shows_both_top5(server, page, artifacts):
    page.goto(f"{server}/?view=concepts&lang=en&size={SIZE}")
    k = page.get_by_label(EN["concepts_k"])
    expect(k).to_be_visible(timeout=WAIT_MS)
    _idle(page)
    k.fill(str(K))
    k.press("Enter")
    _idle(page)
    page.get_by_text(EN["concepts_run"].format(n=len(SAMPLES))).click()

    bundle = vz.load_model("resnet18", weights="none", device="cpu")  # the page's offline weights
    blocks = [info.name for info in block_layers(bundle.model)]
    layer = blocks[len(blocks) * 3 // 4 - 1]  # the view's default layer; its caption below names it
    analysis = analyse(bundle, vz.load_image(ROOT / "sample_images" / "chelsea.jpg"), SIZE, [layer])
    target = int(analysis.logits.argmax())
    found = discover(bundle, [vz.load_image(ROOT / "sample_images" / n) for n in SAMPLES], layer, k=K,
                     target=target, crops_per_image=CONCEPT_CROPS, size=SIZE, seed=CONCEPT_SEED)
    first = found.order()[0]
    shares = found.shares()
    assert shares is not None

    cards = page.locator("[class*='st-key-cc_card_']")
    expect(cards).to_have_count(K, timeout=WAIT_MS)
    _idle(page)
    found_caption = EN["concepts_found"].format(k=K, layer=layer, crops=len(found.crops), photos=len(SAMPLES),
                                                label=bundle.categories[target])
    expect(page.get_by_text(found_caption)).to_be_visible()
    card = cards.first
    expect(card).to_have_class(re.compile(rf"\bst-key-cc_card_{first}\b"))  # the most important first
    expect(card.get_by_role("heading")).to_contain_text(EN["concepts_card"].format(rank=1))
    crops = card.get_by_test_id("stImage").locator("img")
    expect(crops).to_have_count(TOP_CROPS + 1)  # the crops, then the concept's map over the photo
    for n in range(TOP_CROPS):
        expect(crops.nth(n)).to_have_js_property("complete", True)
        expect(crops.nth(n)).not_to_have_js_property("naturalWidth", 0)
    share = EN["concepts_share"].format(share=float(shares[first]), label=bundle.categories[target])
    expect(card.get_by_test_id("stProgress").first).to_contain_text(share)

    expect(card.get_by_text(EN["concepts_remove"], exact=True)).to_be_visible()
    page.locator(f".st-key-cc_remove_{first} label").click()
    expect(card.get_by_role("switch", name=EN["concepts_remove"])).to_be_checked()
    result = ablate(bundle, analysis.x, layer, found, first, target)
    for head, logits in ((EN["concepts_with"], result.logits_before), (EN["concepts_without"], result.logits)):
        assert _bars(page, card, head) == [f"{label} · {p:.1%}" for label, p in top5(logits[None], bundle.categories)]
    _idle(page)
    assert page.get_by_test_id("stException").count() == 0
    page.set_viewport_size({"width": 1400, "height": 2800})
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "concepts-en.png"), full_page=True)
