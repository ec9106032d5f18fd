"""Property-based fuzzing: conventions, engine and processor never let an exception escape.

Attribute values of every type and size (None, bools, huge ints, NaN, bytes, lone surrogates, nested
structures, sequences), broken and truncated JSON, Python reprs, under the keys every convention reads
and next to every convention marker (GenAI operation names, OpenInference span kinds, OpenLLMetry
span kinds, request types and span names). The suite sets OTELGUARD_RAISE_INTERNAL_ERRORS=1
(tests/conftest.py), so the processor re-raises an internal error and a contained bug still fails here.
"""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Status as OtelStatus
from opentelemetry.trace import StatusCode

import otelguard
from otelguard import conventions
from otelguard.model import semconv as sc
from otelguard.conventions import genai, openinference, openllmetry
from otelguard.engine import GuardEngine
from otelguard.model.records import AgentRun, ModelCall, SpanEvent, SpanKind, SpanView, Status, ToolCall

import json_strategies
from hypothesis_support import examples
from json_strategies import messages, surrogates, texts
from otel_support import metric_points

FAST = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])

# --- keys and marker values ---------------------------------------------------------------------------
_CONSTANTS = sorted({v for k, v in vars(sc).items() if k.isupper() and isinstance(v, str)})
_INDEXED = [
    "llm.output_messages.{i}.message.content",
    "llm.output_messages.{i}.message.role",
    "llm.output_messages.{i}.message.contents.{j}.message_content.type",
    "llm.output_messages.{i}.message.contents.{j}.message_content.text",
    "llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.name",
    "llm.output_messages.{i}.message.tool_calls.{j}.tool_call.function.arguments",
    "gen_ai.completion.{i}.content",
    "gen_ai.completion.{i}.reasoning",
    "gen_ai.completion.{i}.finish_reason",
    "gen_ai.completion.{i}.tool_calls.{j}.name",
    "gen_ai.completion.{i}.tool_calls.{j}.arguments",
    "gen_ai.completion.{i}.function_call.name",
    "gen_ai.completion.{i}.function_call.arguments",
]
indexes = st.one_of(st.integers(0, 3).map(str), st.sampled_from(["-1", "01", "x", "", "٣", "99999999999999999999"]))
indexed_keys = st.builds(lambda t, i, j: t.format(i=i, j=j), st.sampled_from(_INDEXED), indexes, indexes)
keys = st.one_of(st.sampled_from(_CONSTANTS), indexed_keys, st.text(max_size=20))

MARKERS = {
    sc.GEN_AI_OPERATION_NAME: [sc.OP_INVOKE_AGENT, sc.OP_EXECUTE_TOOL, sc.OP_CHAT, sc.OP_TEXT_COMPLETION,
                               sc.OP_GENERATE_CONTENT, "embeddings", "CHAT", ""],
    sc.OPENINFERENCE_SPAN_KIND: ["AGENT", "LLM", "TOOL", "CHAIN", "agent", "llm", "tool", "Tool", "RETRIEVER", ""],
    sc.TRACELOOP_SPAN_KIND: ["agent", "tool", "workflow", "task", "handoff", "AGENT", ""],
    sc.LLM_REQUEST_TYPE: ["chat", "completion", "embedding", "rerank", ""],
}
NAMES = [sc.PYDANTIC_AI_V2_AGENT_SPAN, sc.PYDANTIC_AI_V2_TOOL_SPAN, "openai.response", "openai.chat",
         "invoke_agent weather", "invoke_agent ", "execute_tool get_weather", "execute_tool ", "weather.agent",
         "get_weather.tool", "chat gpt-4o", "GET", ""]

# --- values ---------------------------------------------------------------------------------------------
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-(2**200), max_value=2**200),
    st.floats(allow_nan=True, allow_infinity=True), texts, st.binary(max_size=40),
)
json_values = json_strategies.json_values()
reprs = st.builds(lambda text, kind: f"[Content(text={text!r}, type={kind!r})]", texts,
                  st.sampled_from(["reasoning_text", "summary_text"]))


@st.composite
def broken_json(draw, base=st.one_of(messages, json_values, reprs.map(lambda r: r))):
    """Valid JSON (or a repr), cut anywhere: what a span-attribute length limit does."""
    value = draw(base)
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=draw(st.booleans()))
    cut = draw(st.integers(0, len(text)))
    return text[:cut] if draw(st.booleans()) else text


any_values = st.recursive(
    st.one_of(scalars, broken_json(), st.text(st.sampled_from('{}[]":,\\ abu0'), max_size=40)),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple),
        st.dictionaries(st.one_of(st.text(max_size=10), st.integers()), children, max_size=4),
    ),
    max_leaves=10,
)


