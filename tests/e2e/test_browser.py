"""The page in a real browser: default view, an upload, another layer, every view from a link; and the
Chromium the tests start (benchmarks/server.py's CHROMIUM_ARGS).

What the page must show is worked out here without vizhooks: layer shapes from a plain forward
through torchvision's resnet18 (the page's default model), row counts from its modules.
"""

from __future__ import annotations

import functools
import json
import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import expect

from .conftest import ROOT

pytestmark = pytest.mark.browser

PHOTO = ROOT / "sample_images" / "coffee.jpg"
# A cold server loads torch and the model on the first visit: allow for a slow CI machine.
expect.set_options(timeout=120_000)

SHOWN = 16  # channels per grid until the visitor picks another number
NUMBER = r"-?\d[\d.]*(?:e[+-]\d+)?"  # a number as "{:.3g}" writes it; never nan or inf
LINK_LAYERS = ("conv1", "layer4.1.conv2")


@functools.cache
def _resnet18():
    from torchvision.models import resnet18

    return resnet18(weights=None).eval()


@functools.cache
def _conv_shapes(height: int, width: int) -> dict[str, tuple[int, int, int]]:
    """(C, H, W) of every Conv2d of resnet18, in module order, for an input of this size."""
    import torch
    from torchvision.models.feature_extraction import create_feature_extractor

    model = _resnet18()
    convs = [name for name, module in model.named_modules() if isinstance(module, torch.nn.Conv2d)]
    with torch.no_grad():
        out = create_feature_extractor(model, return_nodes=convs)(torch.zeros(1, 3, height, width))
    return {name: tuple(out[name].shape[1:]) for name in convs}


def _model_saw(page) -> tuple[int, int]:
    """(height, width) of the picture the page fed the model, from its caption."""
    text = page.get_by_text(re.compile(r"What the model saw: \d+ × \d+ pixels")).inner_text()
    width, height = map(int, re.findall(r"\d+", text))
    return height, width


def _maps_caption(name: str, height: int, width: int) -> re.Pattern:
    """The caption under a feature-map grid: "conv 6 of 20 · 28×28 · output 128×28×42 · min ·
    mean · max · 16 of 128 channels"."""
    shapes = _conv_shapes(height, width)
    channels, h, w = shapes[name]
    index = list(shapes).index(name) + 1
    shown = f"{SHOWN} of {channels} channels" if SHOWN < channels else f"all {channels} channels"
    # the layer's resolution for this photo (issue 34: it quoted the model's square before)
    return re.compile(rf"^conv {index} of {len(shapes)} · {h}×{w} · output {channels}×{h}×{w} · "
                      rf"min {NUMBER} · mean {NUMBER} · max {NUMBER} · {shown}$")


def _after(page, heading: str, n: int = 1):
    """The n-th element drawn after the subheader ``heading``: its caption, its grid..."""
    block = page.get_by_test_id("stElementContainer").filter(
        has=page.get_by_role("heading", name=heading, exact=True))
    return block.locator(f"xpath=following-sibling::*[{n}]")


def _image(page, caption: str):
    return page.get_by_test_id("stImage").filter(has_text=re.compile(rf"^{re.escape(caption)}$"))


def _expect_loaded(image) -> None:
    """An st.image whose picture has arrived, not just its frame."""
    img = image.locator("img")
    expect(img).to_be_visible()
    expect(img).to_have_js_property("complete", True)
    expect(img).not_to_have_js_property("naturalWidth", 0)


def _expect_rows(page, rows: int) -> None:
    # st.dataframe draws on a canvas; the grid's aria-rowcount counts the header row too
    expect(page.get_by_test_id("stDataFrame").locator("[aria-rowcount]").first).to_have_attribute(
        "aria-rowcount", str(rows + 1))


def _top1(page) -> str:
    """The label of the top-1 class, as the Top-5 list shows it ("tabby · 41.0%")."""
    return page.get_by_test_id("stMain").get_by_test_id("stProgress").first.inner_text().rsplit(" · ", 1)[0]


def _wait_for_grids(page, names):
    for name in names:
        expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()
    # the input picture plus one grid per layer, all loaded
    page.wait_for_function(
        """n => [...document.querySelectorAll('[data-testid="stImage"] img')]
                 .filter(img => img.complete && img.naturalWidth > 0).length >= n""",
        arg=len(names) + 1, timeout=120_000)
    _wait_idle(page)


def _wait_idle(page):
    # The status widget is hidden with toolbarMode = "minimal"; the app root says whether the
    # script is still running.
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")


