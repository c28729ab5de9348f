"""Every snippet of "How this was made" and of the lesson runs as written and prints what the page shows.

For each case below (a set of choices on the page), every snippet vizhooks.lesson.code makes for
it (each view, and each lesson body) is saved to a file and run unchanged by a fresh Python (forked
from tests/warm_python.py's, which has imported torch): no vizhooks, ``VIZHOOKS_OFFLINE=1``, an empty
``TORCH_HOME``, the repository as working folder. One
interpreter runs the snippets of a case one after another, each by ``runpy`` in a namespace of its
own, because importing torch is most of what a snippet costs. While it runs, the page itself is
opened for the same choices with AppTest, and the two are compared:

- the code the page shows under "How this was made" is the code that ran (the lesson's code is
  made here with the arguments the lesson view's lesson_code passes);
- shapes, the class, statistics and table rows the snippets print equal the page's captions,
  tables and metrics (three significant digits there), and equal, to 0.1 % of a layer's largest
  value, the vizhooks.page functions the page calls, for the numbers the page only draws (Grad-CAM
  maps) or rounds (captions). Both sides use the same seeded random weights.

The lesson's code is also checked as the back row reads it (issue 23): every line of every step
within 88 columns (a Chinese character counts two) for three model families in both languages,
one set-up for all steps, only the ``to_map`` branches the model uses, and the page showing the
step's lines, then the set-up box, then the whole file to download.

The maps snippets print shapes only (tests/test_app.py and test_app_models.py read those lines
as they are); their statistics are read from the ``features`` they kept.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import unicodedata
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import torch

import vizhooks as vz
from tests.helpers import ROOT, choose_view, ok, open_page, reading_order
from tests.warm_python import run_python
from vizhooks.analysis import analyse, hook_calls_demo, layer_stats
from vizhooks.hooks.gradients import gradient_pass
from vizhooks.interpret.cam import cams_from
from vizhooks.lesson.code import LESSON_BODIES, VIEWS, WIDTH, Code, lesson_code, lesson_snippet, snippet, view_code
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import EN, ZH

IMAGE = "sample_images/chelsea.jpg"  # the page's default sample
SOURCE_IMAGE = "sample_images/coffee.jpg"  # the patching step's photo B: the Compare view's default second photo
TOUR = ("conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1")
CLAMP_LIMIT = 1e-5  # the lesson's smallest clip: it changes the gradients of both cases' random weights
#: Relative tolerance against the page's functions: the snippet and the page run the same weights
#: on the same pixels, so only the order of float sums may differ.
RTOL = 1e-3


@dataclass(frozen=True)
class Case:
    id: str
    model: str
    layers: tuple[str, ...]
    size: int
    what: str
    target: int | None
    #: the lesson bodies to run (each body once is enough, those that take a class in both cases)
    lessons: tuple[str, ...] = LESSON_BODIES
    #: False: the page's own default layers (no ``layers=`` in the link)
    layers_in_link: bool = True


CASES = (
    # what a visitor sees first: resnet18, its tour, outputs, the top-1 class
    Case("resnet18-tour-output-top1", "resnet18", TOUR, 128, "output", None, layers_in_link=False),
    # another family, own layers (a conv, a whole Inception block, a conv deep inside one), inputs,
    # a chosen class; GoogLeNet also normalises its input a second time inside (transform_input)
    Case("googlenet-input-class7", "googlenet", ("conv1.conv", "inception3a", "inception4c.branch2.1.conv"), 128,
         "input", 7, lessons=("grad_none", "clamp")),
)

RUNNER = r'''
import json, runpy, sys, traceback

for key, path in json.loads(sys.argv[1]).items():
    print("<<<", key, flush=True)
    try:
        ns = runpy.run_path(path, run_name="__main__")
    except BaseException:
        traceback.print_exc(file=sys.stdout)
        print(">>> failed", flush=True)
        continue
    if key == "maps":  # printed: shapes only; the numbers are read from what the snippet kept
        maps = {k: ns["to_map"](k, t) for k, t in ns["features"].items()}
        print("@@", json.dumps({"stats": {k: [float(m.min()), float(m.mean()), float(m.max())]
                                          for k, m in maps.items()},
                                "top1": int(ns["logits"][0].argmax())}))
    print(">>> ok", flush=True)
print("<<< modules")
print(json.dumps(sorted(m for m in sys.modules if m == "vizhooks" or m.startswith("vizhooks."))))
'''


# --- running the snippets ----------------------------------------------------------------------


def _codes(case: Case) -> dict[str, str]:
    """Every snippet for ``case``, made with the arguments the page passes (views.code, views.lesson)."""
    common = dict(model=case.model, image=IMAGE, size=case.size, target=case.target, pretrained=False,
                  num_classes=1000)
    codes = {view: snippet(view, layers=list(case.layers), what=case.what, **common) for view in VIEWS}
    layers = list(case.layers)
    for body in case.lessons:
        clamp_at, names = (layers[-1], layers[:-1]) if body == "clamp" else (None, layers)
        codes[f"lesson:{body}"] = lesson_snippet(body, layers=names, clamp_at=clamp_at, limit=CLAMP_LIMIT,
                                                 setup_layers=layers, source_image=SOURCE_IMAGE, **common)
    return codes


def _start(codes: dict[str, str], folder: Path, torch_home: Path) -> Future:
    paths = {}
    for key, code in codes.items():
        path = folder / f"{key.replace(':', '_')}.py"
        path.write_text(code)
        paths[key] = str(path)
    runner = folder / "runner.py"
    runner.write_text(RUNNER)
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(torch_home)}
    env.pop("VIZHOOKS_WEIGHTS", None)
    # a fresh Python forked from tests/warm_python.py's, in a thread: the page is read meanwhile
    pool = ThreadPoolExecutor(1)
    running = pool.submit(run_python, path=runner, args=[json.dumps(paths)], cwd=ROOT, env=env, timeout=600)
    pool.shutdown(wait=False)  # its one thread ends with the run
    return running


def _sections(stdout: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    key = None
    for line in stdout.splitlines():
        if line.startswith("<<< "):
            key = line[4:]
            out[key] = []
        elif key is not None:
            out[key].append(line)
    return out


# --- the page ------------------------------------------------------------------------------------


def _class_index(text: str) -> int:
    return int(re.search(r"\*\*.+\*\* \((\d+)\)", text).group(1))


def _read_page(case: Case) -> dict:
    """What the page shows for ``case``, view by view, as plain values."""
    query = {"model": case.model, "size": str(case.size), "what": case.what, "view": "maps"}
    if case.layers_in_link:
        query["layers"] = ",".join(case.layers)
    if case.target is not None:
        query["target"] = str(case.target)
    at = open_page(**query)
    ok(at)
    page: dict = {"layers": tuple(at.multiselect(key="layers").value)}
    page["top5"] = [p.proto.text.split(" · ")[0] for p in at.get("progress")]
    caption = re.compile(rf" · {case.what} (\d+(?:×\d+)*) · min (\S+) · mean (\S+) · max (\S+) · ")
    heads = [s.value for s in at.subheader if s.value in page["layers"]]
    found = [m for c in at.caption if (m := caption.search(c.value))]
    page["maps"] = {h: (m.group(1), *map(float, m.groups()[1:])) for h, m in zip(heads, found, strict=True)}

    choose_view(at, "gradients")
    ok(at)
    page["gradients_target"] = _class_index(next(c.value for c in at.caption if "**" in c.value))
    caption = re.compile(r"^gradient (\d+(?:×\d+)*) · min (\S+) · max (\S+) · ")
    heads = [s.value for s in at.subheader if s.value in page["layers"]]
    found = [m for c in at.caption if (m := caption.search(c.value))]
    page["gradients"] = {h: (m.group(1), float(m.group(2)), float(m.group(3)))
                         for h, m in zip(heads, found, strict=True)}
    page["gradients_order"] = reading_order(heads)

    choose_view(at, "gradcam")
    ok(at)
    page["gradcam_target"] = _class_index(next(c.value for c in at.caption if "**" in c.value))
    page["gradcam_layers"] = reading_order([i.proto.imgs[0].caption.split(" → ")[0] for i in at.image
                                             if " → " in i.proto.imgs[0].caption])

    choose_view(at, "backward")
    ok(at)
    page["backward_label"] = re.search(r"\*\*(.+)\*\*", next(m.value for m in at.markdown if "**" in m.value)).group(1)
    page["backward"] = at.dataframe[0].value.to_dict("records")

    choose_view(at, "table")
    ok(at)
    page["table"] = at.dataframe[0].value.to_dict("records")
    page["total_params"] = at.metric[0].value

    choose_view(at, "code")
    ok(at)
    page["code"] = {}
    for view in VIEWS:
        at.radio(key="code_view").set_value(view).run()
        ok(at)
        page["code"][view] = next(c.value for c in at.code if c.language == "python")
    return page


@dataclass
class Seen:
    case: Case
    codes: dict[str, str]
    printed: dict[str, list[str]]
    modules: list[str]
    page: dict
    bundle: vz.ModelBundle
    cache: dict = field(default_factory=dict)


# Every test on the page read below is slow: the read (a page through every view, the snippets run in
# a child Python) takes minutes on 2 cores, and whichever test comes first pays it.
@pytest.fixture(scope="module", params=[pytest.param(c, id=c.id, marks=pytest.mark.slow) for c in CASES])
def seen(request, tmp_path_factory) -> Seen:
    case = request.param
    folder = tmp_path_factory.mktemp(case.id)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VIZHOOKS_OFFLINE", "1")
        mp.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("torch_home")))
        mp.delenv("VIZHOOKS_WEIGHTS", raising=False)
        codes = _codes(case)
        run = _start(codes, folder, tmp_path_factory.mktemp("snippet_torch_home"))
        try:  # the snippets and the page run side by side
            page = _read_page(case)
            bundle = vz.load_model(case.model)  # as the page's get_bundle: offline, seeded random weights
        finally:
            done = run.result()
    assert done.returncode == 0, done.stderr[-3000:]
    printed = _sections(done.stdout)
    modules = json.loads(printed.pop("modules")[0])
    return Seen(case, codes, printed, modules, page, bundle)


def _lines(seen: Seen, key: str) -> list[str]:
    lines = seen.printed[key]
    assert lines and lines[-1] == ">>> ok", f"the {key} snippet failed:\n" + "\n".join(lines[-30:])
    return lines[:-1]


# --- the page's functions (for what the page draws rather than writes) -----------------------------


def _analysis(seen: Seen, layers: tuple[str, ...], what: str):
    key = ("analysis", layers, what)
    if key not in seen.cache:
        seen.cache[key] = analyse(seen.bundle, vz.load_image(ROOT / IMAGE), seen.case.size, list(layers), what)
    return seen.cache[key]


def _target(seen: Seen) -> int:
    """The class the page differentiates: the chosen one, else the page's top-1 (class_picker)."""
    if seen.case.target is not None:
        return seen.case.target
    return int(_analysis(seen, seen.case.layers, seen.case.what).logits[0].argmax())


