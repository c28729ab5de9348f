"""MkDocs hook: the reference page, written from the code each time the manual is built.

docs/reference.md and docs/reference.zh.md hold the marker ``<!-- vizhooks-reference -->``; at build time
it becomes four tables read off the code itself, so the page cannot fall behind it:

- every ``?view=`` value (``views()``: name, group, label, the link keys of its own settings);
- every URL parameter (``vizhooks.page.urlstate.KEYS``, ``VIEW_KEYS``, ``DEFAULTS``);
- every command and option of ``python -m vizhooks`` (its argparse parser, walked);
- every environment variable the code reads (``os.environ`` / ``os.getenv`` calls found with ``ast``).

``views()`` is the one place that knows where views are declared; when views become modules with a
registry, only it changes. tests/test_docs.py checks the page against the code by other means.
"""

from __future__ import annotations

import argparse
import ast
import functools
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `mkdocs build` from the repository root imports the package beside it
    sys.path.insert(0, str(ROOT))

MARKER = "<!-- vizhooks-reference -->"
#: The code whose environment reads are listed: the library and the page, then what only tests and
#: benchmarks read (shown apart: an operator never sets those).
CODE = {"vizhooks": ("app.py", "vizhooks"), "tests": ("tests", "benchmarks")}


@dataclass(frozen=True)
class View:
    name: str
    group: str
    label: str
    keys: tuple[str, ...]


@dataclass(frozen=True)
class Option:
    flags: str
    default: str
    choices: str
    help: str


@dataclass(frozen=True)
class Command:
    name: str
    summary: str
    options: tuple[Option, ...]


@dataclass(frozen=True)
class EnvVar:
    name: str
    default: str
    read_in: tuple[str, ...]
    group: str


# ------------------------------------------------------------------------------------------------
# what the code declares


def views(lang: str = "en") -> list[View]:
    """Every ``?view=`` value in menu order: (name, menu group, label in ``lang``, its own link keys),
    read from the page's view registry (each view module declares itself: vizhooks.page.views)."""
    from vizhooks.page.texts import LANGUAGES
    from vizhooks.page.views import REGISTRY

    texts = LANGUAGES[lang]
    english = LANGUAGES["en"]
    return [View(v.name, texts.get(f"group_{v.group}") or english[f"group_{v.group}"],
                 texts.get(v.label) or english[v.label], tuple(v.keys)) for v in REGISTRY]


def url_parameters() -> list[tuple[str, str, tuple[str, ...]]]:
    """Every link parameter in link order: (key, default or "", the views that keep it; () for all)."""
    from vizhooks.page.urlstate import DEFAULTS, KEYS, VIEW_KEYS

    return [(key, "" if key not in DEFAULTS else str(DEFAULTS[key]),
             tuple(view for view, keys in VIEW_KEYS.items() if key in keys)) for key in KEYS]


def _options(parser: argparse.ArgumentParser) -> tuple[Option, ...]:
    found = []
    for action in parser._actions:  # argparse keeps its actions here; there is no public list
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        if action.option_strings:
            metavar = "" if action.nargs == 0 else f" {action.metavar or action.dest.upper()}"
            flags = ", ".join(action.option_strings) + metavar + (" ..." if action.nargs in ("+", "*") else "")
        else:
            flags = action.metavar or action.dest.upper()
        default = action.default
        # `is`, not `in`: a default of 0 (--seed) is shown; False (a flag) and None (no default) are not
        shown = "" if default is None or default is False or default == argparse.SUPPRESS or action.nargs == 0 \
            else " ".join(map(str, default)) if isinstance(default, list | tuple) else str(default)
        choices = ", ".join(map(str, action.choices)) if action.choices else ""
        found.append(Option(flags, shown, choices, " ".join((action.help or "").split())))
    return tuple(found)


def cli_commands() -> list[Command]:
    """``python -m vizhooks`` and each subcommand, walked from the parser ``--help`` prints."""
    from vizhooks.__main__ import ALL_COMMANDS
    from vizhooks.cli import build_parser

    top = build_parser(ALL_COMMANDS)
    commands = [Command("", top.description.splitlines()[0] if top.description else "", _options(top))]
    for action in top._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {c.dest: c.help for c in action._choices_actions}
            commands += [Command(name, summaries.get(name) or "", _options(sub))
                         for name, sub in action.choices.items()]
    return commands


