"""The markers select what they say: `make test-fast` leaves out the browser, slow, packaging and bench
tests and keeps the quick ones of every module. The whole suite is collected in a child pytest, then
again with the -m expression read from the Makefile."""

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
        self.selected, self.deselected, self.lists = {}, [], {}
    def pytest_deselected(self, items):
        self.deselected += [i.nodeid for i in items]
    def pytest_collection_finish(self, session):
        self.selected = {i.nodeid: sorted({m.name for m in i.iter_markers()}) for i in session.items}
        for plugin in session.config.pluginmanager.get_plugins():  # tests/conftest.py's own lists
            if str(getattr(plugin, "__file__", "")).endswith("conftest.py") and hasattr(plugin, "SLOW"):
                self.lists = {"SLOW": list(plugin.SLOW), "BROWSER": list(plugin.BROWSER)}

out = {}
for name, args in (("all", []), ("fast", ["-m", sys.argv[1]])):  # one process: torch is imported once
    dump = Dump()
    code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", *args], plugins=[dump])
    out[name] = {"code": int(code), "selected": dump.selected, "deselected": dump.deselected, "lists": dump.lists}
print(json.dumps(out))
"""


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
    done = subprocess.run([sys.executable, "-c", _COLLECT, _fast_expression()], cwd=ROOT, capture_output=True,
                          text=True, timeout=400)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["all"]["code"] == result["fast"]["code"] == 0, done.stdout[-3000:]
    marks, fast = result["all"]["selected"], result["fast"]

    def having(name: str) -> set[str]:
        return {n for n, m in marks.items() if name in m}

    browser, slow, packaging, bench = (having(m) for m in MARKERS)
    assert {n for n in marks if n.startswith("tests/e2e/")} <= browser
    assert "tests/test_network_guard.py::test_chromium_resolves_no_names" in browser
    assert bench == {"tests/test_benchmarks.py::test_quick_benchmark_run_produces_the_table"}
    assert "tests/test_packaging.py::test_installed_page_shows_the_first_grid_in_chromium" in packaging
    # the wheel's tests: the package itself, and the data file it must carry (the Chinese class names)
    assert all(n.startswith(("tests/test_packaging.py::", "tests/test_labels_zh.py::")) for n in packaging)
    assert "tests/test_exemplars_ray.py::test_ray_engine_gives_the_local_index" in slow
    # every entry of conftest's lists still names a test (a renamed test would silently run again)
    lists = result["all"]["lists"]
    assert lists["SLOW"] and lists["BROWSER"], "tests/conftest.py's SLOW and BROWSER lists were not found"
    stale = [e for e in lists["SLOW"] + lists["BROWSER"]
             if not any(n == e or n.startswith((e + "::", e + "[")) for n in marks)]
    assert not stale, f"tests/conftest.py lists tests that no longer exist, rename or remove them: {stale}"

    kept, left = set(fast["selected"]), set(fast["deselected"])
    assert kept | left == set(marks) and left == browser | slow | packaging | bench
    # the fast loop keeps some tests of every module, but the e2e ones and the benchmark run
    modules = {n.split("::")[0] for n in marks}
    whole = {m for m in modules if m.startswith("tests/e2e/")} | {"tests/test_benchmarks.py"}
    missing = modules - whole - {n.split("::")[0] for n in kept}
    assert not missing, f"make test-fast runs no test of {sorted(missing)}: keep a quick one out of SLOW"
    assert "tests/test_packaging.py::test_declared_dependencies_cover_the_imports" in kept
    assert "tests/test_network_guard.py::test_tcp_connect_and_connect_ex_are_refused" in kept
