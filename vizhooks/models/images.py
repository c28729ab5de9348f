"""Reading and validating images, and turning them into model input.

Everything a person can upload goes through :func:`load_image`, which either returns an RGB
picture or raises :class:`InvalidImageError` with a sentence a student understands.
"""

from __future__ import annotations

import io
import os
import struct
import warnings
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import numpy as np
import torch
from PIL import Image, ImageOps, UnidentifiedImageError

from vizhooks.errors import CodedError
from vizhooks.i18n import OSReason

IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)

#: Larger images are refused before their pixels are decoded (a 40 MP photo is already
#: 120 MB of RGB; a decompression bomb would be far more).
MAX_PIXELS = 40_000_000

MIN_SIZE, MAX_SIZE = 32, 1024


class InvalidImageError(CodedError):
    """The input is not an image vizhooks can use; the message says why, for a person (and ``code``,
    ``values`` say it for a page in another language)."""


ImageSource = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO


@dataclass(frozen=True)
class InputSpec:
    """How a model wants its pictures.

    Attributes:
        mean, std: normalisation.
        interpolation: ``"bilinear"`` or ``"bicubic"`` (the resize the model was trained with).
        fixed_size: side of the square input the model needs (ViT, Swin, MaxViT), else None.
        min_size: smallest shorter side it accepts (Inception v3: 75).
        resize_side: the shorter side a fixed-size picture is resized to before its centre is
            cropped (MobileViT: 288, then a 256 crop); None: ``fixed_size`` itself.
        channels: ``"RGB"``, or ``"BGR"`` for a model that reads its colour channels the other way
            round (MobileViT): tensors stay RGB and the model's wrapper flips them.
        squash: a fixed-size picture is resized to a square of side ``resize_side`` (or ``fixed_size``)
            without keeping its aspect ratio, then its centre cropped (a Hugging Face processor's
            ``{"height", "width"}`` size: ViT, DeiT, BEiT, Swin; ConvNeXt at 384 and above).
        resize_rule: ``"vizhooks"`` (longer side rounded, PIL's ``reducing_gap=3``) or ``"transformers"``
            (longer side truncated and one-step resampling, as transformers' image processors do).
    """

    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    interpolation: str = "bilinear"
    fixed_size: int | None = None
    min_size: int = 1
    resize_side: int | None = None
    channels: str = "RGB"
    squash: bool = False
    resize_rule: str = "vizhooks"


#: PIL's resampling numbers, as Hugging Face image processors save them.
_PIL_RESAMPLE = {0: "nearest", 1: "lanczos", 2: "bilinear", 3: "bicubic"}


