from __future__ import annotations

import io
import math
import re
import threading

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.figure import Figure
from PIL import Image

from vizhooks import feature_grid, figure_to_png


def _act(c=12, h=9, w=7, seed=0):
    return torch.randn(1, c, h, w, generator=torch.Generator().manual_seed(seed))


def _mosaic(fig):
    return fig.vizhooks["mosaic"]


def _labels(fig):
    return [str(c) for c in fig.vizhooks["channels"]]


def _tile(mosaic, i, cols, h, w):
    r, c = divmod(i, cols)
    return mosaic[r * (h + 1): r * (h + 1) + h, c * (w + 1): c * (w + 1) + w]


@pytest.mark.parametrize("c,channels,shown", [(12, 16, 12), (64, 16, 16), (10, None, 10), (5, 1, 1)])
def test_tile_count_and_near_square_layout(c, channels, shown):
    fig = feature_grid(_act(c), channels=channels)
    cols = math.ceil(math.sqrt(shown))
    rows = math.ceil(shown / cols)
    assert _mosaic(fig).shape == (rows * 10 - 1, cols * 8 - 1)
    assert _labels(fig) == [str(i) for i in range(shown)]
    heading = fig.vizhooks["title"]
    assert f"{c}×9×7" in heading
    assert (f"{shown}/{c}" in heading) == (shown < c)
    assert not re.search(r"[A-Za-z]{2,}", heading.replace("max", ""))  # no words in the picture: any language


@pytest.mark.parametrize("order,score", [("mean", lambda a: a.mean(dim=(1, 2))),
                                         ("max", lambda a: a.amax(dim=(1, 2)))])
def test_order_really_sorts(order, score):
    act = _act(20, seed=3)
    fig = feature_grid(act, channels=6, order=order)
    want = torch.argsort(score(act[0]), descending=True)[:6].tolist()
    assert [int(t) for t in _labels(fig)] == want
    mosaic, cols = _mosaic(fig), 3
    for i, ch in enumerate(want):
        a = act[0, ch].numpy()
        np.testing.assert_allclose(_tile(mosaic, i, cols, 9, 7), (a - a.min()) / (a.max() - a.min()),
                                   atol=1e-6)


def test_constant_channels_do_not_become_nan():
    act = torch.zeros(1, 4, 5, 5)
    act[0, 1] = 3.0
    for norm in ("channel", "layer"):
        fig = feature_grid(act, channels=4, norm=norm)
        mosaic = _mosaic(fig)
        tiles = [_tile(mosaic, i, 2, 5, 5) for i in range(4)]
        assert all(np.isfinite(t).all() for t in tiles)
        Image.open(io.BytesIO(figure_to_png(fig))).verify()


def test_layer_norm_keeps_values_and_adds_colorbar():
    act = _act(4, seed=5)
    fig = feature_grid(act, channels=4, norm="layer")
    assert len(fig.axes) == 1  # the colorbar
    np.testing.assert_allclose(_tile(_mosaic(fig), 3, 2, 9, 7), act[0, 3].numpy(), atol=1e-6)
    vmin, vmax = fig.vizhooks["clim"]
    assert vmin == pytest.approx(float(act.min())) and vmax == pytest.approx(float(act.max()))
    sym = feature_grid(act, norm="layer", vcenter=0.0, cmap="coolwarm")
    lo, hi = sym.vizhooks["clim"]
    assert lo == pytest.approx(-hi)


def test_no_pyplot_figures_are_left_open():
    plt.close("all")
    for _ in range(5):
        figure_to_png(feature_grid(_act(), channels=8))
    assert plt.get_fignums() == []


