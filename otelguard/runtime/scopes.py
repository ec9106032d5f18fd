"""Context-variable scopes: a value that holds inside a block (and in the tasks started from it)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TypeVar

T = TypeVar("T")


@contextmanager
def scoped(variable: contextvars.ContextVar[T | None], value: T) -> Iterator[T]:
    """`variable` is `value` inside this block; as it was before, after."""
    token = variable.set(value)
    try:
        yield value
    finally:
        variable.reset(token)
