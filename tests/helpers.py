"""Helpers shared by the test modules, written once here. No test module imports another: what two
modules need lives in this file (plain functions and constants) or in tests/conftest.py (fixtures).

Sections: hooks and the command line; the dataset-exemplar folder; the page (AppTest, appended by
the page's tests)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from itertools import zip_longest
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from PIL import Image
from torch import nn
from torchvision.models import ResNet18_Weights

if TYPE_CHECKING:
    from streamlit.testing.v1 import AppTest

# --- hooks and the command line ---------------------------------------------------------------


def count_hooks(model: nn.Module) -> int:
    """Every hook left on ``model``: forward, forward-pre, backward (the old and the full kind share
    ``_backward_hooks``) and full-backward-pre, over ``model.modules()``. Written out from torch's own
    dicts rather than calling ``vizhooks.ops.hook_count``, so the tests check that one too."""
    return sum(
        len(m._forward_hooks) + len(m._forward_pre_hooks) + len(m._backward_hooks) + len(m._backward_pre_hooks)
        for m in model.modules()
    )


def run_cli(capsys, *argv: object) -> tuple[int, str, str]:
    """``python -m vizhooks *argv`` in this process: (exit code, stdout, stderr)."""
    from vizhooks.cli import main

    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# --- the dataset-exemplar folder (test_exemplars.py, test_ray_engine.py) ----------------------

EXEMPLAR_LAYERS = ["layer1.0.conv1", "layer2.0.conv2"]
EXEMPLAR_SIZE, EXEMPLAR_TOP = 64, 3
EXEMPLAR_SHAPES = [(64, 48), (48, 64), (80, 80), (96, 40), (32, 32)]  # (width, height); 80x80, 32x32 give 64x64


def _picture(rng: np.random.Generator, width: int, height: int, kind: int) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width]
    if kind == 0:
        return rng.integers(0, 256, (height, width, 3), dtype=np.uint8)
    if kind == 1:  # stripes at a random angle and frequency, random colours
        angle, freq = rng.uniform(0, np.pi), rng.uniform(0.1, 0.8)
        wave = np.sin(freq * (np.cos(angle) * xx + np.sin(angle) * yy))[..., None]
        a, b = rng.integers(0, 256, 3), rng.integers(0, 256, 3)
        return (a + (b - a) * (wave + 1) / 2).astype(np.uint8)
    canvas = np.broadcast_to(rng.integers(0, 256, 3), (height, width, 3)).astype(np.uint8).copy()
    for _ in range(int(rng.integers(1, 5))):  # a few random rectangles
        x0, y0 = int(rng.integers(0, width - 4)), int(rng.integers(0, height - 4))
        canvas[y0:y0 + int(rng.integers(3, 20)), x0:x0 + int(rng.integers(3, 20))] = rng.integers(0, 256, 3)
    return canvas


def write_exemplar_folder(root: Path) -> Path:
    """40 seeded pictures in three levels of folders, an exact twin under two names, a truncated PNG,
    a text file named .jpg, a .txt and a hidden picture: the folder the atlas tests scan."""
    rng = np.random.default_rng(7)
    for i in range(40):
        width, height = EXEMPLAR_SHAPES[i % len(EXEMPLAR_SHAPES)]
        sub = ("", "sub/", "sub/deeper/")[i % 3]
        path = root / f"{sub}img{i:02d}.{'png' if i % 2 else 'jpg'}"
        path.parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(_picture(rng, width, height, i % 3)).save(path, quality=92)
    twin = Image.fromarray(_picture(rng, 80, 80, 2))  # the same pixels under two names: exact ties
    twin.save(root / "twin_b.png")
    twin.save(root / "sub" / "twin_a.png")
    good = (root / "sub" / "img01.png").read_bytes()
    (root / "broken.png").write_bytes(good[: len(good) // 2])  # truncated
    (root / "sub" / "notes.jpg").write_text("just some notes, not a photo\n")
    (root / "readme.txt").write_text("not counted: no image extension\n")
    (root / ".hidden.png").write_bytes(good)  # hidden files are left out
    return root


# --- the page (AppTest) -------------------------------------------------------------------------
# Streamlit is imported inside the functions: the library's tests run where the page's extra is absent.

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")
#: The page's code: app.py and the package vizhooks.page.
PAGE_FILES = [ROOT / "app.py", *sorted((ROOT / "vizhooks" / "page").rglob("*.py"))]


def _prepare_apptest() -> None:
    """Each AppTest's first run scans every installed distribution's metadata for Streamlit components
    (streamlit.components.v2.manifest_scanner, 0.5 s of CPU each time, a third of a short page test); a
    page server does it once when it starts. The installed packages do not change while the tests run,
    so the test process scans once and every AppTest after gets the same answer. And it waits for runs
    every 10 ms rather than every millisecond (:func:`_wait_for_runs_every_10_ms`)."""
    import functools

    from streamlit.components.v2 import manifest_scanner

    scan = manifest_scanner.scan_component_manifests
    if not isinstance(scan, functools._lru_cache_wrapper):
        manifest_scanner.scan_component_manifests = functools.cache(scan)
    _wait_for_runs_every_10_ms()


#: How often the test's thread looks whether an AppTest run has finished.
POLL_S = 0.01


def _wait_for_runs_every_10_ms() -> None:
    """AppTest waits for each run of the page by waking every millisecond to look whether the script thread
    has stopped (local_script_runner.require_widgets_deltas): a thousand wake-ups a second that take the
    GIL from the script. Here every 10 ms, with Streamlit's timeout and error otherwise: the page tests took
    6 % less CPU (test_app_views and test_app_convolution: 46.6 core-seconds, the mean of two runs, against
    49.9, of four) and each run ends at most 10 ms later."""
    import time

    from streamlit.testing.v1 import local_script_runner

    if local_script_runner.require_widgets_deltas.__module__ == __name__:
        return

    def require_widgets_deltas(runner: local_script_runner.LocalScriptRunner, timeout: float = 3) -> None:
        t0 = time.time()
        while time.time() - t0 < timeout:
            if runner.script_stopped():
                return
            time.sleep(POLL_S)
        runner.request_stop()  # as Streamlit's: stop the script before the error, so it cannot hang
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    local_script_runner.require_widgets_deltas = require_widgets_deltas


def open_page(**query: str) -> AppTest:
    """A fresh session of the page (a new AppTest), opened with ``query`` as its link and run once."""
    from streamlit.testing.v1 import AppTest

    _prepare_apptest()
    at = AppTest.from_file(APP, default_timeout=300)
    for k, v in query.items():
        at.query_params[k] = v
    return at.run()


def choose_view(at: AppTest, view: str) -> AppTest:
    """Open ``view`` from the menu as a visitor does: its group in the first row (when another group
    is open), then the view among the group's views."""
    from vizhooks.page.views import BY_NAME

    group = BY_NAME[view].group
    if at.segmented_control(key="view_group").value != group:
        at.segmented_control(key="view_group").set_value(group).run()
    if at.pills(key="view").value != view:
        at.pills(key="view").set_value(view).run()
    return at


