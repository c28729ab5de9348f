"""What the page's views and the lesson's handout show alike: backward's rows in words, the layer
table's headers, the clamp's settings. In the lesson's language (vizhooks.lesson.i18n); the page's
views (backward, table, intervene) import them from here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from vizhooks.hooks.gradients import BackwardRecord
from vizhooks.lesson.i18n import known, t

if TYPE_CHECKING:
    from PIL import Image
    from torch import Tensor

    from vizhooks.hooks.patching import PatchResult
    from vizhooks.interpret.concepts import Concepts
    from vizhooks.models.registry import ModelBundle

#: The patching step's photo B when none is chosen (the handout from the command line): photo A upside down.
PATCH_SOURCE_NAME = "photo_b.png"

#: The clamp's limit as a percentile of |gradient| at the clamped layer, on this photo: a fixed
#: number (the old default 0.001) clipped nothing on some models and everything on others.
CLAMP_PERCENTILES = (10, 25, 50, 75, 90, 99)
#: the 25th percentile: three quarters of the non-zero values are clipped, which changes the
#: gradient of every layer before it by about half (resnet18 on the sample photo)
CLAMP_DEFAULT = 25
#: Channels per gradient grid, two grids a row: few enough to see the change in each map.
CLAMP_CHANNELS = 4
#: Both grids of a layer share one colour scale: +- this percentile of the plain |gradient|.
CLAMP_COLOUR_PERCENTILE = 99


def shapes_text(shapes: Sequence[Sequence[int] | None] | None) -> str:
    if shapes is None:
        return "—"
    return ", ".join("None" if s is None else "×".join(map(str, s)) for s in shapes)


def table_facts(records: Sequence[BackwardRecord]) -> list[str]:
    """Sentences read off the table itself, so the text says what the rows show for any model: the
    deepest and the shallowest map-shaped gradient, and what the first module passes back."""
    hooked = [r for r in records if r.supported and r.grad_output]
    maps = [(r.name, s) for r in hooked for s in r.grad_output[:1]  # type: ignore[index]
            if s is not None and len(s) == 4 and s[2] * s[3] > 1]
    facts = []
    if len(maps) >= 2:
        (deep, ds), (shallow, ss) = maps[0], maps[-1]
        facts.append(t("backward_shapes", deep=deep, shallow=shallow, deep_shape=shapes_text([ds]),
                       shallow_shape=shapes_text([ss]), deep_c=ds[1], shallow_c=ss[1],
                       deep_hw=f"{ds[2]}×{ds[3]}", shallow_hw=f"{ss[2]}×{ss[3]}"))
    first = hooked[-1] if hooked else None
    if first is not None and first.grad_input is not None:
        shape = first.grad_input[0] if first.grad_input else None
        facts.append(t("backward_first_none", first=first.name) if shape is None
                     else t("backward_first", first=first.name, shape=shapes_text([shape])))
    return facts


def note(record: BackwardRecord) -> str:
    """A record's note in the current language (the library's English note for an unknown code)."""
    key = f"backward_note_{record.note_code}"
    return t(key) if record.note_code and known(key) else record.note


def header(column: str) -> str:
    """A column's header in the current language (a column the texts do not know keeps its name)."""
    return t(f"layer_col_{column}") if known(f"layer_col_{column}") else column


def patch_source(bundle: ModelBundle, picture: Image.Image, photo_b: Image.Image) -> Tensor:
    """The patching step's photo B as its code prepares it: squashed to photo A's size (``picture``,
    the picture the model saw) with the model's interpolation, then normalised."""
    from PIL import Image

    from vizhooks.models.images import to_tensor

    resample = Image.Resampling[bundle.input.interpolation.upper()]
    return to_tensor(photo_b.convert("RGB").resize(picture.size, resample, reducing_gap=3.0), bundle.input.mean,
                     bundle.input.std)


def top_relevance(bundle: ModelBundle, x: Tensor, layer: str, target: int, k: int = 5) -> list[tuple[int, float]]:
    """The relevance step's table: the ``k`` channels of ``layer`` with the highest activation x
    gradient for ``target``, as (channel, score), highest first (vizhooks.interpret.relevance)."""
    from vizhooks.interpret.relevance import channel_relevance

    found = channel_relevance(bundle, x, layer.split("#")[0], target, method="taylor")
    return [(int(c), float(found.scores[c])) for c in found.order[:k]]


