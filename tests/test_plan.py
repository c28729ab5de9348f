"""The lesson plan (vizhooks/lesson/steps.py): the steps a teacher picks, in the teacher's order, from
a link (``?plan=1,2,4``), a preset or ``python -m vizhooks lesson --plan``; the take-home lesson of a
plan holds exactly its steps; ``?hide=`` names the controls a link hides."""

from __future__ import annotations

import json

import pytest

from tests.helpers import ROOT
from vizhooks.lesson.steps import HIDEABLE, PRESETS, STEPS, parse_plan, plan_minutes, plan_steps, preset_plan
from vizhooks.page.texts import EN, ZH
from vizhooks.page.urlstate import parse_query

PHOTO = ROOT / "sample_images" / "chelsea.jpg"
SIZE = 64


def test_a_plan_keeps_the_teachers_order_and_reports_unknown_steps():
    assert parse_plan("4,1,gradcam, 2") == ((4, 1, 9, 2), [])
    assert parse_plan("1,1,2") == ((1, 2), [])
    assert parse_plan(f"0,{len(STEPS) + 1},nope,3") == ((3,), ["0", str(len(STEPS) + 1), "nope"])
    assert [s.id for s in plan_steps((6, 2))] == [STEPS[5].id, STEPS[1].id]
    assert plan_steps(()) == STEPS


def test_the_link_carries_plan_and_hide_and_drops_what_is_unknown():
    good, bad = parse_query({"plan": "1,2,99,4", "hide": "model,layers,wings"}, ["chelsea.jpg"])
    assert good["plan"] == (1, 2, 4) and ("plan", "99") in bad
    assert good["hide"] == ("model", "layers") and ("hide", "wings") in bad
    good, bad = parse_query({"plan": "x,y"}, ["chelsea.jpg"])
    assert "plan" not in good and ("plan", "x") in bad and ("plan", "y") in bad


def test_presets_take_the_minutes_of_their_steps_and_exist_in_both_languages():
    by_id = {step.id: step for step in STEPS}
    for key, ids in PRESETS:
        assert key in EN and key in ZH
        assert plan_minutes(plan_steps(preset_plan(key))) == sum(by_id[i].minutes for i in ids)
        assert [STEPS[n - 1].id for n in preset_plan(key)] == list(ids)
    assert dict(PRESETS)["plan_preset_all"] == tuple(by_id)
    assert "sanity" in dict(PRESETS)["plan_preset_why"] and by_id["sanity"].level == "advanced"
    for name in HIDEABLE:
        assert f"plan_hide_{name}" in EN and f"plan_hide_{name}" in ZH


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_presets_name_promises_no_minutes_and_its_option_adds_up(lang):
    """The names once said "45 minutes" over 36 (or 30, or "90" over 45) minutes of steps: a name now
    states no number, and the option says the lesson's length, the steps' sum of suggested minutes
    (from STEPS, added up here) and the minutes left, which are never negative."""
    from vizhooks.lesson.steps import LESSON_MINUTES
    from vizhooks.page.texts import set_language
    from vizhooks.page.views.lesson import preset_option

    texts = {"en": EN, "zh": ZH}[lang]
    by_id = {step.id: step for step in STEPS}
    set_language(lang)
    try:
        for key, ids in PRESETS:
            assert not any(ch.isdigit() for ch in texts[key]), texts[key]
            steps = sum(by_id[i].minutes for i in ids)
            lesson = LESSON_MINUTES[key]
            assert 0 <= lesson - steps <= lesson // 3, (key, lesson, steps)  # time to talk, not an empty half
            assert preset_option(key) == texts["plan_preset_option"].format(name=texts[key], lesson=lesson,
                                                                            minutes=steps, spare=lesson - steps)
            assert f"{lesson}" in preset_option(key) and f"{steps}" in preset_option(key)
    finally:
        set_language("en")


