"""Benchmark 4: cold start. From launching ``python -m streamlit run app.py`` (a new process,
empty Streamlit caches, an empty TORCH_HOME so the model is built with random weights) to the
first grids visible in headless Chromium driven by Playwright: at least 6 loaded
``[data-testid="stImage"] img`` elements (the picture the model saw and the five tour grids).

The browser is started before the clock starts (it stands for a browser the person already has
open); the operating system's file cache is warm (torch and streamlit were imported before), so
this is a fresh *process*, not a fresh machine. Debian's /usr/bin/chromium is used;
``playwright install`` is never run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks import server
from benchmarks.server import CHROMIUM_ARGS

from .common import Config, Result, Row, fmt_s, fmt_samples, median

CHROMIUM = "/usr/bin/chromium"
MIN_IMAGES = 6
GRIDS_VISIBLE = """(n) => Array.from(document.querySelectorAll('[data-testid="stImage"] img'))
    .filter(img => img.complete && img.naturalWidth > 0).length >= n"""


def _one_start(browser, log_dir: Path, i: int) -> dict[str, float]:
    torch_home = tempfile.mkdtemp(prefix="vizhooks-bench-th-")
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": torch_home}
    env.pop("VIZHOOKS_WEIGHTS", None)
    log = (log_dir / f"streamlit-{i}.log").open("w")
    context = None
    start = time.perf_counter()
    proc, url = server.start(env, log)
    try:
        server.wait_healthy(url, proc, limit=180.0, poll=0.05)
        healthy = time.perf_counter() - start
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(300_000)
        nav = time.perf_counter()
        page.goto(url)
        page.wait_for_function(GRIDS_VISIBLE, arg=MIN_IMAGES, polling=50)
        grids = time.perf_counter() - start
        first_visit = time.perf_counter() - nav
        # A second visitor on the now warm server (model and activations cached).
        page2 = context.new_page()
        page2.set_default_timeout(300_000)
        nav2 = time.perf_counter()
        page2.goto(url)
        page2.wait_for_function(GRIDS_VISIBLE, arg=MIN_IMAGES, polling=50)
        warm_visit = time.perf_counter() - nav2
        return {"grids_s": grids, "healthy_s": healthy, "first_visit_s": first_visit, "warm_visit_s": warm_visit}
    finally:
        if context is not None:
            context.close()
        server.stop(proc)
        log.close()
        shutil.rmtree(torch_home, ignore_errors=True)


def run(cfg: Config) -> Result:
    case = "`streamlit run app.py` launch → 6 images loaded in headless Chromium"
    if not Path(CHROMIUM).exists():
        return Result(rows=[Row(bench="coldstart", case=case, measured=f"skipped: {CHROMIUM} missing (make chromium)",
                                status="skipped: no chromium")])
    from playwright.sync_api import sync_playwright

    starts = 1 if cfg.quick else max(1, min(cfg.repeat, 3))
    samples: list[dict[str, float]] = []
    with tempfile.TemporaryDirectory(prefix="vizhooks-bench-logs-") as logs, sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for i in range(starts):
                samples.append(_one_start(browser, Path(logs), i))
        finally:
            browser.close()
    med = {key: median([s[key] for s in samples]) for key in samples[0]}
    rows = [
        Row(bench="coldstart", case=case,
            measured=f"{fmt_s(med['grids_s'])} (server healthy after {fmt_s(med['healthy_s'])})",
            numbers=med),
        Row(bench="coldstart", case="second visitor on the warm server: navigation → 6 images loaded",
            measured=fmt_s(med["warm_visit_s"]), numbers={"warm_visit_s": med["warm_visit_s"]}),
    ]
    details = [
        f"{starts} launch(es), median reported; resnet18 with random weights (empty TORCH_HOME, VIZHOOKS_OFFLINE=1).",
        "",
        f"- launch → first grids (s): {fmt_samples([s['grids_s'] for s in samples])}",
        f"- launch → `/_stcore/health` answers (s): {fmt_samples([s['healthy_s'] for s in samples])}",
        f"- first navigation → grids (s): {fmt_samples([s['first_visit_s'] for s in samples])}",
        f"- second visitor, navigation → grids (s): {fmt_samples([s['warm_visit_s'] for s in samples])}",
    ]
    return Result(rows=rows, details=details)
