"""A byte-bounded cache shared by every session of the page."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import TypeVar

T = TypeVar("T")


class ByteLRU:
    """A thread-safe least-recently-used cache bounded by the total size of its values.

    ``get_or_create(key, create, size)`` returns the cached value or makes it with ``create()``
    (outside the lock, so one slow entry does not block other keys) and evicts the oldest
    entries until the total fits in ``max_bytes``. A value larger than the whole cache is
    returned but not kept.
    """

    def __init__(self, max_bytes: int):
        self.max_bytes = int(max_bytes)
        self._items: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._total = 0
        self._lock = threading.Lock()

    def get_or_create(self, key: Hashable, create: Callable[[], T], size: Callable[[T], int]) -> T:
        with self._lock:
            if key in self._items:
                self._items.move_to_end(key)
                return self._items[key][0]  # type: ignore[return-value]
        value = create()
        nbytes = int(size(value))
        with self._lock:
            if key in self._items:  # another thread made it meanwhile: keep one copy
                self._items.move_to_end(key)
                return self._items[key][0]  # type: ignore[return-value]
            if nbytes <= self.max_bytes:
                self._items[key] = (value, nbytes)
                self._total += nbytes
                while self._total > self.max_bytes:
                    _, (_, dropped) = self._items.popitem(last=False)
                    self._total -= dropped
        return value

    @property
    def total_bytes(self) -> int:
        return self._total

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._total = 0
