"""A byte-bounded cache shared by every session of the page, computing each key once."""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar, cast

T = TypeVar("T")

#: How long a request waits for the same request already running in another session (seconds).
WAIT_SECONDS = float(os.environ.get("VIZHOOKS_WAIT_SECONDS", "600"))


class StillComputingError(RuntimeError):
    """The same request has been running in another session for longer than the wait allows."""


class _Flight:
    """One computation in progress: who runs it, and what came out (a value or an exception)."""

    def __init__(self) -> None:
        self.owner = threading.get_ident()
        self.done = threading.Event()
        self.value: object = None
        self.error: BaseException | None = None


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the total size of its values, with
    single flight: identical requests in flight at the same time compute once.

    ``get_or_create(key, create, size)`` returns the cached value; on a miss the first caller makes
    it with ``create()`` (outside the lock, so one slow entry does not block other keys) while
    every other caller of the same key waits for that result (at most ``wait_seconds``) and gets
    the same object. A failure reaches every waiter as the same exception and is not kept: the
    next request tries again. Entries are evicted oldest first until the total fits in
    ``max_bytes``; a value larger than the whole cache is returned (to every waiter) but not kept.
    ``computed`` and ``hits`` count what happened, for tests; ``observe(key, "computed" | "hit")``,
    when given, hears each of them as it happens (the server's metrics).
    """

    def __init__(self, max_bytes: int | float, wait_seconds: float = WAIT_SECONDS,
                 observe: Callable[[Hashable, str], None] | None = None):
        self.max_bytes = int(max_bytes)
        self.wait_seconds = float(wait_seconds)
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._flights: dict[Hashable, _Flight] = {}
        self._total = 0
        self._lock = threading.Lock()
        self.computed = 0
        self.hits = 0
        self._observe = observe

    def get_or_create(self, key: Hashable, create: Callable[[], T], size: Callable[[T], int]) -> T:
        found: object = None
        mine = False
        with self._lock:
            hit = key in self._items
            if hit:
                self._items.move_to_end(key)
                self.hits += 1
                found = self._items[key][0]
            flight = self._flights.get(key)
            if not hit and flight is None:
                flight = self._flights[key] = _Flight()
                mine = True
        if hit:
            self._tell(key, "hit")
            return cast(T, found)
        assert flight is not None
        if not mine:
            if flight.owner == threading.get_ident():  # create() asked for its own key: no waiting on oneself
                return create()
            waited = cast(T, self._wait(flight))
            self._tell(key, "hit")
            return waited
        try:
            value = create()
            nbytes = int(size(value))
        except BaseException as exc:
            flight.error = exc
            with self._lock:
                del self._flights[key]
            flight.done.set()
            raise
        flight.value = value
        with self._lock:
            del self._flights[key]
            self.computed += 1
            if nbytes <= self.max_bytes:
                self._items[key] = (value, nbytes)
                self._total += nbytes
                while self._total > self.max_bytes:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._total -= dropped
        flight.done.set()
        self._tell(key, "computed")
        return value

    def peek(self, key: Hashable) -> object | None:
        """The value kept for ``key`` (as recently used), or None; never computes, never waits."""
        with self._lock:
            if key not in self._items:
                return None
            self._items.move_to_end(key)
            return self._items[key][0]

    def _tell(self, key: Hashable, event: str) -> None:
        if self._observe is not None:
            self._observe(key, event)

    def _wait(self, flight: _Flight) -> object:
        if not flight.done.wait(self.wait_seconds):
            raise StillComputingError(
                f"the same request has been running for over {self.wait_seconds:g} s in another session; "
                "try again in a moment")
        if flight.error is not None:
            raise flight.error
        with self._lock:
            self.hits += 1
        return flight.value

    @property
    def total_bytes(self) -> int:
        return self._total

    @property
    def in_flight(self) -> int:
        return len(self._flights)

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0
