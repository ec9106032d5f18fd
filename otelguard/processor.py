"""`GuardSpanProcessor`: the guard inside the agent's TracerProvider.

Add it to the provider, with the export pipeline as its downstream so exported spans carry the
verdict attributes (an ended SDK span is read-only, so the downstream gets an enriched copy):

    provider.add_span_processor(GuardSpanProcessor(downstream=[BatchSpanProcessor(exporter)]))

Used beside other processors instead (no downstream), it still records metrics, calls the control
hook and adds an `otelguard.verdict` event to the still-open agent-run span.
"""

from __future__ import annotations

import math
import threading
import time
import weakref
from dataclasses import dataclass
from typing import Any, Iterable, Iterator, Mapping, Sequence

from opentelemetry import context as context_api
from opentelemetry import trace as trace_api
from opentelemetry.metrics import MeterProvider
from opentelemetry.sdk.trace import Event, ReadableSpan, Span, SpanProcessor

from .config import GuardConfig
from .containment import Containment
from .control import AgentControl, bound_control, deliver, needs_delivery
from .conventions import MARKER_KEYS, NAMED_SPANS, classify_marked, model_usage
from .dispatch import ControlDispatcher
from .engine import (
    DEFAULT_IDLE_TTL_S,
    DEFAULT_MAX_AGENTS,
    DEFAULT_MAX_OPEN_SPANS,
    AgentRef,
    GuardEngine,
    Judged,
)
from .errors import ConfigError
from .forksafe import reinit_after_fork
from .metrics import PROCESSING_SAMPLE_EVERY, GuardMetrics
from .records import (
    AGENT_KIND,
    MODEL_KIND,
    STATUS_UNSET,
    TOOL_KIND,
    Classification,
    ModelCall,
    SpanEvent,
    SpanView,
    Status,
    Verdict,
)
from .signals import TOOL_TIMEOUT, ToolSignal
from .state import OpenSpans
from .watchdog import Deadline, Watchdog

_STATUS = {
    trace_api.StatusCode.UNSET: Status.UNSET,
    trace_api.StatusCode.OK: Status.OK,
    trace_api.StatusCode.ERROR: Status.ERROR,
}
_UNSET_CODE = trace_api.StatusCode.UNSET  # most spans': tested by identity (an Enum hashes in Python)
# Which verdict's attributes a span carries when several guards judged it.
_ACTION_RANK = {"cancel": 7, "block": 6, "break": 5, "steer": 4, "warn": 3, "remind": 2, "abort": 1, "none": 0}

# Registration order matters: with several guarded providers, the newest is the fallback owner.
_active: "weakref.WeakValueDictionary[int, GuardSpanProcessor]" = weakref.WeakValueDictionary()
_registrations = iter(range(1 << 62))


def active_processors() -> list["GuardSpanProcessor"]:
    """Live processors, oldest first."""
    return [processor for _, processor in sorted(_active.items())]


def owning_processor(span: Any) -> "GuardSpanProcessor | None":
    """The guard on the provider that made `span`; else the newest active guard; else None.

    The SDK span keeps its provider's processor pipeline (`_span_processor`); that is the only link
    from a span to its provider, so we read it, falling back to the registry.
    """
    pipeline = getattr(span, "_span_processor", None)
    for processor in _guards_in(pipeline):
        if not processor._shutdown:
            return processor
    processors = active_processors()
    return processors[-1] if processors else None


def _guards_in(pipeline: Any) -> Iterator["GuardSpanProcessor"]:
    if isinstance(pipeline, GuardSpanProcessor):
        yield pipeline
        return
    for member in getattr(pipeline, "_span_processors", ()) or ():
        yield from _guards_in(member)


@dataclass(slots=True)
class _Run:
    span: Span
    control: AgentControl | None


@dataclass(slots=True)
class _ArmedTool:
    """An open tool span's budget and block. Its signal (a threading.Event and a lock: a few
    microseconds to make) is made only when a tool asks for it or a deadline needs it."""

    budget_ms: float | None
    block_message: str | None = None
    signal: ToolSignal | None = None
    deadline: Deadline | None = None

    def signal_now(self) -> ToolSignal:
        if self.signal is None:
            with _SIGNAL_MAKING:  # two threads asking at once must get the same signal
                if self.signal is None:
                    signal = ToolSignal(self.budget_ms)
                    signal.block_message = self.block_message
                    self.signal = signal
        return self.signal


