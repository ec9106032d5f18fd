"""Conventions on hand-made spans: odd, partial, broken and hostile input never raises and says what it lost."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis_support import examples

from otelguard.model import semconv as sc
from otelguard.conventions import classify, model_name, model_usage, read
from otelguard.model.records import (
    AgentRun,
    Chunk,
    Classification,
    Content,
    ModelCall,
    ModelUsage,
    RequestedToolCall,
    SpanEvent,
    SpanKind,
    SpanView,
    Status,
    ToolCall,
)

GENAI_MODEL = Classification(SpanKind.MODEL, "genai")
GENAI_TOOL = Classification(SpanKind.TOOL, "genai")
OLLM_MODEL = Classification(SpanKind.MODEL, "openllmetry")
OI_MODEL = Classification(SpanKind.MODEL, "openinference")
OI_TOOL = Classification(SpanKind.TOOL, "openinference")
ALL_CLASSIFICATIONS = [
    Classification(kind, convention)
    for kind in SpanKind
    for convention in ("genai", "openinference", "openllmetry")
]


def span(name: str = "span", attributes: dict[str, Any] | None = None, **fields: Any) -> SpanView:
    return SpanView(name=name, trace_id=1, span_id=2, attributes=attributes or {}, **fields)


def output_messages(*parts: dict[str, Any]) -> str:
    return json.dumps([{"role": "assistant", "parts": list(parts)}])


@pytest.fixture(autouse=True)
def no_reading_failures(caplog):
    """Every test here also proves that no read fell back to the last-resort error path."""
    with caplog.at_level(logging.WARNING, logger="otelguard.conventions"):
        yield
    assert not [r for r in caplog.records if r.name.startswith("otelguard.conventions")]


# --- classify -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, attributes",
    [
        ("manual agent loop", {}),
        ("manual tool get_weather", {}),
        ("GET /weather", {"http.request.method": "GET"}),
        ("turn", {sc.OPENINFERENCE_SPAN_KIND: "CHAIN"}),
        ("Agent Workflow", {sc.TRACELOOP_SPAN_KIND: "workflow", sc.GEN_AI_PROVIDER_NAME: "openai"}),
        ("a → b.handoff", {sc.TRACELOOP_SPAN_KIND: "handoff", sc.GEN_AI_OPERATION_NAME: "handoff"}),
        ("embeddings x", {sc.GEN_AI_OPERATION_NAME: "embeddings"}),
        ("agent run", {}),  # a user's own span with pydantic-ai's old name, but none of its keys
    ],
)
def test_classify_ignores_spans_that_are_not_ours(name, attributes):
    """Spans without agent, model or tool marks, OpenInference CHAINs and workflows classify as None."""
    assert classify(name, attributes) is None


@pytest.mark.parametrize(
    "attributes",
    [
        {sc.GEN_AI_OPERATION_NAME: ["chat"]},
        {sc.GEN_AI_OPERATION_NAME: 7},
        {sc.OPENINFERENCE_SPAN_KIND: {"kind": "LLM"}},
        {sc.TRACELOOP_SPAN_KIND: ("tool",)},
        {sc.LLM_REQUEST_TYPE: b"chat"},
    ],
)
def test_classify_rejects_marker_values_of_the_wrong_type(attributes):
    """A marker whose value is not a string (even an unhashable one) classifies as None."""
    assert classify("x", attributes) is None


def test_classify_accepts_a_non_mapping_without_raising():
    """Attributes that are not a mapping classify as None."""
    assert classify("x", None) is None  # type: ignore[arg-type]
    assert classify(None, {}) is None  # type: ignore[arg-type]


# What each instrumentation has set when the SDK calls on_start (read from their sources).
AGENT, MODEL, TOOL = SpanKind.AGENT, SpanKind.MODEL, SpanKind.TOOL
OLLM_TOOL_START = {sc.TRACELOOP_SPAN_KIND: "tool", sc.GEN_AI_OPERATION_NAME: "execute_tool", sc.GEN_AI_TOOL_NAME: "t"}


@pytest.mark.parametrize(
    "name, start_attributes, expected",
    [
        # pydantic-ai: everything needed is passed to start_span, tool arguments included.
        ("invoke_agent a", {sc.GEN_AI_OPERATION_NAME: "invoke_agent"}, (AGENT, "genai")),
        ("chat m", {sc.GEN_AI_OPERATION_NAME: "chat"}, (MODEL, "genai")),
        ("running tool", {sc.GEN_AI_TOOL_NAME: "t", sc.PYDANTIC_AI_TOOL_ARGUMENTS: "{}"}, (TOOL, "genai")),
        ("agent run", {sc.PYDANTIC_AI_AGENT_NAME: "a", "model_name": "m"}, (AGENT, "genai")),
        # OpenInference OpenAI Agents: only the span kind (and llm.system) at start.
        ("get_weather", {sc.OPENINFERENCE_SPAN_KIND: "TOOL"}, (TOOL, "openinference")),
        ("response", {sc.OPENINFERENCE_SPAN_KIND: "LLM", "llm.system": "openai"}, (MODEL, "openinference")),
        # OpenInference LangChain: no attribute at all until the run ends.
        ("get_weather", {}, None),
        # OpenLLMetry Agents: traceloop kind + operation name; tool arguments only at end.
        ("t.tool", OLLM_TOOL_START, (TOOL, "openllmetry")),
        ("openai.response", {sc.GEN_AI_OPERATION_NAME: "chat", sc.GEN_AI_PROVIDER_NAME: "openai"}, (MODEL, "openllmetry")),
        # OpenLLMetry openai: chat spans start with the operation name; Responses spans with nothing.
        ("openai.chat", {sc.GEN_AI_OPERATION_NAME: "chat"}, (MODEL, "openllmetry")),
        ("openai.response", {}, (MODEL, "openllmetry")),
        # Legacy OpenLLMetry marked model spans with llm.request.type.
        ("openai.chat", {sc.LLM_REQUEST_TYPE: "chat"}, (MODEL, "openllmetry")),
    ],
)
def test_classify_at_span_start(name, start_attributes, expected):
    """Each instrumentation's span-start attributes classify as they will at span end, where they can."""
    classification = classify(name, start_attributes)
    assert (classification and (classification.kind, classification.convention)) == expected


