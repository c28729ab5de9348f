"""Walking a lesson plan in Debian Chromium (issue 34 §5, §4.10): every Next / Back / arrow key, not
only the first of a session, opens the new step at its heading, whatever the reader had scrolled to,
in normal and present mode; present mode draws the lesson's code at a size the back row can read and
keeps its Present switch whole on the screen.

Positions and sizes are read from the browser's own layout (getBoundingClientRect, getComputedStyle)
after Streamlit's run has finished.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import LANGUAGES

pytestmark = pytest.mark.browser

expect.set_options(timeout=120_000)

WIDTH, HEIGHT = 1280, 800
#: Four light steps, out of order, so Next walks the plan rather than the list.
PLAN = (1, 4, 3, 11)
#: What the issue asks of a projector's code, whatever present.py chooses.
MIN_CODE_PX = 18
#: The new step's heading must start within this many pixels of the viewport's top.
TOP_PX = 200

# The same "settled" test as tests/e2e/test_present.py: Streamlit's run has finished and nothing is
# still a placeholder, for 4 polls in a row.
_SETTLED = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  const ok = !!app && app.getAttribute('data-test-script-state') === 'notRunning'
    && !document.querySelector('[data-testid="stStatusWidget"], [data-testid="stSkeleton"], '
                               + '[data-stale="true"], [data-testid="stSpinner"]');
  window.__vizhooksCalm = ok ? (window.__vizhooksCalm || 0) + 1 : 0;
  return window.__vizhooksCalm >= 4;
}"""

# The step heading's text and box, how far the main area is scrolled and how far it can be.
_HEADING = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const h3 = main.querySelector('[data-testid="stHeading"] h3');
  const r = h3 ? h3.getBoundingClientRect() : null;
  return {heading: h3 ? h3.innerText : null, top: r ? r.top : null, bottom: r ? r.bottom : null,
          scrollTop: main.scrollTop, room: main.scrollHeight - main.clientHeight};
}"""

# Scroll the main area down to the lesson's own Back / Next row at the end of the step, as a reader
# who has read the step does.
_READ_DOWN = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  main.scrollTo({top: main.scrollHeight});
  return main.scrollTop;
}"""

# Every visible code block's smallest computed type size (the block and each span of its highlighting),
# and each piece of code in the text (`hook` in a paragraph).
_CODE_PX = """() => {
  const main = document.querySelector('[data-testid="stMain"]');
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  return [...main.querySelectorAll('pre, p code, li code')].filter(e => e.offsetParent !== null).map(
    e => ({px: Math.min(px(e), ...[...e.querySelectorAll('code, span')].map(px)), text: e.innerText.slice(0, 40)}));
}"""

_BOX = """selector => {
  const e = document.querySelector(selector);
  if (!e) { return null; }
  const r = e.getBoundingClientRect();
  const header = document.querySelector('[data-testid="stHeader"]');
  const corners = [[r.left + 2, r.top + 2], [r.right - 2, r.top + 2], [r.left + 2, r.bottom - 2],
                   [r.right - 2, r.bottom - 2], [(r.left + r.right) / 2, (r.top + r.bottom) / 2]];
  return {top: r.top, bottom: r.bottom, left: r.left, right: r.right,
          headerBottom: header ? header.getBoundingClientRect().bottom : 0,
          covered: corners.filter(([x, y]) => !e.contains(document.elementFromPoint(x, y))).length};
}"""


def _settle(page) -> None:
    page.wait_for_function(_SETTLED, polling=250, timeout=120_000)


def _heading(lang: str, at: int) -> str:
    """The heading of the plan's ``at``-th step (1-based): numbered within the plan."""
    texts = LANGUAGES[lang]
    return texts["lesson_step"].format(n=at, total=len(PLAN), title=texts[f"lesson_{STEPS[PLAN[at - 1] - 1].id}_title"])


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    yield pg
    context.close()


def _open(page, server: str, query: str) -> None:
    page.goto(f"{server}/?view=lesson&plan={','.join(map(str, PLAN))}&{query}")
    _settle(page)
    assert page.get_by_test_id("stException").count() == 0, query
    expect(page.get_by_role("heading", name=_heading("en", 1))).to_be_visible()


