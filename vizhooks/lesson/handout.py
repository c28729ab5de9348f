"""The lesson to take home: the page's steps (vizhooks/lesson/steps.py) on one photo and model, as a
Jupyter notebook or as one self-contained HTML handout.

- The **notebook** holds each step's text (markdown) and code (code cells: the set-up once, then each
  step's hook lines), the question and its answer. The photo is kept inside it: a first cell (source
  hidden) writes it next to the notebook and shows it, so one file is all a student takes home. It
  runs top to bottom offline with PyTorch, torchvision and Pillow only (and scikit-learn for the
  concepts step's NMF): a pretrained model falls back to the page's seeded random weights, with a
  sentence, where no checkpoint is cached.
- The **handout** is one HTML file: the same text and code with the pictures this photo gives at each
  step (feature-map grids, one convolution taken apart, gradients, Grad-CAM and its sanity check, the
  tables), embedded as ``data:`` URLs; no script, no request for a style or a font; an A4 print style.

Both are made outside a page run (the page's deferred download, ``python -m vizhooks lesson``) from
plain values (:class:`LessonChoices`) and the shared model, in the language asked, with the page's
own functions: the same code, numbers and pictures as the Lesson view for the same photo and model.
"""

from __future__ import annotations

import base64
import html
import io
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import torch
from nbformat import v4
from PIL import Image

import vizhooks as vz
from vizhooks.analysis import Analysis, analyse, clamp_limit_of, hook_calls_demo, lesson_sanity, top_classes
from vizhooks.hooks.gradients import GradientResult, backward_report, gradient_pass
from vizhooks.i18n import LANGUAGES, nt
from vizhooks.interpret.cam import cams_from
from vizhooks.interpret.methods import ExplainError
from vizhooks.lesson.code import Code, ConvPlace, NewHead, conv_place, lesson_code, view_code, with_weights_fallback
from vizhooks.lesson.display import (
    CLAMP_CHANNELS,
    CLAMP_COLOUR_PERCENTILE,
    CLAMP_DEFAULT,
    PATCH_SOURCE_NAME,
    concept_strips,
    header,
    note,
    patch_source,
    patch_sweep,
    photo_concepts,
    shapes_text,
    sticker_heat,
    sticker_table,
    table_facts,
    top_relevance,
)
from vizhooks.lesson.i18n import in_language, known, t
from vizhooks.lesson.steps import FORMATS, Step, plan_steps
from vizhooks.models.labels import class_labels
from vizhooks.models.layers import architecture_layers, quick_picks, token_model
from vizhooks.network.convolution import ConvStep, conv_at
from vizhooks.render.figures import (
    channel_overlay,
    conv_products_figure,
    conv_window_figure,
    grid_layout,
    palette_png,
)

#: How many input channels (the strongest) the handout's conv step shows, as the view's default.
CONV_ROWS = 4

#: Hears how far a lesson file has come: (parts done, parts in all). The preparation (the photo through
#: the model) is the first part; then each step of the HTML handout, or the notebook's writing.
Progress = Callable[[int, int], None]


def _quiet(done: int, total: int) -> None:
    """No one listening."""


@dataclass(frozen=True)
class LessonChoices:
    """Everything a lesson file is made from, as plain values (a closure keeps them for the page's
    deferred download). ``layers`` empty: the page's tour for the model; ``target`` None: the top-1
    class; ``clamp_at`` None: the last layer (as the Lesson view); ``conv`` None: the Convolution
    view's default place (the first chosen Conv2d, channel 0, the centre of its map)."""

    model: str
    photo: bytes
    photo_name: str = "my_photo.jpg"
    size: int = 224
    lang: str = "en"
    layers: tuple[str, ...] = ()
    target: int | None = None
    clamp_at: str | None = None
    percentile: int = CLAMP_DEFAULT
    channels: int | None = 16
    order: str = "index"
    cmap: str = "viridis"
    norm: str = "channel"
    columns: int | None = None
    conv: ConvPlace | None = None
    #: a taught model's new layer (the page's taught.code_head), for its code
    head: NewHead | None = None
    #: the lesson plan: step numbers (1-based) in the teacher's order; empty: every step
    plan: tuple[int, ...] = ()
    #: the patching step's photo B (None: photo A upside down) and the file name its code reads it from
    source_photo: bytes | None = None
    source_name: str = PATCH_SOURCE_NAME


