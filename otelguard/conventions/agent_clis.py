"""Coding-agent CLIs' telemetry: their tool-call log records and spans, read as one tool call each.

Claude Code, Gemini CLI, Codex CLI and opencode do not write GenAI agent/tool spans; each tells of a
tool call in its own log event or span, some in both (see the table in the README's "Guard any
agent over OTLP"). `from_log` and `from_span` read one record into a `CliToolCall`, or None when it
is not a tool call of a known CLI; `as_tool_span` makes it the GenAI `execute_tool` span the engine
reads. They also read what a model call spent, where the CLI tells it (`CliModelCall`: Claude Code's
`api_request` log, Codex's `response.completed` SSE log, Gemini CLI's `api_response` log, opencode's
`ai.streamText.doStream` span), for the spend of the session's loops (`loop_spend`); each CLI tells a
call's usage in one record only (where it has a second, a span, it is not read, lest it count twice). `model_span` reads a CLI's model-call span (Gemini CLI's `llm_call`) as a GenAI chat span. The same call told twice (a log and a span) carries the same `join_key`: the call id, or for
Gemini CLI, whose log has none, the scheduling span both hang from and the tool name.

Session keys: Claude Code and opencode `session.id`, Gemini CLI `session.id` / `gen_ai.conversation.id`,
Codex `conversation.id`. Arguments some CLIs leave out by default: `ARGUMENT_SETTINGS` says how to
turn them on.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..model import semconv as sc
from ..model.records import ModelUsage, SpanView, Status
from . import session_trace_id
from ._values import as_int, load_json

CLAUDE_CODE, GEMINI_CLI, CODEX, OPENCODE = "claude-code", "gemini-cli", "codex", "opencode"
LOG, SPAN = "log", "span"
TOOL_SPAN_NAMES = frozenset({"claude_code.tool", "tool_call", "ai.toolCall", "Tool.execute"})  # what `from_span` reads
SPAN_NAMES = TOOL_SPAN_NAMES | {"ai.streamText.doStream", "llm_call"}  # and its model-call usage, and `model_span`

# What turns a CLI's tool arguments on, where they are off by default.
ARGUMENT_SETTINGS = {
    CLAUDE_CODE: "OTEL_LOG_TOOL_DETAILS=1",
    GEMINI_CLI: 'telemetry.logPrompts: true (settings.json; the default)',
}


@dataclass(slots=True, frozen=True)
class CliToolCall:
    """One tool call as one CLI record told it."""

    cli: str
    session: str
    join_key: str  # the same for the log and the span of one call
    tool: str
    arguments: str | None  # JSON text as the CLI wrote it; None when it did not export them
    succeeded: bool | None
    result: str | None
    end_ns: int
    signal: str  # LOG | SPAN
    # The model call that asked for it, when that call's usage record comes after the tool's (opencode
    # runs a tool inside the model call's span): the key of that record (`CliModelCall.key`).
    asked_by: str | None = None


@dataclass(slots=True, frozen=True)
class CliModelCall:
    """One model call of a CLI session, told by what it spent (no guard judges it)."""

    cli: str
    session: str
    usage: ModelUsage
    key: str | None = None  # what a tool call it asked for names it by (`CliToolCall.asked_by`)


def from_log(attributes: Mapping[str, Any], time_ns: int, observed_ns: int, trace_id: int, span_id: int,
             ) -> CliToolCall | CliModelCall | None:
    """A CLI's tool-call or model-call log record (its attributes, times and trace context), or None."""
    event = attributes.get("event.name")
    end_ns = time_ns or observed_ns  # Codex writes timeUnixNano 0
    if event == "api_request" and "input_tokens" in attributes:  # Claude Code (its input_tokens leave out the cache's)
        return _model_call(CLAUDE_CODE, attributes.get("session.id"), attributes.get("model"),
                           attributes.get("input_tokens"), attributes.get("output_tokens"))
    if event == "codex.sse_event" and attributes.get("event.kind") == "response.completed":
        return _model_call(CODEX, attributes.get("conversation.id"), attributes.get("model"),
                           attributes.get("input_token_count"), attributes.get("output_token_count"))
    if event == "gemini_cli.api_response":  # its thoughts are output tokens too (billed as output)
        return _model_call(GEMINI_CLI, attributes.get("session.id") or attributes.get("prompt_id"),
                           attributes.get("model"), attributes.get("input_token_count"),
                           attributes.get("output_token_count"), attributes.get("thoughts_token_count"))
    if event == "tool_result" and "tool_use_id" in attributes:  # Claude Code
        return _call(CLAUDE_CODE, attributes.get("session.id"), attributes.get("tool_use_id"),
                     attributes.get("tool_name"), attributes.get("tool_input"), attributes.get("success"),
                     None, end_ns, LOG)
    if event == "gemini_cli.tool_call":
        name = attributes.get("function_name")
        return _call(GEMINI_CLI, attributes.get("session.id") or attributes.get("prompt_id"),
                     f"{trace_id:032x}/{span_id:016x}/{name}", name, attributes.get("function_args"),
                     attributes.get("success"), None, end_ns, LOG)
    if event == "codex.tool_result":
        return _call(CODEX, attributes.get("conversation.id"), attributes.get("call_id"),
                     attributes.get("tool_name"), attributes.get("arguments"), attributes.get("success"),
                     attributes.get("output"), end_ns, LOG)
    return None


