"""The page through Streamlit's AppTest: real script runs, in this process, random weights."""

from __future__ import annotations

import ast
import importlib
import io
import os
import re
from pathlib import Path

import pytest
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest
from torchvision.models import ResNet18_Weights

from tests.helpers import (
    APP,
    PAGE_FILES,
    ROOT,
    checkpoint_by_hand,
    choose_view,
    clear_results,
    count_hooks,
    layer_headings,
    ok,
    open_page,
    saw,
    shown_view,
    whole_passes,
)
from tests.warm_python import run_python
from vizhooks.page.texts import EN
from vizhooks.page.urlstate import VIEWS

#: The page's own code: app.py and the package's widgets, views and sources (its texts, snippets and
#: the one computing module, vizhooks.analysis, aside).
UI_FILES = [p for p in PAGE_FILES if p.parent.name in ("views", "sources") or p.name in (
    "app.py", "state.py", "sidebar.py", "results.py", "widgets.py", "errors.py", "folders.py")]
TOUR = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]


def _png(mode="RGB", size=(64, 48), color=(200, 30, 30), fmt="PNG", **save) -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, color).save(buf, fmt, **save)
    return buf.getvalue()


def _upload(at: AppTest, name: str, data: bytes, mime: str = "image/png") -> AppTest:
    if at.radio(key="source").value != "upload":
        at.radio(key="source").set_value("upload").run()
    at.file_uploader(key="upload").set_value((name, data, mime))
    return at.run()


@pytest.fixture(scope="module")
def first_visit() -> tuple[AppTest, list[int]]:
    """The default page opened once over cold results, and the whole-network passes that made: the
    tests that only read what a first visitor sees share it (each AppTest run costs seconds)."""
    clear_results()
    with whole_passes() as passes:
        at = open_page()
    return at, passes


@pytest.mark.slow
def test_default_view_shows_input_and_grids(first_visit):
    at, forward_passes = first_visit
    ok(at)
    assert layer_headings(at) == TOUR
    assert saw(at) == "What the model saw: 337 × 224 pixels"  # chelsea.jpg, 451 x 300
    assert len(at.image) >= 1 + len(TOUR)
    captions = " ".join(c.value for c in at.caption)
    assert "16 of 64 channels" in captions and "16 of 512 channels" in captions
    assert any("meaningless" in w.value for w in at.warning)  # random weights are said plainly
    assert any("--download-weights resnet18" in w.value for w in at.warning)
    # where the weights file goes (the torch cache of the fixture's time: a module fixture starts before each
    # test's own empty TORCH_HOME); the account needs no "in English" note
    details = at.sidebar.expander[0]
    head, tail = EN["weights_file_place"].split("{path}")
    [line] = [m.value for m in details.markdown]
    assert line.startswith(head) and line.endswith(f"{os.sep}checkpoints{os.sep}{checkpoint_by_hand().name}{tail}")
    assert not line.startswith(head + str(Path.home() / ".cache")), line  # never the user's own torch cache
    assert not details.caption and "resnet18 could not be loaded" in details.code[0].value
    assert len(forward_passes) == 1
    assert at.query_params["model"] == "resnet18" and at.query_params["sample"] == "chelsea.jpg"


@pytest.mark.slow
def test_display_changes_do_not_run_the_model(forward_passes):
    at = open_page()
    assert len(forward_passes) == 1
    at.selectbox(key="cmap").set_value("magma").run()
    at.selectbox(key="order").set_value("mean").run()
    at.select_slider(key="channels").set_value(64).run()
    at.radio(key="norm").set_value("layer").run()
    at.number_input(key="columns").set_value(4).run()
    choose_view(at, "inspector")
    at.number_input(key="insp_channel").set_value(5).run()
    at.slider(key="insp_alpha").set_value(0.8).run()
    choose_view(at, "maps")
    ok(at)
    assert len(forward_passes) == 1
    captions = " ".join(c.value for c in at.caption)
    assert "all 64 channels" in captions and "64 of 128 channels" in captions
    assert at.query_params["cmap"] == "magma" and at.query_params["channels"] == "64"

    at.multiselect(key="layers").select("layer3.1.conv2").run()
    assert len(forward_passes) == 2
    assert layer_headings(at) == [*TOUR[:4], "layer3.1.conv2", TOUR[4]]  # network order
    at.slider(key="size").set_value(128).run()
    assert len(forward_passes) == 3
    at.selectbox(key="cmap").set_value("gray").run()
    assert len(forward_passes) == 3
    ok(at)