def step_code(step: Step, *, model: str, image: str, size: int, layers: list[str], target: int | None,
              pretrained: bool, num_classes: int, lang: str, clamp_at: str | None = None,
              limit: float = 0.0, conv: ConvPlace | None = None, head: NewHead | None = None,
              source_image: str = PATCH_SOURCE_NAME) -> Code:
    """One step's code as the Lesson view prints it: the set-up prepared for all ``layers`` (the same in
    every step) and the step's hook lines (the clamp step: the layers before ``clamp_at``; the conv
    step: the value at ``conv``; the patching step: photo B at ``source_image``)."""
    kind, name = step.code
    common: dict[str, Any] = dict(model=model, image=image, size=size, target=target, pretrained=pretrained,
                                  num_classes=num_classes, lang=lang, head=head)
    if kind == "view":
        return view_code(name, layers=list(layers), what="output", **common)
    hooked = list(layers)
    if name == "clamp" and clamp_at is not None:
        hooked = [n for n in layers if layers.index(n) < layers.index(clamp_at)] or layers[:1]
    return lesson_code(name, layers=hooked, clamp_at=clamp_at if name == "clamp" else None, limit=limit,
                       setup_layers=list(layers), conv=conv, source_image=source_image, **common)


@dataclass
class Lesson:
    """One photo through one model, with what every step needs: the page's analysis, the class, the
    clamp and each step's code."""

    choices: LessonChoices
    bundle: vz.ModelBundle
    analysis: Analysis
    layers: list[str]
    target: int
    clamp_at: str
    limit: float
    clipped: float
    count: int
    conv: ConvStep
    codes: dict[str, Code] = field(default_factory=dict)
    _gradients: list[GradientResult] = field(default_factory=list)

    def gradients(self) -> GradientResult:
        """The gradient step's and Grad-CAM's one pass (the page's get_gradients), worked out once."""
        if not self._gradients:
            self._gradients.append(gradient_pass(self.bundle.model, self.analysis.x, self.layers, target=self.target,
                                                 as_maps=True))
        return self._gradients[0]


def page_layers(model: str) -> list[str]:
    """The layers the page starts a model with (its tour)."""
    return quick_picks(architecture_layers(model), token_model(model))["tour"]


def prepare(choices: LessonChoices, bundle: vz.ModelBundle) -> Lesson:
    """The page's analysis of the photo and each step's code.

    Raises:
        InvalidImageError: the photo cannot be read.
        UnknownLayerError: a layer the model does not have.
    """
    layers = list(choices.layers) or page_layers(choices.model)
    analysis = analyse(bundle, vz.load_image(choices.photo), choices.size, layers, "output")
    layers = [n for n in layers if n in analysis.activations]
    top1 = int(analysis.logits[0].argmax())
    target = top1 if choices.target is None else choices.target
    clamp_at = choices.clamp_at if choices.clamp_at in layers else layers[-1]
    grad = vz.capture_gradients(bundle.model, analysis.x, [clamp_at], target=target)[clamp_at]
    limit, clipped, count = clamp_limit_of(grad, choices.percentile)
    place = conv_of(choices, bundle, analysis, layers)
    step = conv_at(bundle.model, analysis.x, place.layer, place.channel, int(place.row or 0), int(place.col or 0))
    lesson = Lesson(choices, bundle, analysis, layers, target, clamp_at, limit, clipped, count, step)
    for each in plan_steps(choices.plan):
        lesson.codes[each.id] = step_code(
            each, model=choices.model, image=choices.photo_name, size=choices.size, layers=layers,
            target=choices.target, pretrained=bundle.pretrained, num_classes=len(bundle.categories),
            lang=choices.lang, clamp_at=clamp_at, limit=limit, conv=place, head=choices.head,
            source_image=choices.source_name)
    return lesson


