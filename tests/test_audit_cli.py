"""`python -m vizhooks audit FOLDER --out DIR`: the files hold what the library finds on the same folder,
a stopped run keeps the batches it finished, and bad input is one sentence with exit status 2."""

from __future__ import annotations

import csv

import numpy as np
import pyarrow.parquet as pq
import pytest
from PIL import Image

import vizhooks.interpret.audit as audit_module
from tests.helpers import run_cli
from vizhooks.interpret.audit import audit
from vizhooks.models.registry import load_model

SIZE = 32


def _folder(root):
    rng = np.random.default_rng(0)
    for name in ("0", "1"):
        (root / name).mkdir(parents=True)
        for i in range(4):
            Image.fromarray(rng.integers(0, 255, (40, 40, 3), dtype=np.uint8)).save(root / name / f"p{i}.png")
    (root / "1" / "bad.jpg").write_bytes(b"nope")
    return root


def _rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


@pytest.mark.slow
def test_files_hold_what_the_library_finds(tmp_path, capsys):
    folder, out = _folder(tmp_path / "photos"), tmp_path / "out"
    code, stdout, err = run_cli(capsys, "audit", folder, "--weights", "none", "--size", SIZE, "--batch", 3,
                                "--clusters", "2", "--out", out)
    assert code == 0, err
    want = audit(load_model("resnet18", weights="none"), folder, size=SIZE, batch_size=3, clusters=2)
    rows = _rows(out / "predictions.csv")
    assert rows[0] == ["path", "label", "predicted", "predicted_index", "confidence", "correct"]
    assert [(r[0], r[1], r[2], int(r[3]), r[5]) for r in rows[1:]] == [
        (p["path"], p["label"], p["predicted"], p["predicted_index"], str(p["correct"])) for p in want.predictions]
    assert [float(r[4]) for r in rows[1:]] == pytest.approx([p["confidence"] for p in want.predictions], rel=1e-5)
    confusion = _rows(out / "confusion.csv")
    assert confusion[0] == ["true", *want.columns]
    assert [[int(v) for v in r[1:]] for r in confusion[1:]] == want.confusion.tolist()
    maps = pq.read_table(out / "maps.parquet").to_pylist()
    assert [m["path"] for m in maps] == [p["path"] for p in want.predictions]
    for m in maps:
        np.testing.assert_allclose(np.asarray(m["map"]).reshape(16, 16), want.maps[m["path"]], atol=1e-5)
    clusters = _rows(out / "clusters.csv")[1:]
    assert {(r[0], r[3]): int(r[1]) for r in clusters} == {
        (name, path): c for name, found in want.clusters.items() for path, c in found.items()}
    assert (out / "skipped.txt").read_text().startswith("1/bad.jpg: ")
    for name, accuracy in want.accuracy().items():
        assert f"  {name}: {accuracy:.0%} of" in stdout


def test_a_stopped_run_keeps_the_batches_it_finished(tmp_path, capsys, monkeypatch):
    folder, out = _folder(tmp_path / "photos"), tmp_path / "out"
    calls = []
    real = audit_module._batch_maps

    def stop_on_the_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(audit_module, "_batch_maps", stop_on_the_second)
    code, _, err = run_cli(capsys, "audit", folder, "--weights", "none", "--size", SIZE, "--batch", 3, "--out", out)
    assert code == 130 and "interrupted" in err
    assert len(_rows(out / "predictions.csv")) == 1 + 3
    assert pq.read_table(out / "maps.parquet").num_rows == 3


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["nowhere"], "There is no folder at"),
        (["{photos}/0/p0.png"], "p0.png is a file; give a folder with one sub-folder"),
        (["{empty}"], "has no class sub-folders"),
        (["{photos}", "--clusters", "many"], "--clusters must be auto"),
        (["{photos}", "--engine", "spark"], "invalid choice"),
        (["{photos}", "--method", "magic"], "Unknown explanation method"),
    ],
)
def test_bad_input_is_one_sentence_and_exit_2(tmp_path, capsys, argv, words):
    (tmp_path / "empty").mkdir()
    photos = _folder(tmp_path / "photos")
    args = [a.format(empty=tmp_path / "empty", photos=photos) for a in argv]
    code, stdout, err = run_cli(capsys, "audit", *args, "--weights", "none", "--size", SIZE, "--out", tmp_path / "o")
    assert code == 2
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_unmatched_class_folder_names_it(tmp_path, capsys):
    photos = _folder(tmp_path / "photos")
    (photos / "1").rename(photos / "zebra crossing")
    code, _, err = run_cli(capsys, "audit", photos, "--weights", "none", "--size", SIZE, "--out", tmp_path / "o")
    assert code == 2 and "zebra crossing" in err and "matches no output" in err
    # QA 2026-12-06: the refused run left progress/ (its settings), which refused the corrected run as "an
    # audit made with other settings"; a refusal before the first picture now leaves no output folder
    assert not (tmp_path / "o").exists()
    code, _, err = run_cli(capsys, "audit", photos, "--weights", "none", "--size", SIZE, "--layer", "layer4.1.conv9",
                           "--out", tmp_path / "o")
    assert code == 2 and "layer4.1.conv9" in err and not (tmp_path / "o").exists()
    (photos / "zebra crossing").rename(photos / "1")
    code, _, err = run_cli(capsys, "audit", photos, "--weights", "none", "--size", SIZE, "--out", tmp_path / "o")
    assert code == 0, err


def test_the_library_refuses_an_unmatched_folder_before_its_store_keeps_anything(tmp_path):
    """The same order in the library: a store folder is made only for classes the model has."""
    photos = _folder(tmp_path / "photos")
    (photos / "1").rename(photos / "zebra crossing")
    with pytest.raises(audit_module.AuditError, match="zebra crossing"):
        audit(load_model("resnet18", weights="none", device="cpu"), photos, size=SIZE, store=tmp_path / "store")
    assert not (tmp_path / "store").exists()


def test_the_same_command_after_a_stop_does_only_the_rest(tmp_path, capsys, monkeypatch):
    """Stopped on the second batch, the same command again runs only the pictures not kept (counted at the
    model) and writes the files a run without a stop writes."""
    folder, out, whole = _folder(tmp_path / "photos"), tmp_path / "out", tmp_path / "whole"
    args = ["--weights", "none", "--size", SIZE, "--batch", 3, "--clusters", "2"]
    code, _, err = run_cli(capsys, "audit", folder, *args, "--out", whole)
    assert code == 0, err
    real, seen = audit_module._batch_maps, []

    def counted(net, x, *rest):
        seen.append(len(x))
        if len(seen) == 2 and not (out / "done").exists():
            (out / "done").touch()
            raise KeyboardInterrupt
        return real(net, x, *rest)

    monkeypatch.setattr(audit_module, "_batch_maps", counted)
    code, _, err = run_cli(capsys, "audit", folder, *args, "--out", out)
    assert code == 130
    seen.clear()
    code, _, err = run_cli(capsys, "audit", folder, *args, "--out", out)
    assert code == 0, err
    assert sum(seen) == 8 - 3
    for name in ("predictions.csv", "confusion.csv", "clusters.csv", "skipped.txt"):
        assert (out / name).read_text() == (whole / name).read_text(), name
    assert pq.read_table(out / "maps.parquet").to_pylist() == pq.read_table(whole / "maps.parquet").to_pylist()
