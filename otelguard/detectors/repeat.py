"""Consecutive identical tool calls: the repeat chain of one agent."""

from __future__ import annotations

import re
from dataclasses import dataclass


class ToolFilter:
    """Which tools the chain tracks. Only `*` is special; anchored, case-sensitive; exclude wins."""

    __slots__ = ("_include", "_exclude")

    def __init__(self, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()):
        self._include = _compile(include)
        self._exclude = _compile(exclude)

    def tracks(self, tool_name: str) -> bool:
        if self._exclude is not None and self._exclude.match(tool_name):
            return False
        return self._include is None or bool(self._include.match(tool_name))


def _compile(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    alternatives = ("".join(".*" if c == "*" else re.escape(c) for c in p) for p in patterns)
    return re.compile("(?:" + "|".join(alternatives) + r")\Z")


@dataclass(slots=True)
class RepeatChain:
    """The current run of identical (tool, canonical arguments) keys of one agent."""

    key: tuple[str, str] | None = None
    count: int = 0

    def observe(self, tool_name: str, canonical_arguments: str) -> int:
        """Record one tracked call; return its position in the run of identical calls (1 = first)."""
        key = (tool_name, canonical_arguments)
        if key == self.key:
            self.count += 1
        else:
            self.key, self.count = key, 1
        return self.count

    def reset(self) -> None:
        """A new user prompt starts a new chain."""
        self.key, self.count = None, 0
