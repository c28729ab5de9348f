"""The command line, in-process through main() and once for real as `python -m vizhooks`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from vizhooks import capture, conv_layers, load_image, load_model, preprocess
from vizhooks.cli import main

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "sample_images" / "chelsea.jpg"


def _run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_all_layers_png_and_npz_match_the_library(tmp_path, capsys, resnet18):
    out_dir, npz = tmp_path / "grids", tmp_path / "acts.npz"
    code, out, err = _run(capsys, PHOTO, "--weights", "none", "--layers", "all",
                          "--out", out_dir, "--npz", npz, "--channels", "8")
    assert code == 0, err
    names = [c.name for c in conv_layers(resnet18.model)]
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(f"{n}.png" for n in names)
    assert all(str(out_dir / f"{n}.png") in out for n in names)
    for p in out_dir.iterdir():
        assert Image.open(p).format == "PNG"

    x = preprocess(load_image(PHOTO), 224)
    want = capture(resnet18.model, x, names)
    with np.load(npz) as data:
        assert list(data.files) == ["__input__", *names]
        np.testing.assert_allclose(data["__input__"], x[0].numpy(), atol=1e-6)
        for n in names:
            assert data[n].dtype == np.float32 and data[n].shape == tuple(want[n].shape[1:])
            np.testing.assert_allclose(data[n], want[n][0].numpy(), rtol=1e-5, atol=1e-5)
    assert "Random weights" in err


def test_input_capture_and_size(tmp_path, capsys, resnet18):
    npz = tmp_path / "in.npz"
    code, _, err = _run(capsys, PHOTO, "--weights", "none", "--layers", "layer1.0.conv2",
                        "--what", "input", "--size", "128", "--out", tmp_path, "--npz", npz)
    assert code == 0, err
    x = preprocess(load_image(PHOTO), 128)
    want = capture(resnet18.model, x, ["layer1.0.conv2"], what="input")["layer1.0.conv2"]
    with np.load(npz) as data:
        assert data["__input__"].shape[1] == 128
        np.testing.assert_allclose(data["layer1.0.conv2"], want[0].numpy(), rtol=1e-5, atol=1e-5)


def test_default_layers(tmp_path, capsys):
    code, out, _ = _run(capsys, PHOTO, "--weights", "none", "--out", tmp_path)
    assert code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["conv1.png", "layer1.0.conv1.png", "layer2.0.conv1.png", "layer3.0.conv1.png",
         "layer4.0.conv1.png"])


@pytest.mark.parametrize("argv,needle", [
    (["{text}"], "text file"),
    (["{missing}"], "no file"),
    (["{photo}", "--layers", "layer1.0.conv9"], "layer1.0.conv1"),
    (["{photo}", "--size", "5"], "--size"),
    (["{photo}", "--size", "big"], "--size"),
    (["{photo}", "--channels", "0"], "--channels"),
    (["{photo}", "--model", "vgg17"], "vgg16"),
    (["{photo}", "--model", "timm:no_such_net"], "no_such_net"),
    (["{photo}", "--labels", "{text}"], "--weights PATH"),
    (["{photo}", "--weights", "{missing}"], "does not exist"),
    (["{photo}", "--device", "cuda"], "CUDA"),
    (["{photo}", "--cmap", "nope"], "colormap"),
    (["{photo}", "--frobnicate"], "unrecognized"),
    ([], "give an image"),
    (["--download-weights", "vgg17"], "--list-models"),
])
def test_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, needle):
    text = tmp_path / "notes.jpg"
    text.write_text("just some notes, not a photo\n")
    fill = {"text": text, "missing": tmp_path / "nope.jpg", "photo": PHOTO}
    argv = [a.format(**fill) for a in argv] + ["--out", str(tmp_path / "o")]
    if argv[0] != "--out" and not any(a == "--weights" for a in argv):
        argv += ["--weights", "none"]
    code, out, err = _run(capsys, *argv)
    assert code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vizhooks: error:"), err
    assert needle.lower() in lines[0].lower()
    assert not (tmp_path / "o").exists()


def test_failed_download_exits_2(monkeypatch, capsys):
    monkeypatch.delenv("VIZHOOKS_OFFLINE", raising=False)
    monkeypatch.setenv("VIZHOOKS_WEIGHTS_MIRROR", "http://127.0.0.1:9")  # discard port: refused
    code, _, err = _run(capsys, "--download-weights", "resnet18")
    assert code == 2 and "Could not download" in err


def test_list_layers(capsys):
    code, out, _ = _run(capsys, "--list-layers", "--model", "resnet34", "--size", "64")
    assert code == 0
    model = load_model("resnet34", weights="none").model
    blocks = (torchvision.models.resnet.BasicBlock,)
    names = [n for n, m in model.named_modules() if isinstance(m, (torch.nn.Conv2d, *blocks))]
    assert len(names) == len(conv_layers(model)) + 16  # 36 convs, 3 + 4 + 6 + 3 blocks
    rows = [line.split()[0] for line in out.splitlines()[1:-1]]
    assert rows == names
    with torch.no_grad():
        assert "512×2×2" in out  # layer4 at input 64: 64 / 32


def test_real_entry_point(tmp_path):
    env = {**os.environ, "TORCH_HOME": str(tmp_path), "VIZHOOKS_OFFLINE": "1"}
    ok = subprocess.run([sys.executable, "-m", "vizhooks", str(PHOTO), "--layers", "conv1",
                         "--out", str(tmp_path / "o")], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "o" / "conv1.png").is_file()
    assert "VIZHOOKS_OFFLINE" in ok.stderr  # the weights status is printed for the person
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    bad = subprocess.run([sys.executable, "-m", "vizhooks", str(empty)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip() == "vizhooks: error: The file is empty (0 bytes)."


def test_any_torchvision_model_all_convs(tmp_path, capsys):
    code, out, _ = _run(capsys, PHOTO, "--model", "vgg16", "--weights", "none", "--layers", "all",
                        "--size", "64", "--channels", "4", "--out", tmp_path)
    assert code == 0
    import torchvision

    convs = [n for n, m in torchvision.models.vgg16().to("meta").named_modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 13
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.png" for n in convs)


def test_own_checkpoint_and_labels(tmp_path, capsys):
    import torchvision

    model = torchvision.models.resnet18(num_classes=3).eval()
    torch.save(model.state_dict(), tmp_path / "three.pth")
    (tmp_path / "labels.json").write_text('["ant", "bee", "wasp"]')
    code, _, err = _run(capsys, PHOTO, "--weights", tmp_path / "three.pth", "--labels", tmp_path / "labels.json",
                        "--layers", "conv1", "--size", "64", "--out", tmp_path / "o")
    assert code == 0 and "three.pth" in err
    (tmp_path / "labels.json").write_text('["ant", "bee"]')
    code, _, err = _run(capsys, PHOTO, "--weights", tmp_path / "three.pth", "--labels", tmp_path / "labels.json",
                        "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "2 labels" in err and "3 classes" in err
    torch.save(torchvision.models.mobilenet_v2(num_classes=3).state_dict(), tmp_path / "other.pth")
    code, _, err = _run(capsys, PHOTO, "--weights", tmp_path / "other.pth", "--out", tmp_path / "o")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "does not fit resnet18" in err


def test_visualize_writes_the_library_images(tmp_path, capsys):
    import numpy as np
    from PIL import Image

    from vizhooks import visualize_channels

    code, out, err = _run(capsys, "visualize", "--weights", "none", "--layer", "layer1.0.conv1", "--channels", "0",
                          "3", "--size", "32", "--steps", "3", "--out", tmp_path)
    assert code == 0 and "step 3/3" in err
    paths = out.split()
    assert [p.rsplit("/", 1)[1] for p in paths] == ["layer1.0.conv1_0.png", "layer1.0.conv1_3.png"]
    bundle = load_model("resnet18", weights="none", device="cpu")
    expected = visualize_channels(bundle.model, "layer1.0.conv1", [0, 3], size=32, steps=3, mean=bundle.mean,
                                  std=bundle.std)
    for path, image in zip(paths, expected, strict=True):
        assert np.array_equal(np.asarray(Image.open(path).convert("RGB")), np.asarray(image))


@pytest.mark.parametrize("argv,needle", [
    (["--layer", "layer1.0.conv9"], "layer1.0.conv1"),
    (["--layer", "layer1.0.conv1", "--channels", "64"], "64"),
    (["--channels", "1"], "--layer"),
    (["--layer", "conv1", "--size", "4"], "--size"),
])
def test_visualize_bad_input_exits_2_with_one_line(tmp_path, capsys, argv, needle):
    code, _, err = _run(capsys, "visualize", "--weights", "none", "--steps", "1", "--out", tmp_path, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len([x for x in lines if x.startswith("vizhooks: error:")]) == 1 and needle in lines[-1]
