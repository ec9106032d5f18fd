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
from otlp_json_strategies import (
    ATTRIBUTE,
    GUARDED_ATTRIBUTE,
    PARENT_ID,
    SEPARATORS,
    SPAN_ID,
    TRACE_ID,
    comparable,
    requests,
    usual_spans,
)

from otelguard.analyzer import otlp_json
from otelguard.analyzer import InputError, analyze
from otelguard.analyzer.otlp_json import LazySpan, iter_lazy_spans, iter_spans


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