def source_photo(choices: LessonChoices) -> bytes:
    """The patching step's photo B as a file's bytes: the one chosen, else photo A upside down (PNG)."""
    if choices.source_photo is not None:
        return choices.source_photo
    out = io.BytesIO()
    vz.load_image(choices.photo).transpose(Image.Transpose.FLIP_TOP_BOTTOM).save(out, "PNG")
    return out.getvalue()


def conv_of(choices: LessonChoices, bundle: vz.ModelBundle, analysis: Analysis, layers: list[str]) -> ConvPlace:
    """The conv step's place, every part inside this photo's map: the one chosen on the page when it
    fits, else its default (channel 0, the centre). The map's shape comes from the analysis when it
    holds the layer (the default: the first chosen conv), else from one capture."""
    chosen = choices.conv
    modules = dict(bundle.model.named_modules())
    if chosen is None or not isinstance(modules.get(chosen.layer), torch.nn.Conv2d):
        chosen = conv_place(choices.model, layers)
    out = analysis.activations.get(chosen.layer)
    if out is None:
        out = vz.capture(bundle.model, analysis.x, [chosen.layer])[chosen.layer]
    c, h, w = (int(n) for n in out.shape[1:])
    row, col = chosen.row, chosen.col
    if row is None or col is None or not (0 <= row < h and 0 <= col < w):
        row, col = h // 2, w // 2
    return ConvPlace(chosen.layer, chosen.channel if 0 <= chosen.channel < c else 0, row, col)


# --- the notebook ---------------------------------------------------------------------------------


def _photo_cell(name: str, data: bytes) -> str:
    encoded = base64.b64encode(data).decode("ascii")
    lines = "".join(f'            "{encoded[i:i + 76]}"\n' for i in range(0, len(encoded), 76))
    return ("import base64\nfrom pathlib import Path\n\nfrom PIL import Image\n\n"
            f"PHOTO = Path({name!r})\nif not PHOTO.exists():  # a file of that name is never overwritten\n"
            '    with PHOTO.open("xb") as photo:\n        photo.write(base64.b64decode(\n'
            f"{lines}        ))\nImage.open(PHOTO)\n")


def _question(step: Step) -> str:
    return (f"**{t('lesson_question')}** {t(f'lesson_{step.id}_q')}\n\n"
            f"<details><summary>{t('lesson_answer')}</summary>\n\n{t(f'lesson_{step.id}_a')}\n\n</details>")


def _made(lesson: Lesson) -> str:
    c = lesson.choices
    return t("handout_made", version=vz.__version__, model=c.model, size=c.size, layers=", ".join(lesson.layers),
             weights=_weights(lesson.bundle))


def _weights(bundle: vz.ModelBundle) -> str:
    """Where the weights came from, in the handout's language (the library's own account is English)."""
    if not bundle.pretrained:
        return t("top5_random")
    key = f"weights_from_{bundle.weights_source}"
    return t(key) if known(key) else ""


def notebook(lesson: Lesson) -> nbformat.NotebookNode:
    """The lesson as a notebook in the current language (see the module's docstring)."""
    c = lesson.choices
    steps = plan_steps(c.plan)
    setup = with_weights_fallback(lesson.codes[steps[0].id].setup, c.model, len(lesson.bundle.categories), c.lang)
    cells = [
        v4.new_markdown_cell(f"# {t('handout_title', model=c.model, photo=c.photo_name)}\n\n"
                             f"{t('handout_intro', n=len(steps))}\n\n{t('handout_run')}\n\n*{_made(lesson)}*"),
        v4.new_markdown_cell(t("handout_photo_cell", photo=c.photo_name)),
        v4.new_code_cell(_photo_cell(c.photo_name, c.photo), metadata={"jupyter": {"source_hidden": True}}),
        v4.new_markdown_cell(t("handout_setup")),
        v4.new_code_cell(setup.strip("\n")),
    ]
    if any(step.live == "patching" for step in steps):  # photo B beside photo A, written the same way
        cells += [v4.new_markdown_cell(t("lesson_patching_photo_b", photo=c.source_name)),
                  v4.new_code_cell(_photo_cell(c.source_name, source_photo(c)),
                                   metadata={"jupyter": {"source_hidden": True}})]
    for n, step in enumerate(steps, 1):
        title = t("lesson_step", n=n, total=len(steps), title=t(f"lesson_{step.id}_title"))
        cells += [v4.new_markdown_cell(f"## {title}\n\n{t(f'lesson_{step.id}_text')}"),
                  v4.new_code_cell(lesson.codes[step.id].steps.strip("\n")),
                  v4.new_markdown_cell(_question(step))]
    book = v4.new_notebook(cells=cells, metadata={
        "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
        "language_info": {"name": "python"}})
    nbformat.validate(book)
    return book


