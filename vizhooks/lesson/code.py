"""Plain-PyTorch code (no vizhooks) that registers the same hooks as a view of the page.

The page shows these under "How this was made" so a student can paste them into a notebook.
Each snippet is complete: imports, model, the same preprocessing, the hooks, removal, and a print
of what was caught. The code itself lives in real Python files, vizhooks/lesson/snippets/*.py (their
__init__.py says how they are written); this module picks the parts and fills in the model's values.
tests/test_snippets.py runs every one of them in a fresh interpreter and compares what it prints with
what the page shows.

A snippet comes in two parts (:class:`Code`): the set-up (model, photo, preprocessing, ``to_map``
with only the branches the chosen layers need), the same for every lesson step, and the step's
hook lines; the lesson shows the hook lines first and folds the set-up. No line is wider than
:data:`WIDTH` columns, so a code box on a projector never scrolls sideways.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

from vizhooks.hooks.budget import capture_shapes
from vizhooks.lesson.snippets import WIDTH, Source, render
from vizhooks.models.architectures import HF_PREFIX, SEED, TIMM_PREFIX, build_kwargs, imagenet_weights
from vizhooks.models.images import MAX_SIZE
from vizhooks.models.maps import channels_last_modules
from vizhooks.models.registry import TAUGHT_MARK, input_spec, meta_model, resolve_entry

VIEWS = ("maps", "gradients", "gradcam", "backward", "table")
#: Bodies used by the lesson only (see vizhooks/lesson/steps.py).
LESSON_BODIES = ("hello", "prepost", "conv", "grad_none", "clamp", "sanity", "remove", "patching", "relevance",
                 "concepts", "audit")
#: The concepts step's NMF: concepts, and random crops of the photo (vizhooks.lesson.display.photo_concepts).
LESSON_CONCEPTS, LESSON_CROPS = 3, 32


def call(head: str, args: list[str], tail: str = "") -> str:
    """``head(args)tail`` as a line, or one argument a line when that is wider than :data:`WIDTH`."""
    line = f"{head}({', '.join(args)}){tail}"
    if len(line) <= WIDTH:
        return line + "\n"
    return f"{head}(\n" + "".join(f"    {a},\n" for a in args) + f"){tail}\n"


@dataclass(frozen=True)
class NewHead:
    """A taught model's new last layer, as its code rebuilds it (the page keeps the heads it taught:
    vizhooks/page/taught.py, ``code_head``): where it goes, its size, and the checkpoint file the
    Teach view downloads (every weight of the backbone and of the new layer)."""

    path: str
    in_features: int
    classes: int
    checkpoint: str


def is_taught(name: str) -> bool:
    return TAUGHT_MARK in name


def _taught_constructor(arch: str, found: NewHead) -> str:
    """A taught model: its architecture with the new last layer put in, then the downloaded checkpoint."""
    load = call("model.load_state_dict", [call("torch.load", [repr(found.checkpoint), "weights_only=True"])
                                          .rstrip("\n")])
    if arch.startswith(TIMM_PREFIX):
        return "import timm\n\n" + call("model = timm.create_model", [
            repr(arch.removeprefix(TIMM_PREFIX)), f"num_classes={found.classes}"]) + load + "model.eval()\n"
    extra = [f"{k}={v!r}" for k, v in build_kwargs(arch).items() if k != "num_classes"]
    attribute = "model" + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in found.path.split("."))
    return (call(f"model = models.{arch}", ["weights=None", *extra])
            + f"{attribute} = torch.nn.Linear({found.in_features}, {found.classes})\n" + load + "model.eval()\n")


def _constructor(name: str, pretrained: bool, num_classes: int | None, head: NewHead | None = None) -> str:
    entry = resolve_entry(name)
    arch = entry.arch
    if is_taught(name):
        if head is None:
            raise ValueError(f"{name} is a taught model: pass its new layer (head=NewHead(...)) to make its code.")
        return _taught_constructor(arch, head)
    # random weights are the page's own: the same seed, so every number printed matches the page
    seed = "" if pretrained else f"torch.manual_seed({SEED})\n"
    if arch.startswith(HF_PREFIX):  # the set-up's HFLogits (setup.hf_model) wraps the transformers model
        ref = repr(arch.removeprefix(HF_PREFIX))
        flip = ", flip=True" if input_spec(arch).channels == "BGR" else ""
        if pretrained:
            return call("model = HFLogits", [call("AutoModelForImageClassification.from_pretrained", [ref])
                                              .rstrip("\n")] + [flip.removeprefix(", ")] * bool(flip), ".eval()")
        return (seed + call("config = AutoConfig.from_pretrained", [ref])
                + f"model = HFLogits(AutoModelForImageClassification.from_config(config){flip}).eval()\n")
    if arch.startswith(TIMM_PREFIX):
        return "import timm\n\n" + seed + call(
            "model = timm.create_model", [repr(arch.removeprefix(TIMM_PREFIX)), f"pretrained={pretrained}"], ".eval()")
    if entry.weights not in ("auto", "none", "imagenet"):
        return (f"model = models.{arch}(num_classes={num_classes or 1000})\n"
                + call("model.load_state_dict", [call("torch.load", [repr(entry.weights), "weights_only=True"])
                                                  .rstrip("\n")]) + "model.eval()\n")
    if pretrained:
        return call(f"model = models.{arch}", [f"weights=models.{type(imagenet_weights(arch)).__name__}.DEFAULT"],
                    ".eval()")
    # what the pretrained builder would set: the input size (ViT-H/14: 518) shapes every layer, and
    # GoogLeNet / Inception v3 normalise their input again inside (transform_input) and skip their
    # own initialisation (init_weights=False)
    extra = [f"{k}={v!r}" for k, v in build_kwargs(arch).items() if k != "num_classes"]
    return seed + call(f"model = models.{arch}", ["weights=None", *extra], ".eval()")


def with_weights_fallback(setup: str, model: str, num_classes: int | None = None, lang: str = "en") -> str:
    """``setup`` whose pretrained model falls back to the page's seeded random weights, with a
    sentence, where no checkpoint is cached and none can be downloaded (a notebook taken home and
    run offline). Set-ups that do not load pretrained weights are returned as they are."""
    if is_taught(model) or resolve_entry(model).weights not in ("auto", "none", "imagenet"):
        return setup
    pretrained, random = _constructor(model, True, num_classes), _constructor(model, False, num_classes)
    if pretrained not in setup:
        return setup
    fallback = (render("setup.fallback_try", lang) + _indent(pretrained)
                + render("setup.fallback_except", lang, model=model) + _indent(random))
    return setup.replace(pretrained, fallback, 1)


def _indent(code: str) -> str:
    return "".join(f"    {line}" if line.strip() else line for line in code.splitlines(keepends=True))


@functools.lru_cache(maxsize=64)
def _has_tokens(name: str, layers: tuple[str, ...], hw: tuple[int, int]) -> bool:
    """Whether a chosen layer takes or gives transformer tokens (1, T, D), worked out on the meta device."""
    return any(len(shape) == 3 for what in ("input", "output")
               for shape in capture_shapes(name, layers, hw, what).values())


def setup_code(name: str, image: str, size: int, pretrained: bool, num_classes: int | None, layers: list[str],
               lang: str = "en", head: NewHead | None = None) -> str:
    """The set-up (snippets/setup.py): imports, the model's constructor, the photo prepared the way the
    model expects, and ``to_map`` with only the branches ``layers`` need (tokens, channels-last)."""
    entry = resolve_entry(name)
    model = meta_model(name)[0]
    spec = input_spec(entry.arch, model)
    values: dict[str, object] = dict(image=image, resample=Source(f"Image.Resampling.{spec.interpolation.upper()}"),
                                     mean=list(spec.mean), std=list(spec.std))
    text = render("setup.imports", lang)
    if entry.is_hf:
        text += render("setup.hf_model", lang)
    text += _constructor(name, pretrained, num_classes, head)
    if spec.fixed_size and spec.resize_rule == "transformers":  # a Hugging Face model's image processor
        text += render("setup.squash_size" if spec.squash else "setup.processor_size", lang, side=spec.fixed_size,
                       resize=spec.resize_side or spec.fixed_size, **values)
    elif spec.fixed_size:
        text += render("setup.fixed_size", lang, side=spec.fixed_size, resize=spec.resize_side or spec.fixed_size,
                       **values)
    else:
        size = max(int(size), spec.min_size)
        text += render("setup.free_size", lang, size=size, cap=min(2 * size, 2 * MAX_SIZE), **values)
    text += render("setup.normalise", lang, **values)
    channels_last = sorted(channels_last_modules(model) & set(layers))
    if channels_last:
        text += render("setup.channels_last_list", lang, channels_last=channels_last)
    text += render("setup.to_map", lang)
    if _has_tokens(name, tuple(layers), _input_hw(name, size)):
        text += render("setup.tokens", lang)
    if channels_last:
        text += render("setup.channels_last", lang)
    return text + render("setup.to_map_end", lang)


def _target(target: int | None, top1: str, lang: str) -> Source:
    """The class a step differentiates: the chosen one, or the code for the top-1 class (values.py)."""
    return Source(str(int(target)) if target is not None else render(top1, lang).strip())


@dataclass(frozen=True)
class Code:
    """A snippet in two parts: the set-up (imports, model, photo, preprocessing, ``to_map``), the
    same for every step of one page, and the step's own hook lines, which run after it."""

    setup: str
    steps: str

    @property
    def full(self) -> str:
        """The whole runnable file."""
        return self.setup + self.steps


