"""Span conventions: recognise agent, model and tool spans, and turn them into records.

The calls, used by the live processor and the offline analyzer alike:

- `classify(name, attributes)`: the kind and convention of a span, or None. A span with none of the
  `MARKER_KEYS` and no known name is none of ours.
- `read(span, classification, parent)` normalises a classified span into an `AgentRun`, `ToolCall`
  or `ModelCall`. It never raises: what it could not read is said by the record's `Content` fields.
- `model_usage(span, classification)`: a model span's model name, token counts and finish reasons,
  read only by whoever reports them (no guard judges them, so `read` leaves them out);
  `model_name(span, classification)` is its model alone.
- `session_of(attributes)`: the agent session a span names, if any; `session_trace_id(cli, session)`:
  the trace a coding-agent CLI's session is judged in, alike from its hooks and its telemetry.

Nothing here imports OpenTelemetry; spans come as `SpanView`s.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from ..model import semconv as sc
from ..model.records import AgentRun, Classification, Content, ModelCall, ModelUsage, SpanKind, SpanView, ToolCall
from . import genai, openinference, openllmetry
from ._values import READ_LIMITS, ReadLimits, model_name_of

__all__ = ["MARKER_KEYS", "NAMED_SPANS", "READ_LIMITS", "SESSION_ATTRIBUTES", "ReadLimits", "classify", "model_name",
           "model_usage", "read", "session_of", "session_trace_id"]

NAMED_SPANS = genai.LEGACY_SPAN_NAMES | openllmetry.NAMED_MODEL_SPANS
# Any of these keys makes a span worth a closer look; a span with none of them (and no known name)
# is none of ours.
MARKER_KEYS = frozenset(
    {sc.OPENINFERENCE_SPAN_KIND, sc.GEN_AI_OPERATION_NAME, sc.TRACELOOP_SPAN_KIND, sc.LLM_REQUEST_TYPE}
)


# The attributes that name an agent session: Claude Code and opencode `session.id`, Gemini CLI and the
# GenAI conventions `gen_ai.conversation.id`, Codex CLI `conversation.id`.
SESSION_ATTRIBUTES = (sc.GEN_AI_CONVERSATION_ID, sc.SESSION_ID, "conversation.id")


def session_of(attributes: Mapping[str, Any]) -> str | None:
    """The first session attribute present as a non-empty string."""
    for key in SESSION_ATTRIBUTES:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def session_trace_id(cli: str, session: str) -> int:
    """A trace id of the CLI's session: the engine keeps one agent per trace without an agent span,
    so every call of a session is judged in that session's chain."""
    digest = hashlib.blake2b(f"{cli}\0{session}".encode("utf-8", "surrogatepass"), digest_size=16).digest()
    return int.from_bytes(digest, "big") or 1


def classify(name: str, attributes: Mapping[str, Any]) -> Classification | None:
    """The kind and convention of a span, or None when it is not an agent, model or tool span."""
    try:
        if MARKER_KEYS.isdisjoint(attributes) and name not in NAMED_SPANS:
            return None
        get = attributes.get
    except (AttributeError, TypeError):  # not a mapping, or an unhashable name: none of ours
        return None
    span_kind = get(sc.OPENINFERENCE_SPAN_KIND)
    if span_kind is not None:
        # OpenInference wins even when it also writes gen_ai.* (OPENINFERENCE_ENABLE_GENAI_SEMCONV).
        return openinference.classify_span_kind(span_kind)
    operation = get(sc.GEN_AI_OPERATION_NAME)
    if operation is not None:
        kind = genai.OPERATION_KINDS.get(operation) if isinstance(operation, str) else None
        if kind is None:
            return None
        # OpenLLMetry's GenAI-shaped spans carry one of its own keys or an OpenLLMetry-style name.
        if (any(get(key) is not None for key in openllmetry.OWN_MARKER_KEYS)
                or (isinstance(name, str) and " " not in name and name.endswith(openllmetry.NAME_SUFFIXES))):
            return openllmetry.classification(kind)
        return genai.classification(kind)
    traceloop_kind = get(sc.TRACELOOP_SPAN_KIND)
    if traceloop_kind is not None:
        return openllmetry.classify_span_kind(traceloop_kind)
    request_type = get(sc.LLM_REQUEST_TYPE)
    if request_type is not None:
        return openllmetry.classify_request_type(request_type)
    if isinstance(name, str) and name in NAMED_SPANS:
        return _classify_name(name, attributes)
    return None