def _gradients(seen: Seen):
    """show_gradients / show_gradcam: get_gradients, i.e. gradient_pass and cams_from."""
    if "gradients" not in seen.cache:
        x = _analysis(seen, seen.case.layers, seen.case.what).x
        result = gradient_pass(seen.bundle.model, x, list(seen.case.layers), target=_target(seen), as_maps=True)
        seen.cache["gradients"] = result, cams_from(result, x.shape[-2:])
    return seen.cache["gradients"]


# --- comparing -----------------------------------------------------------------------------------


def _close(printed: list[float], expected: list[float], rtol: float = RTOL) -> bool:
    """Equal to ``rtol`` of the largest magnitude among ``expected`` (a layer's scale)."""
    scale = max(abs(v) for v in expected) or 1.0
    return all(abs(a - b) <= rtol * scale for a, b in zip(printed, expected, strict=True))


def _as_caption(values: list[float], shown: list[float]) -> bool:
    """``values`` agree with numbers the page wrote to three significant digits."""
    return all(math.isclose(v, s, rel_tol=6e-3, abs_tol=1e-12) for v, s in zip(values, shown, strict=True))


def _dims(shape: tuple[int, ...]) -> str:
    return "×".join(map(str, shape))


def _stats(t: torch.Tensor) -> list[float]:
    s = layer_stats(t)
    return [s.min, s.mean, s.max]