@st.composite
def attribute_maps(draw) -> dict[Any, Any]:
    attributes = draw(st.dictionaries(keys, any_values, max_size=8))
    for key, values in MARKERS.items():
        if draw(st.booleans()):
            attributes[key] = draw(st.one_of(st.sampled_from(values), any_values))
    if draw(st.integers(0, 9)) == 0:
        attributes["gen_ai.output.messages"] = draw(st.text(max_size=5)) * draw(st.integers(0, 20_000))  # huge
    return attributes


events = st.builds(
    SpanEvent,
    st.sampled_from([sc.EXCEPTION_EVENT, sc.OTELGUARD_CHUNK_EVENT, sc.GEN_AI_COMPLETION_CHUNK_EVENT, "x"]),
    st.one_of(st.dictionaries(st.sampled_from([sc.EXCEPTION_MESSAGE, sc.OTELGUARD_CHUNK_TEXT, sc.OTELGUARD_CHUNK_KIND, "k"]),
                              any_values, max_size=3), any_values),
    st.integers(0, 2**64),
)
span_names = st.one_of(st.sampled_from(NAMES), st.text(max_size=30), st.none(), st.integers())


@st.composite
def span_views(draw, attributes=attribute_maps()) -> SpanView:
    return SpanView(
        name=draw(span_names),
        trace_id=draw(st.integers(0, 2**128 - 1)),
        span_id=draw(st.integers(1, 2**64 - 1)),
        parent_span_id=draw(st.one_of(st.none(), st.integers(1, 2**64 - 1))),
        attributes=draw(st.one_of(attributes, attributes, attributes, any_values)),
        events=tuple(draw(st.lists(events, max_size=4))),
        status=draw(st.sampled_from(list(Status))),
        status_message=draw(st.one_of(st.none(), texts)),
        dropped_events=draw(st.integers(0, 200)),
    )


CONVENTIONS = {genai.CONVENTION: genai, openinference.CONVENTION: openinference, openllmetry.CONVENTION: openllmetry}
RECORD_TYPES = {SpanKind.AGENT: AgentRun, SpanKind.TOOL: ToolCall, SpanKind.MODEL: ModelCall}


# --- conventions ------------------------------------------------------------------------------------------
@FAST
@given(name=span_names, attributes=st.one_of(attribute_maps(), any_values))
def test_classify_never_raises(name, attributes):
    """classify returns a Classification or None for any name and any attributes."""
    result = conventions.classify(name, attributes)
    assert result is None or result.kind in RECORD_TYPES


@FAST
@given(span=span_views(), parent=st.one_of(st.none(), span_views()))
def test_every_reader_reads_any_span_as_every_kind(span, parent):
    """Each convention's reader, called directly (no safety net), reads any span as any kind without raising."""
    for convention, module in CONVENTIONS.items():
        records = {SpanKind.AGENT: module.read_agent(span), SpanKind.TOOL: module.read_tool(span, parent),
                   SpanKind.MODEL: module.read_model(span)}
        for kind, expected_type in RECORD_TYPES.items():
            record = records[kind]
            assert isinstance(record, expected_type), (convention, kind)
            if isinstance(record, ModelCall):
                assert isinstance(record.text, str) and isinstance(record.reasoning, str)
                assert record.has_output in (True, False, None)


@FAST
@given(span=span_views(), parent=st.one_of(st.none(), span_views()))
def test_classified_span_reads_to_its_kind_without_a_swallowed_failure(span, parent):
    """read() of a classified span returns its kind's record, and never needed its last-resort catch."""

    def swallowed(classification, kind, error):
        raise AssertionError(f"a {classification.convention} reader failed on a {kind} span") from error

    classification = conventions.classify(span.name, span.attributes)
    if classification is None:
        return
    with mock.patch.object(conventions, "_report_failure", side_effect=swallowed):
        record = conventions.read(span, classification, parent)
    assert isinstance(record, RECORD_TYPES[classification.kind])


@st.composite
def span_trees(draw, max_spans: int = 8) -> list[SpanView]:
    """Spans of one trace in start order, each parented to an earlier one (or a root)."""
    count = draw(st.integers(1, max_spans))
    spans: list[SpanView] = []
    for index in range(count):
        view = draw(span_views())
        parent = spans[draw(st.integers(0, index - 1))].span_id if index and draw(st.booleans()) else None
        spans.append(SpanView(name=view.name, trace_id=1, span_id=index + 1, parent_span_id=parent,
                              attributes=view.attributes, events=view.events, status=view.status,
                              status_message=view.status_message))
    return spans


