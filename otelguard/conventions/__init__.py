"""Span conventions: recognise agent, model and tool spans, and turn them into records.

The calls, used by the live processor and the offline analyzer alike:

- `classify(name, attributes)`: the kind and convention of a span, or None. A span with none of the
  `MARKER_KEYS` and no known name is rejected by one set test; the processor and the analyzer make
  that test themselves (it tells them which spans to look at) and then call `classify_marked`.
- `read(span, classification, parent)` normalises a classified span into an `AgentRun`, `ToolCall`
  or `ModelCall`. It never raises: what it could not read is said by the record's `Content` fields.
  The live guard passes an `OutputFloor` too: model output shorter than any rule judges is then
  measured, not read (`Content.UNREAD`); `output_unread(attributes, classification, floor)` tells
  from the attributes alone whether a model span's output would be, so the guard can skip the read.
- `model_usage(span, classification)`: a model span's model name, token counts and finish reasons,
  read only by whoever reports them (no guard judges them, so `read` leaves them out);
  `model_name(span, classification)` is its model alone.

Nothing here imports OpenTelemetry; spans come as `SpanView`s.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .. import semconv as sc
from ..records import (
    AgentRun,
    Classification,
    Content,
    ModelCall,
    ModelUsage,
    SpanKind,
    SpanView,
    ToolCall,
)
from . import genai, openinference, openllmetry
from ._values import READ_LIMITS, OutputFloor, ReadLimits, model_name_of

__all__ = ["MARKER_KEYS", "NAMED_SPANS", "OutputFloor", "READ_LIMITS", "ReadLimits", "classify", "classify_marked", "looks_at", "model_name",
           "model_usage", "output_unread", "read"]

NAMED_SPANS = genai.LEGACY_SPAN_NAMES | openllmetry.NAMED_MODEL_SPANS
# Any of these keys makes a span worth a closer look; a span with none of them (and no known name)
# is rejected by one C-level set test.
MARKER_KEYS = frozenset(
    {sc.OPENINFERENCE_SPAN_KIND, sc.GEN_AI_OPERATION_NAME, sc.TRACELOOP_SPAN_KIND, sc.LLM_REQUEST_TYPE}
)


def classify(name: str, attributes: Mapping[str, Any]) -> Classification | None:
    """The kind and convention of a span, or None when it is not an agent, model or tool span."""
    try:
        if MARKER_KEYS.isdisjoint(attributes) and name not in NAMED_SPANS:
            return None  # most spans: one C-level set test
        attributes.get  # noqa: B018  (no `get`: not a mapping, so none of ours)
    except (AttributeError, TypeError):
        return None
    return classify_marked(name, attributes)


def looks_at(name: str, attributes: Mapping[str, Any]) -> bool:
    """Whether `classify` looks past its first test: any marker key, or a known name."""
    try:
        return not MARKER_KEYS.isdisjoint(attributes) or name in NAMED_SPANS
    except TypeError:  # not iterable, or an unhashable name: none of ours
        return False


# gen_ai.operation.name -> (GenAI classification, OpenLLMetry classification): the conventions' own
# shared objects, looked up at once.
_OPERATION_CLASSIFICATIONS: Mapping[str, tuple[Classification, Classification]] = {
    operation: (genai.classification(kind), openllmetry.classification(kind))
    for operation, kind in genai.OPERATION_KINDS.items()
}
_OI_SPAN_KIND, _GEN_AI_OPERATION_NAME = sc.OPENINFERENCE_SPAN_KIND, sc.GEN_AI_OPERATION_NAME
_TRACELOOP_SPAN_KIND, _LLM_REQUEST_TYPE = sc.TRACELOOP_SPAN_KIND, sc.LLM_REQUEST_TYPE
_LLM_MARK_1, _LLM_MARK_2, _LLM_MARK_3, _LLM_MARK_4 = openllmetry.OWN_MARKER_KEYS
_LLM_NAME_SUFFIXES = openllmetry.NAME_SUFFIXES


def classify_marked(name: str, attributes: Mapping[str, Any]) -> Classification | None:
    """`classify` for a span known to carry a marker key or a known name, its attributes a mapping
    (the live processor has made that test on every span: this skips repeating it)."""
    get = attributes.get
    span_kind = get(_OI_SPAN_KIND)
    if span_kind is not None:
        # OpenInference wins even when it also writes gen_ai.* (OPENINFERENCE_ENABLE_GENAI_SEMCONV).
        return openinference.classify_span_kind(span_kind)
    operation = get(_GEN_AI_OPERATION_NAME)
    if operation is not None:
        classifications = _OPERATION_CLASSIFICATIONS.get(operation) if isinstance(operation, str) else None
        if classifications is None:
            return None
        # OpenLLMetry's GenAI-shaped spans carry one of its own keys or an OpenLLMetry-style name.
        if (get(_LLM_MARK_1) is None and get(_LLM_MARK_2) is None and get(_LLM_MARK_3) is None
                and get(_LLM_MARK_4) is None
                and not (isinstance(name, str) and " " not in name and name.endswith(_LLM_NAME_SUFFIXES))):
            return classifications[0]
        return classifications[1]
    traceloop_kind = get(_TRACELOOP_SPAN_KIND)
    if traceloop_kind is not None:
        return openllmetry.classify_span_kind(traceloop_kind)
    request_type = get(_LLM_REQUEST_TYPE)
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


def read(
    span: SpanView,
    classification: Classification,
    parent: SpanView | None = None,
    *,
    output_floor: OutputFloor | None = None,
) -> AgentRun | ToolCall | ModelCall:
    """Normalise a classified span. `parent` is its parent span when the caller has it (LangChain
    tool arguments live there); without it, a tool call has whatever its own span carries.
    `output_floor`: model output that cannot reach it is left unread (None reads everything)."""
    kind = classification.kind if isinstance(classification.kind, SpanKind) else SpanKind.MODEL
    convention = _CONVENTIONS.get(classification.convention, genai)
    try:
        return convention.read(span, kind, parent, output_floor)
    except Exception as error:  # a reading bug must not cost the agent its span: say so, once
        _report_failure(classification, kind, error)
        return _unreadable(kind)


def output_unread(attributes: Mapping[str, Any], classification: Classification, floor: OutputFloor) -> bool:
    """Whether `read` of this model span with `floor` would leave its output unread, told from its
    attributes without reading it (False where only reading can tell). Never raises: a failing test
    answers False, and reading then decides."""
    convention = _CONVENTIONS.get(classification.convention, genai)
    try:
        return convention.output_unread(attributes, floor)
    except Exception:
        return False


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
