"""The Overview view through AppTest, in both languages: one picture of every layer, a model with
more than 60 convs shown one stage at a time, and a layer and channel opened in the inspector."""

from __future__ import annotations

import pytest

from tests.helpers import ok, open_page
from vizhooks.page.texts import EN, ZH


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_whole_network_in_one_picture_and_a_channel_opened_in_the_inspector(lang):
    texts = EN if lang == "en" else ZH
    at = open_page(view="overview", lang=lang, size="128")
    ok(at)
    captions = [i.proto.imgs[0].caption for i in at.image]
    assert texts["ov_caption"].format(layers=20, stages=5, k=8) in captions
    assert at.selectbox(key="ov_layer").options[0] == "conv1" and len(at.selectbox(key="ov_layer").options) == 20
    at.selectbox(key="ov_layer").set_value("layer3.0.conv1").run()
    channel = int(at.selectbox(key="ov_channel").options[2].lstrip("#"))
    at.selectbox(key="ov_channel").set_value(channel).run()
    at.button(key="ov_open").click().run()
    ok(at)
    assert at.session_state["view"] == "inspector"
    assert at.selectbox(key="insp_layer").value == "layer3.0.conv1"
    assert at.number_input(key="insp_channel").value == channel


def test_more_than_sixty_layers_are_shown_one_stage_at_a_time():
    at = open_page(view="overview", model="densenet121", size="128")
    ok(at)
    stages = at.selectbox(key="ov_stage").options
    assert len(stages) == 5 and stages[0] == "Stage 1: 64×96, 1 layer"  # conv0 at half the 128 × 192 picture
    assert any(c.value.startswith("This network has 120 layers in 5 stages") for c in at.caption)
    at.selectbox(key="ov_stage").set_value(3).run()
    ok(at)
    assert all(name.startswith("features.denseblock3") or name.startswith("features.transition")
               for name in at.selectbox(key="ov_layer").options)
    assert at.query_params["ov_stage"] in ("3", ["3"])  # the stage is kept in the link
    again = open_page(**{k: v[0] if isinstance(v, list) else v for k, v in at.query_params.items()})
    ok(again)
    assert again.selectbox(key="ov_stage").value == 3
    assert open_page(view="overview", model="densenet121", size="128", ov_stage="99").selectbox(
        key="ov_stage").value == 0  # a stage the network lacks: the first


def test_a_channel_count_change_redraws_with_that_many(lang="en"):
    at = open_page(view="overview", size="128")
    at.select_slider(key="ov_k").set_value(4).run()
    ok(at)
    assert EN["ov_caption"].format(layers=20, stages=5, k=4) in [i.proto.imgs[0].caption for i in at.image]
    assert len(at.selectbox(key="ov_channel").options) == 4


@pytest.mark.slow
@pytest.mark.parametrize(("model", "layers"), [("vgg16", 13), ("mobilenet_v3_small", 52), ("vit_b_32", 12)])
def test_the_overview_of_other_families(model, layers):
    """VGG's 13 convs, MobileNet's 52 (depthwise ones included), ViT's 12 encoder blocks."""
    from vizhooks.models.registry import meta_model
    from vizhooks.network.overview import overview_layers

    assert len(overview_layers(meta_model(model)[0])) == layers
    at = open_page(view="overview", model=model, size="128", lang="zh")
    ok(at)
    assert len(at.selectbox(key="ov_layer").options) == layers
    captions = [i.proto.imgs[0].caption for i in at.image]
    assert any(c.startswith(f"共 {layers} 层") for c in captions)
    if model == "vit_b_32":  # one stage: said as one, not "1 stages"
        from vizhooks.page.texts import ZH

        assert ZH["ov_caption_one_stage"].format(layers=12, stages=1, k=8) in captions
