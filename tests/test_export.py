"""A taught model leaves vizhooks (vizhooks.exporting): ONNX Runtime and TorchScript give PyTorch's
logits, the labels file lists the classes, the 10-line programs run on their own (a fresh Python that
never imports vizhooks) and print the class PyTorch picks, and the photos zip is what torchvision's
ImageFolder and `python -m vizhooks teach FOLDER` read back."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn

from tests.helpers import count_hooks, run_cli, shape_photos
from vizhooks.exporting import (
    ExportError,
    export_files,
    folder_name,
    onnx_bytes,
    photos_zip,
    to_onnx,
    to_torchscript,
    torchscript_bytes,
    usage_snippet,
)
from vizhooks.models.images import fit_to_model, to_tensor
from vizhooks.models.registry import ModelBundle
from vizhooks.teaching import teach

SIZE = 64
NAMES = ["圆盘", "square", "triangle"]  # a Chinese name: labels, programs and folders are UTF-8


@pytest.fixture(scope="module")
def photos():
    return dict(zip(NAMES, shape_photos(4, side=SIZE).values(), strict=True))


@pytest.fixture(scope="module")
def taught(resnet18, photos):
    return teach(resnet18, photos, size=SIZE)


@pytest.fixture(scope="module")
def files(taught, tmp_path_factory):
    """Each format exported once, into one folder: {"onnx": Exported, "torchscript": Exported}."""
    folder = tmp_path_factory.mktemp("exported")
    return {"onnx": to_onnx(taught, folder / "my_model.onnx", size=SIZE),
            "torchscript": to_torchscript(taught, folder / "my_model.pt", size=SIZE)}


def batch(n: int = 3, side: int = SIZE) -> torch.Tensor:
    return torch.randn(n, 3, side, side, generator=torch.Generator().manual_seed(0))


def pytorch_logits(taught, x: torch.Tensor) -> np.ndarray:
    with torch.no_grad():
        return taught.bundle.model(x).numpy()


def test_onnx_runtime_gives_pytorchs_logits_for_any_batch(taught, files):
    import onnx
    import onnxruntime

    exported = files["onnx"]
    graph = onnx.load(exported.model)
    assert max(o.version for o in graph.opset_import if o.domain in ("", "ai.onnx")) >= 17
    session = onnxruntime.InferenceSession(str(exported.model), providers=["CPUExecutionProvider"])
    for n in (1, 3):  # the batch size is free
        x = batch(n)
        (ours,) = session.run(None, {"image": x.numpy()})
        assert ours.shape == (n, 3)
        np.testing.assert_allclose(ours, pytorch_logits(taught, x), atol=1e-4, rtol=1e-4)


def test_torchscript_gives_pytorchs_logits_without_vizhooks_modules(taught, files):
    exported = files["torchscript"]
    with pytest.warns(FutureWarning):  # torch.jit.load is deprecated in torch 2.14; it still loads
        loaded = torch.jit.load(str(exported.model))
    assert isinstance(loaded, torch.jit.ScriptModule)
    x = batch(2)
    with torch.no_grad():
        np.testing.assert_allclose(loaded(x).numpy(), pytorch_logits(taught, x), atol=1e-5, rtol=1e-5)


def test_labels_sit_beside_each_file_one_class_a_line(files):
    for exported in files.values():
        assert exported.labels == exported.model.with_suffix(".txt")
        assert exported.labels.read_text(encoding="utf-8").splitlines() == NAMES
    assert export_files("x/m.onnx") == (Path("x/m.onnx"), Path("x/m.txt"), Path("x/m_onnx.py"))
    assert export_files("m.pt")[2] == Path("m_torchscript.py")


def prepared(photo: Image.Image) -> torch.Tensor:
    """The photo as teaching saw it (vizhooks.teaching.features): shorter side to SIZE, centre crop."""
    from vizhooks.models.images import InputSpec

    return to_tensor(fit_to_model(photo, SIZE, InputSpec(fixed_size=SIZE)))


@pytest.mark.slow  # a fresh Python imports torch or onnxruntime
@pytest.mark.parametrize("kind", ["onnx", "torchscript"])
def test_the_ten_line_program_runs_alone_and_prints_pytorchs_answer(taught, files, photos, kind):
    exported = files[kind]
    tmp_path = exported.program.parent
    assert len(exported.snippet.splitlines()) == 10
    assert exported.program.read_text(encoding="utf-8") == exported.snippet
    assert "vizhooks" not in exported.snippet
    # a photo that is not square, not at SIZE, two classes side by side (the crop decides, and the model
    # is unsure, so the printed percentage tells a wrong preparation apart): the least sure of a few
    tried = []
    for i, (a, b) in enumerate([("圆盘", "square"), ("square", "triangle"), ("triangle", "圆盘"), ("square", "圆盘")]):
        photo = Image.new("RGB", (SIZE * 2 + 30, SIZE + 20), (120, 120, 120))
        photo.paste(photos[a][i], (0, 10))
        photo.paste(photos[b][i], (SIZE + 30, 10))
        photo.save(tmp_path / "photo.jpg", quality=95)
        seen = Image.open(tmp_path / "photo.jpg").convert("RGB")
        tried.append((torch.softmax(torch.from_numpy(pytorch_logits(taught, prepared(seen))), 1)[0], photo))
    probs, photo = min(tried, key=lambda pair: float(pair[0].max()))
    assert float(probs.max()) < 0.97  # else the percentage below would check nothing
    photo.save(tmp_path / "photo.jpg", quality=95)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONSTARTUP")}
    done = subprocess.run([sys.executable, "-I", exported.program.name, "photo.jpg"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    label, percent = done.stdout.split()
    assert label == NAMES[int(probs.argmax())]
    assert abs(float(percent.rstrip("%")) - 100 * float(probs.max())) <= 0.5 + 1e-6


def test_unknown_snippet_kind_says_which_exist(taught):
    with pytest.raises(ValueError, match="onnx, torchscript"):
        usage_snippet(taught, "tflite", "m.tflite", "m.txt")


def test_file_names_must_say_the_format(taught, tmp_path):
    with pytest.raises(ValueError, match=r"\.onnx"):
        to_onnx(taught, tmp_path / "m.pt")
    with pytest.raises(ValueError, match=r"\.pt"):
        to_torchscript(taught, tmp_path / "m.pth")
    assert not list(tmp_path.iterdir())


def test_export_leaves_no_hook_and_the_models_mode_as_it_was():
    bundle = tiny_bundle()
    bundle.model.train()
    onnx_bytes(bundle, 8)
    torchscript_bytes(bundle, 8)
    assert all(m.training for m in bundle.model.modules())
    assert all(p.requires_grad for p in bundle.model.parameters())
    assert count_hooks(bundle.model) == 0


def test_a_tiny_model_exports_to_its_own_logits():
    import onnxruntime

    bundle = tiny_bundle()
    session = onnxruntime.InferenceSession(onnx_bytes(bundle, 8), providers=["CPUExecutionProvider"])
    x = batch(4, 8)
    with torch.no_grad():
        np.testing.assert_allclose(session.run(None, {"image": x.numpy()})[0], bundle.model(x).numpy(), atol=1e-5)


def tiny_bundle() -> ModelBundle:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                          nn.Linear(4, 2))
    return ModelBundle(model=model.eval(), name="tiny", device=torch.device("cpu"), pretrained=False,
                       weights_status="", categories=["a", "b"])


class _NoOnnx(nn.Module):
    """SVD has no ONNX operator: the exporter refuses it."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.svdvals(x.mean(1)).mean(1, keepdim=True).repeat(1, 2)


