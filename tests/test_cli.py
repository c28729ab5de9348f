"""The command line, in-process through main() and once for real as `python -m vizhooks`."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
import torchvision
from PIL import Image

from tests.helpers import run_cli as _run
from tests.warm_python import run_python
from vizhooks import capture, load_image, load_model
from vizhooks.__main__ import main  # every command, the page's lesson included
from vizhooks.models.images import preprocess
from vizhooks.models.layers import conv_layers

ROOT = Path(__file__).resolve().parents[1]
PHOTO = ROOT / "sample_images" / "chelsea.jpg"


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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
    ([], "Give an image"),
    (["--download-weights", "vgg17"], "--list-models"),
    (["explian"], "did you mean `python -m vizhooks explain`?"),
    (["exemplar", "{missing}"], "did you mean `python -m vizhooks exemplars`?"),
    (["lesson.jpg"], "There is no file at lesson.jpg."),  # a missing photo named like a command is a photo
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


def test_a_file_named_like_a_command_is_the_photo_not_a_misspelling(tmp_path, capsys, monkeypatch):
    """Only a first word that names no file is taken for a mistyped command: a file `explian` is the maps form's
    photo (here a text file, refused as one)."""
    monkeypatch.chdir(tmp_path)
    Path("explian").write_text("notes\n")
    code, out, err = _run(capsys, "explian", "--weights", "none", "--out", str(tmp_path / "o"))
    assert code == 2 and "text file" in err and "did you mean" not in err


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


@pytest.mark.slow
def test_real_entry_point(tmp_path, monkeypatch, capsys):
    """``python -m vizhooks`` in a process of its own writes the maps; the module run as ``__main__`` (here,
    in this process) exits with status 2 and one sentence on a bad file."""
    import runpy

    env = {**os.environ, "TORCH_HOME": str(tmp_path), "VIZHOOKS_OFFLINE": "1"}
    ok = run_python(module="vizhooks", args=[PHOTO, "--layers", "conv1", "--out", tmp_path / "o"], cwd=ROOT, env=env)
    assert ok.returncode == 0, ok.stderr
    assert (tmp_path / "o" / "conv1.png").is_file()
    assert "VIZHOOKS_OFFLINE" in ok.stderr  # the weights status is printed for the person
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    monkeypatch.setattr(sys, "argv", ["vizhooks", str(empty)])
    monkeypatch.delitem(sys.modules, "vizhooks.__main__", raising=False)  # run as __main__, as `-m` does
    with pytest.raises(SystemExit) as bad:
        runpy.run_module("vizhooks", run_name="__main__")
    err = capsys.readouterr().err
    assert bad.value.code == 2 and "Traceback" not in err
    assert err.strip() == "vizhooks: error: The file is empty (0 bytes)."


@pytest.mark.slow
def test_any_torchvision_model_all_convs(tmp_path, capsys):
    code, out, _ = _run(capsys, PHOTO, "--model", "vgg16", "--weights", "none", "--layers", "all",
                        "--size", "64", "--channels", "4", "--out", tmp_path)
    assert code == 0
    import torchvision

    convs = [n for n, m in torchvision.models.vgg16().to("meta").named_modules() if isinstance(m, torch.nn.Conv2d)]
    assert len(convs) == 13
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{n}.png" for n in convs)


@pytest.mark.slow
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


@pytest.mark.slow
def test_visualize_writes_the_library_images(tmp_path, capsys):
    import numpy as np
    from PIL import Image

    from vizhooks.atlas import visualize_channels

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


# --- subcommands (issue 17, item 9) -----------------------------------------------------------------

#: What `--help` must list, written out here rather than read from vizhooks.cli.COMMANDS: one line each.
COMMAND_LINES = {
    "maps": "feature-map grids of a photo, or videos of a clip (default)",
    "exemplars": "the images of a folder that excite each channel most",
    "visualize": "an image optimised to excite each channel asked",
    "teach": "teach a model your own classes from a folder",
    "explain": "explanation methods scored on a folder of photos",
    "audit": "a labelled folder: mistakes, maps and shortcuts",
    "concepts": "what a layer has learned over a folder, as concepts",
    "lesson": "the page's lesson for one photo: a notebook or HTML",
}


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    out, err = capsys.readouterr()
    assert info.value.code == 0 and err == ""
    return out


def test_help_lists_every_command_with_its_one_line(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")  # argparse wraps to the terminal: a narrow one must still fit
    for flag in ("--help", "-h"):
        out = _help(capsys, flag)
        assert " ".join(out.split("\n\n")[0].split()) == (
            "usage: python -m vizhooks [-h] [--version] "
            "{maps,exemplars,visualize,teach,explain,audit,concepts,lesson} ...")
        listed = {m.group(1): m.group(2) for m in re.finditer(r"^    (\w+) +(.+)$", out, re.M)}
        assert listed == COMMAND_LINES
        assert "Without a command, the arguments are those of `maps`" in out
        assert max(len(line) for line in out.splitlines() if re.match(r"^    (\w+) +", line)) <= 80
        examples = out.split("Examples (one per command):\n")[1]
        shown = {m.group(1) for m in re.finditer(r"^  python -m vizhooks (\w+) ", examples, re.M)}
        assert shown | {"maps"} == set(COMMAND_LINES)  # every command has an example; maps is the default


@pytest.mark.parametrize("command,has,lacks", [
    ("maps", ["--layers", "--npz", "--frames", "--list-layers", "image"], ["--top", "--steps"]),
    ("exemplars", ["--top", "--engine", "--checkpoint-every", "folder"], ["--npz", "--steps"]),
    ("visualize", ["--layer", "--steps", "--seed"], ["--npz", "--top"]),
])
def test_each_command_has_its_own_help(capsys, command, has, lacks):
    out = _help(capsys, command, "--help")
    assert out.startswith(f"usage: python -m vizhooks {command} [-h]")
    assert all(flag in out for flag in has), out
    assert not any(flag in out for flag in lacks), out
    assert _help(capsys, command, "-h") == out


@pytest.mark.slow
def test_maps_is_the_default_command(tmp_path, capsys):
    # A file (or a maps option) first is the maps form: the same grids as `maps ...`, byte for byte.
    common = ["--weights", "none", "--layers", "conv1", "--size", "64", "--channels", "4"]
    code, bare, err = _run(capsys, PHOTO, *common, "--out", tmp_path / "bare")
    assert code == 0, err
    code, named, err = _run(capsys, "maps", PHOTO, *common, "--out", tmp_path / "named")
    assert code == 0, err
    assert bare.split()[0].endswith("bare/conv1.png") and named.split()[0].endswith("named/conv1.png")
    assert (tmp_path / "bare" / "conv1.png").read_bytes() == (tmp_path / "named" / "conv1.png").read_bytes()
    code, out, _ = _run(capsys, "--list-layers", "--model", "resnet18", "--size", "64")
    code2, out2, _ = _run(capsys, "maps", "--list-layers", "--model", "resnet18", "--size", "64")
    assert code == code2 == 0 and out == out2 and "layer4.1.conv2" in out
    assert _help(capsys, "--layers", "conv1", "--help") == _help(capsys, "maps", "--help")


def test_version_at_the_top_and_in_maps(capsys):
    from vizhooks import __version__

    assert _help(capsys, "--version") == f"vizhooks {__version__}\n"
    assert _help(capsys, "maps", "--version") == f"vizhooks {__version__}\n"


@pytest.mark.parametrize("argv,needle", [
    (["maps"], "Give an image"),
    (["maps", "{missing}"], "no file"),
    (["maps", "{photo}", "--frobnicate"], "--frobnicate (see `python -m vizhooks maps --help`)"),
    (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["maps", "{photo}", "--layers", "layer1.0.conv9"], "layer1.0.conv1"),
    (["exemplars"], "the following arguments are required: folder (see `python -m vizhooks exemplars --help`)"),
    (["exemplars", "{missing}"], "There is no folder"),
    (["exemplars", "{tmp}", "--frobnicate"], "unrecognized arguments: --frobnicate"),
    (["visualize"], "the following arguments are required: --layer (see `python -m vizhooks visualize --help`)"),
    (["visualize", "--layer", "conv1", "--steps", "-1"], "--steps must be from 0 to 10000, not -1"),
])
def test_every_command_reports_bad_input_in_one_sentence(tmp_path, capsys, argv, needle):
    fill = {"missing": tmp_path / "nope.jpg", "photo": PHOTO, "tmp": tmp_path}
    code, out, err = _run(capsys, *[a.format(**fill) for a in argv], "--weights", "none", "--out", tmp_path / "o")
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("vizhooks: error: "), err
    assert needle in lines[0]
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_every_example_in_the_top_level_help_parses():
    """An example that names an option the command lost would teach a newcomer a command that fails."""
    import shlex

    from vizhooks import cli
    from vizhooks.__main__ import ALL_COMMANDS

    for command in ALL_COMMANDS:
        assert command.example, command.name
        cli.command_parser(command.name, ALL_COMMANDS).parse_args(shlex.split(command.example))


def test_an_output_that_cannot_be_written_is_one_line_naming_the_path_asked(tmp_path, capsys):
    """A file where the --out folder should be, an --npz in a folder no file can be made in (/proc, even for
    root), a folder where a grid should go: exit 1 (the operating system refused, not the arguments' form), one
    line that names the path the user gave (not the temporary file vizhooks writes through); the grids already
    written stay."""
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    code, out, err = _run(capsys, PHOTO, "--weights", "none", "--layers", "conv1", "--out", blocker / "maps")
    assert (code, out) == (1, "") and err.endswith(f"\nvizhooks: error: {blocker / 'maps'}: Not a directory\n"), err
    code, out, err = _run(capsys, PHOTO, "--weights", "none", "--layers", "conv1", "--npz", "/proc/vizhooks.npz",
                          "--out", tmp_path / "o")
    assert code == 1 and err.endswith("\nvizhooks: error: /proc/vizhooks.npz: No such file or directory\n"), err
    assert out == f"{tmp_path / 'o' / 'conv1.png'}\n" and (tmp_path / "o" / "conv1.png").is_file()
    (tmp_path / "d" / "conv1.png").mkdir(parents=True)  # a folder where the grid should go: os.replace refuses
    code, out, err = _run(capsys, PHOTO, "--weights", "none", "--layers", "conv1", "--out", tmp_path / "d")
    assert code == 1 and err.endswith(f"\nvizhooks: error: {tmp_path / 'd' / 'conv1.png'}: Is a directory\n"), err
    assert [p.name for p in (tmp_path / "d").iterdir()] == ["conv1.png"]  # no temporary file left


@pytest.mark.slow
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_visualize_a_vit_at_its_own_size_and_says_so(tmp_path, capsys, monkeypatch, lang):
    """QA 2026-12-06: `visualize` on a ViT at the default --size (128) was a 45-line traceback (torchvision's
    "Wrong image height! Expected 224"). A model of one input size makes its pictures at that size, in a
    sentence of the language."""
    from PIL import Image

    from vizhooks.i18n import set_language, t
    from vizhooks.models.registry import input_spec

    monkeypatch.setenv("VIZHOOKS_LANG", lang)
    side = input_spec("vit_b_32").fixed_size
    assert side == 224  # torchvision's ViT: one size
    code, out, err = _run(capsys, "visualize", "--model", "vit_b_32", "--weights", "none", "--layer",
                          "encoder.layers.encoder_layer_0", "--channels", "0", "--steps", "1", "--out", tmp_path)
    assert code == 0 and "Traceback" not in err, err
    set_language(lang)
    assert t("cli_visualize_size_used", name="vit_b_32", side=side, asked=128) in err.splitlines()
    assert Image.open(out.split()[0]).size == (side, side)


@pytest.mark.parametrize(("command", "heavy", "argv"), [
    ("visualize", "vizhooks.atlas.visualize_channels", ["--layer", "conv1", "--steps", "1"]),
    ("exemplars", "vizhooks.atlas.build_atlas", ["{photos}", "--layers", "conv1", "--workers", "0"]),
    ("concepts", "vizhooks.interpret.concepts.discover", ["{photos}", "--layer", "layer1"]),
])
def test_an_out_that_cannot_be_a_folder_is_said_before_the_long_work(tmp_path, capsys, monkeypatch, command, heavy,
                                                                      argv):
    """QA 2026-12-06: visualize's optimisation, concepts' activations and a whole exemplars scan ran before an
    --out that is a file was refused. It is the system's refusal of that path (exit 1, one line) first."""
    module, name = heavy.rsplit(".", 1)
    monkeypatch.setattr(module + "." + name, lambda *a, **k: pytest.fail(f"{name} ran"))
    photos = tmp_path / "photos"
    photos.mkdir()
    Image.open(ROOT / "sample_images" / "chelsea.jpg").save(photos / "a.jpg")
    taken = tmp_path / "taken.png"
    taken.write_bytes(b"a file of the user's")
    code, out, err = _run(capsys, command, *[a.format(photos=photos) for a in argv], "--weights", "none", "--size",
                          "64", "--out", taken)
    assert code == 1 and out == "" and "Traceback" not in err, err
    assert err.strip().splitlines()[-1].startswith(f"vizhooks: error: {taken}: "), err
    code, _, err = _run(capsys, command, *[a.format(photos=photos) for a in argv], "--weights", "none", "--size",
                        "64", "--out", taken / "under")  # under a file: no folder can be made there
    assert code == 1 and err.strip().splitlines()[-1].startswith(f"vizhooks: error: {taken / 'under'}: "), err
    assert taken.read_bytes() == b"a file of the user's"


def test_visualize_below_a_models_least_size_says_at_least(tmp_path, capsys, monkeypatch):
    """Review 2026-12-06: a --size under the model's least size is raised to it, which is not "needs N x N"
    (a ViT's one size): the line says "at least"."""
    from PIL import Image

    from vizhooks.i18n import t
    from vizhooks.models.registry import input_spec

    least = input_spec("inception_v3").min_size
    assert not input_spec("inception_v3").fixed_size and least > 64
    monkeypatch.setattr("vizhooks.atlas.visualize_channels",
                        lambda model, layer, channels, size, **k: [Image.new("RGB", (size, size))] * len(channels))
    code, out, err = _run(capsys, "visualize", "--model", "inception_v3", "--weights", "none", "--layer",
                          "Conv2d_1a_3x3", "--size", "64", "--steps", "1", "--out", tmp_path)
    assert code == 0, err
    assert t("cli_visualize_size_least", name="inception_v3", side=least, asked=64) in err.splitlines()
    assert Image.open(out.split()[0]).size == (least, least)