def _call_name(node: ast.AST) -> str:
    """``os.environ.get`` for the expression ``os.environ.get`` (dotted names only)."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
    return ".".join(reversed(parts))


_READS = {"os.environ.get", "os.getenv", "os.environ.setdefault", "os.environ.pop", "environ.get", "getenv"}


def _env_reads(path: Path) -> list[tuple[str, str]]:
    """(name, default) of every environment read in one file: a literal name, a module constant, or a
    parameter of a small helper whose callers pass the name (``_env_int("VIZHOOKS_MAX_CLASSES", 20)``)."""
    source = path.read_text("utf-8")
    if "environ" not in source and "getenv" not in source:  # no read here: most files, and parsing is the cost
        return []
    tree = ast.parse(source, str(path))
    constants = {t.id: n.value.value for n in tree.body
                 if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)
                 for t in n.targets if isinstance(t, ast.Name)}
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def text(node: ast.AST | None) -> str | None:
        if isinstance(node, ast.Constant):
            return None if node.value is None else str(node.value)
        if isinstance(node, ast.Name):
            return constants.get(node.id)
        return None

    def helper_calls(param: str, node: ast.AST) -> list[tuple[str, str]]:
        func = node
        while func in parents and not isinstance(func, ast.FunctionDef):
            func = parents[func]
        if not isinstance(func, ast.FunctionDef):
            return []
        names = [a.arg for a in func.args.args]
        if param not in names:
            return []
        i = names.index(param)
        found = []
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and _call_name(call.func) == func.name and len(call.args) > i:
                name = text(call.args[i])
                if name:
                    default = text(call.args[i + 1]) if len(call.args) > i + 1 else None
                    found.append((name, default or ""))
        return found

    reads = []
    for node in ast.walk(tree):
        arg = default = None
        if isinstance(node, ast.Call) and _call_name(node.func) in _READS and node.args:
            arg = node.args[0]
            default = node.args[1] if len(node.args) > 1 else None
        elif isinstance(node, ast.Subscript) and _call_name(node.value) in ("os.environ", "environ"):
            arg = node.slice
        if arg is None:
            continue
        name = text(arg)
        if name:
            reads.append((name, text(default) or ""))
        elif isinstance(arg, ast.Name):
            reads += helper_calls(arg.id, node)
    return reads


@functools.cache
def environment() -> tuple[EnvVar, ...]:
    """Every environment variable the code reads, by name, with its default and the files that read it
    (read once per build: both languages' pages list them)."""
    found: dict[str, EnvVar] = {}
    for group, places in CODE.items():
        for place in places:
            path = ROOT / place
            for file in sorted([path] if path.is_file() else path.rglob("*.py")):
                rel = file.relative_to(ROOT).as_posix()
                for name, default in _env_reads(file):
                    old = found.get(name)
                    if old is None:
                        found[name] = EnvVar(name, default, (rel,), group)
                    elif rel not in old.read_in:  # the default shown is the library's, not a test's
                        keep = old.default if old.group == "vizhooks" else old.default or default
                        found[name] = EnvVar(name, keep, (*old.read_in, rel), old.group)
    return tuple(sorted(found.values(), key=lambda v: (v.group != "vizhooks", v.name)))


# ------------------------------------------------------------------------------------------------
# the page


WORDS = {
    "en": {
        "intro": "Generated from the code each time the manual is built (docs/hooks.py), so it lists what this "
                 "version has. The other pages say what each of these is for.",
        "views": "Views (`?view=`)", "view_head": "| `?view=` | label on the page | menu group | its own link keys |",
        "params": "URL parameters", "param_head": "| parameter | default | kept by |",
        "all_views": "every view", "env": "Environment variables",
        "env_intro": "Read by the library and the page (`app.py`, `vizhooks/`):",
        "env_tests": "Named only by the tests and benchmarks (`tests/`, `benchmarks/`; torch and Python read some "
                     "of them too):",
        "env_head": "| variable | default | read in | explained in |",
        "cli": "Command line", "cli_intro": "`python -m vizhooks COMMAND --help` prints the same, with examples. "
               "Without a command, the arguments are those of `maps`.",
        "opt_head": "| option | default | choices | what it does |",
        "top": "`python -m vizhooks` (top level)",
    },
    "zh": {
        "intro": "这一页在每次构建手册时由代码生成（docs/hooks.py），列出的就是当前版本的内容。各项的用途见其他页面。",
        "views": "视图（`?view=`）", "view_head": "| `?view=` | 页面上的名称 | 菜单分组 | 视图自己的链接参数 |",
        "params": "链接参数", "param_head": "| 参数 | 默认值 | 由哪些视图保留 |",
        "all_views": "所有视图", "env": "环境变量",
        "env_intro": "由库和页面读取（`app.py`、`vizhooks/`）：",
        "env_tests": "只有测试和基准测试的代码用到（`tests/`、`benchmarks/`；其中有些也由 torch 和 Python 自己读取）：",
        "env_head": "| 变量 | 默认值 | 读取它的文件 | 说明见 |",
        "cli": "命令行", "cli_intro": "`python -m vizhooks 子命令 --help` 打印同样的内容，并附有示例。"
               "不写子命令时，参数就是 `maps` 的参数。选项的说明取自代码，为英文。",
        "opt_head": "| 选项 | 默认值 | 可选值 | 作用 |",
        "top": "`python -m vizhooks`（顶层）",
    },
}


def _explained_in(lang: str) -> dict[str, list[str]]:
    """Each ``VIZHOOKS_*`` name -> links to the hand-written pages of ``lang`` that mention it, in nav order."""
    import re

    pages = [line.split(": ")[-1].strip() for line in (ROOT / "mkdocs.yml").read_text("utf-8").splitlines()
             if re.match(r"^\s*- [^:]+: \w+\.md$", line)]
    found: dict[str, list[str]] = {}
    for page in pages:
        if page.startswith("reference"):
            continue
        path = ROOT / "docs" / (page if lang == "en" else page.replace(".md", ".zh.md"))
        text = path.read_text("utf-8")
        title = text.split("\n", 1)[0].lstrip("# ").strip()
        for name in dict.fromkeys(re.findall(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b", text)):
            found.setdefault(name, []).append(f"[{title}]({page})")
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|") if text else "—"


def _code(text: str) -> str:
    return f"`{text}`" if text else "—"


def reference_markdown(lang: str = "en") -> str:
    """The generated part of the reference page in ``lang`` ("en" or "zh")."""
    w = WORDS[lang]
    out = [w["intro"], "", f"## {w['views']}", "", w["view_head"], "| --- | --- | --- | --- |"]
    for v in views(lang):
        keys = ", ".join(f"`{k}`" for k in v.keys) or "—"
        out.append(f"| `{v.name}` | {_cell(v.label)} | {_cell(v.group)} | {keys} |")
    out += ["", f"## {w['params']}", "", w["param_head"], "| --- | --- | --- |"]
    for key, default, kept_by in url_parameters():
        out.append(f"| `{key}` | {_code(default)} | {', '.join(f'`{v}`' for v in kept_by) or w['all_views']} |")
    out += ["", f"## {w['cli']}", "", w["cli_intro"]]
    for command in cli_commands():
        title = w["top"] if not command.name else f"`python -m vizhooks {command.name}`"
        out += ["", f"### {title}", ""]
        if command.name and command.summary:
            out += [_cell(command.summary[:1].upper() + command.summary[1:]) + ".", ""]
        out += [w["opt_head"], "| --- | --- | --- | --- |"]
        for o in command.options:
            out.append(f"| `{_cell(o.flags)}` | {_cell(_code(o.default))} | {_cell(o.choices)} | {_cell(o.help)} |")
    out += ["", f"## {w['env']}"]
    explained = _explained_in(lang)
    for group, intro in (("vizhooks", w["env_intro"]), ("tests", w["env_tests"])):
        out += ["", intro, "", w["env_head"], "| --- | --- | --- | --- |"]
        for var in environment():
            if var.group == group:
                read_in = ", ".join(f"`{p}`" for p in var.read_in)
                pages = ", ".join(explained.get(var.name, [])) or "—"
                out.append(f"| `{var.name}` | {_code(var.default)} | {read_in} | {pages} |")
    return "\n".join(out) + "\n"


PLAN_MARKER = "<!-- vizhooks-lesson-plan -->"
_PLAN_WORDS = {
    "en": {"head": "| Step | What it shows | Level | Minutes |", "core": "core", "advanced": "advanced",
           "total": "**{n} steps, {m} minutes** (each with its poll; an advanced step may be left out)."},
    "zh": {"head": "| 步骤 | 内容 | 难度 | 分钟 |", "core": "基础", "advanced": "进阶",
           "total": "**共 {n} 步，{m} 分钟**（每一步都含投票；进阶步骤可以略去）。"},
}


def plan_markdown(lang: str) -> str:
    """The lesson's timetable, from its own steps (vizhooks.lesson.steps: order, minutes, level) and
    titles, so the manual's plan cannot fall behind the lesson."""
    from vizhooks.lesson.i18n import t
    from vizhooks.lesson.steps import STEPS, plan_minutes

    w = _PLAN_WORDS[lang]
    rows = [w["head"], "| ---: | --- | --- | ---: |"]
    for n, step in enumerate(STEPS, 1):
        rows.append(f"| {n} | {_cell(t(f'lesson_{step.id}_title', lang=lang))} | {w[step.level]} | {step.minutes} |")
    return "\n".join([*rows, "", w["total"].format(n=len(STEPS), m=plan_minutes())]) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ANN001 (MkDocs' hook signature)
    """Put the generated reference and the lesson plan in place of their markers, in the page's language."""
    if MARKER not in markdown and PLAN_MARKER not in markdown:
        return markdown
    lang = "zh" if page.file.src_uri.endswith(".zh.md") or config["theme"]["language"] == "zh" else "en"
    if PLAN_MARKER in markdown:
        markdown = markdown.replace(PLAN_MARKER, plan_markdown(lang))
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, reference_markdown(lang))
    return markdown
