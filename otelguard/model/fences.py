"""Markdown code fences, as CommonMark defines them: which lines open and close fenced code.

A fence is a line starting (after at most 3 spaces) with 3 or more backticks or tildes; a backtick
fence's info string holds no backtick. Fenced code closes only at a bare fence of the same character
at least as long as its opening one, so a fence with an info string inside (a heredoc writing
Markdown) is code.
"""

from __future__ import annotations

import re

FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)$", re.MULTILINE)


def opens(run: str, rest: str) -> bool:
    """Whether a fence line (its fence `run` and the `rest` of the line) opens fenced code."""
    return not (run[0] == "`" and "`" in rest)


def closes(fence: str, run: str, rest: str) -> bool:
    """Whether a fence line closes the code opened by `fence`."""
    return run[0] == fence[0] and len(run) >= len(fence) and not rest.strip()


def open_fence(text: str) -> str:
    """The fence of the code still open where `text` ends ("" when it ends outside fenced code)."""
    fence = ""
    for line in FENCE_LINE.finditer(text):
        run, rest = line.group(1), line.group(2)
        if fence:
            if closes(fence, run, rest):
                fence = ""
        elif opens(run, rest):
            fence = run
    return fence
