"""What makes two tool results, two errors or two argument texts "the same" for the progress rules.

Each signature is a 64-bit hash (`hash()`: stable within a process, which is all a window needs), so
a window of them stays small whatever the tools returned. Only a bounded head of long text is
normalised; the rest is hashed as it is.
"""

from __future__ import annotations

import re

from ..records import Status, ToolCall

_HEAD_CHARS = 128  # masked and normalised; the rest of longer text is hashed as it is (a volatile
# field past it makes the outcome differ: a loop missed, never a false one)

# Fields that change between identical answers: tokens of 8 or more hex digits and timestamp
# separators from a digit on (ISO timestamps, clock times, UUIDs, hex ids, long digit runs), and the
# value of a labelled id (`Chunk ID: 287d99`, as Codex prints each shell result; `"request_id": ...`);
# then the hex letters an id began with. One first character class (a digit, `I` or `i`), the rest
# checked behind it, keeps the pass cheap (callgrind: 13k instructions a short text against 47k for
# the same rule written as two alternatives, and 9k for the timestamp rule alone); the second pass
# runs only on text that had such a token.
_VOLATILE = re.compile(
    r"[\dIi](?:(?<=\d)[\da-fA-FTZ:.,+-]{7,}"
    r"|(?<=[^A-Za-z0-9][Ii])[Dd][\"']?[ \t]*[:=][ \t]*[\"']?[\w.-]{4,})", re.ASCII)
_ID_LEAD = re.compile(r"[a-fA-F]{1,7}#", re.ASCII)
# Text with neither 8 of the first alternative's characters in a row nor an `id` cannot match: told by
# C-level passes, where the regex costs ~100 instructions a character (most results have no such token).
_TOKEN_MARKS = bytes(
    ord("x") if chr(byte) in "0123456789abcdefABCDEFTZ:.,+-" else ord(" ") for byte in range(256))
_TOKEN_RUN = b"x" * 8
# An error's variable parts besides those: paths (and file names), quoted names, and every number (line
# numbers too).
_ERROR_DETAIL = re.compile(
    r"(?:[A-Za-z]:)?(?:[\w.~@+-]*[/\\])+[\w.@+-]*"
    r"|\b\w[\w-]*\.[A-Za-z]{1,5}(?=[:,;)\s'\"]|$)"
    r"|'[^'\n]{0,200}'|\"[^\"\n]{0,200}\"|`[^`\n]{0,200}`"
    r"|\d+"
)
# Near-identical arguments: whitespace (str.split's), quotes and backslashes dropped.
_LOOSE_HEAD_CHARS = 4096  # arguments normalised for near-duplicates; the rest compared as it is
_LOOSE_DROPPED = ("\"", "'", "`", "\\", "\u2018", "\u2019", "\u201c", "\u201d")


def _masked(text: str) -> str:
    if _TOKEN_RUN not in text.encode("utf-8", "surrogatepass").translate(_TOKEN_MARKS) and "id" not in text.lower():
        return text
    masked, count = _VOLATILE.subn("#", text)
    return _ID_LEAD.sub("#", masked) if count else masked


def result_signature(result: str | None) -> int | None:
    """The result with whitespace runs collapsed and volatile fields masked; None when none was read
    or it is blank (a `sleep` says nothing: it is no evidence of the same answer)."""
    if result is None or not result or result.isspace():
        return None
    head = " ".join(_masked(result[:_HEAD_CHARS]).split())
    return hash((head, result[_HEAD_CHARS:])) if len(result) > _HEAD_CHARS else hash(head)


def failed(call: ToolCall) -> bool:
    """The call failed: an error status or message, or it was denied."""
    return call.status is Status.ERROR or call.error_message is not None or call.denied


def error_text(call: ToolCall) -> str:
    """What the call said of its failure: its error message, else its result."""
    return call.error_message or call.result or ("denied" if call.denied else "")


def error_signature(text: str) -> int:
    """The error with numbers, paths, quoted names and ids masked: the same failure whatever it was about."""
    head = text[:_HEAD_CHARS]
    return hash(" ".join(_ERROR_DETAIL.sub("#", _masked(head)).split()))


def loose_arguments(arguments: str) -> str:
    """Arguments as near-duplicate calls share them: Unicode NFC, whitespace, quotes and backslashes
    dropped, in a bounded head (the rest of longer arguments is kept as it is: a span's end stays short)."""
    head, rest = arguments[:_LOOSE_HEAD_CHARS], arguments[_LOOSE_HEAD_CHARS:]
    if not head.isascii():
        import unicodedata  # (only here: a CLI hook's process, whose calls are mostly ASCII, loads no extension for it)

        head = unicodedata.normalize("NFC", head)
    loose = "".join(head.split())
    for dropped in _LOOSE_DROPPED:
        if dropped in loose:
            loose = loose.replace(dropped, "")
    return loose + rest if rest else loose
