"""Intervene's mean replacement and steering in Chromium (issue 31): a link opens the view with the edit,
the top-5 without and with it arrive, and they are the library's answer on the same photo; moving the
strength slider re-steers and the top-5 with the edit follows (and the link keeps the new strength)."""

from __future__ import annotations

import re

import pytest
import torch
from playwright.sync_api import expect

import vizhooks as vz
from tests.helpers import ROOT
from vizhooks.hooks.patching import gradient_direction, mean_ablate, steer
from vizhooks.models.images import to_tensor
from vizhooks.page.texts import EN

pytestmark = pytest.mark.browser

#: The page's first run loads the model and runs the edit; two shared cores take seconds.
WAIT_MS = 120_000
SIZE = 128
LAYERS = "conv1,layer2.0.conv1,layer4.0.conv1"
SAMPLES = sorted(p for p in (ROOT / "sample_images").glob("*.*") if p.suffix in (".jpg", ".png"))


def _settled(page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                           timeout=WAIT_MS)


def _column_bars(page, head: str) -> list[str]:
    """The top-5 bars of the column headed ``head``, as their text ("tabby · 1.2%")."""
    column = page.get_by_test_id("stColumn").filter(has=page.get_by_text(head, exact=True))
    bars = column.get_by_test_id("stProgress")
    expect(bars).to_have_count(5, timeout=WAIT_MS)
    return [" ".join(text.split()) for text in bars.all_inner_texts()]


def _top5(bundle: vz.ModelBundle, logits: torch.Tensor) -> list[str]:
    probs = logits.softmax(-1)
    return [f"{bundle.categories[i]} · {float(probs[i]):.1%}" for i in probs.topk(5).indices.tolist()]


def _photo(bundle: vz.ModelBundle) -> torch.Tensor:
    picture = bundle.resize(vz.load_image(ROOT / "sample_images/chelsea.jpg"), SIZE)
    return to_tensor(picture, bundle.input.mean, bundle.input.std)


def test_a_link_with_mean_replacement_shows_the_librarys_top5(server, page):
    page.goto(f"{server}/?view=intervene&lang=en&size={SIZE}&layers={LAYERS}&sample=chelsea.jpg"
              "&iv_mode=mean&iv_layer=conv1&iv_channels=" + ",".join(map(str, range(64))))
    expect(page.get_by_text(EN["iv_after"], exact=True)).to_be_visible(timeout=WAIT_MS)
    _settled(page)
    before, after = _column_bars(page, EN["iv_before"]), _column_bars(page, EN["iv_after"])
    # the library on the photo as the page reads it, each sample photo squashed to its size
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = _photo(bundle)
    size = (int(x.shape[-1]), int(x.shape[-2]))
    photos = torch.cat([to_tensor(vz.load_image(p).resize(size), bundle.input.mean, bundle.input.std)
                        for p in SAMPLES])
    result = mean_ablate(bundle.model, x, "conv1", photos, channels=range(64))  # all of conv1
    assert before == _top5(bundle, result.clean) and after == _top5(bundle, result.logits)
    assert after != before
    assert page.get_by_test_id("stException").count() == 0
    assert "iv_mode=mean" in page.url


def test_steering_follows_the_strength_slider(server, page):
    layer, target = "layer2.0.conv1", 281
    page.goto(f"{server}/?view=intervene&lang=en&size={SIZE}&layers={LAYERS}&sample=chelsea.jpg"
              f"&iv_mode=steer&iv_layer={layer}&iv_dir=gradient&iv_scale=1&target={target}")
    expect(page.get_by_text(EN["iv_after"], exact=True)).to_be_visible(timeout=WAIT_MS)
    _settled(page)
    before, first = _column_bars(page, EN["iv_before"]), _column_bars(page, EN["iv_after"])
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = _photo(bundle)
    maps = vz.capture(bundle.model, x, [layer])[layer]
    direction = gradient_direction(bundle.model, x, layer, target, length=float(maps.mean(dim=(0, 2, 3)).norm()))

    def expected(scale: float) -> list[str]:
        return _top5(bundle, steer(bundle.model, x, layer, direction, scale, target=target).logits)

    assert before == _top5(bundle, steer(bundle.model, x, layer, direction, 0.0).clean)
    assert first == expected(1.0)
    # the slider's thumb (a visually hidden range input), moved two steps right by the keyboard: 1 -> 2
    thumb = page.locator(".st-key-iv_scale input[type=range]")
    expect(thumb).to_have_attribute("aria-valuetext", "+1")
    thumb.focus()
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    expect(thumb).to_have_attribute("aria-valuetext", "+2")
    expect(page).to_have_url(re.compile(r"iv_scale=2(\.0)?(&|$)"), timeout=WAIT_MS)
    _settled(page)
    second = _column_bars(page, EN["iv_after"])
    assert second == expected(2.0) and second != first
    assert _column_bars(page, EN["iv_before"]) == before  # the photo's own answer stays
    assert page.get_by_test_id("stException").count() == 0