def notebook_bytes(lesson: Lesson) -> bytes:
    return nbformat.writes(notebook(lesson)).encode("utf-8")


# --- the HTML handout -----------------------------------------------------------------------------

_STYLE = """
:root { color-scheme: light; }
body { font-family: "Noto Sans CJK SC", "WenQuanYi Zen Hei", "Source Han Sans SC", "PingFang SC",
       "Microsoft YaHei", "Helvetica Neue", Arial, sans-serif;
       max-width: 190mm; margin: 0 auto; padding: 12px; color: #111; line-height: 1.5; font-size: 11pt; }
h1 { font-size: 20pt; margin: 0 0 6px; } h2 { font-size: 15pt; margin: 18px 0 6px; border-top: 2px solid #ddd;
     padding-top: 10px; }
pre { background: #f5f5f5; border: 1px solid #ddd; padding: 8px; font-size: 8.5pt; line-height: 1.35;
      white-space: pre-wrap; overflow-wrap: anywhere;
      font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", "WenQuanYi Zen Hei Mono", Menlo, Consolas, monospace; }
code { font-family: "DejaVu Sans Mono", "WenQuanYi Zen Hei Mono", Menlo, Consolas, monospace; font-size: 0.92em;
       background: #f0f0f0; padding: 0 2px; }
img { max-width: 100%; height: auto; display: block; }
.pair > figure img { width: 100%; }
figure { margin: 8px 0; break-inside: avoid; page-break-inside: avoid; }
figcaption, .caption { color: #555; font-size: 9.5pt; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
.strip { display: grid; grid-template-columns: repeat(4, 1fr); gap: 6px; }
table { border-collapse: collapse; font-size: 8.5pt; margin: 6px 0; }
th, td { border: 1px solid #ccc; padding: 2px 5px; text-align: left; }
.question { background: #eef4ff; border-left: 4px solid #4a7bd0; padding: 6px 10px; break-inside: avoid; }
.made { color: #555; font-size: 9pt; }
@page { size: A4; margin: 14mm 12mm; }
@media print {
  body { max-width: none; padding: 0; font-size: 10pt; }
  h2 { break-before: page; page-break-before: always; border-top: none; }
  h2.first { break-before: auto; page-break-before: auto; }
  pre, table, .pair, .strip { break-inside: avoid; page-break-inside: avoid; }
}
"""


def _inline(text: str) -> str:
    """The lessons' markdown (``code``, **bold**, *italic*, paragraphs, "- " lists) as HTML."""

    def line(s: str) -> str:
        parts = re.split(r"(`[^`]*`)", s)
        out = []
        for i, part in enumerate(parts):
            if i % 2:
                out.append(f"<code>{html.escape(part[1:-1])}</code>")
            else:
                part = html.escape(part)
                part = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", part)
                out.append(re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"<em>\1</em>", part))
        return "".join(out)

    blocks = []
    for block in text.strip().split("\n\n"):
        rows = block.split("\n")
        if all(r.startswith("- ") for r in rows):
            blocks.append("<ul>" + "".join(f"<li>{line(r[2:])}</li>" for r in rows) + "</ul>")
        else:
            blocks.append(f"<p>{line(' '.join(rows))}</p>")
    return "\n".join(blocks)


def _img(png: bytes, alt: str, mime: str = "image/png") -> str:
    return (f'<img alt="{html.escape(alt)}" src="data:{mime};base64,{base64.b64encode(png).decode("ascii")}">')


