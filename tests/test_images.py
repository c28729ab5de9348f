"""Tests for vizhooks.models.images: loading every kind of upload, refusing bad ones, preprocessing.

Every input is generated here with Pillow / numpy; nothing is read from the network or the repo.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

import numpy as np
import pytest
import torch
from PIL import Image, ImageFile

from vizhooks.models import images
from vizhooks.models.images import (
    MAX_PIXELS,
    InvalidImageError,
    load_image,
    preprocess,
    resize_for_model,
    tensor_to_image,
    to_tensor,
)

# Written out here rather than imported, so the normalisation check is independent.
MEAN = (0.485, 0.456, 0.406)
STD = (0.229, 0.224, 0.225)


# --------------------------------------------------------------------------------------------
# helpers
# --------------------------------------------------------------------------------------------


def encode(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def rgb(img: Image.Image) -> np.ndarray:
    return np.asarray(img, dtype=np.int16)


def gradient(w: int, h: int) -> np.ndarray:
    """A deterministic RGB array with every channel varying, so pixel mix-ups show."""
    y, x = np.mgrid[0:h, 0:w]
    return np.stack(
        [(x * 7 + y) % 256, (y * 11 + 3 * x) % 256, (x * y + 50) % 256], axis=-1
    ).astype(np.uint8)


def noisy(w: int, h: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)


def assert_pixel(img: Image.Image, xy, expected, tol: int = 0):
    got = img.getpixel(xy)
    assert all(abs(int(g) - int(e)) <= tol for g, e in zip(got, expected, strict=False)), (
        f"pixel {xy}: got {got}, expected {expected} (tolerance {tol})"
    )


def png_with_claimed_size(width: int, height: int) -> bytes:
    """A small valid 8x8 grayscale PNG whose IHDR is rewritten to claim width x height."""
    data = bytearray(encode(Image.new("L", (8, 8), 0), "PNG"))
    assert data[12:16] == b"IHDR"
    data[16:24] = struct.pack(">II", width, height)
    data[29:33] = struct.pack(">I", zlib.crc32(bytes(data[12:29])) & 0xFFFFFFFF)
    return bytes(data)


# --------------------------------------------------------------------------------------------
# good inputs
# --------------------------------------------------------------------------------------------
#
# Each case builds (bytes, expected size, checks) where checks is a list of
# (xy, expected RGB, tolerance) or the string "exact:<array>" handled below.

RED, GREEN, BLUE, WHITE, BLACK = (255, 0, 0), (0, 255, 0), (0, 0, 255), (255, 255, 255), (0, 0, 0)


def case_rgb_jpeg():
    im = Image.new("RGB", (64, 48), (200, 30, 40))
    return encode(im, "JPEG", quality=95), (64, 48), [((10, 10), (200, 30, 40), 6)], None


def _exact(fmt, w=33, h=17, **kw):
    arr = gradient(w, h)
    return encode(Image.fromarray(arr), fmt, **kw), (w, h), [], arr


def case_png():
    return _exact("PNG")


def case_webp_lossless():
    return _exact("WEBP", lossless=True)


def case_webp_lossy():
    im = Image.new("RGB", (40, 30), (30, 120, 210))
    return encode(im, "WEBP", quality=90), (40, 30), [((20, 15), (30, 120, 210), 10)], None


def case_bmp():
    return _exact("BMP")


def case_tiff():
    return _exact("TIFF")


def case_gif():
    arr = np.zeros((12, 20, 3), np.uint8)
    arr[:, :10] = RED
    arr[:, 10:] = BLUE
    arr[6:, :] = (255, 255, 0)
    return encode(Image.fromarray(arr), "GIF"), (20, 12), [], arr


def case_gray_png():
    arr = np.tile(np.arange(0, 250, 10, dtype=np.uint8), (3, 1))  # 25 x 3
    return encode(Image.fromarray(arr, "L"), "PNG"), (25, 3), [], np.repeat(arr[..., None], 3, -1)


def case_one_bit():
    arr = (np.indices((6, 8)).sum(0) % 2).astype(bool)  # checkerboard, 8 x 6
    im = Image.fromarray(arr)
    assert im.mode == "1"
    expected = np.where(arr[..., None], 255, 0).repeat(3, -1).astype(np.uint8)
    return encode(im, "PNG"), (8, 6), [], expected


def _palette_image():
    im = Image.new("P", (10, 4), 0)
    im.putpalette([10, 20, 30, 255, 0, 0, 0, 200, 100] + [0] * (256 * 3 - 9))
    px = im.load()
    for x in range(10):
        px[x, 1] = 1
        px[x, 2] = 2
    return im


def case_palette_png():
    im = _palette_image()
    return encode(im, "PNG"), (10, 4), [((0, 0), (10, 20, 30), 0), ((5, 1), RED, 0), ((9, 2), (0, 200, 100), 0)], None


def case_palette_transparent_png():
    im = _palette_image()
    data = encode(im, "PNG", transparency=0)  # index 0 fully transparent
    assert "transparency" in Image.open(io.BytesIO(data)).info
    return data, (10, 4), [((0, 0), WHITE, 0), ((3, 3), WHITE, 0), ((5, 1), RED, 0), ((9, 2), (0, 200, 100), 0)], None


def case_palette_transparent_gif():
    im = _palette_image()
    data = encode(im, "GIF", transparency=0)
    return data, (10, 4), [((0, 0), WHITE, 0), ((5, 1), RED, 0)], None


def case_gray16_png():
    arr = np.array([[0, 32768, 65535, 16384]], dtype=np.uint16)
    im = Image.fromarray(arr)
    assert im.mode == "I;16"
    checks = [((0, 0), BLACK, 0), ((1, 0), (128,) * 3, 1), ((2, 0), WHITE, 0), ((3, 0), (64,) * 3, 1)]
    return encode(im, "PNG"), (4, 1), checks, None


def case_int32_tiff():
    arr = np.array([[0, 32768, 65535]], dtype=np.int32)
    im = Image.fromarray(arr)
    assert im.mode == "I"
    return encode(im, "TIFF"), (3, 1), [((0, 0), BLACK, 0), ((1, 0), (128,) * 3, 1), ((2, 0), WHITE, 0)], None


def case_float_tiff():
    arr = np.array([[0.0, 0.5, 1.0, 0.25]], dtype=np.float32)
    im = Image.fromarray(arr)
    assert im.mode == "F"
    checks = [((0, 0), BLACK, 0), ((1, 0), (128,) * 3, 1), ((2, 0), WHITE, 0), ((3, 0), (64,) * 3, 1)]
    return encode(im, "TIFF"), (4, 1), checks, None


def case_float_tiff_mid_range():
    # values already inside [0, 1] are taken as they are, not stretched to the full range
    arr = np.array([[0.25, 0.5, 0.75]], dtype=np.float32)
    im = Image.fromarray(arr)
    return encode(im, "TIFF"), (3, 1), [((0, 0), (64,) * 3, 1), ((1, 0), (128,) * 3, 1), ((2, 0), (191,) * 3, 1)], None


def case_cmyk_jpeg():
    im = Image.new("CMYK", (16, 16), (0, 255, 255, 0))  # red in Pillow's CMYK model
    data = encode(im, "JPEG", quality=95)
    assert Image.open(io.BytesIO(data)).mode == "CMYK"
    return data, (16, 16), [((8, 8), RED, 8)], None


def case_cmyk_tiff():
    im = Image.new("CMYK", (16, 16), (0, 255, 255, 0))
    im.paste((0, 0, 0, 255), (0, 0, 8, 16))  # left half pure black ink
    data = encode(im, "TIFF")
    assert Image.open(io.BytesIO(data)).mode == "CMYK"
    return data, (16, 16), [((12, 8), RED, 0), ((2, 8), BLACK, 0)], None


def case_rgba_png():
    arr = np.zeros((4, 3, 4), np.uint8)
    arr[0] = (10, 200, 30, 0)  # fully transparent, coloured underneath -> white
    arr[1] = (0, 0, 0, 128)  # half-transparent black on white -> ~127 grey
    arr[2] = (0, 0, 255, 255)  # opaque blue stays blue
    arr[3] = (255, 0, 0, 64)  # quarter red on white -> (255, 191, 191)
    im = Image.fromarray(arr, "RGBA")
    return encode(im, "PNG"), (3, 4), [
        ((0, 0), WHITE, 0),
        ((2, 0), WHITE, 0),
        ((1, 1), (127, 127, 127), 1),
        ((1, 2), BLUE, 0),
        ((1, 3), (255, 191, 191), 1),
    ], None


def case_la_png():
    arr = np.zeros((3, 2, 2), np.uint8)
    arr[0] = (0, 0)  # transparent black -> white
    arr[1] = (0, 255)  # opaque black
    arr[2] = (100, 128)  # 100*128/255 + 255*127/255 = 177.2
    im = Image.fromarray(arr, "LA")
    return encode(im, "PNG"), (2, 3), [((0, 0), WHITE, 0), ((1, 1), BLACK, 0), ((0, 2), (177,) * 3, 1)], None


def _frames():
    return [Image.new("RGB", (12, 9), c) for c in (RED, GREEN, BLUE)]


def case_animated_gif():
    f = _frames()
    data = encode(f[0], "GIF", save_all=True, append_images=f[1:], duration=100, loop=0)
    assert Image.open(io.BytesIO(data)).n_frames == 3
    return data, (12, 9), [((0, 0), RED, 0), ((11, 8), RED, 0)], None


def case_animated_gif_reversed():
    # guards against "always red": a different first frame must come back
    f = _frames()[::-1]
    data = encode(f[0], "GIF", save_all=True, append_images=f[1:], duration=100, loop=0)
    return data, (12, 9), [((5, 5), BLUE, 0)], None


def case_animated_webp():
    f = _frames()
    # the pinned Pillow writes animated WebP; if a future one cannot, this must fail, not skip
    data = encode(f[0], "WEBP", save_all=True, append_images=f[1:], lossless=True, duration=100)
    assert Image.open(io.BytesIO(data)).n_frames == 3
    return data, (12, 9), [((0, 0), RED, 0), ((6, 4), RED, 0)], None


def case_one_pixel():
    im = Image.new("RGB", (1, 1), (123, 45, 67))
    return encode(im, "PNG"), (1, 1), [((0, 0), (123, 45, 67), 0)], None


def case_strip():
    arr = gradient(2000, 3)
    return encode(Image.fromarray(arr), "PNG"), (2000, 3), [], arr


GOOD_CASES = {
    name[len("case_"):]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")
}


@pytest.mark.parametrize("name", sorted(GOOD_CASES))
def test_good_inputs_load_as_rgb(name):
    data, size, checks, exact = GOOD_CASES[name]()
    img = load_image(data)
    assert isinstance(img, Image.Image)
    assert img.mode == "RGB"
    assert img.size == size
    for xy, colour, tol in checks:
        assert_pixel(img, xy, colour, tol)
    if exact is not None:
        np.testing.assert_array_equal(np.asarray(img), exact)


def test_result_is_independent_of_the_source_buffer():
    buf = io.BytesIO(encode(Image.fromarray(gradient(16, 16)), "PNG"))
    img = load_image(buf)
    buf.close()  # the returned picture must already be decoded
    assert np.asarray(img).shape == (16, 16, 3)


@pytest.fixture
def sample(tmp_path):
    arr = gradient(37, 21)
    data = encode(Image.fromarray(arr), "PNG")
    path = tmp_path / "picture.png"
    path.write_bytes(data)
    return arr, data, path


@pytest.mark.parametrize(
    "kind", ["str path", "pathlib.Path", "bytes", "bytearray", "memoryview", "BytesIO", "open file"]
)
def test_every_source_kind_gives_identical_pixels(sample, kind):
    arr, data, path = sample
    if kind == "open file":
        with open(path, "rb") as fh:
            img = load_image(fh)
    else:
        source = {
            "str path": str(path),
            "pathlib.Path": path,
            "bytes": data,
            "bytearray": bytearray(data),
            "memoryview": memoryview(data),
            "BytesIO": io.BytesIO(data),
        }[kind]
        img = load_image(source)
    assert img.mode == "RGB"
    assert img.size == (37, 21)
    np.testing.assert_array_equal(np.asarray(img), arr)


# --------------------------------------------------------------------------------------------
# EXIF orientation
# --------------------------------------------------------------------------------------------

QUADRANTS = {"tl": RED, "tr": GREEN, "bl": BLUE, "br": (255, 255, 0)}


def quadrant_array(w=40, h=20) -> np.ndarray:
    arr = np.zeros((h, w, 3), np.uint8)
    arr[: h // 2, : w // 2] = QUADRANTS["tl"]
    arr[: h // 2, w // 2 :] = QUADRANTS["tr"]
    arr[h // 2 :, : w // 2] = QUADRANTS["bl"]
    arr[h // 2 :, w // 2 :] = QUADRANTS["br"]
    return arr


# What a viewer shows for each EXIF orientation, written with numpy only.
ORIENT = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: np.rot90(a, 2),
    4: lambda a: a[::-1, :],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, -1),  # 90 degrees clockwise
    7: lambda a: np.rot90(a, 2).transpose(1, 0, 2),
    8: lambda a: np.rot90(a, 1),  # 90 degrees counter-clockwise
}


def jpeg_with_orientation(arr: np.ndarray, orientation: int | None) -> bytes:
    im = Image.fromarray(arr)
    kw = {}
    if orientation is not None:
        exif = im.getexif()
        exif[0x0112] = orientation
        kw["exif"] = exif
    return encode(im, "JPEG", quality=95, subsampling=0, **kw)


@pytest.mark.parametrize(
    "orientation, size", [(None, (40, 20)), (1, (40, 20)), (3, (40, 20)), (6, (20, 40)), (8, (20, 40))]
)
def test_exif_orientation_size(orientation, size):
    img = load_image(jpeg_with_orientation(quadrant_array(), orientation))
    assert img.mode == "RGB"
    assert img.size == size


@pytest.mark.parametrize("orientation", range(1, 9))
def test_exif_orientation_pixels(orientation):
    arr = quadrant_array()
    img = load_image(jpeg_with_orientation(arr, orientation))
    expected = np.ascontiguousarray(ORIENT[orientation](arr)).astype(np.int16)
    got = rgb(img)
    assert got.shape == expected.shape
    # JPEG: small errors everywhere, larger ones only along the colour edges
    assert np.abs(got - expected).mean() < 8
    h, w = expected.shape[:2]
    for y, x in [(h // 4, w // 4), (h // 4, 3 * w // 4), (3 * h // 4, w // 4), (3 * h // 4, 3 * w // 4)]:
        assert np.abs(got[y, x] - expected[y, x]).max() <= 20, (orientation, (x, y))


def test_exif_orientation_6_puts_top_left_corner_top_right():
    # distinctive corner block: after a 90 degree clockwise turn the stored top-left corner
    # is shown at the top right.
    arr = np.full((20, 40, 3), 255, np.uint8)
    arr[:8, :8] = RED
    img = load_image(jpeg_with_orientation(arr, 6))
    assert img.size == (20, 40)
    assert_pixel(img, (16, 3), RED, 25)  # top right
    assert_pixel(img, (3, 3), WHITE, 25)  # top left is not red
    assert_pixel(img, (16, 36), WHITE, 25)


def test_broken_exif_orientation_keeps_picture():
    arr = quadrant_array()
    img = load_image(jpeg_with_orientation(arr, 99))  # not a valid orientation value
    assert img.mode == "RGB"
    assert img.size == (40, 20)


# --------------------------------------------------------------------------------------------
# bad inputs
# --------------------------------------------------------------------------------------------


def _jpeg_bytes() -> bytes:
    return encode(Image.fromarray(noisy(96, 96, seed=3)), "JPEG", quality=90)


def _png_bytes() -> bytes:
    return encode(Image.fromarray(noisy(96, 96, seed=4)), "PNG")


def _zip_bytes() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("photo.txt", "not really a photo " * 20)
    return buf.getvalue()


SVG = b"""<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100">
  <circle cx="50" cy="50" r="40" fill="red"/>
