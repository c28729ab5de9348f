"""README.md and README.zh-CN.md stay one manual in two languages: the same sections in the same order,
the same screenshots and environment variables, the same FAQ, and the facts both state (upload limits,
button and group names) read off the configuration and the page's own texts."""

from __future__ import annotations

import re
import tomllib

import pytest

from tests.helpers import ROOT
from vizhooks.images import MAX_PIXELS
from vizhooks.page.sources.upload import PHOTO_MB
from vizhooks.page.texts import EN, ZH
from vizhooks.video import MAX_VIDEO_MB, MAX_VIDEO_SECONDS

README_EN = ROOT / "README.md"
README_ZH = ROOT / "README.zh-CN.md"

#: Every ``##`` / ``###`` heading of README.md and its Chinese counterpart, in README.md's order. A new
#: English section fails until it is written in Chinese and added here; a removed one fails the other way.
OUTLINE: dict[str, str] = {
    "## Two commands": "## 两个命令",
    "## The page": "## 页面导览",
    "## Video and live camera": "## 视频和实时摄像头",
    "### Video": "### 视频",
    "### Live camera": "### 实时摄像头",
    "## Your own classes": "## 教网络认识你自己的类别",
    "## Which explanation to believe": "## 该相信哪一张解释图",
    "## Library": "## Python 库",
    "## Command line": "## 命令行",
    "## Models": "## 模型",
    "## Weights: where they come from": "## 权重：从哪里来",
    "### Preparing an offline classroom": "### 为离线教室做准备",
    "## Running for a class": "## 为一个班级运行",
    "### Teaching a class": "### 上课：老师带领，全班跟随",
    "## Code map": "## 代码地图",
    "## Requirements": "## 依赖",
    "## Tests": "## 测试",
    "## Benchmarks": "## 基准测试",
    "## FAQ": "## 常见问题",
    "## Sample photos": "## 示例照片",
}

#: Sections only the Chinese manual has: where to open the page in Chinese, installing from China, the
#: page tour split in three, and the glossary of the terms the page uses.
ZH_ONLY = {
    "### 用中文打开页面", "## 国内安装与镜像", "### 侧边栏", "### 主区域", "### 分享与出错", "## 术语表",
}

_FENCE = re.compile(r"^```.*?^```", re.M | re.S)
_HEADING = re.compile(r"^(#{2,3}) (.+?)\s*$", re.M)
_IMAGE = re.compile(r"!\[[^\]]*\]\(([^)\s]+)\)")
_ENV = re.compile(r"\bVIZHOOKS_[A-Z_]+\b")


def _prose(path) -> str:
    """The text without fenced code blocks (a ``# comment`` in a shell block is no heading)."""
    return _FENCE.sub("", path.read_text(encoding="utf-8"))


def _headings(path) -> list[str]:
    return [f"{level} {title}" for level, title in _HEADING.findall(_prose(path))]


def _section(path, heading: str) -> str:
    """The text of one ``##`` section, up to the next ``##`` heading."""
    text = path.read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_every_english_section_has_a_chinese_one():
    english = _headings(README_EN)
    assert sorted(set(english) - set(OUTLINE)) == [], "a section of README.md without a Chinese counterpart"
    assert sorted(set(OUTLINE) - set(english)) == [], "OUTLINE names a section README.md no longer has"
    assert len(english) == len(set(english)), "README.md has a heading twice"


def test_every_chinese_section_has_an_english_one_and_the_order_matches():
    chinese = _headings(README_ZH)
    unexpected = [h for h in chinese if h not in OUTLINE.values() and h not in ZH_ONLY]
    assert unexpected == [], "a section of README.zh-CN.md without an English counterpart (or add it to ZH_ONLY)"
    missing = [zh for zh in OUTLINE.values() if zh not in chinese]
    assert missing == [], "README.zh-CN.md lacks these counterparts of README.md's sections"
    shared = [h for h in chinese if h in OUTLINE.values()]
    assert shared == [OUTLINE[h] for h in _headings(README_EN)], "the Chinese sections are in another order"


def test_same_screenshots_and_they_exist():
    english = set(_IMAGE.findall(README_EN.read_text(encoding="utf-8")))
    chinese = set(_IMAGE.findall(README_ZH.read_text(encoding="utf-8")))
    assert english, "the image pattern found no screenshot in README.md"
    assert sorted(english - chinese) == []
    assert [p for p in english | chinese if not (ROOT / p).is_file()] == []


def test_same_environment_variables():
    english = set(_ENV.findall(README_EN.read_text(encoding="utf-8")))
    chinese = set(_ENV.findall(README_ZH.read_text(encoding="utf-8")))
    assert {"VIZHOOKS_WEIGHTS_MIRROR", "VIZHOOKS_CLASS_STORE"} <= english
    assert sorted(english - chinese) == []


