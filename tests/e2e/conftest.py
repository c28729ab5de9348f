"""A real `streamlit run app.py` server on a free localhost port, and Debian's Chromium driven by
Playwright (never `playwright install`: it downloads a browser, which our machines cannot)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from benchmarks.server import CHROMIUM_ARGS, ROOT, start, stop, wait_healthy

ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.fixture(scope="session")
def server(tmp_path_factory):
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": str(tmp_path_factory.mktemp("th"))}
    log = (tmp_path_factory.mktemp("log") / "streamlit.log").open("w")
    proc, url = start(env, log)
    try:
        wait_healthy(url, proc)
        yield url
    finally:
        stop(proc)
        log.close()


@pytest.fixture(scope="session")
def playwright_driver():
    """One sync Playwright per test process: a second one started while the first runs fails
    ("Sync API inside the asyncio loop"), so every browser fixture launches from this one."""
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is missing: `make test` installs it with apt-get")
    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(playwright_driver):
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
    yield b
    b.close()


#: Chromium's own fake camera (a moving test pattern), allowed without asking.
FAKE_CAMERA = ["--use-fake-device-for-media-stream", "--use-fake-ui-for-media-stream"]


@pytest.fixture(scope="session")
def camera_browser(playwright_driver):
    """Chromium with the fake camera: the live view's and the Teach view's tests."""
    b = playwright_driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS + FAKE_CAMERA)
    yield b
    b.close()


def new_page(browser, height: int, script: str, timeout_ms: int):
    """A page 1400 pixels wide in a fresh context of ``browser``, ``script`` run before the page's own."""
    context = browser.new_context(viewport={"width": 1400, "height": height})
    context.add_init_script(script)
    pg = context.new_page()
    pg.set_default_timeout(timeout_ms)
    return pg


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    pg.set_default_timeout(120_000)
    yield pg
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS
