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
    except orjson.JSONDecodeError:
        return json.loads(text)


def dumps_canonical(value: Any) -> str:
    """Compact JSON with keys sorted at every depth, non-ASCII kept as is."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except (TypeError, orjson.JSONEncodeError):
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