def lesson_code(body: str, *, model: str, image: str, size: int, layers: list[str], target: int | None = None,
                clamp_at: str | None = None, limit: float = 1e-3, pretrained: bool = False,
                num_classes: int | None = None, lang: str = "en", setup_layers: list[str] | None = None,
                conv: ConvPlace | None = None, head: NewHead | None = None,
                source_image: str = "photo_b.png") -> Code:
    """One lesson step's code (``body`` in ``LESSON_BODIES``) as set-up and step lines.

    ``setup_layers`` are the layers the set-up prepares ``to_map`` for (default ``layers`` and
    ``clamp_at``): the page passes all its chosen layers, so every step shares one set-up. ``conv``
    is the place the "conv" body takes apart (default: :func:`conv_place` of ``layers``); ``source_image``
    the path of the "patching" body's photo B."""
    if body not in LESSON_BODIES:
        raise ValueError(f"body must be one of {', '.join(LESSON_BODIES)}, not {body!r}.")
    names = setup_layers if setup_layers is not None else [*layers, *([clamp_at] if clamp_at else [])]
    text = setup_code(model, image, size, pretrained, num_classes, names, lang, head)
    deepest = body in ("sanity", "relevance", "concepts", "audit")  # these look at the deepest chosen layer
    place = (conv or conv_place(model, layers)) if body == "conv" else ConvPlace(layers[-1 if deepest else 0])
    where = (Source(f"{place.row}, {place.col}") if place.row is not None and place.col is not None else
             Source(render("values.centre", lang).strip()))
    stages = sanity_stages(model) if body == "sanity" else []
    # the patching body prepares photo B as the set-up prepared photo A (its own values: in a notebook
    # an earlier step may have reused the set-up's names)
    spec = input_spec(resolve_entry(model).arch, meta_model(model)[0])
    resample = Source(f"Image.Resampling.{spec.interpolation.upper()}")
    return Code(text, render(body, lang, layers=list(layers), layer=place.layer, resample=resample,
                             mean=list(spec.mean), std=list(spec.std),
                             target=_target(target, "values.top1_lesson", lang), clamp_at=clamp_at, limit=float(limit),
                             channel=place.channel, where=where, stages=stages, source_image=source_image,
                             side=_input_hw(model, size)[0], k=LESSON_CONCEPTS, crops=LESSON_CROPS))


