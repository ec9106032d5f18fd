"""Mid-stream breaker: one model call repeating itself while it streams.

Two rules share one breaker: a trailing run of identical (trimmed) deltas, and an exact short cycle
at the character level (a cycle of short lines never makes identical deltas).

The rules are not evaluated on every delta. The breaker keeps a `budget`: how many deltas may arrive
before either rule could possibly trip. Deltas inside the budget are only collected; the rules run
on the delta that exhausts it. That lets `watch_stream` hand deltas through untouched, in C, and
judge them a batch at a time, and it is why the breaker costs a few nanoseconds a delta.
- Identical chunks: a run of r needs max_repeated_text - r more deltas, so the identical rule trips
  on exactly the delta a per-delta judge would.
- Repeating cycle: a periodic tail grows by at most one character a character, so `cycle_scan`
  bounds how far off a trip is (about 185 characters of prose, with the defaults). The rule is due
  no later than CYCLE_CHECK_EVERY - 1 characters after that bound, the design's cadence; the budget
  turns those characters into deltas at the average delta length, so with uneven deltas an
  evaluation may land a little late (never early: a trip is only ever reported on a periodic tail).
"""

from __future__ import annotations

from dataclasses import dataclass

from .novelty import LOW_NOVELTY, NoveltyMeter
from .structure import FENCE, fences_in, is_structured

IDENTICAL_CHUNKS = "identical-chunks"
REPEATING_CYCLE = "repeating-cycle"
LONG_CYCLE = "long-cycle"
SLOW_CHECK_EVERY = 2048  # characters between the long-cycle (and mid-stream novelty) checks: its search
# of max_long_cycle characters, amortised over this many, is what the rule costs a delta
LONG_CYCLE_FLOOR = 64  # long cycles start above this period when the seed's cycle rule is off
LONG_PROBE = 16  # characters of the tail a long cycle must repeat: prose seldom repeats 16 within 512
CYCLE_CHECK_EVERY = 32  # a forming cycle is caught within this many characters (the design's cadence)
SUFFIX_PROBE = 8  # characters of the tail searched for earlier in the text: a cycle must repeat them
REFUTING_WINDOWS = (32, 64, 96, 128)  # tail lengths tried, shortest first, to bound a candidate's periodic tail
MAX_BUDGET = 4096  # deltas collected at most before an evaluation: bounds the memory held


@dataclass(frozen=True, slots=True)
class Trip:
    rule: str
    chars: int  # visible characters emitted when it tripped
    run: int = 0  # identical-chunks: the run length
    period: int = 0  # repeating-cycle, long-cycle: the period
    structured: bool = False  # the repetition is structured content that ran past its allowance
    novelty: float | None = None  # low-novelty: the window's share of new n-grams


def trailing_identical_run(deltas: list[str]) -> int:
    """Length of the trailing run of deltas that are equal after trimming (blank deltas are equal)."""
    if not deltas:
        return 0
    last = deltas[-1].strip()
    run = 0
    for delta in reversed(deltas):
        if delta.strip() != last:
            break
        run += 1
    return run


def periodic_period(text: str, max_period: int, min_span: int) -> int:
    """The smallest period p <= max_period whose exact repetition covers the tail; 0 when none.

    p qualifies when the last p characters hold at least two distinct characters and the last
    max(min_span, 2p) characters are exactly p-periodic.
    """
    return cycle_scan(text, max_period, min_span)[0]


