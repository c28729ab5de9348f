"""Load: N simultaneous browser sessions against one server, each with its own layers and its own
upload, each of which must show exactly its own numbers.

N comes from VIZHOOKS_LOAD_N (default 3; `make loadtest` uses 30). One Chromium, one context per
session, all driven at once with Playwright's async API in a thread of its own (so it cannot meet
the sync API that conftest's `browser` fixture may be running in this process). The expected
numbers come from the library, run here with the server's settings (offline, empty TORCH_HOME:
the same seeded random weights). Times from upload to finished grids go to
tests/artifacts/load.json with their p50 and p95.
"""

from __future__ import annotations

import asyncio
import io
import json
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import numpy as np
import pytest
from PIL import Image, ImageDraw

from benchmarks.server import get_local
from vizhooks.page.texts import EN, t

from .conftest import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS

pytestmark = pytest.mark.browser

MAX_N = 64  # a bound on the sessions one run may open
N = int(os.environ.get("VIZHOOKS_LOAD_N", "3"))
OVERALL_S = min(60 + 20 * N, 900)  # everything the browsers do, all sessions together
STEP_MS = min(60 + 10 * N, OVERALL_S) * 1000  # one wait inside one session (2 cores shared by all)
POLL_MS = 200
CHANNELS = 16  # the page's default "Channels per layer"

RESNET18_CONVS = [
    "layer1.0.conv1", "layer1.0.conv2", "layer1.1.conv1", "layer1.1.conv2",
    "layer2.0.conv1", "layer2.0.conv2", "layer2.0.downsample.0", "layer2.1.conv1", "layer2.1.conv2",
    "layer3.0.conv1", "layer3.0.conv2", "layer3.0.downsample.0", "layer3.1.conv1", "layer3.1.conv2",
    "layer4.0.conv1", "layer4.0.conv2", "layer4.0.downsample.0", "layer4.1.conv1", "layer4.1.conv2",
]

# Finished grids: every chosen layer's heading shown; the input picture plus one grid per layer
# loaded; the .npz button plus one PNG button per layer (each comes after its grid, the last one
# is the page's last element); the "Drawing layer i of n" bar gone; the script not running. The
# status widget proves nothing: with toolbarMode "minimal" it never appears, and
# the bar only exists for three layers or more. The app root's data-test-script-state is the
# reliable "run finished" signal.
GRIDS_DONE = """([names, drawing]) => {
    const shown = new Set([...document.querySelectorAll('[data-testid="stHeading"]')]
        .filter(h => h.getClientRects().length > 0)
        .map(h => (h.querySelector('h1,h2,h3,h4,h5,h6') || h).textContent.trim()));
    if (!names.every(name => shown.has(name))) return false;
    const loaded = [...document.querySelectorAll('[data-testid="stImage"] img')]
        .filter(img => img.complete && img.naturalWidth > 0).length;
    const buttons = document.querySelectorAll('[data-testid="stMain"] [data-testid="stDownloadButton"]').length;
    const bars = [...document.querySelectorAll('[data-testid="stProgress"]')]
        .filter(bar => bar.textContent.trim().startsWith(drawing)).length;
    return loaded >= names.length + 1 && buttons >= names.length + 1 && bars === 0
        && document.querySelector('[data-testid="stApp"]').getAttribute('data-test-script-state') === 'notRunning';
}"""
DRAWING = EN["rendering"].partition("{")[0]  # "Drawing layer "

# the caption that follows each layer's heading in its column
CAPTIONS = """names => {
    const heads = [...document.querySelectorAll('[data-testid="stHeading"]')];
    const out = {};
    for (const name of names) {
        const head = heads.find(h => (h.querySelector('h1,h2,h3,h4,h5,h6') || h).textContent.trim() === name);
        let box = head ? head.closest('[data-testid="stElementContainer"]') : null;
        out[name] = null;
        for (box = box && box.nextElementSibling; box; box = box.nextElementSibling) {
            if (box.querySelector('[data-testid="stHeading"]')) break;
            const cap = box.querySelector('[data-testid="stCaptionContainer"]');
            if (cap) { out[name] = cap.textContent.trim(); break; }
        }
    }
    return out;
}"""


def session_layers(i: int) -> list[str]:
    """conv1 plus one or two layers; no two sessions (up to MAX_N) get the same list."""
    k, m = i // 2, len(RESNET18_CONVS)
    if i % 2 == 0:
        return ["conv1", RESNET18_CONVS[k % m]] if k < m else ["conv1", RESNET18_CONVS[k % m], "layer4.1.conv2"]
    step = 5 if k < m else 9
    return ["conv1", RESNET18_CONVS[k % m], RESNET18_CONVS[(k + step) % m]]