def test_default_view_upload_and_layer_change(server, page, artifacts):
    page.goto(server)
    tour = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]
    _wait_for_grids(page, tour)
    expect(page.get_by_text(re.compile(r"What the model saw: \d+ × 224 pixels"))).to_be_visible()
    page.screenshot(path=str(artifacts / "page-default.png"), full_page=True)

    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_text("Upload", exact=True).click()
    sidebar.locator("input[type=file]").set_input_files(str(PHOTO))
    expect(page.get_by_text(re.compile(r"What the model saw: 336 × 224 pixels"))).to_be_visible()
    _wait_for_grids(page, tour)
    assert page.get_by_test_id("stException").count() == 0

    layers = sidebar.get_by_test_id("stMultiSelect")
    layers.locator("input").click()
    page.keyboard.type("layer3.1.conv2")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    _wait_for_grids(page, [*tour, "layer3.1.conv2"])
    # the added layer's own caption, coffee.jpg being 224 × 336 for the model (asserted above)
    expect(_after(page, "layer3.1.conv2", 2)).to_have_text(_maps_caption("layer3.1.conv2", 224, 336))
    assert "layer3.1.conv2" in page.url
    assert page.get_by_test_id("stException").count() == 0
    # Streamlit scrolls inside its own container, so a tall window shows the whole page.
    page.set_viewport_size({"width": 1400, "height": 2600})
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "page.png"))


# What each view draws of its own, for a link with LINK_LAYERS; (page, height, width) -> None.


def _shows_maps(page, height, width):
    for name in LINK_LAYERS:
        _expect_loaded(_after(page, name, 1))  # the grid under its heading, its caption under the grid
        expect(_after(page, name, 2)).to_have_text(_maps_caption(name, height, width))


def _shows_inspector(page, height, width):
    _, h, w = _conv_shapes(height, width)[LINK_LAYERS[0]]  # the first layer, channel 0
    _expect_loaded(_image(page, f"{LINK_LAYERS[0]}, channel 0, upsampled from {h} × {w}"))
    _expect_loaded(_image(page, "Over the photo at opacity 50%"))


def _shows_atlas(page, height, width):
    manifest = json.loads((ROOT / "sample_images" / "atlas" / "resnet18" / "manifest.json").read_text())
    _expect_loaded(_image(page, f"{manifest['layers'][0]['name']}, channel 0, over this photo"))
    exemplars = page.get_by_test_id("stImage").filter(has_text=re.compile(rf"^{NUMBER} · \S+\.(jpg|png)$"))
    expect(exemplars).to_have_count(manifest["top"])
    for i in range(manifest["top"]):
        _expect_loaded(exemplars.nth(i))


def _shows_gradients(page, height, width):
    for name in LINK_LAYERS:
        channels, h, w = _conv_shapes(height, width)[name]
        expect(_after(page, name, 1)).to_have_text(
            re.compile(rf"^gradient {channels}×{h}×{w} · min {NUMBER} · max {NUMBER} · "))
        _expect_loaded(_after(page, name, 2))


def _shows_gradcam(page, height, width):
    label = _top1(page)
    for name in LINK_LAYERS:
        overlay = _after(page, name, 1)
        expect(overlay).to_have_text(f"{name} → {label}")
        _expect_loaded(overlay)


def _shows_backward(page, height, width):
    _expect_rows(page, len(list(_resnet18().named_children())))  # one hook per top-level child


def _shows_table(page, height, width):
    model = _resnet18()
    _expect_rows(page, len(list(model.named_modules())) - 1)  # every module but the model itself
    params = page.get_by_test_id("stMetric").filter(has_text="Parameters").get_by_test_id("stMetricValue")
    expect(params).to_have_text(f"{sum(p.numel() for p in model.parameters()):,}")


def _shows_intervene(page, height, width):
    score = page.get_by_test_id("stMetric").filter(has_text=f"Score (logit) of “{_top1(page)}” with the edit")
    expect(score.get_by_test_id("stMetricValue")).to_have_text(re.compile(rf"^{NUMBER}$"))
    later = LINK_LAYERS[-1]  # channels of the first layer are switched off; the last one shows the effect
    expect(_after(page, later, 1)).to_have_text(re.compile(r"^mean change [\d.]+% compared with the unedited pass$"))
    _expect_loaded(_after(page, later, 2))
    for caption in ("Grad-CAM, as it is", f"Grad-CAM, with the clamp at {later}"):  # clamped at the last layer
        _expect_loaded(_image(page, caption))