def processor_spec(processor: Mapping[str, Any] | None, image_size: object = None) -> InputSpec:
    """How a Hugging Face model wants its pictures, from its saved image processor
    (``preprocessor_config.json``, completed by the processor class's own defaults where
    transformers can build it: see :func:`vizhooks.models.architectures.hf_processor`).

    Fields used: ``image_mean`` and ``image_std`` (only when ``do_normalize`` is true), ``do_rescale``
    and ``rescale_factor`` (folded into mean and std: the tensor is the processor's own),
    ``resample``, ``size``, ``do_center_crop`` with ``crop_size``, ``crop_pct`` (ConvNeXt's and
    PoolFormer's processors, which ResNet, RegNet and CvT use too), and ``do_flip_channel_order``
    (``channels="BGR"``); ``image_processor_type`` says whose ``crop_pct`` rule applies. Sizes, as
    transformers' processors resize:

    - ``{"height": h, "width": w}`` (ViT, DeiT, BEiT, Swin): the photo squashed to an ``h`` x ``h``
      square (aspect ratio not kept), then the centre cropped to ``crop_size`` if there is one;
    - ``{"shortest_edge": s}`` with a centre crop (MobileViT): the shorter side resized to ``s``, then
      the centre cropped;
    - ConvNeXt's ``{"shortest_edge": s}``: below 384 the shorter side resized to ``int(s / crop_pct)``
      and the centre cropped to ``s``; at 384 and above the photo squashed to ``s`` x ``s``;
    - PoolFormer's: the shorter side resized to ``int(s / crop_pct)``, then the centre crop;
    - ``{"shortest_edge": s}`` without a crop: the model takes any size, so the page's size applies.

    Without a processor: ImageNet mean and std, bilinear, and a fixed side of the config's
    ``image_size`` when it has one.

    Raises:
        CodedError: ``model_not_square``: the model takes only non-square pictures (a ``{"height", "width"}``
            size or crop, or an ``image_size`` pair, of two different sides), which vizhooks does not make.
            A non-square ``size`` followed by a square crop is squashed to ``height`` x ``height`` (transformers:
            to ``height`` x ``width``, padded where the crop is wider: the one case whose pixels differ).
    """
    if not processor:
        pair = _hw(image_size)
        _refuse_non_square(pair)
        return InputSpec(fixed_size=pair[0] if pair else None)
    if processor.get("do_normalize", True):
        mean = _triple(processor.get("image_mean"), IMAGENET_MEAN)
        std = _triple(processor.get("image_std"), IMAGENET_STD)
    else:
        mean, std = (0.0, 0.0, 0.0), (1.0, 1.0, 1.0)
    # the processor gives (pixel * factor - mean) / std; to_tensor gives (pixel / 255 - mean') / std'
    scale = 255.0 * _number(processor.get("rescale_factor"), 1 / 255) if processor.get("do_rescale", True) else 255.0
    if abs(scale - 1.0) > 1e-9:
        mean = (mean[0] / scale, mean[1] / scale, mean[2] / scale)
        std = (std[0] / scale, std[1] / scale, std[2] / scale)
    interpolation = _PIL_RESAMPLE.get(processor.get("resample"), "bilinear")  # type: ignore[arg-type]
    size, crop = _side(processor.get("size")), _side(processor.get("crop_size"))
    crop = crop if processor.get("do_center_crop") and isinstance(crop, int) else None
    _refuse_non_square(_hw(processor.get("crop_size")) if crop else _hw(processor.get("size")))
    kind = str(processor.get("image_processor_type") or processor.get("feature_extractor_type") or "")
    crop_pct = _number(processor.get("crop_pct"), 224 / 256)
    fixed, resize, squash = None, None, False
    if kind.startswith("ConvNext") and isinstance(size, tuple):  # ConvNextImageProcessor.resize
        if size[0] < 384:
            fixed, resize = size[0], int(size[0] / crop_pct)
        else:
            fixed, squash = size[0], True
    elif kind.startswith("PoolFormer") and size is not None:  # PoolFormerImageProcessor.resize, then its crop
        edge = size if isinstance(size, int) else size[0]
        fixed, resize = crop, int(edge / crop_pct)
    elif isinstance(size, int):  # {"height", "width"}, or an old processor's single number
        # squashed as transformers does a {"height", "width"} size; a bare number (a file transformers could
        # not read) keeps the shorter-side resize
        fixed, resize, squash = crop or size, size, isinstance(processor.get("size"), (Mapping, list, tuple))
    elif crop and isinstance(size, tuple):  # {"shortest_edge"}, then the centre crop
        fixed, resize = crop, size[0]
    if fixed and resize is not None and resize <= fixed:
        resize = None
    channels = "BGR" if processor.get("do_flip_channel_order") else "RGB"
    return InputSpec(mean, std, interpolation, fixed, 1, resize, channels, squash, "transformers")


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _hw(value: object) -> tuple[int, int] | None:
    """A fixed input's (height, width) from a processor's ``{"height", "width"}`` size, a square side, or a
    config's ``image_size`` pair; None for anything else (a shortest edge: any shape)."""
    if isinstance(value, Mapping):
        value = [value.get("height"), value.get("width")]
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    if isinstance(value, (list, tuple)) and len(value) == 2 and all(type(v) is int for v in value):
        return value[0], value[1]
    return None


def _refuse_non_square(hw: tuple[int, int] | None) -> None:
    if hw is not None and hw[0] != hw[1]:
        raise CodedError(code="model_not_square", height=hw[0], width=hw[1])