@pytest.mark.parametrize("kwargs,match", [
    ({"order": "random"}, "order"), ({"norm": "global"}, "norm"), ({"cmap": "nope"}, "colormap"),
    ({"channels": 0}, "channels"), ({"channels": 2.5}, "channels"), ({"columns": 0}, "columns"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        feature_grid(_act(), **kwargs)


def test_bad_shapes():
    with pytest.raises(ValueError, match="batch"):
        feature_grid(torch.zeros(2, 3, 4, 4))
    with pytest.raises(ValueError, match="shape"):
        feature_grid(torch.zeros(4))
    assert _mosaic(feature_grid(np.ones((3, 4, 4), dtype=np.float64))).shape == (9, 9)


def test_columns_and_png():
    fig = feature_grid(_act(12), channels=12, columns=6)
    assert _mosaic(fig).shape == (2 * 10 - 1, 6 * 8 - 1)
    png = Image.open(io.BytesIO(figure_to_png(fig)))
    assert png.format == "PNG" and png.size[0] > 100


def test_threads_render_independently():
    acts = [_act(16, seed=i) for i in range(6)]
    want = [_mosaic(feature_grid(a)).copy() for a in acts]
    errors, got = [], [None] * len(acts)

    def work(i):
        try:
            fig = feature_grid(acts[i])
            figure_to_png(fig)
            got[i] = _mosaic(fig)
        except BaseException as exc:  # asserted below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(acts))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a render thread hung"
    assert not errors
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)


def test_png_pixels_show_each_channel_in_its_tile_with_the_colormap():
    # Four constant channels on one layer scale: each tile's centre must have exactly the
    # colormap's colour for its value, in row-major tile order, in the PNG itself.
    import matplotlib

    values = [0.0, 1.0, 2.0, 3.0]
    act = torch.stack([torch.full((6, 10), v) for v in values])[None]
    fig = feature_grid(act, channels=4, norm="layer", cmap="magma", order="index")
    png = np.asarray(Image.open(io.BytesIO(figure_to_png(fig))).convert("RGB"))
    k = fig.vizhooks["scale"]
    th, tw = 6 * k, 10 * k
    top = png.shape[0] - (2 * th + 2)  # the picture sits at the bottom-left, under the title
    cmap = matplotlib.colormaps["magma"]
    for i, v in enumerate(values):
        r, c = divmod(i, 2)
        y, x = top + r * (th + 2) + th - 2, c * (tw + 2) + tw - 2  # bottom-right: away from the label
        want = (np.asarray(cmap(v / 3.0)[:3]) * 255).round()
        np.testing.assert_allclose(png[y, x], want, atol=1)
    assert (png[top + th, 0:tw] == 255).all()  # the separator row between the two tile rows


def test_palette_png_matches_feature_grid_and_recolours():
    from vizhooks.render.figures import grid_layout, palette_png

    act = _act(12, h=20, w=30, seed=9)
    layout = grid_layout(act, channels=9, order="mean", title="x")
    fig = feature_grid(act, channels=9, order="mean", title="x")
    assert layout.channels == fig.vizhooks["channels"] and layout.title == fig.vizhooks["title"]
    want = np.asarray(Image.open(io.BytesIO(figure_to_png(fig))).convert("RGB")).astype(int)
    got = np.asarray(Image.open(io.BytesIO(palette_png(layout, "viridis"))).convert("RGB")).astype(int)
    assert got.shape == want.shape
    th, tw = layout.tile
    # tile interiors (away from label boxes and text) are the same colours
    for i in range(9):
        r, c = divmod(i, 3)
        y, x = layout.title_px + r * (th + 2), c * (tw + 2)
        np.testing.assert_array_equal(got[y + th // 2: y + th, x + tw // 2: x + tw],
                                      want[y + th // 2: y + th, x + tw // 2: x + tw])
    magma = np.asarray(Image.open(io.BytesIO(palette_png(layout, "magma"))).convert("RGB")).astype(int)
    assert not np.array_equal(magma, got)
    with pytest.raises(ValueError):
        palette_png(layout, "nope")


@pytest.mark.parametrize("cmap", ["magma", "cividis"])
def test_palette_png_pixels_are_the_colormap_of_each_value(cmap):
    """Decoded palette PNG against matplotlib's own colormap applied to each channel's min-max
    scaled values (independent of vizhooks' renderer): within one of the 252 colour levels."""
    import matplotlib

    from vizhooks.render.figures import grid_layout, palette_png

    act = _act(4, h=10, w=14, seed=3)[0].numpy()  # (4, 10, 14)
    layout = grid_layout(act, channels=4, title="t")
    got = np.asarray(Image.open(io.BytesIO(palette_png(layout, cmap))).convert("RGB")).astype(int)
    colormap = matplotlib.colormaps[cmap]
    th, tw = layout.tile
    k = layout.scale
    rows, cols = layout.grid
    for i, ch in enumerate(layout.channels):
        unit = (act[ch] - act[ch].min()) / (act[ch].max() - act[ch].min())
        want = colormap(unit, bytes=True)[..., :3].astype(int)
        r, c = divmod(i, cols)
        top, left = layout.title_px + r * (th + 2), c * (tw + 2)
        for y in range(5, 10):  # the lower half: the channel number's box sits top-left
            for x in range(14):
                pixel = got[top + y * k + k // 2, left + x * k + k // 2]
                assert np.abs(pixel - want[y, x]).max() <= 4, (ch, y, x, pixel, want[y, x])


# --- fig.savefig(...): the library user's way to a PNG (issue 13) ---------------------------------

def _zlib_flevel(png: bytes) -> int:
    """FLEVEL of the first IDAT's zlib header, read from the file itself (RFC 1950): 0 for zlib
    level 0-1, 1 for 2-5, 2 for the default 6, 3 for 7-9."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pos = 8
    while pos < len(png):
        length = int.from_bytes(png[pos:pos + 4], "big")
        if png[pos + 4:pos + 8] == b"IDAT":
            return png[pos + 9] >> 6  # data[1] = FLG
        pos += 12 + length
    raise AssertionError("no IDAT chunk")


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)))


@pytest.mark.parametrize("norm", ["channel", "layer"])
def test_savefig_png_is_figure_to_png(tmp_path, norm):
    # Tolerance: none. Both are one Agg render of the same figure, losslessly encoded with the
    # same zlib settings, so the decoded pixels (and even the bytes) must be identical.
    fig = feature_grid(_act(16, h=14, w=14, seed=2), channels=16, norm=norm, title="t")
    want = figure_to_png(fig)
    fig.savefig(tmp_path / "x.png")
    fig.savefig(str(tmp_path / "y.PNG"))
    buf, bare = io.BytesIO(), io.BytesIO()
    fig.savefig(buf, format="png")
    fig.savefig(bare)  # no format: savefig.format, "png" by default
    for got in ((tmp_path / "x.png").read_bytes(), (tmp_path / "y.PNG").read_bytes(), buf.getvalue(),
                bare.getvalue()):
        np.testing.assert_array_equal(_pixels(got), _pixels(want))
        assert got == want


def test_savefig_applies_the_fast_png_writer_and_the_figure_dpi(tmp_path, monkeypatch):
    import matplotlib
    from PIL.Image import Image as PILImage

    fig = feature_grid(_act(9), channels=9)
    seen = []
    original = PILImage.save

    def spy(self, fp, format=None, **params):  # what matplotlib hands to Pillow's PNG writer
        seen.append(params)
        return original(self, fp, format, **params)

    monkeypatch.setattr(PILImage, "save", spy)
    rc = dict(matplotlib.rcParams)
    # An rcParams dpi meant for other plots must not resize the grid's canvas.
    with matplotlib.rc_context({"savefig.dpi": 300}):
        fig.savefig(tmp_path / "x.png")
    assert dict(matplotlib.rcParams) == rc  # no global setting was changed
    assert seen and seen[-1]["compress_level"] == 1 and seen[-1]["compress_type"] == 3
    assert seen[-1]["dpi"] == (100, 100)
    png = (tmp_path / "x.png").read_bytes()
    assert _zlib_flevel(png) == 0  # zlib level 1, read back from the file
    assert Image.open(tmp_path / "x.png").size == Image.open(io.BytesIO(figure_to_png(fig))).size
    assert plt.get_fignums() == []


def test_plain_savefig_default_would_be_the_slow_writer():
    # The oracle of the test above: matplotlib's own savefig on the same figure writes zlib
    # level 6 (FLEVEL 2), so FLEVEL 0 there really comes from vizhooks' defaults.
    from matplotlib.figure import Figure

    fig = feature_grid(_act(9), channels=9)
    buf = io.BytesIO()
    Figure.savefig(fig, buf, format="png")
    assert _zlib_flevel(buf.getvalue()) == 2


@pytest.mark.slow
def test_savefig_explicit_arguments_win(tmp_path):
    import matplotlib

    fig = feature_grid(_act(9), channels=9, norm="layer")
    w, h = Image.open(io.BytesIO(figure_to_png(fig))).size

    fig.savefig(tmp_path / "big.png", dpi=200)
    assert Image.open(tmp_path / "big.png").size == (2 * w, 2 * h)

    buf = io.BytesIO()
    fig.savefig(buf, format="png", pil_kwargs={"compress_level": 9})
    assert _zlib_flevel(buf.getvalue()) == 3
    np.testing.assert_array_equal(_pixels(buf.getvalue()), _pixels(figure_to_png(fig)))

    pdf = io.BytesIO()
    fig.savefig(pdf, format="pdf")
    assert pdf.getvalue().startswith(b"%PDF")
    fig.savefig(tmp_path / "x.pdf")
    assert (tmp_path / "x.pdf").read_bytes().startswith(b"%PDF")
    fig.savefig(tmp_path / "x.svg")
    assert b"<svg" in (tmp_path / "x.svg").read_bytes()[:1000]
    fig.savefig(tmp_path / "x.jpg")
    jpg = Image.open(tmp_path / "x.jpg")
    assert jpg.format == "JPEG" and jpg.size == (w, h)
    # No extension and no format: the user's savefig.format decides, and PDF gets no PNG options.
    with matplotlib.rc_context({"savefig.format": "pdf"}):
        bare = io.BytesIO()
        fig.savefig(bare)
    assert bare.getvalue().startswith(b"%PDF")


# --- any dpi scales the whole grid (issue 17, item 8) ---------------------------------------------

def _rgb(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(np.float32)


def _enlarged(png: bytes, size: tuple[int, int], resample=Image.Resampling.NEAREST) -> np.ndarray:
    """The dpi-100 picture resized by PIL (independent of the renderer): what any dpi must show."""
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB").resize(size, resample)).astype(np.float32)


def _white_quadrants(rgb: np.ndarray) -> list[float]:
    """The share of pure-white pixels in each quadrant: the defect left three of them all white."""
    h, w = rgb.shape[:2]
    white = (rgb == 255).all(axis=2)
    return [float(q.mean()) for q in (white[:h // 2, :w // 2], white[:h // 2, w // 2:],
                                      white[h // 2:, :w // 2], white[h // 2:, w // 2:])]


@pytest.mark.parametrize("norm", ["channel", "layer"])
def test_dpi_200_png_is_the_dpi_100_picture_twice_as_large(tmp_path, norm):
    # Tolerance: the tiles and the pixel-drawn title are enlarged by exactly 2 (repeated pixels),
    # so they match PIL's nearest enlargement pixel for pixel; only the colorbar's ticks and labels
    # (norm="layer"), which matplotlib draws again at 200 dpi with sharper edges, differ. A mean
    # absolute difference of 3 (of 255) allows that (measured 0.0 and 0.5); the defect's picture (a
    # quarter of the canvas, the rest white) is off by about 100.
    fig = feature_grid(_act(16, h=14, w=14, seed=4), channels=16, norm=norm, title="t")
    base = figure_to_png(fig)
    w, h = Image.open(io.BytesIO(base)).size
    fig.savefig(tmp_path / "slide.png", dpi=200)
    want = _enlarged(base, (2 * w, 2 * h))
    for got in (_rgb((tmp_path / "slide.png").read_bytes()), _rgb(figure_to_png(fig, dpi=200))):
        assert got.shape == want.shape
        assert np.abs(got - want).mean() < 3
        assert max(_white_quadrants(got)) < 0.5, _white_quadrants(got)
    if norm == "channel":  # no matplotlib text at all: exactly the enlarged picture
        np.testing.assert_array_equal(_rgb(figure_to_png(fig, dpi=200)), want)
    # The default path is untouched: still the figure's own 100 dpi, 1:1.
    np.testing.assert_array_equal(_rgb(figure_to_png(fig)), _rgb(base))


@pytest.mark.parametrize("dpi", [150, 72])
def test_dpi_that_is_not_a_whole_factor_scales_the_whole_grid(dpi):
    # Tolerance: 150 dpi enlarges by 1.5 (nearest), 72 dpi reduces (Lanczos); PIL's bilinear
    # resize of the dpi-100 picture is the reference, so sharp tile edges and label text differ by
    # a few levels on average (measured 1.4 and 3.0); the defect is off by 94 and 44.
    fig = feature_grid(_act(9, h=12, w=12, seed=6), channels=9, title="t")
    base = figure_to_png(fig)
    got = _rgb(figure_to_png(fig, dpi=dpi))
    want = _enlarged(base, (got.shape[1], got.shape[0]), Image.Resampling.BILINEAR)
    w, h = Image.open(io.BytesIO(base)).size
    assert abs(got.shape[1] - w * dpi / 100) <= 1 and abs(got.shape[0] - h * dpi / 100) <= 1
    assert np.abs(got - want).mean() < 8
    assert max(_white_quadrants(got)) < 0.5


def test_tight_bbox_keeps_the_grid(tmp_path):
    # bbox_inches="tight" measures the artists: the pixels must count, not only the title and colorbar.
    fig = feature_grid(_act(9, h=12, w=12, seed=6), channels=9, norm="layer", title="t")
    w, h = Image.open(io.BytesIO(figure_to_png(fig))).size
    fig.savefig(tmp_path / "tight.png", bbox_inches="tight")
    tw, th = Image.open(tmp_path / "tight.png").size
    assert tw >= w and th >= h  # the whole picture plus matplotlib's pad of 0.1 inch


def _png_from_pdf_image(width: int, height: int, idat: bytes) -> np.ndarray:
    """A PDF image stored with PNG predictors (``/Predictor 10``+, 8-bit RGB) holds exactly a PNG's
    IDAT data: wrap it in a PNG and let Pillow undo the row filters."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
           + chunk(b"IDAT", idat) + chunk(b"IEND", b""))
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


def _pdf_page_and_image(pdf: bytes) -> tuple[list[float], list[float], np.ndarray]:
    """(MediaBox, the placement matrix of the one image, its RGB pixels top row first, as PDF
    viewers show them), read from matplotlib's PDF: the content stream's ``cm`` operators before
    ``Do``, and the image XObject."""
    import zlib

    media = [float(v) for v in re.search(rb"/MediaBox \[([^\]]*)\]", pdf).group(1).split()]
    matrix, image = None, None
    for m in re.finditer(rb"\d+ 0 obj\s*<<((?:(?!endobj).)*?)>>\s*stream\r?\n(.*?)endstream", pdf, re.S):
        head, raw = m.group(1), m.group(2)
        if b"/Subtype /Image" in head and b"/DeviceRGB" in head:
            assert b"/FlateDecode" in head and b"/Predictor 1" in head, head
            width = int(re.search(rb"/Width (\d+)", head).group(1))
            height = int(re.search(rb"/Height (\d+)", head).group(1))
            image = _png_from_pdf_image(width, height, raw.rstrip(b"\r\n"))
            continue
        data = zlib.decompressobj().decompress(raw) if b"/FlateDecode" in head else raw
        if b" Do" in data:
            matrix = [1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
            for op in re.findall(rb"((?:[-\d.]+ ){6})cm", data):  # compose in order: new = op x current
                a, b, c, d, e, f = (float(v) for v in op.split())
                A, B, C, D, E, F = matrix
                matrix = [a * A + b * C, a * B + b * D, c * A + d * C, c * B + d * D,
                          e * A + f * C + E, e * B + f * D + F]
    assert matrix is not None and image is not None
    return media, matrix, image


@pytest.mark.parametrize("dpi", ["figure", 200, 50])
def test_pdf_shows_the_whole_grid_at_any_dpi(dpi):
    # Structure, not a rasterizer (poppler is not a dependency): the image must cover the whole
    # page, right side up, and be the PNG's picture. Tolerance: none on placement (a 1e-3 point
    # of rounding in the file); pixels identical, as both come from the same RGBA array.
    fig = feature_grid(_act(9, h=12, w=12, seed=6), channels=9, title="t")
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf", dpi=dpi)
    media, (a, b, c, d, e, f), image = _pdf_page_and_image(buf.getvalue())
    assert media[:2] == [0, 0]
    np.testing.assert_allclose([a, b, c, d, e, f], [media[2], 0, 0, media[3], 0, 0], atol=1e-3)
    np.testing.assert_array_equal(image, _rgb(figure_to_png(fig)).astype(np.uint8))


#: Run in a child process: the browser tests' session-wide Playwright (tests/e2e/conftest.py) may be
#: running in this one, and a second sync Playwright in the same thread fails.
_SCREENSHOT = """
import json, sys
from playwright.sync_api import sync_playwright
html, shot, width, height, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), json.loads(sys.argv[5])
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=args)
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto("file://" + html)
    page.wait_for_function("document.images[0].complete && document.images[0].naturalWidth > 0")
    page.screenshot(path=shot, clip={"x": 0, "y": 0, "width": width, "height": height})
    browser.close()
"""


@pytest.mark.browser
@pytest.mark.parametrize("norm", ["channel", "layer"])
def test_svg_in_chromium_shows_the_png_grid(tmp_path, norm):
    # Tolerance: Chromium draws the SVG's embedded picture scaled from points to the PNG's pixel
    # size (pixelated, 1:1) and the colorbar's vector paths with its own anti-aliasing: a mean
    # absolute difference under 4 (of 255) per pixel. The defect (the picture in a quarter of the
    # page at dpi 200) would be off by about 100.
    import json
    import subprocess
    import sys
    from pathlib import Path

    from benchmarks.server import CHROMIUM_ARGS

    if not Path("/usr/bin/chromium").exists():
        pytest.fail("chromium is missing: `make test` installs it with apt-get")
    fig = feature_grid(_act(9, h=12, w=12, seed=6), channels=9, norm=norm, title="t")
    want = _rgb(figure_to_png(fig))
    height, width = want.shape[:2]
    for dpi in ("figure", 200):
        fig.savefig(tmp_path / f"grid-{dpi}.svg", dpi=dpi)
        html = tmp_path / f"grid-{dpi}.html"
        html.write_text(f'<html><body style="margin:0;background:#f0f"><img src="grid-{dpi}.svg" '
                        f'style="display:block;width:{width}px;height:{height}px"></body></html>')
        shot = tmp_path / f"shot-{dpi}.png"
        subprocess.run([sys.executable, "-c", _SCREENSHOT, str(html), str(shot), str(width), str(height),
                        json.dumps(CHROMIUM_ARGS)], check=True, timeout=120)
        got = _rgb(shot.read_bytes())
        assert got.shape == want.shape
        diff = np.abs(got - want).mean()
        assert diff < 2, (dpi, diff)
        assert max(_white_quadrants(got)) < 0.5


def test_chinese_labels_find_a_font_installed_after_matplotlibs_font_list(monkeypatch):
    """matplotlib keeps the fonts it found in a cache until its own version changes; `make test`
    installs fonts-wqy-zenhei after that cache is first written, and then every Chinese label was
    drawn as empty boxes ("Glyph ... missing from font(s) DejaVu Sans"). Here the cache is made to
    forget every Chinese font, as it was on a fresh machine."""
    import warnings

    from matplotlib import font_manager

    from vizhooks.render.figures import CJK_FONTS, text_fonts

    on_disk = [p for p in font_manager.findSystemFonts() if re.search(r"wqy|cjk|sourcehan", p, re.IGNORECASE)]
    assert on_disk, "no Chinese font on this machine: `make chromium` installs fonts-wqy-zenhei"
    stale = [f for f in font_manager.fontManager.ttflist if f.fname not in on_disk and f.name not in CJK_FONTS]
    monkeypatch.setattr(font_manager.fontManager, "ttflist", stale)
    text_fonts.cache_clear()
    try:
        fonts = text_fonts()
        assert fonts[0] == "DejaVu Sans" and len(fonts) == 2 and fonts[1] in CJK_FONTS
        fig = Figure(figsize=(2, 1))
        fig.suptitle("卷积层 conv1 和 层", family=list(fonts))
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # matplotlib warns for each glyph no font in the list has
            figure_to_png(fig)
    finally:
        text_fonts.cache_clear()


def _box_rects(fig):
    """The rectangles of the frameless Axes feature_grid lays over the picture for ``box=``."""
    (ax,) = [ax for ax in fig.axes if ax.get_label() == "box"]
    return [(p.get_x(), p.get_y(), p.get_x() + p.get_width(), p.get_y() + p.get_height()) for p in ax.patches]


@pytest.mark.parametrize("norm", ["channel", "layer"])
def test_box_outlines_the_region_on_every_tile(norm):
    # the region's positions are 1 and the rest 0 in every channel, so the bright pixels of the plain
    # grid are exactly where the region lies on each tile: each rectangle must enclose one such block
    h, w, c = 10, 12, 5
    top, left, bottom, right = 4, 3, 8, 10
    act = torch.zeros(c, h, w)
    act[:, top:bottom, left:right] = 1.0
    plain = np.asarray(Image.open(io.BytesIO(figure_to_png(feature_grid(act, channels=None, norm=norm)))))[..., :3]
    bright = np.all(plain == np.asarray(plt.get_cmap("viridis")(1.0, bytes=True)[:3]), axis=-1)
    fig = feature_grid(act, channels=None, norm=norm, box=(top, left, bottom, right))
    assert fig.vizhooks["box"] == (top, left, bottom, right)
    rects = _box_rects(fig)
    assert len(rects) == c
    k = fig.vizhooks["scale"]
    inside = 0
    for x0, y0, x1, y1 in rects:
        assert (x1 - x0, y1 - y0) == ((right - left) * k, (bottom - top) * k)
        xs, ys = slice(int(x0), int(x1)), slice(int(y0), int(y1))
        assert bright[ys, xs].all()
        inside += int(bright[ys, xs].sum())
        # one pixel outside the rectangle on each side is no longer the region
        assert not bright[int(y0) - 1, xs].any() and not bright[int(y1), xs].any()
        assert not bright[ys, int(x0) - 1].any() and not bright[ys, int(x1)].any()
    assert inside == int(bright.sum())  # every bright pixel lies in one of the rectangles
    # and the picture shows them: red on each rectangle's left edge, where the plain grid had none
    boxed = np.asarray(Image.open(io.BytesIO(figure_to_png(fig))))[..., :3].astype(int)
    for x0, y0, _, y1 in rects:
        edge = boxed[int((y0 + y1) / 2), int(x0)]
        assert edge[0] > 200 and edge[1] < 80 and edge[2] < 80


@pytest.mark.parametrize("box", [(0, 0, 0, 3), (2, 2, 1, 3), (0, 0, 11, 3), (0, 0, 3), (-1, 0, 2, 2)])
def test_a_box_outside_the_map_is_one_sentence(box):
    with pytest.raises(ValueError, match="box"):
        feature_grid(_act(c=2, h=10, w=12), box=box)


# --- signed notes (a tile's relevance): red for +, blue for - ------------------------------------------


def _inks(rgb: np.ndarray) -> tuple[int, int]:
    """(red pixels, blue pixels) of an RGB region: clearly red or clearly blue, as no gray level is."""
    r, g, b = (rgb[..., i].astype(int) for i in range(3))
    return int(((r - np.maximum(g, b)) > 80).sum()), int(((b - r) > 80).sum())


def _tile_inks(picture: np.ndarray, layout, i: int) -> tuple[int, int]:
    th, tw = layout.tile
    r, c = divmod(i, layout.grid[1])
    y, x = layout.title_px + r * (th + 2), c * (tw + 2)
    return _inks(picture[y: y + th, x: x + tw])


#: Planted: channel -> its note; the grid shows channels 2, 0, 3, 1, 4 (a relevance order).
NOTES = ["+0.5", "-0.25", "+1.2", "-3e-05", "+0"]
SIGNS = {0: "+", 1: "-", 2: "+", 3: "-", 4: "0"}


@pytest.mark.parametrize("path", ["feature_grid", "palette_png"])
def test_each_tiles_relevance_is_red_when_positive_and_blue_when_negative(path):
    """In the drawn picture (a gray colormap, so only the notes can be red or blue): each tile's label
    holds red ink for a positive note, blue for a negative one, neither for zero; a grid without notes
    has none."""
    from vizhooks.render.figures import grid_layout, palette_png

    act, ranking = _act(5, h=12, w=12, seed=3), [2, 0, 3, 1, 4]
    args = {"channels": None, "columns": 5, "ranking": ranking}
    layout = grid_layout(act, notes=NOTES, **args)
    if path == "feature_grid":
        png = figure_to_png(feature_grid(act, cmap="gray", notes=NOTES, **args))
        bare = figure_to_png(feature_grid(act, cmap="gray", **args))
    else:
        png, bare = palette_png(layout, "gray"), palette_png(grid_layout(act, **args), "gray")
    picture = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    for i, channel in enumerate(ranking):
        red, blue = _tile_inks(picture, layout, i)
        sign = SIGNS[channel]
        assert (red > 0, blue > 0) == (sign == "+", sign == "-"), (channel, NOTES[channel], red, blue)
    assert _inks(np.asarray(Image.open(io.BytesIO(bare)).convert("RGB"))) == (0, 0)


def test_overview_notes_are_red_and_blue_under_their_tiles():
    from vizhooks.network.overview import OverviewRow
    from vizhooks.render.figures import overview_png

    tiles = np.random.default_rng(0).random((3, 24, 24)).astype(np.float32)
    rows = [OverviewRow("conv1", 8, (24, 24), (5, 1, 7), (0.0, 0.0, 0.0), tiles, notes=("-0.4", "+2", "-1e-03")),
            OverviewRow("conv2", 8, (24, 24), (0, 2, 3), (0.0, 0.0, 0.0), tiles)]
    picture = np.asarray(Image.open(io.BytesIO(overview_png(rows, cmap="gray"))).convert("RGB"))
    x0, tw, gap = 12 + 300, 24, 4  # the picture's margin and label column, the tiles' width and gap
    column = [_inks(picture[:, x0 + j * (tw + gap): x0 + j * (tw + gap) + tw]) for j in range(3)]
    assert [(red > 0, blue > 0) for red, blue in column] == [(False, True), (True, False), (False, True)]
    plain = np.asarray(Image.open(io.BytesIO(overview_png(rows[1:], cmap="gray"))).convert("RGB"))
    assert _inks(plain) == (0, 0)


def test_a_long_grid_title_is_drawn_smaller_to_fit_the_grid():
    """Review 2026-12-06: the heading drawn at 20 px ran off a 622 px grid for DenseNet's
    "features.denseblock4.denselayer16.conv2"; it steps down (to 13 px at least) until it fits."""
    import io

    import numpy as np
    import torch
    from PIL import Image

    from vizhooks.render.figures import feature_grid

    fig = feature_grid(torch.rand(32, 7, 7, generator=torch.Generator().manual_seed(0)), channels=16,
                       title="features.denseblock4.denselayer16.conv2")
    out = io.BytesIO()
    fig.savefig(out, format="png", dpi=100)
    page = np.asarray(Image.open(out).convert("L"))
    band = page[:34]
    inked = np.nonzero((band < 128).any(axis=0))[0]
    assert page.shape[1] < 700 and inked.size and inked.max() < page.shape[1] - 6, (page.shape, inked.max())
    short = feature_grid(torch.rand(32, 7, 7), channels=16, title="conv1")
    out = io.BytesIO()
    short.savefig(out, format="png", dpi=100)
    rows = np.nonzero((np.asarray(Image.open(out).convert("L"))[:34] < 128).any(axis=1))[0]
    assert rows.max() - rows.min() >= 13  # a short one keeps its large type
