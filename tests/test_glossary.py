"""The Chinese page's glossary: one name for each term, the seed article's words at first mention,
bold that Markdown can close, and the same placeholders as the English texts.

``GLOSSARY`` is the table the Chinese manual shows (docs/reference.zh.md: English, 中文, where it appears);
each entry also lists the second names that must not appear in any Chinese text. A term may carry a gloss, the
form it takes where it is first introduced (钩子（hook）函数); the gloss is allowed wherever it
appears and must appear in the texts named as first mentions.
"""

from __future__ import annotations

import re
import string
import unicodedata
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers import CODE_SPAN
from vizhooks.page.texts import EN, ZH  # the whole catalogue, every section


@dataclass(frozen=True)
class Term:
    en: str
    zh: str
    where: str
    #: regular expressions (case-insensitive) for the names this term must not go by
    forbidden: tuple[str, ...]
    #: the form that introduces the term; allowed anywhere, required in ``first``
    gloss: str = ""
    #: keys whose text introduces the term (the gloss) or must name it (no gloss)
    first: tuple[str, ...] = ()


GLOSSARY: tuple[Term, ...] = (
    Term("hook (hook function)", "钩子", "副标题、课程第 {what} 步（首次出现写作“钩子（hook）函数”），各视图",
         (r"勾子", r"hook ?函数", r"钩子程序", r"挂钩函数"), gloss="钩子（hook）函数",
         first=("subtitle", "lesson_what_text")),
    Term("forward hook", "前向钩子", "特征图、干预、层信息表、课程第 {what}–{shapes} 步",
         (r"正向钩子", r"前馈钩子", r"前向 ?hook")),
    Term("forward pre-hook", "前向预钩子", "侧边栏“捕获”、层信息表、课程第 {prehook}–{shapes} 步",
         (r"预前向钩子", r"前置钩子", r"前向前钩子", r"预钩子函数")),
    Term("tensor hook", "张量钩子", "梯度、课程第 {tensor}–{clamp} 步", (r"张量 ?hook", r"张量挂钩")),
    Term("full backward hook", "完整反向钩子", "反向钩子视图、课程第 {backward} 步",
         (r"全反向钩子", r"完全反向钩子", r"后向钩子", r"完整后向")),
    Term("handle", "句柄", "课程第 {remove} 步、代码视图", (r"把手", r"钩子手柄")),
    Term("forward pass", "前向传播", "副标题、层信息表、干预、课程",
         (r"(?<!前向)(?<!反向)(?<!相关性)传播", r"正向传播", r"前向传递", r"向前传播", r"前传")),
    Term("backward pass", "反向传播", "梯度、Grad-CAM、反向钩子、课程第 {tensor}–{gradcam} 步",
         (r"后向传播", r"逆向传播", r"反传", r"反向传递")),
    Term("leaf tensor", "叶子张量", "代码视图“四种钩子”（首次出现写作“叶子张量（叶子节点）”）、课程第 {tensor} 步",
         (r"叶子节点", r"叶子结点", r"叶节点", r"叶结点", r"叶张量"), gloss="叶子张量（叶子节点）",
         first=("hooks_explained",)),
    Term("feature map", "特征图", "特征图、通道查看器、对比、课程", (r"特征映射", r"激活图", r"特征地图")),
    Term("activation (the values)", "激活值", "副标题、.npz 下载",
         (r"的激活(?![值函])", r"激活(?=[越较很])", r"激活量")),
    Term("receptive field", "感受野", "通道图谱（数据集样例的图块）、课程第 {gradcam} 步的答案",
         (r"接受野", r"感受域", r"感知野", r"受纳野", r"receptive"),
         first=("atlas_intro", "atlas_top", "atlas_random", "lesson_gradcam_a")),
    Term("sidebar", "侧边栏", "提示与帮助文字", (r"侧栏", r"(?<!侧)边栏", r"侧面板")),
    Term("quick tour (quick pick)", "导览", "侧边栏“快速选择”、实时视图的层", (r"快速浏览", r"浏览层", r"巡览")),
    Term("top-1 class", "Top-1 类别", "梯度、Grad-CAM、视频", (r"第一类别", r"首位类别", r"最高类别", r"第一名类别")),
    Term("token", "词元", "代码视图中 ViT / Swin 的注释（首次出现写作“词元（token）”）",
         (r"\btokens?\b", r"令牌"), gloss="词元（token）"),
    Term("photo (the one the page looks at)", "照片", "侧边栏、各视图、课堂与班级图库", (r"[你我]的图片",)),
    Term("channel", "通道", "各视图", (r"频道",)),
    Term("in-place", "原地", "课程第 {forward} 步、代码视图、反向钩子", (r"就地", r"原位")),
    Term("heat map", "热力图", "Grad-CAM、实时、视频", (r"热图", r"热度图")),
    Term("feature visualization", "特征可视化", "通道图谱", (r"特征可视图",)),
    Term("dataset exemplars", "数据集样例", "通道图谱", (r"数据集示例", r"数据集范例")),
    Term("sample photo", "示例照片", "侧边栏“图像”、对比、干预、激活修补、概念（“样例”只用于数据集样例）",
         (r"样例照片", r"范例照片", r"样本照片")),
    Term("sanity check", "合理性检验", "该相信哪张图、课程第 {sanity} 步",
         (r"合理性检查", r"健全性检查", r"完整性检验")),
    Term("relevance (of a channel)", "相关性", "特征图的通道顺序、通道相关性", (r"关联性", r"相关度", r"关联度")),
    Term("activation patching", "激活修补", "对比视图", (r"激活补丁", r"打补丁", r"激活替换")),
    Term("crop (of a photo, for concepts)", "裁剪块", "概念", (r"剪裁块", r"裁切块", r"裁剪片")),
    Term("audit (a folder)", "检查", "“检查一个文件夹”视图", (r"审查", r"审计")),
    Term("confusion matrix", "混淆矩阵", "“检查一个文件夹”视图", (r"混淆表", r"误差矩阵", r"错误矩阵")),
)

