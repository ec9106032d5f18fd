"""Text for a terminal or a log line, from values that came from untrusted input, and the text reports.

A span's names and a file's lines can hold escape sequences that would redraw a terminal (a fake
"ALL CLEAR"), and values of any size. Everything human-readable that otelguard prints goes through
`printable`; a value quoted in an error message goes through `short_repr`.

The text reports (`otelguard analyze`, `otelguard demo`) are written through `TextReport`: no line
wider than `report_width()` (100 columns, or a narrower terminal's width), colour only on a terminal
and never with NO_COLOR set, and every count written by `number` (one thousands separator).
"""

from __future__ import annotations

import os
import re
import reprlib
import shutil
import textwrap
from typing import IO, Any

from .actions import Action


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
    return _UNPRINTABLE_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


def short_repr(value: Any) -> str:
    """A `repr` of bounded size, whatever the value (long strings and deep containers are cut)."""
    return printable(_REPR.repr(value))


MAX_COLUMNS = 100
MIN_COLUMNS = 60  # a narrower terminal wraps the report's lines itself
# ANSI styles (SGR codes) of the reports' lines.
BOLD, DIM, RED, YELLOW = "1", "2", "31", "33"


def number(count: int) -> str:
    """A count as every report writes it: 16,500."""
    return f"{count:,}"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`count` and its noun, singular for 1: "1 span", "16,500 spans", "2 entries" (with `plural`)."""
    return f"{count:,} {noun if count == 1 else plural or noun + 's'}"


def action_style(action: str) -> str:
    """A verdict's colour by its action: dim for none, yellow for one that tells the agent something,
    red for one that stops it (block and stronger)."""
    if action == Action.NONE:
        return DIM
    return RED if Action.parse(action).rank >= Action.BLOCK.rank else YELLOW


def report_width() -> int:
    """The columns a text report fills: the terminal's width (COLUMNS when set), at most 100; 100
    through a pipe."""
    return max(MIN_COLUMNS, min(MAX_COLUMNS, shutil.get_terminal_size((MAX_COLUMNS, 24)).columns))


def colour_wanted(stream: Any) -> bool:
    """Colour only on a terminal, never with NO_COLOR set (https://no-color.org) or on TERM=dumb."""
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):  # no isatty, or a closed stream
        return False


class TextReport:
    """Writes a report's lines to `stream`: each escaped (`printable`), then cut (`cut=True`: a table's
    row) or wrapped under its own indent to the width, then coloured in `style` on a terminal."""

    def __init__(self, stream: IO[str], *, width: int | None = None, colour: bool | None = None):
        self.stream = stream
        self.width = report_width() if width is None else width
        self.colour = colour_wanted(stream) if colour is None else colour

    def line(self, text: str = "", style: str | None = None, *, cut: bool = False) -> None:
        for piece in self.fitted(printable(text), cut=cut):
            self.stream.write((self.paint(piece, style) if style else piece) + "\n")
        self.stream.flush()

    def fitted(self, text: str, *, cut: bool = False) -> list[str]:
        """`text` as lines no wider than the report: cut with an ellipsis, or wrapped with the
        continuation indented past the line's own indent."""
        if len(text) <= self.width:
            return [text]
        if cut:
            return [text[: self.width - 1] + "…"]
        indent = " " * (len(text) - len(text.lstrip()) + 4)
        return textwrap.wrap(text, self.width, subsequent_indent=indent, break_long_words=True,
                             break_on_hyphens=False) or [text[: self.width]]

    def paint(self, text: str, style: str) -> str:
        return f"\x1b[{style}m{text}\x1b[0m" if self.colour else text
