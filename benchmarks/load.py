"""Load on one page server, measured from the server's side with headless visitors
(benchmarks.loadclient), not browsers: thirty Chromium renderers on our 2 cores would be the
measurement (issue 18).

    python -m benchmarks.load [--n-a 30 --n-b 30 --n-c 200 --c-window 10 --n-d 30] [--only one,a,b,c,d]

Every scenario starts a fresh ``streamlit run app.py`` (benchmarks/server.start: offline, an empty
TORCH_HOME, so the seeded random weights and empty caches) on a free port:

- one: one visitor alone: the default page, then Upload, then three photos one after another;
  the median upload run is "one analysis", the unit of (b)'s target;
- a: N visitors open the default page at the same moment;
- b: N visitors open the default page, switch to Upload, then all upload a different photo at once;
- c: M visitors open the default page, their starts spread evenly over W seconds;
- d: a class: a teacher starts one, N students open ``?class=CODE`` (their pages keep the
  follower's ``run_every`` check, as a browser does), then the teacher changes the page five times
  (the lesson, then four steps), a few seconds apart. A student's delay is the finish time of its
  first full run that shows the teacher's new step minus the finish time of the teacher's run that
  made the change; a student that shows none within 30 s never caught up. The computations between
  the end of the teacher's run and the last student's catching up (and during the students'
  arrival) are the students' own: there should be none.

A run's time is from the request (the rerun BackMsg; for an upload, its first step) to the
run's ``script_finished``, as the server answers on localhost. Computations and cache hits are
the difference of the server's ``/metrics`` counters ``vizhooks_computations_total`` and
``vizhooks_cache_hits_total`` (``kind="analysis"``) over the scenario; null where the server has
no such endpoint. The CPU seconds of the server process and of this client are reported too (the
client shares the 2 cores); ``server_cpu_per_run_s`` divides the server's by the timed runs (the
untimed ones, such as (b)'s first page and the model's loading, are in it). Prints a table with
the targets, writes tests/artifacts/loadtest.json.
Measurements, never assertions.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
from PIL import Image, ImageDraw

from benchmarks import server
from vizhooks.lesson.steps import STEPS
from vizhooks.page.texts import EN

from .loadclient import Run, Session, percentile, seconds_of

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "artifacts" / "loadtest.json"
KIND = "analysis"
METRICS = {"computations": "vizhooks_computations_total", "cache_hits": "vizhooks_cache_hits_total"}
SOURCE_KEY, UPLOAD_LABEL, UPLOADER_KEY = "source", "Upload", "upload"
ONE_PHOTOS = 5  # uploads the lone visitor makes; their median is "one analysis"
TARGET_A_S, TARGET_B_FACTOR, TARGET_C_S, TARGET_D_S = 5.0, 1.2, 10.0, 2.0
CLASS_START, CATCH_UP_S, CHANGE_GAP_S = "class_start", 30.0, 3.0
SCENARIOS = ("one", "a", "b", "c", "d")


def photo(i: int) -> tuple[str, bytes]:
    """A small JPEG of its own for visitor ``i``: a seeded colour field with shapes on it."""
    rng = random.Random(7919 * i + 1)
    w, h = 240 + 8 * (i % 5), 180 + 6 * (i % 7)
    img = Image.new("RGB", (w, h), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(img)
    for _ in range(6 + i % 5):
        x, y = rng.randrange(w - 20), rng.randrange(h - 20)
        box = (x, y, x + rng.randrange(10, w // 2), y + rng.randrange(10, h // 2))
        fill = tuple(rng.randrange(256) for _ in range(3))
        (draw.ellipse if rng.random() < 0.5 else draw.rectangle)(box, fill=fill)
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=90)
    return f"photo-{i}.jpg", buf.getvalue()


# --- the server ----------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    pid: int
    log: Path


def server_env(torch_home: str) -> dict[str, str]:
    """The environment of tests/e2e: offline, an empty torch cache (the seeded random weights)."""
    env = {**os.environ, "VIZHOOKS_OFFLINE": "1", "TORCH_HOME": torch_home, "HF_HUB_OFFLINE": "1"}
    env.pop("VIZHOOKS_WEIGHTS", None)
    return env


@contextmanager
def fresh_server(log_dir: Path, name: str) -> Iterator[Server]:
    """A new ``streamlit run app.py`` on a free port, healthy, stopped on exit."""
    torch_home = tempfile.mkdtemp(prefix="vizhooks-load-th-")
    log_path = log_dir / f"server-{name}.log"
    with log_path.open("w") as log:
        proc, url = server.start(server_env(torch_home), log)
        try:
            server.wait_healthy(url, proc, limit=180.0)
            yield Server(url, proc.pid, log_path)
        finally:
            server.stop(proc)
            shutil.rmtree(torch_home, ignore_errors=True)


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (/proc/PID/stat), None once it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def metrics_text(url: str) -> tuple[str | None, str]:
    """The body of the server's ``/metrics`` and "", or None and a sentence saying why not."""
    try:
        response = httpx2.get(f"{url}/metrics", timeout=30)
    except httpx2.HTTPError as e:
        return None, f"GET /metrics failed: {e!r}"
    if response.status_code != 200:
        return None, f"GET /metrics answered {response.status_code} (see the server's log)"
    if "html" in response.headers.get("content-type", ""):
        return None, "the server has no /metrics endpoint (Streamlit answered with the page's HTML)"
    return response.text, ""


