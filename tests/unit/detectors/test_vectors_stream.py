"""Conformance vectors: the mid-stream breaker (vectors.md, "Identical chunks" and "Cycle rule").

The `watch_stream` vectors run through the live processor: see test_vectors_processor.py.
"""

from __future__ import annotations

import json

import pytest

from otelguard.detectors.stream import (
    IDENTICAL_CHUNKS,
    REPEATING_CYCLE,
    StreamBreaker,
    trailing_identical_run,
    trailing_periodic_span,
)

ZH = "好。\n发。\n好。\n好。\n"  # 12 characters
MIX = "Emitting.\n好。\n发。\n好。\n好。\n"  # 22 characters
MAX_CYCLE, MIN_CYCLE = 64, 256


def identical_only(max_repeated_text: int) -> StreamBreaker:
    """A breaker with the cycle rule off."""
    return StreamBreaker(max_repeated_text=max_repeated_text, max_repeated_cycle_chars=0)


def feed(breaker: StreamBreaker, deltas) -> list:
    """Push every delta and finish the stream; return the trips reported, in order."""
    trips = [trip for trip in map(breaker.push, deltas) if trip is not None]
    final = breaker.finish()
    return trips + ([final] if final is not None else [])


def lines(text: str) -> list[str]:
    """One delta per line, newline kept."""
    return text.splitlines(keepends=True)


def test_assumed_sample_sizes():
    """ZH is 12 characters and MIX 22, as the vectors state."""
    assert (len(ZH), len(MIX)) == (12, 22)


# --- identical chunks ----------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("deltas", "run"),
    [
        ([], 0),
        (["a", "b", "c"], 1),
        (["a", "tick", "tick", "tick"], 3),
        (["same ", " same", "same"], 3),
        (["x", "x", "x", "progress continues here"], 1),
        (["\n", "  ", "\n\n"], 3),
    ],
)
def test_trailing_identical_run(deltas, run):
    """The trailing run counts deltas equal after trimming; blank deltas are equal."""
    assert trailing_identical_run(deltas) == run


def test_identical_deltas_trip_on_the_threshold():
    """With max_repeated_text 3, pushing 'tick' three times trips on the third push."""
    breaker = identical_only(3)
    reported = [breaker.push("tick") for _ in range(3)]
    assert reported[:2] == [None, None]
    assert reported[2] is not None and reported[2].rule == IDENTICAL_CHUNKS


def test_identical_deltas_trip_only_once():
    """After the trip, further pushes report nothing new."""
    breaker = identical_only(3)
    for _ in range(3):
        breaker.push("tick")
    trip = breaker.trip
    assert [breaker.push("tick") for _ in range(5)] == [None] * 5
    assert breaker.finish() is None
    assert breaker.trip is trip


def test_alternating_deltas_never_trip():
    """With max_repeated_text 10, 25 alternating 'left'/'right' deltas never trip."""
    assert feed(identical_only(10), ["left" if i % 2 == 0 else "right" for i in range(25)]) == []


def test_max_repeated_text_zero_disables_the_rule():
    """With max_repeated_text 0, 500 'tick' deltas never trip."""
    assert feed(identical_only(0), ["tick"] * 500) == []


# --- cycle rule ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "span"),
    [
        ("nothing repeats here at all", 0),
        (ZH * 40, 256),
        (MIX * 40, 256),
        (ZH * 5, 0),
        ("=" * 400, 0),
        ("─" * 400, 0),
    ],
    ids=["no-repeat", "zh-x40", "mix-x40", "zh-x5-too-short", "equals-one-char", "box-one-char"],
)
def test_trailing_periodic_span(text, span):
    """The periodic tail is min_repeated_cycle_chars long when a cycle of 2+ distinct chars covers it, else 0."""
    assert trailing_periodic_span(text, MAX_CYCLE, MIN_CYCLE) == span


def test_short_line_cycle_trips_once_by_repeating_cycle():
    """ZH*40 fed one line per delta trips exactly once, by repeating-cycle, before 400 characters."""
    trips = feed(StreamBreaker(), lines(ZH * 40))
    assert len(trips) == 1
    assert trips[0].rule == REPEATING_CYCLE
    assert trips[0].chars < 400


def test_cycle_without_newlines_trips():
    """60 deltas of '好。发。好。好。' (no newline) trip by repeating-cycle."""
    trips = feed(StreamBreaker(), ["好。发。好。好。"] * 60)
    assert [trip.rule for trip in trips] == [REPEATING_CYCLE]


# --- must never trip (one line per delta, defaults) ----------------------------------------------
def markdown_table() -> str:
    rows = [f"| {i} | item-{i} | {'ok' if i % 2 == 0 else 'pending'} |\n" for i in range(40)]
    return "| # | item | status |\n|---|---|---|\n" + "".join(rows)


def css_rows() -> str:
    return "".join(f".row-{i} {{ display: flex; align-items: center; gap: 8px; }}\n" for i in range(40))


def json_objects() -> str:
    objects = [{"id": i, "name": f"item-{i}", "enabled": i % 2 == 0, "tags": ["a", "b"]} for i in range(40)]
    return json.dumps(objects, indent=2) + "\n"


def log_lines() -> str:
    return "".join(f"2026-09-18T16:0{i % 10}:00 INFO processing record {i} done\n" for i in range(60))


def function_stubs() -> str:
    return "".join(f"def handler_{i}(event):\n    return None\n\n" for i in range(40))


def bullet_list() -> str:
    return "".join(f"- item {i}\n" for i in range(40))


LEGIT = {
    "markdown-table": markdown_table,
    "css": css_rows,
    "json-list": json_objects,
    "log-lines": log_lines,
    "function-stubs": function_stubs,
    "bullet-list": bullet_list,
}


@pytest.mark.parametrize("sample", LEGIT.values(), ids=LEGIT.keys())
def test_legitimate_structured_output_never_trips(sample):
    """Regular but progressing output, fed one line per delta, never trips with the defaults."""
    assert feed(StreamBreaker(), lines(sample())) == []