def _classify_name(name: str, attributes: Mapping[str, Any]) -> Classification | None:
    if name in openllmetry.NAMED_MODEL_SPANS:
        return openllmetry.classification(SpanKind.MODEL)
    return genai.classify_legacy_name(name, attributes)


# Each convention's module: its `read`, `read_model_usage` and `USAGE_KEYS`.
_CONVENTIONS = {genai.CONVENTION: genai, openinference.CONVENTION: openinference, openllmetry.CONVENTION: openllmetry}
_reported_failures: set[tuple[str, str, type]] = set()
_MAX_REPORTED_FAILURES = 64  # bounded: a flood of distinct failures is still logged once each, up to this


def read(span: SpanView, classification: Classification, parent: SpanView | None = None) -> AgentRun | ToolCall | ModelCall:
    """Normalise a classified span. `parent` is its parent span when the caller has it (LangChain
    tool arguments live there); without it, a tool call has whatever its own span carries."""
    kind = classification.kind if isinstance(classification.kind, SpanKind) else SpanKind.MODEL
    convention = _CONVENTIONS.get(classification.convention, genai)
    try:
        if kind is SpanKind.AGENT:
            return convention.read_agent(span)
        if kind is SpanKind.TOOL:
            return convention.read_tool(span, parent)
        return convention.read_model(span)
    except Exception as error:  # a reading bug must not cost the agent its span: say so, once
        _report_failure(classification, kind, error)
        return _unreadable(kind)


def model_usage(span: SpanView, classification: Classification) -> ModelUsage:
    """What a model span's call was and spent (model, token counts, finish reasons). Read on demand,
    by the loop-token metric: no guard judges them. Never raises."""
    convention = _CONVENTIONS.get(classification.convention, genai)
    return _contained(convention.read_model_usage, span, classification, ModelUsage())


def model_name(span: SpanView, classification: Classification) -> str | None:
    """`model_usage(...).model` alone (the analyzer's step rows show the model, nothing else of it)."""
    convention = _CONVENTIONS.get(classification.convention, genai)
    return _contained(model_name_of, span, classification, None, convention.USAGE_KEYS)


def _contained(reader: Any, span: SpanView, classification: Classification, unreadable: Any, *args: Any) -> Any:
    """`reader(span, *args)`, or `unreadable` when it raises: as `read`, a reading bug costs this
    answer, said once, not the span."""
    try:
        return reader(span, *args)
    except Exception as error:
        _report_failure(classification, SpanKind.MODEL, error)
        return unreadable


def _report_failure(classification: Classification, kind: SpanKind, error: Exception) -> None:
    key = (str(classification.convention), kind.value, type(error))
    if key not in _reported_failures and len(_reported_failures) < _MAX_REPORTED_FAILURES:
        _reported_failures.add(key)
        import logging  # only on a failure: a CLI hook process starts without it

        logging.getLogger(__name__).warning("otelguard could not read a %s %s span", classification.convention,
                                            kind.value, exc_info=True)


def _unreadable(kind: SpanKind) -> AgentRun | ToolCall | ModelCall:
    if kind is SpanKind.AGENT:
        return AgentRun(name=None)
    if kind is SpanKind.TOOL:
        return ToolCall(name=None, arguments=None, arguments_content=Content.MALFORMED)
    return ModelCall(output_content=Content.MALFORMED)
