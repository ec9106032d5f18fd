"""The guards' ids, as config rows name them. Apart from `config` (and pydantic) so that building guards
from an already validated config imports no validation machinery (the CLI hooks' start-up time)."""

from __future__ import annotations

TIMEOUT_POLICY = "timeout-policy"
REPEAT_TOOL_REMINDER = "repeat-tool-reminder"
THINKING_LOOP_GUARD = "thinking-loop-guard"
GUARD_IDS = (TIMEOUT_POLICY, REPEAT_TOOL_REMINDER, THINKING_LOOP_GUARD)
