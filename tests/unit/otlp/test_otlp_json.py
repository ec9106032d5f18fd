"""The OTLP/JSON reader: every encoding producers write reads to the same spans; bad input is reported, not raised."""

from __future__ import annotations

import base64
import gzip
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis_support import examples
from otel_support import FIXTURES

from otelguard.otlp.json_spans import BAD_SPAN, ReadProblem, UnreadableInput, iter_spans
from otelguard.model.records import SpanView, Status

TRACE_ID = "5b8efff798038103d269b633813fc60c"
SPAN_ID = "eee19b7ec3c1b174"
PARENT_ID = "eee19b7ec3c1b173"


def b64(hex_id: str) -> str:
    return base64.b64encode(bytes.fromhex(hex_id)).decode()


def otlp_span(**overrides: Any) -> dict[str, Any]:
    span = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "parentSpanId": PARENT_ID,
        "name": "chat m",
        "kind": 3,
        "startTimeUnixNano": "1796026817428896716",
        "endTimeUnixNano": "1796026817441393605",
        "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}}],
        "status": {"code": 2, "message": "boom"},
    }
    span.update(overrides)
    return span


def request(*spans: dict[str, Any], scope: str = "pydantic-ai") -> dict[str, Any]:
    return {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
                "scopeSpans": [{"scope": {"name": scope, "version": "1"}, "spans": list(spans)}],
            }
        ]
    }


def read_text(tmp_path: Path, text: str, name: str = "t.jsonl") -> list[SpanView | ReadProblem]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return list(iter_spans(path))


def only_span(items: list[SpanView | ReadProblem]) -> SpanView:
    assert len(items) == 1 and isinstance(items[0], SpanView), items
    return items[0]


def test_a_span_is_read_with_all_its_fields(tmp_path):
    """A JSON Lines request yields its span with ids, times, status, attributes and scope."""
    span = only_span(read_text(tmp_path, json.dumps(request(otlp_span())) + "\n"))
    assert (span.trace_id, span.span_id, span.parent_span_id) == (int(TRACE_ID, 16), int(SPAN_ID, 16), int(PARENT_ID, 16))
    assert (span.start_ns, span.end_ns) == (1796026817428896716, 1796026817441393605)
    assert (span.status, span.status_message, span.scope) == (Status.ERROR, "boom", "pydantic-ai")
    assert span.attributes == {"gen_ai.operation.name": "chat"}


def test_status_code_is_read_from_its_number(tmp_path):
    """A status code is an integer in OTLP/JSON: 2 is an error."""
    span = only_span(read_text(tmp_path, json.dumps(request(otlp_span(status={"code": 2})))))
    assert span.status is Status.ERROR


@pytest.mark.parametrize("code", ["2", "ERROR", "status_code_error"])
def test_a_status_code_that_is_neither_its_number_nor_its_name_makes_the_span_unreadable(code, tmp_path):
    """A status code is its number, or its name as the .proto spells it (`test_otlp_json_enum_names.py`):
    a span with anything else is reported, with the reason, not read with a guessed status."""
    [problem] = read_text(tmp_path, json.dumps(request(otlp_span(status={"code": code}))))
    assert problem.reason == BAD_SPAN and "status code" in problem.detail and "names" in problem.detail


def test_omitted_status_code_is_unset(tmp_path):
    """A status without a code (OTLP/JSON omits the zero value) is UNSET."""
    assert only_span(read_text(tmp_path, json.dumps(request(otlp_span(status={}))))).status is Status.UNSET


def test_hex_ids_read_in_either_case(tmp_path):
    """Ids are case-insensitive hex."""
    as_lower = only_span(read_text(tmp_path, json.dumps(request(otlp_span()))))
    upper = otlp_span(traceId=TRACE_ID.upper(), spanId=SPAN_ID.upper(), parentSpanId=PARENT_ID.upper())
    as_upper = only_span(read_text(tmp_path, json.dumps(request(upper)), "u.jsonl"))
    assert (as_upper.trace_id, as_upper.span_id, as_upper.parent_span_id) == (
        as_lower.trace_id, as_lower.span_id, as_lower.parent_span_id)


