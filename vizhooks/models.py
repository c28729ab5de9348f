"""Model registry, weights resolution and device choice.

Weights are resolved in a fixed chain so that a classroom without internet still gets a working
page: an operator-supplied file, the torch hub cache, a time-bounded download, and finally random
weights with a sentence that says how to get real ones.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn
from torchvision import models as tvm

ARCHITECTURES: tuple[str, ...] = ("resnet18", "resnet34", "resnet50", "resnet101", "resnet152")

IMAGENET_MEAN: tuple[float, float, float] = (0.485, 0.456, 0.406)
IMAGENET_STD: tuple[float, float, float] = (0.229, 0.224, 0.225)

#: Seconds the automatic download may wait for a connection and for each chunk of data.
#: The "auto" chain gives up after this and falls back to random weights.
DOWNLOAD_TIMEOUT_S = float(os.environ.get("VIZHOOKS_DOWNLOAD_TIMEOUT", "8"))

#: After a failed automatic download, later loads in this process skip the attempt for this long,
#: so a teacher switching models offline waits once, not every time.
OFFLINE_MEMORY_S = 600.0

_SEED = 0
_offline_since: float | None = None
_offline_reason = ""


class WeightsError(ValueError):
    """Weights could not be loaded; the message says why and what to do."""


@dataclass
class ModelBundle:
    """A ready-to-use model and what a person needs to know about it.

    Attributes:
        model: the network, in eval mode, on ``device``.
        name: architecture name, e.g. ``"resnet18"``.
        device: where the model lives.
        pretrained: True when ImageNet (or operator-supplied) weights were loaded.
        weights_status: a plain sentence: where the weights came from, or why they are random
            and how to fix that.
        categories: the 1000 ImageNet class names, index-aligned with the logits.
        mean, std: the normalisation the model expects.
        weights_source: ``"file"``, ``"env"``, ``"cache"``, ``"download"`` or ``"random"``.
    """

    model: nn.Module
    name: str
    device: torch.device
    pretrained: bool
    weights_status: str
    categories: list[str]
    mean: tuple[float, float, float] = IMAGENET_MEAN
    std: tuple[float, float, float] = IMAGENET_STD
    weights_source: str = "random"


# ----------------------------------------------------------------------------------------------
# registry


def _check_name(name: str) -> str:
    if name not in ARCHITECTURES:
        raise ValueError(
            f"Unknown model {name!r}. Choose one of: {', '.join(ARCHITECTURES)}."
        )
    return name


def imagenet_weights(name: str) -> tvm.WeightsEnum:
    """The torchvision ImageNet weights enum member used for ``name`` (its DEFAULT)."""
    return tvm.get_model_weights(_check_name(name)).DEFAULT


def checkpoint_filename(name: str) -> str:
    """File name torchvision gives the checkpoint of ``name`` in the hub cache."""
    return os.path.basename(imagenet_weights(name).url)


def checkpoint_path(name: str) -> Path:
    """Where torchvision caches (and looks for) the checkpoint of ``name``: honours TORCH_HOME."""
    return Path(torch.hub.get_dir()) / "checkpoints" / checkpoint_filename(name)


def categories() -> list[str]:
    """The 1000 ImageNet class names; shipped inside torchvision, so available offline."""
    return list(imagenet_weights("resnet18").meta["categories"])


def checkpoint_url(name: str) -> str:
    """Where the checkpoint is downloaded from: torchvision's URL, or the same file name under
    ``VIZHOOKS_WEIGHTS_MIRROR`` (a base URL) for classrooms with a local mirror."""
    url = imagenet_weights(name).url
    mirror = os.environ.get("VIZHOOKS_WEIGHTS_MIRROR", "").strip()
    return f"{mirror.rstrip('/')}/{os.path.basename(url)}" if mirror else url


def fetch_command(name: str) -> str:
    return f"python -m vizhooks --download-weights {name}"


def _build(name: str, device: torch.device | str = "cpu") -> nn.Module:
    builder = tvm.get_model_builder(name)
    return builder(weights=None).to(device)


# ----------------------------------------------------------------------------------------------
# devices


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"`` picks CUDA, then Apple MPS, then the CPU; any torch device string is accepted.

    Raises:
        ValueError: the string is not a device, or names one this machine does not have.
    """
    if isinstance(device, torch.device):
        dev = device
    elif device == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    else:
        try:
            dev = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(
                f"Unknown device {device!r}: use auto, cpu, cuda, cuda:N or mps."
            ) from exc
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"Device {device!s} was asked for, but this machine has no CUDA GPU.")
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"Device {device!s} was asked for, but Apple MPS is not available.")
    return dev


# ----------------------------------------------------------------------------------------------
# state dicts


def _expected_shapes(name: str) -> dict[str, tuple[int, ...]]:
    with torch.device("meta"):
        model = tvm.get_model_builder(name)(weights=None)
    return {k: tuple(v.shape) for k, v in model.state_dict().items()}


