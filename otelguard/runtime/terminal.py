"""Text for a terminal or a log line, from values that came from untrusted input.

A span's names and a file's lines can hold escape sequences that would redraw a terminal (a fake
"ALL CLEAR"), and values of any size. Everything human-readable that otelguard prints goes through
`printable` (the text reports too: `text_report`); a value quoted in an error message goes through
`short_repr`.
"""

from __future__ import annotations

import re
import reprlib
from typing import Any


# C0 and C1 controls and DEL (ESC starts every ANSI sequence), the Unicode line and paragraph
# separators, and the bidirectional overrides and isolates that reorder what a terminal shows.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
# JSON's short escapes: a quoted value escaped this way still decodes to itself (`canonical.escape_quoted`).
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}
# What `json.dumps(..., ensure_ascii=False)` leaves as it is of those (it escapes C0 controls itself).
_UNPRINTABLE_IN_JSON = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")

_REPR = reprlib.Repr()
_REPR.maxstring = 80
_REPR.maxother = 80
_REPR.maxlong = 40
_REPR.maxlevel = 3


def escape_char(match: re.Match[str]) -> str:
    """The matched character as a JSON escape: its short form, else `\\uXXXX`."""
    char = match.group()
    return _SHORT.get(char) or f"\\u{ord(char):04x}"


def printable(text: str, limit: int | None = None) -> str:
    """`text` with control characters written as escapes (`\\x1b` as `\\u001b`, a newline as `\\n`),
    cut to about `limit` characters (saying how many were left out) when given."""
    return _UNPRINTABLE.sub(escape_char, text if limit is None else cut(text, limit))


def cut(text: str, limit: int) -> str:
    """`text`, or its first `limit` characters saying how many were left out."""
    return f"{text[:limit]}… (+{len(text) - limit:,} chars)" if len(text) > limit else text


def printable_json(text: str) -> str:
    """JSON text (from `json.dumps(..., ensure_ascii=False)`) with the control characters it keeps
    written as `\\uXXXX` escapes: the same JSON, harmless on a terminal. (They can only be inside
    strings, where the escape means the same character.)"""
    return _UNPRINTABLE_IN_JSON.sub(escape_char, text)


def short_repr(value: Any) -> str:
    """A `repr` of bounded size, whatever the value (long strings and deep containers are cut)."""
    return printable(_REPR.repr(value))