@pytest.mark.parametrize("ids", [
    {"traceId": b64(TRACE_ID)},  # the plain protobuf JSON mapping: OTLP/JSON says ids are "not base64-encoded"
    {"spanId": "-" + SPAN_ID[1:]},  # Python's int() would read these three
    {"traceId": "0x" + TRACE_ID[2:]},
    {"parentSpanId": SPAN_ID[:8] + "_" + SPAN_ID[9:]},
    {"parentSpanId": "zz"},
])
def test_an_id_that_is_not_hex_makes_the_span_unreadable(ids, tmp_path):
    """An id that is not hex of its size is reported, never read as some other id."""
    [problem] = read_text(tmp_path, json.dumps(request(otlp_span(**ids))))
    assert problem.reason == BAD_SPAN and "hex digits" in problem.detail


@pytest.mark.parametrize("parent", [None, "", "0000000000000000"])
def test_root_span_has_no_parent(parent, tmp_path):
    """An absent, empty or all-zero parent id means a root span."""
    raw = otlp_span(parentSpanId=parent)
    assert only_span(read_text(tmp_path, json.dumps(request(raw)))).parent_span_id is None


def test_any_values_decode_to_sdk_shapes(tmp_path):
    """AnyValues decode: ints from decimal strings, arrays to tuples, kvlists to dicts, bytes from base64."""
    attributes = [
        {"key": "s", "value": {"stringValue": "x"}},
        {"key": "i", "value": {"intValue": "9007199254740993"}},
        {"key": "d", "value": {"doubleValue": 1.5}},
        {"key": "nan", "value": {"doubleValue": "NaN"}},
        {"key": "b", "value": {"boolValue": True}},
        {"key": "a", "value": {"arrayValue": {"values": [{"stringValue": "stop"}, {"intValue": 2}]}}},
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}}},
        {"key": "bytes", "value": {"bytesValue": base64.b64encode(b"\x00\x01").decode()}},
        {"key": "empty_array", "value": {"arrayValue": {}}},
    ]
    span = only_span(read_text(tmp_path, json.dumps(request(otlp_span(attributes=attributes)))))
    nan = span.attributes.pop("nan")
    assert nan != nan
    assert span.attributes == {
        "s": "x",
        "i": 9007199254740993,
        "d": 1.5,
        "b": True,
        "a": ("stop", 2),
        "kv": {"k": "v"},
        "bytes": b"\x00\x01",
        "empty_array": (),
    }


def test_unreadable_attribute_values_are_dropped_and_counted(tmp_path):
    """An attribute whose value cannot be decoded is left out and counted as a dropped attribute,
    on the span and on its events."""
    attributes = [
        {"key": "ok", "value": {"stringValue": "x"}},
        {"key": "bad", "value": {"intValue": "twelve"}},
        {"key": "none", "value": {}},
        {"key": "yes", "value": {"boolValue": "true"}},  # a bool is true or false, not a string
        {"key": "big", "value": {"intValue": str(2**63)}},  # beyond int64
        {"key": "kv", "value": {"kvlistValue": {"values": [{"key": "k", "value": {"intValue": "x"}}]}}},
    ]
    events = [{"name": "e", "attributes": [{"key": "bad", "value": {"doubleValue": "inf"}}]}]
    raw = otlp_span(attributes=attributes, droppedAttributesCount=1, events=events)
    span = only_span(read_text(tmp_path, json.dumps(request(raw))))
    assert span.attributes == {"ok": "x"} and span.dropped_attributes == 7
    assert [dict(event.attributes) for event in span.events] == [{}]


@pytest.mark.parametrize("time", [" 7 ", "1_000", "٣", 1.5, "-1", str(2**64)])
def test_a_time_that_is_not_a_64_bit_integer_makes_the_span_unreadable(time, tmp_path):
    """A time is a decimal string or a number, as OTLP/JSON writes 64-bit integers; anything Python's
    int() would also take (spaces, underscores, other digits) is not one."""
    [problem] = read_text(tmp_path, json.dumps(request(otlp_span(startTimeUnixNano=time))))
    assert problem.reason == BAD_SPAN and "startTimeUnixNano" in problem.detail


def test_events_and_dropped_events_are_read(tmp_path):
    """Span events keep their order, names, attributes and times; droppedEventsCount is kept."""
    events = [
        {"timeUnixNano": "5", "name": "gen_ai.content.completion.chunk"},
        {"timeUnixNano": "6", "name": "exception", "attributes": [{"key": "exception.message", "value": {"stringValue": "x"}}]},
    ]
    span = only_span(read_text(tmp_path, json.dumps(request(otlp_span(events=events, droppedEventsCount=36)))))
    assert [(e.name, dict(e.attributes), e.time_ns) for e in span.events] == [
        ("gen_ai.content.completion.chunk", {}, 5),
        ("exception", {"exception.message": "x"}, 6),
    ]
    assert span.dropped_events == 36