def _palette(png: bytes) -> bytes:
    """A drawn figure (colormaps, lines, text on white) in 256 colours, without dithering: the
    handout's PNGs at half the bytes or less, with no visible change at print size."""
    with Image.open(io.BytesIO(png)) as picture:
        if picture.mode == "P":
            return png
        out = io.BytesIO()
        picture.convert("RGB").quantize(256, dither=Image.Dither.NONE).save(out, "PNG", optimize=True)
    return out.getvalue() if out.tell() < len(png) else png


def _photo(picture: Image.Image, caption: str) -> str:
    """A picture made from the photo (an overlay) as JPEG: photos compress best that way."""
    out = io.BytesIO()
    picture.convert("RGB").save(out, "JPEG", quality=85)
    return _figure(out.getvalue(), caption, "image/jpeg")


def _figure(png: bytes, caption: str, mime: str = "image/png") -> str:
    if mime == "image/png":
        png = _palette(png)
    return f"<figure>{_img(png, caption, mime)}<figcaption>{html.escape(caption)}</figcaption></figure>"


def _table(head: list[str], rows: list[list[object]]) -> str:
    cells = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{cells}</tr></thead><tbody>{body}</tbody></table>"


def _grid(tensor: torch.Tensor, title: str, c: LessonChoices, **kwargs: Any) -> bytes:
    options: dict[str, Any] = dict(channels=c.channels, order=c.order, cmap=c.cmap, norm=c.norm, columns=c.columns)
    options.update(kwargs)
    return vz.figure_to_png(vz.feature_grid(tensor, title=title, **options))


def _maps_png(tensor: torch.Tensor, title: str, c: LessonChoices) -> bytes:
    """A layer's grid as the Maps view draws it: one scale per tile is a palette PNG (results.maps_png)."""
    if c.norm != "channel":
        return _grid(tensor, title, c)
    layout = grid_layout(tensor, channels=c.channels, order=c.order, columns=c.columns, title=title)
    return palette_png(layout, c.cmap)


def _dims(shape: tuple[int, ...] | torch.Size | None) -> str:
    return "—" if shape is None else "×".join(map(str, shape))