def _shows_compare(page, height, width):
    for caption in ("A: the photo in the sidebar", "B: the second photo"):
        _expect_loaded(_image(page, caption))
    similarity = re.compile(r"^cosine similarity -?\d\.\d{3} \(1 = the same pattern\)")
    for name in LINK_LAYERS:
        expect(_after(page, name, 1)).to_have_text(similarity)
        grids = _after(page, name, 2).get_by_test_id("stImage")  # A, B and B - A
        expect(grids).to_have_count(3)
        for i in range(3):
            _expect_loaded(grids.nth(i))


def _shows_code(page, height, width):
    code = page.get_by_test_id("stMain").get_by_test_id("stCode")  # the sidebar has the weights' status
    expect(code).to_contain_text("register_forward_hook")
    expect(code).to_contain_text(str(list(LINK_LAYERS)))


def _shows_lesson(page, height, width):
    from vizhooks.lesson.steps import STEPS

    expect(page.get_by_role("heading", name=f"Step 1 of {len(STEPS)}: What a hook is, and why")).to_be_visible()
    _expect_rows(page, len(LINK_LAYERS))  # what the hook printed: one row per layer
    table = page.get_by_test_id("stDataFrame")
    for name in LINK_LAYERS:
        shape = "×".join(map(str, (1, *_conv_shapes(height, width)[name])))
        expect(table.get_by_text(shape, exact=True)).to_have_count(1)
    expect(page.get_by_test_id("stMain").get_by_test_id("stCode").first).to_contain_text("register_forward_hook")


def _shows_overview(page, height, width):
    from vizhooks.page.texts import EN

    caption = EN["ov_caption"].format(layers=20, stages=5, k=8)  # resnet18: 20 convs, conv1 and 4 stages
    _expect_loaded(_image(page, caption))
    expect(page.get_by_role("button", name=EN["ov_open"])).to_be_visible()


