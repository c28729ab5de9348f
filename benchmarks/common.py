"""Shared pieces of the benchmark suite: configuration, result rows, timing and profiling helpers.

Benchmarks are measurements, not tests: nothing here asserts on a duration. Targets become a
PASS / MISS column in the table.
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import statistics
import sys
import sysconfig
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "sample_images" / "chelsea.jpg"
APP = ROOT / "app.py"
#: The page's default layers (README: conv1 and the first convolution of each stage).
TOUR = ["conv1", "layer1.0.conv1", "layer2.0.conv1", "layer3.0.conv1", "layer4.0.conv1"]


@dataclass
class Config:
    """What one run measures.

    repeat: measured repetitions per benchmark (pairs for A/B comparisons); each benchmark
        scales it as documented in ``benchmarks/run.py``.
    quick: smoke-test mode: tiny workloads, one repetition; numbers are not measurements.
    profile: run cProfile over the measured operation of every MISS row.
    """

    repeat: int = 5
    quick: bool = False
    profile: bool = True


@dataclass
class Row:
    """One line of the results table. ``numbers`` holds the raw values (seconds, ratios, MiB)."""

    bench: str
    case: str
    measured: str
    target: str = "—"
    status: str = "info"
    numbers: dict[str, float] = field(default_factory=dict)


@dataclass
class Result:
    """What one benchmark hands back: table rows, markdown details, and for each case that may
    miss its target a callable that runs the measured operation once (for cProfile)."""

    rows: list[Row]
    details: list[str] = field(default_factory=list)
    profilers: dict[str, Callable[[], object]] = field(default_factory=dict)
    #: profile this thread (by name) instead of the caller's; see :func:`profile_call`
    profile_thread: str | None = None


def timed(fn: Callable[[], object]) -> float:
    """Seconds one call of ``fn`` takes (perf_counter), after a garbage collection."""
    gc.collect()
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def alternate(a: Callable[[], object], b: Callable[[], object], pairs: int,
              warmup: int = 1) -> tuple[list[float], list[float]]:
    """Time ``a`` and ``b`` alternately (A B A B ...) so drift in machine load hits both alike."""
    for _ in range(warmup):
        a()
        b()
    ta: list[float] = []
    tb: list[float] = []
    for _ in range(pairs):
        ta.append(timed(a))
        tb.append(timed(b))
    return ta, tb


def median(values: list[float]) -> float:
    return statistics.median(values)


def verdict(value: float, limit: float) -> str:
    return "PASS" if value <= limit else "MISS"


def fmt_s(seconds: float) -> str:
    """Seconds for people: 850 ms, 1.23 s, 95.0 s."""
    if seconds < 1.0:
        return f"{seconds * 1000:.0f} ms" if seconds >= 0.01 else f"{seconds * 1000:.1f} ms"
    return f"{seconds:.2f} s" if seconds < 60 else f"{seconds:.1f} s"


def fmt_samples(values: list[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values)


def _clean_paths(text: str) -> str:
    for prefix in {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], sysconfig.get_paths()["stdlib"]}:
        text = text.replace(prefix + "/", "")
    return text.replace(str(ROOT) + "/", "")


def _stats_text(prof: cProfile.Profile, limit: int) -> str:
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    stats.sort_stats("tottime").print_stats(limit)
    stats.sort_stats("cumulative").print_stats(limit)
    lines = [ln.rstrip() for ln in _clean_paths(out.getvalue()).splitlines()]
    return "\n".join(ln for ln in lines if ln and not ln.startswith("   Random listing"))


def profile_call(fn: Callable[[], object], limit: int = 14, thread: str | None = None) -> str:
    """cProfile of one call of ``fn``: the top functions by own time, then by cumulative time.

    ``thread``: profile the first thread started during the call whose name contains this text
    instead of the calling thread (Streamlit's AppTest runs the page in a script thread). From
    Python 3.12 cProfile sees every thread anyway."""
    prof = cProfile.Profile()
    if thread is None or sys.version_info >= (3, 12):
        prof.enable()
        try:
            fn()
        finally:
            prof.disable()
        return _stats_text(prof, limit)

    started: list[str] = []

    def start_in_thread(frame, event, arg):  # runs in each new thread until it hands over
        sys.setprofile(None)
        name = threading.current_thread().name
        if not started and thread in name:  # one thread only: lsprof keeps one call stack
            started.append(name)
            prof.enable()

    threading.setprofile(start_in_thread)
    try:
        fn()
    finally:
        threading.setprofile(None)
    prof.disable()
    if not started:
        return f"(no thread named like {thread!r} was started; nothing profiled)"
    return _stats_text(prof, limit)


def report(result: Result, status: bool = True) -> None:
    """A benchmark module run alone: its rows (with PASS / MISS when ``status``), then its details."""
    for row in result.rows:
        print(f"{row.case}: {row.measured}" + (f"  [{row.status}]" if status else ""))
    print("\n".join(result.details))


def bench_main(run: Callable[[Config], Result], doc: str, argv: list[str] | None = None, repeat: int = 5) -> int:
    """``python -m benchmarks.NAME [--repeat N] [--quick]`` for a module whose ``run`` takes only a Config."""
    import argparse

    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=repeat)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    report(run(Config(repeat=args.repeat, quick=args.quick, profile=False)))
    return 0

