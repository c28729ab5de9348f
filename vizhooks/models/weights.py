"""Weights resolution: an operator's file, the torch cache, a time-bounded download, or nothing.

A classroom without internet must still get a working page, and a page must never hang on a
download: the chain below gives up after ``VIZHOOKS_DOWNLOAD_TIMEOUT`` seconds without an answer
and the caller falls back to seeded random weights with a sentence that says how to get real ones.
Every file is read with ``weights_only=True``: a checkpoint never runs code.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TextIO, TypeVar, cast

import torch
from torch import nn

from vizhooks.errors import CodedError
from vizhooks.i18n import OSReason, english, said
from vizhooks.models.architectures import HFClassifier, hf_file, imagenet_weights, meta_build

#: Seconds the automatic download may wait for a connection and for each chunk of data.
#: The "auto" chain gives up after this and falls back to random weights.
DOWNLOAD_TIMEOUT_S = float(os.environ.get("VIZHOOKS_DOWNLOAD_TIMEOUT", "8"))

#: After a failed automatic download, later loads in this process skip the attempt for this long,
#: so a teacher switching models offline waits once, not every time.
OFFLINE_MEMORY_S = 600.0

_offline_since: float | None = None
_offline_reason = ""


#: A reason met on the way to a model's weights: ``(code, values)`` of the catalogue's ``weights_note_<code>``.
Note = tuple[str, dict[str, object]]


#: The codes of refusals about a file the user of the command line names (a checkpoint, a Hugging Face folder): the
#: command line says them in its language. On a page the file is the operator's, on the server: the page says the
#: refusal in its own words and leaves the path and the details to the server's log.
FILE_CODES = frozenset({"weights_file_missing", "weights_file_unreadable", "weights_file_objects",
                        "weights_not_tensors", "weights_looks_like", "weights_wrong_shape", "weights_missing_keys",
                        "weights_unexpected_keys", "hf_no_config",
                        "labels_missing", "labels_folder", "labels_not_utf8", "labels_unreadable"})


class WeightsError(CodedError):
    """Weights could not be loaded; the message says why and what to do (an operator's matter: a page
    in another language says so in its own words and leaves the details to the server log).
    ``notes``: the reasons met on the way, where the chain gathered them (:func:`gathered`)."""

    notes: tuple[Note, ...] = ()


def gathered(notes: list[Note], sep: str = "; ", end: str = ".") -> WeightsError:
    """The refusal that says ``notes`` in English (joined by ``sep``, ended by ``end``) and keeps them
    (``.notes``), so a page or command line in another language can say each one in its own words."""
    exc = WeightsError(sep.join(english(f"weights_note_{code}", **values) for code, values in notes) + end)
    exc.notes = tuple(notes)
    return exc


def said_notes(notes: tuple[Note, ...]) -> list[str]:
    """Each reason of ``notes`` in the current language (the catalogue's ``weights_note_<code>``), each value
    (a path, a variable, an error's own words) quoted as code, as the texts quote a command: on a page
    its underscores stay as they are, and no English words stand bare in a sentence of another language."""
    return [said(f"weights_note_{code}", {k: _quoted(v) for k, v in values.items()}) for code, values in notes]


def _quoted(value: object) -> str:
    text = str(value)
    return text if "`" in text else f"`{text}`"


def offline() -> bool:
    """True when ``VIZHOOKS_OFFLINE`` is set (to anything but 0): no download is tried."""
    return os.environ.get("VIZHOOKS_OFFLINE", "") not in ("", "0")


# ----------------------------------------------------------------------------------------------
# torchvision checkpoints: names, URLs, cache paths


def checkpoint_filename(arch: str) -> str:
    """File name torchvision gives the checkpoint of ``arch`` in the hub cache."""
    return os.path.basename(urllib.parse.urlsplit(imagenet_weights(arch).url).path)


def checkpoint_path(arch: str) -> Path:
    """Where torchvision caches (and looks for) the checkpoint of ``arch``: honours TORCH_HOME."""
    return Path(torch.hub.get_dir()) / "checkpoints" / checkpoint_filename(arch)


def checkpoint_url(arch: str) -> str:
    """Where the checkpoint is downloaded from: torchvision's URL, or the same file name under
    ``VIZHOOKS_WEIGHTS_MIRROR`` (a base URL) for classrooms with a local mirror."""
    url = imagenet_weights(arch).url
    mirror = os.environ.get("VIZHOOKS_WEIGHTS_MIRROR", "").strip()
    return urllib.parse.urljoin(mirror.rstrip("/") + "/", checkpoint_filename(arch)) if mirror else url


def fetch_command(arch: str) -> str:
    """The command that puts pretrained weights of ``arch`` where vizhooks looks for them."""
    if arch.startswith("timm:"):  # timm keeps its checkpoints in the Hugging Face cache
        return f"python -c \"import timm; timm.create_model('{arch.removeprefix('timm:')}', pretrained=True)\""
    return f"python -m vizhooks --download-weights {arch}"


# ----------------------------------------------------------------------------------------------
# state dicts

_DENSENET_OLD_KEY = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.((?:[12])\.(?:weight|bias|running_mean|running_var))$"
)


def fix_keys(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Key renames torchvision applies when it loads its own checkpoints: DenseNet's published
    files still say ``norm.1`` where the modules are now called ``norm1``."""
    return {(_DENSENET_OLD_KEY.sub(r"\1\2", k)): v for k, v in state.items()}


def _looks_like_checkpoint(path: Path) -> bool:
    """Whether ``path`` starts as torch.save's files do: a zip archive, or (before PyTorch 1.6) a pickle."""
    try:
        with path.open("rb") as fh:
            start = fh.read(4)
    except OSError:
        return True
    return start.startswith((b"PK\x03\x04", b"\x80"))


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a state_dict file safely (``weights_only=True``: no arbitrary unpickling).

    Accepts a plain state_dict, or a dict holding one under ``"state_dict"`` or ``"model"``;
    strips a ``"module."`` prefix left by DataParallel.

    Raises:
        WeightsError: missing, unreadable, truncated or not a state_dict.
    """
    path = Path(path)
    if not path.is_file():
        raise WeightsError(code="weights_file_missing", path=str(path))
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for bad files; all mean "unusable"
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            # torch says "weights only load failed" for any file that is no pickle at all (a photo, a text): only a
            # checkpoint (a zip from torch.save, or the old format's pickle) can hold Python objects
            code = "weights_file_objects" if _looks_like_checkpoint(path) else "weights_file_not_torch"
            raise WeightsError(code=code, path=str(path)) from None
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        # the system's reason (a file it will not let us read) is said in the CLI's language; torch's own stays
        spoken = OSReason.of(exc) if isinstance(exc, OSError) and exc.strerror else reason[:160]
        raise WeightsError(english("err_weights_file_unreadable", path=str(path), reason=reason[:160]),
                           "weights_file_unreadable", path=str(path), reason=spoken) from None
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model"):
            if isinstance(obj.get(key), Mapping):
                obj = obj[key]
                break
    if not isinstance(obj, Mapping) or not obj or not all(
        isinstance(v, torch.Tensor) for v in obj.values()
    ):
        raise WeightsError(code="weights_not_tensors", path=str(path))
    return fix_keys({re.sub(r"^module\.", "", k): v for k, v in obj.items()})


#: Architectures a mismatching checkpoint is compared with, to say what it looks like.
_GUESSES = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg16", "alexnet",
            "mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0", "densenet121", "convnext_tiny",
            "vit_b_16", "swin_t")


@functools.cache
def _expected_shapes(arch: str) -> dict[str, tuple[int, ...]]:
    return {k: tuple(v.shape) for k, v in meta_build(arch, None)[0].state_dict().items()}


def _guess_architecture(state: Mapping[str, torch.Tensor]) -> str | None:
    shapes = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    for arch in _GUESSES:
        expected = _expected_shapes(arch)
        # the head may have another number of classes
        if expected.keys() == shapes.keys() and sum(expected[k] != shapes[k] for k in shapes) <= 2:
            return arch
    return None


def apply_state_dict(model: nn.Module, name: str, state: Mapping[str, torch.Tensor], src: str) -> None:
    """Load ``state`` strictly, turning PyTorch's long key dump into one sentence that names the
    first mismatching key and its shapes."""
    current = model.state_dict()
    # BatchNorm's step counter: files saved before PyTorch 0.4 (torchvision's older ImageNet
    # checkpoints among them) lack it, and PyTorch's own loader fills it in with 0 for them
    counters = {k: torch.zeros_like(v) for k, v in current.items()
                if k.endswith(".num_batches_tracked") and k not in state}
    given, state = state, {**state, **counters}
    expected = {k: tuple(v.shape) for k, v in current.items()}
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    wrong = [k for k in expected if k in state and tuple(state[k].shape) != expected[k]]
    if missing or unexpected or wrong:
        guess = _guess_architecture(given)
        parts = []
        if guess and guess != name:
            parts.append(f"it looks like a {guess} checkpoint")
        if wrong:
            k = wrong[0]
            parts.append(
                f"{len(wrong)} tensors have the wrong shape (first: {k}, file "
                f"{tuple(state[k].shape)}, model {expected[k]})"
            )
        if missing:
            parts.append(f"{len(missing)} keys are missing (first: {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} keys are unexpected (first: {unexpected[0]})")
        # the sentence above for library users; a command line in another language says the likely architecture,
        # or else the first kind of mismatch: its count and first key (with both shapes for a wrong shape)
        first = (wrong or missing or unexpected)[0]
        code = ("weights_looks_like" if guess and guess != name else "weights_wrong_shape" if wrong
                else "weights_missing_keys" if missing else "weights_unexpected_keys")
        raise WeightsError(f"Weights file {src} does not fit {name}: {'; '.join(parts)}.", code, src=src, name=name,
                           guess=guess, wrong=len(wrong), missing=len(missing), unexpected=len(unexpected),
                           first=first, file_shape=tuple(state[first].shape) if wrong else (),
                           model_shape=expected[first] if wrong else ())
    model.load_state_dict(state, strict=True)


# ----------------------------------------------------------------------------------------------
# download


def _hash_prefix(filename: str) -> str | None:
    # torchvision names checkpoints "<arch>-<first sha256 hex digits>.pth"
    match = re.search(r"-([a-f0-9]{6,})\.", filename)
    return match.group(1) if match else None


def short_reason(exc: BaseException) -> str:
    text = str(getattr(exc, "reason", "") or exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:160]


def download_checkpoint(
    arch: str,
    *,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    progress: Callable[[int, int | None], None] | None = None,
    url: str | None = None,
) -> Path:
    """Download the ImageNet checkpoint of ``arch`` into the torch hub cache.

    The file is written to a temporary directory, its sha256 prefix checked against the
    file name, and only then moved into the cache, so a failed or interrupted download never
    leaves a half-written checkpoint where torchvision would trust it.

    Args:
        timeout: seconds allowed for connecting and for each chunk read (a stalled transfer
            fails; a slow but moving one goes on).
        progress: called with (bytes so far, total bytes or None).
        url: override the torchvision URL (tests, mirrors).

    Raises:
        WeightsError: any failure; the message says what happened.
    """
    url = url or checkpoint_url(arch)
    dest = checkpoint_path(arch)
    dest.parent.mkdir(parents=True, exist_ok=True)
    prefix = _hash_prefix(os.path.basename(urllib.parse.urlsplit(url).path))
    tmpdir = tempfile.mkdtemp(prefix="vizhooks-dl-")
    try:
        tmp = Path(tmpdir) / dest.name
        sha = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=timeout) as resp, open(tmp, "wb") as out:
                total = resp.headers.get("Content-Length")
                total = int(total) if total and total.isdigit() else None
                done = 0
                while chunk := resp.read(1 << 20):
                    out.write(chunk)
                    sha.update(chunk)
                    done += len(chunk)
                    if progress:
                        progress(done, total)
        except (OSError, ValueError) as exc:
            raise WeightsError(f"Could not download {url} ({short_reason(exc)}).") from None
        if total is not None and done != total:
            raise WeightsError(f"Download of {url} stopped early ({done} of {total} bytes).")
        if prefix and not sha.hexdigest().startswith(prefix):
            raise WeightsError(f"Download of {url} is corrupt (checksum does not match).")
        shutil.move(str(tmp), dest)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return dest


_T = TypeVar("_T")


def bounded(work: Callable[[Callable[[], None]], _T], timeout: float, what: str) -> _T:
    """Run ``work(started)`` in a daemon thread; wait at most ``timeout`` s for it to call
    ``started()`` (first bytes) or finish, then for the rest while it makes progress.

    DNS look-ups are not covered by socket timeouts, so only a thread bounds them.
    """
    started = threading.Event()
    result: dict[str, Any] = {}

    def run() -> None:
        try:
            result["value"] = work(started.set)
        except BaseException as exc:  # reported to the waiting thread below
            result["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=run, name=f"vizhooks-download-{what}", daemon=True)
    thread.start()
    if not started.wait(timeout):
        raise WeightsError(f"No answer from the download server within {timeout:g} s.")
    thread.join()
    if "error" in result:
        err = result["error"]
        raise err if isinstance(err, WeightsError) else WeightsError(short_reason(err))
    return result["value"]


def _bounded_download(arch: str, timeout: float) -> Path:
    return bounded(
        lambda started: download_checkpoint(arch, timeout=timeout, progress=lambda done, total: started()),
        timeout, arch)


def download_allowed(notes: list[Note]) -> bool:
    """False (with the reason added to ``notes``) when downloads are off or failed a moment ago."""
    if offline():
        notes.append(("downloads_off", {"variable": "VIZHOOKS_OFFLINE"}))
        return False
    if _offline_since is not None and time.monotonic() - _offline_since < OFFLINE_MEMORY_S:
        notes.append(("failed_recently", {"reason": _offline_reason}))
        return False
    return True


def remember_download(error: WeightsError | None) -> None:
    global _offline_since, _offline_reason
    if error is None:
        _offline_since = None
    else:
        _offline_since, _offline_reason = time.monotonic(), str(error).rstrip(".")


def imagenet_chain(arch: str, model: nn.Module) -> tuple[str, str]:
    """Load torchvision's ImageNet checkpoint of ``arch`` into ``model``: ``VIZHOOKS_WEIGHTS``,
    then the torch cache, then a bounded download. Returns (source, status sentence) or raises
    WeightsError carrying every reason gathered on the way."""
    notes: list[Note] = []
    env = os.environ.get("VIZHOOKS_WEIGHTS", "").strip()
    if env:
        try:
            apply_state_dict(model, arch, read_state_dict(env), env)
            return "env", f"Weights for {arch} from VIZHOOKS_WEIGHTS ({env})."
        except WeightsError as exc:
            notes.append(("env_unused", {"reason": str(exc)}))

    cached = checkpoint_path(arch)
    if cached.is_file():
        try:
            apply_state_dict(model, arch, read_state_dict(cached), str(cached))
            return "cache", f"ImageNet weights for {arch} from the torch cache ({cached})."
        except WeightsError as exc:
            notes.append(("cache_damaged", {"path": str(cached), "reason": str(exc)}))

    if download_allowed(notes):
        try:
            path = _bounded_download(arch, DOWNLOAD_TIMEOUT_S)
            apply_state_dict(model, arch, read_state_dict(path), str(path))
            remember_download(None)
            return "download", f"ImageNet weights for {arch}, downloaded to {path}."
        except WeightsError as exc:
            remember_download(exc)
            notes.append(("download_failed", {"reason": _offline_reason}))
    raise gathered(notes)


def fetch_weights(names: list[str], *, stream: TextIO = sys.stderr) -> list[Path]:
    """Download checkpoints for torchvision ``names`` into the torch cache, with a text progress
    bar. Already cached files are kept. Used by ``python -m vizhooks --download-weights``."""
    paths = []
    for name in names:
        dest = checkpoint_path(name)
        if dest.is_file():
            print(f"{name}: already cached at {dest}", file=stream)
            paths.append(dest)
            continue

        def bar(done: int, total: int | None, _name: str = name) -> None:
            if total:
                filled = int(30 * done / total)
                stream.write(
                    f"\r{_name}: [{'#' * filled}{'.' * (30 - filled)}] "
                    f"{done / 1e6:6.1f} / {total / 1e6:.1f} MB"
                )
            else:
                stream.write(f"\r{_name}: {done / 1e6:6.1f} MB")
            stream.flush()

        path = download_checkpoint(name, timeout=30.0, progress=bar)
        stream.write(f"\n{name}: saved {path}\n")
        paths.append(path)
    return paths


# ----------------------------------------------------------------------------------------------
# Hugging Face models (``hf:ID_OR_DIR``): a folder, the Hugging Face cache, a bounded download


def hf_offline() -> bool:
    """True when ``HF_HUB_OFFLINE`` is set (Hugging Face's own switch; read now, not at import)."""
    from huggingface_hub import constants

    return bool(constants.HF_HUB_OFFLINE) or os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in (
        "1", "true", "yes", "on")


def _hf_load(where: str) -> HFClassifier:
    from transformers import AutoModelForImageClassification

    return HFClassifier(AutoModelForImageClassification.from_pretrained(where, local_files_only=True))


class _NotOnTheHub(WeightsError):
    """The Hub answered that it has no such model (or the name is not a Hub id): unlike a network failure,
    this does not hold back the downloads of the next minutes (:func:`remember_download`)."""


def hub_download_allowed(notes: list[Note]) -> bool:
    """:func:`download_allowed` for the Hugging Face Hub, which ``HF_HUB_OFFLINE`` switches off as well."""
    if hf_offline():
        notes.append(("downloads_off", {"variable": "HF_HUB_OFFLINE"}))
        return False
    return download_allowed(notes)


def hf_download(ref: str, *, weights: bool = True) -> HFClassifier | None:
    """Fetch the Hub model ``ref`` into the Hugging Face cache (``HF_ENDPOINT`` names a mirror): its
    config first, awaited at most ``DOWNLOAD_TIMEOUT_S`` seconds, then its image processor and (with
    ``weights``) its weights while they keep arriving. Returns the loaded model, or None without weights.

    Raises:
        WeightsError: downloads are off (``VIZHOOKS_OFFLINE``, ``HF_HUB_OFFLINE``), failed a moment
            ago, or failed now; one sentence.
    """
    notes: list[Note] = []
    if not hub_download_allowed(notes):
        raise gathered([notes[0], ("hf_not_cached", {"ref": ref})], sep=", and ")

    def work(started: Callable[[], None]) -> HFClassifier | None:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, HFValidationError, RepositoryNotFoundError

        try:
            hf_hub_download(ref, "config.json")
        except (RepositoryNotFoundError, EntryNotFoundError, HFValidationError) as exc:
            raise _NotOnTheHub(short_reason(exc)) from None
        started()
        try:
            hf_hub_download(ref, "preprocessor_config.json")
        except EntryNotFoundError:  # a model without a saved processor: ImageNet defaults apply
            pass
        if not weights:
            return None
        from transformers import AutoModelForImageClassification

        return HFClassifier(AutoModelForImageClassification.from_pretrained(ref))

    try:
        model = bounded(work, DOWNLOAD_TIMEOUT_S, ref)
    except WeightsError as exc:
        if not isinstance(exc, _NotOnTheHub):  # the Hub answered: the network works, other downloads go on
            remember_download(exc)
        raise gathered([("hf_download_failed", {"ref": ref, "reason": str(exc).rstrip(".")})]) from None
    remember_download(None)
    return model


def hf_ensure_config(ref: str) -> None:
    """Make sure the config (and image processor) of ``ref`` is on this machine: the folder, the
    cache, or a bounded download (see :func:`hf_download`)."""
    if hf_file(ref, "config.json") is None:
        if Path(os.path.expanduser(ref)).is_dir():  # a folder: nothing to download
            raise WeightsError(code="hf_no_config", ref=ref)
        hf_download(ref, weights=False)


def hf_pretrained(ref: str) -> tuple[HFClassifier, str, str]:
    """The Hugging Face model ``ref`` with its own weights: from its folder, the Hugging Face cache, or
    a bounded download. Returns (model, source, status sentence).

    Raises:
        WeightsError: not in the folder or cache and not downloadable; one sentence.
    """
    folder = Path(os.path.expanduser(ref))
    if folder.is_dir():
        try:
            return _hf_load(str(folder)), "file", f"Weights for {ref} from its folder."
        except (OSError, ValueError) as exc:
            raise WeightsError(f"Hugging Face model folder {ref} could not be loaded "
                               f"({short_reason(exc).rstrip('.')}).") from None
    try:
        return _hf_load(ref), "cache", f"Weights for {ref} from the Hugging Face cache."
    except (OSError, ValueError):
        pass  # not (completely) in the cache
    model = cast(HFClassifier, hf_download(ref))  # asked with weights: a model
    return model, "download", f"Weights for {ref}, downloaded from Hugging Face."
