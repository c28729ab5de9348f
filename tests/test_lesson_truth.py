"""The lesson's clamp and backward steps (6 and 7 when written) say what their own pictures and tables show (issue 23).

Step 6 (a tensor hook that clamps a gradient): at its default limit the clamp clips a share of the
gradient you can read on the page, and the layers before the clamped one get a visibly different
gradient and Grad-CAM map. The page's numbers are checked against an independent computation:
``torch.quantile`` of the clamped layer's non-zero |gradient| for the limit, then
``vizhooks.clamp_gradients`` against the plain gradients for the maps.

Step 7 (full backward hooks): every sentence that names a shape or a ``None`` is checked against
the table on the same page, in English and in Chinese.

The page runs offline with seeded random weights (tests/conftest.py), at a small size.
"""

from __future__ import annotations

import io
import re

import numpy as np
import pytest
import torch
from PIL import Image

import vizhooks as vz
from tests.helpers import ROOT, ok, open_page
from vizhooks.analysis import analyse
from vizhooks.interpret.cam import cams_from
from vizhooks.lesson.display import CLAMP_CHANNELS, CLAMP_COLOUR_PERCENTILE, CLAMP_DEFAULT
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import EN, ZH

SIZE = "128"
IMAGE = "sample_images/chelsea.jpg"  # the page's default sample
#: the page's default layers for resnet18, in forward order; the clamp sits at the last one
TOUR = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
TEXTS = {"en": EN, "zh": ZH}


def step_of(step_id: str) -> str:
    """The lesson's number of a step (as a link writes it), so a new step does not move the tests."""
    return str([s.id for s in STEPS].index(step_id) + 1)


def pattern(template: str) -> re.Pattern[str]:
    """A regex that reads the fields back out of a text template (``{name}``, ``{name:fmt}``)."""
    parts = re.split(r"\{(\w+)(?::[^}]*)?\}", template)
    out = ""
    for i, part in enumerate(parts):
        out += re.escape(part) if i % 2 == 0 else f"(?P<{part}>.+?)"
    return re.compile(out + "$")


def read(at, key: str, lang: str = "en") -> dict[str, str]:
    """The fields of the one markdown block the page wrote from ``key``."""
    regex = pattern(TEXTS[lang][key])
    found = [m.groupdict() for block in at.markdown if (m := regex.match(block.value))]
    assert len(found) == 1, (key, [block.value for block in at.markdown])
    return found[0]


# --- step 6: the clamp --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def step6():
    at = open_page(view="lesson", step=step_of("clamp"), size=SIZE)
    ok(at)
    return at


@pytest.mark.slow
def test_step6_default_limit_clips_a_share_the_page_prints(step6):
    assert step6.select_slider(key="iv_clip_pct").value == CLAMP_DEFAULT
    clamp_at = step6.selectbox(key="iv_clamp_at").value
    assert clamp_at == TOUR[-1]
    shown = read(step6, "clamp_clipped")
    assert shown["layer"] == f"{clamp_at}" and int(shown["p"]) == CLAMP_DEFAULT

    bundle = vz.load_model("resnet18")  # as the page's get_bundle offline: seeded random weights
    analysis = analyse(bundle, vz.load_image(ROOT / IMAGE), int(SIZE), TOUR, "output")
    target = int(analysis.logits[0].argmax())
    grad = vz.capture_gradients(bundle.model, analysis.x, [clamp_at], target=target)[clamp_at].abs().flatten()
    limit = float(torch.quantile(grad[grad > 0].double(), CLAMP_DEFAULT / 100, interpolation="lower"))
    clipped = float((grad > limit).double().mean())
    assert float(shown["limit"]) == pytest.approx(limit, rel=6e-3)
    assert float(shown["share"].rstrip("%")) / 100 == pytest.approx(clipped, abs=6e-4)
    assert shown["count"].replace(",", "") == str(grad.numel())
    assert clipped > 0.05, "the default limit clips (next to) nothing"


def _drawn(grad: torch.Tensor, reach: float) -> np.ndarray:
    """A gradient grid as show_clamp draws it (four channels, two a row, one shared colour scale)."""
    fig = vz.feature_grid(grad, channels=CLAMP_CHANNELS, order="index", cmap="RdBu_r", norm="layer", title="g",
                          columns=2, vcenter=0.0, clim=(-reach, reach))
    return np.asarray(Image.open(io.BytesIO(vz.figure_to_png(fig))).convert("RGB")).astype(int)


