"""JSON through orjson where it can, the standard library where orjson refuses.

orjson parses several times faster, which is most of the analyzer's time and a good part of judging a
model span. It is stricter than `json`: NaN/Infinity literals and numbers out of float range are
refused, so those inputs fall back to `json`. One difference stays: an integer beyond 64 bits
(outside -2**63 .. 2**64-1) comes back as a float, where `json` reads it exactly; OTLP's integers
are 64-bit, so no valid value is changed by it.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

JSONDecodeError = json.JSONDecodeError  # orjson's error subclasses it


def loads(text: str | bytes) -> Any:
    """Parse JSON text; raises json.JSONDecodeError (a ValueError) when it is not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError as error:
        if _stdlib_refuses_too(text, error):
            raise  # (text that is not JSON at all, such as a Python repr, is not parsed twice)
        return json.loads(text)


_ONLY_STDLIB_STARTS = frozenset("NI-")  # NaN, Infinity, -Infinity: the literals only `json` reads


def _stdlib_refuses_too(text: str | bytes, error: orjson.JSONDecodeError) -> bool:
    """orjson stopped at a character that cannot continue JSON there, and that is not the start of
    a literal only the standard library reads: `json`, reading the same grammar, would stop there
    too. Other refusals (numbers out of float range, lone surrogates, ...) are tried with `json`.
    (orjson counts the position of str input in characters: a NaN after non-ASCII text is read.)"""
    pos = error.pos
    return (type(text) is str and error.msg.startswith("unexpected character") and 0 <= pos < len(text)
            and text[pos] not in _ONLY_STDLIB_STARTS)


def dumps_canonical(value: Any) -> str:
    """Compact JSON with keys sorted at every depth, non-ASCII kept as is."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
