"""The breaker's budget: judging deltas a batch at a time must report what judging each would.

Reference: a breaker written the obvious way, evaluating both rules on every delta. The real one
evaluates only when its budget runs out; these properties pin what that may and may not change.
A second reference, the batched breaker the long way (no shortcut in judging a batch), pins that
the shortcuts of the real one change nothing at all: not a budget, not a trip.
"""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from stream_support import cut, reference_identical_trip

from otelguard.detectors.stream import (
    CYCLE_CHECK_EVERY,
    IDENTICAL_CHUNKS,
    MAX_BUDGET,
    REPEATING_CYCLE,
    StreamBreaker,
    Trip,
    cycle_scan,
    periodic_period,
    trailing_identical_run,
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


class LongWayBreaker:
    """The batched breaker without shortcuts: the same budgets and evaluations, each evaluation done
    in full (the identical run over every delta so far, cycle_scan over the whole tail)."""

    def __init__(self, max_repeated_text: int = 60, max_repeated_cycle_chars: int = 64,
                 min_repeated_cycle_chars: int = 256):
        self.limit, self.cycle, self.min_span = max_repeated_text, max_repeated_cycle_chars, min_repeated_cycle_chars
        self.keep = max(min_repeated_cycle_chars, 2 * max_repeated_cycle_chars)
        self.judged: list[str] = []
        self.pending: list[str] = []
        self.due = min_repeated_cycle_chars
        self.recent_chars = self.recent_deltas = 0
        self.budget = 1
        self.trip: Trip | None = None

    def push(self, delta: str) -> Trip | None:
        if self.trip is not None:
            return None
        self.pending.append(delta)
        if len(self.pending) < self.budget:
            return None
        batch, self.pending = self.pending, []
        self.judged += batch
        text = "".join(self.judged)
        chars = len(text)
        budget = MAX_BUDGET
        if self.limit:
            run = trailing_identical_run(self.judged)
            if run >= self.limit:
                return self.tripped(Trip(IDENTICAL_CHUNKS, chars, run=run))
            budget = min(budget, self.limit - run)
        if self.cycle:
            if chars >= self.due:
                period, headroom = cycle_scan(text[-self.keep:], self.cycle, self.min_span)
                if period:
                    return self.tripped(Trip(REPEATING_CYCLE, chars, period=period))
                self.due = chars + headroom + CYCLE_CHECK_EVERY - 1
            self.recent_chars = (self.recent_chars >> 1) + len("".join(batch))
            self.recent_deltas = (self.recent_deltas >> 1) + len(batch)
            left = min(self.due - chars, chars)
            if self.recent_chars > self.recent_deltas:
                left = -(-left * self.recent_deltas // self.recent_chars)
            budget = min(budget, left)
        self.budget = max(budget, 1)
        return None

    def tripped(self, trip: Trip) -> Trip:
        self.trip, self.budget = trip, 0
        return trip

    def finish(self) -> Trip | None:
        pending, self.pending = self.pending, []
        if self.trip is not None:
            return None
        if pending:
            self.budget = len(pending)  # judged now, as if the budget ran out on the last
            trip = [self.push(delta) for delta in pending][-1]
            if trip is not None:
                return trip
        text = "".join(self.judged)  # then the whole text once, whatever the cadence
        period = periodic_period(text, self.cycle, self.min_span) if self.cycle else 0
        return self.tripped(Trip(REPEATING_CYCLE, len(text), period=period)) if period else None


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


def test_push_many_equals_pushing_each_delta():
    """push_many over any split of a stream reports the same trip as push, delta by delta."""
    rng = random.Random(7)
    text = prose(rng, 1_500) + "loop again. " * 60
    deltas = cut(text, rng, (1, 9))
    one_by_one = StreamBreaker()
    expected = trip_index(one_by_one, deltas)
    batched = StreamBreaker()
    at, trip_at = 0, None
    while at < len(deltas) and trip_at is None:
        step = rng.choice([1, batched.budget, batched.budget, 3, 50])
        if batched.push_many(deltas[at : at + step]) is not None:
            trip_at = at + step  # the trip is on one of these
        at += step
    assert batched.trip == one_by_one.trip
    assert expected is not None and trip_at is not None and expected < trip_at


def test_a_tripped_breaker_holds_no_more_deltas():
    """After the trip, pushed deltas are dropped: memory stays bounded however long the stream runs
    (a breaker holds fewer deltas than its budget)."""
    breaker = StreamBreaker(max_repeated_text=3)
    for _ in range(3):
        breaker.push("tick")
    for _ in range(10_000):
        assert breaker.push("tick") is None
        assert breaker.budget <= 1


def test_a_breaker_with_both_rules_off_holds_a_bounded_batch():
    """Nothing to judge still means nothing kept without bound."""
    breaker = StreamBreaker(max_repeated_text=0, max_repeated_cycle_chars=0)
    for index in range(20_000):
        assert breaker.push(f"delta {index} ") is None
        assert breaker.budget <= 4096


CONFIGS = [
    {},
    {"max_repeated_text": 0},
    {"max_repeated_cycle_chars": 0},
    {"max_repeated_text": 2},
    {"max_repeated_text": 5000},
    {"max_repeated_text": 5000, "max_repeated_cycle_chars": 0},
    {"max_repeated_cycle_chars": 10, "min_repeated_cycle_chars": 40},
    {"max_repeated_cycle_chars": 80, "min_repeated_cycle_chars": 100},
    {"max_repeated_cycle_chars": 3, "min_repeated_cycle_chars": 2},
]


@settings(max_examples=examples(250), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(["prose", "cycle", "lines", "chant"]),
    chars=st.integers(0, 5_000),
    sizes=st.sampled_from([(1, 1), (4, 4), (7, 7), (0, 6), (1, 12), (3, 5)]),
    config=st.sampled_from(CONFIGS),
)
def test_every_budget_and_trip_is_the_long_ways(seed, kind, chars, sizes, config):
    """Delta by delta, the breaker plans the same budgets and trips on the same delta, with the same
    trip, as the long way: its shortcuts (a run of one, the inline probe, a repeated plan) are exact.
    Equal deltas of prose make the steady stream the shortcuts are for; the rest make them miss."""
    rng = random.Random(seed)
    text = prose(rng, chars)
    if kind == "cycle":
        unit = "".join(rng.choice("ab c.\n") for _ in range(rng.randint(1, 70)))
        text += unit * (600 // len(unit) + 2)
    elif kind == "lines":
        text += "".join(f"- item {i}: {rng.choice(WORDS)}\n" for i in range(rng.randint(0, 80)))
    elif kind == "chant":
        text += "again. " * rng.randint(0, 120)
    deltas = cut(text, rng, sizes)
    breaker, reference = seed_rules(**config), LongWayBreaker(**config)
    for index, delta in enumerate(deltas):
        assert (breaker.push(delta), breaker.budget) == (reference.push(delta), reference.budget), index
    assert (breaker.finish(), breaker.trip) == (reference.finish(), reference.trip)


@settings(max_examples=examples(100), deadline=None)
@given(
    seed=st.integers(0, 10_000),
    kind=st.sampled_from(["prose", "lines", "chant"]),
    chars=st.integers(0, 6_000),
    sizes=st.sampled_from([(1, 1), (4, 4), (7, 7), (1, 12), (3, 5)]),
)
def test_with_every_rule_on_unstructured_text_gets_the_seed_rules_budgets_and_trips(seed, kind, chars, sizes):
    """With every rule on (the defaults: structure, long cycles, the slow lane and the steady test
    that skips the rules' full walk), unstructured text is planned and cut on the very deltas the
    seed's two rules plan and cut it, judged the long way."""
    rng = random.Random(seed)
    text = prose(rng, chars)
    if kind == "lines":
        text += "".join(f"- item {i}: {rng.choice(WORDS)}\n" for i in range(rng.randint(0, 80)))
    elif kind == "chant":
        text += "again. " * rng.randint(0, 120)
    breaker, reference = StreamBreaker(), LongWayBreaker()
    for index, delta in enumerate(cut(text, rng, sizes)):
        assert (breaker.push(delta), breaker.budget) == (reference.push(delta), reference.budget), index
    assert (breaker.finish(), breaker.trip) == (reference.finish(), reference.trip)


def test_a_long_steady_stream_is_judged_as_the_long_way():
    """The benchmark's stream: long prose in equal deltas, long enough for the cycle rule to set the
    budget (with 1-character deltas the identical rule sets it)."""
    rng = random.Random(3)
    text = prose(rng, 40_000)
    for size in (4, 8):
        deltas = [text[at : at + size] for at in range(0, len(text), size)]
        breaker, reference = seed_rules(), LongWayBreaker()
        for delta in deltas:
            assert breaker.push(delta) is reference.push(delta) is None
            assert breaker.budget == reference.budget
        assert breaker.finish() is reference.finish() is None


def test_a_long_stream_judged_by_the_identical_rule_alone_is_judged_as_the_long_way():
    """Cycle rule off and a high limit: batches as long as MAX_BUDGET allows, after runs of one."""
    text = prose(random.Random(4), 20_000)
    config = {"max_repeated_text": 5000, "max_repeated_cycle_chars": 0}
    breaker, reference = seed_rules(**config), LongWayBreaker(**config)
    for delta in text:
        assert (breaker.push(delta), breaker.budget) == (reference.push(delta), reference.budget)
    assert breaker.budget == MAX_BUDGET


def test_a_run_or_an_early_finish_inside_a_steady_stream_is_judged_as_the_long_way():
    """The repeated plan is used only when it is the plan: not when a run of identical deltas (after
    trimming, so the text does not repeat) bounds the budget tighter, and not for a batch of the same
    size in fewer deltas (pending deltas judged by an early `finish`, the stream going on)."""
    rng = random.Random(5)
    words = prose(rng, 80_000)
    deltas: list[str] = []
    for start in range(0, 50_000, 600):
        deltas += [words[at : at + 4] for at in range(start, start + 600, 4)]
        pads = ["".join(rng.choice(" \t\n") for _ in range(3)) for _ in range(20)]
        deltas += [pad[: i % 4] + "q" + pad[i % 4 :] for i, pad in enumerate(pads)]
    wide = [words[at : at + 8] for at in range(50_000, 80_000, 8)]  # twice as long as the others
    for finish_early in (False, True):
        breaker, reference = seed_rules(), LongWayBreaker()
        for index, delta in enumerate(deltas):
            assert (breaker.push(delta), breaker.budget) == (reference.push(delta), reference.budget), index
            if finish_early and index % 1_000 > 900 and not reference.pending:  # right after a batch
                for wide_delta in wide[:27]:  # a steady batch's 216 characters in half its deltas
                    pushed = breaker.push(wide_delta), breaker.budget
                    assert pushed == (reference.push(wide_delta), reference.budget)
                assert breaker.finish() == reference.finish()
                wide = wide[27:]
        assert breaker.trip == reference.trip is None
