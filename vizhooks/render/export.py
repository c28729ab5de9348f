"""Saving captures: the .npz format shared by the CLI and the page's download button."""

from __future__ import annotations

import errno
import io
import os
import secrets
import stat
from pathlib import Path

import numpy as np
import torch

INPUT_KEY = "__input__"


def npz_bytes(x: torch.Tensor, activations: dict[str, torch.Tensor]) -> bytes:
    """Pack a capture as .npz bytes: ``__input__`` is the (3, H, W) tensor the model saw, and
    each captured layer is a float32 (C, H, W) array under its qualified module name."""
    arrays = {INPUT_KEY: _chw(x)}
    for name, tensor in activations.items():
        arrays[name] = _chw(tensor)
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)  # type: ignore[arg-type]  # numpy's stub reads **arrays as its allow_pickle: bool
    return buf.getvalue()


def _chw(t: torch.Tensor) -> np.ndarray:
    arr = t.detach().float().cpu().numpy()
    if arr.ndim == 4 and arr.shape[0] == 1:
        arr = arr[0]
    return np.ascontiguousarray(arr, dtype=np.float32)


def write_atomic(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file, so a stopped or failed program never leaves half
    a file. A new file gets the permissions any new file gets here (0666 less the umask: readable by the
    group and others under the usual 022), not the owner-only ones of ``tempfile.mkstemp``, so an atlas or a
    lesson written into a shared folder stays readable by whoever shares it; a file written again keeps its
    own.

    Raises:
        OSError: the folder cannot be made or written to; its ``filename`` is ``path`` (or the folder),
            never the temporary file's name.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = None
    try:
        fd, tmp = _new_file(path)
        if path.is_file():
            os.chmod(fd, stat.S_IMODE(path.stat().st_mode))
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException as exc:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):  # a full disk, a folder where the file should be: said of the path asked for
            raise OSError(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    return path


def _new_file(path: Path) -> tuple[int, str]:
    """A new file beside ``path`` (``.NAME.RANDOM.part``), opened for writing, made as ``open`` makes files."""
    for _ in range(100):
        tmp = os.fspath(path.parent / f".{path.name}.{secrets.token_hex(6)}.part")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, os.strerror(errno.EEXIST), os.fspath(path))  # 100 names taken: no way on
