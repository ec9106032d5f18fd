"""Edits of a JSON document's text that leave every other byte as it was: `install` adds its entries
to a CLI's settings file, and takes them out again, without re-indenting or reordering the rest (an
entry added and then removed leaves the file as it was).

`locate` finds where each value of a document is (`Node`: its span, and its members or items);
`appended` and `removed` give the edits that add members or items to an object or array, or take
them out, written in the style of the text around them; `applied` makes them. The document must be
JSON already (`json.loads` read it); keys are taken as unique (`unique_keys` checks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..otlp.values import duplicated_keys

_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
DEFAULT_INDENT = "  "


@dataclass(slots=True)
class Node:
    """A JSON value in the text: `text[start:end]`. For an object or array, its `children` in order."""

    start: int
    end: int
    children: list[Child] | None = None  # None for a string, number, true, false or null
    is_object: bool = False

    def member(self, key: str) -> Child | None:
        return next((child for child in self.children or () if child.key == key), None)


@dataclass(slots=True)
class Child:
    """A member of an object (from its key on) or an item of an array."""

    key: str | None
    start: int
    node: Node = field(repr=False)


@dataclass(slots=True, frozen=True)
class Edit:
    start: int
    end: int
    text: str


class DuplicateKey(ValueError):
    def __init__(self, key: str):
        super().__init__(f"the key {key!r} is given twice in one object")
        self.key = key


def unique_keys(text: str) -> Any:
    """`json.loads(text)`, raising DuplicateKey for an object that gives a key twice (where the
    reader would keep the last copy only, and a rewrite would drop the first)."""
    value = json.loads(text)  # (its errors first: text that is no JSON has no duplicates to name)
    duplicated = duplicated_keys(text)
    if duplicated:
        raise DuplicateKey(duplicated[0])
    return value


def locate(text: str) -> Node:
    """Where each value of the JSON document `text` is."""
    return _value(text, _SPACE.match(text, 0).end())[0]  # type: ignore[union-attr]  # (always matches)


def _skip(text: str, position: int) -> int:
    return _SPACE.match(text, position).end()  # type: ignore[union-attr]  # (always matches)


def _value(text: str, start: int) -> tuple[Node, int]:
    opening = text[start]
    if opening not in "{[":
        _, end = _DECODER.raw_decode(text, start)
        return Node(start, end), end
    is_object, closing = opening == "{", "}" if opening == "{" else "]"
    children: list[Child] = []
    position = _skip(text, start + 1)
    while text[position] != closing:
        child_start, key = position, None
        if is_object:
            key, position = _DECODER.raw_decode(text, position)
            position = _skip(text, _skip(text, position) + 1)  # past the colon
        child, position = _value(text, position)
        children.append(Child(key, child_start, child))
        position = _skip(text, position)
        if text[position] == ",":
            position = _skip(text, position + 1)
    return Node(start, position + 1, children, is_object), position + 1


def appended(text: str, container: Node, items: Sequence[tuple[str | None, Any]]) -> Edit:
    """The edit adding `items` ((key, value) for an object, (None, value) for an array) at the end of
    `container`, written as the text around them is: in a document that spans lines, each on a line of
    its own, indented as the items before it (one level past the container's line when it is empty);
    on the container's line otherwise."""
    children = container.children or []
    last = children[-1] if children else None
    indent = _indent(text, last.start) if last is not None else None
    if last is not None and indent is not None:  # items on lines of their own: one more after them
        unit = _unit(text, container, indent)
        return Edit(last.node.end, last.node.end,
                    "".join(",\n" + indent + _written(key, value, unit).replace("\n", "\n" + indent)
                            for key, value in items))
    if last is not None or ("\n" not in text.strip() and text[:container.start].strip()):  # on one line
        written = ", ".join(_written(key, value, None) for key, value in items)
        if last is not None:
            return Edit(last.node.end, last.node.end, ", " + written)
        return Edit(container.start + 1, container.end - 1, written)
    outer = _line_indent(text, container.start)  # empty, in a document that spans lines (or is just it)
    unit = _unit(text, None, outer)
    inner = outer + unit
    return Edit(container.start + 1, container.end - 1,
                ",".join("\n" + inner + _written(key, value, unit).replace("\n", "\n" + inner) for key, value in items)
                + "\n" + outer)


def removed(container: Node, indices: set[int]) -> list[Edit]:
    """The edits taking the children at `indices` out of `container`, with the separators that
    came with them (an item appended by `appended` goes with the comma and line break before it)."""
    children = container.children or []
    kept = [number for number in range(len(children)) if number not in indices]
    if not kept:
        return [Edit(container.start, container.end, "{}" if container.is_object else "[]")]
    last_kept = kept[-1]
    edits = [Edit(children[number].start, children[number + 1].start, "")
             for number in sorted(indices) if number < last_kept]
    if last_kept < len(children) - 1:
        edits.append(Edit(children[last_kept].node.end, children[-1].node.end, ""))
    return edits


def applied(text: str, edits: list[Edit]) -> str:
    for edit in sorted(edits, key=lambda edit: edit.start, reverse=True):
        text = text[:edit.start] + edit.text + text[edit.end:]
    return text


def _written(key: str | None, value: Any, unit: str | None) -> str:
    dumped = json.dumps(value, indent=unit, ensure_ascii=False)
    return dumped if key is None else f"{json.dumps(key, ensure_ascii=False)}: {dumped}"


def _indent(text: str, position: int) -> str | None:
    """The whitespace before `position` on its line, when only whitespace is; else None."""
    line_start = text.rfind("\n", 0, position) + 1
    prefix = text[line_start:position]
    return prefix if not prefix.strip() else None


def _line_indent(text: str, position: int) -> str:
    """The leading whitespace of the line `position` is on."""
    line_start = text.rfind("\n", 0, position) + 1
    line = text[line_start:position]
    return line[:len(line) - len(line.lstrip(" \t"))]


def _unit(text: str, container: Node | None, indent: str) -> str:
    """One level of indentation, as the document writes it: what a container's items add to the
    line it opens on, else what the document's first indented line starts with."""
    if container is not None:
        outer = _line_indent(text, container.start)
        if indent.startswith(outer) and len(indent) > len(outer):
            return indent[len(outer):]
    found = re.search(r"\n([ \t]+)\S", text)
    return found.group(1) if found else DEFAULT_INDENT
