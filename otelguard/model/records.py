"""Records: the small, convention-neutral facts the guards judge.

Conventions turn spans into these; detectors and guards read only these. Nothing here imports
OpenTelemetry, so the live processor and the offline analyzer share every layer above.

The views and records made for every agent, model and tool span are slotted dataclasses that are
not frozen; treat them as read-only all the same.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Mapping

from .actions import Action


class SpanKind(StrEnum):
    AGENT = "agent"
    MODEL = "model"
    TOOL = "tool"


class Content(StrEnum):
    """How much of a piece of content the convention could read."""

    OK = "ok"
    ABSENT = "absent"  # not captured (content capture off, attribute missing)
    MALFORMED = "malformed"  # present but unparsable (bad JSON, wrong type)
    TRUNCATED = "truncated"  # present but cut (span limits): read what there is
    # Present but longer than the guard decodes on the agent's thread (`conventions.READ_LIMITS`): not
    # read. Says nothing about whether there was output.
    OVERSIZED = "oversized"


class Status(StrEnum):
    UNSET = "unset"
    OK = "ok"
    ERROR = "error"


@dataclass(slots=True)
class SpanEvent:
    name: str
    attributes: Mapping[str, Any] = field(default_factory=dict)
    time_ns: int = 0


@dataclass(slots=True)
class SpanView:
    """A span as any source gives it: a live SDK span or a line of OTLP JSON. It is a `SpanSource`
    of its own, with no parent at hand (tests and simple drivers hand views to the engine).

    Ids are ints (as the SDK keeps them); `parent_span_id` is None for a root span.
    """

    name: str
    trace_id: int
    span_id: int
    parent_span_id: int | None = None
    attributes: Mapping[str, Any] = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    status: Status = Status.UNSET
    status_message: str | None = None
    scope: str | None = None
    start_ns: int = 0
    end_ns: int | None = None
    dropped_events: int = 0
    dropped_attributes: int = 0

    def view(self) -> SpanView:
        return self

    def parent_view(self) -> SpanView | None:
        return None


@dataclass(slots=True, frozen=True)
class Classification:
    kind: SpanKind
    convention: str  # "genai" | "openinference" | "openllmetry"


@dataclass(slots=True)
class AgentRun:
    """One agent run (a user prompt reaching an agent)."""

    name: str | None
    agent_id: str | None = None  # gen_ai.agent.id where the convention marks one
    conversation_id: str | None = None  # gen_ai.conversation.id / session.id

    @property
    def durable_key(self) -> str | None:
        """Identity that carries state across runs of the same agent, when the convention marks one."""
        if self.agent_id:
            return f"id:{self.agent_id}"
        if self.conversation_id:
            return f"conv:{self.conversation_id}:{self.name or ''}"
        return None


@dataclass(slots=True)
class ToolCall:
    name: str | None
    arguments: str | None  # canonical JSON (or the raw text when it is not JSON)
    arguments_content: Content = Content.ABSENT
    result: str | None = None
    status: Status = Status.UNSET
    error_message: str | None = None
    call_id: str | None = None
    denied: bool = False
    # The agent's input and output tokens before the model call that asked for this call: where the
    # call stands in the agent's spend (`otelguard.engine.loop_spend`). Set by the engine; None while no model
    # call of the agent has reported its usage.
    tokens_before: tuple[int, int] | None = None


@dataclass(slots=True)
class RequestedToolCall:
    """A tool call the model asked for in its output."""

    name: str | None
    arguments: str | None  # canonical


@dataclass(slots=True)
class Chunk:
    text: str
    kind: str = "text"  # "text" | "reasoning"
    # Characters of this kind's stream before this chunk that were not read (on the first chunk read
    # of a kind whose recorded stream is longer than the read limits let judge).
    skipped: int = 0


@dataclass(slots=True)
class ModelCall:
    text: str = ""  # visible output text, parts joined
    reasoning: str = ""
    tool_calls: tuple[RequestedToolCall, ...] = ()
    output_content: Content = Content.ABSENT  # ABSENT: output was not captured
    chunks: tuple[Chunk, ...] = ()  # recorded otelguard.chunk events, in order
    chunk_events: int = 0  # textless chunk events (they only count chunks)
    dropped_events: int = 0
    status: Status = Status.UNSET
    # Characters of reasoning and text read but not judged: past `conventions.READ_LIMITS.judged_chars`
    # each is judged by its last characters.
    unjudged_chars: int = 0

    @property
    def has_output(self) -> bool | None:
        """Any visible text or tool call; None when the output was not captured."""
        text = self.text
        if (text and not text.isspace()) or self.tool_calls:  # (strip() would copy the text to tell)
            return True
        if self.output_content in (Content.ABSENT, Content.MALFORMED, Content.OVERSIZED):
            return None  # no evidence either way
        return False


@dataclass(slots=True)
class ModelUsage:
    """What a model call was and what it spent, for reports and the loop-token and loop-cost metrics. No guard judges
    these, so they are not part of the `ModelCall` every model span makes: whoever needs them reads
    them from the span (`conventions.model_usage`, or `conventions.model_name` for the model alone)."""

    model: str | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    finish_reasons: tuple[str, ...] = ()
    input_tokens: int | None = None  # for the loop cost (otelguard.engine.pricing)


Record = AgentRun | ToolCall | ModelCall


@dataclass(slots=True, frozen=True)
class Evidence:
    """One step that made a verdict's pattern: its number among its agent's judged model and tool
    calls (from 1; 0 when no engine numbered it), its span, its tool, and previews of its arguments
    and outcome (escaped, at most `detectors.evidence.PREVIEW_CHARS` characters each; None where the
    guard did not keep them: see `detectors.evidence`)."""

    step: int
    span_id: int
    tool: str | None = None
    arguments_preview: str | None = None
    outcome_preview: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The entry as `analyze --json`, the decision API and the webhook write it (ids in hex)."""
        return {"step": self.step, "span_id": f"{self.span_id:016x}", "tool": self.tool,
                "arguments_preview": self.arguments_preview, "outcome_preview": self.outcome_preview}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Evidence:
        return cls(int(value["step"]), int(str(value["span_id"]), 16), value.get("tool"),
                   value.get("arguments_preview"), value.get("outcome_preview"))


