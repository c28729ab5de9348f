"""Packaging: pyproject.toml declares what the code imports, agrees with the pins in
requirements*.txt, and builds a wheel that installs and runs on its own.

The wheel is built from a copy of the sources (pyproject.toml, README.md, vizhooks/) with
``pip wheel --no-build-isolation`` and installed with ``pip install --no-index --no-deps`` into a
fresh virtual environment whose only view of third-party packages is this environment's
site-packages, through a ``.pth`` file: nothing is downloaded. That the wheel's own ``Requires-Dist``
is met is then checked by hand against what the new environment sees (pip installs nothing).

Which extra a third-party import belongs to:

- imported at module level by the library (``vizhooks/`` outside ``vizhooks/page/``): core;
- imported inside a function of the library: core, or the extra named in ``LAZY_EXTRAS``;
- imported by the page (``app.py``, ``vizhooks/page/``): core or ``page``.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import site
import subprocess
import sys
import sysconfig
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from benchmarks.server import start, stop, wait_healthy

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
PROJECT = PYPROJECT["project"]
VERSION = PROJECT["version"]

#: Modules the library imports only inside the function that needs them, and the extra that brings
#: them. pyarrow and cv2 are also imported lazily in places, but they are core dependencies.
LAZY_EXTRAS = {
    "av": "page",  # layer_video's H.264 encoder (falls back to OpenCV without it); the live camera
    "pandas": "page",  # summary_dataframe
    "ray": "ray",  # build_atlas(engine="ray")
    "timm": "timm",  # load_model("timm:NAME")
    "huggingface_hub": "timm",  # timm's pretrained checkpoints
    "safetensors": "timm",
    "zennit": "interpret",  # channel relevance by LRP
    "sklearn": "interpret",  # concepts (NMF), the audit's spectral clustering
    "scipy": "interpret",  # the audit's eigengap, concepts' non-negative least squares
    "transformers": "hf",  # load_model("hf:ID_OR_DIR")
    "open_clip": "clip",  # zero_shot()
    "onnx": "export",  # a taught model as ONNX
    "opencc": "dev",  # python -m vizhooks.hant: the zh-Hant catalogue generated for the repository
}
#: Library modules that are an optional engine as a whole: no module imports them at module level
#: (tests/test_architecture.py), so all their imports belong to the extra.
ENGINE_MODULES = {
    "vizhooks/classroom/redis_store.py": "redis",  # classes shared by several servers (VIZHOOKS_CLASS_STORE)
}
#: torch and torchvision install from local wheel files of exactly these builds.
EXACT = ("torch", "torchvision")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _declared() -> dict[str, set[str]]:
    """Normalised distribution names of the core dependencies ("") and of each extra, with
    ``vizhooks[...]`` self-references expanded."""
    raw = {"": PROJECT["dependencies"], **PROJECT["optional-dependencies"]}
    names = {group: {_norm(Requirement(s).name) for s in specs} for group, specs in raw.items()}
    for group, specs in raw.items():
        for spec in specs:
            req = Requirement(spec)
            if _norm(req.name) == "vizhooks":
                names[group].discard("vizhooks")
                for extra in req.extras:
                    names[group] |= names[extra]
    return names


def _pins(filename: str) -> dict[str, tuple[Requirement, str]]:
    """``{name: (requirement, filename)}`` of the ``==`` pins in one requirements file."""
    pins = {}
    for line in (ROOT / filename).read_text("utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            req = Requirement(line)
            pins[_norm(req.name)] = (req, filename)
    return pins


# ----------------------------------------------------------------------------------------------
# pyproject.toml itself


def test_requires_python_agrees_with_ruff_and_mypy():
    assert PROJECT["requires-python"] == ">=3.11"
    assert PYPROJECT["tool"]["ruff"]["target-version"] == "py311"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == "3.11"


def test_pyproject_agrees_with_the_requirements_pins():
    specs = {_norm(Requirement(s).name): Requirement(s) for s in PROJECT["dependencies"]}
    for name in EXACT:
        assert str(specs[name].specifier).startswith("=="), f"{name} must be pinned exactly in pyproject.toml"

    declared = {}
    for group, reqs in {"": PROJECT["dependencies"], **PROJECT["optional-dependencies"]}.items():
        for spec in reqs:
            req = Requirement(spec)
            declared.setdefault(_norm(req.name), []).append((group or "core", req))

    pins = {**_pins("requirements.txt"), **_pins("requirements-scale.txt")}
    dev_pins = _pins("requirements-dev.txt")
    for name, (pin, filename) in {**pins, **dev_pins}.items():
        assert name in declared, f"{pin} ({filename}) is not declared in pyproject.toml"
        version = next(iter(pin.specifier)).version
        for group, req in declared[name]:
            assert req.specifier.contains(version, prereleases=True), \
                f"{filename} pins {pin}, which {req} (pyproject, {group}) excludes"
    dev = {_norm(Requirement(s).name): Requirement(s) for s in PROJECT["optional-dependencies"]["dev"]}
    for name, (pin, _) in dev_pins.items():
        assert name in dev and dev[name].specifier == pin.specifier, \
            f"the dev extra should pin {pin} as requirements-dev.txt does"


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(top-level module, imported inside a function)`` for each absolute import in ``path``."""
    tree = ast.parse(path.read_text("utf-8"), str(path))
    found = []

    def visit(node: ast.AST, lazy: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                found.extend((alias.name.split(".")[0], lazy) for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                found.append((child.module.split(".")[0], lazy))
            visit(child, lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


def test_declared_dependencies_cover_the_imports():
    declared = _declared()
    modules_to_dists = metadata.packages_distributions()
    missing = []
    for path in sorted([*(ROOT / "vizhooks").rglob("*.py"), ROOT / "app.py"]):
        rel = path.relative_to(ROOT).as_posix()
        page = rel == "app.py" or rel.startswith("vizhooks/page/")
        # the lesson's snippets are code the package reads as text and shows (a user runs them, with an
        # hf: model's transformers, say); vizhooks never imports them: their imports count as lazy
        shown = rel.startswith("vizhooks/lesson/snippets/") and path.name != "__init__.py"
        for module, lazy in _imports(path):
            lazy = lazy or shown
            if module in sys.stdlib_module_names or module == "vizhooks":
                continue
            dists = {_norm(d) for d in modules_to_dists.get(module, [])}
            assert dists, f"{rel} imports {module}, which no installed distribution provides"
            allowed = set(declared[""])
            if page:
                allowed |= declared["page"]
                where = "core or the page extra"
            elif lazy and module in LAZY_EXTRAS:
                allowed |= declared[LAZY_EXTRAS[module]]
                where = f"core or the {LAZY_EXTRAS[module]} extra"
            elif rel in ENGINE_MODULES:
                allowed |= declared[ENGINE_MODULES[rel]]
                where = f"core or the {ENGINE_MODULES[rel]} extra"
            else:
                where = "core dependencies" + ("" if lazy else " (module-level import)")
            if not dists & allowed:
                missing.append(f"{rel} imports {module} ({'/'.join(sorted(dists))}), not in {where}")
    assert not missing, "pyproject.toml does not declare:\n" + "\n".join(sorted(set(missing)))


def test_source_tree_version_comes_from_pyproject():
    import vizhooks

    assert vizhooks.__version__ == VERSION


# ----------------------------------------------------------------------------------------------
# the wheel, installed offline into a fresh environment


def _child_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    return {**env, "VIZHOOKS_OFFLINE": "1", "PYTHONNOUSERSITE": "1", "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PIP_NO_INPUT": "1"}


def _run(args: list[str], cwd: Path, timeout: float = 120) -> str:
    done = subprocess.run(args, cwd=cwd, env=_child_env(), capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


class Installed:
    def __init__(self, tmp: Path):
        self.tmp = tmp
        src = tmp / "src"
        src.mkdir()
        shutil.copy2(ROOT / "pyproject.toml", src)
        shutil.copy2(ROOT / "README.md", src)
        shutil.copytree(ROOT / "vizhooks", src / "vizhooks", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        dist = tmp / "dist"
        _run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
              "-w", str(dist), str(src)], cwd=tmp)
        (self.wheel,) = dist.glob("vizhooks-*.whl")

        venv = tmp / "venv"
        _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=tmp)
        self.python = venv / "bin" / "python"
        purelib = Path(_run([str(self.python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                            cwd=tmp).strip())
        # this environment's packages, after the new environment's own: what an online install would add
        ours = dict.fromkeys([*site.getsitepackages(), sysconfig.get_path("purelib")])
        self.purelib = purelib
        (purelib / "_project_env.pth").write_text("\n".join(ours) + "\n", "utf-8")
        _run([str(self.python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(self.wheel)], cwd=tmp)
        self.venv = venv


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    return Installed(tmp_path_factory.mktemp("packaging"))


@pytest.mark.packaging
def test_wheel_carries_pyprojects_name_version_and_dependencies(installed):
    assert installed.wheel.name.startswith(f"vizhooks-{VERSION}-py3-none-any")
    out = _run([str(installed.python), "-c", (
        "from importlib import metadata; d = metadata.distribution('vizhooks'); "
        "print(d.version); print(*(d.requires or []), sep='\\n')")], cwd=installed.tmp)
    version, *requires = out.splitlines()
    assert version == VERSION
    expected = {*PROJECT["dependencies"],
                *(s for specs in PROJECT["optional-dependencies"].values() for s in specs)}
    got = {str(Requirement(r)).split(";")[0].strip() for r in requires}
    assert got == {str(Requirement(s)) for s in expected}


_CHECK_REQUIRES = r"""
import sys
from importlib import metadata
from packaging.requirements import Requirement

dist = metadata.distribution("vizhooks")
extras = set(dist.metadata.get_all("Provides-Extra") or [])
problems, seen = [], set()

def check(raw, extra, chain):
    req = Requirement(raw)
    if req.marker is not None and not req.marker.evaluate({"extra": extra}):
        return
    key = (req.name.lower(), tuple(sorted(req.extras)), str(req.specifier))
    if req.name == "vizhooks":
        problems.extend(f"{chain}: unknown extra {e}" for e in req.extras - extras)
        return
    try:
        found = metadata.distribution(req.name)
    except metadata.PackageNotFoundError:
        problems.append(f"{chain} -> {raw}: not installed")
        return
    if not req.specifier.contains(found.version, prereleases=True):
        problems.append(f"{chain} -> {raw}: {found.version} is installed")
    if key in seen:
        return
    seen.add(key)
    for sub in req.extras:  # what e.g. ray[data] adds to ray
        for dep in found.requires or []:
            if Requirement(dep).marker is not None and "extra" in str(Requirement(dep).marker):
                check(dep, sub, f"{chain} -> {req.name}[{sub}]")

for raw in dist.requires or []:
    marker = Requirement(raw).marker
    for extra in sorted(extras) if marker is not None and "extra" in str(marker) else [""]:
        check(raw, extra, f"vizhooks[{extra}]" if extra else "vizhooks")
print("\n".join(sorted(set(problems))))
"""


@pytest.mark.packaging
def test_installed_wheels_requirements_are_all_met(installed):
    problems = _run([str(installed.python), "-c", _CHECK_REQUIRES], cwd=installed.tmp).strip()
    assert not problems, "Requires-Dist of the wheel not met by this environment:\n" + problems
    # pip's own view (core requirements only); lines about other packages are not ours to judge
    done = subprocess.run([str(installed.python), "-m", "pip", "check"], cwd=installed.tmp, env=_child_env(),
                          capture_output=True, text=True, timeout=120)
    ours = [line for line in done.stdout.splitlines() if line.lower().startswith("vizhooks ")]
    assert not ours, "\n".join(ours)


_IMPORT = r"""
import sys
from importlib import metadata

import vizhooks

print(vizhooks.__version__)
print(vizhooks.__file__)
print(*sorted(m for m in OPTIONAL if m in sys.modules))
(script,) = metadata.entry_points(group="console_scripts", name="vizhooks")
try:  # the `vizhooks` command, without another start-up
    script.load()(["--version"])
except SystemExit as exc:
    assert exc.code in (0, None), exc.code
"""


@pytest.mark.packaging
def test_installed_package_imports_lazily_and_knows_its_version(installed):
    optional = sorted({*LAZY_EXTRAS, "streamlit", "streamlit_webrtc"})
    out = _run([str(installed.python), "-c", f"OPTIONAL = {optional!r}\n" + _IMPORT], cwd=installed.tmp)
    version, where, imported, command = out.splitlines()
    assert version == VERSION
    assert Path(where).is_relative_to(installed.venv), f"vizhooks came from {where}, not from the wheel"
    assert not imported, f"import vizhooks imported optional modules: {imported}"
    assert command == f"vizhooks {VERSION}"


@pytest.mark.packaging
def test_installed_cli_lists_layers(installed):
    out = _run([str(installed.python), "-m", "vizhooks", "--list-layers", "--model", "resnet18"],
               cwd=installed.tmp, timeout=180)
    assert "layer4.1.conv2" in out and "20 Conv2d layers and 8 blocks in resnet18." in out


@pytest.mark.packaging
def test_wheel_holds_every_file_of_the_package(installed):
    """Every file under vizhooks/ (the page's views and sources included, and any data beside the code)
    is in the wheel, and the wheel holds nothing else of ours."""
    with zipfile.ZipFile(installed.wheel) as wheel:
        got = {n for n in wheel.namelist() if n.startswith("vizhooks/")}
    want = {p.relative_to(ROOT).as_posix() for p in (ROOT / "vizhooks").rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}
    assert any(n.startswith("vizhooks/page/") for n in want)  # the page is part of the package
    assert not want - got, f"the wheel leaves out {sorted(want - got)}: include them in pyproject's package data"
    assert not got - want, f"the wheel holds files the source tree does not: {sorted(got - want)}"


#: Drives Debian's Chromium through Playwright in a process of its own (a test process can run only
#: one sync Playwright, and the browser tests' session may hold it). argv: the page's URL and a
#: screenshot's path. Prints one JSON line: the pictures loaded, the errors shown, what failed.
_OPEN_THE_PAGE = """
import json, sys
from playwright.sync_api import sync_playwright
from benchmarks.server import CHROMIUM_ARGS

url, shot = sys.argv[1], sys.argv[2]
ERRORS = '[data-testid="stAlertContentError"], [data-testid="stException"]'
# an uncaptioned picture in the main area that has arrived: a grid (the input picture has a caption);
# an error shown ends the wait too
FIRST_GRID = '''() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stImage"]')]
    .some(box => !box.querySelector('[data-testid="stImageCaption"]')
                 && [...box.querySelectorAll("img")].some(img => img.complete && img.naturalWidth > 0))'''
LOADED = '''() => [...document.querySelectorAll('[data-testid="stMain"] [data-testid="stImage"] img')]
    .filter(img => img.complete && img.naturalWidth > 0).length'''
with sync_playwright() as p:
    browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    result = {}
    try:
        page.goto(url, timeout=120_000)
        page.wait_for_function(f"() => ({FIRST_GRID})() || !!document.querySelector('{ERRORS}')", timeout=240_000)
        page.wait_for_selector('[data-testid="stApp"][data-test-script-state="notRunning"]', timeout=120_000)
    except Exception as exc:  # reported by the test, with what the page showed
        result["failed"] = str(exc).splitlines()[0]
        result["text"] = page.inner_text("body")[-2000:]
    result["grid"], result["loaded"] = page.evaluate(FIRST_GRID), page.evaluate(LOADED)
    result["errors"] = page.locator(ERRORS).all_inner_texts()
    page.screenshot(path=shot, full_page=True)
    browser.close()
print(json.dumps(result))
"""


def _installed_page(tmp: Path) -> Path:
    """What an operator deploys beside the installed package: app.py, .streamlit/ and sample_images/
    in a folder of their own (Streamlit puts the script's folder on sys.path: the repository's would
    hide the installed package)."""
    page = tmp / "page"
    page.mkdir(exist_ok=True)
    shutil.copy2(ROOT / "app.py", page)
    for folder in (".streamlit", "sample_images"):
        shutil.copytree(ROOT / folder, page / folder, ignore=shutil.ignore_patterns("__pycache__"),
                        dirs_exist_ok=True)
    return page


@pytest.mark.packaging
@pytest.mark.browser
def test_installed_page_shows_the_first_grid_in_chromium(installed, tmp_path):
    """``streamlit run app.py`` from an installed copy, with the new environment's python, opened in
    Chromium until the first feature-map grid has loaded, and no error on the page. (Asking
    ``/_stcore/health`` alone proves nothing: Streamlit answers it without running app.py.)"""
    page = _installed_page(installed.tmp)
    # the network guard stays on (its folder holds nothing of vizhooks); no other PYTHONPATH
    env = {**_child_env(), "PYTHONPATH": str(ROOT / "tests" / "netguard"), "TORCH_HOME": str(tmp_path / "th")}
    where = _run([str(installed.python), "-c", "import vizhooks.page, vizhooks; print(vizhooks.__file__)"],
                 cwd=page).strip()  # from the page's folder, as `streamlit run` sees it
    assert Path(where).is_relative_to(installed.purelib), f"the page would import vizhooks from {where}"

    log_path = tmp_path / "streamlit.log"
    with log_path.open("w") as log:
        server, url = start(env, log, python=installed.python, cwd=page)
        try:
            wait_healthy(url, server)
            shot = ROOT / "tests" / "artifacts" / "installed-page.png"  # what the browser saw, kept for a look
            shot.parent.mkdir(parents=True, exist_ok=True)
            browser = subprocess.run([sys.executable, "-c", _OPEN_THE_PAGE, url, str(shot)],
                                     cwd=ROOT, capture_output=True, text=True, timeout=420)
        finally:
            stop(server)
    output = log_path.read_text()
    assert browser.returncode == 0, browser.stdout[-2000:] + browser.stderr[-4000:]
    shown = json.loads(browser.stdout.strip().splitlines()[-1])
    assert "failed" not in shown, \
        f"no grid on the installed page ({shown['failed']}); it showed:\n{shown['text']}\nlog:\n{output[-1500:]}"
    assert not shown["errors"], f"the installed page shows errors: {shown['errors']}\nlog:\n{output[-1500:]}"
    assert shown["grid"] and shown["loaded"] >= 2, shown  # the picture the model saw, and a grid
    assert "Traceback" not in output, output
