"""OTLP trace requests, as they arrive over HTTP (protobuf or JSON) or gRPC, made spans the engine reads.

One decoder: a JSON body is made the protobuf message first (`otlp_json_messages`, which decodes
values as the analyzer's reader does), so both encodings reach the engine through `spans_of`. A body
that is no request at all raises `MalformedRequest` (the receiver answers 400 and keeps nothing); a
span that cannot be judged (not OTLP/JSON, ids of the wrong size or all zero) is rejected on its own
and counted in the partial success, as the OTLP specification asks.

A `ReceivedSpan` is the analyzer's `ReadSpan` (a `SpanSource`) that also remembers where it came from:
the sender's `service.name` for metric labels, and its protobuf message for forwarding.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import ParseDict, ParseError
from google.protobuf.message import DecodeError, Message
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span

from .json_spans import ReadSpan
from ..errors import OtelGuardError
from . import values as otlp_json_values
from .values import SPAN_ID_BYTES, TRACE_ID_BYTES, hex_id, span_view
from .logs import LogRecordFields, LogsRead, read_records
from ..model.records import SpanEvent, SpanView
from . import json_messages as otlp_json_messages

SERVICE_NAME = "service.name"
UNKNOWN_SERVICE = "unknown_service"  # what the SDKs report when service.name is not set


class MalformedRequest(OtelGuardError):
    """The body is not an OTLP export request in the encoding it claims (answered with 400)."""


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a received span came from: what forwarding rebuilds its request from."""

    service: str
    resource: Resource
    resource_schema_url: str
    scope_spans: ScopeSpans  # its scope (the spans in it are not read through here)


class ReceivedSpan(ReadSpan):
    """A span as received: a `ReadSpan` with its `Origin` and protobuf message."""

    __slots__ = ("message", "origin")

    def __init__(self, message: Span, origin: Origin, view: SpanView):
        super().__init__(view)
        self.message = message
        self.origin = origin


@dataclass(frozen=True, slots=True)
class Received:
    """What one request held: the spans to judge, and those rejected (with the first reason)."""

    spans: list[ReceivedSpan]
    rejected: int = 0
    reason: str = ""


def parse_protobuf(body: bytes, message: type[Message] = ExportTraceServiceRequest) -> Any:
    try:
        request = message()
        request.ParseFromString(body)
    except (DecodeError, ValueError, RuntimeError) as error:
        raise MalformedRequest(f"not a protobuf {message.DESCRIPTOR.name}: {error or 'truncated'}") from None
    return request


def parse_json(body: bytes, message: type[Message]) -> Any:
    """An OTLP/JSON logs or metrics body as its protobuf message (traces: `json_spans_of`). Logs,
    which are judged, are built by `otlp_json_messages` (the one OTLP/JSON reader, its hex-id and
    enum rules); metrics, only forwarded, by the protobuf library's JSON parser, their hex ids made
    the base64 of the protobuf JSON mapping."""
    document = _json_document(body, message)
    try:
        if message is ExportLogsServiceRequest:
            return otlp_json_messages.logs_request(document)
        _hex_ids_to_base64(document)
        return ParseDict(document, message(), ignore_unknown_fields=True)
    except (ParseError, ValueError, TypeError, RecursionError) as error:  # NotOtlpJson is a ValueError
        raise MalformedRequest(f"not an OTLP/JSON {message.DESCRIPTOR.name}: {error}") from None


def json_spans_of(body: bytes) -> Received:
    """The spans of an OTLP/JSON trace request, as `spans_of` gives them; a span that is not OTLP/JSON
    is rejected on its own (`otlp_json_messages`), a body that is no request raises `MalformedRequest`."""
    document = _json_document(body, ExportTraceServiceRequest)
    try:
        decoded = otlp_json_messages.trace_request(document)
    except (ValueError, TypeError, RecursionError) as error:
        raise MalformedRequest(f"not an OTLP/JSON ExportTraceServiceRequest: {error}") from None
    received = spans_of(decoded.message)
    return Received(received.spans, decoded.rejected + received.rejected, decoded.reason or received.reason)


def _json_document(body: bytes, message: type[Message]) -> dict[str, Any]:
    try:
        document = otlp_json_values.loads(body)  # (a number too long for Python costs its value, as in analyze)
    except (ValueError, RecursionError) as error:
        raise MalformedRequest(f"not JSON: {error}") from None
    if not isinstance(document, dict):
        raise MalformedRequest(f"not an OTLP/JSON {message.DESCRIPTOR.name}: a JSON {type(document).__name__}")
    return document


_ID_SIZES = {"traceId": TRACE_ID_BYTES, "spanId": SPAN_ID_BYTES, "trace_id": TRACE_ID_BYTES, "span_id": SPAN_ID_BYTES}


