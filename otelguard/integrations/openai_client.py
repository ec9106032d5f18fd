"""A hand-written agent loop with the plain `openai` client: the spans and messages otelguard needs.

An openai instrumentation (OpenInference's `OpenAIInstrumentor`, OpenLLMetry's, or the contrib
`opentelemetry-instrumentation-openai-v2`) traces each model call, but a hand-written loop runs its
tools itself, so nothing traces them and the guard cannot see a repeated call. These helpers add what
is missing and let the guard's messages back into the loop:

    import otelguard
    from otelguard.integrations.openai_client import agent_run, guard_messages, tool_call

    mailbox = otelguard.Mailbox()
    with agent_run("weather-loop", control=mailbox):           # agent span + bind_control(mailbox)
        while True:
            messages += guard_messages(mailbox)                  # drain before each call; raises on cancel
            reply = client.chat.completions.create(model=model, messages=messages, tools=tools)
            message = reply.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                with tool_call(call.function.name, call.function.arguments, call_id=call.id,
                               timeout_ms=5000) as tool:         # execute_tool span, budget armed
                    tool.set_result(run_tool(call, otelguard.tool_signal()))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": tool.output})

`agent_run`, `tool_call` and `guard_messages` only need OpenTelemetry; the loop's model calls need an
openai instrumentation on the same TracerProvider (`pip install 'otelguard[openai]'`).
"""

from __future__ import annotations

import json
from contextlib import ExitStack, contextmanager
from typing import Any, Iterator, Literal

from opentelemetry import trace as trace_api
from opentelemetry.trace import Span, TracerProvider

from ..reactions.control import AgentControl, Mailbox, bind_control
from ..live.timeouts import timeout_error
from ..model.semconv import (
    GEN_AI_AGENT_NAME,
    GEN_AI_CONVERSATION_ID,
    GEN_AI_OPERATION_NAME,
    GEN_AI_TOOL_CALL_ARGUMENTS,
    GEN_AI_TOOL_CALL_ID,
    GEN_AI_TOOL_CALL_RESULT,
    GEN_AI_TOOL_NAME,
    OP_EXECUTE_TOOL,
    OP_INVOKE_AGENT,
    OTELGUARD_TOOL_TIMEOUT_MS,
)
from ..live.signals import ToolSignal
from ..live.tools import tool_signal

__all__ = ["ToolCallSpan", "agent_run", "guard_messages", "tool_call"]

_SCOPE = "otelguard.integrations.openai_client"


def _tracer(tracer_provider: TracerProvider | None) -> trace_api.Tracer:
    return trace_api.get_tracer(_SCOPE, tracer_provider=tracer_provider)


def guard_messages(mailbox: Mailbox, *, role: Literal["system", "developer", "user"] = "user") -> list[dict[str, str]]:
    """Drain `mailbox` into chat messages (also valid Responses input items) to append before a call.

    `role` is "user" unless asked otherwise: the guard's messages quote text the model wrote, which
    must not gain a system role's authority.

    Raises `otelguard.AgentCancelled` when the guard cancelled the turn.
    """
    mailbox.raise_if_cancelled()
    return [{"role": role, "content": message.text} for message in mailbox.drain()]


@contextmanager
def agent_run(name: str, *, control: AgentControl | None = None, conversation_id: str | None = None,
              tracer_provider: TracerProvider | None = None) -> Iterator[Span]:
    """An `invoke_agent` span around one run of the loop (a new user prompt), with `control` bound.

    The span gives the loop an identity: its own guard state, reset of the repeat chain per run, and
    `gen_ai.agent.name` on verdicts and metrics. `conversation_id` keeps state across runs.
    """
    attributes: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_INVOKE_AGENT, GEN_AI_AGENT_NAME: name}
    if conversation_id:
        attributes[GEN_AI_CONVERSATION_ID] = conversation_id
    with ExitStack() as stack:
        if control is not None:
            stack.enter_context(bind_control(control))  # before the span starts: the run captures it
        yield stack.enter_context(
            _tracer(tracer_provider).start_as_current_span(f"invoke_agent {name}", attributes=attributes)
        )


class ToolCallSpan:
    """The open `execute_tool` span of one call: set the result; read the guard's signal."""

    def __init__(self, span: Span, signal: ToolSignal, timeout_ms: float | None):
        self.span = span
        self.signal = signal
        self.timeout_ms = timeout_ms
        self.result: Any = None

    def set_result(self, value: Any) -> None:
        self.result = value

    @property
    def timed_out(self) -> bool:
        return self.signal.timed_out

    @property
    def output(self) -> str:
        """The result as the text to send back to the model (JSON unless it is a string)."""
        return self.result if isinstance(self.result, str) else json.dumps(self.result, default=str)


@contextmanager
def tool_call(name: str, arguments: str | dict[str, Any] | None = None, *, call_id: str | None = None,
              timeout_ms: float | None = None, tracer_provider: TracerProvider | None = None) -> Iterator[ToolCallSpan]:
    """An `execute_tool` span around one tool call of the loop, with its arguments known at start.

    With `timeout_ms`, the guard arms the budget when the span starts: the tool reads
    `tool.signal` (or `otelguard.tool_signal()`), and once the deadline fired the call's result
    becomes the structured TOOL_TIMEOUT error (also when the tool raised after the abort).
    """
    attributes: dict[str, Any] = {GEN_AI_OPERATION_NAME: OP_EXECUTE_TOOL, GEN_AI_TOOL_NAME: name}
    if arguments is not None:
        attributes[GEN_AI_TOOL_CALL_ARGUMENTS] = (
            arguments if isinstance(arguments, str) else json.dumps(arguments, separators=(",", ":"))
        )
    if call_id:
        attributes[GEN_AI_TOOL_CALL_ID] = call_id
    if timeout_ms is not None:
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, (int, float)) or timeout_ms <= 0:
            raise ValueError(f"tool_call timeout_ms: must be a number > 0 (got {timeout_ms!r})")
        attributes[OTELGUARD_TOOL_TIMEOUT_MS] = float(timeout_ms)
    with _tracer(tracer_provider).start_as_current_span(f"execute_tool {name}", attributes=attributes) as span:
        call = ToolCallSpan(span, tool_signal(), timeout_ms)
        try:
            yield call
        except Exception:
            if not call.timed_out:
                raise
        if call.timed_out and timeout_ms is not None:
            call.result = timeout_error(timeout_ms)
        if span.is_recording():
            span.set_attribute(GEN_AI_TOOL_CALL_RESULT, call.output)
