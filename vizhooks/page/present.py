"""Present mode, for a projector (``?present=1``, kept in the link and followed by a class): the
sidebar folded away (its choices one click off), larger type, code that wraps instead of running off
the screen, and the lesson's own Back / Next in place of the view menu, with the arrow keys.

Also what every lesson reader gets: each step change brings the new step's heading to the top.
"""

from __future__ import annotations

import json
from typing import Any

import streamlit as st

from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import language, t

#: The view menu's container (vizhooks.page.menu): present mode hides it while the lesson takes the screen.
MENU_KEY = "view_menu"
#: Type sizes on a projector: body text and code that the back row can read.
BODY_PX, CODE_PX = 22, 18

_STYLE = f"""
<style>
/* present mode: larger type, the main area as wide as the screen, code wrapped inside its box */
[data-testid="stMain"] .stMarkdown p, [data-testid="stMain"] .stMarkdown li,
[data-testid="stMain"] [data-testid="stCaptionContainer"],
[data-testid="stMain"] label p, [data-testid="stMain"] [data-testid="stExpander"] summary p,
[data-testid="stMain"] .stButton button p, [data-testid="stMain"] .stDownloadButton button p,
[data-testid="stMain"] .stSelectbox input {{ font-size: {BODY_PX}px !important; line-height: 1.45; }}
/* the view menu and the top-5 read from the back row too */
[data-testid="stMain"] .st-key-{MENU_KEY} button p,
[data-testid="stMain"] .st-key-top5 [data-testid="stProgress"] p {{ font-size: {BODY_PX - 2}px !important; }}
[data-testid="stMain"] h3 {{ font-size: {BODY_PX * 1.6:.0f}px !important; }}
/* a step's table (vizhooks.page.views.lesson.step_table): a plain table, in the body's type */
[data-testid="stMain"] [data-testid="stTable"] :is(th, td) {{ font-size: {BODY_PX}px !important;
    padding: 0.3rem 1rem !important; }}
[data-testid="stMain"] pre, [data-testid="stMain"] pre code, [data-testid="stMain"] code {{
    font-size: {CODE_PX}px !important; white-space: pre-wrap !important; overflow-wrap: anywhere; }}
/* the step first: no gap for this style and the scripts, no rule between the hidden view menu and the step */
[data-testid="stMain"] [data-testid="stElementContainer"]:has(> [data-testid="stHtml"]
    > :is(style, script):first-child),
[data-testid="stMain"] .stLayoutWrapper:has(> .st-key-{MENU_KEY})
    + [data-testid="stElementContainer"]:has(hr) {{ display: none; }}
[data-testid="stMainBlockContainer"] {{ max-width: 100%; padding-left: 2rem; padding-right: 2rem;
    padding-top: 4rem; }}  /* under the page's fixed 3.75rem header, not behind it: the Present switch whole */
</style>
"""

#: In both modes: the open group and view of the menu stand out, on a projector too.
_MENU_STYLE = f"""
<style>
.st-key-{MENU_KEY} button[aria-checked="true"] {{
    background-color: #2f6f9f !important; border-color: #2f6f9f !important; }}
.st-key-{MENU_KEY} button[aria-checked="true"] :is(p, span) {{ color: #ffffff !important; font-weight: 600; }}
</style>
"""

#: Not in English: Streamlit's own hint under a box being typed in ("Press Enter to apply"; a number box out of
#: its range shows it in red) is English in every language; the box's red outline still says "not taken".
_ENGLISH_HINTS_HIDDEN = """
<style>
[data-testid="InputInstructions"] { display: none !important; }
</style>
"""

#: Outside present mode: a compact head (less room above it, a smaller title) and no gap for a style.
_COMPACT = """
<style>
[data-testid="stMainBlockContainer"] { padding-top: 2.75rem; padding-left: 2rem; padding-right: 2rem; }
[data-testid="stMainBlockContainer"] > [data-testid="stVerticalBlock"] { row-gap: 0.75rem; }
[data-testid="stMain"] h1 { font-size: 1.6rem !important; padding: 0 !important; }
[data-testid="stMain"] h3 { padding-top: 0.25rem !important; padding-bottom: 0.25rem !important; }
.st-key-top5 h3 { font-size: 1.05rem !important; padding: 0 0 0.25rem !important; }
.st-key-top5 [data-testid="stHeading"] [data-testid="stMarkdownContainer"] { margin-bottom: 0 !important; }
.st-key-top5 [data-testid="stProgress"] { display: flex; align-items: center; gap: 0.75rem; }
.st-key-top5 [data-testid="stProgress"] > :first-child { flex: 0 0 58%; }
.st-key-top5 [data-testid="stProgress"] > :last-child { flex: 1 1 auto; }
[data-testid="stMain"] [data-testid="stElementContainer"]:has(> [data-testid="stHtml"] > style:first-child) {
    display: none; }
</style>
"""

