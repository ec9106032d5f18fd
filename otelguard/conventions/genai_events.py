"""GenAI log events: a model call's messages told in log records beside its span instead of on it.

Instrumentations that capture content as events (opentelemetry-instrumentation-openai-v2 with
`event_only` or its earlier events, OpenLLMetry with `use_attributes=False`) leave the chat span
without its output. Each event names its span by trace and span id; `read_event` says what it adds:

- `gen_ai.client.inference.operation.details` (the current conventions): the call's
  `gen_ai.output.messages`, as that attribute holds them on a span;
- `gen_ai.choice` (the earlier events): one choice's message in the body (`message.content`, and
  `tool_calls[].function` in the message or beside it), made a GenAI output message;
- the input events (`gen_ai.system.message`, `gen_ai.user.message`, `gen_ai.assistant.message`,
  `gen_ai.tool.message`): the conversation so far, which no guard judges (as `gen_ai.input.messages`
  on a span): read, and nothing added.

- `gen_ai.evaluation.result`: a judgement of the span (otelguard's verdicts, `live.evaluation_events`,
  or another evaluator's), read by `read_evaluation`.

The event's name is its `eventName`, or its `event.name` attribute (the earlier SDKs' place for it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from ..model import semconv as sc
from ._values import load_json

OPERATION_DETAILS = "gen_ai.client.inference.operation.details"
CHOICE = "gen_ai.choice"
EVALUATION = "gen_ai.evaluation.result"  # a judgement of a span (otelguard writes one per verdict)
NAME = "gen_ai.evaluation.name"
LABEL = "gen_ai.evaluation.score.label"
VALUE = "gen_ai.evaluation.score.value"
EXPLANATION = "gen_ai.evaluation.explanation"
AGENT_NAME = sc.GEN_AI_AGENT_NAME
OURS = "otelguard."  # the prefix of otelguard's evaluations' names: otelguard.<guard>.<rule>
INPUT_EVENTS = frozenset({"gen_ai.system.message", "gen_ai.user.message", "gen_ai.assistant.message",
                          "gen_ai.tool.message"})


class EventOutput(NamedTuple):
    """What one GenAI event adds to its span: output messages in the GenAI shape (none for an input
    event, or an event whose content was not captured)."""

    messages: tuple[Mapping[str, Any], ...]


def event_name(name: str, attributes: Mapping[str, Any]) -> str:
    """The record's event name: its own field, else the `event.name` attribute."""
    if name:
        return name
    value = attributes.get("event.name")
    return value if isinstance(value, str) else ""


def read_event(name: str, attributes: Mapping[str, Any], body: Any) -> EventOutput | None:
    """What a GenAI event adds to the span it names; None for a record that is no GenAI event."""
    if name == OPERATION_DETAILS:
        messages = attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)
        if isinstance(messages, str):  # structured, as the conventions ask, or JSON text, as on a span
            messages, _ = load_json(messages)
        if isinstance(messages, Mapping):
            messages = (messages,)
        return EventOutput(tuple(m for m in messages if isinstance(m, Mapping))
                           if isinstance(messages, (list, tuple)) else ())
    if name == CHOICE:
        message = _choice_message(body)
        return EventOutput((message,) if message is not None else ())
    if name in INPUT_EVENTS:
        return EventOutput(())
    return None


def _choice_message(body: Any) -> dict[str, Any] | None:
    """A `gen_ai.choice` body as a GenAI output message; None when it holds no captured content."""
    if not isinstance(body, Mapping):
        return None
    message = body.get("message")
    message = message if isinstance(message, Mapping) else {}
    parts: list[dict[str, Any]] = []
    content = message.get("content")
    if isinstance(content, str):
        parts.append({"type": "text", "content": content})
    calls = message.get("tool_calls") or body.get("tool_calls")  # (OpenLLMetry writes them beside the message)
    for call in calls if isinstance(calls, (list, tuple)) else ():
        if not isinstance(call, Mapping):
            continue
        function = call.get("function")
        function = function if isinstance(function, Mapping) else {}
        parts.append({"type": "tool_call", "id": call.get("id"), "name": function.get("name"),
                      "arguments": function.get("arguments")})
    if not parts:  # content capture off: the choice says nothing of the output
        return None
    return {"role": "assistant", "parts": parts, "finish_reason": body.get("finish_reason")}


def evaluation_name(guard: str, rule: str) -> str:
    """The name of otelguard's evaluation for a verdict of `guard` by `rule`."""
    return f"{OURS}{guard}.{rule}"


@dataclass(frozen=True, slots=True)
class RecordedEvaluation:
    """A `gen_ai.evaluation.result` event as read back from a log record (ours or another evaluator's):
    the span it judges and what it says. Text fields are as recorded (untrusted)."""

    trace_id: int
    span_id: int
    name: str
    label: str | None
    value: float | None
    explanation: str | None
    agent_name: str | None

    @property
    def ours(self) -> bool:
        return self.name.startswith(OURS)


def read_evaluation(name: str, attributes: Mapping[str, Any], trace_id: int, span_id: int,
                    ) -> RecordedEvaluation | None:
    """The evaluation a log record tells of; None for a record that is no evaluation event (or one
    without its required name)."""
    if name != EVALUATION:
        return None
    evaluation = attributes.get(NAME)
    if not isinstance(evaluation, str) or not evaluation:
        return None
    value = attributes.get(VALUE)
    return RecordedEvaluation(trace_id, span_id, evaluation, _text(attributes.get(LABEL)),
                              float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None,
                              _text(attributes.get(EXPLANATION)), _text(attributes.get(AGENT_NAME)))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