_PLACEHOLDER = re.compile(r"\{[^{}]*\}")


def where(term: Term) -> str:
    """Where a term appears, its lesson steps numbered from the lesson's own order (``{tensor}`` is the
    tensor-hook step's number), so a new or moved step renumbers the glossary, never leaves it stale."""
    from vizhooks.lesson.steps import STEPS

    return term.where.format(**{step.id: n for n, step in enumerate(STEPS, 1)})


_GLOSSES = tuple(t.gloss for t in GLOSSARY if t.gloss)


def _prose(text: str) -> str:
    """The words a reader sees as prose: no code spans, no placeholders, no glosses."""
    text = _PLACEHOLDER.sub(" ", CODE_SPAN.sub(" ", text))
    for gloss in _GLOSSES:
        text = text.replace(gloss, " ")
    return text


def second_names(texts: dict[str, str]) -> dict[str, list[str]]:
    """``{key: ["zh term ← found", ...]}`` for every text that names a glossary term another way."""
    found: dict[str, list[str]] = {}
    for key, text in texts.items():
        prose = _prose(text)
        for term in GLOSSARY:
            for pattern in term.forbidden:
                for m in re.finditer(pattern, prose, flags=re.IGNORECASE):
                    found.setdefault(key, []).append(f"{term.zh} ← {m.group(0)}")
    return found


def snippet_comments() -> dict[str, str]:
    """The Chinese comments of the lesson's code (``# zh:`` lines of vizhooks/lesson/snippets/*.py),
    which a student reads as much as the page."""
    folder = Path(__file__).resolve().parents[1] / "vizhooks" / "lesson" / "snippets"
    return {f"{path.name}:{n}": line.split("# zh:", 1)[1]
            for path in sorted(folder.glob("*.py"))
            for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if "# zh:" in line}


def test_the_code_comments_use_the_glossarys_names():
    assert snippet_comments()  # the comments are read
    assert second_names(snippet_comments()) == {}


def test_each_term_has_one_name_in_the_chinese_texts():
    assert second_names(ZH) == {}


def test_the_check_finds_a_second_name():
    assert second_names({"k": "请在侧栏选择，每次传播都会运行；`token` 在代码里不算"}) == \
        {"k": ["前向传播 ← 传播", "侧边栏 ← 侧栏"]}
    assert second_names({"k": "词元（token）和 token"}) == {"k": ["词元 ← token"]}


