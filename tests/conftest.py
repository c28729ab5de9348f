"""Shared fixtures. No test may reach the network: the guard in tests/netguard is installed here,
before anything else is imported, and through PYTHONPATH in every Python process the tests start;
it refuses name look-ups and connections that leave this machine. The torch cache points to an
empty temporary folder."""

from __future__ import annotations

import sys
from pathlib import Path

_GUARD = str(Path(__file__).resolve().parent / "netguard")
if _GUARD not in sys.path:
    sys.path.insert(0, _GUARD)
import vizhooks_netguard  # noqa: E402 - the guard must come before every other import

vizhooks_netguard.install()
vizhooks_netguard.export()  # PYTHONPATH and VIZHOOKS_OFFLINE=1, inherited by every child

import pytest  # noqa: E402 - after the guard, see above
import torch  # noqa: E402

from vizhooks import load_model  # noqa: E402

#: Tests left out of `make test-fast` besides those marked by path below (tests/e2e: browser,
#: test_benchmarks.py: bench, the wheel tests of test_packaging.py: packaging). Node ids or their
#: prefixes (a module, a test with all its parameters). Each module keeps its quick tests in the fast
#: loop; what is here took more than ~5 s on our 2 shared cores (`pytest --durations=80`).
SLOW: tuple[str, ...] = (
    "tests/test_exemplars_ray.py::test_ray_engine_gives_the_local_index",  # starts Ray: ~25 s each
    "tests/test_exemplars_ray.py::test_ray_engine_resumes_and_skips_done_files",
)

#: Tests outside tests/e2e that drive Chromium.
BROWSER: tuple[str, ...] = (
    "tests/test_network_guard.py::test_chromium_resolves_no_names",
)


def _listed(nodeid: str, prefixes: tuple[str, ...]) -> bool:
    return any(nodeid == p or nodeid.startswith((p + "::", p + "[")) for p in prefixes)


def pytest_collection_modifyitems(config, items):
    """Marks by place, so `-m "not (browser or slow or packaging or bench)"` is the fast loop."""
    for item in items:
        path = Path(str(item.fspath)).relative_to(Path(__file__).resolve().parents[1]).as_posix()
        if path.startswith("tests/e2e/") or _listed(item.nodeid, BROWSER):
            item.add_marker(pytest.mark.browser)
        if path == "tests/test_benchmarks.py":
            item.add_marker(pytest.mark.bench)
        if path == "tests/test_packaging.py" and "installed" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.packaging)
        if _listed(item.nodeid, SLOW):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("torch_home")))
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    monkeypatch.delenv("VIZHOOKS_WEIGHTS", raising=False)


@pytest.fixture(scope="session")
def resnet18():
    return load_model("resnet18", weights="none", device="cpu")


@pytest.fixture(scope="session")
def resnet50():
    return load_model("resnet50", weights="none", device="cpu")


@pytest.fixture
def image_tensor():
    g = torch.Generator().manual_seed(1)
    return torch.randn(1, 3, 96, 128, generator=g)


# --- the page (AppTest): the helpers are in tests/helpers.py ---------------------------------------


@pytest.fixture
def fresh_results():
    """The page's results forgotten, its models kept: for a test that must see the page compute."""
    from tests.helpers import clear_results

    clear_results()


@pytest.fixture
def forward_passes(fresh_results):
    """Whole-network forward passes during the test, over cold results (see helpers.whole_passes)."""
    from tests.helpers import whole_passes

    with whole_passes() as seen:
        yield seen


@pytest.fixture
def fresh_caches():
    """Nothing the page keeps, before and after the test, models included (operator models)."""
    from tests.helpers import clear_caches

    clear_caches()
    yield
    clear_caches()
