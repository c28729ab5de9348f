"""`python -m vizhooks explain FOLDER`: one CSV row per photo and method with the library's scores,
a mean +/- std summary, a run that continues where it stopped, and one sentence for bad input."""

from __future__ import annotations

import csv
import shutil
import statistics

import pytest

import vizhooks as vz
import vizhooks.cli as cli
from tests.helpers import ROOT
from vizhooks.i18n import t
from vizhooks.interpret.faithfulness import faithfulness, reference_maps
from vizhooks.interpret.methods import explain

SIZE, STEPS = 48, 4


@pytest.fixture
def photos(tmp_path):
    folder = tmp_path / "photos"
    (folder / "cats").mkdir(parents=True)
    shutil.copy(ROOT / "sample_images" / "chelsea.jpg", folder / "cats" / "chelsea.jpg")
    shutil.copy(ROOT / "sample_images" / "coffee.jpg", folder / "coffee.jpg")
    (folder / "notes.png").write_text("not a picture")
    return folder


def _run(*argv: object) -> int:
    from vizhooks.__main__ import main

    return main([str(a) for a in argv])


def _rows(path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:  # -sig: a table a spreadsheet saved again, too
        return list(csv.DictReader(f))


@pytest.mark.slow
def test_rows_are_the_librarys_scores_and_the_summary_their_mean(photos, tmp_path, capsys):
    out = tmp_path / "scores.csv"
    assert _run("explain", photos, "--methods", "gradcam,saliency", "--size", SIZE, "--steps", STEPS,
                "--out", out) == 0
    stdout, err = capsys.readouterr()
    rows = _rows(out)
    assert [(r["photo"], r["method"]) for r in rows] == [
        (p, m) for p in ("cats/chelsea.jpg", "coffee.jpg") for m in ("gradcam", "saliency", "random", "gaussian")]
    assert "skipped notes.png" in err and "1 file skipped." in err
    bundle = vz.load_model("resnet18")  # as the command, offline: the seeded random weights
    x = bundle.preprocess(vz.load_image(photos / "coffee.jpg"), SIZE)
    target = int(bundle.model(x)[0].argmax())
    maps = {**explain(bundle, x, target, ["gradcam", "saliency"]), **reference_maps(x.shape[-2:])}
    for row in rows[4:]:
        s = faithfulness(bundle, x, target, maps[row["method"]], steps=STEPS)
        assert int(row["target"]) == target
        assert [float(row[c]) for c in ("deletion_auc", "insertion_auc", "avg_drop", "increase")] == pytest.approx(
            [s.deletion_auc, s.insertion_auc, s.avg_drop, s.increase], rel=1e-5, abs=1e-7)
    line = next(ln for ln in stdout.splitlines() if ln.startswith("gradcam "))
    values = [float(r["deletion_auc"]) for r in rows if r["method"] == "gradcam"]
    assert f"{statistics.fmean(values):.4g} +/- {statistics.stdev(values):.2g}" in line
    assert stdout.strip().splitlines()[-1] == str(out)


@pytest.mark.slow
def test_a_second_run_continues_where_the_first_stopped(photos, tmp_path, monkeypatch, capsys):
    out = tmp_path / "scores.csv"
    args = ("explain", photos, "--methods", "gradcam", "--no-references", "--metrics", "deletion", "--size", SIZE,
            "--steps", STEPS, "--out", out)
    real, calls = cli._explain_rows, []

    def failing_second(bundle, x, key, todo, columns, a):
        calls.append(key)
        if len(calls) == 2:
            raise KeyboardInterrupt  # stopped while the second photo runs
        return real(bundle, x, key, todo, columns, a)

    monkeypatch.setattr(cli, "_explain_rows", failing_second)
    assert _run(*args) == 130
    assert [r["photo"] for r in _rows(out)] == ["cats/chelsea.jpg"]  # the finished photo is kept
    # opened and saved again by a spreadsheet, which starts UTF-8 with a byte-order mark: still the table
    out.write_text(out.read_text(encoding="utf-8"), encoding="utf-8-sig")
    monkeypatch.setattr(cli, "_explain_rows", lambda *a: calls.append(a[2]) or real(*a))
    calls.clear()
    assert _run(*args) == 0
    assert calls == ["coffee.jpg"]  # only what was missing
    assert [r["photo"] for r in _rows(out)] == ["cats/chelsea.jpg", "coffee.jpg"]
    capsys.readouterr()


@pytest.mark.parametrize(("argv", "needle"), [
    (("--methods", "gradcam,nope"), "--methods takes names from gradcam"),
    (("--metrics", "speed"), "--metrics takes names from deletion"),
])
def test_unknown_names_exit_2_with_one_sentence(photos, tmp_path, capsys, argv, needle):
    assert _run("explain", photos, *argv, "--out", tmp_path / "s.csv") == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_empty_missing_and_unreadable_folders_and_another_csv_exit_2(tmp_path, photos, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert _run("explain", empty, "--out", tmp_path / "s.csv") == 2
    assert "holds no image files" in capsys.readouterr().err
    assert _run("explain", tmp_path / "nowhere", "--out", tmp_path / "s.csv") == 2
    assert "There is no folder at" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "a.jpg").write_text("text")
    assert _run("explain", bad, "--size", SIZE, "--out", tmp_path / "b.csv") == 2
    assert "None of the 1 image files" in capsys.readouterr().err
    other = tmp_path / "other.csv"
    other.write_text("photo,method,target,speed\n")
    assert _run("explain", photos, "--out", other) == 2
    err = capsys.readouterr().err
    assert "was written with other metrics" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("content", [b"\xff\xd8\xff\xe0 a JPEG's first bytes", b"a,b\n1,2\n"], ids=["photo", "csv"])
def test_an_out_that_is_no_scores_table_is_one_sentence_and_left_as_it_is(photos, tmp_path, capsys, content):
    """QA 2026-12-06: --out naming a photo was Python's "'utf-8' codec can't decode byte 0xff", and another
    program's CSV was said to have "other metrics' columns", as if explain had written it."""
    victim = tmp_path / "victim.jpg"
    victim.write_bytes(content)
    assert _run("explain", photos, "--out", victim) == 2
    err = capsys.readouterr().err
    assert err.strip() == "vizhooks: error: " + t("cli_explain_not_scores", path=victim)
    assert victim.read_bytes() == content
