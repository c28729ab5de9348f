"""The manual (docs/NAME.md and its Chinese twin docs/NAME.zh.md) stays one text in two languages: the
same sections in the same order, the same screenshots and environment variables, the same FAQ, and the
facts both state (upload limits, button and group names) read off the configuration and the page's own
texts. README.md and README.zh-CN.md, the front doors, mirror each other the same way."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from tests.helpers import ROOT
from vizhooks.models.images import MAX_PIXELS
from vizhooks.page.sources.upload import PHOTO_MB
from vizhooks.page.texts import EN, ZH
from vizhooks.video import MAX_VIDEO_MB, MAX_VIDEO_SECONDS

README_EN = ROOT / "README.md"
README_ZH = ROOT / "README.zh-CN.md"
DOCS = ROOT / "docs"
#: The manual's pages in the order of mkdocs.yml's nav; each has a Chinese twin NAME.zh.md.
PAGES = ("index", "page", "video", "teach", "explain", "class", "library", "cli", "models", "operators", "develop",
         "faq", "reference")

#: Every ``#`` / ``##`` / ``###`` heading of the English pages and its Chinese counterpart, in page order. A new
#: English section fails until it is written in Chinese and added here; a removed one fails the other way.
OUTLINE: dict[str, str] = {
    "# Getting started": "# 快速开始",
    "## Two commands": "## 两个命令",
    "## The make targets": "## make 目标",
    "## Requirements": "## 依赖",
    "## Sample photos": "## 示例照片",
    "# The page and its views": "# 页面与视图",
    "## The page": "## 页面导览",
    "# Video and live camera": "# 视频和实时摄像头",
    "## Video": "## 视频",
    "## Live camera": "## 实时摄像头",
    "### Live in a class": "### 在课堂上使用实时摄像头",
    "### Measured (our 2-CPU machine, random weights, `python -m benchmarks.live`)":
        "### 实测数据（我们的 2 核 CPU 机器，随机权重，`python -m benchmarks.live`）",
    "# Your own classes": "# 教网络认识你自己的类别",
    "## Take it to other tools": "## 带到其他工具里用",
    "# Which explanation to believe": "# 该相信哪一张解释图",
    "## Auditing a whole folder": "## 检查整个文件夹",
    "## Which channels decided? (channel relevance)": "## 哪些通道做了决定？（通道相关性）",
    "## Concepts: what a layer has learned over many photos": "## 概念：一层在许多照片上学到了什么",
    "# The lesson and the class": "# 课程与课堂",
    "## Choosing the steps: a lesson plan": "## 选择步骤：课程安排",
    "## Teaching a class": "## 上课：老师带领，全班跟随",
    "# Library": "# Python 库",
    "# Command line": "# 命令行",
    "# Models and weights": "# 模型与权重",
    "## Models": "## 模型",
    "## Weights: where they come from": "## 权重：从哪里来",
    "### Preparing an offline classroom": "### 为离线教室做准备",
    "# Running for a class": "# 为一个班级运行",
    "# Tests, benchmarks and the code": "# 测试、基准与代码",
    "## Tests": "## 测试",
    "## Benchmarks": "## 基准测试",
    "## Code map": "## 代码地图",
    "# FAQ": "# 常见问题",
    "# Reference": "# 参考",
}

#: Sections only the Chinese manual has: where to open the page in Chinese, installing from China, the
#: page tour split in three, and the glossary of the terms the page uses.
ZH_ONLY = {
    "## 用中文打开页面", "## 国内安装与镜像", "### 侧边栏", "### 主区域", "### 分享与出错", "## 术语表",
}

#: The front doors' sections, README.md's -> README.zh-CN.md's.
README_OUTLINE = {"## Two commands": "## 两个命令", "## A tour": "## 导览", "## Languages": "## 语言",
                  "## The manual": "## 手册"}

_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_HEADING = re.compile(r"^(#{1,3}) (.+?)\s*$", re.M)
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_ENV = re.compile(r"\bVIZHOOKS_[A-Z_]+\b")


def _page(name: str, lang: str) -> Path:
    return DOCS / (f"{name}.md" if lang == "en" else f"{name}.zh.md")


def _manual(lang: str) -> str:
    """The whole manual in one language, pages in nav order."""
    return "\n\n".join(_page(name, lang).read_text(encoding="utf-8") for name in PAGES)


def _prose(text: str) -> str:
    """The text without fenced code blocks (a ``# comment`` in a shell block is no heading)."""
    return _FENCE.sub("", text)


def _headings(text: str) -> list[str]:
    return [f"{level} {title}" for level, title in _HEADING.findall(_prose(text))]


def _section(text: str, heading: str) -> str:
    """The text of one ``##`` section (or ``#`` page), up to the next heading of its level or above."""
    start = text.index(f"{heading}\n")
    level = heading.split(" ", 1)[0]
    body = start + len(heading)
    blanked = _FENCE.sub(lambda m: re.sub(r"[^\n]", " ", m.group()), text)  # a `# comment` in code stops nothing
    stop = re.search(rf"^#{{1,{len(level)}}} ", blanked[body:], re.M)
    return text[start:body + stop.start() if stop else len(text)]


def test_the_pages_are_the_nav_and_each_has_a_chinese_twin():
    english = sorted(p.name[:-3] for p in DOCS.glob("*.md") if not p.name.endswith(".zh.md"))
    chinese = sorted(p.name[:-6] for p in DOCS.glob("*.zh.md"))
    assert english == sorted(PAGES), "add the page to PAGES (and to mkdocs.yml's nav), or remove it"
    assert chinese == sorted(PAGES), "every page of docs/ needs its Chinese twin NAME.zh.md, and no more"
    nav = re.findall(r"^\s*- [^:\n]+: (\w+)\.md$", (ROOT / "mkdocs.yml").read_text("utf-8"), re.M)
    assert nav == list(PAGES), "mkdocs.yml's nav and PAGES list the pages in one order"


def test_every_english_section_has_a_chinese_one():
    english = _headings(_manual("en"))
    assert sorted(set(english) - set(OUTLINE)) == [], "a section of docs/*.md without a Chinese counterpart"
    assert sorted(set(OUTLINE) - set(english)) == [], "OUTLINE names a section docs/*.md no longer has"
    assert len(english) == len(set(english)), "the English manual has a heading twice"


def test_every_chinese_section_has_an_english_one_and_the_order_matches():
    for name in PAGES:  # page by page, so a section cannot move to another page in one language only
        chinese = _headings(_page(name, "zh").read_text("utf-8"))
        unexpected = [h for h in chinese if h not in OUTLINE.values() and h not in ZH_ONLY]
        assert unexpected == [], f"a section of {name}.zh.md without an English counterpart (or add it to ZH_ONLY)"
        shared = [h for h in chinese if h in OUTLINE.values()]
        english = [OUTLINE[h] for h in _headings(_page(name, "en").read_text("utf-8"))]
        assert shared == english, \
            f"{name}.zh.md lacks counterparts of {name}.md's sections, or has them in another order"


def test_the_readmes_have_the_same_sections():
    assert _headings(README_EN.read_text("utf-8")) == ["# vizhooks", *README_OUTLINE]
    assert _headings(README_ZH.read_text("utf-8")) == ["# vizhooks", *README_OUTLINE.values()]


def test_same_screenshots_and_they_exist():
    for name in PAGES:
        english = set(_IMAGE.findall(_page(name, "en").read_text(encoding="utf-8")))
        chinese = set(_IMAGE.findall(_page(name, "zh").read_text(encoding="utf-8")))
        assert sorted(english - chinese) == [], name
        assert [p for p in english | chinese if not (DOCS / p).is_file()] == [], name
    shown = {p for name in PAGES for p in _IMAGE.findall(_page(name, "en").read_text(encoding="utf-8"))}
    assert len(shown) >= 7, "the image pattern found too few screenshots in docs/"
    readme = set(_IMAGE.findall(README_EN.read_text(encoding="utf-8")))
    assert readme, "the image pattern found no screenshot in README.md"
    assert readme == set(_IMAGE.findall(README_ZH.read_text(encoding="utf-8")))
    assert [p for p in readme if not (ROOT / p).is_file()] == []
    assert {f"docs/{p}" for p in shown} <= readme, "README's tour shows every screenshot of the manual"


def test_same_environment_variables():
    english = set(_ENV.findall(_manual("en")))
    chinese = set(_ENV.findall(_manual("zh")))
    assert {"VIZHOOKS_WEIGHTS_MIRROR", "VIZHOOKS_CLASS_STORE"} <= english
    assert sorted(english - chinese) == []
    assert set(_ENV.findall(README_EN.read_text("utf-8"))) == set(_ENV.findall(README_ZH.read_text("utf-8")))


def _questions(text: str) -> list[str]:
    """The FAQ's questions: each answer is a paragraph that opens with its question in bold."""
    return [p.split("**")[1] for p in text.split("\n\n") if p.startswith("**") and p.count("**") >= 2]


def test_the_faq_asks_the_same_questions_in_both():
    english = _questions(_page("faq", "en").read_text("utf-8"))
    chinese = _questions(_page("faq", "zh").read_text("utf-8"))
    assert 8 <= len(chinese) <= 12, chinese
    assert len(english) == len(chinese), (english, chinese)
    assert all(q.endswith(("?", ".", "”", '"')) for q in english) and all(q.endswith(("？", "。")) for q in chinese)


def test_installing_from_china():
    text = _section(_page("index", "zh").read_text("utf-8"), "## 国内安装与镜像")
    for needle in ("PIP_INDEX_URL", "pip config", "HF_ENDPOINT", "https://hf-mirror.com", "VIZHOOKS_WEIGHTS_MIRROR",
                   "torch==2.14.1", "torchvision==0.29.1"):
        assert needle in text, needle
    pins = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    assert "torch==2.14.1\n" in pins and "torchvision==0.29.1\n" in pins, "update the pins in 国内安装与镜像"


# ------------------------------------------------------------------------------------------------
# facts both manuals state, checked against the configuration and the page's texts


def test_upload_limits_match_the_config():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == MAX_VIDEO_MB
    minutes = MAX_VIDEO_SECONDS // 60
    for lang, photo, clip in (
        ("en", f"up to {PHOTO_MB} MB and {MAX_PIXELS // 1_000_000} megapixels",
         f"up to {MAX_VIDEO_MB} MB and {minutes} minutes"),
        ("zh", f"最大 {PHOTO_MB} MB、{MAX_PIXELS // 10_000} 万像素", f"最大 {MAX_VIDEO_MB} MB、{minutes} 分钟"),
    ):
        text = _manual(lang)
        # the sentence on .streamlit/config.toml names both limits: the server's (a clip) and a photo's
        paragraph = next(p for p in text.split("\n\n") if "showErrorDetails" in p)
        assert f"{MAX_VIDEO_MB} MB" in paragraph and f"{PHOTO_MB} MB" in paragraph, (lang, paragraph)
        assert photo in text, (lang, photo)
        assert clip in text, (lang, clip)
        assert f"client_max_body_size {MAX_VIDEO_MB}m;" in text, lang


def test_the_chinese_upload_help_says_the_same_limits():
    assert f"{PHOTO_MB} MB" in ZH["upload_help"] and f"{MAX_PIXELS // 10_000} 万像素" in ZH["upload_help"]


def test_the_operator_group_is_named_as_the_page_names_it():
    assert f"“{ZH['family_operator']}”" in _manual("zh")
    assert f'"{EN["family_operator"].capitalize()}"' in _manual("en")


def _marked(text: str) -> set[str]:
    """Phrases in bold or italics: how both manuals name what a visitor sees on the page."""
    bold = re.findall(r"(?<!\*)\*\*([^*\n]+?)\*\*(?!\*)", text)
    italic = re.findall(r"(?<![*\w])\*([^*\s][^*\n]*?)\*(?![*\w])", text)
    return {p.strip() for p in bold + italic}


def _page_names() -> dict[str, list[str]]:
    """English text of every page label without placeholders -> its keys (the command line's texts,
    ``cli_*``, are not the page's: its "commands" is argparse's heading, not the manual's **Commands.**)."""
    names: dict[str, list[str]] = {}
    for key, value in EN.items():
        if not key.startswith("cli_") and "{" not in value and "\n" not in value and len(value) <= 40:
            names.setdefault(value.strip().lower(), []).append(key)
    return names


def test_page_labels_are_named_as_the_chinese_page_names_them():
    """A button, view or option the English manual marks (**Start**, *Frames to sample*) appears in the
    Chinese manual marked too, under the name the Chinese page gives it (开始, not Start)."""
    names = _page_names()
    chinese = _marked(_manual("zh"))
    checked, wrong = 0, {}
    for phrase in sorted(_marked(_manual("en"))):
        keys = names.get(phrase.lower().rstrip("."))
        if not keys:
            continue
        checked += 1
        if not {ZH[k].strip() for k in keys} & chinese:
            wrong[phrase] = sorted({ZH[k] for k in keys})
    assert checked >= 30, "the label pattern no longer finds the page's labels in the English manual"
    assert wrong == {}, "the Chinese manual should name these as the Chinese page does (bold or italic)"


def test_the_live_start_button():
    chinese = _manual("zh")
    assert f"**{ZH['live_c_start']}**" in chinese and f"**{EN['live_c_start']}**" not in chinese


@pytest.mark.parametrize("key", ["out_of_memory", "class_unknown", "weights_details"])
def test_the_faq_quotes_the_page(key):
    """The FAQ quotes what the page shows, so the quote follows the page when its sentence changes."""
    for texts, lang in ((EN, "en"), (ZH, "zh")):
        head = re.split(r"[{（(。.;]", texts[key])[0].strip()
        assert len(head) >= 4 and head in _page("faq", lang).read_text("utf-8"), (key, lang, head)