def from_span(name: str, attributes: Mapping[str, Any], trace_id: int, parent_span_id: int | None,
              end_ns: int, status: Status) -> CliToolCall | CliModelCall | None:
    """A CLI's tool-call span, or its model-call span that tells the usage, or None."""
    failed = None if status is Status.UNSET else status is Status.ERROR
    if name == "ai.streamText.doStream":  # opencode (the Vercel AI SDK): one request to the model
        model_call = _model_call(OPENCODE, attributes.get("session.id")
                                 or attributes.get("ai.telemetry.metadata.sessionId"), attributes.get("ai.model.id"),
                                 attributes.get("ai.usage.inputTokens"), attributes.get("ai.usage.outputTokens"))
        return replace(model_call, key=_step_key(trace_id, parent_span_id)) if model_call is not None else None
    if name == "claude_code.tool":
        return _call(CLAUDE_CODE, attributes.get("session.id"), attributes.get("tool_use_id"),
                     attributes.get("tool_name"), None, None if failed is None else not failed, None, end_ns, SPAN)
    if name == "tool_call" and sc.GEN_AI_TOOL_NAME in attributes and sc.GEN_AI_CONVERSATION_ID in attributes:
        tool = attributes.get(sc.GEN_AI_TOOL_NAME)
        request = _json_object(attributes.get("gen_ai.input.messages"))
        arguments = request.get("args")
        outcome = _json_object(attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)).get("status")
        return _call(GEMINI_CLI, attributes.get(sc.GEN_AI_CONVERSATION_ID),
                     f"{trace_id:032x}/{parent_span_id or 0:016x}/{tool}", tool,
                     json.dumps(arguments) if isinstance(arguments, dict) else None,
                     None if outcome is None else outcome == "success", None, end_ns, SPAN)
    if name == "ai.toolCall" and "ai.toolCall.id" in attributes:
        # It runs inside its step's span (`ai.streamText`), beside the step's request (`doStream`),
        # which ends with the usage after it: the step's span names that request.
        call = _call(OPENCODE, attributes.get("session.id"), attributes.get("ai.toolCall.id"),
                     attributes.get("ai.toolCall.name"), attributes.get("ai.toolCall.args"),
                     None if failed is None else not failed, attributes.get("ai.toolCall.result"), end_ns, SPAN)
        return replace(call, asked_by=_step_key(trace_id, parent_span_id)) if call is not None else None
    if name == "Tool.execute" and "tool.call_id" in attributes:
        return _call(OPENCODE, attributes.get("session.id"), attributes.get("tool.call_id"),
                     attributes.get("tool.name"), None, None if failed is None else not failed, None, end_ns, SPAN)
    return None


def joined(first: CliToolCall, second: CliToolCall) -> CliToolCall:
    """One call told twice, as one: what either record knows (the first's where both do)."""
    return replace(
        first,
        arguments=first.arguments if first.arguments is not None else second.arguments,
        succeeded=first.succeeded if first.succeeded is not None else second.succeeded,
        result=first.result if first.result is not None else second.result,
        end_ns=max(first.end_ns, second.end_ns),
        asked_by=first.asked_by or second.asked_by,
    )


