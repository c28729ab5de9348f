"""The server's metrics in Prometheus text format, served at ``/metrics`` by app.py's ``st.App``.

What a class costs the server: script runs and their latency, the wait for a model's lock, the
computations the result caches ran and the requests they answered from memory (by kind:
analysis, gradients, summary, ...), sessions, classes and their followers. Counters live in a
registry of their own, so importing this module twice (tests, reruns) never registers twice.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from vizhooks.ops import observe_lock_wait

T = TypeVar("T")

REGISTRY = CollectorRegistry(auto_describe=True)
SECONDS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160)

SCRIPT_RUNS = Counter("vizhooks_script_runs_total", "Page script runs finished (ended or stopped).",
                      registry=REGISTRY)
SCRIPT_SECONDS = Histogram("vizhooks_script_run_seconds", "Seconds from the start of a page script run to its end.",
                           buckets=SECONDS, registry=REGISTRY)
LOCK_WAIT = Histogram("vizhooks_model_lock_wait_seconds", "Seconds a request waited for a model's lock.",
                      buckets=(0.001, 0.01, *SECONDS), registry=REGISTRY)
COMPUTATIONS = Counter("vizhooks_computations", "Results computed, by kind (a cache miss that ran the model).",
                       ["kind"], registry=REGISTRY)
CACHE_HITS = Counter("vizhooks_cache_hits", "Results answered by a cache or by a computation already in flight.",
                     ["kind"], registry=REGISTRY)
SESSIONS = Gauge("vizhooks_sessions", "Browser sessions connected to this server.", registry=REGISTRY)
CLASSES = Gauge("vizhooks_classes", "Classes running (in this server's class store).", registry=REGISTRY)
FOLLOWERS = Gauge("vizhooks_followers", "Students following a teacher (in this server's class store).",
                  registry=REGISTRY)
CLASS_STORE_UP = Gauge("vizhooks_class_store_up", "1 when the class store answered the last /metrics request, "
                       "else 0 (the server's log says why; vizhooks_classes keeps its last known value).",
                       registry=REGISTRY)

_local = threading.local()
observe_lock_wait(LOCK_WAIT.observe)


def kind_of(key: Hashable) -> str:
    """The kind of a result-cache key: its first item ("analysis", "gradients", ...)."""
    return key[0] if isinstance(key, tuple) and key and isinstance(key[0], str) else "other"


def observe_cache(key: Hashable, event: str) -> None:
    """The result cache's observer: one computation or one hit of the key's kind."""
    (COMPUTATIONS if event == "computed" else CACHE_HITS).labels(kind_of(key)).inc()


def computed(kind: str) -> None:
    """Count one computation from inside a function that Streamlit caches (it runs on a miss only)."""
    COMPUTATIONS.labels(kind).inc()
    _local.computed = getattr(_local, "computed", 0) + 1


def counted(kind: str, call: Callable[[], T]) -> T:
    """``call()``, a Streamlit-cached function whose body calls :func:`computed`: when the body did not
    run in this thread, the cache answered and that is a hit."""
    before = getattr(_local, "computed", 0)
    value = call()
    if getattr(_local, "computed", 0) == before:
        CACHE_HITS.labels(kind).inc()
    return value


@contextmanager
def script_run() -> Iterator[None]:
    """Time one page script run (a rerun that stops this one counts too: it ended)."""
    start = time.perf_counter()
    try:
        yield
    finally:
        SCRIPT_RUNS.inc()
        SCRIPT_SECONDS.observe(time.perf_counter() - start)


def sessions_now() -> int | None:
    """Sessions connected to this Streamlit server, or None outside one (AppTest, scripts)."""
    from streamlit.runtime import Runtime

    if not Runtime.exists():
        return None
    manager: Any = getattr(Runtime.instance(), "_session_mgr", None)  # Streamlit has no public count
    return manager.num_active_sessions() if manager is not None else None


def exposition(gauges: Callable[[], tuple[int | None, tuple[int, int] | None]] | None = None) -> tuple[bytes, str]:
    """The metrics page's body and content type; ``gauges()`` gives (sessions, (classes, followers)), the
    counts None when the class store cannot be reached."""
    sessions, counts = gauges() if gauges else (sessions_now(), (0, 0))
    if sessions is not None:
        SESSIONS.set(sessions)
    CLASS_STORE_UP.set(counts is not None)
    if counts is not None:
        CLASSES.set(counts[0])
        FOLLOWERS.set(counts[1])
    return generate_latest(REGISTRY), CONTENT_TYPE_LATEST


def routes(class_counts: Callable[[], tuple[int, int] | None] | None = None) -> list[Any]:
    """The Starlette routes app.py's ``st.App`` adds: ``GET /metrics``; ``class_counts()`` gives
    (classes, followers) when it is asked, None when the class store cannot be reached."""
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Route

    def gauges() -> tuple[int | None, tuple[int, int] | None]:
        return sessions_now(), class_counts() if class_counts else (0, 0)

    def metrics(request: Request) -> Response:
        body, content_type = exposition(gauges)
        return Response(body, media_type=content_type)

    return [Route("/metrics", metrics, methods=["GET"])]
