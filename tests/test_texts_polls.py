"""The class poll's sentences: every lesson question has 3-4 choices in both languages, one of them marked
correct, short enough for a projector, and the Chinese free of English outside code."""

from __future__ import annotations

import re
import string

import pytest

from vizhooks.i18n import section
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts_polls import CORRECT

EN = section("polls", "en")
ZH = section("polls", "zh")

STEP_IDS = [step.id for step in STEPS]
CJK = re.compile(r"[\u4e00-\u9fff]")
CODE = re.compile(r"`[^`]*`|\{\w*\}")  # code spans and format fields are not prose
ENGLISH_WORD = re.compile(r"[A-Za-z]{3,}")
ALLOWED = ("Grad-CAM", "ReLU", "CNN", "PyTorch", "GPU", "CPU", "CSV")
UI_KEYS = ("poll_header", "poll_send", "poll_sent", "poll_changed", "poll_totals", "poll_reveal", "poll_revealed",
           "poll_csv", "poll_none_yet", "poll_your_answer", "poll_correct", "poll_wrong")


def choices(table: dict[str, str], step: str) -> list[str]:
    keys = [f"lesson_{step}_c{n}" for n in range(1, 6)]
    found = [table[k] for k in keys if k in table]
    assert keys[: len(found)] == [k for k in keys if k in table], f"{step}: choices numbered with a gap"
    return found


def english_words(text: str) -> list[str]:
    bare = CODE.sub(" ", text)
    for name in ALLOWED:
        bare = bare.replace(name, " ")
    return ENGLISH_WORD.findall(bare)


def fields(text: str) -> list[str]:
    return sorted(f for _, f, _, _ in string.Formatter().parse(text) if f is not None)


def test_same_keys_and_placeholders_in_both_languages():
    assert sorted(EN) == sorted(ZH)
    assert {k: (fields(EN[k]), fields(ZH[k])) for k in EN if fields(EN[k]) != fields(ZH[k])} == {}
    assert [k for k in UI_KEYS if k not in EN] == []
    assert fields(EN["poll_totals"]) == ["n"] and fields(EN["poll_revealed"]) == ["choice"]


@pytest.mark.parametrize("step", STEP_IDS)
def test_each_step_has_three_or_four_distinct_short_choices(step):
    for table in (EN, ZH):
        found = choices(table, step)
        assert 3 <= len(found) <= 4, (step, found)
        assert len(set(found)) == len(found), (step, found)
        assert [c for c in found if len(c) > 100 or "\n" in c] == []
    assert len(choices(EN, step)) == len(choices(ZH, step))


def test_no_choice_for_a_step_that_does_not_exist():
    steps = {re.fullmatch(r"lesson_(\w+)_c\d", k).group(1) for k in EN if re.fullmatch(r"lesson_\w+_c\d", k)}
    assert steps == set(STEP_IDS)


def test_correct_covers_every_step_inside_its_choices_and_moves_around():
    assert sorted(CORRECT) == sorted(STEP_IDS)
    assert {s: i for s, i in CORRECT.items() if not 0 <= i < len(choices(EN, s))} == {}
    assert len(set(CORRECT.values())) >= 3


@pytest.mark.parametrize("key", sorted(k for k in ZH if k.startswith(("lesson_", "poll_"))))
def test_chinese_is_chinese(key):
    assert CJK.search(ZH[key]), ZH[key]
    assert english_words(ZH[key]) == [], ZH[key]


def test_english_has_no_chinese():
    assert [k for k, v in EN.items() if CJK.search(v)] == []
