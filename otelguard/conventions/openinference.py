"""OpenInference (Arize): the OpenAI Agents SDK, LangChain/LangGraph and openai client instrumentations.

Spans are marked by `openinference.span.kind`: `AGENT`, `LLM`, `TOOL` (a `CHAIN` is none of ours).
Model output is flattened into `llm.output_messages.{i}.message.*`: `content`, or
`contents.{k}.message_content.{type,text}` (type `text` or `reasoning`), and
`tool_calls.{j}.tool_call.function.{name,arguments}`. Chat Completions reasoning
(`reasoning_content`) is only in the raw provider payload `output.value`.

LangChain puts a tool's raw input (`Paris`) on the TOOL span and the arguments object on the parent
`tools` CHAIN span (`input.value` -> `tool_call.args`), so tool arguments need the parent span.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import semconv as sc
from ..model.records import AgentRun, Classification, Content, ModelCall, ModelUsage, SpanKind, SpanView, ToolCall
from . import genai
from ._values import (
    Output,
    UsageKeys,
    as_name,
    as_text,
    attributes_of,
    error_message,
    first_present,
    group_indexed,
    iter_mappings,
    load_json,
    model_call,
    model_usage_of,
    read_arguments,
    span_name_of,
    status_of,
)

CONVENTION = "openinference"

_KINDS: Mapping[str, SpanKind] = {
    sc.OI_KIND_AGENT: SpanKind.AGENT,
    sc.OI_KIND_LLM: SpanKind.MODEL,
    sc.OI_KIND_TOOL: SpanKind.TOOL,
}
_CLASSIFICATIONS = {kind: Classification(kind, CONVENTION) for kind in SpanKind}

_TOOL_CALL_ID = "tool_call.id"
_LANGCHAIN_TOOL_CALL = "tool_call"


def classify_span_kind(value: Any) -> Classification | None:
    if not isinstance(value, str):
        return None
    kind = _KINDS.get(value) or _KINDS.get(value.upper())
    return _CLASSIFICATIONS[kind] if kind else None


# --- agent ----------------------------------------------------------------------------------------


def read_agent(span: SpanView) -> AgentRun:
    attributes = attributes_of(span)
    return AgentRun(
        name=as_name(first_present(attributes, sc.AGENT_NAME, sc.GEN_AI_AGENT_NAME)) or span_name_of(span) or None,
        agent_id=as_name(attributes.get(sc.GEN_AI_AGENT_ID)),
        conversation_id=as_name(first_present(attributes, sc.SESSION_ID, sc.GEN_AI_CONVERSATION_ID)),
    )


# --- tool -----------------------------------------------------------------------------------------


def read_tool(span: SpanView, parent: SpanView | None = None) -> ToolCall:
    attributes = attributes_of(span)
    # The OpenAI Agents SDK names the span after the tool from the start; tool.name comes at the end.
    name = as_name(first_present(attributes, sc.TOOL_NAME, sc.GEN_AI_TOOL_NAME)) or span_name_of(span) or None
    parent_call = _langchain_tool_call(parent, name)
    if parent_call is not None:
        arguments, arguments_content = read_arguments(parent_call.get("args"))
        parent_call_id = as_name(parent_call.get("id"))
    else:
        arguments, arguments_content = read_arguments(attributes.get(sc.INPUT_VALUE))
        parent_call_id = None
    return ToolCall(
        name=name,
        arguments=arguments,
        arguments_content=arguments_content,
        result=as_text(attributes.get(sc.OUTPUT_VALUE)),
        status=status_of(span),
        error_message=error_message(span),
        call_id=as_name(attributes.get(_TOOL_CALL_ID)) or parent_call_id,
    )


def _langchain_tool_call(parent: SpanView | None, tool_name: str | None) -> Mapping[str, Any] | None:
    """The `tool_call` LangGraph's `tools` node received, when it is this tool's call."""
    if parent is None:
        return None
    attributes = attributes_of(parent)
    if attributes.get(sc.OPENINFERENCE_SPAN_KIND) not in (None, sc.OI_KIND_CHAIN):
        return None
    decoded = _json_object(attributes.get(sc.INPUT_VALUE))
    call = decoded.get(_LANGCHAIN_TOOL_CALL) if decoded is not None else None
    if not isinstance(call, Mapping) or "args" not in call:
        return None
    called = as_name(call.get("name"))
    return call if called is None or tool_name is None or called == tool_name else None


def _json_object(value: Any) -> Mapping[str, Any] | None:
    """A JSON object attribute, decoded; anything else (plain text, lists, garbage) is None."""
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return None
    decoded, _ = load_json(value)
    return decoded if isinstance(decoded, Mapping) else None


# --- model ----------------------------------------------------------------------------------------


def read_model(span: SpanView) -> ModelCall:
    return model_call(span, _read_output(attributes_of(span)))


USAGE_KEYS = UsageKeys(
    model=(sc.LLM_MODEL_NAME, sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL),
    output_tokens=(sc.LLM_TOKEN_COUNT_COMPLETION, sc.GEN_AI_USAGE_OUTPUT_TOKENS),
    reasoning_tokens=(sc.LLM_TOKEN_COUNT_COMPLETION_REASONING, sc.GEN_AI_USAGE_DETAILS_REASONING_TOKENS,
                      sc.GEN_AI_USAGE_REASONING_TOKENS),
    finish_reasons=(sc.GEN_AI_RESPONSE_FINISH_REASONS, sc.LLM_FINISH_REASON),
    input_tokens=(sc.LLM_TOKEN_COUNT_PROMPT, sc.GEN_AI_USAGE_INPUT_TOKENS),
)


def read_model_usage(span: SpanView) -> ModelUsage:
    return model_usage_of(span, USAGE_KEYS)


def _read_output(attributes: Mapping[str, Any]) -> Output | None:
    """Structured output first; reasoning falls back to GenAI parts, then to the raw payload."""
    output = _flattened_output(attributes)
    genai_messages = attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)  # set with OPENINFERENCE_ENABLE_GENAI_SEMCONV
    if genai_messages is not None:
        genai_output = genai.read_output_messages(genai_messages)
        if output is None:
            output = genai_output
        elif not output.reasoning:
            output.reasoning.extend(genai_output.reasoning)
    if output is None or not output.reasoning:
        reasoning = _raw_reasoning(attributes.get(sc.OUTPUT_VALUE))
        if reasoning:
            # Reasoning read from the raw payload says nothing about text or tool calls.
            output = output if output is not None else Output(content=Content.ABSENT)
            output.reasoning.extend(reasoning)
    return output


def _flattened_output(attributes: Mapping[str, Any]) -> Output | None:
    messages = group_indexed(attributes.items(), sc.LLM_OUTPUT_MESSAGES_PREFIX)
    if not messages:
        return None
    output = Output()
    for index in sorted(messages):
        _read_flattened_message(messages[index], output)
    return output


def _read_flattened_message(fields: Mapping[str, Any], output: Output) -> None:
    contents = group_indexed(fields.items(), sc.MESSAGE_CONTENTS_PREFIX)
    has_text_content = False
    for index in sorted(contents):
        content_type = contents[index].get(sc.MESSAGE_CONTENT_TYPE)
        text = contents[index].get(sc.MESSAGE_CONTENT_TEXT)
        if content_type == sc.CONTENT_TYPE_REASONING:
            output.add_reasoning(text)
        elif content_type in (sc.CONTENT_TYPE_TEXT, None) and text is not None:
            has_text_content = True
            output.add_text(text)
    if not has_text_content:
        # `message.content` repeats the text contents where both are set: read it only alone.
        output.add_text(fields.get(sc.MESSAGE_CONTENT))
    calls = group_indexed(fields.items(), sc.MESSAGE_TOOL_CALLS_PREFIX)
    for index in sorted(calls):
        output.add_tool_call(
            calls[index].get(sc.TOOL_CALL_FUNCTION_NAME), calls[index].get(sc.TOOL_CALL_FUNCTION_ARGUMENTS)
        )


def _raw_reasoning(value: Any) -> list[str]:
    """Reasoning in the raw provider payload: `reasoning_content` (Chat Completions, LangChain
    `additional_kwargs`) or Responses `reasoning` items."""
    if value is None or (isinstance(value, str) and not value.lstrip().startswith(("{", "["))):
        return []
    decoded, _ = load_json(value)
    texts: list[str] = []
    for node in iter_mappings(decoded):
        reasoning = node.get(sc.RAW_REASONING_CONTENT)
        if isinstance(reasoning, str) and reasoning:
            texts.append(reasoning)
        if node.get("type") == sc.CONTENT_TYPE_REASONING:
            texts.extend(_responses_reasoning_item(node))
    return texts


def _responses_reasoning_item(item: Mapping[str, Any]) -> list[str]:
    """A Responses reasoning item: its full `content` texts, else its `summary` texts."""
    for key in ("content", "summary"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts = [part["text"] for part in parts if isinstance(part, Mapping) and isinstance(part.get("text"), str)]
            if texts:
                return ["\n".join(texts)]
    return []
