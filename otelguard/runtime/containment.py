"""Contain at the boundary, loud in our own tests.

Every entry from the SDK (on_start, on_end, watchdog callbacks, hook calls) runs inside `contained`:
an internal error is logged once per place, counted, and never reaches the agent, except with
OTELGUARD_RAISE_INTERNAL_ERRORS=1 (the project's test suite sets it), where it is re-raised so a
swallowed bug still fails the suite. An application's own test run is no reason to raise: it
imports pytest too.
"""

from __future__ import annotations

import logging
import os
from contextlib import contextmanager
from typing import Callable, Iterator

logger = logging.getLogger("otelguard")

RAISE_ENV = "OTELGUARD_RAISE_INTERNAL_ERRORS"


def raise_internal_errors() -> bool:
    return os.environ.get(RAISE_ENV, "").strip().lower() in ("1", "true", "yes")


class Containment:
    def __init__(self, count: Callable[[str], None]):
        self._count = count
        self._logged: set[str] = set()

    @contextmanager
    def contained(self, where: str) -> Iterator[None]:
        try:
            yield
        except Exception:
            self.record(where)
            if raise_internal_errors():
                raise

    def record_and_maybe_raise(self, where: str) -> None:
        """Call from an `except` block: count and log the exception, re-raise it when the switch is on."""
        self.record(where)
        if raise_internal_errors():
            raise  # noqa: PLE0704 - re-raises the exception being handled by the caller

    def record(self, where: str) -> None:
        """Count and (once per place) log the exception being handled."""
        try:
            self._count(where)
        except Exception:
            pass
        if where not in self._logged:
            self._logged.add(where)
            logger.exception("otelguard internal error in %s (logged once; counted in otelguard.internal.errors)", where)
