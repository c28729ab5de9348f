"""The markers select what they say: `make test-fast` leaves out the browser, slow, packaging and bench
tests and keeps the quick ones of every module. The marks are written on the tests themselves
(``@pytest.mark.slow``, ``pytest.param(..., marks=...)``, a module's ``pytestmark``); this module
reads them from the test files' syntax trees, so it costs well under a second instead of collecting
the suite again."""

from __future__ import annotations

import ast
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
MARKERS = ("browser", "slow", "packaging", "bench")
#: Fixtures of tests/e2e/conftest.py (and the e2e modules' own) that hand a test a Chromium.
BROWSER_FIXTURES = {"browser", "camera_browser", "page", "pages", "camera_page", "playwright_driver"}
#: What code that starts Chromium writes: Playwright, or the browser's own command line with our flags.
LAUNCHES = ("sync_playwright", "chromium.launch", "CHROMIUM_ARGS")


@dataclass
class Written:
    """One test function as written: the left-out marks on it and on its module, whether some of its
    parameters stay unmarked, and whether it drives Chromium."""

    module: str
    name: str
    marks: set[str] = field(default_factory=set)
    every_case_marked: bool = False
    drives_chromium: bool = False


def _mark_names(node: ast.expr) -> set[str]:
    """``pytest.mark.X`` (called or not, alone or in a list / tuple) -> {X} for the four markers."""
    if isinstance(node, (ast.List, ast.Tuple)):
        return set().union(*(_mark_names(e) for e in node.elts)) if node.elts else set()
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute) and node.attr in MARKERS:
        base = node.value
        if isinstance(base, ast.Attribute) and base.attr == "mark":
            return {node.attr}
    return set()


