"""`GuardSpanProcessor`: the guard inside the agent's TracerProvider, a thin driver of the engine.

Add it to the provider, with the export pipeline as its downstream so exported spans carry the
verdict attributes (an ended SDK span is read-only, so the downstream gets an enriched copy):

    provider.add_span_processor(GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))

Used beside other processors instead (no downstream), it still records metrics, calls the control
hook and adds an `otelguard.verdict` event to the still-open agent-run span.

Each span goes to the engine as it starts and as it ends (`engine.start` / `engine.end`); what comes
back is wired to the live world: tool budgets on the watchdog (`timeouts`), verdicts to metrics and
the agent's control (`delivery`), and onto the exported span (`enrichment`).
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry import context as context_api
from opentelemetry._logs import LoggerProvider
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor

from ..guards.config import GuardConfig
from ..runtime.containment import Containment
from ..reactions.control import AgentControl
from ..engine import DEFAULT_IDLE_TTL_S, DEFAULT_MAX_AGENTS, AgentRef, GuardEngine, Judged
from ..errors import ConfigError
from ..guards import RepeatToolReminder, ThinkingLoopGuard, TimeoutPolicy
from ..model.records import SpanKind, Verdict
from . import registry
from ..reactions.delivery import AgentRuns, Delivery
from ..reactions.dispatch import ControlDispatcher
from ..reactions.enrichment import enriched, mark_run
from ..reactions.evaluation_events import EvaluationEvents
from ..reactions.metrics import PROCESSING_SAMPLE_EVERY, GuardMetrics
from .sdk_span import SdkSpan
from .timeouts import ToolBudgets


class GuardSpanProcessor(SpanProcessor):
    """Runs otelguard's guards on the agent, model and tool spans of a TracerProvider.

    `on_start`/`on_end` are called synchronously on the thread that starts/ends the span. They never
    raise into the agent (errors are contained and counted) and never block for long: control hooks
    get at most `hook_wait_s` before they finish in the background.
    """

    def __init__(
        self,
        config: GuardConfig | dict | str | None = None,
        *,
        downstream: Sequence[SpanProcessor] | None = None,
        control: AgentControl | None = None,
        meter_provider: MeterProvider | None = None,
        max_agents: int = DEFAULT_MAX_AGENTS,
        idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
        hook_wait_s: float = 0.045,  # plus timer overshoot: the span thread waits at most ~50 ms
        logger_provider: LoggerProvider | None = None,
        evaluation_events: str = "actions",  # gen_ai.evaluation.result events: "actions", "all" or "off"
    ):
        _check_settings(max_agents=max_agents, idle_ttl_s=idle_ttl_s, hook_wait_s=hook_wait_s)
        self.metrics = GuardMetrics(meter_provider)
        self.engine = GuardEngine(config, max_agents=max_agents, idle_ttl_s=idle_ttl_s,
                                  on_evict=self.metrics.evicted)
        for guard in self.engine.guards:  # configured tool names keep their labels (patterns with `*` are not names)
            if isinstance(guard, RepeatToolReminder):
                self.metrics.reserve_tools(p for p in guard.config.include if "*" not in p)
        self._downstream: tuple[SpanProcessor, ...] = tuple(downstream or ())
        self._containment = Containment(self.metrics.internal_error)
        self.budgets = ToolBudgets(
            enabled=any(isinstance(guard, TimeoutPolicy) for guard in self.engine.guards),
            on_error=lambda exc: self._containment.record("watchdog"),
            on_evict=lambda reason, n: self.metrics.evicted("tool", reason, n),
        )
        self._runs = AgentRuns(max_agents, on_evict=lambda reason, n: self.metrics.evicted("run", reason, n))
        dispatcher = ControlDispatcher(wait_s=hook_wait_s, on_outcome=self.metrics.control,
                                       on_error=self._containment.record)
        evaluations = EvaluationEvents(logger_provider, evaluation_events, self._containment)
        self._delivery = Delivery(self.metrics, self._runs, dispatcher, control, evaluations)
        self._ends = itertools.count()  # judged spans: one in PROCESSING_SAMPLE_EVERY is timed
        self.running = True
        registry.register(self)

    @property
    def timeouts_enabled(self) -> bool:
        """Whether a timeout-policy guard runs (tool budgets are armed)."""
        return self.budgets.enabled

    @property
    def stream_guard(self) -> ThinkingLoopGuard | None:
        """The guard whose breaker judges streamed output (`watch_stream`), when configured."""
        return self.engine.stream_guard

    # --- SpanProcessor ---------------------------------------------------------------------------
    def on_start(self, span: Span, parent_context: context_api.Context | None = None) -> None:
        if self.running:
            try:
                source = SdkSpan(span)
                started = self.engine.start(source)
                if started is not None:
                    if started.tool is not None:
                        self.budgets.started(source.span_id, started.tool)
                    elif started.classification.kind is SpanKind.AGENT:
                        self._runs.started(source.span_id, span, keep_span=not self._downstream)
            except Exception:
                self._containment.record_and_maybe_raise("on_start")
        for processor in self._downstream:
            try:
                processor.on_start(span, parent_context=parent_context)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_start")

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook for a span about to end (still writable), passed on to the downstream
        processors that have it."""
        for processor in self._downstream:
            on_ending = getattr(processor, "_on_ending", None)
            if on_ending is None:
                continue
            try:
                on_ending(span)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_ending")

    def on_end(self, span: ReadableSpan) -> None:
        exported = span
        if self.running:
            try:
                exported = self._ended(span)
            except Exception:
                self._containment.record_and_maybe_raise("on_end")
        for processor in self._downstream:
            try:
                processor.on_end(exported)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_end")

    def shutdown(self) -> None:
        self.running = False
        registry.unregister(self)
        self.budgets.shutdown()
        self._delivery.shutdown()
        for processor in self._downstream:
            with self._containment.contained("downstream.shutdown"):
                processor.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        ok = self._delivery.dispatcher.flush(timeout_millis / 1000)
        for processor in self._downstream:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            with self._containment.contained("downstream.force_flush"):
                ok = processor.force_flush(remaining) and ok
        return ok

    # --- what the engine decided ---------------------------------------------------------------------
    def _ended(self, span: ReadableSpan) -> ReadableSpan:
        """End the span in the engine; for an agent, model or tool span, count it and deliver its
        verdicts. Returns the span to export (enriched with any verdict)."""
        began = time.perf_counter()
        source = SdkSpan(span)
        timed_out_ms = self.budgets.ended(source.span_id) if self.budgets.open_tools else None
        judged = self.engine.end(source, timed_out_ms=timed_out_ms)
        if judged is None:  # not an agent, model or tool span
            return span
        exported = self._delivered(span, source, judged)
        if not next(self._ends) % PROCESSING_SAMPLE_EVERY:  # one judged span in so many is timed (see metrics)
            self.metrics.processing.record(time.perf_counter() - began)
        return exported

    def _delivered(self, span: ReadableSpan, source: SdkSpan, judged: Judged) -> ReadableSpan:
        kind = judged.classification.kind
        self.metrics.span(kind, judged.classification.convention)
        if kind is SpanKind.AGENT:
            self._runs.ended(judged.agent.run_span_id)
            return span
        spent = self._delivery.judged(judged) if judged.verdicts else None  # a loop's spend, for the span
        shown = judged.shown
        if not shown:
            return span
        if not self._downstream:
            mark_run(self._runs.span(judged.agent), shown, source.span_id, spent)
            return span
        return enriched(span, shown, spent)

    # --- pausing a session ---------------------------------------------------------------------------
    def pause(self, session: str) -> None:
        """Hold back everything the guard would send the agents of `session` (the conversation or
        session id of their agent runs: `gen_ai.conversation.id`, `session.id` or `conversation.id`)
        until `resume`: no message, steer or cancel reaches their control, no tool call is blocked or
        given a deadline, no stream is cut. Their spans are still judged: the verdicts are counted,
        written on the spans and emitted as events, each marked `paused` (`otelguard.paused`).
        Thread-safe; takes effect for the spans that end from now on."""
        self.engine.pause(session)

    def resume(self, session: str) -> bool:
        """Deliver to the agents of `session` again; whether it was paused."""
        return self.engine.resume(session)

    def is_paused(self, span: Any) -> bool:
        """Whether an open span belongs to a paused session."""
        return self.engine.is_paused(self.agent_of(span), getattr(span, "attributes", None) or {})

    # --- for the user-facing API -----------------------------------------------------------------
    def holds(self, span: Any) -> bool:
        """Whether this guard tracks the open span: a tool span, or any span inside an agent run."""
        context = span.get_span_context()
        return context.span_id in self.budgets.open_tools or self.engine.agent_of(context.trace_id,
                                                                                  context.span_id) is not None

    def agent_of(self, span: Any) -> AgentRef | None:
        """The agent of an open span inside an agent run, if any."""
        context = span.get_span_context()
        return self.engine.agent_of(context.trace_id, context.span_id)

    def report_stream_verdict(self, span: Any, verdict: Verdict, *, on_model_span: bool) -> None:
        """A verdict of a stream watched live in `span`: delivered now; shown on the model span when
        it ends (`on_model_span`), which is then not judged again."""
        with self._containment.contained("deliver"):
            if on_model_span:
                context = span.get_span_context()
                self.engine.report_stream_trip(context.trace_id, context.span_id, verdict)
            self._delivery.now(self.agent_of(span), verdict, span.get_span_context())


@functools.cache
def default_stream_guard() -> ThinkingLoopGuard:
    """The stream judge of a `watch_stream` with no guard installed: the default configuration's."""
    guard = GuardEngine().stream_guard
    assert guard is not None  # the default configuration runs the thinking-loop guard
    return guard


def active_processors() -> list[GuardSpanProcessor]:
    """Running guard processors, oldest first."""
    return registry.active_processors()


def _check_settings(*, max_agents: Any, idle_ttl_s: Any, hook_wait_s: Any) -> None:
    """The processor's own settings fail at construction, naming the setting, like the guard config."""

    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)

    if isinstance(max_agents, bool) or not isinstance(max_agents, int) or max_agents < 1:
        raise ConfigError(f"max_agents: must be an integer >= 1 (got {max_agents!r})")
    if idle_ttl_s is not None and not (number(idle_ttl_s) and idle_ttl_s > 0):
        raise ConfigError(f"idle_ttl_s: must be a number of seconds > 0, or None (got {idle_ttl_s!r})")
    if not (number(hook_wait_s) and hook_wait_s >= 0):
        raise ConfigError(f"hook_wait_s: must be a number of seconds >= 0 (got {hook_wait_s!r})")