@dataclass(slots=True, frozen=True)
class Verdict:
    """What a guard decided about one span. `message` is the text sent to the agent, if any.
    `evidence`: the steps that made its pattern, oldest first, the judged step last (at most
    `detectors.evidence.MAX_EVIDENCE`). `paused`: its agent's session is paused, so nothing of it
    reaches the agent (it is still recorded and counted)."""

    guard: str
    verdict: str  # tool_timeout | repeated_tool_call | thinking_loop | repetitive_output | no_progress
    rule: str
    action: Action
    message: str | None = None
    tool: str | None = None
    repeat_count: int | None = None
    thinking_stalled: int | None = None
    stream_chars: int | None = None
    error_code: str | None = None
    # A tool loop's start: the agent's tokens before the model call that asked for the pattern's first
    # repeat (`ToolCall.tokens_before`), where the loop's spend counts from. Not part of what the verdict
    # says (never compared): no-progress finds a pattern after several repeats, the repeat ladder at
    # its first repeat (None: the loop starts at the judged call).
    loop_since: tuple[int, int] | None = field(default=None, compare=False)
    evidence: tuple[Evidence, ...] = ()
    paused: bool = False

    def attributes(self) -> dict[str, Any]:
        """The otelguard.* span attributes of design §5."""
        attrs: dict[str, Any] = {
            "otelguard.verdict": self.verdict,
            "otelguard.guard": self.guard,
            "otelguard.rule": self.rule,
            "otelguard.action": str(self.action),  # the plain string an exporter writes, not the enum
        }
        if self.repeat_count is not None:
            attrs["otelguard.repeat.count"] = self.repeat_count
        if self.thinking_stalled is not None:
            attrs["otelguard.thinking.stalled"] = self.thinking_stalled
        if self.stream_chars is not None:
            attrs["otelguard.stream.chars"] = self.stream_chars
        if self.error_code is not None:
            attrs["otelguard.error.code"] = self.error_code
        if self.evidence:
            attrs["otelguard.evidence.span_ids"] = tuple(f"{entry.span_id:016x}" for entry in self.evidence)
            attrs["otelguard.evidence.steps"] = tuple(entry.step for entry in self.evidence)
        if self.paused:
            attrs["otelguard.paused"] = True
        return attrs

    def to_json(self) -> dict[str, Any]:
        """Every field as JSON takes it (the action as its name, each evidence entry as an object):
        what the decision API, the webhook and a hook's sender carry."""
        out = {name: getattr(self, name) for name in _VERDICT_FIELDS}
        out["action"] = str(self.action)
        out["evidence"] = [entry.to_json() for entry in self.evidence]
        return out

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> Verdict:
        """The verdict `to_json` wrote."""
        known = {name: value[name] for name in _VERDICT_FIELDS if name in value}
        known["action"] = Action.parse(known.get("action"))
        known["evidence"] = tuple(Evidence.from_json(entry) for entry in known.get("evidence") or ())
        return cls(**known)


# What a verdict says (`loop_since`, the engine's bookkeeping for its loop's spend, is not).
_VERDICT_FIELDS = tuple(each.name for each in fields(Verdict) if each.compare)


def is_counting(verdict: Verdict) -> bool:
    """A verdict that only counts (a repeat between thresholds, a stall below max_thinking_steps or
    past max_fires): recorded on the span, but not a finding on its own."""
    return verdict.action == "none" and (
        verdict.rule in ("repeat-threshold", "repeat-stop") or verdict.verdict in ("thinking_loop", "no_progress")
    )
