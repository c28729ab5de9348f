"""The markers select what they say: `make test-fast` leaves out the browser, slow, packaging and bench
tests and keeps the quick ones of every module. Collected in a child pytest (over a few modules, so
it stays quick) with the -m expression read from the Makefile."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKERS = ("browser", "slow", "packaging", "bench")

_COLLECT = """
import json, sys
import pytest

class Dump:
    def __init__(self):
        self.selected, self.deselected = {}, []
    def pytest_deselected(self, items):
        self.deselected += [i.nodeid for i in items]
    def pytest_collection_finish(self, session):
        self.selected = {i.nodeid: sorted({m.name for m in i.iter_markers()}) for i in session.items}

fast, files = sys.argv[1], sys.argv[2:]
out = {}
for name, args in (("all", files), ("fast", ["-m", fast, *files])):  # one process: torch is imported once
    dump = Dump()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args], plugins=[dump])
    out[name] = {"code": int(code), "selected": dump.selected, "deselected": dump.deselected}
print(json.dumps(out))
"""

FILES = ["tests/e2e/test_browser.py", "tests/test_benchmarks.py", "tests/test_packaging.py",
         "tests/test_exemplars_ray.py", "tests/test_network_guard.py", "tests/test_layers.py"]


def _collect(fast: str) -> dict:
    done = subprocess.run([sys.executable, "-c", _COLLECT, fast, *FILES], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["all"]["code"] == result["fast"]["code"] == 0, done.stdout[-3000:]
    return result


def _fast_expression() -> str:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert re.search(r"^test-fast:", makefile, re.M), "the Makefile has no test-fast target"
    (expression,) = re.findall(r"^FAST := (.+)$", makefile, re.M)
    return expression.strip()


def test_markers_are_registered():
    import tomllib

    registered = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]
    assert sorted(m.split(":")[0] for m in registered["markers"]) == sorted(MARKERS)


def test_each_marker_selects_its_tests_and_the_fast_loop_keeps_the_quick_ones():
    collected = _collect(_fast_expression())
    marks, fast = collected["all"]["selected"], collected["fast"]

    def having(name: str) -> set[str]:
        return {n for n, m in marks.items() if name in m}

    browser, slow, packaging, bench = (having(m) for m in MARKERS)
    assert browser and all(n.startswith("tests/e2e/") or "chromium" in n for n in browser)
    assert "tests/test_network_guard.py::test_chromium_resolves_no_names" in browser
    assert bench == {"tests/test_benchmarks.py::test_quick_benchmark_run_produces_the_table"}
    assert "tests/test_packaging.py::test_installed_page_shows_the_first_grid_in_chromium" in packaging
    assert all(n.startswith("tests/test_packaging.py::") for n in packaging)
    assert "tests/test_packaging.py::test_declared_dependencies_cover_the_imports" not in packaging
    assert "tests/test_exemplars_ray.py::test_ray_engine_gives_the_local_index" in slow

    kept, left = set(fast["selected"]), set(fast["deselected"])
    assert kept | left == set(marks) and not kept & (browser | slow | packaging | bench)
    assert left == browser | slow | packaging | bench
    # every module keeps at least one quick test, but those whose every test is a browser/bench one
    modules = {n.split("::")[0] for n in marks} - {"tests/e2e/test_browser.py", "tests/test_benchmarks.py"}
    assert modules <= {n.split("::")[0] for n in kept}
    assert "tests/test_packaging.py::test_declared_dependencies_cover_the_imports" in kept
    assert "tests/test_network_guard.py::test_tcp_connect_and_connect_ex_are_refused" in kept