def read_counters(url: str) -> dict[str, dict[str, float]] | None:
    """The computations and cache hits of the server's ``/metrics`` (Prometheus text) by kind, or
    None where the server serves no such endpoint or does not declare the counters."""
    from prometheus_client.parser import text_string_to_metric_families

    text, _ = metrics_text(url)
    if text is None:
        return None
    declared: set[str] = set()
    found: dict[str, dict[str, float]] = {key: {} for key in METRICS}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                for key, name in METRICS.items():
                    if sample.name == name:
                        kind = sample.labels.get("kind", "")
                        found[key][kind] = found[key].get(kind, 0.0) + sample.value
            declared.update(k for k, name in METRICS.items() if family.name == name.removesuffix("_total"))
    except ValueError:
        return None
    return found if declared == set(METRICS) else None


def read_metrics(url: str) -> dict[str, float] | None:
    """The analysis counters of the server's ``/metrics``, or None (see :func:`read_counters`). A
    declared counter with no ``kind="analysis"`` sample yet counts 0 (a labelled counter has no
    sample before its first use)."""
    counters = read_counters(url)
    return None if counters is None else {key: counters[key].get(KIND, 0.0) for key in METRICS}


def counted(before: dict[str, dict[str, float]] | None, after: dict[str, dict[str, float]] | None,
            key: str = "computations") -> dict[str, int] | None:
    """What a counter of :func:`read_counters` grew by between two readings, by kind (kinds that grew)."""
    if before is None or after is None:
        return None
    grown = {kind: int(v - before[key].get(kind, 0.0)) for kind, v in after[key].items()}
    return {kind: n for kind, n in sorted(grown.items()) if n}


# --- the visitors --------------------------------------------------------------------------------


@dataclass
class Outcome:
    """What one scenario measured: the runs it times, the visitors or runs that failed (errors),
    and every failure as a sentence."""

    runs: list[Run] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    errors: int = 0
    wall_s: float = 0.0
    delays: list[float] | None = None  # (d) what it times instead of the runs' own seconds
    extra: dict[str, Any] = field(default_factory=dict)  # more numbers for the report


async def _close_all(sessions: list[Session]) -> None:
    await asyncio.gather(*(s.close() for s in sessions), return_exceptions=True)


async def _visit(url: str, delay: float = 0.0, query: str = "", assets: bool = False,
                 media: bool = True) -> Session:
    if delay:
        await asyncio.sleep(delay)
    s = Session(url, query, assets=assets, fetch_media=media)
    try:
        await s.connect()
    except BaseException:
        await s.close()
        raise
    return s