def shown_view(at: AppTest) -> str | None:
    """The view the menu shows as chosen."""
    return at.pills(key="view").value


def ok(at: AppTest) -> None:
    """The run raised nothing and showed no error."""
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]


def reading_order(items: list) -> list:
    """Items of a two-column layout in reading order: the element tree lists the left column
    (1st, 3rd, ...) first, then the right one."""
    half = (len(items) + 1) // 2
    return [item for pair in zip_longest(items[:half], items[half:]) for item in pair if item is not None]


def layer_headings(at: AppTest) -> list[str]:
    """Layer headings in reading order (the grids sit in two columns)."""
    return reading_order([s.value for s in at.subheader if s.value not in ("Top-5 classes", "Layers", "Display")])


def saw(at: AppTest) -> str:
    """The caption under the picture the model saw."""
    return next(i.proto.imgs[0].caption for i in at.image if i.proto.imgs[0].caption.startswith("What the model"))


def pass_roots() -> tuple[type[nn.Module], ...]:
    """The root classes of the page's models: a forward of one of these is one whole-network pass."""
    import torchvision.models as tv

    return (tv.VGG, tv.MobileNetV3, tv.EfficientNet, tv.DenseNet, tv.ConvNeXt, tv.VisionTransformer, tv.ResNet)


