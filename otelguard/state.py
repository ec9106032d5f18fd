"""Bounded maps: per-agent state and open spans. Every eviction is reported, never a silent leak."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from typing import Any, Callable, Generic, Hashable, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

_NO_KEY: Any = object()  # BoundedMap's newest key when it knows none: no caller's key is it


class BoundedMap(Generic[K, V]):
    """LRU map with an idle TTL. Thread-safe; the lock is held only for the map operation.

    `on_evict(reason, count)` is called after the lock is released; reason is "capacity" or "idle".

    Entries are `[value, last seen]` lists, so a touch updates one in place. The newest entry (last
    touched or inserted) is remembered: touching it again (an agent's spans, one after another) needs
    no lookup and no reordering, as it is already last.
    """

    __slots__ = ("_items", "_lock", "_max_items", "_ttl", "_clock", "_on_evict", "_next_sweep",
                 "_newest_key", "_newest_entry")

    def __init__(self, max_items: int, idle_ttl_s: float | None = None, *,
                 clock: Callable[[], float] = time.monotonic,
                 on_evict: Callable[[str, int], None] | None = None):
        if max_items < 1:
            raise ValueError("max_items must be >= 1")
        if idle_ttl_s is not None and not idle_ttl_s > 0:  # (NaN too) the entry just touched would be idle
            raise ValueError(f"idle_ttl_s must be > 0 or None, got {idle_ttl_s!r}")
        self._items: OrderedDict[K, list] = OrderedDict()  # key -> [value, last seen]
        self._lock = threading.Lock()
        self._max_items = max_items
        self._ttl = idle_ttl_s
        self._clock = clock
        self._on_evict = on_evict
        self._next_sweep = 0.0
        self._newest_key: K = _NO_KEY
        self._newest_entry: list | None = None

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        """Whether `key` is held, without touching it (no lock: a dict's membership test is atomic)."""
        return key in self._items

    def get(self, key: K) -> V | None:
        with self._lock:
            entry = self._touched(key, self._clock())
        return None if entry is None else entry[0]

    def get_or_create(self, key: K, factory: Callable[[], V]) -> V:
        now = self._clock()
        with self._lock:
            entry = self._touched(key, now)
            if entry is not None:
                return entry[0]
            value = factory()
            self._newest(key, [value, now])
            evicted: list[tuple[str, int]] = []  # only an insert can evict
            self._evict(now, evicted)
        self._report(evicted)
        return value

    def put(self, key: K, value: V) -> None:
        now = self._clock()
        evicted: list[tuple[str, int]] = []
        with self._lock:
            self._newest(key, [value, now])
            self._items.move_to_end(key)
            self._evict(now, evicted)
        self._report(evicted)

    def pop(self, key: K) -> V | None:
        if not self._items:  # the usual case for some maps (live stream trips, every span end): no lock
            return None
        with self._lock:
            entry = self._items.pop(key, None)
            if entry is not None and entry is self._newest_entry:
                self._newest_key, self._newest_entry = _NO_KEY, None
        return None if entry is None else entry[0]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._newest_key, self._newest_entry = _NO_KEY, None

    def _touched(self, key: K, now: float) -> list | None:
        """The entry of `key`, made the newest and seen `now`; None when absent. Under the lock."""
        if key is self._newest_key:
            entry = self._newest_entry  # already last: no lookup, no reordering
        else:
            entry = self._items.get(key)
            if entry is None:
                return None
            self._items.move_to_end(key)
            self._newest_key, self._newest_entry = key, entry
        entry[1] = now  # type: ignore[index]
        return entry

    def _newest(self, key: K, entry: list) -> None:
        """Store `entry` under `key` (an insert goes last) and remember it as the newest. Under the lock."""
        self._items[key] = entry
        self._newest_key, self._newest_entry = key, entry

    def _evict(self, now: float, evicted: list[tuple[str, int]]) -> None:
        """Capacity and idle evictions, oldest first. Called right after an entry was stamped `now`
        and put last, so the newest entry is never among them."""
        items = self._items
        over = len(items) - self._max_items
        if over > 0:
            for _ in range(over):
                items.popitem(last=False)
            evicted.append(("capacity", over))
        if self._ttl is not None and now >= self._next_sweep:
            # Oldest first: stop at the first entry still fresh. Sweeping at most once per second
            # keeps the hot path O(1) amortised.
            self._next_sweep = now + min(1.0, self._ttl)
            idle = 0
            while items:
                key, (_, seen) = next(iter(items.items()))
                if now - seen < self._ttl:
                    break
                items.popitem(last=False)
                idle += 1
            if idle:
                evicted.append(("idle", idle))

    def _report(self, evicted: list[tuple[str, int]]) -> None:
        if evicted and self._on_evict is not None:
            for reason, count in evicted:
                self._on_evict(reason, count)


class OpenSpans(Generic[K, V]):
    """Open span id -> value, bounded by count. Lock-free on the hot path (dict ops are atomic).

    Spans that never end (a leak upstream) are evicted oldest first once the bound is passed,
    and reported through `on_evict("capacity", n)`.
    """

    __slots__ = ("_items", "_max_items", "_lock", "_on_evict", "get")

    def __init__(self, max_items: int, *, on_evict: Callable[[str, int], None] | None = None):
        self._items: dict[K, V] = {}
        self._max_items = max_items
        self._lock = threading.Lock()
        self._on_evict = on_evict
        # `get(key)`: the value or None. The dict's own method, bound once: every span looks up its parent.
        self.get: Callable[[K], V | None] = self._items.get

    def __len__(self) -> int:
        return len(self._items)

    @property
    def items(self) -> dict[K, V]:
        """The underlying dict: read it and pop from it directly on the hot paths (dict operations are
        atomic); insert only through `put`, which holds the bound."""
        return self._items

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        if len(self._items) > self._max_items:
            self._trim()

    def pop(self, key: K) -> V | None:
        return self._items.pop(key, None)

    def clear(self) -> None:
        self._items.clear()

    def _trim(self) -> None:
        evicted = 0
        with self._lock:
            while len(self._items) > self._max_items:
                try:
                    del self._items[next(iter(self._items))]
                    evicted += 1
                except (RuntimeError, KeyError, StopIteration):
                    continue  # another thread changed the dict meanwhile: look again
        if evicted and self._on_evict is not None:
            self._on_evict("capacity", evicted)
