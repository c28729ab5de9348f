"""The lesson to take home (vizhooks/lesson/handout.py): the notebook runs top to bottom in a Jupyter kernel
and prints the page's numbers; the HTML handout is one self-contained file; the command line writes
either and refuses a bad photo with one sentence.

The notebook runs under nbclient in a fresh python3 kernel of this environment, offline: the kernel
inherits the network guard (PYTHONPATH=tests/netguard) and an empty TORCH_HOME. It is made as for a
page with pretrained weights, so its set-up also shows the fallback a student meets at home without a
cached checkpoint: the sentence, then the page's seeded random weights, whose numbers the page (offline,
random weights here) computes independently: the hooks' shapes and statistics against the page's
analysis, gradients against ``gradient_pass``, the clamp against a ``torch.quantile`` limit and
``clamp_gradients``, Grad-CAM against ``cams_from``, the backward order against ``backward_report``, the
parameter total against ``model.parameters()``.
"""

from __future__ import annotations

import ast
import dataclasses
import html
import json
import math
import os
import re
import time
from pathlib import Path

import nbformat
import pytest
import torch

import vizhooks as vz
from tests.helpers import ROOT
from tests.warm_python import run_python
from vizhooks.analysis import analyse, hook_calls_demo, layer_stats
from vizhooks.hooks.gradients import backward_report, gradient_pass
from vizhooks.interpret.cam import cams_from
from vizhooks.interpret.sanity import randomisation_stages, sanity_check
from vizhooks.lesson.handout import (
    LessonChoices,
    lesson_file,
    notebook_bytes,
    page_layers,
    prepare,
    step_code,
)
from vizhooks.lesson.i18n import in_language
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import EN, LANGUAGES, ZH

PHOTO = ROOT / "sample_images" / "chelsea.jpg"
SIZE = 64  # small: the lesson's numbers, not its pictures, are what the notebook test reads
RTOL = 1e-3
NUMBER = r"(-?[\d.]+(?:e[-+]\d+)?)"


def _choices(lang: str = "en", **kw) -> LessonChoices:
    return LessonChoices("resnet18", PHOTO.read_bytes(), PHOTO.name, SIZE, lang, **kw)


@pytest.fixture(scope="module")
def bundle():
    return vz.load_model("resnet18")  # as the page's get_bundle offline: seeded random weights


@pytest.fixture(scope="module")
def page(bundle):
    """What the page computes for this photo and model: its analysis, class and layers."""
    analysis = analyse(bundle, vz.load_image(PHOTO), SIZE, page_layers("resnet18"), "output")
    return analysis, int(analysis.logits[0].argmax())


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    """One Jupyter kernel for this module's notebooks, offline, with an empty torch cache: starting a kernel
    and importing torch in it is about 6 s of CPU, so the notebooks share it, each after ``%reset -f``
    (nothing a notebook defined is left to the next) in a folder of its own (:func:`_execute`)."""
    from jupyter_client import KernelManager

    env = {**os.environ, "TORCH_HOME": str(tmp_path_factory.mktemp("kernel_torch_home")),
           "PYTHONPATH": str(ROOT / "tests" / "netguard")}
    km = KernelManager(kernel_name="python3")
    km.start_kernel(env=env, cwd=str(tmp_path_factory.mktemp("kernel")))
    yield km
    km.shutdown_kernel(now=True)


@pytest.fixture(scope="module")
def ran(bundle, kernel, tmp_path_factory):
    """The notebook, made as for pretrained weights, run by nbclient: {step id: printed lines}."""
    folder = tmp_path_factory.mktemp("notebook")
    pretrained = dataclasses.replace(bundle, pretrained=True)
    started = time.perf_counter()
    data = lesson_file(_choices(), pretrained, "ipynb")
    built = time.perf_counter() - started
    (folder / "lesson.ipynb").write_bytes(data)
    book = nbformat.reads(data.decode("utf-8"), as_version=4)
    started = time.perf_counter()
    steps = _execute(book, folder, kernel, prepare_code(bundle))
    print(f"notebook: built in {built:.1f} s, ran in {time.perf_counter() - started:.1f} s")
    return book, steps, folder