def _collect(outcome: Outcome, results: list[Any]) -> None:
    """Each visitor's result: an exception, or the runs it timed."""
    for i, result in enumerate(results):
        if isinstance(result, BaseException):
            outcome.errors += 1
            outcome.failures.append(f"visitor {i}: {type(result).__name__}: {result}")
            continue
        for run in result:
            outcome.runs.append(run)
            if not run.ok:
                outcome.errors += 1
                if run.status != "ok":
                    outcome.failures.append(f"visitor {i}: run {run.status}")
                outcome.failures.extend(f"visitor {i}: {e}" for e in run.errors)


async def at_once(url: str, n: int, query: str = "", assets: bool = False, media: bool = True) -> Outcome:
    """(a) ``n`` visitors open the default page (or the page of ``query``) at the same moment."""
    started = time.perf_counter()
    results = await asyncio.gather(*(_visit(url, query=query, assets=assets, media=media) for _ in range(n)),
                                   return_exceptions=True)
    outcome = Outcome(wall_s=time.perf_counter() - started)
    _collect(outcome, [r if isinstance(r, BaseException) else [r.first_run] for r in results])
    await _close_all([r for r in results if isinstance(r, Session)])
    return outcome


async def spread(url: str, m: int, window: float, assets: bool = False, media: bool = True) -> Outcome:
    """(c) ``m`` visitors open the default page, their starts spread evenly over ``window`` s."""
    started = time.perf_counter()
    results = await asyncio.gather(*(_visit(url, window * i / m, assets=assets, media=media) for i in range(m)),
                                   return_exceptions=True)
    outcome = Outcome(wall_s=time.perf_counter() - started)
    _collect(outcome, [r if isinstance(r, BaseException) else [r.first_run] for r in results])
    await _close_all([r for r in results if isinstance(r, Session)])
    return outcome


async def uploads(url: str, n: int, photos_each: int = 1, assets: bool = False, media: bool = True) -> Outcome:
    """(b) ``n`` visitors open the default page and switch to Upload; then, all together, each
    uploads ``photos_each`` photos of its own one after another. The upload runs are timed."""
    barrier = asyncio.Barrier(n)
    sessions: list[Session] = []

    async def one(i: int) -> list[Run]:
        s = Session(url, assets=assets, fetch_media=media)
        sessions.append(s)
        try:
            for step in (s.connect(), s.set_widget(SOURCE_KEY, UPLOAD_LABEL)):
                run = await step
                if not run.ok:
                    raise RuntimeError(f"before the upload: run {run.status}, {run.errors}")
        finally:
            await barrier.wait()  # a visitor that failed still lets the others go
        return [await s.upload(UPLOADER_KEY, *photo(i * photos_each + k), mime="image/jpeg")
                for k in range(photos_each)]

    started = time.perf_counter()
    results = await asyncio.gather(*(one(i) for i in range(n)), return_exceptions=True)
    outcome = Outcome(wall_s=time.perf_counter() - started)
    _collect(outcome, results)
    await _close_all(sessions)
    return outcome


def step_heading(n: int) -> str:
    """The lesson's heading of step ``n`` as the page shows it in English."""
    return EN["lesson_step"].format(n=n, total=len(STEPS), title=EN[f"lesson_{STEPS[n - 1].id}_title"])


#: The teacher's changes in (d): (widget key, value) and the lesson heading every page then shows.
CHANGES: tuple[tuple[str, Any, str], ...] = (
    ("view_group", "Learn", step_heading(1)),  # the menu's Learn group opens its first view, the lesson
    *(("lesson_next", True, step_heading(n)) for n in range(2, 6)),
)


def class_code(run: Run) -> str | None:
    """The class code the teacher's page shows ("Class code: **K7Q2AB**"), or None."""
    head, _, tail = EN["class_code"].partition("{code}")
    for text in run.texts("markdown"):
        if text.startswith(head) and text.endswith(tail):
            return text[len(head):len(text) - len(tail)] or None
    return None


def since(session: Session, change: Run) -> list[str]:
    """A student's full runs that ended (or still ran) after the teacher's ``change``, in short."""
    end = change.finished or change.started
    runs = [f"{r.origin} {r.status} {r.started - end:+.2f}..{'' if r.finished is None else f'{r.finished - end:+.2f}'}"
            f" {r.texts('heading')[-1:]}" for r in session.runs if r.finished is None or r.finished >= end]
    return [*runs, f"{session.auto_reruns_sent} checks sent, {session.fragment_runs} fragment runs in all"]


