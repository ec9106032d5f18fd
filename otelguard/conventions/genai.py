"""OpenTelemetry GenAI semantic conventions: pydantic-ai, contrib openai-v2, and the shape OpenLLMetry shares.

Spans are marked by `gen_ai.operation.name`. Model output is `gen_ai.output.messages`, a JSON list of
messages whose `parts` are `text`, `tool_call` and reasoning (`thinking` from pydantic-ai, `reasoning`
and `reasoning_text` from OpenLLMetry, decoded in `_values.decode_reasoning`). With content capture
off (pydantic-ai `include_content=False`) parts keep their type but lose their content.

pydantic-ai instrumentation version 2 names its spans `agent run` / `running tool` and keeps tool
arguments and results in `tool_arguments` / `tool_response`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..model import semconv as sc
from ..model.records import AgentRun, Classification, Content, ModelCall, ModelUsage, SpanKind, SpanView, ToolCall
from ._values import (
    Output,
    UsageKeys,
    as_name,
    as_text,
    attributes_of,
    error_message,
    first_present,
    load_json,
    model_call,
    model_usage_of,
    read_arguments,
    span_name_of,
    status_of,
)

CONVENTION = "genai"

OPERATION_KINDS: Mapping[str, SpanKind] = {
    sc.OP_INVOKE_AGENT: SpanKind.AGENT,
    sc.OP_EXECUTE_TOOL: SpanKind.TOOL,
    sc.OP_CHAT: SpanKind.MODEL,
    sc.OP_TEXT_COMPLETION: SpanKind.MODEL,
    sc.OP_GENERATE_CONTENT: SpanKind.MODEL,
}

_CLASSIFICATIONS = {kind: Classification(kind, CONVENTION) for kind in SpanKind}

# pydantic-ai version 2 span names, each with the keys that must come with it so that a user's own
# span called "agent run" is not mistaken for one.
_LEGACY_SPANS: Mapping[str, tuple[SpanKind, tuple[str, ...]]] = {
    sc.PYDANTIC_AI_V2_AGENT_SPAN: (SpanKind.AGENT, (sc.PYDANTIC_AI_AGENT_NAME, sc.GEN_AI_AGENT_NAME)),
    sc.PYDANTIC_AI_V2_TOOL_SPAN: (SpanKind.TOOL, (sc.GEN_AI_TOOL_NAME, sc.PYDANTIC_AI_TOOL_ARGUMENTS)),
}
LEGACY_SPAN_NAMES = frozenset(_LEGACY_SPANS)

_REASONING_PARTS = frozenset({sc.PART_THINKING, sc.PART_REASONING, sc.PART_REASONING_TEXT})
_TEXT_PARTS = frozenset({sc.PART_TEXT, sc.PART_REFUSAL})  # a refusal is visible output too

_AGENT_SPAN_PREFIX = "invoke_agent "
_TOOL_SPAN_PREFIX = "execute_tool "


def classification(kind: SpanKind) -> Classification:
    return _CLASSIFICATIONS[kind]


def classify_legacy_name(name: str, attributes: Mapping[str, Any]) -> Classification | None:
    """pydantic-ai version 2 spans recognised by name (older releases set no operation name)."""
    kind, evidence = _LEGACY_SPANS[name]
    if any(attributes.get(key) is not None for key in evidence):
        return _CLASSIFICATIONS[kind]
    return None


# --- agent ----------------------------------------------------------------------------------------


def read_agent(span: SpanView) -> AgentRun:
    attributes = attributes_of(span)
    name = as_name(first_present(attributes, sc.GEN_AI_AGENT_NAME, sc.PYDANTIC_AI_AGENT_NAME))
    return agent_run(attributes, name or _strip_prefix(span_name_of(span), _AGENT_SPAN_PREFIX))


def agent_run(attributes: Mapping[str, Any], name: str | None) -> AgentRun:
    """The run of the agent so named, with the identity GenAI marks (conventions sharing it name it their way)."""
    return AgentRun(name, as_name(attributes.get(sc.GEN_AI_AGENT_ID)), as_name(attributes.get(sc.GEN_AI_CONVERSATION_ID)))


# --- tool -----------------------------------------------------------------------------------------


def read_tool(span: SpanView, parent: SpanView | None = None) -> ToolCall:
    """(`parent` is not read: this convention's tool calls carry their arguments themselves.)"""
    attributes = attributes_of(span)
    arguments, arguments_content = read_arguments(
        first_present(attributes, sc.GEN_AI_TOOL_CALL_ARGUMENTS, sc.PYDANTIC_AI_TOOL_ARGUMENTS)
    )
    return ToolCall(
        name=as_name(attributes.get(sc.GEN_AI_TOOL_NAME)) or _tool_name_from_span(span_name_of(span)),
        arguments=arguments,
        arguments_content=arguments_content,
        result=as_text(first_present(attributes, sc.GEN_AI_TOOL_CALL_RESULT, sc.PYDANTIC_AI_TOOL_RESPONSE)),
        status=status_of(span),
        error_message=error_message(span),
        call_id=as_name(attributes.get(sc.GEN_AI_TOOL_CALL_ID)),
    )


def _tool_name_from_span(name: str) -> str | None:
    # At span start some producers have only the span name: `execute_tool <tool>`.
    return _strip_prefix(name, _TOOL_SPAN_PREFIX) if name.startswith(_TOOL_SPAN_PREFIX) else None


# --- model ----------------------------------------------------------------------------------------


def read_model(span: SpanView) -> ModelCall:
    attributes = attributes_of(span)
    messages = attributes.get(sc.GEN_AI_OUTPUT_MESSAGES)
    return model_call(span, read_output_messages(messages) if messages is not None else None)


# Model name, token counts and finish reasons, as GenAI semconv and its known variants write them.
USAGE_KEYS = UsageKeys(
    model=(sc.GEN_AI_REQUEST_MODEL, sc.GEN_AI_RESPONSE_MODEL),
    output_tokens=(sc.GEN_AI_USAGE_OUTPUT_TOKENS, sc.GEN_AI_USAGE_COMPLETION_TOKENS),
    reasoning_tokens=(sc.GEN_AI_USAGE_DETAILS_REASONING_TOKENS, sc.GEN_AI_USAGE_REASONING_TOKENS,
                      sc.LLM_USAGE_REASONING_TOKENS),
    finish_reasons=(sc.GEN_AI_RESPONSE_FINISH_REASONS,),
    input_tokens=(sc.GEN_AI_USAGE_INPUT_TOKENS, sc.GEN_AI_USAGE_PROMPT_TOKENS),
)


def read_model_usage(span: SpanView) -> ModelUsage:
    return model_usage_of(span, USAGE_KEYS)


def read_output_messages(value: Any) -> Output:
    """Decode `gen_ai.output.messages` (JSON text, or already-decoded messages) into an Output."""
    decoded, content = load_json(value)
    if decoded is None:
        return Output(content=content)
    output = Output(content=content)
    for role, piece in _output_parts(decoded):
        if role is _TEXT:
            output.add_text(piece)
        elif role is _REASONING:
            output.add_reasoning(piece)
        elif role is _TOOL_CALL:
            output.add_tool_call(piece.get("name"), piece.get("arguments"))
        elif role is _CONTENT_DROPPED:
            # Capture off keeps the part's type but drops its content: what it said is unknown.
            # (In JSON cut by a length limit, the last part may have lost its content to the cut.)
            output.note(Content.TRUNCATED if output.content is Content.TRUNCATED else Content.ABSENT)
        else:
            output.note(Content.MALFORMED)
    return output


# What each piece of decoded output is, as `_output_parts` yields it with its value.
_TEXT = "text"  # the visible text: a string part, a text/refusal/untyped part's content, a plain message's content
_REASONING = "reasoning"  # a reasoning part's content
_TOOL_CALL = "tool_call"  # the tool_call part itself
_CONTENT_DROPPED = "content dropped"  # a text or reasoning part without its content
_MALFORMED = "malformed"  # a message or part of the wrong shape
# A part's role by its type: one lookup per part. (An unhashable type raises, as a set test would.)
_PART_ROLES: Mapping[Any, str] = {
    sc.PART_TOOL_CALL: _TOOL_CALL,
    None: _TEXT,
    **dict.fromkeys(_TEXT_PARTS, _TEXT),
    **dict.fromkeys(_REASONING_PARTS, _REASONING),
}


_NO_CONTENT: Any = object()  # a part without a "content" key (its content was not captured)


def _output_parts(decoded: Any) -> Iterator[tuple[str, Any]]:
    """The output's pieces in document order; other parts (tool_call_response, blob, uri, file, ...)
    are not model output we judge and are skipped."""
    # type() before isinstance(): decoded JSON is plain dicts, and the Mapping ABC check is slow.
    for message in decoded if isinstance(decoded, list) else [decoded]:
        if type(message) is not dict and not isinstance(message, Mapping):
            yield _MALFORMED, None
            continue
        parts = message.get("parts")
        if isinstance(parts, (list, tuple)):
            for part in parts:
                if type(part) is not dict:  # (decoded JSON's parts are dicts: one test for them)
                    if isinstance(part, str):
                        yield _TEXT, part
                        continue
                    if not isinstance(part, Mapping):
                        yield _MALFORMED, None
                        continue
                role = _PART_ROLES.get(part.get("type"))
                if role is _TOOL_CALL:
                    yield role, part
                elif role is not None:
                    content = part.get("content", _NO_CONTENT)
                    yield (role, content) if content is not _NO_CONTENT else (_CONTENT_DROPPED, None)
        elif "content" in message:  # a plain {"role", "content"} message, as some producers write
            yield _TEXT, message["content"]
        else:
            yield _MALFORMED, None


def _strip_prefix(name: str, prefix: str) -> str | None:
    if name.startswith(prefix):
        return name[len(prefix):].strip() or None
    return name or None

