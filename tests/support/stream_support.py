"""References shared by the stream tests (the breaker's and `watch_stream`'s)."""

from __future__ import annotations

import random

from otelguard.guards.config import ThinkingLoopGuardConfig
from otelguard.detectors.stream import trailing_identical_run
from otelguard.guards import ThinkingLoopGuard


def cut(text: str, rng: random.Random, sizes: tuple[int, int]) -> list[str]:
    """The text cut into deltas of sizes drawn from `sizes` (inclusive)."""
    deltas, at = [], 0
    while at < len(text):
        size = rng.randint(*sizes)
        deltas.append(text[at : at + size])
        at += size
    return deltas


def reference_identical_trip(deltas: list[str], limit: int) -> int | None:
    """Index of the delta on which the trailing identical run first reaches `limit`."""
    for index in range(len(deltas)):
        if trailing_identical_run(deltas[: index + 1]) >= limit:
            return index
    return None


PLAN = "The plan is to read the configuration file first, then compare each entry with the schema. "


def ending_in_a_chant() -> list[str]:
    """4-character deltas of prose, then a chant whose periodic tail passes the cycle rule's 256
    characters only in the last deltas, after the breaker's last evaluation (its cadence): fed delta
    by delta, the default breaker trips only at `finish` (tests/drivers/live/test_watch_stream.py checks it)."""
    text = PLAN + ("Checking.\n" * 30)[:259]
    return [text[at : at + 4] for at in range(0, len(text), 4)]


def trip_at_finish_only(deltas: list[str]):
    """The trip of the default guard's breaker fed `deltas` one by one, when it comes only at
    `finish()` (the stream's end); None when no delta trips it and neither does the end, or when a
    delta does (then the end is not what judged it)."""
    breaker = ThinkingLoopGuard(ThinkingLoopGuardConfig()).new_breaker()
    if any(breaker.push(delta) is not None for delta in deltas):
        return None
    return breaker.finish()
