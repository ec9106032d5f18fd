"""Canonical tool arguments: parse, deep key-sort, compact dump.

The same arguments arrive as an object or as a string with other spacing or key order; the repeat
chain must see them as one key. Numbers are written as the seed's JavaScript writes them
(`JSON.stringify` after `JSON.parse`): every number is a double, so `100`, `100.0` and `1e2` are one
value, written `100`, and `1e21` and `1000000000000000000000` are both `1e+21`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .records import Content
from ..runtime.terminal import escape_char


def canonical_arguments(value: Any) -> tuple[str | None, Content]:
    """Return (canonical text, how it was read). Text that is not JSON is kept verbatim, marked MALFORMED."""
    if value is None:
        return None, Content.ABSENT
    if isinstance(value, (bytes, bytearray)):
        value = value.decode("utf-8", "replace")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):  # (nested past the JSON reader's recursion: kept as text too)
            return value.strip(), Content.MALFORMED
    try:
        text = _dumps(value)
        # Only a number JavaScript may write otherwise makes the value walked again (`_dumps_js`).
        if digit_runs(text, 16) and _NOT_JS_NUMBER.search(text) is not None:
            text = _dumps_js(value)
        return text, Content.OK
    except (TypeError, ValueError, RecursionError):
        return repr(value), Content.MALFORMED


def _dumps(value: Any) -> str:
    """Compact JSON with keys sorted at every depth, non-ASCII kept as is; NaN and the infinities
    written `null`, as JavaScript's `JSON.stringify` writes them."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: written again with them as None
        return json.dumps(_finite(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if value - value == 0 else None  # (NaN and the infinities are not)
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(item) for item in value]
    return value


# Digits mapped to `0`, `.`, `e` and `E` to `.`: a digit followed by a fraction or an exponent shows as
# `0.`, a run of digits as a run of `0`s, found by C-level passes.
_NUMBER_MARKS = bytes.maketrans(b"0123456789eE", b"0000000000..")


def digit_runs(text: str, run: int) -> bool:
    """Whether `text` may hold a number written with a fraction or an exponent (a digit, then `.`,
    `e` or `E`), or a run of `run` digits or more. False proves neither is there (strings included)."""
    marks = text.encode("utf-8", "surrogatepass").translate(_NUMBER_MARKS)
    return b"0." in marks or b"0" * run in marks


# A number token that JavaScript may write otherwise: one with a fraction or an exponent, or an integer
# of 16 digits or more (beyond 2**53 a double rounds it). Matched in the dumped text, strings included:
# a match inside a string only costs the walk below, which writes the same text for it.
_NOT_JS_NUMBER = re.compile(r"(?:^|[:,\[])-?\d+(?:[.eE]|\d{15})")


def js_number(value: int | float) -> str:
    """`value` as JavaScript's `Number.prototype.toString` writes the double nearest to it (what
    `JSON.stringify` writes; a number out of double range is `null` there, as Infinity is)."""
    try:
        number = float(value)
    except OverflowError:
        return "null"
    if number != number or number in (float("inf"), float("-inf")):
        return "null"
    if number == 0:
        return "0"  # -0 too
    sign = "-" if number < 0 else ""
    # Python's repr is the shortest text that reads back as the same double, as JavaScript's is.
    mantissa, _, exponent = repr(abs(number)).partition("e")
    whole, _, fraction = mantissa.partition(".")
    written = whole + fraction
    significant = written.lstrip("0")
    # value = 0.<digits> * 10**point
    point = len(whole) + int(exponent or 0) - (len(written) - len(significant))
    digits = significant.rstrip("0")
    count = len(digits)
    if count <= point <= 21:
        return sign + digits + "0" * (point - count)
    if 0 < point <= 21:
        return sign + digits[:point] + "." + digits[point:]
    if -6 < point <= 0:
        return sign + "0." + "0" * -point + digits
    power = point - 1
    written = digits[0] + ("." + digits[1:] if count > 1 else "")
    return f"{sign}{written}e{'+' if power >= 0 else '-'}{abs(power)}"


def _dumps_js(value: Any) -> str:
    """Canonical JSON as `dumps_canonical` writes it, every number written by `js_number`."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{_dumps(str(key))}:{_dumps_js(item)}"
                              for key, item in sorted(value.items())) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_dumps_js(item) for item in value) + "]"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return js_number(value)
    return _dumps(value)


# Characters that let quoted text pass for markup or start a line of its own in a model's prompt: angle
# brackets, C0/C1 controls and DEL, and the Unicode line and paragraph separators.
_UNSAFE = re.compile("[<>\x00-\x1f\x7f-\x9f\u2028\u2029]")
def escape_quoted(text: str) -> str:
    """`text` with `<`, `>` and control characters written as JSON escapes (`\\u003c`, `\\n`, ...):
    inside a JSON string it still decodes to the same value; in a prompt it is neither markup nor a
    line of its own. Text without them is returned as it is."""
    return _UNSAFE.sub(escape_char, text) if _UNSAFE.search(text) else text


def arguments_preview(canonical: str | None, limit: int, is_json: bool) -> str:
    """Canonical arguments cut at `limit` characters, saying how much was left out, safe to quote in a
    message to the model (the arguments came from the model, often from a web page).

    `is_json`: the arguments were read as JSON (a `ToolCall` whose `arguments_content` is
    `Content.OK`: their canonical text is JSON, not parsed again here). Canonical JSON is shown as it
    is unless it holds `<`, `>` or control characters, which are escaped; anything else (arguments
    that were not JSON) is shown as one escaped JSON string.
    """
    text = canonical or ""
    return cut_preview(text[:limit], len(text), is_json or not text)  # (nothing: nothing to quote)


def cut_preview(cut: str, total_chars: int, is_json: bool) -> str:
    """The preview of text of `total_chars` characters kept only as its first ones, `cut` (`is_json`:
    the whole text was JSON); see `arguments_preview`."""
    rest = f"… (+{total_chars - len(cut)} more chars)" if total_chars > len(cut) else ""
    if is_json:
        return escape_quoted(cut) + rest
    return escape_quoted(json.dumps(cut, ensure_ascii=False)) + rest

