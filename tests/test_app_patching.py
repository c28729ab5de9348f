"""Activation patching on the page (issue 31) through AppTest, in both languages: the Compare view's
Patch (a layer, the sweep, the region) and Steer (A pushed towards B at one layer), Intervene's
"replace with the mean over the sample photos", and links that keep every new setting. The numbers
are checked against hand-written forward hooks on the same random-weight resnet18."""

from __future__ import annotations

import pytest
import torch

import vizhooks as vz
from tests.helpers import ROOT, ok, open_page
from vizhooks.models.images import to_tensor
from vizhooks.page.texts import EN, ZH

LAYERS = "conv1,layer2.0.conv1,layer4.0.conv1"
SIZE = 128


def _page(**query: str):
    return open_page(**{"size": str(SIZE), "layers": LAYERS, "compare": "coffee.jpg", **query})


def _reopen(at):
    return open_page(**{k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()})


def _inputs(bundle: vz.ModelBundle) -> tuple[torch.Tensor, torch.Tensor]:
    """Photo A as the page sees it, and photo B squashed to A's size (as the page patches it)."""
    a = bundle.resize(vz.load_image(ROOT / "sample_images/chelsea.jpg"), SIZE)
    b = vz.load_image(ROOT / "sample_images/coffee.jpg").resize(a.size)
    return to_tensor(a, bundle.input.mean, bundle.input.std), to_tensor(b, bundle.input.mean, bundle.input.std)


def _prefix(texts: dict[str, str], key: str) -> str:
    return texts[key].split("{")[0]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_patch_and_sweep(lang):
    texts = EN if lang == "en" else ZH
    at = _page(view="compare", lang=lang)
    ok(at)
    assert not at.metric and not at.get("vega_lite_chart")  # off until asked for: no extra passes
    at.toggle(key="pt_on").set_value(True).run()
    ok(at)
    # conv1 whole from B: A runs on B's first maps, so B's answer comes back in full, and A-patched's
    # top-5 is B's
    assert at.metric[0].label.startswith(_prefix(texts, "patching_metric"))
    assert at.metric[0].value == "100%"
    bars = [p.text for p in at.progress]
    assert len(bars) >= 15 and bars[-5:] == bars[-10:-5] and bars[-5:] != bars[-15:-10]
    at.selectbox(key="pt_layer").set_value("layer2.0.conv1").run()
    at.toggle(key="pt_sweep").set_value(True).run()
    ok(at)
    assert at.get("vega_lite_chart")
    assert any(c.value.startswith(_prefix(texts, "patching_chart_caption")) for c in at.caption)
    # the metric against a hand-written pair of hooks: keep B's output of the layer, return it for A
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x, source = _inputs(bundle)
    module = bundle.model.get_submodule("layer2.0.conv1")
    kept = []
    handle = module.register_forward_hook(lambda m, args, out: kept.append(out.clone()))
    with torch.no_grad():
        b_logits = bundle.model(source)[0]
    handle.remove()
    handle = module.register_forward_hook(lambda m, args, out: kept[0])
    with torch.no_grad():
        patched = bundle.model(x)[0]
    handle.remove()
    with torch.no_grad():
        a_logits = bundle.model(x)[0]
    target = int(b_logits.argmax())
    restored = float((patched[target] - a_logits[target]) / (b_logits[target] - a_logits[target]))
    assert at.metric[0].value == f"{restored:.0%}"


