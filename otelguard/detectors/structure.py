"""Whether a repeating tail is content: a code fence, a table, CSV/TSV rows, a JSON array, a grid or frame.

Asked only when a cycle rule has found a periodic tail (rarely: never on prose), so it may look at
the tail at leisure. A repetition that is structure is cut only once it runs past
`max_structured_repeat_chars`: an all-zero lookup table is an answer, an endless one is a loop.
"""

from __future__ import annotations

import json

FENCE = "```"
# Box drawing (U+2500-257F) and block elements (U+2580-259F): frames, grids, progress bars.
_BOX_FIRST, _BOX_LAST = "\u2500", "\u259f"
_TABLE_EDGES = ("|", "│", "┃", "║", "├", "┝", "╟", "╠", "+")


def is_structured(span: str, period: int, in_fence: bool) -> bool:
    """Whether the periodic `span` (p-periodic over its whole length, p = `period`) is structured
    content rather than prose: inside an open code fence, free of letters (digits, punctuation and
    drawing characters only), drawn with box characters, or made of table rows, CSV/TSV rows or
    JSON array elements."""
    if in_fence:
        return True
    unit = span[-period:]
    if not any(char.isalpha() for char in unit):
        return True
    if any(_BOX_FIRST <= char <= _BOX_LAST for char in unit):
        return True
    lines = span.split("\n")[1:-1]  # the whole lines of the span (its ends may be cut mid-line)
    if lines and (_table_rows(lines) or _delimited_rows(lines)):
        return True
    return _json_elements(span, period)


def _table_rows(lines: list[str]) -> bool:
    return all(line.strip().startswith(_TABLE_EDGES) and line.strip()[-1:] in "|│┃║┤┥╢╣+" for line in lines)


def _delimited_rows(lines: list[str]) -> bool:
    """CSV/TSV rows: every line has the same number of separators (a tab, or at least two commas),
    and no field holds a space (prose puts a space after its commas; a row of values does not)."""
    separator = "\t" if "\t" in lines[0] else ","
    count = lines[0].count(separator)
    if count < (1 if separator == "\t" else 2):
        return False
    for line in lines:
        if line.count(separator) != count:
            return False
        if separator == "," and any(" " in field.strip() or field[:1] == " " for field in line.split(",")):
            return False
    return True


def _json_elements(span: str, period: int) -> bool:
    """The unit, read from just after one of its commas, is one or more JSON array elements."""
    if "," not in span[-period:]:
        return False
    start = len(span) - 2 * period if len(span) >= 2 * period else 0
    for at in range(start, start + period):
        if span[at] != ",":
            continue
        unit = span[at + 1 : at + 1 + period].strip().rstrip(",")
        try:
            value = json.loads("[" + unit + "]")
        except ValueError:
            continue
        if value:
            return True
    return False


def fences_in(text: str, before: str = "") -> int:
    """Code-fence markers in `text`; `before` is the text just ahead of it (a marker cut between
    the two is counted here, once)."""
    return (before[-2:] + text).count(FENCE)
