"""The HTML handout (vizhooks/lesson/handout.py) opened from file:// in Chromium with every request
refused except file: and data: URLs: every picture loads from the file itself, and the Chinese text is
drawn with a font that has its characters (Chromium's own account of the fonts it used, through the
DevTools protocol: CSS.getPlatformFontsForNode), not as missing-glyph boxes. A4 print gives pages."""

from __future__ import annotations

import re

import pytest

import vizhooks as vz
from tests.helpers import ROOT
from vizhooks.lesson.handout import LessonChoices, lesson_file
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import ZH

pytestmark = pytest.mark.browser

PHOTO = ROOT / "sample_images" / "chelsea.jpg"
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Fonts with the Chinese characters: what fonts-wqy-zenhei (installed by `make test`) and the
#: handout's other font choices are called.
CJK_FONTS = ("WenQuanYi", "Noto Sans CJK", "Noto Serif CJK", "Source Han", "Droid Sans Fallback", "AR PL")


def _fonts(page, selector: str) -> list[dict]:
    cdp = page.context.new_cdp_session(page)
    cdp.send("DOM.enable")
    cdp.send("CSS.enable")
    root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
    node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
    fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
    cdp.detach()
    return fonts


@pytest.mark.parametrize("model", ["resnet18", "vgg16", "mobilenet_v3_small", "vit_b_32"])
def test_the_chinese_handout_loads_every_picture_offline_and_draws_every_character(page, tmp_path, artifacts, model):
    bundle = vz.load_model(model)
    choices = LessonChoices(model, PHOTO.read_bytes(), PHOTO.name, 64, "zh")
    path = tmp_path / "lesson.html"
    path.write_bytes(lesson_file(choices, bundle, "html"))
    # no address outside the file, not even a link that is never followed (the route below sees requests only)
    assert not re.search(r"""(src|href)=["'](?!data:|#)""", path.read_text(encoding="utf-8"))

    refused: list[str] = []

    def only_the_file(route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            refused.append(url)
            route.abort()

    page.route("**/*", only_the_file)
    page.goto(path.as_uri())
    page.wait_for_load_state("load")
    images = page.eval_on_selector_all("img", "imgs => imgs.map(i => [i.complete, i.naturalWidth, i.src.slice(0, 22)])")
    assert len(images) >= 1 + 2 * 5  # the photo, and a grid per layer in several steps at least
    assert all(complete and width > 0 and src.startswith("data:image/") for complete, width, src in images), images
    assert not refused, refused

    headings = page.eval_on_selector_all("h2", "hs => hs.map(h => h.textContent)")
    assert [h.split("：", 1)[-1] for h in headings] == [ZH[f"lesson_{s.id}_title"] for s in STEPS]
    for selector in ("h1", "h2", ".question p"):
        text = page.eval_on_selector(selector, "e => e.textContent")
        fonts = _fonts(page, selector)
        drawn = sum(f["glyphCount"] for f in fonts if f["familyName"].startswith(CJK_FONTS))
        assert drawn >= len(CJK.findall(text)) > 0, (selector, text, fonts)
    page.screenshot(path=str(artifacts / f"handout-zh-{model}.png"), full_page=False)
    pdf = page.pdf(format="A4")  # the print style: each step starts a page
    assert len(re.findall(rb"/Type\s*/Page[^s]", pdf)) >= len(STEPS)
