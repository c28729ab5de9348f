"""The Explain view (``?view=explain``) in both languages, on seeded random weights at 128 px: the
maps drawn are vizhooks.explain's on the same picture (each overlay's PNG, pixel for pixel), the
score button's table is vizhooks.faithfulness's (deletion / insertion areas, Average Drop, Increase,
infidelity, the random and Gaussian references beside the methods), the sanity button's table is
vizhooks.interpret.sanity's; nothing slow runs before its button; a bad link and a library refusal are one
sentence each; the shared model keeps no hook."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.helpers import ROOT, allowed_names, english_in, ok, open_page, shown_view
from vizhooks import load_image
from vizhooks.analysis import analyse
from vizhooks.interpret.faithfulness import faithfulness, gaussian_map, infidelity_score, random_map
from vizhooks.interpret.methods import ExplainError, explain
from vizhooks.interpret.sanity import sanity_check
from vizhooks.models.labels import class_labels
from vizhooks.ops import hook_count
from vizhooks.page import results
from vizhooks.page.results import INFIDELITY_DRAWS, get_bundle
from vizhooks.page.texts import EN, ZH
from vizhooks.page.urlstate import parse_query
from vizhooks.render.figures import channel_overlay

TEXTS = {"en": EN, "zh": ZH}
SIZE = 128
#: The page's settings at their defaults, as explain() takes them.
SETTINGS = {"batch_size": 32, "ig_steps": 32, "ig_baseline": "black"}


def _photo():
    """The sample photo as the page's model sees it, and the top-1 class (the page's default)."""
    bundle = get_bundle("resnet18")
    analysis = analyse(bundle, load_image(str(ROOT / "sample_images" / "chelsea.jpg")), SIZE, ["layer4.1"])
    return bundle, analysis, int(analysis.logits.argmax())


def _clean() -> None:
    assert hook_count(get_bundle("resnet18").model) == 0


def _pixels(data: bytes) -> np.ndarray:
    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_maps_are_the_librarys_and_come_only_on_the_button(lang, media, fresh_results):
    at = open_page(view="explain", lang=lang, size=str(SIZE), ex_methods="gradcam,saliency,ig")
    ok(at)
    texts = TEXTS[lang]
    assert shown_view(at) == "explain"
    assert at.multiselect(key="ex_methods").value == ["gradcam", "saliency", "ig"]
    assert at.multiselect(key="ex_layers").value == ["layer4.1"]  # default_layers(resnet18)
    assert not [k for k in media if k[1] and k[1].endswith(".png")]  # nothing computed yet
    assert texts["ex_compute_hint"] in [c.value for c in at.caption]
    assert not [b for b in ("ex_score", "ex_infidelity") if b in [w.key for w in at.button]]
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []

    at.button(key="ex_compute").click().run()
    ok(at)
    bundle, analysis, target = _photo()
    maps = explain(bundle, analysis.x, target, ["gradcam", "saliency", "ig"], ["layer4.1"], **SETTINGS)
    for method, m in maps.items():
        shown = _pixels(media[("image/png", f"{method}.png")])
        assert np.array_equal(shown, np.asarray(channel_overlay(analysis.picture, m, 0.5, "jet"))), method
    captions = [i.proto.imgs[0].caption for i in at.image]
    label = class_labels(bundle.categories, lang)[target]
    assert texts["ex_caption"].format(method=texts["ex_method_ig"], label=label) in captions
    assert at.query_params["ex_methods"] == "gradcam,saliency,ig" and at.query_params["ex_layers"] == "layer4.1"
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []
    _clean()


@pytest.mark.slow
def test_another_class_and_layer_redraw_the_maps(media, fresh_results):
    at = open_page(view="explain", size=str(SIZE), ex_methods="gradcam,gradcampp")
    at.button(key="ex_compute").click().run()
    at.selectbox(key="target").set_value(7).run()
    at.multiselect(key="ex_layers").set_value(["layer3.1", "layer4.1"]).run()
    ok(at)
    bundle, analysis, _ = _photo()
    maps = explain(bundle, analysis.x, 7, ["gradcam", "gradcampp"], ["layer3.1", "layer4.1"], **SETTINGS)
    for method, m in maps.items():
        shown = _pixels(media[("image/png", f"{method}.png")])
        assert np.array_equal(shown, np.asarray(channel_overlay(analysis.picture, m, 0.5, "jet"))), method
    _clean()


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_scores_are_the_librarys_on_the_button(lang, media, fresh_results):
    at = open_page(view="explain", lang=lang, size=str(SIZE), ex_methods="gradcam,saliency")
    at.button(key="ex_compute").click().run()
    ok(at)
    texts = TEXTS[lang]
    assert not at.dataframe  # no score before it is asked for
    curves_before = [k for k in media if k[0] == "image/png" and not k[1]]
    at.number_input(key="ex_steps").set_value(10).run()
    at.button(key="ex_score").click().run()
    ok(at)
    assert [k for k in media if k[0] == "image/png" and not k[1]] != curves_before  # the curves' picture
    bundle, analysis, target = _photo()
    maps = explain(bundle, analysis.x, target, ["gradcam", "saliency"], ["layer4.1"], **SETTINGS)
    hw = tuple(analysis.x.shape[-2:])
    maps |= {"random": random_map(hw, seed=0), "gaussian": gaussian_map(hw)}
    table = at.dataframe[0].value
    names = [texts[f"ex_method_{m}"] for m in ("gradcam", "saliency")] + [texts["ex_ref_random"],
                                                                          texts["ex_ref_gaussian"]]
    assert list(table[texts["ex_col_method"]]) == names
    # the verdict beside the method (QA 2026-12-06: last, it was cut off at 1024 pixels), then the numbers
    assert list(table.columns)[:3] == [texts["ex_col_method"], texts["ex_col_verdict"], texts["ex_col_deletion"]]
    for i, m in enumerate(maps.values()):
        expected = faithfulness(bundle, analysis.x, target, m, steps=10, baseline="blur")
        row = table.iloc[i]
        assert row[texts["ex_col_deletion"]] == pytest.approx(expected.deletion_auc, abs=1e-9)
        assert row[texts["ex_col_insertion"]] == pytest.approx(expected.insertion_auc, abs=1e-9)
        assert row[texts["ex_col_drop"]] == pytest.approx(expected.avg_drop, abs=1e-9)
        assert row[texts["ex_col_increase"]] == expected.increase
    deletion, insertion = table[texts["ex_col_deletion"]], table[texts["ex_col_insertion"]]
    for i, m in enumerate(maps):  # the verdict column, from the table's own numbers
        if m in ("random", "gaussian"):
            assert table.iloc[i][texts["ex_col_verdict"]] == texts["ex_verdict_reference"]
            continue
        lost = [texts[f"ex_verdict_{curve}"].format(ref=texts[f"ex_ref_{ref}"])
                for ref, j in (("random", 2), ("gaussian", 3))
                for curve, worse in (("deletion", deletion[i] >= deletion[j]),
                                     ("insertion", insertion[i] <= insertion[j])) if worse]
        verdict = texts["ex_verdict_no"].format(where="; ".join(lost)) if lost else texts["ex_verdict_yes"]
        assert table.iloc[i][texts["ex_col_verdict"]] == verdict
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []
        _clean()
        return
    at.button(key="ex_infidelity").click().run()  # the slower score, on its own button
    ok(at)
    table = at.dataframe[0].value
    for i, m in enumerate(maps.values()):
        expected = infidelity_score(bundle, analysis.x, target, m, n_perturb=INFIDELITY_DRAWS)
        assert table.iloc[i][texts["ex_col_infidelity"]] == pytest.approx(expected, rel=1e-6)
    _clean()


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_sanity_check_is_the_librarys_on_the_button(lang, media, fresh_results):
    at = open_page(view="explain", lang=lang, size=str(SIZE), ex_methods="gradcam,guidedbackprop")
    ok(at)
    texts = TEXTS[lang]
    assert at.multiselect(key="ex_sanity_methods").value == ["gradcam", "guidedbackprop"]  # the methods chosen above
    assert not at.dataframe
    at.button(key="ex_sanity_run").click().run()  # runs without the maps above being computed
    ok(at)
    bundle, analysis, target = _photo()
    expected = sanity_check(bundle, analysis.x, target, ["gradcam", "guidedbackprop"], ["layer4.1"], seed=0,
                            **SETTINGS)
    table = at.dataframe[0].value
    assert list(table[texts["ex_col_stage"]]) == list(expected.stages)
    undefined = False
    for m in expected.methods:
        name = texts[f"ex_method_{m}"]
        flat = [bool(expected.maps[m][0].max() == expected.maps[m][0].min() or a.max() == a.min())
                for a in expected.maps[m][1:]]  # a constant map's rank correlation is undefined: an empty cell
        want = [None if f else r for f, r in zip(flat, expected.correlations[m], strict=True)]
        shown = [None if v != v or v is None else v for v in table[texts["ex_col_spearman"].format(method=name)]]
        assert shown == pytest.approx(want)
        undefined |= any(flat)
        assert list(table[texts["ex_col_ssim"].format(method=name)]) == pytest.approx(expected.ssim[m])
    assert any(c.value == texts["ex_sanity_undefined"] for c in at.caption) == undefined
    assert undefined  # Grad-CAM of this seeded model goes all zero at some steps: the case is exercised
    warnings = [w.value for w in at.warning]
    for m in expected.methods:
        flag = texts["ex_sanity_flag"].format(method=texts[f"ex_method_{m}"], r=expected.correlations[m][-1])
        assert (flag in warnings) == (m in expected.flagged), m
    assert "guidedbackprop" in expected.flagged  # the paper's lesson holds on this seeded model
    if lang == "zh":
        assert english_in(at, allowed_names(at) | set(expected.stages)) == []
    _clean()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bad_link_and_a_refusal_are_one_sentence_each(lang, monkeypatch, fresh_results):
    at = open_page(view="explain", lang=lang, size=str(SIZE), ex_methods="gradcam,nosuch", ex_layers="layer9")
    assert not at.exception and not at.error
    texts = TEXTS[lang]
    notice = texts["url_notice"].format(items="ex_methods=gradcam,nosuch, ex_layers=layer9")
    assert [i.value for i in at.info] == [notice]
    assert at.multiselect(key="ex_methods").value == ["gradcam", "gradcampp", "saliency", "ig"]  # the defaults

    def refuse(*_args, **_kwargs):
        raise ExplainError("ig_steps must be a whole number of at least 1, not 0.", "explain_setting",
                           name="ig_steps", value="0")

    monkeypatch.setattr(results, "explain", refuse)
    at.button(key="ex_compute").click().run()
    assert not at.exception
    reason = texts["err_explain_setting"].format(name="ig_steps", value="0")
    assert [e.value for e in at.error] == [texts["bad_input"].format(reason=reason)]
    if lang == "zh":
        assert english_in(at, allowed_names(at)) == []
    monkeypatch.undo()
    at.multiselect(key="ex_methods").set_value(["gradcam"]).run()  # the page goes on
    ok(at)
    assert at.image and not at.error
    _clean()


def test_the_link_keeps_methods_and_layers():
    good, bad = parse_query({"view": "explain", "ex_methods": "ig,gradcam,ig", "ex_layers": "layer3.1,layer4.1"},
                            ["chelsea.jpg"])
    assert bad == [] and good["ex_methods"] == ["ig", "gradcam"] and good["ex_layers"] == ["layer3.1", "layer4.1"]
    for key, value in (("ex_methods", "gradcam,nope"), ("ex_methods", ""), ("ex_layers", "fc"),
                       ("ex_layers", "layer4.1,layer9")):
        good, bad = parse_query({key: value}, ["chelsea.jpg"])
        assert key not in good and bad == [(key, value)]


def test_the_curves_picture_has_a_line_per_map_and_dashed_references():
    from vizhooks.render.figures import curves_figure, map_strips_figure

    d, i = [0.9, 0.5, 0.1], [0.1, 0.6, 0.95]
    fig = curves_figure([("Grad-CAM", d, i, False), ("random", i, d, True)])
    for ax in fig.axes[:2]:
        lines = ax.get_lines()
        assert [line.get_label() for line in lines] == ["Grad-CAM", "random"]
        assert [line.get_linestyle() for line in lines] == ["-", "--"]
        assert list(lines[0].get_xdata()) == [0.0, 0.5, 1.0]
        assert ax.get_ylim()[1] >= 0.95  # both panels show the highest point
    assert list(fig.axes[1].get_lines()[0].get_ydata()) == i
    strips = map_strips_figure([("a", [np.zeros((4, 6)), np.eye(4, 6)])], ["original", "fc"], tile=8)
    assert len(strips.axes) == 1 and strips.axes[0].get_images()[0].get_array().shape == (8, 12 + 12 + 4, 3)
    with pytest.raises(ValueError, match="one map per column"):
        map_strips_figure([("a", [np.zeros((4, 4))])], ["original", "fc"])


def test_a_vits_default_cam_layer_is_offered_and_chosen():
    """Review 2026-12-06: a ViT's default CAM layer (its last block's first norm: the block's output reaches the
    head through its class token only) is neither a conv nor a block, so the menu dropped it and opened empty."""
    from vizhooks.interpret.methods import default_layers
    from vizhooks.page.results import get_bundle

    at = open_page(view="explain", model="vit_b_32", layers="conv_proj")
    ok(at)
    default = default_layers(get_bundle("vit_b_32").model)
    assert default == ["encoder.layers.encoder_layer_11.ln_1"]
    menu = at.multiselect(key="ex_layers")
    assert menu.value == default and default[0] in menu.options
    linked = open_page(view="explain", model="vit_b_32", layers="conv_proj", ex_layers=default[0])
    ok(linked)
    assert not linked.session_state["_url_notices"] and linked.multiselect(key="ex_layers").value == default