def cycle_scan(text: str, max_period: int, min_span: int) -> tuple[int, int]:
    """`(periodic_period, headroom)`: headroom is how many characters must still arrive (at least 1)
    before the tail could become periodic, so the rule need not be evaluated before then.

    A p-periodic tail grows by at most one character per character appended, so a trip needs at
    least min_span minus the longest periodic tail there is now. That length is bounded without
    computing it: at a period where the last k characters do not recur it is shorter than p + k,
    and where the last w characters are not periodic (w from REFUTING_WINDOWS), shorter than w. A
    period periodic over every window may be forming a cycle: nothing bounds it then but 1.
    """
    n = len(text)
    if n < 2 or max_period < 1:
        return 0, max(1, min_span - n)
    # A qualifying p repeats the last k characters p characters earlier (the periodic span covers
    # p + k characters), so only the occurrences of that suffix found by rfind are candidates.
    # (Plain comparisons below, not min/max: this runs on every evaluation of every stream.)
    k = probe_length(max_period, min_span)
    if n - 1 < k:
        k = n - 1
    suffix = text[n - k:]
    lo = n - k - max_period if n - k > max_period else 0
    start = text.rfind(suffix, lo, n - 1)  # an occurrence must end before the text does
    longest = longest_unprobed_tail(max_period, n)
    if start < 0:  # the common case: nothing recurs, no cycle can be near
        headroom = min_span - longest
        return 0, headroom if headroom > 1 else 1
    forming = False
    while start >= 0:
        period = n - k - start  # rfind from the right: smallest period first
        refuted = 0
        for size in REFUTING_WINDOWS:  # no longer than min_span, so a refuted window refutes a trip
            if size > min_span or size >= n:
                break
            # the last `size` characters are p-periodic iff they equal themselves shifted by p
            if period < size and not text.startswith(text[n - size : n - period], n - size + period):
                refuted = size
                break
        if refuted:
            if refuted - 1 > longest:
                longest = refuted - 1
        else:
            span = max(min_span, 2 * period)
            if span <= n:
                tail = text[-span:]
                if tail[period:] == tail[:-period] and len(set(text[-period:])) >= 2:
                    return period, 0
            elif 2 * period > n:
                break  # every later candidate is longer still
            forming = True
        start = text.rfind(suffix, lo, start + k - 1)
    headroom = 1 if forming else min_span - longest
    return 0, max(1, headroom, min_span - n)


def probe_length(max_period: int, min_span: int) -> int:
    """How many of the tail's last characters `cycle_scan` looks for earlier in the text: SUFFIX_PROBE,
    fewer when the rule's span leaves less room beyond the longest period (at least 1)."""
    room = min_span - max_period
    return SUFFIX_PROBE if room >= SUFFIX_PROBE else (room if room > 1 else 1)


def longest_unprobed_tail(max_period: int, n: int) -> int:
    """The longest periodic tail of n characters whose probe recurs nowhere within max_period: shorter
    than max_period + SUFFIX_PROBE. (With a probe shorter than SUFFIX_PROBE the bound is looser than it
    could be, never too tight.)"""
    longest = max_period + SUFFIX_PROBE - 1
    return longest if longest < n else n


def trailing_periodic_span(text: str, max_period: int, min_span: int) -> int:
    """Characters of the tail that the cycle rule checked and found periodic; 0 when it does not trip."""
    period = periodic_period(text, max_period, min_span)
    return max(min_span, 2 * period) if period else 0


def long_cycle_period(text: str, min_period: int, max_period: int, repeats: int, min_span: int = 0) -> int:
    """The smallest period p in [min_period, max_period] whose unit the tail repeats `repeats` times
    (its last max(min_span, repeats * p) characters are exactly p-periodic, with at least 2 distinct
    characters); 0 when none. Only the distances at which the tail's last LONG_PROBE characters recur are tried:
    on prose, one search of max_period characters finds none."""
    n = len(text)
    k = LONG_PROBE if min_period > LONG_PROBE else min_period
    if n < repeats * min_period or n < min_span or max_period < min_period:
        return 0
    suffix = text[n - k:]
    lo = n - k - max_period if n - k > max_period else 0
    hi = n - min_period  # an occurrence at distance >= min_period ends by here
    start = text.rfind(suffix, lo, hi)
    while start >= 0:
        period = n - k - start  # nearest occurrence first: the smallest period
        span = repeats * period if repeats * period > min_span else min_span
        if span > n:
            break
        if text.startswith(text[n - span : n - period], n - span + period):
            unit = text[n - period :]
            # A unit that repeats a shorter one is the seed rule's cycle (or one it leaves alone).
            primitive = (unit + unit).find(unit, 1)
            return period if primitive >= min_period and len(set(unit)) >= 2 else 0
        start = text.rfind(suffix, lo, start + k - 1)
    return 0