def test_snake_case_field_names_are_accepted(tmp_path):
    """Field names in the protobuf's original snake_case read like lowerCamelCase ones."""
    document = {
        "resource_spans": [
            {
                "scope_spans": [
                    {
                        "scope": {"name": "s"},
                        "spans": [{"trace_id": TRACE_ID, "span_id": SPAN_ID, "name": "n", "start_time_unix_nano": 7}],
                    }
                ]
            }
        ]
    }
    span = only_span(read_text(tmp_path, json.dumps(document)))
    assert (span.span_id, span.start_ns, span.scope) == (int(SPAN_ID, 16), 7, "s")


def test_gzip_is_detected_by_magic_bytes(tmp_path):
    """A gzipped file (whatever its name) reads like the plain one."""
    text = json.dumps(request(otlp_span())) + "\n"
    path = tmp_path / "traces.jsonl"
    path.write_bytes(gzip.compress(text.encode()))
    assert list(iter_spans(path)) == read_text(tmp_path, text, "plain.jsonl")


def test_single_pretty_printed_document(tmp_path):
    """One pretty-printed, multi-line document reads as one request."""
    text = json.dumps(request(otlp_span(), otlp_span(spanId="eee19b7ec3c1b175")), indent=2)
    items = read_text(tmp_path, text)
    assert [item.span_id for item in items] == [int(SPAN_ID, 16), int("eee19b7ec3c1b175", 16)]


def test_blank_and_non_json_lines_are_reported_and_skipped(tmp_path):
    """Blank and non-JSON lines become ReadProblems with their line numbers; the other lines still read."""
    line = json.dumps(request(otlp_span()))
    items = read_text(tmp_path, "\n".join([line, "", "not json at all", "{\"truncated\": ", line]) + "\n")
    assert [(i.line, i.reason) for i in items if isinstance(i, ReadProblem)] == [
        (2, "blank"),
        (3, "not json"),
        (4, "not json"),
    ]
    assert sum(isinstance(i, SpanView) for i in items) == 2


def test_documents_that_are_not_trace_requests_are_reported(tmp_path):
    """Log and metric documents, non-objects and other objects are reported, each with its reason."""
    lines = [
        json.dumps({"resourceLogs": [{"scopeLogs": []}]}),
        json.dumps({"resourceMetrics": []}),
        json.dumps([1, 2]),
        json.dumps({"hello": "world"}),
        json.dumps({"resourceSpans": "nope"}),
        json.dumps({}),
    ]
    items = read_text(tmp_path, "\n".join(lines))
    assert [(i.line, i.reason) for i in items] == [
        (1, "log records (not read)"),
        (2, "metrics (not read)"),
        (3, "not an ExportTraceServiceRequest"),
        (4, "not an ExportTraceServiceRequest"),
        (5, "not an ExportTraceServiceRequest"),
    ]


@pytest.mark.parametrize(
    "bad",
    [
        otlp_span(traceId="xyz"),
        otlp_span(spanId="00000000000000000000"),
        otlp_span(traceId="00000000000000000000000000000000"),
        otlp_span(name=5),
        otlp_span(events="many"),
        otlp_span(startTimeUnixNano="-1"),
        "a string",
    ],
)
def test_a_bad_span_is_reported_and_its_neighbours_read(bad, tmp_path):
    """A span with bad ids, name, events or times is a 'bad span' problem; the spans around it still read."""
    items = read_text(tmp_path, json.dumps(request(otlp_span(), bad, otlp_span())))
    assert [type(i).__name__ for i in items] == ["SpanView", "ReadProblem", "SpanView"]
    assert items[1].reason == "bad span" and items[1].detail


def test_invalid_utf8_is_reported_not_raised(tmp_path):
    """A line with invalid UTF-8 bytes is read with replacement characters, never raises."""
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\xff\xfe garbage\n" + json.dumps(request(otlp_span())).encode() + b"\n")
    items = list(iter_spans(path))
    assert isinstance(items[0], ReadProblem) and isinstance(items[1], SpanView)