def session_image(i: int) -> tuple[str, bytes]:
    """A picture of its own for session i: seeded noise, a gradient or shapes; PNG or JPEG."""
    rng = np.random.default_rng(1000 + i)
    w, h = 200 + 7 * i, 150 + 7 * i
    kind = i % 3
    if kind == 0:
        arr = rng.integers(0, 256, size=(h, w, 3), dtype=np.uint8)
    elif kind == 1:
        yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
        phase = rng.uniform(0, 2 * np.pi, size=3)
        arr = np.stack([127.5 + 127.5 * np.sin(xx / (9 + i) + yy / (13 + 2 * i) + p) for p in phase], axis=-1)
        arr = arr.clip(0, 255).astype(np.uint8)
    else:
        arr = np.full((h, w, 3), rng.integers(0, 256, size=3), dtype=np.uint8)
    img = Image.fromarray(arr, "RGB")
    if kind == 2:
        draw = ImageDraw.Draw(img)
        for _ in range(5 + i % 7):
            x0, y0 = int(rng.integers(0, w - 20)), int(rng.integers(0, h - 20))
            box = (x0, y0, x0 + int(rng.integers(10, w // 2)), y0 + int(rng.integers(10, h // 2)))
            color = tuple(int(c) for c in rng.integers(0, 256, size=3))
            (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=color)
    buf = io.BytesIO()
    if i % 2:
        img.save(buf, format="JPEG", quality=90)
        return f"load-{i}.jpg", buf.getvalue()
    img.save(buf, format="PNG")
    return f"load-{i}.png", buf.getvalue()


@dataclass
class Session:
    index: int
    layers: list[str]
    path: Path
    saw: str = ""  # "What the model saw: W × H pixels"
    captions: dict[str, str] = field(default_factory=dict)
    top5: list[str] = field(default_factory=list)
    seconds: float | None = None


def expected_views(sessions: list[Session]) -> None:
    """What each page must show, from the library run in this process as the server runs it."""
    import vizhooks as vz
    from vizhooks.analysis import analyse, layer_stats, top_classes
    from vizhooks.models.layers import architecture_convs
    bundle = vz.load_model("resnet18", weights="auto")
    # "conv 6 of 20": the conv's place; its resolution is this photo's (the captured map's own H×W)
    place = {c.name: c.where.split(" · ")[0] for c in architecture_convs("resnet18")}
    what = t("what_output").split(" ")[0]
    for s in sessions:
        a = analyse(bundle, vz.load_image(s.path.read_bytes()), 224, s.layers)
        w, h = a.picture.size
        s.saw = t("model_saw", width=w, height=h)
        for name in s.layers:
            st = layer_stats(a.activations[name])
            shown = min(CHANNELS, st.channels)
            s.captions[name] = t(
                "layer_caption", where=f"{place[name]} · {st.shape[1]}×{st.shape[2]}", what=what,
                shape="×".join(map(str, st.shape)),
                min=st.min, mean=st.mean, max=st.max,
                shown=t("shown_some", shown=shown, total=st.channels) if shown < st.channels
                else t("shown_all", total=st.channels))
        s.top5 = [f"{p.label} · {p.probability:.1%}" for p in top_classes(a.logits, bundle.categories, 5)]


def server_pid(url: str) -> int:
    """The `streamlit run app.py` process listening on this URL's port (from /proc)."""
    port = str(urlparse(url).port)
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        args = [a.decode(errors="replace") for a in argv]
        if "streamlit" in " ".join(args) and "app.py" in args and "--server.port" in args:
            at = args.index("--server.port")
            if at + 1 < len(args) and args[at + 1] == port:
                return int(entry.name)
    raise AssertionError(f"no streamlit process found for port {port}")


def proc_status(pid: int) -> dict[str, str]:
    text = Path(f"/proc/{pid}/status").read_text()
    return {k: v.strip() for k, _, v in (line.partition(":") for line in text.splitlines())}


def kib(value: str) -> int:
    return int(value.split()[0])


async def run_session(browser, base: str, s: Session, artifacts: Path) -> None:
    from playwright.async_api import expect

    context = await browser.new_context(viewport={"width": 1400, "height": 1000})
    page = await context.new_page()
    page.set_default_timeout(STEP_MS)
    try:
        await page.goto(f"{base}/?layers={','.join(s.layers)}")
        # the sample photo first, as a visitor would see it
        await page.wait_for_function(GRIDS_DONE, arg=[s.layers, DRAWING], polling=POLL_MS)
        sidebar = page.get_by_test_id("stSidebar")
        await sidebar.get_by_text("Upload", exact=True).click()
        await expect(page.get_by_text(t("no_upload"))).to_be_visible(timeout=STEP_MS)
        await expect(page.get_by_test_id("stImage")).to_have_count(0, timeout=STEP_MS)

        start = time.perf_counter()
        await sidebar.locator("input[type=file]").set_input_files(str(s.path))
        await page.wait_for_function(GRIDS_DONE, arg=[s.layers, DRAWING], polling=POLL_MS)
        s.seconds = time.perf_counter() - start

        for name in s.layers:
            await expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible(timeout=STEP_MS)
        await expect(page.get_by_text(s.saw, exact=True)).to_be_visible(timeout=STEP_MS)
        shown = await page.evaluate(CAPTIONS, s.layers)
        assert shown == s.captions, f"session {s.index} ({s.path.name}, {s.layers}): {shown} != {s.captions}"
        bars = [" ".join(x.split()) for x in await page.get_by_test_id("stProgress").all_inner_texts()]
        assert bars == s.top5, f"session {s.index}: top-5 {bars} != {s.top5}"
        assert await page.get_by_test_id("stException").count() == 0, f"session {s.index}: exception shown"
        assert await page.get_by_test_id("stAlertContentError").count() == 0, f"session {s.index}: error shown"
    except BaseException:
        try:
            await page.screenshot(path=str(artifacts / f"load-fail-{s.index}.png"), full_page=True, timeout=10_000)
        except Exception:  # the screenshot is a courtesy; the first error is the one to report
            pass
        raise
    finally:
        await context.close()


async def run_all(base: str, sessions: list[Session], artifacts: Path) -> list[BaseException | None]:
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            tasks = [asyncio.create_task(run_session(browser, base, s, artifacts)) for s in sessions]
            try:
                await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), timeout=OVERALL_S)
            except TimeoutError:
                pass  # wait_for has cancelled what was still running; those sessions report it below
            late = TimeoutError(f"not finished within the overall limit of {OVERALL_S} s")
            return [late if task.cancelled() else task.exception() for task in tasks]
        finally:
            await browser.close()


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values, dtype=float), q))


