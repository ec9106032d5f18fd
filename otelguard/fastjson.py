"""JSON through orjson where it can, the standard library where orjson refuses.

orjson parses several times faster, which is most of the analyzer's time and a good part of judging a
model span. It is stricter than `json`: NaN/Infinity literals and numbers out of float range are
refused, so those inputs fall back to `json`. One difference stays: an integer beyond 64 bits
(outside -2**63 .. 2**64-1) comes back as a float, where `json` reads it exactly; OTLP's integers
are 64-bit, so no valid value is changed by it.

A CLI hook's process lives for one tool call: importing orjson (it imports dataclasses, inspect,
uuid and datetime: ~60 M instructions, a fifth of the hook's run) costs it more than orjson saves on
its few small documents. Such a process calls `use_standard_library()` first. So `loads` and
`dumps_canonical` are bound at their first use: orjson's, unless the standard library was chosen
before. Both read and write the same values (tests/test_fastjson.py).
"""

from __future__ import annotations

import json

TYPE_CHECKING = False  # (not typing's: a CLI hook imports neither it nor collections.abc)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    loads: Callable[[str | bytes], Any]
    dumps_canonical: Callable[[Any], str]

JSONDecodeError = json.JSONDecodeError  # orjson's error subclasses it


def use_standard_library() -> None:
    """Read and write JSON with the standard library alone in this process (before the first use)."""
    global loads, dumps_canonical
    loads, dumps_canonical = json.loads, _dumps_canonical_standard


def _dumps_canonical_standard(value: Any) -> str:
    """Compact JSON with keys sorted at every depth, non-ASCII kept as is; NaN and the infinities
    written `null`, as orjson (and JavaScript) write them."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or an infinity (rare: walked again)
        return json.dumps(_finite(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value - value == 0 else None  # (NaN and the infinities are not)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


def __getattr__(name: str) -> Any:
    """The first use of `loads` or `dumps_canonical` binds orjson's (module globals from then on)."""
    if name not in ("loads", "dumps_canonical"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    global loads, dumps_canonical
    loads, dumps_canonical = _orjson_functions()
    return globals()[name]


def _orjson_functions() -> tuple[Callable[[str | bytes], Any], Callable[[Any], str]]:
    import orjson

    def loads(text: str | bytes) -> Any:
        """Parse JSON text; raises json.JSONDecodeError (a ValueError) when it is not JSON."""
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as error:
            if _stdlib_refuses_too(text, error):
                raise  # (text that is not JSON at all, such as a Python repr, is not parsed twice)
            return json.loads(text)

    def dumps_canonical(value: Any) -> str:
        """Compact JSON with keys sorted at every depth, non-ASCII kept as is."""
        try:
            return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
        except (TypeError, orjson.JSONEncodeError):
            return _dumps_canonical_standard(value)

    return loads, dumps_canonical


_ONLY_STDLIB_STARTS = frozenset("NI-")  # NaN, Infinity, -Infinity: the literals only `json` reads


def _stdlib_refuses_too(text: str | bytes, error: json.JSONDecodeError) -> bool:
    """orjson stopped at a character that cannot continue JSON there, and that is not the start of
    a literal only the standard library reads: `json`, reading the same grammar, would stop there
    too. Other refusals (numbers out of float range, lone surrogates, ...) are tried with `json`.
    (orjson counts the position of str input in characters: a NaN after non-ASCII text is read.)"""
    pos = error.pos
    return (type(text) is str and error.msg.startswith("unexpected character") and 0 <= pos < len(text)
            and text[pos] not in _ONLY_STDLIB_STARTS)
