"""References shared by the stream tests (the breaker's and `watch_stream`'s)."""

from __future__ import annotations

from otelguard.detectors.stream import trailing_identical_run


def reference_identical_trip(deltas: list[str], limit: int) -> int | None:
    """Index of the delta on which the trailing identical run first reaches `limit`."""
    for index in range(len(deltas)):
        if trailing_identical_run(deltas[: index + 1]) >= limit:
            return index
    return None