def test_openinference_wins_over_genai_attributes():
    """A span with both OpenInference and gen_ai.* marks (GENAI_SEMCONV mode) is OpenInference."""
    attributes = {sc.OPENINFERENCE_SPAN_KIND: "LLM", sc.GEN_AI_OPERATION_NAME: "chat"}
    assert classify("ChatCompletion", attributes) == OI_MODEL


# --- read never raises ----------------------------------------------------------------------------


@pytest.mark.parametrize("classification", ALL_CLASSIFICATIONS)
def test_read_of_an_empty_span_says_nothing_was_captured(classification):
    """A span with no attributes reads as an empty record whose content is ABSENT."""
    record = read(span(), classification)
    if isinstance(record, ModelCall):
        assert record.output_content is Content.ABSENT and record.has_output is None
    elif isinstance(record, ToolCall):
        assert record.arguments is None and record.arguments_content is Content.ABSENT
    else:
        assert isinstance(record, AgentRun)


@pytest.mark.parametrize("classification", ALL_CLASSIFICATIONS)
def test_read_accepts_a_span_whose_fields_have_wrong_types(classification):
    """A span whose attributes, events and status are of the wrong types still reads."""
    broken = SpanView(
        name=None, trace_id=1, span_id=2, attributes=["x"], events="e", status="bad", dropped_events="3"  # type: ignore[arg-type]
    )
    read(broken, classification)