@pytest.mark.slow
def test_switch_model_layers_and_capture_kind(forward_passes):
    at = open_page()
    at.selectbox(key="model").set_value("resnet50").run()
    ok(at)
    assert layer_headings(at) == TOUR
    options = at.multiselect(key="layers").options
    # labels say where a layer is without ResNet words: the 4th of 53 convs, at 56 x 56
    assert next(o for o in options if o.startswith("layer1.0.conv3 ")) == \
        "layer1.0.conv3 · conv 4 of 53 · 56×56 · 64→256, 1x1, stride 1"
    at.multiselect(key="layers").set_value(["layer1.0.conv3"]).run()
    ok(at)
    assert layer_headings(at) == ["layer1.0.conv3"]
    at.selectbox(key="model").set_value("resnet34").run()  # conv3 does not exist in resnet34
    ok(at)
    assert layer_headings(at) == TOUR  # nothing left to keep: the new model starts on its tour
    at.multiselect(key="layers").set_value([]).run()
    assert any("Choose at least one layer" in i.value for i in at.info)
    at.selectbox(key="quick").set_value("res:28x28").run()
    ok(at)
    assert layer_headings(at) == [n for n in at.multiselect(key="layers").value]
    assert len(at.multiselect(key="layers").value) == 9  # resnet34 stage 2: 4 blocks x 2 + shortcut
    at.radio(key="what").set_value("input").run()
    ok(at)
    # layer2.0.conv1's input is layer1's output: 64 channels at 1/4 of 224 x 337
    assert "input 64×56×85" in " ".join(c.value for c in at.caption)


def test_sample_gallery_switch(forward_passes):
    at = open_page()
    at.selectbox(key="sample").set_value("astronaut.jpg").run()
    ok(at)
    assert saw(at) == "What the model saw: 224 × 224 pixels"
    assert at.query_params["sample"] == "astronaut.jpg"


def _exif_rotated_jpeg() -> bytes:
    im = Image.new("RGB", (40, 80), (10, 200, 10))
    exif = im.getexif()
    exif[0x0112] = 6  # rotate 90° clockwise on display
    buf = io.BytesIO()
    im.save(buf, "JPEG", exif=exif)
    return buf.getvalue()


@pytest.mark.parametrize("name,data,expected,source", [
    ("chelsea.jpg", (ROOT / "sample_images" / "chelsea.jpg").read_bytes(), "337 × 224", None),
    ("gray.png", _png("L", (100, 50), 128), "448 × 224", "100 × 50"),
    ("rgba.png", _png("RGBA", (50, 100), (255, 0, 0, 0)), "224 × 448", "50 × 100"),
    ("rotated.jpg", _exif_rotated_jpeg(), "448 × 224", "80 × 40"),  # stored 40 x 80, shown 80 x 40
    ("dot.png", _png("RGB", (1, 1), (200, 0, 0)), "224 × 224", "1 × 1"),
])
def test_good_uploads(name, data, expected, source):
    """Each upload as the model saw it; one enlarged more than 4 times (QA 2026-12-06: a 1 x 1 upload became
    a red square with no word) says how small it was."""
    at = _upload(open_page(), name, data)
    ok(at)
    assert saw(at) == f"What the model saw: {expected} pixels"
    small = [c.value for c in at.caption if "it was enlarged to" in c.value]
    width, height = expected.split(" × ")
    if source is None:
        assert small == []
    else:
        source_w, source_h = source.split(" × ")
        assert small == [":material/warning: " + EN["input_upscaled"].format(source_w=source_w, source_h=source_h,
                                                                             width=width, height=height)]
    assert layer_headings(at) == TOUR
    assert "sample" not in at.query_params  # an upload cannot be shared by link