def _side(value: object) -> int | tuple[int] | None:
    """A processor's ``size``/``crop_size``: a square side (int), a shortest edge (a 1-tuple), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping):
        if isinstance(value.get("height"), int):
            return int(value["height"])
        if isinstance(value.get("shortest_edge"), int):
            return (int(value["shortest_edge"]),)
    hw = _hw(value)  # a (height, width) pair, as transformers' get_size_dict reads one
    return hw[0] if hw else None


def clip_spec(visual: Any) -> InputSpec:
    """open_clip's preprocessing of a CLIP image tower: mean, std, interpolation, a fixed square side."""
    cfg = getattr(visual, "preprocess_cfg", None) or {}
    mean = _triple(cfg.get("mean", visual.image_mean), IMAGENET_MEAN)
    std = _triple(cfg.get("std", visual.image_std), IMAGENET_STD)
    size = cfg.get("size", visual.image_size)
    side = int(size if isinstance(size, int) else size[0])
    return InputSpec(mean, std, str(cfg.get("interpolation", "bicubic")), side, 1)


def _triple(value: object, default: tuple[float, float, float]) -> tuple[float, float, float]:
    if isinstance(value, (int, float)):
        return (float(value),) * 3
    if isinstance(value, (list, tuple)) and len(value) == 3:
        return (float(value[0]), float(value[1]), float(value[2]))
    return default


def _read_bytes(source: ImageSource) -> bytes:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return bytes(source)
    if isinstance(source, (str, os.PathLike)):
        try:
            with open(source, "rb") as fh:
                return fh.read()
        except FileNotFoundError:
            raise InvalidImageError(code="no_file", path=os.fspath(source)) from None
        except IsADirectoryError:
            raise InvalidImageError(code="image_folder", path=os.fspath(source)) from None
        except OSError as exc:
            raise InvalidImageError(code="unreadable", path=os.fspath(source), reason=OSReason.of(exc)) from None
    if hasattr(source, "read"):
        data = source.read()
        if not isinstance(data, (bytes, bytearray)):
            raise TypeError("load_image needs a binary file object (opened with 'rb').")
        return bytes(data)
    raise TypeError(
        f"load_image takes a path, bytes or a binary file object, not {type(source).__name__}."
    )


