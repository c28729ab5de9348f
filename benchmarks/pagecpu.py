"""Benchmark 18: the CPU of one default-page run, by part (issue 34, "Load").

Scenario (a) of ``make loadtest`` is thirty visitors opening the default page at once: thirty
first runs of new sessions, one after another under one interpreter lock, once the model is
loaded and the shared analysis is made. What each of those runs costs the server is the CPU of
the page script's thread, measured here with Streamlit's AppTest on the real ``app.py`` (default
view: resnet18, chelsea.jpg, the five tour layers, 16 channels):

* two warm-up sessions first, so loading the model, the analysis, the grids' PNGs and every
  first-run cache are not counted (a new visitor on a running server finds them made);
* then N new sessions (a fresh AppTest each, its first run: the state from the link, the class
  checks, the sidebar, ...) and N reruns of the last one with nothing changed;
* the script thread's CPU (``time.thread_time`` around Streamlit's script thread, so AppTest's
  own work in the calling thread, parsing the element tree, is left out), median of N;
* by part: the functions ``app.main()`` calls, each wrapped (while this benchmark runs) with a
  thread-CPU clock that counts only the outermost wrapped call; "Streamlit and the rest" is the
  run's total less the parts (the script runner, ``st.set_page_config``, spinners, messages);
* across the parts, from one cProfile pass on a CPU clock (shares of the profiled run, as the
  profiler slows small calls more than large ones): the texts (``t``), the Streamlit cache
  look-ups (``st.cache_data`` / ``st.cache_resource``: hashing the arguments), and the pictures and
  downloads handed to Streamlit's media store.

The target is the issue's: <= 0.15 s of CPU per default-page run of a new session. AppTest runs
the script in this process without a websocket: the server's own share (protobuf to the socket,
the pictures' GETs) comes on top and is what ``make loadtest`` measures from outside.
"""

from __future__ import annotations

import contextlib
import cProfile
import dataclasses
import importlib
import pstats
import threading
import time
from collections.abc import Callable, Iterator

from .common import APP, Config, Result, Row, fmt_s, fmt_samples, median, verdict

TARGET_S = 0.15
#: The parts of a default-page run: the functions app.main() calls, by the module that defines them.
PARTS: dict[str, tuple[tuple[str, str], ...]] = {
    "state, language and link": (("vizhooks.page.state", "init_state"), ("vizhooks.page.texts", "use_session_language"),
                                 ("vizhooks.page.state", "sync_url"), ("vizhooks.page.folders", "use_root")),
    "class checks": tuple(("vizhooks.page.classes", name) for name in (
        "join_from_link", "apply_teacher", "teacher_panel", "class_bar", "class_photo", "publish",
        "send_photo_button", "gallery_panel")),
    "sidebar": (("vizhooks.page.sidebar", "sidebar"), ("vizhooks.page.sidebar", "show_model_status")),
    "header and view menu": (("vizhooks.page.present", "header"), ("vizhooks.page.present", "lesson_takes_the_screen"),
                             ("vizhooks.page.menu", "view_menu")),
    "caches: model, photo, analysis": (("vizhooks.page.results", "get_bundle"),
                                       ("vizhooks.page.results", "get_analysis"),
                                       ("vizhooks.page.sources", "photo_bytes"), ("vizhooks.analysis", "image_digest")),
    "drawing: picture and top-5": (("vizhooks.page.widgets", "input_and_predictions"),),
}
#: BY_NAME[view].show, wrapped apart (a View is frozen)
VIEW_PART = "drawing: the view (feature maps)"
REST = "Streamlit and the rest"
#: Functions whose cumulative time across the run is reported as a share of the profiled run.
ACROSS = {
    "texts (t)": ("vizhooks/i18n.py", "t"),
    "Streamlit cache look-ups (argument hashing)": ("streamlit/runtime/caching/cache_utils.py", "__call__"),
    "pictures to the media store (st.image)": ("streamlit/elements/lib/image_utils.py", "image_to_url"),
    "downloads to the media store (st.download_button)": ("streamlit/elements/widgets/button.py", "marshall_file"),
}


class Clock:
    """Thread CPU by part, counting only the outermost wrapped call of the script thread."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.local = threading.local()

    def wrap(self, part: str, fn: Callable) -> Callable:
        def timed(*args, **kwargs):
            if getattr(self.local, "inside", False):
                return fn(*args, **kwargs)
            self.local.inside = True
            start = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[part] = self.seconds.get(part, 0.0) + time.thread_time() - start
                self.local.inside = False

        return timed


@contextlib.contextmanager
def parts_clocked(clock: Clock, view: str = "maps") -> Iterator[None]:
    """Every function of PARTS wrapped by ``clock`` (app.py imports them by name on each run, so it
    picks the wrapped ones up), and the view's ``show``; all put back on exit."""
    from vizhooks.page.views import BY_NAME

    saved: list[tuple[object, str, object]] = []
    original = BY_NAME[view]
    try:
        for part, where in PARTS.items():
            for module_name, name in where:
                module = importlib.import_module(module_name)
                saved.append((module, name, getattr(module, name)))
                setattr(module, name, clock.wrap(part, getattr(module, name)))
        BY_NAME[view] = dataclasses.replace(original, show=clock.wrap(VIEW_PART, original.show))
        yield
    finally:
        for module, name, fn in reversed(saved):
            setattr(module, name, fn)
        BY_NAME[view] = original


