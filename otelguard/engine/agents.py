"""Agents: which agent a span belongs to, and each agent's guard states, bounded.

- An agent run with a durable identity (`gen_ai.agent.id`, or a conversation/session id with the
  agent name) keeps its state across runs, in an LRU map with an idle TTL.
- A run without one, inside another agent's run, is keyed by that agent's key plus its name (a
  graph's repeated `agent` steps keep one state).
- A run with neither is keyed by its own span: nothing after the run can reach its state, nor that
  of the agents nested in it, so those go when the run ends (dropped, not evicted). While open they
  are held apart, in a plain map bounded by `max_agents` too (the oldest run evicted first, counted).
- Without any agent span, the trace is the agent.
"""

from __future__ import annotations

import hashlib
import threading
import time
from typing import Any, Callable, NamedTuple

from ..guards import Guard
from .loop_spend import AgentSpend
from ..model.records import AgentRun
from .bounded import BoundedMap, OnEvict, OpenSpans

_MAX_RUNS_WITH_NESTED_AGENTS = 1024  # open run-scoped runs whose nested agents' keys are noted
_MAX_NESTED_NAMES_A_RUN = 256
_MAX_ENDED_RUNS_REMEMBERED = 1024
_MAX_KEY_CHARS = 256  # a longer key keeps its start and a digest of the whole (see `_bounded`)


class AgentRef(NamedTuple):
    """Which agent a span belongs to: the state key and the agent's name for reports and labels.

    `run_span_id`: the agent-run span, for hooks bound to that run. `scope_run_id`: the run span whose
    end ends this agent, when one does (see the module doc). Both are span ids in `trace_id`: span ids
    are unique only within a trace (copied or replayed data reuses them). `session`: the run's
    conversation or session id as its convention reads it, else its enclosing run's (what a pause is
    keyed by).
    """

    key: str
    name: str | None
    run_span_id: int | None = None
    scope_run_id: int | None = None
    trace_id: int | None = None
    session: str | None = None

    @property
    def scope_run(self) -> tuple[int | None, int] | None:
        """The run whose end ends this agent, as (trace id, span id); None when no run's end does."""
        return None if self.scope_run_id is None else (self.trace_id, self.scope_run_id)

    @property
    def run_scoped(self) -> bool:
        """Keyed by its own run span: its state goes when that run ends."""
        return self.scope_run_id is not None and self.scope_run_id == self.run_span_id


def agent_of_run(run: AgentRun, trace_id: int, span_id: int, enclosing: AgentRef | None) -> AgentRef:
    """The agent of a run that starts in span `span_id`, inside `enclosing`'s run if any."""
    durable = run.durable_key
    session = run.conversation_id or (enclosing.session if enclosing is not None else None)
    if durable:
        return AgentRef(_bounded(durable), run.name, span_id, None, trace_id, session)
    if enclosing is not None and run.name:
        return AgentRef(_bounded(f"{enclosing.key}/{run.name}"), run.name, span_id, enclosing.scope_run_id,
                        trace_id, session)
    return AgentRef(f"span:{trace_id:032x}:{span_id:016x}", run.name, span_id, span_id, trace_id, session)


def _bounded(key: str) -> str:
    """The key, or past `_MAX_KEY_CHARS` its start and a digest of it all: a nested agent's key holds
    its enclosing agent's, so without a bound keys would grow with the depth of nesting."""
    if len(key) <= _MAX_KEY_CHARS:
        return key
    digest = hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()
    return f"{key[:_MAX_KEY_CHARS - 34]}…#{digest}"


def trace_agent(trace_id: int) -> AgentRef:
    """Without any agent span, the trace is the agent."""
    return AgentRef(f"trace:{trace_id:032x}", None, trace_id=trace_id)


class AgentState:
    """One agent's lock and its guards' states (one per guard, in the engine's order), made with the
    agent; how many of its model and tool calls were judged (the last one's step number); and what it
    has spent (`loop_spend.AgentSpend`), made when first needed."""

    __slots__ = ("lock", "guard_states", "steps", "spend")

    def __init__(self, guard_states: list[Any]):
        self.lock = threading.Lock()
        self.guard_states = guard_states
        self.steps = 0
        self.spend: AgentSpend | None = None


class Agents:
    """Every agent's state, bounded: see the module doc. Thread-safe."""

    def __init__(self, guards: list[Guard], *, max_agents: int, idle_ttl_s: float | None,
                 clock: Callable[[], float] = time.monotonic, on_evict: OnEvict | None = None):
        self._guards = guards
        self._kept: BoundedMap[str, AgentState] = BoundedMap(max_agents, idle_ttl_s, clock=clock, on_evict=on_evict)
        self._open_runs: OpenSpans[tuple[int | None, int], AgentState] = OpenSpans(max_agents, on_evict=on_evict)
        # Keys of the agents nested in each open run-scoped agent (kept in `_kept`), dropped with that
        # run. Bounded: a key not noted here is not lost, its state only ages out of `_kept` instead.
        self._nested: OpenSpans[tuple[int | None, int], set[str]] = OpenSpans(_MAX_RUNS_WITH_NESTED_AGENTS)
        self._nested_lock = threading.Lock()
        # Recently ended run-scoped runs: a span of one that outlives it must not make its state again.
        self._ended_runs: OpenSpans[tuple[int | None, int], bool] = OpenSpans(_MAX_ENDED_RUNS_REMEMBERED)

    def __len__(self) -> int:
        return len(self._kept) + len(self._open_runs)

    def new_state(self) -> AgentState:
        return AgentState([guard.new_state() for guard in self._guards])

    def run_started(self, agent: AgentRef) -> AgentState:
        """A run of `agent` started. Returns its state, for its guards to reset (a run-scoped agent's
        own run gets a new one)."""
        scope_run = agent.scope_run
        if scope_run is not None and agent.run_scoped:
            state = self.new_state()
            self._open_runs.put(scope_run, state)
            return state
        if scope_run is not None:
            self._note_nested(scope_run, agent.key)
        return self._kept.get_or_create(agent.key, self.new_state)

    def state(self, agent: AgentRef) -> AgentState:
        """The agent's state, made on first use. A run-scoped agent's is its run's while the run is
        open; after the run ended, a span of it outliving it is judged on a fresh state that nothing
        keeps. (One whose open run the bound evicted falls back to the kept map, so its later spans
        keep a state.)"""
        scope_run = agent.scope_run
        if scope_run is not None and agent.run_scoped:
            state = self._open_runs.get(scope_run)
            if state is not None:
                return state
            if scope_run in self._ended_runs:
                return self.new_state()
        return self._kept.get_or_create(agent.key, self.new_state)

    def run_ended(self, agent: AgentRef) -> None:
        """A run-scoped agent's run ended: nothing can reach its state, or its nested agents', any
        more. Dropped, not evicted."""
        scope_run = agent.scope_run
        if scope_run is None:  # not a run-scoped agent: no run's end ends it
            return
        self._ended_runs.put(scope_run, True)
        if self._open_runs.pop(scope_run, None) is None:
            self._kept.pop(agent.key)
        with self._nested_lock:
            nested = self._nested.pop(scope_run, None)
        for key in nested or ():
            self._kept.pop(key)

    def _note_nested(self, scope_run: tuple[int | None, int], key: str) -> None:
        with self._nested_lock:  # two nested agents starting at once must share the run's set
            keys = self._nested.get(scope_run)
            if keys is None:
                keys = set()
                self._nested.put(scope_run, keys)
            if len(keys) < _MAX_NESTED_NAMES_A_RUN:
                keys.add(key)
