"""The text reports (`otelguard analyze`, `otelguard demo`, `otelguard serve`'s alert lines): no line
wider than `report_width()` (100 columns, or a narrower terminal's width), colour only on a terminal
and never with NO_COLOR set, and every count written by `number` (one thousands separator). Each
line is escaped by `terminal.printable` first.
"""

from __future__ import annotations

import os
import shutil
import textwrap
from typing import IO, Any

from ..model.actions import Action
from ..runtime.terminal import printable

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
