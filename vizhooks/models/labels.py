"""Class names in the page's language.

The Chinese page names torchvision's 1,000 ImageNet classes in Chinese: ``labels_zh.txt``, beside this
module and shipped in the wheel (pyproject's package data), holds one name a line in torchvision's
order (``weights.meta["categories"]``), written and reviewed by the project; ``labels_zh_Hant.txt``
(繁體中文) is generated from it by ``python -m vizhooks.hant``. Only the page's labels
change (top-5, Grad-CAM, the class menus, intervention): the code view and the CSV / npz exports keep
the English names, so results stay comparable with English sources. A model with other classes (timm,
an own checkpoint with its labels file) keeps its own names in every language.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from importlib import resources

from vizhooks.models.registry import imagenet_categories

#: The file of Chinese ImageNet names, in this package (read with importlib.resources, so it is found
#: in a source tree and in an installed wheel alike).
ZH_FILE = "labels_zh.txt"
#: The same names in 繁體中文, generated from ZH_FILE by ``python -m vizhooks.hant`` (never hand-edited).
HANT_FILE = "labels_zh_Hant.txt"


@functools.cache
def chinese_categories(file: str = ZH_FILE) -> tuple[str, ...]:
    """The Chinese names of the 1,000 ImageNet classes (``file``: ZH_FILE, or HANT_FILE for 繁體中文),
    index-aligned with :func:`vizhooks.models.registry.imagenet_categories` (read once)."""
    text = resources.files("vizhooks.models").joinpath(file).read_text(encoding="utf-8")
    names = tuple(line.strip() for line in text.splitlines())
    want = len(imagenet_categories())
    if len(names) != want or not all(names):
        raise RuntimeError(
            f"vizhooks/models/{file} has {len(names)} lines ({sum(not n for n in names)} empty), but torchvision "
            f"names {want} ImageNet classes: restore the file from the vizhooks repository (one non-empty name "
            "a line, in torchvision's order)."
        )
    return names


def class_labels(categories: Sequence[str], lang: str) -> list[str]:
    """The names the page shows for ``categories`` in ``lang``: Chinese names for torchvision's
    ImageNet classes on the Chinese pages ("zh", "zh-Hant"), ``categories`` unchanged otherwise (other
    languages, timm, checkpoints with their own classes)."""
    files = {"zh": ZH_FILE, "zh-Hant": HANT_FILE}
    if lang in files and tuple(categories) == imagenet_categories():
        return list(chinese_categories(files[lang]))
    return list(categories)

