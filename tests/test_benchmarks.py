"""The benchmark suite must keep running: `python -m benchmarks.run --quick` end to end.

Benchmarks are measurements, not tests, so nothing here looks at how fast anything was; only
that every benchmark ran, gave finite positive numbers and that the table was written."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.bench

ROOT = Path(__file__).resolve().parents[1]
BENCHES = {"grids", "hooks", "page", "coldstart", "memory", "gpu", "featurevis", "exemplars", "video", "live",
           "teach", "overview", "explain", "export", "patching",
           "relevance", "concepts", "audit"}


def test_quick_benchmark_run_produces_the_table(tmp_path):
    out, data = tmp_path / "BENCH.md", tmp_path / "bench.json"
    # The environment already says VIZHOOKS_OFFLINE=1 and an empty TORCH_HOME (tests/conftest.py);
    # the run sets them again itself.
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--out", str(out), "--json", str(data)],
        cwd=ROOT, capture_output=True, text=True, timeout=560,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]

    result = json.loads(data.read_text())
    rows = result["rows"]
    assert {r["bench"] for r in rows} == BENCHES
    for row in rows:
        assert row["status"] != "ERROR", row
        if row["status"].startswith("skipped"):
            assert row["bench"] in ("gpu", "coldstart", "live") and not row["numbers"], row
            continue
        assert row["status"] in ("PASS", "MISS", "info"), row
        assert row["numbers"], row
        for key, value in row["numbers"].items():
            assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0, (key, row)
    if Path("/usr/bin/chromium").exists():
        assert not any(r["status"].startswith("skipped") for r in rows if r["bench"] in ("coldstart", "live"))
    targets = [r for r in rows if r["target"] != "—"]
    assert {r["bench"] for r in targets} == {"grids", "hooks", "page", "exemplars", "featurevis", "video", "live",
                                             "teach", "overview", "explain", "export", "patching",
                                             "relevance", "concepts", "audit"}

    text = out.read_text()
    assert "| Benchmark | Case | Measured (median) | Target | Result |" in text
    assert text.count("\n| ") >= len(rows) + 1
    assert "QUICK smoke run" in text and "### Machine" in text
    assert "| Benchmark | Case |" in proc.stdout  # the table is printed too