NUMBER = r"(-?[\d.]+(?:e[-+]\d+)?|nan|-?inf)"
GRADIENT_LINE = re.compile(rf"^(\S+) (\(.*?\)) min {NUMBER} max {NUMBER}$")
CAM_LINE = re.compile(rf"^(\S+) Grad-CAM (\(.*?\)) mean {NUMBER} peak at (\(.*?\))$")


def _gradient_lines(lines: list[str]) -> tuple[int, dict[str, tuple]]:
    target = next(int(line.split()[1]) for line in lines if line.startswith("target "))
    grads = {m.group(1): (ast.literal_eval(m.group(2)), float(m.group(3)), float(m.group(4)))
             for line in lines if (m := GRADIENT_LINE.match(line))}
    return target, grads


# --- the tests -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_page_shows_the_code_that_ran(seen):
    assert seen.page["layers"] == seen.case.layers
    for view in VIEWS:
        assert seen.page["code"][view] == seen.codes[view].rstrip("\n"), view  # st.code drops the last newline
    assert not seen.modules, f"a snippet imported {seen.modules}"  # plain PyTorch only
    for key, code in seen.codes.items():
        assert "vizhooks" not in code, key


@pytest.mark.slow
def test_maps_snippet_prints_the_pages_shapes_and_kept_its_numbers(seen):
    lines = _lines(seen, "maps")
    kept = json.loads(next(line[3:] for line in lines if line.startswith("@@ ")))
    shapes = {name: ast.literal_eval(shape) for name, shape in (line.split(" ", 1) for line in lines
                                                                 if not line.startswith("@@ "))}
    page = seen.page["maps"]
    assert set(shapes) == set(page) == set(seen.case.layers)
    analysis = _analysis(seen, seen.case.layers, seen.case.what)
    for name, (shape, *caption) in page.items():
        assert shapes[name][0] == 1 and _dims(shapes[name][1:]) == shape, name
        assert _as_caption(kept["stats"][name], caption), (name, kept["stats"][name], caption)
        assert _close(kept["stats"][name], _stats(analysis.activations[name])), name
    assert seen.bundle.categories[kept["top1"]] == seen.page["top5"][0]


