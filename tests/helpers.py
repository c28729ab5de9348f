"""Helpers shared by the test modules, written once here. No test module imports another: what two
modules need lives in this file (plain functions and constants) or in tests/conftest.py (fixtures).

Sections: hooks and the command line; the dataset-exemplar folder; the page (AppTest, appended by
the page's tests)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from PIL import Image
from torch import nn

# --- hooks and the command line ---------------------------------------------------------------


def count_hooks(model: nn.Module) -> int:
    """Every hook left on ``model``: forward, forward-pre, backward (the old and the full kind share
    ``_backward_hooks``) and full-backward-pre, over ``model.modules()``. Written out from torch's own
    dicts rather than calling ``vizhooks.ops.hook_count``, so the tests check that one too."""
    return sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) + len(m._backward_pre_hooks)
        for m in model.modules()
    )


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    """``python -m vizhooks *argv`` in this process: (exit code, stdout, stderr)."""
    from vizhooks.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the dataset-exemplar folder (test_exemplars.py, test_exemplars_ray.py) --------------------

EXEMPLAR_LAYERS = ["layer1.0.conv1", "layer2.0.conv2"]
EXEMPLAR_SIZE, EXEMPLAR_TOP = 64, 3
EXEMPLAR_SHAPES = [(64, 48), (48, 64), (80, 80), (96, 40), (32, 32)]  # (width, height); 80x80, 32x32 give 64x64


def _picture(rng: np.random.Generator, width: int, height: int, kind: int) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width]
    if kind == 0:
        return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    if kind == 1:  # stripes at a random angle and frequency, random colours
        angle, freq = rng.uniform(0, np.pi), rng.uniform(0.1, 0.8)
        wave = np.sin(freq * (np.cos(angle) * xx + np.sin(angle) * yy))[..., None]
        a, b = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
        return (a + (b - a) * (wave + 1) / 2).astype(np.uint8)
    canvas = np.broadcast_to(rng.integers(0, 256, 3), (height, width, 3)).astype(np.uint8).copy()
    for _ in range(int(rng.integers(1, 5))):  # a few random rectangles
        x0, y0 = int(rng.integers(0, width - 4)), int(rng.integers(0, height - 4))
        canvas[y0:y0 + int(rng.integers(3, 20)), x0:x0 + int(rng.integers(3, 20))] = rng.integers(0, 256, 3)
    return canvas


def write_exemplar_folder(root: Path) -> Path:
    """40 seeded pictures in three levels of folders, an exact twin under two names, a truncated PNG,
    a text file named .jpg, a .txt and a hidden picture: the folder the atlas tests scan."""
    rng = np.random.default_rng(7)
    for i in range(40):
        width, height = EXEMPLAR_SHAPES[i % len(EXEMPLAR_SHAPES)]
        sub = ("", "sub/", "sub/deeper/")[i % 3]
        path = root / f"{sub}img{i:02d}.{'png' if i % 2 else 'jpg'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(_picture(rng, width, height, i % 3)).save(path, quality=92)
    twin = Image.fromarray(_picture(rng, 80, 80, 2))  # the same pixels under two names: exact ties
    twin.save(root / "twin_b.png")
    twin.save(root / "sub" / "twin_a.png")
    good = (root / "sub" / "img01.png").read_bytes()
    (root / "broken.png").write_bytes(good[: len(good) // 2])  # truncated
    (root / "sub" / "notes.jpg").write_text("just some notes, not a photo\n")
    (root / "readme.txt").write_text("not counted: no image extension\n")
    (root / ".hidden.png").write_bytes(good)  # hidden files are left out
    return root
