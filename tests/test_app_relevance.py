"""The Feature maps view's channel order "most relevant to the class" (issue 28), in both languages:
the grids follow Taylor relevance computed here with torch.autograd, the note names the class and the
method, and the link keeps the order."""

from __future__ import annotations

import pytest
import torch
from helpers import ok, open_page

from vizhooks.i18n import table


def _kept(kind: str) -> list:
    """What the page's shared result cache holds under keys of ``kind``."""
    from vizhooks.page.results import result_cache

    return [value for key, (value, _) in list(result_cache()._items.items()) if key[0] == kind]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_order_by_relevance_notes_the_class_and_keeps_the_link(lang):
    at = open_page(lang=lang, view="maps", order="relevance", layers="layer4.1.conv2", size="128")
    ok(at)
    texts = table(lang)
    assert at.selectbox(key="order").value == "relevance"
    assert at.query_params["order"] in ("relevance", ["relevance"])
    head = texts["relevance_order_note"].split("**")[0]
    notes = [c.value for c in at.caption if c.value.startswith(head)]
    assert len(notes) == 1, [c.value for c in at.caption]
    assert at.image  # the grid is drawn


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_relevance_order_on_layer_inputs_says_it_needs_outputs(lang):
    at = open_page(lang=lang, view="maps", order="relevance", layers="layer4.1.conv2", size="128", what="input")
    ok(at)
    assert table(lang)["relevance_output_only"] in [c.value for c in at.caption]


@pytest.mark.slow
def test_the_grid_follows_taylor_relevance_from_autograd(fresh_results):
    """The page's ranking (the tile order of its layout) against activation x gradient computed here."""
    from vizhooks.page.results import get_bundle

    at = open_page(view="maps", order="relevance", layers="layer4.1.conv2", size="128", channels="8")
    ok(at)
    (analysis,) = _kept("analysis")
    layouts = _kept("layout")
    model = get_bundle("resnet18").model
    kept = []
    handle = model.get_submodule("layer4.1.conv2").register_forward_hook(lambda m, a, out: kept.append(out))
    try:
        logits = model(analysis.x.clone().requires_grad_(True))
    finally:
        handle.remove()
    target = int(logits[0].argmax())
    (grad,) = torch.autograd.grad(logits[0, target], kept[0])
    scores = (kept[0].detach() * grad).sum(dim=(0, 2, 3))
    expected = torch.argsort(scores, descending=True, stable=True)[:8].tolist()
    assert [layout.channels for layout in layouts] == [expected]
    assert layouts[0].notes == [f"{float(scores[c]):+.2g}" for c in expected]
