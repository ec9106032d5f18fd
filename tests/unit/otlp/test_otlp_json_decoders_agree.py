"""The service's OTLP/JSON request decoder and the analyzer's OTLP/JSON file reader read a document alike.

Both read spans with `otelguard.otlp.values.span` (the hex-id, enum, integer and value rules);
they differ only where a driver's error policy must (the OTLP specification's for a receiver, "count it and say so" for a file):

| the document holds                                   | analyzer (`iter_spans`)            | service (`json_spans_of`)        |
|------------------------------------------------------|------------------------------------|----------------------------------|
| a span that is OTLP/JSON                             | the span                           | the same span                    |
| an attribute value that is not (on a span or event)  | the span, the value counted dropped | the span rejected (partial success) |
| a span that is not (ids, enums, times, counts, ...)  | a `bad span` problem               | the span rejected (partial success) |
| a request, resource list or scope that is not        | a `not an ExportTraceServiceRequest` problem | 400, nothing kept         |
"""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis_support import examples
from otel_support import FIXTURES
from otlp_json_strategies import PARENT_ID, SCOPE, SPAN_ID, TRACE_ID, comparable, usual_spans

from otelguard.otlp.json_spans import BAD_SPAN, NOT_A_REQUEST, ReadProblem, iter_spans
from otelguard.model.records import SpanView
from otelguard.otlp.requests import MalformedRequest, json_spans_of


def analyzer_reads(document: Any) -> list[SpanView | ReadProblem]:
    return list(iter_spans(io.StringIO(json.dumps(document, allow_nan=False) + "\n")))


def service_reads(document: Any) -> tuple[list[SpanView], int, str] | None:
    """(the spans accepted, as views; how many were rejected; why the first was), or None for a 400."""
    try:
        received = json_spans_of(json.dumps(document, allow_nan=False).encode())
    except MalformedRequest:
        return None
    return [span.view() for span in received.spans], received.rejected, received.reason


def declared_dropped_attributes(span: dict[str, Any]) -> int:
    """The span's own droppedAttributesCount (valid: the analyzer read the span)."""
    declared = span.get("droppedAttributesCount")
    if declared is None:
        declared = span.get("dropped_attributes_count")
    return int(declared or 0)


def assert_one_span_read_alike(span: Any, scope: Any = None) -> str:
    """Feed a request holding `span` to both; returns which row of the table it fell in."""
    scope_spans: dict[str, Any] = {"spans": [span]}
    if scope is not None:
        scope_spans["scope"] = scope
    document = {"resourceSpans": [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "a"}}]},
                                   "scopeSpans": [scope_spans]}]}
    analyzer = analyzer_reads(document)
    service = service_reads(document)
    if service is None:
        assert [item.reason for item in analyzer] == [NOT_A_REQUEST], analyzer
        return "malformed request"
    accepted, rejected, reason = service
    [item] = analyzer
    if isinstance(item, ReadProblem):
        assert item.reason == BAD_SPAN and (accepted, rejected) == ([], 1), (item, service)
        return "bad span"
    if rejected:
        assert accepted == [] and rejected == 1 and "attribute" in reason, (item, service)
        assert item.dropped_attributes > declared_dropped_attributes(span), (item, reason)
        return "unreadable value"
    assert [comparable(view) for view in accepted] == [comparable(item)]
    return "read"


def otlp_span(**fields: Any) -> dict[str, Any]:
    span: dict[str, Any] = {
        "traceId": TRACE_ID, "spanId": SPAN_ID, "parentSpanId": PARENT_ID, "name": "execute_tool get_weather",
        "kind": 1, "startTimeUnixNano": "1796026817428896716", "endTimeUnixNano": "1796026817441393605",
        "attributes": [{"key": "gen_ai.tool.name", "value": {"stringValue": "get_weather"}}],
        "status": {"code": 2, "message": "boom"},
    }
    for name, value in fields.items():
        if value is ...:
            del span[name]
        else:
            span[name] = value
    return span


def with_value(value: Any) -> dict[str, Any]:
    return otlp_span(attributes=[{"key": "a", "value": value}])


