"""Where a class lives: a small key-value store with hashes and time limits, in this process by default
or in Redis (``redis://host:port/db``) so several page servers share their classes.

The class logic (vizhooks.classroom.core) is written once over these few operations, each of them
one Redis command, so the two stores behave alike: keys are strings, values bytes, every key may
carry a time limit in seconds, and a key past its limit is gone.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol


class StoreUnavailableError(ConnectionError):
    """The class store cannot be reached (Redis down or unreachable)."""


class Store(Protocol):
    """The operations a class store offers (Redis's semantics)."""

    def get(self, key: str) -> bytes | None: ...
    def set(self, key: str, value: bytes, ttl: float | None = None) -> None: ...
    def delete(self, *keys: str) -> None: ...
    def expire(self, key: str, ttl: float) -> None: ...
    def incrby(self, key: str, amount: int) -> int: ...
    def hset(self, key: str, field: str, value: bytes) -> None: ...
    def hsetnx(self, key: str, field: str, value: bytes) -> bool: ...
    def hget(self, key: str, field: str) -> bytes | None: ...
    def hgetall(self, key: str) -> dict[str, bytes]: ...
    def hdel(self, key: str, *fields: str) -> None: ...
    def ping(self) -> None: ...


class MemoryStore:
    """The in-process store: one server, nothing to install. Thread-safe; time limits are checked
    when a key is read, so a stale class costs nothing until it is looked at (or :meth:`sweep`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._data: dict[str, bytes | dict[str, bytes] | int] = {}
        self._deadline: dict[str, float] = {}
        self._lock = threading.Lock()
        self._clock = clock

    def _now(self) -> float:
        return self._clock()

    def _live(self, key: str) -> bool:
        """Whether ``key`` holds a value; drops it when its time is up. Call with the lock held."""
        deadline = self._deadline.get(key)
        if deadline is not None and deadline <= self._now():
            self._data.pop(key, None)
            self._deadline.pop(key, None)
        return key in self._data

    def _hash(self, key: str, create: bool = False) -> dict[str, bytes]:
        if not self._live(key):
            if not create:
                return {}
            self._data[key] = {}
        value = self._data[key]
        if not isinstance(value, dict):
            raise TypeError(f"{key} holds a value, not a hash")
        return value

    def get(self, key: str) -> bytes | None:
        with self._lock:
            value = self._data[key] if self._live(key) else None
        if value is None or isinstance(value, bytes):
            return value
        return str(value).encode() if isinstance(value, int) else None

    def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        with self._lock:
            self._data[key] = bytes(value)
            if ttl is None:
                self._deadline.pop(key, None)
            else:
                self._deadline[key] = self._now() + ttl

    def delete(self, *keys: str) -> None:
        with self._lock:
            for key in keys:
                self._data.pop(key, None)
                self._deadline.pop(key, None)

    def expire(self, key: str, ttl: float) -> None:
        with self._lock:
            if self._live(key):
                self._deadline[key] = self._now() + ttl

    def incrby(self, key: str, amount: int) -> int:
        with self._lock:
            value = self._data[key] if self._live(key) else 0
            if isinstance(value, dict):
                raise TypeError(f"{key} holds a hash, not a number")
            total = int(value) + amount
            self._data[key] = total
            return total

    def hset(self, key: str, field: str, value: bytes) -> None:
        with self._lock:
            self._hash(key, create=True)[field] = bytes(value)

    def hsetnx(self, key: str, field: str, value: bytes) -> bool:
        with self._lock:
            fields = self._hash(key, create=True)
            if field in fields:
                return False
            fields[field] = bytes(value)
            return True

    def hget(self, key: str, field: str) -> bytes | None:
        with self._lock:
            return self._hash(key).get(field)

    def hgetall(self, key: str) -> dict[str, bytes]:
        with self._lock:
            return dict(self._hash(key))

    def hdel(self, key: str, *fields: str) -> None:
        with self._lock:
            values = self._hash(key)
            for field in fields:
                values.pop(field, None)
            if not values:
                self._data.pop(key, None)
                self._deadline.pop(key, None)

    def ping(self) -> None:
        return None

    def sweep(self) -> int:
        """Drop every key whose time is up; returns how many went."""
        with self._lock:
            keys = list(self._data)
            return sum(not self._live(key) for key in keys)

    def __len__(self) -> int:
        with self._lock:
            return sum(self._live(key) for key in list(self._data))
