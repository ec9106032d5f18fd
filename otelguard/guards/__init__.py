"""Guards: each is a detector plus its reaction policy and messages, built from one config row."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from ..guard_ids import NO_PROGRESS, REPEAT_TOOL_REMINDER, THINKING_LOOP_GUARD, TIMEOUT_POLICY
from .base import Guard, ModelFacts, ToolStart
from .no_progress import NoProgress
from .repeat_tool_reminder import RepeatToolReminder
from .thinking_loop_guard import ThinkingLoopGuard
from .timeout_policy import TimeoutPolicy

if TYPE_CHECKING:
    from ..config import GuardConfig, NoProgressConfig, RepeatToolReminderConfig
    from ..validated_config import ValidatedConfig

_BUILDERS = {
    TIMEOUT_POLICY: TimeoutPolicy,
    REPEAT_TOOL_REMINDER: RepeatToolReminder,
    THINKING_LOOP_GUARD: ThinkingLoopGuard,
}


def build_guards(config: GuardConfig | ValidatedConfig) -> list[Guard]:
    """One guard per config row, in composition (registration) order (rows validated already).
    `no-progress` also reads the repeat reminder's row: calls in that guard's own back-to-back run are
    left to it."""
    repeat = config.row(REPEAT_TOOL_REMINDER)
    # A validated row's id tells its settings' type.
    repeat_settings = cast("RepeatToolReminderConfig | None", repeat.config if repeat is not None else None)
    return [NoProgress(cast("NoProgressConfig", row.config), repeat_settings) if row.id == NO_PROGRESS
            else _BUILDERS[row.id](row.config) for row in config.guards]


__all__ = ["Guard", "ModelFacts", "ToolStart", "build_guards", "NoProgress", "RepeatToolReminder",
           "ThinkingLoopGuard", "TimeoutPolicy"]
