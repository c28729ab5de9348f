"""Shared fixtures. No test may reach the network: the guard in tests/netguard is installed here,
before anything else is imported, and through PYTHONPATH in every Python process the tests start;
it refuses name look-ups and connections that leave this machine. The torch cache points to an
empty temporary folder.

What `make test-fast` leaves out is marked on the tests themselves (``@pytest.mark.slow``,
``browser``, ``packaging``, ``bench``, or ``pytestmark`` for a whole module; registered in
pyproject.toml); tests/test_markers.py checks the marks against what each test does."""

from __future__ import annotations

import os
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

if os.environ.get("PYTEST_XDIST_WORKER"):
    # pytest-xdist (`make test`, `make test-fast`) runs one worker process per core: torch's own
    # threads in each of them would fight over the same cores. The processes a test starts (the CLI, a
    # notebook kernel, a benchmark's smoke run) inherit one thread through the environment: OpenMP's
    # threads spin while they wait, so two of them per process beside the other worker cost far more than
    # the core they would gain.
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"


@pytest.fixture(scope="session", autouse=True)
def _session_torch_home(tmp_path_factory):
    """An empty torch cache for the session and module fixtures too, which start before each test's own
    (:func:`_offline`): a page opened by a module fixture looked for checkpoints in ~/.cache/torch."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("session_torch_home")))
        yield


@pytest.fixture(autouse=True)
def _offline(monkeypatch, tmp_path_factory):
    monkeypatch.setenv("TORCH_HOME", str(tmp_path_factory.mktemp("torch_home")))
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    monkeypatch.delenv("VIZHOOKS_WEIGHTS", raising=False)


@pytest.fixture(autouse=True)
def _english_first():
    """Each test starts in English: a test that calls set_language("zh") in pytest's own thread
    must not leave its language to the next test of the same worker (the language is a
    context variable of that thread)."""
    from vizhooks import i18n

    i18n._current.set(None)


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
def media(monkeypatch):
    """{(mimetype, file name): bytes} of every file the page hands to Streamlit (images, downloads)."""
    from streamlit.runtime.media_file_manager import MediaFileManager

    found: dict = {}
    original = MediaFileManager.add

    def keep(self, path_or_data, mimetype, coordinates, file_name=None, is_for_static_download=False):
        found[(mimetype, file_name)] = path_or_data
        return original(self, path_or_data, mimetype, coordinates, file_name, is_for_static_download)

    monkeypatch.setattr(MediaFileManager, "add", keep)
    return found


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


@pytest.fixture(params=["memory", "redis"])
def class_store(request):
    """A factory ``make(clock) -> Store`` of an empty class store, one per kind of store: the
    in-process one, and Redis (the session's redis-server on localhost, emptied for each test; it
    keeps its own time, so the clock moves only the class's timestamps)."""
    if request.param == "memory":
        from vizhooks.classroom import MemoryStore

        return lambda clock: MemoryStore(clock)
    import redis

    from vizhooks.classroom.redis_store import RedisStore

    url = request.getfixturevalue("redis_url")
    with redis.Redis.from_url(url) as client:
        client.flushdb()
    return lambda clock: RedisStore(url)


class RedisServer:
    """A real ``redis-server`` on a localhost port, its files in ``folder``: :meth:`start`,
    :meth:`stop`, and start again on the same port with the same files. ``persist``: an append-only
    file, so the data outlives a restart; otherwise nothing is written to disk."""

    def __init__(self, folder: Path, persist: bool = False) -> None:
        import shutil

        if shutil.which("redis-server") is None:
            pytest.fail("redis-server is not installed: `make redis` (part of `make test`) installs Debian's package.")
        self.folder, self.persist, self.port, self.process = folder, persist, 0, None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> RedisServer:
        import socket
        import subprocess
        import time

        import redis

        fresh = not self.port  # a restart keeps its port
        for _ in range(5 if fresh else 1):  # a free port can be taken by another process before redis binds it
            if fresh:
                with socket.socket() as sock:
                    sock.bind(("127.0.0.1", 0))
                    self.port = sock.getsockname()[1]
            disk = ["--appendonly", "yes", "--appendfsync", "always"] if self.persist else ["--appendonly", "no"]
            self.process = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", *disk,
                 "--dir", str(self.folder), "--logfile", str(self.folder / "redis.log")],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            client = redis.Redis(port=self.port, socket_connect_timeout=1, socket_timeout=1)
            deadline = time.monotonic() + 20
            while self.process.poll() is None and time.monotonic() < deadline:
                try:
                    client.ping()
                    client.close()
                    return self
                except redis.RedisError:
                    time.sleep(0.05)
            self.stop()
        log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
        raise RuntimeError(f"redis-server did not answer PING on port {self.port}; its log ends:\n{log}")

    def stop(self) -> None:
        """Shut the server down (SIGTERM: with ``persist`` its data is on disk) and wait for it."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)


@pytest.fixture
def local_ray(monkeypatch):
    """Ray on this machine only (2 CPUs, no dashboard), shared by the Ray tests: the first of them starts
    it, and it is shut down after the last of a run of them (:func:`pytest_runtest_teardown`); they are
    one xdist group ("ray"), so they run one after another on one worker. Starting Ray (its daemons, the
    first workers importing torch) is most of what a Ray test costs."""
    import ray  # requirements-scale.txt, installed by make test: a missing Ray fails here, never skips

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    if not ray.is_initialized():
        ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING", _node_ip_address="127.0.0.1")
    return ray


def pytest_runtest_teardown(item, nextitem):
    """Ray, once the last of a run of tests using it has finished (see :func:`local_ray`)."""
    if "local_ray" in item.fixturenames and (nextitem is None or "local_ray" not in nextitem.fixturenames):
        ray = sys.modules.get("ray")
        if ray is not None and ray.is_initialized():
            ray.shutdown()


@pytest.fixture(scope="session")
def redis_url(tmp_path_factory):
    """The URL of a redis-server started once for the session (no persistence); a failure where
    redis-server is not installed."""
    server = RedisServer(tmp_path_factory.mktemp("redis")).start()
    yield server.url
    server.stop()


@pytest.fixture
def redis_server(tmp_path, request):
    """A redis-server of the test's own that the test may stop and start again; its data outlives a
    restart (appendonly) unless the test passes ``False`` (``parametrize(..., indirect=True)``)."""
    server = RedisServer(tmp_path, persist=getattr(request, "param", True)).start()
    yield server
    server.stop()


# --- pytest-xdist: which tests must share a worker ---------------------------------------------------


def pytest_collection_modifyitems(config, items):
    """Under ``--dist loadgroup`` (`make test`), tests go to the workers one by one, so a module of long
    tests no longer runs on one core while the other waits; only the tests that use one of their
    module's own module-scoped fixtures (a built wheel, Ray, a page server, a notebook run once) are
    kept together, so that fixture is still made once. A parametrized module fixture (a model of the
    zoo) groups per parameter. The tests that use Ray (:func:`local_ray`) are one group of their own, so
    Ray starts once."""
    for item in items:
        infos = getattr(item, "_fixtureinfo", None)
        if infos is None:
            continue
        if "local_ray" in infos.names_closure:
            _group(config, item, "ray")
            continue
        shared, params = False, []
        for name in infos.names_closure:
            if any(d.scope == "module" for d in infos.name2fixturedefs.get(name) or ()):
                shared = True
                callspec = getattr(item, "callspec", None)
                if callspec is not None and name in callspec.params:
                    param = callspec.params[name]
                    params.append(f"{name}={getattr(param, 'id', None) or param}")
        if shared:
            _group(config, item, ":".join([item.nodeid.split("::")[0], *sorted(params)]))


def _group(config, item, group: str) -> None:
    item.add_marker(pytest.mark.xdist_group(group))
    if getattr(config.option, "loadgroup", False) and "@" not in item.nodeid:  # an xdist worker
        _name_group(item, group)


def _name_group(item, group: str) -> None:
    """What pytest-xdist's worker does with an ``xdist_group`` mark, done so that it takes effect: the group
    goes after an ``@`` at the end of the test's id, where the scheduler reads it. xdist 3.8 writes
    ``item._nodeid``, which pytest 9 no longer reads (the id lives in ``item._id``), so every test was a
    group of its own and each worker made a module's shared fixtures again (the lesson notebook ran
    twice, 30 s each; measured with ``-v``: the tests of one group ran on both workers)."""
    from _pytest.nodeid import coerce_node_id

    item._id = coerce_node_id(f"{item.nodeid}@{group}")
    assert item.nodeid.endswith(f"@{group}"), item.nodeid
