"""The Convolution view (``?view=convolution``) in both languages: opened from a link, then another
channel and place; the numbers shown are the library's (conv_at on the same picture), and the link
follows the choices. A pooling layer taken apart the same way (pool_at), and the window sliding over
the photo (the first conv) and over a pooled channel: built on the button, played as a GIF, offered
as GIF and MP4, both decoded again and compared with the library's frames."""

from __future__ import annotations

import io

import av
import numpy as np
import pytest
from PIL import Image

from tests.helpers import ROOT, allowed_names, english_in, ok, open_page, shown_view
from vizhooks import load_image
from vizhooks.analysis import analyse
from vizhooks.lesson.i18n import in_language
from vizhooks.network.convolution import conv_at
from vizhooks.network.sliding import pool_at, slide
from vizhooks.page.results import get_bundle
from vizhooks.page.texts import EN, ZH, nt
from vizhooks.page.urlstate import parse_query

TEXTS = {"en": EN, "zh": ZH}


def _library(model: str, size: int, layer: str, channel: int, row: int, col: int):
    """The answer computed without the page: the picture resized the model's way, conv_at on it."""
    bundle = get_bundle(model)
    x = analyse(bundle, load_image(str(ROOT / "sample_images" / "chelsea.jpg")), size, [layer]).x
    return conv_at(bundle.model, x, layer, channel, row, col)


def _metrics(at) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _shown(at, lang: str, step) -> None:
    texts = TEXTS[lang]
    metrics = _metrics(at)
    assert metrics[texts["cv_total"].format(row=step.row, col=step.col)] == f"{step.total:.4f}"
    if step.follow:
        assert metrics[texts["cv_value"].format(layer=step.follow[-1].layer)] == f"{step.value:.4f}"
    own = float(step.output[step.row, step.col])
    equation = texts["cv_equation"].format(n=len(step.in_channels), sums=step.total - step.bias, bias=step.bias,
                                           total=step.total, own=own)
    assert equation in [m.value for m in at.markdown]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_link_then_another_channel_and_place_show_the_librarys_numbers(lang):
    at = open_page(view="convolution", lang=lang, size="128", cv_layer="layer2.0.conv1", cv_channel="5", cv_row="3",
                   cv_col="0")
    ok(at)
    assert shown_view(at) == "convolution"
    assert at.selectbox(key="cv_layer").value == "layer2.0.conv1"
    step = _library("resnet18", 128, "layer2.0.conv1", 5, 3, 0)
    _shown(at, lang, step)
    assert [f.layer for f in step.follow] == ["layer2.0.bn1", "layer2.0.relu"]
    texts = TEXTS[lang]
    assert texts["cv_padding_here"].format(n=3, taps=9) in [c.value for c in at.caption]  # column -1 is padding
    rest = step.total - step.bias - sum(float(step.sums[i]) for i in step.strongest(4))
    assert in_language(lang, lambda: nt("cv_rest", 60, s=rest)) in [c.value for c in at.caption]
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []

    at.number_input(key="cv_channel").set_value(17).run()
    at.slider(key="cv_row").set_value(7).run()
    at.slider(key="cv_col").set_value(12).run()
    ok(at)
    _shown(at, lang, _library("resnet18", 128, "layer2.0.conv1", 17, 7, 12))
    assert {k: at.query_params[k] for k in ("cv_layer", "cv_channel", "cv_row", "cv_col")} == \
        {"cv_layer": "layer2.0.conv1", "cv_channel": "17", "cv_row": "7", "cv_col": "12"}

    at.selectbox(key="cv_layer").set_value("conv1").run()  # 64 x 64 out: the place stays, the numbers change
    ok(at)
    _shown(at, lang, _library("resnet18", 128, "conv1", 17, 7, 12))


def test_depthwise_conv_of_mobilenet_names_its_one_input_channel():
    at = open_page(view="convolution", model="mobilenet_v3_small", size="128", cv_layer="features.1.block.0.0",
                   cv_channel="7", cv_row="0", cv_col="3")
    ok(at)
    step = _library("mobilenet_v3_small", 128, "features.1.block.0.0", 7, 0, 3)
    _shown(at, "en", step)
    assert EN["cv_depthwise"].format(groups=16, channel=7, first=7) in [m.value for m in at.markdown]


@pytest.mark.slow
def test_vit_patch_embedding_has_nothing_elementwise_after_it():
    at = open_page(view="convolution", model="vit_b_32", cv_layer="conv_proj", cv_channel="700", cv_row="6",
                   cv_col="2")
    ok(at)
    step = _library("vit_b_32", 224, "conv_proj", 700, 6, 2)
    assert not step.follow
    _shown(at, "en", step)
    assert EN["cv_no_next"] in [i.value for i in at.info]