@pytest.mark.timeout(OVERALL_S + 300)
def test_simultaneous_sessions_each_see_their_own_numbers(server, tmp_path, monkeypatch):
    assert 1 <= N <= MAX_N, f"VIZHOOKS_LOAD_N must be 1..{MAX_N}, not {N}"
    if not Path(CHROMIUM).exists():
        raise RuntimeError("chromium is missing: `make test` installs it with apt-get")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    sessions = []
    for i in range(N):
        name, data = session_image(i)
        path = tmp_path / name
        path.write_bytes(data)
        sessions.append(Session(i, session_layers(i), path))
    assert len({tuple(s.layers) for s in sessions}) == N
    assert len({s.path.read_bytes() for s in sessions}) == N

    # the server's settings: offline, an empty torch cache -> the same seeded random weights
    monkeypatch.setenv("VIZHOOKS_OFFLINE", "1")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "th"))
    expected_views(sessions)

    pid = server_pid(server)
    hwm_before = kib(proc_status(pid)["VmHWM"])
    peak = {"rss": 0}
    stop = threading.Event()

    def sample_rss() -> None:
        while not stop.is_set():
            try:
                peak["rss"] = max(peak["rss"], kib(proc_status(pid)["VmRSS"]))
            except (OSError, KeyError):
                return
            stop.wait(0.5)

    sampler = threading.Thread(target=sample_rss, daemon=True)
    sampler.start()
    started = time.perf_counter()
    try:
        # a thread of its own: a fresh event loop, whatever the sync Playwright fixture is doing
        with ThreadPoolExecutor(max_workers=1) as pool:
            outcomes = pool.submit(asyncio.run, run_all(server, sessions, ARTIFACTS)).result()
    finally:
        stop.set()
        sampler.join(timeout=5)
    wall = time.perf_counter() - started

    status = proc_status(pid)  # raises if the server process is gone
    assert status["State"][0] not in "ZX", f"server process {pid} is {status['State']}"
    assert get_local(f"{server}/_stcore/health", timeout=30)[0] == 200

    times = [s.seconds for s in sessions if s.seconds is not None]
    report = {
        "n": N,
        "wall_s": round(wall, 2),
        "p50_s": round(percentile(times, 50), 3) if times else None,
        "p95_s": round(percentile(times, 95), 3) if times else None,
        "upload_to_grids_s": {str(s.index): None if s.seconds is None else round(s.seconds, 3) for s in sessions},
        "layers": {str(s.index): s.layers for s in sessions},
        "server_peak_rss_mib_sampled": round(peak["rss"] / 1024, 1),
        "server_vmhwm_mib_before": round(hwm_before / 1024, 1),
        "server_vmhwm_mib_after": round(kib(status["VmHWM"]) / 1024, 1),
        "failures": {str(s.index): repr(o)[:2000] for s, o in zip(sessions, outcomes, strict=True) if o is not None},
    }
    (ARTIFACTS / "load.json").write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(f"\nload: N={N} wall {wall:.1f} s, upload-to-grids p50 {report['p50_s']} s, p95 {report['p95_s']} s, "
          f"server peak RSS {report['server_peak_rss_mib_sampled']} MiB (VmHWM {report['server_vmhwm_mib_after']})")

    assert not report["failures"], json.dumps(report["failures"], indent=2, ensure_ascii=False)
    assert len(times) == N