def test_a_model_the_exporter_refuses_is_one_sentence_and_no_hook(tmp_path):
    bundle = ModelBundle(model=_NoOnnx().eval(), name="planted", device=torch.device("cpu"), pretrained=False,
                         weights_status="", categories=["a", "b"])
    with pytest.raises(ExportError) as caught:
        to_onnx(bundle, tmp_path / "m.onnx", size=8)
    assert caught.value.code == "export_failed" and "\n" not in str(caught.value)
    assert str(caught.value).startswith("planted could not be written as ONNX")
    assert count_hooks(bundle.model) == 0 and not (tmp_path / "m.onnx").exists()


# --- the photos zip -------------------------------------------------------------------------------

def jpeg(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=90)
    return buffer.getvalue()


def test_folder_names_keep_the_class_name_where_a_file_system_allows():
    assert folder_name("圆盘") == "圆盘"
    assert folder_name("cat/dog") == "cat_dog"
    assert folder_name('a<b>:"c"|?*') == "a_b___c____"
    assert folder_name(".hidden") == "_.hidden"
    assert folder_name("...") == "_"


def test_two_classes_that_would_share_a_folder_each_get_their_own():
    data = photos_zip({"cat/dog": [b"x"], "cat_dog": [b"y"], "CAT_DOG": [b"z"]})
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert {n: archive.read(n) for n in archive.namelist() if not n.endswith("/")} == {
            "my_photos/cat_dog/0001.bin": b"x", "my_photos/cat_dog_2/0001.bin": b"y",
            "my_photos/CAT_DOG_3/0001.bin": b"z"}
    with pytest.raises(ValueError, match="no classes"):
        photos_zip({})


