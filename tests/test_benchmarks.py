"""The benchmark suite must keep running: `python -m benchmarks.run --quick` end to end.

Benchmarks are measurements, not tests, so nothing here looks at how fast anything was; only
that every benchmark ran, gave finite positive numbers and that the table was written."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from tests.warm_python import run_python

ROOT = Path(__file__).resolve().parents[1]
BENCHES = {"grids", "hooks", "page", "coldstart", "memory", "gpu", "featurevis", "exemplars", "video", "live",
           "teach", "overview", "explain", "export", "patching",
           "relevance", "concepts", "pagecpu", "hf", "audit"}


# the benchmarks with a target (PASS / MISS); the others report information only
TARGETED = {"grids", "hooks", "page", "exemplars", "featurevis", "video", "live", "teach", "overview", "explain",
            "export", "patching", "relevance", "concepts", "pagecpu", "hf", "audit"}


def test_every_benchmark_is_listed_here():
    from benchmarks.run import BENCHES as LISTED

    assert set(LISTED) == BENCHES and TARGETED <= BENCHES


def _quick(tmp_path: Path, *only: str) -> tuple[subprocess.CompletedProcess[str], list[dict], str]:
    out, data = tmp_path / "BENCH.md", tmp_path / "bench.json"
    # The environment already says VIZHOOKS_OFFLINE=1 and an empty TORCH_HOME (tests/conftest.py);
    # the run sets them again itself.
    # a Python forked from tests/warm_python.py's (torch imported) runs `python -m benchmarks.run` as it is
    proc = run_python(module="benchmarks.run", args=["--quick", "--out", out, "--json", data,
                                                     *(("--only", *only) if only else ())], cwd=ROOT, timeout=1200)
    return proc, json.loads(data.read_text())["rows"] if data.exists() else [], out.read_text() if out.exists() else ""


#: The quick runs in three processes of about 50 s each (the two test workers share them): one interpreter
#: start and torch import per process instead of one per benchmark (about 4.5 s each), and no single run so
#: long that it is the suite's last test.
RUNS = (("exemplars", "hooks", "gpu", "overview", "pagecpu", "grids"),
        ("live", "coldstart", "page", "memory", "video", "hf", "export"),
        ("concepts", "explain", "patching", "relevance", "teach", "featurevis", "audit"))


def test_the_runs_hold_every_benchmark_once():
    assert sorted(b for run in RUNS for b in run) == sorted(BENCHES)


def _check(bench: str, rows: list[dict]) -> None:
    assert rows and {r["bench"] for r in rows} == {bench}, bench
    for row in rows:
        assert row["status"] != "ERROR", row
        if row["status"].startswith("skipped"):
            assert row["bench"] in ("gpu", "coldstart", "live") and not row["numbers"], row
            continue
        assert row["status"] in ("PASS", "MISS", "info"), row
        assert row["numbers"], row
        for key, value in row["numbers"].items():
            assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (key, row)
    if bench in ("coldstart", "live") and Path("/usr/bin/chromium").exists():
        assert not any(r["status"].startswith("skipped") for r in rows), bench
    assert any(r["target"] != "—" for r in rows) == (bench in TARGETED), bench


@pytest.mark.bench
@pytest.mark.parametrize("run", RUNS, ids=[run[0] for run in RUNS])
def test_quick_benchmark_runs(run, tmp_path):
    """`python -m benchmarks.run --quick --only` the benchmarks of one of RUNS in one process, as `make bench`
    runs them one after the other; then every benchmark's rows, each on its own, and the table, written and
    printed."""
    proc, rows, text = _quick(tmp_path, *run)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert {r["bench"] for r in rows} == set(run)
    for bench in run:
        _check(bench, [r for r in rows if r["bench"] == bench])
    assert "| Benchmark | Case | Measured (median) | Target | Result |" in text
    assert text.count("\n| ") >= len(rows) + 1
    assert "QUICK smoke run" in text and "### Machine" in text
    assert "| Benchmark | Case |" in proc.stdout  # the table is printed too


def _fake_run(bench: str, value: str, profile: bool = False):
    """A benchmark module whose run() gives one row of ``bench`` measuring ``value`` (a MISS, profiled, when
    ``profile``), and a section that says ``value``; a ``value`` starting with "raise" makes run() fail with
    the rest of it as the error."""
    from types import SimpleNamespace

    from benchmarks.common import Result, Row

    def run(cfg):
        if value.startswith("raise"):
            raise RuntimeError(value.removeprefix("raise "))
        row = Row(bench, f"{bench} case", value, "≤ 1", "MISS" if profile else "PASS", {"x": 1.0})
        return Result([row], [f"- {bench} measured {value}"], {row.case: (lambda: sum(range(10)))} if profile else {})

    return SimpleNamespace(run=run)


@pytest.fixture
def fake_benchmarks(monkeypatch):
    """benchmarks.run with fake benchmarks: set ``values[bench]`` (and ``missed``, the benches whose row is a
    profiled MISS) before each main() call."""
    import benchmarks.run as run

    for name in ("VIZHOOKS_OFFLINE", "TORCH_HOME", "MPLBACKEND"):  # main() sets them: put them back after
        monkeypatch.setenv(name, os.environ.get(name, ""))
    values: dict[str, str] = {}
    missed: set[str] = set()
    monkeypatch.setattr(run, "_module", lambda bench: _fake_run(bench, values[bench], profile=bench in missed))
    return run, values, missed


def _table(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| Benchmark |")]


def test_only_measures_again_and_keeps_the_other_benchmarks_rows_sections_and_profiles(tmp_path, fake_benchmarks):
    """`--only hooks` into a file of a full run keeps grids' and video's rows, sections and profiles and replaces
    hooks' (its old profile too); a file of another kind of run (quick) is replaced by the new rows only."""
    run, values, missed = fake_benchmarks
    out = tmp_path / "B.md"
    out.write_text(f"# hand-written\n\nkept above the marker\n\n{run.BEGIN}\n{run.END}\n")
    values.update(grids="1 s", hooks="2 s", video="3 s")
    missed.update({"grids", "hooks", "video"})
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "video", "grids", "hooks"]) == 0
    first = out.read_text()
    assert "<summary>hooks case</summary>" in first
    values["hooks"], _ = "9 s", missed.discard("hooks")
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "hooks"]) == 0
    text = out.read_text()
    assert text.startswith("# hand-written\n\nkept above the marker\n")
    assert _table(text) == ["| 1. Grid rendering | grids case | 1 s | ≤ 1 | MISS |",
                            "| 2. Hook overhead | hooks case | 9 s | ≤ 1 | PASS |",
                            "| 9. Video (frames in batches vs one capture per frame) | video case | 3 s | ≤ 1 | MISS |"]
    assert "- hooks measured 9 s" in text and "- hooks measured 2 s" not in text
    assert "<summary>hooks case</summary>" not in text  # its MISS was measured again: a PASS has no profile
    for kept in ("- grids measured 1 s", "- video measured 3 s", "<summary>grids case</summary>",
                 "<summary>video case</summary>"):
        assert text.count(kept) == first.count(kept) == 1, kept
    assert text.index("### 1. Grid") < text.index("### 2. Hook") < text.index("### 9. Video")
    assert "2. Hook overhead measured again" in text and text.count("; recorded 20") == 3
    # a quick run is another kind: the file then holds its rows only
    assert run.main(["--quick", "--out", str(out), "--only", "hooks"]) == 0
    text = out.read_text()
    assert "grids case" not in text and "hooks case | 9 s" in text and "measured again" not in text


