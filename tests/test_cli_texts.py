"""The command line's texts come from the catalogue (vizhooks/locale, keys ``cli_*``): in English
word for word as they were before the catalogue held them, in Chinese with no English sentence left
(``VIZHOOKS_LANG=zh python -m vizhooks --help``), and every argument's help a catalogue text."""

from __future__ import annotations

import pytest

from vizhooks.__main__ import main

#: `--help` at 100 columns as the command line printed it before its texts moved into the catalogue
#: (vizhooks 37b363a), written out here: the English must stay word for word.
BEFORE = {
    "": (
    'usage: python -m vizhooks [-h] [--version]\n'
    '                          {maps,exemplars,visualize,teach,explain,audit,concepts,lesson} ...\n'
    '\n'
    'Look inside image models with PyTorch hooks: feature maps, dataset exemplars, feature visualization,\n'
    'teaching a model your own classes, explanation methods scored, and the lesson to take home.\n'
    'Without a command, the arguments are those of `maps`.\n'
    '\n'
    'options:\n'
    '  -h, --help    show this help message and exit\n'
    "  --version     show program's version number and exit\n"
    '\n'
    'commands:\n'
    '  {maps,exemplars,visualize,teach,explain,audit,concepts,lesson}\n'
    '    maps        feature-map grids of a photo, or videos of a clip (default)\n'
    '    exemplars   the images of a folder that excite each channel most\n'
    '    visualize   an image optimised to excite each channel asked\n'
    '    teach       teach a model your own classes from a folder\n'
    '    explain     explanation methods scored on a folder of photos\n'
    '    audit       a labelled folder: mistakes, maps and shortcuts\n'
    '    concepts    what a layer has learned over a folder, as concepts\n'
    "    lesson      the page's lesson for one photo: a notebook or HTML\n"
    '\n'
    'Examples (one per command):\n'
    '  python -m vizhooks sample_images/chelsea.jpg --layers conv1 --out out/   (maps, the default)\n'
    '  python -m vizhooks exemplars photos/ --layers layer3.0.conv1 --top 9 --out atlas/\n'
    '  python -m vizhooks visualize --layer layer3.0.conv1 --channels 0 1 2 --out vis/\n'
    '  python -m vizhooks teach my_photos/ --model resnet18 --out my_model.pth\n'
    '  python -m vizhooks explain photos/ --methods gradcam,saliency --out scores.csv\n'
    '  python -m vizhooks audit photos/ --model resnet18 --out audit/\n'
    '  python -m vizhooks concepts photos/ --layer layer3 --k 10 --target 281 --out concepts/\n'
    '  python -m vizhooks lesson --photo sample_images/chelsea.jpg --format html --out lesson.html\n'
    '  python -m vizhooks --list-models   |   --list-layers --model vgg16   |   --download-weights vgg16\n'
    'Each command has its own help: python -m vizhooks COMMAND --help\n'
),
    "teach": (
    'usage: python -m vizhooks teach [-h] [--model NAME] [--weights WEIGHTS] [--out FILE] [--onnx FILE]\n'
    '                                [--torchscript FILE] [--size SIZE] [--folds FOLDS] [--seed SEED]\n'
    '                                [--device DEVICE]\n'
    '                                FOLDER\n'
    '\n'
    "Teach a model your own classes: a new last layer fitted on the frozen network's features.\n"
    "FOLDER holds one sub-folder per class (its name is the class name), as torchvision's ImageFolder\n"
    'reads it. The result is measured by stratified k-fold cross-validation (every photo held out once;\n'
    'leave-one-out when a class has fewer than 10); the checkpoint and a labels file are written\n'
    'for load_model(..., weights=, labels=). --onnx and --torchscript also write the model for tools\n'
    'without vizhooks, each with its labels and a 10-line program that runs it on a photo.\n'
    '\n'
    'positional arguments:\n'
    '  FOLDER              a folder with one sub-folder of photos per class\n'
    '\n'
    'options:\n'
    '  -h, --help          show this help message and exit\n'
    '  --model NAME        the backbone (default: resnet18)\n'
    '  --weights WEIGHTS   auto | imagenet | none | PATH (default: auto)\n'
    '  --out FILE          the checkpoint to write; the labels go beside it as .txt (default:\n'
    '                      my_model.pth)\n'
    '  --onnx FILE         also write the taught model as ONNX, with its labels (.txt) and an ONNX\n'
    '                      Runtime program (_onnx.py) beside it\n'
    '  --torchscript FILE  also write it as TorchScript (.pt), with its labels and a PyTorch program\n'
    '                      (_torchscript.py)\n'
    '  --size SIZE         the square side photos are seen at (default: 224)\n'
    '  --folds FOLDS       folds of the cross-validation that measures the result (default: 5)\n'
    '  --seed SEED         random seed (default: 0)\n'
    '  --device DEVICE     auto, cpu, cuda, cuda:N or mps\n'
    '\n'
    'Examples:\n'
    '  python -m vizhooks teach my_photos/ --model resnet18 --out my_model.pth\n'
    '  python -m vizhooks teach my_photos/ --onnx my_model.onnx --torchscript my_model.pt\n'
    '  python -c "import vizhooks; vizhooks.load_model(\'resnet18\', weights=\'my_model.pth\', '
    'labels=\'my_model.txt\')"\n'
),
    "visualize": (
    'usage: python -m vizhooks visualize [-h] [--model NAME] [--weights WEIGHTS] --layer NAME\n'
    '                                    [--channels N [N ...]] [--size SIZE] [--steps STEPS]\n'
    '                                    [--seed SEED] [--out DIR] [--device DEVICE]\n'
    '\n'
    'Feature visualization: optimise an image so that one channel of one layer responds as\n'
    'strongly as possible, for each channel asked (all in one batch), and write one PNG per channel.\n'
    '\n'
    'options:\n'
    '  -h, --help            show this help message and exit\n'
    '  --model NAME          model name, as for the main command\n'
    '  --weights WEIGHTS     auto | imagenet | none | PATH (default: auto)\n'
    '  --layer NAME          the module whose channels to visualize\n'
    '  --channels N [N ...]  channel numbers (default: 0)\n'
    '  --size SIZE           image side (default: 128)\n'
    '  --steps STEPS         optimisation steps (default: 256)\n'
    '  --seed SEED           random seed (default: 0)\n'
    '  --out DIR             folder for the PNGs (default: vizhooks-out)\n'
    '  --device DEVICE       auto, cpu, cuda, cuda:N or mps\n'
    '\n'
    'Examples:\n'
    '  python -m vizhooks visualize --layer layer3.0.conv1 --channels 0 1 2 3 --out vis/\n'
    '  python -m vizhooks visualize --model vgg16 --layer features.28 --channels 7 --size 224 --steps 512\n'
),
}


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    out, err = capsys.readouterr()
    assert info.value.code == 0 and err == ""
    return out


@pytest.mark.parametrize("command", sorted(BEFORE))
def test_the_english_help_is_as_it_was(capsys, monkeypatch, command):
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.delenv("VIZHOOKS_LANG", raising=False)
    assert _help(capsys, *([command] if command else [])) == "".join(BEFORE[command])
