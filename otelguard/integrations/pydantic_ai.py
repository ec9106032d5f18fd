"""pydantic-ai: the `OtelGuard` capability lets otelguard's verdicts reach a pydantic-ai agent.

    from pydantic_ai import Agent
    from pydantic_ai.models.instrumented import InstrumentationSettings
    import otelguard
    from otelguard.integrations.pydantic_ai import OtelGuard

    provider.add_span_processor(otelguard.GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    agent = Agent(model, capabilities=[OtelGuard()])

What it does, per run (pydantic-ai's own OpenTelemetry instrumentation must be on: the guard judges
its spans):

- **inject / steer**: the guard's message is added to the *next* model request, after the step's tool
  results, as a user prompt (a `SystemPromptPart` only with `role="system"`; the message quotes
  text the model wrote, which must not gain a system role's authority); the request's
  `metadata["otelguard"]` names the guard and rule. It goes in through `RunContext.enqueue` from `before_model_request`, so
  it also stays in the run's message history. A message that arrives after the run's last model
  request is carried to the next run of the same conversation (`conversation_id`).
- **cancel**: the run stops at the next step boundary with `otelguard.AgentCancelled` (also when the
  cancel arrived on the run's last model call).
- **tool budgets**: a tool's own declared timeout (`@agent.tool(timeout=...)`, `Tool(timeout=...)`
  or the toolset's `timeout`) becomes its guard budget: the tool signal (`otelguard.tool_signal()`)
  is aborted at the deadline and the model gets the structured `TOOL_TIMEOUT` error instead of
  pydantic-ai's retry prompt. `@otelguard.budget(timeout_ms=...)` on the tool function works too.
- **streams**: `otelguard.watch_stream(result.stream_text(delta=True, debounce_by=None))` inside
  `async with agent.run_stream(...) as result:` cuts a chanting reply with
  `otelguard.RepetitiveOutputError`; `stream_text_of` reads `agent.run_stream_events()` items.
"""

from __future__ import annotations

import copy
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Literal

try:
    from pydantic_ai.capabilities import (
        AbstractCapability,
        CapabilityOrdering,
        Instrumentation,
    )
    from pydantic_ai.exceptions import ModelRetry
    from pydantic_ai.messages import (
        ModelRequest,
        PartDeltaEvent,
        PartStartEvent,
        SystemPromptPart,
        TextPart,
        TextPartDelta,
        ThinkingPart,
        ThinkingPartDelta,
        UserPromptPart,
    )
    from pydantic_ai.toolsets import AbstractToolset, WrapperToolset
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "otelguard.integrations.pydantic_ai needs pydantic-ai: pip install 'otelguard[pydantic-ai]'"
    ) from exc

from opentelemetry import trace as trace_api

from ..reactions.control import GuardMessage, Mailbox, bind_control
from ..live.processor import GuardSpanProcessor, active_processors
from ..live.timeouts import arm, timeout_error, timeout_message
from ..model.semconv import GEN_AI_OPERATION_NAME, OP_EXECUTE_TOOL
from ..live.signals import TOOL_TIMEOUT

__all__ = ["OtelGuard", "RunControl", "stream_text_of"]

_MAX_CARRIED_CONVERSATIONS = 1024


class RunControl(Mailbox):
    """The `AgentControl` of one pydantic-ai run: a mailbox the capability drains at step boundaries.

    `inject`/`steer`/`cancel` are called from otelguard's control worker thread; they only append
    under a lock and return at once.
    """


class _Carried:
    """Undelivered guard messages of ended runs, by conversation id (bounded, oldest dropped first)."""

    def __init__(self, limit: int = _MAX_CARRIED_CONVERSATIONS):
        self._lock = threading.Lock()
        self._by_conversation: OrderedDict[str, list[GuardMessage]] = OrderedDict()
        self._limit = limit

    def put(self, conversation_id: str, messages: list[GuardMessage]) -> None:
        with self._lock:
            self._by_conversation.setdefault(conversation_id, []).extend(messages)
            self._by_conversation.move_to_end(conversation_id)
            while len(self._by_conversation) > self._limit:
                self._by_conversation.popitem(last=False)

    def take(self, conversation_id: str) -> list[GuardMessage]:
        with self._lock:
            return self._by_conversation.pop(conversation_id, [])


