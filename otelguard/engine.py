"""The guard engine: spans in, verdicts out. Shared by the live processor and the offline analyzer.

It knows which agent each span belongs to, keeps each agent's guard state in a bounded map, and runs
the guards in composition order. It imports nothing from OpenTelemetry: the processor feeds it
`SpanView`s built from live spans, the analyzer `SpanView`s read from OTLP JSON, so both reach the
same verdict on the same spans.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from . import conventions
from .config import GuardConfig
from .forksafe import reinit_after_fork
from .guards import Guard, ModelFacts, ThinkingLoopGuard, ToolStart, build_guards
from .records import (
    AGENT_KIND,
    CONTENT_UNREAD,
    MODEL_KIND,
    TOOL_KIND,
    AgentRun,
    Classification,
    ModelCall,
    Record,
    SpanView,
    ToolCall,
    Verdict,
)
from .state import BoundedMap, OpenSpans

DEFAULT_MAX_AGENTS = 10_000
DEFAULT_IDLE_TTL_S = 3600.0
DEFAULT_MAX_OPEN_SPANS = 100_000
_MAX_RUNS_WITH_NESTED_AGENTS = 1024  # open run-scoped runs whose nested agents' keys are noted
_MAX_NESTED_NAMES_A_RUN = 256


class AgentRef:
    """Which agent a span belongs to: the state key and the agent's name for reports and labels.
    Read-only all the same (a plain slots class: every agent run makes one).

    `run_span_id`: the open agent-run span, for hooks bound to that run. `scope_run_id`: the run span
    whose end ends this agent, when one does: its own run, keyed by that span (no durable identity,
    no enclosing agent), or the run of such an agent it is nested in (keyed by that run's key plus
    its name). Nothing can reach the state after that run: it goes with it.
    """

    __slots__ = ("_key", "_trace_id", "name", "run_span_id", "scope_run_id")

    def __init__(self, key: str | None, name: str | None, run_span_id: int | None = None,
                 scope_run_id: int | None = None, trace_id: int = 0):
        self._key = key  # None: a run-scoped agent's, written out when first asked for
        self._trace_id = trace_id
        self.name = name
        self.run_span_id = run_span_id
        self.scope_run_id = scope_run_id

    @property
    def key(self) -> str:
        """The state key. A run-scoped agent's (`span:<trace id>:<run span id>`) is formatted on
        first use: live, such a state is found by its run span, and most runs never need the text."""
        key = self._key
        if key is None:
            key = self._key = f"span:{self._trace_id:032x}:{self.run_span_id:016x}"
        return key

    def __repr__(self) -> str:
        return (f"AgentRef(key={self.key!r}, name={self.name!r}, run_span_id={self.run_span_id!r}, "
                f"scope_run_id={self.scope_run_id!r})")


_NO_CALL = ToolCall(name=None, arguments=None)
_NO_LIVE_FACTS = ModelFacts()  # what most model calls had besides their record: nothing (shared, read-only)


def _agent_ref(run: AgentRun, span: SpanView, parent: AgentRef | None) -> AgentRef:
    """The agent of a run, keyed by its durable identity; else, inside another agent's run, that
    agent's key plus the name (so a graph's repeated `agent` steps or a re-run sub-agent keep one
    state, for as long as the enclosing agent's); else the run span itself (scoped to this run)."""
    durable = run.durable_key
    if durable:
        return AgentRef(durable, run.name, span.span_id)
    if parent is not None and run.name:
        return AgentRef(f"{parent.key}/{run.name}", run.name, span.span_id, parent.scope_run_id)
    return AgentRef(None, run.name, span.span_id, span.span_id, span.trace_id)


def _trace_agent(trace_id: int) -> AgentRef:
    """Without any agent span, the trace is the agent."""
    return AgentRef(f"trace:{trace_id:032x}", None)


def _implementing(guards: list[Guard], hook: str) -> tuple[tuple[int, Guard], ...]:
    """(index, guard) of the guards whose class overrides `hook`, in composition order."""
    base = getattr(Guard, hook)
    return tuple((index, guard) for index, guard in enumerate(guards) if getattr(type(guard), hook) is not base)


