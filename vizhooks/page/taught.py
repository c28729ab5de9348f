"""Taught models on the page: the heads students taught, kept by this server, composed on the
shared backbone when a session uses one.

A taught model's name (``"resnet18+my:3fa9c2d1e0"``, vizhooks.models.registry.taught_name) is the whole key:
every cache of the page keys by the model's name, so a taught model's results never mix with the
plain model's, and every view works on it unchanged. What the name stands for, the head (a few
kilobytes: its weight, bias, class names), is kept here for the whole process, so a link or a class
that names it works on this server; a class on Redis carries the head too (:func:`head_blob`).
"""

from __future__ import annotations

import io
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import streamlit as st
import torch
from torch import nn

import vizhooks as vz
from vizhooks.lesson.code import NewHead
from vizhooks.models.registry import TAUGHT_MARK, backbone_name, parse_labels
from vizhooks.teaching import taught_bundle

#: Heads kept by this server (each a few kilobytes; the oldest unused goes first).
MAX_HEADS = 512


@dataclass(frozen=True)
class Head:
    """What a taught name stands for: the backbone's name, the replaced layer's path, the new
    Linear's weight and bias (CPU), the class names."""

    backbone: str
    path: str
    weight: torch.Tensor
    bias: torch.Tensor
    names: tuple[str, ...]

    def linear(self) -> nn.Linear:
        return linear_of(self.weight, self.bias)


def linear_of(weight: torch.Tensor, bias: torch.Tensor) -> nn.Linear:
    """A Linear layer holding ``weight`` (out, in) and ``bias`` (out)."""
    layer = nn.Linear(weight.shape[1], weight.shape[0])
    with torch.no_grad():
        layer.weight.copy_(weight)
        layer.bias.copy_(bias)
    return layer


_heads: OrderedDict[str, Head] = OrderedDict()
_composed: OrderedDict[tuple[str, int], vz.ModelBundle] = OrderedDict()
_lock = threading.Lock()


def is_taught(name: str) -> bool:
    return TAUGHT_MARK in name


def remember(taught: vz.Taught) -> str:
    """Keep a taught head on this server; returns the taught model's name."""
    head = Head(taught.backbone, taught.head_path, taught.head.weight.detach().cpu().clone(),
                taught.head.bias.detach().cpu().clone(), tuple(taught.bundle.categories))
    return keep(taught.bundle.name, head)


def keep(name: str, head: Head) -> str:
    with _lock:
        _heads[name] = head
        _heads.move_to_end(name)
        while len(_heads) > MAX_HEADS:
            _heads.popitem(last=False)
    return name


def head(name: str) -> Head | None:
    with _lock:
        found = _heads.get(name)
        if found is not None:
            _heads.move_to_end(name)
        return found


def names_of(name: str) -> tuple[str, ...]:
    """The class names of a taught model this server knows; () when it does not."""
    found = head(name)
    return found.names if found is not None else ()


def compose(name: str, backbone: vz.ModelBundle) -> vz.ModelBundle:
    """The taught model ``name`` on ``backbone`` (the shared model of its backbone's name), composed
    once per backbone object.

    Raises:
        TaughtModelGoneError: this server does not hold that head (restarted, or a link from another).
    """
    found = head(name)
    if found is None:
        raise TaughtModelGoneError(name)
    key = (name, id(backbone.model))
    with _lock:
        bundle = _composed.get(key)
    if bundle is None:
        bundle = taught_bundle(backbone, found.path, found.linear(), found.names)
        with _lock:
            _composed[key] = bundle
            while len(_composed) > 16:
                _composed.popitem(last=False)
    return bundle


def checkpoint_files(name: str) -> tuple[str, str]:
    """The download's file names: ``resnet18_my_classes.pth`` and ``.txt``."""
    stem = "".join(c if c.isalnum() or c in "_-." else "_" for c in backbone_name(name)) + "_my_classes"
    return f"{stem}.pth", f"{stem}.txt"


class TaughtModelGoneError(vz.WeightsError):
    """A taught model's name whose head this server does not hold."""

    def __init__(self, name: str) -> None:
        super().__init__(f"The taught model {name} is not on this server any more (it restarted, or the link "
                         f"comes from another one): teach it again, or upload its checkpoint in the Teach view.")
        self.code = "taught_gone"
        self.values = {"backbone": backbone_name(name)}


def code_head(name: str) -> NewHead | None:
    """What the code of a taught model needs of its new layer (vizhooks.lesson.code); None for a model
    that is not taught.

    Raises:
        TaughtModelGoneError: this server does not hold that head.
    """
    if not is_taught(name):
        return None
    found = head(name)
    if found is None:
        raise TaughtModelGoneError(name)
    return NewHead(found.path, int(found.weight.shape[1]), len(found.names), checkpoint_files(name)[0])


