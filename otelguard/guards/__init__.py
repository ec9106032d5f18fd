"""Guards: each is a detector plus its reaction policy and messages, built from its settings."""

from __future__ import annotations

from collections.abc import Iterable

from .settings import GuardSettings, NoProgressConfig, RepeatToolReminderConfig, ThinkingLoopGuardConfig
from .base import Guard, ModelFacts, ToolStart
from .no_progress import NoProgress
from .repeat_tool_reminder import RepeatToolReminder
from .thinking_loop_guard import ThinkingLoopGuard
from .timeout_policy import TimeoutPolicy


def build_guards(settings: Iterable[GuardSettings]) -> list[Guard]:
    """One guard per settings (validated already), in composition (registration) order.
    `no-progress` also reads the repeat reminder's settings: calls in that guard's own back-to-back
    run are left to it."""
    settings = tuple(settings)
    repeat = next((each for each in settings if isinstance(each, RepeatToolReminderConfig)), None)
    guards: list[Guard] = []
    for each in settings:
        if isinstance(each, NoProgressConfig):
            guards.append(NoProgress(each, repeat))
        elif isinstance(each, RepeatToolReminderConfig):
            guards.append(RepeatToolReminder(each))
        elif isinstance(each, ThinkingLoopGuardConfig):
            guards.append(ThinkingLoopGuard(each))
        else:
            guards.append(TimeoutPolicy(each))
    return guards


__all__ = ["Guard", "ModelFacts", "ToolStart", "build_guards", "NoProgress", "RepeatToolReminder",
           "ThinkingLoopGuard", "TimeoutPolicy"]
