"""OpenLLMetry (Traceloop): GenAI semconv plus its own marks, encodings and legacy attributes.

Current releases write GenAI semconv, which `genai` reads. What is OpenLLMetry's own:

- markers: `traceloop.span.kind` (`agent`, `tool`; `workflow`, `task` and `handoff` are not agent
  runs, tool calls or model calls), the legacy `llm.request.type`, and span names: the Responses
  wrapper names its span `openai.response` and starts it with no attribute at all;
- reasoning parts written as a JSON string of Responses summary items, or as the Python repr of the
  Agents SDK content object (both decoded in `_values.decode_reasoning`);
- legacy indexed completions `gen_ai.completion.{i}.content|finish_reason|tool_calls.{j}.name|...`
  (releases before `gen_ai.output.messages`);
- `traceloop.entity.{name,input,output}` on spans made by the Traceloop SDK's `@tool`/`@agent`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import semconv as sc
from ..model.records import AgentRun, Classification, Content, ModelCall, ModelUsage, SpanKind, SpanView, ToolCall
from . import genai
from ._values import (
    Output,
    as_name,
    as_text,
    attributes_of,
    group_indexed,
    model_call,
    read_arguments,
    span_name_of,
)

CONVENTION = "openllmetry"

_CLASSIFICATIONS = {kind: Classification(kind, CONVENTION) for kind in SpanKind}
_SPAN_KINDS: Mapping[str, SpanKind] = {sc.TL_KIND_AGENT: SpanKind.AGENT, sc.TL_KIND_TOOL: SpanKind.TOOL}
_REQUEST_TYPES: Mapping[str, SpanKind] = {"chat": SpanKind.MODEL, "completion": SpanKind.MODEL}

# Span names that identify a model span before any attribute is set.
NAMED_MODEL_SPANS = frozenset({"openai.response"})

# Keys only OpenLLMetry writes, telling its GenAI-shaped spans from other producers' (`conventions.classify`).
OWN_MARKER_KEYS = (sc.TRACELOOP_SPAN_KIND, sc.LLM_REQUEST_TYPE, sc.GEN_AI_IS_STREAMING, sc.GEN_AI_OPENAI_API_BASE)
# OpenLLMetry names spans `<vendor>.<operation>` and `<entity>.<kind>`; GenAI semconv uses spaces.
NAME_SUFFIXES = (".chat", ".completion", ".response", ".agent", ".tool")
_AGENT_SUFFIX = ".agent"
_TOOL_SUFFIX = ".tool"


def classify_span_kind(value: Any) -> Classification | None:
    kind = _SPAN_KINDS.get(value) if isinstance(value, str) else None
    return _CLASSIFICATIONS[kind] if kind else None


def classify_request_type(value: Any) -> Classification | None:
    kind = _REQUEST_TYPES.get(value) if isinstance(value, str) else None
    return _CLASSIFICATIONS[kind] if kind else None


def classification(kind: SpanKind) -> Classification:
    return _CLASSIFICATIONS[kind]


def read_agent(span: SpanView) -> AgentRun:
    attributes = attributes_of(span)
    name = as_name(attributes.get(sc.GEN_AI_AGENT_NAME)) or as_name(attributes.get(sc.TRACELOOP_ENTITY_NAME))
    return genai.agent_run(attributes, name or _strip_suffix(span_name_of(span), _AGENT_SUFFIX))


def read_tool(span: SpanView, parent: SpanView | None = None) -> ToolCall:
    """(`parent` is not read: this convention's tool calls carry their arguments themselves.)"""
    """GenAI's reading, then OpenLLMetry's own attributes where GenAI's are missing. GenAI's reader
    returns a new record each time, so it is completed in place."""
    call = genai.read_tool(span)
    attributes = attributes_of(span)
    if not as_name(attributes.get(sc.GEN_AI_TOOL_NAME)):
        call.name = as_name(attributes.get(sc.TRACELOOP_ENTITY_NAME)) or _strip_suffix(span_name_of(span), _TOOL_SUFFIX)
    if call.arguments_content is Content.ABSENT:
        call.arguments, call.arguments_content = read_arguments(attributes.get(sc.TRACELOOP_ENTITY_INPUT))
    if call.result is None:
        call.result = as_text(attributes.get(sc.TRACELOOP_ENTITY_OUTPUT))
    return call


def read_model(span: SpanView) -> ModelCall:
    """`gen_ai.output.messages` as GenAI reads it, else the legacy indexed completions."""
    completions = _legacy_completions(attributes_of(span))
    if completions:
        return model_call(span, _completions_output(completions))
    return genai.read_model(span)


USAGE_KEYS = genai.USAGE_KEYS


def read_model_usage(span: SpanView) -> ModelUsage:
    """GenAI's, the finish reasons taken from the legacy completions when the span has no other."""
    usage = genai.read_model_usage(span)
    if not usage.finish_reasons:
        completions = _legacy_completions(attributes_of(span))
        reasons = (as_name(completions[index].get(sc.COMPLETION_FINISH_REASON)) for index in sorted(completions))
        usage.finish_reasons = tuple(filter(None, reasons))
    return usage


def _legacy_completions(attributes: Mapping[str, Any]) -> dict[int, dict[str, Any]]:
    """Legacy `gen_ai.completion.{i}.*` attributes, by completion index; none when the span has
    `gen_ai.output.messages` (which then holds the output)."""
    if attributes.get(sc.GEN_AI_OUTPUT_MESSAGES) is not None:
        return {}
    return group_indexed(attributes.items(), sc.GEN_AI_COMPLETION_PREFIX)


def _completions_output(completions: dict[int, dict[str, Any]]) -> Output:
    """The legacy completions' output, read per completion in index order."""
    output = Output()
    for index in sorted(completions):
        fields = completions[index]
        output.add_text(fields.get(sc.COMPLETION_CONTENT))
        if fields.get(sc.COMPLETION_REASONING) is not None:
            output.add_reasoning(fields[sc.COMPLETION_REASONING])
        _add_indexed_tool_calls(fields, output)
    return output


def _add_indexed_tool_calls(fields: Mapping[str, Any], output: Output) -> None:
    calls = group_indexed(fields.items(), sc.COMPLETION_TOOL_CALLS_PREFIX)
    for index in sorted(calls):
        output.add_tool_call(calls[index].get("name"), calls[index].get("arguments"))
    function_name = fields.get(sc.COMPLETION_FUNCTION_CALL_NAME)
    if function_name is not None:  # the pre-tools `function_call` shape
        output.add_tool_call(function_name, fields.get(sc.COMPLETION_FUNCTION_CALL_ARGUMENTS))


def _strip_suffix(name: str, suffix: str) -> str | None:
    if name.endswith(suffix):
        return name[: -len(suffix)] or None
    return name or None