@pytest.mark.slow
def test_gradients_snippet_prints_the_pages_class_shapes_and_range(seen):
    target, grads = _gradient_lines(_lines(seen, "gradients"))
    assert target == seen.page["gradients_target"]
    if seen.case.target is not None:
        assert target == seen.case.target
    assert list(grads) == seen.page["gradients_order"] == list(seen.case.layers)  # the page's order
    result, _ = _gradients(seen)
    for name, (shape, lo, hi) in grads.items():
        page_shape, page_lo, page_hi = seen.page["gradients"][name]
        assert shape[0] == 1 and _dims(shape[1:]) == page_shape, name
        assert _as_caption([lo, hi], [page_lo, page_hi]), (name, lo, hi, page_lo, page_hi)
        s = _stats(result.gradients[name])
        assert _close([lo, hi], [s[0], s[2]]), (name, lo, hi, s)


def test_gradcam_snippet_prints_the_pages_class_and_heat_maps(seen):
    lines = _lines(seen, "gradcam")
    target, grads = _gradient_lines(lines)
    assert target == seen.page["gradcam_target"]
    assert list(grads) == seen.page["gradcam_layers"] == list(seen.case.layers)
    result, cams = _gradients(seen)
    printed = {m.group(1): (ast.literal_eval(m.group(2)), float(m.group(3)), ast.literal_eval(m.group(4)))
               for line in lines if (m := CAM_LINE.match(line))}
    assert list(printed) == list(seen.case.layers)
    for name, (shape, mean, (row, col)) in printed.items():
        cam = cams[name]
        assert shape == tuple(cam.shape), name
        assert abs(mean - float(cam.mean())) <= RTOL, (name, mean, float(cam.mean()))
        assert float(cam[row, col]) >= float(cam.max()) - RTOL, (name, row, col)  # the peak is the page's peak
        s = _stats(result.gradients[name])
        assert _close([grads[name][1], grads[name][2]], [s[0], s[2]]), name


def _shapes(cell: str) -> list[tuple[int, ...] | None]:
    return [None if s == "None" else tuple(int(d) for d in s.split("×")) for s in cell.split(", ")]


def test_backward_snippet_prints_what_the_pages_backward_hooks_received(seen):
    lines = _lines(seen, "backward")
    pattern = re.compile(r"^(\S+) (\S+) grad_input (\[.*?\]) grad_output (\[.*?\])$")
    fired = [(m.group(1), m.group(2), ast.literal_eval(m.group(3)), ast.literal_eval(m.group(4)))
             for line in lines if (m := pattern.match(line))]
    skipped = ast.literal_eval(next(line.removeprefix("not hooked ") for line in lines
                                    if line.startswith("not hooked ")))
    target = int(next(line.split()[1] for line in lines if line.startswith("target ")))
    rows = seen.page["backward"]
    hooked = [(r[EN["col_module"]], r[EN["col_type"]], _shapes(r[EN["col_grad_input"]]),
               _shapes(r[EN["col_grad_output"]])) for r in rows if not r[EN["col_note"]]]
    assert fired == hooked  # the same modules, in the order backward reached them, with the same gradients
    assert skipped == sorted(r[EN["col_module"]] for r in rows if r[EN["col_note"]])
    assert seen.bundle.categories[target] == seen.page["backward_label"]
    assert target == seen.page["gradients_target"]


TABLE_LINE = re.compile(r"^(\S+)\s+(\S+)\s+(\(.*?\)|None)\s+-> (\(.*?\)|None)\s+([\d,]+)\s+[\d.]+ ms$")


def test_table_snippet_prints_the_pages_rows(seen):
    lines = _lines(seen, "table")
    rows = []
    for line in lines:
        if m := TABLE_LINE.match(line):
            shape_in, shape_out = (ast.literal_eval(s) for s in m.group(3, 4))
            rows.append((m.group(1), m.group(2), _dims(shape_in or ()), _dims(shape_out or ()),
                         int(m.group(5).replace(",", ""))))
    page = [(r["name"], r["type"], r["input_shape"], r["output_shape"], int(r["params"])) for r in seen.page["table"]]
    assert rows == page  # every module, in the order they first ran
    total = next(line.removeprefix("total params ") for line in lines if line.startswith("total params "))
    assert total == seen.page["total_params"]