@dataclass(kw_only=True)
class OtelGuard(AbstractCapability[Any]):
    """A pydantic-ai capability through which otelguard's inject / steer / cancel reach the agent.

    `role`: how guard messages are sent, `"user"` (a `UserPromptPart`, default) or `"system"` (a
    `SystemPromptPart`: only when you want the guard's text, which quotes model output, as system text).
    `processor`: the `GuardSpanProcessor` that arms tool budgets; default: the newest one installed.
    It wraps pydantic-ai's `Instrumentation` capability, so each run's control is bound before the
    run's agent span starts (and wins over an outer `otelguard.bind_control`).
    """

    role: Literal["system", "user"] = "user"
    processor: GuardSpanProcessor | None = None
    _control: RunControl | None = field(default=None, init=False, repr=False, compare=False)
    _carried: _Carried = field(default_factory=_Carried, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.role not in ("system", "user"):
            raise ValueError(f"OtelGuard role: must be 'system' or 'user' (got {self.role!r})")

    @classmethod
    def get_serialization_name(cls) -> str | None:
        return None  # holds live state (a processor, per-run mailboxes): not spec-constructible

    def get_ordering(self) -> CapabilityOrdering:
        return CapabilityOrdering(position="outermost", wraps=[Instrumentation])

    async def for_run(self, ctx: Any) -> "OtelGuard":
        run = copy.copy(self)
        run._control = RunControl()
        return run

    # --- run ----------------------------------------------------------------------------------------
    async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
        control = self._control or RunControl()
        conversation_id = getattr(ctx, "conversation_id", None)
        if conversation_id:
            for message in self._carried.take(conversation_id):
                control.inject(message)
        try:
            with bind_control(control):
                result = await handler()
        finally:
            leftover = control.drain()
            if leftover and conversation_id and not control.cancelled:
                self._carried.put(conversation_id, leftover)
        control.raise_if_cancelled()
        return result

    async def before_node_run(self, ctx: Any, *, node: Any) -> Any:
        self._raise_if_cancelled()
        return node

    async def before_model_request(self, ctx: Any, request_context: Any) -> Any:
        self._raise_if_cancelled()
        control = self._control
        messages = control.drain() if control is not None else []
        if messages:
            # Enqueued from this hook, pydantic-ai delivers it into this very request, after the
            # step's tool results, and keeps it in the history.
            ctx.enqueue(self._request_for(messages))
        return request_context

    def _raise_if_cancelled(self) -> None:
        if self._control is not None:
            self._control.raise_if_cancelled()

    def _request_for(self, messages: list[GuardMessage]) -> ModelRequest:
        sources = [_source(message) for message in messages]
        if self.role == "user":
            parts: list[Any] = [UserPromptPart(content=message.text) for message in messages]
        else:
            parts = [SystemPromptPart(content=message.text, metadata={"otelguard": source})
                     for message, source in zip(messages, sources)]
        return ModelRequest(parts=parts, metadata={"otelguard": sources})

    # --- tools --------------------------------------------------------------------------------------
    def get_wrapper_toolset(self, toolset: AbstractToolset[Any]) -> AbstractToolset[Any] | None:
        return _BudgetToolset(wrapped=toolset, processor=self.processor)


def _source(message: GuardMessage) -> dict[str, Any]:
    return {"guard": message.guard, "rule": message.rule, **message.source}


@dataclass
class _BudgetToolset(WrapperToolset[Any]):
    """Turns a tool's declared timeout into its guard budget; runs inside the tool's span."""

    processor: GuardSpanProcessor | None = None

    async def call_tool(self, name: str, tool_args: dict[str, Any], ctx: Any, tool: Any) -> Any:
        budget_s = _declared_timeout_s(tool)
        span = trace_api.get_current_span()
        signal = self._arm(span, budget_s * 1000) if budget_s is not None else None
        if budget_s is None or signal is None:
            return await self.wrapped.call_tool(name, tool_args, ctx, tool)
        budget_ms = budget_s * 1000
        started = time.monotonic()
        try:
            result = await self.wrapped.call_tool(name, tool_args, ctx, tool)
        except ModelRetry:
            # pydantic-ai enforces the same deadline; past it, the guard's verdict is the timeout.
            if _deadline_passed(signal, started, budget_s, budget_ms):
                return timeout_error(budget_ms)
            raise
        except Exception:
            if signal.timed_out:
                return timeout_error(budget_ms)
            raise
        return timeout_error(budget_ms) if signal.timed_out else result

    def _arm(self, span: Any, budget_ms: float) -> Any:
        if not span.is_recording() or (getattr(span, "attributes", None) or {}).get(
            GEN_AI_OPERATION_NAME
        ) != OP_EXECUTE_TOOL:
            return None
        candidates = [self.processor] if self.processor is not None else active_processors()
        processor = next((p for p in candidates if p.timeouts_enabled), None)
        if processor is None:
            return None  # no timeout-policy guard: pydantic-ai's own timeout applies as usual
        return arm(span, budget_ms, processor)


def _declared_timeout_s(tool: Any) -> float | None:
    timeout = getattr(getattr(tool, "tool_def", None), "timeout", None)
    if timeout is None:
        timeout = getattr(getattr(tool, "toolset", None), "timeout", None)
    if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
        return float(timeout)
    return None


def _deadline_passed(signal: Any, started: float, budget_s: float, budget_ms: float) -> bool:
    if signal.timed_out:
        return True
    if time.monotonic() - started < budget_s:
        return False
    signal.abort(TOOL_TIMEOUT, timeout_message(budget_ms))
    return signal.timed_out


def stream_text_of(item: Any) -> tuple[str, str] | None:
    """`watch_stream(..., text_of=stream_text_of)` for pydantic-ai stream events (`run_stream_events`)."""
    if isinstance(item, str):
        return item, "text"
    if isinstance(item, PartDeltaEvent):
        delta = item.delta
        if isinstance(delta, TextPartDelta):
            return delta.content_delta, "text"
        if isinstance(delta, ThinkingPartDelta) and delta.content_delta:
            return delta.content_delta, "reasoning"
        return None
    if isinstance(item, PartStartEvent):
        part = item.part
        if isinstance(part, TextPart) and part.content:
            return part.content, "text"
        if isinstance(part, ThinkingPart) and part.content:
            return part.content, "reasoning"
    return None
