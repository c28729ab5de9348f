"""A taught model leaves vizhooks: ONNX and TorchScript files other tools run, each with its class names
and a 10-line program that uses it; the photos it was taught on as a zip in torchvision's ImageFolder
layout (``python -m vizhooks teach FOLDER`` or any other tool reads it).

The exported network takes what the model takes: a ``(N, 3, S, S)`` float32 batch, normalised with the
model's mean and std, at the square side ``S`` the photos were taught at (a fixed-size model: its own);
the batch size is free. The usage program does that preparation itself, exactly as teaching saw each
photo (shorter side resized to ``S``, centre cropped, scaled to 0..1, normalised), so its answer is the
page's. ONNX goes through ``torch.onnx.export``'s TorchScript-based exporter (``dynamo=False``, opset
17): the torch.export-based one needs ``onnxscript``, which vizhooks does not require.

Example:
    >>> taught = teach(load_model("resnet18"), {"mug": mugs, "pen": pens})
    >>> to_onnx(taught, "my_model.onnx").files
    (PosixPath('my_model.onnx'), PosixPath('my_model.txt'), PosixPath('my_model_onnx.py'))
    >>> Path("my_photos.zip").write_bytes(photos_zip({"mug": mugs, "pen": pens}))
"""

from __future__ import annotations

import contextlib
import io
import os
import warnings
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import torch
from PIL import Image

from vizhooks._hooks import hooked
from vizhooks.errors import CodedError
from vizhooks.models.registry import ModelBundle

#: ONNX opset of the exported graphs (onnxruntime 1.16 and later run it).
OPSET = 17
#: The names of the ONNX graph's input and output.
INPUT, OUTPUT = "image", "logits"
#: What each kind of file is called in sentences, and the program that uses it.
KINDS = ("onnx", "torchscript")


class ExportError(CodedError):
    """A model that could not be written in a format, said in one sentence (``code``: ``export_*``)."""


class HasBundle(Protocol):
    """A :class:`vizhooks.teaching.Taught` (anything with a ``bundle``)."""

    @property
    def bundle(self) -> ModelBundle: ...


@dataclass(frozen=True)
class Exported:
    """Files written for one format.

    Attributes:
        model: the network (``.onnx`` or TorchScript ``.pt``).
        labels: the class names, one per line (UTF-8), index-aligned with the outputs.
        program: the usage program (``<stem>_onnx.py`` / ``<stem>_torchscript.py``); run it beside
            the two other files as ``python PROGRAM photo.jpg``.
        snippet: the program's text.
    """

    model: Path
    labels: Path
    program: Path
    snippet: str

    @property
    def files(self) -> tuple[Path, Path, Path]:
        return self.model, self.labels, self.program


def _bundle(model: ModelBundle | HasBundle) -> ModelBundle:
    return model if isinstance(model, ModelBundle) else model.bundle


def input_side(model: ModelBundle | HasBundle, size: int = 224) -> int:
    """The square side the exported model takes: the model's own when it needs one, else ``size``."""
    return int(_bundle(model).input.fixed_size or size)


def labels_text(model: ModelBundle | HasBundle) -> str:
    """The labels file: the class names, one per line, in the order of the outputs."""
    return "\n".join(_bundle(model).categories) + "\n"


# --- the networks -----------------------------------------------------------------------------------

@contextlib.contextmanager
def _quiet_exporters() -> Iterator[None]:
    # torch 2.9+ marks torch.jit and the TorchScript-based ONNX exporter deprecated; they still are what
    # runs offline without onnxscript, and pyproject makes DeprecationWarnings from vizhooks errors
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"torch\.")
        warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.")
        warnings.filterwarnings("ignore", message=r".*(legacy TorchScript-based ONNX|torch\.jit|will be removed)")
        yield


def _example(bundle: ModelBundle, side: int) -> torch.Tensor:
    return torch.zeros(1, 3, side, side, device=bundle.device)


def onnx_bytes(model: ModelBundle | HasBundle, size: int = 224, *, opset: int = OPSET) -> bytes:
    """The model as an ONNX file: input ``"image"`` ``(N, 3, S, S)`` normalised, output ``"logits"``
    ``(N, classes)``; ``S`` is :func:`input_side`.

    Raises:
        ExportError: the exporter could not write this model (one sentence).
    """
    bundle = _bundle(model)
    side = input_side(bundle, size)
    buffer = io.BytesIO()
    # under the model's lock (a hook another session adds meanwhile would be traced into the graph),
    # in eval mode with frozen parameters, put back as they were
    with hooked(bundle.model) as hooks, _quiet_exporters(), torch.no_grad():
        try:
            hooks.run(lambda: torch.onnx.export(  # the TorchScript-based exporter writes file objects too
                bundle.model, (_example(bundle, side),), buffer, dynamo=False, opset_version=opset,  # type: ignore[arg-type]
                input_names=[INPUT], output_names=[OUTPUT], dynamic_axes={INPUT: {0: "batch"}, OUTPUT: {0: "batch"}}))
        except Exception as exc:  # the exporter's errors are long and internal: one sentence, its kind named
            raise ExportError(code="export_failed", format="ONNX", model=bundle.name, reason=_reason(exc)) from exc
    return buffer.getvalue()


