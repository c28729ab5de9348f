"""`python -m vizhooks concepts FOLDER`: concepts.json holds the library's bank and importance, one PNG per
concept, a summary table, nothing written by a stopped run, and one sentence for bad input."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import vizhooks as vz
import vizhooks.interpret.concepts as concepts_module
from tests.helpers import ROOT
from vizhooks.interpret.concepts import discover

SIZE = 32
ARGS = ("--layer", "layer2", "--k", "3", "--crops", "2", "--size", str(SIZE), "--top", "2", "--batch", "3")


@pytest.fixture
def photos(tmp_path):
    folder = tmp_path / "photos"
    (folder / "cats").mkdir(parents=True)
    shutil.copy(ROOT / "sample_images" / "chelsea.jpg", folder / "cats" / "chelsea.jpg")
    shutil.copy(ROOT / "sample_images" / "coffee.jpg", folder / "coffee.jpg")
    shutil.copy(ROOT / "sample_images" / "brick.png", folder / "brick.png")
    (folder / "notes.png").write_text("not a picture")
    return folder


def _run(*argv: object) -> int:
    from vizhooks.__main__ import main

    return main([str(a) for a in argv])


@pytest.mark.slow
def test_the_files_hold_the_librarys_concepts_and_the_table_their_order(photos, tmp_path, capsys):
    out = tmp_path / "out"
    assert _run("concepts", photos, *ARGS, "--target", "5", "--out", out) == 0
    stdout, err = capsys.readouterr()
    saved = json.loads((out / "concepts.json").read_text())
    assert saved["photos"] == ["brick.png", "cats/chelsea.jpg", "coffee.jpg"]
    assert "skipped notes.png" in err and "activations: 6/6 crops" in err and "importance: 3/3 photos" in err
    bundle = vz.load_model("resnet18")  # as the command, offline: the seeded random weights
    found = discover(bundle, [photos / p for p in saved["photos"]], "layer2", k=3, target=5, crops_per_image=2,
                     size=SIZE)
    np.testing.assert_allclose(saved["bank"], found.bank, atol=2e-6)
    np.testing.assert_allclose(saved["importance"], found.importance, rtol=1e-5, atol=1e-6)
    assert saved["order"] == found.order() and saved["target"] == 5 and saved["layer"] == "layer2"
    assert saved["top"][str(found.order()[0])][0]["box"] == list(found.top(found.order()[0], 1)[0][1])
    assert sorted(p.name for p in out.iterdir()) == ["concept_0.png", "concept_1.png", "concept_2.png",
                                                     "concepts.json"]
    assert all((out / f"concept_{i}.png").read_bytes()[:4] == b"\x89PNG" for i in range(3))
    lines = stdout.strip().splitlines()
    assert lines[0].split()[:3] == ["concept", "importance", "share"]
    assert [int(line.split()[0]) for line in lines[1:4]] == found.order()
    assert lines[-1] == str(out / "concepts.json")


@pytest.mark.slow
def test_a_stopped_run_writes_nothing(photos, tmp_path, monkeypatch, capsys):
    def stopped(*_a, **_k):
        raise KeyboardInterrupt

    monkeypatch.setattr(concepts_module, "discover", stopped)
    out = tmp_path / "out"
    assert _run("concepts", photos, *ARGS, "--out", out) == 130
    assert not out.exists() and "nothing was written" in capsys.readouterr().err


@pytest.mark.slow
def test_the_engine_reaches_discover(photos, tmp_path, monkeypatch):
    seen = []

    def stopped(*_a, **kwargs):
        seen.append(kwargs["engine"])
        raise KeyboardInterrupt

    monkeypatch.setattr(concepts_module, "discover", stopped)
    assert _run("concepts", photos, *ARGS, "--engine", "ray", "--out", tmp_path / "out") == 130
    assert _run("concepts", photos, *ARGS, "--out", tmp_path / "out") == 130
    assert seen == ["ray", "local"]


@pytest.mark.parametrize(("argv", "needle"), [
    (("--layer", "nope"), "no layer named 'nope'"),
    (("--layer", "layer2", "--k", "20", "--crops", "2"), "need at least 20 crops, but there are only 6"),
    (("--layer", "layer2", "--target", "dragon"), "The model has no class 'dragon'"),
    (("--layer", "layer2", "--k", "0"), "--k must be from 1"),
    (("--layer", "layer2", "--engine", "spark"), "invalid choice: 'spark'"),
])
def test_bad_settings_exit_2_with_one_sentence(photos, tmp_path, capsys, argv, needle):
    assert _run("concepts", photos, *argv, "--size", SIZE, "--out", tmp_path / "out") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert needle in err[-1] and "Traceback" not in "\n".join(err)
    assert not (tmp_path / "out").exists()


def test_empty_and_missing_folders_exit_2(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run("concepts", empty, "--layer", "layer2", "--out", tmp_path / "out") == 2
    assert "holds no image files" in capsys.readouterr().err
    assert _run("concepts", tmp_path / "nowhere", "--layer", "layer2", "--out", tmp_path / "out") == 2
    assert "There is no folder at" in capsys.readouterr().err