@pytest.mark.parametrize("name,data,needle", [
    pytest.param("empty.png", b"", "empty", marks=pytest.mark.slow),
    ("notes.png", b"these are my lecture notes\n" * 10, "text file"),
    ("cut.jpg", (ROOT / "sample_images" / "chelsea.jpg").read_bytes()[:6000], "truncated"),
])
def test_bad_uploads_show_an_error_and_the_page_recovers(name, data, needle):
    at = _upload(open_page(), name, data)
    assert not at.exception
    assert len(at.error) == 1 and needle in at.error[0].value.lower()
    assert "Traceback" not in at.error[0].value
    assert at.selectbox(key="model").value == "resnet18"  # the sidebar still works
    at.selectbox(key="cmap").set_value("magma").run()
    assert not at.exception
    at = _upload(at, "good.png", _png())
    ok(at)
    assert saw(at) == "What the model saw: 299 × 224 pixels"


def test_camera_photo():
    at = open_page()
    at.radio(key="source").set_value("camera").run()
    assert any("Take a photo" in i.value for i in at.info)
    at.camera_input(key="camera").set_value(("photo.jpg", _png(size=(640, 480), fmt="JPEG"), "image/jpeg"))
    at.run()
    ok(at)
    assert saw(at) == "What the model saw: 299 × 224 pixels"


def test_shared_link_restores_the_view_and_reports_bad_values(forward_passes):
    at = open_page(model="resnet34", layers="layer2.0.conv1,layer9.conv1", cmap="magma", size="999",
              channels="all", sample="coffee.jpg", bogus="1")
    ok(at)
    assert at.selectbox(key="model").value == "resnet34"
    assert at.multiselect(key="layers").value == ["layer2.0.conv1"]
    assert at.selectbox(key="cmap").value == "magma" and at.slider(key="size").value == 224
    assert layer_headings(at) == ["layer2.0.conv1"]
    notice = " ".join(i.value for i in at.info)
    assert "layers=layer9.conv1" in notice and "size=999" in notice and "bogus=1" in notice
    assert "all 128 channels" in " ".join(c.value for c in at.caption)
    assert saw(at) == "What the model saw: 336 × 224 pixels"  # coffee.jpg, 600 x 400


@pytest.mark.slow
def test_downloads_are_offered(first_visit):
    at, _ = first_visit
    keys = {b.key for b in at.get("download_button")}
    assert {"download_npz", *(f"download_{n}" for n in TOUR)} <= keys


def _runtime_imports(tree: ast.Module) -> set[str]:
    """Modules a file imports when it runs (``if TYPE_CHECKING:`` blocks, for annotations only, aside)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            node.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def test_page_code_stays_thin():
    """The page's own code (app.py and its widgets, views and sources) computes nothing: no torch,
    no pyplot, no hooks of its own. vizhooks.analysis is the page's one computing module."""
    assert len(UI_FILES) >= 20
    for path in UI_FILES:
        source = path.read_text()
        imported = _runtime_imports(ast.parse(source))
        assert not {m for m in imported if m == "torch" or m.startswith("torch.")}, path
        for forbidden in ("pyplot", "register_forward_hook", "register_forward_pre_hook", "register_full_backward"):
            assert forbidden not in source, (path, forbidden)


#: Each repeated page pattern, as the code that writes it: one place each (vizhooks.page.widgets).
PATTERNS = {
    "the two-column layer loop": r"st\.columns\(2\) if len\(",
    "keep the selection valid": r"session_state\.get\([^)]*\) not in ",
    "a progress bar, then gone": r"\.empty\(\)",
    "top-5 bars": r"top_classes\(.*, 5\)",
    "a menu of the classes": r"range\(len\((cats|categories)\)\)",
}


def test_each_page_pattern_is_written_once():
    for what, pattern in PATTERNS.items():
        places = [f"{p.name}:{text[:m.start()].count(chr(10)) + 1}" for p in UI_FILES
                  for text in [p.read_text()] for m in re.finditer(pattern, text)]
        assert len(places) == 1 and places[0].startswith("widgets.py:"), (what, places)