def test_a_link_to_a_layer_that_is_not_a_conv_is_refused():
    good, bad = parse_query({"view": "convolution", "cv_layer": "layer1.0", "cv_channel": "x", "cv_row": "2",
                             "cv_col": "-1"}, ["chelsea.jpg"])
    assert good == {"view": "convolution", "cv_row": 2}
    assert sorted(bad) == [("cv_channel", "x"), ("cv_col", "-1"), ("cv_layer", "layer1.0")]
    at = open_page(view="convolution", size="128", cv_layer="conv1", cv_channel="999", cv_row="500")
    ok(at)  # a channel and a row beyond this layer's are kept inside it
    assert at.number_input(key="cv_channel").value == 63 and at.slider(key="cv_row").value == 63


@pytest.mark.slow
def test_vgg16_first_conv_and_its_relu_on_the_chinese_page():
    at = open_page(view="convolution", model="vgg16", size="128", lang="zh", cv_layer="features.0", cv_channel="5",
                   cv_row="3", cv_col="4")
    ok(at)
    step = _library("vgg16", 128, "features.0", 5, 3, 4)
    assert [f.layer for f in step.follow] == ["features.1"]  # VGG: a ReLU straight after each conv
    _shown(at, "zh", step)


def _built(at, media, lang: str, model: str, size: int, layer: str, channel: int) -> None:
    """Before the button: no animation and no download. After: the GIF played and both files offered,
    the GIF's frames the library's (slide on the same picture) and the MP4 decodable to as many."""
    texts = TEXTS[lang]
    assert at.subheader and texts["cv_slide_header"] in [h.value for h in at.subheader]
    assert at.button(key="cv_slide_build").label == texts["cv_slide_build"]
    assert not [m for m in media if m[0] == "image/gif"] and not at.get("download_button")
    at.button(key="cv_slide_build").click().run()
    ok(at)
    bundle = get_bundle(model)
    x = analyse(bundle, load_image(str(ROOT / "sample_images" / "chelsea.jpg")), size, [layer]).x
    made = slide(bundle.model, x, layer, channel, mean=bundle.mean, std=bundle.std)
    h, w = made.output_hw
    caption = texts["cv_slide_caption"].format(frames=len(made), places=h * w)
    assert caption in [c for image in at.image for c in image.captions]
    played = next(data for (mime, _), data in media.items() if mime == "image/gif")
    with Image.open(io.BytesIO(played)) as gif:
        assert gif.n_frames == len(made) == min(120, h * w)
        gif.seek(len(made) - 1)
        assert np.array_equal(np.asarray(gif.convert("RGB")), made.frame(len(made) - 1))
    labels = {b.proto.label: b for b in at.get("download_button")}
    assert set(labels) == {texts["cv_slide_gif"], texts["cv_slide_mp4"]}
    stem = f"{model}-{layer}-{channel}-sliding"
    assert media[("image/gif", f"{stem}.gif")] == played
    with av.open(io.BytesIO(media[("video/mp4", f"{stem}.mp4")])) as clip:
        assert sum(1 for _ in clip.decode(video=0)) == len(made)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_first_conv_slides_over_the_photo_when_asked(media, lang):
    at = open_page(view="convolution", lang=lang, size="128", cv_layer="conv1", cv_channel="5", cv_row="2",
                   cv_col="3")
    ok(at)
    _built(at, media, lang, "resnet18", 128, "conv1", 5)
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_maxpool_is_taken_apart_and_slides_when_asked(media, lang):
    texts = TEXTS[lang]
    at = open_page(view="convolution", lang=lang, size="128", cv_channel="7", cv_row="0", cv_col="4")
    ok(at)
    at.radio(key="cv_part").set_value("pool").run()
    ok(at)
    assert at.selectbox(key="cv_pool").value == "maxpool" and at.selectbox(key="cv_pool").options[0].startswith(
        "maxpool · MaxPool2d 3×3")
    bundle = get_bundle("resnet18")
    x = analyse(bundle, load_image(str(ROOT / "sample_images" / "chelsea.jpg")), 128, ["maxpool"]).x
    step = pool_at(bundle.model, x, "maxpool", 7, 0, 4)
    assert _metrics(at)[texts["cv_pool_total"].format(row=0, col=4)] == f"{step.own:.4f}"
    u, v = step.strongest
    assert texts["cv_pool_max"].format(n=6, value=step.computed, r=step.rows[u], c=step.cols[v], own=step.own) \
        in [m.value for m in at.markdown]
    assert texts["cv_pool_padding_max"].format(n=3, taps=9) in [c.value for c in at.caption]  # row -1 is padding
    shown = at.dataframe[0].value.to_numpy(dtype=float)
    assert np.isnan(shown[0]).all() and np.allclose(shown[1:], step.values[1:].numpy(), atol=1e-4)
    _built(at, media, lang, "resnet18", 128, "maxpool", 7)
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []


def test_a_deeper_conv_has_no_animation():
    at = open_page(view="convolution", size="128", cv_layer="layer1.0.conv1")
    ok(at)
    assert EN["cv_slide_header"] not in [h.value for h in at.subheader]
    assert not [b for b in at.button if b.key == "cv_slide_build"]
    at.radio(key="cv_part").set_value("pool").run()  # pooling: always
    ok(at)
    assert [b.key for b in at.button if b.key == "cv_slide_build"] == ["cv_slide_build"]