@pytest.mark.slow
@pytest.mark.parametrize("seen", [CASES[0]], ids=[CASES[0].id], indirect=True)
def test_lesson_hook_snippets_print_what_the_lesson_shows(seen):
    """The lesson's hello, pre-hook and remove steps (forward hooks; one case is enough)."""
    assert "hello" in seen.case.lessons
    layers, first = list(seen.case.layers), seen.case.layers[0]
    out = _analysis(seen, seen.case.layers, "output")
    modules = dict(seen.bundle.model.named_modules())

    hello = [re.match(r"^hook called on (\S+) -> output (\(.*\))$", line) for line in _lines(seen, "lesson:hello")]
    assert [(m.group(1), ast.literal_eval(m.group(2))) for m in hello] == \
        [(type(modules[n]).__name__, tuple(out.activations[n].shape)) for n in layers]  # the page's hello table

    inputs = _analysis(seen, (first,), "input")
    prepost = {}
    for line in _lines(seen, "lesson:prepost"):
        m = re.match(rf"^{re.escape(first)} (input|output) (\(.*?\)) min {NUMBER} mean {NUMBER} max {NUMBER}$", line)
        assert m, line
        prepost[m.group(1)] = (ast.literal_eval(m.group(2)), [float(v) for v in m.group(3, 4, 5)])
    for kind, analysis in (("input", inputs), ("output", out)):
        page = analysis.activations[first]
        assert prepost[kind][0] == tuple(page.shape), kind
        assert _close(prepost[kind][1], _stats(page)), kind

    calls = hook_calls_demo(seen.bundle.model, out.x, first)
    assert _lines(seen, "lesson:remove") == [f"forgot to remove {calls['forgot']}",
                                             f"removed each time {calls['removed']}"]


@pytest.mark.slow
def test_lesson_gradient_snippets_print_what_the_lesson_shows(seen):
    """The lesson's tensor-hook and clamp steps, for the top-1 class and for a chosen one."""
    layers = list(seen.case.layers)
    result, _ = _gradients(seen)
    for line, name in zip(_lines(seen, "lesson:grad_none"), layers, strict=True):
        m = re.match(rf"^{re.escape(name)} \.grad: None \| from the tensor hook: (\(.*?\)) min {NUMBER} max {NUMBER}$",
                     line)
        assert m, line
        s = _stats(result.gradients[name])
        assert ast.literal_eval(m.group(1)) == tuple(result.gradients[name].shape)
        assert _close([float(m.group(2)), float(m.group(3))], [s[0], s[2]]), name

    # show_clamp: the earlier layers' gradients, plainly and with the gradient at the last layer clipped
    x = _analysis(seen, seen.case.layers, seen.case.what).x
    plain, clamped = vz.clamp_gradients(seen.bundle.model, x, layers[:-1], clamp_at=layers[-1], limit=CLAMP_LIMIT,
                                        target=_target(seen), as_maps=True)
    for line, name in zip(_lines(seen, "lesson:clamp"), layers[:-1], strict=True):
        shape, change = line.removeprefix(f"{name} ").split(" largest change ")
        expected = float((clamped.gradients[name] - plain.gradients[name]).abs().max())
        assert ast.literal_eval(shape) == tuple(plain.gradients[name].shape)
        assert expected > 0 and math.isclose(float(change), expected, rel_tol=RTOL), (name, change, expected)


@pytest.mark.slow
@pytest.mark.parametrize("seen", [CASES[0]], ids=[CASES[0].id], indirect=True)
def test_lesson_patching_snippet_prints_what_the_lesson_shows(seen):
    """The lesson's patching step: two plain forward hooks per layer print the restored fractions the
    lesson's sweep draws (vizhooks.hooks.patching.sweep on the same two photos)."""
    from vizhooks.lesson.display import patch_source, patch_sweep

    assert "patching" in seen.case.lessons
    out = _analysis(seen, seen.case.layers, "output")
    source = patch_source(seen.bundle, out.picture, vz.load_image(ROOT / SOURCE_IMAGE))
    runs = patch_sweep(seen.bundle, out.x, source, seen.case.layers)
    lines = _lines(seen, "lesson:patching")
    assert lines[0] == f"target {runs[0].target}"
    printed = [line.split(" restored ") for line in lines[1:]]
    assert [name for name, _ in printed] == [r.layer for r in runs] == list(seen.case.layers)
    assert all(math.isclose(float(value), r.restored, abs_tol=2e-3) for (_, value), r in zip(printed, runs,
                                                                                           strict=True)), printed
    assert float(printed[0][1]) == pytest.approx(1.0, abs=1e-3)  # conv1 whole from B: B's answer in full
    assert len({value for _, value in printed}) == len(printed)  # each layer restores its own share


@pytest.mark.slow
@pytest.mark.parametrize("seen", [CASES[0]], ids=[CASES[0].id], indirect=True)
def test_lesson_relevance_snippet_prints_what_the_lesson_shows(seen):
    """The lesson's relevance step: a forward hook and a tensor hook print the five channels of the
    deepest layer that channel_relevance (Taylor) ranks first, with its scores."""
    from vizhooks.interpret.relevance import channel_relevance

    assert "relevance" in seen.case.lessons
    layer = seen.case.layers[-1]
    x = _analysis(seen, seen.case.layers, seen.case.what).x
    found = channel_relevance(seen.bundle, x, layer, _target(seen), method="taylor")
    lines = _lines(seen, "lesson:relevance")
    assert lines[0] == f"target {_target(seen)}"
    printed = [re.match(rf"^{re.escape(layer)} channel (\d+) relevance {NUMBER}$", line) for line in lines[1:]]
    assert all(printed), lines
    assert [int(m.group(1)) for m in printed] == found.order[:5].tolist()
    assert _close([float(m.group(2)) for m in printed], found.scores[found.order[:5]].tolist())


