"""The Feature maps view's channel order "most relevant to the class" (issue 28), in both languages:
the grids follow Taylor relevance computed here with torch.autograd, the note names the class and the
method, and the link keeps the order."""

from __future__ import annotations

import pytest
import torch
from helpers import ok, open_page

from vizhooks.i18n import table
from vizhooks.lesson.i18n import in_language
from vizhooks.page.texts import EN


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


# ----------------------------------------------------------------------------------------------
# the Channel inspector: rank, share and the conditional heatmap of one channel

INSPECT = {"view": "inspector", "order": "relevance", "layers": "layer4.1.conv2", "size": "128",
           "insp_layer": "layer4.1.conv2", "insp_channel": "5"}


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inspector_shows_the_channels_rank_share_and_conditional_heatmap(fresh_results, lang):
    """The rank, score and share the inspector writes against ``channel_relevance`` called here (rank from
    ``.order``, share = score / sum of |scores|), its heatmap against ``conditional_heatmap`` called here."""
    from vizhooks.interpret.relevance import channel_relevance, conditional_heatmap
    from vizhooks.page.results import get_bundle
    from vizhooks.page.widgets import shown_labels

    at = open_page(lang=lang, **INSPECT)
    ok(at)
    texts = table(lang)
    (analysis,) = _kept("analysis")
    bundle = get_bundle("resnet18")
    target = int(analysis.logits[0].argmax())
    label = in_language(lang, lambda: shown_labels(bundle))[target]  # the class name as the page says it
    found = channel_relevance(bundle, analysis.x, "layer4.1.conv2", target, method="taylor")
    scores = found.scores
    rank = found.order.tolist().index(5) + 1
    share = float(scores[5]) / float(scores.abs().sum())
    expected = texts["relpage_rank"].format(channel=5, rank=rank, total=512, label=label, index=target,
                                            score=float(scores[5]), share=share)
    assert expected in [m.value for m in at.markdown]
    captions = [i.proto.imgs[0].caption for i in at.image]
    assert texts["relpage_heatmap"].format(channel=5, label=label) in captions
    (shown,) = _kept("conditional")
    torch.testing.assert_close(shown, conditional_heatmap(bundle, analysis.x, "layer4.1.conv2", 5, target,
                                                           through_only=True))
    assert at.query_params["order"] in ("relevance", ["relevance"])
    assert at.query_params["insp_channel"] in ("5", ["5"])


@pytest.mark.slow
def test_inspector_follows_the_chosen_class(fresh_results):
    """``target=`` in the link: the rank and the heatmap are for that class, not the top-1."""
    from vizhooks.interpret.relevance import channel_relevance
    from vizhooks.page.results import get_bundle

    at = open_page(target="3", **INSPECT)
    ok(at)
    (analysis,) = _kept("analysis")
    assert int(analysis.logits[0].argmax()) != 3
    found = channel_relevance(get_bundle("resnet18"), analysis.x, "layer4.1.conv2", 3)
    rank = found.order.tolist().index(5) + 1
    assert any(f"**{rank}**" in m.value and "(class 3, Taylor)" in m.value for m in at.markdown)


@pytest.mark.slow
def test_inspector_on_a_vit_says_why_there_is_no_heatmap_and_keeps_the_rank():
    at = open_page(view="inspector", model="vit_b_32", order="relevance", layers="encoder.layers.encoder_layer_11",
                   insp_layer="encoder.layers.encoder_layer_11", insp_channel="7")
    ok(at)
    assert EN["relpage_no_heatmap"] in [i.value for i in at.info]
    assert any(m.value.startswith("Channel 7 ranks") for m in at.markdown)
    assert not [i for i in at.image if i.proto.imgs[0].caption.startswith("Where channel")]


def test_inspector_without_the_relevance_order_computes_no_relevance(fresh_results):
    at = open_page(view="inspector", layers="layer4.1.conv2", size="128", insp_layer="layer4.1.conv2")
    ok(at)
    assert not _kept("relevance") and not _kept("conditional")
    assert not any(m.value.startswith("Channel") for m in at.markdown)


# ----------------------------------------------------------------------------------------------
# the Overview: each row's channels most relevant to the class


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_overview_shows_each_layers_most_relevant_channels_with_their_signed_relevance(fresh_results, lang):
    """Every row's channels are the first of that conv's Taylor order, computed here with hooks written
    here and one torch.autograd.grad; each tile's note is its score; the note names the class; the link
    keeps the order."""
    from vizhooks.models.layers import conv_layers
    from vizhooks.page.results import get_bundle
    from vizhooks.page.widgets import shown_labels

    at = open_page(lang=lang, view="overview", order="relevance", size="128")
    ok(at)
    (analysis,) = _kept("analysis")
    (shown,) = _kept("overview")
    model = get_bundle("resnet18").model
    names = [info.name for info in conv_layers(model)]
    kept = {}
    handles = [model.get_submodule(n).register_forward_hook(lambda m, a, out, n=n: kept.setdefault(n, out))
               for n in names]
    try:
        logits = model(analysis.x.clone().requires_grad_(True))
    finally:
        for handle in handles:
            handle.remove()
    target = int(logits[0].argmax())
    grads = torch.autograd.grad(logits[0, target], [kept[n] for n in names])
    assert [row.name for row in shown.rows] == names
    for row, name, grad in zip(shown.rows, names, grads, strict=True):
        scores = (kept[name].detach() * grad).sum(dim=(0, 2, 3))
        assert list(row.picked) == torch.argsort(scores, descending=True, stable=True)[:8].tolist(), name
        assert row.notes == tuple(f"{float(scores[c]):+.2g}" for c in row.picked), name
    label = in_language(lang, lambda: shown_labels(get_bundle("resnet18")))[target]
    assert table(lang)["relpage_overview_note"].format(label=label, index=target) in [c.value for c in at.caption]
    assert at.query_params["order"] in ("relevance", ["relevance"])


def test_overview_without_the_relevance_order_keeps_the_strongest_channels(fresh_results):
    at = open_page(view="overview", size="128")
    ok(at)
    (shown,) = _kept("overview")
    assert all(row.notes is None for row in shown.rows) and not _kept("relevance")
    assert not [c for c in at.caption if c.value.startswith(EN["relpage_overview_note"].split("**")[0])]
