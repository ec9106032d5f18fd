"""`GuardEngine`: spans in, verdicts out. The one owner of the span lifecycle.

Every driver (the live processor, the offline analyzer, a service) adapts its spans to `SpanSource`
and calls `start(source)` when a span starts and `end(source)` when it ends; nothing else about a
span's life is the driver's business. Per span the engine:

1. lets a span with no agent/model/tool marker through (inside an open agent run it notes the span's
   agent, so the spans below it find their run);
2. classifies the rest by convention;
3. at start: finds the span's agent (a new run resets that agent's repeat chain) and asks the guards
   about a tool call before it runs (budget, pre-emptive block);
4. at end: reads the span into a record, numbers it among its agent's judged calls (its step) and
   runs the guards on it, under the agent's lock; each verdict carries the steps that made its
   pattern (`records.Evidence`, kept by the guards: `detectors.evidence`). It counts a model call's
   usage into the agent's spend, and steps the agent's loop of each loop verdict (`loop_spend`): what
   the loop has spent so far comes back with the verdicts.

A paused session (`pause`) is judged as any other, and its verdicts say so (`Verdict.paused`); only
what would reach the agent is held back: the engine asks no tool budget and no block at a tool's
start, and each driver delivers no paused verdict.

It imports nothing from OpenTelemetry, so every driver reaches the same verdict on the same spans.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from .. import conventions
from ..conventions import classify, session_of
from ..detectors.evidence import of_model_call
from ..runtime.forksafe import reinit_after_fork
from ..guards import Guard, ModelFacts, ThinkingLoopGuard, ToolStart, build_guards
from .loop_spend import AgentSpend, LoopStep, loop_step
from ..model.records import (
    AgentRun,
    Classification,
    ModelCall,
    ModelUsage,
    Record,
    SpanKind,
    SpanView,
    ToolCall,
    Verdict,
)
from ..guards.settings import GuardSettings
from .agents import AgentRef, Agents, AgentState, agent_of_run, trace_agent
from .bounded import OpenSpans
from .source import SpanSource

if TYPE_CHECKING:
    from ..guards.config import GuardConfig

DEFAULT_MAX_AGENTS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
DEFAULT_MAX_OPEN_SPANS = 100_000
_MAX_PENDING_STREAM_TRIPS = 1024
MAX_PAUSED_SESSIONS = 10_000

_NO_CALL = ToolCall(name=None, arguments=None)
SpanKey = tuple[int, int]  # (trace id, span id)
_NO_LIVE_FACTS = ModelFacts()


class Started(NamedTuple):
    """What a driver acts on when an agent run or a tool call starts."""

    classification: Classification
    agent: AgentRef
    tool: ToolStart | None = None  # a tool span's budget and pre-emptive block


class Judged(NamedTuple):
    """One ended agent, model or tool span, with what was read of it and the verdicts.

    `span` and `record` are None for an agent span's end (its run was read at its start; no guard
    judges its end)."""

    classification: Classification
    agent: AgentRef
    span: SpanView | None = None
    record: Record | None = None
    verdicts: tuple[Verdict, ...] = ()
    # A stream trip reported live (`report_stream_trip`): shown on the span, not reported again.
    stream_verdict: Verdict | None = None
    loop_steps: tuple[LoopStep, ...] = ()  # each loop verdict's step of its loop, with the spend so far
    step: int = 0  # the span's number among its agent's judged model and tool calls (0: an agent span)

    @property
    def shown(self) -> tuple[Verdict, ...]:
        """What the span shows: its verdicts, and a stream trip reported live."""
        return self.verdicts if self.stream_verdict is None else (*self.verdicts, self.stream_verdict)


def _as_started(source: SpanSource) -> SpanView:
    """The span as it is at its start, for every driver alike: its ids, name and attributes (no
    events, status or end yet; a stored span's later facts are not the guard's at start)."""
    return SpanView(source.name, source.trace_id, source.span_id, source.parent_span_id, source.attributes)


def _settings(config: GuardConfig | tuple[GuardSettings, ...] | dict | str | None) -> tuple[GuardSettings, ...]:
    if isinstance(config, tuple):  # each guard's settings, validated already (a CLI hook's cached config)
        return config
    # pydantic, imported here only: a driver that hands validated settings never needs it
    from ..guards.config import GuardConfig

    return GuardConfig.load(config).settings


class GuardEngine:
    """Thread-safe: maps are locked only for their own operations; guard hooks run under the agent's lock."""

    def __init__(
        self,
        config: GuardConfig | tuple[GuardSettings, ...] | dict | str | None = None,
        *,
        max_agents: int = DEFAULT_MAX_AGENTS,
        idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
        max_open_spans: int = DEFAULT_MAX_OPEN_SPANS,
        clock: Callable[[], float] = time.monotonic,
        on_evict: Callable[[str, str, int], None] | None = None,
        price_wait_s: float = 0.0,
    ):
        """`price_wait_s`: how long pricing a loop may wait for the price table to load (a report may
        wait; on an agent's thread nothing does: 0, and a loop is priced once the table is in)."""
        self.settings = _settings(config)
        self._price_wait_s = price_wait_s
        self.guards: list[Guard] = build_guards(self.settings)
        # A tool's start attributes are read into a ToolCall only for a guard that judges them there.
        self._read_tools_at_start = any(guard.reads_tool_start for guard in self.guards)
        self._bounds = (max_agents, idle_ttl_s, max_open_spans, clock, on_evict)
        # Paused sessions, oldest first: kept in a forked child (a pause is the user's, not the process's).
        self._paused: dict[str, None] = {}
        self._start_afresh()
        reinit_after_fork(self, "_start_afresh")

    def _start_afresh(self) -> None:
        """Make the maps of agents and open spans, and their locks. Run again in a forked child: only
        the forking thread lives on there, so a lock another thread held at the fork would stay held,
        and the parent's open runs never end in the child (it starts with no agents)."""
        max_agents, idle_ttl_s, max_open_spans, clock, on_evict = self._bounds

        def evicted(what: str) -> Callable[[str, int], None] | None:
            return None if on_evict is None else lambda reason, count: on_evict(what, reason, count)

        self._agents = Agents(self.guards, max_agents=max_agents, idle_ttl_s=idle_ttl_s, clock=clock,
                              on_evict=evicted("agent"))
        # Open spans are keyed by (trace id, span id): a span id is unique only within its trace
        # (copied or replayed data reuses them), and two runs must not share a chain.
        # Agent of every open span inside an agent run (the application's spans too), so that
        # descendants at any depth find their agent. Empty while no run is open.
        self._open: OpenSpans[SpanKey, AgentRef] = OpenSpans(max_open_spans, on_evict=evicted("span"))
        self._stream_trips: OpenSpans[SpanKey, Verdict] = OpenSpans(_MAX_PENDING_STREAM_TRIPS,
                                                                    on_evict=evicted("stream"))
        # Classification of every open agent, model or tool span: each span is classified once. An
        # entry the bound evicts costs nothing but classifying that span again at its end.
        self._classified: OpenSpans[SpanKey, Classification] = OpenSpans(max_open_spans)

    # --- the lifecycle ---------------------------------------------------------------------------
    def start(self, source: SpanSource) -> Started | None:
        """A span started. Returns what the driver acts on, an agent run's or a tool call's start;
        None for any other span (a model span is judged only when it ends)."""
        classification = classify(source.name, source.attributes)
        trace_id = source.trace_id
        if classification is None:
            parent_id = source.parent_span_id if self._open else None
            if parent_id is not None:  # inside an agent run, the spans below this one belong to that run too
                agent = self._open.get((trace_id, parent_id))
                if agent is not None:
                    self._open.put((trace_id, source.span_id), agent)
            return None
        self._classified.put((trace_id, source.span_id), classification)
        kind = classification.kind
        parent_id = source.parent_span_id
        enclosing = self._open.get((trace_id, parent_id)) if parent_id is not None else None
        if kind is SpanKind.AGENT:
            return Started(classification, self._run_started(source, classification, enclosing))
        agent = enclosing if enclosing is not None else trace_agent(trace_id)
        if enclosing is not None:
            self._open.put((trace_id, source.span_id), agent)
        if kind is SpanKind.TOOL:
            return Started(classification, agent, self._tool_started(source, classification, agent))
        return None

    def end(self, source: SpanSource, *, timed_out_ms: float | None = None) -> Judged | None:
        """A span ended. Returns the judged agent, model or tool span; None for any other.
        `timed_out_ms`: the guard's own deadline fired for this tool span (the driver's timer)."""
        span_id = source.span_id
        key = (source.trace_id, span_id)
        # Classified at its start (what the engine acted on then); else now: a span whose marker
        # came after its start, or one handed over at its end alone.
        classification = self._classified.pop(key, None)
        if classification is None:
            classification = classify(source.name, source.attributes)
            if classification is None:
                self._open.pop(key, None)
                return None
        agent = self._open.pop(key, None)
        if agent is None:
            agent = self._agent_by_parent(source.parent_span_id, source.trace_id)
        live_trip = self._stream_trips.pop(key, None)
        if classification.kind is SpanKind.AGENT:
            if agent.scope_run == key:
                self._agents.run_ended(agent)
            return Judged(classification, agent)
        return self._judge(source, classification, agent, live_trip, timed_out_ms)

    def model_usage(self, trace_id: int, usage: ModelUsage) -> None:
        """A model call known only by what it spent (a coding-agent CLI's request log record, in its
        session's trace): counted into the trace's agent's spend; no guard judges it."""
        state = self._agents.state(trace_agent(trace_id))
        with state.lock:
            _spend_of(state).model_ended(usage)

    def report_stream_trip(self, trace_id: int, span_id: int, verdict: Verdict) -> None:
        """A stream watched live tripped inside this open model span: the engine shows the verdict
        when the span ends, and does not judge the cut call as a thinking step."""
        self._stream_trips.put((trace_id, span_id), verdict)

    # --- pausing a session -------------------------------------------------------------------------
    def pause(self, session: str) -> None:
        """Deliver nothing to the agents of `session` (a conversation or session id: `conventions.
        SESSION_ATTRIBUTES`) until `resume`: their spans are still judged, their verdicts marked
        `paused`. At most MAX_PAUSED_SESSIONS are held; past it the oldest pause ends (counted as an
        eviction of `paused`)."""
        paused = self._paused
        paused.pop(session, None)
        paused[session] = None
        if len(paused) > MAX_PAUSED_SESSIONS:
            try:
                del paused[next(iter(paused))]
            except (KeyError, RuntimeError, StopIteration):
                return  # another thread changed it meanwhile: it is bounded again by the next pause
            on_evict = self._bounds[4]
            if on_evict is not None:
                on_evict("paused", "capacity", 1)

    def resume(self, session: str) -> bool:
        """Deliver again to the agents of `session`; whether it was paused."""
        return self._paused.pop(session, False) is None

    def session_paused(self, session: str) -> bool:
        return session in self._paused

    def is_paused(self, agent: AgentRef | None, attributes: Mapping[str, Any]) -> bool:
        """Whether a span of `agent` with these attributes belongs to a paused session (its run's, or
        the one the span names)."""
        paused = self._paused
        if not paused:
            return False
        if agent is not None and agent.session is not None and agent.session in paused:
            return True
        return session_of(attributes) in paused

    @property
    def paused_sessions(self) -> tuple[str, ...]:
        return tuple(self._paused)

    def agent_of(self, trace_id: int, span_id: int) -> AgentRef | None:
        """The agent of an open span inside an agent run, if any."""
        return self._open.get((trace_id, span_id))

    @property
    def stream_guard(self) -> ThinkingLoopGuard | None:
        """The guard whose breaker judges streamed output, when configured."""
        return next((guard for guard in self.guards if isinstance(guard, ThinkingLoopGuard)), None)

    @property
    def tracked_agents(self) -> int:
        return len(self._agents)

    # --- the steps -------------------------------------------------------------------------------
    def _run_started(self, source: SpanSource, classification: Classification, enclosing: AgentRef | None) -> AgentRef:
        run = conventions.read(_as_started(source), classification)
        assert isinstance(run, AgentRun)
        agent = agent_of_run(run, source.trace_id, source.span_id, enclosing)
        self._open.put((source.trace_id, source.span_id), agent)
        state = self._agents.run_started(agent)
        with state.lock:
            for guard, guard_state in zip(self.guards, state.guard_states):
                guard.on_agent_run(guard_state)
        return agent

    def _tool_started(self, source: SpanSource, classification: Classification, agent: AgentRef) -> ToolStart:
        decision = ToolStart()
        span = _as_started(source)
        call = conventions.read(span, classification) if self._read_tools_at_start else _NO_CALL
        assert isinstance(call, ToolCall)
        state = self._agents.state(agent)
        with state.lock:
            upcoming = state.steps + 1  # the step it becomes when it ends (unless another call ends first)
            for guard, guard_state in zip(self.guards, state.guard_states):
                guard.on_tool_start(guard_state, call, span, decision, step=upcoming)
        if self.is_paused(agent, span.attributes):  # a block and a deadline are actions on the agent
            decision.block = decision.budget_ms = None
            decision.no_deadline = True
        return decision

    def _judge(self, source: SpanSource, classification: Classification, agent: AgentRef,
               live_trip: Verdict | None, timed_out_ms: float | None) -> Judged:
        span = source.view()
        record = conventions.read(span, classification, source.parent_view())
        verdicts: list[Verdict] = []
        usage = None
        state = self._agents.state(agent)
        with state.lock:
            state.steps += 1
            step = state.steps
            if isinstance(record, ToolCall):
                if state.spend is not None:
                    record.tokens_before = state.spend.asked_before
                for guard, guard_state in zip(self.guards, state.guard_states):
                    verdicts += guard.on_tool_end(guard_state, record, span, timed_out_ms, step=step)
            elif isinstance(record, ModelCall):
                usage = conventions.model_usage(span, classification)
                if usage.input_tokens is not None or usage.output_tokens is not None:
                    parent = self._classified.get((source.trace_id, source.parent_span_id)) if source.parent_span_id else None
                    _spend_of(state).model_ended(usage, top_level=parent is None or parent.kind is not SpanKind.TOOL)
                facts = _NO_LIVE_FACTS if live_trip is None else ModelFacts(live_trip=live_trip)
                for guard, guard_state in zip(self.guards, state.guard_states):
                    verdicts += guard.on_model_end(guard_state, record, span, facts, step=step)
            loop_steps = self._loop_steps(state, verdicts, record, usage) if verdicts else ()
        if live_trip is not None:  # its evidence is the call it cut, numbered only now
            text = record.text if isinstance(record, ModelCall) else None
            live_trip = replace(live_trip, evidence=(of_model_call(step, span.span_id, text),))
        if self.is_paused(agent, span.attributes):
            verdicts = [replace(verdict, paused=True) for verdict in verdicts]
            if live_trip is not None:
                live_trip = replace(live_trip, paused=True)
        return Judged(classification, agent, span, record, tuple(verdicts), live_trip, loop_steps, step)

    def _loop_steps(self, state: AgentState, verdicts: list[Verdict], record: Record,
                    usage: ModelUsage | None) -> tuple[LoopStep, ...]:
        steps = []
        for verdict in verdicts:
            step = loop_step(_spend_of(state), verdict, record, usage, self._price_wait_s)
            if step is not None:
                steps.append(step)
        return tuple(steps)

    def _agent_by_parent(self, parent_span_id: int | None, trace_id: int) -> AgentRef:
        """The agent of a span the engine did not hold: its parent's, else its trace's."""
        if parent_span_id is not None:
            parent = self._open.get((trace_id, parent_span_id))
            if parent is not None:
                return parent
        return trace_agent(trace_id)


def _spend_of(state: AgentState) -> AgentSpend:
    """The agent's spend, made on first use (under the agent's lock)."""
    spend = state.spend
    if spend is None:
        spend = state.spend = AgentSpend()
    return spend
