"""Analyses and rendered report parts, cached per run and recomputed when its samples change."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["VersionedCache"]

T = TypeVar("T")


class VersionedCache(Generic[T]):
    """Keeps the latest value per key with the version it was computed for (a run's sample
    count and status); a different version recomputes it. At most ``size`` keys (LRU).

    One lock serialises the computations: matplotlib's report style is process-wide state,
    and on a small machine two analyses at once only slow each other down.
    """

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._items: OrderedDict[Hashable, tuple[Hashable, T]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # how many times a value was (re)computed: tests read it

    def get(self, key: Hashable, version: Hashable, compute: Callable[[], T]) -> T:
        with self._lock:
            held = self._items.get(key)
            if held is not None and held[0] == version:
                self._items.move_to_end(key)
                return held[1]
            value = compute()
            self.computed += 1
            self._items[key] = (version, value)
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)
            return value