def _keeps_state(guard: Guard) -> bool:
    """Whether the guard keeps per-agent state (overrides `new_state`)."""
    return type(guard).new_state is not Guard.new_state


UNMADE: Any = object()  # a guard's state for an agent, not made yet


class AgentState:
    """One agent's lock and its guards' states. A guard's state is made when one of its hooks first
    needs it: most agents never need most of them (a thinking detector, say, for short output)."""

    __slots__ = ("lock", "guard_states")

    def __init__(self, lock: threading.Lock, guard_states: list[Any]):
        self.lock = lock
        self.guard_states = guard_states  # UNMADE where not made yet (None for guards that keep none)

    def of(self, index: int, guard: Guard) -> Any:
        """The state of `guard` (the engine's guard `index`), made now if it was not yet."""
        state = self.guard_states[index]
        if state is UNMADE:
            state = self.guard_states[index] = guard.new_state()
        return state


@dataclass(slots=True)
class Started:
    """What the engine decided when a span started."""

    classification: Classification
    agent: AgentRef
    tool: ToolStart | None = None


@dataclass(slots=True)
class Judged:
    """One ended agent, model or tool span with its record and verdicts."""

    classification: Classification
    agent: AgentRef
    record: Record | None  # None for an agent span: its run was read when it started, and no guard judges its end
    verdicts: list[Verdict] = field(default_factory=list)
    # A mid-stream trip already recorded and delivered live: shown on the span, not reported again.
    stream_verdict: Verdict | None = None