def _looks_like_text(head: bytes) -> bool:
    if head.startswith((b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf")):  # UTF-16/UTF-8 byte order marks
        return True
    for cut in range(4):  # the sample may end in the middle of a multi-byte character
        try:
            head[: len(head) - cut].decode("utf-8")
            return True
        except UnicodeDecodeError:
            continue
    return False


def _what_is_it(data: bytes) -> str:
    """A guess at what a non-image file is: its kind, the refusal ``image_<kind>`` of the catalogue."""
    head = data[:4096].lower()
    if head.lstrip().startswith(b"%pdf"):
        return "pdf"
    if b"<html" in head or b"<!doctype html" in head:
        return "html"
    if b"<svg" in head:
        return "svg"
    if data[:4] == b"PK\x03\x04" or zipfile.is_zipfile(io.BytesIO(data)):
        return "zip"
    if _looks_like_text(data[:4096]):
        return "text"
    return "unknown"


def _on_white(rgba: Image.Image) -> Image.Image:
    white = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
    return Image.alpha_composite(white, rgba.convert("RGBA")).convert("RGB")


def _to_rgb(im: Image.Image) -> Image.Image:
    mode = im.mode
    key = im.info.get("transparency")  # a colour key: pixels of this value are transparent
    if mode == "RGB" and key is None:
        return im
    if mode in ("P", "L", "RGB") and key is not None and not isinstance(key, bytes):
        return _on_white(im.convert("RGBA"))
    if mode in ("RGBA", "LA", "PA", "RGBa", "La", "P"):
        return _on_white(im) if mode != "P" else im.convert("RGB")
    if mode in ("I", "I;16", "I;16L", "I;16B", "I;16N", "F"):
        arr = np.asarray(im, dtype=np.float64)
        finite = arr[np.isfinite(arr)]
        if mode == "F":
            # Float images: [0, 1] is the usual convention; anything else is stretched.
            in_unit = finite.size == 0 or (finite.min() >= 0 and finite.max() <= 1)
            lo, hi = (0.0, 1.0) if in_unit else (float(finite.min()), float(finite.max()))
        else:
            lo = min(0.0, float(finite.min())) if finite.size else 0.0
            hi = 65535.0 if not finite.size or finite.max() <= 65535 else float(finite.max())
        unit = np.nan_to_num((arr - lo) / ((hi - lo) or 1.0), nan=0.0, posinf=1.0, neginf=0.0)
        gray = Image.fromarray((np.clip(unit, 0, 1) * 255 + 0.5).astype(np.uint8))
        if key is not None and not isinstance(key, bytes):
            alpha = Image.fromarray(np.where(arr == key, 0, 255).astype(np.uint8))
            return _on_white(Image.merge("LA", (gray, alpha)))
        return gray.convert("RGB")
    return im.convert("RGB")


def load_image(source: ImageSource) -> Image.Image:
    """Read an image from a path, bytes or binary file object as an RGB picture.

    Applies the EXIF orientation, takes the first frame of animations, converts grayscale,
    palette, 16-bit, float and CMYK images to RGB and composites transparency on white.

    Raises:
        InvalidImageError: empty file, not an image, truncated or corrupt data, or more than
            ``MAX_PIXELS`` pixels (checked from the header, before decoding).
        TypeError: ``source`` is not a path, bytes or binary file object.

    Example:
        >>> load_image("sample_images/chelsea.jpg").mode
        'RGB'
    """
    data = _read_bytes(source)
    if not data:
        raise InvalidImageError(code="image_empty")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # damaged-header chatter ("Truncated File Read"): we decide below
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            im: Image.Image = Image.open(io.BytesIO(data))
            width, height = im.size
    except (UnidentifiedImageError, SyntaxError):
        raise InvalidImageError(code=f"image_{_what_is_it(data)}") from None
    except (Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise InvalidImageError(code="image_bomb", limit=round(MAX_PIXELS / 1e6)) from None
    except Exception:  # a damaged header can raise almost anything inside a Pillow plugin
        raise InvalidImageError(code="image_damaged") from None
    if width * height > MAX_PIXELS:
        raise InvalidImageError(code="image_too_large", width=width, height=height,
                                megapixels=round(width * height / 1e6), limit=round(MAX_PIXELS / 1e6))
    if width < 1 or height < 1:
        raise InvalidImageError(code="image_no_pixels")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. "Corrupt EXIF data", "Palette images with..."
            im.seek(0)
            im.load()
            try:
                im = ImageOps.exif_transpose(im)
            except Exception:  # broken EXIF: keep the picture as stored
                pass
            return _to_rgb(im)
    except (OSError, SyntaxError, ValueError, EOFError, IndexError, struct.error):
        raise InvalidImageError(code="image_truncated") from None
    except Exception:
        raise InvalidImageError(code="image_damaged") from None


def _target_size(width: int, height: int, size: int) -> tuple[int, int]:
    short, long = min(width, height), max(width, height)
    new_long = min(round(size * long / short), 2 * size)
    return (new_long, size) if width >= height else (size, new_long)


def _check_size(size: int) -> int:
    if isinstance(size, bool) or not isinstance(size, int) or not MIN_SIZE <= size <= MAX_SIZE:
        raise ValueError(
            f"size must be a whole number of pixels from {MIN_SIZE} to {MAX_SIZE}, not {size!r}."
        )
    return size


_RESAMPLING = {"bilinear": Image.Resampling.BILINEAR, "bicubic": Image.Resampling.BICUBIC,
               "nearest": Image.Resampling.NEAREST, "lanczos": Image.Resampling.LANCZOS}


def _resampling(interpolation: str) -> Image.Resampling:
    try:
        return _RESAMPLING[interpolation]
    except KeyError:
        raise ValueError(f"interpolation must be one of {', '.join(_RESAMPLING)}, not {interpolation!r}.") from None


def resize_for_model(image: Image.Image, size: int = 224, interpolation: str = "bilinear") -> Image.Image:
    """The picture the model sees: shorter side ``size``, aspect ratio kept, longer side capped
    at ``2 * size`` (so a panorama or a 2000 x 3 strip still gives a usable input)."""
    _check_size(size)
    target = _target_size(*image.size, size)
    if image.size == target:
        return image.copy()
    return image.resize(target, _resampling(interpolation), reducing_gap=3.0)


def fit_geometry(width: int, height: int, spec: InputSpec) -> tuple[int, int, int, int]:
    """Where :func:`fit_to_model` puts a ``width`` x ``height`` picture for a fixed-size ``spec``: the
    resized width and height before the crop, and the crop's left and top."""
    side = int(spec.fixed_size or 0)
    short = max(side, int(spec.resize_side or side))
    if spec.squash:
        new_w = new_h = short
    elif spec.resize_rule == "transformers":  # transformers' get_resize_output_image_size: the long side truncated
        new_w, new_h = (short, int(short * height / width)) if width <= height else (int(short * width / height), short)
    else:
        scale = short / min(width, height)
        new_w, new_h = max(short, round(width * scale)), max(short, round(height * scale))
    return new_w, new_h, (new_w - side) // 2, (new_h - side) // 2


def fit_to_model(image: Image.Image, size: int, spec: InputSpec) -> Image.Image:
    """The picture a model with input rules ``spec`` (an :class:`InputSpec`) sees.

    Any-size models: :func:`resize_for_model` at ``max(size, spec.min_size)``. Fixed-size models
    (ViT, Swin, MaxViT): shorter side resized to ``spec.fixed_size`` (or ``spec.resize_side``:
    MobileViT), or the whole picture squashed to that square (``spec.squash``: a Hugging Face ViT),
    then the centre cropped to a ``fixed_size`` square (torchvision's own resize-then-centre-crop;
    see :func:`fit_geometry`).
    """
    if not spec.fixed_size:
        return resize_for_model(image, max(size, spec.min_size), spec.interpolation)
    side = int(spec.fixed_size)
    new_w, new_h, left, top = fit_geometry(*image.size, spec)
    gap = None if spec.resize_rule == "transformers" else 3.0  # transformers' PIL backend resamples in one step
    resized = image if (new_w, new_h) == image.size else image.resize(
        (new_w, new_h), _resampling(spec.interpolation), reducing_gap=gap)
    return resized.crop((left, top, left + side, top + side))


def to_tensor(
    image: Image.Image,
    mean: tuple[float, float, float] = IMAGENET_MEAN,
    std: tuple[float, float, float] = IMAGENET_STD,
) -> torch.Tensor:
    """RGB picture -> normalised (1, 3, H, W) float32 tensor, without resizing."""
    arr: np.ndarray = np.asarray(image.convert("RGB"), dtype=np.float32) / 255.0
    arr = (arr - np.asarray(mean, dtype=np.float32)) / np.asarray(std, dtype=np.float32)
    return torch.from_numpy(np.ascontiguousarray(arr.transpose(2, 0, 1)))[None]


def preprocess(
    image: Image.Image,
    size: int = 224,
    *,
    mean: tuple[float, float, float] = IMAGENET_MEAN,
    std: tuple[float, float, float] = IMAGENET_STD,
) -> torch.Tensor:
    """Resize (see :func:`resize_for_model`) and normalise an RGB picture for the model.

    Returns:
        Tensor of shape (1, 3, H, W), float32, ImageNet mean/std normalised.

    Raises:
        ValueError: ``size`` outside 32..1024.

    Example:
        >>> preprocess(Image.new("RGB", (640, 480)), 224).shape
        torch.Size([1, 3, 224, 299])
    """
    return to_tensor(resize_for_model(image, size), mean, std)


def tensor_to_image(
    x: torch.Tensor,
    mean: tuple[float, float, float] = IMAGENET_MEAN,
    std: tuple[float, float, float] = IMAGENET_STD,
) -> Image.Image:
    """Undo :func:`to_tensor`: a (1, 3, H, W) or (3, H, W) tensor back to an RGB picture."""
    t = x.detach().float().cpu()
    if t.ndim == 4:
        t = t[0]
    arr = t.numpy().transpose(1, 2, 0) * np.asarray(std) + np.asarray(mean)
    return Image.fromarray((np.clip(arr, 0, 1) * 255 + 0.5).astype(np.uint8))
