"""OTLP/JSON trace and logs requests made protobuf messages, field by field.

A span is read by `otlp_json_values.span`, the analyzer's file reader's too, and every other value
by `otlp_json_values`, so a span reads the same sent to the service and read from a file. (The
protobuf library's generic JSON parser reads base64 ids and enum names, which OTLP/JSON does not
use.) lowerCamelCase field names (the OTLP/JSON rule) and snake_case are read; unknown fields are
ignored, as the specification asks.

A span that is not OTLP/JSON (an id that is not hex, an enum name, an attribute value of the wrong
type, ...) is left out of the message and counted in `TraceRequest.rejected`, with the first reason:
the receiver answers a partial success. Anything else that is not OTLP/JSON (the request's shape, a
resource, a scope, a log record) raises `NotOtlpJson`: the receiver answers 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import (
    AnyValue,
    ArrayValue,
    InstrumentationScope,
    KeyValue,
    KeyValueList,
)
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord, ResourceLogs, ScopeLogs, SeverityNumber
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from . import values as otlp_json_values
from .values import (
    SPAN_ID_BYTES,
    TRACE_ID_BYTES,
    UINT32,
    UINT64,
    NotOtlpJson,
    any_value,
    enum,
    field,
    hex_id,
    integer,
    items,
    key_values,
    text,
)

_SEVERITY_NAMES = dict(SeverityNumber.items())  # a log record's severityNumber may be written by name too


@dataclass(frozen=True, slots=True)
class TraceRequest:
    """A decoded trace request: the spans that are OTLP/JSON, and how many were not (the first's reason)."""

    message: ExportTraceServiceRequest
    rejected: int = 0
    reason: str = ""


def trace_request(document: dict[str, Any]) -> TraceRequest:
    rejected = 0
    reason = ""
    resources = []
    for item in _objects(document, "resourceSpans", "resource_spans"):
        scopes = []
        for scope in _objects(item, "scopeSpans", "scope_spans"):
            spans = []
            for raw in items(field(scope, "spans", "spans"), "spans"):
                try:
                    spans.append(_span(raw))
                except (ValueError, TypeError, RecursionError) as problem:  # NotOtlpJson, or out of protobuf's range
                    rejected += 1
                    reason = reason or f"span {_name_of(raw)}: {problem}"
            scopes.append(ScopeSpans(scope=_scope(field(scope, "scope", "scope")), spans=spans,
                                     schema_url=text(field(scope, "schemaUrl", "schema_url"), "schemaUrl")))
        resources.append(ResourceSpans(resource=_resource(field(item, "resource", "resource")), scope_spans=scopes,
                                       schema_url=text(field(item, "schemaUrl", "schema_url"), "schemaUrl")))
    return TraceRequest(ExportTraceServiceRequest(resource_spans=resources), rejected, reason)


def logs_request(document: dict[str, Any]) -> ExportLogsServiceRequest:
    return ExportLogsServiceRequest(resource_logs=[
        ResourceLogs(resource=_resource(field(item, "resource", "resource")),
                     schema_url=text(field(item, "schemaUrl", "schema_url"), "schemaUrl"),
                     scope_logs=[ScopeLogs(scope=_scope(field(scope, "scope", "scope")),
                                           schema_url=text(field(scope, "schemaUrl", "schema_url"), "schemaUrl"),
                                           log_records=[_log_record(record) for record in
                                                        items(field(scope, "logRecords", "log_records"), "logRecords")])
                                 for scope in _objects(item, "scopeLogs", "scope_logs")])
        for item in _objects(document, "resourceLogs", "resource_logs")])


def _span(raw: Any) -> Span:
    """A span as `otlp_json_values.span` reads it, as a message; an attribute that cannot be read
    rejects the span (a receiver does not forward a span it changed)."""
    read = otlp_json_values.span(raw)
    if read.unreadable:
        raise NotOtlpJson(read.unreadable[0])
    return Span(
        trace_id=_bytes(read.trace_id, TRACE_ID_BYTES),
        span_id=_bytes(read.span_id, SPAN_ID_BYTES),
        parent_span_id=_bytes(read.parent_span_id, SPAN_ID_BYTES),
        trace_state=read.trace_state,
        name=read.name,
        kind=Span.SpanKind.ValueType(read.kind),
        flags=read.flags,
        start_time_unix_nano=read.start_ns,
        end_time_unix_nano=read.end_ns,
        attributes=[_key_value(*entry) for entry in read.attributes],
        dropped_attributes_count=read.dropped_attributes,
        events=[Span.Event(time_unix_nano=event.time_ns, name=event.name,
                           attributes=[_key_value(*entry) for entry in event.attributes],
                           dropped_attributes_count=event.dropped_attributes) for event in read.events],
        dropped_events_count=read.dropped_events,
        links=[_link(entry) for entry in read.links],
        dropped_links_count=read.dropped_links,
        status=Status(code=Status.StatusCode.ValueType(read.status_code), message=read.status_message),
    )


def _link(read: otlp_json_values.Link) -> Span.Link:
    return Span.Link(trace_id=_bytes(read.trace_id, TRACE_ID_BYTES), span_id=_bytes(read.span_id, SPAN_ID_BYTES),
                     trace_state=read.trace_state, attributes=[_key_value(*entry) for entry in read.attributes],
                     flags=read.flags, dropped_attributes_count=read.dropped_attributes)


def _log_record(raw: Any) -> LogRecord:
    raw = _object(raw, "a log record")
    body = raw.get("body")
    return LogRecord(
        time_unix_nano=integer(field(raw, "timeUnixNano", "time_unix_nano"), UINT64, "timeUnixNano"),
        observed_time_unix_nano=integer(field(raw, "observedTimeUnixNano", "observed_time_unix_nano"), UINT64,
                                        "observedTimeUnixNano"),
        severity_number=SeverityNumber.ValueType(
            enum(field(raw, "severityNumber", "severity_number"), _SEVERITY_NAMES, "severityNumber")),
        severity_text=text(field(raw, "severityText", "severity_text"), "severityText"),
        body=_any_value(any_value(body)) if body is not None else None, attributes=_key_values(raw.get("attributes")),
        dropped_attributes_count=_count(raw, "droppedAttributesCount", "dropped_attributes_count"),
        flags=integer(raw.get("flags"), UINT32, "flags"),
        trace_id=_id(field(raw, "traceId", "trace_id"), TRACE_ID_BYTES, "traceId"),
        span_id=_id(field(raw, "spanId", "span_id"), SPAN_ID_BYTES, "spanId"),
        event_name=text(field(raw, "eventName", "event_name"), "eventName"),
    )


def _resource(raw: Any) -> Resource:
    raw = _object(raw, "a resource") if raw is not None else {}
    return Resource(attributes=_key_values(raw.get("attributes")),
                    dropped_attributes_count=_count(raw, "droppedAttributesCount", "dropped_attributes_count"))


def _scope(raw: Any) -> InstrumentationScope:
    raw = _object(raw, "a scope") if raw is not None else {}
    return InstrumentationScope(name=text(raw.get("name"), "scope name"), version=text(raw.get("version"), "version"),
                                attributes=_key_values(raw.get("attributes")),
                                dropped_attributes_count=_count(raw, "droppedAttributesCount",
                                                                "dropped_attributes_count"))


def _key_values(entries: Any) -> list[KeyValue]:
    return [_key_value(key, value) for key, value in key_values(entries)]


def _key_value(key: str, value: Any) -> KeyValue:
    return KeyValue(key=key, value=_any_value(value))


def _any_value(value: Any) -> AnyValue:
    """A value as `otlp_json_values.any_value` decodes it, made an AnyValue again."""
    if value is None:
        return AnyValue()
    kind = type(value)
    if kind is str:
        return AnyValue(string_value=value)
    if kind is bool:
        return AnyValue(bool_value=value)
    if kind is int:
        return AnyValue(int_value=value)
    if kind is float:
        return AnyValue(double_value=value)
    if kind is bytes:
        return AnyValue(bytes_value=value)
    if kind is tuple:
        return AnyValue(array_value=ArrayValue(values=[_any_value(item) for item in value]))
    return AnyValue(kvlist_value=KeyValueList(values=[_key_value(key, item) for key, item in value.items()]))


def _objects(raw: Mapping[str, Any], camel: str, snake: str) -> list[Mapping[str, Any]]:
    return [_object(item, camel) for item in items(field(raw, camel, snake), camel)]


def _object(raw: Any, what: str) -> Mapping[str, Any]:
    if type(raw) is not dict and not isinstance(raw, Mapping):
        raise NotOtlpJson(f"{what} is a {type(raw).__name__}, not an object")
    return raw


def _count(raw: Mapping[str, Any], camel: str, snake: str) -> int:
    return integer(field(raw, camel, snake), UINT32, camel)


def _id(value: Any, size: int, what: str) -> bytes:
    return _bytes(hex_id(value, size, what), size)


def _bytes(number: int, size: int) -> bytes:
    """An id's bytes; none for 0 (absent, or all zero: no id)."""
    return number.to_bytes(size, "big") if number else b""


def _name_of(raw: Any) -> str:
    name = raw.get("name") if isinstance(raw, Mapping) else None
    return repr(name[:60]) if isinstance(name, str) else "without a name"
