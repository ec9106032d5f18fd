"""The guard contract: a detector, its reaction policy and its messages, configured by one row."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model.records import ModelCall, SpanView, ToolCall, Verdict


@dataclass(slots=True)
class ToolStart:
    """What guards decide when a tool span starts (arguments may already be known)."""

    budget_ms: float | None = None
    block: Verdict | None = None
    # No deadline for this call, not even one its tool declares (an exempt tool, a paused session).
    no_deadline: bool = False


@dataclass(slots=True, frozen=True)
class ModelFacts:
    """What the live side saw of a model call besides its record (a breaker fed mid-stream). Frozen:
    the engine hands every call without a live trip one shared instance."""

    live_trip: Verdict | None = None


class Guard:
    """Base class. Hooks are optional no-ops.

    The engine calls every hook with the agent's lock held, on the thread that started or ended the
    span (or the analyzer's thread). Hooks must be quick, must not block, must not do I/O and must
    not call out to the agent: they return verdicts, and the caller delivers reactions after
    releasing the lock.

    `step` is the call's number among its agent's judged model and tool calls (at a tool's start, the
    number it gets when it ends; 0 when no engine numbers the calls). Each verdict carries, as its
    `evidence`, the steps that made its pattern (`detectors.evidence`), the judged one last.
    `exempt_tools` (every guard's settings): patterns of tools that never trigger the guard.
    """

    id: str = ""
    # on_tool_start judges the call's name and arguments: the engine reads the ToolCall from the span's
    # start attributes when a guard says so (when none does, on_tool_start gets a call with neither).
    reads_tool_start: bool = False

    def new_state(self) -> Any:
        """Fresh per-agent state, made with the agent (kept for its lifetime, bounded by the engine's map)."""
        return None

    def on_agent_run(self, state: Any) -> None:
        """A new agent run (a user prompt) started for this agent: reset `state` to what `new_state`
        would make (a state made for this very run is fresh already, and resetting it changes nothing)."""

    def on_tool_start(self, state: Any, call: ToolCall, span: SpanView, decision: ToolStart, *,
                      step: int = 0) -> None:
        """A tool span started; fill `decision` (budget, pre-emptive block)."""

    def on_tool_end(self, state: Any, call: ToolCall, span: SpanView, timed_out_ms: float | None, *,
                    step: int = 0) -> list[Verdict]:
        """A tool span ended. `timed_out_ms` is set when the guard's own deadline fired first."""
        return []

    def on_model_end(self, state: Any, call: ModelCall, span: SpanView, facts: ModelFacts, *,
                     step: int = 0) -> list[Verdict]:
        """A model span ended."""
        return []
