"""Consecutive identical tool calls: the repeat chain of one agent."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from .evidence import StepTrail


class ToolFilter:
    """Which tools the chain tracks (`tracks(tool_name)`). Only `*` is special (any run of characters,
    newlines included); anchored, case-sensitive; exclude wins. Matching is linear in the name's
    length (no backtracking: `*a*a*a*b` on a long name costs one left-to-right scan)."""

    __slots__ = ("_include", "_exclude", "tracks")

    def __init__(self, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()):
        self._include = _Patterns(include) if include else None
        self._exclude = _Patterns(exclude) if exclude else None
        # The default, no patterns, tracks every tool: no test to make at every tool call.
        self.tracks: Callable[[str], bool] = (
            _every_tool if self._include is None and self._exclude is None else self._matches)

    def _matches(self, tool_name: str) -> bool:
        if self._exclude is not None and self._exclude.match(tool_name):
            return False
        return self._include is None or self._include.match(tool_name)


def _every_tool(tool_name: str) -> bool:
    return True


def _no_tool(tool_name: str) -> bool:
    return False


def any_of(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """Whether a tool name matches one of `patterns` (as `ToolFilter` matches them; none: no name does):
    the test of an `exempt_tools` setting."""
    return _Patterns(patterns).match if patterns else _no_tool


class _Patterns:
    """Glob patterns, built once: names without `*` in a set, the others as (prefix, middle parts,
    suffix), matched by finding the parts left to right (the first fit of each part is as good as any)."""

    __slots__ = ("exact", "globs")

    def __init__(self, patterns: tuple[str, ...]):
        self.exact = frozenset(p for p in patterns if "*" not in p)
        globs = []
        for pattern in patterns:
            if "*" in pattern:
                parts = pattern.split("*")
                globs.append((parts[0], tuple(part for part in parts[1:-1] if part), parts[-1]))
        self.globs = tuple(globs)

    def match(self, name: str) -> bool:
        if name in self.exact:
            return True
        for prefix, middle, suffix in self.globs:
            if _glob_match(name, prefix, middle, suffix):
                return True
        return False


def _glob_match(name: str, prefix: str, middle: tuple[str, ...], suffix: str) -> bool:
    end = len(name) - len(suffix)
    if end < len(prefix) or not name.startswith(prefix) or not name.endswith(suffix):
        return False
    at = len(prefix)
    for part in middle:
        found = name.find(part, at, end)
        if found < 0:
            return False
        at = found + len(part)
    return True


@dataclass(slots=True)
class RepeatChain:
    """The current run of identical (tool, canonical arguments) calls of one agent, and the steps of
    its last calls (its evidence). (Tool and arguments in two fields, not a tuple key: a tuple per
    agent is 56 B more state.)"""

    tool: str | None = None
    arguments: str | bytes | None = None  # compacted (`compact_arguments`)
    count: int = 0
    result: int | None = None  # the run's result signature, when results are compared
    trail: StepTrail = field(default_factory=StepTrail)

    def observe(self, tool_name: str, canonical_arguments: str, result: int | None = None, *, step: int = 0,
                span_id: int = 0) -> int:
        """Record one tracked call, step `step` in span `span_id`; return its position in the run of
        identical calls (1 = first). `result`: its result's signature, when a changed result restarts
        the run (else None)."""
        arguments = compact_arguments(canonical_arguments)
        if tool_name == self.tool and arguments == self.arguments and result == self.result:
            self.count += 1
            self.trail.add(step, span_id)
        else:
            self.tool, self.arguments, self.count, self.result = tool_name, arguments, 1, result
            self.trail.restart(step, span_id)
        return self.count

    def matches(self, tool_name: str, canonical_arguments: str) -> bool:
        """Whether a call with these arguments would continue the current run."""
        return tool_name == self.tool and compact_arguments(canonical_arguments) == self.arguments

    def reset(self) -> None:
        """A new user prompt starts a new chain."""
        self.tool, self.arguments, self.count, self.result = None, None, 0, None
        del self.trail[:]


_VERBATIM_UP_TO = 64


def compact_arguments(arguments: str) -> str | bytes:
    """Arguments as the chain keeps them: short ones verbatim, long ones as a 128-bit digest (bounded state)."""
    if len(arguments) <= _VERBATIM_UP_TO:
        return arguments
    return hashlib.blake2b(arguments.encode("utf-8", "surrogatepass"), digest_size=16).digest()