def base64_of(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


# Documents off the usual shape (each one the two decoders once read differently), and the row each falls in.
EDGE_DOCUMENTS = {
    "ids in base64": (otlp_span(traceId=base64_of(TRACE_ID), spanId=base64_of(SPAN_ID)), "bad span"),
    "an id with a 0x prefix": (otlp_span(traceId="0x" + TRACE_ID[2:]), "bad span"),
    "a signed id": (otlp_span(spanId="-" + SPAN_ID[1:]), "bad span"),
    "a parent id that is not hex": (otlp_span(parentSpanId="zz"), "bad span"),
    "a status code's name": (otlp_span(status={"code": "STATUS_CODE_ERROR"}), "read"),
    "a status code's name in lower case": (otlp_span(status={"code": "status_code_error"}), "bad span"),
    "a status code as a string": (otlp_span(status={"code": "2"}), "bad span"),
    "a status that is no object": (otlp_span(status="ERROR"), "bad span"),
    "a kind's name": (otlp_span(kind="SPAN_KIND_CLIENT"), "read"),
    "a name that is no kind's": (otlp_span(kind="CLIENT"), "bad span"),
    "a time with spaces": (otlp_span(startTimeUnixNano=" 7 "), "bad span"),
    "a time with an underscore": (otlp_span(startTimeUnixNano="1_000"), "bad span"),
    "a time with a fraction": (otlp_span(startTimeUnixNano=1.5), "bad span"),
    "a negative time": (otlp_span(startTimeUnixNano="-1"), "bad span"),
    "a count beyond 32 bits": (otlp_span(droppedAttributesCount=2**40), "bad span"),
    "a span without a name": (otlp_span(name=...), "read"),
    "an end time of zero": (otlp_span(endTimeUnixNano="0"), "read"),
    "an event name that is no string": (otlp_span(events=[{"name": 5}]), "bad span"),
    "a link id that is not hex": (otlp_span(links=[{"traceId": "zz", "spanId": SPAN_ID}]), "bad span"),
    "an int value that is no number": (with_value({"intValue": "abc"}), "unreadable value"),
    "an int value beyond 64 bits": (with_value({"intValue": str(2**63)}), "unreadable value"),
    "a bool value as a string": (with_value({"boolValue": "true"}), "unreadable value"),
    "a string value that is a number": (with_value({"stringValue": 5}), "unreadable value"),
    "a value that is no object": (with_value("x"), "unreadable value"),
    "a double value 'inf'": (with_value({"doubleValue": "inf"}), "unreadable value"),
    "two values, the int first": (with_value({"intValue": "3", "stringValue": "a"}), "read"),
    "bytes in the URL-safe alphabet": (with_value({"bytesValue": "-_8="}), "read"),
    "bytes without padding": (with_value({"bytesValue": "AAE"}), "read"),
    "an array that is no object": (with_value({"arrayValue": 5}), "unreadable value"),
    "a kvlist with an unreadable value": (
        with_value({"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "z"}}]}}), "unreadable value"),
    "an attribute without a key": (otlp_span(attributes=[{"value": {"stringValue": "x"}}]), "unreadable value"),
    "an unreadable event attribute": (
        otlp_span(events=[{"name": "e", "attributes": [{"key": "k", "value": {"intValue": "z"}}]}]),
        "unreadable value"),
    "attributes that are no list": (otlp_span(attributes={"a": 1}), "bad span"),
}


@pytest.mark.parametrize("case", sorted(EDGE_DOCUMENTS))
def test_an_edge_document_reads_alike_in_its_row(case: str):
    span, row = EDGE_DOCUMENTS[case]
    assert assert_one_span_read_alike(span) == row


@pytest.mark.parametrize("scope", [{"name": 5}, "scope", {"name": ""}, {"name": "pydantic-ai"}])
def test_a_scope_reads_alike(scope: Any):
    """A scope name that is not a string makes the request malformed for both; an empty one is none."""
    expected = "read" if isinstance(scope, dict) and isinstance(scope["name"], str) else "malformed request"
    assert assert_one_span_read_alike(otlp_span(), scope) == expected


@settings(max_examples=examples(300), deadline=None)
@given(span=usual_spans(), scope=SCOPE)
def test_spans_of_every_shape_read_alike(span: dict[str, Any], scope: Any):
    assert_one_span_read_alike(span, scope)


TRACE_FILES = sorted(path for path in FIXTURES.glob("*.otlp.jsonl") if not path.name.endswith(".logs.otlp.jsonl"))


@pytest.mark.parametrize("path", TRACE_FILES, ids=lambda path: path.name)
def test_captured_spans_read_alike(path):
    """Every captured span is accepted by the service as the analyzer reads it, none rejected."""
    for line in path.read_text(encoding="utf-8").splitlines():
        document = json.loads(line)
        analyzer = analyzer_reads(document)
        accepted, rejected, _ = service_reads(document)
        assert rejected == 0 and all(isinstance(item, SpanView) for item in analyzer)
        assert [comparable(view) for view in accepted] == [comparable(item) for item in analyzer]
