"""`iter_lazy_spans` (the analyzer's reader) reads every input exactly as `iter_spans` does.

The lazy reader takes shortcuts for the usual shape of a span (a schema decodes the line, attribute
lists of other shapes wait until a span turns out to matter); these tests hold it to the plain reader
on the captured fixtures, on spans of every field order and value type, and on mutated requests.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from otel_support import FIXTURES

from otelguard.analyzer import otlp_json
from otelguard.analyzer import InputError, analyze
from otelguard.analyzer.otlp_json import LazySpan, ReadProblem, iter_lazy_spans, iter_spans
from otelguard.records import SpanView


def comparable(item: SpanView | ReadProblem) -> str:
    """A span or problem as text that compares equal when they are the same (NaN included, attribute
    order included)."""
    if isinstance(item, ReadProblem):
        return repr(item)
    fields = {name: getattr(item, name) for name in SpanView.__slots__ if name not in ("attributes", "events")}
    events = [(event.name, list(event.attributes.items()), event.time_ns) for event in item.events]
    return repr((fields, list(item.attributes.items()), events))


def read_both(text: str) -> tuple[list[str], list[str]]:
    plain = [comparable(item) for item in iter_spans(io.StringIO(text))]
    lazy = [comparable(item.view() if isinstance(item, LazySpan) else item) for item in iter_lazy_spans(io.StringIO(text))]
    return plain, lazy


def assert_read_alike(text: str) -> None:
    plain, lazy = read_both(text)
    assert lazy == plain


FIXTURE_FILES = sorted(FIXTURES.glob("*.otlp.jsonl"))


@pytest.mark.parametrize("path", FIXTURE_FILES, ids=lambda path: path.name.removesuffix(".otlp.jsonl"))
def test_fixture_reads_alike(path: Path):
    assert_read_alike(path.read_text(encoding="utf-8"))


TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"

JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
ANY_VALUE = st.one_of(
    st.builds(lambda text: {"stringValue": text}, st.text(max_size=30)),
    st.builds(lambda number: {"intValue": str(number)}, st.integers(min_value=-(2**63), max_value=2**63)),
    st.builds(lambda number: {"intValue": number}, st.integers(min_value=-(2**40), max_value=2**40)),
    # JSON numbers past int64 (orjson reads those beyond 64 bits as floats, the schema refuses them).
    st.builds(lambda number: {"intValue": number}, st.integers(min_value=2**63 - 2, max_value=2**65)
              | st.integers(min_value=-(2**65), max_value=-(2**63) + 1)),
    st.builds(lambda flag: {"boolValue": flag}, st.booleans()),
    st.builds(lambda number: {"doubleValue": number}, st.floats(allow_nan=False, allow_infinity=False)),
    st.sampled_from([{"doubleValue": "NaN"}, {"doubleValue": "Infinity"}, {"intValue": "12x"}, {"intValue": " 7 "},
                     {"arrayValue": {"values": [{"stringValue": "a"}, {"intValue": "2"}]}},
                     {"kvlistValue": {"values": [{"key": "k", "value": {"boolValue": True}}]}},
                     {"bytesValue": "AAEC"}, {"bytesValue": "not base64!"}, {}, {"string_value": "snake"},
                     {"stringValue": None, "intValue": "3"}, {"stringValue": "a", "intValue": "3"}]),
    st.dictionaries(st.sampled_from(["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue",
                                     "kvlistValue", "bytesValue", "other"]), JSON_VALUE, max_size=2),
)
KEY = st.sampled_from(["gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.output.messages", "otelguard.verdict",
                       "a", "b"]) | st.text(max_size=6)
OUTPUT_MESSAGES = st.sampled_from([
    [{"role": "assistant", "parts": [{"type": "thinking", "content": "plan the call"},
                                     {"type": "tool_call", "id": "c1", "name": "get_weather", "arguments": {"q": "x"}}]}],
    [{"role": "assistant", "parts": [{"type": "text", "content": "done"}], "finish_reason": "stop"}],
    [{"role": "assistant", "parts": [{"type": "reasoning"}]}],
    {"parts": 5},
]).map(json.dumps) | st.text(max_size=20)
GUARDED_ATTRIBUTE = st.one_of(  # what the guard reads, with the values it looks for
    st.builds(lambda op: {"key": "gen_ai.operation.name", "value": {"stringValue": op}},
              st.sampled_from(["chat", "execute_tool", "invoke_agent", "other"])),
    st.builds(lambda text: {"key": "gen_ai.output.messages", "value": {"stringValue": text}}, OUTPUT_MESSAGES),
    st.builds(lambda args: {"key": "gen_ai.tool.call.arguments", "value": {"stringValue": args}},
              st.sampled_from(['{"q":"Paris"}', '{"q":', "[]", ""])),
    st.builds(lambda name: {"key": "gen_ai.tool.name", "value": {"stringValue": name}}, st.sampled_from(["t", ""])),
    st.builds(lambda n: {"key": "gen_ai.usage.output_tokens", "value": {"intValue": n}}, st.sampled_from(["7", "x"])),
)
ATTRIBUTE = (st.fixed_dictionaries({"key": KEY, "value": ANY_VALUE}) | st.fixed_dictionaries({"key": KEY})
             | GUARDED_ATTRIBUTE)
HEX_ID = st.sampled_from([SPAN_ID, PARENT_ID, "0" * 16, "", "zz" * 8, "AAECAwQFBgc=", SPAN_ID.upper()])
TIME = st.sampled_from(["1796026817428896716", 1796026817428896716, "0", "-5", "12.5", "x", None, 17.0, True])
STATUS = st.sampled_from([{}, {"code": 2, "message": "boom"}, {"code": "STATUS_CODE_ERROR"}, {"code": " 1 "},
                          {"code": "²"}, {"message": 5}, {"code": None}, {"code": 1, "other": 1}, None, 3])
COUNT = st.sampled_from([None, 0, 3, -1, "2", 2.0, True])
EVENT = st.fixed_dictionaries({"name": st.sampled_from(["otelguard.chunk", "exception", 5]),
                               "timeUnixNano": TIME, "attributes": st.lists(ATTRIBUTE, max_size=2)})


@st.composite
def usual_spans(draw: st.DrawFn) -> dict[str, Any]:
    """Spans near the usual shape: fields of their OTLP types, in any order, now and then one odd."""
    span: dict[str, Any] = {
        "traceId": draw(st.sampled_from([TRACE_ID] * 6 + ["0" * 32, "W47/95gDgQPSabYzgT/GDA==", 5])),
        "spanId": draw(st.sampled_from([SPAN_ID, SPAN_ID, SPAN_ID, PARENT_ID])),
        "name": draw(st.sampled_from(["chat m", "execute_tool get_weather", "invoke_agent a", "POST"])),
    }
    usual = {
        "parentSpanId": st.sampled_from([PARENT_ID, PARENT_ID, ""]) | st.none(),
        "kind": st.integers(0, 5),
        "startTimeUnixNano": st.sampled_from(["1796026817428896716", 1796026817428896716, "0"]),
        "endTimeUnixNano": st.sampled_from(["1796026817441393605", None]),
        "attributes": st.lists(ATTRIBUTE, max_size=6),
        "events": st.just([]) | st.lists(EVENT, max_size=2),
        "status": st.sampled_from([{}, {"code": 2, "message": "boom"}, {"code": "STATUS_CODE_ERROR"}, {"code": 1}]),
        "droppedAttributesCount": st.sampled_from([0, 3]),
        "droppedEventsCount": st.sampled_from([0, 2]),
        "flags": st.just(256),
        "traceState": st.just(""),
        "links": st.just([]),
    }
    odd = {
        "parentSpanId": HEX_ID,
        "startTimeUnixNano": TIME,
        "endTimeUnixNano": TIME,
        "attributes": st.none() | st.just({}) | st.just([{"key": "a", "value": {"stringValue": "1"}}] * 2),
        "events": st.none(),
        "status": STATUS,
        "droppedAttributesCount": COUNT,
        "droppedEventsCount": COUNT,
        "dropped_attributes_count": COUNT,
        "parent_span_id": HEX_ID,
        "trace_id": st.just(TRACE_ID),
        "end_time_unix_nano": TIME,
        "unknownField": JSON_VALUE,
        "name": st.sampled_from([7, None, ""]),
    }
    for field in draw(st.lists(st.sampled_from(sorted(usual)), unique=True, max_size=len(usual))):
        span[field] = draw(usual[field])
    if draw(st.integers(0, 4)) == 0:
        field = draw(st.sampled_from(sorted(odd)))
        span[field] = draw(odd[field])
    order = draw(st.permutations(sorted(span)))
    return {field: span[field] for field in order}


# Compact, as exporters write it; now and then spaced inside the line's objects, which the schema
# must read alike.
COMPACT, SPACED = (",", ":"), (", ", ": ")
SEPARATORS = st.sampled_from([COMPACT, SPACED])
SCOPE = st.sampled_from([{"name": "pydantic-ai", "version": "1"}, {"name": 5}, {}, None, "scope", {"name": None}])


@st.composite
def requests(draw: st.DrawFn) -> str:
    resources = []
    for _ in range(draw(st.integers(1, 2))):
        scopes = []
        for _ in range(draw(st.integers(0, 2))):
            scope_spans: dict[str, Any] = {"spans": draw(st.lists(usual_spans(), max_size=3))}
            scope = draw(SCOPE)
            if scope is not None:
                scope_spans["scope"] = scope
            if draw(st.booleans()):
                scope_spans["schemaUrl"] = "https://opentelemetry.io/schemas/1.26.0"
            scopes.append(scope_spans)
        resource: dict[str, Any] = {"scopeSpans": scopes}
        if draw(st.booleans()):
            resource["resource"] = {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]}
        resources.append(resource)
    document: Any = {"resourceSpans": resources}
    # A mutation anywhere in the request: a field of the wrong type, a snake_case twin, an extra key.
    mutation = draw(st.sampled_from(["none"] * 8 + ["resource_spans", "scope_spans", "resourceSpans", "extra"]))
    if mutation == "resource_spans":
        document = {"resource_spans": resources}
    elif mutation == "scope_spans" and resources:
        resources[0]["scope_spans"] = resources[0].pop("scopeSpans")
    elif mutation == "resourceSpans":
        document = {"resourceSpans": draw(JSON_VALUE)}
    elif mutation == "extra":
        document["resourceLogs"] = []
    return json.dumps(document, allow_nan=False, separators=draw(SEPARATORS))


@settings(max_examples=examples(400), deadline=None)
@given(lines=st.lists(requests(), min_size=1, max_size=3))
def test_requests_of_every_shape_read_alike(lines):
    assert_read_alike("\n".join(lines) + "\n")


@st.composite
def usual_lines(draw: st.DrawFn) -> str:
    """A request every span of which has the usual shape, with attributes of every value type: the
    line takes the schema's path, to the fast paths for values written compactly that the requests
    above, mostly odd somewhere, seldom reach."""
    spans = [{"traceId": TRACE_ID, "spanId": f"{index + 1:016x}", "name": "chat m",
              "attributes": draw(st.lists(ATTRIBUTE, max_size=8, unique_by=lambda attribute: attribute["key"]))}
             for index in range(draw(st.integers(1, 3)))]
    document = {"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}
    return json.dumps(document, allow_nan=False, separators=draw(SEPARATORS))


@settings(max_examples=examples(150), deadline=None)
@given(line=usual_lines())
def test_usual_lines_of_every_value_read_alike(line):
    assert_read_alike(line + "\n")


def line_with(attributes: str, span_head: str = '"name":"chat m",') -> str:
    """A request line of one span, its attribute list written out as JSON text (to hold what
    json.dumps never writes: NaN, duplicate keys, odd whitespace, escapes)."""
    return ('{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"%s","spanId":"%s",%s"attributes":%s}]}]}]}'
            % (TRACE_ID, SPAN_ID, span_head, attributes))


@pytest.mark.parametrize("text", [
    # Literals orjson refuses and the standard library reads, in the line and in a value.
    line_with('[{"key":"x","value":{"doubleValue":NaN}}]'),
    line_with('[{"key":"x","value":{"doubleValue":1e999}},{"key":"y","value":{"intValue":"1"}}]'),
    # Integers past int64 as JSON numbers (orjson reads those beyond 64 bits as floats), alone and on
    # a line that also holds a number orjson refuses (the line is then the standard library's).
    line_with('[{"key":"x","value":{"intValue":18446744073709551617}},{"key":"y","value":{"intValue":-9223372036854775809}}]'),
    line_with('[{"key":"x","value":{"intValue":9223372036854775808}}]', '"name":"chat m","droppedAttributesCount":18446744073709551617,'),
    line_with('[{"key":"x","value":{"intValue":18446744073709551617}},{"key":"y","value":{"doubleValue":1e999}}]',
              '"name":"chat m","startTimeUnixNano":18446744073709551617,'),
    line_with('[{"key":"x","value":{"stringValue":"\\ud800"}}]'),
    # Duplicate keys: the last one is read, in the request, a span, an attribute list and a value.
    '{"resourceSpans":[],' + line_with('[{"key":"x","value":{"stringValue":"1"}},{"key":"x","value":{"intValue":"2"}},'
                                       '{"key":"y","value":{"stringValue":"3"}},{"key":"y","value":{"intValue":"z"}}]',
                                       '"name":"a","name":"chat m",')[1:],
    line_with('[{"key":"x","value":{"stringValue":"a","stringValue":"b"}}]'),
    # Unicode, escapes and whitespace inside a value.
    line_with('[{"key":"k\\u00e9","value":{ "stringValue" : "a\\"b\\\\c\\n😀" }}]', '"name":"chat é",'),
    line_with('[{"key":"a","value":{"stringValue":"é😀 plain"}},{"key":"b","value":{"stringValue":"\\u00e9"}},'
              '{"key":"c","value":{"stringValue":""}},{"key":"d","value":{"stringValue":"x","intValue":"1"}}]'),
    # A lone surrogate in the text itself (a stream of str, not a file: those decode with replacement).
    line_with('[{"key":"x","value":{"stringValue":"a\ud800b"}}]'),
    "{}",
    "[]",
    "not json",
])
def test_edge_lines_read_alike(text):
    assert_read_alike(text + "\n")


def test_a_usual_line_is_read_by_the_schema_alone(monkeypatch):
    """Values of every kind, unreadable ones included, are read from the schema's decode: the line
    is never parsed again for the general reader (only a rarer value's own JSON is), and what the
    plain reader finds unreadable is dropped and counted here too."""
    parsed: list[Any] = []
    real_loads = otlp_json.fastjson.loads
    monkeypatch.setattr(otlp_json.fastjson, "loads", lambda text: parsed.append(text) or real_loads(text))
    line = line_with('[{"key":"s","value":{"stringValue":"a\\"b"}},{"key":"i","value":{"intValue":"5"}},'
                     '{"key":"j","value":{"intValue":-7}},{"key":"d","value":{"doubleValue":0.5}},'
                     '{"key":"b","value":{"boolValue":true}},'
                     '{"key":"a","value":{"arrayValue":{"values":[{"stringValue":"x"}]}}},'
                     '{"key":"bad","value":{"intValue":"z"}},{"key":"empty","value":{}},{"key":"none"}]') + "\n"
    (lazy,) = iter_lazy_spans(io.StringIO(line))
    view = lazy.view()
    assert type(view.attributes) is dict
    assert view.attributes == {"s": 'a"b', "i": 5, "j": -7, "d": 0.5, "b": True, "a": ("x",)}
    assert view.dropped_attributes == 3
    assert line not in parsed and len(parsed) == 3  # the double's, the bool's and the array's JSON
    assert read_both(line)[0] == [comparable(view)]


@st.composite
def agent_run_lines(draw: st.DrawFn) -> str:
    """A request of near-usual spans with ids of one trace: a root and its children (mostly: a span's
    drawn odd fields stay), so the engine sees runs, model calls and tool calls, not duplicates."""
    spans = draw(st.lists(usual_spans(), min_size=1, max_size=8))
    for index, span in enumerate(spans):
        if span.get("spanId") in (SPAN_ID, PARENT_ID):
            span["spanId"] = f"{index + 1:016x}"
        if index == 0:
            span.pop("parentSpanId", None)
        elif "parentSpanId" not in span or draw(st.integers(0, 3)):
            span["parentSpanId"] = f"{1:016x}"
        operation = {"chat m": "chat", "execute_tool get_weather": "execute_tool"}.get(span.get("name"))
        if index and operation and draw(st.booleans()):
            span["attributes"] = [{"key": "gen_ai.operation.name", "value": {"stringValue": operation}},
                                  *draw(st.lists(GUARDED_ATTRIBUTE, max_size=4))]
    if spans[0].get("name") != 7 and draw(st.booleans()):
        spans[0]["name"] = "invoke_agent a"
        spans[0]["attributes"] = [{"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}}]
    return json.dumps({"resourceSpans": [{"scopeSpans": [{"scope": {"name": "s"}, "spans": spans}]}]},
                      separators=draw(SEPARATORS))


@settings(max_examples=examples(150), deadline=None)
@given(lines=st.lists(agent_run_lines(), min_size=1, max_size=4))
def test_the_analyzer_judges_any_of_these_requests_without_an_internal_error(lines, tmp_path_factory):
    """Spans read lazily go through the whole engine: no exception, nothing contained as internal
    (under pytest a contained error is re-raised, so a swallowed failure fails here too)."""
    path = tmp_path_factory.mktemp("lazy") / "requests.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        analysis = analyze([path])
    except InputError:  # nothing in the file was OTLP: a clean refusal, not a failure
        return
    assert not analysis.coverage.internal_errors


def test_a_line_whose_spans_carry_events_is_parsed_once(monkeypatch):
    """Events are read from the schema's decode, each from its own JSON: the line itself is not
    parsed a second time for the general reader (recorded chunk events are on every streamed call)."""
    parsed: list[Any] = []
    real_loads = otlp_json.fastjson.loads
    monkeypatch.setattr(otlp_json.fastjson, "loads", lambda text: parsed.append(text) or real_loads(text))
    span = {"traceId": TRACE_ID, "spanId": SPAN_ID, "name": "chat m",
            "events": [{"name": "otelguard.chunk", "timeUnixNano": "5",
                        "attributes": [{"key": "otelguard.chunk.text", "value": {"stringValue": "ab"}}]}]}
    line = json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}) + "\n"
    (lazy,) = iter_lazy_spans(io.StringIO(line))
    assert [(event.name, dict(event.attributes), event.time_ns) for event in lazy.view().events] == [
        ("otelguard.chunk", {"otelguard.chunk.text": "ab"}, 5)]
    assert line not in parsed and len(parsed) == 1  # the one event, not the line