@pytest.mark.slow
def test_step6_default_limit_visibly_changes_the_earlier_maps(step6):
    bundle = vz.load_model("resnet18")
    analysis = analyse(bundle, vz.load_image(ROOT / IMAGE), int(SIZE), TOUR, "output")
    limit = float(read(step6, "clamp_clipped")["limit"])
    earlier, clamp_at = TOUR[:-1], TOUR[-1]
    plain, clamped = vz.clamp_gradients(bundle.model, analysis.x, earlier, clamp_at=clamp_at, limit=limit,
                                        as_maps=True)
    change = pattern(EN["clamp_changed"])
    printed = [float(m.group("change").rstrip("%")) / 100 for c in step6.caption if (m := change.match(c.value))]
    assert len(printed) == len(earlier)
    for name, shown in zip(earlier, printed, strict=True):
        g0, g1 = plain.gradients[name], clamped.gradients[name]
        relative = float((g1 - g0).abs().mean() / g0.abs().mean())
        assert shown == pytest.approx(relative, abs=1.5e-3), name  # the caption is the change
        assert relative > 0.25, (name, relative)  # a quarter of the gradient moves
        # the two grids as drawn: pixels change by more than a few colour levels
        reach = float(torch.quantile(g0.abs().flatten().double(), CLAMP_COLOUR_PERCENTILE / 100))
        before, after = _drawn(g0, reach), _drawn(g1, reach)
        moved = np.abs(before - after).max(axis=2)
        assert moved.mean() > 2 and (moved > 8).mean() > 0.05, (name, moved.mean(), (moved > 8).mean())
    # Grad-CAM scales each map to [0, 1], so a uniform fading does not show there; a reshaped
    # gradient does, by more than a colour step, in at least the deepest of the earlier layers
    hw = tuple(analysis.x.shape[-2:])
    cams, cams_clamped = cams_from(plain, hw), cams_from(clamped, hw)
    assert max(float((cams[n] - cams_clamped[n]).abs().max()) for n in earlier) > 0.05


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_step6_says_the_clamp_changes_the_layers_before_it(lang):
    texts = TEXTS[lang]
    words = " ".join(texts[k] for k in ("lesson_clamp_text", "clamp_intro", "clamp_after", "clamp_cam_after"))
    if lang == "en":
        assert "downstream" not in words and "**before**" in texts["lesson_clamp_text"]
        assert "upstream" in texts["lesson_clamp_text"]
    else:
        assert "下游" not in words and "**之前**" in texts["lesson_clamp_text"] and "上游" in texts["lesson_clamp_text"]


# --- step 7: full backward hooks -----------------------------------------------------------------


def _cell(texts: dict[str, str], row: dict, column: str) -> str:
    return str(row[texts[column]])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_step7_text_says_what_its_table_shows(lang):
    texts = TEXTS[lang]
    at = open_page(view="lesson", step=step_of("backward"), size=SIZE, lang=lang)
    ok(at)
    rows = at.dataframe[0].value.to_dict("records")
    hooked = [r for r in rows if not r[texts["col_note"]]]
    page_text = "\n".join(block.value for block in at.markdown)
    assert texts["lesson_backward_text"] in page_text

    # the first module backward reaches last: what it passes back, and what the page says of it
    first = hooked[-1]
    first_input = _cell(texts, first, "col_grad_input").split(", ")[0]
    if first_input == "None":
        assert read(at, "backward_first_none", lang)["first"] == first[texts["col_module"]]
    else:
        said = read(at, "backward_first", lang)
        assert said["first"] == first[texts["col_module"]] and said["shape"] == first_input
        assert re.fullmatch(r"1×3×\d+×\d+", first_input)  # the photo's own gradient
    # the lesson's text names the case the table shows: the input requires a gradient here
    assert "x.requires_grad_(True)" in texts["lesson_backward_text"]

    # the shapes sentence: the deeper and the shallower layer, as their rows have them
    said = read(at, "backward_shapes", lang)
    by_name = {r[texts["col_module"]]: r for r in hooked}
    deep_out = _cell(texts, by_name[said["deep"]], "col_grad_output")
    shallow_out = _cell(texts, by_name[said["shallow"]], "col_grad_output")
    assert (said["deep_shape"], said["shallow_shape"]) == (deep_out, shallow_out)
    names = [r[texts["col_module"]] for r in hooked]
    assert names.index(said["deep"]) < names.index(said["shallow"])  # backward meets the deeper first
    (_, dc, dh, dw), (_, sc, sh, sw) = (tuple(int(v) for v in s.split("×")) for s in (deep_out, shallow_out))
    assert (int(said["deep_c"]), said["deep_hw"]) == (dc, f"{dh}×{dw}")
    assert (int(said["shallow_c"]), said["shallow_hw"]) == (sc, f"{sh}×{sw}")
    assert dc > sc and dh * dw < sh * sw  # resnet18: more channels on smaller maps, as the table shows
    # the old claim the table contradicts is gone
    assert "fewer, smaller" not in page_text and "越少、越小" not in page_text


def test_in_present_mode_a_steps_table_and_chart_grow_with_the_type():
    """QA 2026-12-06: on a projector the steps' tables (a data grid drawn on a canvas at 13 px) and the patching
    step's chart (Vega's 10-11 px axis labels) stayed small while the text grew to 22 px. In present mode a step's
    table is a plain table holding the same rows, and a chart's axes are drawn in the body's type."""
    import json

    from vizhooks.lesson.display import top_relevance
    from vizhooks.page.present import BODY_PX
    from vizhooks.page.results import get_bundle

    at = open_page(view="lesson", step=step_of("relevance"), size=SIZE, lang="en", present="1")
    ok(at)
    assert not at.dataframe and len(at.table) == 1
    bundle = get_bundle("resnet18")
    layers = list(at.session_state["layers"])
    analysis = analyse(bundle, vz.load_image(str(ROOT / "sample_images" / "chelsea.jpg")), int(SIZE), layers)
    want = top_relevance(bundle, analysis.x, layers[-1], int(analysis.logits.argmax()))
    rows = at.table[0].value.to_dict("records")
    assert [r[EN["lesson_col_channel"]] for r in rows] == [c for c, _ in want]
    assert [r[EN["lesson_col_relevance"]] for r in rows] == pytest.approx([s for _, s in want], rel=1e-5)
    at = open_page(view="lesson", step=step_of("patching"), size=SIZE, lang="en", present="1")
    ok(at)
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert spec["config"]["axis"]["labelFontSize"] == BODY_PX - 4
