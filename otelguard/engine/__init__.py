"""The guard engine: spans in, verdicts out, shared by every driver (see `lifecycle`)."""

from __future__ import annotations

from .agents import AgentRef
from .lifecycle import (
    DEFAULT_IDLE_TTL_S,
    DEFAULT_MAX_AGENTS,
    DEFAULT_MAX_OPEN_SPANS,
    GuardEngine,
    Judged,
    Started,
)
from .source import SpanSource

__all__ = [
    "DEFAULT_IDLE_TTL_S",
    "DEFAULT_MAX_AGENTS",
    "DEFAULT_MAX_OPEN_SPANS",
    "AgentRef",
    "GuardEngine",
    "Judged",
    "SpanSource",
    "Started",
]