def torchscript_bytes(model: ModelBundle | HasBundle, size: int = 224) -> bytes:
    """The model as a TorchScript file (traced at ``(1, 3, S, S)``; any batch size runs), on the CPU:
    ``torch.jit.load(file)`` needs neither vizhooks nor the model's code.

    Raises:
        ExportError: the model could not be traced (one sentence).
    """
    bundle = _bundle(model)
    side = input_side(bundle, size)
    buffer = io.BytesIO()
    with hooked(bundle.model) as hooks, _quiet_exporters(), torch.no_grad():
        def trace() -> None:
            traced = torch.jit.trace(bundle.model, _example(bundle, side), check_trace=False)
            torch.jit.save(traced.cpu(), buffer)
        try:
            hooks.run(trace)
        except Exception as exc:
            raise ExportError(code="export_failed", format="TorchScript", model=bundle.name,
                              reason=_reason(exc)) from exc
    return buffer.getvalue()


def _reason(exc: Exception) -> str:
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:160]}" if first else type(exc).__name__


# --- the usage programs ------------------------------------------------------------------------------

def usage_snippet(model: ModelBundle | HasBundle, kind: str, model_file: str, labels_file: str,
                  size: int = 224) -> str:
    """The 10-line program that runs the exported file on one photo (``python PROGRAM photo.jpg``)
    and prints the class and its probability: ONNX Runtime for ``kind="onnx"``, plain PyTorch for
    ``"torchscript"``. It prepares the photo as teaching did (see the module's docstring).

    Raises:
        ValueError: ``kind`` is not one of :data:`KINDS`.
    """
    bundle = _bundle(model)
    side = input_side(bundle, size)
    resample = "BICUBIC" if bundle.input.interpolation == "bicubic" else "BILINEAR"
    mean, std = [round(float(v), 6) for v in bundle.input.mean], [round(float(v), 6) for v in bundle.input.std]
    prepare = [
        f'labels = open("{labels_file}", encoding="utf-8").read().splitlines()',
        f"image = Image.open(sys.argv[1]).convert(\"RGB\"); s = {side} / min(image.size)",
        f"image = image.resize([max({side}, round(n * s)) for n in image.size], Image.Resampling.{resample}, "
        "reducing_gap=3.0)",
        f"left, top = (image.width - {side}) // 2, (image.height - {side}) // 2",
        f"x = (np.asarray(image.crop((left, top, left + {side}, top + {side})), np.float32) / 255 - {mean}) / {std}",
    ]
    if kind == "onnx":
        lines = ["import sys, numpy as np, onnxruntime", "from PIL import Image", *prepare,
                 f'session = onnxruntime.InferenceSession("{model_file}")',
                 f'logits = session.run(None, {{"{INPUT}": x.transpose(2, 0, 1)[None].astype(np.float32)}})[0][0]']
    elif kind == "torchscript":
        lines = ["import sys, numpy as np, torch", "from PIL import Image", *prepare,
                 f'model = torch.jit.load("{model_file}").eval()',
                 "logits = model(torch.from_numpy(x.transpose(2, 0, 1)[None].astype(np.float32)))[0].detach().numpy()"]
    else:
        raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}.")
    shown = 'p = np.exp(logits - logits.max()); print(labels[p.argmax()], f"{p.max() / p.sum():.0%}")'
    return "\n".join([*lines, shown]) + "\n"


def export_files(path: str | os.PathLike) -> tuple[Path, Path, Path]:
    """Where :func:`to_onnx` / :func:`to_torchscript` write for ``path``: the model itself, the labels
    beside it (``.txt``) and the program (``<stem>_onnx.py`` or ``<stem>_torchscript.py``)."""
    model = Path(path)
    kind = "onnx" if model.suffix.lower() == ".onnx" else "torchscript"
    return model, model.with_suffix(".txt"), model.with_name(f"{model.stem}_{kind}.py")


def _write(data: bytes, kind: str, model: ModelBundle | HasBundle, path: str | os.PathLike, size: int) -> Exported:
    target, labels, program = export_files(path)
    snippet = usage_snippet(model, kind, target.name, labels.name, size)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
    labels.write_text(labels_text(model), encoding="utf-8")
    program.write_text(snippet, encoding="utf-8")
    return Exported(target, labels, program, snippet)