def _questions(text: str) -> list[str]:
    """The FAQ's questions: each answer is a paragraph that opens with its question in bold."""
    return [p.split("**")[1] for p in text.split("\n\n") if p.startswith("**") and p.count("**") >= 2]


def test_the_faq_asks_the_same_questions_in_both():
    english = _questions(_section(README_EN, "## FAQ"))
    chinese = _questions(_section(README_ZH, "## 常见问题"))
    assert 8 <= len(chinese) <= 12, chinese
    assert len(english) == len(chinese), (english, chinese)
    assert all(q.endswith(("?", ".", "”", '"')) for q in english) and all(q.endswith(("？", "。")) for q in chinese)


def test_installing_from_china():
    text = _section(README_ZH, "## 国内安装与镜像")
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
    for path, photo, clip in (
        (README_EN, f"up to {PHOTO_MB} MB and {MAX_PIXELS // 1_000_000} megapixels",
         f"up to {MAX_VIDEO_MB} MB and {minutes} minutes"),
        (README_ZH, f"最大 {PHOTO_MB} MB、{MAX_PIXELS // 10_000} 万像素", f"最大 {MAX_VIDEO_MB} MB、{minutes} 分钟"),
    ):
        text = path.read_text(encoding="utf-8")
        # the sentence on .streamlit/config.toml names both limits: the server's (a clip) and a photo's
        paragraph = next(p for p in text.split("\n\n") if "showErrorDetails" in p)
        assert f"{MAX_VIDEO_MB} MB" in paragraph and f"{PHOTO_MB} MB" in paragraph, (path.name, paragraph)
        assert photo in text, (path.name, photo)
        assert clip in text, (path.name, clip)
        assert f"client_max_body_size {MAX_VIDEO_MB}m;" in text, path.name


def test_the_chinese_upload_help_says_the_same_limits():
    assert f"{PHOTO_MB} MB" in ZH["upload_help"] and f"{MAX_PIXELS // 10_000} 万像素" in ZH["upload_help"]


def test_the_operator_group_is_named_as_the_page_names_it():
    assert f"“{ZH['family_operator']}”" in README_ZH.read_text(encoding="utf-8")
    assert f'"{EN["family_operator"].capitalize()}"' in README_EN.read_text(encoding="utf-8")


def _marked(text: str) -> set[str]:
    """Phrases in bold or italics: how both manuals name what a visitor sees on the page."""
    bold = re.findall(r"(?<!\*)\*\*([^*\n]+?)\*\*(?!\*)", text)
    italic = re.findall(r"(?<![*\w])\*([^*\s][^*\n]*?)\*(?![*\w])", text)
    return {p.strip() for p in bold + italic}


def _page_names() -> dict[str, list[str]]:
    """English text of every page label without placeholders -> its keys."""
    names: dict[str, list[str]] = {}
    for key, value in EN.items():
        if "{" not in value and "\n" not in value and len(value) <= 40:
            names.setdefault(value.strip().lower(), []).append(key)
    return names


def test_page_labels_are_named_as_the_chinese_page_names_them():
    """A button, view or option README.md marks (**Start**, *Frames to sample*) appears in README.zh-CN
    marked too, under the name the Chinese page gives it (开始, not Start)."""
    names = _page_names()
    chinese = _marked(README_ZH.read_text(encoding="utf-8"))
    checked, wrong = 0, {}
    for phrase in sorted(_marked(README_EN.read_text(encoding="utf-8"))):
        keys = names.get(phrase.lower().rstrip("."))
        if not keys:
            continue
        checked += 1
        if not {ZH[k].strip() for k in keys} & chinese:
            wrong[phrase] = sorted({ZH[k] for k in keys})
    assert checked >= 30, "the label pattern no longer finds the page's labels in README.md"
    assert wrong == {}, "README.zh-CN.md should name these as the Chinese page does (bold or italic)"


def test_the_live_start_button():
    chinese = README_ZH.read_text(encoding="utf-8")
    assert f"**{ZH['live_c_start']}**" in chinese and f"**{EN['live_c_start']}**" not in chinese


@pytest.mark.parametrize("key", ["out_of_memory", "class_unknown", "weights_details"])
def test_the_faq_quotes_the_page(key):
    """The FAQ quotes what the page shows, so the quote follows the page when its sentence changes."""
    for texts, heading, path in ((EN, "## FAQ", README_EN), (ZH, "## 常见问题", README_ZH)):
        head = re.split(r"[{（(。.;]", texts[key])[0].strip()
        assert len(head) >= 4 and head in _section(path, heading), (key, path.name, head)