def live_part(lesson: Lesson, step: Step, labels: list[str]) -> str:
    """What the Lesson view shows live at ``step``, as HTML: its pictures and tables on this photo."""
    a, bundle, c, layers, target = lesson.analysis, lesson.bundle, lesson.choices, lesson.layers, lesson.target
    model = bundle.model
    if step.live == "hello":
        modules = dict(model.named_modules())
        return (f"<p class='caption'>{html.escape(t('lesson_hello_caption'))}</p>" + _table(
            [t("lesson_col_layer"), t("lesson_col_module"), t("lesson_col_shape")],
            [[n, type(modules[n.split('#')[0]]).__name__, _dims(a.activations[n].shape)] for n in layers]))
    if step.live == "maps":
        return "".join(_figure(_maps_png(a.activations[n], n, c), f"{n} · {_dims(a.activations[n].shape[1:])}")
                       for n in layers)
    if step.live == "prepost":
        layer = layers[0]
        before = analyse(bundle, vz.load_image(c.photo), c.size, [layer], "input")
        return "<div class='pair'>" + "".join(
            _figure(_grid(act, layer, c), t(head, layer=layer))
            for act, head in ((before.activations[layer], "lesson_prepost_input"),
                              (a.activations[layer], "lesson_prepost_output"))) + "</div>"
    if step.live == "convolution":
        return _conv_part(lesson)
    if step.live == "table":
        rows = vz.layer_summary(model, a.x)
        columns = ("name", "type", "input_shape", "output_shape", "params")
        total = sum(r.params for r in rows if "." not in r.name)
        return (f"<p>{html.escape(t('total_params'))}: {total:,}</p>" + _table(
            [header(col) for col in columns],
            [[r.name, r.type, _dims(r.input_shape), _dims(r.output_shape), f"{r.params:,}"] for r in rows]))
    if step.live == "gradients":
        result = lesson.gradients()
        return (f"<p>{html.escape(labels[target])} ({target})</p>" + "".join(
            _figure(_grid(result.gradients[n], f"∂y[{target}] / ∂ {n}", c, cmap="RdBu_r", norm="layer",
                          vcenter=0.0), n) for n in layers))
    if step.live == "clamp":
        return _clamp_part(lesson)
    if step.live == "backward":
        children = [name for name, _ in model.named_children()]
        records = backward_report(model, a.x, children, target=target)
        table = _table([t("col_step"), t("col_module"), t("col_type"), t("col_grad_output"), t("col_grad_input"),
                        t("col_note")],
                       [[i + 1, r.name, r.type, shapes_text(r.grad_output), shapes_text(r.grad_input), note(r)]
                        for i, r in enumerate(records)])
        return table + "".join(f"<p>{_inline(fact)}</p>" for fact in table_facts(records))
    if step.live == "gradcam":
        cams = cams_from(lesson.gradients(), a.x.shape[-2:])
        return "".join(_photo(channel_overlay(a.picture, cams[n], 0.5, "jet"),
                               t("cam_caption", layer=n, label=labels[target])) for n in layers)
    if step.live == "sanity":
        return _sanity_part(lesson, labels)
    if step.live == "patching":
        photo_b = vz.load_image(source_photo(c))
        runs = patch_sweep(bundle, a.x, patch_source(bundle, a.picture, photo_b), layers)
        return (_photo(photo_b, t("lesson_patching_photo_b", photo=c.source_name))
                + f"<p class='caption'>{html.escape(t('patching_chart_caption', label=labels[runs[0].target]))}</p>"
                + _table([t("lesson_col_layer"), t("patching_chart_y")],
                         [[r.layer, f"{r.restored:.0%}"] for r in runs]))
    if step.live == "relevance":
        ranked = top_relevance(bundle, a.x, layers[-1], target)
        caption = t("lesson_relevance_caption", layer=layers[-1], label=labels[target])
        return f"<p class='caption'>{html.escape(caption)}</p>" + _table(
            [t("lesson_col_channel"), t("lesson_col_relevance")], [[c, f"{score:.4g}"] for c, score in ranked])
    if step.live == "concepts":
        found = photo_concepts(bundle, a.picture, layers[-1], c.size)
        caption = t("lesson_concepts_caption", k=found.k, layer=layers[-1], crops=len(found.crops))
        return f"<p class='caption'>{html.escape(caption)}</p>" + "".join(
            _photo(strip, words) for strip, words in concept_strips(found, a.picture))
    if step.live == "audit":
        headers, heat = sticker_table(sticker_heat(bundle, a.x, layers[-1], target), labels)
        caption = t("lesson_audit_caption", layer=layers[-1], label=labels[target])
        return f"<p class='caption'>{html.escape(caption)}</p>" + _table(headers, heat)
    if step.live == "remove":
        counts = hook_calls_demo(model, a.x, layers[0])
        return _inline(f"- {t('lesson_remove_forgot', calls=counts['forgot'])}\n"
                       f"- {t('lesson_remove_removed', calls=counts['removed'])}")
    return ""


def _conv_part(lesson: Lesson) -> str:
    """The Convolution view at the lesson's place: the window on the input, the strongest input
    channels' products and the sum that gives the output value (views.convolution.show)."""
    s, cmap = lesson.conv, lesson.choices.cmap
    titles = (nt("cv_title_input", len(s.in_channels)), t("cv_title_close"),
              t("cv_title_output", channel=s.channel, row=s.row, col=s.col))
    window = vz.figure_to_png(conv_window_figure(s.input_mean, s.rows, s.cols, s.stride, s.output, (s.row, s.col),
                                                 titles, cmap))
    shown = list(s.strongest(CONV_ROWS))
    products = vz.figure_to_png(conv_products_figure(
        s.window[shown], s.weights[shown], s.products[shown], s.padded,
        [t("cv_in_channel", n=s.in_channels[i]) for i in shown], [f"{float(s.sums[i]):+.4f}" for i in shown],
        (t("cv_head_window"), t("cv_head_weights"), t("cv_head_products"), t("cv_head_sum"))))
    equation = t("cv_equation", n=len(s.in_channels), sums=s.total - s.bias, bias=s.bias, total=s.total,
                 own=float(s.output[s.row, s.col]))
    return (f"<p>{html.escape(s.layer)}</p>" + _figure(window, nt("cv_window_caption", s.stride[1], sw=s.stride[1]))
            + _figure(products, s.layer) + _inline(equation))


