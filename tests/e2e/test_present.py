"""The lesson on a projector (issue 23's "Done when"), in Debian Chromium at 1280 x 800 and 1024 x 768,
in English and 简体中文: present mode puts each step's heading and first paragraph on the first screen,
with code that fits its box and type the back row can read; Next lands on the new step's heading with
its answer closed; the arrow keys move between steps; every view's own settings survive its link.

Sizes are read from the browser's own layout (getBoundingClientRect, scrollWidth, getComputedStyle),
after Streamlit's run has finished: nothing is measured while the page is still drawing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Page, expect
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from vizhooks.lesson.steps import STEPS
from vizhooks.page.present import BODY_PX, CODE_PX
from vizhooks.page.texts import LANGUAGES

pytestmark = pytest.mark.browser

expect.set_options(timeout=120_000)

VIEWPORTS = {"1280x800": {"width": 1280, "height": 800}, "1024x768": {"width": 1024, "height": 768}}
#: What the issue asks of a projector, whatever present.py chooses (BODY_PX, CODE_PX may be larger).
MIN_BODY_PX, MIN_CODE_PX = 20, 18

# The page is done when Streamlit's run has finished and nothing on it is still a placeholder: no
# running-status widget, no skeleton, no stale element of the previous run, no spinner, for 4 polls
# in a row (a first visit runs the script more than once, with a short "notRunning" between runs).
_SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const ok = !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], '
                               + '[data-stale="true"], [data-testid="stSpinner"]');
  window.__vizhooksCalm = ok ? (window.__vizhooksCalm || 0) + 1 : 0;
  return window.__vizhooksCalm >= 4;
}"""

