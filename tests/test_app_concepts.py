"""The Concepts view (``?view=concepts``) in both languages, on seeded random weights at 128 px: the cards
are vizhooks.interpret.concepts' concepts of the sample photos in its order of importance, each share
bar says its share, "Remove this concept" shows ablate's top-5, nothing runs before the toggle, and the
shared model keeps no hook."""

from __future__ import annotations

import re

import pytest

from tests.helpers import ROOT, ok, open_page
from vizhooks import load_image
from vizhooks.analysis import analyse
from vizhooks.interpret.concepts import ablate, discover
from vizhooks.models.labels import class_labels
from vizhooks.ops import hook_count
from vizhooks.page.results import CONCEPT_CROPS, CONCEPT_SEED, get_bundle
from vizhooks.page.widgets import top5

SIZE = 128
TITLES = {"en": "Concept {rank}", "zh": "概念 {rank}"}
SAMPLES = ["astronaut.jpg", "brick.png", "chelsea.jpg", "coffee.jpg", "rocket.jpg"]


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_cards_are_the_librarys_concepts_in_order_and_removal_is_ablate(lang):
    at = open_page(view="concepts", size=str(SIZE), lang=lang)
    ok(at)
    title = TITLES[lang].split("{")[0]
    assert not [s for s in at.subheader if s.value.startswith(title)]  # nothing found before the toggle
    layer = at.selectbox(key="cc_layer").value
    at.toggle(key="cc_run").set_value(True).run()
    ok(at)
    bundle = get_bundle("resnet18")
    analysis = analyse(bundle, load_image(str(ROOT / "sample_images" / "chelsea.jpg")), SIZE, [layer])
    target = int(analysis.logits.argmax())
    found = discover(bundle, [load_image(str(ROOT / "sample_images" / n)) for n in SAMPLES], layer, k=5,
                     target=target, crops_per_image=CONCEPT_CROPS, size=SIZE, seed=CONCEPT_SEED)
    order = found.order()
    # numbered 1, 2, 3 as shown (QA 2026-12-06: "1. Concept 1", "2. Concept 0" mixed the rank with the id from 0)
    titles = [s.value for s in at.subheader if s.value.startswith(title)]
    assert titles == [TITLES[lang].format(rank=r) for r in range(1, len(order) + 1)]
    shares = found.shares()
    bars = [p.text for p in at.get("progress")]
    cards = [re.search(r"\d+%", text).group() for text in bars[-len(order):]]  # after the top-5 of the photo
    assert [f"{shares[i]:.0%}" for i in order] == cards
    first = order[0]
    assert any(f"{shares[first]:.0%}" in (text or "") for text in bars)
    at.toggle(key=f"cc_remove_{first}").set_value(True).run()
    ok(at)
    names = class_labels(bundle.categories, lang)
    result = ablate(bundle, analysis.x, layer, found, first, target)
    texts = [p.text for p in at.get("progress")]
    for label, probability in top5(result.logits[None], names):
        assert f"{label} · {probability:.1%}" in texts
    assert hook_count(bundle.model) == 0


def test_nothing_runs_before_the_toggle_and_the_view_speaks_chinese(monkeypatch):
    """Opening the view costs no discovery: the intro and the toggle, switched off, and no card."""
    import vizhooks.page.views.concepts as view
    from vizhooks.page.texts import ZH

    calls = []
    monkeypatch.setattr(view, "get_concepts", lambda *a, **k: calls.append(a))
    at = open_page(view="concepts", size=str(SIZE), layers="conv1", lang="zh")
    ok(at)
    assert ZH["concepts_intro"] in [m.value for m in at.markdown]
    assert at.toggle(key="cc_run").value is False
    assert not [s for s in at.subheader if s.value[:1].isdigit()] and calls == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_upload_that_is_no_picture_is_named_and_left_out(lang):
    """QA 2026-12-06: a text file among the uploads stopped the whole discovery with a sentence that named
    no file. It is one warning naming it (the library's reason, in the page's language), and the
    discovery counts the pictures only."""
    import io

    from PIL import Image

    from vizhooks import InvalidImageError
    from vizhooks.lesson.i18n import in_language
    from vizhooks.page.errors import reason
    from vizhooks.page.texts import EN, ZH, t

    texts = EN if lang == "en" else ZH
    picture = io.BytesIO()
    Image.new("RGB", (64, 48), (200, 30, 30)).save(picture, "PNG")
    notes = b"not a picture, a note"
    with pytest.raises(InvalidImageError) as refused:
        load_image(notes)
    at = open_page(view="concepts", size=str(SIZE), layers="conv1", lang=lang)
    at.radio(key="cc_photos").set_value("upload").run()
    at.file_uploader(key="cc_upload").set_value([("notes.png", notes, "image/png"),
                                                 ("red.png", picture.getvalue(), "image/png")])
    at.run()
    ok(at)
    why = in_language(lang, lambda: reason(refused.value))
    named = [w.value for w in at.warning if ".png" in w.value]  # the other warning: the random weights' banner
    assert named == [texts["concepts_not_image"].format(file="notes.png", reason=why)]
    assert at.toggle(key="cc_run").label == in_language(lang, lambda: t("concepts_run", n=1))
    # the session keeps each upload's answer, never a traceback (its frames hold every upload's bytes)
    kept = at.session_state["_cc_checked"]
    assert sorted(v is None for v in kept.values()) == [False, True]
    assert all(v is None or v.__traceback__ is None for v in kept.values())