JSON_ATTRIBUTE_KEYS = [
    sc.GEN_AI_OUTPUT_MESSAGES,
    sc.GEN_AI_TOOL_CALL_ARGUMENTS,
    sc.PYDANTIC_AI_TOOL_ARGUMENTS,
    sc.INPUT_VALUE,
    sc.OUTPUT_VALUE,
    sc.GEN_AI_RESPONSE_FINISH_REASONS,
    sc.GEN_AI_USAGE_OUTPUT_TOKENS,
    sc.LLM_TOKEN_COUNT_COMPLETION,
    "llm.output_messages.0.message.content",
    "llm.output_messages.0.message.contents.0.message_content.type",
    "llm.output_messages.0.message.contents.0.message_content.text",
    "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments",
    "gen_ai.completion.0.content",
    "gen_ai.completion.0.tool_calls.0.arguments",
]
ANY_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text() | st.binary(),
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.sampled_from(["type", "content", "parts", "text", "name", "arguments"]), inner, max_size=4),
    max_leaves=12,
)
JSONISH_TEXT = ANY_VALUE.map(lambda value: json.dumps(value, default=repr))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    classification=st.sampled_from(ALL_CLASSIFICATIONS),
    attributes=st.dictionaries(st.sampled_from(JSON_ATTRIBUTE_KEYS), ANY_VALUE | JSONISH_TEXT, max_size=5),
    cut=st.integers(min_value=0, max_value=60),
)
def test_read_never_raises_on_arbitrary_attribute_values(classification, attributes, cut):
    """Any mix of values and types (and JSON cut anywhere) under the keys conventions read is read without raising."""
    cut_attributes = {k: (v[:cut] if isinstance(v, str) else v) for k, v in attributes.items()}
    for attrs in (attributes, cut_attributes):
        parent = span(attributes={sc.INPUT_VALUE: attrs.get(sc.OUTPUT_VALUE)})
        read(span(attributes=attrs), classification, parent)


# --- model output ---------------------------------------------------------------------------------


def test_malformed_output_json_is_marked_malformed():
    """Output messages that are not JSON read as MALFORMED with no text."""
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: "[{not json"}), GENAI_MODEL)
    assert call.output_content is Content.MALFORMED and call.text == ""


def test_truncated_output_json_keeps_what_was_read():
    """Output messages cut mid-string by a length limit read as TRUNCATED with the text up to the cut."""
    full = output_messages({"type": "thinking", "content": "a" * 100}, {"type": "text", "content": "It is sunny"})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: full[: full.index("sunny") + 2]}), GENAI_MODEL)
    assert call.output_content is Content.TRUNCATED
    assert call.reasoning == "a" * 100 and call.text == "It is su"


def test_output_json_cut_after_a_key_is_still_salvaged():
    """JSON cut right after an object key (`"content":`) still yields the parts before it."""
    full = output_messages({"type": "text", "content": "done"}, {"type": "thinking", "content": "more"})
    cut = full[: full.rindex('"content"') + len('"content":')]
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: cut}), GENAI_MODEL)
    assert call.output_content is Content.TRUNCATED and call.text == "done"


def test_output_of_a_wrong_type_is_malformed():
    """An output-messages attribute that is a number reads as MALFORMED."""
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: 42}), GENAI_MODEL)
    assert call.output_content is Content.MALFORMED


def test_already_decoded_output_messages_are_read():
    """Output messages already decoded from OTLP (a list of dicts) read like their JSON text."""
    messages = [{"role": "assistant", "parts": [{"type": "text", "content": "hi"}]}]
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: messages}), GENAI_MODEL)
    assert call.text == "hi" and call.output_content is Content.OK


def test_output_messages_as_a_tuple_of_json_strings_are_read():
    """A sequence attribute holding one JSON message per element reads element by element."""
    message = json.dumps({"role": "assistant", "parts": [{"type": "text", "content": "hi"}]})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: (message,)}), GENAI_MODEL)
    assert call.text == "hi"


def test_content_less_parts_mean_output_not_captured():
    """Parts that keep their type but not their content (capture off) read as ABSENT output."""
    value = output_messages({"type": "thinking"}, {"type": "text"})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), GENAI_MODEL)
    assert call.output_content is Content.ABSENT and call.has_output is None


