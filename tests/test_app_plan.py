"""The lesson plan on the page (AppTest): a link's ``?plan=`` shows only its steps in its order, Next
walks the plan, ``?hide=`` removes those controls, the form's presets and total time, and a class's
followers take the teacher's plan; in English and Chinese."""

from __future__ import annotations

import pytest

from tests.helpers import ok, open_page
from vizhooks.lesson.steps import STEPS, plan_minutes, plan_steps, preset_plan
from vizhooks.page import classes
from vizhooks.page.texts import EN, ZH

SMALL = {"size": "128", "view": "lesson"}


@pytest.fixture(autouse=True)
def fresh_classes(monkeypatch):
    for name in ("VIZHOOKS_CLASS_STORE", "VIZHOOKS_TEACHER_KEY", "VIZHOOKS_MAX_CLASSES"):
        monkeypatch.delenv(name, raising=False)
    classes.reset()
    yield
    classes.reset()


def heading(at) -> str:
    return at.subheader[0].value


def expected(texts: dict[str, str], n: int, total: int, number: int) -> str:
    return texts["lesson_step"].format(n=n, total=total, title=texts[f"lesson_{STEPS[number - 1].id}_title"])


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_plan_link_shows_its_steps_in_order_and_hides_controls(lang):
    texts = {"en": EN, "zh": ZH}[lang]
    at = open_page(lang=lang, plan="4,1,11", hide="model,layers", **SMALL)
    ok(at)
    assert heading(at) == expected(texts, 1, 3, 4)
    keys = {w.key for w in [*at.selectbox, *at.multiselect]}
    assert "model" not in keys and "layers" not in keys and "quick" not in keys
    assert "cmap" in keys  # not hidden
    assert any(texts["plan_hide_model"] in c.value and texts["plan_hide_layers"] in c.value for c in at.sidebar.caption)
    assert at.query_params["plan"] in ("4,1,11", ["4,1,11"]) and at.query_params["hide"] in ("model,layers",
                                                                                              ["model,layers"])
    at.button(key="lesson_back").value  # noqa: B018  (exists)
    assert at.button(key="lesson_back").disabled
    for n, number in ((2, 1), (3, 11)):
        at.button(key="lesson_next").click().run()
        ok(at)
        assert heading(at) == expected(texts, n, 3, number)
    assert at.button(key="lesson_next").disabled
    at.button(key="lesson_back").click().run()
    assert heading(at) == expected(texts, 2, 3, 1)


@pytest.mark.slow
def test_the_form_builds_a_plan_from_a_preset_and_shows_its_time():
    at = open_page(**SMALL)
    ok(at)
    assert heading(at) == expected(EN, 1, len(STEPS), 1)
    at.selectbox(key="lesson_preset").set_value("plan_preset_why").run()
    ok(at)
    plan = preset_plan("plan_preset_why")
    assert list(at.multiselect(key="lesson_plan_pick").value) == list(plan)
    total = EN["plan_total"].format(steps=len(plan), minutes=plan_minutes(plan_steps(plan)))
    assert total in [c.value for c in at.caption]
    assert at.query_params["plan"] in (",".join(map(str, plan)), [",".join(map(str, plan))])
    at.multiselect(key="lesson_plan_pick").set_value([11, 4]).run()
    ok(at)
    assert heading(at) == expected(EN, 1, 2, 11)


@pytest.mark.slow
def test_a_follower_takes_the_teachers_plan():
    from tests.test_app_class import start_class, student

    teacher = open_page(**SMALL)
    code = start_class(teacher)
    teacher.multiselect(key="lesson_plan_pick").set_value([4, 1]).run()
    ok(teacher)
    pupil = student(code, lang="zh", size="128")
    ok(pupil)
    pupil.run()
    ok(pupil)
    assert list(pupil.session_state["lesson_plan"]) == [4, 1]
    assert heading(pupil) == expected(ZH, 2, 2, 1)  # the teacher stayed on step 1, the plan's second
    teacher.button(key="lesson_back").click().run()  # Back walks the teacher's plan: to step 4
    ok(teacher)
    pupil.run()
    assert heading(pupil) == expected(ZH, 1, 2, 4)
    assert not [w for w in pupil.multiselect if w.key == "lesson_plan_pick"]  # the plan is the teacher's


@pytest.mark.slow
def test_present_mode_lists_and_walks_only_the_plan():
    at = open_page(plan="11,4", present="1", **SMALL)
    ok(at)
    pick = at.selectbox(key="lesson_pick")
    assert list(pick.options) == [f"1 · {EN['lesson_remove_title']}", f"2 · {EN['lesson_shapes_title']}"]
    assert at.button(key="lesson_back_top").disabled
    at.button(key="lesson_next_top").click().run()
    ok(at)
    assert heading(at) == expected(EN, 2, 2, 4) and at.button(key="lesson_next_top").disabled


@pytest.mark.slow
def test_hide_view_and_lang_removes_the_menu_and_the_language_switch():
    at = open_page(hide="view,lang", lang="zh", **SMALL)
    ok(at)
    assert not [w for w in at.get("button_group") if w.key in ("view", "view_group", "lang")]
    assert heading(at) == expected(ZH, 1, len(STEPS), 1)  # the link's view, still shown


def test_a_plan_link_opens_on_the_plans_first_step_in_chinese():
    """The quick check of the plan: ``?plan=4,1`` opens on step 4 as the plan's first of two."""
    at = open_page(lang="zh", plan="4,1", layers="conv1", **SMALL)
    ok(at)
    assert heading(at) == expected(ZH, 1, 2, 4)
    assert at.button(key="lesson_back").disabled