def _view_table(source: str, table: str = "VIEWS") -> dict[str, str]:
    """app.py's ``VIEWS`` table (or another) as written: view name -> the function's expression."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign | ast.Assign):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            if any(getattr(t, "id", None) == table for t in targets) and isinstance(node.value, ast.Dict):
                return {ast.literal_eval(k): ast.unparse(v) for k, v in zip(node.value.keys, node.value.values,
                                                                            strict=True) if k is not None}
    return {}


def test_app_is_the_entry_and_the_registry_covers_every_view():
    """app.py stays an entry (<= 150 lines) with no table of views of its own: every view of the
    menu (urlstate.VIEWS) is declared by its own module in vizhooks.page.views, whose ``VIEW`` is
    in the registry with that module's ``show``; views of one picture and views with their own main
    area (``own_area``) are both there and told apart."""
    from vizhooks.page.views import REGISTRY

    source = Path(APP).read_text()
    assert len(source.splitlines()) <= 150
    assert _view_table(source) == {} and _view_table(source, "OWN_AREA") == {}  # the registry is the one list
    table, own = {v.name for v in REGISTRY if not v.own_area}, {v.name for v in REGISTRY if v.own_area}
    assert own and not own & table
    assert [n for n in VIEWS if n not in table | own] == [] and table | own == set(VIEWS)
    for view in REGISTRY:
        module = importlib.import_module(f"vizhooks.page.views.{view.name}")
        assert module.VIEW is view and view.show is module.show, view.name
        assert callable(module.show)


# --- the hook views ---------------------------------------------------------------------------


@pytest.mark.parametrize("view", ["inspector", pytest.param("gradients", marks=pytest.mark.slow), "gradcam",
                                  pytest.param("backward", marks=pytest.mark.slow), "table", "code"])
def test_every_view_renders(view):
    at = open_page(view=view)
    ok(at)
    assert shown_view(at) == view
    if view in ("gradients", "gradcam"):
        assert layer_headings(at) == TOUR
        assert len(at.image) == 1 + len(TOUR)  # the input picture + one per layer
    if view == "backward":
        table = at.dataframe[0].value
        assert list(table["module"]) == ["fc", "avgpool", "layer4", "layer3", "layer2", "layer1",
                                         "maxpool", "relu", "bn1", "conv1"]
    if view == "table":
        assert len(at.dataframe[0].value) == 67  # every module of resnet18 but the root
        # resnet18's parameter count as torchvision's weights metadata states it
        assert at.metric[0].value == f"{ResNet18_Weights.IMAGENET1K_V1.meta['num_params']:,}"


def _image_urls(at: AppTest) -> list[str]:
    # AppTest's media store names images by a hash of their bytes
    return [i.proto.imgs[0].url for i in at.image][1:]


@pytest.mark.slow
def test_another_class_changes_gradcam_and_reruns_only_backward(forward_passes):
    at = open_page(view="gradcam")
    ok(at)
    before, passes = _image_urls(at), len(forward_passes)
    assert passes == 2  # the feature capture, then the gradient pass
    at.slider(key="cam_alpha").set_value(0.7).run()
    assert len(forward_passes) == passes  # opacity is display only
    changed_alpha = _image_urls(at)
    at.selectbox(key="target").set_value(281).run()  # tabby cat
    ok(at)
    assert len(forward_passes) == passes + 1  # one gradient pass; the feature capture is cached
    after = _image_urls(at)
    assert after != changed_alpha and changed_alpha != before
    assert "tabby" in " ".join(i.proto.imgs[0].caption for i in at.image)
    assert at.query_params["target"] == "281"
    choose_view(at, "gradients")
    assert len(forward_passes) == passes + 1  # same class, same layers: cached
    at.selectbox(key="cmap").set_value("magma").run()
    assert len(forward_passes) == passes + 1


@pytest.mark.slow
def test_code_snippet_runs_as_written_and_matches_the_page(tmp_path):
    at = open_page()
    shapes = {}
    for cap in at.caption:
        if " · output " in cap.value:
            shapes[len(shapes)] = cap.value.split(" · output ")[1].split(" · ")[0]
    # captions and headings come in the same (element tree) order
    heads = [s.value for s in at.subheader if s.value in TOUR]
    page_shapes = dict(zip(heads, shapes.values(), strict=True))
    choose_view(at, "code")
    ok(at)
    code = next(c.value for c in at.code if c.language == "python")
    assert "vizhooks" not in code and "register_forward_hook" in code
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = {**os.environ, "TORCH_HOME": str(tmp_path)}
    run = run_python(path=script, cwd=ROOT, env=env)
    assert run.returncode == 0, run.stderr
    printed = {}
    for line in run.stdout.splitlines():
        name, shape = line.split(" ", 1)
        printed[name] = "×".join(shape.strip("()").split(", ")[1:])
    assert printed == page_shapes


# --- faults and limits (a class on one server) ----------------------------------------------------


@pytest.mark.slow
def test_failure_inside_the_forward_pass_is_one_message(monkeypatch, fresh_results):
    import vizhooks.analysis as va
    from vizhooks.hooks.capture import capture_with_output

    seen = []

    def broken_run(model, *args, **kwargs):
        seen.append(model)

        def boom(*a, **k):
            raise RuntimeError("simulated failure in layer3")

        model.layer3.forward = boom
        try:
            return capture_with_output(model, *args, **kwargs)
        finally:
            del model.layer3.forward

    monkeypatch.setattr(va, "capture_with_output", broken_run)
    at = open_page()
    assert not at.exception
    assert len(at.error) == 1 and "Something went wrong" in at.error[0].value
    assert "Traceback" not in at.error[0].value and "layer3" not in at.error[0].value
    assert seen and count_hooks(seen[0]) == 0
    monkeypatch.undo()
    at.slider(key="size").set_value(160).run()  # the same session goes on
    ok(at)
    other = open_page()  # and so does another session on the shared model
    ok(other)
    assert layer_headings(other) == TOUR


@pytest.mark.slow
def test_simulated_cuda_out_of_memory(monkeypatch, fresh_results):
    import vizhooks.analysis as va

    def oom(*a, **k):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")

    monkeypatch.setattr(va, "capture_with_output", oom)
    at = open_page()
    assert not at.exception
    assert len(at.error) == 1 and "ran out of memory" in at.error[0].value
    monkeypatch.undo()
    at.slider(key="size").set_value(160).run()
    ok(at)


@pytest.mark.slow
def test_failure_in_backward_leaves_the_model_clean(monkeypatch, fresh_results):
    import vizhooks.hooks.gradients as vg
    from vizhooks.page import results

    models = []
    real_grad = torch.autograd.grad

    def failing_grad(*a, **k):
        raise RuntimeError("simulated failure during backward")

    real_pass = vg.gradient_pass

    def spy(model, *a, **k):
        models.append(model)
        return real_pass(model, *a, **k)

    monkeypatch.setattr(results, "gradient_pass", spy)  # the page's own reference to it
    monkeypatch.setattr(vg.torch.autograd, "grad", failing_grad)
    at = open_page(view="gradcam")
    assert not at.exception and "Something went wrong" in at.error[0].value
    model = models[0]
    assert count_hooks(model) == 0 and not model.training
    assert all(p.requires_grad and p.grad is None for p in model.parameters())
    monkeypatch.setattr(vg.torch.autograd, "grad", real_grad)
    choose_view(at, "maps")
    ok(at)
    choose_view(at, "gradcam")
    ok(at)


@pytest.mark.slow
def test_capture_over_the_memory_budget_is_refused_with_a_sentence(forward_passes):
    from vizhooks.models.layers import architecture_convs

    names = ",".join(c.name for c in architecture_convs("resnet152"))
    at = open_page(model="resnet152", size="512", layers=names, channels="all")
    assert not at.exception and not at.error
    assert any("this server allows 600 MB" in w.value for w in at.warning)
    assert len(forward_passes) == 0  # refused before the network ran
    at.multiselect(key="layers").set_value(["conv1"]).run()
    ok(at)
    assert len(forward_passes) == 1


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_streamlits_english_words_are_left_to_the_english_page(lang):
    """QA 2026-12-06: every multiselect of the Chinese page opened on Streamlit's English "Select all" row, and
    a number box typed out of its range said only "Press Enter to apply" (Streamlit's own texts, in no
    catalogue); the Chinese page lists the options alone and hides that hint."""
    at = open_page(view="explain", lang=lang, size="128", layers="conv1")
    ok(at)
    menus = [at.multiselect(key=k).proto.select_all for k in ("layers", "ex_methods", "ex_layers")]
    assert menus == ([1000] * 3 if lang == "en" else [0] * 3), menus
    hidden = [h for h in at.get("html") if '[data-testid="InputInstructions"] { display: none' in h.proto.body]
    assert len(hidden) == (0 if lang == "en" else 1)
