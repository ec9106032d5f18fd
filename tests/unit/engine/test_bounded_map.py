"""The bounded maps behind per-agent state and open spans: LRU order, idle TTL, every eviction counted."""

from __future__ import annotations

import random
from itertools import takewhile

import pytest

from otelguard.engine.bounded import BoundedMap, OpenSpans


class ReferenceBoundedMap:
    """The map's rules said as plainly as can be: a list of [key, value, last seen], least recently
    touched first; a touch moves an entry last; an insert evicts the oldest past the bound, then, at
    most once a sweep interval, the idle ones at the front."""

    def __init__(self, max_items, idle_ttl_s=None, *, clock, on_evict):
        self.entries, self.max_items, self.ttl, self.clock = [], max_items, idle_ttl_s, clock
        self.on_evict, self.next_sweep = on_evict, 0.0

    def take(self, key):
        found = [entry for entry in self.entries if entry[0] == key]
        for entry in found:
            self.entries.remove(entry)
        return found[0] if found else None

    def get(self, key):
        entry = self.take(key)
        if entry is None:
            return None
        self.entries.append([key, entry[1], self.clock()])
        return entry[1]

    def get_or_create(self, key, factory):
        now = self.clock()
        entry = self.take(key)
        if entry is not None:
            self.entries.append([key, entry[1], now])
            return entry[1]
        value = factory()
        self.entries.append([key, value, now])
        self.evict(now)
        return value

    def put(self, key, value):
        now = self.clock()
        self.take(key)
        self.entries.append([key, value, now])
        self.evict(now)

    def pop(self, key):
        entry = self.take(key)
        return None if entry is None else entry[1]

    def clear(self):
        self.entries = []

    def evict(self, now):
        reports = []
        over = len(self.entries) - self.max_items
        if over > 0:
            del self.entries[:over]
            reports.append(("capacity", over))
        if self.ttl is not None and now >= self.next_sweep:
            self.next_sweep = now + min(1.0, self.ttl)
            idle = len(list(takewhile(lambda entry: now - entry[2] >= self.ttl, self.entries)))
            if idle:
                del self.entries[:idle]
                reports.append(("idle", idle))
        for reason, count in reports:
            self.on_evict(reason, count)


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize(("max_items", "ttl"), [(1, None), (3, None), (4, 2.5), (2, 0.5), (50, 1.0)])
def test_bounded_map_touches_evicts_and_reports_as_the_plain_rules_say(seed, max_items, ttl):
    """Random gets, puts, pops and clears (with a clock that may step back) leave the same keys held,
    return the same values and report the same evictions as the rules written out plainly."""
    rng = random.Random(seed)
    now = [0.0]

    def clock():
        return now[0]

    reports, reference_reports = [], []
    bounded = BoundedMap(max_items, ttl, clock=clock, on_evict=lambda *report: reports.append(report))
    reference = ReferenceBoundedMap(max_items, ttl, clock=clock, on_evict=lambda *r: reference_reports.append(r))
    keys = [f"agent-{i}" for i in range(6)]
    for step in range(300):
        now[0] += rng.choice((0.0, 0.0, 0.1, 0.4, 1.0, 3.0, -0.2))
        key = rng.choice(keys)
        if rng.random() < 0.3:
            key = "".join(key)  # an equal key, not the same object
        operation = rng.random()
        if operation < 0.4:
            assert bounded.get_or_create(key, lambda made=step: made) == reference.get_or_create(
                key, lambda made=step: made)
        elif operation < 0.6:
            assert bounded.get(key) == reference.get(key)
        elif operation < 0.8:
            bounded.put(key, -step)
            reference.put(key, -step)
        elif operation < 0.97:
            assert bounded.pop(key) == reference.pop(key)
        else:
            bounded.clear()
            reference.clear()
        held = {entry[0] for entry in reference.entries}
        assert {k for k in keys if k in bounded} == held and len(bounded) == len(held)
        assert reports == reference_reports


def test_the_least_recently_touched_entry_is_evicted_first():
    """A get moves an entry last: the one not touched goes when the bound is passed."""
    reports: list[tuple[str, int]] = []
    bounded = BoundedMap(2, on_evict=lambda *report: reports.append(report))
    bounded.put("a", 1)
    bounded.put("b", 2)
    assert bounded.get("a") == 1  # "b" is now the least recently touched
    bounded.put("c", 3)
    assert "b" not in bounded and "a" in bounded and "c" in bounded
    assert reports == [("capacity", 1)]


def test_membership_does_not_touch_an_entry():
    bounded = BoundedMap(2)
    bounded.put("a", 1)
    bounded.put("b", 2)
    assert "a" in bounded  # asked, not touched: still the oldest
    bounded.put("c", 3)
    assert "a" not in bounded and "b" in bounded


def test_an_evicted_agent_is_made_anew_not_resurrected():
    """An entry evicted for capacity or idleness is gone: `get_or_create` makes a new value."""
    now = [0.0]
    bounded = BoundedMap(2, 10.0, clock=lambda: now[0])
    first = bounded.get_or_create("a", object)
    assert bounded.get_or_create("a", object) is first
    bounded.put("b", 1)
    bounded.put("c", 2)  # capacity: "a" goes
    assert bounded.get("a") is None
    assert bounded.get_or_create("a", object) is not first
    now[0] = 100.0
    bounded.put("d", 3)  # idle: every older entry goes
    assert bounded.get("a") is None and bounded.get("c") is None


def test_idle_entries_go_oldest_first_at_most_once_a_sweep_interval():
    """The idle rule on a timeline worked by hand."""
    now = [0.0]
    reports: list[tuple[str, int]] = []
    bounded = BoundedMap(10, 2.0, clock=lambda: now[0], on_evict=lambda *report: reports.append(report))
    bounded.put("a", 1)  # t=0: a sweep runs (nothing idle); the next is due a second later
    now[0] = 0.9
    bounded.put("b", 2)  # not due: no sweep
    now[0] = 2.0
    bounded.put("c", 3)  # due: a, idle for 2.0 >= 2, goes; b (1.1) stays; the next sweep is due at 3.0
    assert reports == [("idle", 1)] and len(bounded) == 2
    now[0] = 2.95
    bounded.put("d", 4)  # b is idle now (2.05), but no sweep is due: it stays
    assert reports == [("idle", 1)] and len(bounded) == 3
    now[0] = 3.0
    bounded.put("e", 5)  # due: b goes, the rest are fresh
    assert reports == [("idle", 1), ("idle", 1)] and len(bounded) == 3
    assert bounded.get("b") is None and bounded.get("c") == 3


@pytest.mark.parametrize("ttl", [0, -1.0, float("nan")])
def test_an_idle_ttl_that_would_evict_the_entry_just_touched_is_refused(ttl):
    with pytest.raises(ValueError, match="idle_ttl_s"):
        BoundedMap(3, ttl)


def test_a_bound_below_one_is_refused():
    with pytest.raises(ValueError, match="max_items"):
        BoundedMap(0)


def test_open_spans_past_the_bound_drop_the_oldest_and_count_them():
    """Spans that never end are evicted oldest first once the bound is passed, each counted."""
    reports: list[tuple[str, int]] = []
    spans = OpenSpans(3, on_evict=lambda *report: reports.append(report))
    for span_id in range(1, 8):
        spans.put(span_id, f"agent-{span_id}")
        assert len(spans) <= 3
    assert list(spans) == [5, 6, 7]
    assert sum(count for reason, count in reports if reason == "capacity") == 4
    assert spans.pop(6) == "agent-6" and spans.get(6) is None
