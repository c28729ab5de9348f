"""The Teach view in a real browser: Chromium's fake camera gives two snapshots to each of two classes
(the camera widget comes back under a new key after every snapshot), Train, and the Grad-CAM view then
explains the student's classifier: its class menu, its maps and its top-5 name the student's classes.

tests/test_app_teach.py (AppTest) fills the classes with sample photos and checks the taught model
itself; this test goes through what AppTest cannot: the browser's camera, the snapshot's upload, and
the reruns between, in English and in Chinese.
"""

from __future__ import annotations

import os
import re

import pytest
from playwright.sync_api import Page, expect

from benchmarks.server import start, stop, wait_healthy
from vizhooks.lesson.i18n import in_language
from vizhooks.page.texts import EN, ZH, nt

from .conftest import new_page

pytestmark = pytest.mark.browser

#: Chromium's test camera (a moving pattern and a clock) and no permission prompt.
#: Counts the page's finished script runs (the app root's script state going from running to
#: notRunning), so a test can wait for the run an action caused rather than race it.
COUNT_RUNS = """(() => {
  window.__vzRuns = 0;
  let last = null;
  new MutationObserver(() => {
    const app = document.querySelector('[data-testid="stApp"]');
    const state = app && app.getAttribute('data-test-script-state');
    if (state === 'notRunning' && last === 'running') window.__vzRuns += 1;
    if (state) last = state;
  }).observe(document, {subtree: true, childList: true, attributes: true,
                        attributeFilter: ['data-test-script-state']});
})();"""
#: The camera of the widget ``selector`` has played ``seconds`` without a restart (see _camera).
SETTLED = """([selector, seconds]) => { const v = document.querySelector(selector);
  return !!v && v.videoHeight > 0 && !v.paused && v.currentTime >= seconds; }"""
CAMERA_SETTLED = 1.5
STEP_MS = 60_000
SNAPSHOTS = 2  # per class: the fewest Train accepts
TAKE_PHOTO = "Take Photo"  # Streamlit's own button, in English on every page
CLASSES = {"en": ("mug", "pen"), "zh": ("杯子", "笔")}
COUNT = re.compile(r"^\d+ (photos?|张照片)$")  # the catalogue's "teach_count" in both languages


@pytest.fixture(scope="module")
def teach_server(tmp_path_factory):
    """A server of this module's own: its URL and its log, read for tracebacks."""
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(tmp_path_factory.mktemp("th"))}
    path = tmp_path_factory.mktemp("teach-log") / "streamlit.log"
    with path.open("w") as log:
        proc, url = start(env, log)
        try:
            wait_healthy(url, proc)
            yield url, path
        finally:
            stop(proc)


@pytest.fixture
def camera_page(camera_browser):
    pg = new_page(camera_browser, 2000, COUNT_RUNS, STEP_MS)
    yield pg
    pg.context.close()


def _idle(page: Page) -> None:
    expect(page.get_by_test_id("stApp")).to_have_attribute("data-test-script-state", "notRunning",
                                                           timeout=STEP_MS)


def _rerun(page: Page, action) -> None:
    """Do ``action`` (which reruns the script) and wait until that run is over."""
    before = page.evaluate("() => window.__vzRuns")
    action()
    page.wait_for_function("n => window.__vzRuns > n", arg=before, timeout=STEP_MS)
    _idle(page)


def _no_errors(page: Page, log) -> None:
    assert page.get_by_test_id("stException").count() == 0
    text = log.read_text(errors="replace")
    assert "Traceback" not in text, text[-4000:]


def _camera(page: Page, gen: int):
    """Take Photo of the camera widget of generation ``gen`` (the view gives it a new key after each
    snapshot), once a press will take a photo.

    Streamlit enables the button as soon as the browser hands over the camera, but a press takes no
    photo (react-webcam's getScreenshot gives null) while the video has no frame, and the widget asks
    for the camera again about a second after it is drawn (its width, debounced), and once more when
    the next run after the one that drew it re-mounts it. So the test waits, after that run, until the
    video has played CAMERA_SETTLED seconds, plus a quarter of a second more for each snapshot: the
    fake camera's picture is a function of the time since it started, and two equal snapshots would
    be one photo (the view keeps each photo of a class once).
    """
    widget = page.locator(f".st-key-teach_cam_{gen}")
    expect(widget.get_by_test_id("stCameraInput")).to_be_visible(timeout=STEP_MS)
    button = widget.get_by_role("button", name=TAKE_PHOTO)
    expect(button).to_be_enabled(timeout=STEP_MS)
    page.wait_for_function(SETTLED, arg=[f".st-key-teach_cam_{gen} video", CAMERA_SETTLED + 0.25 * gen],
                           timeout=STEP_MS)
    return button


