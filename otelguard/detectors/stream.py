"""Mid-stream breaker: one model call repeating itself while it streams.

Each delta goes through the rules in order:
- identical chunks: a trailing run of `max_repeated_text` deltas equal after trimming;
- every SLOW_CHECK_EVERY characters: long cycles (a period above the cycle rule's, repeated
  `long_cycle_repeats` times), then low novelty (when the breaker has a meter);
- repeating cycle: an exact short cycle at the character level (a cycle of short lines never makes
  identical deltas), found by `cycle_scan`. The scan also bounds how many characters must still
  arrive before the tail could be periodic over the rule's span (its headroom); the rule is due
  again no later than CYCLE_CHECK_EVERY - 1 characters past that, so a forming cycle is caught
  within that cadence, and a trip is only ever reported on a periodic tail.
A repetition of structured content (a fence's lines, table rows, ...) trips only once it has run
max_structured_repeat_chars (`judge_repetition`). At the end of the stream (`finish`) the cycle
rule judges the final text once, then long cycles and novelty.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass

from .novelty import LOW_NOVELTY, NoveltyMeter
from .structure import FENCE, fences_in, is_structured

IDENTICAL_CHUNKS = "identical-chunks"
REPEATING_CYCLE = "repeating-cycle"
LONG_CYCLE = "long-cycle"
SLOW_CHECK_EVERY = 2048  # characters between the long-cycle (and mid-stream novelty) checks
LONG_CYCLE_FLOOR = 64  # long cycles start above this period when the seed's cycle rule is off
LONG_PROBE = 16  # characters of the tail a long cycle must repeat: prose seldom repeats 16 within 512
CYCLE_CHECK_EVERY = 32  # a forming cycle is caught within this many characters (the design's cadence)
SUFFIX_PROBE = 8  # characters of the tail searched for earlier in the text: a cycle must repeat them
REFUTING_WINDOWS = (32, 64, 96, 128)  # tail lengths tried, shortest first, to bound a candidate's periodic tail
INFINITY = sys.maxsize  # characters before a rule that is off is due


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

    Feed it with `push(delta)` and call `finish()` when the stream ends (the analyzer and
    `watch_stream` both do). Each delta goes through the rules in order: identical chunks; every
    SLOW_CHECK_EVERY characters, long cycles then novelty; the cycle rule when it is due.
    """

    __slots__ = (
        "_cycle_due",
        "_fences",
        "_fresh",
        "_last",
        "_long_floor",
        "_onsets",
        "_run",
        "_slow_due",
        "_text",
        "_text_keep",
        "chars",
        "long_cycle_repeats",
        "max_cycle",
        "max_long_cycle",
        "max_repeated_text",
        "max_structured",
        "min_cycle_span",
        "novelty",
        "trip",
    )

    def __init__(self, *, max_repeated_text: int = 60, max_repeated_cycle_chars: int = 64,
                 min_repeated_cycle_chars: int = 256, max_structured_repeat_chars: int = 8192,
                 max_long_cycle_chars: int = 512, long_cycle_repeats: int = 3,
                 novelty: NoveltyMeter | None = None):
        self.max_repeated_text = max_repeated_text
        self.max_cycle = max_repeated_cycle_chars
        self.min_cycle_span = min_repeated_cycle_chars
        self.max_structured = max_structured_repeat_chars
        # Long cycles are the periods the seed's rule leaves (all but the shortest 64 when it is off).
        self._long_floor = (max_repeated_cycle_chars or LONG_CYCLE_FLOOR) + 1
        self.max_long_cycle = max_long_cycle_chars if max_long_cycle_chars >= self._long_floor else 0
        self.long_cycle_repeats = long_cycle_repeats
        self.novelty = novelty
        self.chars = 0  # characters pushed until the trip
        self.trip: Trip | None = None
        self._last: str | None = None  # the last delta, trimmed
        self._run = 0  # deltas in the trailing run equal to it
        # The cycle rule is due once the tail could be periodic over its span (no sooner than
        # min_repeated_cycle_chars); the slow checks every SLOW_CHECK_EVERY characters.
        self._cycle_due = min_repeated_cycle_chars if max_repeated_cycle_chars else INFINITY
        self._slow_due = SLOW_CHECK_EVERY
        # The text: deltas since it was last read (`_fresh`), joined onto the last `_text_keep`
        # characters before them (`_text`): the longest tail a rule reads, and as much again as a
        # long cycle may run before its check, so that where a repetition began is in it.
        self._fresh: list[str] = []
        self._text = ""
        self._text_keep = max(min_repeated_cycle_chars, 2 * max_repeated_cycle_chars,
                              long_cycle_repeats * self.max_long_cycle) + SLOW_CHECK_EVERY
        self._fences = 0  # code-fence markers in the text read so far
        self._onsets: dict[str, int] = {}  # rule -> where the structured repetition it keeps finding began

    def push(self, delta: str) -> Trip | None:
        """Feed one delta. Returns the Trip on the delta that trips, else None (also after a trip)."""
        if self.trip is not None:
            return None
        chars = self.chars = self.chars + len(delta)
        self._fresh.append(delta)
        trip = None
        if self.max_repeated_text:
            trimmed = delta.strip()
            if trimmed == self._last:
                self._run += 1
            else:
                self._last = trimmed
                self._run = 1
            if self._run >= self.max_repeated_text:
                trip = self._identical_chunks(delta, chars)
        if trip is None and chars >= self._slow_due:
            trip = self._slow_checks(chars)
        if trip is None and chars >= self._cycle_due:
            trip = self._repeating_cycle(chars)
        if trip is not None:
            self.trip = trip
        return trip

    def finish(self) -> Trip | None:
        """The stream ended: the cycle rule once on the final text, then the slow checks. (The cycle
        rule's last evaluation may lie up to its cadence behind the end; with no more characters to
        come, the end is where a stream's repetition is complete. The call's final text is judged so
        when no deltas were seen, too: `judge_final_text`.)"""
        if self.trip is not None:
            return None
        trip = None
        if self.max_cycle and self.chars >= self.min_cycle_span:
            text = self._read()
            period = periodic_period(text, self.max_cycle, self.min_cycle_span)
            if period:
                trip = self._repetition(REPEATING_CYCLE, text, period, max(self.min_cycle_span, 2 * period), self.chars)
        if trip is None:
            trip = self._slow_checks(self.chars, final=True)
        if trip is not None:
            self.trip = trip
        return trip

    # --- the rules ----------------------------------------------------------------------------------
    def _identical_chunks(self, delta: str, chars: int) -> Trip | None:
        """The identical run reached its limit: the trip, unless the delta is structured content (a
        fence's lines, table rows) that has run fewer than max_structured_repeat_chars characters."""
        run = self._run
        if self.max_structured and delta.strip() \
                and (is_structured(delta + delta, len(delta), False) or self._in_fence()):
            if run * len(delta) < self.max_structured:
                return None
            return Trip(IDENTICAL_CHUNKS, chars, run=run, structured=True)
        return Trip(IDENTICAL_CHUNKS, chars, run=run)

    def _repeating_cycle(self, chars: int) -> Trip | None:
        """The cycle rule, due: `cycle_scan` over the tail. When nothing trips it is due again once
        the tail could be periodic over its span (the scan's headroom) and CYCLE_CHECK_EVERY - 1
        characters later at most, so a forming cycle is caught within that cadence; a structured
        repetition within its allowance is looked at again after CYCLE_CHECK_EVERY characters."""
        text = self._read()
        period, headroom = cycle_scan(text, self.max_cycle, self.min_cycle_span)
        if period:
            trip = self._repetition(REPEATING_CYCLE, text, period, max(self.min_cycle_span, 2 * period), chars)
            self._cycle_due = chars + CYCLE_CHECK_EVERY
            return trip
        self._onsets.pop(REPEATING_CYCLE, None)
        self._cycle_due = chars + headroom + CYCLE_CHECK_EVERY - 1
        return None

    def _slow_checks(self, chars: int, final: bool = False) -> Trip | None:
        """Every SLOW_CHECK_EVERY characters (and at the end): long cycles, then novelty."""
        self._slow_due = chars + SLOW_CHECK_EVERY
        text = self._read()
        if self.max_long_cycle:
            period = cycle_scan(text, self.max_long_cycle, self.min_cycle_span, min_period=self._long_floor,
                                repeats=self.long_cycle_repeats, probe=LONG_PROBE, refuting=())[0]
            if period:
                span = max(self.long_cycle_repeats * period, self.min_cycle_span)
                trip = self._repetition(LONG_CYCLE, text, period, span, chars)
                if trip is not None:
                    return trip
            else:
                self._onsets.pop(LONG_CYCLE, None)
        if self.novelty is not None:
            if final:
                self.novelty.finish()
            if self.novelty.dip is not None:
                return Trip(LOW_NOVELTY, chars, novelty=self.novelty.dip.novelty)
        return None

    def _repetition(self, rule: str, text: str, period: int, span: int, chars: int) -> Trip | None:
        """`judge_repetition` in the breaker: where a structured repetition began is found once, in
        the text kept, and kept while the rule keeps finding it."""

        def onset() -> int:
            if rule not in self._onsets:
                self._onsets[rule] = chars - periodic_run(text, period)
            return self._onsets[rule]

        return judge_repetition(rule, text, period, span, chars=chars, in_fence=self._in_fence(),
                                allowance=self.max_structured, onset=onset)

    # --- the text ---------------------------------------------------------------------------------------
    def _read(self) -> str:
        """The text so far (its last `_text_keep` characters at least): the deltas since the last
        read are joined onto it, their code fences counted and their prose read for novelty (a dip
        is reported by the next slow check)."""
        if self._fresh:
            fresh = "".join(self._fresh)
            self._fresh = []
            if self.max_structured:
                self._fences += fences_in(fresh, self._text)
            if self.novelty is not None:
                self.novelty.feed(fresh)
            self._text = (self._text + fresh)[-self._text_keep:]
        return self._text

    def _in_fence(self) -> bool:
        self._read()
        return self._fences % 2 == 1


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