def _hex_ids_to_base64(node: Any) -> None:
    """Every id field below `node` turned from OTLP/JSON hex to protobuf-JSON base64, in place (an id
    that is not hex raises `NotOtlpJson`)."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, value in item.items():
                size = _ID_SIZES.get(key)
                if size is not None and isinstance(value, str):
                    number = hex_id(value, size, key)
                    item[key] = base64.b64encode(number.to_bytes(size, "big")).decode("ascii") if number else ""
                elif isinstance(value, (dict, list)):
                    stack.append(value)
        elif isinstance(item, list):
            stack.extend(value for value in item if isinstance(value, (dict, list)))


def service_name(resource: Resource) -> str:
    for entry in resource.attributes:
        if entry.key == SERVICE_NAME and entry.value.WhichOneof("value") == "string_value":
            return entry.value.string_value
    return UNKNOWN_SERVICE


def spans_of(request: ExportTraceServiceRequest) -> Received:
    """The spans of a decoded request, each checked: a span with a trace or span id of the wrong
    size, or all zero, is rejected (its trace cannot be put together)."""
    spans: list[ReceivedSpan] = []
    rejected = 0
    reason = ""
    for resource_spans in request.resource_spans:
        resource = resource_spans.resource
        service = service_name(resource)
        for scope_spans in resource_spans.scope_spans:
            origin = Origin(service, resource, resource_spans.schema_url, scope_spans)
            scope = scope_spans.scope.name or None
            for span in scope_spans.spans:
                problem = _id_problem(span)
                if problem:
                    rejected += 1
                    reason = reason or problem
                    continue
                spans.append(_received(span, origin, scope))
    return Received(spans, rejected, reason)


def log_calls_of(request: Any) -> LogsRead:
    """What a decoded `ExportLogsServiceRequest` holds for the guard (`otlp_logs`): CLI tool calls,
    GenAI events and evaluation events."""
    return read_records(_log_records(request))


def _log_records(request: Any) -> Iterator[LogRecordFields]:
    for resource_logs in request.resource_logs:
        service = service_name(resource_logs.resource)
        for scope_logs in resource_logs.scope_logs:
            for record in scope_logs.log_records:
                yield LogRecordFields(service, int.from_bytes(record.trace_id, "big"),
                                      int.from_bytes(record.span_id, "big"), record.event_name,
                                      proto_attributes(record.attributes)[0], any_value(record.body),
                                      record.time_unix_nano, record.observed_time_unix_nano)


def _id_problem(span: Span) -> str:
    if len(span.trace_id) != TRACE_ID_BYTES or not any(span.trace_id):
        return f"span {span.name[:60]!r}: trace id must be {TRACE_ID_BYTES} bytes, not all zero"
    if len(span.span_id) != SPAN_ID_BYTES or not any(span.span_id):
        return f"span {span.name[:60]!r}: span id must be {SPAN_ID_BYTES} bytes, not all zero"
    if span.parent_span_id and len(span.parent_span_id) != SPAN_ID_BYTES:
        return f"span {span.name[:60]!r}: parent span id must be {SPAN_ID_BYTES} bytes"
    return ""


def _received(span: Span, origin: Origin, scope: str | None) -> ReceivedSpan:
    attributes, unreadable = proto_attributes(span.attributes)
    events = []
    for event in span.events:  # values without a value count as dropped on the span, as the analyzer counts them
        event_attributes, event_unreadable = proto_attributes(event.attributes)
        unreadable += event_unreadable
        events.append(SpanEvent(event.name, event_attributes, event.time_unix_nano))
    return ReceivedSpan(span, origin, span_view(
        span.name, (int.from_bytes(span.trace_id, "big"), int.from_bytes(span.span_id, "big"),
                    int.from_bytes(span.parent_span_id, "big")),
        attributes, tuple(events), (span.status.code, span.status.message), scope,
        (span.start_time_unix_nano, span.end_time_unix_nano), (span.dropped_events_count, span.dropped_attributes_count + unreadable)))


def proto_attributes(entries: Any) -> tuple[dict[str, Any], int]:
    """Protobuf KeyValues as (attributes, how many had no value): decoded as the OTLP/JSON reader
    decodes them (arrays as tuples, kvlists as dicts)."""
    attributes: dict[str, Any] = {}
    unreadable = 0
    for entry in entries:
        value = any_value(entry.value)
        if value is None:
            unreadable += 1
        else:
            attributes[entry.key] = value
    return attributes, unreadable


def any_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "int_value":
        return value.int_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "double_value":
        return value.double_value
    if kind == "array_value":
        return tuple(any_value(item) for item in value.array_value.values)
    if kind == "kvlist_value":
        return proto_attributes(value.kvlist_value.values)[0]
    if kind == "bytes_value":
        return value.bytes_value
    return None
