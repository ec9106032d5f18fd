"""Mid-stream breaker: one model call repeating itself while it streams.

Two rules share one breaker: a trailing run of identical (trimmed) deltas, and an exact short cycle
at the character level (a cycle of short lines never makes identical deltas).
"""

from __future__ import annotations

from dataclasses import dataclass

IDENTICAL_CHUNKS = "identical-chunks"
REPEATING_CYCLE = "repeating-cycle"
CYCLE_CHECK_EVERY = 32  # characters between cycle checks: bounds the per-character cost


@dataclass(frozen=True, slots=True)
class Trip:
    rule: str
    chars: int  # visible characters emitted when it tripped
    run: int = 0  # identical-chunks: the run length
    period: int = 0  # repeating-cycle: the period


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
    n = len(text)
    if n < 2 or max_period < 1:
        return 0
    # A qualifying p repeats the last k characters p characters earlier (the periodic span covers
    # p + k characters), so only the occurrences of that suffix found by rfind are candidates.
    k = max(1, min(8, min_span - max_period, n - 1))
    suffix = text[n - k:]
    lo = max(0, n - k - max_period)
    hi = n - 1  # an occurrence must end before the text does
    while True:
        start = text.rfind(suffix, lo, hi)
        if start < 0:
            return 0
        period = n - k - start  # rfind from the right: smallest period first
        span = max(min_span, 2 * period)
        if span > n:
            if 2 * period > n:
                return 0
        else:
            tail = text[-span:]
            if tail[period:] == tail[:-period] and len(set(text[-period:])) >= 2:
                return period
        hi = start + k - 1


def trailing_periodic_span(text: str, max_period: int, min_span: int) -> int:
    """Characters of the tail that the cycle rule checked and found periodic; 0 when it does not trip."""
    period = periodic_period(text, max_period, min_span)
    return max(min_span, 2 * period) if period else 0


class StreamBreaker:
    """Fed the visible text deltas of one model call; trips at most once. Not thread-safe."""

    __slots__ = (
        "max_repeated_text", "max_cycle", "min_cycle_span", "_keep",
        "_last", "_run", "_pending", "_tail", "_since_check", "chars", "trip",
    )

    def __init__(self, *, max_repeated_text: int = 60, max_repeated_cycle_chars: int = 64,
                 min_repeated_cycle_chars: int = 256):
        self.max_repeated_text = max_repeated_text
        self.max_cycle = max_repeated_cycle_chars
        self.min_cycle_span = min_repeated_cycle_chars
        self._keep = max(min_repeated_cycle_chars, 2 * max_repeated_cycle_chars) + CYCLE_CHECK_EVERY
        self._last: str | None = None
        self._run = 0
        self._pending: list[str] = []
        self._tail = ""
        self._since_check = 0
        self.chars = 0
        self.trip: Trip | None = None

    def push(self, delta: str) -> Trip | None:
        """Feed one delta. Returns the Trip on the delta that trips, else None (also after a trip)."""
        if self.trip is not None:
            return None
        self.chars += len(delta)
        if self.max_repeated_text:
            trimmed = delta.strip()
            if trimmed == self._last:
                self._run += 1
            else:
                self._last, self._run = trimmed, 1
            if self._run >= self.max_repeated_text:
                self.trip = Trip(IDENTICAL_CHUNKS, self.chars, run=self._run)
                return self.trip
        if self.max_cycle:
            self._pending.append(delta)
            self._since_check += len(delta)
            if self._since_check >= CYCLE_CHECK_EVERY:
                return self._check_cycle()
        return None

    def finish(self) -> Trip | None:
        """Run the cycle rule once more on what arrived since the last check (end of the stream)."""
        if self.trip is None and self.max_cycle and self._since_check:
            return self._check_cycle()
        return None

    def _check_cycle(self) -> Trip | None:
        self._tail = (self._tail + "".join(self._pending))[-self._keep :]
        self._pending.clear()
        self._since_check = 0
        period = periodic_period(self._tail, self.max_cycle, self.min_cycle_span)
        if period:
            self.trip = Trip(REPEATING_CYCLE, self.chars, period=period)
        return self.trip

    @property
    def identical_run(self) -> int:
        return self._run


def judge_final_text(text: str, *, max_repeated_cycle_chars: int, min_repeated_cycle_chars: int) -> Trip | None:
    """The cycle rule run once on a call's final text (when no deltas were seen)."""
    if not max_repeated_cycle_chars:
        return None
    period = periodic_period(text, max_repeated_cycle_chars, min_repeated_cycle_chars)
    return Trip(REPEATING_CYCLE, len(text), period=period) if period else None
