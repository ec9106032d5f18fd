"""The prose of a text, read in pieces of any size: what `low-novelty` measures.

Code repeats its words by construction (an old/new pair, a listing, a diff's context lines share most
of their word n-grams), so judging its novelty judges the code, not the writer. Left out, line by
line:
- fenced code (`fences`: ``` or ~~~ up to the closing fence), and indented code (4 spaces or a tab, after a
  blank line or more indented code: as in Markdown, indenting cannot interrupt a paragraph);
- diffs: from a header (`diff --git`, `--- `, `+++ `, `@@ `) through the lines that continue it
  (starting with `+`, `-`, a space or a backslash), and any added or removed line (`+` or `-` then
  code, not a `- ` bullet);
- listings: numbered lines (`12: ...`, `12| ...`, `  12\t...`, as `grep -n`, `cat -n` and editors
  print them) and prompt lines (`$ `, `>>> `, `... `).
A line is judged by its start, so a long line is passed on as it arrives once that start is seen;
nothing but a line's first characters is held back.
"""

from __future__ import annotations

import re

from ..model.fences import closes, opens

_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")  # a fence line's start (`fences.FENCE_LINE`)
_INDENTED = re.compile(r"(?: {4}|\t)")
_DIFF_HEADER = re.compile(r"(?:diff --git |--- |\+\+\+ |@@ )")
_DIFF_LINE = re.compile(r"[-+ \\]")
# A diff's added or removed line anywhere (its header may be before a cut): `+` or `-` and code, not
# a Markdown bullet (`- item`: one space, then text).
_CHANGED_LINE = re.compile(r"[-+](?! \S)")
_LISTING = re.compile(r"[ \t]{0,8}(?:\d{1,6}(?:[ \t]?[:|│][ \t]|\t)|\$ |>>> |\.\.\. )")
_KNOWN_AFTER = 16  # characters of a line that decide its kind (every pattern above is shorter)


class ProseFilter:
    """Fed a text in pieces; `feed` and `finish` return its prose as (text, offset) segments, the
    offset being where the segment starts in the whole text."""

    __slots__ = ("_fence", "_in_diff", "_indented_code", "_after_blank", "_line", "_line_start", "_prose", "_offset")

    def __init__(self) -> None:
        self._fence = ""  # the fence the code is inside (CommonMark: closed by as long a run of its character)
        self._in_diff = False
        self._indented_code = False  # the last line was indented code
        self._after_blank = True  # the last line was blank (or there was none)
        self._line = ""  # the start of the current line, while its kind is not known
        self._line_start = 0
        self._prose: bool | None = None  # the current line's kind, once known
        self._offset = 0  # characters read

    def feed(self, text: str) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        at = 0
        while at < len(text):
            if self._prose is None:  # the line's start is still being read
                newline = text.find("\n", at)
                end = len(text) if newline < 0 else newline + 1
                self._line += text[at:end]
                self._offset += end - at
                at = end
                if newline >= 0 or len(self._line) >= _KNOWN_AFTER:
                    line = self._line.rstrip("\n") if newline >= 0 else self._line
                    # Judged by its first characters alone, however the text was cut into pieces.
                    self._prose = self._classify(line[:_KNOWN_AFTER], newline >= 0 and len(line) <= _KNOWN_AFTER)
                    if self._prose:
                        out.append((self._line, self._line_start))
                    self._line = ""
                    if newline >= 0:
                        self._next_line()
                continue
            newline = text.find("\n", at)
            end = len(text) if newline < 0 else newline + 1
            if self._prose:
                out.append((text[at:end], self._offset))
            self._offset += end - at
            at = end
            if newline >= 0:
                self._next_line()
        return out

    def finish(self) -> list[tuple[str, int]]:
        """The text ended: the last line's start, if it is prose."""
        line, self._line = self._line, ""
        if line and self._prose is None and self._classify(line[:_KNOWN_AFTER], len(line) <= _KNOWN_AFTER):
            return [(line, self._line_start)]
        return []

    def _next_line(self) -> None:
        self._prose, self._line_start = None, self._offset

    def _classify(self, line: str, whole: bool) -> bool:
        """Whether the line is prose, told by its start (`line`: the whole line when `whole`); notes the
        fences, diffs and indented code it opens or closes."""
        fence = _FENCE.match(line)
        if self._fence:
            if fence and whole and closes(self._fence, fence.group(1), line[fence.end():]):
                self._fence = ""
            return False
        if fence and opens(fence.group(1), line[fence.end():]):
            self._fence = fence.group(1)
            return False
        blank = whole and not line.strip()
        indented = not blank and bool(_INDENTED.match(line)) and (self._after_blank or self._indented_code)
        self._after_blank, self._indented_code = blank, indented or (blank and self._indented_code)
        if self._in_diff and line and _DIFF_LINE.match(line):
            return False
        self._in_diff = bool(_DIFF_HEADER.match(line))
        return not (self._in_diff or indented or _CHANGED_LINE.match(line) or _LISTING.match(line))
