"""``python -m vizhooks`` and the ``vizhooks`` command: the library's commands (vizhooks/cli.py) and,
on top, the page's ``lesson`` (vizhooks/page/handout.py), which the command line below the page may
not import. The lesson's arguments are declared without the page's imports, so ``--help`` stays
quick and works without the ``page`` extra; running it imports the page."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from .cli import COMMANDS, Command
from .cli import main as cli_main
from .page.lesson import command_arguments


def _lesson(args: argparse.Namespace) -> int:
    try:
        from .page.handout import run_command
    except ModuleNotFoundError as exc:  # a core install: the page's packages are an extra
        raise ValueError(f"the lesson command needs the page's packages ({exc.name} is missing): "
                         "pip install 'vizhooks[page]'") from None
    return run_command(args)


LESSON = Command("lesson", "the page's lesson for one photo: a notebook or HTML", command_arguments, _lesson)
#: Every command of ``python -m vizhooks``, in the order ``--help`` lists them.
ALL_COMMANDS: tuple[Command, ...] = (*COMMANDS, LESSON)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m vizhooks ARGS``: the exit status."""
    return cli_main(argv, ALL_COMMANDS)


if __name__ == "__main__":
    raise SystemExit(main())
