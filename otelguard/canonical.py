"""Canonical tool arguments: parse, deep key-sort, compact dump.

The same arguments arrive as an object or as a string with other spacing or key order; the repeat
chain must see them as one key.
"""

from __future__ import annotations

import json
import re
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


# Characters that let quoted text pass for markup or start a line of its own in a model's prompt: angle
# brackets, C0/C1 controls and DEL, and the Unicode line and paragraph separators.
_UNSAFE = re.compile("[<>\x00-\x1f\x7f-\x9f\u2028\u2029]")
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _escape_char(match: re.Match[str]) -> str:
    char = match.group()
    return _SHORT_ESCAPES.get(char) or f"\\u{ord(char):04x}"


def escape_quoted(text: str) -> str:
    """`text` with `<`, `>` and control characters written as JSON escapes (`\\u003c`, `\\n`, ...):
    inside a JSON string it still decodes to the same value; in a prompt it is neither markup nor a
    line of its own. Text without them is returned as it is."""
    return _UNSAFE.sub(_escape_char, text) if _UNSAFE.search(text) else text


def arguments_preview(canonical: str | None, limit: int) -> str:
    """Canonical arguments cut at `limit` characters, saying how much was left out, safe to quote in a
    message to the model (the arguments came from the model, often from a web page).

    Canonical JSON is shown as it is unless it holds `<`, `>` or control characters, which are escaped;
    anything else (arguments that were not JSON) is shown as one escaped JSON string.
    """
    text = canonical or ""
    cut = text if len(text) <= limit else text[:limit]
    rest = f"… (+{len(text) - limit} more chars)" if len(text) > limit else ""
    if _is_json(text):
        return escape_quoted(cut) + rest
    return escape_quoted(json.dumps(cut, ensure_ascii=False)) + rest


def _is_json(text: str) -> bool:
    if not text:
        return True  # nothing to quote
    try:
        fastjson.loads(text)
    except ValueError:
        return False
    return True