@contextmanager
def whole_passes() -> Iterator[list[int]]:
    """Whole-network forward passes while the block runs, as the batch size of each, seen by a
    global hook independent of the page's code; meta-device passes (the memory estimate) compute
    nothing and are not counted."""
    from torch.nn.modules.module import register_module_forward_hook

    roots = pass_roots()
    seen: list[int] = []

    def hook(module: nn.Module, args: object, output: torch.Tensor) -> None:
        if isinstance(module, roots) and output.device.type != "meta":
            seen.append(int(output.shape[0]))

    handle = register_module_forward_hook(hook)
    try:
        yield seen
    finally:
        handle.remove()


def clear_results() -> None:
    """Forget the page's results (activations, gradients, PNGs, tables) but keep its models: what
    a test that counts forward passes needs, without rebuilding a model for every test."""
    import streamlit as st

    from vizhooks.page import results

    st.cache_data.clear()
    for cache in (results.result_cache, results.cached_backward_report, results.cached_summary, results.atlases_for):
        cache.clear()


def clear_caches() -> None:
    """Forget everything the page keeps for the process, models included (a test that changes
    the operator's models or their files)."""
    import streamlit as st

    from vizhooks.page import results

    st.cache_data.clear()
    st.cache_resource.clear()
    results.plain_option.cache_clear()


CODE_SPAN = re.compile(r"`[^`]*`")
#: Three English words in a row: a sentence or a phrase, not a name.
ENGLISH_PHRASE = re.compile(r"\b[A-Za-z][a-z]+(?:[\s,]+[A-Za-z][a-z]+){2,}\b")


def visible_texts(at: AppTest) -> list[str]:
    """Every sentence, label and (short) option list the page shows."""
    texts = [e.value for kind in ("title", "subheader", "markdown", "caption", "info", "warning", "error", "success")
             for e in at.get(kind)]
    texts += [w.label for kind in ("selectbox", "multiselect", "radio", "slider", "select_slider", "number_input",
                                   "button", "expander", "metric", "toggle", "checkbox") for w in at.get(kind)
              if getattr(w, "label", None)]
    texts += [str(o) for kind in ("radio", "selectbox", "multiselect") for w in at.get(kind)
              if len(w.options) < 200 for o in w.options]  # not the 1000 ImageNet classes
    return texts


def english_in(at: AppTest, allowed: set[str]) -> list[str]:
    """English phrases (three words in a row) on the page, code and the ``allowed`` names aside."""
    found = []
    for text in visible_texts(at):
        bare = CODE_SPAN.sub(" ", text)
        for name in sorted(allowed, key=len, reverse=True):
            bare = bare.replace(name, " ")
        found += [m.group(0) for m in ENGLISH_PHRASE.finditer(bare)]
    return found


def allowed_names(at: AppTest) -> set[str]:
    """Names that stay English in every language: classes, the chosen layers, a few proper names."""
    from vizhooks.models.registry import categories

    return set(categories()) | set(at.multiselect(key="layers").value) | {"Grad-CAM", "ImageNet", "PyTorch"}


# --- photos for teaching (test_teach.py) -----------------------------------------------------------