@pytest.mark.slow
@pytest.mark.parametrize("seen", [CASES[0]], ids=[CASES[0].id], indirect=True)
def test_lesson_concepts_snippet_prints_what_the_lesson_shows(seen):
    """The lesson's concepts step: random crops of the photo, a forward hook and scikit-learn's NMF print
    the concepts the page shows (vizhooks' discover over the same crops): each concept's strongest channels,
    its three crops with the most of it and their amounts, and how far U W is from A (numpy on discover's
    own U, W and activations)."""
    import numpy as np

    from vizhooks.interpret.concepts import activations
    from vizhooks.lesson.code import LESSON_CONCEPTS, LESSON_CROPS
    from vizhooks.lesson.display import CONCEPT_TOP, photo_concepts

    assert "concepts" in seen.case.lessons
    layer, size = seen.case.layers[-1], seen.case.size
    picture = _analysis(seen, seen.case.layers, seen.case.what).picture
    found = photo_concepts(seen.bundle, picture, layer, size)
    acts, crops = activations(seen.bundle, [picture], layer, crops_per_image=LESSON_CROPS, size=size, seed=0,
                              batch_size=LESSON_CROPS)
    assert crops == found.crops and found.k == LESSON_CONCEPTS
    lines = _lines(seen, "lesson:concepts")
    head = re.match(rf"^A (\d+)x(\d+) ~ U W, off by {NUMBER}$", lines[0])
    assert head, lines
    assert (int(head.group(1)), int(head.group(2))) == acts.shape == (LESSON_CROPS, found.bank.shape[1])
    error = np.linalg.norm(acts - found.coefficients @ found.bank) / np.linalg.norm(acts)
    assert float(head.group(3)) == pytest.approx(error, abs=2e-4)
    expected, amounts = [], []
    for i in range(LESSON_CONCEPTS):
        expected.append(f"concept {i} strongest channels {np.argsort(-found.bank[i], kind='stable')[:3].tolist()}")
        for row in np.argsort(-found.coefficients[:, i], kind="stable")[:CONCEPT_TOP]:
            expected.append(f"  crop {found.crops[row][1]}")
            amounts.append(float(found.coefficients[row, i]))
    printed = [re.sub(rf" amount {NUMBER}$", "", line) for line in lines[1:]]
    assert printed == expected
    shown = [float(line.rsplit(" ", 1)[1]) for line in lines[1:] if " amount " in line]
    assert _close(shown, amounts, 1e-3)
    assert len({box for _, box in found.crops}) > CONCEPT_TOP  # the crops differ: the order means something


@pytest.mark.slow
@pytest.mark.parametrize("seen", [CASES[0]], ids=[CASES[0].id], indirect=True)
def test_lesson_audit_snippet_prints_what_the_lesson_shows(seen):
    """The lesson's Clever Hans step: for the photo and the photo with a red sticker, hand-written hooks
    print the top class and Grad-CAM's heat centre that the page's table shows (the library's grad_cam
    and the audit's heat_centres), to the table's two decimals and closer."""
    from vizhooks.lesson.display import sticker_heat

    assert "audit" in seen.case.lessons
    layer = seen.case.layers[-1]
    x = _analysis(seen, seen.case.layers, seen.case.what).x
    shown = sticker_heat(seen.bundle, x, layer, _target(seen))
    lines = _lines(seen, "lesson:audit")
    printed = [re.match(rf"^(photo|sticker) top (\d+) heat centre {NUMBER} {NUMBER}$", line) for line in lines]
    assert all(printed), lines
    assert [(m.group(1), int(m.group(2))) for m in printed] == [(which, top) for which, top, *_ in shown]
    for m, (_, _, row, col, _) in zip(printed, shown, strict=True):
        assert float(m.group(3)) == pytest.approx(row, abs=2e-3) and float(m.group(4)) == pytest.approx(col, abs=2e-3)
    assert shown[0][2:4] != shown[1][2:4]  # the sticker moved the heat: the two rows are two pictures


# --- code the back row can read (issue 23): the lesson's code, step by step ------------------------

#: Models of three families, with layers the page offers for them: convolutions (two of them) and
#: a transformer whose blocks give tokens. Only code is made here (the meta device), nothing runs.
READABLE = {
    "resnet18": ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"],
    "vgg11": ["features.0", "features.3", "features.8", "features.18"],
    "vit_b_16": ["conv_proj", "encoder.layers.encoder_layer_0", "encoder.layers.encoder_layer_11"],
}


