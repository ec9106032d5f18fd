"""Thinking loops across model calls: reasoning-only, restated material, self-repetition."""

from __future__ import annotations

import heapq
from array import array
from enum import StrEnum

from ..record_type import record
from .text import gram_hashes, grams, repeat_ratio_of

SKETCH_SIZE = 128  # hashes kept of the previous call's 4-grams: ~400 B, containment sd ~0.04 at 0.6
# The 32-bit crc32 gram hashes, stored in 4 bytes each ("L" takes 8 on most 64-bit platforms).
HASH_TYPECODE = "I" if array("I").itemsize == 4 else "L"
_LITTLE_ENDIAN = array(HASH_TYPECODE, [1]).tobytes()[0] == 1


class Step(StrEnum):
    PROGRESS = "progress"
    REASONING_ONLY = "reasoning-only"
    REPEATED_MATERIAL = "repeated-material"
    LOW_ENTROPY = "low-entropy"


@record(frozen=True)
class ThinkingJudgement:
    step: Step
    stalled: int  # the stall count this call reached (before a reaction resets it)
    fire: bool  # react now
    capped: bool  # a reaction was due but max_fires was used up
    containment: float | None
    repeat_ratio: float


@record(frozen=True)
class ThinkingRules:
    """A detector's settings: one object shared by every agent's detector (not copied into each)."""

    max_thinking_steps: int = 3
    min_reasoning_chars: int = 2048
    repeat_ratio: float = 0.5
    similarity_threshold: float = 0.8
    max_fires: int = 4


class ThinkingLoopDetector:
    """Per-agent thinking-loop state. Not thread-safe: the caller serialises calls per agent.

    State lives for the agent's lifetime: a new user prompt does not reset it (seed behaviour).
    `rules`, or the settings of new ones (`ThinkingRules`' fields) as keywords.
    """

    __slots__ = ("rules", "_previous", "stalled", "fires")

    def __init__(self, rules: ThinkingRules | None = None, **settings: float):
        if rules is not None and settings:
            raise TypeError("pass rules or their settings, not both")
        self.rules = ThinkingRules(**settings) if rules is None else rules  # type: ignore[arg-type]
        self._previous: bytes | None = None  # the previous judged call's 4-grams: a packed bottom-k sketch
        self.stalled = 0
        self.fires = 0

    def observe(self, has_output: bool, reasoning: str) -> ThinkingJudgement | None:
        """Judge one ended model call. None when its reasoning is too short to judge (no state change)."""
        rules = self.rules
        if len(reasoning) < rules.min_reasoning_chars:
            return None
        windows = grams(reasoning)
        hashes = gram_hashes(windows)
        overlap: float | None = None
        repeated = False
        if self._previous is not None and rules.similarity_threshold > 0:
            overlap = estimated_containment(*unpacked(self._previous), hashes, len(windows))
            repeated = overlap >= rules.similarity_threshold
        # Keep a bounded sample of this call's windows (a bottom-k sketch), not the windows themselves.
        self._previous = packed_sketch(hashes, len(windows), SKETCH_SIZE)
        ratio = repeat_ratio_of(len(reasoning), len(windows))  # the window set is already built

        if not has_output:
            step = Step.REASONING_ONLY
        elif repeated:
            step = Step.REPEATED_MATERIAL
        elif ratio >= rules.repeat_ratio:
            step = Step.LOW_ENTROPY
        else:
            self.stalled = 0
            return ThinkingJudgement(Step.PROGRESS, 0, False, False, overlap, ratio)

        self.stalled += 1
        stalled = self.stalled
        fire = capped = False
        if stalled >= rules.max_thinking_steps:
            if self.fires < rules.max_fires:
                fire = True
                self.fires += 1
                self.stalled = 0
            else:
                capped = True
        return ThinkingJudgement(step, stalled, fire, capped, overlap, ratio)


def packed_sketch(hashes: set[int], size: int, k: int) -> bytes:
    """A bottom-k sketch of a text's 4-grams: the `k` smallest of their 32-bit `hashes` and `size`,
    their count, packed without loss in about 3 bytes a hash instead of 4 (`unpacked` gives them
    back).

    Sorted, the hashes' top bytes rise slowly (the k smallest of ~3 000 hashes are all below 2^28):
    their top byte is stored as how many hashes have each top byte value, their lower three bytes
    as they are. Layout: `size` (4 bytes); the length n of the top-byte field; that field (n < k:
    counts by value; n == k: the top bytes themselves, when counting would take as much); the low
    bytes, byte by byte (all first bytes, then all second, then all third). `k` at most 255 (one
    byte counts)."""
    if not 0 <= k <= 255:
        raise ValueError(f"k must be 0..255, got {k}")
    words = array(HASH_TYPECODE, heapq.nsmallest(k, hashes))  # ascending
    if not _LITTLE_ENDIAN:
        words.byteswap()
    raw = words.tobytes()
    top = raw[3::4]
    if top and top[-1] + 1 < len(top):
        top = bytes(top.count(value) for value in range(top[-1] + 1))
    return b"".join((size.to_bytes(4, "little"), bytes((len(top),)), top, raw[0::4], raw[1::4], raw[2::4]))


def unpacked(sketch: bytes) -> tuple[array, int]:
    """The hashes `packed_sketch` packed (ascending), and the count of 4-grams they sample."""
    n = sketch[4]
    top, low = sketch[5:5 + n], sketch[5 + n:]
    k = len(low) // 3
    if n != k:  # counts of each top byte value
        top = b"".join(bytes((value,)) * count for value, count in enumerate(top))
    raw = bytearray(4 * k)
    raw[0::4], raw[1::4], raw[2::4], raw[3::4] = low[:k], low[k:2 * k], low[2 * k:], top
    words = array(HASH_TYPECODE, raw)
    if not _LITTLE_ENDIAN:
        words.byteswap()
    return words, int.from_bytes(sketch[:4], "little")


def estimated_containment(sketch: array, size: int, current: set[int], current_size: int) -> float:
    """|previous ∩ current| / min(|previous|, |current|), the intersection estimated from the previous
    call's bottom-k sketch (exact when the previous call had at most SKETCH_SIZE distinct grams)."""
    if not sketch or not current:
        return 0.0
    found = sum(1 for h in sketch if h in current)
    return min(1.0, size * found / len(sketch) / min(size, current_size))


DETAILS = {
    Step.REASONING_ONLY: "several long reasoning-only calls with no output",
    Step.REPEATED_MATERIAL: "several calls that restate the same reasoning without adding anything",
    Step.LOW_ENTROPY: "a self-repeating reasoning loop",
}
