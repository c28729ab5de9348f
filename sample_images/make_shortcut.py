"""Write ``sample_images/shortcut/``: the Clever Hans lesson without a camera (issue 30).

Two classes of drawn shapes, ``circle`` and ``triangle``, on noisy pastel backgrounds:

* ``teach/``: 20 of each. Every triangle carries a yellow sticker in its bottom-right corner; no
  circle does. Taught on these, a model can be right for the wrong reason: the sticker alone
  separates the classes, and it is far easier to see than the shape.
* ``test/``: 10 of each with the sticker swapped: the circles carry it, the triangles do not. A
  model that learned the sticker gets these wrong, and the audit's clusters of ``teach/`` show its
  heat in the bottom-right corner.

Run from the repository root: ``python sample_images/make_shortcut.py`` (the same pictures every
time: a fixed seed; about 200 KB of JPEG).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

SIDE = 128
TEACH, TEST = 20, 10
STICKER = (250, 215, 0)


def picture(rng: np.random.Generator, shape: str, sticker: bool) -> Image.Image:
    """One shape of a random colour, size and place on a noisy pastel background; the sticker in the
    bottom-right corner when asked."""
    background = rng.integers(150, 235, 3)
    noise = rng.normal(0, 10, (SIDE, SIDE, 3))
    im = Image.fromarray(np.clip(background + noise, 0, 255).astype(np.uint8))
    draw = ImageDraw.Draw(im)
    colour = tuple(int(c) for c in rng.integers(20, 140, 3))
    r = int(rng.integers(24, 38))
    cx, cy = (int(v) for v in rng.integers(SIDE // 2 - 14, SIDE // 2 + 15, 2))
    if shape == "circle":
        draw.ellipse((cx - r, cy - r, cx + r, cy + r), fill=colour)
    else:
        turn = rng.uniform(0, 2 * np.pi)
        corners = [(cx + r * np.cos(turn + k * 2 * np.pi / 3), cy + r * np.sin(turn + k * 2 * np.pi / 3))
                   for k in range(3)]
        draw.polygon(corners, fill=colour)
    if sticker:
        s = int(rng.integers(16, 21))
        x0, y0 = SIDE - s - int(rng.integers(3, 7)), SIDE - s - int(rng.integers(3, 7))
        draw.rectangle((x0, y0, x0 + s, y0 + s), fill=STICKER, outline=(40, 40, 40), width=2)
    return im


def write(root: Path) -> list[Path]:
    """Write the folder afresh under ``root`` and return the files written."""
    if root.exists():
        shutil.rmtree(root)
    rng = np.random.default_rng(30)
    written = []
    for part, count, with_sticker in (("teach", TEACH, "triangle"), ("test", TEST, "circle")):
        for shape in ("circle", "triangle"):
            folder = root / part / shape
            folder.mkdir(parents=True)
            for i in range(count):
                path = folder / f"{shape}_{i:02d}.jpg"
                picture(rng, shape, shape == with_sticker).save(path, quality=85)
                written.append(path)
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).with_name("shortcut")
    files = write(target)
    print(f"wrote {len(files)} pictures, {sum(f.stat().st_size for f in files) // 1024} KB, under {target}")