def _execute(book, folder: Path, kernel, codes: dict[str, str]) -> dict[str, list[str]]:
    """Runs ``book`` top to bottom in the module's kernel (:func:`kernel`), its namespace emptied first
    and ``folder`` its working folder; {step id: the lines its code cell printed} (``codes``: each step's
    code as prepare made it), and "setup": what the set-up cell printed."""
    from nbclient import NotebookClient

    fresh = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        f"%reset -f\n__import__('os').chdir({str(folder)!r})")])  # no name of its own is left either
    NotebookClient(fresh, km=kernel, timeout=60).execute()
    NotebookClient(book, km=kernel, timeout=300).execute()
    steps: dict = {}
    code_cells = [c for c in book.cells if c.cell_type == "code"]
    for step in STEPS:
        cell = next(c for c in code_cells if c.source == codes[step.id])
        steps[step.id] = _stdout(cell).splitlines()  # stderr holds PyTorch's warnings
    steps["setup"] = _stdout(code_cells[1])
    return steps


def _stdout(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


_CODES: dict = {}


def prepare_code(bundle) -> dict[str, str]:
    if not _CODES:
        lesson = prepare(_choices(), bundle)
        _CODES.update({k: v.steps.strip("\n") for k, v in lesson.codes.items()})
    return _CODES


def _close(printed: list[float], expected: list[float]) -> bool:
    scale = max(abs(v) for v in expected) or 1.0
    return all(abs(a - b) <= RTOL * scale for a, b in zip(printed, expected, strict=True))


@pytest.mark.slow
def test_the_notebook_runs_offline_with_the_fallback_sentence_and_the_photo(ran):
    book, steps, folder = ran
    assert "Random weights: pretrained weights for resnet18 could not be loaded" in steps["setup"]
    assert (folder / PHOTO.name).read_bytes() == PHOTO.read_bytes()  # written next to the notebook
    shown = book.cells[2].outputs
    assert any("image/png" in o.get("data", {}) for o in shown), "the photo cell shows the photo"
    assert book.cells[2].metadata["jupyter"]["source_hidden"]
    errors = [o for c in book.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"]
    assert not errors


@pytest.mark.slow
def test_every_step_has_its_text_code_question_and_answer(bundle):
    book = nbformat.reads(lesson_file(_choices("zh"), bundle, "ipynb").decode("utf-8"), as_version=4)
    text = "\n".join(c.source for c in book.cells if c.cell_type == "markdown")
    for step in STEPS:
        for part in ("title", "text", "q", "a"):
            assert ZH[f"lesson_{step.id}_{part}"] in text, (step.id, part)
    codes = {c.source for c in book.cells if c.cell_type == "code"}
    lesson = prepare(_choices("zh"), bundle)
    assert all(code.steps.strip("\n") in codes for code in lesson.codes.values())
    assert "与页面相同的预处理" in book.cells[4].source  # the set-up's comments are Chinese too
    # random weights on the page: the notebook's set-up is the Lesson view's, unchanged
    assert book.cells[4].source == lesson.codes["what"].setup.strip("\n")


@pytest.mark.slow
def test_the_notebook_prints_the_pages_forward_numbers(ran, bundle, page):
    _, steps, _ = ran
    analysis, _ = page
    layers = list(analysis.activations)
    modules = dict(bundle.model.named_modules())
    hello = [re.match(r"^hook called on (\S+) -> output (\(.*\))$", line) for line in steps["what"]]
    assert [(m.group(1), ast.literal_eval(m.group(2))) for m in hello] == \
        [(type(modules[n]).__name__, tuple(analysis.activations[n].shape)) for n in layers]
    maps = dict(line.split(" ", 1) for line in steps["forward"])
    assert {n: ast.literal_eval(s) for n, s in maps.items()} == {n: tuple(t.shape) for n, t in
                                                                  analysis.activations.items()}
    first = layers[0]
    inputs = analyse(bundle, vz.load_image(PHOTO), SIZE, [first], "input").activations[first]
    printed = {}
    for line in steps["prehook"]:
        m = re.match(rf"^{re.escape(first)} (input|output) (\(.*?\)) min {NUMBER} mean {NUMBER} max {NUMBER}$", line)
        assert m, line
        printed[m.group(1)] = (ast.literal_eval(m.group(2)), [float(v) for v in m.group(3, 4, 5)])
    for kind, t in (("input", inputs), ("output", analysis.activations[first])):
        s = layer_stats(t)
        assert printed[kind][0] == tuple(t.shape) and _close(printed[kind][1], [s.min, s.mean, s.max]), kind
    # one convolution by hand: the first chosen conv, channel 0, the centre; the page's captured map there
    conv = analysis.activations[first][0, 0]
    h, w = conv.shape
    by_hand = [re.match(rf"^by hand {NUMBER} \| from the hook {NUMBER}$", line) for line in steps["conv"]]
    by_hand = [m for m in by_hand if m]
    assert f"{first} channel 0 at {(h // 2, w // 2)} kernel (3, 7, 7)" in steps["conv"] and len(by_hand) == 1
    assert _close([float(v) for v in by_hand[0].groups()], [float(conv[h // 2, w // 2])] * 2)
    total = next(line for line in steps["shapes"] if line.startswith("total params "))
    assert total == f"total params {sum(p.numel() for p in bundle.model.parameters()):,}"
    calls = hook_calls_demo(bundle.model, analysis.x, first)
    assert steps["remove"] == [f"forgot to remove {calls['forgot']}", f"removed each time {calls['removed']}"]


@pytest.mark.slow
def test_the_notebook_prints_the_pages_gradient_numbers(ran, bundle, page):
    book, steps, _ = ran
    analysis, target = page
    layers = list(analysis.activations)
    result = gradient_pass(bundle.model, analysis.x, layers, target=target, as_maps=True)
    for line, name in zip(steps["tensor"], layers, strict=True):
        m = re.match(rf"^{re.escape(name)} \.grad: None \| from the tensor hook: (\(.*?\)) min {NUMBER} max {NUMBER}$",
                     line)
        assert m, line
        g = result.gradients[name]
        assert ast.literal_eval(m.group(1)) == tuple(g.shape)
        assert _close([float(m.group(2)), float(m.group(3))], [float(g.min()), float(g.max())]), name

    # the clamp: the limit written into the code is the page's 25th percentile of the non-zero |gradient|
    code = next(c.source for c in book.cells if c.cell_type == "code" and "clamp_at = " in c.source)
    limit = float(re.search(r"^limit = (\S+)$", code, re.M).group(1))
    grad = vz.capture_gradients(bundle.model, analysis.x, [layers[-1]], target=target)[layers[-1]].abs().flatten()
    assert limit == pytest.approx(float(torch.quantile(grad[grad > 0].double(), 0.25, interpolation="lower")),
                                  rel=1e-6)
    plain, clamped = vz.clamp_gradients(bundle.model, analysis.x, layers[:-1], clamp_at=layers[-1], limit=limit,
                                        target=target, as_maps=True)
    for line, name in zip(steps["clamp"], layers[:-1], strict=True):
        shape, change = line.removeprefix(f"{name} ").split(" largest change ")
        expected = float((clamped.gradients[name] - plain.gradients[name]).abs().max())
        assert ast.literal_eval(shape) == tuple(plain.gradients[name].shape)
        assert expected > 0 and math.isclose(float(change), expected, rel_tol=RTOL), (name, change, expected)

    fired = [re.match(r"^(\S+) (\S+) grad_input (\[.*?\]) grad_output (\[.*?\])$", line) for line in steps["backward"]]
    records = [r for r in backward_report(bundle.model, analysis.x, [n for n, _ in bundle.model.named_children()],
                                          target=target) if r.supported]
    assert [(m.group(1), ast.literal_eval(m.group(3)), ast.literal_eval(m.group(4))) for m in fired if m] == \
        [(r.name, list(r.grad_input), list(r.grad_output)) for r in records]
    assert f"target {target}" in steps["backward"]

    cams = cams_from(result, analysis.x.shape[-2:])
    printed = [re.match(rf"^(\S+) Grad-CAM (\(.*?\)) mean {NUMBER} peak at (\(.*?\))$", line)
               for line in steps["gradcam"]]
    printed = [m for m in printed if m]
    assert [m.group(1) for m in printed] == layers
    for m in printed:
        cam = cams[m.group(1)]
        assert ast.literal_eval(m.group(2)) == tuple(cam.shape)
        assert abs(float(m.group(3)) - float(cam.mean())) <= RTOL
        row, col = ast.literal_eval(m.group(4))
        assert float(cam[row, col]) >= float(cam.max()) - RTOL

    # the sanity check: the notebook's own Grad-CAM, re-initialisation and ranks against vizhooks.interpret.sanity
    check = sanity_check(bundle, analysis.x, target, ["gradcam"], [layers[-1]])
    printed = [re.match(rf"^\s*(\S+) re-initialised: Spearman {NUMBER}$", line) for line in steps["sanity"]]
    assert [m.group(1) for m in printed if m] == list(check.stages) == randomisation_stages(bundle.model)
    assert [float(m.group(2)) for m in printed if m] == pytest.approx(check.correlations["gradcam"], abs=2e-3)


def test_the_lesson_views_code_is_the_handouts(bundle):
    """One home for a step's code: the Lesson view calls step_code with the page's choices."""
    layers = page_layers("resnet18")
    for step in STEPS:
        code = step_code(step, model="resnet18", image="sample_images/chelsea.jpg", size=SIZE, layers=layers,
                         target=None, pretrained=False, num_classes=1000, lang="en", clamp_at=layers[-1], limit=1e-5)
        assert code.setup == step_code(STEPS[0], model="resnet18", image="sample_images/chelsea.jpg", size=SIZE,
                                       layers=layers, target=None, pretrained=False, num_classes=1000,
                                       lang="en").setup


# --- the HTML handout, without a browser (tests/e2e/test_handout.py opens it in Chromium) ----------


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_handout_is_one_file_with_every_step_and_no_request(bundle, lang):
    page = lesson_file(_choices(lang), bundle, "html").decode("utf-8")
    texts = {"en": EN, "zh": ZH}[lang]
    for step in STEPS:
        assert html.escape(texts[f"lesson_{step.id}_title"]) in page
    assert html.escape(texts["lesson_what_q"]) in page
    # nothing to fetch: every src is a data: URL, no link, script, @import or url() to elsewhere
    assert re.findall(r'src="([^"]+)"', page) and all(s.startswith("data:image/") for s in
                                                      re.findall(r'src="([^"]+)"', page))
    assert not re.search(r"<script|<link|@import|url\(|https?://(?!pytorch)", page, re.I)
    assert "@page { size: A4" in page and "@media print" in page
    assert f'<html lang="{"zh-CN" if lang == "zh" else "en"}"' in page
    json.dumps(page)  # plain text


# --- the command line ------------------------------------------------------------------------------


def _main(*argv: object) -> int:
    from vizhooks.__main__ import main

    return main([str(a) for a in argv])


@pytest.mark.slow
@pytest.mark.parametrize(("fmt", "cli_lang"), [("ipynb", None), ("html", "en")])
def test_the_command_writes_the_lesson(tmp_path, capsys, monkeypatch, fmt, cli_lang):
    """A Chinese lesson, and what the command prints in the lesson's language unless VIZHOOKS_LANG names the
    command line's."""
    if cli_lang is None:
        monkeypatch.delenv("VIZHOOKS_LANG", raising=False)
    else:
        monkeypatch.setenv("VIZHOOKS_LANG", cli_lang)
    out = tmp_path / f"lesson.{fmt}"
    code = _main("lesson", "--lang", "zh", "--model", "resnet18", "--photo", PHOTO, "--format", fmt,
                 "--size", SIZE, "--out", out)
    stdout, err = capsys.readouterr()
    assert code == 0, err
    assert stdout.strip() == str(out) and out.stat().st_size > 10_000
    said = (EN if cli_lang == "en" else ZH)["cli_model_line"].format(name="resnet18", device="cpu", status="")
    assert err.startswith(said), err
    text = out.read_text("utf-8")
    assert ZH["lesson_what_title"] in text
    if fmt == "ipynb":
        nbformat.validate(nbformat.reads(text, as_version=4))


NO_STREAMLIT = r'''
import sys

from vizhooks.__main__ import main

args, folder = sys.argv[1:-1], sys.argv[-1]
for fmt in ("ipynb", "html"):
    print("exit", main([*args, "--format", fmt, "--out", f"{folder}/lesson.{fmt}"]))
print("streamlit loaded", "streamlit" in sys.modules)
print("page loaded", sorted(m for m in sys.modules if m.startswith("vizhooks.page")))
'''


@pytest.mark.slow  # a fresh interpreter writes the whole lesson, as a notebook and as a handout
def test_the_lesson_command_never_imports_streamlit_or_the_page(tmp_path):
    """``python -m vizhooks lesson`` is the library's (vizhooks/lesson): it writes the lesson in a fresh
    interpreter, offline (random weights), in both formats one after the other, with Streamlit and
    vizhooks.page never imported."""
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(tmp_path / "torch_home")}
    env.pop("VIZHOOKS_WEIGHTS", None)
    run = run_python(NO_STREAMLIT, args=["lesson", "--photo", PHOTO, "--size", SIZE, "--lang", "zh", tmp_path],
                     cwd=ROOT, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()  # each run also prints the file it wrote
    assert [line for line in lines if line.startswith("exit ")] == ["exit 0", "exit 0"], run.stdout[-2000:]
    assert lines[-2:] == ["streamlit loaded False", "page loaded []"], run.stdout[-2000:]
    # the lesson's language on the command line too, and no font warning about a one-weight Chinese font
    said = ZH["cli_model_line"].format(name="resnet18", device="cpu", status="")
    assert [line for line in run.stderr.splitlines() if line.startswith(said)] and "findfont" not in run.stderr, \
        run.stderr[-3000:]
    for fmt in ("ipynb", "html"):
        assert ZH["lesson_what_title"] in (tmp_path / f"lesson.{fmt}").read_text("utf-8"), fmt


@pytest.mark.parametrize("photo,needle", [("missing.jpg", "There is no file at"), ("text", "not an image"),
                                          ("folder", "is a folder")])
def test_a_bad_photo_exits_2_with_one_sentence(tmp_path, capsys, photo, needle):
    path = tmp_path / photo
    if photo == "text":
        path.write_text("not a picture")
    elif photo == "folder":
        path.mkdir()
    code = _main("lesson", "--photo", path, "--out", tmp_path / "out.ipynb")
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and lines[0].startswith("vizhooks: error: ") and needle in lines[0], err
    assert not (tmp_path / "out.ipynb").exists()


def test_a_chinese_lesson_is_refused_in_chinese_unless_the_command_line_says_otherwise(tmp_path, capsys,
                                                                                       monkeypatch):
    monkeypatch.delenv("VIZHOOKS_LANG", raising=False)
    missing = tmp_path / "missing.jpg"
    expected = {lang: LANGUAGES[lang]["cli_error"].format(message=LANGUAGES[lang]["cli_lesson_no_photo"].format(
        photo=missing)) for lang in ("zh", "zh-Hant", "en")}
    for argv, lang in ((["--lang", "zh"], "zh"), (["--lang=zh-Hant"], "zh-Hant"), ([], "en")):
        assert _main("lesson", *argv, "--photo", missing) == 2
        assert capsys.readouterr().err.strip() == expected[lang], argv
    monkeypatch.setenv("VIZHOOKS_LANG", "en")
    assert _main("lesson", "--lang", "zh", "--photo", missing) == 2
    assert capsys.readouterr().err.strip() == expected["en"]
    monkeypatch.delenv("VIZHOOKS_LANG")
    assert _main("lesson", "--photo", missing, "--lang") == 2  # no value: the command's one sentence
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("vizhooks: error: ") and "--lang" in err[0], err


def test_the_lesson_command_is_listed_and_has_its_help(capsys):
    from vizhooks.__main__ import main

    with pytest.raises(SystemExit):
        main(["lesson", "--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m vizhooks lesson [-h]")
    assert all(flag in out for flag in ("--lang", "--model", "--photo", "--format", "--out"))


def test_prepare_reads_the_page_layers_for_the_model():
    assert page_layers("resnet18") == ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1",
                                       "layer4.0.conv1"]
    assert Path(PHOTO).exists()


@pytest.mark.slow
# ViT-B/32: the same VisionTransformer class and code path as B/16, with 49 tokens instead of 196
# (a quarter of the work)
@pytest.mark.parametrize("model", ["vgg16", "mobilenet_v3_small", "vit_b_32"])
def test_the_lesson_of_other_families_in_chinese(model, kernel, tmp_path):
    """The notebook of VGG-16, MobileNet (depthwise convs) and ViT (blocks as maps; its patch embedding is
    the conv): a valid notebook that runs top to bottom offline in a kernel and prints the page's shapes and
    the page's value of the conv it takes apart. The same families' Chinese HTML handouts (every step's
    title, no address outside the file, every picture loaded offline) are read in Chromium by
    tests/e2e/test_handout.py, which builds them anyway: building them here too was a fifth of this test."""
    bundle = vz.load_model(model)
    choices = LessonChoices(model, PHOTO.read_bytes(), PHOTO.name, SIZE, "zh")
    # lesson_file is prepare, then notebook_bytes, in the lesson's language (lesson_file itself is tested
    # above with resnet18); the preparation is kept for its numbers
    lesson = in_language("zh", lambda: prepare(choices, bundle))
    book = nbformat.reads(in_language("zh", lambda: notebook_bytes(lesson)).decode("utf-8"), as_version=4)
    nbformat.validate(book)
    for cell in book.cells:
        if cell.cell_type == "code":
            ast.parse(cell.source)
    steps = _execute(book, tmp_path, kernel, {k: v.steps.strip("\n") for k, v in
                                                                lesson.codes.items()})
    modules = dict(bundle.model.named_modules())
    hello = [re.match(r"^hook called on (\S+) -> output (\(.*\))$", line) for line in steps["what"]]
    assert [(m.group(1), ast.literal_eval(m.group(2))) for m in hello] == \
        [(type(modules[n.split("#")[0]]).__name__, tuple(a.shape))
         for n, a in vz.capture(bundle.model, lesson.analysis.x, lesson.layers).items()]  # as the hooks see them
    s = lesson.conv  # the page's own account of that value, and the conv's captured map at that place
    captured = vz.capture(bundle.model, lesson.analysis.x, [s.layer])[s.layer][0, s.channel, s.row, s.col]
    by_hand = next(m for line in steps["conv"] if (m := re.match(rf"^by hand {NUMBER} \| from the hook {NUMBER}$",
                                                                   line)))
    assert _close([float(v) for v in by_hand.groups()], [float(captured), s.total]), (model, by_hand.groups())
