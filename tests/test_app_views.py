"""The Intervene, Compare and Lesson views through AppTest, in both languages."""

from __future__ import annotations

import ast
import re

import pytest
import torch
from streamlit.testing.v1 import AppTest

import vizhooks as vz
from tests.helpers import ROOT, ok, open_page
from tests.warm_python import run_python
from vizhooks.atlas import load_atlas
from vizhooks.lesson.code import lesson_snippet
from vizhooks.lesson.steps import STEPS
from vizhooks.ops import hook_count
from vizhooks.page.texts import EN, ZH

LAYERS = "conv1,layer2.0.conv1,layer4.0.conv1"


def _page(**query: str) -> AppTest:  # the page with this file's size and layers
    return open_page(**{"size": "128", "layers": LAYERS, **query})


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_intervene_view(lang, forward_passes):
    texts = EN if lang == "en" else ZH
    at = _page(view="intervene", lang=lang)
    ok(at)
    assert at.metric and at.metric[0].label.startswith(texts["iv_logit"].split("{")[0])
    # zeroing channels 0..3 of conv1 changes the later layers; the page says by how much
    assert [s.value for s in at.subheader][1:3] == ["layer2.0.conv1", "layer4.0.conv1"]
    before = len(forward_passes)
    at.selectbox(key="iv_mode").set_value("top").run()
    ok(at)
    assert len(forward_passes) == before + 2  # one pass as it is, one with the edit
    at.selectbox(key="cmap").set_value("magma").run()
    assert len(forward_passes) == before + 2  # display only
    at.selectbox(key="iv_layer").set_value("layer4.0.conv1").run()
    ok(at)
    assert any(texts["iv_no_later"] == i.value for i in at.info)


@pytest.mark.slow
def test_intervene_metric_is_the_library_answer():
    at = _page(view="intervene")
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = bundle.preprocess(vz.load_image(ROOT / "sample_images/chelsea.jpg"), 128)
    with torch.no_grad():
        plain = bundle.model(x)
    target = int(plain[0].argmax())
    # the same edit written as a weight edit: conv1 feeds bn1, so scale bn1's output channels instead
    edited = vz.intervene(bundle.model, x, {"conv1": vz.ChannelEdit(channels=[0, 1, 2, 3], scale=0.0)})
    assert float(at.metric[0].value) == pytest.approx(float(edited.logits_after[0, target]), abs=1e-3)
    delta = float(edited.logits_after[0, target] - plain[0, target])
    assert float(at.metric[0].delta) == pytest.approx(delta, abs=1e-3)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_compare_view(lang, forward_passes):
    texts = EN if lang == "en" else ZH
    at = _page(view="compare", lang=lang, compare="coffee.jpg")
    ok(at)
    assert len(forward_passes) == 2  # the photo in the sidebar and photo B
    prefix = texts["compare_caption"].split("{")[0]
    captions = [c.value for c in at.caption if c.value.startswith(prefix)]
    assert len(captions) == 3
    at.selectbox(key="cmap").set_value("magma").run()
    at.select_slider(key="channels").set_value(4).run()
    ok(at)
    assert len(forward_passes) == 2
    assert at.query_params["compare"] == "coffee.jpg"
    at.selectbox(key="compare").set_value("rocket.jpg").run()
    assert len(forward_passes) == 3


@pytest.mark.slow
def test_compare_similarity_is_cosine():
    at = _page(view="compare", compare="chelsea.jpg")  # the same photo twice
    sims = [c.value for c in at.caption if c.value.startswith("cosine similarity")]
    assert sims and all(s.startswith("cosine similarity 1.000") for s in sims)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_lesson_next_back_and_link(lang):
    texts = EN if lang == "en" else ZH
    at = _page(view="lesson", lang=lang, step="3")
    ok(at)
    title = texts["lesson_step"].format(n=3, total=len(STEPS), title=texts["lesson_prehook_title"])
    assert title in [s.value for s in at.subheader]
    at.button(key="lesson_next").click().run()
    assert at.query_params["step"] == "4"
    at.button(key="lesson_back").click().run()
    at.button(key="lesson_back").click().run()
    assert at.query_params["step"] == "2"
    link = next(m.value for m in at.markdown if texts["lesson_link"] in m.value)
    assert "step=2" in link and f"lang={lang}" in link and "view=lesson" in link
    assert len([c for c in at.code if c.language == "python"]) == 2 and at.expander  # step, set-up; closed answer
    for n in range(2, len(STEPS) + 1):
        ok(at)
        if n < len(STEPS):
            at.button(key="lesson_next").click().run()
    assert at.button(key="lesson_next").disabled


