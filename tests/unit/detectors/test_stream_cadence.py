"""The seed's two rules against a judge that evaluates them on every delta.

Reference: the rules written the obvious way, evaluated after every delta. The breaker evaluates
the identical rule on every delta too, and the cycle rule when it is due (its cadence, after
`cycle_scan`'s headroom); these properties pin what that cadence may and may not change.
"""

from __future__ import annotations

import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from stream_support import cut, reference_identical_trip

from otelguard.detectors.stream import (
    CYCLE_CHECK_EVERY,
    IDENTICAL_CHUNKS,
    REPEATING_CYCLE,
    StreamBreaker,
    periodic_period,
)

MAX_CYCLE, MIN_CYCLE = 64, 256
WORDS = ["the", "model", "reads", "a", "file", "then", "checks", "the", "value", "and", "plans", "the", "next", "tool", "call", "because"]


def seed_rules(**config) -> StreamBreaker:
    """A breaker running the seed's two rules alone, as the references do (the rules added since,
    long cycles and structure-aware cutting, are pinned in test_stream_rules.py)."""
    return StreamBreaker(**config, max_long_cycle_chars=0, max_structured_repeat_chars=0)


def reference_cycle_trip(deltas: list[str]) -> tuple[int, int] | None:
    """(index, chars) of the first delta after which the text's tail is periodic."""
    text = ""
    for index, delta in enumerate(deltas):
        text += delta
        if periodic_period(text[-2 * MIN_CYCLE:], MAX_CYCLE, MIN_CYCLE):
            return index, len(text)
    return None


def trip_index(breaker: StreamBreaker, deltas: list[str]) -> int | None:
    for index, delta in enumerate(deltas):
        if breaker.push(delta) is not None:
            return index
    return None


