"""Thinking loops across model calls: reasoning-only, restated material, self-repetition."""

from __future__ import annotations

import heapq
from array import array
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from .text import gram_hashes, grams, repeat_ratio_of

SKETCH_SIZE = 128  # hashes kept of the previous call's 4-grams: 512 B, containment sd ~0.04 at 0.6
# The 32-bit crc32 gram hashes, stored in 4 bytes each ("L" takes 8 on most 64-bit platforms).
HASH_TYPECODE = "I" if array("I").itemsize == 4 else "L"


class Step(StrEnum):
    PROGRESS = "progress"
    REASONING_ONLY = "reasoning-only"
    REPEATED_MATERIAL = "repeated-material"
    LOW_ENTROPY = "low-entropy"


@dataclass(slots=True, frozen=True)
class ThinkingJudgement:
    step: Step
    stalled: int  # the stall count this call reached (before a reaction resets it)
    fire: bool  # react now
    capped: bool  # a reaction was due but max_fires was used up
    containment: float | None
    repeat_ratio: float


@dataclass(slots=True, frozen=True)
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

    def __init__(self, rules: ThinkingRules | None = None, **settings: Any):
        if rules is not None and settings:
            raise TypeError("pass rules or their settings, not both")
        self.rules = ThinkingRules(**settings) if rules is None else rules
        # The previous judged call's 4-grams: a bottom-k sketch of their hashes, and how many there were.
        self._previous: tuple[array, int] | None = None
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
            overlap = estimated_containment(*self._previous, hashes, len(windows))
            repeated = overlap >= rules.similarity_threshold
        # Keep a bounded sample of this call's windows (a bottom-k sketch), not the windows themselves.
        self._previous = sketch(hashes), len(windows)
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


def sketch(hashes: set[int], k: int = SKETCH_SIZE) -> array:
    """A bottom-k sketch of a text's 4-grams: the `k` smallest of their 32-bit `hashes`, ascending."""
    return array(HASH_TYPECODE, heapq.nsmallest(k, hashes))


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
