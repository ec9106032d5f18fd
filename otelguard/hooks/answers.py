"""What a hook prints: the guard's decision in each CLI's documented hook output.

| CLI | deny the call (before it runs) | add context for the model (after it ran) |
|---|---|---|
| Claude Code | `hookSpecificOutput.permissionDecision: "deny"` + `permissionDecisionReason` | `hookSpecificOutput.additionalContext` (PostToolUse, PostToolUseFailure) |
| Codex CLI | the same as Claude Code | `hookSpecificOutput.additionalContext` (PostToolUse) |
| Gemini CLI | `decision: "deny"` + `reason` | `hookSpecificOutput.additionalContext` (AfterTool: appended to the tool result) |
| opencode | `{"block": reason}`: otelguard's plugin throws it | `{"context": text}`: the plugin appends it to the tool output |

A stop (a guard's `cancel`) ends the agent's loop where the CLI has a way: `continue: false` with a
`stopReason` (Claude Code, Codex, Gemini CLI); opencode's plugin throws it as a block. Nothing to say
prints nothing: the CLI goes on as without the hook (an `allow` would skip the user's permission rules).
The texts are the guards' messages, which quote model-controlled text escaped only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .payload import HookEvent


@dataclass(slots=True, frozen=True)
class Decision:
    block: str | None = None  # deny the call before it runs, with this reason
    context: str | None = None  # tell the model, after the call
    stop: str | None = None  # end the agent's loop, with this reason

    def __bool__(self) -> bool:
        return bool(self.block or self.context or self.stop)


def render(event: HookEvent, decision: Decision) -> str:
    """The hook's stdout ("" when there is nothing to say)."""
    if not decision:
        return ""
    if event.cli == "opencode":
        answer: dict[str, Any] = {}
        if decision.block or decision.stop:
            answer["block"] = decision.block or decision.stop
        if decision.context:
            answer["context"] = decision.context
    elif event.cli == "gemini-cli":
        answer = {"decision": "deny", "reason": decision.block} if decision.block else {}
        if decision.context:
            answer["hookSpecificOutput"] = {"hookEventName": event.hook_event_name, "additionalContext": decision.context}
    else:  # Claude Code and Codex
        answer = {}
        if decision.block:
            answer["hookSpecificOutput"] = {"hookEventName": event.hook_event_name, "permissionDecision": "deny",
                                            "permissionDecisionReason": decision.block}
        elif decision.context:
            answer["hookSpecificOutput"] = {"hookEventName": event.hook_event_name,
                                            "additionalContext": decision.context}
    if decision.stop and event.cli != "opencode":
        answer["continue"] = False
        answer["stopReason"] = decision.stop
    return json.dumps(answer, ensure_ascii=False) + "\n"