@pytest.mark.slow
def test_patch_settings_travel_in_the_link():
    at = _page(view="compare", pt_on="1", pt_layer="layer2.0.conv1")
    at.radio(key="pt_part").set_value("channels").run()
    at.multiselect(key="pt_channels").set_value([5, 2]).run()
    ok(at)
    again = _reopen(at)
    ok(again)
    assert again.toggle(key="pt_on").value is True
    assert again.selectbox(key="pt_layer").value == "layer2.0.conv1"
    assert again.radio(key="pt_part").value == "channels"
    assert sorted(again.multiselect(key="pt_channels").value) == [2, 5]
    again.radio(key="pt_part").set_value("region").run()
    again.slider(key="pt_rows").set_value((10, 40)).run()
    again.toggle(key="pt_sweep").set_value(True).run()
    ok(again)
    third = _reopen(again)
    ok(third)
    assert third.radio(key="pt_part").value == "region"
    assert tuple(third.slider(key="pt_rows").value) == (10, 40)
    assert third.toggle(key="pt_sweep").value is True
    assert third.get("vega_lite_chart")


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_intervene_mean_over_the_sample_photos(lang):
    texts = EN if lang == "en" else ZH
    at = open_page(view="intervene", size=str(SIZE), layers=LAYERS, lang=lang, iv_mode="mean")
    ok(at)
    assert any(c.value.startswith(_prefix(texts, "patching_mean_caption")) for c in at.caption)
    assert _reopen(at).selectbox(key="iv_mode").value == "mean"
    # by hand: conv1's output over every sample photo (squashed to A's size), its mean in channels 0-3
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x, _ = _inputs(bundle)
    size = (int(x.shape[-1]), int(x.shape[-2]))
    photos = torch.cat([to_tensor(vz.load_image(p).resize(size), bundle.input.mean, bundle.input.std)
                        for p in sorted((ROOT / "sample_images").glob("*.*")) if p.suffix in (".jpg", ".png")])
    kept = []
    handle = bundle.model.conv1.register_forward_hook(lambda m, args, out: kept.append(out.clone()))
    with torch.no_grad():
        bundle.model(photos)
    handle.remove()
    mean = kept[0].mean(0, keepdim=True)

    def with_mean(m, args, out):
        new = out.clone()
        new[:, :4] = mean[:, :4]
        return new

    handle = bundle.model.conv1.register_forward_hook(with_mean)
    with torch.no_grad():
        edited = bundle.model(x)[0]
    handle.remove()
    with torch.no_grad():
        target = int(bundle.model(x)[0].argmax())
    assert float(at.metric[0].value) == pytest.approx(float(edited[target]), abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_steer_top5_equals_steer_and_a_hand_written_hook(lang):
    from vizhooks.hooks.patching import mean_direction, steer
    from vizhooks.models.labels import class_labels

    texts = EN if lang == "en" else ZH
    at = _page(view="compare", lang=lang)
    ok(at)
    assert at.toggle(key="sr_on").value is False and not at.metric  # off until asked for: no extra passes
    at.toggle(key="sr_on").set_value(True).run()
    at.selectbox(key="sr_layer").set_value("layer2.0.conv1").run()
    at.select_slider(key="sr_scale").set_value(3.0).run()
    ok(at)
    assert at.metric[0].label.startswith(_prefix(texts, "patching_steer_metric"))
    page_before, page_after = [p.text for p in at.progress][-10:-5], [p.text for p in at.progress][-5:]
    # by hand: A and B as the page reads them (each at its own size), B's mean minus A's per channel of
    # the layer, added three times at every position of A's output by a plain forward hook
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = to_tensor(bundle.resize(vz.load_image(ROOT / "sample_images/chelsea.jpg"), SIZE), bundle.input.mean,
                  bundle.input.std)
    b = to_tensor(bundle.resize(vz.load_image(ROOT / "sample_images/coffee.jpg"), SIZE), bundle.input.mean,
                  bundle.input.std)
    module = bundle.model.get_submodule("layer2.0.conv1")
    kept = []
    handle = module.register_forward_hook(lambda m, args, out: kept.append(out.mean(dim=(0, 2, 3))))
    with torch.no_grad():
        b_logits = bundle.model(b)[0]
        a_logits = bundle.model(x)[0]
    handle.remove()
    direction = kept[0] - kept[1]
    handle = module.register_forward_hook(lambda m, args, out: out + 3.0 * direction.view(1, -1, 1, 1))
    with torch.no_grad():
        by_hand = bundle.model(x)[0]
    handle.remove()
    direct = steer(bundle.model, x, "layer2.0.conv1", mean_direction(bundle.model, b, x, "layer2.0.conv1"), 3.0)
    torch.testing.assert_close(direct.logits, by_hand, rtol=0, atol=1e-4)
    labels = class_labels(bundle.categories, lang)

    def top5(logits: torch.Tensor) -> list[str]:
        probs = logits.softmax(-1)
        return [f"{labels[i]} · {float(probs[i]):.1%}" for i in probs.topk(5).indices.tolist()]

    assert page_after == top5(by_hand) == top5(direct.logits)
    assert page_before == top5(a_logits)
    assert page_after != page_before  # the steering changed the top-5
    target = int(b_logits.argmax())
    assert at.metric[0].value == f"{float(by_hand[target]):.3f}"
    assert at.metric[0].delta == f"{float(by_hand[target] - a_logits[target]):+.3f}"
    again = _reopen(at)  # the link keeps every setting
    ok(again)
    assert again.toggle(key="sr_on").value is True
    assert again.selectbox(key="sr_layer").value == "layer2.0.conv1"
    assert again.select_slider(key="sr_scale").value == 3.0
    assert [p.text for p in again.progress][-5:] == page_after


def test_patch_links_are_checked_value_by_value():
    from vizhooks.page.urlstate import parse_query, to_query

    good, bad = parse_query({"pt_on": "1", "pt_sweep": "0", "pt_part": "region", "pt_layer": "layer2.0.conv1",
                             "pt_channels": "5,2,5", "pt_rows": "10,40", "pt_cols": "0,100"}, ["chelsea.jpg"])
    assert bad == []
    assert good == {"pt_on": True, "pt_sweep": False, "pt_part": "region", "pt_layer": "layer2.0.conv1",
                    "pt_channels": [2, 5], "pt_rows": (10, 40), "pt_cols": (0, 100)}
    assert to_query(good)["pt_rows"] == "10,40" and to_query(good)["pt_on"] == "1"
    _, bad = parse_query({"pt_part": "box", "pt_layer": "layer9", "pt_rows": "40,10", "pt_cols": "0,101",
                          "pt_channels": "a", "pt_on": "yes"}, ["chelsea.jpg"])
    assert sorted(key for key, _ in bad) == ["pt_channels", "pt_cols", "pt_layer", "pt_on", "pt_part", "pt_rows"]
    good, bad = parse_query({"sr_on": "1", "sr_layer": "layer2.0.conv1", "sr_scale": "-1.5"}, ["chelsea.jpg"])
    assert bad == [] and good == {"sr_on": True, "sr_layer": "layer2.0.conv1", "sr_scale": -1.5}
    assert to_query(good)["sr_scale"] == "-1.5" and parse_query({"sr_scale": "2"}, [])[0] == {"sr_scale": 2.0}
    _, bad = parse_query({"sr_on": "yes", "sr_layer": "layer9", "sr_scale": "2.25"}, ["chelsea.jpg"])
    assert sorted(key for key, _ in bad) == ["sr_layer", "sr_on", "sr_scale"]


def test_a_region_in_percent_is_a_box_of_every_map_size():
    from vizhooks.page.views.compare import span_box

    assert span_box((25, 75), (0, 50), (56, 56)) == (14, 0, 42, 28)
    assert span_box((25, 75), (0, 50), (7, 7)) == (1, 0, 6, 4)  # edges rounded outwards
    assert span_box((95, 100), (40, 45), (1, 1)) == (0, 0, 1, 1)  # never empty, never outside


@pytest.mark.slow
def test_the_patched_region_is_a_box_on_the_layers_maps(monkeypatch):
    from vizhooks.page.results import grid_png

    drawn = []
    real = vz.feature_grid

    def spy(*args, **kwargs):
        fig = real(*args, **kwargs)
        drawn.append(fig)
        return fig

    monkeypatch.setattr(vz, "feature_grid", spy)
    grid_png.clear()  # no grid from an earlier test in this process
    at = _page(view="compare", pt_on="1", pt_layer="layer2.0.conv1", pt_part="region", pt_rows="10,40",
               pt_cols="50,100")
    ok(at)
    assert any(c.value.startswith(_prefix(EN, "patching_maps")) for c in at.caption)
    # the layer's map of A, by a plain forward hook; rows 10-40 % and columns 50-100 % of it, by hand
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x, _ = _inputs(bundle)
    kept = []
    handle = bundle.model.get_submodule("layer2.0.conv1").register_forward_hook(lambda m, a, out: kept.append(out))
    with torch.no_grad():
        bundle.model(x)
    handle.remove()
    h, w = kept[0].shape[-2:]
    expected = (int(0.1 * h), int(0.5 * w), -(-40 * h // 100), w)
    boxed = [fig for fig in drawn if fig.vizhooks["box"] is not None]
    assert len(boxed) == 3  # A's maps, B's and the mix
    for fig in boxed:
        assert fig.vizhooks["box"] == expected
        (ax,) = [ax for ax in fig.axes if ax.get_label() == "box"]
        k = fig.vizhooks["scale"]
        assert len(ax.patches) == len(fig.vizhooks["channels"])
        first = ax.patches[0]
        assert (first.get_width(), first.get_height()) == ((expected[3] - expected[1]) * k,
                                                           (expected[2] - expected[0]) * k)
        assert first.get_x() == expected[1] * k  # the first tile starts at the page's left edge
    seen = len(drawn)
    at.radio(key="pt_part").set_value("whole").run()
    ok(at)
    assert len(drawn) > seen and all(fig.vizhooks["box"] is None for fig in drawn[seen:])  # no region, no box


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_patching_a_layer_that_folds_the_batch_is_one_sentence_on_the_page(lang, tmp_path, monkeypatch, fresh_caches):
    """timm's TNT runs its pixel embedding conv on every patch of the photo as a batch of its own (196 rows
    for one 224 px photo). An operator can offer it (VIZHOOKS_MODELS), and the Compare view lists that conv:
    patching it says the library's sentence in the page's language, with no traceback and no hook left."""
    from tests.helpers import count_hooks
    from vizhooks.page.views import compare

    config = tmp_path / "models.toml"
    config.write_text('[[model]]\nname = "TNT"\narch = "timm:tnt_s_patch16_224"\n')
    monkeypatch.setenv("VIZHOOKS_MODELS", str(config))
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")  # random weights at once: no download attempt
    models = []

    def spy(model, *args, **kwargs):
        models.append(model)
        return sweep(model, *args, **kwargs)

    sweep = compare.sweep
    monkeypatch.setattr(compare, "sweep", spy)
    # square photos: TNT takes 224 x 224 only
    at = open_page(model="TNT", view="compare", sample="astronaut.jpg", compare="brick.png", size="224",
                   layers="pixel_embed.proj", pt_on="1", lang=lang)
    texts = EN if lang == "en" else ZH
    reason = texts["err_patching_batch"].format(layer="pixel_embed.proj", rows=196, photos=1)
    assert not at.exception
    assert [e.value for e in at.error] == [texts["bad_input"].format(reason=reason)]
    assert models and count_hooks(models[0]) == 0 and not models[0].training