def test_content_less_tool_call_still_counts_as_output():
    """A requested tool call without captured arguments still makes has_output true."""
    value = output_messages({"type": "thinking"}, {"type": "tool_call", "id": "c", "name": "get_weather"})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), GENAI_MODEL)
    assert call.has_output is True and call.tool_calls[0].name == "get_weather" and call.tool_calls[0].arguments is None


def test_failed_call_without_output_has_no_output():
    """A model span with ERROR status and no output attribute has output False, not unknown."""
    call = read(span(status=Status.ERROR, status_message="boom"), GENAI_MODEL)
    assert call.output_content is Content.OK and call.has_output is False


def test_token_counts_are_read_liberally():
    """Token counts given as decimal strings are read; booleans and garbage are not."""
    attributes = {
        sc.GEN_AI_USAGE_OUTPUT_TOKENS: "20",
        sc.GEN_AI_USAGE_DETAILS_REASONING_TOKENS: True,
        sc.GEN_AI_USAGE_REASONING_TOKENS: "12",
    }
    usage = model_usage(span(attributes=attributes), GENAI_MODEL)
    assert usage.output_tokens == 20 and usage.reasoning_tokens == 12
    assert model_usage(span(attributes={sc.GEN_AI_USAGE_OUTPUT_TOKENS: "many"}), GENAI_MODEL).output_tokens is None


def test_finish_reasons_from_a_string_or_a_json_array():
    """Finish reasons given as one string or as a JSON array string read as a tuple."""
    assert model_usage(span(attributes={sc.GEN_AI_RESPONSE_FINISH_REASONS: "stop"}), GENAI_MODEL).finish_reasons == (
        "stop",)
    as_json = model_usage(span(attributes={sc.GEN_AI_RESPONSE_FINISH_REASONS: '["stop", "length"]'}), GENAI_MODEL)
    assert as_json.finish_reasons == ("stop", "length")


def test_deeply_nested_json_does_not_raise():
    """JSON nested far beyond the recursion limit reads as MALFORMED or TRUNCATED, never raises."""
    nested = "[" * 100_000 + "]" * 100_000
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: nested, sc.OUTPUT_VALUE: nested}), OI_MODEL)
    assert isinstance(call, ModelCall)
    read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: nested}), GENAI_MODEL)


# --- reasoning encodings --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "content, expected",
    [
        ("Content(text='I need the weather.', type='reasoning_text')", "I need the weather."),
        ("Content(text='it\\'s \"quoted\"\\nand split', type='reasoning_text')", "it's \"quoted\"\nand split"),
        ('Content(text="double quoted", type="reasoning_text")', "double quoted"),
        ("[Content(text='one', type='reasoning_text'), Content(text='two', type='reasoning_text')]", "one\ntwo"),
        ("Content(text='caf\\xe9 \\u2603', type='reasoning_text')", "café ☃"),
    ],
)
def test_openllmetry_reasoning_repr_is_unwrapped(content, expected):
    """OpenLLMetry's Python-repr reasoning parts read as the plain text inside them."""
    value = output_messages({"type": "reasoning_text", "content": content})
    call = read(span("openai.response", {sc.GEN_AI_OUTPUT_MESSAGES: value}), OLLM_MODEL)
    assert call.reasoning == expected and call.output_content is Content.OK


def test_truncated_reasoning_repr_keeps_the_text_up_to_the_cut():
    """A repr cut by a length limit reads as the text before the cut, marked TRUNCATED."""
    value = output_messages({"type": "reasoning_text", "content": "Content(text='I need the wea"})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), OLLM_MODEL)
    assert call.reasoning == "I need the wea" and call.output_content is Content.TRUNCATED


def test_reasoning_repr_is_parsed_never_evaluated():
    """A repr whose text is an expression is not evaluated: it is kept verbatim and marked MALFORMED."""
    hostile = "Content(text=__import__('os').getcwd(), type='reasoning_text')"
    value = output_messages({"type": "reasoning_text", "content": hostile})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), OLLM_MODEL)
    assert call.reasoning == hostile and call.output_content is Content.MALFORMED


