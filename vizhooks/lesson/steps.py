"""The guided lesson (``?view=lesson&step=N``): its steps, in order.

Each step names the text keys it uses (``lesson_<id>_title``, ``_text``, ``_q``, ``_a`` in
the text catalogue, vizhooks/locale), the live view the page shows for it and the plain-PyTorch code it prints.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass

from vizhooks.i18n import LANGUAGES, t


@dataclass(frozen=True)
class Step:
    id: str
    #: what the page shows live: one of the page's views, or a lesson-only demonstration
    live: str
    #: how the code is made: ("view", name) for code.view_code, ("lesson", body) for code.lesson_code
    code: tuple[str, str]
    #: minutes the step takes in class, its poll included (the manual's plan is made from these)
    minutes: int = 4
    #: "core", or "advanced" for a step a first lesson may leave out
    level: str = "core"


STEPS: tuple[Step, ...] = (
    Step("what", "hello", ("lesson", "hello"), 4),
    Step("forward", "maps", ("view", "maps"), 6),
    Step("prehook", "prepost", ("lesson", "prepost"), 3),
    Step("shapes", "table", ("view", "table"), 3),
    Step("conv", "convolution", ("lesson", "conv"), 5),
    Step("tensor", "gradients", ("lesson", "grad_none"), 4),
    Step("clamp", "clamp", ("lesson", "clamp"), 4, "advanced"),
    Step("backward", "backward", ("view", "backward"), 4),
    Step("gradcam", "gradcam", ("view", "gradcam"), 5),
    Step("sanity", "sanity", ("lesson", "sanity"), 4, "advanced"),  # Spearman's rank correlation
    Step("remove", "remove", ("lesson", "remove"), 3),
    # new steps go at the end: shared links name steps by number (?step=11, ?plan=4,1,11)
    Step("patching", "patching", ("lesson", "patching"), 5, "advanced"),  # two photos, two hooks
    Step("relevance", "relevance", ("lesson", "relevance"), 4, "advanced"),  # activation x gradient
    Step("concepts", "concepts", ("lesson", "concepts"), 4, "advanced"),  # NMF of crops' activations (CRAFT)
    Step("audit", "audit", ("lesson", "audit"), 4, "advanced"),  # Clever Hans: a sticker, Grad-CAM's heat centre
)
LEVELS = ("core", "advanced")


def plan_minutes(steps: tuple[Step, ...] = STEPS) -> int:
    """The minutes a lesson of ``steps`` takes, polls included."""
    return sum(step.minutes for step in steps)


#: Ready-made lesson plans: (catalogue key of the name, step ids in order). Data: to put a step into
#: a preset, add its id to that preset's tuple (its minutes count by themselves, from the step).
PRESETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("plan_preset_kinds", ("what", "forward", "prehook", "shapes", "conv", "tensor", "clamp", "backward", "remove")),
    ("plan_preset_why", ("what", "forward", "shapes", "tensor", "backward", "gradcam", "sanity", "relevance",
                         "patching")),
    ("plan_preset_all", tuple(step.id for step in STEPS)),
)
#: The length of the lesson each preset is for (minutes; a class period). Its steps' suggested minutes
#: add up to less: the rest is for questions and discussion, and the page says how much that is. A preset
#: whose steps outgrow its lesson fails tests/test_plan.py: lengthen the lesson or drop a step.
LESSON_MINUTES: dict[str, int] = {"plan_preset_kinds": 45, "plan_preset_why": 45, "plan_preset_all": 90}
#: The link's ``?hide=`` names: the sidebar's controls a teacher's link can fix and hide for students.
HIDEABLE = ("lang", "model", "source", "size", "layers", "display", "view")


class PlanError(ValueError):
    """A plan with no step this lesson has."""


def parse_plan(text: str) -> tuple[tuple[int, ...], list[str]]:
    """A lesson plan from a link or the command line: step numbers (1-based) or step ids, comma
    separated, in the teacher's order; a step named twice is kept once.

    Returns:
        (step numbers, the parts that name no step).
    """
    ids = {step.id: n for n, step in enumerate(STEPS, 1)}
    numbers: list[int] = []
    bad: list[str] = []
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        n = int(part) if part.isascii() and part.isdigit() else ids.get(part.lower(), 0)
        if 1 <= n <= len(STEPS):
            if n not in numbers:
                numbers.append(n)
        else:
            bad.append(part)
    return tuple(numbers), bad


def preset_minutes(key: str) -> tuple[int, int, int]:
    """(the lesson's minutes, its steps' minutes, the minutes left for discussion) of preset ``key``."""
    lesson, steps = LESSON_MINUTES[key], plan_minutes(plan_steps(preset_plan(key)))
    return lesson, steps, lesson - steps


def preset_plan(key: str) -> tuple[int, ...]:
    """The step numbers of the preset named by catalogue key ``key``."""
    ids = dict(PRESETS)[key]
    return tuple(next(n for n, step in enumerate(STEPS, 1) if step.id == each) for each in ids)


def plan_steps(plan: tuple[int, ...] | list[int] = ()) -> tuple[Step, ...]:
    """The steps of ``plan`` (step numbers) in its order; an empty plan is the whole lesson."""
    return tuple(STEPS[n - 1] for n in plan) if plan else STEPS


def step_index(value: object) -> int:
    """A 1-based step number from a link or a widget, kept inside 1..len(STEPS)."""
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 1
    return min(max(n, 1), len(STEPS))


#: What the lesson can be taken home as (vizhooks/lesson/handout.py), and the media type of each.
FORMATS: dict[str, str] = {"ipynb": "application/x-ipynb+json", "html": "text/html"}


def command_arguments(p: argparse.ArgumentParser) -> None:
    """The arguments of ``python -m vizhooks lesson`` (vizhooks/__main__.py adds the
    command): declared here, without the handout's imports, so that `--help` stays quick."""
    prog = p.prog
    p.description = t("cli_lesson_description")
    p.epilog = (t("cli_examples") + "\n"
                f"  {prog} --photo sample_images/chelsea.jpg --format ipynb --out lesson.ipynb\n"
                f"  {prog} --lang zh --model resnet18 --photo cat.jpg --format html --out lesson.html")
    p.add_argument("--photo", required=True, metavar="PATH", help=t("cli_lesson_photo"))
    p.add_argument("--lang", default="en", choices=tuple(LANGUAGES),
                   help=t("cli_lesson_lang", languages=", ".join(LANGUAGES)))
    p.add_argument("--model", default="resnet18", metavar="NAME", help=t("cli_model_as_main"))
    p.add_argument("--weights", default="auto", help=t("cli_weights"))
    p.add_argument("--layers", nargs="+", metavar="NAME", help=t("cli_lesson_layers"))
    p.add_argument("--size", type=int, default=224, help=t("cli_maps_size"))
    p.add_argument("--format", default="ipynb", choices=tuple(FORMATS), help=t("cli_lesson_format"))
    p.add_argument("--plan", metavar="STEPS", help=t("cli_lesson_plan_help"))
    p.add_argument("--out", metavar="FILE", help=t("cli_lesson_out"))
