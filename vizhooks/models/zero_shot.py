"""CLIP zero-shot: a classifier whose classes are the words you type, through open_clip.

The model's logits for a picture are ``logit_scale.exp() * cos(image embedding, prompt embedding)``,
one per prompt, as in CLIP's paper; the prompts' embeddings are computed once per prompt set (one
text forward for the whole set) and cached, so a page that shows the same class names again runs
no text forward. The vizhooks model holds only the image tower (``visual.*`` layers), so every view
shows what CLIP's image encoder does, Grad-CAM for "a photo of a red mug" included.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import torch

from vizhooks._hooks import share_lock
from vizhooks.models.architectures import ZeroShotCLIP, clip_check, clip_random, open_clip_module
from vizhooks.models.images import clip_spec
from vizhooks.models.registry import RANDOM_AS_ASKED, ModelBundle, clip_name, resolve_device
from vizhooks.models.weights import (
    DOWNLOAD_TIMEOUT_S,
    Note,
    WeightsError,
    bounded,
    gathered,
    hub_download_allowed,
    remember_download,
)

#: Prompt sets whose text embeddings each CLIP model keeps.
PROMPT_SETS_KEPT = 32
MAX_PROMPTS = 1000


def _check_prompts(prompts: Sequence[str]) -> tuple[str, ...]:
    if isinstance(prompts, str):
        raise TypeError("prompts must be a list of class names, not one string.")
    cleaned = tuple(str(p).strip() for p in prompts)
    if len(cleaned) < 2 or len(cleaned) > MAX_PROMPTS or not all(cleaned):
        raise ValueError(f"Give from 2 to {MAX_PROMPTS} class names, none of them empty (one per line on the page).")
    if len(set(cleaned)) != len(cleaned):
        raise ValueError("Each class name must be different: remove the repeated one.")
    return cleaned


#: Chinese the tokenizer must keep as Chinese ("a photo of a cat").
CHINESE_SAMPLE = "一只猫的照片"
_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")


def _text_tower(arch: str) -> str | None:
    """The Hugging Face model (id or folder) of ``arch``'s text tower, or None: CLIP's own text transformer."""
    cfg = open_clip_module().get_model_config(arch) or {}
    text = cfg.get("text_cfg", {})
    return text.get("hf_tokenizer_name") or text.get("hf_model_name") or None


def _text_files_missing(arch: str, exc: Exception) -> WeightsError:
    """The sentence for a Hugging Face text tower whose config or tokenizer is neither here nor downloadable."""
    return WeightsError(
        f"The text tower of {arch} needs the config and tokenizer of {_text_tower(arch)} from Hugging Face, and "
        f"they could not be read ({type(exc).__name__}): run `make weights CLIP={arch}` once on a machine with "
        f"internet (HF_ENDPOINT names a mirror), or copy its Hugging Face cache (HF_HOME) here.")


@functools.cache
def reads_chinese(arch: str) -> bool:
    """Whether CLIP ``arch`` reads Chinese class names: its tokenizer is a Hugging Face one whose vocabulary
    holds Chinese characters (open_clip's multilingual models on XLM-R, mT5 or NLLB, or a cn_clip-style BERT),
    so "一只猫的照片" reaches the text tower as Chinese pieces with no unknown token. CLIP's own BPE
    tokenizer (every openai and LAION English model) spells Chinese as bytes its training hardly saw: False.
    The tokenizer is read, not the weights; a tokenizer that cannot be read gives False.

    Raises:
        ValueError: open_clip is missing or has no model of that name.
    """
    open_clip = clip_check(arch)
    if _text_tower(arch) is None:
        return False
    try:
        hf = getattr(open_clip.get_tokenizer(arch), "tokenizer", None)
    except OSError:
        return False
    if hf is None or not hasattr(hf, "convert_ids_to_tokens"):
        return False
    ids = list(hf.encode(CHINESE_SAMPLE, add_special_tokens=False))
    pieces = [str(p) for p in hf.convert_ids_to_tokens(ids)]
    return hf.unk_token_id not in ids and any(_CJK.search(p) for p in pieces)


def _fetch_text_tower(arch: str) -> None:
    """Put the config and tokenizer of ``arch``'s Hugging Face text tower into the cache (open_clip builds the
    tower from its config and reads names with its tokenizer, even when the CLIP checkpoint holds every weight)."""
    name = _text_tower(arch)
    if name is None:
        return
    from transformers import AutoConfig, AutoTokenizer

    def fetch(started: Any) -> None:
        AutoConfig.from_pretrained(name)
        started()
        AutoTokenizer.from_pretrained(name)

    bounded(fetch, DOWNLOAD_TIMEOUT_S, arch)


def _pretrained_file(arch: str, tag: str) -> tuple[str, str]:
    """The checkpoint file of open_clip's pretrained tag: the cache, or a download whose first
    answer is awaited at most DOWNLOAD_TIMEOUT_S seconds. Returns (path, source)."""
    open_clip = open_clip_module()
    cfg = open_clip.get_pretrained_cfg(arch, tag)
    if not cfg:
        tags = ", ".join(open_clip.list_pretrained_tags_by_model(arch)) or "none"
        raise WeightsError(f"open_clip has no weights {tag!r} for {arch} (it has: {tags})")
    hub = str(cfg.get("hf_hub", ""))
    if hub:
        from huggingface_hub import try_to_load_from_cache

        repo, filename = os.path.split(hub)  # "owner/name/" or "owner/name/file", as open_clip reads it
        for name in (filename, "open_clip_model.safetensors", "open_clip_pytorch_model.bin"):
            found = try_to_load_from_cache(repo, name) if name else None
            if isinstance(found, str):
                return found, "cache"
    notes: list[Note] = []
    if not hub_download_allowed(notes):
        raise gathered([notes[0], ("clip_not_cached", {"tag": tag, "arch": arch})], sep=", and ", end="")
    try:
        path = bounded(lambda started: open_clip.download_pretrained(cfg), DOWNLOAD_TIMEOUT_S, arch)
    except WeightsError as exc:
        remember_download(exc)
        raise gathered([("clip_download_failed", {"tag": tag, "arch": arch, "reason": str(exc).rstrip(".")})],
                       end="") from None
    remember_download(None)
    return str(path), "download"


def _build(arch: str, weights: str) -> tuple[Any, str, str, bool, tuple[Note, ...]]:
    """(open_clip model in eval mode, weights source, status sentence, pretrained, the reasons for random
    weights where pretrained ones were asked for)."""
    open_clip = clip_check(arch)
    fix = (f"To use real weights, run `python -c \"import open_clip; open_clip.create_model('{arch}', "
           f"pretrained='TAG')\"` once on a machine with internet (open_clip keeps them in the Hugging Face "
           f"cache, HF_HOME; HF_ENDPOINT names a mirror).")
    if weights == "none":
        status = RANDOM_AS_ASKED.format(name=arch)
        return clip_random(arch), "random", status, False, ()
    if os.path.isfile(weights):
        model = open_clip.create_model(arch, pretrained=weights).eval()
        return model, "file", f"Weights for {arch} from {weights}.", True, ()
    tags = open_clip.list_pretrained_tags_by_model(arch)
    tag = tags[0] if weights == "auto" and tags else weights
    try:
        if weights == "auto" and not tags:
            raise WeightsError(f"open_clip lists no pretrained weights for {arch}")
        path, source = _pretrained_file(arch, tag)
        model = open_clip.create_model(arch, pretrained=path)
        return model.eval(), source, f"The {tag} weights of {arch} ({path}).", True, ()
    except WeightsError as exc:
        if weights != "auto":
            raise WeightsError(f"{str(exc).rstrip('.')}. {fix}") from None
        status = (f"Random weights: the weights of {arch} could not be loaded. {str(exc).rstrip('.')}. {fix} Until "
                  f"then, the class names are matched by an untrained network and predictions are meaningless.")
        return clip_random(arch), "random", status, False, exc.notes


def fetch_clip(spec: str) -> str:
    """Put open_clip's weights ``spec`` (``"ARCH"`` for its first pretrained tag, or ``"ARCH:TAG"``) into
    the Hugging Face cache, where :func:`zero_shot` finds them offline; returns the file's path.
    (``python -m vizhooks --download-weights clip:RN50:openai``, ``make weights CLIP=RN50:openai``.)

    Raises:
        ValueError: open_clip has no such model.
        WeightsError: no such tag, downloads switched off, or the download failed (one sentence).
    """
    open_clip = open_clip_module()
    arch, _, tag = (spec, "", "") if spec in open_clip.list_models() else spec.rpartition(":")
    arch = arch or spec
    clip_check(arch)
    tags = open_clip.list_pretrained_tags_by_model(arch)
    if not (tag or tags):
        raise WeightsError(f"open_clip lists no pretrained weights for {arch}.")
    try:
        path = _pretrained_file(arch, tag or tags[0])[0]
        _fetch_text_tower(arch)
        return path
    except WeightsError as exc:
        raise WeightsError(f"{str(exc).rstrip('.')}: run this again on a machine with internet (HF_ENDPOINT names a "
                           f"mirror), or copy its Hugging Face cache (HF_HOME) here.") from None


class _Loaded:
    """One CLIP model on one device, with its tokenizer and its cache of prompt embeddings."""

    def __init__(self, arch: str, weights: str, device: torch.device) -> None:
        try:
            self.clip, self.source, self.status, self.pretrained, self.notes = _build(arch, weights)
            self.tokenizer = open_clip_module().get_tokenizer(arch)
        except OSError as exc:  # transformers: a Hugging Face text tower's files, neither cached nor downloadable
            raise _text_files_missing(arch, exc) from None
        self.clip.to(device)
        self.device = device
        self.lock = threading.Lock()
        self.prompts: OrderedDict[tuple[str, ...], torch.Tensor] = OrderedDict()

    def features(self, prompts: tuple[str, ...]) -> torch.Tensor:
        """The prompts' text embeddings: one text forward for a new set, none for a known one."""
        with self.lock:
            if prompts in self.prompts:
                self.prompts.move_to_end(prompts)
                return self.prompts[prompts]
        with torch.no_grad():
            tokens = self.tokenizer(list(prompts)).to(self.device)
            found = self.clip.encode_text(tokens).float()
        with self.lock:
            self.prompts[prompts] = found
            while len(self.prompts) > PROMPT_SETS_KEPT:
                self.prompts.popitem(last=False)
        return found