# Runs once per page: arrows move between lesson steps (by pressing the page's own buttons), except
# while the reader types in a field.
_KEYS = """
<script>
(function () {
  const doc = window.parent ? window.parent.document : document;
  if (doc.__vizhooksArrows) { return; }
  doc.__vizhooksArrows = true;
  doc.addEventListener("keydown", function (event) {
    const tag = (event.target && event.target.tagName || "").toLowerCase();
    if (tag === "input" || tag === "textarea" || event.altKey || event.ctrlKey || event.metaKey) { return; }
    const key = event.key === "ArrowRight" ? "lesson_next" : event.key === "ArrowLeft" ? "lesson_back" : null;
    if (!key || !doc.querySelector(".vizhooks-present")) { return; }
    const button = doc.querySelector(".st-key-" + key + " button");
    if (button && !button.disabled) { event.preventDefault(); button.click(); }
  });
})();
</script>
"""

# Brings the new step's heading (its anchor, STEP_ANCHOR) to the top of the main area, under the
# page's own fixed header; in present mode the step's Back / Next row above it too. It waits for that
# heading (the run draws it after this script), then keeps it there while the run finishes and the
# previous step's leftovers are removed (the heading moves as pictures above it grow or vanish): it
# stops once the heading has stayed in place for half a second after the run, after 30 s, or as soon
# as the reader scrolls (a wheel, a touch, a press on the scroll bar or a scrolling key; the browser's
# own clamping of the scroll position when the page gets shorter is not the reader). TURN makes each
# step change a new script: Streamlit runs an st.html script again only when its (sanitised) body
# changes, and an HTML comment is sanitised away, so a body that differed only in one reran nothing.
_SCROLL = """
<script>
(function () {
  const turn = TURN;
  const doc = document;
  const main = doc.querySelector('[data-testid="stMain"]');
  if (!main) { return; }
  let reader = false;
  const scrolling = new Set(["ArrowDown", "ArrowUp", "PageDown", "PageUp", "Home", "End", " "]);
  const mark = function (event) {
    if (event.type !== "keydown" || scrolling.has(event.key)) { reader = true; }
  };
  const events = ["wheel", "touchmove", "mousedown", "keydown"];
  events.forEach(function (name) { doc.addEventListener(name, mark, {capture: true, passive: true}); });
  const done = function () {
    events.forEach(function (name) { doc.removeEventListener(name, mark, {capture: true}); });
  };
  // The step's heading, found by its text: React reuses the previous step's heading element, whose
  // id (Streamlit's anchor) can keep the old step's value for a while or for good.
  const words = function (e) { return e.textContent.replace(/\\s+/g, " ").trim(); };
  const find = function () {
    const texts = main.querySelectorAll('[data-testid="stHeading"] [data-heading-text]');
    const shown = Array.from(texts).find(function (e) { return words(e) === HEADING; });
    return shown ? shown.closest("h1, h2, h3, h4, h5, h6") || shown : doc.getElementById("ANCHOR");
  };
  // how far the heading (or the row above it) is from where it belongs; null while it is not drawn
  const offset = function () {
    const heading = find();
    if (!heading) { return null; }
    const first = doc.querySelector(".st-key-NAV_KEY") || heading;
    const header = doc.querySelector('[data-testid="stHeader"]');
    const under = Math.max(header ? header.getBoundingClientRect().bottom : 0, main.getBoundingClientRect().top);
    return first.getBoundingClientRect().top - under - 8;
  };
  let tries = 0, still = 0;
  const tick = function () {
    if (reader || ++tries > 600) { done(); return; }  // the reader scrolled, or 30 s passed
    const off = offset();
    if (off !== null) {
      const app = doc.querySelector('[data-testid="stApp"]');
      const running = app && app.getAttribute("data-test-script-state") === "running";
      const room = main.scrollHeight - main.clientHeight;
      // in place, or as far down as the page goes
      const placed = Math.abs(off) < 2 || (off > 0 && main.scrollTop >= room - 1);
      if (!placed) { main.scrollTo({top: Math.max(0, main.scrollTop + off)}); }
      still = placed && !running ? still + 1 : 0;
      if (still >= 10) { done(); return; }
    }
    setTimeout(tick, 50);
  };
  tick();
  void turn;
})();
</script>
"""

