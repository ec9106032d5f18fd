"""Consecutive identical tool calls: the repeat chain of one agent."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Callable


class ToolFilter:
    """Which tools the chain tracks (`tracks(tool_name)`). Only `*` is special; anchored,
    case-sensitive; exclude wins."""

    __slots__ = ("_include", "_exclude", "tracks")

    def __init__(self, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()):
        self._include = _compile(include)
        self._exclude = _compile(exclude)
        # The default, no patterns, tracks every tool: no test to make at every tool call.
        self.tracks: Callable[[str], bool] = (
            _every_tool if self._include is None and self._exclude is None else self._matches)

    def _matches(self, tool_name: str) -> bool:
        if self._exclude is not None and self._exclude.match(tool_name):
            return False
        return self._include is None or bool(self._include.match(tool_name))


def _every_tool(tool_name: str) -> bool:
    return True


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
        key = (tool_name, _compact(canonical_arguments))
        if key == self.key:
            self.count += 1
        else:
            self.key, self.count = key, 1
        return self.count

    def matches(self, tool_name: str, canonical_arguments: str) -> bool:
        """Whether a call with these arguments would continue the current run."""
        return self.key == (tool_name, _compact(canonical_arguments))

    def reset(self) -> None:
        """A new user prompt starts a new chain."""
        self.key, self.count = None, 0


_VERBATIM_UP_TO = 64


def _compact(arguments: str) -> str | bytes:
    """Arguments as the chain keeps them: short ones verbatim, long ones as a 128-bit digest (bounded state)."""
    if len(arguments) <= _VERBATIM_UP_TO:
        return arguments
    return hashlib.blake2b(arguments.encode("utf-8", "surrogatepass"), digest_size=16).digest()
