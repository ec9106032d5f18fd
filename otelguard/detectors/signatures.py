"""What makes two tool outcomes or two argument texts "the same" for the progress rules.

An outcome is what the call printed: its result, or for a failure its status description together
with its output. Two outcomes are the same when they are equal once volatile fields are masked
(timestamps, clock times, durations, ids, addresses, temporary paths), line endings and trailing
spaces aside.
Numbers that carry progress (counts, line numbers, measured values) are kept: a test run whose
failure count moved, or a value that changed, is another outcome.

An outcome that says nothing (blank, or nothing left once markup, a status phrase such as
`exit code 1` and a lone status number are taken out) is no evidence of "the same result" or "the
same error": a `grep` that matched nothing, a `sleep`, a copy that printed nothing.

Each signature is a 64-bit hash (`hash()`: stable within a process, which is all a window needs).
Long text is masked in its head and its tail (where a test run or a build prints its summary); the
middle is hashed as it is, so a volatile field there makes two outcomes differ: a loop missed, never
a false one.
"""

from __future__ import annotations

import re
import unicodedata

from ..model.records import Status, ToolCall

MASKED_CHARS = 2048  # masked at each end of a long text (all of a text up to twice this)

# Volatile fields, each masked to "#": dates and times (ISO, clock times with seconds, `ls -l`'s
# "Dec  1 13:28"), durations ("in 0.52s", "Wall time: 0.0000 seconds"), UUIDs, hex ids of 8 or more
# characters holding a digit and a letter (commit hashes, request ids), addresses (0x7f3a…), integers
# of 10 or more digits (epoch times, ids), the value of a labelled id (`Chunk ID: 287d99`,
# `"request_id": "req-81f2"`, `PGID: 23082`), and temporary paths. A token's left edge is checked
# behind its first character: a digit or hex letter inside a word or a number (the decimals of
# 0.4812345679) starts no token.
_UUID_REST = r"[\da-fA-F]{7}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{4}-[\da-fA-F]{12}\b"
_VOLATILE = re.compile(
    r"\d(?<![\w.]\d)(?:"
    r"\d{3}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d?:\d{2}:\d{2}(?:[.,]\d+)?"
    r"|" + _UUID_REST +
    r"|(?<=0)x[\da-fA-F]{4,}\b"
    r"|(?=[\da-fA-F]{7,}\b)\d*[a-fA-F][\da-fA-F]*"
    r"|\d{9,}(?![\d.])"
    r"|\d*(?:\.\d+)?[ \t]?(?:ms|µs|us|ns|s|secs?|seconds?|mins?|minutes?)\b"
    r")"
    r"|[a-fA-F](?<![\w.][a-fA-F])(?:" + _UUID_REST + r"|(?=[\da-fA-F]{7,}\b)[a-fA-F]*\d[\da-fA-F]*)"
    r"|(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)(?<!\w...)[ \t]+\d{1,2}[ \t]+(?:\d{1,2}:\d{2}|\d{4})\b"
    r"|[Ii][Dd](?<![a-z\d][Ii][Dd])(?<![A-Z][Ii]d)\b[\"']?[ \t]*[:=][ \t]*[\"']?[\w.-]{4,}"
    r"|/(?<![\w./-]/)(?:private/)?(?:var/folders|var/tmp|tmp)(?![\w.-])(?:/[^\s\"'`,;:)]*)?")
# What says nothing of an outcome: markup tags, an element holding a lone number (a status code),
# and an exit status phrase ("exit code 1", "Exit status: 2", "returned 1").
_STATUS_ELEMENT = re.compile(r"<([A-Za-z][\w.:-]*)[^<>]*>\s*-?\d+\s*</\1\s*>")
_TAG = re.compile(r"</?[A-Za-z][\w.:-]*[^<>]*>")
_STATUS_PHRASE = re.compile(
    r"[EeRr](?<![\w][EeRr])(?i:xit(?:ed)?|eturn(?:ed)?)(?:[ _-]?(?i:code|status|value))?(?:[ \t]+with)?"
    r"[ \t]*[:=]?[ \t]*-?\d+\b")
# Near-identical arguments: whitespace (str.split's), quotes and backslashes dropped.
_LOOSE_HEAD_CHARS = 4096  # arguments normalised for near-duplicates; the rest compared as it is
_LOOSE_DROPPED = ("\"", "'", "`", "\\", "\u2018", "\u2019", "\u201c", "\u201d")


def says_nothing(text: str | None) -> bool:
    """Nothing is left of `text` once markup, status elements and status phrases are taken out."""
    if text is None or not text or text.isspace():
        return True
    rest = _STATUS_PHRASE.sub(" ", _TAG.sub(" ", _STATUS_ELEMENT.sub(" ", text)))
    return rest.isspace() or not rest


def _normalised(text: str) -> str:
    # Spacing inside and at the start of a line is kept: it is what a formatting or indentation fix
    # changes. Line endings and trailing spaces are not.
    return "\n".join(line.rstrip() for line in _VOLATILE.sub("#", text).splitlines()).strip("\n")


def outcome_signature(text: str | None) -> int | None:
    """The outcome with volatile fields masked (in the head and tail of long text); None when it says
    nothing."""
    if says_nothing(text):
        return None
    assert text is not None
    if len(text) <= 2 * MASKED_CHARS:
        return hash(_normalised(text))
    head, middle, tail = text[:MASKED_CHARS], text[MASKED_CHARS:-MASKED_CHARS], text[-MASKED_CHARS:]
    return hash((_normalised(head), middle, _normalised(tail)))


def failed(call: ToolCall) -> bool:
    """The call failed: an error status or message, or it was denied."""
    return call.status is Status.ERROR or call.error_message is not None or call.denied


def failure_text(call: ToolCall) -> str:
    """What a failed call said: its status description or exception message with its output (the
    output alone when it repeats the message), or "denied"."""
    message, result = call.error_message, call.result
    if message and result and message not in result:
        return f"{message}\n{result}"
    return message or result or ("denied" if call.denied else "")


def loose_arguments(arguments: str) -> str:
    """Arguments as near-duplicate calls share them: Unicode NFC, whitespace, quotes and backslashes
    dropped, in a bounded head (the rest of longer arguments is kept as it is)."""
    head, rest = arguments[:_LOOSE_HEAD_CHARS], arguments[_LOOSE_HEAD_CHARS:]
    loose = "".join(unicodedata.normalize("NFC", head).split())
    for dropped in _LOOSE_DROPPED:
        loose = loose.replace(dropped, "")
    return loose + rest
