"""Verdicts out: metrics and an evaluation event for every verdict, and the control hook for those
that ask for a reaction.

Control hooks run off the span thread (`ControlDispatcher`); the span thread waits at most
`hook_wait_s`. The control of an agent run is the one bound when its span started
(`otelguard.bind_control`), else the one bound where the verdict is reached, else the processor's
default. When several guards react to one span, the agent gets one message (`one_message`); each
verdict is still counted and written on the span. A paused session's verdicts (`Verdict.paused`) are
counted and written alike, and reach no control (counted in `otelguard.control.calls` with outcome
`paused`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..model.actions import Action, strongest
from .control import AgentControl, GuardMessage, bound_control
from ..engine import AgentRef, Judged
from ..engine.bounded import OpenSpans
from ..runtime.forksafe import reinit_after_fork
from ..model.records import Verdict
from .dispatch import ControlDispatcher
from .evaluation_events import EvaluationEvents
from .metrics import GuardMetrics

_INJECTED = frozenset({Action.REMIND, Action.WARN, Action.BLOCK})
_STEERED = frozenset({Action.STEER, Action.BREAK})


def deliver(control: Any, verdict: Verdict) -> Action | None:
    """Call the control method the verdict's action asks for; returns the action, or None."""
    action = verdict.action
    if action in _INJECTED:
        control.inject(GuardMessage.from_verdict(verdict))
    elif action in _STEERED:
        control.steer(GuardMessage.from_verdict(verdict))
    elif action == Action.CANCEL:
        control.cancel(verdict.message or "cancelled", verdict)
    else:
        return None
    return Action(action)


def needs_delivery(verdict: Verdict) -> bool:
    """A verdict that asks the agent for something (a break only with its correction)."""
    if verdict.action in _INJECTED or verdict.action in (Action.STEER, Action.CANCEL):
        return True
    return verdict.action == Action.BREAK and verdict.message is not None


def one_message(verdicts: list[Verdict]) -> Verdict:
    """What the agent gets when several guards react to one step: the strongest action (a cancel
    alone: the turn ends), its text first and the others' after it, each text once."""
    first = strongest(verdicts)
    if len(verdicts) == 1 or first.action == Action.CANCEL:
        return first
    texts: list[str] = []
    for verdict in sorted(verdicts, key=lambda v: v is not first):  # the strongest first, the rest in order
        if verdict.message and verdict.message not in texts:
            texts.append(verdict.message)
    return replace(first, message="\n\n".join(texts) or None)


class AgentRuns:
    """Open agent-run spans that something will ask for: the control bound when each started, and
    the span itself (for verdict events when nothing exports enriched spans). Bounded."""

    def __init__(self, max_runs: int, on_evict: Callable[[str, int], None]):
        self._bounds = (max_runs, on_evict)
        self._start_afresh()
        reinit_after_fork(self, "_start_afresh")

    def _start_afresh(self) -> None:
        """Run again in a forked child: the parent's open runs never end there."""
        max_runs, on_evict = self._bounds
        self._runs: OpenSpans[int, tuple[Any, AgentControl | None]] = OpenSpans(max_runs, on_evict=on_evict)

    def started(self, span_id: int, span: Any, *, keep_span: bool) -> None:
        control = bound_control()
        if control is not None or keep_span:  # otherwise nothing would read it
            self._runs.put(span_id, (span, control))

    def ended(self, span_id: int | None) -> None:
        if span_id is not None:
            self._runs.pop(span_id, None)

    def span(self, agent: AgentRef) -> Any:
        run = self._runs.get(agent.run_span_id) if agent.run_span_id is not None else None
        return run[0] if run is not None else None

    def control(self, agent: AgentRef | None) -> AgentControl | None:
        if agent is not None and agent.run_span_id is not None:
            run = self._runs.get(agent.run_span_id)
            if run is not None and run[1] is not None:
                return run[1]
        return None


class Delivery:
    """Records verdicts in metrics and evaluation events, and delivers reactions to the agent's control."""

    def __init__(self, metrics: GuardMetrics, runs: AgentRuns, dispatcher: ControlDispatcher,
                 default_control: AgentControl | None, evaluations: EvaluationEvents | None = None):
        self.metrics = metrics
        self.runs = runs
        self.dispatcher = dispatcher
        self.default_control = default_control
        # None: no evaluation events.
        self.evaluations = evaluations if evaluations is not None else EvaluationEvents.off()

    def judged(self, judged: Judged, service_name: str | None = None) -> dict[str, Any] | None:
        """A span's verdicts: each counted and emitted as an event; their reactions delivered as one
        message (`one_message`); what a loop spent counted once it counts (`Judged.loop_steps`).
        `service_name`: the sender's, labelling the verdicts (`otelguard serve`). Returns the loop's
        spend so far as span attributes (None when the span is no step of a loop)."""
        span = judged.span
        spent: dict[str, Any] | None = None
        reactions = []
        for verdict in judged.verdicts:
            self.metrics.verdict(verdict, judged.agent.name, service_name)  # (the run-length histogram too)
            step = next((step for step in judged.loop_steps if step.verdict is verdict), None)
            step_spent = None
            if step is not None:
                step_spent = spent = step.spend.attributes()
                if step.new_output_tokens:
                    self.metrics.loop_token_spend(verdict.guard, step.model, step.new_output_tokens)
                if step.new_cost_usd:
                    self.metrics.loop_cost(verdict, judged.agent.name, step.model, step.new_cost_usd)
            if span is not None and self.evaluations.wants(verdict):
                self.evaluations.emit(verdict, span.trace_id, span.span_id, agent_name=judged.agent.name,
                                      response_id=span.attributes.get("gen_ai.response.id"), extra=step_spent)
            if needs_delivery(verdict):
                if verdict.paused:
                    self.metrics.control(verdict.action, "paused")
                else:
                    reactions.append(verdict)
        if reactions:
            self._deliver(judged.agent, one_message(reactions))
        return spent

    def now(self, agent: AgentRef | None, verdict: Verdict, span_context: Any) -> None:
        """A verdict reached outside a span's end (a stream cut mid-call) in the span of `span_context`."""
        self.metrics.verdict(verdict, agent.name if agent else None)
        if self.evaluations.wants(verdict):
            self.evaluations.emit(verdict, span_context.trace_id, span_context.span_id,
                                  agent_name=agent.name if agent else None, trace_flags=span_context.trace_flags)
        if needs_delivery(verdict):
            if verdict.paused:
                self.metrics.control(verdict.action, "paused")
            else:
                self._deliver(agent, verdict)

    def _deliver(self, agent: AgentRef | None, verdict: Verdict) -> None:
        control = self.runs.control(agent) or bound_control() or self.default_control
        if control is None:
            self.metrics.control(verdict.action, "unbound")
            return
        # One queue per agent: a stuck hook holds its own agent's messages only.
        key = agent.key if agent is not None else f"control:{id(control):x}"
        self.dispatcher.call(key, verdict.action, lambda: deliver(control, verdict),
                             cancel=verdict.action == Action.CANCEL)

    def shutdown(self) -> None:
        self.dispatcher.shutdown()