def _step_codes(model: str, layers: list[str], lang: str, target: int | None = None, size: int = 128,
                limit: float = CLAMP_LIMIT) -> dict[str, Code]:
    """Every lesson step's code as views.lesson.lesson_code makes it: the view's code for the
    view steps, the lesson body for the others, the set-up prepared for all the chosen layers."""
    common = dict(model=model, image=IMAGE, size=size, target=target, pretrained=False, num_classes=1000, lang=lang)
    codes = {}
    for step in STEPS:
        kind, name = step.code
        if kind == "view":
            codes[step.id] = view_code(name, layers=layers, what="output", **common)
        else:
            clamp_at = layers[-1] if name == "clamp" else None
            names = layers[:-1] if name == "clamp" else layers
            codes[step.id] = lesson_code(name, layers=names, clamp_at=clamp_at, limit=limit, setup_layers=layers,
                                         **common)
    return codes


def columns(line: str) -> int:
    """How wide a line is in a code box: a Chinese character takes two columns."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in line)


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("model", list(READABLE))
def test_every_lesson_line_fits_the_box_and_the_set_up_is_one(model, lang):
    codes = _step_codes(model, READABLE[model], lang)
    assert len(codes) == len(STEPS)
    for step, code in codes.items():
        for part in (code.setup, code.steps):
            wide = [(columns(line), line) for line in part.splitlines() if columns(line) > WIDTH]
            assert not wide, (step, wide)
            ast.parse(part)  # each part is Python on its own (wrapped, not cut)
        ast.parse(code.full)
    assert len({code.setup for code in codes.values()}) == 1, "the set-up differs between steps"
    # the steps differ, and none repeats the set-up's lines
    assert len({code.steps for code in codes.values()}) == len(STEPS)
    for step, code in codes.items():
        # the patching step opens its photo B, and nothing else: photo A is the set-up's
        opened = [line for line in code.steps.splitlines() if "Image.open" in line]
        assert "model = " not in code.steps and opened == (
            ["other = Image.open('photo_b.png').convert(\"RGB\")"] if step == "patching" else [])
        setup_lines = {line for line in code.setup.splitlines() if line.strip() and not line.startswith(" ")}
        assert not setup_lines & set(code.steps.splitlines()), step


def test_the_set_up_shows_only_the_branches_the_model_uses():
    for model, layers in READABLE.items():
        setup = _step_codes(model, layers, "en")["what"].setup
        tokens, channels_last = "t.ndim == 3" in setup, "CHANNELS_LAST" in setup
        assert tokens == (model == "vit_b_16"), (model, setup)
        assert not channels_last, (model, setup)
    swin = view_code("maps", model="swin_t", image=IMAGE, size=128, layers=["features.1.0", "features.3.1"])
    assert "CHANNELS_LAST" in swin.setup and "t.ndim == 3" not in swin.setup
    # a ViT whose chosen layers are all convolutions needs no token branch either
    conv_only = view_code("maps", model="vit_b_16", image=IMAGE, size=128, layers=["conv_proj"])
    assert "t.ndim == 3" not in conv_only.setup


def test_a_long_call_or_list_is_broken_into_valid_lines():
    long = [f"features.denseblock4.denselayer{i}.conv2" for i in range(1, 9)]
    code = view_code("gradients", model="densenet121", image=IMAGE, size=128, layers=long)
    assert all(columns(line) <= WIDTH for line in code.full.splitlines())
    tree = ast.parse(code.steps)
    layers = next(node.value for node in tree.body if isinstance(node, ast.Assign)
                  and getattr(node.targets[0], "id", "") == "layers")
    assert ast.literal_eval(layers) == long  # the list is the same list, one name a line
    googlenet = view_code("maps", model="googlenet", image=IMAGE, size=128, layers=["conv1.conv"]).setup
    assert "model = models.googlenet(\n" in googlenet and "transform_input=True," in googlenet


@pytest.mark.slow
def test_the_transformer_set_up_runs_and_maps_tokens_as_the_page(tmp_path):
    """The token branch, shown only for a transformer, turns its tokens into the page's maps."""
    layers = READABLE["vit_b_16"][:2]
    code = view_code("maps", model="vit_b_16", image=IMAGE, size=128, layers=layers).full
    path = tmp_path / "vit.py"
    path.write_text(code)
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(tmp_path / "torch_home")}
    run = run_python(path=path, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr[-3000:]
    printed = {line.split(" ", 1)[0]: ast.literal_eval(line.split(" ", 1)[1]) for line in run.stdout.splitlines()}
    bundle = vz.load_model("vit_b_16", weights="none", device="cpu")
    x = bundle.preprocess(vz.load_image(ROOT / IMAGE), 128)
    expected = vz.capture(bundle.model, x, layers, as_maps=True)
    assert printed == {n: tuple(expected[n].shape) for n in layers}


def test_the_lesson_page_shows_the_hook_lines_then_the_set_up_and_offers_the_file():
    """What views.lesson draws: the step's lines, the set-up in its box, the whole file to download."""
    backward = [s.id for s in STEPS].index("backward") + 1
    for lang, texts, step in (("en", EN, 1), ("zh", ZH, backward)):
        at = open_page(view="lesson", step=str(step), size="128", lang=lang)
        ok(at)
        made = _step_codes("resnet18", list(TOUR), lang)[STEPS[step - 1].id]
        shown = [c.value for c in at.code if c.language == "python"]
        assert shown[:2] == [made.steps.strip("\n"), made.setup.rstrip("\n")], lang
        box = next(e for e in at.expander if e.label == texts["lesson_code_setup"])
        assert [c.value for c in box.code] == [made.setup.rstrip("\n")]
        assert any(b.proto.label == texts["lesson_code_download"] for b in at.get("download_button"))


# --- the snippet files (vizhooks/lesson/snippets): real Python, written once, in both languages -------


def _shown_parts() -> dict[str, str]:
    from vizhooks.lesson import snippets

    files = sorted(p.stem for p in snippets.FOLDER.glob("*.py") if p.stem not in ("__init__", "fill"))
    return {f"{file}.{name}": text for file in files for name, text in snippets.parts(file).items()}


def test_every_snippet_part_reads_in_both_languages_with_the_same_code():
    from vizhooks.lesson import snippets

    shown = _shown_parts()
    assert {"maps.output", "maps.input", "gradients.gradients", "conv.conv", "setup.free_size"} <= set(shown)
    for name in shown:
        en, zh = (snippets.localise(snippets.part(name), lang) for lang in ("en", "zh"))
        assert "# en:" not in en + zh and "# zh:" not in en + zh and "# include:" not in en + zh, name
        assert [snippets.split_comment(line)[0] for line in en.splitlines()] == \
            [snippets.split_comment(line)[0] for line in zh.splitlines()], name


def test_no_lines_are_repeated_between_snippet_files():
    """Lines several snippets share live once (common.py) and are put in by ``# include:``: no run of
    four or more identical non-blank lines appears in the shown parts of two files."""
    shown = {name: [line for line in text.splitlines() if line.strip()] for name, text in _shown_parts().items()}
    repeated = []
    for a, b in ((a, b) for a in shown for b in shown if a.split(".")[0] < b.split(".")[0]):
        for i in range(len(shown[a]) - 3):
            run = shown[a][i:i + 4]
            if any(shown[b][j:j + 4] == run for j in range(len(shown[b]) - 3)):
                repeated.append((a, b, run[0]))
    assert repeated == []


def test_snippet_conventions_are_enforced_with_a_sentence():
    from vizhooks.lesson import snippets

    assert snippets.localise("x = 1  # en: one\n# zh: 一\n", "zh") == "x = 1  # 一\n"
    assert snippets.localise("    # en: a\n    # en: b\n    # zh: 甲\n    # zh: 乙\ny = 2  # noqa: E501\n", "en") == \
        "    # a\n    # b\ny = 2\n"
    for bad in ("# en: only English\nx = 1\n", "# en: a\n# en: b\n# zh: 甲\n", "x = 1  # a plain comment\n",
                "x = 1  # en: one\ny = 2\n"):
        with pytest.raises(snippets.SnippetError):
            snippets.localise(bad, "en")
    long = [f"features.denseblock4.denselayer{i}.conv2" for i in range(1, 4)]
    assert snippets.fill_in("layers = fill.layers\nn = len(fill.layers)  # {fill.size} px\n",
                            {"layers": long, "size": 128}) == \
        "layers = [\n" + "".join(f"    {n!r},\n" for n in long) + "]\n" + f"n = len({long!r})  # 128 px\n"
    assert snippets.fill_in("t = fill.target\n", {"target": snippets.Source("int(logits[0].argmax())")}) == \
        "t = int(logits[0].argmax())\n"
    with pytest.raises(snippets.SnippetError, match="fill.limit"):
        snippets.fill_in("limit = fill.limit\n", {})
    with pytest.raises(snippets.SnippetError):
        snippets.part("common.no_such_part")


def test_the_offline_fallback_keeps_the_pretrained_model_when_it_loads():
    """The notebook's set-up: the seeded random model is built only in ``except`` (it used to follow the
    ``try`` and replace the pretrained model on every run)."""
    from vizhooks.lesson.code import with_weights_fallback

    for lang in ("en", "zh"):
        setup = view_code("maps", model="resnet18", image=IMAGE, size=128, layers=["conv1"], pretrained=True,
                          num_classes=1000, lang=lang).setup
        tree = ast.parse(with_weights_fallback(setup, "resnet18", 1000, lang))
        (attempt,) = [node for node in tree.body if isinstance(node, ast.Try)]
        assigned = [ast.unparse(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    and ast.unparse(node.targets[0]) == "model"]
        assert assigned == ["models.resnet18(weights=models.ResNet18_Weights.DEFAULT).eval()",
                            "models.resnet18(weights=None).eval()"]
        assert [ast.unparse(n.targets[0]) for n in attempt.handlers[0].body if isinstance(n, ast.Assign)] == ["model"]
        assert "resnet18 could not be loaded" in ast.unparse(attempt.handlers[0])
