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

`read` is `render` backwards: what a service at `OTELGUARD_URL` answered is relayed only when it is
one of these answers, written exactly so (see `command`).
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from . import POST, PRE, TOOL_EVENTS


class Decision(NamedTuple):  # (a NamedTuple, not a dataclass: the hook's warm path reads one without importing dataclasses)
    block: str | None = None  # deny the call before it runs, with this reason
    context: str | None = None  # tell the model, after the call
    stop: str | None = None  # end the agent's loop, with this reason

    def __bool__(self) -> bool:
        return bool(self.block or self.context or self.stop)


def render(cli: str, event_name: str | None, decision: Decision) -> str:
    """The hook's stdout ("" when there is nothing to say), for a call told of by `cli`'s hook event
    `event_name` (as its input named it)."""
    if not decision:
        return ""
    if cli == "opencode":
        answer: dict[str, Any] = {}
        if decision.block or decision.stop:
            answer["block"] = decision.block or decision.stop
        if decision.context:
            answer["context"] = decision.context
    elif cli == "gemini-cli":
        answer = {"decision": "deny", "reason": decision.block} if decision.block else {}
        if decision.context:
            answer["hookSpecificOutput"] = {"hookEventName": event_name, "additionalContext": decision.context}
    else:  # Claude Code and Codex
        answer = {}
        if decision.block:
            answer["hookSpecificOutput"] = {"hookEventName": event_name, "permissionDecision": "deny",
                                            "permissionDecisionReason": decision.block}
        elif decision.context:
            answer["hookSpecificOutput"] = {"hookEventName": event_name, "additionalContext": decision.context}
    if decision.stop and cli != "opencode":
        answer["continue"] = False
        answer["stopReason"] = decision.stop
    return json.dumps(answer, ensure_ascii=False) + "\n"


def read(cli: str, text: str) -> Decision | None:
    """The decision `text` is, when it is an answer otelguard gives `cli`'s hooks: nothing, one call
    denied before it runs, context for the model after a call, or a stop after a call, each written
    exactly as `render` writes it. None for anything else: an `allow` (which would skip the user's
    permission prompt), a `systemMessage`, any other field or shape, a denial after the call."""
    if text == "":
        return Decision()
    try:
        answer = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(answer, dict):
        return None
    specific = answer.get("hookSpecificOutput")
    specific = specific if isinstance(specific, dict) else {}
    event_name = specific.get("hookEventName")
    stop = answer.get("stopReason") if answer.get("continue") is False else None
    if cli == "opencode":
        decision = Decision(block=answer.get("block"), context=answer.get("context"))
    elif cli == "gemini-cli":
        decision = Decision(answer.get("reason") if answer.get("decision") == "deny" else None,
                            specific.get("additionalContext"), stop)
    else:
        decision = Decision(specific.get("permissionDecisionReason") if specific.get("permissionDecision") == "deny"
                            else None, specific.get("additionalContext"), stop)
    told = [value for value in decision if value is not None]
    if len(told) != 1 or not isinstance(told[0], str) or not told[0]:
        return None  # otelguard says one thing at a time, in words
    phase = TOOL_EVENTS[cli].get(event_name) if isinstance(event_name, str) else None
    if (decision.context and phase != POST and cli != "opencode") or (event_name is not None and phase is None) \
            or (decision.block and event_name is not None and phase != PRE):
        return None  # context comes after a call, a denial before it
    return decision if render(cli, event_name, decision) == text else None