def _shows(heading: str) -> Any:
    return lambda run: heading in run.texts("heading")


async def follow(url: str, n: int, changes: tuple[tuple[str, Any, str], ...] = CHANGES, gap: float = CHANGE_GAP_S,
                 catch_up: float = CATCH_UP_S, media: bool = True, auto_rerun: bool = True) -> Outcome:
    """(d) A teacher starts a class, ``n`` students follow it, the teacher makes ``changes``."""
    timed: list[float] = []
    outcome = Outcome(delays=timed)
    started = time.perf_counter()
    teacher = Session(url, fetch_media=media, auto_rerun=True)
    students: list[Session] = []
    missed, per_change = 0, []
    student_comps: dict[str, int] = {}
    teacher_comps: dict[str, int] = {}

    async def reading() -> dict[str, dict[str, float]] | None:
        return await asyncio.to_thread(read_counters, url)  # in a thread: the sessions' timers keep ticking

    def add(into: dict[str, int], grown: dict[str, int] | None) -> None:
        for kind, k in (grown or {}).items():
            into[kind] = into.get(kind, 0) + k

    def failed(who: str, run: Run) -> None:
        if not run.ok:
            outcome.errors += 1
            if run.status != "ok":
                outcome.failures.append(f"{who}: run {run.status}")
            outcome.failures.extend(f"{who}: {e}" for e in run.errors)

    try:
        for step in (teacher.connect(), teacher.set_widget(CLASS_START, True)):
            run = await step
            failed("teacher", run)
        code = class_code(run)
        if code is None:
            raise RuntimeError(f"the teacher's page shows no class code after {CLASS_START!r}: {run.errors}")
        before = await reading()
        students = [Session(url, f"class={code}", fetch_media=media, auto_rerun=auto_rerun) for _ in range(n)]
        joined = await asyncio.gather(*(s.connect() for s in students), return_exceptions=True)
        for i, result in enumerate(joined):
            if isinstance(result, BaseException):
                outcome.errors += 1
                outcome.failures.append(f"student {i}: {type(result).__name__}: {result}")
            else:
                failed(f"student {i}", result)
        add(student_comps, counted(before, await reading()))
        for key, value, heading in changes:
            await asyncio.sleep(gap)
            before = await reading()
            run = await teacher.set_widget(key, value)
            failed("teacher", run)
            mid = await reading()
            add(teacher_comps, counted(before, mid))
            shown = await asyncio.gather(*(s.wait_for(_shows(heading), catch_up) for s in students))
            add(student_comps, counted(mid, await reading()))
            if run.finished is None or heading not in run.texts("heading"):
                outcome.failures.append(f"teacher: {key}={value!r} did not show {heading!r}")
                outcome.errors += 1
                continue
            delays = [r.finished - run.finished for r in shown if r is not None and r.finished is not None]
            missed += len(students) - len(delays)
            outcome.failures.extend(f"student {i} never showed {heading!r}; its runs since the change: {since(s, run)}"
                                    for i, (s, r) in enumerate(zip(students, shown, strict=True)) if r is None)
            timed.extend(delays)
            per_change.append({"change": f"{key}={value}", "shows": heading, "caught_up": len(delays),
                               "p95_s": _round(percentile(delays, 95))})
    finally:
        outcome.wall_s = time.perf_counter() - started
        await _close_all([teacher, *students])
    for i, s in enumerate(students):
        outcome.runs.extend(s.server_runs)
        for run in s.server_runs:
            if run.status not in ("interrupted", "closed"):  # replaced by a newer one; the student left
                failed(f"student {i}", run)
        outcome.failures.extend(f"student {i}: fragment: {e}" for e in s.fragment_errors)
        outcome.errors += len(s.fragment_errors)
    outcome.extra = {
        "never_caught_up": missed, "student_computations": student_comps, "teacher_computations": teacher_comps,
        "per_change": per_change, "auto_reruns_sent": sum(s.auto_reruns_sent for s in students),
        "student_full_runs": sum(len(s.server_runs) for s in students),
        "student_fragment_runs": sum(s.fragment_runs for s in students),
        "student_finishes_missing": sum(s.finishes_missing for s in students),
    }
    return outcome