def test_openllmetry_responses_summary_json_is_unwrapped():
    """A reasoning part holding a JSON string of Responses summary items reads as their texts."""
    summary = json.dumps([{"text": "first", "type": "summary_text"}, {"text": "second", "type": "summary_text"}])
    value = output_messages({"type": "reasoning", "content": summary}, {"type": "text", "content": "ok"})
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), OLLM_MODEL)
    assert call.reasoning == "first\nsecond" and call.text == "ok"


def test_plain_reasoning_text_is_left_alone():
    """Reasoning that merely starts with a bracket but is not a summary list is kept as written."""
    value = output_messages({"type": "reasoning", "content": "[draft] think again"})
    assert read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), OLLM_MODEL).reasoning == "[draft] think again"


def test_legacy_openllmetry_indexed_completions_are_read():
    """Pre-semconv OpenLLMetry `gen_ai.completion.{i}.*` attributes read as text and tool calls."""
    attributes = {
        sc.LLM_REQUEST_TYPE: "chat",
        "gen_ai.completion.0.role": "assistant",
        "gen_ai.completion.0.content": "checking",
        "gen_ai.completion.0.finish_reason": "tool_calls",
        "gen_ai.completion.0.tool_calls.0.name": "get_weather",
        "gen_ai.completion.0.tool_calls.0.arguments": '{ "city" : "Paris" }',
    }
    call = read(span("openai.chat", attributes), OLLM_MODEL)
    assert call.text == "checking" and model_usage(span("openai.chat", attributes), OLLM_MODEL).finish_reasons == (
        "tool_calls",)
    assert [(t.name, t.arguments) for t in call.tool_calls] == [("get_weather", '{"city":"Paris"}')]


def test_openinference_raw_reasoning_in_a_truncated_payload():
    """Chat reasoning in a raw output.value cut by a length limit is read up to the cut."""
    raw = json.dumps({"choices": [{"message": {"reasoning_content": "let me think " * 20, "content": None}}]})
    attributes = {sc.OUTPUT_VALUE: raw[:120], "llm.output_messages.0.message.role": "assistant"}
    call = read(span(attributes=attributes), OI_MODEL)
    assert call.reasoning.startswith("let me think") and call.has_output is False


def test_openinference_text_is_not_counted_twice():
    """A message with both `content` and a text `contents` item reads its text once."""
    prefix = "llm.output_messages.0.message."
    attributes = {
        prefix + "content": "It is sunny.",
        prefix + "contents.0.message_content.type": "text",
        prefix + "contents.0.message_content.text": "It is sunny.",
    }
    assert read(span(attributes=attributes), OI_MODEL).text == "It is sunny."


# --- chunks and events ----------------------------------------------------------------------------


def test_otelguard_chunk_events_become_chunks_in_order():
    """otelguard.chunk events with text become chunks (kind kept); textless chunk events are counted."""
    events = (
        SpanEvent(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: "hmm", sc.OTELGUARD_CHUNK_KIND: "reasoning"}),
        SpanEvent(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: "sunny "}),
        SpanEvent(sc.OTELGUARD_CHUNK_EVENT, {sc.OTELGUARD_CHUNK_TEXT: 5}),
        SpanEvent(sc.GEN_AI_COMPLETION_CHUNK_EVENT),
        SpanEvent("exception", {"exception.message": "x"}),
    )
    call = read(span(events=events, dropped_events=3), GENAI_MODEL)
    assert call.chunks == (Chunk("hmm", "reasoning"), Chunk("sunny ", "text"))
    assert call.chunk_events == 2 and call.dropped_events == 3


