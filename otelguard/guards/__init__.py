"""Guards: each is a detector plus its reaction policy and messages, built from one config row."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..guard_ids import REPEAT_TOOL_REMINDER, THINKING_LOOP_GUARD, TIMEOUT_POLICY
from .base import Guard, ModelFacts, ToolStart
from .repeat_tool_reminder import RepeatToolReminder
from .thinking_loop_guard import ThinkingLoopGuard
from .timeout_policy import TimeoutPolicy

if TYPE_CHECKING:
    from ..config import GuardConfig
    from ..validated_config import ValidatedConfig

_BUILDERS = {
    TIMEOUT_POLICY: TimeoutPolicy,
    REPEAT_TOOL_REMINDER: RepeatToolReminder,
    THINKING_LOOP_GUARD: ThinkingLoopGuard,
}


def build_guards(config: GuardConfig | ValidatedConfig) -> list[Guard]:
    """One guard per config row, in composition (registration) order (rows validated already)."""
    return [_BUILDERS[row.id](row.config) for row in config.guards]


__all__ = ["Guard", "ModelFacts", "ToolStart", "build_guards", "RepeatToolReminder", "ThinkingLoopGuard",
           "TimeoutPolicy"]