_SIGNAL_MAKING = threading.Lock()
_no_marker_key = MARKER_KEYS.isdisjoint  # bound once: the first test every span of the application meets


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
    ):
        _check_settings(max_agents=max_agents, idle_ttl_s=idle_ttl_s, hook_wait_s=hook_wait_s)
        self.metrics = GuardMetrics(meter_provider)
        self.engine = GuardEngine(config, max_agents=max_agents, idle_ttl_s=idle_ttl_s,
                                  on_evict=self.metrics.evicted, full_records=False)
        self.config = self.engine.config
        self._downstream: tuple[SpanProcessor, ...] = tuple(downstream or ())
        # Bound once: the hooks run for every span of the application. A start or ending hook that does
        # nothing (the SDK's batch and simple processors queue spans at their end) is not called at all.
        self._downstream_starts = _acting(self._downstream, "on_start")
        self._downstream_endings = _acting(self._downstream, "_on_ending")
        self._downstream_ends = tuple(processor.on_end for processor in self._downstream)
        self._downstream_end = self._downstream_ends[0] if len(self._downstream_ends) == 1 else None
        self._default_control = control
        self._containment = Containment(self.metrics.internal_error)
        self._watchdog = Watchdog(on_error=lambda exc: self._containment.record("watchdog"))
        self._dispatcher = ControlDispatcher(
            wait_s=hook_wait_s, on_outcome=self.metrics.control, on_error=self._containment.record
        )
        self._max_agents = max_agents
        self._start_afresh()
        reinit_after_fork(self, "_after_fork")  # after the engine's own: it rebinds to the engine's new maps
        self._shutdown = False
        self.timeouts_enabled = self.config.row("timeout-policy") is not None
        _active[next(_registrations)] = self

    def _start_afresh(self) -> None:
        """Open tool and agent-run spans, bounded (spans that never end are evicted oldest first), and
        the engine's maps bound for the hot path."""
        self._tools: OpenSpans[int, _ArmedTool] = OpenSpans(100_000, on_evict=lambda reason, n: self.metrics.evicted("tool", reason, n))
        self._runs: OpenSpans[int, _Run] = OpenSpans(self._max_agents, on_evict=lambda reason, n: self.metrics.evicted("run", reason, n))
        self._pop_tool = self._tools.items.pop  # `_tools.pop` without the call (at every tool span end)
        # The engine's dict of open spans inside agent runs: empty (falsy) while no agent run is open.
        # Spans of the application inside a run are noted in it (`_track_parent`, `_track_under`) and
        # dropped from it (`_untrack`).
        self._open_spans = self.engine.open_span_ids
        self._adopt_span = self.engine.adopt_span
        # The application spans among them: while there are none, such a span's end costs no lookup.
        # Bounded like the engine's open spans, evictions counted with theirs.
        self._tracked_app_spans: OpenSpans[int, bool] = OpenSpans(
            DEFAULT_MAX_OPEN_SPANS, on_evict=lambda reason, n: self.metrics.evicted("span", reason, n))
        self._tracked_app_ids = self._tracked_app_spans.items

    def _after_fork(self) -> None:
        """In a forked child, after the engine started afresh: the parent's open spans never end
        there, and a lock another thread held at the fork would stay held."""
        global _SIGNAL_MAKING
        _SIGNAL_MAKING = threading.Lock()
        self._start_afresh()

    # --- SpanProcessor ---------------------------------------------------------------------------
    # These run for every span of the application, so they are written flat: plain try/except rather
    # than a context manager, and the SDK span's own fields read directly (each property is a call;
    # the public accessors are the fallback for other spans). A span with no marker attribute and no
    # known name (the application's own) costs one C-level set test and, while no agent run is open,
    # nothing more: the shutdown flag is read only past that test. While a run is open its parent
    # tells whether it is inside the run (`_span_started`), and only while such spans are tracked
    # does its end look itself up (`engine.forget`, done here on the engine's dict without the call).
    def on_start(self, span: Span, parent_context: context_api.Context | None = None) -> None:
        try:
            try:
                attributes, name = span._attributes._dict, span._name  # type: ignore[attr-defined]
            except AttributeError:
                attributes, name = _public_attributes(span), span.name
            if _no_marker_key(attributes) and name not in NAMED_SPANS:
                if self._open_spans and not self._shutdown:  # maybe inside an agent run
                    self._span_started(span, name, attributes, parent_context, False)
            elif not self._shutdown:
                self._span_started(span, name, attributes, parent_context, True)
        except Exception:
            self._containment.record_and_maybe_raise("on_start")
        if self._downstream_starts:  # (the SDK's batch and simple processors act only at span end)
            self._start_downstream(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        exported = span
        try:
            try:
                attributes, name = span._attributes._dict, span._name  # type: ignore[attr-defined]
            except AttributeError:
                attributes, name = _public_attributes(span), span.name
            if _no_marker_key(attributes) and name not in NAMED_SPANS:
                if self._tracked_app_ids:  # dropped if a child's start tracked it
                    try:
                        self._untrack(span._context[1])  # type: ignore[attr-defined]
                    except AttributeError:
                        self._untrack(span.get_span_context()[1])
            elif not self._shutdown:
                try:
                    context, parent = span._context, span._parent  # type: ignore[attr-defined]
                except AttributeError:
                    context, parent = span.get_span_context(), span.parent
                exported = self._end(span, name, attributes, context[0], context[1],
                                     parent[1] if parent is not None else None)
        except Exception:
            self._containment.record_and_maybe_raise("on_end")
        if self._downstream_end is not None:  # a single pipeline: no loop
            try:
                self._downstream_end(exported)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_end")
            return
        for on_end in self._downstream_ends:
            try:
                on_end(exported)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_end")

    def _start_downstream(self, span: Span, parent_context: context_api.Context | None) -> None:
        for on_start in self._downstream_starts:
            try:
                on_start(span, parent_context=parent_context)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_start")

    def _on_ending(self, span: Span) -> None:
        """The SDK's hook for a span about to end (still writable), passed on to a downstream that has one."""
        for on_ending in self._downstream_endings:
            try:
                on_ending(span)
            except Exception:
                self._containment.record_and_maybe_raise("downstream.on_ending")

    def shutdown(self) -> None:
        self._shutdown = True
        for key, processor in list(_active.items()):
            if processor is self:
                _active.pop(key, None)
        self._watchdog.shutdown()
        self._dispatcher.shutdown()
        for processor in self._downstream:
            with self._containment.contained("downstream.shutdown"):
                processor.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        deadline = time.monotonic() + timeout_millis / 1000
        ok = self._dispatcher.flush(timeout_millis / 1000)
        for processor in self._downstream:
            remaining = max(0, int((deadline - time.monotonic()) * 1000))
            with self._containment.contained("downstream.force_flush"):
                ok = processor.force_flush(remaining) and ok
        return ok

    # --- spans of the application inside agent runs -------------------------------------------------
    # Their descendants find their agent through them, by parent id. Most are leaves directly under a
    # span the engine tracks (a tool's or a model call's HTTP requests, the commonest spans of an agent
    # process), so one is not tracked when it starts: its agent is its parent's. It is tracked once a
    # span starts under it (`_track_parent`), and a span of the application starting under a tracked
    # one is tracked at once (`_track_under`): then any open span inside a run is tracked or has a
    # tracked parent, and descendants at any depth find their agent.
    # One shape is lost: a span of the application directly under one of ours that has ended before
    # a span starts under it (a tool's background request outliving the tool) is outside the run.
    def _track_parent(self, span: Span, parent_id: int, parent_context: context_api.Context | None) -> None:
        """A span started under a parent the engine does not track: if that parent is a span of the
        application, of this provider, open, and directly under a tracked span, track it. It is found
        as the span current in the context the child starts in. A parent out of sight (a span context
        propagated without its span) is taken as outside any run."""
        holder = trace_api.get_current_span(parent_context)
        try:
            held, grandparent = holder._context, holder._parent  # type: ignore[attr-defined]
            if grandparent is None or held[1] != parent_id:
                return  # a root, or not the parent (a context that does not hold it)
            agent = self._open_spans.get(grandparent[1])
            if (agent is None or holder._end_time is not None  # type: ignore[attr-defined]
                    or holder._span_processor is not span._span_processor):  # type: ignore[attr-defined]
                return  # outside any run; or ended, or another provider's: its end would never untrack it here
            if not (_no_marker_key(holder._attributes._dict) and holder._name not in NAMED_SPANS):  # type: ignore[attr-defined]
                return  # one of ours in a run that the engine does not hold: its bound dropped it
        except AttributeError:  # not an SDK span: nothing to read
            return
        self._track(parent_id, agent)
        if holder._end_time is not None:  # type: ignore[attr-defined]
            # It ended on another thread meanwhile, and its end may have found nothing to drop.
            self._untrack(parent_id)

    def _track_under(self, span_id: int, parent_id: int) -> None:
        """Track a span of the application under its parent's agent, if the parent is tracked. (Done at
        once for one starting under a tracked one, so that its children still find the run should
        that parent end first: a task outliving the span it started in.)"""
        agent = self._open_spans.get(parent_id)
        if agent is not None:
            self._track(span_id, agent)

    def _track(self, span_id: int, agent: AgentRef) -> None:
        self._tracked_app_spans.put(span_id, True)
        self._adopt_span(span_id, agent)

    def _untrack(self, span_id: int) -> None:
        if self._tracked_app_ids.pop(span_id, None) is not None:
            self._open_spans.pop(span_id, None)

    def agent_of(self, span: Any) -> AgentRef | None:
        """The agent of an open span: the engine's for a span it tracks, else (a span of the
        application directly under a tracked one, not tracked itself) its parent's."""
        agent = self.engine.agent_of(span.get_span_context().span_id)
        if agent is None:
            parent = getattr(span, "parent", None)
            if parent is not None:
                agent = self.engine.agent_of(parent.span_id)
        return agent

    # --- start -------------------------------------------------------------------------------------
    def _span_started(self, span: Span, name: str, attributes: Mapping[str, Any],
                      parent_context: context_api.Context | None, ours: bool) -> None:
        """A span started that is `ours`, or one of the application's while an agent run is open:
        read its ids, track what a run's descendants need (see above) and start ours."""
        try:
            context, parent = span._context, span._parent  # type: ignore[attr-defined]
        except AttributeError:
            context, parent = span.get_span_context(), span.parent
        # SpanContext is a tuple (trace_id, span_id, ...): indexing skips its property calls.
        parent_id = parent[1] if parent is not None else None
        if parent_id is not None and self._open_spans:
            if parent_id not in self._open_spans:
                self._track_parent(span, parent_id, parent_context)
            if not ours and self._tracked_app_ids and parent_id in self._tracked_app_ids:
                self._track_under(context[1], parent_id)
        if ours:
            self._start(span, name, attributes, context[0], context[1], parent_id)

    def _start(self, span: Span, name: str, attributes: Mapping[str, Any], trace_id: int, span_id: int,
               parent_id: int | None) -> None:
        classification = classify_marked(name, attributes)
        if classification is None:  # a marker attribute, but none of ours (an OpenInference CHAIN, say)
            self.engine.inherit(span_id, parent_id)
            return
        if classification.kind is MODEL_KIND:  # judged only when it ends: no view to build now
            self.engine.model_started(span_id, parent_id)
            return
        started = self.engine.span_started(SpanView(name, trace_id, span_id, parent_id, attributes), classification)
        if started is None:
            return
        kind = classification.kind
        if kind is AGENT_KIND:
            control = bound_control()
            # The run is kept for a hook bound to it, or for the verdict events its span carries when
            # there is no downstream to export enriched spans; otherwise nothing would read it.
            if control is not None or not self._downstream:
                self._runs.put(span_id, _Run(span, control))
        elif kind is TOOL_KIND:
            decision = started.tool
            armed = _ArmedTool(decision.budget_ms if decision else None)
            if decision is not None:
                if decision.block is not None:
                    armed.block_message = decision.block.message
                if decision.budget_ms is not None:
                    armed.deadline = self._arm_deadline(armed.signal_now(), decision.budget_ms)
            self._tools.put(span_id, armed)

    def _arm_deadline(self, signal: ToolSignal, budget_ms: float) -> Deadline:
        message = f"tool call timed out after {_ms(budget_ms)}ms"
        return self._watchdog.arm(budget_ms / 1000, lambda: signal.abort(TOOL_TIMEOUT, message))

    # --- the tool signal API (used by otelguard.tool_signal / budget) -------------------------------
    def signal_for(self, span_id: int) -> ToolSignal | None:
        armed = self._tools.get(span_id)
        return armed.signal_now() if armed is not None else None

    def standalone_budget(self, budget_ms: float) -> ToolSignal | None:
        """A budget for a call with no span of ours around it: a signal on our watchdog, nothing stored."""
        if not self.timeouts_enabled or self._shutdown:
            return None
        signal = ToolSignal(budget_ms)
        self._arm_deadline(signal, budget_ms)
        return signal

    def arm_budget(self, span_id: int, budget_ms: float) -> ToolSignal | None:
        """Arm a budget for an open tool span (the `@budget` decorator, integrations).

        None when this processor runs no timeout-policy guard: the tool is then untouched.
        """
        if not self.timeouts_enabled or self._shutdown:
            return None
        armed = self._tools.get(span_id)
        if armed is None:  # not a tool span this guard saw start: arm without storing anything
            return self.standalone_budget(budget_ms)
        signal = armed.signal_now()
        if armed.deadline is None:
            signal.budget_ms = budget_ms
            armed.deadline = self._arm_deadline(signal, budget_ms)
        return signal

    # --- end ---------------------------------------------------------------------------------------
    def _end(self, span: ReadableSpan, name: str, attributes: Mapping[str, Any], trace_id: int, span_id: int,
             parent_id: int | None) -> ReadableSpan:
        classification = classify_marked(name, attributes)
        if classification is None:  # a marker attribute, but none of ours
            self.engine.forget(span_id)
            return span
        if self.metrics.span(classification.kind, classification.convention) % PROCESSING_SAMPLE_EVERY:
            return self._judge(span, name, attributes, trace_id, span_id, parent_id, classification)
        started_at = time.perf_counter()  # one judged span in PROCESSING_SAMPLE_EVERY is timed
        exported = self._judge(span, name, attributes, trace_id, span_id, parent_id, classification)
        self.metrics.processing.record(time.perf_counter() - started_at)
        return exported

    def _judge(self, span: ReadableSpan, name: str, attributes: Mapping[str, Any], trace_id: int, span_id: int,
               parent_id: int | None, classification: Classification) -> ReadableSpan:
        """Judge an ended agent, model or tool span; return the span to export (enriched with any verdict)."""
        kind = classification.kind
        timed_out_ms = None
        if kind is TOOL_KIND:
            armed = self._pop_tool(span_id, None)
            if armed is not None:
                if armed.deadline is not None:
                    armed.deadline.cancel()
                signal = armed.signal
                if signal is not None and signal.timed_out:
                    timed_out_ms = signal.budget_ms
        if kind is AGENT_KIND:  # nothing is judged at a run's end: no view either
            self.engine.run_ended(span_id, parent_id, trace_id)
            self._runs.pop(span_id)
            return span
        if (kind is MODEL_KIND and not _events_of(span)
                and self.engine.model_ended_unread(span_id, parent_id, trace_id, attributes, classification)):
            return span  # output too short for any guard, and no chunks: nothing to judge, no view or record
        view = _view(span, name, trace_id, span_id, parent_id, attributes)
        judged = self.engine.span_ended(view, timed_out_ms=timed_out_ms, classification=classification)
        if judged is None:
            return span
        if judged.verdicts:
            self._record(judged, view)
        if not judged.verdicts and judged.stream_verdict is None:
            return span
        shown = list(judged.verdicts)
        if judged.stream_verdict is not None:
            shown.append(judged.stream_verdict)
        if not self._downstream:
            self._mark_run(judged.agent, shown, span_id)
            return span
        return _enriched(span, shown)

    def _record(self, judged: Judged, span: SpanView) -> None:
        usage = None  # read from the span for the first loop verdict (no guard needs it)
        for verdict in judged.verdicts:
            self.metrics.verdict(verdict, judged.agent.name)
            if verdict.repeat_count is not None:
                self.metrics.run_length.record(verdict.repeat_count, {"otelguard.guard": verdict.guard})
            if isinstance(judged.record, ModelCall) and verdict.verdict in ("thinking_loop", "repetitive_output"):
                usage = usage or model_usage(span, judged.classification)
                if usage.output_tokens:
                    self.metrics.loop_token_spend(verdict.guard, usage.model, usage.output_tokens)
            if needs_delivery(verdict):
                self._deliver(judged.agent, verdict)

    def _deliver(self, agent: AgentRef, verdict: Verdict) -> None:
        control = self._control_for(agent)
        if control is None:
            self.metrics.control(verdict.action, "unbound")
            return
        self._dispatcher.call(verdict.action, lambda: deliver(control, verdict))

    def _control_for(self, agent: AgentRef) -> AgentControl | None:
        if agent.run_span_id is not None:
            run = self._runs.get(agent.run_span_id)
            if run is not None and run.control is not None:
                return run.control
        return bound_control() or self._default_control

    def deliver_now(self, agent: AgentRef | None, verdict: Verdict) -> None:
        """Record and deliver a verdict reached outside span end (a stream cut mid-call)."""
        with self._containment.contained("deliver"):
            self.metrics.verdict(verdict, agent.name if agent else None)
            if needs_delivery(verdict):
                control = self._control_for(agent) if agent else (bound_control() or self._default_control)
                if control is None:
                    self.metrics.control(verdict.action, "unbound")
                else:
                    self._dispatcher.call(verdict.action, lambda: deliver(control, verdict))

    def _mark_run(self, agent: AgentRef, verdicts: list[Verdict], span_id: int) -> None:
        run = self._runs.get(agent.run_span_id) if agent.run_span_id is not None else None
        if run is None or not run.span.is_recording():
            return
        judged = f"{span_id:016x}"  # which span the verdict is about: the event sits on the agent run
        for verdict in verdicts:
            run.span.add_event("otelguard.verdict", {**verdict.attributes(), "otelguard.span_id": judged})


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


def _acting(processors: Sequence[SpanProcessor], hook: str) -> tuple[Any, ...]:
    """Each processor's `hook`, bound, where it has one that does something."""
    hooks = (getattr(processor, hook, None) for processor in processors)
    return tuple(method for method in hooks
                 if method is not None and not _does_nothing(getattr(method, "__func__", None)))


def _empty_method(self: Any, *args: Any, **kwargs: Any) -> None:
    pass


def _does_nothing(method: Any) -> bool:
    """Whether a method's body is a bare `pass`, so that calling it can be skipped: its bytecode is the
    empty method's (which can only return a constant). Anything else, a docstring or a builtin
    included, is called."""
    code = getattr(method, "__code__", None)
    return code is not None and code.co_code == _empty_method.__code__.co_code


def _public_attributes(span: ReadableSpan) -> Mapping[str, Any]:
    """The attributes of a span that is not the SDK's own (the hot path reads the SDK's dict)."""
    attributes = span.attributes
    return attributes if attributes is not None else {}


def _ms(budget_ms: float) -> str:
    return str(int(budget_ms)) if float(budget_ms).is_integer() else f"{budget_ms:g}"


def _events_of(span: ReadableSpan) -> Sequence[Event]:
    """The ended span's events, as `_view` reads them (the SDK's own list: no copy)."""
    try:
        return span._events._dq  # type: ignore[attr-defined]
    except AttributeError:
        return span.events


def _view(span: ReadableSpan, name: str, trace_id: int, span_id: int, parent_id: int | None,
          attributes: Mapping[str, Any]) -> SpanView:
    """The ended span as the engine reads it; `attributes` is the span's own dict (no copy)."""
    try:  # the SDK span's own fields: each public property is a call, and `events` copies the list
        status, scope = span._status, span._instrumentation_scope  # type: ignore[attr-defined]
        start, end = span._start_time, span._end_time  # type: ignore[attr-defined]
        bounded_events = span._events  # type: ignore[attr-defined]
        events, dropped_events = bounded_events._dq, bounded_events.dropped  # ended: nothing appends any more
        dropped_attributes = span._attributes.dropped  # type: ignore[attr-defined]
        code, description = status._status_code, status._description
        scope_name = scope._name if scope is not None else None
    except AttributeError:
        status, scope = span.status, span.instrumentation_scope
        start, end = span.start_time, span.end_time
        events, dropped_events, dropped_attributes = span.events, span.dropped_events, span.dropped_attributes
        code, description = status.status_code, status.description
        scope_name = scope.name if scope is not None else None
    return SpanView(
        name,
        trace_id,
        span_id,
        parent_id,
        attributes,
        tuple(SpanEvent(e.name, e.attributes or {}, e.timestamp or 0) for e in events) if events else (),
        STATUS_UNSET if code is _UNSET_CODE else _STATUS.get(code, STATUS_UNSET),
        description,
        scope_name,
        start or 0,
        end,
        dropped_events,
        dropped_attributes,
    )


def _enriched(span: ReadableSpan, verdicts: Iterable[Verdict]) -> ReadableSpan:
    """A copy of the ended span with the verdict attributes and one `otelguard.verdict` event each."""
    verdicts = list(verdicts)
    primary = max(verdicts, key=lambda v: _ACTION_RANK.get(v.action, 0))
    attributes = dict(span.attributes or {})
    attributes.update(primary.attributes())
    events = list(span.events)
    end = span.end_time
    events.extend(Event("otelguard.verdict", v.attributes(), end) for v in verdicts)
    return ReadableSpan(
        name=span.name,
        context=span.get_span_context(),
        parent=span.parent,
        resource=span.resource,
        attributes=attributes,
        events=events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=end,
        instrumentation_scope=span.instrumentation_scope,
    )