def prose(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    while sum(map(len, words)) + len(words) < chars:
        words.append(rng.choice(WORDS) + rng.choice(["", "", "", str(rng.randint(0, 999))]))
    return " ".join(words)[:chars]


@settings(max_examples=examples(200), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    limit=st.integers(2, 70),
    pieces=st.lists(st.sampled_from(["tick", " tick", "tick ", "\n", "", "  ", "tock", "x"]), max_size=400),
)
def test_identical_rule_trips_on_exactly_the_delta_a_per_delta_judge_would(seed, limit, pieces):
    """Cycle rule off: the batched breaker trips on the same delta, with the same run, as the reference."""
    breaker = seed_rules(max_repeated_text=limit, max_repeated_cycle_chars=0)
    index = trip_index(breaker, pieces)
    assert index == reference_identical_trip(pieces, limit)
    if index is not None:
        assert breaker.trip.rule == IDENTICAL_CHUNKS
        assert breaker.trip.run == limit
        assert breaker.trip.chars == sum(map(len, pieces[: index + 1]))


@settings(max_examples=examples(200), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    prefix=st.integers(0, 600),
    period=st.integers(2, MAX_CYCLE),
    chanted=st.integers(0, MIN_CYCLE + 2 * CYCLE_CHECK_EVERY),
    low=st.integers(1, 4),
    spread=st.integers(0, 8),
)
def test_a_stream_is_flagged_by_its_end_exactly_when_a_per_delta_judge_would_flag_it(
        seed, prefix, period, chanted, low, spread):
    """Prose, then a cycle that stops anywhere around the rule's span, cut in deltas of any sizes:
    the breaker trips while fed or at `finish` exactly when a per-delta judge trips at some delta
    (the cadence may delay a trip to the end of the stream, never lose it)."""
    rng = random.Random(seed)
    unit = "".join(rng.choice("abcdefgh ,.\n") for _ in range(period))
    if len(set(unit)) < 2:
        unit = "ab" + unit[2:]
    text = prose(rng, prefix) + (unit * (chanted // period + 1))[:chanted]
    deltas = cut(text, rng, (low, low + spread))
    breaker = seed_rules(max_repeated_text=0)  # the cycle rule alone
    flagged = trip_index(breaker, deltas) is not None or breaker.finish() is not None
    assert flagged == (reference_cycle_trip(deltas) is not None)
    if flagged:
        assert breaker.trip.rule == REPEATING_CYCLE


@settings(max_examples=examples(150), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    prefix=st.integers(0, 3_000),
    period=st.integers(2, MAX_CYCLE),
    size=st.integers(1, 9),
)
def test_cycle_trips_soon_after_the_tail_first_becomes_periodic(seed, prefix, period, size):
    """Prose, then a cycle that never ends, cut in equal deltas: the breaker trips by the cycle rule
    no later than the design's cadence allows (CYCLE_CHECK_EVERY - 1 characters, plus the rest of
    the delta) after a per-delta judge would, and never before the tail is periodic."""
    rng = random.Random(seed)
    unit = "".join(rng.choice("abcdefgh ,.\n") for _ in range(period))
    if len(set(unit)) < 2:
        unit = "ab" + unit[2:]
    text = prose(rng, prefix) + unit * (2 * MIN_CYCLE // period + 40)
    deltas = [text[at : at + size] for at in range(0, len(text), size)]
    expected = reference_cycle_trip(deltas)
    assert expected is not None
    breaker = seed_rules()
    index = trip_index(breaker, deltas)
    assert index is not None and breaker.trip.rule in (REPEATING_CYCLE, IDENTICAL_CHUNKS)
    if breaker.trip.rule == IDENTICAL_CHUNKS:  # a whole-delta cycle makes identical deltas too
        assert index == reference_identical_trip(deltas, 60)
        return
    chars = breaker.trip.chars
    assert chars == sum(map(len, deltas[: index + 1]))
    assert index >= expected[0]
    assert chars - expected[1] <= CYCLE_CHECK_EVERY - 1 + size


@settings(max_examples=examples(150), deadline=None)
@given(seed=st.integers(0, 10_000), chars=st.integers(0, 6_000), low=st.integers(1, 4), spread=st.integers(0, 12))
def test_prose_never_trips_whatever_the_delta_sizes(seed, chars, low, spread):
    """Prose cut into deltas of any sizes never trips, at any delta or at the end."""
    rng = random.Random(seed)
    text = prose(rng, chars)
    deltas = cut(text, rng, (low, low + spread))
    breaker = StreamBreaker()
    assert trip_index(breaker, deltas) is None
    assert breaker.finish() is None


@settings(max_examples=examples(100), deadline=None)
@given(seed=st.integers(0, 10_000), low=st.integers(1, 4), spread=st.integers(0, 12), prefix=st.integers(0, 2_000))
def test_uneven_deltas_still_trip_on_a_cycle_and_only_where_the_tail_is_periodic(seed, low, spread, prefix):
    """Deltas of uneven size: the budget is an estimate, so the trip may land later than the cadence,
    but it lands, and only on a periodic tail."""
    rng = random.Random(seed)
    unit = "".join(rng.choice("abcdefgh ,.\n") for _ in range(rng.randint(2, MAX_CYCLE)))
    if len(set(unit)) < 2:
        unit = "ab" + unit[2:]
    text = prose(rng, prefix) + unit * (4 * MIN_CYCLE // len(unit) + 40)
    deltas = cut(text, rng, (low, low + spread))
    expected = reference_cycle_trip(deltas)
    breaker = seed_rules()
    index = trip_index(breaker, deltas)
    assert index is not None and expected is not None
    if breaker.trip.rule == IDENTICAL_CHUNKS:
        assert index == reference_identical_trip(deltas, 60)
    else:
        assert index >= expected[0]
        seen = "".join(deltas[: index + 1])
        assert periodic_period(seen[-2 * MIN_CYCLE:], MAX_CYCLE, MIN_CYCLE) == breaker.trip.period
        assert breaker.trip.chars - expected[1] <= MIN_CYCLE


def test_a_structured_run_that_breaks_leaves_the_next_run_judged_on_its_own_deltas():
    """Identical letterless deltas run on within the structured allowance; when that run breaks, a
    run of blank deltas after it trips on the delta that reaches the limit, as a per-delta judge would."""
    deltas = ["Totals:"] + ["."] * 10 + ["x"] + [" ", "\n", "  "] + ["more prose"] * 2
    breaker = StreamBreaker(max_repeated_text=3)
    assert trip_index(breaker, deltas) == reference_identical_trip(deltas[11:], 3) + 11 == 14
    assert breaker.trip.rule == IDENTICAL_CHUNKS and not breaker.trip.structured and breaker.trip.run == 3


def test_the_breaker_holds_a_bounded_text_however_long_the_stream_runs():
    """Whatever the rules, tripped or not, a breaker keeps no more than a few kilobytes of the stream."""
    text = prose(random.Random(6), 40_000)
    for config in ({}, {"max_repeated_text": 0, "max_repeated_cycle_chars": 0, "max_long_cycle_chars": 0},
                   {"max_repeated_text": 3}):
        breaker = StreamBreaker(**config)
        deltas = [text[at : at + 4] for at in range(0, len(text), 4)] + ["tick"] * 10_000
        tracemalloc.start()
        try:
            for delta in deltas[:2_000]:
                breaker.push(delta)
            settled = tracemalloc.get_traced_memory()[0]
            for delta in deltas[2_000:]:
                breaker.push(delta)
            grown = tracemalloc.get_traced_memory()[0] - settled
        finally:
            tracemalloc.stop()
        assert grown < 32_000, (config, grown)