@pytest.mark.parametrize("term", [t for t in GLOSSARY if t.first], ids=lambda t: t.en)
def test_first_mentions(term: Term):
    must = term.gloss or term.zh
    assert [k for k in term.first if must not in ZH[k]] == [], f"{must!r} missing"


def test_the_glossary_names_what_the_page_uses():
    used = "".join(ZH.values())
    # 词元 lives in the code view's comments (vizhooks/lesson/snippets/*.py), not in the page texts
    assert [t.zh for t in GLOSSARY if t.zh not in used and t.zh != "词元"] == []


# -- bold that Markdown can close -------------------------------------------------------------

def _punct(c: str) -> bool:
    return unicodedata.category(c)[0] in "PS"


def _space(c: str) -> bool:
    return c == "" or c.isspace()


def _sample(text: str) -> str:
    """Placeholders filled the way they render: a word, or a number with % where the spec says so."""
    return _PLACEHOLDER.sub(lambda m: "1%" if m.group(0).rstrip("}").endswith("%") else "x", text)


def bold_that_shows_asterisks(text: str) -> list[str]:
    """Each ``**`` that CommonMark cannot use: an opener not left-flanking or a closer not right-flanking.

    A closer right after punctuation needs a space or punctuation after it (``**实时摄像头。**摄像头``
    shows its asterisks); an opener right before punctuation needs a space or punctuation before it.
    Code spans are left out; ``**`` runs pair up in order.
    """
    text = CODE_SPAN.sub("c", _sample(text))
    bad = []
    for n, m in enumerate(re.finditer(r"\*\*", text)):
        before = text[m.start() - 1] if m.start() else ""
        after = text[m.end()] if m.end() < len(text) else ""
        if n % 2 == 0:  # opener: left-flanking
            ok = not _space(after) and (not _punct(after) or _space(before) or _punct(before))
        else:  # closer: right-flanking
            ok = not _space(before) and (not _punct(before) or _space(after) or _punct(after))
        if not ok:
            bad.append(text[max(0, m.start() - 8): m.end() + 4])
    return bad


def test_no_chinese_bold_shows_its_asterisks():
    assert {k: bad for k, v in ZH.items() if (bad := bold_that_shows_asterisks(v))} == {}


def test_the_bold_check_finds_the_live_intro_bug():
    assert bold_that_shows_asterisks("**实时摄像头。**摄像头") == ["**实时摄像头。**摄像头"]
    assert bold_that_shows_asterisks("点**“开始”**吧") == ["点**“开始”", "点**“开始”**吧"]
    assert bold_that_shows_asterisks("有 **{share:.1%}**被裁剪") == ["有 **1%**被裁剪"]
    assert bold_that_shows_asterisks("**实时摄像头**：摄像头，**表。** 反向，**{share:.1%}** 被") == []


def test_markdown_renders_every_chinese_bold():
    """The oracle: a CommonMark renderer (the rules Streamlit's Markdown follows) leaves no ``**``."""
    markdown_it = pytest.importorskip("markdown_it")
    md = markdown_it.MarkdownIt("commonmark")
    shown = {k: re.sub(r"<code>.*?</code>", "", md.render(_sample(v)), flags=re.S) for k, v in ZH.items()}
    assert [k for k, html in shown.items() if "**" in html] == []


# -- placeholders ----------------------------------------------------------------------------

def _fields(text: str) -> list[tuple[str, str]]:
    return sorted((f, spec or "") for _, f, spec, _ in string.Formatter().parse(text) if f is not None)


def test_every_chinese_text_has_the_english_placeholders():
    assert {k: (_fields(EN[k]), _fields(v)) for k, v in ZH.items() if _fields(EN.get(k, "")) != _fields(v)} == {}


def glossary_markdown() -> str:
    """The table as the Chinese manual (docs/reference.zh.md) shows it."""
    rows = [f"| {t.en} | {t.gloss or t.zh} | {where(t)} |" for t in GLOSSARY]
    return "\n".join(["| English | 中文 | 出现的位置 |", "| --- | --- | --- |", *rows])


def test_the_chinese_manual_holds_the_glossary():
    """The Chinese manual's 术语表 (docs/reference.zh.md) is this glossary, word for word: a new entry here
    needs it there too."""
    from pathlib import Path

    manual = (Path(__file__).resolve().parents[1] / "docs" / "reference.zh.md").read_text("utf-8")
    assert glossary_markdown() in manual