def _guess_architecture(state: Mapping[str, torch.Tensor]) -> str | None:
    shapes = {k: tuple(v.shape) for k, v in state.items() if isinstance(v, torch.Tensor)}
    for arch in ARCHITECTURES:
        if _expected_shapes(arch) == shapes:
            return arch
    return None


def read_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a state_dict file safely (``weights_only=True``: no arbitrary unpickling).

    Accepts a plain state_dict, or a dict holding one under ``"state_dict"`` or ``"model"``;
    strips a ``"module."`` prefix left by DataParallel.

    Raises:
        WeightsError: missing, unreadable, truncated or not a state_dict.
    """
    path = Path(path)
    if not path.is_file():
        raise WeightsError(f"Weights file {path} does not exist.")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # torch raises many types for bad files; all mean "unusable"
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "weights_only" in str(exc) or "Unsupported global" in str(exc):
            reason = "it contains Python objects, not just tensors, so it is not loaded for safety"
        raise WeightsError(
            f"Weights file {path} could not be read as a PyTorch state_dict ({reason[:160]})."
        ) from None
    if isinstance(obj, Mapping):
        for key in ("state_dict", "model"):
            if isinstance(obj.get(key), Mapping):
                obj = obj[key]
                break
    if not isinstance(obj, Mapping) or not obj or not all(
        isinstance(v, torch.Tensor) for v in obj.values()
    ):
        raise WeightsError(f"Weights file {path} does not hold a state_dict of tensors.")
    return {re.sub(r"^module\.", "", k): v for k, v in obj.items()}


def _apply_state_dict(model: nn.Module, name: str, state: Mapping[str, torch.Tensor], src: str):
    """Load ``state`` strictly, turning PyTorch's long key dump into one sentence."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    missing = [k for k in expected if k not in state]
    unexpected = [k for k in state if k not in expected]
    wrong = [k for k in expected if k in state and tuple(state[k].shape) != expected[k]]
    if missing or unexpected or wrong:
        guess = _guess_architecture(state)
        parts = []
        if guess:
            parts.append(f"it looks like a {guess} checkpoint")
        if wrong:
            k = wrong[0]
            parts.append(
                f"{len(wrong)} tensors have the wrong shape (e.g. {k}: file "
                f"{tuple(state[k].shape)}, model {expected[k]})"
            )
        if missing:
            parts.append(f"{len(missing)} keys are missing (e.g. {missing[0]})")
        if unexpected:
            parts.append(f"{len(unexpected)} keys are unexpected (e.g. {unexpected[0]})")
        raise WeightsError(f"Weights file {src} does not fit {name}: {'; '.join(parts)}.")
    model.load_state_dict(state, strict=True)


# ----------------------------------------------------------------------------------------------
# download


def _hash_prefix(filename: str) -> str | None:
    # torchvision names checkpoints "<arch>-<first sha256 hex digits>.pth"
    match = re.search(r"-([a-f0-9]{6,})\.", filename)
    return match.group(1) if match else None