def _at_the_top(page, at: int, how: str) -> None:
    expect(page.get_by_role("heading", name=_heading("en", at))).to_be_visible()
    _settle(page)
    shown = page.evaluate(_HEADING)
    assert shown["heading"] == _heading("en", at), shown
    assert 0 <= shown["top"] <= TOP_PX, (
        f"{how} to step {at} of the plan: its heading at {shown['top']:.0f} px, scrolled {shown['scrollTop']} px")


def _walk(page, press) -> None:
    """Read each step down to its end, then ``press`` to the next one: every new heading opens at the top."""
    for at in range(2, len(PLAN) + 1):
        scrolled = page.evaluate(_READ_DOWN)
        assert scrolled > HEIGHT, f"step {at - 1} of the plan is too short to scroll past its heading ({scrolled} px)"
        press()
        _at_the_top(page, at, "Next")
    page.evaluate(_READ_DOWN)
    page.locator(".st-key-lesson_back button").click()
    _at_the_top(page, len(PLAN) - 1, "Back")


@pytest.mark.parametrize("mode", ["normal", "present"])
def test_every_next_and_back_opens_the_step_at_its_heading(server, page, mode):
    _open(page, server, "present=1" if mode == "present" else "")
    _walk(page, lambda: page.locator(".st-key-lesson_next button").click())


def test_every_arrow_key_opens_the_step_at_its_heading(server, page):
    _open(page, server, "present=1")
    _walk(page, lambda: page.locator("body").press("ArrowRight"))


def test_present_mode_draws_the_code_large_enough(server, page):
    _open(page, server, "present=1")
    for at in range(1, len(PLAN) + 1):
        if at > 1:
            page.locator(".st-key-lesson_next_top button").click()
            expect(page.get_by_role("heading", name=_heading("en", at))).to_be_visible()
            _settle(page)
        page.locator(".st-key-lesson_setup summary").click()  # the folded set-up is code too
        _settle(page)
        blocks = page.evaluate(_CODE_PX)
        assert len(blocks) >= 2, f"step {at}: {blocks}"  # the hook lines and the set-up
        small = [block for block in blocks if block["px"] < MIN_CODE_PX]
        assert not small, f"step {at} of the plan: code under {MIN_CODE_PX} px: {small}"


def test_present_switch_is_whole_on_the_screen(server, page):
    _open(page, server, "present=1")
    for selector in (".st-key-present", ".st-key-present label"):
        box = page.evaluate(_BOX, selector)
        assert box is not None, selector
        assert box["top"] >= 0 and box["left"] >= 0, f"{selector} clipped at the top or left: {box}"
        assert box["bottom"] <= HEIGHT and box["right"] <= WIDTH, f"{selector} clipped: {box}"
        assert box["covered"] == 0, f"{selector} partly under another element (the page's header?): {box}"


def test_a_shared_inspector_link_opens_its_channel(server, page):
    """The link of issue 34 §4.10, typed as shared (not copied from this page): the inspector opens on
    channel 7 of conv1, in its field and in the picture's caption."""
    page.goto(f"{server}/?view=inspector&insp_layer=conv1&insp_channel=7")
    _settle(page)
    assert page.get_by_test_id("stException").count() == 0
    expect(page.locator(".st-key-insp_layer input[role=combobox]")).to_have_value("conv1")
    expect(page.locator(".st-key-insp_channel input")).to_have_value("7")
    expect(page.get_by_text(re.compile(r"^conv1, channel 7, upsampled from"))).to_be_visible()


# Every element inside the element of ``selector`` whose text is wider than its box (cut off, with or
# without an ellipsis): its text and both widths.
_CUT = """selector => {
  const root = document.querySelector(selector);
  if (!root) { return null; }
  return [root, ...root.querySelectorAll('*')].filter(e => e.scrollWidth > e.clientWidth + 1 && e.innerText)
    .map(e => ({text: e.innerText, scrollWidth: e.scrollWidth, clientWidth: e.clientWidth}));
}"""


@pytest.mark.parametrize(("size", "lang"), [((1280, 800), "en"), ((1024, 768), "en"), ((1024, 768), "zh")])
def test_the_open_in_the_inspector_button_shows_its_whole_label(server, browser, size, lang):
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        page = context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{server}/?view=overview&lang={lang}")
        _settle(page)
        button = page.locator(".st-key-ov_open button")
        expect(button.locator("p")).to_have_text(LANGUAGES[lang]["ov_open"])
        assert page.evaluate(_CUT, ".st-key-ov_open button") == [], f"{lang} at {size}: the label is cut off"
    finally:
        context.close()