def _main(*argv: object) -> int:
    from vizhooks.__main__ import main

    return main([str(a) for a in argv])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_notebook_of_a_plan_holds_exactly_its_steps(tmp_path, capsys, lang):
    out = tmp_path / "lesson.ipynb"
    assert _main("lesson", "--photo", PHOTO, "--size", SIZE, "--lang", lang, "--plan", "9,1,remove",
                 "--out", out) == 0
    texts = {"en": EN, "zh": ZH}[lang]
    book = json.loads(out.read_text("utf-8"))
    headings = [c["source"] if isinstance(c["source"], str) else "".join(c["source"]) for c in book["cells"]
                if c["cell_type"] == "markdown"]
    heads = [h.splitlines()[0] for h in headings if h.startswith("## ")]
    want = [STEPS[8], STEPS[0], STEPS[10]]
    assert len(heads) == 3
    for head, step in zip(heads, want, strict=True):
        assert texts[f"lesson_{step.id}_title"] in head
    for step in STEPS:
        if step not in want:
            assert texts[f"lesson_{step.id}_q"] not in out.read_text("utf-8")


@pytest.mark.slow
def test_the_html_handout_of_a_plan_holds_exactly_its_steps(tmp_path):
    import html

    out = tmp_path / "lesson.html"
    assert _main("lesson", "--photo", PHOTO, "--size", SIZE, "--format", "html", "--plan", "2,6",
                 "--out", out) == 0
    page = out.read_text("utf-8")
    for n, step in enumerate(STEPS, 1):
        assert (html.escape(EN[f"lesson_{step.id}_q"]) in page) == (n in (2, 6))
    assert page.index(html.escape(EN["lesson_forward_title"])) < page.index(html.escape(EN["lesson_tensor_title"]))


def test_a_plan_with_no_known_step_exits_2_with_one_sentence(tmp_path, capsys):
    code = _main("lesson", "--photo", PHOTO, "--plan", "0,zz", "--out", tmp_path / "x.ipynb")
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "--plan" in err[0]


def test_the_generated_reference_lists_plan_and_hide_and_the_manual_every_hideable_name():
    from tests.test_docs import _hooks

    hooks = _hooks()
    keys = [key for key, _, _ in hooks.url_parameters()]
    assert "plan" in keys and "hide" in keys
    for page in ("class.md", "class.zh.md"):
        text = (ROOT / "docs" / page).read_text("utf-8")
        assert "?plan=" in text and all(f"`{name}`" in text for name in HIDEABLE)


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_polls_csv_holds_the_plans_polls_in_the_plans_order(monkeypatch, lang):
    """The teacher's "Download the answers (CSV)": only the plan's steps' polls, in the plan's order,
    their choices in the page's language, the class's counts (an answer given to a step outside the
    plan is not in it)."""
    import csv
    import io

    from streamlit.runtime.media_file_manager import MediaFileManager

    from tests.helpers import ok, open_page
    from tests.test_app_class import start_class
    from vizhooks.page import classes

    for name in ("VIZHOOKS_CLASS_STORE", "VIZHOOKS_TEACHER_KEY", "VIZHOOKS_MAX_CLASSES"):
        monkeypatch.delenv(name, raising=False)
    classes.reset()
    found: dict = {}  # {file name: its bytes}, as the run hands them to Streamlit
    original = MediaFileManager.add

    def keep(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        found[file_name] = data
        return original(self, data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", keep)
    deferred: list = []  # made in the run, not on the click: a file made on the click was lost to other runs
    original_deferred = MediaFileManager.add_deferred
    monkeypatch.setattr(MediaFileManager, "add_deferred", lambda self, data, mime, coords, file_name=None, **kw: (
        deferred.append(file_name), original_deferred(self, data, mime, coords, file_name, **kw))[1])
    teacher = open_page(view="lesson", plan="4,1,11", size=str(SIZE), lang=lang)
    code = start_class(teacher)
    room = classes.classroom()
    room.answer(code, "shapes", "b1", 1)
    room.answer(code, "remove", "b1", 3)
    room.answer(code, "forward", "b1", 0)  # step 2: not in the plan
    teacher.run()
    ok(teacher)
    assert f"class-{code}-polls.csv" not in deferred
    data = found[f"class-{code}-polls.csv"]
    rows = list(csv.reader(io.StringIO(data.decode("utf-8") if isinstance(data, bytes) else data)))
    texts = {"en": EN, "zh": ZH}[lang]
    expected = [["question", "choice", "answers"]]
    for step_id, answered in (("shapes", 1), ("what", None), ("remove", 3)):
        choices = [texts[k] for n in range(1, 7) if (k := f"lesson_{step_id}_c{n}") in texts]
        expected += [[step_id, choice, str(int(i == answered))] for i, choice in enumerate(choices)]
    assert rows == expected
    classes.reset()
