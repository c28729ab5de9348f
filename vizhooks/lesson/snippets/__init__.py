"""The plain-PyTorch code the page shows, as real Python files: one per view or lesson step (maps.py,
gradients.py, gradcam.py, backward.py, table.py; hello.py, prepost.py, conv.py, grad_none.py, clamp.py,
sanity.py, remove.py), the set-up they all run after (setup.py), the lines several share (common.py)
and the code a value may stand for (values.py). ruff and mypy check them with the rest of the package
(pyproject.toml relaxes only what a student's code never has: annotations, imports at the top); the
builder, vizhooks/lesson/code.py, puts them together for a model, its layers and a language.

How a snippet file is written:

- **Parts.** ``# %% NAME`` starts the part NAME (``# %%`` alone: the file's one part, named as the
  file); a part runs to the next ``# %%``. What comes before the first ``# %%``, and every part named
  ``_``, is never shown: the docstring and the imports that give the checkers the names the shown code
  takes from the set-up (``model``, ``x``, ``modules``, ``to_map``) or from another part.
- **Includes.** A line ``# include: FILE.PART`` (or ``# include: FILE`` for a file's one part) is
  replaced by that part, indented as the line is: lines several snippets share are written once.
- **Comments in both languages.** ``# en: TEXT`` lines, then as many ``# zh: TEXT`` lines at once
  after them, are one comment: the page shows ``# TEXT`` of its language. A comment at the end of a
  line is ``code  # en: TEXT`` with its ``# zh: TEXT`` on the next line. Every shown comment is written
  this way (a ``# noqa`` or ``# type: ignore`` is dropped); the code is the same in both languages.
- **Fills.** ``fill.NAME`` (declared with its type in fill.py) is a value the builder gives: in code it
  becomes the value's Python source (``repr``, or code such as values.py's ``top1``; a line
  ``var = fill.NAME`` holding a list wider than :data:`WIDTH` is written one item a line), and
  ``{fill.NAME}`` in a comment or a string becomes its text.

Example:
    >>> print(render("remove", "en", layer="conv1").splitlines()[4])
    layer = modules['conv1']
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

FOLDER = Path(__file__).parent
#: The widest line the page shows: a code box at a projector's width holds 88 columns.
WIDTH = 88

_PART = re.compile(r"^# %%(?: (\w+))?$")
_INCLUDE = re.compile(r"^(\s*)# include: (\w+)(?:\.(\w+))?$")
_FULL = re.compile(r"^(\s*)# (en|zh): (.*)$")
_CHECKERS = re.compile(r"\s*# (?:noqa|type: ignore)\b.*$")
_FILL = re.compile(r"\bfill\.(\w+)\b")
_FILL_TEXT = re.compile(r"\{fill\.(\w+)\}")
_ASSIGN = re.compile(r"^(\s*)(\w+) = fill\.(\w+)$")


class SnippetError(ValueError):
    """A snippet file that breaks the conventions above (a bug in the package, not a user's input)."""


@dataclass(frozen=True)
class Source:
    """Code a fill stands for, written as it is (``int(logits[0].argmax())``, ``3, 4``)."""

    text: str


@functools.cache
def parts(file: str) -> dict[str, str]:
    """The shown parts of snippets/``file``.py, by name, as written (includes, comments and fills left in)."""
    path = FOLDER / f"{file}.py"
    if not path.is_file():
        raise SnippetError(f"there is no snippet file {path.name} in {FOLDER}.")
    found: dict[str, str] = {}
    name: str | None = None
    for line in path.read_text(encoding="utf-8").splitlines(keepends=True):
        marker = _PART.match(line.rstrip("\n"))
        if marker:
            name = marker.group(1) or file
            if name != "_":
                found.setdefault(name, "")
        elif name is not None and name != "_":
            found[name] += line
    return found


def part(name: str) -> str:
    """Part ``FILE.PART`` (or ``FILE``: its one part) with every include put in, both languages kept."""
    file, _, key = name.partition(".")
    text = parts(file).get(key or file)
    if text is None:
        raise SnippetError(f"snippets/{file}.py has no part {key or file!r}.")
    out = []
    for line in text.splitlines(keepends=True):
        include = _INCLUDE.match(line.rstrip("\n"))
        if include:
            indent, target = include.group(1), ".".join(p for p in include.group(2, 3) if p)
            out += [indent + inner if inner.strip() else inner for inner in part(target).splitlines(keepends=True)]
        else:
            out.append(line)
    return "".join(out)


def localise(text: str, lang: str) -> str:
    """``text`` with its comments in ``lang`` ("en" or "zh") and the checkers' comments dropped.

    Raises:
        SnippetError: an ``en`` comment without as many ``zh`` lines right after it, or a comment
            written in neither language.
    """
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip("\n")
        end = "\n" if lines[i].endswith("\n") else ""
        full = _FULL.match(line)
        if full:
            block = _block(lines, i)
            out += [f"{indent}# {words}\n" for indent, words in block[lang]]
            i += len(block["en"]) + len(block["zh"])
            continue
        code, comment = split_comment(_CHECKERS.sub("", line))
        if comment is None:
            out.append(code + end)
            i += 1
            continue
        if not comment.startswith("en: "):
            raise SnippetError(f"a shown comment must say en: (then zh:), not {line.strip()!r}.")
        zh = _FULL.match(lines[i + 1].rstrip("\n")) if i + 1 < len(lines) else None
        if not zh or zh.group(2) != "zh":
            raise SnippetError(f"{line.strip()!r} needs its '# zh: ...' on the next line.")
        words = comment[4:] if lang == "en" else zh.group(3)
        out.append(f"{code.rstrip()}  # {words}" + ("\n" if lines[i + 1].endswith("\n") else ""))
        i += 2
    return "".join(out)


def _block(lines: list[str], start: int) -> dict[str, list[tuple[str, str]]]:
    """The ``# en:`` lines from ``start`` and the ``# zh:`` lines after them: (indent, words) each."""
    block: dict[str, list[tuple[str, str]]] = {"en": [], "zh": []}
    i = start
    for lang in ("en", "zh"):
        while i < len(lines) and (m := _FULL.match(lines[i].rstrip("\n"))) and m.group(2) == lang:
            block[lang].append((m.group(1), m.group(3)))
            i += 1
    if not block["en"] or len(block["en"]) != len(block["zh"]):
        raise SnippetError(f"comment at {lines[start].strip()!r}: each '# en:' block needs as many '# zh:' "
                           "lines right after it.")
    return block


def split_comment(line: str) -> tuple[str, str | None]:
    """(code, comment text) when the line has a ``#`` comment outside quotes, else (line, None)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#":
            return line[:i], line[i + 1:].strip()
    return line, None


def as_text(value: object) -> str:
    """A fill as text in a comment or a string: a :class:`Source` as written, anything else as ``str``."""
    return value.text if isinstance(value, Source) else str(value)


def source(value: object) -> str:
    """A fill's Python source: a :class:`Source` as written, anything else as ``repr``."""
    return value.text if isinstance(value, Source) else repr(value)


def assign(var: str, values: list[object]) -> str:
    """``var = [...]`` as a line, or one value a line when that is wider than :data:`WIDTH`."""
    line = f"{var} = {list(values)!r}"
    if len(line) <= WIDTH:
        return line + "\n"
    return f"{var} = [\n" + "".join(f"    {v!r},\n" for v in values) + "]\n"


def fill_in(text: str, values: Mapping[str, object]) -> str:
    """``text`` with every ``fill.NAME`` and ``{fill.NAME}`` replaced by ``values[NAME]``.

    Raises:
        SnippetError: a fill the values do not give.
    """

    def get(m: re.Match[str]) -> object:
        if m.group(1) not in values:
            raise SnippetError(f"the snippet needs fill.{m.group(1)}; give {m.group(1)}=...")
        return values[m.group(1)]

    out = []
    for line in text.splitlines(keepends=True):
        whole = _ASSIGN.match(line.rstrip("\n"))
        if whole and isinstance(values.get(whole.group(3)), list):
            body = assign(whole.group(2), values[whole.group(3)])  # type: ignore[arg-type]
            out.append("".join(whole.group(1) + row for row in body.splitlines(keepends=True)))
            continue
        line = _FILL_TEXT.sub(lambda m: as_text(get(m)), line)
        out.append(_FILL.sub(lambda m: source(get(m)), line))
    return "".join(out)


def render(name: str, lang: str, **values: object) -> str:
    """Part ``name`` (``FILE.PART`` or ``FILE``) as the page shows it: includes put in, comments in
    ``lang``, ``values`` filled in."""
    return fill_in(localise(part(name), lang), values)
