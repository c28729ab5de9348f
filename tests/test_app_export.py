"""The Teach view's way out (vizhooks.exporting on the page), through AppTest in both languages: the
photos zip once a class has photos, then after training the ONNX and TorchScript downloads with
their programs shown. What a click would download is what Streamlit's deferred download calls: the
tests catch those callables as the page registers them and check what they build (ONNX Runtime and
TorchScript give the page's own model's logits; the zip is an ImageFolder of the session's photos)."""

from __future__ import annotations

import io
import zipfile

import numpy as np
import pytest
import torch
from streamlit.testing.v1 import AppTest

from tests.helpers import ok, open_page
from vizhooks.exporting import usage_snippet
from vizhooks.page.results import get_bundle
from vizhooks.page.texts import EN, ZH

CLASSES = {"cat": ("chelsea.jpg", "coffee.jpg"), "太空": ("astronaut.jpg", "rocket.jpg")}
FILE, LABELS = "resnet18_my_classes", "resnet18_my_classes.txt"


@pytest.fixture
def deferred(monkeypatch):
    """Each deferred download the page offers as it runs: {file name: the callable a click runs}."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    seen: dict[str, object] = {}
    original = MediaFileManager.add_deferred

    def add(self, data_callable, mimetype, coordinates, file_name=None, **kwargs):
        seen[file_name] = data_callable
        return original(self, data_callable, mimetype, coordinates, file_name, **kwargs)

    monkeypatch.setattr(MediaFileManager, "add_deferred", add)
    return seen


def _filled(lang: str) -> AppTest:
    at = open_page(view="teach", lang=lang, size="128")
    at.segmented_control(key="teach_n").set_value(len(CLASSES)).run()
    for i, name in enumerate(CLASSES):
        at.text_input(key=f"teach_name_{i}").set_value(name).run()
    for i, photos in enumerate(CLASSES.values()):
        at.radio(key="teach_into").set_value(i).run()
        for photo in photos:
            at.selectbox(key="teach_sample_pick").set_value(photo).run()
            at.button(key="teach_add_sample").click().run()
    return at


def _buttons(at: AppTest) -> dict[str, str]:
    """{key: label} of the download buttons shown."""
    return {b.proto.id.rsplit("-", 1)[-1]: b.proto.label for b in at.get("download_button")}


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_photos_zip_then_onnx_and_torchscript_with_their_programs(lang, deferred, tmp_path):
    import onnxruntime
    from torchvision.datasets import ImageFolder

    texts = EN if lang == "en" else ZH
    at = _filled(lang)
    ok(at)
    assert _buttons(at) == {"export_photos": texts["export_photos"]}  # nothing to export before training
    data = deferred["my_photos.zip"]()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    folder = ImageFolder(str(tmp_path / "my_photos"))
    assert sorted(folder.classes) == sorted(CLASSES) and sorted(np.bincount(folder.targets)) == [2, 2]
    kept = at.session_state["_teach_photos"]
    for c, name in enumerate(CLASSES):  # the session's photos, byte for byte, in the order added
        files = sorted(path for path, target in folder.samples if folder.classes[target] == name)
        assert [open(f, "rb").read() for f in files] == [jpeg for _, jpeg in kept[c]]

    at.button(key="teach_train").click().run()
    ok(at)
    buttons = _buttons(at)
    assert buttons["export_onnx"] == texts["export_download_onnx"]
    assert buttons["export_torchscript"] == texts["export_download_torchscript"]
    assert buttons["teach_download_labels"] == texts["teach_download_labels"]
    assert [tab.label for tab in at.tabs] == [texts["export_tab_onnx"], texts["export_tab_torchscript"]]
    name = at.session_state["model"]
    bundle = get_bundle(name)
    shown = [c.value.rstrip("\n") for c in at.code]  # st.code drops the final newline
    for kind, suffix in (("onnx", ".onnx"), ("torchscript", ".pt")):
        assert usage_snippet(bundle, kind, FILE + suffix, LABELS).rstrip("\n") in shown
        program = f"{FILE}_{kind}.py"
        needs = "numpy, pillow, onnxruntime" if kind == "onnx" else "numpy, pillow, torch"
        said = texts["export_program_help"].format(program=program, file=FILE + suffix, labels=LABELS, needs=needs)
        assert said in [c.value for c in at.caption]

    # what the two buttons download: the page's own model, at the size it was taught at (224)
    x = torch.randn(2, 3, 224, 224, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = bundle.model(x).numpy()
    session = onnxruntime.InferenceSession(deferred[FILE + ".onnx"](), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(session.run(None, {"image": x.numpy()})[0], expected, atol=1e-4, rtol=1e-4)
    with pytest.warns(FutureWarning):  # torch.jit.load is deprecated in torch 2.14; it still loads
        scripted = torch.jit.load(io.BytesIO(deferred[FILE + ".pt"]()))
    with torch.no_grad():
        np.testing.assert_allclose(scripted(x).numpy(), expected, atol=1e-5, rtol=1e-5)


def test_the_photos_zip_comes_with_the_first_photo(deferred):
    at = open_page(view="teach", lang="zh")
    ok(at)
    assert "export_photos" not in _buttons(at)  # no photo, nothing to download
    at.selectbox(key="teach_sample_pick").set_value("chelsea.jpg").run()
    at.button(key="teach_add_sample").click().run()
    ok(at)
    (button,) = [b for b in at.get("download_button") if b.proto.id.endswith("-export_photos")]
    assert (button.proto.label, button.proto.help) == (ZH["export_photos"], ZH["export_photos_help"])
    unnamed = ZH["teach_unnamed"].format(n=1)  # a class without a name yet is zipped under the name shown
    with zipfile.ZipFile(io.BytesIO(deferred["my_photos.zip"]())) as archive:
        assert [n for n in archive.namelist() if not n.endswith("/")] == [f"my_photos/{unnamed}/0001.jpg"]
        assert archive.read(f"my_photos/{unnamed}/0001.jpg") == at.session_state["_teach_photos"][0][0][1]
