"""`GuardEngine`: spans in, verdicts out. The one owner of the span lifecycle.

Every driver (the live processor, the offline analyzer, a service) adapts its spans to `SpanSource`
and calls `start(source)` when a span starts and `end(source)` when it ends; nothing else about a
span's life is the driver's business. Per span the engine:

1. lets a span with no agent/model/tool marker through by one set test (inside an open agent run it
   notes the span's agent, so the spans below it find their run);
2. classifies the rest by convention;
3. at start: finds the span's agent (a new run resets that agent's repeat chain) and asks the guards
   about a tool call before it runs (budget, pre-emptive block);
4. at end: reads the span into a record and runs the guards on it, under the agent's lock.

It imports nothing from OpenTelemetry, so every driver reaches the same verdict on the same spans.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Callable, NamedTuple

from .. import conventions
from ..conventions import classify, looks_at
from ..forksafe import reinit_after_fork
from ..guards import Guard, ModelFacts, ThinkingLoopGuard, ToolStart, build_guards
from ..records import (
    AgentRun,
    Classification,
    Content,
    ModelCall,
    Record,
    SpanKind,
    SpanView,
    ToolCall,
    Verdict,
)
from ..settings import GuardSettings
from .agents import UNMADE, AgentRef, Agents, agent_of_run, trace_agent
from .bounded import OpenSpans
from .source import SpanSource

if TYPE_CHECKING:
    from ..config import GuardConfig

DEFAULT_MAX_AGENTS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
DEFAULT_MAX_OPEN_SPANS = 100_000
_MAX_PENDING_STREAM_TRIPS = 1024

_NO_CALL = ToolCall(name=None, arguments=None)
_NO_LIVE_FACTS = ModelFacts()


class Started(NamedTuple):
    """What a driver acts on when an agent run or a tool call starts."""

    classification: Classification
    agent: AgentRef
    tool: ToolStart | None = None  # a tool span's budget and pre-emptive block


class Judged(NamedTuple):
    """One ended agent, model or tool span, with what was read of it and the verdicts.

    `span` and `record` are None where nothing was read: an agent span's end (its run was read at its
    start; no guard judges its end), or model output too short for any guard (live only)."""

    classification: Classification
    agent: AgentRef
    span: SpanView | None = None
    record: Record | None = None
    verdicts: tuple[Verdict, ...] = ()
    # A stream trip reported live (`report_stream_trip`): shown on the span, not reported again.
    stream_verdict: Verdict | None = None

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
    from ..config import GuardConfig

    return GuardConfig.load(config).settings


def _hooked(guards: list[Guard], hook: str) -> tuple[tuple[int, Guard], ...]:
    """(index, guard) of the guards whose class overrides `hook`, in composition order: most guards
    leave most hooks as the base no-op, and every agent, model or tool span would call them."""
    base = getattr(Guard, hook)
    return tuple((index, guard) for index, guard in enumerate(guards) if getattr(type(guard), hook) is not base)


class GuardEngine:
    """Thread-safe: maps are locked only for their own operations; guard hooks run under the agent's lock.

    `full_records` False (the live processor): model output too short for any guard to judge is
    measured, not read (its record marked `Content.UNREAD`, or no record at all when its attributes
    tell). The analyzer reports on the records and keeps the default.
    """

    def __init__(
        self,
        config: GuardConfig | tuple[GuardSettings, ...] | dict | str | None = None,
        *,
        max_agents: int = DEFAULT_MAX_AGENTS,
        idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
        max_open_spans: int = DEFAULT_MAX_OPEN_SPANS,
        clock: Callable[[], float] = time.monotonic,
        on_evict: Callable[[str, str, int], None] | None = None,
        full_records: bool = True,
    ):
        self.settings = _settings(config)
        self.guards: list[Guard] = build_guards(self.settings)
        self._output_floor = None if full_records else conventions.OutputFloor(
            text_chars=min((guard.judged_text_chars for guard in self.guards), default=math.inf),
            reasoning_chars=min((guard.judged_reasoning_chars for guard in self.guards), default=math.inf),
            text_only=any(guard.judges_text_only_answers for guard in self.guards),
        )
        self._on_agent_run = _hooked(self.guards, "on_agent_run")
        # Tool-start hooks that can act under their guard's config (the repeat reminder's only with stop_after).
        self._on_tool_start = tuple((i, g) for i, g in _hooked(self.guards, "on_tool_start") if g.acts_on_tool_start)
        # A tool start takes its agent's state (and lock) only when one of those hooks keeps state.
        self._tool_start_state = any(type(g).new_state is not Guard.new_state for _, g in self._on_tool_start)
        # (index, guard, skip_when_fresh): each guard's tool_end_keeps_fresh_state read once, not a tool span at a time.
        self._on_tool_end = tuple((i, g, g.tool_end_keeps_fresh_state) for i, g in _hooked(self.guards, "on_tool_end"))
        self._on_model_end = _hooked(self.guards, "on_model_end")
        # Under the text-only floor, output left unread asked for a tool call: the guards judging
        # text-only answers are told so (their streak ends, as when the analyzer reads the answer).
        self._on_tool_call_asked = tuple((i, g) for i, g in _hooked(self.guards, "on_tool_call_asked")
                                         if g.judges_text_only_answers) if self._output_floor is not None else ()
        # Reading a tool span at its start costs a JSON parse; only a pre-emptive block needs it.
        self._read_tools_at_start = any(guard.reads_tool_start for guard in self.guards)
        self._bounds = (max_agents, idle_ttl_s, max_open_spans, clock, on_evict)
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
        # span id -> agent of every open span inside an agent run (the application's spans too), so
        # that descendants at any depth find their agent. Empty while no run is open.
        self._open: OpenSpans[int, AgentRef] = OpenSpans(max_open_spans, on_evict=evicted("span"))
        # Read-only for drivers: while it is empty, a span with no marker is none of the engine's
        # business, at its start or its end, and a driver may skip handing it over.
        self.spans_in_runs: Mapping[int, AgentRef] = self._open
        self._stream_trips: OpenSpans[int, Verdict] = OpenSpans(_MAX_PENDING_STREAM_TRIPS, on_evict=evicted("stream"))
        # span id -> classification of every open agent, model or tool span: each span is classified
        # once. An entry the bound evicts costs nothing but classifying that span again at its end.
        self._classified: OpenSpans[int, Classification] = OpenSpans(max_open_spans)

    # --- the lifecycle ---------------------------------------------------------------------------
    def start(self, source: SpanSource) -> Started | None:
        """A span started. Returns what the driver acts on, an agent run's or a tool call's start;
        None for any other span (a model span is judged only when it ends)."""
        classification = classify(source.name, source.attributes)
        if classification is None:
            if self._open:
                self.enter(source.span_id, source.parent_span_id)
            return None
        self._classified.put(source.span_id, classification)
        kind = classification.kind
        parent_id = source.parent_span_id
        enclosing = self._open.get(parent_id) if parent_id is not None else None
        if kind is SpanKind.AGENT:
            return Started(classification, self._run_started(source, classification, enclosing))
        agent = enclosing if enclosing is not None else trace_agent(source.trace_id)
        if enclosing is not None:
            self._open.put(source.span_id, agent)
        if kind is SpanKind.TOOL:
            return Started(classification, agent, self._tool_started(source, classification, agent))
        return None

    def end(self, source: SpanSource, *, timed_out_ms: float | None = None) -> Judged | None:
        """A span ended. Returns the judged agent, model or tool span; None for any other.
        `timed_out_ms`: the guard's own deadline fired for this tool span (the driver's timer)."""
        span_id = source.span_id
        # Classified at its start (what the engine acted on then); else now: a span whose marker
        # came after its start, or one handed over at its end alone.
        classification = self._classified.pop(span_id, None) if self._classified else None
        if classification is None:
            classification = classify(source.name, source.attributes)
            if classification is None:
                if self._open:
                    self._open.pop(span_id, None)
                return None
        agent = self._open.pop(span_id, None)
        if agent is None:
            agent = self._agent_by_parent(source.parent_span_id, source.trace_id)
        live_trip = self._stream_trips.pop(span_id, None) if self._stream_trips else None
        kind = classification.kind
        if kind is SpanKind.AGENT:
            if agent.scope_run_id == span_id:
                self._agents.run_ended(agent)
            return Judged(classification, agent)
        if (kind is SpanKind.MODEL and live_trip is None and self._output_floor is not None and not source.has_events
                and conventions.output_unread(source.attributes, classification, self._output_floor)):
            self._unread(agent)  # output under every guard's floor, told from its attributes: none judges it
            return Judged(classification, agent)
        return self._judge(source, classification, agent, live_trip, timed_out_ms)

    # A driver that has made the marker test itself (`looks_at`) may hand the engine a span without
    # one by its ids alone: what `start` and `end` do for it, without a source to build (the live
    # processor, for every span of the application inside an agent run: the inside-a-run bar).
    def enter(self, span_id: int, parent_span_id: int | None) -> None:
        """A span with no agent, model or tool marker started: inside an agent run, the spans below
        it belong to that run too."""
        opened = self._open
        if opened and parent_span_id is not None:
            agent = opened.get(parent_span_id)
            if agent is not None:
                opened.put(span_id, agent)

    def leave(self, span_id: int) -> None:
        """A span with no marker ended."""
        if self._open:
            self._open.pop(span_id, None)

    def looks_at(self, source: SpanSource) -> bool:
        """Whether the span carries an agent, model or tool marker or a known name: `start` and `end`
        let any other through at once. (A driver holding spans may skip such a span that no other
        span descends from.)"""
        return looks_at(source.name, source.attributes)

    def report_stream_trip(self, span_id: int, verdict: Verdict) -> None:
        """A stream watched live tripped inside this open model span: the engine shows the verdict
        when the span ends, and does not judge the cut call as a thinking step."""
        self._stream_trips.put(span_id, verdict)

    def agent_of(self, span_id: int) -> AgentRef | None:
        """The agent of an open span inside an agent run, if any."""
        return self._open.get(span_id)

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
        self._open.put(source.span_id, agent)
        state = self._agents.run_started(agent)
        if state is not None and self._on_agent_run:
            with state.lock:
                for index, guard in self._on_agent_run:
                    guard_state = state.guard_states[index]
                    if guard_state is not UNMADE:  # one not made yet is fresh already
                        guard.on_agent_run(guard_state)
        return agent

    def _tool_started(self, source: SpanSource, classification: Classification, agent: AgentRef) -> ToolStart:
        decision = ToolStart()
        if not self._on_tool_start:
            return decision
        span = _as_started(source)
        call = conventions.read(span, classification) if self._read_tools_at_start else _NO_CALL
        assert isinstance(call, ToolCall)
        if not self._tool_start_state:
            for _, guard in self._on_tool_start:
                guard.on_tool_start(None, call, span, decision)
            return decision
        state = self._agents.state(agent)
        with state.lock:
            for index, guard in self._on_tool_start:
                guard.on_tool_start(state.of(index, guard), call, span, decision)
        return decision

    def _judge(self, source: SpanSource, classification: Classification, agent: AgentRef,
               live_trip: Verdict | None, timed_out_ms: float | None) -> Judged:
        span = source.view()
        record = conventions.read(span, classification, source.parent_view(), output_floor=self._output_floor)
        if (live_trip is None and type(record) is ModelCall and record.output_content is Content.UNREAD
                and not record.chunks):
            self._unread(agent)  # output under every guard's floor, left unread: none judges it
            return Judged(classification, agent, span, record)
        verdicts: list[Verdict] = []
        state = self._agents.state(agent)
        with state.lock:
            if type(record) is ToolCall:
                for index, guard, skip_when_fresh in self._on_tool_end:
                    if skip_when_fresh and state.guard_states[index] is UNMADE:
                        continue
                    verdicts += guard.on_tool_end(state.of(index, guard), record, span, timed_out_ms)
            elif type(record) is ModelCall:
                facts = _NO_LIVE_FACTS if live_trip is None else ModelFacts(live_trip=live_trip)
                for index, guard in self._on_model_end:
                    verdicts += guard.on_model_end(state.of(index, guard), record, span, facts)
        return Judged(classification, agent, span, record, tuple(verdicts), live_trip)

    def _unread(self, agent: AgentRef) -> None:
        """A model span's output was left unread. Under the text-only floor it asked for a tool call:
        the guards judging text-only answers learn of it (whether a tool span follows or not)."""
        state = self._agents.seen(agent)
        if state is None:
            return  # (a state not made yet has no streak to end)
        for index, guard in self._on_tool_call_asked:
            guard_state = state.guard_states[index]
            if guard_state is not UNMADE:
                with state.lock:
                    guard.on_tool_call_asked(guard_state)

    def _agent_by_parent(self, parent_span_id: int | None, trace_id: int) -> AgentRef:
        """The agent of a span the engine did not hold: its parent's, else its trace's."""
        if parent_span_id is not None:
            parent = self._open.get(parent_span_id)
            if parent is not None:
                return parent
        return trace_agent(trace_id)