def with_sticker(x: Tensor, mean: Sequence[float], std: Sequence[float]) -> Tensor:
    """The Clever Hans step's second picture: ``x`` with a red square (a sixth of the shorter side, at
    least 4 pixels) in its bottom-right corner, in the model's normalisation (as the step's code pastes it)."""
    import torch

    red = (torch.tensor([1.0, 0.0, 0.0]) - torch.tensor(list(mean))) / torch.tensor(list(std))
    side = max(4, min(x.shape[-2:]) // 6)
    stuck = x.detach().clone()
    stuck[0, :, -side:, -side:] = red[:, None, None].to(stuck.dtype)
    return stuck


def sticker_heat(bundle: ModelBundle, x: Tensor, layer: str, target: int) -> list[tuple[str, int, float, float, str]]:
    """The Clever Hans step's table: for the photo and the photo with a sticker (:func:`with_sticker`),
    ``(which, top class, heat centre row, column, where)``: Grad-CAM of ``target`` at ``layer``, its
    centre of mass (side = 1) and the ninth of the picture it lies in, as the audit flags shortcuts."""
    import torch

    from vizhooks.interpret.audit import heat_centres, region
    from vizhooks.interpret.cam import grad_cam

    rows = []
    for which, picture in (("photo", x), ("sticker", with_sticker(x, bundle.input.mean, bundle.input.std))):
        cam = grad_cam(bundle.model, picture, layer.split("#")[0], target=target)
        assert isinstance(cam, torch.Tensor)
        with torch.no_grad():
            top = int(bundle.model(picture.to(next(bundle.model.parameters()).device)).argmax())
        row, col = (float(v) for v in heat_centres(cam.numpy()[None])[0])
        rows.append((which, top, row, col, region((row, col))))
    return rows


def sticker_table(rows: Sequence[tuple[str, int, float, float, str]],
                  labels: Sequence[str]) -> tuple[list[str], list[list[object]]]:
    """:func:`sticker_heat`'s rows as the page and the handout show them: (headers, rows of text)."""
    headers = [t("lesson_audit_col_picture"), t("lesson_audit_col_top"), t("lesson_audit_col_centre"),
               t("lesson_audit_col_where")]
    return headers, [[t("lesson_audit_photo") if which == "photo" else t("lesson_audit_sticker"), labels[top],
                      f"{row:.2f}, {col:.2f}", t(f"audit_where_{where}")] for which, top, row, col, where in rows]


def patch_sweep(bundle: ModelBundle, x: Tensor, source: Tensor, layers: Sequence[str]) -> list[PatchResult]:
    """The patching step's sweep: photo A (``x``) with each layer taken from B in turn, on B's top class."""
    from vizhooks.hooks.patching import sweep

    return sweep(bundle.model, x, source, [name.split("#")[0] for name in layers])


def photo_concepts(bundle: ModelBundle, picture: Image.Image, layer: str, size: int) -> Concepts:
    """The concepts step's concepts: :func:`vizhooks.interpret.concepts.discover` over random crops of
    ``picture`` (the photo as the model saw it) at ``layer``, with the step's code's settings (code.py's
    ``LESSON_CONCEPTS`` concepts, ``LESSON_CROPS`` crops in one batch, seed 0)."""
    from vizhooks.interpret.concepts import discover
    from vizhooks.lesson.code import LESSON_CONCEPTS, LESSON_CROPS

    return discover(bundle, [picture], layer.split("#")[0], k=LESSON_CONCEPTS, crops_per_image=LESSON_CROPS,
                    size=size, seed=0, batch_size=LESSON_CROPS)


#: Crops per concept the concepts step shows (its code prints the same ones), and their side in pixels.
CONCEPT_TOP, CONCEPT_TILE = 3, 96


def concept_strips(found: Concepts, picture: Image.Image) -> list[tuple[Image.Image, str]]:
    """Each concept of :func:`photo_concepts` as the step shows it: its ``CONCEPT_TOP`` crops with the most
    of it, side by side, and a caption naming its three strongest channels (the largest of its row of W)."""
    import numpy as np
    from PIL import Image

    strips = []
    for i in range(found.k):
        boxes = [box for _, box in found.top(i, CONCEPT_TOP)]
        strip = Image.new("RGB", (CONCEPT_TILE * len(boxes), CONCEPT_TILE), "white")
        for n, box in enumerate(boxes):
            strip.paste(picture.crop(box).resize((CONCEPT_TILE, CONCEPT_TILE)), (n * CONCEPT_TILE, 0))
        channels = np.argsort(-found.bank[i], kind="stable")[:3].tolist()
        strips.append((strip, t("lesson_concepts_concept", i=i, channels=", ".join(map(str, channels)))))
    return strips
