"""Bounded maps: per-agent state and open spans. Every eviction is reported, never a silent leak."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

OnEvict = Callable[[str, int], None]  # (reason, count): reason is "capacity" or "idle"


class _Entry(Generic[V]):
    """A value and when it was last seen."""

    __slots__ = ("value", "seen")

    def __init__(self, value: V, seen: float):
        self.value, self.seen = value, seen


class BoundedMap(Generic[K, V]):
    """LRU map with an idle TTL. Thread-safe; the lock is held only for the map operation.

    `on_evict(reason, count)` is called after the lock is released.
    """

    __slots__ = ("_items", "_lock", "_max_items", "_ttl", "_clock", "_on_evict", "_next_sweep")

    def __init__(self, max_items: int, idle_ttl_s: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic, on_evict: OnEvict | None = None):
        if max_items < 1:
            raise ValueError("max_items must be >= 1")
        if idle_ttl_s is not None and not idle_ttl_s > 0:  # (NaN too) the entry just touched would be idle
            raise ValueError(f"idle_ttl_s must be > 0 or None, got {idle_ttl_s!r}")
        self._items: OrderedDict[K, _Entry[V]] = OrderedDict()
        self._lock = threading.Lock()
        self._max_items = max_items
        self._ttl = idle_ttl_s
        self._clock = clock
        self._on_evict = on_evict
        self._next_sweep = 0.0

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is held, without touching it."""
        return key in self._items

    def get(self, key: K) -> V | None:
        """The value, seen now (made the most recent); None when absent."""
        now = self._clock()
        with self._lock:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            entry.seen = now
        return entry.value

    def get_or_create(self, key: K, factory: Callable[[], V]) -> V:
        now = self._clock()
        evicted: list[tuple[str, int]] = []
        with self._lock:
            entry = self._items.get(key)
            if entry is not None:
                self._items.move_to_end(key)
                entry.seen = now
                return entry.value
            value = factory()
            self._items[key] = _Entry(value, now)
            self._evict(now, evicted)
        self._report(evicted)
        return value

    def put(self, key: K, value: V) -> None:
        now = self._clock()
        evicted: list[tuple[str, int]] = []
        with self._lock:
            self._items[key] = _Entry(value, now)
            self._items.move_to_end(key)
            self._evict(now, evicted)
        self._report(evicted)

    def pop(self, key: K) -> V | None:
        if not self._items:  # the usual case for some maps (live stream trips): no lock
            return None
        with self._lock:
            entry = self._items.pop(key, None)
        return None if entry is None else entry.value

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def _evict(self, now: float, evicted: list[tuple[str, int]]) -> None:
        """Capacity and idle evictions, oldest first. Called right after an entry was stamped `now`
        and put last, so that entry is never among them. Under the lock."""
        items = self._items
        over = len(items) - self._max_items
        if over > 0:
            for _ in range(over):
                items.popitem(last=False)
            evicted.append(("capacity", over))
        if self._ttl is not None and now >= self._next_sweep:
            # Oldest first, up to the first fresh entry; at most once a second: O(1) amortised.
            self._next_sweep = now + min(1.0, self._ttl)
            idle = 0
            while items:
                if now - next(iter(items.values())).seen < self._ttl:
                    break
                items.popitem(last=False)
                idle += 1
            if idle:
                evicted.append(("idle", idle))

    def _report(self, evicted: list[tuple[str, int]]) -> None:
        if evicted and self._on_evict is not None:
            for reason, count in evicted:
                self._on_evict(reason, count)


class OpenSpans(dict[K, V], Generic[K, V]):
    """Open span id -> value, bounded by count: a dict (lookups, pops and its emptiness test are the
    dict's own, atomic) whose inserts go through `put`. Spans that never end (a leak upstream) are
    evicted oldest first once the bound is passed, reported through `on_evict("capacity", n)`."""

    __slots__ = ("_max_items", "_lock", "_on_evict")

    def __init__(self, max_items: int, *, on_evict: OnEvict | None = None):
        super().__init__()
        self._max_items = max_items
        self._lock = threading.Lock()
        self._on_evict = on_evict

    def put(self, key: K, value: V) -> None:
        self[key] = value
        if len(self) > self._max_items:
            self.trim()

    def trim(self) -> None:
        """Evict the oldest entries down to the bound, counted."""
        evicted = 0
        with self._lock:
            while len(self) > self._max_items:
                try:
                    del self[next(iter(self))]
                    evicted += 1
                except (RuntimeError, KeyError, StopIteration):
                    continue  # another thread changed the dict meanwhile: look again
        if evicted and self._on_evict is not None:
            self._on_evict("capacity", evicted)