def periodic_run(text: str, period: int) -> int:
    """How many of the tail's characters are p-periodic (at least p)."""
    n = len(text)
    if n <= period or text[period:] == text[:-period]:
        return n
    low, high = period, n  # the last `low` characters are p-periodic, the last `high` are not
    while high - low > 1:
        middle = (low + high) // 2
        if text[n - middle + period :] == text[n - middle : n - period]:
            low = middle
        else:
            high = middle
    return low


class StreamBreaker:
    """Fed the visible text deltas of one model call; trips at most once. Not thread-safe.

    Feed it with `push(delta)`, or with `push_many(deltas)` (the same as pushing each in turn), and
    call `finish()` when the stream ends, to judge what arrived after the last evaluation (the
    analyzer and `watch_stream` both do). `budget` is how many deltas may still arrive before the
    next evaluation: a caller that hands over exactly that many at a time sees a trip on the last
    delta of the batch.
    """

    __slots__ = (
        "_cycle_due",
        "_fences",
        "_fresh",
        "_history_keep",
        "_newer",
        "_older",
        "_long_floor",
        "_long_onset",
        "_short_onset",
        "_slow",
        "_slow_due",
        "long_cycle_repeats",
        "max_long_cycle",
        "max_structured",
        "novelty",
        "_keep",
        "_keep_slice",
        "_last",
        "_pending",
        "_probe_suffix",
        "_probe_window",
        "_quiet_due",
        "_recent_chars",
        "_recent_deltas",
        "_run",
        "_single_run_budget",
        "_steady_count",
        "_steady_size",
        "_tail",
        "budget",
        "chars",
        "max_cycle",
        "max_repeated_text",
        "min_cycle_span",
        "trip",
    )

    def __init__(self, *, max_repeated_text: int = 60, max_repeated_cycle_chars: int = 64,
                 min_repeated_cycle_chars: int = 256, max_structured_repeat_chars: int = 8192,
                 max_long_cycle_chars: int = 512, long_cycle_repeats: int = 3,
                 novelty: NoveltyMeter | None = None):
        self.max_repeated_text = max_repeated_text
        self.max_cycle = max_repeated_cycle_chars
        self.min_cycle_span = min_repeated_cycle_chars
        self._keep = keep = max(min_repeated_cycle_chars, 2 * max_repeated_cycle_chars)
        # cycle_scan's common case, precomputed for a full tail: its last `probe` characters (the
        # suffix) do not recur within max_cycle (in the window), so no cycle is nearer than
        # `_quiet_due` characters. (Slices made once: a batch is judged in as few steps as can be.)
        probe = probe_length(max_repeated_cycle_chars, min_repeated_cycle_chars)
        self._keep_slice = slice(-keep, None)
        self._probe_suffix = slice(keep - probe, None)
        self._probe_window = slice(keep - probe - max_repeated_cycle_chars, keep - 1)
        quiet = min_repeated_cycle_chars - longest_unprobed_tail(max_repeated_cycle_chars, keep)
        self._quiet_due = max(1, quiet) + CYCLE_CHECK_EVERY - 1
        self._single_run_budget = min(max_repeated_text - 1, MAX_BUDGET)  # after a run of one
        self._pending: list[str] = []
        self._last: str | None = None
        self._run = 0
        self._tail = ""
        self._cycle_due = min_repeated_cycle_chars  # no cycle can trip on fewer characters
        self._recent_chars = self._recent_deltas = 0
        # Size and count of a batch whose plan repeats (two ints: a tuple compared costs more); 0: none.
        self._steady_size = self._steady_count = 0
        self.chars = 0  # characters judged so far (deltas still pending are not counted yet)
        self.trip: Trip | None = None
        self.budget = 1  # the first delta is judged alone: it tells the breaker how long deltas are
        # The slow lane: every SLOW_CHECK_EVERY characters, the batches since are joined onto a
        # bounded history, code fences counted (structure), long cycles and novelty checked.
        self.max_structured = max_structured_repeat_chars
        # Long cycles are the periods the seed's rule leaves (all but the shortest 64 when it is off).
        self._long_floor = (max_repeated_cycle_chars or LONG_CYCLE_FLOOR) + 1
        self.max_long_cycle = max_long_cycle_chars if max_long_cycle_chars >= self._long_floor else 0
        self.long_cycle_repeats = long_cycle_repeats
        self.novelty = novelty
        self._slow = bool(self.max_long_cycle or novelty is not None or (max_structured_repeat_chars and max_repeated_cycle_chars))
        self._fresh: list[str] = []
        # The history: the text of the last two slow checks, kept as the two strings they joined (no
        # copy a check); together at least `_history_keep` characters once as many have arrived.
        self._older = self._newer = ""
        self._history_keep = max(long_cycle_repeats * self.max_long_cycle, keep)
        self._slow_due = SLOW_CHECK_EVERY
        self._fences = 0
        self._short_onset = self._long_onset = -1  # where a structured repetition began (-1: none going on)

    def push(self, delta: str) -> Trip | None:
        """Feed one delta. Returns the Trip on the delta that trips, else None (also after a trip)."""
        pending = self._pending
        pending.append(delta)
        if len(pending) < self.budget:
            return None
        self._pending = []
        return self.push_many(pending)

    def push_many(self, deltas: list[str]) -> Trip | None:
        """Feed deltas in order, as `push` would one by one; returns the trip, if one of them trips.

        A batch of exactly `budget` deltas (nothing pending) is judged at once, after its last delta:
        the budget guarantees no earlier delta of it could trip. That is the hot path of a stream,
        so it is one method, no helper calls, plain comparisons instead of min/max.
        """
        count = len(deltas)
        if count != self.budget or self._pending:  # (a tripped breaker's budget is 0)
            if self.trip is not None:
                return None
            "".join(deltas)  # a batch that is not all text fails here, before any state changes
            for delta in deltas:
                trip = self.push(delta)
                if trip is not None:
                    return trip
            return None
        text = "".join(deltas)  # a batch that is not all text fails here, before any state changes
        size = len(text)
        chars = self.chars = self.chars + size
        if self.max_repeated_text:
            last = deltas[-1].strip()
            if count > 1 and deltas[-2].strip() != last:
                # The common case, a run of one, settled without walking the batch. (It cannot
                # trip: with a limit of 1 the first delta trips, so no batch holds two.)
                self._last = last
                self._run = 1
                budget = self._single_run_budget
            else:
                limit = self.max_repeated_text
                run = trailing_identical_run(deltas)
                if run == count and last == self._last:  # the run goes on from the batch before
                    run += self._run
                self._last = last
                self._run = run
                if run < limit:
                    budget = min(limit - run, MAX_BUDGET)  # a run grows by at most one a delta
                else:
                    deferred = self._identical_structure(run, deltas[-1])
                    if not deferred:
                        return self._tripped(Trip(IDENTICAL_CHUNKS, chars, run=run, structured=deferred is None))
                    budget = deferred
        else:
            budget = MAX_BUDGET
        if self._slow:
            self._fresh.append(text)
            if chars >= self._slow_due:
                trip = self._slow_checks(chars)
                if trip is not None:
                    return self._tripped(trip)
        if self.max_cycle:
            self._tail = tail = (self._tail + text)[self._keep_slice]
            if chars >= self._cycle_due:
                # Due again no sooner than the headroom allows, and at most CYCLE_CHECK_EVERY - 1
                # characters later than that, so a forming cycle is caught as the design's cadence
                # would. The common case, nothing recurring in a full tail (one of `_keep`
                # characters, once as many have arrived), is cycle_scan's first test done inline.
                if chars >= self._keep and tail[self._probe_suffix] not in tail[self._probe_window]:
                    self._cycle_due = chars + self._quiet_due
                    self._short_onset = -1
                    if size == self._steady_size and count == self._steady_count and budget >= count:
                        # Quiet again, after a batch just like this one that planned `count` more
                        # deltas: the average stands still (see below), so the plan is the same.
                        self.budget = count
                        return None
                else:
                    period, headroom = cycle_scan(tail, self.max_cycle, self.min_cycle_span)
                    if period:
                        trip = self._short_cycle(period, chars)
                        if trip is not None:
                            return self._tripped(trip)
                        self._cycle_due = chars + CYCLE_CHECK_EVERY  # structure, not yet past its allowance
                    else:
                        self._short_onset = -1
                        self._cycle_due = chars + headroom + CYCLE_CHECK_EVERY - 1
            # Characters to deltas at the recent average delta length (at least 1; weighted by
            # deltas, older batches halved each time, so one short batch does not swing it): the
            # next evaluation lands on the delta that reaches `_cycle_due` while deltas keep their
            # size. Never planned past as many characters as seen so far, so early batches stay
            # small until the average rests on enough deltas.
            recent_chars = self._recent_chars = (self._recent_chars >> 1) + size
            recent_deltas = self._recent_deltas = (self._recent_deltas >> 1) + count
            left = self._cycle_due - chars  # at least 1: the evaluation lies ahead
            if left > chars:
                left = chars if chars else 1  # (nothing but empty deltas yet: judge the next alone)
            deltas_left = -(-left * recent_deltas // recent_chars) if recent_chars > recent_deltas else left
            if deltas_left < budget:
                budget = deltas_left
            # A quiet plan that asks for another batch of the same deltas, with both sums at a fixed
            # point for such batches, repeats itself as long as batches do: remember it. Any other
            # batch forgets it, as the sums move.
            if left == self._quiet_due and budget == count == deltas_left \
                    and recent_chars == (recent_chars >> 1) + size and recent_deltas == (recent_deltas >> 1) + count:
                self._steady_size, self._steady_count = size, count
            else:
                self._steady_size = self._steady_count = 0
        elif self._slow:
            # No cycle rule plans the batches (the reasoning breaker): the slow lane's cadence does.
            left = -(-(self._slow_due - chars) * count // size) if size else 1  # at this batch's delta length
            if left < budget:
                budget = left if left > 1 else 1
        self.budget = budget  # at least 1: a run short of its limit, `left` above, or MAX_BUDGET
        return None

    def finish(self) -> Trip | None:
        """The stream ended: judge what arrived since the last evaluation, then the cycle rule once
        on the final text. (Its last evaluation may lie up to the cadence behind the end; with no
        more characters to come, the end is where a stream's repetition is complete. The call's
        final text is judged so when no deltas were seen, too: `judge_final_text`.)"""
        pending, self._pending = self._pending, []
        if self.trip is not None:
            return None
        if pending:
            self.budget = len(pending)  # judge them now, as if the budget ran out on the last
            trip = self.push_many(pending)
            if trip is not None:
                return trip
        if self.max_cycle and self.chars >= self.min_cycle_span:
            period = periodic_period(self._tail, self.max_cycle, self.min_cycle_span)
            if period:
                trip = self._short_cycle(period, self.chars)
                if trip is not None:
                    return self._tripped(trip)
        if self._slow:
            trip = self._slow_checks(self.chars, final=True)
            if trip is not None:
                return self._tripped(trip)
        return None

    # --- the rules past the hot path ------------------------------------------------------------
    def _absorb(self) -> None:
        """Join the batches since the last slow check; count their code fences and read them for
        novelty; make them the newer part of the history."""
        fresh = "".join(self._fresh)
        self._fresh = []
        if self.max_structured:
            self._fences += fences_in(fresh, self._newer)
        if len(self._newer) + len(fresh) <= self._history_keep:
            self._newer += fresh  # (a short piece: absorbed early, for a structure check)
        else:
            self._older, self._newer = self._newer, fresh
        if self.novelty is not None:
            self.novelty.feed(fresh)  # a dip is reported by the next slow check

    def _history(self) -> str:
        return self._older + self._newer

    def _in_fence(self) -> bool:
        self._absorb()
        return self._fences % 2 == 1

    def _identical_structure(self, run: int, delta: str) -> int | None:
        """The identical-chunks run reached its limit: 0 when it trips as the seed's rule does; for
        structured content (rows of a table, a fence's lines), the deltas it may still run before
        max_structured_repeat_chars, or None once it has run past them."""
        if not self.max_structured or not delta.strip():
            return 0
        if not (self._in_fence() or is_structured(delta + delta, len(delta), False)):
            return 0
        left = self.max_structured - run * len(delta)
        if left <= 0:
            return None
        return min(-(-left // len(delta)), MAX_BUDGET)

    def _short_cycle(self, period: int, chars: int) -> Trip | None:
        """The seed's cycle rule found `period`: a trip, unless the repetition is structure still
        within its allowance."""
        if self.max_structured:
            span = max(self.min_cycle_span, 2 * period)
            if is_structured(self._tail[-span:], period, self._in_fence()):
                if self._short_onset < 0:
                    self._short_onset = chars - periodic_run(self._history(), period)
                if chars - self._short_onset < self.max_structured:
                    return None
                return Trip(REPEATING_CYCLE, chars, period=period, structured=True)
        return Trip(REPEATING_CYCLE, chars, period=period)

    def _slow_checks(self, chars: int, final: bool = False) -> Trip | None:
        """Every SLOW_CHECK_EVERY characters (and at the end): long cycles, then novelty."""
        self._slow_due = chars + SLOW_CHECK_EVERY
        self._absorb()
        if self.max_long_cycle:
            # The tail's last LONG_PROBE characters must recur within max_long_cycle: on prose they do
            # not, and one search of the newer part tells (the whole history is joined only on a hit).
            newer = self._newer
            n = len(newer)
            if n > LONG_PROBE + self.max_long_cycle and newer.rfind(
                    newer[n - LONG_PROBE:], n - LONG_PROBE - self.max_long_cycle, n - self._long_floor) < 0:
                period = 0
            else:
                history = self._history()
                period = long_cycle_period(history, self._long_floor, self.max_long_cycle, self.long_cycle_repeats,
                                           self.min_cycle_span)
            if not period:
                self._long_onset = -1
            elif self.max_structured and is_structured(history[-max(self.long_cycle_repeats * period, self.min_cycle_span):],
                                                       period, self._fences % 2 == 1):
                if self._long_onset < 0:
                    self._long_onset = chars - periodic_run(history, period)
                if chars - self._long_onset >= self.max_structured:
                    return Trip(LONG_CYCLE, chars, period=period, structured=True)
            else:
                return Trip(LONG_CYCLE, chars, period=period)
        if self.novelty is not None:
            if final:
                self.novelty.finish()
            if self.novelty.dip is not None:
                return Trip(LOW_NOVELTY, chars, novelty=self.novelty.dip.novelty)
        return None

    def _tripped(self, trip: Trip) -> Trip:
        self.trip = trip
        self.budget = 0  # every later delta is dropped on arrival
        return trip


def judge_final_text(text: str, *, max_repeated_cycle_chars: int, min_repeated_cycle_chars: int,
                     max_structured_repeat_chars: int = 0, max_long_cycle_chars: int = 0, long_cycle_repeats: int = 3,
                     novelty: NoveltyMeter | None = None) -> Trip | None:
    """The character rules run once on a call's whole text (when no deltas were seen): the cycle
    rule, long cycles, then novelty. Structure is judged as the breaker judges it, with the whole
    text at hand: a structured repetition is flagged once its periodic run reaches the allowance."""
    in_fence = text.count(FENCE) % 2 == 1

    def allowed(span: int, period: int) -> bool:
        return (max_structured_repeat_chars > 0 and is_structured(text[-span:], period, in_fence)
                and periodic_run(text, period) < max_structured_repeat_chars)

    if max_repeated_cycle_chars:
        period = periodic_period(text, max_repeated_cycle_chars, min_repeated_cycle_chars)
        if period and not allowed(max(min_repeated_cycle_chars, 2 * period), period):
            return Trip(REPEATING_CYCLE, len(text), period=period)
    floor = (max_repeated_cycle_chars or LONG_CYCLE_FLOOR) + 1
    if max_long_cycle_chars >= floor:
        tail = text[-max(long_cycle_repeats * max_long_cycle_chars, min_repeated_cycle_chars):]
        period = long_cycle_period(tail, floor, max_long_cycle_chars, long_cycle_repeats, min_repeated_cycle_chars)
        if period and not allowed(max(long_cycle_repeats * period, min_repeated_cycle_chars), period):
            return Trip(LONG_CYCLE, len(text), period=period)
    if novelty is not None and len(text) >= novelty.window:  # shorter text fills no window: nothing to judge
        dip = novelty.feed(text) or novelty.finish()
        if dip is not None:
            return Trip(LOW_NOVELTY, dip.chars, novelty=dip.novelty)
    return None