# --- this session's taught models -----------------------------------------------------------------

def use_model(name: str) -> None:
    """Make ``name`` this session's model from the next run on (the model menu is drawn already)."""
    offered = st.session_state.setdefault("taught_models", [])
    if name not in offered:
        offered.append(name)
    st.session_state["_switch_model"] = name


def switch_pending() -> None:
    """Called before the sidebar is drawn: a model chosen by the Teach view becomes the menu's choice."""
    name = st.session_state.pop("_switch_model", None)
    if name:
        st.session_state["model"] = name


def offered_models() -> list[str]:
    """The taught models this session may choose (those this server still holds)."""
    current = st.session_state.get("model", "")
    names = [*st.session_state.get("taught_models", []), *([current] if is_taught(current) else [])]
    return [m for m in dict.fromkeys(names) if names_of(m)]


# --- a head as bytes: the class store, a checkpoint upload ---------------------------------------

def head_blob(name: str) -> bytes | None:
    """The head of ``name`` as bytes (torch.save of plain tensors and strings); None when unknown."""
    found = head(name)
    if found is None:
        return None
    buffer = io.BytesIO()
    torch.save({"name": name, "backbone": found.backbone, "path": found.path, "weight": found.weight,
                "bias": found.bias, "names": list(found.names)}, buffer)
    return buffer.getvalue()


def keep_blob(data: bytes) -> str | None:
    """Keep the head in ``data`` (from :func:`head_blob`); its name, or None when unreadable."""
    try:
        buffer = io.BytesIO(data)
        raw = torch.load(buffer, weights_only=True)
        found = Head(str(raw["backbone"]), str(raw["path"]), raw["weight"].float(), raw["bias"].float(),
                     tuple(str(n) for n in raw["names"]))
        name = str(raw["name"])
    except Exception:  # a damaged or foreign blob: the page says the model is gone
        return None
    if not is_taught(name) or found.weight.shape != (len(found.names), found.weight.shape[1]):
        return None
    return keep(name, found)


def from_checkpoint(state: dict[str, torch.Tensor], names: list[str], backbone: vz.ModelBundle) -> vz.Taught | None:
    """A checkpoint the Teach view wrote, uploaded again: its head on ``backbone``, when every other
    tensor equals the backbone's (else None: it was taught on other weights)."""
    from vizhooks.teaching import find_head

    path, _ = find_head(backbone.model, len(backbone.categories))
    own = backbone.model.state_dict()
    heads = {f"{path}.weight", f"{path}.bias"}
    if set(state) != set(own):  # the same model's keys, the head's among them
        return None
    weight, bias = state[f"{path}.weight"], state[f"{path}.bias"]
    if weight.ndim != 2 or weight.shape[0] != len(names) or bias.shape != (len(names),):
        return None
    for key, value in own.items():
        if key not in heads and not torch.equal(value.cpu(), state[key].cpu()):
            return None
    layer = linear_of(weight, bias)
    bundle = taught_bundle(backbone, path, layer, names)
    empty = torch.zeros((len(names), len(names)), dtype=torch.int64).numpy()
    return vz.Taught(bundle=bundle, accuracy=float("nan"), confusion=empty, method="uploaded", heldout=0,
                     head_path=path, head=layer, backbone=backbone.name)


def checkpoint_bytes(bundle: vz.ModelBundle) -> bytes:
    """A taught model's whole state_dict as a file (built when the download is asked for, not on every run)."""
    buffer = io.BytesIO()
    torch.save({k: v.detach().cpu() for k, v in bundle.model.state_dict().items()}, buffer)
    return buffer.getvalue()


def read_upload(bundle: vz.ModelBundle, weights: bytes, labels: bytes, suffix: str) -> Any:
    """The uploaded checkpoint's head on ``bundle``; None when it was taught on other weights.

    Raises:
        WeightsError: not a checkpoint, or names that do not fit it (one sentence).
    """
    try:
        buffer = io.BytesIO(weights)
        state = torch.load(buffer, map_location="cpu", weights_only=True)
    except Exception as exc:
        raise vz.WeightsError(f"The .pth file is not a PyTorch checkpoint ({exc.__class__.__name__}).",
                              "teach_not_checkpoint") from None
    if not isinstance(state, dict):
        raise vz.WeightsError("The .pth file holds no state_dict.", "teach_not_checkpoint")
    try:
        text = labels.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise vz.WeightsError(code="teach_labels_text") from None
    names = parse_labels(text, f"labels{suffix}")
    return from_checkpoint(state, names, bundle)
