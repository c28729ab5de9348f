"""The class store in Redis, so several page servers share their classes (``VIZHOOKS_CLASS_STORE``).

Each method is one Redis command with the in-process store's meaning (vizhooks.classroom.store):
time limits in seconds become milliseconds (``SET PX``, ``PEXPIRE``), hash field names come back as
``str``. A Redis that is down, unreachable, loading or refusing writes raises StoreUnavailableError
within about two seconds (short socket timeouts, no retry loop), so a page never hangs on it; the
next call after Redis returns works again (the connection pool reconnects).

Only :func:`vizhooks.classroom.core.open_store` imports this module: ``import vizhooks`` never
imports redis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from vizhooks.classroom.store import StoreUnavailableError

#: Seconds to connect, and to wait for one answer: a lost Redis costs a page at most about this long.
TIMEOUT = 2.0


def redact(url: str) -> str:
    """``url`` without its password (in the address or in ``?password=``), for messages and logs."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if parts.password is not None:
        user = parts.username or ""
        netloc = f"{user}:***@{netloc.rpartition('@')[2]}"
    query = urlencode([(k, "***" if k.lower() == "password" else v) for k, v in parse_qsl(parts.query)], safe="*")
    return f"{parts.scheme}://{netloc}{parts.path}{'?' + query if query else ''}"


class RedisStore:
    """The class store in Redis at ``url`` (``redis://[:password@]host:port/db``, ``rediss://``,
    ``unix://``). Thread-safe (redis-py's connection pool); nothing is sent until the first call.

    Raises:
        ValueError: ``url`` cannot be read as a Redis address.

    Example::

        store = RedisStore("redis://localhost:6379/0")
        store.set("vz:class:ABC234:state", b"{}", ttl=3 * 3600)
    """

    def __init__(self, url: str, *, timeout: float = TIMEOUT) -> None:
        self.url = redact(url)
        try:
            # No retry: INCRBY and HSETNX must not run twice, and a retry loop would only stretch the wait
            # (a dead pooled connection is noticed and replaced when it is taken from the pool).
            self._redis = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout,
                                               retry=Retry(NoBackoff(), 0), client_name="vizhooks-classroom")
        except ValueError as exc:
            raise ValueError(f"VIZHOOKS_CLASS_STORE={self.url!r} is not a Redis address ({exc}); use "
                             "redis://host:port/0.") from None

    def __repr__(self) -> str:
        return f"RedisStore({self.url!r})"

    def _call(self, command: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One command; every failure of Redis itself as StoreUnavailableError (a sentence naming the
        store, never its password), a key of the wrong kind as TypeError (as in the memory store)."""
        try:
            return command(*args, **kwargs)
        except redis.ResponseError as exc:
            reason = self._reason(exc)
            if reason.startswith("WRONGTYPE"):
                raise TypeError(f"{args[0] if args else 'A key'} holds another kind of value ({reason}).") from None
            raise StoreUnavailableError(
                f"The class store {self.url} refused a command ({reason}): check the Redis server (memory, "
                "persistence, a read-only replica), or unset VIZHOOKS_CLASS_STORE to keep classes in this "
                "process.") from None
        except redis.RedisError as exc:
            raise StoreUnavailableError(
                f"The class store {self.url} cannot be reached ({self._reason(exc)}): start Redis, or unset "
                "VIZHOOKS_CLASS_STORE to keep classes in this process.") from None

    def _reason(self, exc: Exception) -> str:
        # redis-py's own text ("Error 111 connecting to host:6379. Connection refused.") made part of one sentence
        reason = " ".join(str(exc).split()).rstrip(".").replace(". ", ": ") or type(exc).__name__
        password = self._redis.connection_pool.connection_kwargs.get("password")
        return reason.replace(password, "***") if password else reason

    # --- the Store protocol: one Redis command each ----------------------------------------------
    def get(self, key: str) -> bytes | None:
        return self._call(self._redis.get, key)

    def set(self, key: str, value: bytes, ttl: float | None = None) -> None:
        if ttl is None:
            self._call(self._redis.set, key, value)
        elif ttl <= 0:  # gone at once, as in the memory store (SET refuses PX 0)
            self._call(self._redis.delete, key)
        else:
            self._call(self._redis.set, key, value, px=math.ceil(ttl * 1000))

    def delete(self, *keys: str) -> None:
        if keys:
            self._call(self._redis.delete, *keys)

    def expire(self, key: str, ttl: float) -> None:
        self._call(self._redis.pexpire, key, math.ceil(ttl * 1000))

    def incrby(self, key: str, amount: int) -> int:
        return int(self._call(self._redis.incrby, key, amount))

    def hset(self, key: str, field: str, value: bytes) -> None:
        self._call(self._redis.hset, key, field, value)

    def hsetnx(self, key: str, field: str, value: bytes) -> bool:
        return bool(self._call(self._redis.hsetnx, key, field, value))

    def hget(self, key: str, field: str) -> bytes | None:
        return self._call(self._redis.hget, key, field)

    def hgetall(self, key: str) -> dict[str, bytes]:
        values = self._call(self._redis.hgetall, key)
        return {name.decode(): value for name, value in values.items()}

    def hdel(self, key: str, *fields: str) -> None:
        if fields:
            self._call(self._redis.hdel, key, *fields)

    def ping(self) -> None:
        self._call(self._redis.ping)

    def close(self) -> None:
        """Close the pooled connections (a later call opens new ones)."""
        self._redis.close()