SHAPE_COLOURS = {"disc": (220, 30, 30), "square": (30, 30, 220), "triangle": (30, 200, 30)}


def shape_photos(per_class: int = 15, seed: int = 0, side: int = 128) -> dict[str, list[Image.Image]]:
    """Red discs, blue squares, green triangles on noisy grey backgrounds, sizes and places varying:
    classes that even a random-weight backbone tells apart."""
    from PIL import ImageDraw

    rng = np.random.default_rng(seed)
    photos: dict[str, list[Image.Image]] = {kind: [] for kind in SHAPE_COLOURS}
    for kind, colour in SHAPE_COLOURS.items():
        for _ in range(per_class):
            image = Image.fromarray((rng.random((side, side, 3)) * 40 + 100).astype(np.uint8))
            draw = ImageDraw.Draw(image)
            s = int(rng.integers(side // 3, side * 2 // 3))
            x, y = (int(v) for v in rng.integers(4, side - s - 4, 2))
            if kind == "disc":
                draw.ellipse([x, y, x + s, y + s], fill=colour)
            elif kind == "square":
                draw.rectangle([x, y, x + s, y + s], fill=colour)
            else:
                draw.polygon([(x, y + s), (x + s, y + s), (x + s // 2, y)], fill=colour)
            photos[kind].append(image)
    return photos


# --- tiny Hugging Face models (test_hf.py, test_zoo.py) --------------------------------------------

HF_LABELS = ["cat", "dog", "mug"]
#: The block class of each tiny family, as transformers names it.
HF_BLOCKS = {"vit": ("ViTLayer",), "beit": ("BeitLayer",), "convnext": ("ConvNextLayer",), "swin": ("SwinLayer",),
             "resnet": ("ResNetBasicLayer",), "deit": ("DeiTLayer",),
             # MobileViT's stages 1-2 are MobileNet blocks, stages 3-5 MobileViT blocks (each opening with its
             # own inverted residual, which is inside the block, not one of the blocks)
             "mobilevit": ("MobileViTInvertedResidual", "MobileViTLayer")}


def tiny_hf_config(kind: str):
    """A transformers config of a tiny image classifier of ``kind`` (three classes, random weights)."""
    import transformers as tf

    labels = {"id2label": dict(enumerate(HF_LABELS)), "label2id": {n: i for i, n in enumerate(HF_LABELS)}}
    if kind in ("vit", "beit", "deit"):
        config = {"vit": tf.ViTConfig, "beit": tf.BeitConfig, "deit": tf.DeiTConfig}[kind]
        # DeiT has two classifier classes (with and without the distillation token's head): the Auto class
        # picks by `architectures`, which a config made here lacks (transformers 5.25 then fails iterating None);
        # DeiT checkpoints on the Hub name theirs, as this one does
        named = {"architectures": ["DeiTForImageClassificationWithTeacher"]} if kind == "deit" else {}
        return config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      image_size=32, patch_size=8, **named, **labels)
    if kind == "mobilevit":  # its layout is fixed: 1 + 3 MobileNet blocks, then 3 MobileViT blocks
        return tf.MobileViTConfig(image_size=32, hidden_sizes=[16, 24, 32],
                                  neck_hidden_sizes=[8, 8, 16, 16, 24, 24, 32], **labels)
    if kind == "convnext":  # channels 16 and 24 at 8x8 and 4x4: no shape is ambiguous
        return tf.ConvNextConfig(hidden_sizes=[16, 24], depths=[1, 1], num_stages=2, **labels)
    if kind == "swin":
        return tf.SwinConfig(image_size=32, patch_size=4, embed_dim=16, depths=[1, 1], num_heads=[2, 2],
                             window_size=4, **labels)
    return tf.ResNetConfig(embedding_size=8, hidden_sizes=[16, 24], depths=[1, 1], layer_type="basic", **labels)


def tiny_hf_processor(kind: str):
    """The image processor saved with a tiny model of ``kind``."""
    import transformers as tf

    if kind in ("vit", "swin", "beit", "deit"):  # what these families' checkpoints save: a fixed square size
        return tf.ViTImageProcessor(size={"height": 32, "width": 32}, image_mean=[0.5, 0.4, 0.3],
                                    image_std=[0.2, 0.25, 0.3], resample=2)
    return tf.ConvNextImageProcessor(size={"shortest_edge": 32}, resample=3)


def save_tiny_hf(kind: str, folder: Path, processor=None) -> Path:
    """A tiny random model of ``kind`` (seed 7) and its image processor (``processor``, default
    :func:`tiny_hf_processor`), save_pretrained into ``folder``."""
    from transformers import AutoModelForImageClassification

    torch.manual_seed(7)
    model = AutoModelForImageClassification.from_config(tiny_hf_config(kind))
    if kind == "mobilevit":
        # its own initialisation (std 0.02) fades to logits of exactly 0 in so tiny a model, whatever the input:
        # every comparison on them would hold vacuously. Weights of unit gain give logits the input moves
        g = torch.Generator().manual_seed(3)
        with torch.no_grad():
            for name, param in model.named_parameters():
                if param.ndim > 1:
                    param.copy_(torch.randn(param.shape, generator=g) / param[0].numel() ** 0.5)
                elif name.endswith("weight"):
                    param.fill_(1.0)
    model.save_pretrained(folder)
    (processor or tiny_hf_processor(kind)).save_pretrained(folder)
    return folder


# --- concepts: a planted colour model (tests/test_concepts*.py) ----------------------------------------

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0), "yellow": (1.0, 1.0, 0.0)}
CONCEPT_MEAN_STD = ((0.0, 0.0, 0.0), (1.0, 1.0, 1.0))
CONCEPT_SIZE = 32


class ColourNet(nn.Module):
    """A planted model for concepts: two detectors per colour (1x1 convs, gains 1 and 0.5) after a ReLU,
    then a head in which class c reads only the channels of colour c (class 0: red)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 1)
        self.relu = nn.ReLU()
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(8, 4)
        w = torch.tensor([[1.0, -1.0, -1.0], [-1.0, 1.0, -1.0], [-1.0, -1.0, 1.0], [1.0, 1.0, -2.0]])
        b = torch.tensor([-0.2, -0.2, -0.2, -1.2])
        with torch.no_grad():
            for colour in range(4):
                for j, gain in enumerate((1.0, 0.5)):
                    self.conv.weight[2 * colour + j, :, 0, 0] = gain * w[colour]
                    self.conv.bias[2 * colour + j] = gain * b[colour]
            self.head.weight.zero_()
            self.head.bias.zero_()
            for colour in range(4):
                self.head.weight[colour, 2 * colour: 2 * colour + 2] = 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.pool(self.relu(self.conv(x))).flatten(1))


def colour_photos(per_colour: int = 4, seed: int = 0) -> tuple[list[Image.Image], list[str]]:
    """``per_colour`` noisy flat photos of each of COLOURS, and their colour names."""
    rng = np.random.default_rng(seed)
    photos, names = [], []
    for _ in range(per_colour):
        for name, rgb in COLOURS.items():
            level = rng.uniform(0.7, 1.0)
            pixels = np.clip(np.asarray(rgb) * level + rng.normal(0, 0.03, (CONCEPT_SIZE, CONCEPT_SIZE, 3)), 0, 1)
            photos.append(Image.fromarray((pixels * 255).astype(np.uint8)))
            names.append(name)
    return photos, names


def checkpoint_by_hand() -> Path:
    """Where torch keeps resnet18's ImageNet checkpoint: its hub folder, then the file name of torchvision's
    URL for the weights."""
    url = ResNet18_Weights.DEFAULT.url
    return Path(torch.hub.get_dir()) / "checkpoints" / url.rsplit("/", 1)[-1]