class GuardEngine:
    """Thread-safe. Maps are locked only for their own operations; guard hooks run under the agent's lock."""

    def __init__(
        self,
        config: GuardConfig | dict | str | None = None,
        *,
        max_agents: int = DEFAULT_MAX_AGENTS,
        idle_ttl_s: float | None = DEFAULT_IDLE_TTL_S,
        max_open_spans: int = DEFAULT_MAX_OPEN_SPANS,
        clock: Callable[[], float] = time.monotonic,
        on_evict: Callable[[str, str, int], None] | None = None,
        full_records: bool = True,
    ):
        """`full_records` False (the live processor): model output too short for any guard to judge
        is left unread, its record marked `Content.UNREAD`. The analyzer reports on the records and
        keeps the default."""
        self.config = GuardConfig.load(config)
        self.guards: list[Guard] = build_guards(self.config)
        self._output_floor = None if full_records else conventions.OutputFloor(
            text_chars=min((guard.judged_text_chars for guard in self.guards), default=math.inf),
            reasoning_chars=min((guard.judged_reasoning_chars for guard in self.guards), default=math.inf),
        )
        # Per hook, the guards that implement it, with their index into an agent's guard states:
        # most guards leave most hooks as the base no-op, and every span would call them.
        # A new agent's guard states: UNMADE for each guard that keeps one (made on first use), None for the rest.
        self._unmade_states = tuple(UNMADE if _keeps_state(guard) else None for guard in self.guards)
        self._on_agent_run = _implementing(self.guards, "on_agent_run")
        # Tool-start hooks that act under their guard's config (the repeat reminder's blocks only with
        # stop_after); when none of them keeps agent state, a tool start looks none up and takes no lock.
        self._on_tool_start = tuple((index, guard) for index, guard in _implementing(self.guards, "on_tool_start")
                                    if guard.acts_on_tool_start)
        self._tool_start_state = any(_keeps_state(guard) for _, guard in self._on_tool_start)
        self._on_tool_end = _implementing(self.guards, "on_tool_end")
        self._on_model_end = _implementing(self.guards, "on_model_end")
        # Reading a tool span at start costs a JSON parse; only a pre-emptive block needs the record.
        self._read_tools_at_start = any(guard.reads_tool_start for guard in self.guards)
        self.thinking: ThinkingLoopGuard | None = next(
            (g for g in self.guards if isinstance(g, ThinkingLoopGuard)), None
        )
        self._bounds = (max_agents, idle_ttl_s, max_open_spans, clock, on_evict)
        self._start_afresh()
        reinit_after_fork(self, "_start_afresh")

    def _start_afresh(self) -> None:
        """Make the maps of agents and open spans, and their locks. Run again in a forked child: only
        the forking thread lives on there, so a lock another thread held at the fork would stay held,
        and the parent's open runs never end in the child (it starts with no agents)."""
        max_agents, idle_ttl_s, max_open_spans, clock, on_evict = self._bounds

        def evicted(what: str) -> Callable[[str, int], None] | None:
            if on_evict is None:
                return None
            return lambda reason, count: on_evict(what, reason, count)

        self._agents: BoundedMap[str, AgentState] = BoundedMap(
            max_agents, idle_ttl_s, clock=clock, on_evict=evicted("agent")
        )
        # The state of each open run-scoped agent, by run span id. Nothing outlives the run, so no
        # LRU order, idle clock or lock: a dict, bounded like the agents (oldest run evicted, counted).
        self._run_states: OpenSpans[int, AgentState] = OpenSpans(max_agents, on_evict=evicted("agent"))
        # Keys of the agents nested in each open run-scoped agent (kept in the agents map), dropped
        # with that run. Bounded (runs, names a run): a key not noted here is not lost, its state
        # only ages out of the agents map instead of going with the run. Rare, so simply locked.
        self._nested_keys: OpenSpans[int, set[str]] = OpenSpans(_MAX_RUNS_WITH_NESTED_AGENTS)
        self._nested_lock = threading.Lock()
        self._nested_items = self._nested_keys.items  # its dict, for a lock-free emptiness test at each run's end
        # span id -> agent of every open span inside an agent run, so descendants find their agent.
        self._open: OpenSpans[int, AgentRef] = OpenSpans(max_open_spans, on_evict=evicted("span"))
        self._live_trips: BoundedMap[int, Verdict] = BoundedMap(1024, clock=clock, on_evict=evicted("stream"))
        # Bound once for the per-span paths: `_open.pop` without the method call, its dict for an
        # emptiness test (`OpenSpans.__len__` is a Python call), the agent-state lookup.
        self._pop_open = self._open.items.pop
        self._open_items = self._open.items
        self._state_of = self._agents.get_or_create
        self._run_state_of = self._run_states.get

    # --- span lifecycle ------------------------------------------------------------------------
    @property
    def open_span_ids(self) -> dict[int, AgentRef]:
        """Open spans inside agent runs, live; empty when none. The processor's hot path reads it and
        pops ended spans from it (`forget` without the call); inserts go through `adopt_span`. (The
        processor tracks a span that is none of ours only once a span starts under it, or at its
        start when its parent is one it tracks.)"""
        return self._open.items

    @property
    def adopt_span(self) -> Callable[[int, AgentRef], None]:
        """`adopt_span(span_id, agent)`: an open span that is none of ours, inside an agent run (what
        `inherit` does once the caller has found the agent)."""
        return self._open.put

    def inherit(self, span_id: int, parent_span_id: int | None) -> None:
        """An uninteresting span started: if it sits inside an agent run, its descendants belong there too.

        The hot path for every span that is not ours: one dict lookup, maybe one insert.
        """
        if parent_span_id is not None and self._open_items:
            parent = self._open.get(parent_span_id)
            if parent is not None:
                self._open.put(span_id, parent)  # e.g. a CHAIN/turn span between agent and model

    def forget(self, span_id: int) -> None:
        """An uninteresting span ended."""
        if self._open_items:
            self._pop_open(span_id, None)

    def model_started(self, span_id: int, parent_span_id: int | None) -> None:
        """A model span started. Nothing is judged before it ends: it only joins its agent's run, as
        `inherit` has any span do, so the spans inside it find their agent. (`span_started` does this
        for a model span; a caller that has not built the span's view can call this instead.)"""
        self.inherit(span_id, parent_span_id)

    def span_started(self, span: SpanView, classification: Classification | None = None) -> Started | None:
        """A span started. Pass `classification` when the caller already classified the span."""
        if classification is None:
            classification = conventions.classify(span.name, span.attributes)
            if classification is None:
                self.inherit(span.span_id, span.parent_span_id)
                return None
        if classification.kind is MODEL_KIND:
            self.model_started(span.span_id, span.parent_span_id)
            return Started(classification, self._agent_of(span.parent_span_id, span.trace_id))
        parent = self._open.get(span.parent_span_id) if span.parent_span_id is not None else None
        if classification.kind is AGENT_KIND:
            run = conventions.read(span, classification)
            assert isinstance(run, AgentRun)
            agent = _agent_ref(run, span, parent)
            self._open.put(span.span_id, agent)
            if agent.scope_run_id == span.span_id:  # its own run: a new state, fresh already
                self._run_states.put(span.span_id, self._new_state())
                return Started(classification, agent)
            if agent.scope_run_id is not None:
                self._note_nested(agent)
            state = self._state_of(agent.key, self._new_state)
            with state.lock:
                for index, guard in self._on_agent_run:
                    guard_state = state.guard_states[index]
                    if guard_state is not UNMADE:  # one not made yet is fresh already
                        guard.on_agent_run(guard_state)
            return Started(classification, agent)
        agent = parent or _trace_agent(span.trace_id)
        if parent is not None:
            self._open.put(span.span_id, agent)
        started = Started(classification, agent)
        if classification.kind is TOOL_KIND:
            call = conventions.read(span, classification) if self._read_tools_at_start else _NO_CALL
            assert isinstance(call, ToolCall)
            decision = ToolStart()
            if self._tool_start_state:
                state = self._state(agent)
                with state.lock:
                    for index, guard in self._on_tool_start:
                        guard.on_tool_start(state.of(index, guard), call, span, decision)
            else:  # no hook here keeps agent state: nothing to look up or lock
                for _, guard in self._on_tool_start:
                    guard.on_tool_start(None, call, span, decision)
            started.tool = decision
        return started

    def span_ended(
        self,
        span: SpanView,
        *,
        parent: SpanView | None = None,
        timed_out_ms: float | None = None,
        classification: Classification | None = None,
    ) -> Judged | None:
        """Judge an ended span. `timed_out_ms`: the guard's own deadline fired for this tool span.
        An agent span's end is `run_ended`'s (`Judged.record` is None: its run was read when it
        started, and no guard judges the end)."""
        if classification is None:
            classification = conventions.classify(span.name, span.attributes)
            if classification is None:
                self._pop_open(span.span_id, None)
                return None
        if classification.kind is AGENT_KIND:
            return Judged(classification, self.run_ended(span.span_id, span.parent_span_id, span.trace_id), None)
        agent = self._ended_agent(span.span_id, span.parent_span_id, span.trace_id)
        live_trip = self._live_trips.pop(span.span_id)
        record = conventions.read(span, classification, parent, output_floor=self._output_floor)
        judged = Judged(classification, agent, record)
        if (live_trip is None and type(record) is ModelCall and record.output_content is CONTENT_UNREAD
                and not record.chunks):
            self._seen_unjudged(agent)  # output under every guard's floor, so left unread: none judges it
            return judged
        state = self._state(agent)
        with state.lock:
            if isinstance(record, ToolCall):
                for index, guard in self._on_tool_end:
                    verdicts = guard.on_tool_end(state.of(index, guard), record, span, timed_out_ms)
                    if verdicts:  # (most calls: none, and no list to extend)
                        judged.verdicts.extend(verdicts)
            elif isinstance(record, ModelCall):
                facts = _NO_LIVE_FACTS if live_trip is None else ModelFacts(live_trip=live_trip)
                judged.stream_verdict = live_trip
                for index, guard in self._on_model_end:
                    verdicts = guard.on_model_end(state.of(index, guard), record, span, facts)
                    if verdicts:
                        judged.verdicts.extend(verdicts)
        return judged

    def run_ended(self, span_id: int, parent_span_id: int | None, trace_id: int) -> AgentRef:
        """An agent span ended (its ids are all that is read of it); returns its agent. A run-scoped
        agent's state, and its nested agents', go with its run."""
        agent = self._ended_agent(span_id, parent_span_id, trace_id)
        self._live_trips.pop(span_id)  # (none is recorded for an agent span: kept clean all the same)
        if agent.scope_run_id == span_id:
            self._run_ended(agent)
        return agent

    def model_ended_unread(self, span_id: int, parent_span_id: int | None, trace_id: int,
                           attributes: Mapping[str, Any], classification: Classification) -> bool:
        """A model span with no events ended (so no chunks). When its output would be left unread
        (`conventions.output_unread`) and no live stream trip waits for it, do what `span_ended`
        does for such a span, without its view or record, and return True: no guard judges it.
        Else do nothing and return False: the caller calls `span_ended`."""
        floor = self._output_floor
        if floor is None or span_id in self._live_trips or not conventions.output_unread(attributes, classification,
                                                                                          floor):
            return False
        self._seen_unjudged(self._ended_agent(span_id, parent_span_id, trace_id))
        return True

    def record_stream_trip(self, span_id: int, verdict: Verdict) -> None:
        """A breaker fed live (watch_stream) tripped inside this open span: show it at span end."""
        self._live_trips.put(span_id, verdict)

    def agent_of(self, span_id: int) -> AgentRef | None:
        """The agent of an open span this engine tracks, if any. (The live processor does not track a
        span of the application directly under a tracked one: `GuardSpanProcessor.agent_of` answers
        for those.)"""
        return self._open.get(span_id)

    # --- agents ----------------------------------------------------------------------------------
    def _state(self, agent: AgentRef) -> AgentState:
        """The agent's state: an open run-scoped agent's from the open runs; any other's (and one
        whose run the bound evicted) from the agents map, made on first use."""
        if agent.scope_run_id is not None and agent.scope_run_id == agent.run_span_id:
            state = self._run_state_of(agent.run_span_id)
            if state is not None:
                return state
        return self._state_of(agent.key, self._new_state)

    def _seen_unjudged(self, agent: AgentRef) -> None:
        """A span of this agent ended that no guard judges: a kept agent is still seen active (its LRU
        place and idle time), but no state is made for it."""
        if agent.scope_run_id is None:
            self._agents.get(agent.key)

    def _note_nested(self, agent: AgentRef) -> None:
        """An agent nested in a run-scoped one: its state goes when that run ends."""
        with self._nested_lock:  # two nested agents starting at once must share the run's set
            keys = self._nested_keys.get(agent.scope_run_id)
            if keys is None:
                keys = set()
                self._nested_keys.put(agent.scope_run_id, keys)
            if len(keys) < _MAX_NESTED_NAMES_A_RUN:
                keys.add(agent.key)

    def _run_ended(self, agent: AgentRef) -> None:
        """A run-scoped agent's run ended: nothing can reach its state, or its nested agents', any
        more. Dropped, not evicted. (Had the bound evicted the run's state meanwhile, the run's later
        spans kept theirs in the agents map.)"""
        run_span_id = agent.scope_run_id
        if self._run_states.pop(run_span_id) is None:
            self._agents.pop(agent.key)
        if not self._nested_items:  # no run has nested agents (the usual case): no lock to take
            return
        with self._nested_lock:
            nested = self._nested_keys.pop(run_span_id)
        for key in nested or ():
            self._agents.pop(key)

    def _new_state(self) -> AgentState:
        return AgentState(threading.Lock(), list(self._unmade_states))

    def _ended_agent(self, span_id: int, parent_span_id: int | None, trace_id: int) -> AgentRef:
        """The agent of a span that ended, dropped from the open spans (its parent's or its trace's
        when it was not held)."""
        agent = self._pop_open(span_id, None)
        return agent if agent is not None else self._agent_of(parent_span_id, trace_id)

    def _agent_of(self, parent_span_id: int | None, trace_id: int) -> AgentRef:
        """The agent of a span by its parent: the parent's agent, else its trace's."""
        if parent_span_id is not None:
            parent = self._open.get(parent_span_id)
            if parent is not None:
                return parent
        return _trace_agent(trace_id)

    @property
    def tracked_agents(self) -> int:
        return len(self._agents) + len(self._run_states)