class ScriptThread:
    """The CPU of each page run's script thread (AppTest starts one per run), and on request a
    cProfile of it on a CPU clock."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.profile: cProfile.Profile | None = None

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        from streamlit.testing.v1.local_script_runner import LocalScriptRunner

        original = LocalScriptRunner._run_script_thread
        watcher = self

        def run_script_thread(runner) -> None:
            profile = watcher.profile
            start = time.thread_time()
            if profile is not None:
                profile.enable()
            try:
                original(runner)
            finally:
                if profile is not None:
                    profile.disable()
                watcher.cpu.append(time.thread_time() - start)

        LocalScriptRunner._run_script_thread = run_script_thread
        try:
            yield
        finally:
            LocalScriptRunner._run_script_thread = original


def run(cfg: Config) -> Result:
    from streamlit.testing.v1 import AppTest

    def new_session() -> AppTest:
        at = AppTest.from_file(str(APP), default_timeout=300)
        at.run()
        _ok(at)
        return at

    n = 1 if cfg.quick else max(3, 2 * cfg.repeat)
    thread = ScriptThread()
    with thread.watching():
        for _ in range(2):  # the model, the analysis, the PNGs and the first-run caches
            at = new_session()
        thread.cpu.clear()
        firsts, reruns, by_part = [], [], []
        for _ in range(n):
            clock = Clock()
            with parts_clocked(clock):
                at = new_session()
            firsts.append(thread.cpu[-1])
            by_part.append({**clock.seconds, REST: thread.cpu[-1] - sum(clock.seconds.values())})
        for _ in range(n):
            at.run()
            _ok(at)
            reruns.append(thread.cpu[-1])
        thread.profile = profile = cProfile.Profile(time.thread_time)
        new_session()
        thread.profile = None

    first, rerun = median(firsts), median(reruns)
    parts = {part: median([p.get(part, 0.0) for p in by_part]) for part in [*PARTS, VIEW_PART, REST]}
    across, profiled = _across(profile)
    numbers = {"first_run_cpu_s": first, "rerun_cpu_s": rerun}
    rows = [
        Row(bench="pagecpu", case="CPU of a new session's default-page run (script thread, warm server)",
            measured=fmt_s(first), target=f"≤ {TARGET_S:.2f} s", status=verdict(first, TARGET_S), numbers=numbers),
        Row(bench="pagecpu", case="CPU of a rerun of the default page, nothing changed", measured=fmt_s(rerun),
            numbers={"rerun_cpu_s": rerun}),
    ]
    table = ["| part | CPU per run (median) | share |", "|---|---|---|"]
    table += [f"| {part} | {seconds * 1000:.1f} ms | {seconds / first:.0%} |" for part, seconds in parts.items()]
    table += [f"| **total** (script thread) | **{first * 1000:.1f} ms** | |", "",
              f"Across the parts (one cProfile pass on a CPU clock, {profiled * 1000:.0f} ms profiled):", "",
              "| what | share of the profiled run |", "|---|---|"]
    table += [f"| {what} | {share:.0%} |" for what, share in across.items()]
    details = [
        f"{n} new sessions and {n} reruns after two warm-up sessions; the CPU of Streamlit's script thread "
        "(`time.thread_time`), medians. By part: the functions `app.main()` calls, each on a thread-CPU clock "
        "(the outermost call only); the rest is Streamlit's runner and the calls written in `app.py` itself.",
        "",
        f"- new session's first run (s): {fmt_samples(firsts)}",
        f"- rerun, nothing changed (s): {fmt_samples(reruns)}",
        "",
        *table,
    ]
    return Result(rows=rows, details=details, profilers={rows[0].case: new_session}, profile_thread="ScriptRunner")


def _across(profile: cProfile.Profile) -> tuple[dict[str, float], float]:
    """The share of the profiled run spent inside each of ACROSS (cumulative, recursion counted once)."""
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    total = max((ct for (_, _, name), (_, _, _, ct, _) in stats.items() if name == "_run_script_thread"), default=0.0)
    shares = {}
    for what, (path, func) in ACROSS.items():
        seconds = sum(ct for (file, _, name), (_, _, _, ct, _) in stats.items()
                      if name == func and file.replace("\\", "/").endswith(path))
        shares[what] = seconds / total if total else 0.0
    return shares, total


def _ok(at) -> None:
    if at.exception:
        raise RuntimeError(f"the page raised: {[e.value for e in at.exception]}")
    if at.error:
        raise RuntimeError(f"the page showed an error: {[e.value for e in at.error]}")


if __name__ == "__main__":
    import sys

    from .common import bench_main

    sys.exit(bench_main(run, __doc__))