# --- tool calls -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        {"city": "Paris", "units": {"b": 1, "a": 2}},
        '{"units": {"a": 2, "b": 1}, "city": "Paris"}',
        '{ "city" : "Paris",\n  "units" : { "b" : 1 , "a" : 2 } }',
    ],
)
@pytest.mark.parametrize(
    "classification, key",
    [(GENAI_TOOL, sc.GEN_AI_TOOL_CALL_ARGUMENTS), (GENAI_TOOL, sc.PYDANTIC_AI_TOOL_ARGUMENTS), (OI_TOOL, sc.INPUT_VALUE)],
)
def test_tool_arguments_as_object_or_string_give_one_canonical_key(arguments, classification, key):
    """Arguments given as an object or as text with other spacing or key order canonicalise alike."""
    call = read(span(attributes={key: arguments, sc.GEN_AI_TOOL_NAME: "t", sc.TOOL_NAME: "t"}), classification)
    assert call.arguments == '{"city":"Paris","units":{"a":2,"b":1}}' and call.arguments_content is Content.OK


def test_requested_tool_call_arguments_are_canonical():
    """Tool calls the model requested carry canonical arguments, whatever their spacing or key order."""
    value = output_messages(
        {"type": "tool_call", "name": "t", "arguments": '{ "b": 1, "a": 2 }'},
        {"type": "tool_call", "name": "t", "arguments": {"a": 2, "b": 1}},
    )
    call = read(span(attributes={sc.GEN_AI_OUTPUT_MESSAGES: value}), GENAI_MODEL)
    assert {t.arguments for t in call.tool_calls} == {'{"a":2,"b":1}'}


def test_non_json_tool_arguments_are_kept_verbatim():
    """Tool input that is not JSON (LangChain's raw `Paris`) is kept as text and marked MALFORMED."""
    call = read(span(attributes={sc.INPUT_VALUE: "Paris"}), OI_TOOL)
    assert call.arguments == "Paris" and call.arguments_content is Content.MALFORMED


def test_truncated_tool_arguments_are_marked_truncated():
    """Tool arguments cut by a length limit are kept verbatim and marked TRUNCATED."""
    call = read(span(attributes={sc.GEN_AI_TOOL_CALL_ARGUMENTS: '{"query": "a very long que'}), GENAI_TOOL)
    assert call.arguments == '{"query": "a very long que' and call.arguments_content is Content.TRUNCATED