</svg>
"""

HTML = b"""<!DOCTYPE html>
<html lang="en"><head><title>My cat</title></head>
<body><p>Look at my cat!</p><img src="cat.jpg"></body></html>
"""

# name -> (bytes factory, words of which one must be in the message, or None)
BAD_BYTES = {
    "empty": (lambda: b"", None),
    "text": (lambda: b"Hello, this is just a note.\nNothing to see here.\n" * 5, ["text"]),
    "html": (lambda: HTML, ["html", "web page"]),
    "svg": (lambda: SVG, ["svg"]),
    "zip": (_zip_bytes, ["zip"]),
    "pdf": (lambda: b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<< /Type /Catalog >>\nendobj\n", ["pdf"]),
    "random": (lambda: np.random.default_rng(12345).bytes(4096), None),
    "truncated jpeg": (lambda: (d := _jpeg_bytes())[: len(d) // 2], None),
    "truncated png": (lambda: (d := _png_bytes())[: len(d) // 2], None),
    "png signature only": (lambda: _png_bytes()[:20], None),
    "jpeg markers only": (lambda: b"\xff\xd8\xff\xe0", None),
}


def check_message(exc: BaseException) -> str:
    assert type(exc) is InvalidImageError
    assert isinstance(exc, ValueError)
    msg = str(exc)
    assert msg.strip(), "empty message"
    assert "\n" not in msg
    assert len(msg) < 300
    assert "Traceback" not in msg
    return msg


@pytest.mark.parametrize("name", sorted(BAD_BYTES))
def test_bad_bytes_raise_invalid_image_error(name):
    make, words = BAD_BYTES[name]
    data = make()
    with pytest.raises(InvalidImageError) as info:
        load_image(data)
    msg = check_message(info.value)
    if words is not None:
        assert any(w in msg.lower() for w in words), msg


@pytest.mark.parametrize("name", ["html", "svg", "zip", "pdf", "truncated jpeg", "empty"])
def test_bad_input_via_file_and_path(name, tmp_path):
    data = BAD_BYTES[name][0]()
    path = tmp_path / f"upload_{name.replace(' ', '_')}.bin"
    path.write_bytes(data)
    for source in (path, str(path), io.BytesIO(data)):
        with pytest.raises(InvalidImageError) as info:
            load_image(source)
        check_message(info.value)


def test_text_messages_differ_by_kind():
    # the kinds must be told apart, not all get one generic sentence
    messages = set()
    for name in ["text", "html", "svg", "zip", "pdf", "random"]:
        with pytest.raises(InvalidImageError) as info:
            load_image(BAD_BYTES[name][0]())
        messages.add(str(info.value))
    assert len(messages) == 6


def test_empty_file_on_disk(tmp_path):
    path = tmp_path / "empty.jpg"
    path.write_bytes(b"")
    with pytest.raises(InvalidImageError) as info:
        load_image(path)
    assert "empty" in check_message(info.value).lower()


def test_missing_path(tmp_path):
    path = tmp_path / "no_such_picture.png"
    for source in (path, str(path)):
        with pytest.raises(InvalidImageError) as info:
            load_image(source)
        assert "no_such_picture.png" in check_message(info.value)


def test_directory_path(tmp_path):
    for source in (tmp_path, str(tmp_path)):
        with pytest.raises(InvalidImageError) as info:
            load_image(source)
        assert "folder" in check_message(info.value).lower()


def test_jpeg_with_corrupted_header_is_rgb_or_refused():
    data = bytearray(_jpeg_bytes())
    sos = data.find(b"\xff\xda")  # start of scan: everything before it is header
    assert sos > 100
    rng = np.random.default_rng(7)
    for start in (sos // 3, sos // 2, 2 * sos // 3):
        bad = bytearray(data)
        bad[start : start + 16] = rng.bytes(16)
        try:
            img = load_image(bytes(bad))
        except InvalidImageError as exc:
            check_message(exc)
        else:
            assert img.mode == "RGB"
            assert img.size[0] >= 1 and img.size[1] >= 1


def test_jpeg_with_zeroed_size_in_header_is_refused():
    data = bytearray(_jpeg_bytes())
    sof = data.find(b"\xff\xc0")
    assert sof > 0
    data[sof + 5 : sof + 9] = b"\x00\x00\x00\x00"  # height and width 0
    with pytest.raises(InvalidImageError) as info:
        load_image(bytes(data))
    check_message(info.value)


@pytest.mark.parametrize("source", [123, None, 1.5, ["a.png"], object()])
def test_wrong_types_raise_type_error(source):
    with pytest.raises(TypeError):
        load_image(source)


def test_text_mode_file_object_raises_type_error():
    with pytest.raises(TypeError):
        load_image(io.StringIO("not bytes"))


# --------------------------------------------------------------------------------------------
# pixel limit, checked before decoding
# --------------------------------------------------------------------------------------------


@pytest.fixture
def block_decoding(monkeypatch):
    """Call the returned function (after building the input) to make any pixel decoding fail."""

    def refuse(self, *args, **kwargs):
        raise AssertionError("decoded")

    def block():
        monkeypatch.setattr(Image.Image, "load", refuse)
        monkeypatch.setattr(ImageFile.ImageFile, "load", refuse)

    return block


def test_block_decoding_really_blocks_decoding(block_decoding):
    # control for the tests below: with decoding blocked a normal small image cannot load,
    # and the failure is not reported as a pixel limit.
    data = encode(Image.new("L", (8, 8)), "PNG")
    assert load_image(data).size == (8, 8)
    block_decoding()
    with pytest.raises(InvalidImageError) as info:
        load_image(data)
    assert "megapixel" not in str(info.value).lower()


def test_claimed_size_header_is_what_pillow_sees():
    data = png_with_claimed_size(10000, 5000)
    assert len(data) < 200
    assert Image.open(io.BytesIO(data)).size == (10000, 5000)


@pytest.mark.parametrize(
    "width, height",
    [
        (10000, 5000),  # 50 MP, under Pillow's own bomb limit: only vizhooks' check catches it
        (8000, 5001),  # one row over the limit
        (11000, 10000),  # 110 MP: Pillow's DecompressionBombWarning
        (20000, 20000),  # 400 MP: Pillow's DecompressionBombError
    ],
)
def test_too_many_pixels_refused_before_decoding(block_decoding, width, height):
    assert width * height > MAX_PIXELS
    data = png_with_claimed_size(width, height)
    block_decoding()
    with pytest.raises(InvalidImageError) as info:
        load_image(data)
    assert "megapixel" in check_message(info.value).lower()


def test_exactly_max_pixels_is_not_refused_for_size(block_decoding):
    assert 8000 * 5000 == MAX_PIXELS
    data = png_with_claimed_size(8000, 5000)
    block_decoding()
    with pytest.raises(InvalidImageError) as info:
        load_image(data)  # header OK, decoding blocked
    assert "megapixel" not in str(info.value).lower()


def test_genuine_41_megapixel_png_refused(block_decoding):
    data = encode(Image.new("L", (6400, 6400), 0), "PNG")
    assert len(data) < 1_000_000
    block_decoding()
    with pytest.raises(InvalidImageError) as info:
        load_image(data)
    msg = check_message(info.value)
    assert "megapixel" in msg.lower()
    assert "41" in msg


# --------------------------------------------------------------------------------------------
# preprocess and friends
# --------------------------------------------------------------------------------------------


def expected_hw(width: int, height: int, size: int) -> tuple[int, int]:
    short, long = min(width, height), max(width, height)
    new_long = min(round(size * long / short), 2 * size)
    return (size, new_long) if width >= height else (new_long, size)


@pytest.mark.parametrize(
    "width, height, size, hw",
    [
        (640, 480, 224, (224, 299)),
        (480, 640, 224, (299, 224)),
        (300, 300, 224, (224, 224)),
        (2000, 3, 224, (224, 448)),
        (3, 2000, 224, (448, 224)),
        (640, 480, 128, (128, 171)),
        (640, 480, 512, (512, 683)),
        (100, 50, 224, (224, 448)),  # exactly 2:1
        (224, 224, 224, (224, 224)),  # already the right size
        (20, 10, 224, (224, 448)),  # upscaling
    ],
)
def test_preprocess_shape(width, height, size, hw):
    assert expected_hw(width, height, size) == hw  # the table agrees with the rule
    x = preprocess(Image.new("RGB", (width, height), (10, 20, 30)), size)
    assert isinstance(x, torch.Tensor)
    assert x.dtype == torch.float32
    assert tuple(x.shape) == (1, 3, *hw)


def test_preprocess_default_size_is_224():
    assert tuple(preprocess(Image.new("RGB", (640, 480))).shape) == (1, 3, 224, 299)


@pytest.mark.parametrize("width, height, size", [(640, 480, 224), (97, 203, 128), (2000, 3, 64), (50, 50, 96)])
def test_preprocess_matches_torchvision(width, height, size):
    """Against torchvision's own pipeline, resize included: ``Resize`` (bilinear, antialias) to the
    size the rule gives, ``ToTensor``, ``Normalize``. Photos agree to float rounding (at most one
    of 255 levels). The 2000 x 3 strip, shrunk 16x one way and stretched 21x the other, takes the
    two-step shrink of Pillow's ``reducing_gap=3.0`` that vizhooks asks for: at most 10 levels
    apart, 2 on average (measured 8 and 1.6)."""
    import torchvision.transforms.functional as TF
    from torchvision.transforms import InterpolationMode

    img = Image.fromarray(noisy(width, height, seed=width + height))
    hw = expected_hw(width, height, size)
    assert resize_for_model(img, size).size == hw[::-1]
    resized = TF.resize(img, list(hw), interpolation=InterpolationMode.BILINEAR, antialias=True)
    ref = TF.normalize(TF.to_tensor(resized), mean=list(MEAN), std=list(STD))[None]
    got = preprocess(img, size)
    assert got.shape == ref.shape
    levels = ((got - ref) * torch.tensor(STD).view(1, 3, 1, 1) * 255).abs()
    most, mean = (10, 2.0) if (width, height) == (2000, 3) else (1, 0.01)
    assert float(levels.max()) <= most and float(levels.mean()) <= mean, (float(levels.max()), float(levels.mean()))


def test_to_tensor_matches_torchvision_without_resizing():
    import torchvision.transforms.functional as TF

    img = Image.fromarray(noisy(31, 17, seed=9))
    ref = TF.normalize(TF.to_tensor(img), mean=list(MEAN), std=list(STD))[None]
    got = to_tensor(img)
    assert got.dtype == torch.float32
    assert tuple(got.shape) == (1, 3, 17, 31)
    torch.testing.assert_close(got, ref, atol=1e-5, rtol=0)


def test_preprocess_solid_colour_values():
    x = preprocess(Image.new("RGB", (300, 200), (255, 0, 128)), 64)
    expected = [(1 - MEAN[0]) / STD[0], (0 - MEAN[1]) / STD[1], (128 / 255 - MEAN[2]) / STD[2]]
    for c in range(3):
        torch.testing.assert_close(x[0, c], torch.full_like(x[0, c], expected[c]), atol=1e-5, rtol=0)


def test_resize_keeps_layout_of_content():
    arr = np.zeros((480, 640, 3), np.uint8)
    arr[:, :320] = RED
    arr[:, 320:] = BLUE
    out = rgb(resize_for_model(Image.fromarray(arr), 224))
    assert out.shape == (224, 299, 3)
    assert (out[:, :140] == RED).all()
    assert (out[:, 160:] == BLUE).all()


def test_preprocess_does_not_modify_input():
    img = Image.fromarray(noisy(64, 48))
    before = np.asarray(img).copy()
    preprocess(img, 32)
    assert img.size == (64, 48)
    np.testing.assert_array_equal(np.asarray(img), before)


@pytest.mark.parametrize("size", [0, 10, 31, 1025, 5000, 224.5, True, -224, "224", None])
def test_bad_size_raises_value_error(size):
    img = Image.new("RGB", (64, 48))
    with pytest.raises(ValueError):
        preprocess(img, size)
    with pytest.raises(ValueError):
        resize_for_model(img, size)


@pytest.mark.parametrize("size", [32, 1024])
def test_size_limits_are_inclusive(size):
    assert tuple(preprocess(Image.new("RGB", (40, 40)), size).shape) == (1, 3, size, size)


@pytest.mark.parametrize("batched", [True, False])
def test_tensor_to_image_round_trip(batched):
    img = Image.fromarray(noisy(150, 100, seed=5))
    resized = resize_for_model(img, 64)
    x = preprocess(img, 64)
    back = tensor_to_image(x if batched else x[0])
    assert back.mode == "RGB"
    assert back.size == resized.size
    diff = np.abs(rgb(back) - rgb(resized))
    assert diff.max() <= 1


def test_to_tensor_then_tensor_to_image_is_exact():
    arr = noisy(40, 30, seed=11)
    arr[0, :6] = [[0, 0, 0], [255, 255, 255], [1, 1, 1], [254, 254, 254], [127, 128, 129], [3, 252, 77]]
    back = tensor_to_image(to_tensor(Image.fromarray(arr)))
    np.testing.assert_array_equal(np.asarray(back), arr)


def test_downscaling_averages_neighbouring_pixels():
    # a one-pixel checkerboard shrunk 4x must come out mid-grey (a filter), not black/white
    board = (np.indices((256, 256)).sum(0) % 2 * 255).astype(np.uint8)
    out = rgb(resize_for_model(Image.fromarray(board).convert("RGB"), 64))
    assert out.shape == (64, 64, 3)
    assert np.abs(out[4:-4, 4:-4] - 127.5).max() <= 20


def test_tensor_to_image_clips_out_of_range():
    x = torch.full((1, 3, 4, 5), 100.0)
    x[0, :, 0, 0] = -100.0
    back = tensor_to_image(x)
    assert back.size == (5, 4)
    assert back.getpixel((1, 1)) == WHITE
    assert back.getpixel((0, 0)) == BLACK


def test_load_then_preprocess_end_to_end():
    data = case_rgba_png()[0]
    x = preprocess(load_image(data), 32)
    assert tuple(x.shape) == (1, 3, *expected_hw(3, 4, 32)) == (1, 3, 43, 32)
    assert torch.isfinite(x).all()


def test_max_pixels_constant():
    assert MAX_PIXELS == 40_000_000 == images.MAX_PIXELS


# --- regressions found while writing this corpus -------------------------------------------


@pytest.mark.parametrize("mode,value,key", [("L", 0, 0), ("RGB", (10, 20, 30), (10, 20, 30))])
def test_colour_key_transparency_becomes_white(mode, value, key):
    data = encode(Image.new(mode, (4, 4), value), "PNG", transparency=key)
    assert load_image(data).getpixel((0, 0)) == (255, 255, 255)


def test_sixteen_bit_colour_key_transparency():
    im = Image.fromarray(np.array([[0, 65535]], dtype=np.uint16))
    data = encode(im, "PNG", transparency=0)
    out = load_image(data)
    assert out.getpixel((0, 0)) == (255, 255, 255) and out.getpixel((1, 0)) == (255, 255, 255)
    im = Image.fromarray(np.array([[0, 32768]], dtype=np.uint16))
    out = load_image(encode(im, "PNG", transparency=32768))
    assert out.getpixel((0, 0)) == (0, 0, 0) and out.getpixel((1, 0)) == (255, 255, 255)


@pytest.mark.parametrize("bad,first", [(np.nan, 0), (np.inf, 255)])
def test_one_bad_float_does_not_blacken_the_image(bad, first):
    im = Image.fromarray(np.array([[bad, 0.5, 0.25]], dtype=np.float32))
    out = np.asarray(load_image(encode(im, "TIFF")))[0, :, 0]
    assert out.tolist() == [first, 128, 64]


@pytest.mark.parametrize("data,kind", [
    (("a" * 4095 + "é").encode(), "text"),
    ("just a note".encode("utf-16"), "text"),
    (b"<!DOCTYPE html><html><body><svg></svg></body></html>", "web page"),
    (b"<!-- x -->\n" * 60 + b"<html><body>hi</body></html>", "web page"),
])
def test_kind_named_correctly(data, kind):
    with pytest.raises(InvalidImageError, match=kind):
        load_image(data)
