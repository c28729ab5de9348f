"""The benchmark suite must keep running: `python -m benchmarks.run --quick` end to end.

Benchmarks are measurements, not tests, so nothing here looks at how fast anything was; only
that every benchmark ran, gave finite positive numbers and that the table was written."""

from __future__ import annotations

import json
import math
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
