"""Every dotted ``vizhooks.`` name that the code's docstrings and messages, the READMEs and the manual
mention resolves to something that exists: a module, or an attribute of one. Names that moved or went
away (the compatibility names dropped in 0.1.0, modules given folders of their own) cannot linger in a
sentence a user reads, because nothing else would notice them going stale."""

from __future__ import annotations

import importlib
import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: A dotted name that starts with the package; not part of a path, an address or a longer word.
NAME = re.compile(r"(?<![\w@/.-])vizhooks((?:\.[A-Za-z_]\w*)+)")
#: File names, not Python names.
FILE_SUFFIXES = {"po", "pot", "mo", "toml", "json", "csv", "log", "txt", "md", "py", "invalid"}


def _sources() -> list[Path]:
    files = sorted((ROOT / "vizhooks").rglob("*.py")) + sorted((ROOT / "benchmarks").glob("*.py")) + [ROOT / "app.py"]
    files += sorted(ROOT.glob("README*.md"))  # not CHANGELOG.md: it names what went away, on purpose
    files += sorted((ROOT / "docs").rglob("*.md")) if (ROOT / "docs").is_dir() else []
    return files


def _is_module(name: str) -> bool:
    """Whether ``name`` is a module, found without running it (the lesson's snippet files are scripts)."""
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, AttributeError, ValueError):
        return False


def _resolves(dotted: str) -> bool:
    parts = dotted.split(".")
    if _is_module(dotted):
        return True
    for cut in range(len(parts) - 1, 0, -1):
        if not _is_module(".".join(parts[:cut])):
            continue
        obj = importlib.import_module(".".join(parts[:cut]))
        try:
            for attr in parts[cut:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return False
        return True
    return False


def _mentions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for match in NAME.finditer(line):
                dotted = "vizhooks" + match.group(1)
                if dotted.rsplit(".", 1)[-1] in FILE_SUFFIXES:
                    continue
                found.setdefault(dotted, []).append(f"{path.relative_to(ROOT)}:{number}")
    return found


def test_every_dotted_name_in_code_and_docs_exists():
    stale = {name: places[:3] for name, places in sorted(_mentions().items()) if not _resolves(name)}
    assert not stale, f"names that do not exist (rename them): {stale}"


@pytest.mark.parametrize("dotted, exists", [("vizhooks.load_model", True), ("vizhooks.page.texts.t", True),
                                             ("vizhooks.conv_layers", False), ("vizhooks.nowhere.at_all", False)])
def test_the_resolver_tells_present_from_gone(dotted, exists):
    assert _resolves(dotted) is exists


#: ``from vizhooks.x import a, b`` as a sentence shows it (an ellipsis ends the list).
FROM_IMPORT = re.compile(r"from (vizhooks(?:\.\w+)*) import ([\w, ]+)")


def _from_imports() -> list[tuple[str, list[str], str]]:
    found = []
    for path in _sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if path.suffix == ".py" and line.lstrip().startswith("from "):
                continue  # the code's own imports run with it; sentences and manual pages do not
            for match in FROM_IMPORT.finditer(line):
                names = [n.strip() for n in match.group(2).split(",") if n.strip()]
                found.append((match.group(1), names, f"{path.relative_to(ROOT)}:{number}"))
    return found


def test_every_from_import_that_docs_show_runs():
    """In sentences and the manual, ``vizhooks.explain`` resolves as an attribute (the function), yet
    ``from vizhooks.explain import`` fails: a sentence that shows an import must name a module that has
    those names."""
    broken = []
    for module, names, place in _from_imports():
        if not _is_module(module):
            broken.append(f"{place}: {module} is not a module")
            continue
        if module.startswith("vizhooks.lesson.snippets."):  # scripts: importing one runs it
            continue
        imported = importlib.import_module(module)
        broken += [f"{place}: {module} has no {name}" for name in names if not hasattr(imported, name)]
    assert not broken, "\n".join(broken)