# --- the report ----------------------------------------------------------------------------------


def _round(x: float | None, digits: int = 3) -> float | None:
    return None if x is None else round(x, digits)


def summary(name: str, n: int, outcome: Outcome, before: dict[str, float] | None, after: dict[str, float] | None,
            server_cpu: float | None, client_cpu: float) -> dict[str, Any]:
    times = seconds_of(outcome.runs) if outcome.delays is None else outcome.delays
    counters = {k: after[k] - before[k] for k in METRICS} if before is not None and after is not None else None
    return {
        "scenario": name, "n": n, "runs_timed": len(times), "wall_s": _round(outcome.wall_s, 2),
        "p50_s": _round(percentile(times, 50)), "p95_s": _round(percentile(times, 95)),
        "max_s": _round(max(times) if times else None), "errors": outcome.errors,
        "computations": None if counters is None else int(counters["computations"]),
        "cache_hits": None if counters is None else int(counters["cache_hits"]),
        "server_cpu_s": _round(server_cpu, 2), "client_cpu_s": round(client_cpu, 2),
        "server_cpu_per_run_s": _round(server_cpu / len(times), 3) if server_cpu is not None and times else None,
        "media_bytes_per_run": int(statistics.mean(sum(r.media_bytes.values()) for r in outcome.runs))
        if outcome.runs else 0,
        "failures": outcome.failures[:50],
        "seconds": sorted(round(t, 3) for t in times),
        **outcome.extra,
    }


def judge(report: dict[str, dict[str, Any]], n_b: int) -> None:
    """Each scenario's target and PASS / MISS (UNKNOWN where a needed number is null)."""
    def verdict(*checks: bool | None) -> str:
        if any(c is False for c in checks):
            return "MISS"
        return "UNKNOWN" if any(c is None for c in checks) else "PASS"

    def le(x: float | None, limit: float | None) -> bool | None:
        return None if x is None or limit is None else x <= limit

    if "a" in report:
        a = report["a"]
        a["target"] = f"p95 <= {TARGET_A_S:g} s, 1 computation, 0 errors"
        one_comp = None if a["computations"] is None else a["computations"] == 1
        a["status"] = verdict(le(a["p95_s"], TARGET_A_S), one_comp, a["errors"] == 0)
    if "b" in report:
        b = report["b"]
        one = report.get("one", {}).get("p50_s")
        limit = None if one is None else TARGET_B_FACTOR * n_b * one
        b["target"] = f"0 errors, p95 <= {TARGET_B_FACTOR:g} x {n_b} x one analysis" + (
            f" = {limit:.1f} s" if limit is not None else " (not measured: run `one` too)")
        b["status"] = verdict(b["errors"] == 0, le(b["p95_s"], limit))
    if "c" in report:
        c = report["c"]
        c["target"] = f"0 errors, p95 <= {TARGET_C_S:g} s"
        c["status"] = verdict(c["errors"] == 0, le(c["p95_s"], TARGET_C_S))
    if "d" in report:
        d = report["d"]
        d["target"] = f"p95 <= {TARGET_D_S:g} s after the teacher's change, all follow, no student computation"
        quiet = None if d["computations"] is None else not d["student_computations"]
        d["status"] = verdict(le(d["p95_s"], TARGET_D_S), d["never_caught_up"] == 0, quiet, d["errors"] == 0)
    if "one" in report:
        report["one"]["target"], report["one"]["status"] = "the unit of (b)'s target", "info"