@pytest.mark.slow
@pytest.mark.parametrize("body", ["hello", "prepost", "conv", "grad_none", "clamp", "sanity", "remove"])
def test_lesson_snippets_run_and_print_what_the_page_shows(body):
    layers = ["layer1.0.conv1", "layer2.0.conv1"]
    code = lesson_snippet(body, model="resnet18", image="sample_images/chelsea.jpg", size=128, layers=layers,
                          clamp_at="layer3.0.conv1", limit=1e-4, target=281)
    run = run_python(code, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    out = run.stdout
    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = bundle.preprocess(vz.load_image(ROOT / "sample_images/chelsea.jpg"), 128)
    acts = vz.capture(bundle.model, x, layers)
    if body == "hello":
        assert [ast.literal_eval(line.split("-> output ")[1]) for line in out.splitlines()] == \
            [tuple(acts[n].shape) for n in layers]
    elif body == "prepost":
        inputs = vz.capture(bundle.model, x, layers[:1], what="input")
        assert f"{layers[0]} input {tuple(inputs[layers[0]].shape)}" in out
        assert f"{layers[0]} output {tuple(acts[layers[0]].shape)}" in out
    elif body == "conv":  # the first chosen conv, channel 0, the centre of its map (the view's default)
        h, w = acts[layers[0]].shape[-2:]
        assert f"{layers[0]} channel 0 at {(h // 2, w // 2)} kernel (64, 3, 3)" in out
        assert f"products {64 * 3 * 3} sum" in out
        _assert_by_hand_is_the_hooks(out)
    elif body == "sanity":  # torchvision's own (unseeded) weights here: the stages, and numbers that are
        # correlations; tests/test_handout.py compares the page's numbers with the notebook's
        from vizhooks.interpret.sanity import randomisation_stages

        printed = [line.split() for line in out.splitlines()]
        assert [p[0] for p in printed] == randomisation_stages(bundle.model)
        assert all(p[1:3] == ["re-initialised:", "Spearman"] and -1 <= float(p[3]) <= 1 for p in printed)
    elif body == "grad_none":
        grads = vz.capture_gradients(bundle.model, x, layers, target=281)
        for n in layers:
            assert f"{n} .grad: None | from the tensor hook: {tuple(grads[n].shape)}" in out
    elif body == "clamp":
        plain, clamped = vz.clamp_gradients(bundle.model, x, layers, clamp_at="layer3.0.conv1", limit=1e-4,
                                            target=281)
        # the snippet's weights=None model has torchvision's own (unseeded) random weights, so the
        # numbers differ from the page's; the shapes, and that the clamp changes something, agree
        for line, n in zip(out.splitlines(), layers, strict=True):
            shape, change = line.removeprefix(f"{n} ").split(" largest change ")
            assert ast.literal_eval(shape) == tuple(plain.gradients[n].shape)
            assert float(change) > 0 and float((clamped.gradients[n] - plain.gradients[n]).abs().max()) > 0
    else:
        assert out.splitlines() == ["forgot to remove [1, 2, 3]", "removed each time [1, 1, 1]"]


def _assert_by_hand_is_the_hooks(out: str) -> None:
    by_hand, hooked = re.search(r"by hand (\S+) \| from the hook (\S+)", out).groups()
    assert float(by_hand) == pytest.approx(float(hooked), rel=1e-4, abs=1e-5)


@pytest.mark.slow
@pytest.mark.parametrize(("model", "layer", "place"), [
    ("mobilenet_v3_small", "features.1.block.0.0", (5, 3, 2)),  # depthwise: one input channel per output
    ("resnet18", "conv1", (7, 0, 0)),  # 7x7, stride 2, padding 3: the corner window is mostly padding
])
def test_the_conv_step_takes_apart_grouped_and_padded_convolutions(model, layer, place):
    from vizhooks.lesson.code import ConvPlace

    channel, row, col = place
    code = lesson_snippet("conv", model=model, image="sample_images/chelsea.jpg", size=64, layers=[layer],
                          conv=ConvPlace(layer, channel, row, col))
    run = run_python(code, cwd=ROOT)
    assert run.returncode == 0, run.stderr[-2000:]
    module = dict(vz.load_model(model, weights="none", device="cpu").model.named_modules())[layer]
    per_group = module.in_channels // module.groups
    kh, kw = module.kernel_size
    assert f"{layer} channel {channel} at {(row, col)} kernel {(per_group, kh, kw)}" in run.stdout
    assert f"products {per_group * kh * kw} sum" in run.stdout
    _assert_by_hand_is_the_hooks(run.stdout)


def test_hook_calls_demo_leaves_no_hook():
    from vizhooks.analysis import hook_calls_demo

    bundle = vz.load_model("resnet18", weights="none", device="cpu")
    x = torch.zeros(1, 3, 64, 64)
    assert hook_calls_demo(bundle.model, x, "layer1.0.conv1") == {"forgot": [1, 2, 3], "removed": [1, 1, 1]}
    assert hook_count(bundle.model) == 0


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_channel_atlas_view_with_the_shipped_atlas(lang, forward_passes, monkeypatch, tmp_path):
    monkeypatch.setenv("VIZHOOKS_ATLAS_DIR", str(tmp_path / "none-here"))  # the operator has none: shipped one
    texts = EN if lang == "en" else ZH
    shipped = load_atlas(ROOT / "sample_images" / "atlas" / "resnet18")
    at = _page(view="atlas", lang=lang)
    ok(at)
    assert at.selectbox(key="atlas_layer").value == shipped.layers[0]
    at.number_input(key="atlas_channel").set_value(3).run()
    ok(at)
    tops = shipped.top(shipped.layers[0], 3)
    captions = [i.proto.imgs[0].caption for i in at.image]
    expected = [texts["atlas_exemplar"].format(score=e.score, name=e.path.split("/")[-1]) for e in tops]
    assert [c for c in captions if c in expected] == expected  # best first, with their scores
    passes = len(forward_passes)
    at.button(key="fv_go").click().run()  # "What excites this channel?"
    ok(at)
    caption = texts["fv_caption"].format(layer=shipped.layers[0], channel=3, size=128, steps=128)
    assert caption in [i.proto.imgs[0].caption for i in at.image]
    at.selectbox(key="cmap").set_value("magma").run()  # cached: no new optimisation, no forward pass
    assert caption in [i.proto.imgs[0].caption for i in at.image] and len(forward_passes) == passes


@pytest.mark.slow
def test_channel_atlas_view_says_how_to_make_one(monkeypatch, tmp_path):
    monkeypatch.setenv("VIZHOOKS_ATLAS_DIR", str(tmp_path))
    at = _page(view="atlas", model="vgg11", layers="features.0")
    ok(at)
    assert any("python -m vizhooks exemplars" in i.value and "--model vgg11" in i.value for i in at.info)