def _counts(page: Page):
    """Each class's photo count ("2 photos", "2 张照片"), in class order."""
    return page.get_by_test_id("stCaptionContainer").filter(has_text=COUNT)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_snapshots_into_two_classes_train_then_gradcam_names_them(teach_server, camera_page, artifacts, lang):
    url, log = teach_server
    texts, names, page = (EN if lang == "en" else ZH), CLASSES[lang], camera_page
    page.goto(f"{url}/?view=teach&size=128&lang={lang}")
    expect(page.get_by_text(texts["teach_classes"], exact=True)).to_be_visible(timeout=STEP_MS)
    _idle(page)
    for i, name in enumerate(names):
        field = page.get_by_role("textbox", name=texts["teach_name"].format(n=i + 1), exact=True)
        field.fill(name)
        field.press("Enter")
    into = page.locator(".st-key-teach_into")
    group = into.get_by_role("radiogroup", name=texts["teach_add_to"])
    expect(group.locator("label")).to_have_text(list(names))  # "Add photos to" shows the new names
    _idle(page)
    gen = 0
    for i, name in enumerate(names):
        radio = into.get_by_role("radio", name=name, exact=True)
        if not radio.is_checked():  # the first class is chosen from the start
            _rerun(page, into.get_by_text(name, exact=True).click)
        expect(radio).to_be_checked()
        for k in range(SNAPSHOTS):
            _camera(page, gen).click()
            gen += 1
            _camera(page, gen)  # a fresh widget, its camera running again
            _idle(page)
            added = in_language(lang, lambda name=name: nt("teach_added", 1, name=name))
            expect(page.get_by_test_id("stAlert").filter(has_text=added)).to_be_visible()
            have = [SNAPSHOTS] * i + [k + 1] + [0] * (len(names) - i - 1)
            expect(_counts(page)).to_have_text([in_language(lang, lambda n=n: nt("teach_count", n)) for n in have])
    expect(page.get_by_test_id("stImage")).to_have_count(SNAPSHOTS * len(names))  # the thumbnails
    _no_errors(page, log)

    page.locator(".st-key-teach_train").get_by_role("button", name=texts["teach_train"]).click()
    label = texts["model_taught_option"].format(name="resnet18", classes=texts["list_separator"].join(names))
    done = texts["teach_done"].format(model=label, backbone="resnet18").replace("**", "")
    expect(page.get_by_test_id("stAlert").filter(has_text=done)).to_be_visible(timeout=STEP_MS)
    _idle(page)
    expect(page.get_by_test_id("stMetric").filter(has_text=texts["teach_accuracy"])).to_be_visible()
    expect(page.locator(".st-key-model").get_by_role("combobox")).to_have_value(label)  # the sidebar's menu
    _no_errors(page, log)
    page.screenshot(path=str(artifacts / ("teach.png" if lang == "en" else f"teach-{lang}.png")))

    page.locator(".st-key-view_group").get_by_text(texts["group_explain"], exact=True).click()  # its first view
    expect(page.locator(".st-key-view").get_by_text(texts["view_gradcam"], exact=True)).to_be_visible()
    target = page.locator(".st-key-target")
    expect(target).to_contain_text(texts["target"], timeout=STEP_MS)
    _idle(page)
    # the top-5 of the taught model: a bar for each of the student's classes, and nothing else
    bars = page.get_by_test_id("stMain").get_by_test_id("stProgress")
    expect(bars).to_have_count(len(names))
    shown = bars.all_inner_texts()
    assert sorted(b.rsplit(" · ", 1)[0] for b in shown) == sorted(names), shown
    assert all(re.fullmatch(r"\d+\.\d%", b.rsplit(" · ", 1)[1]) for b in shown), shown
    top1 = shown[0].rsplit(" · ", 1)[0]
    index = names.index(top1)
    # the class menu starts at that top-1 class and offers exactly the student's classes...
    expect(target.locator("input")).to_have_attribute("placeholder",
                                                      texts["target_top1"].format(label=top1, index=index))
    target.get_by_role("combobox").click()
    expect(page.get_by_role("listbox").get_by_role("option")).to_have_text(
        [f"{n} ({i})" for i, n in enumerate(names)])
    page.keyboard.press("Escape")
    # ... and Grad-CAM explains it: the sentence above the maps and each map's caption
    intro = re.split("[:：]", texts["gradcam_intro"].format(label=top1, index=index).replace("**", ""))[0]
    expect(page.get_by_test_id("stMain").get_by_text(intro).first).to_be_visible()
    overlays = page.get_by_test_id("stImage").filter(has_text=re.compile(rf" → {re.escape(top1)}$"))
    expect(overlays.first).to_be_visible()
    _no_errors(page, log)