@FAST
@given(spans=span_trees())
def test_engine_judges_any_trace_without_raising(spans):
    """The engine (the analyzer's path) starts and ends any spans, in any nesting, without raising."""
    engine = GuardEngine({"guards": [
        {"id": "timeout-policy"},
        {"id": "repeat-tool-reminder", "config": {"thresholds": [2], "stop_after": 3}},
        {"id": "thinking-loop-guard", "config": {"min_reasoning_chars": 256}},
    ]})
    for view in spans:
        if isinstance(view.attributes, dict):
            engine.start(view)
    for view in reversed(spans):
        judged = engine.end(view)
        if judged is not None:
            kind = judged.classification.kind
            assert isinstance(judged.record, RECORD_TYPES[kind]) if kind is not SpanKind.AGENT else judged.record is None


# --- the processor, live ----------------------------------------------------------------------------------
# What the SDK accepts: str, bool, int, float and homogeneous sequences of them (it drops the rest, with a
# warning, before the guard sees it, but the guard is still handed them through set_attribute).
otel_scalars = st.one_of(st.text(max_size=40), surrogates, st.booleans(), st.integers(-(2**63), 2**63 - 1),
                         st.floats(allow_nan=True, allow_infinity=True), broken_json())
otel_values = st.one_of(
    otel_scalars, otel_scalars, otel_scalars,
    st.lists(st.text(max_size=20), max_size=4).map(tuple), st.lists(broken_json(), max_size=3).map(tuple),
    st.lists(st.integers(-5, 5), max_size=4), st.lists(st.booleans(), max_size=3),
    st.none(), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
)


@st.composite
def otel_attribute_maps(draw) -> dict[str, Any]:
    attributes = draw(st.dictionaries(st.one_of(st.sampled_from(_CONSTANTS), indexed_keys, st.text(max_size=12)),
                                      otel_values, max_size=6))
    for key, values in MARKERS.items():
        if draw(st.integers(0, 2)) == 0:
            attributes[key] = draw(st.one_of(st.sampled_from(values), otel_values))
    if draw(st.booleans()):
        attributes[sc.OTELGUARD_TOOL_TIMEOUT_MS] = draw(st.one_of(st.floats(), st.integers(), st.text(max_size=3)))
    return attributes


@st.composite
def live_spans(draw, depth: int = 0) -> dict[str, Any]:
    return {
        "name": draw(st.one_of(st.sampled_from(NAMES), st.text(max_size=20))),
        "start": draw(otel_attribute_maps()),
        "end": draw(otel_attribute_maps()) if draw(st.booleans()) else {},
        "events": draw(st.lists(st.tuples(
            st.sampled_from([sc.OTELGUARD_CHUNK_EVENT, sc.EXCEPTION_EVENT, sc.GEN_AI_COMPLETION_CHUNK_EVENT, "e"]),
            st.dictionaries(st.sampled_from([sc.OTELGUARD_CHUNK_TEXT, sc.OTELGUARD_CHUNK_KIND, sc.EXCEPTION_MESSAGE]),
                            otel_values, max_size=2)), max_size=5)),
        "status": draw(st.sampled_from([None, StatusCode.OK, StatusCode.ERROR])),
        "description": draw(st.one_of(st.none(), st.text(max_size=30))),
        "children": draw(st.lists(live_spans(depth + 1), max_size=3)) if depth < 2 else [],
    }


def _emit(tracer, plan: dict[str, Any]) -> int:
    with tracer.start_as_current_span(plan["name"], attributes=plan["start"], record_exception=False,
                                      set_status_on_exception=False) as span:
        count = 1
        for child in plan["children"]:
            count += _emit(tracer, child)
        for name, attributes in plan["events"]:
            span.add_event(name, attributes)
        for key, value in plan["end"].items():
            span.set_attribute(key, value)
        if plan["status"] is not None:
            span.set_status(OtelStatus(plan["status"], plan["description"] if plan["status"] is StatusCode.ERROR else None))
    return count


@SLOW
@given(plans=st.lists(live_spans(), min_size=1, max_size=3),
       config=st.sampled_from([None, {"guards": [{"id": "repeat-tool-reminder",
                                                  "config": {"thresholds": [2], "stop_after": 2}},
                                                 {"id": "thinking-loop-guard",
                                                  "config": {"min_reasoning_chars": 256, "max_repeated_text": 2}}]}]))
def test_processor_contains_any_span(plans, config):
    """Arbitrary spans through a real TracerProvider + GuardSpanProcessor: nothing escapes, nothing is counted
    as an internal error, and every span reaches the exporter exactly once."""
    exporter = InMemorySpanExporter()
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    processor = otelguard.GuardSpanProcessor(config, downstream=[SimpleSpanProcessor(exporter)],
                                             control=otelguard.Mailbox(), meter_provider=meter_provider)
    provider = TracerProvider()
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("fuzz")
    try:
        emitted = sum(_emit(tracer, plan) for plan in plans)
        assert processor.force_flush(5000)
        assert len(exporter.get_finished_spans()) == emitted
        assert metric_points(reader, "otelguard.internal.errors") == []
    finally:
        provider.shutdown()
        meter_provider.shutdown()