@functools.lru_cache(maxsize=2)
def _loaded(arch: str, weights: str, device: torch.device) -> _Loaded:
    return _Loaded(arch, weights, device)


def zero_shot(arch: str, prompts: Sequence[str], *, weights: str | os.PathLike = "auto",
              device: str | torch.device | None = None) -> ModelBundle:
    """A CLIP model as a classifier of the class names (prompts) you give.

    Args:
        arch: an open_clip model name (``open_clip.list_models()``), e.g. ``"RN50"`` or ``"ViT-B-32"``; a
            multilingual one (``"xlm-roberta-base-ViT-B-32"``) reads Chinese names too (:func:`reads_chinese`).
        prompts: 2 or more class names or sentences ("a photo of a red mug"), in a language the model reads.
        weights: ``"auto"`` (the model's first open_clip pretrained tag: the Hugging Face cache, then a
            bounded download, else seeded random weights with a sentence saying so), a tag such as
            ``"openai"`` (an error instead of random weights), ``"none"`` (seeded random, offline) or a
            checkpoint file.
        device: ``"auto"`` / None or any torch device string.

    Returns:
        A :class:`ModelBundle` whose ``model(x)`` returns ``logit_scale.exp() * cos(image, prompt)``
        per prompt, whose ``categories`` are the prompts, whose ``clip`` is the open_clip model and
        whose ``name`` is :func:`vizhooks.models.registry.clip_name` of both (the layer lists and the
        memory budget find the model by it).

    Raises:
        ValueError: unknown model, fewer than 2 or repeated prompts, or open_clip missing.
        WeightsError: a named tag or file that cannot be loaded, or a Hugging Face text tower whose config
            and tokenizer are neither cached nor downloadable.

    Example:
        >>> bundle = zero_shot("RN50", ["a cat", "a dog", "a red mug"], weights="none", device="cpu")
        >>> bundle.model(bundle.preprocess(photo)).softmax(-1)
    """
    names = _check_prompts(prompts)
    dev = resolve_device(device or "auto")
    loaded = _loaded(arch, os.fspath(weights), dev)
    model = ZeroShotCLIP(loaded.clip, loaded.features(names)).to(dev).eval()
    share_lock(model, loaded.clip)  # every prompt set's model runs the same image tower
    spec = clip_spec(loaded.clip.visual)
    return ModelBundle(
        model=model, name=clip_name(arch, names), device=dev, pretrained=loaded.pretrained,
        weights_status=loaded.status, categories=list(names), mean=spec.mean, std=spec.std,
        weights_source=loaded.source, arch=f"clip:{arch}", weights_notes=loaded.notes,
        input=spec, clip=loaded.clip,
    )


__all__ = ["ZeroShotCLIP", "fetch_clip", "reads_chinese", "zero_shot"]
