"""References shared by the stream tests (the breaker's and `watch_stream`'s)."""

from __future__ import annotations

from otelguard.detectors.stream import trailing_identical_run


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
    by delta, the default breaker trips only at `finish` (tests/test_watch_stream.py checks it)."""
    text = PLAN + ("Checking.\n" * 30)[:259]
    return [text[at : at + 4] for at in range(0, len(text), 4)]