def test_photos_zip_is_an_image_folder_torchvision_reads(photos, tmp_path):
    from torchvision.datasets import ImageFolder

    examples = {name: [jpeg(p) for p in group] for name, group in photos.items()}
    examples["square"] = photos["square"]  # PIL images are kept losslessly, as PNG
    data = photos_zip(examples)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        files = [n for n in archive.namelist() if not n.endswith("/")]
        kinds = {"圆盘": "jpg", "square": "png", "triangle": "jpg"}
        assert sorted(files) == sorted(f"my_photos/{name}/{i:04d}.{ext}" for name, ext in kinds.items()
                                       for i in range(1, 5))
        assert archive.read("my_photos/圆盘/0002.jpg") == examples["圆盘"][1]  # the page's bytes, unchanged
        archive.extractall(tmp_path)
    dataset = ImageFolder(str(tmp_path / "my_photos"))
    assert sorted(dataset.classes) == sorted(NAMES)
    assert sorted(np.bincount(dataset.targets).tolist()) == [4, 4, 4]
    square = dataset.class_to_idx["square"]
    first = next(path for path, target in dataset.samples if target == square and path.endswith("0001.png"))
    assert np.array_equal(np.asarray(Image.open(first)), np.asarray(photos["square"][0]))


@pytest.mark.slow
def test_the_zip_teaches_again_from_the_command_line_and_exports(photos, tmp_path, capsys):
    data = photos_zip({name: [jpeg(p) for p in group] for name, group in photos.items()})
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(capsys, "teach", tmp_path / "my_photos", "--model", "resnet18", "--weights", "none",
                                   "--size", SIZE, "--folds", 2, "--out", out / "m.pth", "--onnx", out / "m.onnx",
                                   "--torchscript", out / "m.pt")
    assert code == 0, stderr
    assert {p.name for p in out.iterdir()} == {"m.pth", "m.txt", "m.onnx", "m_onnx.py", "m.pt", "m_torchscript.py"}
    assert (out / "m.txt").read_text(encoding="utf-8").splitlines() == sorted(NAMES)
    assert "m_onnx.py" in stdout and "m_torchscript.py" in stdout


@pytest.mark.parametrize(("flag", "name", "out", "said"), [
    ("--onnx", "m.pt", "m.pth", "must name a .onnx file"),
    ("--torchscript", "m.onnx", "m.pth", "must name a .pt file"),
    ("--torchscript", "m.pth", "m.pth", "must name a .pt file"),
    ("--onnx", "folder", "m.pth", "names the folder"),
    ("--onnx", "a_file/m.onnx", "m.pth", "is a file, not a folder"),
    ("--torchscript", "m.pt", "m.pt", "--torchscript and --out both name"),
])
def test_cli_refuses_a_bad_export_path_in_one_sentence_before_teaching(tmp_path, capsys, flag, name, out, said):
    for kind in ("a", "b"):
        (tmp_path / "photos" / kind).mkdir(parents=True)
    (tmp_path / "folder").mkdir()
    (tmp_path / "a_file").write_text("not a folder")
    code, stdout, stderr = run_cli(capsys, "teach", tmp_path / "photos", "--weights", "none", "--out", tmp_path / out,
                                   flag, tmp_path / name)
    assert code == 2 and "Traceback" not in stderr and stderr.strip().count("\n") == 0
    assert said in stderr
    assert not stdout  # refused before the photos were read or a model loaded


def test_a_fixed_size_model_is_exported_at_its_own_side():
    import onnx

    from vizhooks.models.images import InputSpec

    bundle = tiny_bundle()
    bundle.input = InputSpec(fixed_size=12, interpolation="bicubic")  # as ViT needs 224 whatever the size asked
    graph = onnx.load_from_string(onnx_bytes(bundle, 224))
    dims = graph.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param or d.dim_value for d in dims] == ["batch", 3, 12, 12]
    snippet = usage_snippet(bundle, "onnx", "m.onnx", "m.txt", 224)
    assert "s = 12 / min(image.size)" in snippet and "Image.Resampling.BICUBIC" in snippet