def download_checkpoint(
    name: str,
    *,
    timeout: float = DOWNLOAD_TIMEOUT_S,
    progress: Callable[[int, int | None], None] | None = None,
    url: str | None = None,
) -> Path:
    """Download the ImageNet checkpoint of ``name`` into the torch hub cache.

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
    url = url or checkpoint_url(name)
    dest = checkpoint_path(name)
    dest.parent.mkdir(parents=True, exist_ok=True)
    prefix = _hash_prefix(os.path.basename(url))
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
            raise WeightsError(f"Could not download {url} ({_short(exc)}).") from None
        if total is not None and done != total:
            raise WeightsError(f"Download of {url} stopped early ({done} of {total} bytes).")
        if prefix and not sha.hexdigest().startswith(prefix):
            raise WeightsError(f"Download of {url} is corrupt (checksum does not match).")
        shutil.move(str(tmp), dest)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    return dest


def _short(exc: BaseException) -> str:
    text = str(getattr(exc, "reason", "") or exc).strip()
    return (text.splitlines()[0] if text else type(exc).__name__)[:160]


def _bounded_download(name: str, timeout: float) -> Path:
    """Run :func:`download_checkpoint` in a daemon thread and wait at most ``timeout`` for it to
    connect: DNS look-ups are not covered by socket timeouts, so only a thread bounds them.
    Once bytes flow, the transfer goes on while it makes progress."""
    started = threading.Event()
    result: dict[str, object] = {}

    def on_progress(done: int, total: int | None) -> None:
        started.set()

    def work() -> None:
        try:
            result["path"] = download_checkpoint(name, timeout=timeout, progress=on_progress)
        except BaseException as exc:  # reported to the waiting thread below
            result["error"] = exc
        finally:
            started.set()

    thread = threading.Thread(target=work, name=f"vizhooks-download-{name}", daemon=True)
    thread.start()
    if not started.wait(timeout):
        raise WeightsError(f"No answer from the download server within {timeout:g} s.")
    thread.join()
    if "error" in result:
        err = result["error"]
        raise err if isinstance(err, WeightsError) else WeightsError(_short(err))  # type: ignore[arg-type]
    return result["path"]  # type: ignore[return-value]


# ----------------------------------------------------------------------------------------------
# load_model


def _random_model(name: str, device: torch.device) -> nn.Module:
    # Seeded inside a forked RNG: deterministic weights without disturbing the caller's RNG.
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(_SEED)
        return _build(name)


def _imagenet_chain(name: str, model: nn.Module) -> tuple[str, str]:
    """Try env file, cache, bounded download. Returns (source, status) or raises WeightsError
    carrying every reason gathered on the way."""
    global _offline_since, _offline_reason
    notes: list[str] = []
    env = os.environ.get("VIZHOOKS_WEIGHTS", "").strip()
    if env:
        try:
            _apply_state_dict(model, name, read_state_dict(env), env)
            return "env", f"Weights for {name} from VIZHOOKS_WEIGHTS ({env})."
        except WeightsError as exc:
            notes.append(f"VIZHOOKS_WEIGHTS was not used: {exc}")

    cached = checkpoint_path(name)
    if cached.is_file():
        try:
            _apply_state_dict(model, name, read_state_dict(cached), str(cached))
            return "cache", f"ImageNet weights for {name} from the torch cache ({cached})."
        except WeightsError as exc:
            notes.append(f"The cached checkpoint is damaged; delete {cached} and fetch it again ({exc})")

    if os.environ.get("VIZHOOKS_OFFLINE", "") not in ("", "0"):
        notes.append("Downloads are switched off (VIZHOOKS_OFFLINE is set)")
    elif _offline_since is not None and time.monotonic() - _offline_since < OFFLINE_MEMORY_S:
        notes.append(f"The download failed a moment ago ({_offline_reason})")
    else:
        try:
            path = _bounded_download(name, DOWNLOAD_TIMEOUT_S)
            _apply_state_dict(model, name, read_state_dict(path), str(path))
            _offline_since = None
            return "download", f"ImageNet weights for {name}, downloaded to {path}."
        except WeightsError as exc:
            _offline_since, _offline_reason = time.monotonic(), str(exc).rstrip(".")
            notes.append(f"The download failed ({_offline_reason})")
    raise WeightsError("; ".join(notes) + ".")


def load_model(
    name: str = "resnet18",
    weights: str | os.PathLike = "auto",
    device: str | torch.device = "auto",
) -> ModelBundle:
    """Build a torchvision ResNet with weights resolved as documented in the README.

    Args:
        name: one of ``ARCHITECTURES``.
        weights: ``"auto"`` (env file -> torch cache -> bounded download -> random),
            ``"imagenet"`` (same chain, but an error instead of random weights),
            ``"none"`` (seeded random weights) or a path to a state_dict file.
        device: ``"auto"`` or any torch device string.

    Returns:
        A :class:`ModelBundle` with the model in eval mode on its device.

    Raises:
        ValueError: unknown name or device.
        WeightsError: weights file unusable, or ``"imagenet"`` weights unavailable.

    Example:
        >>> bundle = load_model("resnet18", weights="none", device="cpu")
        >>> bundle.pretrained
        False
    """
    _check_name(name)
    dev = resolve_device(device)
    cats = categories()
    weights = os.fspath(weights)
    fix = (
        f"To use real ImageNet weights, run `{fetch_command(name)}` (or `make weights`) once on a "
        f"machine with internet; it saves {checkpoint_filename(name)} into "
        f"{checkpoint_path(name).parent}."
    )

    if weights == "none":
        model = _random_model(name, dev)
        source, pretrained = "random", False
        status = f"Random weights (seeded) for {name}, as asked: predictions are meaningless."
    elif weights in ("auto", "imagenet"):
        model = _build(name)
        try:
            source, status = _imagenet_chain(name, model)
            pretrained = True
        except WeightsError as exc:
            if weights == "imagenet":
                raise WeightsError(f"ImageNet weights for {name} are not available: {exc} {fix}") from None
            model = _random_model(name, dev)
            source, pretrained = "random", False
            status = (
                f"Random weights: ImageNet weights for {name} could not be loaded. {exc} {fix} "
                "Until then, feature maps show an untrained network and predictions are meaningless."
            )
    else:
        model = _build(name)
        _apply_state_dict(model, name, read_state_dict(weights), weights)
        source, pretrained = "file", True
        status = f"Weights for {name} from {weights}."

    model = model.to(dev).eval()
    return ModelBundle(
        model=model,
        name=name,
        device=dev,
        pretrained=pretrained,
        weights_status=status,
        categories=cats,
        weights_source=source,
    )


def fetch_weights(names: list[str], *, stream=sys.stderr) -> list[Path]:
    """Download checkpoints for ``names`` into the torch cache, with a text progress bar.

    Already cached files are kept. Used by ``python -m vizhooks --download-weights``.
    """
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
