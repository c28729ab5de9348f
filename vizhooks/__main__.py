"""``python -m vizhooks`` and the ``vizhooks`` command: the library's commands (vizhooks/cli.py) and,
on top, the ``lesson`` (vizhooks/lesson/handout.py), which vizhooks/cli.py may not import. The lesson's
arguments are declared without the handout's imports, so ``--help`` stays quick and works without the
``page`` extra (the notebook needs its nbformat); running it never imports Streamlit or the page."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from vizhooks.cli import COMMANDS, Command, model_line
from vizhooks.cli import main as cli_main
from vizhooks.i18n import LANGUAGES, t
from vizhooks.lesson.i18n import in_language
from vizhooks.lesson.steps import STEPS, command_arguments
from vizhooks.models.images import MAX_SIZE, MIN_SIZE, InvalidImageError, load_image
from vizhooks.models.registry import load_model
from vizhooks.render.export import write_atomic


def _lesson(args: argparse.Namespace) -> int:
    """``python -m vizhooks lesson``: write the lesson file and print its path. Here, not in the lesson's
    package: a weights path is a command-line choice, and the page never loads one.

    Raises:
        ValueError: a missing photo or a size out of range (the command line exits 2).
        InvalidImageError: the photo cannot be read.
    """
    try:
        from vizhooks.lesson.handout import LessonChoices, file_name, lesson_file
    except ModuleNotFoundError as exc:  # a core install: nbformat comes with the page's extra
        raise ValueError(t("cli_lesson_needs_page", name=exc.name)) from None
    photo = Path(args.photo)
    if not photo.is_file():
        raise ValueError(t("cli_lesson_no_photo", photo=photo) if not photo.exists()
                         else t("cli_lesson_photo_folder", photo=photo))
    if not MIN_SIZE <= args.size <= MAX_SIZE:
        raise ValueError(t("cli_from_to", flag="--size", low=MIN_SIZE, high=MAX_SIZE, value=args.size))
    plan: tuple[int, ...] = ()
    if args.plan is not None:
        from vizhooks.lesson.steps import parse_plan

        plan, unknown = parse_plan(args.plan)
        if unknown or not plan:
            raise ValueError(t("cli_lesson_plan", names=", ".join(unknown) or args.plan, steps=len(STEPS)))
    data = photo.read_bytes()
    try:
        load_image(data)
    except InvalidImageError as exc:
        raise InvalidImageError(f"{photo}: {exc}") from None
    bundle = load_model(args.model, weights=args.weights)
    print(model_line(bundle), file=sys.stderr)
    choices = LessonChoices(model=args.model, photo=data, photo_name=photo.name, size=args.size, lang=args.lang,
                            layers=tuple(args.layers or ()), plan=plan)
    out = Path(args.out or file_name(choices, args.format))
    print(write_atomic(out, lesson_file(choices, bundle, args.format)))
    return 0


LESSON = Command("lesson", "cli_lesson_summary", command_arguments, _lesson,
                 "--photo sample_images/chelsea.jpg --format html --out lesson.html")
#: Every command of ``python -m vizhooks``, in the order ``--help`` lists them.
ALL_COMMANDS: tuple[Command, ...] = (*COMMANDS, LESSON)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vizhooks ARGS``: the exit status. The lesson command speaks the lesson's language
    (``--lang``), its refusals and the model's line included, unless ``VIZHOOKS_LANG`` chooses the command
    line's: a teacher who asks for a Chinese lesson reads Chinese."""
    argv = list(sys.argv[1:] if argv is None else argv)
    lang = _lesson_language(argv)
    if lang is None:
        return cli_main(argv, ALL_COMMANDS)
    return in_language(lang, lambda: cli_main(argv, ALL_COMMANDS))


def _lesson_language(argv: list[str]) -> str | None:
    """The language a ``lesson`` command line asks for with ``--lang`` (as argparse reads it), when
    ``VIZHOOKS_LANG`` says nothing and the language is one of the catalogue's; else None."""
    if argv[:1] != [LESSON.name] or os.environ.get("VIZHOOKS_LANG"):
        return None
    peek = argparse.ArgumentParser(add_help=False, exit_on_error=False)
    peek.add_argument("--lang")
    try:
        lang = peek.parse_known_args(argv[1:])[0].lang
    except argparse.ArgumentError:  # "--lang" with no value: the command's own parser says so, in one line
        return None
    return lang if lang in LANGUAGES else None


if __name__ == "__main__":
    raise SystemExit(main())