def test_langchain_tool_arguments_come_from_the_parent_tools_span():
    """A LangChain TOOL span takes its arguments and call id from the parent `tools` CHAIN span."""
    parent = span(
        "tools",
        {
            sc.OPENINFERENCE_SPAN_KIND: "CHAIN",
            sc.INPUT_VALUE: json.dumps({"tool_call": {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_0"}}),
        },
    )
    tool = span("get_weather", {sc.OPENINFERENCE_SPAN_KIND: "TOOL", sc.TOOL_NAME: "get_weather", sc.INPUT_VALUE: "Paris"})
    call = read(tool, OI_TOOL, parent)
    assert (call.arguments, call.call_id) == ('{"city":"Paris"}', "call_0")
    assert read(tool, OI_TOOL).arguments == "Paris"


@pytest.mark.parametrize(
    "parent_attributes",
    [
        {sc.OPENINFERENCE_SPAN_KIND: "CHAIN", sc.INPUT_VALUE: "{not json"},
        {sc.OPENINFERENCE_SPAN_KIND: "CHAIN", sc.INPUT_VALUE: json.dumps({"tool_call": "oops"})},
        {sc.OPENINFERENCE_SPAN_KIND: "CHAIN", sc.INPUT_VALUE: json.dumps({"tool_call": {"name": "other", "args": {}}})},
        {sc.OPENINFERENCE_SPAN_KIND: "AGENT", sc.INPUT_VALUE: json.dumps({"tool_call": {"args": {"x": 1}}})},
        {},
    ],
)
def test_a_parent_without_this_tools_call_leaves_the_own_arguments(parent_attributes):
    """A parent that is not a `tools` span for this tool does not change the tool's arguments."""
    tool = span("get_weather", {sc.TOOL_NAME: "get_weather", sc.INPUT_VALUE: '{"city": "Paris"}'})
    assert read(tool, OI_TOOL, span("p", parent_attributes)).arguments == '{"city":"Paris"}'


def test_tool_error_message_prefers_the_exception_event():
    """A failed tool's error message is the exception event's message, else the status description."""
    failed = span(
        status=Status.ERROR,
        status_message="RuntimeError('boom')Traceback ...",
        events=(SpanEvent("exception", {"exception.message": "boom"}),),
    )
    assert read(failed, GENAI_TOOL).error_message == "boom"
    assert read(span(status=Status.ERROR, status_message="timed out"), GENAI_TOOL).error_message == "timed out"


def test_tool_name_falls_back_to_the_span_name():
    """Without a tool-name attribute the tool name comes from the span name of each convention."""
    assert read(span("execute_tool get_weather"), GENAI_TOOL).name == "get_weather"
    assert read(span("get_weather.tool"), Classification(SpanKind.TOOL, "openllmetry")).name == "get_weather"
    assert read(span("get_weather"), OI_TOOL).name == "get_weather"


# --- agent runs -----------------------------------------------------------------------------------


def test_agent_run_identity():
    """An agent run carries its name, durable id and conversation id; empty ids count as absent."""
    run = read(
        span("invoke_agent a", {sc.GEN_AI_AGENT_NAME: "a", sc.GEN_AI_AGENT_ID: "agent-1", sc.GEN_AI_CONVERSATION_ID: ""}),
        Classification(SpanKind.AGENT, "genai"),
    )
    assert (run.name, run.agent_id, run.conversation_id) == ("a", "agent-1", None)
    oi_run = read(span("Agent workflow", {sc.SESSION_ID: "sess-1"}), Classification(SpanKind.AGENT, "openinference"))
    assert (oi_run.name, oi_run.conversation_id) == ("Agent workflow", "sess-1")


@pytest.mark.parametrize(("text", "tool_calls", "content", "expected"), [
    ("", (), Content.OK, False),
    (" \n\t\u2003", (), Content.OK, False),  # whitespace alone (Unicode's too) is no output
    (" a ", (), Content.OK, True),
    ("\u2003x", (), Content.ABSENT, True),  # text seen is output, whatever the capture said
    ("", (RequestedToolCall("f", "{}"),), Content.OK, True),
    ("  ", (), Content.ABSENT, None),
    ("", (), Content.MALFORMED, None),
    ("", (), Content.TRUNCATED, False),
])
def test_has_output(text, tool_calls, content, expected):
    assert ModelCall(text=text, tool_calls=tool_calls, output_content=content).has_output is expected


def test_a_reading_bug_costs_the_record_or_the_usage_never_the_span(monkeypatch, caplog):
    """`read` and `model_usage` contain a convention's own exception: an unreadable record (or empty
    usage), logged once per convention, kind and error type."""
    from otelguard import conventions
    from otelguard.conventions import genai

    def broken(*args, **kwargs):
        raise KeyError("bug")

    monkeypatch.setattr(genai, "read_model", broken)
    monkeypatch.setattr(genai, "read_tool", broken)
    monkeypatch.setattr(genai, "read_model_usage", broken)
    monkeypatch.setattr(genai, "USAGE_KEYS", None)  # (the model name's keys: reading them raises)
    monkeypatch.setattr(conventions, "_reported_failures", set())
    model = span(attributes={sc.GEN_AI_REQUEST_MODEL: "m"})
    with caplog.at_level(logging.WARNING, logger="otelguard.conventions"):
        for _ in range(3):
            assert read(model, GENAI_MODEL).output_content is Content.MALFORMED
            assert model_usage(model, GENAI_MODEL) == ModelUsage()
            assert model_name(model, GENAI_MODEL) is None
            assert read(model, GENAI_TOOL).arguments_content is Content.MALFORMED
    # Once per convention, kind and error type: the KeyErrors of the model and the tool span, the
    # AttributeError of the model name's missing keys.
    assert [(record.getMessage(), record.exc_info[0]) for record in caplog.records] == [
        ("otelguard could not read a genai model span", KeyError),
        ("otelguard could not read a genai model span", AttributeError),
        ("otelguard could not read a genai tool span", KeyError)]