def _shows_convolution(page, height, width):
    from vizhooks.page.texts import EN, nt

    # the link's first layer (conv1, stride 2) taken apart in the middle of channel 0's map
    _, h, w = _conv_shapes(height, width)[LINK_LAYERS[0]]
    _expect_loaded(_image(page, nt("cv_window_caption", 2, sw=2)))
    total = EN["cv_total"].format(row=h // 2, col=w // 2)
    expect(page.get_by_test_id("stMetric").filter(has_text=total)).to_have_count(1)


def _shows_teach(page, height, width):
    from vizhooks.page.texts import EN, nt

    expect(page.get_by_role("button", name=EN["teach_train"])).to_be_visible()
    expect(page.get_by_text(nt("teach_count", 0)).first).to_be_visible()


def _shows_explain(page, height, width):
    from vizhooks.page.texts import EN

    # nothing slow before the button: the view waits with its methods chosen
    expect(page.get_by_role("button", name=EN["ex_compute"])).to_be_visible()
    expect(page.get_by_role("button", name=EN["ex_sanity_run"])).to_be_visible()


def _shows_audit(page, height, width):
    from vizhooks.page.texts import EN

    # nothing slow: the shipped shortcut folder holds classes an ImageNet model was never taught, so the view
    # offers to teach them first (tests/test_app_audit.py follows the way to the audit)
    expect(page.get_by_text(EN["audit_teach_first"].split("{")[0])).to_be_visible()
    expect(page.get_by_role("button", name=EN["audit_teach_example"], exact=True)).to_be_visible()


def _shows_concepts(page, height, width):
    from vizhooks.page.texts import EN

    # nothing slow before the toggle: the sample photos wait to be searched
    expect(page.get_by_text(re.compile(re.escape(EN["concepts_run"].split("{")[0])))).to_be_visible()


SHOWS = {"maps": _shows_maps, "overview": _shows_overview, "inspector": _shows_inspector,
         "convolution": _shows_convolution, "atlas": _shows_atlas,
         "gradients": _shows_gradients, "gradcam": _shows_gradcam, "backward": _shows_backward, "table": _shows_table,
         "intervene": _shows_intervene, "compare": _shows_compare, "code": _shows_code, "lesson": _shows_lesson,
         "teach": _shows_teach, "explain": _shows_explain, "audit": _shows_audit, "concepts": _shows_concepts}


def test_every_view_renders_from_a_link(server, page, artifacts):
    from vizhooks.page.urlstate import VIEWS
    from vizhooks.page.views import BY_NAME

    assert set(SHOWS) == set(VIEWS)
    # st.error (bad input, "Something went wrong", out of memory) and an uncaught exception
    failures = page.locator('[data-testid="stAlertContentError"], [data-testid="stException"]')
    for view in VIEWS:
        page.goto(f"{server}/?view={view}&layers={','.join(LINK_LAYERS)}")
        own_area = BY_NAME[view].own_area  # no picture is analysed first
        if not own_area:
            expect(page.get_by_text(re.compile(r"What the model saw"))).to_be_visible()
        _wait_idle(page)
        expect(page.get_by_test_id("stSpinner")).to_have_count(0)
        assert failures.count() == 0, f"{view}: {failures.all_inner_texts()}"
        SHOWS[view](page, *((0, 0) if own_area else _model_saw(page)))
        assert failures.count() == 0, f"{view}: {failures.all_inner_texts()}"
        page.screenshot(path=str(artifacts / f"view-{view}.png"))


def test_lesson_in_chinese_next_back_and_step_link(server, page, artifacts):
    from vizhooks.lesson.steps import STEPS
    from vizhooks.page.texts import ZH

    def heading(n: int) -> str:
        title = ZH[f"lesson_{STEPS[n - 1].id}_title"]
        return ZH["lesson_step"].format(n=n, total=len(STEPS), title=title)

    page.goto(f"{server}/?view=lesson&step=2&lang=zh&layers=conv1,layer4.1.conv2")
    expect(page.get_by_role("heading", name=heading(2))).to_be_visible()
    _wait_idle(page)
    page.get_by_role("button", name=ZH["lesson_next"]).click()
    expect(page.get_by_role("heading", name=heading(3))).to_be_visible()
    _wait_idle(page)
    assert "step=3" in page.url and "lang=zh" in page.url
    page.get_by_role("button", name=ZH["lesson_back"]).click()
    # as a reader clicks: after the step has come (two clicks within one rerun are one click to Streamlit;
    # under load the second then went nowhere and the test waited 120 s for step 1)
    expect(page.get_by_role("heading", name=heading(2))).to_be_visible()
    _wait_idle(page)
    page.get_by_role("button", name=ZH["lesson_back"]).click()
    expect(page.get_by_role("heading", name=heading(1))).to_be_visible()
    _wait_idle(page)
    page.get_by_text(ZH["lesson_answer"]).click()  # the answer opens on request
    expect(page.get_by_text(ZH["lesson_what_a"][:12])).to_be_visible()
    assert page.get_by_test_id("stException").count() == 0
    page.set_viewport_size({"width": 1400, "height": 1900})
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "lesson-zh.png"))

    page.get_by_role("button", name=ZH["lesson_next"]).click()
    expect(page.get_by_role("heading", name=heading(2))).to_be_visible()
    _wait_idle(page)
    href = page.get_by_role("link", name=ZH["lesson_link"]).get_attribute("href")
    assert "step=2" in href
    shared = page.context.new_page()  # a student opens the teacher's link
    shared.goto(f"{server}/{href.lstrip('/')}" if href.startswith("?") else href)
    expect(shared.get_by_role("heading", name=heading(2))).to_be_visible()
    expect(shared.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning")
    assert shared.get_by_test_id("stException").count() == 0


def _descendants_cmdlines(pid: int) -> list[list[str]]:
    """The command lines of every process below ``pid`` (read from /proc)."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(parents.get(pid, []))
    while todo:
        child = todo.pop()
        todo += parents.get(child, [])
        try:
            found.append(Path(f"/proc/{child}/cmdline").read_text().split("\0"))
        except OSError:
            continue
    return found


def test_chromium_keeps_playwrights_features_off_and_draws_no_address_bar_popup(browser):
    """CHROMIUM_ARGS' --disable-features replaces Playwright's own (Chromium keeps the last one): it must still
    hold every feature Playwright turns off, read from the command line Playwright gave the browser this test
    launched; and the address bar's popup, a web page of its own per window, is not made."""
    context = browser.new_context()
    try:
        context.new_page().goto("about:blank")
        targets = browser.new_browser_cdp_session().send("Target.getTargets", {"filter": [{}]})["targetInfos"]
        assert not [t["url"] for t in targets if t["url"].startswith("chrome://omnibox")], targets
        mains = [args for args in _descendants_cmdlines(os.getpid())
                 if "--remote-debugging-pipe" in args and not any(a.startswith("--type=") for a in args)]
        assert mains, "no Chromium below this test process"
        for args in mains:
            lists = [a.split("=", 1)[1].split(",") for a in args if a.startswith("--disable-features=")]
            assert len(lists) == 2, lists  # Playwright's, then ours
            assert set(lists[0]) <= set(lists[1]), set(lists[0]) - set(lists[1])
    finally:
        context.close()
