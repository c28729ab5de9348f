"""Files built in a thread of their own, once per key for every session of the server (single flight),
with the progress the page shows while they build.

The lesson's take-home notebook and HTML handout take from seconds to a minute (47.5 s for the
handout of the whole lesson on a quiet machine, 164 s under a class's load). Made in a session's
script run, every rerun would cut the build short (a follower's page reruns whenever the teacher moves
on); made in Streamlit's deferred download, each click built its own copy and the page could say
nothing while it ran. Here the first session that asks starts the build, every other session asking
for the same key while it runs gets the same build and its progress, and the finished bytes are kept
(bounded in bytes) for whoever asks next.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field

from vizhooks.page.cache import ByteLRU

LOG = logging.getLogger("vizhooks.page")

#: How a build hears its progress: (parts done, parts in all).
Progress = Callable[[int, int], None]


@dataclass
class Build:
    """One file being made, or made: its progress, and its bytes or the exception that stopped it."""

    kind: str
    total: int
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    data: bytes | None = None
    error: BaseException | None = None
    finished: float | None = None

    @property
    def running(self) -> bool:
        return self.finished is None

    def seconds(self) -> float:
        """Seconds it has taken so far (running) or took (finished)."""
        return (self.finished if self.finished is not None else time.monotonic()) - self.started

    def step(self, done: int, total: int) -> None:
        self.done, self.total = done, max(total, 1)


class Builds:
    """Files made once per key in a thread of their own (see the module's docstring).

    ``start(key, kind, total, make)`` starts ``make(progress)`` unless the same key is running or made
    (then that build is returned: single flight); ``find(key)`` is the running build, the one that
    failed, or the finished one still kept; ``last_seconds(kind)`` how long the last build of a kind
    took, the page's estimate for the next. ``made`` counts the builds started, for tests.
    """

    def __init__(self, max_bytes: int | float) -> None:
        self._done = ByteLRU(max_bytes)
        self._running: dict[Hashable, Build] = {}
        self._seconds: dict[str, float] = {}
        self._lock = threading.Lock()
        self.made = 0

    def find(self, key: Hashable) -> Build | None:
        with self._lock:
            running = self._running.get(key)
        if running is not None:
            return running
        made = self._done.peek(key)
        return made if isinstance(made, Build) else None

    def start(self, key: Hashable, kind: str, total: int, make: Callable[[Progress], bytes]) -> Build:
        with self._lock:
            found = self._running.get(key)
            if found is not None and found.error is None:
                return found  # running now: the same build for every session that asks
            made = self._done.peek(key)
            if isinstance(made, Build):
                return made
            build = self._running[key] = Build(kind, total)  # a failed build is tried again
            self.made += 1
        threading.Thread(target=self._run, args=(key, build, make), name=f"vizhooks-build-{kind}",
                         daemon=True).start()
        return build

    def _run(self, key: Hashable, build: Build, make: Callable[[Progress], bytes]) -> None:
        try:
            data = make(build.step)
        except Exception as exc:  # kept for the page to say; the next click tries again
            LOG.warning("building %s failed: %s", build.kind, exc)
            build.error = exc
            build.finished = time.monotonic()
            return
        build.data = data
        build.done = build.total
        build.finished = time.monotonic()
        self._done.get_or_create(key, lambda: build, lambda b: len(b.data or b""))
        with self._lock:
            self._seconds[build.kind] = build.seconds()
            if self._running.get(key) is build:
                del self._running[key]

    def last_seconds(self, kind: str) -> float | None:
        with self._lock:
            return self._seconds.get(kind)

    def wait(self, timeout: float) -> bool:
        """Whether every build finished within ``timeout`` seconds (tests, a server shutting down)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if not any(build.running for build in self._running.values()):
                    return True
            time.sleep(0.05)
        return False
