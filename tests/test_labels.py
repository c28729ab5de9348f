"""The Chinese ImageNet class names (vizhooks/models/labels_zh.txt) and vizhooks.models.labels.

The oracle for the order is torchvision's own list (``ResNet18_Weights.IMAGENET1K_V1.meta["categories"]``),
read here independently of vizhooks; the spot checks pair each Chinese name with its English one, so a
shifted line fails on both sides.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from torchvision.models import ResNet18_Weights

from vizhooks.models import labels

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "vizhooks" / "models" / labels.ZH_FILE
TORCHVISION = tuple(ResNet18_Weights.IMAGENET1K_V1.meta["categories"])
CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
#: Lines allowed to hold Latin letters: a product name and a model name that Chinese keeps as written.
LATIN_KEPT = {"iPod 播放器", "福特T型车"}

#: (index, torchvision's English name, the Chinese name), checked against the English list first.
SPOT = [
    (0, "tench", "丁鲷"),
    (1, "goldfish", "金鱼"),
    (2, "great white shark", "大白鲨"),
    (4, "hammerhead", "锤头鲨"),
    (7, "cock", "公鸡"),
    (9, "ostrich", "鸵鸟"),
    (22, "bald eagle", "白头海雕"),
    (130, "flamingo", "火烈鸟"),
    (207, "golden retriever", "金毛寻回犬"),
    (208, "Labrador retriever", "拉布拉多寻回犬"),
    (235, "German shepherd", "德国牧羊犬"),
    (281, "tabby", "虎斑猫"),
    (285, "Egyptian cat", "埃及猫"),
    (291, "lion", "狮子"),
    (340, "zebra", "斑马"),
    (386, "African elephant", "非洲象"),
    (388, "giant panda", "大熊猫"),
    (409, "analog clock", "指针式时钟"),
    (635, "magnetic compass", "指南针"),
    (817, "sports car", "跑车"),
    (954, "banana", "香蕉"),
    (999, "toilet tissue", "卫生纸"),
]


def _lines() -> list[str]:
    return FILE.read_text(encoding="utf-8").split("\n")


def test_file_has_1000_unique_chinese_lines():
    lines = _lines()
    if lines and lines[-1] == "":  # one final newline
        lines.pop()
    assert len(lines) == 1000 == len(TORCHVISION)
    assert all(line and line == line.strip() for line in lines), "empty line or stray spaces"
    twice = sorted({line for line in lines if lines.count(line) > 1})
    assert not twice, f"names used for two classes: {twice}"
    assert not [line for line in lines if not CJK.search(line)], "every name is Chinese"
    latin = {line for line in lines if re.search("[A-Za-z]", line)}
    assert latin <= LATIN_KEPT, f"English left in: {sorted(latin - LATIN_KEPT)}"


@pytest.mark.parametrize(("index", "english", "chinese"), SPOT, ids=[s[1] for s in SPOT])
def test_aligned_with_torchvisions_order(index, english, chinese):
    assert TORCHVISION[index] == english
    assert _lines()[index] == chinese
    assert labels.chinese_categories()[index] == chinese


def test_chinese_categories_match_the_file_and_vizhooks_list():
    from vizhooks.models.registry import imagenet_categories

    assert imagenet_categories() == TORCHVISION
    assert labels.chinese_categories() == tuple(_lines()[:1000])
    assert labels.chinese_categories() is labels.chinese_categories()  # read once


def test_class_labels_chinese_only_for_imagenet_on_the_chinese_page():
    zh = labels.class_labels(list(TORCHVISION), "zh")
    assert zh == list(labels.chinese_categories())
    assert labels.class_labels(TORCHVISION, "zh") == zh  # a tuple works too
    assert labels.class_labels(list(TORCHVISION), "en") == list(TORCHVISION)
    other = [f"class {i}" for i in range(1000)]
    assert labels.class_labels(other, "zh") == other  # own checkpoint with 1,000 classes of its own
    renamed = [*TORCHVISION[:-1], "my class"]
    assert labels.class_labels(renamed, "zh") == renamed
    assert labels.class_labels(["cat", "dog"], "zh") == ["cat", "dog"]
    zh[0] = "changed"  # the caller's list is its own
    assert labels.chinese_categories()[0] == "丁鲷"


def test_a_damaged_file_is_a_sentence(tmp_path, monkeypatch):
    (tmp_path / labels.ZH_FILE).write_text("丁鲷\n金鱼\n", encoding="utf-8")
    monkeypatch.setattr(labels.resources, "files", lambda package: tmp_path)
    labels.chinese_categories.cache_clear()
    try:
        with pytest.raises(RuntimeError, match="has 2 lines.*torchvision's order"):
            labels.chinese_categories()
    finally:
        monkeypatch.undo()
        labels.chinese_categories.cache_clear()
    assert len(labels.chinese_categories()) == 1000


@pytest.mark.packaging
def test_found_in_an_installed_wheel(tmp_path):
    """The wheel carries the file (pyproject's package data) and the module finds it there: the wheel
    is unpacked as pip would into site-packages, and a fresh interpreter reads the names from it."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        (src / name).write_bytes((ROOT / name).read_bytes())
    for path in (ROOT / "vizhooks").rglob("*"):
        if path.is_file() and "__pycache__" not in path.parts:
            target = src / path.relative_to(ROOT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(tmp_path / "dist"), str(src)], cwd=tmp_path, env=env, check=True, timeout=300)
    (wheel,) = (tmp_path / "dist").glob("vizhooks-*.whl")
    site = tmp_path / "site"
    with zipfile.ZipFile(wheel) as z:
        assert "vizhooks/models/labels_zh.txt" in z.namelist(), "add labels_zh.txt to pyproject's package data"
        z.extractall(site)
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(ROOT / "tests" / "netguard")])
    code = ("import vizhooks.models.labels as m; n = m.chinese_categories(); "
            "print(m.__file__); print(len(n), n[0], n[999])")
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    where, got = out.stdout.splitlines()
    assert Path(where).is_relative_to(site), f"read from {where}, not from the wheel"
    assert got == "1000 丁鲷 卫生纸"