def _sanity_part(lesson: Lesson, labels: list[str]) -> str:
    """The sanity step as the Lesson view shows it (views.lesson.show_sanity): Grad-CAM of the deepest
    layer, then after each stage of a copy is re-initialised, with its Spearman correlation."""
    a, layer, target = lesson.analysis, lesson.layers[-1], lesson.target
    try:
        result = lesson_sanity(lesson.bundle, a.x, layer, target)
    except ExplainError as exc:
        if exc.code != "explain_layer":
            raise
        return _inline(t("lesson_sanity_none", layer=layer))
    captions = [t("lesson_sanity_original")] + [t("lesson_sanity_after", stage=stage, rho=rho) for stage, rho in
                                                zip(result.stages, result.correlations["gradcam"], strict=True)]
    figures = "".join(_photo(channel_overlay(a.picture, cam, 0.5, "jet"), caption)
                      for cam, caption in zip(result.maps["gradcam"], captions, strict=True))
    return (f"<p class='caption'>{html.escape(t('lesson_sanity_caption', layer=layer, label=labels[target]))}</p>"
            f"<div class='strip'>{figures}</div>")


def _clamp_part(lesson: Lesson) -> str:
    """The Intervene view's clamp, as the lesson's step shows it (views.intervene.show_clamp)."""
    a, c, layers, clamp_at, target = lesson.analysis, lesson.choices, lesson.layers, lesson.clamp_at, lesson.target
    earlier = [n for n in layers if layers.index(n) < layers.index(clamp_at)]
    out = [_inline(t("clamp_intro"))]
    if not earlier:
        return out[0] + _inline(t("clamp_no_earlier"))
    out.append(_inline(t("clamp_clipped", layer=clamp_at, limit=lesson.limit, p=c.percentile, share=lesson.clipped,
                         count=lesson.count)))
    plain, clamped = vz.clamp_gradients(lesson.bundle.model, a.x, earlier, clamp_at=clamp_at, limit=lesson.limit,
                                        target=target, as_maps=True)
    hw = (int(a.x.shape[-2]), int(a.x.shape[-1]))
    cams, cams_clamped = cams_from(plain, hw), cams_from(clamped, hw)
    for name in earlier:
        g0, g1 = plain.gradients[name], clamped.gradients[name]
        change = float((g1 - g0).abs().mean() / (g0.abs().mean() + 1e-30))
        magnitude = g0.abs().flatten()
        k = max(1, int(CLAMP_COLOUR_PERCENTILE / 100 * magnitude.numel()))
        reach = float(magnitude.kthvalue(k).values) or float(magnitude.max()) or 1.0
        grids = [_figure(_grid(g, f"∂y[{target}] / ∂ {name}", c, channels=min(c.channels or CLAMP_CHANNELS,
                                                                                CLAMP_CHANNELS),
                               order="index", cmap="RdBu_r", norm="layer", columns=2, vcenter=0.0,
                               clim=(-reach, reach)), caption)
                 for g, caption in ((g0, t("clamp_before")), (g1, t("clamp_after", layer=clamp_at)))]
        overlays = [_photo(channel_overlay(a.picture, cam[name], 0.5, "jet"), caption)
                    for cam, caption in ((cams, t("clamp_cam_before")),
                                         (cams_clamped, t("clamp_cam_after", layer=clamp_at)))]
        out.append(f"<h3>{html.escape(name)}</h3><p class='caption'>"
                   f"{html.escape(t('clamp_changed', change=change, layer=clamp_at))}</p>"
                   f"<div class='pair'>{''.join(grids)}</div><div class='pair'>{''.join(overlays)}</div>")
    return "".join(out)


