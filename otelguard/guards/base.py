"""The guard contract: a detector, its reaction policy and its messages, configured by one row."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..records import ModelCall, SpanView, ToolCall, Verdict


@dataclass(slots=True)
class ToolStart:
    """What guards decide when a tool span starts (arguments may already be known)."""

    budget_ms: float | None = None
    block: Verdict | None = None


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
    """

    id: str = ""
    reads_tool_start: bool = False  # on_tool_start needs the ToolCall read from the span's start attributes
    acts_on_tool_start: bool = True  # on_tool_start (if overridden) can act under this guard's config
    # The shortest model output on_model_end can judge, in characters of visible text and of
    # reasoning: the live guard leaves output shorter than every guard's floor unread. The base
    # hook judges nothing.
    judged_text_chars: float = math.inf
    judged_reasoning_chars: float = math.inf
    judges_text_only_answers: bool = False  # every answer with visible text and no tool call, however short
    # on_tool_end leaves a fresh state as new (it only ends a streak): the engine skips the hook for an
    # agent whose state for this guard is not made yet, rather than make one for nothing.
    tool_end_keeps_fresh_state: bool = False

    def new_state(self) -> Any:
        """Fresh per-agent state (kept for the agent's lifetime, bounded by the engine's map)."""
        return None

    def on_agent_run(self, state: Any) -> None:
        """A new agent run (a user prompt) started for this agent: reset `state` to what `new_state`
        would make. Called only with a state already made (one made later, or for this very run, is
        fresh already), so it must do nothing else: a hook that counted runs would miss some."""

    def on_tool_start(self, state: Any, call: ToolCall, span: SpanView, decision: ToolStart) -> None:
        """A tool span started; fill `decision` (budget, pre-emptive block)."""

    def on_tool_end(self, state: Any, call: ToolCall, span: SpanView, timed_out_ms: float | None) -> list[Verdict]:
        """A tool span ended. `timed_out_ms` is set when the guard's own deadline fired first."""
        return []

    def on_model_end(self, state: Any, call: ModelCall, span: SpanView, facts: ModelFacts) -> list[Verdict]:
        """A model span ended."""
        return []

    def on_tool_call_asked(self, state: Any) -> None:
        """A model answer asked for a tool call, and the live guard left it unread (under the text-only
        floor only such an answer is): called, instead of on_model_end, on a guard that
        `judges_text_only_answers`, with a state already made. The analyzer reads the answer: its
        on_model_end must do to `state` what this does (a tool span need not follow: a framework may
        reject the call)."""
