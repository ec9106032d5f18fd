"""What the replay found: steps per agent, verdicts, and the order of actions for `--fail-on`.

Memory stays bounded on large inputs: every step with a verdict is kept, but steps without one are
kept only up to `max_quiet_rows` per agent, and only `max_quiet_agents` agents without any verdict
keep a table (the others are counted). Verdicts themselves are all kept: they are the product.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from ..actions import ACTION_ORDER
from ..canonical import arguments_preview
from ..conventions import model_name
from ..engine import AgentRef, Judged
from ..records import (
    Content,
    ModelCall,
    SpanKind,
    SpanView,
    Status,
    ToolCall,
    Verdict,
)

FAIL_ON_CHOICES = tuple(action.value for action in ACTION_ORDER[1:])  # `--fail-on A`: A or stronger

DEFAULT_MAX_QUIET_ROWS = 500
DEFAULT_MAX_QUIET_AGENTS = 200
_PREVIEW_CHARS = 60
_FACT_PREVIEW_CHARS = 500  # arguments kept per listed step (the report is not an archive of the input)
_TOOL, _MODEL = "tool", "model"  # the first item of a step's summary
_NAME = attrgetter("name")


def is_counting(verdict: Verdict) -> bool:
    """A verdict that only counts (a repeat between thresholds, a stall below max_thinking_steps or
    past max_fires): recorded on the span, but not a finding on its own."""
    return verdict.action == "none" and (
        verdict.rule in ("repeat-threshold", "repeat-stop") or verdict.verdict in ("thinking_loop", "no_progress")
    )


@dataclass(slots=True)
class Step:
    """One judged model or tool span of an agent, in replay order. `summary` holds what the report
    says of its record (see `summarize`), put into words only if the step is shown."""

    number: int
    kind: str  # "model" | "tool"
    trace_id: int
    span_id: int
    span_name: str
    convention: str
    summary: tuple[Any, ...]
    verdicts: tuple[Verdict, ...]

    @property
    def what(self) -> str:
        return describe(self.summary)[0]

    def to_json(self) -> dict[str, Any]:
        what, facts = describe(self.summary)
        return {
            "step": self.number,
            "kind": self.kind,
            "trace_id": f"{self.trace_id:032x}",
            "span_id": f"{self.span_id:016x}",
            "span_name": self.span_name,
            "convention": self.convention,
            "what": what,
            **facts,
            "verdicts": [verdict_json(v) for v in self.verdicts],
        }


@dataclass(slots=True)
class AgentSummary:
    key: str
    name: str | None
    runs: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    verdicts: int = 0  # non-counting verdicts
    steps: list[Step] = field(default_factory=list)
    steps_with_verdicts: int = 0
    quiet_rows: int = 0  # listed steps without a verdict
    quiet_steps_not_listed: int = 0
    first_trace_id: int | None = None
    traces: int = 0
    _last_trace: int | None = None

    @property
    def label(self) -> str:
        if self.name:
            return self.name
        if self.key.startswith("trace:"):
            return f"(trace {self.key[6:]}, no agent span)"
        return f"({self.key})"

    @property
    def steps_total(self) -> int:
        return self.model_calls + self.tool_calls

    def to_json(self, *, with_steps: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "key": self.key,
            "name": self.name,
            "runs": self.runs,
            "traces": self.traces,
            "first_trace_id": f"{self.first_trace_id:032x}" if self.first_trace_id is not None else None,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "verdicts": self.verdicts,
        }
        if with_steps:
            out["steps"] = [step.to_json() for step in self.steps]
            out["steps_not_listed"] = self.quiet_steps_not_listed
        return out


@dataclass(slots=True)
class VerdictRow:
    """A verdict with where it belongs."""

    verdict: Verdict
    agent: AgentSummary
    step: Step

    def to_json(self) -> dict[str, Any]:
        return {
            "trace_id": f"{self.step.trace_id:032x}",
            "span_id": f"{self.step.span_id:016x}",
            "span_name": self.step.span_name,
            "agent": self.agent.label,
            "agent_key": self.agent.key,
            "step": self.step.number,
            "kind": self.step.kind,
            **verdict_json(self.verdict),
        }


def verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {
        "guard": verdict.guard,
        "verdict": verdict.verdict,
        "rule": verdict.rule,
        "action": verdict.action,
        "counting": is_counting(verdict),
        "tool": verdict.tool,
        "count": verdict.repeat_count,
        "stalled": verdict.thinking_stalled,
        "stream_chars": verdict.stream_chars,
        "error_code": verdict.error_code,
        "message": verdict.message,
    }


class Findings:
    """Collects judged spans into agents, steps and verdicts (bounded; see the module doc)."""

    def __init__(self, *, max_quiet_rows: int = DEFAULT_MAX_QUIET_ROWS,
                 max_quiet_agents: int = DEFAULT_MAX_QUIET_AGENTS):
        self.max_quiet_rows = max_quiet_rows
        self.max_quiet_agents = max_quiet_agents
        self.agents: dict[str, AgentSummary] = {}
        self.verdicts: list[VerdictRow] = []
        # Agents without any verdict yet, least recently active first: the first to go past the budget.
        self._quiet: OrderedDict[str, None] = OrderedDict()
        self.quiet_agents_not_listed = 0
        self.quiet_agents_not_listed_steps = 0

    def add(self, span: SpanView, judged: Judged) -> None:
        kind = judged.classification.kind
        agent = self._agent(judged.agent)
        if agent.first_trace_id is None:
            agent.first_trace_id = span.trace_id
        if agent._last_trace != span.trace_id:
            agent._last_trace = span.trace_id
            agent.traces += 1
        if kind is SpanKind.AGENT:
            agent.runs += 1
            return
        shown = judged.verdicts
        if judged.stream_verdict is not None:
            shown = [*shown, judged.stream_verdict]
        if kind is SpanKind.MODEL:
            agent.model_calls += 1
        else:
            agent.tool_calls += 1
        if not shown:
            if agent.quiet_rows >= self.max_quiet_rows:
                agent.quiet_steps_not_listed += 1
                return
            agent.quiet_rows += 1
        model = model_name(span, judged.classification) if kind is SpanKind.MODEL else None
        step = Step(agent.steps_total, kind.value, span.trace_id, span.span_id, span.name,
                    judged.classification.convention, summarize(judged.record, model), tuple(shown))
        agent.steps.append(step)
        if shown:
            agent.steps_with_verdicts += 1
            self._quiet.pop(agent.key, None)
        for verdict in shown:
            self.verdicts.append(VerdictRow(verdict, agent, step))
            if not is_counting(verdict):
                agent.verdicts += 1

    def _agent(self, ref: AgentRef) -> AgentSummary:
        agent = self.agents.get(ref.key)
        if agent is None:
            agent = self.agents[ref.key] = AgentSummary(ref.key, ref.name)
            self._quiet[ref.key] = None
            if len(self._quiet) > self.max_quiet_agents:
                self._drop(next(iter(self._quiet)))
        else:
            if agent.name is None and ref.name:
                agent.name = ref.name
            if ref.key in self._quiet:
                self._quiet.move_to_end(ref.key)
        return agent

    def _drop(self, key: str) -> None:
        del self._quiet[key]
        agent = self.agents.pop(key)
        self.quiet_agents_not_listed += 1
        self.quiet_agents_not_listed_steps += agent.steps_total


def summarize(record: Any, model: str | None = None) -> tuple[Any, ...]:
    """What `describe` needs of a record (and, for a model call, the model's name), kept per listed
    step: lengths, not text. Put into words only when shown (on a large input most listed steps are
    not: their agent goes past --max-agents)."""
    if isinstance(record, ToolCall):
        arguments = record.arguments
        if arguments is not None:  # bounded previews, not the arguments (which may be long)
            arguments = (arguments_preview(arguments, _FACT_PREVIEW_CHARS) if arguments else None,
                         arguments_preview(arguments, _PREVIEW_CHARS))
        return (_TOOL, record.name, arguments, record.arguments_content, record.status, record.denied)
    if isinstance(record, ModelCall):
        chunks = record.chunks
        return (_MODEL, model, len(record.reasoning), len(record.text),
                tuple(map(_NAME, record.tool_calls)), record.has_output, record.output_content,
                sum(1 for chunk in chunks if chunk.kind == "text") if chunks else 0, record.chunk_events,
                record.dropped_events, record.status)
    return ()


def describe(summary: tuple[Any, ...]) -> tuple[str, dict[str, Any]]:
    """What a step was (its `summarize`d record), as one short line and as JSON facts."""
    if not summary:
        return "", {}
    if summary[0] is _TOOL:
        _, name, arguments, arguments_content, status, denied = summary
        facts: dict[str, Any] = {
            "tool": name,
            "arguments": arguments[0] if arguments is not None else None,
            "arguments_content": arguments_content.value,
            "status": status.value,
        }
        name = name or "(unnamed tool)"
        if arguments is None:
            what = f"{name} (arguments not captured)"
        else:
            what = f"{name} {arguments[1]}"
        if denied:
            what += " · denied"
            facts["denied"] = True
        elif status == Status.ERROR:
            what += " · error"
        return what, facts
    (_, model, reasoning_chars, text_chars, tool_calls, has_output, output_content, text_chunks, chunk_events,
     dropped_events, status) = summary
    facts = {
        "model": model,
        "reasoning_chars": reasoning_chars,
        "text_chars": text_chars,
        "tool_calls_requested": list(tool_calls),
        "has_output": has_output,
        "output_content": output_content.value,
        "text_chunks": text_chunks,
        "chunk_events": chunk_events,
        "dropped_events": dropped_events,
        "status": status.value,
    }
    if has_output is None:
        what = "output not captured"
    else:
        what = f"text {text_chars:,} ch"
        if reasoning_chars:
            what = f"reasoning {reasoning_chars:,} ch · {what}"
        if tool_calls:
            what += f" · calls {', '.join(sorted({name or '?' for name in tool_calls}))}"
    if text_chunks:
        what += f" · {text_chunks} chunks"
    elif chunk_events:
        what += f" · {chunk_events} textless chunks"
    if dropped_events:
        what += f" · {dropped_events} dropped"
    if output_content is Content.MALFORMED:
        what += " · unreadable"
    if status == Status.ERROR:
        what += " · error"
    return what, facts