def handout(lesson: Lesson, progress: Progress = _quiet) -> str:
    """The lesson as one self-contained HTML page in the current language (see the module's docstring);
    ``progress`` hears each step drawn (after the preparation, part 1 of the plan's steps + 1)."""
    c, a = lesson.choices, lesson.analysis
    labels = class_labels(lesson.bundle.categories, c.lang)
    title = t("handout_title", model=c.model, photo=c.photo_name)
    w, h = a.picture.size
    top5 = "".join(f"<li>{html.escape(p.label)} · {p.probability:.1%}</li>" for p in top_classes(a.logits, labels, 5))
    parts = [f"<h1>{html.escape(title)}</h1>", _inline(t("handout_intro", n=len(plan_steps(c.plan)))),
             f"<p class='made'>{html.escape(_made(lesson))}</p>",
             f"<p>{html.escape(t('handout_photo', width=w, height=h))}</p>",
             f"<div class='pair'>{_figure(a.picture_jpeg(), c.photo_name, 'image/jpeg')}<ol>{top5}</ol></div>",
             f"<p class='caption'>{html.escape(t('handout_code_setup'))}</p>",
             f"<pre>{html.escape(lesson.codes[plan_steps(c.plan)[0].id].setup.strip())}</pre>"]
    steps = plan_steps(c.plan)
    for n, step in enumerate(steps, 1):
        heading = t("lesson_step", n=n, total=len(steps), title=t(f"lesson_{step.id}_title"))
        parts += [f"<h2{' class=first' if n == 1 else ''}>{html.escape(heading)}</h2>",
                  _inline(t(f"lesson_{step.id}_text")), live_part(lesson, step, labels),
                  f"<p class='caption'>{html.escape(t('lesson_code'))}</p>",
                  f"<pre>{html.escape(lesson.codes[step.id].steps.strip())}</pre>",
                  f"<div class='question'><p><strong>{html.escape(t('lesson_question'))}</strong> "
                  f"{html.escape(t(f'lesson_{step.id}_q'))}</p><p><em>{html.escape(t('lesson_answer'))}:</em></p>"
                  f"{_inline(t(f'lesson_{step.id}_a'))}</div>"]
        progress(n + 1, len(steps) + 1)
    lang = {"zh": "zh-CN", "zh-Hant": "zh-Hant-TW"}.get(c.lang, "en")
    return (f'<!DOCTYPE html>\n<html lang="{lang}"><head><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>\n<body>\n"
            + "\n".join(parts) + "\n</body></html>\n")


def handout_bytes(lesson: Lesson, progress: Progress = _quiet) -> bytes:
    return handout(lesson, progress).encode("utf-8")


def lesson_parts(choices: LessonChoices, fmt: str) -> int:
    """How many parts :func:`lesson_file` reports for ``fmt``: the preparation, then each step of the
    handout, or the notebook's writing."""
    return 1 + (len(plan_steps(choices.plan)) if fmt == "html" else 1)


def lesson_file(choices: LessonChoices, bundle: vz.ModelBundle, fmt: str, progress: Progress = _quiet) -> bytes:
    """The lesson as ``fmt`` ("ipynb" or "html") bytes, in ``choices.lang``; ``progress(done, total)``
    hears each part made (:func:`lesson_parts` of them), so a page can say how far it is.

    Raises:
        ValueError: an unknown format or language.
        InvalidImageError: the photo cannot be read.
    """
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}.")
    if choices.lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(LANGUAGES)}, not {choices.lang!r}.")
    total = lesson_parts(choices, fmt)

    def make() -> bytes:
        lesson = prepare(choices, bundle)
        progress(1, total)
        if fmt == "html":
            return handout_bytes(lesson, progress)
        data = notebook_bytes(lesson)
        progress(total, total)
        return data

    return in_language(choices.lang, make)


def file_name(choices: LessonChoices, fmt: str) -> str:
    """``vizhooks_lesson_<model>_<photo>.<fmt>``, safe as a file name."""
    stem = re.sub(r"[^\w.-]+", "_", f"vizhooks_lesson_{choices.model}_{Path(choices.photo_name).stem}")
    return f"{stem}.{fmt}"