#: The container of present mode's Back / steps / Next row above the step (vizhooks.page.views.lesson).
NAV_KEY = "lesson_nav"


def step_anchor(step: int) -> str:
    """The HTML id of lesson step ``step``'s heading, where a step change scrolls to."""
    return f"lesson-step-{step}"


def chart_for_screen(chart: Any) -> Any:
    """An Altair chart as the screen needs it: in present mode its axes' labels and titles in the body's type
    (Vega draws 10-11 px ones, which the back row cannot read), the layer names whole."""
    if not present_on():
        return chart
    return chart.configure_axis(labelFontSize=BODY_PX - 4, titleFontSize=BODY_PX - 2, labelLimit=400)


def present_on() -> bool:
    return bool(st.session_state.get("present", False))


def present_toggle(slot: object = st) -> None:
    """The "Present" switch (the session key ``present``, kept in the link)."""
    slot.toggle(t("present"), key="present", help=t("present_help"))  # type: ignore[attr-defined]


def present_style() -> None:
    """Larger type and wrapped code, and a marker the arrow keys look for; only in present mode."""
    if present_on():
        st.html(_STYLE + '<div class="vizhooks-present"></div>')
        st.html(_KEYS, unsafe_allow_javascript=True)


def scroll_script(turn: int, step: int, heading: str) -> str:
    """The script that brings lesson step ``step``'s heading, whose text is ``heading``, to the top
    (``turn`` tells one step change's script from the next, so Streamlit runs each)."""
    text = json.dumps(" ".join(heading.split())).replace("<", "\\u003c")  # a JS string, no </script>
    return (_SCROLL.replace("TURN", str(turn)).replace("ANCHOR", step_anchor(step)).replace("NAV_KEY", NAV_KEY)
            .replace("HEADING", text))


def scroll_to_step(step: int, heading: str) -> None:
    """When the lesson step changed since this session's last run (Next, Back, the arrow keys, the
    step list, the teacher's move), bring the new step's heading to the top: the reader lands on it,
    not where the previous step had been scrolled to. ``heading`` is the text the lesson view gives
    that heading (its anchor is ``step_anchor(step)``)."""
    if st.session_state.get("_shown_step") != step:
        if st.session_state.get("_shown_step") is not None:
            turn = st.session_state["_scroll_turn"] = st.session_state.get("_scroll_turn", 0) + 1
            st.html(scroll_script(turn, step, heading), unsafe_allow_javascript=True)
        st.session_state["_shown_step"] = step


def _start_lesson() -> None:
    st.session_state["view"] = "lesson"
    st.session_state["lesson_step"] = 1


def header() -> None:
    """The page's head: title and subtitle (not in present mode, where the step comes first) and the
    "Present" switch. Compact: with the view
    menu and the photo under it, the first feature-map grid still fits a 1024 x 768 screen."""
    menu = _MENU_STYLE + ("" if language() == "en" else _ENGLISH_HINTS_HIDDEN)
    if present_on():
        _, switch = st.columns([5, 1])
        present_toggle(switch)
        present_style()
        st.html(menu)
        return
    st.html(menu + _COMPACT)
    title, switch = st.columns([4, 1], vertical_alignment="center")
    title.title(t("title"))
    present_toggle(switch)
    st.caption(t("subtitle"))


def lesson_button() -> None:
    """"Start the lesson", a visible way into the lesson for a first visitor (beside the menu's groups)."""
    if st.session_state.get("view") != "lesson" and st.session_state.get("source") not in ("video", "live"):
        st.button(t("start_lesson"), key="start_lesson", icon=":material/school:", on_click=_start_lesson,
                  help=t("start_lesson_help", n=len(STEPS)))


def lesson_takes_the_screen(view: str) -> bool:
    """In present mode the lesson's own Back / Next and step list replace the view menu: it is hidden
    (not removed, so the view keeps its state). True when that is the case."""
    if present_on() and view == "lesson":
        st.html(f"<style>.st-key-{MENU_KEY} {{ display: none !important; }}</style>")
        return True
    return False