@dataclass(frozen=True)
class ConvPlace:
    """Which output value the lesson's "conv" step takes apart: a Conv2d, an output channel and a
    place in its map (None: the centre, worked out by the code itself)."""

    layer: str
    channel: int = 0
    row: int | None = None
    col: int | None = None


def sanity_stages(model: str) -> list[str]:
    """The sanity check's stages for ``model`` (vizhooks.interpret.sanity.randomisation_stages, on the meta device)."""
    from vizhooks.interpret.sanity import randomisation_stages

    meta, lock = meta_model(model)
    with lock:
        return randomisation_stages(meta)


def conv_place(model: str, layers: list[str]) -> ConvPlace:
    """The Convolution view's default: the first chosen layer that is a Conv2d, else the model's
    first Conv2d (found on the meta device); channel 0 at the centre of its map."""
    import torch

    meta, lock = meta_model(model)
    with lock:
        modules = dict(meta.named_modules())
    convs = [n for n, m in modules.items() if isinstance(m, torch.nn.Conv2d)]
    chosen = [n for n in layers if isinstance(modules.get(n.split("#")[0]), torch.nn.Conv2d)]
    return ConvPlace((chosen or convs or layers)[0].split("#")[0])


def lesson_snippet(body: str, **kwargs: Any) -> str:
    """Python source for one lesson step: :func:`lesson_code` as one runnable file."""
    return lesson_code(body, **kwargs).full


def view_code(
    view: str,
    *,
    model: str,
    image: str,
    size: int,
    layers: list[str],
    what: str = "output",
    target: int | None = None,
    pretrained: bool = False,
    num_classes: int | None = None,
    lang: str = "en",
    head: NewHead | None = None,
) -> Code:
    """One view's code as set-up and step lines. ``image`` is the path written into the code;
    ``target`` None means "the top-1 class" (computed in the snippet)."""
    if view not in VIEWS:
        raise ValueError(f"view must be one of {', '.join(VIEWS)}, not {view!r}.")
    text = setup_code(model, image, size, pretrained, num_classes, list(layers), lang, head)
    skip = _inplace_children(model, x_hw=_input_hw(model, size)) if view == "backward" else []
    part = f"maps.{'input' if what == 'input' else 'output'}" if view == "maps" else view
    return Code(text, render(part, lang, layers=list(layers), target=_target(target, "values.top1", lang), skip=skip))


def snippet(view: str, **kwargs: Any) -> str:
    """Python source for one view: :func:`view_code` as one runnable file."""
    return view_code(view, **kwargs).full


def _input_hw(name: str, size: int) -> tuple[int, int]:
    spec = input_spec(resolve_entry(name).arch, meta_model(name)[0])
    side = spec.fixed_size or max(int(size), spec.min_size)
    return side, side


def _inplace_children(name: str, x_hw: tuple[int, int]) -> list[str]:
    """Top-level modules a full backward hook cannot wrap (worked out on the meta device)."""
    import torch

    from vizhooks.hooks.gradients import inplace_conflicts

    model, lock = meta_model(name)
    children = [n for n, _ in model.named_children()]
    with lock:
        return sorted(inplace_conflicts(model, torch.empty(1, 3, *x_hw, device="meta"), children))