def test_only_keeps_no_rows_of_another_machine_and_reads_past_what_it_cannot(tmp_path, fake_benchmarks, capsys):
    """Rows of other packages are not mixed into the table (said on stderr); an ERROR row whose message has lines
    and bars stays one row that a later merge reads; a row that cannot be read is left out with a warning,
    never a traceback after the benchmarks ran."""
    run, values, _ = fake_benchmarks
    out = tmp_path / "B.md"
    values.update(grids="raise first line\nsecond | with a bar", hooks="2 s")
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "grids", "hooks"]) == 1
    errored = [line for line in _table(out.read_text()) if line.startswith("| 1. Grid")]
    assert errored == ["| 1. Grid rendering | — | ERROR: RuntimeError: first line second \\| with a bar | — | ERROR |"]
    values["hooks"] = "3 s"
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "hooks"]) == 0
    assert _table(out.read_text())[0] == errored[0] and "hooks case | 3 s" in out.read_text()
    # a hand-broken row: left out, said, the rest merged
    out.write_text(out.read_text().replace(errored[0], "| 1. Grid rendering | only three | cells |"))
    capsys.readouterr()
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "hooks"]) == 0
    assert "a table row that cannot be read is left out: | 1. Grid rendering | only three" in capsys.readouterr().err
    assert [line.split(" | ")[0] for line in _table(out.read_text())] == ["| 2. Hook overhead"]
    # other packages: nothing kept
    values["video"] = "4 s"
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "video"]) == 0
    text = out.read_text().replace("- **Packages**: torch ", "- **Packages**: torch 0.0 and ")
    out.write_text(text)
    assert run.main(["--repeat", "2", "--out", str(out), "--only", "grids"]) == 1
    assert f"{out} holds another Packages: it is replaced by this run's rows only." in capsys.readouterr().err
    assert [line.split(" | ")[0] for line in _table(out.read_text())] == ["| 1. Grid rendering"]


def test_a_section_written_before_sections_carried_a_date_gets_its_runs_date(tmp_path):
    import argparse

    import benchmarks.run as run

    args = argparse.Namespace(quick=False, repeat=5, only=["hooks"])
    info = {"CPU": "x", "GPU": "none", "Python": "3", "Packages": "p"}
    old = [{"bench": "grids", "case": "c", "measured": "1 s", "target": "—", "status": "info", "numbers": {}}]
    text = run.render(old, {"grids": ["- line", "", "_Benchmark wall time: 6 s._"]}, {}, info, args, 60)
    recorded = text.split("Recorded ", 1)[1].split(";", 1)[0]
    (tmp_path / "B.md").write_text(text)
    rows, details, profiles = run.earlier(tmp_path / "B.md", args, info)
    assert rows == old and profiles == {}
    assert details == {"grids": ["- line", "", f"_Benchmark wall time: 6 s; recorded {recorded}._"]}