# The step's heading (the main area's st.subheader), the first paragraph drawn after it, and every
# visible code block, as the browser lays them out.
_MEASURE = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const h3 = main.querySelector('[data-testid="stHeading"] h3');
  if (!h3) { return null; }
  let block = h3.closest('[data-testid="stElementContainer"]').nextElementSibling;
  while (block && !block.querySelector('[data-testid="stMarkdownContainer"] p')) { block = block.nextElementSibling; }
  const p = block && block.querySelector('[data-testid="stMarkdownContainer"] p');
  const box = e => { const r = e.getBoundingClientRect(); return {top: r.top, bottom: r.bottom}; };
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const pres = [...main.querySelectorAll('pre')].filter(e => e.offsetParent !== null);
  return {
    heading: h3.innerText, headingBox: box(h3),
    paragraph: p ? p.innerText : null, paragraphBox: p ? box(p) : null, paragraphPx: p ? px(p) : null,
    code: pres.map(e => ({scrollWidth: e.scrollWidth, clientWidth: e.clientWidth,
                          px: Math.min(px(e), ...[...e.querySelectorAll('code, span')].map(px)),
                          text: e.innerText.slice(0, 60)})),
    scrollTop: main.scrollTop, innerHeight: window.innerHeight,
  };
}"""

# The answer expander of the step on screen: open or not (a closed <details> has no "open" attribute).
_ANSWER_OPEN = """id => {
  const d = document.querySelector('.st-key-lesson_answer_' + id + ' details');
  return d === null ? null : d.open;
}"""


def _settle(page) -> None:
    page.wait_for_function(_SETTLED, polling=250, timeout=120_000)


def _heading(lang: str, n: int) -> str:
    texts = LANGUAGES[lang]
    return texts["lesson_step"].format(n=n, total=len(STEPS), title=texts[f"lesson_{STEPS[n - 1].id}_title"])


def _open(page, server: str, query: str) -> dict:
    page.goto(f"{server}/?{query}")
    _settle(page)
    assert page.get_by_test_id("stException").count() == 0, query
    shown = page.evaluate(_MEASURE)
    assert shown is not None, f"{query}: no step heading on the page"
    return shown


def _on_first_screen(box: dict, height: int) -> bool:
    return 0 <= box["top"] and box["bottom"] <= height


@pytest.fixture(scope="module")
def pages(browser):
    """One page per viewport for the whole module (a new page per test costs a websocket and a run)."""
    contexts: dict[str, object] = {}
    opened = {}

    def get(size: str):
        if size not in opened:
            contexts[size] = context = browser.new_context(viewport=VIEWPORTS[size])
            opened[size] = context.new_page()
            opened[size].set_default_timeout(120_000)
        return opened[size]

    yield get
    for context in contexts.values():
        context.close()


# Every step at a projector's 1280 x 800 in English; at the other viewport and language the steps with
# the longest first paragraphs (6 and 7; 7's heading wraps at 1024) and the first.
PRESENT_CASES = [("1280x800", "en", n) for n in range(1, len(STEPS) + 1)] + [
    ("1024x768", "en", 7), ("1280x800", "zh", 7), ("1024x768", "zh", 1), ("1024x768", "zh", 6)]


@pytest.mark.parametrize(("size", "lang", "n"), PRESENT_CASES, ids=[f"{s}-{lang}-{n}" for s, lang, n in PRESENT_CASES])
def test_present_mode_puts_the_step_first_with_readable_type(server, pages, artifacts, size, lang, n):
    page = pages(size)
    height = VIEWPORTS[size]["height"]
    shown = _open(page, server, f"view=lesson&step={n}&present=1&lang={lang}")
    where = f"step {n} at {size} ({lang})"
    assert shown["heading"] == _heading(lang, n), where
    assert shown["scrollTop"] == 0, where
    assert _on_first_screen(shown["headingBox"], height), f"{where}: heading at {shown['headingBox']}"
    assert shown["paragraph"], f"{where}: no paragraph after the heading"
    assert _on_first_screen(shown["paragraphBox"], height), (
        f"{where}: first paragraph at {shown['paragraphBox']}, below the first screen of {height} px")
    assert shown["paragraphPx"] >= MIN_BODY_PX, f"{where}: body text {shown['paragraphPx']} px"
    assert shown["code"], f"{where}: no code block shown"  # every step shows its hook lines
    for block in shown["code"]:
        assert block["scrollWidth"] <= block["clientWidth"] + 1, f"{where}: code runs off its box: {block}"
        assert block["px"] >= MIN_CODE_PX, f"{where}: code at {block['px']} px: {block}"
    if (size, n) in (("1280x800", 1), ("1024x768", 7)):
        page.screenshot(path=str(artifacts / f"present-{size}-{lang}-step{n}.png"))


def test_present_mode_sizes_meet_the_issue():
    assert BODY_PX >= MIN_BODY_PX and CODE_PX >= MIN_CODE_PX


@pytest.mark.parametrize("n", [1, 7])
def test_without_present_mode_the_step_heading_is_on_the_first_screen(server, pages, n):
    page = pages("1280x800")
    shown = _open(page, server, f"view=lesson&step={n}")
    assert shown["heading"] == _heading("en", n)
    assert _on_first_screen(shown["headingBox"], 800), f"step {n}: heading at {shown['headingBox']}"


def test_next_lands_on_the_new_heading_with_its_answer_closed(server, pages):
    page = pages("1280x800")
    _open(page, server, "view=lesson&step=1")
    first, second = STEPS[0].id, STEPS[1].id
    answer = page.locator(f".st-key-lesson_answer_{first} summary")
    answer.scroll_into_view_if_needed()
    answer.click()
    expect(page.get_by_text(LANGUAGES["en"][f"lesson_{first}_a"][:40])).to_be_visible()
    assert page.evaluate(_ANSWER_OPEN, first) is True
    nxt = page.locator(".st-key-lesson_next button")
    nxt.scroll_into_view_if_needed()
    assert page.evaluate(_MEASURE)["scrollTop"] > 800  # the reader is far below the heading
    nxt.click()
    expect(page.get_by_role("heading", name=_heading("en", 2))).to_be_visible()
    _settle(page)
    shown = page.evaluate(_MEASURE)
    assert shown["heading"] == _heading("en", 2)
    assert _on_first_screen(shown["headingBox"], 800), f"after Next, step 2's heading at {shown['headingBox']}"
    assert page.evaluate(_ANSWER_OPEN, second) is False, "step 2's answer is open"
    expect(page.get_by_text(LANGUAGES["en"][f"lesson_{second}_a"][:40])).not_to_be_visible()


def test_arrow_keys_move_between_steps_in_present_mode(server, pages):
    page = pages("1280x800")
    _open(page, server, "view=lesson&step=3&present=1")
    page.locator("body").press("ArrowRight")
    expect(page.get_by_role("heading", name=_heading("en", 4))).to_be_visible()
    _settle(page)
    assert re.search(r"[?&]step=4(&|$)", page.url), page.url
    page.locator("body").press("ArrowLeft")
    expect(page.get_by_role("heading", name=_heading("en", 3))).to_be_visible()
    _settle(page)


# ---- every view's own settings survive its link -------------------------------------------------


def _pick(page, key: str, option: str) -> None:
    """Choose ``option`` in the selectbox with the session key ``key``."""
    item = page.locator("[role=listbox] [role=option]").filter(has_text=re.compile(rf"^{re.escape(option)}$"))
    for _ in range(3):  # a run that redraws the page closes an open list: open it again
        page.locator(f".st-key-{key} button[aria-haspopup=listbox]").click()  # the combobox's "Open" arrow
        try:
            item.click(timeout=10_000)
            break
        except PlaywrightTimeout:
            _settle(page)
    expect(_selected(page, key)).to_have_value(option)
    _settle(page)


def _number(page, key: str, value: int) -> None:
    field = page.locator(f".st-key-{key} input")
    field.fill(str(value))
    field.press("Enter")
    _settle(page)
    expect(field).to_have_value(str(value))


def _selected(page, key: str):
    """The selectbox's field, whose value is the chosen option's label (Streamlit 1.67's combobox)."""
    return page.locator(f".st-key-{key} input[role=combobox]")


@contextlib.contextmanager
def _reopened(browser, server: str, href: str) -> Iterator[Page]:
    """The copied link in a new browser context (no cookies, no session): a student's browser, closed
    when the block ends."""
    assert href.startswith(server), href
    context = browser.new_context(viewport=VIEWPORTS["1280x800"])
    try:
        other = context.new_page()
        other.set_default_timeout(120_000)
        other.goto(href)
        _settle(other)
        assert other.get_by_test_id("stException").count() == 0, href
        yield other
    finally:
        context.close()


def _copy(page, **shown: str) -> str:
    """``window.location.href`` once the address bar has caught up with the page (Streamlit writes it at
    the end of the run that drew the change): it must come to say ``shown``, else the link lost them."""
    _settle(page)
    try:
        page.wait_for_function("""want => {
            const q = new URLSearchParams(window.location.search);
            return Object.entries(want).every(([k, v]) => q.get(k) === v);
        }""", arg=shown, polling=250, timeout=20_000)
    except PlaywrightTimeout:
        pytest.fail(f"the link {page.url} does not say {shown}")
    return page.evaluate("window.location.href")


def test_inspector_link_keeps_layer_and_channel(server, pages, browser):
    page = pages("1280x800")
    _open(page, server, "view=inspector")
    _pick(page, "insp_layer", "layer3.0.conv1")
    _number(page, "insp_channel", 7)
    with _reopened(browser, server, _copy(page, insp_layer="layer3.0.conv1", insp_channel="7")) as other:
        expect(_selected(other, "insp_layer")).to_have_value("layer3.0.conv1")
        expect(other.locator(".st-key-insp_channel input")).to_have_value("7")
        expect(other.get_by_text(re.compile(r"^layer3\.0\.conv1, channel 7, upsampled from"))).to_be_visible()


def test_atlas_link_keeps_layer_and_channel(server, pages, browser):
    page = pages("1280x800")
    _open(page, server, "view=atlas")
    layer = _selected(page, "atlas_layer").input_value()
    _number(page, "atlas_channel", 5)
    with _reopened(browser, server, _copy(page, atlas_layer=layer, atlas_channel="5")) as other:
        expect(_selected(other, "atlas_layer")).to_have_value(layer)
        expect(other.locator(".st-key-atlas_channel input")).to_have_value("5")
        expect(other.get_by_text(f"{layer}, channel 5, over this photo", exact=True)).to_be_visible()


def test_intervene_link_keeps_the_edit(server, pages, browser):
    en = LANGUAGES["en"]
    page = pages("1280x800")
    _open(page, server, "view=intervene")
    _pick(page, "iv_layer", "layer2.0.conv1")
    _pick(page, "iv_mode", en["iv_mode_double"])
    channels = page.locator(".st-key-iv_channels")
    channels.locator("input").click()
    page.keyboard.type("9")  # Enter would take every option that contains a 9: click the one
    page.locator("[role=listbox] [role=option]").filter(has_text=re.compile(r"^9$")).click()
    page.keyboard.press("Escape")
    _settle(page)
    chosen = channels.locator("[data-tag]").all_inner_texts()
    assert "9" in chosen, chosen
    link = _copy(page, iv_layer="layer2.0.conv1", iv_mode="double", iv_channels=",".join(chosen))
    with _reopened(browser, server, link) as other:
        expect(_selected(other, "iv_layer")).to_have_value("layer2.0.conv1")
        expect(_selected(other, "iv_mode")).to_have_value(en["iv_mode_double"])
        expect(other.locator(".st-key-iv_channels [data-tag]")).to_have_text(chosen)


def test_compare_link_keeps_the_second_photo(server, pages, browser):
    page = pages("1280x800")
    _open(page, server, "view=compare")
    before = _selected(page, "compare").input_value()
    other_photo = "rocket.jpg" if before != "rocket.jpg" else "brick.png"
    _pick(page, "compare", other_photo)
    with _reopened(browser, server, _copy(page, compare=other_photo)) as other:
        expect(_selected(other, "compare")).to_have_value(other_photo)


def test_lesson_link_keeps_step_language_and_present_mode(server, pages, browser):
    zh = LANGUAGES["zh"]
    page = pages("1280x800")
    _open(page, server, "view=lesson&step=1")
    for n in (2, 3):
        page.locator(".st-key-lesson_next button").click()
        expect(page.get_by_role("heading", name=_heading("en", n))).to_be_visible()
        _settle(page)
    page.locator(".st-key-present label").click()
    expect(page.locator(".st-key-lesson_next_top button")).to_be_visible()
    _settle(page)
    # present mode folds the sidebar away; its choices stay one click off
    expect(page.get_by_test_id("stSidebar").get_by_role("radio", name="简体中文")).not_to_be_in_viewport()
    page.get_by_test_id("stExpandSidebarButton").click()
    page.get_by_test_id("stSidebar").get_by_role("radio", name="简体中文").click()
    expect(page.get_by_role("heading", name=_heading("zh", 3))).to_be_visible()
    with _reopened(browser, server, _copy(page, view="lesson", step="3", lang="zh", present="1")) as other:
        expect(other.get_by_role("heading", name=_heading("zh", 3))).to_be_visible()
        expect(other.locator(".st-key-present input[type=checkbox]")).to_be_checked()
        expect(other.locator(".st-key-lesson_next_top button")).to_have_text(zh["lesson_next"])
        expect(other.locator(".st-key-view")).to_be_hidden()


def test_the_page_keeps_working_after_a_language_switch(server, pages):
    """Translated menu labels travel back as labels: after a switch the script sets them again
    (state.keep_a_language), else the next run met 'resnet18 · ResNet · 11.7 M parameters'."""
    page = pages("1280x800")
    _open(page, server, "view=lesson&step=1")
    page.get_by_test_id("stSidebar").get_by_role("radio", name="简体中文").click()
    expect(page.get_by_role("heading", name=_heading("zh", 1))).to_be_visible()
    _settle(page)
    page.locator(".st-key-lesson_next button").click()
    _settle(page)
    assert page.get_by_test_id("stException").count() == 0, "the run after a language switch failed"
    expect(page.get_by_role("heading", name=_heading("zh", 2))).to_be_visible(timeout=10_000)