def _is_marked_param(node: ast.expr) -> bool:
    """``pytest.param(..., marks=<a left-out mark>)``."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "param"
            and any(k.arg == "marks" and _mark_names(k.value) for k in node.keywords))


def _every_case_marked(decorators: list[ast.expr]) -> bool:
    """A parametrize whose cases are all ``pytest.param(..., marks=...)``: no case of it is quick."""
    for d in decorators:
        if (isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr == "parametrize"
                and len(d.args) >= 2 and isinstance(d.args[1], (ast.List, ast.Tuple)) and d.args[1].elts
                and all(_is_marked_param(e) for e in d.args[1].elts)):
            return True
    return False


def _tests_of(path: Path, root: Path = ROOT) -> list[Written]:
    source = path.read_text("utf-8")
    tree = ast.parse(source)
    lines = source.splitlines()
    module = path.relative_to(root).as_posix()
    module_marks: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            module_marks |= _mark_names(node.value)
    def text(node: ast.stmt) -> str:
        return "\n".join(lines[node.lineno - 1:node.end_lineno])

    # module-level helpers (a function, a script in a string) that start Chromium count as starting it
    launchers = {name for node in tree.body if not isinstance(node, (ast.Import, ast.ImportFrom))
                 and any(sign in text(node) for sign in LAUNCHES)
                 for name in ([node.name] if isinstance(node, ast.FunctionDef) else
                              [t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)])}
    fixtures = BROWSER_FIXTURES if module.startswith("tests/e2e/") else set()  # elsewhere `page` is AppTest's
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("test_"):
            body = text(node)
            starts = (any(sign in body for sign in LAUNCHES) or bool({a.arg for a in node.args.args} & fixtures)
                      or any(re.search(rf"\b{name}\b", body) for name in launchers - {node.name}))
            found.append(Written(
                module, node.name, module_marks | set().union(*(_mark_names(d) for d in node.decorator_list)),
                _every_case_marked(node.decorator_list), starts))
    return found


@pytest.fixture(scope="module")
def tests() -> list[Written]:
    # this module names the launch signs in its own text: it is left out (it starts no browser)
    return [t for path in sorted(TESTS.rglob("test_*.py")) if path != Path(__file__) for t in _tests_of(path)]


def _fast_expression() -> str:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    assert re.search(r"^test-fast:", makefile, re.M), "the Makefile has no test-fast target"
    (expression,) = re.findall(r"^FAST := (.+)$", makefile, re.M)
    return expression.strip()


def test_markers_are_registered():
    registered = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["pytest"]["ini_options"]
    assert sorted(m.split(":")[0] for m in registered["markers"]) == sorted(MARKERS)
    assert "--strict-markers" in registered["addopts"]  # a misspelt mark is an error, not a quick test


def test_the_fast_loop_leaves_out_every_marker():
    expression = _fast_expression()
    assert re.fullmatch(r"not \((\w+)(?: or (\w+))*\)", expression), expression
    assert sorted(re.findall(r"\w+", expression.removeprefix("not "))[::2]) == sorted(MARKERS)


def test_no_conftest_marks_tests_by_name_or_place():
    # the marks live on the tests: a list of node ids in a conftest goes stale when a test is renamed;
    # only xdist_group is set there, from the fixtures a test uses (which worker runs it, not what it is)
    for conftest in TESTS.rglob("conftest.py"):
        marks = re.findall(r"add_marker\(\s*([\w.]+)", conftest.read_text("utf-8"))
        assert all(m == "pytest.mark.xdist_group" for m in marks), f"{conftest} marks tests; mark them where they are"


def test_every_browser_test_is_marked_and_every_marked_one_drives_chromium(tests):
    e2e = [t for t in tests if t.module.startswith("tests/e2e/")]
    assert e2e and all("browser" in t.marks for t in e2e), [t.name for t in e2e if "browser" not in t.marks]
    unmarked = [f"{t.module}::{t.name}" for t in tests if t.drives_chromium and "browser" not in t.marks]
    assert not unmarked, f"these tests drive Chromium: mark them @pytest.mark.browser: {unmarked}"
    # outside tests/e2e (whose modules are marked whole), a browser mark says the test starts Chromium
    wrong = [f"{t.module}::{t.name}" for t in tests
             if "browser" in t.marks and not t.module.startswith("tests/e2e/") and not t.drives_chromium]
    assert not wrong, f"marked browser but start no Chromium (slow instead?): {wrong}"
    assert {"test_chromium_resolves_no_names", "test_svg_in_chromium_shows_the_png_grid"} <= {
        t.name for t in tests if "browser" in t.marks}


def _browser_files() -> list[str]:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    (files,) = re.findall(r"^BROWSER_FILES := (.+)$", makefile, re.M)
    assert re.search(r"pytest -m browser \$\(BROWSER_FILES\)", makefile), "the browser run ignores BROWSER_FILES"
    return files.split()


def test_the_browser_run_collects_every_browser_test(tests):
    """`make test` runs the browser tests in a pytest of their own that collects BROWSER_FILES only, and
    the other run leaves every browser test out: a browser test in another file would run in neither."""
    files = _browser_files()
    assert all((ROOT / f).exists() for f in files), files
    lost = [f"{t.module}::{t.name}" for t in tests if "browser" in t.marks
            and not any(t.module == f or t.module.startswith(f.rstrip("/") + "/") for f in files)]
    assert not lost, f"browser tests outside the Makefile's BROWSER_FILES (add their file there): {lost}"


def test_packaging_and_bench_marks_are_the_wheel_and_the_benchmark_run(tests):
    bench = {f"{t.module}::{t.name}" for t in tests if "bench" in t.marks}
    assert bench == {"tests/test_benchmarks.py::test_quick_benchmark_runs"}  # one per group of benchmarks
    packaging = [t for t in tests if "packaging" in t.marks]
    # the wheel's tests: the package itself, and the data file it must carry (the Chinese class names)
    assert {t.module for t in packaging} == {"tests/test_packaging.py", "tests/test_labels.py"}
    source = (TESTS / "test_packaging.py").read_text("utf-8")
    wheel = set(re.findall(r"^def (test_\w+)\(installed\b", source, re.M))
    assert "test_installed_page_shows_the_first_grid_in_chromium" in wheel
    assert wheel <= {t.name for t in packaging}, "a test of the installed wheel is not marked packaging"


def test_the_fast_loop_keeps_quick_tests_of_every_module(tests):
    left_out = set(MARKERS)
    quick = {t.module for t in tests if not t.marks & left_out and not t.every_case_marked}
    modules = {t.module for t in tests} - {"tests/test_benchmarks.py"}
    missing = {m for m in modules if not m.startswith("tests/e2e/")} - quick
    assert not missing, f"make test-fast runs no test of {sorted(missing)}: keep a quick one unmarked"
    by_name = {(t.module, t.name): t for t in tests}
    for kept in (("tests/test_packaging.py", "test_declared_dependencies_cover_the_imports"),
                 ("tests/test_network_guard.py", "test_tcp_connect_and_connect_ex_are_refused")):
        assert not by_name[kept].marks, kept
    assert "slow" in by_name[("tests/test_ray_engine.py", "test_ray_engine_gives_the_local_index")].marks


def test_the_reader_sees_each_way_of_marking(tmp_path):
    # the syntax-tree reader above is this module's oracle: each way of writing a mark, read back
    (tmp_path / "tests" / "e2e").mkdir(parents=True)
    written = tmp_path / "tests" / "e2e" / "test_written.py"
    written.write_text(
        "import pytest\n"
        "pytestmark = [pytest.mark.packaging]\n"
        "@pytest.mark.slow\n@pytest.mark.parametrize('x', [1, 2])\ndef test_a(x): pass\n"
        "@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.bench)])\ndef test_b(x): pass\n"
        "@pytest.mark.parametrize('x', [pytest.param(1, marks=pytest.mark.slow), 2])\ndef test_c(x): pass\n"
        "def test_d(page): pass\n"
        "def test_e(tmp_path): 'p.chromium.launch(executable_path=\"/usr/bin/chromium\")'\n"
        "SCRIPT = 'with sync_playwright() as p: pass'\n"
        "def test_f(tmp_path): run(SCRIPT)\n"
        "def test_g(tmp_path): '/usr/bin/chromium is mentioned, not started'\n"
        "def helper_not_a_test(): pass\n")
    read = {t.name: t for t in _tests_of(written, tmp_path)}
    assert sorted(read) == ["test_a", "test_b", "test_c", "test_d", "test_e", "test_f", "test_g"]
    assert read["test_f"].drives_chromium and not read["test_g"].drives_chromium
    outside = tmp_path / "test_outside.py"  # outside tests/e2e, a fixture called page is AppTest's
    outside.write_text("def test_d(page): pass\n")
    assert not _tests_of(outside, tmp_path)[0].drives_chromium
    assert read["test_a"].marks == {"slow", "packaging"} and not read["test_a"].every_case_marked
    assert read["test_b"].every_case_marked and not read["test_c"].every_case_marked
    assert read["test_d"].drives_chromium and read["test_e"].drives_chromium
    assert not read["test_a"].drives_chromium
