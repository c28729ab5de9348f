"""The Lesson view's "Download the lesson": a notebook and an HTML handout in the page's language, made
on a click in a thread of their own (vizhooks.page.builds), once per state for every session that asks,
with their progress on the page; a class's follower gets the lesson of what its page shows (the
teacher's photo, model, layers and plan). The page hands the made file's bytes to Streamlit in its run
(a deferred download's file was lost to other sessions' runs in a class); the tests take those bytes."""

from __future__ import annotations

import base64
import io
import re
import threading

import nbformat
import pytest
from PIL import Image
from streamlit.runtime.media_file_manager import MediaFileManager

from tests.helpers import choose_view, ok, open_page
from vizhooks.lesson import handout
from vizhooks.lesson.steps import STEPS
from vizhooks.page import classes
from vizhooks.page.texts import EN, ZH
from vizhooks.page.views import lesson

TEXTS = {"en": EN, "zh": ZH}


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    """No class and no take-home file made before the test; builds counted by a wrapper of the
    library's lesson_file (``made``: (format, choices) of each call)."""
    for name in ("VIZHOOKS_CLASS_STORE", "VIZHOOKS_TEACHER_KEY", "VIZHOOKS_MAX_CLASSES"):
        monkeypatch.delenv(name, raising=False)
    classes.reset()
    lesson.take_homes.clear()
    yield
    assert lesson.take_homes().wait(300)  # no build outlives its test
    lesson.take_homes.clear()
    classes.reset()


@pytest.fixture
def made(monkeypatch):
    """Every call of the lesson's builder, as (format, choices); ``gate``, when set by the test, holds
    each build until it is opened."""
    calls: list = []
    gate: dict = {}
    real = handout.lesson_file

    def counting(choices, bundle, fmt, progress=handout._quiet):
        calls.append((fmt, choices))
        if "event" in gate:
            assert gate["event"].wait(60)
        return real(choices, bundle, fmt, progress)

    monkeypatch.setattr(lesson, "lesson_file", counting)
    calls_gate = calls, gate
    return calls_gate