def to_onnx(model: ModelBundle | HasBundle, path: str | os.PathLike, size: int = 224, *,
            opset: int = OPSET) -> Exported:
    """Write ``model`` (a taught model, or any loaded one) as ONNX at ``path`` (``.onnx``), its class
    names beside it (``.txt``) and the ONNX Runtime program that uses them (``<stem>_onnx.py``).

    Args:
        model: a :class:`vizhooks.teaching.Taught` or a :class:`ModelBundle`.
        path: the ``.onnx`` file; its folder is made when missing.
        size: the side photos were taught at (``teach(size=)``); a fixed-size model uses its own.
        opset: the ONNX opset (at least 17).

    Raises:
        ExportError: the exporter could not write this model.
        ValueError: ``path`` does not end in ``.onnx``.
    """
    if Path(path).suffix.lower() != ".onnx":
        raise ValueError(f"The ONNX file's name must end in .onnx, not {os.fspath(path)!r}.")
    return _write(onnx_bytes(model, size, opset=opset), "onnx", model, path, size)


def to_torchscript(model: ModelBundle | HasBundle, path: str | os.PathLike, size: int = 224) -> Exported:
    """Write ``model`` as TorchScript at ``path`` (``.pt``), its class names beside it (``.txt``) and
    the plain-PyTorch program that uses them (``<stem>_torchscript.py``). Arguments as :func:`to_onnx`.

    Raises:
        ExportError: the model could not be traced.
        ValueError: ``path`` does not end in ``.pt`` (``.pth`` is the checkpoint's, which ``torch.load`` reads).
    """
    if Path(path).suffix.lower() != ".pt":
        raise ValueError(f"The TorchScript file's name must end in .pt, not {os.fspath(path)!r}.")
    return _write(torchscript_bytes(model, size), "torchscript", model, path, size)


# --- the photos ----------------------------------------------------------------------------------------

#: Characters a folder name cannot hold on Windows, macOS or Linux; each becomes "_".
_NOT_IN_NAMES = '<>:"/\\|?*'


def folder_name(name: str) -> str:
    """A class name as the name of its folder: characters no file system takes become ``_``, and a
    name of dots alone or one that starts with a dot (hidden, skipped by ImageFolder) gets a ``_`` first."""
    clean = "".join("_" if c in _NOT_IN_NAMES or ord(c) < 32 else c for c in name.strip()).rstrip(" .")
    return f"_{clean}" if not clean or clean.startswith(".") else clean


def _extension(photo: bytes) -> str:
    try:
        with Image.open(io.BytesIO(photo)) as image:
            kind = (image.format or "").lower()
    except Exception:  # not a picture PIL knows: kept as it is, under a neutral name
        return ".bin"
    return {"jpeg": ".jpg", "tiff": ".tif"}.get(kind, f".{kind}" if kind else ".bin")


def photos_zip(examples: Mapping[str, Sequence[bytes | Image.Image]], root: str = "my_photos") -> bytes:
    """The photos as a zip in the ImageFolder layout: ``root/<class>/0001.jpg``..., one folder per
    class (named by :func:`folder_name`), photos in the order given. Bytes are stored as they are
    (the page's JPEGs), PIL images as PNG.

    Two names that give one folder (case aside: "Cat" and "cat", "a/b" and "a_b") get ``_2``, ``_3``...
    after the later ones, so no class's photos land in another's folder.

    Raises:
        ValueError: there is no class.
    """
    if not examples:
        raise ValueError("There are no classes to put in the zip.")
    folders: list[str] = []
    for name in examples:
        base = folder = folder_name(name)
        n = 1
        while folder.casefold() in {f.casefold() for f in folders}:
            n += 1
            folder = f"{base}_{n}"
        folders.append(folder)
    top = folder_name(root)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:  # photos are compressed already
        for folder, photos in zip(folders, examples.values(), strict=True):
            archive.writestr(f"{top}/{folder}/", b"")
            for i, photo in enumerate(photos, 1):
                if isinstance(photo, Image.Image):
                    png = io.BytesIO()
                    photo.save(png, "PNG")
                    data, ext = png.getvalue(), ".png"
                else:
                    data, ext = bytes(photo), _extension(bytes(photo))
                archive.writestr(f"{top}/{folder}/{i:04d}{ext}", data)
    return buffer.getvalue()


__all__ = ["INPUT", "KINDS", "OPSET", "OUTPUT", "ExportError", "Exported", "export_files", "folder_name",
           "input_side", "labels_text", "onnx_bytes", "photos_zip", "to_onnx", "to_torchscript",
           "torchscript_bytes", "usage_snippet"]
