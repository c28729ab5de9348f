"""繁體中文 (``zh-Hant``), generated from the reviewed 简体中文: ``python -m vizhooks.hant``.

No Traditional Chinese text is written by hand. This module converts every Chinese text the project
shows with OpenCC's ``s2twp`` (Simplified to Taiwan's characters and words) and then applies the
reviewed overrides of ``vizhooks/locale/zh_Hant/overrides.txt`` (terms a Taiwan classroom says
differently, and ``key:KEY`` entries such as the language's own name). It writes three files, all
committed:

- ``vizhooks/locale/zh_Hant/LC_MESSAGES/vizhooks.po`` from ``vizhooks/locale/zh/LC_MESSAGES/vizhooks.po``
  (the page, the command line, the lesson and the handout texts);
- ``vizhooks/models/labels_zh_Hant.txt`` from ``vizhooks/models/labels_zh.txt`` (ImageNet class names);
- ``vizhooks/lesson/snippets/comments_zh_Hant.json`` from the ``# zh:`` comments of the lesson's
  snippets (Simplified comment -> Traditional comment; :func:`vizhooks.lesson.snippets.localise` reads it).

Re-run it after any change to the Chinese texts (new keys merged into ``zh.po``, a reviewed wording,
a snippet comment): ``tests/test_hant.py`` fails while the committed files differ from what it makes.
OpenCC (``opencc==1.4.2``) is a development dependency only: the page and the lesson read the
generated files.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from vizhooks.i18n import DOMAIN, LOCALE_DIR, po_path

PACKAGE = Path(__file__).parent
#: The one hand-written file of zh-Hant: the reviewed overrides.
OVERRIDES = LOCALE_DIR / "zh_Hant" / "overrides.txt"
LABELS_ZH = PACKAGE / "models" / "labels_zh.txt"
LABELS_HANT = PACKAGE / "models" / "labels_zh_Hant.txt"
SNIPPETS = PACKAGE / "lesson" / "snippets"
COMMENTS_HANT = SNIPPETS / "comments_zh_Hant.json"
#: The command that rewrites the generated files (tests name it when they find them stale).
COMMAND = "python -m vizhooks.hant"
#: OpenCC's configuration: Simplified -> Traditional with Taiwan's phrases (程序 -> 程式, 视频 -> 影片).
CONFIG = "s2twp"

_ZH_COMMENT = re.compile(r"^\s*# zh: (.*)$", re.MULTILINE)
_LINE = re.compile(r"^(key:(\w+)|\S+) -> (.+)$")
#: Private-use characters stand in for overridden terms while OpenCC converts (it leaves them alone).
_FIRST_PLACEHOLDER = 0xE000


@dataclass(frozen=True)
class Overrides:
    """The reviewed overrides: Simplified term -> Traditional text, and catalogue key -> text."""

    terms: dict[str, str]
    keys: dict[str, str]


def read_overrides(path: Path = OVERRIDES) -> Overrides:
    """The overrides file: ``简体 -> 繁體`` and ``key:KEY -> TEXT`` lines; ``#`` starts a comment line.

    Raises:
        ValueError: a line in neither form.
    """
    terms: dict[str, str] = {}
    keys: dict[str, str] = {}
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        found = _LINE.match(line)
        if not found:
            raise ValueError(f"{path}:{number}: write '简体 -> 繁體' or 'key:KEY -> TEXT', not {line!r}.")
        if found.group(2):
            keys[found.group(2)] = found.group(3).strip()
        else:
            terms[found.group(1)] = found.group(3).strip()
    return Overrides(terms, keys)


def converter(overrides: Overrides | None = None) -> Callable[[str], str]:
    """A function that turns one Simplified text into zh-Hant: s2twp, the overridden terms kept out of
    OpenCC's way and put in as reviewed (longest term first)."""
    import opencc  # here: a development dependency, never needed to show the page

    cc = opencc.OpenCC(CONFIG)
    terms = (overrides or read_overrides()).terms
    ordered = sorted(terms, key=len, reverse=True)
    if len(ordered) > 0x1900:
        raise ValueError("too many overrides for the private-use characters that stand in for them.")
    pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
    stand_in = {term: chr(_FIRST_PLACEHOLDER + i) for i, term in enumerate(ordered)}
    back = {chr(_FIRST_PLACEHOLDER + i): terms[term] for i, term in enumerate(ordered)}

    def convert(text: str) -> str:
        if pattern is None:
            return str(cc.convert(text))
        converted = str(cc.convert(pattern.sub(lambda m: stand_in[m.group(0)], text)))
        return "".join(back.get(ch, ch) for ch in converted)

    return convert


def catalogue_text(convert: Callable[[str], str], overrides: Overrides) -> str:
    """The zh-Hant catalogue as it should be committed: zh.po's entries, each text converted."""
    from babel.messages.pofile import read_po, write_po

    with po_path("zh").open("rb") as fh:
        catalog = read_po(fh, locale="zh", domain=DOMAIN)
    catalog.locale = "zh_Hant"
    catalog.language_team = "vizhooks <zh_Hant>"
    catalog.header_comment = (
        "# vizhooks texts in 繁體中文, GENERATED from zh/LC_MESSAGES/vizhooks.po by `python -m vizhooks.hant`\n"
        "# (OpenCC s2twp and the reviewed vizhooks/locale/zh_Hant/overrides.txt). Do not edit: change the\n"
        "# 简体中文 catalogue or the overrides, then run the command again.")
    for message in catalog:
        if message.id and isinstance(message.id, str) and isinstance(message.string, str):
            message.string = overrides.keys.get(message.id) or (convert(message.string) if message.string else "")
        elif message.id and isinstance(message.string, tuple):  # a plural entry (vizhooks.i18n.nt): each form
            message.string = tuple(convert(form) if form else "" for form in message.string)
    out = io.BytesIO()
    write_po(out, catalog, width=100, omit_header=False)
    return out.getvalue().decode("utf-8")


def labels_text(convert: Callable[[str], str]) -> str:
    """The zh-Hant ImageNet class names: labels_zh.txt converted line by line."""
    lines = LABELS_ZH.read_text(encoding="utf-8").splitlines()
    return "".join(convert(line) + "\n" for line in lines)


def snippet_comments() -> list[str]:
    """Every ``# zh:`` comment text of the lesson's snippets, sorted, each once."""
    found = {m.group(1) for path in sorted(SNIPPETS.glob("*.py"))
             for m in _ZH_COMMENT.finditer(path.read_text(encoding="utf-8"))}
    return sorted(found)


def comments_text(convert: Callable[[str], str]) -> str:
    """The snippets' comments as JSON: Simplified -> zh-Hant."""
    return json.dumps({text: convert(text) for text in snippet_comments()}, ensure_ascii=False, indent=1,
                      sort_keys=True) + "\n"


def generated() -> dict[Path, str]:
    """Each generated file and the text it should hold."""
    overrides = read_overrides()
    convert = converter(overrides)
    return {po_path("zh-Hant"): catalogue_text(convert, overrides), LABELS_HANT: labels_text(convert),
            COMMENTS_HANT: comments_text(convert)}


def stale() -> list[Path]:
    """The generated files whose committed text differs from what :func:`generated` makes."""
    return [path for path, text in generated().items()
            if not path.is_file() or path.read_text(encoding="utf-8") != text]


def write() -> list[Path]:
    """Write every generated file (with ``\\n`` line ends); returns their paths."""
    made = generated()
    for path, text in made.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    return list(made)


if __name__ == "__main__":
    for written in write():
        print(written)