@pytest.fixture
def offered(monkeypatch):
    """{file name: bytes} of every file the page offers for download, as its run hands them to Streamlit.
    No take-home is a deferred download (made on the click): checked when the test ends."""
    found: dict = {}
    deferred: list = []
    original, original_deferred = MediaFileManager.add, MediaFileManager.add_deferred

    def keep(self, data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        found[file_name] = data
        return original(self, data, mimetype, coordinates, file_name, is_for_static_download)

    def keep_deferred(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        deferred.append(file_name)
        return original_deferred(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add", keep)
    monkeypatch.setattr(MediaFileManager, "add_deferred", keep_deferred)
    yield found
    assert not [name for name in deferred if name and name.startswith("vizhooks_lesson_")], deferred


def make_file(at, fmt: str) -> None:
    """Click "Make ..." for ``fmt``, wait for the build, and run the page again: its download shows."""
    at.button(key=f"lesson_make_{fmt}").click().run()
    ok(at)
    assert lesson.take_homes().wait(300)
    at.run()
    ok(at)


def buttons(at) -> dict:
    return {b.proto.id.rsplit("-", 1)[-1]: b.proto for b in at.get("download_button")}


@pytest.mark.parametrize("lang", [pytest.param("en", marks=pytest.mark.slow), "zh"])  # one language in test-fast
def test_the_lesson_offers_the_notebook_and_the_handout_in_its_language(offered, made, lang):
    texts = TEXTS[lang]
    calls, _ = made
    at = open_page(view="lesson", step="3", size="128", lang=lang)
    ok(at)
    assert not calls and not [k for k in buttons(at) if k.startswith("lesson_take_home")]  # made when asked
    assert at.button(key="lesson_make_ipynb").label == texts["follow_make_ipynb"]
    assert texts["follow_first_html"] in " ".join(c.value for c in at.caption)  # how long, before the click
    for fmt in ("ipynb", "html"):
        make_file(at, fmt)
    found = buttons(at)
    assert found["lesson_take_home_ipynb"].label == texts["handout_download_ipynb"]
    assert found["lesson_take_home_html"].label == texts["handout_download_html"]
    assert all(found[k].url for k in ("lesson_take_home_ipynb", "lesson_take_home_html"))
    assert any(m.value == f"**{texts['handout_download']}**" for m in at.markdown)
    took = [c.value for c in at.caption if re.fullmatch(texts["follow_ready"].replace("{seconds:.0f}", r"[1-9]\d*"),
                                                            c.value) or c.value == texts["follow_ready_quick"]]
    assert len(took) == 2  # each file says how long it took
    assert texts["follow_ready"].format(seconds=0.2) not in [c.value for c in at.caption]  # QA: "made in 0 s"
    assert [fmt for fmt, _ in calls] == ["ipynb", "html"]

    notebook = offered["vizhooks_lesson_resnet18_chelsea.ipynb"]
    book = nbformat.reads(notebook.decode("utf-8"), as_version=4)
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    assert texts["lesson_prehook_title"] in text and texts["lesson_remove_a"] in text
    assert "PHOTO = Path('chelsea.jpg')" in book.cells[2].source  # the page's sample, kept inside
    page = offered["vizhooks_lesson_resnet18_chelsea.html"].decode("utf-8")
    assert f'lang="{"zh-CN" if lang == "zh" else "en"}"' in page and "data:image/png;base64," in page
    # the page's own run kept its language: the build and the download did not change it
    at.run()
    ok(at)
    assert found["lesson_take_home_html"].label == at.get("download_button")[-1].proto.label


def test_two_sessions_asking_for_the_same_handout_build_it_once(offered, made):
    """Single flight: a second session clicks while the first one's build runs; one build, and both get
    its file; the second session saw the progress, not a button."""
    calls, gate = made
    gate["event"] = threading.Event()
    small = {"view": "lesson", "size": "128", "lang": "zh", "plan": "1,5,4"}  # a short handout: quick to draw
    first, second = (open_page(step="1", **small) for _ in range(2))
    first.button(key="lesson_make_html").click().run()
    ok(first)
    second.button(key="lesson_make_html").click().run()  # while the first build waits at the gate
    ok(second)
    assert not [b for b in second.button if b.key == "lesson_make_html"]  # the running build shows instead
    running = [p.proto.text for p in second.get("progress")]
    part = ZH["follow_building"].split("{what}")[0]
    assert any(text.startswith(part) for text in running), running
    gate["event"].set()
    assert lesson.take_homes().wait(300)
    for at in (first, second):
        at.run()
        ok(at)
        assert buttons(at)["lesson_take_home_html"].url
    assert [fmt for fmt, _ in calls] == ["html"]  # one build for both sessions
    assert lesson.take_homes().made == 1
    # a third session on the same state finds it made: a download at once, no build
    third = open_page(step="5", **small)  # on the conv step: its default place is the same file
    ok(third)
    assert "lesson_take_home_html" in buttons(third) and len(calls) == 1


def test_another_state_is_another_file(made):
    """The key holds what decides the file: another language (or photo, plan, layers) builds again."""
    calls, _ = made
    for lang in ("en", "zh"):
        at = open_page(view="lesson", size="128", lang=lang)
        make_file(at, "ipynb")
    assert [c.lang for _, c in calls] == ["en", "zh"]


def _photo(colour: tuple[int, int, int]) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (80, 72), colour).save(out, "PNG")
    return out.getvalue()


def _embedded(book) -> bytes:
    """The photo a notebook carries in its first code cell (base64 in string lines)."""
    return base64.b64decode("".join(re.findall(r'^\s+"([A-Za-z0-9+/=]+)"$', book.cells[2].source, re.M)))


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_followers_take_home_is_the_teachers_photo_model_layers_and_plan(offered, made, lang):
    from tests.test_app_class import start_class, student

    texts = TEXTS[lang]
    calls, _ = made
    teacher = open_page(size="64")
    code = start_class(teacher)
    teacher.radio(key="source").set_value("upload").run()
    mine = _photo((30, 160, 220))
    teacher.file_uploader(key="upload").set_value(("board.png", mine, "image/png")).run()
    ok(teacher)
    choose_view(teacher, "lesson")
    teacher.multiselect(key="layers").set_value(["conv1", "layer2.0.conv1"]).run()
    teacher.multiselect(key="lesson_plan_pick").set_value([5, 2, 9]).run()
    teacher.run()  # the teacher's page publishes the plan's first step (step 1 is not in the plan)
    ok(teacher)
    pupil = student(code, lang=lang)  # its own sidebar still holds the sample chelsea.jpg
    ok(pupil)
    pupil.run()
    ok(pupil)
    assert pupil.session_state["_class_following"]
    make_file(pupil, "ipynb")
    (fmt, choices), = calls
    assert choices.photo == mine and choices.plan == (5, 2, 9) and choices.layers == ("conv1", "layer2.0.conv1")
    book = nbformat.reads(offered["vizhooks_lesson_resnet18_my_photo.ipynb"].decode("utf-8"),
                          as_version=4)
    assert _embedded(book) == mine  # the teacher's photo, byte for byte
    assert "PHOTO = Path('my_photo.jpg')" in book.cells[2].source
    headings = [c.source.splitlines()[0] for c in book.cells if c.cell_type == "markdown"
                and c.source.startswith("## ")]
    titles = [texts[f"lesson_{STEPS[s - 1].id}_title"] for s in (5, 2, 9)]
    assert headings == [f"## {texts['lesson_step'].format(n=n, total=3, title=title)}"
                        for n, title in enumerate(titles, 1)]
    setup = "\n".join(c.source for c in book.cells if c.cell_type == "code")
    assert "layer2.0.conv1" in setup and "layer1.0.conv1" not in setup  # the teacher's layers, not the tour
    # the teacher's page in the same language asks for the same file: made already (one state, one build)
    teacher.run()
    ok(teacher)
    if lang == "en":
        assert "lesson_take_home_ipynb" in buttons(teacher)
    assert len(calls) == 1