def model_span(name: str, attributes: Mapping[str, Any], span_id: int, start_ns: int, end_ns: int,
               status: Status) -> SpanView | None:
    """A CLI's model-call span as the GenAI chat span the engine reads, in its session's chain; None
    when it is none. Gemini CLI's `llm_call` (its own message parts: `text`, `thought`, `functionCall`)."""
    if name != "llm_call" or attributes.get(sc.GEN_AI_OPERATION_NAME) != "llm_call":
        return None
    session = attributes.get(sc.GEN_AI_CONVERSATION_ID)
    if not isinstance(session, str) or not session:
        return None
    messages, _ = load_json(attributes.get(sc.GEN_AI_OUTPUT_MESSAGES))
    converted: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: "chat",
        sc.GEN_AI_CONVERSATION_ID: session,
        "otelguard.cli": GEMINI_CLI,
    }
    model = attributes.get(sc.GEN_AI_REQUEST_MODEL)
    if isinstance(model, str):
        converted[sc.GEN_AI_REQUEST_MODEL] = model
    if isinstance(messages, list):  # (decoded: the conventions read a list as it is)
        converted[sc.GEN_AI_OUTPUT_MESSAGES] = [_genai_message(message) for message in messages
                                                if isinstance(message, dict)]
    return SpanView(f"chat {model or GEMINI_CLI}", session_trace_id(GEMINI_CLI, session), span_id, None, converted,
                    status=status, start_ns=start_ns, end_ns=end_ns)


def _genai_message(message: dict[str, Any]) -> dict[str, Any]:
    """A Gemini API message as a GenAI semantic-conventions output message."""
    parts = []
    for part in message.get("parts") or ():
        if not isinstance(part, dict):
            continue
        call = part.get("functionCall")
        if isinstance(call, dict):
            parts.append({"type": "tool_call", "name": call.get("name"), "id": call.get("id"),
                          "arguments": call.get("args")})
        elif isinstance(part.get("text"), str):
            parts.append({"type": "reasoning" if part.get("thought") else "text", "content": part["text"]})
    return {"role": "assistant", "parts": parts}


def as_tool_span(call: CliToolCall) -> SpanView:
    """The call as the GenAI `execute_tool` span the engine and its conventions read."""
    attributes: dict[str, Any] = {
        sc.GEN_AI_OPERATION_NAME: "execute_tool",
        sc.GEN_AI_TOOL_NAME: call.tool,
        sc.GEN_AI_TOOL_CALL_ID: call.join_key,
        sc.GEN_AI_CONVERSATION_ID: call.session,
        "otelguard.cli": call.cli,
    }
    if call.arguments is not None:
        attributes[sc.GEN_AI_TOOL_CALL_ARGUMENTS] = call.arguments
    if call.result is not None:
        attributes[sc.GEN_AI_TOOL_CALL_RESULT] = call.result
    span_id = int.from_bytes(hashlib.blake2b(call.join_key.encode(), digest_size=8).digest(), "big") or 1
    status = Status.UNSET if call.succeeded is None else Status.OK if call.succeeded else Status.ERROR
    return SpanView(f"execute_tool {call.tool}", session_trace_id(call.cli, call.session), span_id, None, attributes,
                    status=status, start_ns=call.end_ns, end_ns=call.end_ns)


def _call(cli: str, session: Any, key: Any, tool: Any, arguments: Any, succeeded: Any, result: Any, end_ns: int,
          signal: str) -> CliToolCall | None:
    if not isinstance(session, str) or not session or not isinstance(key, str) or not key \
            or not isinstance(tool, str) or not tool:
        return None
    return CliToolCall(cli, session, key, tool, arguments if isinstance(arguments, str) else None,
                       _boolean(succeeded), result if isinstance(result, str) else None, end_ns, signal)


def _model_call(cli: str, session: Any, model: Any, input_tokens: Any, output_tokens: Any,
                more_output_tokens: Any = None) -> CliModelCall | None:
    """A model call's usage; None without a session or any token count."""
    input_count, output_count = as_int(input_tokens), as_int(output_tokens)
    if not isinstance(session, str) or not session or (input_count is None and output_count is None):
        return None
    if output_count is not None:
        output_count += as_int(more_output_tokens) or 0
    return CliModelCall(cli, session, ModelUsage(model if isinstance(model, str) and model else None,
                                                 output_tokens=output_count, input_tokens=input_count))


def _step_key(trace_id: int, step_span_id: int | None) -> str | None:
    return f"{trace_id:032x}/{step_span_id:016x}" if step_span_id else None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if value in ("true", "false"):
        return value == "true"
    return None


def _json_object(value: Any) -> dict[str, Any]:
    decoded, _ = load_json(value) if isinstance(value, str) else (None, None)
    return decoded if isinstance(decoded, dict) else {}
