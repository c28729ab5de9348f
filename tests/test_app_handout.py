"""The Lesson view's "Download the lesson": a notebook and an HTML handout in the page's language, made
on the click. Streamlit runs a deferred download's callable in its own thread, without the session's
script run; the test takes the callables the page registered and runs them the same way."""

from __future__ import annotations

import threading

import nbformat
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager

from tests.helpers import ok, open_page
from vizhooks.page.texts import EN, ZH

TEXTS = {"en": EN, "zh": ZH}


@pytest.fixture
def deferred(monkeypatch):
    """{file name: callable} of every deferred download the page registers."""
    found: dict = {}
    original = MediaFileManager.add_deferred

    def keep(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        found[file_name] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", keep)
    return found


def _outside_the_run(make):
    """``make()`` in a plain thread, as Streamlit runs a deferred download (no ScriptRunContext)."""
    out: dict = {}

    def run():
        try:
            out["data"] = make()
        except BaseException as exc:  # reported in the test's thread
            out["error"] = exc

    worker = threading.Thread(target=run)
    worker.start()
    worker.join(300)
    if "error" in out:
        raise out["error"]
    return out["data"]


@pytest.mark.parametrize("lang", [pytest.param("en", marks=pytest.mark.slow), "zh"])  # one language in test-fast
def test_the_lesson_offers_the_notebook_and_the_handout_in_its_language(deferred, lang):
    texts = TEXTS[lang]
    at = open_page(view="lesson", step="3", size="64", lang=lang)
    ok(at)
    buttons = {b.proto.id.rsplit("-", 1)[-1]: b.proto for b in at.get("download_button")}
    assert buttons["lesson_take_home_ipynb"].label == texts["handout_download_ipynb"]
    assert buttons["lesson_take_home_html"].label == texts["handout_download_html"]
    assert all(buttons[k].deferred_file_id for k in ("lesson_take_home_ipynb", "lesson_take_home_html"))
    assert any(m.value == f"**{texts['handout_download']}**" for m in at.markdown)

    notebook = _outside_the_run(deferred["vizhooks_lesson_resnet18_chelsea.ipynb"])
    book = nbformat.reads(notebook.decode("utf-8"), as_version=4)
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    assert texts["lesson_prehook_title"] in text and texts["lesson_remove_a"] in text
    assert "PHOTO = Path('chelsea.jpg')" in book.cells[2].source  # the page's sample, kept inside
    page = _outside_the_run(deferred["vizhooks_lesson_resnet18_chelsea.html"]).decode("utf-8")
    assert f'lang="{"zh-CN" if lang == "zh" else "en"}"' in page and "data:image/png;base64," in page
    # the page's own run kept its language: the download did not change it
    at.run()
    ok(at)
    assert buttons["lesson_take_home_html"].label == at.get("download_button")[-1].proto.label