def table(report: dict[str, dict[str, Any]]) -> str:
    head = ("scenario", "n", "p50 s", "p95 s", "max s", "errors", "computations", "cache hits",
            "server CPU s", "target", "status")
    rows = [head]
    for key, r in report.items():
        times = (f"{r[k]:.2f}" if r[k] is not None else "—" for k in ("p50_s", "p95_s", "max_s"))
        counts = ("null" if r[k] is None else str(r[k]) for k in ("computations", "cache_hits"))
        cpu = "—" if r["server_cpu_s"] is None else f"{r['server_cpu_s']:.1f}"
        verdict = (r.get("target", ""), r.get("status", "?"))
        rows.append((key, str(r["n"]), *times, str(r["errors"]), *counts, cpu, *verdict))
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows)


async def _scenario(srv: Server, key: str, args: argparse.Namespace) -> tuple[int, Outcome]:
    how = {"assets": args.assets, "media": not args.no_media}
    if key == "one":
        return 1, await uploads(srv.url, 1, photos_each=ONE_PHOTOS, **how)
    if key == "a":
        return args.n_a, await at_once(srv.url, args.n_a, **how)
    if key == "b":
        return args.n_b, await uploads(srv.url, args.n_b, **how)
    if key == "d":
        return args.n_d, await follow(srv.url, args.n_d, media=how["media"])
    return args.n_c, await spread(srv.url, args.n_c, args.c_window, **how)


def run_scenario(key: str, args: argparse.Namespace, log_dir: Path) -> dict[str, Any]:
    with fresh_server(log_dir, key) as srv:
        before, cpu0, own0 = read_metrics(srv.url), cpu_seconds(srv.pid), time.process_time()
        n, outcome = asyncio.run(_scenario(srv, key, args))
        own, cpu1, after = time.process_time() - own0, cpu_seconds(srv.pid), read_metrics(srv.url)
        server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
        row = summary(key, n, outcome, before, after, server_cpu, own)
        if row["computations"] is None:
            _, why = metrics_text(srv.url)
            row["metrics_missing"] = why or f"/metrics has no {METRICS['computations']}{{kind=\"{KIND}\"}}"
        return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.load", description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-a", type=int, default=30, help="visitors opening the page at once (a)")
    parser.add_argument("--n-b", type=int, default=30, help="visitors each uploading a photo (b)")
    parser.add_argument("--n-c", type=int, default=200, help="visitors spread over --c-window seconds (c)")
    parser.add_argument("--c-window", type=float, default=10.0, help="seconds over which (c)'s visitors start")
    parser.add_argument("--n-d", type=int, default=30, help="students following a teacher (d)")
    parser.add_argument("--assets", action="store_true",
                        help="each visitor first fetches the page's HTML and the static files it names")
    parser.add_argument("--no-media", action="store_true",
                        help="a diagnosis only: skip the pictures' GETs that every browser makes")
    parser.add_argument("--only", default=",".join(SCENARIOS),
                        help=f"scenarios to run, comma-separated: {','.join(SCENARIOS)}")
    parser.add_argument("--out", type=Path, default=OUT, help="where the JSON report goes")
    args = parser.parse_args(argv)
    chosen = [k.strip() for k in args.only.split(",") if k.strip()]
    unknown = sorted(set(chosen) - set(SCENARIOS))
    if unknown:
        parser.error(f"unknown scenario {', '.join(unknown)}: choose among {', '.join(SCENARIOS)}")
    for name in ("n_a", "n_b", "n_c", "n_d"):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")

    args.out.parent.mkdir(parents=True, exist_ok=True)
    log_dir = Path(tempfile.mkdtemp(prefix="vizhooks-load-logs-"))
    report: dict[str, dict[str, Any]] = {}
    for key in SCENARIOS:
        if key in chosen:
            print(f"load: scenario {key} ...", file=sys.stderr, flush=True)
            report[key] = run_scenario(key, args, log_dir)
    judge(report, args.n_b)
    missing = sorted({r["metrics_missing"] for r in report.values() if r.get("metrics_missing")})
    doc = {
        "cpu_count": os.cpu_count(), "server_logs": str(log_dir), "assets": args.assets, "media": not args.no_media,
        "note": f"computations and cache hits are null: {'; '.join(missing)}" if missing else "",
        "scenarios": report,
    }
    args.out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
    print(table(report))
    if doc["note"]:
        print(doc["note"])
    print(f"written: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
