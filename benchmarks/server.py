"""Starting and stopping a real `streamlit run app.py` on localhost, and Debian Chromium's
settings. One home for the browser tests (tests/e2e), the tests that start a server or Chromium
(packaging, metrics, the network guard, the load client) and the benchmarks (cold start, live, load);
the tests import it from here, so no benchmark imports the tests."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Every host name but localhost resolves to nothing, so the browser can reach only this machine (IP
#: literals are not looked up; the page and its WebRTC candidates use 127.0.0.1 and this machine's
#: own addresses). The Python side of the same guard is tests/netguard.
HOST_RESOLVER_RULES = "MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1"
#: The features Playwright (1.65, its chromiumSwitches) turns off. Chromium keeps only the last
#: ``--disable-features`` it is given, so the one in CHROMIUM_ARGS repeats these and adds to them;
#: tests/e2e/test_browser.py checks that a launched browser still has all of Playwright's off.
PLAYWRIGHT_DISABLED_FEATURES = (
    "AvoidUnnecessaryBeforeUnloadCheckSync", "DestroyProfileOnBrowserClose", "HttpsUpgrades",
    "HttpsFirstBalancedModeAutoEnable", "LensOverlay", "MediaRouter", "PaintHolding", "ThirdPartyStoragePartitioning",
    "AvoidCorsURLLoaderRestartOnRedirect", "TcpPortRandomizationWin", "OptimizationHints",
    "NetworkTimeServiceQuerying", "AimEnabled", "PreconnectToSearch", "msForceBrowserSignIn",
    "msEdgeUpdateLaunchServicesPreferredVersion")
#: The address bar's drop-down, which Chromium 156 draws as a web page of its own (a renderer per window,
#: headless too, where nobody types an address). Without it the machine does about a fifth less work for the
#: same browser tests (test_lesson_steps and test_overview_convolution: 63-72 core-seconds against 75-90, four
#: runs each).
NO_OMNIBOX_POPUP = ("WebUIOmniboxPopup", "WebUIOmniboxFullPopup", "WebUIOmniboxAimPopup")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--disable-quic", "--no-first-run",
                 f"--host-resolver-rules={HOST_RESOLVER_RULES}",
                 "--disable-features=" + ",".join(PLAYWRIGHT_DISABLED_FEATURES + NO_OMNIBOX_POPUP)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(env: dict, log, port: int | None = None, script: str | Path = "app.py",
          options: tuple[str, ...] = (), python: str | Path = sys.executable,
          cwd: Path = ROOT) -> tuple[subprocess.Popen, str]:
    """Launch the page (or another ``script``, with more ``--option value`` pairs) on 127.0.0.1,
    with ``python`` (another venv's, for an installed copy) from ``cwd``; returns the process and
    its URL (not yet healthy)."""
    port = port or free_port()
    proc = subprocess.Popen(
        [str(python), "-m", "streamlit", "run", str(script), "--server.headless", "true",
         "--server.port", str(port), "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false", "--server.fileWatcherType", "none", *options],
        cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    return proc, f"http://127.0.0.1:{port}"


def get_local(url: str, timeout: float = 10) -> tuple[int, str, bytes]:
    """GET ``url`` from the server this module started: status, content type and body. Only
    http://127.0.0.1 addresses are asked; anything else is a mistake in the test."""
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.hostname != "127.0.0.1":
        raise ValueError(f"{url} is not on this machine's loopback address")
    connection = http.client.HTTPConnection("127.0.0.1", parts.port or 80, timeout=timeout)
    try:
        connection.request("GET", parts.path or "/")
        reply = connection.getresponse()
        return reply.status, reply.getheader("Content-Type", ""), reply.read()
    finally:
        connection.close()


def wait_healthy(url: str, proc: subprocess.Popen, limit: float = 120.0, poll: float = 0.2) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited early with status {proc.returncode}")
        try:
            if get_local(f"{url}/_stcore/health", timeout=2)[0] == 200:
                return
        except OSError:
            time.sleep(poll)
    raise RuntimeError("streamlit did not become healthy in time")


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=20)
