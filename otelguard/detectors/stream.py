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
On a steady stream (equal deltas of prose) each batch is like the last: `push_many` settles such a
batch in one test, the rules' quiet outcome, before walking them. The cycle rule's tail is not kept
up to date a batch at a time: its probe reads the batch's own text (or the last two batches'), and
the whole tail is joined from the latest batches (`_latest`) when a candidate needs it.
"""

from __future__ import annotations

from collections.abc import Callable
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


@dataclass(slots=True, frozen=True)
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


def cycle_scan(text: str, max_period: int, min_span: int, *, min_period: int = 1, repeats: int = 2,
               probe: int = 0, refuting: tuple[int, ...] = REFUTING_WINDOWS) -> tuple[int, int]:
    """`(period, headroom)`: the smallest period p in [min_period, max_period] whose unit the tail
    repeats: its last max(min_span, repeats * p) characters are exactly p-periodic, and its last p
    characters hold at least two distinct characters and repeat no period shorter than min_period
    (such a unit is a shorter rule's cycle, or one it leaves alone); 0 when none. The seed's cycle
    rule is the defaults; long cycles raise min_period and repeats.

    headroom is how many characters must still arrive (at least 1) before the tail could become
    periodic over min_span, so the rule need not be evaluated before then. A p-periodic tail grows
    by at most one character per character appended, so a trip needs at least min_span minus the
    longest periodic tail there is now. That length is bounded without computing it: at a period
    where the last k characters (the probe) do not recur it is shorter than p + k, and where the
    last w characters are not periodic (w from `refuting`), shorter than w. A period periodic over
    every window may be forming a cycle: nothing bounds it then but 1. (A rule checked at its own
    cadence, long cycles, needs no headroom: no windows, each candidate's span checked at once.)
    """
    n = len(text)
    if n < 2 or max_period < min_period:
        return 0, max(1, min_span - n)
    # A qualifying p repeats the last k characters p characters earlier (the periodic span covers
    # p + k characters), so only the occurrences of that suffix found by rfind are candidates.
    # (Plain comparisons below, not min/max: this runs on every evaluation of every stream.)
    k = probe or probe_length(max_period, min_span)
    if n - 1 < k:
        k = n - 1
    suffix = text[n - k:]
    lo = n - k - max_period if n - k > max_period else 0
    hi = n - min_period  # an occurrence at distance >= min_period ends by here
    start = text.rfind(suffix, lo, hi)
    longest = longest_unprobed_tail(max_period, k, n)
    if start < 0:  # the common case: nothing recurs, no cycle can be near
        headroom = min_span - longest
        return 0, headroom if headroom > 1 else 1
    forming = False
    while start >= 0:
        period = n - k - start  # rfind from the right: smallest period first
        refuted = 0
        for size in refuting:  # no longer than min_span, so a refuted window refutes a trip
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
            span = repeats * period if repeats * period > min_span else min_span
            if span <= n:
                if text.startswith(text[n - span : n - period], n - span + period):
                    unit = text[n - period :]
                    if len(set(unit)) >= 2 and (min_period == 1 or (unit + unit).find(unit, 1) >= min_period):
                        return period, 0
            elif repeats * period > n:
                break  # every later candidate is longer still
            forming = True
        start = text.rfind(suffix, lo, start + k - 1)
    headroom = 1 if forming else min_span - longest
    return 0, max(1, headroom, min_span - n)


def probe_length(max_period: int, min_span: int) -> int:
    """How many of the tail's last characters the cycle rule looks for earlier in the text:
    SUFFIX_PROBE, fewer when the rule's span leaves less room beyond the longest period (at least 1)."""
    room = min_span - max_period
    return SUFFIX_PROBE if room >= SUFFIX_PROBE else (room if room > 1 else 1)


def longest_unprobed_tail(max_period: int, probe: int, n: int) -> int:
    """The longest periodic tail of n characters whose last `probe` characters recur nowhere within
    max_period: shorter than max_period + probe. (A probe shorter than SUFFIX_PROBE is counted as
    SUFFIX_PROBE: the bound is looser than it could be, never too tight.)"""
    longest = max_period + (probe if probe > SUFFIX_PROBE else SUFFIX_PROBE) - 1
    return longest if longest < n else n


def trailing_periodic_span(text: str, max_period: int, min_span: int) -> int:
    """Characters of the tail that the cycle rule checked and found periodic; 0 when it does not trip."""
    period = periodic_period(text, max_period, min_span)
    return max(min_span, 2 * period) if period else 0


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


def judge_repetition(rule: str, text: str, period: int, span: int, *, chars: int, in_fence: bool, allowance: int,
                     onset: Callable[[], int]) -> Trip | None:
    """A cycle rule found the last `span` characters of `text` `period`-periodic: the trip, unless the
    repetition is structured content (`is_structured`) that has run fewer than `allowance`
    (max_structured_repeat_chars; 0: none) characters since `onset()`, where it began (asked only
    then; in the characters `chars` counts)."""
    if allowance <= 0 or not is_structured(text[-span:], period, in_fence):
        return Trip(rule, chars, period=period)
    if chars - onset() < allowance:
        return None
    return Trip(rule, chars, period=period, structured=True)


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
        "_last",
        "_pending",
        "_probe_span",
        "_probe_suffix",
        "_probe_window",
        "_quiet_due",
        "_recent_chars",
        "_recent_deltas",
        "_run",
        "_single_run_budget",
        "_steady_count",
        "_steady_size",
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
        # `_quiet_due` characters. Those are the last `_probe_span` characters: a batch that long is
        # probed on its own text, without the tail. (Slices made once: a batch is judged in as few
        # steps as can be.)
        probe = probe_length(max_repeated_cycle_chars, min_repeated_cycle_chars)
        self._probe_span = probe + max_repeated_cycle_chars
        self._probe_suffix = slice(-probe, None)
        self._probe_window = slice(-self._probe_span, -1)
        quiet = min_repeated_cycle_chars - longest_unprobed_tail(max_repeated_cycle_chars, probe, keep)
        self._quiet_due = max(1, quiet) + CYCLE_CHECK_EVERY - 1
        self._single_run_budget = min(max_repeated_text - 1, MAX_BUDGET)  # after a run of one
        self._pending: list[str] = []
        self._last: str | None = None
        self._run = 0
        self._cycle_due = min_repeated_cycle_chars  # no cycle can trip on fewer characters
        self._recent_chars = self._recent_deltas = 0
        # Size and count of a batch whose plan repeats (two ints: a tuple compared costs more); 0: none.
        self._steady_size = self._steady_count = 0
        self.chars = 0  # characters judged so far (deltas still pending are not counted yet)
        self.trip: Trip | None = None
        self.budget = 1  # the first delta is judged alone: it tells the breaker how long deltas are
        # The slow lane: every SLOW_CHECK_EVERY characters, the batches since are joined onto a
        # bounded history, code fences counted (structure), long cycles and novelty checked. The
        # cycle rule reads its tail from there too, when a batch's own text is not enough.
        self.max_structured = max_structured_repeat_chars
        # Long cycles are the periods the seed's rule leaves (all but the shortest 64 when it is off).
        self._long_floor = (max_repeated_cycle_chars or LONG_CYCLE_FLOOR) + 1
        self.max_long_cycle = max_long_cycle_chars if max_long_cycle_chars >= self._long_floor else 0
        self.long_cycle_repeats = long_cycle_repeats
        self.novelty = novelty
        self._slow = bool(max_repeated_cycle_chars or self.max_long_cycle or novelty is not None)
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
        if size == self._steady_size and count == self._steady_count:
            # Steady: a batch just like the last one, which was quiet and planned as many deltas
            # again (see the plan below). If this one is quiet too (its last two deltas differ, the
            # slow lane is not due, the cycle rule's probe finds nothing on its text), the plan
            # stands and only what moves is updated: the rules' full walk below, in one test.
            last = deltas[-1].strip()
            if deltas[-2].strip() != last and chars < self._slow_due \
                    and text[self._probe_suffix] not in text[self._probe_window]:
                self._last = last
                self._run = 1
                self._fresh.append(text)
                self._cycle_due = chars + self._quiet_due
                return None
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
            if chars >= self._cycle_due:
                # Due again no sooner than the headroom allows, and at most CYCLE_CHECK_EVERY - 1
                # characters later than that, so a forming cycle is caught as the design's cadence
                # would. The common case, nothing recurring in a full tail (one of `_keep`
                # characters, once as many have arrived), is cycle_scan's first test done inline.
                recent = text if size >= self._probe_span else self._latest(self._probe_span)
                if chars >= self._keep and recent[self._probe_suffix] not in recent[self._probe_window]:
                    self._cycle_due = chars + self._quiet_due
                    self._short_onset = -1
                else:
                    tail = self._latest(self._keep)
                    period, headroom = cycle_scan(tail, self.max_cycle, self.min_cycle_span)
                    if period:
                        trip = self._repetition(REPEATING_CYCLE, tail, period, max(self.min_cycle_span, 2 * period), chars)
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
            # point for such batches, repeats itself as long as batches do: remember it, for the
            # steady test above (which probes a batch's own text and its last two deltas: so only
            # batches of two deltas or more, holding the probe's characters). Any other batch
            # forgets it, as the sums move.
            if left == self._quiet_due and budget == count == deltas_left and count > 1 \
                    and size >= self._probe_span \
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
            tail = self._latest(self._keep)
            period = periodic_period(tail, self.max_cycle, self.min_cycle_span)
            if period:
                trip = self._repetition(REPEATING_CYCLE, tail, period, max(self.min_cycle_span, 2 * period), self.chars)
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
        if not self._fresh:
            return
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

    def _latest(self, chars: int) -> str:
        """The last `chars` characters judged at least (all of them while fewer have arrived): the
        last two batches' text, else every batch's since the slow check, else the history before
        them too. (The cycle rule's tail is its last `_keep`: cycle_scan reads no further back.)"""
        fresh = self._fresh
        text = "".join(fresh[-2:])  # enough for the probe of short batches, and for most tails
        if len(text) < chars and len(fresh) > 2:
            text = "".join(fresh)
        if len(text) < chars:
            text = self._history() + text
        return text


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

    def _repetition(self, rule: str, text: str, period: int, span: int, chars: int) -> Trip | None:
        """`judge_repetition` in the breaker: where a structured repetition began is found once, on
        the history, and kept while the rule keeps finding it (the history is shorter than the
        allowance)."""
        kept = "_short_onset" if rule == REPEATING_CYCLE else "_long_onset"

        def onset() -> int:
            if getattr(self, kept) < 0:
                setattr(self, kept, chars - periodic_run(self._history(), period))
            return getattr(self, kept)

        return judge_repetition(rule, text, period, span, chars=chars, in_fence=self._in_fence(),
                                allowance=self.max_structured, onset=onset)

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
                period = cycle_scan(history, self.max_long_cycle, self.min_cycle_span, min_period=self._long_floor,
                                    repeats=self.long_cycle_repeats, probe=LONG_PROBE, refuting=())[0]
            if period:
                span = max(self.long_cycle_repeats * period, self.min_cycle_span)
                trip = self._repetition(LONG_CYCLE, history, period, span, chars)
                if trip is not None:
                    return trip
            else:
                self._long_onset = -1
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


def judge_final_text(text: str, *, max_repeated_cycle_chars: int = 0, min_repeated_cycle_chars: int = 0,
                     max_structured_repeat_chars: int = 0, max_long_cycle_chars: int = 0, long_cycle_repeats: int = 3,
                     novelty: NoveltyMeter | None = None) -> Trip | None:
    """The character rules run once on a call's whole text (when no deltas were seen): the cycle
    rule, long cycles, then novelty (each off unless given). Structure is judged as the breaker
    judges it, with the whole text at hand: a structured repetition is flagged once its periodic run
    reaches the allowance."""
    in_fence = text.count(FENCE) % 2 == 1
    chars = len(text)

    def judged(rule: str, period: int, span: int) -> Trip | None:
        return judge_repetition(rule, text, period, span, chars=chars, in_fence=in_fence,
                                allowance=max_structured_repeat_chars,
                                onset=lambda: chars - periodic_run(text, period))

    if max_repeated_cycle_chars:
        period = periodic_period(text, max_repeated_cycle_chars, min_repeated_cycle_chars)
        trip = judged(REPEATING_CYCLE, period, max(min_repeated_cycle_chars, 2 * period)) if period else None
        if trip is not None:
            return trip
    floor = (max_repeated_cycle_chars or LONG_CYCLE_FLOOR) + 1
    if max_long_cycle_chars >= floor:
        tail = text[-max(long_cycle_repeats * max_long_cycle_chars, min_repeated_cycle_chars):]
        period = cycle_scan(tail, max_long_cycle_chars, min_repeated_cycle_chars, min_period=floor,
                            repeats=long_cycle_repeats, probe=LONG_PROBE, refuting=())[0]
        trip = judged(LONG_CYCLE, period, max(long_cycle_repeats * period, min_repeated_cycle_chars)) if period else None
        if trip is not None:
            return trip
    if novelty is not None and len(text) >= novelty.window:  # shorter text fills no window: nothing to judge
        dip = novelty.feed(text) or novelty.finish()
        if dip is not None:
            return Trip(LOW_NOVELTY, dip.chars, novelty=dip.novelty)
    return None
