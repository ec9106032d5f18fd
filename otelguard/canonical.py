"""Canonical tool arguments: parse, deep key-sort, compact dump.

The same arguments arrive as an object or as a string with other spacing or key order; the repeat
chain must see them as one key.
"""

from __future__ import annotations

from typing import Any

from . import fastjson
from .records import Content


def canonical_arguments(value: Any) -> tuple[str | None, Content]:
    """Return (canonical text, how it was read). Text that is not JSON is kept verbatim, marked MALFORMED."""
    if value is None:
        return None, Content.ABSENT
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = fastjson.loads(value)
        except ValueError:
            return value.strip(), Content.MALFORMED
    try:
        return fastjson.dumps_canonical(value), Content.OK
    except (TypeError, ValueError, RecursionError):
        return repr(value), Content.MALFORMED


def arguments_preview(canonical: str | None, limit: int) -> str:
    """Canonical arguments cut at `limit` characters, saying how much was left out."""
    text = canonical or ""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… (+{len(text) - limit} more chars)"