def test_missing_file_raises_unreadable_input(tmp_path):
    """A file that does not exist raises UnreadableInput at once, naming the path."""
    with pytest.raises(UnreadableInput) as error:
        iter_spans(tmp_path / "missing.jsonl")
    assert "missing.jsonl" in str(error.value)


def test_truncated_gzip_raises_unreadable_input_after_what_it_could_read(tmp_path):
    """A gzip file cut short yields its complete lines, then raises UnreadableInput."""
    text = "\n".join(json.dumps(request(otlp_span())) for _ in range(200)) + "\n"
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(gzip.compress(text.encode())[:-40])
    read_before_error = []
    with pytest.raises(UnreadableInput):
        for item in iter_spans(path):
            read_before_error.append(item)
    assert read_before_error and all(isinstance(i, SpanView) for i in read_before_error)


def test_json_lines_are_read_lazily():
    """Spans of the first line come out before later lines are read from the stream."""

    class OneLineThenFail(io.RawIOBase):
        def __init__(self) -> None:
            self.sent = False

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            if self.sent:
                raise AssertionError("read past the first line")
            data = (json.dumps(request(otlp_span())) + "\n").encode()
            buffer[: len(data)] = data
            self.sent = True
            return len(data)

    first = next(iter_spans(OneLineThenFail()))
    assert isinstance(first, SpanView)


@pytest.mark.parametrize(
    "make_stream",
    [
        lambda data: io.BytesIO(data.encode()),
        lambda data: io.BytesIO(gzip.compress(data.encode())),
        io.StringIO,
    ],
    ids=["binary", "gzipped", "text"],
)
def test_a_stream_passed_in_is_not_closed(make_stream):
    """A binary, gzipped or text stream the caller passes in is read to its end and left open."""
    stream = make_stream(json.dumps(request(otlp_span())) + "\n")
    assert len(list(iter_spans(stream))) == 1
    assert not stream.closed


def test_fixture_reads_the_same_pretty_printed_and_gzipped(tmp_path):
    """A captured fixture reads to the same spans as JSON Lines, pretty-printed, and gzipped."""
    source = FIXTURES / "pydantic-ai-v2-tool-loop.otlp.jsonl"
    expected = list(iter_spans(source))
    pretty = tmp_path / "pretty.json"
    pretty.write_text(json.dumps(json.loads(source.read_text()), indent=1))
    zipped = tmp_path / "zipped.jsonl"
    zipped.write_bytes(gzip.compress(source.read_bytes()))
    assert len(expected) == 12
    assert list(iter_spans(pretty)) == expected == list(iter_spans(zipped))


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=10,
)
SPAN_FIELDS = [
    "traceId", "spanId", "parentSpanId", "name", "attributes", "events", "status",
    "startTimeUnixNano", "endTimeUnixNano", "droppedEventsCount", "droppedAttributesCount",
]
ANY_VALUE_FIELDS = ["stringValue", "intValue", "doubleValue", "boolValue", "arrayValue", "kvlistValue", "bytesValue"]
RAW_SPAN = st.dictionaries(st.sampled_from(SPAN_FIELDS), JSON_VALUE | st.just(TRACE_ID) | st.just(SPAN_ID), max_size=8)
ATTRIBUTE = st.fixed_dictionaries(
    {"key": st.text(max_size=5), "value": st.dictionaries(st.sampled_from(ANY_VALUE_FIELDS), JSON_VALUE, max_size=2)}
)
SPAN_WITH_ODD_ATTRIBUTES = st.lists(ATTRIBUTE, max_size=4).map(lambda attributes: otlp_span(attributes=attributes))


@settings(max_examples=examples(200), deadline=None)
@given(
    spans=st.lists(RAW_SPAN | SPAN_WITH_ODD_ATTRIBUTES, max_size=3),
    scope=JSON_VALUE,
    extra_line=JSON_VALUE.map(json.dumps) | st.text(max_size=30),
)
def test_arbitrary_requests_never_raise(spans, scope, extra_line):
    """Requests whose fields hold values of any type are read as spans or problems, never raised."""
    document = {"resourceSpans": [{"scopeSpans": [{"scope": scope, "spans": spans}]}]}
    text = json.dumps(document) + "\n" + extra_line.replace("\n", " ") + "\n"
    items = list(iter_spans(io.StringIO(text)))
    assert all(isinstance(item, (SpanView, ReadProblem)) for item in items)
